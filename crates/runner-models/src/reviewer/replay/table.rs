//! Captured findings as a table: CSV (with a header row) or JSONL (one object a line), with
//! the columns `file, line, message` and optionally `end_line, severity, category,
//! suggestion, subject`.
//!
//! `file` and `line` may be empty (`null` in JSONL) for a finding about the whole change
//! (runner's finding then has file `""` and no line, as findings without a location already
//! read from model output), and `line` alone for a finding about a whole file. A row with an
//! empty `message`, `file` and `line` marks its subject as reviewed with no findings. Unknown
//! columns, a `line` that is not a line number and unknown severities or categories are
//! errors naming the line.

use super::{finding, Mapping, Part, Replayed, DEFAULT_CATEGORY, DEFAULT_SEVERITY};
use serde_json::Value;
use std::collections::BTreeMap;

/// The columns a table may have.
pub(crate) const COLUMNS: [&str; 8] = ["file", "line", "end_line", "message", "severity", "category", "suggestion", "subject"];
/// The columns a CSV header must have.
const REQUIRED: [&str; 3] = ["file", "line", "message"];

/// The parts of a table, by subject (`""` for rows of a table without a `subject` column).
pub(crate) type Parts = BTreeMap<(String, Option<u32>), Part>;

/// One row's values, as text (empty for absent).
#[derive(Default)]
struct Row<'a> {
    file: &'a str,
    line: &'a str,
    end_line: &'a str,
    message: &'a str,
    severity: &'a str,
    category: &'a str,
    suggestion: &'a str,
    subject: &'a str,
}

/// Reads a CSV table. The bytes of each subject's part are the header line and that
/// subject's records, exactly as the file holds them.
pub(crate) fn parse_csv(text: &str, mapping: &Mapping) -> Result<Parts, String> {
    let mut reader = csv::ReaderBuilder::new().has_headers(true).flexible(false).from_reader(text.as_bytes());
    let headers = reader.headers().map_err(|e| csv_error(&e))?.clone();
    let mut index: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, name) in headers.iter().enumerate() {
        let name = name.trim();
        let Some(known) = COLUMNS.iter().find(|c| **c == name) else {
            return Err(format!("line 1: unknown column `{name}`; the columns are {}", COLUMNS.join(", ")));
        };
        if index.insert(known, i).is_some() {
            return Err(format!("line 1: column `{name}` appears twice"));
        }
    }
    if let Some(missing) = REQUIRED.iter().find(|c| !index.contains_key(*c)) {
        return Err(format!("line 1: the header has no `{missing}` column; a table needs {} (values may be empty)", REQUIRED.join(", ")));
    }
    let mut records: Vec<(u64, usize, csv::StringRecord)> = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| csv_error(&e))?;
        let position = record.position().map_or((0, 0), |p| (p.line(), p.byte() as usize));
        records.push((position.0, position.1, record));
    }
    let header_end = records.first().map_or(text.len(), |r| r.1);
    let mut parts: Parts = BTreeMap::new();
    for (n, (line, start, record)) in records.iter().enumerate() {
        let end = records.get(n + 1).map_or(text.len(), |r| r.1);
        let get = |c: &str| index.get(c).and_then(|i| record.get(*i)).unwrap_or("");
        let row = Row {
            file: get("file"),
            line: get("line"),
            end_line: get("end_line"),
            message: get("message"),
            severity: get("severity"),
            category: get("category"),
            suggestion: get("suggestion"),
            subject: get("subject"),
        };
        let raw = text.get(*start..end).unwrap_or("");
        add_row(&mut parts, &row, raw, &text[..header_end], mapping).map_err(|e| format!("line {line}: {e}"))?;
    }
    Ok(parts)
}

fn csv_error(e: &csv::Error) -> String {
    match e.position() {
        Some(p) => format!("line {}: not valid CSV: {e}", p.line()),
        None => format!("not valid CSV: {e}"),
    }
}

