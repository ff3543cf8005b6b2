//! The analyzers' machine-readable output, read into one shape: the file as the analyzer
//! named it, the line, the rule code and the message.

use serde::Deserialize;

/// One diagnostic as an analyzer reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Reported {
    /// The file as the analyzer printed it (ruff: absolute; JSHint and rustc: as passed).
    pub(super) file: String,
    /// 1-based line of the diagnostic's start.
    pub(super) line: u32,
    pub(super) code: String,
    pub(super) message: String,
}

/// A message on one line: white space runs (newlines too) become one space.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[derive(Deserialize)]
struct RuffDiagnostic {
    code: Option<String>,
    name: Option<String>,
    message: String,
    filename: String,
    location: Option<RuffLocation>,
}

#[derive(Deserialize)]
struct RuffLocation {
    row: u32,
}

/// `ruff check --output-format json`: one array of diagnostics. A syntax error has the code
/// `invalid-syntax` (older versions: `null` and that name), and is kept like any rule.
pub(super) fn ruff(stdout: &[u8]) -> Result<Vec<Reported>, String> {
    let all: Vec<RuffDiagnostic> = serde_json::from_slice(stdout).map_err(|e| format!("its JSON output does not parse: {e}"))?;
    Ok(all
        .into_iter()
        .filter_map(|d| {
            let line = d.location.map(|l| l.row).filter(|&l| l > 0)?;
            let code = d.code.or(d.name).unwrap_or_else(|| "ruff".into());
            Some(Reported { file: d.filename, line, code, message: one_line(&d.message) })
        })
        .collect())
}

#[derive(Deserialize)]
struct JshintResult {
    file: String,
    line: Option<u32>,
    code: Option<String>,
    reason: Option<String>,
}

/// JSHint through runner's reporter (`scripts/analyzers/jshint-reporter.js`): one array of
/// `{file, line, character, code, reason}`. A file with an error (an `E` code) gives nothing:
/// JSHint's parser predates syntax that is valid today (`60_000`, class fields), and once it
/// fails to parse, what it reports on the rest of the file (`'x' is not defined`) is about
/// its own misreading, not the code.
pub(super) fn jshint(stdout: &[u8]) -> Result<Vec<Reported>, String> {
    let all: Vec<JshintResult> = serde_json::from_slice(stdout).map_err(|e| format!("its JSON output does not parse: {e}"))?;
    let unparsed: std::collections::BTreeSet<String> =
        all.iter().filter(|r| r.code.as_deref().is_some_and(|c| c.starts_with('E'))).map(|r| r.file.clone()).collect();
    Ok(all
        .into_iter()
        .filter(|r| !unparsed.contains(&r.file))
        .filter_map(|r| {
            let line = r.line.filter(|&l| l > 0)?;
            let message = one_line(r.reason.as_deref().unwrap_or_default());
            (!message.is_empty()).then(|| Reported { file: r.file, line, code: r.code.unwrap_or_else(|| "jshint".into()), message })
        })
        .collect())
}

#[derive(Deserialize)]
struct RustcMessage {
    #[serde(rename = "$message_type")]
    message_type: Option<String>,
    message: String,
    code: Option<RustcCode>,
    level: String,
    spans: Vec<RustcSpan>,
}

#[derive(Deserialize)]
struct RustcCode {
    code: String,
}

#[derive(Deserialize)]
struct RustcSpan {
    file_name: String,
    line_start: u32,
    is_primary: bool,
}

