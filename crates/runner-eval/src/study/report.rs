//! Human studies declared in a manifest (`[[analysis]] kind = "study"`) as report tables: H1,
//! H7 and H8 read from their filled sheets and key, H5 from H1 sheets and the experiment's
//! jury (the RQS v2 judges' verdicts on the same findings). A sheet that does not pass its
//! checks is not an error of the execution: the report says what is wrong, row by row.

use super::calibration::{self, Compared, STANDS_ALONE};
use super::findings::{self, Share, Study, StudyKey, StudyResult, H1_LABELS, H7_LABELS, H8_LABELS};
use crate::analysis::rqs::metric::Vote;
use crate::analysis::spec::AnalysisSpec;
use crate::analysis::{model::fmt_num, model::fmt_ratio, model::AnalysisInput, model::AnalysisResult, model::Table, model::TableCell};
use crate::finding::Severity;
use crate::judge::rubric::Verdict;
use crate::matrix::RunId;
use std::collections::BTreeMap;
use std::path::Path;

/// Computes a `study` analysis.
pub fn compute(spec: &AnalysisSpec, input: &AnalysisInput<'_>) -> AnalysisResult {
    let Some(options) = spec.study() else {
        let mut r = AnalysisResult::new(spec, "H", "Human study", "A human study read from its filled sheets.");
        r.notes.push("No study is declared (`study = \"h1\"`, with `sheets` and `key`).".into());
        return r;
    };
    let (id, title, description) = match options.study.as_str() {
        "h1" => ("H1", "Blind triage", "People label a blind, seeded sample of findings actionable, false_positive, wrong_suggestion or out_of_scope; precision is the share actionable (95 % Wilson interval), with Cohen's or Fleiss' κ between raters before aggregation."),
        "h4" => ("H4", "Validity of unique findings", "People judge, blind, whether each finding that only one tool reported (the overlap analysis's \"found by one value only\") is a real problem of the change; the share valid per tool (95 % Wilson interval)."),
        "h6" => ("H6", "False-positive audit", "The findings people labelled false_positive or wrong_suggestion in H1, clustered by message similarity (normalized Levenshtein ≥ 0.6 within one category and reason) into candidate patterns a reviewer could learn to suppress; `runner study audit` writes them as CSV."),
        "h5" => ("H5", "Judge calibration", "Each LLM judge's validity and actionability verdicts against people's H1 labels on the same findings: agreement, Cohen's κ, the confusion matrix and the accuracy per H1 label."),
        "h9" => ("H9", "Preference A/B", "Developers use each model in turn for real work, logging each session (findings, dismissals, fixes applied, minutes), then say which model they prefer: the means per model with 95 % bootstrap intervals over sessions, whether the order was counterbalanced, and the preference counts."),
        "h7" => ("H7", "Suggestion quality", "People label each suggestion correct_safe, partial, wrong or harmful; the distribution per cell and the shares correct_safe and harmful (95 % Wilson intervals)."),
        _ => ("H8", "Severity calibration", "People judge each reported severity correct, too_high or too_low (with the severity they would give); the misclassification rate per cell (95 % Wilson interval) and the confusion matrix."),
    };
    let mut r = AnalysisResult::new(spec, id, title, description);
    if options.study == "h9" {
        h9(&mut r, &options.sheets, &options.base_dir);
        return r;
    }
    let base = options.base_dir.as_path();
    let sheets = shown(base, &options.sheets);
    let imported = findings::import_sheets(&options.sheets, &options.key).and_then(|result| Ok((findings::read_key(&options.key)?, result)));
    let (key, result) = match imported {
        Ok(x) => x,
        Err(e) => {
            r.notes.push(format!("The sheets could not be read: {e}"));
            return r;
        }
    };
    let wanted = if matches!(options.study.as_str(), "h5" | "h6") { Study::H1 } else { parse(&options.study) };
    if key.study != wanted {
        let name = |s: Study| serde_json::to_value(s).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        r.notes.push(format!(
            "`{}` is the key of an {} sheet; study `{}` reads {} sheets.",
            shown_one(base, &options.key),
            name(key.study),
            options.study,
            name(wanted)
        ));
        return r;
    }
    let mut result = result;
    result.sheet = options.sheets.iter().map(|p| shown_one(base, p)).collect::<Vec<_>>().join(", ");
    r.notes.push(format!("Sheets {sheets} (key `{}`), labelled by {}.", shown_one(base, &options.key), result.raters.join(", ")));
    match options.study.as_str() {
        "h5" => h5(&mut r, &key, &result, input),
        "h6" => h6(&mut r, &options.sheets, &options.key),
        _ => tables(&mut r, &result),
    }
    r
}

