//! Study sheets through the `csv` crate: writing a blind sheet, and reading a filled one back
//! with every problem reported at once, each with its line and column.
//!
//! A [`Spec`] names the sheet's columns (the id column, text the export showed, label columns
//! with their allowed values, a value that depends on another label, the rater) and the ids the
//! export wrote (the key). [`check`] reads the filled CSV and reports: a non-UTF-8 row, a row
//! with too many or too few fields, an unknown, missing or renamed column, a missing rater
//! column, an unknown id, a duplicate row, an id of the key absent from the sheet, a label
//! outside its set, an empty required label, and a suggested value where none is allowed (or
//! none where one is required). Values are trimmed; a UTF-8 byte-order mark and blank lines are
//! tolerated.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// What a column holds and how it is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rule {
    /// The anonymous row id; must be one of the key's ids, once.
    Id,
    /// Text the export wrote (or a free note); not checked.
    Text,
    /// A label from `allowed`; when `required`, every row needs one.
    Label { allowed: Vec<String>, required: bool },
    /// A value from `allowed` that depends on label column `on`: none allowed when `on` holds
    /// `none_when`, required when it holds any other value.
    Suggested { allowed: Vec<String>, on: String, none_when: String },
    /// Who labelled the row; required in the header and on every row.
    Rater,
}

/// One column of a sheet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Column {
    pub name: String,
    pub rule: Rule,
    /// The header must have it (the id, label and rater columns always must).
    pub required: bool,
}

impl Column {
    pub(crate) fn new(name: &str, rule: Rule, required: bool) -> Self {
        Self { name: name.to_string(), rule, required }
    }
}

/// A sheet's columns and the ids its export wrote.
#[derive(Debug, Clone)]
pub(crate) struct Spec {
    pub columns: Vec<Column>,
    pub ids: BTreeSet<String>,
}

/// One located problem: the 1-based line (none for a row absent from the sheet), the row's id
/// when known, the column when one is at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    pub line: Option<u64>,
    pub id: Option<String>,
    pub column: Option<String>,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(line) = self.line {
            write!(f, "{line}: ")?;
        }
        if let Some(id) = &self.id {
            write!(f, "item `{id}`: ")?;
        }
        if let Some(column) = &self.column {
            write!(f, "column `{column}`: ")?;
        }
        f.write_str(&self.message)
    }
}

/// A row that passed the structural checks (its label problems, if any, are in the problems).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Row {
    pub line: u64,
    pub id: String,
    /// Column name → trimmed value, for every header column.
    pub values: BTreeMap<String, String>,
}

impl Row {
    /// The trimmed value of `column`, empty when the sheet lacks it.
    pub(crate) fn get(&self, column: &str) -> &str {
        self.values.get(column).map(String::as_str).unwrap_or("")
    }
}

/// What [`check`] found.
#[derive(Debug, Clone, Default)]
pub(crate) struct Checked {
    pub rows: Vec<Row>,
    pub problems: Vec<Problem>,
}

fn problem(line: Option<u64>, id: Option<&str>, column: Option<&str>, message: String) -> Problem {
    Problem { line, id: id.map(str::to_string), column: column.map(str::to_string), message }
}

fn one_of(allowed: &[String]) -> String {
    allowed.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", ")
}

