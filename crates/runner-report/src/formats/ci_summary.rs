//! The CI summary (`--summary FILE`): a job page's Markdown from the execution's results.

use super::{Asked, Format, FormatInput};
use crate::ci;
use crate::render::{RenderError, Written};

/// `--summary FILE`: the Markdown summary of an execution's reports, for a CI job's page. It is
/// written where it was asked, not into the report directory.
pub(crate) struct Summary;

impl Format for Summary {
    fn wanted(&self, asked: &Asked) -> bool {
        asked.summary.is_some()
    }

    fn write(&self, input: &FormatInput<'_>) -> Result<Written, RenderError> {
        let Some(path) = &input.asked.summary else { return Ok(Written::default()) };
        let text = ci::summary_markdown(input.results, &input.results_path.with_file_name("RESULTS.md").display().to_string());
        let write = |e: std::io::Error, at: &std::path::Path| RenderError::Write { path: at.display().to_string(), source: e };
        if path.as_os_str() == "-" {
            // `--summary -`: the summary on standard output.
            let mut out = std::io::stdout().lock();
            return std::io::Write::write_all(&mut out, text.as_bytes())
                .and_then(|()| std::io::Write::flush(&mut out))
                .map(|()| Written::default())
                .map_err(|e| write(e, path));
        }
        // Never through a link, nor over the results it summarises; any other file is replaced
        // (`$GITHUB_STEP_SUMMARY` is the runner's to write).
        let replace = crate::output_file::Replace { what: "a summary", replaceable: &|_: &[u8]| true, force: true };
        crate::output_file::write(path, text.as_bytes(), &[input.results_path], &replace).map_err(|e| write(std::io::Error::other(e.to_string()), path))?;
        Ok(Written::default())
    }
}
