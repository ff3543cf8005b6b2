//! Located manifest problems (file, byte span → line and column) and their rendering.

use std::ops::Range;
use std::path::{Path, PathBuf};

/// One problem found in a manifest, with the byte span it points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub span: Range<usize>,
    pub message: String,
    pub help: Option<String>,
}

/// Every problem found in one manifest file, in source order.
#[derive(Debug, Clone)]
pub struct ManifestErrors {
    pub path: PathBuf,
    pub source: String,
    pub diagnostics: Vec<Diagnostic>,
}

impl ManifestErrors {
    /// 1-based (line, column) of a byte offset; columns count characters.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        line_col(&self.source, offset)
    }

    /// Plain one-line-per-problem text: `path:line:col: message`.
    pub fn to_plain(&self) -> String {
        let mut out = String::new();
        for d in &self.diagnostics {
            let (line, col) = self.line_col(d.span.start);
            out.push_str(&format!("{}:{line}:{col}: {}", self.path.display(), d.message));
            if let Some(help) = &d.help {
                out.push_str(&format!(" ({help})"));
            }
            out.push('\n');
        }
        out
    }

    /// Rich rendering with source snippets, for a terminal or a log.
    pub fn render(&self, color: bool) -> String {
        use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label};
        use codespan_reporting::files::SimpleFile;
        use codespan_reporting::term::{self, termcolor::Buffer};

        let file = SimpleFile::new(self.path.display().to_string(), &self.source);
        let mut buffer = if color { Buffer::ansi() } else { Buffer::no_color() };
        let config = term::Config::default();
        for d in &self.diagnostics {
            let (line, col) = self.line_col(d.span.start);
            let mut diag = CsDiagnostic::error()
                .with_message(format!("{} ({}:{line}:{col})", d.message, self.path.display()))
                .with_labels(vec![Label::primary((), d.span.clone())]);
            if let Some(help) = &d.help {
                diag = diag.with_notes(vec![help.clone()]);
            }
            // Rendering into an in-memory buffer cannot fail for a span inside the source.
            let _ = term::emit(&mut buffer, &config, &file, &diag);
        }
        let n = self.diagnostics.len();
        let mut text = String::from_utf8_lossy(buffer.as_slice()).into_owned();
        text.push_str(&format!(
            "{n} problem{} in `{}`\n",
            if n == 1 { "" } else { "s" },
            self.path.display()
        ));
        text
    }
}

impl std::fmt::Display for ManifestErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.to_plain().trim_end())
    }
}

impl std::error::Error for ManifestErrors {}

pub fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(source.len());
    let before = &source[..floor_char_boundary(source, offset)];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map(|s| s.chars().count()).unwrap_or(0) + 1;
    (line, col)
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A path shown relative to the current directory when it is under it.
pub fn display_path(path: &Path) -> String {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| path.strip_prefix(cwd).ok().map(|p| p.display().to_string()))
        .unwrap_or_else(|| path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_are_one_based() {
        let src = "a = 1\nbé = 2\n";
        assert_eq!(line_col(src, 0), (1, 1));
        assert_eq!(line_col(src, 6), (2, 1));
        assert_eq!(line_col(src, 9), (2, 3));
    }
}
