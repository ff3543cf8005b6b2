//! Model answers to findings in stet's schema, the way stet treats them.
//!
//! - A missing or empty `file` is the reviewed file (for a multi-file unit: the file whose
//!   hunk holds the line, else the first); `a/`, `b/` and `./` prefixes are dropped.
//! - Severities and categories are read leniently (`critical` → `error`, `Best Practice` →
//!   `best_practice`); what still is unknown becomes `warning` / `bug` (stet's `Normalize`); a
//!   missing or zero confidence becomes 1. Each repair is listed as a schema
//!   problem of the run (A7).
//! - Evidence filter, exactly stet's `FilterByHunkLines`: a finding for a file the unit did
//!   not review is kept; a file-level finding (no line, no range) is kept; a backwards range
//!   is dropped; a range is kept when it overlaps a reviewed hunk of its file, a line when it
//!   lies inside one; everything else is dropped. Drops are counted, never silent.
//! - IDs follow stet's scheme; a finding repeated with the same ID within a run is kept once.

use super::prompt::Unit;
use crate::finding::{Category, Finding, Severity};
use crate::reviewer::parse::finding_from_value;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Counter names, as they appear in run records.
pub(crate) mod counters {
    pub(crate) const RAW: &str = "findings_raw";
    pub(crate) const KEPT: &str = "findings_kept";
    pub(crate) const OUTSIDE: &str = "findings_dropped_outside_hunk";
    pub(crate) const UNUSABLE: &str = "findings_dropped_unusable";
    pub(crate) const DUPLICATE: &str = "findings_dropped_duplicate";
    pub(crate) const OTHER_FILE: &str = "findings_other_file";
    pub(crate) const FILE_LEVEL: &str = "findings_file_level";
}

/// What normalizing one unit's answer produced.
#[derive(Debug, Default)]
pub(crate) struct Normalized {
    pub findings: Vec<Finding>,
    pub counters: BTreeMap<String, u64>,
    pub schema_problems: Vec<String>,
}

fn clean_path(path: &str) -> String {
    let p = path.trim();
    let p = p.strip_prefix("./").unwrap_or(p);
    let p = p.strip_prefix("a/").or_else(|| p.strip_prefix("b/")).unwrap_or(p);
    p.to_string()
}

