//! The reviewers: one `[reviewer]` table or named `[reviewers.NAME]` tables, each read by its
//! kind's reader, and the pipelines bound to the reviewers they name.

use super::*;
use crate::config::{did_you_mean, TableReader};
use crate::matrix::{AxisValue, Matrix};
use crate::reviewer::spec::{read_reviewer, ReviewerKindSpec};
use std::collections::BTreeSet;
use std::path::Path;

pub(super) fn read_reviewers(root: &TableReader<'_, '_>, axes: &BTreeSet<String>, matrix: Option<&Matrix>, base_dir: &Path) -> Option<Reviewers> {
    let problems = root.problems();
    match (root.has("reviewer"), root.has("reviewers")) {
        (true, true) => {
            root.allow("reviewers");
            problems.push_with_help(
                root.key_span("reviewers").unwrap_or(0..0),
                "both [reviewer] and [reviewers.NAME] are given",
                "use one [reviewer], or name every reviewer as [reviewers.NAME] and add a `reviewer` axis",
            );
            let t = root.table("reviewer")?;
            t.finish();
            None
        }
        (false, false) => {
            root.allow("reviewer");
            problems.push_with_help(root.span(), "missing section [reviewer]", "declare one [reviewer], or named [reviewers.NAME] tables");
            None
        }
        (true, false) => {
            if matrix.is_some_and(|m| m.axis(REVIEWER_AXIS).is_some()) {
                let span = root.table("matrix").and_then(|m| m.key_span(REVIEWER_AXIS)).unwrap_or(0..0);
                problems.push_with_help(
                    span,
                    "the `reviewer` axis chooses among named reviewers, but this manifest has one [reviewer]",
                    "name the reviewers as [reviewers.NAME] tables, or rename the axis",
                );
            }
            let t = root.table("reviewer")?;
            let spec = read_reviewer(&t, axes, base_dir);
            let span = t.span();
            t.finish();
            let spec = spec?;
            if matches!(spec.kind, ReviewerKindSpec::Pipeline(_)) {
                problems.push_with_help(
                    span,
                    "a pipeline's stages call named reviewers",
                    "declare it and the reviewers its stages call as [reviewers.NAME] tables",
                );
                return None;
            }
            Some(Reviewers { entries: vec![NamedReviewer { name: SINGLE_REVIEWER.to_string(), spec }], by_axis: false })
        }
        (false, true) => {
            let table = root.table("reviewers")?;
            let mut entries = Vec::new();
            let mut complete = true;
            let names = table.keys();
            for (name, span) in &names {
                if !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) || name.is_empty() {
                    problems.push(span.clone(), format!("reviewer name `{name}` must use only letters, digits, `-`, `_` and `.`"));
                }
                match table.table(name) {
                    Some(t) => {
                        let spec = read_reviewer(&t, axes, base_dir);
                        t.finish();
                        match spec {
                            Some(spec) => entries.push(NamedReviewer { name: name.clone(), spec }),
                            None => complete = false,
                        }
                    }
                    None => complete = false,
                }
            }
            let table_span = table.span();
            table.finish();
            if names.is_empty() {
                problems.push(table_span, "[reviewers] names no reviewer: add [reviewers.NAME] tables");
                return None;
            }
            let declared: Vec<&str> = names.iter().map(|(n, _)| n.as_str()).collect();
            let axis = matrix.and_then(|m| m.axis(REVIEWER_AXIS));
            match axis {
                Some(axis) => {
                    let span = root.table("matrix").and_then(|m| m.key_span(REVIEWER_AXIS)).unwrap_or(0..0);
                    for value in &axis.values {
                        let AxisValue::Str(v) = value else {
                            problems.push(span.clone(), format!("`reviewer` axis values name reviewers: `{value}` is not a name"));
                            continue;
                        };
                        if !declared.contains(&v.as_str()) {
                            let help = match did_you_mean(v, declared.iter().copied()) {
                                Some(best) => format!("did you mean `{best}`? declared: {}", declared.join(", ")),
                                None => format!("declared: {}", declared.join(", ")),
                            };
                            problems.push_with_help(span.clone(), format!("`reviewer` axis names `{v}`, which is not declared as [reviewers.{v}]"), help);
                        }
                    }
                }
                None if names.len() > 1 => {
                    problems.push_with_help(
                        root.table("matrix").map(|m| m.span()).unwrap_or(0..0),
                        format!("{} reviewers are declared but the matrix has no `reviewer` axis to choose among them", names.len()),
                        format!("add `reviewer = [{}]` to [matrix]", declared.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(", ")),
                    );
                }
                None => {}
            }
            complete &= resolve_pipelines(&mut entries, problems);
            complete.then_some(Reviewers { entries, by_axis: axis.is_some() })
        }
    }
}

/// Resolves each pipeline's stages against the other named reviewers.
pub(super) fn resolve_pipelines(entries: &mut [NamedReviewer], problems: &crate::config::Problems) -> bool {
    let declared: Vec<NamedReviewer> = entries.to_vec();
    let named: Vec<(&str, &crate::reviewer::spec::ReviewerSpec)> = declared.iter().map(|e| (e.name.as_str(), &e.spec)).collect();
    let mut ok = true;
    for entry in entries.iter_mut() {
        if let ReviewerKindSpec::Pipeline(p) = &mut entry.spec.kind {
            ok &= crate::reviewer::bind::resolve(p, &entry.name, &named, problems);
        }
    }
    ok
}