/// `rustc`/`clippy-driver --error-format=json`: one JSON diagnostic a line on stderr. Only
/// lints are smells — diagnostics whose code is a lint name (`unused_variables`,
/// `clippy::map_clone`), at the warning or error level; compile errors (`E0432`, or no
/// code: a parse error) are what checking one file outside its crate produces, and the
/// summary lines (`2 warnings emitted`) have no span. A diagnostic is placed at its primary
/// span.
pub(super) fn rustc(stderr: &[u8]) -> Result<Vec<Reported>, String> {
    let mut out = Vec::new();
    for (i, line) in String::from_utf8_lossy(stderr).lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let m: RustcMessage = serde_json::from_str(line).map_err(|e| format!("line {} of its JSON diagnostics does not parse: {e}", i + 1))?;
        if m.message_type.as_deref().is_some_and(|t| t != "diagnostic") || !matches!(m.level.as_str(), "warning" | "error") {
            continue;
        }
        let Some(code) = m.code.map(|c| c.code).filter(|c| !is_error_code(c)) else { continue };
        let Some(span) = m.spans.iter().find(|s| s.is_primary).filter(|s| s.line_start > 0) else { continue };
        out.push(Reported { file: span.file_name.clone(), line: span.line_start, code, message: one_line(&m.message) });
    }
    Ok(out)
}

/// rustc's own error codes: `E` and four digits.
fn is_error_code(code: &str) -> bool {
    code.len() == 5 && code.starts_with('E') && code[1..].bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Vec<u8> {
        let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("tests/fixtures/smells").join(name);
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn r(file: &str, line: u32, code: &str, message: &str) -> Reported {
        Reported { file: file.into(), line, code: code.into(), message: message.into() }
    }

    #[test]
    fn ruff_json_from_the_real_tool() {
        let dir = "/tmp/smells-fixture/files";
        assert_eq!(
            ruff(&fixture("ruff.json")).expect("parses"),
            vec![
                r(&format!("{dir}/broken.py"), 1, "invalid-syntax", "Expected a parameter or the end of the parameter list"),
                r(&format!("{dir}/broken.py"), 1, "invalid-syntax", "Expected `)`, found newline"),
                r(&format!("{dir}/sample.py"), 1, "F401", "`os` imported but unused"),
                r(&format!("{dir}/sample.py"), 6, "F841", "Local variable `y` is assigned to but never used"),
            ]
        );
        assert_eq!(ruff(&fixture("ruff-clean.json")).expect("parses"), vec![]);
    }

    #[test]
    fn jshint_json_from_the_real_tool_through_our_reporter() {
        assert_eq!(
            jshint(&fixture("jshint.json")).expect("parses"),
            vec![
                r("sample.js", 2, "W033", "Missing semicolon."),
                r("sample.js", 2, "W098", "'y' is defined but never used."),
                r("sample.js", 3, "W117", "'undefinedThing' is not defined."),
            ]
        );
        assert_eq!(jshint(b"[]\n").expect("parses"), vec![]);
        // `60_000` is past JSHint's parser: nothing from that file, the other file's stay.
        let modern = jshint(&fixture("jshint-modern.json")).expect("parses");
        assert_eq!(
            modern.iter().map(|r| (r.file.as_str(), r.line, r.code.as_str())).collect::<Vec<_>>(),
            [("sample.js", 2, "W033"), ("sample.js", 2, "W098"), ("sample.js", 3, "W117")]
        );
    }

    #[test]
    fn rustc_and_clippy_json_from_the_real_tools() {
        assert_eq!(
            rustc(&fixture("clippy.stderr")).expect("parses"),
            vec![
                r("sample.rs", 2, "unused_variables", "unused variable: `y`"),
                r("sample.rs", 6, "clippy::map_clone", "you are using an explicit closure for copying elements"),
            ]
        );
        assert_eq!(rustc(&fixture("rustc.stderr")).expect("parses"), vec![r("sample.rs", 2, "unused_variables", "unused variable: `y`")]);
        // A file that does not parse: compile errors are not smells.
        assert_eq!(rustc(&fixture("rustc-broken.stderr")).expect("parses"), vec![]);
        // Checked outside its crate (`mod other;`, `use crate::…`): the errors go, the lints stay.
        assert_eq!(rustc(&fixture("clippy-outside.stderr")).expect("parses"), vec![r("outside.rs", 5, "unused_variables", "unused variable: `unused`")]);
    }

    #[test]
    fn output_that_is_not_the_format_is_an_error() {
        assert!(ruff(b"error: something").is_err());
        assert!(jshint(b"").is_err());
        assert!(rustc(b"thread 'rustc' panicked").is_err());
    }
}