/// Normalizes the finding objects of one unit's answer. `seen` holds the IDs already kept
/// in the run, for de-duplication across units.
pub(crate) fn normalize(items: Vec<Value>, unit: &Unit<'_>, repo_dir: &Path, seen: &mut BTreeSet<String>) -> Normalized {
    let mut out = Normalized::default();
    let spans = unit.spans();
    let reviewed: BTreeSet<&str> = unit.files.iter().map(|(f, _)| *f).collect();
    let bump = |out: &mut Normalized, key: &str| *out.counters.entry(key.to_string()).or_insert(0) += 1;
    for (i, mut item) in items.into_iter().enumerate() {
        bump(&mut out, counters::RAW);
        let at = format!("unit `{}` finding {}", unit.label, i + 1);
        let Some(obj) = item.as_object_mut() else {
            out.schema_problems.push(format!("{at}: not an object; dropped"));
            bump(&mut out, counters::UNUSABLE);
            continue;
        };
        match obj.get("severity").and_then(Value::as_str).map(|s| (s.to_string(), Severity::parse_lenient(s))) {
            Some((raw, Some(sev))) => {
                if raw != sev.as_str() {
                    out.schema_problems.push(format!("{at}: severity `{raw}` read as `{sev}`"));
                    obj.insert("severity".into(), Value::from(sev.as_str()));
                }
            }
            Some((bad, None)) => {
                out.schema_problems.push(format!("{at}: severity `{bad}` is not one of error, warning, info, nitpick; used `warning`"));
                obj.insert("severity".into(), Value::from("warning"));
            }
            None => {
                out.schema_problems.push(format!("{at}: no severity; used `warning`"));
                obj.insert("severity".into(), Value::from("warning"));
            }
        }
        match obj.get("category").and_then(Value::as_str).map(|s| (s.to_string(), Category::parse_lenient(s))) {
            Some((raw, Some(cat))) => {
                if raw != cat.as_str() {
                    out.schema_problems.push(format!("{at}: category `{raw}` read as `{cat}`"));
                    obj.insert("category".into(), Value::from(cat.as_str()));
                }
            }
            Some((bad, None)) => {
                out.schema_problems.push(format!("{at}: category `{bad}` is not in stet's category set; used `bug`"));
                obj.insert("category".into(), Value::from("bug"));
            }
            None => {
                out.schema_problems.push(format!("{at}: no category; used `bug`"));
                obj.insert("category".into(), Value::from("bug"));
            }
        }
        let Some(mut f) = finding_from_value(&item, false) else {
            out.schema_problems.push(format!("{at}: no message; dropped"));
            bump(&mut out, counters::UNUSABLE);
            continue;
        };
        if f.confidence == 0.0 {
            f.confidence = 1.0;
        }
        f.file = clean_path(&f.file);
        if f.file.is_empty() {
            f.file =
                spans.iter().find(|(_, a, b)| f.line >= *a && f.line <= *b).map(|(file, _, _)| file.clone()).unwrap_or_else(|| unit.first_file().to_string());
        }
        // stet's evidence filter (FilterByHunkLines).
        if !reviewed.contains(f.file.as_str()) {
            bump(&mut out, counters::OTHER_FILE);
        } else if f.line == 0 && f.range.is_none() {
            bump(&mut out, counters::FILE_LEVEL);
        } else {
            let file_spans = spans.iter().filter(|(file, _, _)| *file == f.file);
            let keep = match f.range {
                Some(r) if r.start > r.end => false,
                Some(r) => file_spans.clone().any(|(_, a, b)| r.start <= *b && r.end >= *a),
                None => file_spans.clone().any(|(_, a, b)| f.line >= *a && f.line <= *b),
            };
            if !keep {
                bump(&mut out, counters::OUTSIDE);
                continue;
            }
        }
        f.assign_stet_id();
        let anchor = match f.range {
            Some(r) if r.is_valid() && r.end > r.start => format!("#L{}-L{}", r.start, r.end),
            _ => format!("#L{}", f.line.max(1)),
        };
        f.cursor_uri = Some(format!("file://{}{anchor}", repo_dir.join(&f.file).display()));
        if !seen.insert(f.id.clone()) {
            bump(&mut out, counters::DUPLICATE);
            continue;
        }
        bump(&mut out, counters::KEPT);
        out.findings.push(f);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::{sha256_hex, LineRange};
    use crate::reviewer::llm::prompt::units;
    use crate::reviewer::llm::spec::UnitKind;
    use crate::subject::diff::parse_unified_diff;
    use serde_json::json;

    const DIFF: &str = "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -4,3 +4,7 @@ def add(a, b):\n \n def div(a, b):\n     return a / b\n+\n+\n+def avg(xs):\n+    return sum(xs) / len(xs)\n";

    #[test]
    fn stet_rules_apply_and_every_drop_is_counted() {
        let files = parse_unified_diff(DIFF);
        let unit = &units(&files, UnitKind::Hunk)[0];
        let items = vec![
            json!({"line": 10, "severity": "critical", "category": "logic", "message": "Division  by zero when xs is empty."}),
            json!({"line": 42, "severity": "error", "category": "bug", "message": "outside"}),
            json!({"line": 0, "severity": "info", "category": "style", "message": "file level"}),
            json!({"file": "other.py", "line": 99, "severity": "info", "category": "style", "message": "elsewhere"}),
            json!({"file": "b/calc.py", "range": {"start": 2, "end": 5}, "severity": "warning", "category": "correctness", "message": "overlaps"}),
            json!({"range": {"start": 9, "end": 7}, "severity": "warning", "category": "bug", "message": "backwards"}),
            json!({"line": 10, "severity": "error", "category": "bug", "message": "Division by zero when xs is empty."}),
            json!({"line": 8, "severity": "error", "category": "bug", "message": ""}),
            json!("just text"),
        ];
        let mut seen = BTreeSet::new();
        let n = normalize(items, unit, Path::new("/repo"), &mut seen);
        let messages: Vec<&str> = n.findings.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(messages, vec!["Division  by zero when xs is empty.", "file level", "elsewhere", "overlaps"]);
        let first = &n.findings[0];
        assert_eq!((first.file.as_str(), first.line, first.severity, first.category), ("calc.py", 10, Severity::Error, Category::Bug));
        assert_eq!(first.id, sha256_hex(b"calc.py:10:Division by zero when xs is empty."));
        assert_eq!(first.confidence, 1.0);
        assert_eq!(first.cursor_uri.as_deref(), Some("file:///repo/calc.py#L10"));
        assert_eq!(n.findings[3].range, Some(LineRange { start: 2, end: 5 }));
        assert_eq!(n.findings[3].file, "calc.py");
        let c = |k: &str| n.counters.get(k).copied().unwrap_or(0);
        assert_eq!(c(counters::RAW), 9);
        assert_eq!(c(counters::KEPT), 4);
        assert_eq!(c(counters::OUTSIDE), 2);
        assert_eq!(c(counters::DUPLICATE), 1, "same loc, same collapsed message");
        assert_eq!(c(counters::UNUSABLE), 2);
        assert_eq!(c(counters::OTHER_FILE), 1);
        assert_eq!(c(counters::FILE_LEVEL), 1);
        assert_eq!(n.schema_problems.len(), 4, "{:?}", n.schema_problems);
    }
}
