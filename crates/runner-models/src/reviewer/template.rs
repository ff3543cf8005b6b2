//! Templating of reviewer configuration (argv, environment, names) from a cell's values.

use crate::matrix::Cell;
use crate::subject::Subject;
use handlebars::Handlebars;
use std::collections::BTreeMap;

/// Variables a reviewer template sees: the cell's axes, `repeat`, and where applicable
/// `repo`, `base` and `head`.
pub fn variables(cell: &Cell, repeat: u32, subject: Option<(&Subject, &str)>) -> BTreeMap<String, serde_json::Value> {
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
pub fn render(template: &str, vars: &BTreeMap<String, serde_json::Value>) -> Result<String, String> {
    if !template.contains("{{") {
        return Ok(template.to_string());
    }
    let mut hb = Handlebars::new();
    hb.set_strict_mode(true);
    hb.register_escape_fn(handlebars::no_escape);
    hb.render_template(template, vars).map_err(|e| format!("failed to render template `{template}`: {e}"))
}
