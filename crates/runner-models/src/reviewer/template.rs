//! Templating of reviewer configuration (argv, environment, names) from a cell's values.

use crate::matrix::Cell;
use crate::subject::Subject;
use handlebars::Handlebars;
use std::collections::BTreeMap;
use std::sync::{OnceLock, RwLock};

/// Variables a reviewer template sees: the cell's axes, `repeat`, and where applicable
/// `repo`, `base` and `head`.
pub(crate) fn variables(cell: &Cell, repeat: u32, subject: Option<(&Subject, &str)>) -> BTreeMap<String, serde_json::Value> {
    let mut vars: BTreeMap<String, serde_json::Value> = cell.values.iter().map(|(k, v)| (k.clone(), serde_json::Value::String(v.render()))).collect();
    vars.insert("repeat".into(), serde_json::Value::from(repeat));
    if let Some((subject, repo)) = subject {
        vars.insert("repo".into(), serde_json::Value::String(repo.to_string()));
        vars.insert("base".into(), serde_json::Value::String(subject.base_sha.clone()));
        vars.insert("head".into(), serde_json::Value::String(subject.head_sha.clone()));
    }
    vars
}

/// Renders a template strictly (an unknown variable is an error) and without HTML escaping.
pub(crate) fn render(template: &str, vars: &BTreeMap<String, serde_json::Value>) -> Result<String, String> {
    if !template.contains("{{") {
        return Ok(template.to_string());
    }
    render_strict(template, vars).map_err(|e| format!("failed to render template `{template}`: {e}"))
}

/// A registry that renders strictly (an unknown variable is an error) and without HTML
/// escaping.
fn strict() -> Handlebars<'static> {
    let mut hb = Handlebars::new();
    hb.set_strict_mode(true);
    hb.register_escape_fn(handlebars::no_escape);
    hb
}

/// Every template rendered so far, compiled, by its text: a prompt or a reviewer setting is
/// parsed once per process rather than once per run.
static COMPILED: OnceLock<RwLock<Handlebars<'static>>> = OnceLock::new();

/// Renders `text` strictly and without HTML escaping, from its compiled form when it was
/// rendered before. A template that fails (to parse or to render) is rendered afresh, so the
/// error reads exactly as an uncompiled template's.
pub(crate) fn render_strict<T: serde::Serialize>(text: &str, vars: &T) -> Result<String, handlebars::RenderError> {
    let registry = COMPILED.get_or_init(|| RwLock::new(strict()));
    let compiled = registry.read().unwrap_or_else(|p| p.into_inner()).has_template(text);
    if !compiled {
        let mut hb = registry.write().unwrap_or_else(|p| p.into_inner());
        if !hb.has_template(text) && hb.register_template_string(text, text).is_err() {
            return strict().render_template(text, vars);
        }
    }
    let rendered = registry.read().unwrap_or_else(|p| p.into_inner()).render(text, vars);
    rendered.or_else(|_| strict().render_template(text, vars))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compiled_template_renders_as_a_fresh_one_and_fails_with_the_same_words() {
        let vars: BTreeMap<String, serde_json::Value> = [("model".to_string(), serde_json::json!("<m>"))].into();
        for _ in 0..2 {
            assert_eq!(
                render_strict("{{model}} & {{model}}", &vars).expect("renders"),
                "<m> & <m>",
                "no HTML escaping, the second time from the compiled form"
            );
        }
        let fresh = strict().render_template("{{nope}}", &vars).expect_err("strict").to_string();
        for _ in 0..2 {
            assert_eq!(render_strict("{{nope}}", &vars).expect_err("strict").to_string(), fresh);
        }
        let broken = strict().render_template("{{#if}}", &vars).expect_err("does not parse").to_string();
        assert_eq!(render_strict("{{#if}}", &vars).expect_err("does not parse").to_string(), broken);
    }
}
