//! Rendering results through handlebars templates (strict: a missing field is an error).

use super::model::Results;
use handlebars::Handlebars;
use std::path::Path;

/// The built-in RESULTS.md template (`templates/results.md.hbs`).
pub const DEFAULT_TEMPLATE: &str = include_str!("../../templates/results.md.hbs");

#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("failed to read template `{path}`: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("failed to render `{template}`: {message}")]
    Render { template: String, message: String },
    #[error("failed to write `{path}`: {source}")]
    Write { path: String, source: std::io::Error },
}

fn engine() -> Handlebars<'static> {
    let mut hb = Handlebars::new();
    hb.set_strict_mode(true);
    hb.register_escape_fn(escape_markdown_cell);
    hb
}

/// Table cells must not break the Markdown table: escape pipes and flatten newlines.
fn escape_markdown_cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// Renders RESULTS.md with the given template text.
pub fn render_markdown(results: &Results, template: &str, template_name: &str) -> Result<String, RenderError> {
    engine()
        .render_template(template, results)
        .map_err(|e| RenderError::Render { template: template_name.to_string(), message: e.to_string() })
}

/// Compiles the report template (the built-in one, or `template_override`) and renders it
/// strictly against `results`, so that a syntax error or an unknown variable is reported
/// with the template's file, line and column before anything runs.
pub fn check_template(results: &Results, template_override: Option<&Path>) -> Result<(), RenderError> {
    let (template, name) = match template_override {
        Some(path) => (
            std::fs::read_to_string(path).map_err(|source| RenderError::Read { path: path.display().to_string(), source })?,
            path.display().to_string(),
        ),
        None => (DEFAULT_TEMPLATE.to_string(), "templates/results.md.hbs".to_string()),
    };
    let mut hb = engine();
    let fail = |message: String| RenderError::Render { template: name.clone(), message };
    hb.register_template_string(&name, &template).map_err(|e| fail(e.to_string()))?;
    hb.render(&name, results).map(|_| ()).map_err(|e| fail(e.to_string()))
}

/// Writes RESULTS.md and results.json into `dir`; returns their paths.
pub fn write_reports(results: &Results, dir: &Path, template_override: Option<&Path>) -> Result<Vec<std::path::PathBuf>, RenderError> {
    let (template, name) = match template_override {
        Some(path) => (
            std::fs::read_to_string(path).map_err(|source| RenderError::Read { path: path.display().to_string(), source })?,
            path.display().to_string(),
        ),
        None => (DEFAULT_TEMPLATE.to_string(), "templates/results.md.hbs".to_string()),
    };
    let markdown = render_markdown(results, &template, &name)?;
    let json = serde_json::to_string_pretty(results).map_err(|e| RenderError::Render { template: "results.json".into(), message: e.to_string() })?;
    let md_path = dir.join("RESULTS.md");
    let json_path = dir.join("results.json");
    for (path, text) in [(&md_path, markdown), (&json_path, format!("{json}\n"))] {
        crate::cache::store::atomic_write(path, text.as_bytes()).map_err(|e| RenderError::Write {
            path: path.display().to_string(),
            source: std::io::Error::other(e.to_string()),
        })?;
    }
    Ok(vec![md_path, json_path])
}
