//! A TOML syntax error, reported once, at its cause.
//!
//! toml's parser recovers from a syntax error and carries on, so one mistake can yield dozens
//! of follow-on errors, the first of them where the damage shows rather than where it was
//! done: an array left open on one line is reported as a missing comma on the next, then at
//! every line after it. Only the first error is reliable, so only one is reported; and where an
//! array, an inline table or a multi-line string opened before that error is never closed, the
//! message points at where it was opened.

use super::diagnostics::{line_col, Diagnostic};

/// What was opened and never closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Opener {
    Array,
    InlineTable,
    /// A multi-line string opened with this quote, three times.
    MultiLineString(u8),
}

/// The one diagnostic for a document that does not parse: `errors` are toml's, in any order
/// (at least one); the result is located at the cause where it can be found, else at the
/// first error.
pub fn syntax_diagnostic(source: &str, errors: &[toml::de::Error]) -> Diagnostic {
    let first = errors.iter().min_by_key(|e| e.span().map_or(usize::MAX, |s| s.start));
    let span = first.and_then(toml::de::Error::span).unwrap_or(0..0);
    let message = first.map(|e| e.message().trim().to_string()).unwrap_or_else(|| "the file does not parse".to_string());
    if let Some(cause) = unclosed_before(source, span.start) {
        return cause;
    }
    if message.starts_with("string values must be quoted") && rest_of_line_is_empty(source, span.start) {
        let key = key_before(source, span.start);
        let what = key.map_or_else(|| "a key".to_string(), |k| format!("`{k}`"));
        return Diagnostic {
            span,
            message: format!("invalid TOML: {what} has no value after `=`"),
            help: Some("write a value: a quoted string, a number, `true`/`false` or an array `[…]`".to_string()),
        };
    }
    let help = (errors.len() > 1).then(|| "the rest of the file is checked once this parses".to_string());
    Diagnostic { span, message: format!("invalid TOML: {message}"), help }
}

/// An array, inline table or multi-line string opened on a line before the one `error_at` is
/// on and never closed: the diagnostic at its opening.
fn unclosed_before(source: &str, error_at: usize) -> Option<Diagnostic> {
    let (opener, at) = first_unclosed(source)?;
    let (open_line, _) = line_col(source, at);
    let (error_line, _) = line_col(source, error_at.min(source.len()));
    if at >= error_at || open_line >= error_line {
        return None;
    }
    let span = at..value_end(source.as_bytes(), at).max(at + 1);
    let key = key_before(source, at);
    let named = |what: &str| match key {
        Some(k) => format!("{what} `{k}` is never closed"),
        None => format!("this {what} is never closed"),
    };
    let reads_on = if error_at >= source.trim_end().len() { "the rest of the file".to_string() } else { format!("from line {error_line} on, the file") };
    let (message, help) = match opener {
        Opener::Array => (named("array"), format!("add `]` after its last value: {reads_on} reads as more of its values")),
        Opener::InlineTable => (named("inline table"), format!("add `}}` after its last key: {reads_on} reads as more of its keys")),
        Opener::MultiLineString(q) => {
            let quotes = String::from(q as char).repeat(3);
            (named("multi-line string"), format!("add `{quotes}` where it ends: {reads_on} reads as part of it"))
        }
    };
    Some(Diagnostic { span, message: format!("invalid TOML: {message}"), help: Some(help) })
}

/// The key assigned on `at`'s line, when what precedes `at` there is `key =`.
fn key_before(source: &str, at: usize) -> Option<&str> {
    let start = source[..at].rfind('\n').map_or(0, |n| n + 1);
    let key = source[start..at].trim_end().strip_suffix('=')?.trim();
    let plain = !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || "-_.\"' ".contains(c));
    plain.then_some(key)
}

fn rest_of_line_is_empty(source: &str, at: usize) -> bool {
    let rest = &source[at.min(source.len())..];
    let line = rest.split('\n').next().unwrap_or_default().trim();
    line.is_empty() || line.starts_with('#')
}

