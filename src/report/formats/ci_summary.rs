//! The CI summary (`--summary FILE`): a job page's Markdown from the execution's results.

use super::{Asked, Format, FormatInput};
use crate::report::ci;
use crate::report::render::RenderError;
use std::path::PathBuf;

/// `--summary FILE`: the Markdown summary of an execution's reports, for a CI job's page. It is
/// written where it was asked, not into the report directory.
pub(crate) struct Summary;

impl Format for Summary {
    fn wanted(&self, asked: &Asked) -> bool {
        asked.summary.is_some()
    }

    fn write(&self, input: &FormatInput<'_>) -> Result<Vec<PathBuf>, RenderError> {
        let Some(path) = &input.asked.summary else { return Ok(Vec::new()) };
        let text = ci::summary_markdown(input.results, &input.results_path.with_file_name("RESULTS.md").display().to_string());
        let write = |e: std::io::Error, at: &std::path::Path| RenderError::Write { path: at.display().to_string(), source: e };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| write(e, dir))?;
        }
        std::fs::write(path, text).map_err(|e| write(e, path))?;
        Ok(Vec::new())
    }
}