/// Reads a JSONL table: one object a line, blank lines skipped.
pub(crate) fn parse_jsonl(text: &str, mapping: &Mapping) -> Result<Parts, String> {
    let mut parts: Parts = BTreeMap::new();
    for (n, line) in text.split_inclusive('\n').enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = n + 1;
        let value: Value = serde_json::from_str(line).map_err(|e| format!("line {at}: not JSON: {e}"))?;
        let Value::Object(obj) = &value else {
            return Err(format!("line {at}: expected an object such as {{\"file\": \"a.py\", \"line\": 3, \"message\": \"…\"}}"));
        };
        for key in obj.keys() {
            if !COLUMNS.contains(&key.as_str()) {
                return Err(format!("line {at}: unknown key `{key}`; the keys are {}", COLUMNS.join(", ")));
            }
        }
        let mut numbers: BTreeMap<&str, String> = BTreeMap::new();
        for key in ["line", "end_line"] {
            match obj.get(key) {
                None | Some(Value::Null) => {}
                Some(Value::Number(n)) => {
                    numbers.insert(key, n.to_string());
                }
                Some(other) => return Err(format!("line {at}: `{key}` must be a line number or null, not {other}")),
            }
        }
        let mut texts: BTreeMap<&str, &str> = BTreeMap::new();
        for key in ["file", "message", "severity", "category", "suggestion", "subject"] {
            match obj.get(key) {
                None | Some(Value::Null) => {}
                Some(Value::String(s)) => {
                    texts.insert(key, s);
                }
                Some(other) => return Err(format!("line {at}: `{key}` must be a string or null, not {other}")),
            }
        }
        let text_of = |k: &str| texts.get(k).copied().unwrap_or("");
        let row = Row {
            file: text_of("file"),
            line: numbers.get("line").map_or("", String::as_str),
            end_line: numbers.get("end_line").map_or("", String::as_str),
            message: text_of("message"),
            severity: text_of("severity"),
            category: text_of("category"),
            suggestion: text_of("suggestion"),
            subject: text_of("subject"),
        };
        add_row(&mut parts, &row, line, "", mapping).map_err(|e| format!("line {at}: {e}"))?;
    }
    Ok(parts)
}

/// A line number: empty is none; otherwise an integer of 1 or more.
fn line_number(text: &str, column: &str) -> Result<Option<u32>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    match text.parse::<u32>() {
        Ok(n) if n >= 1 => Ok(Some(n)),
        _ => Err(format!("`{column}` `{text}` is not a line number (1 or more; leave it empty for a finding without a line)")),
    }
}

/// Adds one row (its finding, or its subject marked as reviewed) to its subject's part.
fn add_row(parts: &mut Parts, row: &Row<'_>, raw: &str, header: &str, mapping: &Mapping) -> Result<(), String> {
    let line = line_number(row.line, "line")?;
    let end_line = line_number(row.end_line, "end_line")?;
    let file = row.file.trim();
    let message = row.message.trim();
    let part = parts.entry((row.subject.trim().to_string(), None)).or_insert_with(|| Part { raw: header.to_string(), replayed: Replayed::default() });
    part.raw.push_str(raw);
    if message.is_empty() {
        if file.is_empty() && line.is_none() && end_line.is_none() && row.severity.trim().is_empty() && row.category.trim().is_empty() {
            // A subject reviewed with no findings.
            return Ok(());
        }
        return Err("`message` is empty (a row with only `subject` set marks a subject reviewed with no findings)".into());
    }
    if file.is_empty() && line.is_some() {
        return Err(format!("`line` {} without a `file`", row.line.trim()));
    }
    if end_line.is_some() && line.is_none() {
        return Err("`end_line` without a `line`".into());
    }
    if let (Some(l), Some(e)) = (line, end_line) {
        if e < l {
            return Err(format!("`end_line` {e} is before `line` {l}"));
        }
    }
    let severity = if row.severity.trim().is_empty() { DEFAULT_SEVERITY } else { mapping.severity(row.severity)? };
    let category = if row.category.trim().is_empty() { DEFAULT_CATEGORY } else { mapping.category(row.category)? };
    let suggestion = Some(row.suggestion.to_string());
    part.replayed.findings.push(finding(file.to_string(), line.unwrap_or(0), end_line, message.to_string(), severity, category, suggestion));
    Ok(())
}
