//! Captured stet output: its `{"findings":[…]}` document (`stet start --json`) or its NDJSON
//! stream (`--json --stream`), read by the same parser as a `command` reviewer's stdout
//! (`reviewer::parse`). A capture is stricter than live output in one way: a severity or
//! category outside stet's closed sets is an error naming where it is, not a schema problem
//! with a fallback value.

use super::Replayed;
use crate::finding::{Category, Severity};
use crate::reviewer::parse;
use serde_json::Value;

/// A `{"findings":[…]}` document; an empty file is no findings.
pub(crate) fn parse_document(text: &str) -> Result<Replayed, String> {
    if text.trim().is_empty() {
        return Ok(Replayed::default());
    }
    let doc: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    if doc.get("findings").is_none() {
        return Err("expected stet's `{\"findings\":[…]}` document (for an NDJSON stream, name the file `.ndjson` or set `format = \"stet-ndjson\"`)".into());
    }
    if let Some(items) = doc.get("findings").and_then(Value::as_array) {
        for (i, item) in items.iter().enumerate() {
            check_closed_sets(item).map_err(|e| format!("findings[{i}]: {e}"))?;
        }
    }
    Ok(into_replayed(parse::parse_findings_document(&doc)?))
}

/// An NDJSON stream of `progress`, `finding` and `done` events.
pub(crate) fn parse_stream(text: &str) -> Result<Replayed, String> {
    for (n, line) in text.lines().enumerate() {
        if let Ok(event) = serde_json::from_str::<Value>(line.trim()) {
            if event.get("type").and_then(Value::as_str) == Some("finding") {
                if let Some(data) = event.get("data") {
                    check_closed_sets(data).map_err(|e| format!("stream line {}: {e}", n + 1))?;
                }
            }
        }
    }
    Ok(into_replayed(parse::parse_stream(text)?))
}

/// stet's severities and categories exactly (its wire format is not lenient).
fn check_closed_sets(item: &Value) -> Result<(), String> {
    if let Some(s) = item.get("severity") {
        if !s.as_str().is_some_and(|s| Severity::ALL.iter().any(|v| v.as_str() == s)) {
            return Err(format!("severity {s} is not one of stet's error, warning, info, nitpick"));
        }
    }
    if let Some(c) = item.get("category") {
        if !c.as_str().is_some_and(|s| Category::ALL.iter().any(|v| v.as_str() == s)) {
            let all: Vec<&str> = Category::ALL.iter().map(|c| c.as_str()).collect();
            return Err(format!("category {c} is not one of stet's {}", all.join(", ")));
        }
    }
    Ok(())
}

fn into_replayed(parsed: parse::Parsed) -> Replayed {
    Replayed { findings: parsed.findings, schema_problems: parsed.schema_problems, ..Replayed::default() }
}