/// The outermost array or inline table still open at the end of the document, or a multi-line
/// string never closed, with the byte offset of its opening. The scan is lenient: after a
/// bracket left open, table headers and later arrays read as nested arrays, balanced as they
/// are, so the one left open stays open.
fn first_unclosed(source: &str) -> Option<(Opener, usize)> {
    let b = source.as_bytes();
    let mut stack: Vec<(Opener, usize)> = Vec::new();
    let mut line_start = true;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'\n' => {
                line_start = true;
                i += 1;
                continue;
            }
            b' ' | b'\t' | b'\r' => {
                i += 1;
                continue;
            }
            b'#' => {
                i = next_newline(b, i);
                continue;
            }
            b'"' | b'\'' => {
                match skip_string(b, i) {
                    Ok(end) => i = end,
                    Err(()) => return Some(stack.first().copied().unwrap_or((Opener::MultiLineString(c), i))),
                }
                line_start = false;
                continue;
            }
            // A table header: its brackets are not a value's.
            b'[' if stack.is_empty() && line_start => {
                i = header_end(b, i);
                line_start = false;
                continue;
            }
            b'[' => stack.push((Opener::Array, i)),
            b'{' => stack.push((Opener::InlineTable, i)),
            b']' if matches!(stack.last(), Some((Opener::Array, _))) => {
                stack.pop();
            }
            b'}' if matches!(stack.last(), Some((Opener::InlineTable, _))) => {
                stack.pop();
            }
            _ => {}
        }
        line_start = false;
        i += 1;
    }
    stack.first().copied()
}

/// The end of what is written on `at`'s line from `at` on, less a comment and trailing spaces.
fn value_end(b: &[u8], at: usize) -> usize {
    let mut i = at;
    let mut end = at;
    while i < b.len() && b[i] != b'\n' && b[i] != b'#' {
        if b[i] == b'"' || b[i] == b'\'' {
            i = skip_string(b, i).unwrap_or(b.len()).min(next_newline(b, i));
            end = i;
            continue;
        }
        if !b[i].is_ascii_whitespace() {
            end = i + 1;
        }
        i += 1;
    }
    end
}

fn next_newline(b: &[u8], from: usize) -> usize {
    b[from..].iter().position(|&c| c == b'\n').map_or(b.len(), |n| from + n)
}

/// The end of a table header starting at `at` (`[a]`, `[[a]]`, quoted keys included): past
/// its closing bracket, or the end of the line.
fn header_end(b: &[u8], at: usize) -> usize {
    let mut i = at;
    while i < b.len() && b[i] != b'\n' {
        if b[i] == b'"' || b[i] == b'\'' {
            match skip_string(b, i) {
                Ok(end) => i = end,
                Err(()) => return next_newline(b, i),
            }
            continue;
        }
        i += 1;
    }
    i
}

