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

/// At most this many problems are shown; the rest are counted ("… and N more").
pub(crate) const MAX_SHOWN: usize = 50;

impl ManifestErrors {
    /// 1-based (line, column) of a byte offset; columns count characters.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        line_col(&self.source, offset)
    }

    /// The problems shown (the first [`MAX_SHOWN`] in source order) and how many are not.
    fn shown(&self) -> (&[Diagnostic], usize) {
        let n = self.diagnostics.len().min(MAX_SHOWN);
        (&self.diagnostics[..n], self.diagnostics.len() - n)
    }

    fn more_line(&self, hidden: usize) -> String {
        format!("… and {hidden} more problem{} in `{}` (fix the ones above first)\n", if hidden == 1 { "" } else { "s" }, self.shown_path())
    }

    /// The path as a terminal may show it.
    fn shown_path(&self) -> String {
        crate::terminal::sanitize(&self.path.display().to_string())
    }

    /// Plain one-line-per-problem text: `path:line:col: message`.
    pub fn to_plain(&self) -> String {
        let index = LineIndex::new(&self.source);
        let (shown, hidden) = self.shown();
        let mut out = String::new();
        for d in shown {
            let (line, col) = index.line_col(&self.source, d.span.start);
            out.push_str(&format!("{}:{line}:{col}: {}", self.shown_path(), crate::terminal::sanitize(&d.message)));
            if let Some(help) = &d.help {
                out.push_str(&format!(" ({})", crate::terminal::sanitize(help)));
            }
            out.push('\n');
        }
        if hidden > 0 {
            out.push_str(&self.more_line(hidden));
        }
        out
    }

    /// Rich rendering with source snippets, for a terminal or a log.
    pub fn render(&self, color: bool) -> String {
        use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label};
        use codespan_reporting::files::SimpleFile;
        use codespan_reporting::term::{self, termcolor::Buffer};

        // One pass over the source for line starts (here and inside `SimpleFile`); each
        // problem is then located by binary search, so time stays linear in the input.
        let index = LineIndex::new(&self.source);
        // The snippets quote the manifest: shown with its control and bidi characters made
        // inert, each replaced by as many bytes, so the spans still point where they did.
        let shown_source = inert_same_length(&self.source);
        let file = SimpleFile::new(self.shown_path(), &shown_source);
        let mut buffer = if color { Buffer::ansi() } else { Buffer::no_color() };
        let config = term::Config::default();
        let (shown, hidden) = self.shown();
        for d in shown {
            let (line, col) = index.line_col(&self.source, d.span.start);
            let mut diag = CsDiagnostic::error()
                .with_message(format!("{} ({}:{line}:{col})", crate::terminal::sanitize(&d.message), self.shown_path()))
                .with_labels(vec![Label::primary((), d.span.clone())]);
            if let Some(help) = &d.help {
                diag = diag.with_notes(vec![crate::terminal::sanitize(help)]);
            }
            // Rendering into an in-memory buffer cannot fail for a span inside the source.
            let _ = term::emit(&mut buffer, &config, &file, &diag);
        }
        let n = self.diagnostics.len();
        let mut text = String::from_utf8_lossy(buffer.as_slice()).into_owned();
        if hidden > 0 {
            text.push_str(&self.more_line(hidden));
        }
        text.push_str(&format!("{n} problem{} in `{}`\n", if n == 1 { "" } else { "s" }, self.shown_path()));
        text
    }
}

/// `source` with each character a terminal must not receive (but its line breaks) replaced by
/// as many bytes: `U+FFFD` for a three-byte one, `?` per byte otherwise.
fn inert_same_length(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    for c in source.chars() {
        if c == '\n' || !crate::terminal::is_unsafe(c) {
            out.push(c);
        } else if c.len_utf8() == 3 {
            out.push('\u{fffd}');
        } else {
            out.extend(std::iter::repeat_n('?', c.len_utf8()));
        }
    }
    out
}

/// Byte offsets of line starts, computed once per source.
struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    fn new(source: &str) -> Self {
        let starts = std::iter::once(0).chain(source.match_indices('\n').map(|(i, _)| i + 1)).collect();
        Self { starts }
    }

    /// 1-based (line, column) of a byte offset; columns count characters within the line.
    fn line_col(&self, source: &str, offset: usize) -> (usize, usize) {
        let offset = floor_char_boundary(source, offset.min(source.len()));
        let line = self.starts.partition_point(|&s| s <= offset).max(1);
        let start = self.starts[line - 1];
        (line, source[start..offset].chars().count() + 1)
    }
}

impl std::fmt::Display for ManifestErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.to_plain().trim_end())
    }
}

impl std::error::Error for ManifestErrors {}

pub fn line_col(source: &str, offset: usize) -> (usize, usize) {
    LineIndex::new(source).line_col(source, offset)
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A path shown relative to the current directory when it is under it.
pub fn display_path(path: &Path) -> String {
    std::env::current_dir().ok().and_then(|cwd| path.strip_prefix(cwd).ok().map(|p| p.display().to_string())).unwrap_or_else(|| path.display().to_string())
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

    #[test]
    fn lines_are_located_by_index_as_by_scanning() {
        let src = "a = 1\nbé = 2\n\nlast";
        let index = LineIndex::new(src);
        for offset in 0..=src.len() + 2 {
            let o = floor_char_boundary(src, offset.min(src.len()));
            let before = &src[..o];
            let expected = (before.matches('\n').count() + 1, before.rsplit('\n').next().map(|s| s.chars().count()).unwrap_or(0) + 1);
            assert_eq!(index.line_col(src, offset), expected, "offset {offset}");
        }
    }

    #[test]
    fn a_manifest_quoting_escapes_and_bidi_controls_is_shown_inert_and_still_located() {
        let source = "name = 1\nbad = \"\u{1b}]0;owned\u{7}\u{202e}x\"\n".to_string();
        let at = source.find("bad").expect("bad");
        let errors = ManifestErrors {
            path: PathBuf::from("m\u{1b}[2J.toml"),
            source,
            diagnostics: vec![Diagnostic { span: at..at + 3, message: "unknown key `\u{1b}[31mbad`".into(), help: Some("\u{9b}1m".into()) }],
        };
        for text in [errors.render(false), errors.to_plain()] {
            assert!(!text.chars().any(|c| c != '\n' && crate::terminal::is_unsafe(c)), "{text:?}");
            assert!(text.contains(":2:1"), "still at line 2, column 1: {text}");
        }
        let rendered = errors.render(false);
        assert!(rendered.contains("bad = \"?]0;owned?\u{fffd}x\""), "the line the span names, inert: {rendered}");
    }

    #[test]
    fn at_most_fifty_problems_are_shown() {
        let source = "x\n".repeat(200);
        let diagnostics = (0..200).map(|i| Diagnostic { span: i * 2..i * 2 + 1, message: format!("problem {i}"), help: None }).collect();
        let errors = ManifestErrors { path: PathBuf::from("m.toml"), source, diagnostics };
        let plain = errors.to_plain();
        assert_eq!(plain.lines().filter(|l| l.starts_with("m.toml:")).count(), MAX_SHOWN);
        assert!(plain.contains("m.toml:50:1: problem 49"), "{plain}");
        assert!(plain.contains("… and 150 more problems"), "{plain}");
        let rendered = errors.render(false);
        assert_eq!(rendered.matches("error: problem").count(), MAX_SHOWN);
        assert!(rendered.ends_with("… and 150 more problems in `m.toml` (fix the ones above first)\n200 problems in `m.toml`\n"), "{rendered}");
    }
}
