//! Contamination, stated: recall split at each reviewer's declared training cut-off into the
//! oracle's bugs fixed before it (the model may have seen the fix) and those fixed on or
//! after it (it cannot have), from the findings' fix dates (a mined oracle's `fixed`).

use crate::analysis::matching::matcher::{MatchCounts, Verdict};
use crate::analysis::model::{fmt_ratio, AnalysisInput, Table};
use crate::ground_truth::oracle::Oracle;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Each cell's reviewer's declared training cut-off (`YYYY-MM-DD`), by cell id, handed in by
/// the experiment from `[reviewers.NAME] training-cutoff`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrainingCutoffs(pub BTreeMap<String, String>);

impl<'a> AnalysisInput<'a> {
    /// The cells' declared training cut-offs, when any reviewer declares one.
    pub(crate) fn training_cutoffs(&self) -> Option<&'a TrainingCutoffs> {
        self.extras.get()
    }
}

/// Recall in one cell over the oracle's bugs fixed before its cut-off and on or after it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CutoffRecall {
    pub cell: String,
    pub cutoff: String,
    /// Oracle findings fixed before the cut-off, once per repeat, and how many were found.
    pub before: usize,
    pub before_found: usize,
    pub before_recall: Option<f64>,
    /// Fixed on or after the cut-off.
    pub after: usize,
    pub after_found: usize,
    pub after_recall: Option<f64>,
    /// Oracle findings without a fix date, left out of both.
    pub undated: usize,
}

/// One cell's verdicts on the oracle's findings (finding id, verdict), every repeat and case.
pub struct CellVerdicts<'v> {
    pub cell: &'v str,
    pub verdicts: Vec<(&'v str, Verdict)>,
}

/// Recall before and after the cut-off of every cell whose reviewer declares one.
pub fn recall_by_cutoff(oracle: &Oracle, cells: &[CellVerdicts<'_>], cutoffs: &TrainingCutoffs) -> Vec<CutoffRecall> {
    let mut out = Vec::new();
    for c in cells {
        let Some(cutoff) = cutoffs.0.get(c.cell) else { continue };
        let (mut before, mut after, mut undated) = (MatchCounts::default(), MatchCounts::default(), 0);
        for &(finding, verdict) in &c.verdicts {
            match oracle.finding(finding).and_then(|f| f.fixed.as_deref()) {
                // ISO dates compare as text.
                Some(fixed) if fixed < cutoff.as_str() => before.add_verdict(verdict),
                Some(_) => after.add_verdict(verdict),
                None => undated += 1,
            }
        }
        out.push(CutoffRecall {
            cell: c.cell.to_string(),
            cutoff: cutoff.clone(),
            before: before.oracle,
            before_found: before.found,
            before_recall: before.recall_strict(),
            after: after.oracle,
            after_found: after.found,
            after_recall: after.recall_strict(),
            undated,
        });
    }
    out
}

/// The table, and a note that says what the split can and cannot show.
pub fn cutoff_table(rows: &[CutoffRecall]) -> (Table, String) {
    let columns = [
        "Cell",
        "Training cut-off",
        "Fixed before: oracle findings",
        "Found",
        "Recall (strict)",
        "Fixed on or after: oracle findings",
        "Found",
        "Recall (strict)",
        "Undated",
    ];
    let mut table = Table::with_columns("Recall by fix date and training cut-off", columns.map(String::from).to_vec());
    for r in rows {
        table.push(vec![
            format!("`{}`", r.cell).into(),
            r.cutoff.clone().into(),
            r.before.into(),
            r.before_found.into(),
            fmt_ratio(r.before_recall),
            r.after.into(),
            r.after_found.into(),
            fmt_ratio(r.after_recall),
            r.undated.into(),
        ]);
    }
    let note = "Recall by fix date: a bug fixed before a reviewer's declared `training-cutoff` may be in its model's training data with its fix, so recall on those can be inflated by memory; recall on bugs fixed on or after it cannot. A higher recall before the cut-off is a sign of contamination, not a proof (older bugs can also be easier), and the fix date is the fix commit's author date.".to_string();
    (table, note)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recall_is_split_at_the_cutoff_by_fix_date_and_undated_bugs_are_counted_apart() {
        let mut oracle = Oracle { version: 1, findings: Vec::new(), cases: Vec::new(), skipped: Vec::new() };
        for (id, fixed) in [("old", Some("2023-05-01")), ("edge", Some("2024-06-30")), ("new", Some("2025-01-02")), ("nodate", None)] {
            let mut f = crate::analysis::matching::matcher::tests::oracle(id, "a.rs", 1, crate::finding::Category::Bug, "bug");
            f.case_id = Some("c".into());
            f.fixed = fixed.map(String::from);
            oracle.findings.push(f);
        }
        let cell = CellVerdicts {
            cell: "reviewer=a",
            verdicts: vec![("old", Verdict::Found), ("edge", Verdict::Missed), ("new", Verdict::Found), ("nodate", Verdict::Found)],
        };
        let cutoffs = TrainingCutoffs([("reviewer=a".to_string(), "2024-06-30".to_string())].into());
        let rows = recall_by_cutoff(&oracle, std::slice::from_ref(&cell), &cutoffs);
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        // Fixed on the cut-off day counts as after it.
        assert_eq!((r.before, r.before_found, r.after, r.after_found, r.undated), (1, 1, 2, 1, 1), "{r:?}");
        assert_eq!((r.before_recall, r.after_recall), (Some(1.0), Some(0.5)));
        let elsewhere = TrainingCutoffs([("reviewer=b".to_string(), "2024-06-30".to_string())].into());
        assert!(recall_by_cutoff(&oracle, &[cell], &elsewhere).is_empty(), "this cell's reviewer declares no cut-off");
    }
}