/// Past the string starting at `at`. A single-line string left open ends at its line (toml
/// reports that line itself); a multi-line string never closed is `Err`.
fn skip_string(b: &[u8], at: usize) -> Result<usize, ()> {
    let q = b[at];
    let basic = q == b'"';
    if b[at..].starts_with(&[q, q, q]) {
        let mut i = at + 3;
        while i < b.len() {
            if basic && b[i] == b'\\' {
                i += 2;
                continue;
            }
            if b[i..].starts_with(&[q, q, q]) {
                // Up to two more quotes belong to the content: `"""""` ends with two of them.
                let run = b[i..].iter().take_while(|&&c| c == q).count();
                i += run.min(5);
                return Ok(i);
            }
            i += 1;
        }
        return Err(());
    }
    let mut i = at + 1;
    while i < b.len() && b[i] != b'\n' {
        if basic && b[i] == b'\\' {
            i += 2;
            continue;
        }
        if b[i] == q {
            return Ok(i + 1);
        }
        i += 1;
    }
    Ok(i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use toml::de::DeTable;

    fn diagnose(source: &str) -> (Diagnostic, (usize, usize)) {
        let (_, errors) = DeTable::parse_recoverable(source);
        assert!(!errors.is_empty(), "the source parses: {source}");
        let d = syntax_diagnostic(source, &errors);
        let at = line_col(source, d.span.start);
        (d, at)
    }

    const BASE: &str = "version = 1\n[experiment]\nname = \"x\"\n[matrix]\nbaseline = [\"dry-run\", \"heuristic\"]\nrepeat = 1\n[reviewer]\nkind = \"builtin\"\nargs = [\"a\", \"b\"]\n[report]\noutput = \"o\"\n";

    #[test]
    fn an_unclosed_array_is_reported_at_its_opening() {
        let source = BASE.replace("\"heuristic\"]", "\"heuristic\"  # a comment");
        let (d, at) = diagnose(&source);
        assert_eq!(at, (5, 12), "{d:?}");
        assert_eq!(d.message, "invalid TOML: array `baseline` is never closed");
        assert_eq!(d.help.as_deref(), Some("add `]` after its last value: from line 6 on, the file reads as more of its values"));
        assert_eq!(&source[d.span.clone()], "[\"dry-run\", \"heuristic\"");
    }

    #[test]
    fn an_array_left_open_on_the_last_line_is_reported_at_its_opening() {
        let source = "version = 1\nargs = [\"a\",\n  \"b\"\n";
        let (d, at) = diagnose(source);
        assert_eq!(at, (2, 8), "{d:?}");
        assert!(d.help.as_deref().is_some_and(|h| h.contains("the rest of the file")), "{d:?}");
    }

    #[test]
    fn an_unclosed_inline_table_and_multi_line_string_are_reported_at_their_opening() {
        let (d, at) = diagnose(&BASE.replace("name = \"x\"", "name = {a = 1"));
        assert_eq!((at, d.message.as_str()), ((3, 8), "invalid TOML: inline table `name` is never closed"));
        let (d, at) = diagnose(&BASE.replace("name = \"x\"", "name = \"\"\"x"));
        assert_eq!((at, d.message.as_str()), ((3, 8), "invalid TOML: multi-line string `name` is never closed"));
        assert!(d.help.as_deref().is_some_and(|h| h.starts_with("add `\"\"\"` where it ends")), "{d:?}");
    }

    #[test]
    fn a_missing_comma_inside_a_closed_multi_line_array_is_reported_where_it_is() {
        let source = "args = [\n  \"a\"\n  \"b\",\n]\n";
        let (d, at) = diagnose(source);
        assert_eq!(at, (3, 3), "{d:?}");
        assert!(d.message.contains("missing comma"), "{d:?}");
    }

    #[test]
    fn an_error_on_the_line_the_array_opens_is_that_error() {
        // The array is open too, but the first mistake is the comma on its own line.
        let source = BASE.replace("[\"dry-run\", \"heuristic\"]", "[\"dry-run\" \"heuristic\"");
        let (d, at) = diagnose(&source);
        assert_eq!(at.0, 5, "{d:?}");
        assert!(d.message.contains("missing comma"), "{d:?}");
    }

    #[test]
    fn brackets_in_strings_comments_and_headers_are_not_arrays() {
        let source = "a = \"[\" # [ {\n[t.\"x]\"]\nb = '{'\nc = \"\"\"\n[\n\"\"\"\nd = [1, 2\ne = 1\n";
        let (d, at) = diagnose(source);
        assert_eq!(at, (7, 5), "{d:?}");
        assert!(d.message.contains("array `d`"), "{d:?}");
    }

    #[test]
    fn a_key_without_a_value_says_so() {
        let (d, at) = diagnose(&BASE.replace("repeat = 1", "repeat ="));
        assert_eq!(at, (6, 9), "{d:?}");
        assert_eq!(d.message, "invalid TOML: `repeat` has no value after `=`");
    }

    #[test]
    fn a_cascade_is_one_diagnostic_at_the_first_error() {
        let source = "[[[[ = = \"\n".repeat(100);
        let (d, at) = diagnose(&source);
        assert_eq!(at.0, 1, "{d:?}");
        assert_eq!(d.help.as_deref(), Some("the rest of the file is checked once this parses"));
    }
}