/// Reads a filled sheet and checks every row against `spec`.
pub(crate) fn check(spec: &Spec, bytes: &[u8]) -> Checked {
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf".as_slice()).unwrap_or(bytes);
    let mut reader = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(bytes);
    let mut out = Checked::default();
    let mut records = reader.byte_records();
    let header: Vec<String> = match records.next() {
        None => {
            out.problems.push(problem(None, None, None, "the sheet is empty".into()));
            return out;
        }
        Some(Err(e)) => {
            out.problems.push(problem(Some(1), None, None, format!("cannot read the header: {e}")));
            return out;
        }
        Some(Ok(r)) => match r.iter().map(|f| std::str::from_utf8(f).map(|s| s.trim().to_string())).collect::<Result<Vec<_>, _>>() {
            Ok(h) => h,
            Err(_) => {
                out.problems.push(problem(Some(1), None, None, "the header is not UTF-8 text; save the sheet as UTF-8 CSV".into()));
                return out;
            }
        },
    };
    let names: Vec<&str> = spec.columns.iter().map(|c| c.name.as_str()).collect();
    let mut seen_header = BTreeSet::new();
    for h in &header {
        if !names.contains(&h.as_str()) {
            out.problems.push(problem(Some(1), None, Some(h), format!("unknown column `{h}`; the sheet's columns are {}", names.join(", "))));
        } else if !seen_header.insert(h.clone()) {
            out.problems.push(problem(Some(1), None, Some(h), "the column appears twice".into()));
        }
    }
    let present = |name: &str| header.iter().any(|h| h == name);
    for c in &spec.columns {
        if present(&c.name) {
            continue;
        }
        if c.rule == Rule::Rater {
            out.problems.push(problem(Some(1), None, Some(&c.name), format!("no `{}` column: add it and write who labelled each row", c.name)));
        } else if c.required {
            out.problems.push(problem(Some(1), None, Some(&c.name), format!("the header lacks column `{}`", c.name)));
        }
    }
    let Some(id_column) = spec.columns.iter().find(|c| c.rule == Rule::Id).map(|c| c.name.clone()) else {
        out.problems.push(problem(None, None, None, "the sheet's specification has no id column".into()));
        return out;
    };
    if !present(&id_column) {
        return out;
    }

    let id_index = header.iter().position(|h| h == &id_column).unwrap_or(0);
    let mut first_line: BTreeMap<String, u64> = BTreeMap::new();
    // Ids on rows that are reported for their shape; they are not also reported as missing.
    let mut mentioned: BTreeSet<String> = BTreeSet::new();
    for record in records {
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                let line = e.position().map(|p| line_at(bytes, p.byte()));
                out.problems.push(problem(line, None, None, format!("cannot read the row: {e}")));
                continue;
            }
        };
        // Lines counted from the record's byte offset (the csv crate's own line count drifts
        // with `\r\n` and blank lines).
        let line = record.position().map(|p| line_at(bytes, p.byte())).unwrap_or(0);
        if let Some(id) = record.get(id_index).and_then(|f| std::str::from_utf8(f).ok()) {
            mentioned.insert(id.trim().to_string());
        }
        let fields: Vec<&str> = match record.iter().enumerate().map(|(i, f)| std::str::from_utf8(f).map_err(|_| i)).collect::<Result<Vec<_>, _>>() {
            Ok(f) => f,
            Err(i) => {
                let column = header.get(i).map(String::as_str);
                out.problems.push(problem(Some(line), None, column, "not UTF-8 text; save the sheet as UTF-8 CSV".into()));
                continue;
            }
        };
        if fields.len() != header.len() {
            out.problems.push(problem(Some(line), None, None, format!("{} fields where the header has {}", fields.len(), header.len())));
            continue;
        }
        let values: BTreeMap<String, String> = header.iter().cloned().zip(fields.iter().map(|f| f.trim().to_string())).collect();
        let id = values.get(&id_column).cloned().unwrap_or_default();
        if !spec.ids.contains(&id) {
            out.problems.push(problem(Some(line), Some(&id), Some(&id_column), "not in the key".into()));
            continue;
        }
        if let Some(first) = first_line.get(&id) {
            out.problems.push(problem(Some(line), Some(&id), Some(&id_column), format!("listed twice (first on line {first})")));
            continue;
        }
        first_line.insert(id.clone(), line);
        let row = Row { line, id, values };
        check_labels(spec, &row, &mut out.problems);
        out.rows.push(row);
    }
    for id in spec.ids.iter().filter(|i| !first_line.contains_key(*i) && !mentioned.contains(*i)) {
        out.problems.push(problem(None, Some(id), Some(&id_column), "missing from the sheet (every exported row must come back)".into()));
    }
    out
}

/// The 1-based line a record starts on, from the offset the csv crate gives (the end of the
/// previous record, before its line end and any blank lines).
fn line_at(bytes: &[u8], offset: u64) -> u64 {
    let mut end = usize::try_from(offset).unwrap_or(usize::MAX).min(bytes.len());
    while end < bytes.len() && matches!(bytes[end], b'\r' | b'\n') {
        end += 1;
    }
    bytes[..end].iter().filter(|b| **b == b'\n').count() as u64 + 1
}

fn check_labels(spec: &Spec, row: &Row, problems: &mut Vec<Problem>) {
    let at = |column: &str, message: String| problem(Some(row.line), Some(&row.id), Some(column), message);
    for c in &spec.columns {
        let Some(value) = row.values.get(&c.name) else { continue };
        match &c.rule {
            Rule::Id | Rule::Text => {}
            Rule::Rater if value.is_empty() => problems.push(at(&c.name, "empty; write who labelled the row".into())),
            Rule::Rater => {}
            Rule::Label { required, .. } if value.is_empty() => {
                if *required {
                    problems.push(at(&c.name, "empty; every row needs a label".into()));
                }
            }
            Rule::Label { allowed, .. } => {
                if !allowed.contains(value) {
                    problems.push(at(&c.name, format!("`{value}` is not one of {}", one_of(allowed))));
                }
            }
            Rule::Suggested { allowed, on, none_when } => {
                let label = row.get(on);
                if label == none_when {
                    if !value.is_empty() {
                        problems.push(at(&c.name, format!("`{value}` where none is allowed (`{on}` is `{none_when}`)")));
                    }
                } else if label.is_empty()
                    || spec.columns.iter().any(|o| &o.name == on && matches!(&o.rule, Rule::Label { allowed, .. } if !allowed.iter().any(|a| a == label)))
                {
                    // The label itself is missing or wrong; that is its own problem.
                } else if value.is_empty() {
                    problems.push(at(&c.name, format!("empty; required when `{on}` is `{label}` (one of {})", one_of(allowed))));
                } else if !allowed.contains(value) {
                    problems.push(at(&c.name, format!("`{value}` is not one of {}", one_of(allowed))));
                }
            }
        }
    }
}

/// Writes a sheet: the header and the rows, quoted only where needed, `\n` line ends.
pub(crate) fn write(header: &[&str], rows: &[Vec<String>]) -> Result<String, csv::Error> {
    let mut writer = csv::WriterBuilder::new().from_writer(Vec::new());
    writer.write_record(header)?;
    for row in rows {
        writer.write_record(row)?;
    }
    let bytes = writer.into_inner().map_err(|e| csv::Error::from(std::io::Error::other(e.to_string())))?;
    String::from_utf8(bytes).map_err(|e| csv::Error::from(std::io::Error::other(e.to_string())))
}

#[cfg(test)]
mod tests;