fn parse(study: &str) -> Study {
    match study {
        "h1" => Study::H1,
        "h7" => Study::H7,
        "h4" => Study::H4,
        _ => Study::H8,
    }
}

/// A path as the report shows it: relative to the root of the project the manifest in `base`
/// belongs to, so the page is the same bytes whatever directory runner was started from; a
/// file outside the project as [`lexical`] shows it.
fn shown_one(base: &Path, path: &Path) -> String {
    let relative = runner_core::config::project_relative(base, path);
    if Path::new(&relative).is_absolute() {
        lexical(path)
    } else {
        relative
    }
}

/// A path with `..` taken out lexically (`experiments/../results/x` → `results/x`); an
/// absolute one by its last four components, so the page does not depend on where the
/// project lies.
fn lexical(path: &Path) -> String {
    use std::path::Component;
    let mut parts: Vec<String> = Vec::new();
    let mut absolute = false;
    for c in path.components() {
        match c {
            Component::ParentDir if parts.last().is_some_and(|p| p != "..") => {
                parts.pop();
            }
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => absolute = true,
            other => parts.push(other.as_os_str().to_string_lossy().into_owned()),
        }
    }
    let from = if absolute { parts.len().saturating_sub(4) } else { 0 };
    parts[from..].join("/")
}

fn shown(base: &Path, paths: &[std::path::PathBuf]) -> String {
    paths.iter().map(|p| format!("`{}`", shown_one(base, p))).collect::<Vec<_>>().join(", ")
}

fn share_cells(s: &Share) -> [TableCell; 2] {
    let interval = match s.wilson95 {
        Some((lo, hi)) => format!("[{:.3}, {:.3}]", lo, hi),
        None => "–".into(),
    };
    [TableCell::Share { count: s.count, of: s.of }, TableCell::Text(interval)]
}

/// H1, H7 and H8's tables from an imported study.
fn tables(r: &mut AnalysisResult, result: &StudyResult) {
    let study = result.study;
    let (labels, shares): (Vec<&str>, Vec<&str>) = match study {
        Study::H1 => {
            let mut l = H1_LABELS.to_vec();
            if !result.per_rater.is_empty() {
                l.push(findings::TIED);
            }
            (l, vec!["precision"])
        }
        Study::H7 => (H7_LABELS.to_vec(), vec!["correct_safe", "harmful"]),
        Study::H8 => (H8_LABELS.to_vec(), vec!["misclassified"]),
        Study::H4 => (findings::H4_LABELS.to_vec(), vec!["valid"]),
    };
    let mut columns: Vec<String> = vec!["Cell".into(), "Findings".into()];
    columns.extend(labels.iter().map(|l| format!("`{l}`")));
    for s in &shares {
        columns.push((*s).replace('_', " "));
        columns.push(format!("{} 95 % Wilson", s.replace('_', " ")));
    }
    let column_refs: Vec<&str> = columns.iter().map(String::as_str).collect();
    let mut t = Table::new("", &column_refs);
    for c in &result.cells {
        let mut row = vec![TableCell::Text(format!("`{}`", c.cell)), TableCell::Int(c.n as i64)];
        row.extend(labels.iter().map(|l| TableCell::Int(c.labels.get(*l).copied().unwrap_or(0) as i64)));
        for s in &shares {
            if let Some(share) = c.shares.get(*s) {
                row.extend(share_cells(share));
            }
        }
        t.rows.push(row);
    }
    r.tables.push(t);
    if let Some(a) = &result.agreement {
        r.notes.push(format!(
            "Agreement before aggregation: {} = {} over {} findings rated by all {} raters (observed {}, chance {}).",
            a.method,
            fmt3(a.kappa),
            a.items,
            a.raters,
            fmt3(a.observed),
            fmt3(a.chance)
        ));
    }
    if let Some(rule) = &result.aggregation {
        r.notes.push(format!("Aggregation: {rule}. Precision = `actionable` / findings."));
    }
    if !result.per_rater.is_empty() {
        let mut t = Table::new("Each rater's precision, before aggregation", &["Rater", "Precision", "95 % Wilson"]);
        for (rater, share) in &result.per_rater {
            let [a, b] = share_cells(share);
            t.rows.push(vec![TableCell::Text(rater.clone()), a, b]);
        }
        r.tables.push(t);
    }
    if let Some(m) = &result.confusion {
        let order: Vec<&str> = Severity::ALL.iter().map(|v| v.as_str()).collect();
        let mut columns = vec!["Reported \\ rater".to_string()];
        columns.extend(order.iter().map(|s| format!("`{s}`")));
        let refs: Vec<&str> = columns.iter().map(String::as_str).collect();
        let mut t = Table::new("Confusion matrix, all cells: reported severity × the rater's", &refs);
        for row in &order {
            let mut cells = vec![TableCell::Text(format!("`{row}`"))];
            cells.extend(order.iter().map(|c| TableCell::Int(m.get(*row).and_then(|x| x.get(*c)).copied().unwrap_or(0) as i64)));
            t.rows.push(cells);
        }
        r.tables.push(t);
    }
    r.data = serde_json::to_value(result).unwrap_or_default().into();
}

