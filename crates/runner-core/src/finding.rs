//! Findings in stet's schema: the one shape every reviewer's output is normalized to.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt;

/// How serious a finding is, in stet's closed set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Error,
    Warning,
    Info,
    Nitpick,
}

impl Severity {
    pub const ALL: [Severity; 4] = [Self::Error, Self::Warning, Self::Info, Self::Nitpick];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Warning => "warning",
            Self::Info => "info",
            Self::Nitpick => "nitpick",
        }
    }

    /// Parses stet's spelling, tolerating case and a few common synonyms models emit.
    pub fn parse_lenient(text: &str) -> Option<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "error" | "critical" | "high" | "blocker" => Some(Self::Error),
            "warning" | "warn" | "medium" | "major" => Some(Self::Warning),
            "info" | "low" | "minor" | "note" => Some(Self::Info),
            "nitpick" | "nit" | "trivial" => Some(Self::Nitpick),
            _ => None,
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What kind of problem a finding names, in stet's closed set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    Bug,
    Security,
    Correctness,
    Performance,
    Style,
    Maintainability,
    BestPractice,
    Testing,
    Documentation,
    Design,
    Accessibility,
}

impl Category {
    pub const ALL: [Category; 11] = [
        Self::Bug,
        Self::Security,
        Self::Correctness,
        Self::Performance,
        Self::Style,
        Self::Maintainability,
        Self::BestPractice,
        Self::Testing,
        Self::Documentation,
        Self::Design,
        Self::Accessibility,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Bug => "bug",
            Self::Security => "security",
            Self::Correctness => "correctness",
            Self::Performance => "performance",
            Self::Style => "style",
            Self::Maintainability => "maintainability",
            Self::BestPractice => "best_practice",
            Self::Testing => "testing",
            Self::Documentation => "documentation",
            Self::Design => "design",
            Self::Accessibility => "accessibility",
        }
    }

    /// Parses stet's spelling, tolerating case, spaces and hyphens.
    pub fn parse_lenient(text: &str) -> Option<Self> {
        let norm = text.trim().to_ascii_lowercase().replace([' ', '-'], "_");
        Self::ALL.into_iter().find(|c| c.as_str() == norm).or(match norm.as_str() {
            "best_practices" => Some(Self::BestPractice),
            "perf" => Some(Self::Performance),
            "docs" => Some(Self::Documentation),
            "test" | "tests" => Some(Self::Testing),
            _ => None,
        })
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An inclusive line range on the new side of a diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct LineRange {
    pub start: u32,
    pub end: u32,
}

impl LineRange {
    /// A range is valid in stet's sense when it starts at line 1 or later and does not run backwards.
    pub fn is_valid(&self) -> bool {
        self.start >= 1 && self.end >= self.start
    }
}

/// One finding, normalized to stet's schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub id: String,
    pub file: String,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub line: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<LineRange>,
    pub severity: Severity,
    pub category: Category,
    #[serde(serialize_with = "serialize_confidence")]
    pub confidence: f64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor_uri: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence_lines: Option<Vec<u32>>,
}

/// stet prints a whole-number confidence as an integer (`1`, not `1.0`).
fn serialize_confidence<S: serde::Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        serializer.serialize_i64(*value as i64)
    } else {
        serializer.serialize_f64(*value)
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Finding {
    /// The first line the finding points at (range start, else line, else 1).
    pub fn anchor_line(&self) -> u32 {
        match self.range {
            Some(r) if r.is_valid() => r.start,
            _ => self.line.max(1),
        }
    }

    /// The inclusive line span the finding covers.
    pub fn span(&self) -> (u32, u32) {
        match self.range {
            Some(r) if r.is_valid() => (r.start, r.end),
            _ => (self.line.max(1), self.line.max(1)),
        }
    }

    /// Recomputes `id` with stet's scheme from the current location and message.
    pub fn assign_stet_id(&mut self) {
        self.id = stet_finding_id(&self.file, self.line, self.range, &collapse_whitespace(&self.message));
    }
}

/// stet's ID stem (`messageStem`): Go's `strings.TrimSpace` (Unicode white space), runs of
/// Go's `\s` (ASCII space, `\t`, `\n`, `\f`, `\r`; not `\v`, not Unicode spaces) collapsed to
/// one space, trimmed again.
pub fn collapse_whitespace(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_run = false;
    for c in text.trim_matches(char::is_whitespace).chars() {
        if matches!(c, ' ' | '\t' | '\n' | '\x0c' | '\r') {
            if !in_run {
                out.push(' ');
            }
            in_run = true;
        } else {
            out.push(c);
            in_run = false;
        }
    }
    out.trim_matches(char::is_whitespace).to_string()
}

/// stet's finding ID: `hex(sha256(loc + ":" + stem))` with `loc = file:start:end` for a valid
/// range, else `file:max(line,1)`.
pub fn stet_finding_id(file: &str, line: u32, range: Option<LineRange>, stem: &str) -> String {
    stet_finding_id_bytes(file.as_bytes(), line, range, stem)
}

/// [`stet_finding_id`] for a file name given as the bytes git printed (not always UTF-8).
pub fn stet_finding_id_bytes(file: &[u8], line: u32, range: Option<LineRange>, stem: &str) -> String {
    let loc = match range {
        Some(r) if r.is_valid() => format!(":{}:{}", r.start, r.end),
        _ => format!(":{}", line.max(1)),
    };
    let mut bytes = file.to_vec();
    bytes.extend_from_slice(loc.as_bytes());
    bytes.push(b':');
    bytes.extend_from_slice(stem.as_bytes());
    sha256_hex(&bytes)
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_uses_range_when_valid_and_line_otherwise() {
        let with_range = stet_finding_id("a.rs", 3, Some(LineRange { start: 3, end: 5 }), "m");
        assert_eq!(with_range, sha256_hex(b"a.rs:3:5:m"));
        let bad_range = stet_finding_id("a.rs", 0, Some(LineRange { start: 5, end: 3 }), "m");
        assert_eq!(bad_range, sha256_hex(b"a.rs:1:m"));
    }

    #[test]
    fn whitespace_collapses_for_the_stem() {
        assert_eq!(collapse_whitespace("  a \n\t b  c "), "a b c");
        // Go's `\s` is ASCII only: \v and Unicode spaces inside stay; TrimSpace trims both ends.
        assert_eq!(collapse_whitespace("\u{a0}a\u{a0}\u{a0}b\x0bc\x0c\rd\u{3000}"), "a\u{a0}\u{a0}b\x0bc d");
    }

    #[test]
    fn severity_and_category_parse_leniently() {
        assert_eq!(Severity::parse_lenient("WARNING"), Some(Severity::Warning));
        assert_eq!(Category::parse_lenient("Best Practice"), Some(Category::BestPractice));
        assert_eq!(Category::parse_lenient("nonsense"), None);
    }

    #[test]
    fn integer_confidence_and_missing_line_deserialize() {
        let f: Finding =
            serde_json::from_str(r#"{"id":"x","file":"a.go","severity":"info","category":"style","confidence":1,"message":"m"}"#).expect("valid finding");
        assert_eq!(f.line, 0);
        assert_eq!(f.confidence, 1.0);
        assert_eq!(f.anchor_line(), 1);
    }
}
