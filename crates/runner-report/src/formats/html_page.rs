//! `report.html` beside the reports (`[report] html = true`, `--html`): the page `runner
//! report` draws, from this execution's own side — its runs' outcomes and the subjects its
//! walk built, so a subject whose every review came from the cache is shown without its diff
//! (nothing is read back from the cache or materialized for the page).

use super::{Asked, Format, FormatInput};
use crate::html;
use crate::render::{RenderError, Written};

/// `report.html` beside the reports an execution wrote: its own side, named as the file
/// beside the page, so the page does not depend on where it was written.
pub(crate) struct HtmlReport;

impl Format for HtmlReport {
    fn wanted(&self, asked: &Asked) -> bool {
        asked.html
    }

    fn write(&self, input: &FormatInput<'_>) -> Result<Written, RenderError> {
        let mut side = (input.side)();
        side.results_path = "results.json".to_string();
        let page = html::render(&[side])?;
        let path = input.results_path.with_file_name("report.html");
        let changed = crate::cache::store::atomic_replace(&path, page.as_bytes())
            .map_err(|e| RenderError::Write { path: path.display().to_string(), source: std::io::Error::other(e.to_string()) })?;
        let mut written = Written::default();
        written.add(path, changed);
        Ok(written)
    }
}