fn h6(r: &mut AnalysisResult, sheets: &[std::path::PathBuf], key: &Path) {
    let (patterns, audited) = match super::audit::audit(sheets, key, super::audit::DEFAULT_SIMILARITY) {
        Ok(x) => x,
        Err(e) => {
            r.notes.push(format!("The sheets could not be read: {e}"));
            return;
        }
    };
    let mut t = Table::new("", &["Category", "Message pattern", "Reason", "Findings", "Items", "Note"]);
    for p in &patterns {
        t.rows.push(vec![
            TableCell::Text(p.category.clone()),
            TableCell::Text(p.message_pattern.clone()),
            TableCell::Text(format!("`{}`", p.reason)),
            TableCell::Int(p.items.len() as i64),
            TableCell::Text(p.items.join(" ")),
            TableCell::Text(p.note.clone()),
        ]);
    }
    r.tables.push(t);
    r.notes.push(format!("{audited} findings labelled false_positive or wrong_suggestion, in {} candidate patterns.", patterns.len()));
    r.data = serde_json::json!({ "audited": audited, "patterns": patterns }).into();
}

fn fmt3(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.3}")).unwrap_or_else(|| "–".into())
}

fn verdict(v: Vote) -> Option<Verdict> {
    match v {
        Vote::Yes => Some(Verdict::Yes),
        Vote::No => Some(Verdict::No),
        Vote::Unparseable => Some(Verdict::Unparseable),
        Vote::Absent | Vote::Split => None,
    }
}

/// The judges' verdicts on each H1 finding, found through the key: the run (cell, case,
/// repeat) and the finding's stet id within it; the first occurrence with an answer counts
/// (identical findings are judged alike: a judge call is keyed by the finding as shown).
pub fn compared(key: &StudyKey, decided: &BTreeMap<String, String>, input: &AnalysisInput<'_>) -> (Vec<Compared>, usize) {
    let judges = input.rqs().map_or(0, |q| q.judges.len());
    let mut out = Vec::new();
    let mut unmatched = 0;
    for (id, label) in decided {
        let Some(item) = key.items.get(id) else { continue };
        let mut votes: Vec<[Option<Verdict>; 2]> = vec![[None, None]; judges];
        let mut found = false;
        for (repeat, finding_id) in &item.occurrences {
            let Some(run) = input.runs.iter().find(|r| r.cell.id == item.cell && r.subject == item.case && r.repeat == *repeat) else { continue };
            let Some(index) = run.findings.iter().position(|f| &f.id == finding_id) else { continue };
            let Some(scoring) = input.rqs().and_then(|q| q.runs.get(&RunId::new(item.cell.clone(), *repeat, item.case.clone()))) else { continue };
            let Some(fv) = scoring.votes.get(index) else { continue };
            found = true;
            for (j, slot) in votes.iter_mut().enumerate() {
                for (r, list) in [&fv.validity, &fv.actionability].into_iter().enumerate() {
                    if slot[r].is_none() {
                        slot[r] = list.get(j).copied().and_then(verdict);
                    }
                }
            }
        }
        if found {
            out.push(Compared { item: id.clone(), label: label.clone(), judges: votes });
        } else {
            unmatched += 1;
        }
    }
    (out, unmatched)
}

