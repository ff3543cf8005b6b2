//! A6, finding-ID stability: the same finding (same file, line and normalized message) must
//! carry the same id in every repeat, or dismissals and history stop matching it.

use crate::analysis::definition::Definition;
use crate::analysis::spec::AnalysisKind;
use crate::analysis::matching::matcher::normalize_message;
use crate::analysis::{data::DataList, model::missing_note, model::runs_of, model::truncate, model::AnalysisInput, model::AnalysisResult, model::Table};
use crate::analysis::spec::AnalysisSpec;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};

/// Mismatches listed in the report; results.json lists them all.
const SHOWN: usize = 20;

/// A location and message whose ids differ between repeats.
#[derive(Debug, Clone)]
pub(crate) struct Mismatch {
    pub cell: String,
    pub subject: String,
    pub file: String,
    pub line: u32,
    pub message: String,
    /// repeat → the ids found there.
    pub ids: BTreeMap<u32, BTreeSet<String>>,
}

/// Per subject: (file, line, normalized message) → (repeat → ids, the first message seen).
type Locations<'a> = BTreeMap<(&'a str, u32, String), (BTreeMap<u32, BTreeSet<String>>, &'a str)>;

/// `id-stability` (A6): finding IDs across repeats.
pub(crate) const ANALYSIS: Definition = Definition::new(AnalysisKind::ID_STABILITY, compute);

pub fn compute(spec: &AnalysisSpec, input: &AnalysisInput<'_>) -> AnalysisResult {
    let mut result = AnalysisResult::new(
        spec,
        "A6",
        "Stable finding ids across repeats",
        "Across the repeats of each cell and subject, findings with the same file, line and normalized message \
         (lowercased words, punctuation dropped) must carry identical ids. A cell fails if any such finding has different ids in different repeats.",
    );
    result.rule = Some("same finding: same file, same line (range start when a range is given), equal normalized message; only findings present in at least two repeats are compared".into());
    if input.repeat < 2 {
        result.notes.push(format!("ID stability needs at least 2 repeats; the matrix has `repeat = {}`.", input.repeat));
    }

    let mut table = Table::new("", &["Cell", "Subjects compared", "Findings per repeat", "Findings compared", "Mismatches", "Stable"]);
    let mut all_mismatches: Vec<Mismatch> = Vec::new();
    let mut data = DataList::default();
    let mut any_stable = false;
    for cell in input.cells {
        let mut per_repeat: BTreeMap<u32, usize> = BTreeMap::new();
        let mut keys: BTreeMap<&str, Locations<'_>> = BTreeMap::new();
        for run in runs_of(input, cell) {
            *per_repeat.entry(run.repeat).or_default() += run.findings.len();
            let subject = keys.entry(run.subject).or_default();
            for f in run.findings {
                let entry =
                    subject.entry((f.file.as_str(), f.anchor_line(), normalize_message(&f.message))).or_insert_with(|| (BTreeMap::new(), f.message.as_str()));
                entry.0.entry(run.repeat).or_default().insert(f.id.clone());
            }
        }
        let mut compared = 0usize;
        let mut subjects_compared = 0usize;
        let mut mismatches = Vec::new();
        for (subject, locations) in &keys {
            let mut any = false;
            for ((file, line, _), (ids, message)) in locations {
                if ids.len() < 2 {
                    continue;
                }
                any = true;
                compared += 1;
                let mut sets = ids.values();
                let first = sets.next();
                if sets.any(|s| Some(s) != first) {
                    mismatches.push(Mismatch {
                        cell: cell.id.clone(),
                        subject: subject.to_string(),
                        file: file.to_string(),
                        line: *line,
                        message: message.to_string(),
                        ids: ids.clone(),
                    });
                }
            }
            subjects_compared += usize::from(any);
        }
        let stable = (subjects_compared > 0).then_some(mismatches.is_empty());
        table.push(vec![
            format!("`{}`", cell.id).into(),
            subjects_compared.into(),
            if per_repeat.is_empty() { "–".into() } else { per_repeat.values().map(usize::to_string).collect::<Vec<_>>().join(", ").into() },
            compared.into(),
            mismatches.len().into(),
            match stable {
                Some(true) => "yes".into(),
                Some(false) => "**no**".into(),
                None => "–".into(),
            },
        ]);
        let mut obj = json!({
            "cell": cell.id,
            "stable": stable,
            "compared": compared,
            "mismatches": mismatches.iter().map(mismatch_json).collect::<Vec<_>>(),
        });
        if let Some(map) = obj.as_object_mut() {
            for (repeat, n) in &per_repeat {
                map.insert(format!("total_findings_run{repeat}"), json!(n));
            }
        }
        any_stable |= stable == Some(true);
        data.push(&obj);
        all_mismatches.extend(mismatches);
    }
    result.tables.push(table);
    if !all_mismatches.is_empty() {
        let mut listed = Table::new(
            if all_mismatches.len() > SHOWN { format!("First {SHOWN} of {} mismatches", all_mismatches.len()) } else { "Mismatches".to_string() },
            &["Cell", "Subject", "Location", "Message", "Ids by repeat"],
        );
        for m in all_mismatches.iter().take(SHOWN) {
            listed.push(vec![
                format!("`{}`", m.cell).into(),
                m.subject.clone().into(),
                format!("`{}:{}`", m.file, m.line).into(),
                truncate(&m.message, 60).into(),
                m.ids
                    .iter()
                    .map(|(r, ids)| {
                        format!("#{r}: {}", ids.iter().map(|id| format!("`{}`", id.chars().take(12).collect::<String>())).collect::<Vec<_>>().join(" "))
                    })
                    .collect::<Vec<_>>()
                    .join("; ")
                    .into(),
            ]);
        }
        result.tables.push(listed);
        result.notes.push(format!("**Fail**: {} finding(s) changed id between repeats.", all_mismatches.len()));
    } else if any_stable {
        result.notes.push("**Pass**: every finding found in more than one repeat kept its id.".into());
    }
    result.notes.push("Findings present in only some repeats are a repeatability matter (A4), not an id mismatch.".into());
    result.data = data.finish();
    result.notes.extend(missing_note(input));
    result
}

fn mismatch_json(m: &Mismatch) -> serde_json::Value {
    json!({
        "subject": m.subject,
        "file": m.file,
        "line": m.line,
        "message": m.message,
        "ids": m.ids.iter().map(|(r, ids)| (format!("run{r}"), json!(ids))).collect::<serde_json::Map<_, _>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::spec::AnalysisKind;
    use crate::analysis::test_support::{finding, s, spec, Fixture};

    #[test]
    fn a_changed_id_is_detected() {
        let mut fx = Fixture::new(&[("model", vec![s("a"), s("b")])], 2);
        let stable = finding("x.go", 3, "Nil map write");
        let mut drifting = finding("x.go", 7, "Unchecked error");
        fx.add("model=a", 1, "s", vec![stable.clone(), drifting.clone()]);
        drifting.id = "f".repeat(64);
        // Same line, message differs only in case and punctuation: still the same finding.
        let mut same = finding("x.go", 3, "nil map write.");
        same.id = stable.id.clone();
        fx.add("model=a", 2, "s", vec![same, drifting, finding("x.go", 9, "only here")]);
        fx.add("model=b", 1, "s", vec![stable.clone()]);
        fx.add("model=b", 2, "s", vec![stable]);
        let out = compute(&spec(AnalysisKind::ID_STABILITY, None), &fx.input());
        assert_eq!(out.test_id, "A6");
        assert_eq!(out.data[0]["stable"], false);
        assert_eq!(out.data[0]["compared"], 2);
        assert_eq!(out.data[0]["total_findings_run1"], 2);
        assert_eq!(out.data[0]["total_findings_run2"], 3);
        assert_eq!(out.data[0]["mismatches"][0]["line"], 7);
        assert_eq!(out.data[0]["mismatches"].as_array().map(Vec::len), Some(1));
        assert_eq!(out.data[1]["stable"], true);
        assert_eq!(out.tables[0].rows[0], vec!["`model=a`", "1", "2, 3", "2", "1", "**no**"]);
        assert!(out.tables[1].rows[0][4].render().contains("#2: `ffffffffffff`"), "{:?}", out.tables[1].rows[0]);
        assert!(out.notes[0].contains("Fail"));
    }

    #[test]
    fn single_repeat_is_undecided() {
        let mut fx = Fixture::new(&[("model", vec![s("a")])], 1);
        fx.add("model=a", 1, "s", vec![finding("x", 1, "m")]);
        let out = compute(&spec(AnalysisKind::ID_STABILITY, None), &fx.input());
        assert!(out.data["stable"].is_null());
        assert!(out.notes[0].contains("at least 2 repeats"));
    }
}
