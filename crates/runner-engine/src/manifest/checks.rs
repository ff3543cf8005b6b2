//! The checks across sections: the target's axes, and what the analyses need of the target
//! (an oracle, a history) and of the matrix (a comparison's baseline).

use crate::analysis::spec::AnalysisSpec;
use crate::config::{did_you_mean, TableReader};
use crate::matrix::{AxisValue, Matrix};
use crate::subject::TargetSpec;
use toml::de::DeValue;

pub(super) fn check_target_axes(root: &TableReader<'_, '_>, target: &TargetSpec, matrix: &Matrix) {
    match target {
        TargetSpec::Git { .. } if matrix.axis("ref").is_none() => {
            root.problems().push_with_help(
                root.span(),
                "a git target needs a `ref` axis in [matrix] (the base of `ref..head`), e.g. `ref = [\"HEAD~1\"]`",
                "or review each commit of a range as a subject of its own: `commits = \"HEAD~10..HEAD\"` in [target]",
            );
        }
        TargetSpec::History { history, .. } if matrix.axis("ref").is_some() => {
            let key = if matches!(history.commits, crate::subject::history::Commits::Merges(_)) { "pull-requests" } else { "commits" };
            let span = root.table("matrix").and_then(|m| m.key_span("ref")).unwrap_or_else(|| root.span());
            root.problems().push_with_help(
                span,
                format!("the `ref` axis does not apply with `{key}`: each commit is reviewed against its first parent, so there is no base to vary"),
                format!("remove `ref` from [matrix]; or, to review one range as a single change, remove `{key}` from [target] and keep `ref`"),
            );
        }
        TargetSpec::Corpus { .. } if matrix.axis("ref").is_some() => {
            root.problems().push(root.span(), "the `ref` axis applies to git targets only; a corpus target reviews each case's before..after");
        }
        TargetSpec::External { .. } if matrix.axis("ref").is_some() => {
            root.problems().push(root.span(), "the `ref` axis does not apply to an `external` target: each change is reviewed as it is");
        }
        TargetSpec::Evals { .. } if matrix.axis("ref").is_some() => {
            root.problems().push(root.span(), "the `ref` axis does not apply with `evals`: each eval case's `Range: base..tip` is reviewed");
        }
        _ => {}
    }
}

/// Why the target has no oracle, when it has none (with `check_paths`, a corpus without
/// `oracle.json` too).
pub(super) fn missing_oracle(target: &TargetSpec, check_paths: bool) -> Option<&'static str> {
    match target {
        TargetSpec::Git { oracle: None, .. } | TargetSpec::History { oracle: None, .. } => Some("the git repository names no `oracle` file"),
        TargetSpec::Git { .. } | TargetSpec::History { .. } => None,
        TargetSpec::External { oracle: None, .. } => Some("the external target names no `oracle` file"),
        TargetSpec::Corpus { dir, .. } if check_paths && dir.is_dir() && !dir.join(crate::ground_truth::oracle::ORACLE_FILE).is_file() => {
            Some("the corpus has no `oracle.json`")
        }
        TargetSpec::External { .. } | TargetSpec::Corpus { .. } | TargetSpec::Evals { .. } => None,
    }
}

/// An analysis that scores findings against an oracle, on a target without one, is an error
/// at its `kind`; a `compare` analysis that lists oracle metrics, at its `metrics`.
pub(super) fn check_oracle_needs(root: &TableReader<'_, '_>, target: &TargetSpec, analyses: &[Option<AnalysisSpec>], check_paths: bool) {
    use crate::analysis::spec::AnalysisKind;
    let Some(why) = missing_oracle(target, check_paths) else { return };
    // Read again for the spans only where every item is a table, so no problem is told twice.
    let all_tables =
        root.get("analysis").is_some_and(|v| matches!(v.get_ref(), DeValue::Array(items) if items.iter().all(|i| matches!(i.get_ref(), DeValue::Table(_)))));
    if !all_tables {
        return;
    }
    let help = "score against an oracle with a corpus that has `oracle.json`, an eval set (`evals`) or an `external` target with `oracle`";
    for (t, spec) in root.tables("analysis").iter().zip(analyses) {
        let Some(spec) = spec else { continue };
        match spec.kind {
            AnalysisKind::FIXTURE | AnalysisKind::REVIEW_EVAL | AnalysisKind::JURY => {
                let span = t.get("kind").map_or_else(|| t.span(), |k| k.span());
                t.problems().push_with_help(
                    span,
                    format!("analysis `{}` scores findings against an oracle, but {why}", spec.kind.as_str()),
                    format!("{help}, or remove this analysis"),
                );
            }
            AnalysisKind::COMPARE if t.has("metrics") => {
                let needing: Vec<&str> = spec.compare().into_iter().flat_map(|c| &c.metrics).filter(|m| m.needs_oracle()).map(|m| m.as_str()).collect();
                if !needing.is_empty() {
                    let span = t.get("metrics").map_or_else(|| t.span(), |k| k.span());
                    t.problems().push_with_help(
                        span,
                        format!(
                            "compare metric{} {} need{} an oracle, but {why}",
                            if needing.len() == 1 { "" } else { "s" },
                            needing.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", "),
                            if needing.len() == 1 { "s" } else { "" }
                        ),
                        format!("compare `findings` or `jaccard` (or RQS v2's jury and alignment metrics) here; {help}"),
                    );
                }
            }
            _ => {}
        }
    }
}