fn h5(r: &mut AnalysisResult, key: &StudyKey, result: &StudyResult, input: &AnalysisInput<'_>) {
    let Some(rqs) = input.rqs() else {
        r.notes.push("No jury: H5 needs the experiment's `[judges.NAME]` and an `rqs` analysis, whose verdicts it compares with the H1 labels.".into());
        return;
    };
    let (compared, unmatched) = compared(key, &result.decided, input);
    let names: Vec<String> = rqs.judges.iter().map(|j| j.name.clone()).collect();
    let calibrations = calibration::calibrate(&names, &compared);
    r.notes.push(format!(
        "H1 labels as judgements: `actionable` → valid yes, actionable yes; `wrong_suggestion` → valid yes, actionable no; `false_positive`, `out_of_scope` → no, no; tied findings give none. \
Agreement = the share of findings where the judge's yes/no equals the person's; a judge below {:.0} % agreement may not be used alone.",
        STANDS_ALONE * 100.0
    ));
    let mut t = Table::new(
        "",
        &[
            "Judge",
            "Rubric",
            "Findings",
            "Unanswered",
            "Agreement",
            "κ",
            "Human yes: judge yes",
            "Human yes: judge no",
            "Human no: judge yes",
            "Human no: judge no",
            "Used alone",
        ],
    );
    for c in &calibrations {
        for rc in &c.rubrics {
            let cell = |h: &str, j: &str| TableCell::Int(rc.confusion.get(h).and_then(|m| m.get(j)).copied().unwrap_or(0) as i64);
            let alone = match rc.stands_alone {
                Some(true) => "yes".to_string(),
                Some(false) => format!("**no** (below {:.0} %)", STANDS_ALONE * 100.0),
                None => "unknown (no findings)".to_string(),
            };
            t.rows.push(vec![
                TableCell::Text(format!("`{}`", c.judge)),
                TableCell::Text(rc.rubric.as_str().into()),
                TableCell::Int(rc.items as i64),
                TableCell::Int(rc.undecided as i64),
                fmt_ratio(rc.agreement),
                fmt_num(rc.kappa, 3),
                cell("yes", "yes"),
                cell("yes", "no"),
                cell("no", "yes"),
                cell("no", "no"),
                TableCell::Text(alone),
            ]);
        }
    }
    r.tables.push(t);
    let mut per = Table::new("Accuracy per H1 label", &["Judge", "Rubric", "H1 label", "Findings", "Judge agrees", "Accuracy"]);
    for c in &calibrations {
        for rc in &c.rubrics {
            for (label, (n, agree)) in &rc.per_label {
                per.rows.push(vec![
                    TableCell::Text(format!("`{}`", c.judge)),
                    TableCell::Text(rc.rubric.as_str().into()),
                    TableCell::Text(format!("`{label}`")),
                    TableCell::Int(*n as i64),
                    TableCell::Int(*agree as i64),
                    fmt_ratio((*n > 0).then(|| *agree as f64 / *n as f64)),
                ]);
            }
        }
    }
    r.tables.push(per);
    if unmatched > 0 {
        r.notes.push(format!("{unmatched} H1 findings have no run of this experiment (the key names runs it does not hold): they are left out."));
    }
    let tied = result.decided.values().filter(|l| *l == findings::TIED).count();
    if tied > 0 {
        r.notes.push(format!("{tied} tied H1 findings give no human judgement."));
    }
    for c in &calibrations {
        for rc in &c.rubrics {
            if rc.stands_alone == Some(false) {
                r.notes.push(format!(
                    "Judge `{}` agrees with people on {} of {} findings for {} ({}): below {:.0} %, it may not be used alone.",
                    c.judge,
                    agreeing(rc),
                    rc.items,
                    rc.rubric.as_str(),
                    fmt3(rc.agreement),
                    STANDS_ALONE * 100.0
                ));
            }
        }
    }
    // People's labels as the judges' own judgements, per finding and rubric.
    let human: BTreeMap<&str, BTreeMap<&str, crate::judge::rubric::Judgement>> = compared
        .iter()
        .map(|c| {
            let per_rubric = [crate::judge::rubric::Rubric::Validity, crate::judge::rubric::Rubric::Actionability]
                .into_iter()
                .filter_map(|rubric| calibration::human_judgement(&c.label, "", rubric).map(|j| (rubric.as_str(), j)))
                .collect();
            (c.item.as_str(), per_rubric)
        })
        .collect();
    r.data = serde_json::json!({ "judges": calibrations, "findings": compared.len(), "unmatched": unmatched, "tied": tied, "human_judgements": human }).into();
}

