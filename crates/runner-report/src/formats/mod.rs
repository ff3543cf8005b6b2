//! The report formats an execution writes after RESULTS.md, results.json and the charts, each
//! a [`Format`] listed in [`FORMATS`]: the HTML page (`report.html`, when the manifest or
//! `--html` asks) and the CI summary (`--summary FILE`). The render node writes them from the
//! execution's own results, in list order, once the core reports are written; adding a format
//! is its file in `report/formats/` and one line in `formats!`.

use super::model::Results;
use super::render::{RenderError, Written};
use std::path::{Path, PathBuf};

/// What the command line and the manifest asked for beyond the core reports.
#[derive(Debug, Clone, Default)]
pub struct Asked {
    /// `report.html` beside the reports (`[report] html = true`, `--html`).
    pub html: bool,
    /// `--summary FILE`: the Markdown summary for a CI job's page.
    pub summary: Option<PathBuf>,
}

/// What a format is written from.
pub struct FormatInput<'a> {
    pub results: &'a Results,
    /// results.json, as the render node just wrote it.
    pub results_path: &'a Path,
    pub asked: &'a Asked,
    /// This execution's side of an HTML page: its results with the findings and diffs the
    /// experiment holds (built only when a format asks for it).
    pub side: &'a dyn Fn() -> super::html::Side,
}

/// One report format.
pub trait Format: Sync {
    /// Whether this execution asked for it.
    fn wanted(&self, asked: &Asked) -> bool;
    /// Writes it; returns the files it wrote into the report directory (those runner lists),
    /// and which of them changed.
    fn write(&self, input: &FormatInput<'_>) -> Result<Written, RenderError>;
}

/// Declares each format's module (a file in `report/formats/`) and lists it in `FORMATS`, one
/// line each, in the order they are written.
macro_rules! formats {
    ($($module:ident :: $format:ident),* $(,)?) => {
        $(pub mod $module;)*

        /// Every format, in the order they are written.
        pub static FORMATS: &[&dyn Format] = &[$(&$module::$format),*];
    };
}

formats! {
    html_page::HtmlReport,
    ci_summary::Summary,
}

/// Writes every format the execution asked for; returns the report-directory files written.
pub fn write_formats(input: &FormatInput<'_>) -> Result<Written, RenderError> {
    let mut written = Written::default();
    for format in FORMATS.iter().filter(|f| f.wanted(input.asked)) {
        written.extend(format.write(input)?);
    }
    Ok(written)
}