/// A `resolution` analysis follows findings through the later commits of a repository's own
/// history: on any other target it is an error at its `kind`.
pub(super) fn check_history_needs(root: &TableReader<'_, '_>, target: &TargetSpec, analyses: &[Option<AnalysisSpec>]) {
    use crate::analysis::spec::AnalysisKind;
    if matches!(target, TargetSpec::History { .. }) || !analyses.iter().flatten().any(|a| a.reads_history()) {
        return;
    }
    let what = match target {
        TargetSpec::Git { .. } => "a `ref` target reviews one change per ref, not commits of a history",
        TargetSpec::Corpus { .. } => "a corpus's cases have no later commits",
        TargetSpec::Evals { .. } => "an eval set's cases are reviewed in blind clones without their later commits",
        TargetSpec::External { .. } => "external changes have no repository",
        TargetSpec::History { .. } => return,
    };
    // Read again for the spans only where every item is a table, so no problem is told twice.
    if !root.get("analysis").is_some_and(|v| matches!(v.get_ref(), DeValue::Array(items) if items.iter().all(|i| matches!(i.get_ref(), DeValue::Table(_))))) {
        return;
    }
    let help = "select commits beside `repo` in [target]: `commits = \"A..B\"` (or a list) or `pull-requests = \"A..B\"`";
    for (t, spec) in root.tables("analysis").iter().zip(analyses) {
        match spec {
            Some(s) if s.kind == AnalysisKind::RESOLUTION => {
                let span = t.get("kind").map_or_else(|| t.span(), |k| k.span());
                t.problems().push_with_help(
                    span,
                    format!("analysis `resolution` follows findings through later commits of a repository's history, but {what}"),
                    help,
                );
            }
            Some(s) if s.reads_history() => {
                let span = t.get("metrics").map_or_else(|| t.span(), |k| k.span());
                t.problems().push_with_help(
                    span,
                    format!("compare metric `resolution` follows findings through later commits of a repository's history, but {what}"),
                    help,
                );
            }
            _ => {}
        }
    }
}

/// The reviewers: one `[reviewer]` table, or named `[reviewers.NAME]` tables chosen per cell
/// by the matrix's `reviewer` axis.
/// A `compare` analysis's `baseline` that is not a value of its axis: nothing would be
/// compared, which `exec` could only say after the runs.
pub(super) fn check_compare_baselines(root: &TableReader<'_, '_>, analyses: &[Option<AnalysisSpec>], matrix: &Matrix) {
    // Only where every `[[analysis]]` is a table (another shape is reported where it is read).
    match root.get("analysis").map(|v| v.get_ref()) {
        Some(DeValue::Array(items)) if items.iter().all(|i| matches!(i.get_ref(), DeValue::Table(_))) => {}
        _ => return,
    }
    let tables = root.tables("analysis");
    for (spec, table) in analyses.iter().zip(&tables) {
        let Some(spec) = spec else { continue };
        let (Some(axis_name), Some(baseline)) = (spec.axis.as_deref(), spec.compare().and_then(|c| c.baseline.as_deref())) else { continue };
        // An axis that is not in the matrix is its own (already reported) mistake.
        let Some(axis) = matrix.axis(axis_name) else { continue };
        let values: Vec<String> = axis.values.iter().map(AxisValue::render).collect();
        if values.iter().any(|v| v == baseline) {
            continue;
        }
        let span = table.get("baseline").map(|v| v.span()).unwrap_or_else(|| table.span());
        let message = format!("`baseline = \"{baseline}\"` is not a value of axis `{axis_name}`");
        match did_you_mean(baseline, values.iter().map(String::as_str)) {
            Some(best) => root.problems().push_with_help(span, message, format!("did you mean `{best}`?")),
            None => root.problems().push_with_help(span, message, format!("values: {}", values.join(", "))),
        }
    }
}