fn agreeing(rc: &calibration::RubricCalibration) -> usize {
    rc.confusion.iter().map(|(h, m)| m.get(h).copied().unwrap_or(0)).sum()
}

#[cfg(test)]
mod tests;

/// H9 from its session log and survey (`sheets = [sessions, survey]`).
fn h9(r: &mut AnalysisResult, files: &[std::path::PathBuf], base: &Path) {
    use super::preference;
    let [log, survey] = files else {
        r.notes.push("Study `h9` reads two files: the session log, then the preference survey.".into());
        return;
    };
    let read = |p: &Path| crate::bounded::input(p).map_err(|e| format!("`{}`: {e}", shown_one(base, p)));
    let result = read(log).and_then(|l| read(survey).map(|s| (l, s))).and_then(|(l, s)| {
        preference::study(&shown_one(base, log), &l, &shown_one(base, survey), &s, preference::DEFAULT_RESAMPLES, 1).map_err(|problems| problems.join("; "))
    });
    let result = match result {
        Ok(result) => result,
        Err(e) => {
            r.notes.push(format!("The files could not be read: {e}"));
            return;
        }
    };
    let mut columns = vec!["Model".to_string(), "Sessions".into(), "Users".into()];
    columns.extend(preference::MEASURES.iter().map(|m| format!("{} (95 % interval)", m.replace('_', " "))));
    let refs: Vec<&str> = columns.iter().map(String::as_str).collect();
    let mut t = Table::new("", &refs);
    for m in &result.models {
        let mut row = vec![TableCell::Text(format!("`{}`", m.model)), TableCell::Int(m.sessions as i64), TableCell::Int(m.users as i64)];
        for measure in preference::MEASURES {
            let text = match m.means.get(measure) {
                Some(mean) => match (mean.mean, &mean.interval) {
                    (Some(x), Some(i)) => format!("{x:.2} [{:.2}, {:.2}]", i.low, i.high),
                    (Some(x), None) => format!("{x:.2}"),
                    _ => "–".into(),
                },
                None => "–".into(),
            };
            row.push(TableCell::Text(text));
        }
        t.rows.push(row);
    }
    r.tables.push(t);
    let mut prefs = Table::new("Preferred model (final survey)", &["Preferred", "Users"]);
    for (model, n) in &result.preferences.counts {
        prefs.rows.push(vec![TableCell::Text(format!("`{model}`")), TableCell::Int(*n as i64)]);
    }
    r.tables.push(prefs);
    let c = &result.counterbalance;
    let first: Vec<String> = c.first.iter().map(|(m, users)| format!("`{m}` first for {}", users.len())).collect();
    r.notes.push(format!("Files {} and {}: {} sessions of {} users.", shown_one(base, log), shown_one(base, survey), result.sessions, result.users));
    r.notes.push(format!(
        "Counterbalancing: {}{}{}; {}.",
        first.join(", "),
        if c.ambiguous.is_empty() { String::new() } else { format!("; no first model for {}", c.ambiguous.join(", ")) },
        if c.incomplete.is_empty() { String::new() } else { format!("; did not use every model: {}", c.incomplete.join(", ")) },
        if c.balanced { "balanced" } else { "not balanced" }
    ));
    r.notes.extend(result.notes.iter().cloned());
    r.data = serde_json::to_value(&result).unwrap_or_default().into();
}
