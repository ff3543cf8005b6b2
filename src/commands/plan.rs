//! `runner plan`: the plan without running it — cache lookups and miss explanations, the
//! node summary, pipeline stage calls, a history's commits, compare reach and pilot power.

use super::common::locations;
use super::output::warn;
use crate::cli::PlanArgs;
use runner::cache::Lookup;
use runner::error::{Error, Exit};
use runner::experiment;

/// `runner plan`: the plan's size and cache status, the node table, the pipeline calls, the
/// subjects (a history's commits), the compare reach and power estimates, and the runs to run
/// counted by why; with `--runs`, every run with its cache status and why.
pub(crate) fn run(args: PlanArgs) -> Result<Exit, Error> {
    let prepared =
        experiment::prepare_with(&args.manifest, &locations(&args.locations), &experiment::PrepareOptions { max_runs: args.max_runs, ..Default::default() })?;
    let name = &prepared.manifest.experiment.name;
    let mut rows = Vec::new();
    let (mut cached, mut missing) = (0, 0);
    // With a remote cache, what it holds counts as cached (and is copied into the local one).
    let store = prepared.store(std::sync::Arc::new(|message| warn(&message)));
    let runs: Vec<(usize, &runner::plan::PlannedRun)> =
        prepared.plan.runs.iter().enumerate().filter(|(_, r)| args.shard.is_none_or(|s| s.contains(&r.key))).collect();
    store.prefetch(&runs.iter().map(|(_, r)| r.key.clone()).collect::<Vec<_>>());
    // The findings of cached reviews: what the match nodes' calls are computed from.
    let mut known = std::collections::BTreeMap::new();
    for (index, run) in runs {
        let (status, why) = match store.lookup(&run.key) {
            Lookup::Hit { findings, .. } => {
                known.insert(index, findings);
                cached += 1;
                ("cached", String::new())
            }
            Lookup::Corrupt(detail) => {
                missing += 1;
                ("corrupt", detail)
            }
            Lookup::Unreadable(detail) => {
                missing += 1;
                ("unreadable", detail)
            }
            Lookup::Miss => {
                missing += 1;
                let why = match prepared.cache.previous_inputs(&run.slot(name), &run.key) {
                    Some(previous) => {
                        format!("changed since last cached: {}", run.inputs.changes(&previous).iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))
                    }
                    None => match prepared.cache.failure(&run.key) {
                        Some(f) => format!("last attempt failed: {}", f.error),
                        None => "never run".to_string(),
                    },
                };
                ("run", why)
            }
        };
        rows.push(serde_json::json!({ "run": run.label(), "key": run.key.0, "order": run.order, "status": status, "why": why }));
    }
    let match_calls = prepared.scorers.as_ref().map(|s| runner::scoring::match_calls(&prepared.plan, s, store.as_ref(), &known));
    let nodes = node_summary(&prepared, cached, match_calls.unwrap_or_default());
    let reach = runner::plan::compare_reach(&prepared.manifest, &prepared.plan);
    // An earlier execution's results.json is the pilot of the power estimates.
    let pilot = (!reach.is_empty())
        .then(|| runner::report::model::Results::read(&prepared.manifest.report.output.join("results.json")).ok())
        .flatten()
        .map(|results| runner::report::pilot::pilot_power(&results, &reach.iter().map(|r| r.index).collect::<Vec<_>>()))
        .unwrap_or_default();
    let history = prepared.plan.history.as_ref();
    if args.json {
        let commit = |c: &runner::subject::history::Commit, note: Option<String>| serde_json::json!({ "sha": c.sha, "base": c.base, "title": c.title, "files": c.files, "lines": c.lines, "note": note });
        let doc = serde_json::json!({
            "experiment": name,
            "shard": args.shard.map(|s| s.to_string()),
            "history": history.map(|h| serde_json::json!({
                "selection": h.selection,
                "considered": h.considered,
                "subjects": h.planned.iter().map(|c| commit(c, c.note(h.merges).map(str::to_string))).collect::<Vec<_>>(),
                "skipped": h.skipped.iter().map(|(c, why)| commit(c, Some(why.to_string()))).collect::<Vec<_>>(),
                "sample": h.sample.map(|s| serde_json::json!({ "size": s.size, "of": s.of, "seed": s.seed })),
            })),
            "compare": reach,
            "power": pilot,
            "runs": rows,
            "cached": cached,
            "to_run": missing,
            "nodes": nodes.iter().map(|n| serde_json::json!({ "kind": n.kind.as_str(), "count": n.count, "cached": n.kind.cached(), "status": n.status })).collect::<Vec<_>>(),
            "edges": prepared.plan.graph.edge_count(),
        });
        outln!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
    } else {
        outln!("{name}: {} ({} cached, {} to run)", prepared.plan.size(), cached, missing,);
        if let Some(shard) = args.shard {
            outln!("shard {shard}: {} of the {} runs", cached + missing, prepared.plan.runs.len());
        }
        outln!("DAG: {} nodes, {} edges", prepared.plan.graph.node_count(), prepared.plan.graph.edge_count());
        for n in &nodes {
            outln!("  {:<12} {:>6}  {}", n.kind.as_str(), n.count, n.status);
        }
        for line in pipeline_lines(&prepared, &store) {
            outln!("{line}");
        }
        match history {
            Some(h) => out!("{}", history_lines(h, if args.runs { usize::MAX } else { SHOWN_COMMITS })),
            None => outln!("{}", subjects_line(&prepared)),
        }
        for r in &reach {
            outln!("{}", reach_line(r));
            for p in pilot.iter().filter(|p| p.index == r.index) {
                outln!("{}", runner::report::pilot::line(p));
            }
        }
        if !args.runs {
            out!("{}", runs_summary(&rows, cached, missing));
            return Ok(Exit::Ok);
        }
        outln!("runs:");
        for row in &rows {
            let why = row["why"].as_str().unwrap_or_default();
            outln!(
                "  {:<7} {}  {}{}",
                row["status"].as_str().unwrap_or_default(),
                &row["key"].as_str().unwrap_or_default()[..12],
                row["run"].as_str().unwrap_or_default(),
                if why.is_empty() { String::new() } else { format!("  ({why})") }
            );
        }
    }
    Ok(Exit::Ok)
}

/// How many of a history's reviewed (and of its skipped) commits the compact plan lists.
const SHOWN_COMMITS: usize = 30;

/// How many subject ids, and how many distinct reasons to run, the compact plan names.
const SHOWN_SUBJECTS: usize = 10;
const SHOWN_REASONS: usize = 5;

/// The subjects of a target that is not a history: `subjects: 16 (case-01, case-02, … and 6 more)`.
fn subjects_line(prepared: &experiment::Prepared) -> String {
    let ids: Vec<&str> = prepared.plan.subjects.keys().map(String::as_str).collect();
    let mut shown: Vec<String> = ids.iter().take(SHOWN_SUBJECTS).map(|id| id.to_string()).collect();
    if ids.len() > SHOWN_SUBJECTS {
        shown.push(format!("and {} more", ids.len() - SHOWN_SUBJECTS));
    }
    format!("subjects: {} ({})", ids.len(), shown.join(", "))
}

/// The runs in counts, as the compact plan prints them: how many are cached, and the runs to
/// run grouped by why (never run, what changed since the last cached run, the last attempt's
/// failure), the commonest first; `--runs` lists each.
fn runs_summary(rows: &[serde_json::Value], cached: usize, missing: usize) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(out, "runs: {cached} cached, {missing} to run{}", if missing > 0 { ":" } else { "" });
    // Each distinct reason, with how many runs it applies to, in first-seen order.
    let mut reasons: Vec<(String, usize)> = Vec::new();
    for row in rows.iter().filter(|r| r["status"].as_str() != Some("cached")) {
        let (status, why) = (row["status"].as_str().unwrap_or_default(), row["why"].as_str().unwrap_or_default());
        let reason = if status == "run" { why.to_string() } else { format!("{status} in the cache: {why}") };
        match reasons.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, n)) => *n += 1,
            None => reasons.push((reason, 1)),
        }
    }
    // The commonest first; ties keep the plan's order.
    reasons.sort_by_key(|r| std::cmp::Reverse(r.1));
    for (reason, n) in reasons.iter().take(SHOWN_REASONS) {
        let _ = writeln!(out, "  {n} {}: {reason}", if *n == 1 { "run" } else { "runs" });
    }
    if reasons.len() > SHOWN_REASONS {
        let rest: usize = reasons[SHOWN_REASONS..].iter().map(|(_, n)| n).sum();
        let _ = writeln!(out, "  {rest} more run{} for {} other reasons", if rest == 1 { "" } else { "s" }, reasons.len() - SHOWN_REASONS);
    }
    let _ = writeln!(out, "(every run with its key and why: `runner plan --runs`; `--json` for all of it)");
    out
}

/// A history target's commits as `runner plan` lists them: the selection, each reviewed
/// commit (short SHA and subject line, with a note for a root or a merge), each skipped one
/// with why, and the sample; at most `shown` of the reviewed and of the skipped commits.
fn history_lines(h: &runner::subject::history::History, shown: usize) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = write!(out, "subjects: {}: {} commit{}, {} reviewed", h.selection, h.considered, if h.considered == 1 { "" } else { "s" }, h.planned.len());
    if !h.skipped.is_empty() {
        let _ = write!(out, ", {} skipped", h.skipped.len());
    }
    if let Some(s) = h.sample {
        let _ = write!(out, " (a seeded sample of {} of the {} reviewable, seed {})", s.size, s.of, s.seed);
    }
    let _ = writeln!(out, ":");
    for c in h.planned.iter().take(shown) {
        let _ = writeln!(out, "  {}{}", c.label(), c.note(h.merges).map(|n| format!(" — {n}")).unwrap_or_default());
    }
    if h.planned.len() > shown {
        let _ = writeln!(out, "  … and {} more (every one: `runner plan --runs`)", h.planned.len() - shown);
    }
    if !h.skipped.is_empty() {
        let _ = writeln!(out, "skipped:");
        for (c, why) in h.skipped.iter().take(shown) {
            let _ = writeln!(out, "  {} — {why}", c.label());
        }
        if h.skipped.len() > shown {
            let _ = writeln!(out, "  … and {} more (every one: `runner plan --runs`)", h.skipped.len() - shown);
        }
    }
    out
}

/// A `compare` analysis's reach: `compare #1 (axis `model`): 10 subjects per pair, smallest
/// attainable p = 0.00195 (α = 0.05)`, or that it cannot be significant.
fn reach_line(r: &runner::plan::CompareReach) -> String {
    let subjects = if r.fewest == r.most { format!("{}", r.fewest) } else { format!("{}–{}", r.fewest, r.most) };
    let axis = r.axis.as_ref().map(|a| format!(" (axis `{a}`)")).unwrap_or_default();
    let plural = if r.most == 1 { "subject" } else { "subjects" };
    let p = r.min_p.map_or_else(|| "–".to_string(), significant);
    if r.pairs == 0 {
        format!("compare #{}{axis}: no pair of cells to compare", r.index + 1)
    } else if r.cannot_be_significant() {
        format!("compare #{}{axis}: {subjects} {plural} per pair: cannot be significant at α = {} (smallest attainable p = {p})", r.index + 1, r.alpha)
    } else {
        format!("compare #{}{axis}: {subjects} {plural} per pair, smallest attainable p = {p} (α = {})", r.index + 1, r.alpha)
    }
}

/// A p-value to three significant digits: `0.250`, `0.00195`.
fn significant(p: f64) -> String {
    let digits = if p > 0.0 { (2 - p.log10().floor() as i64).clamp(0, 12) as usize } else { 3 };
    format!("{p:.digits$}")
}

/// `runner plan`'s lines on the pipeline reviewers it runs: each stage's calls per run, each
/// call cached on its own.
fn pipeline_lines(prepared: &experiment::Prepared, store: &std::sync::Arc<dyn runner::cache::Store>) -> Vec<String> {
    use runner::reviewer::spec::ReviewerKindSpec;
    let mut lines = Vec::new();
    let experiment = &prepared.manifest.experiment.name;
    for named in &prepared.manifest.reviewers.entries {
        let ReviewerKindSpec::Pipeline(p) = &named.spec.kind else { continue };
        let planned: Vec<&runner::plan::PlannedRun> = prepared.plan.runs.iter().filter(|r| r.reviewer == named.name).collect();
        let runs = planned.len();
        if runs == 0 {
            continue;
        }
        // What the call cache holds, stage by stage, summed over the runs.
        let mut tally: Vec<runner::reviewer::StageCalls> = Vec::new();
        if let Some(reviewer) = prepared.reviewers.get(&named.name) {
            for run in &planned {
                let calls = runner::exec::call_cache(store.clone(), experiment, &run.inputs.subject);
                for (i, stage) in reviewer.planned_calls(&run.cell, run.repeat, calls.0.as_ref()).unwrap_or_default().into_iter().enumerate() {
                    match tally.get_mut(i) {
                        Some(t) => {
                            t.cached += stage.cached;
                            t.to_run += stage.to_run;
                            t.unknown += stage.unknown;
                        }
                        None => tally.push(stage),
                    }
                }
            }
        }
        if lines.is_empty() {
            lines.push("pipeline stage calls (each cached on its own, keyed by its stage and what it receives):".to_string());
        }
        let budget = match p.total_budget {
            Some(total) => {
                let shares: Vec<String> = p.allocation().iter().map(|(stage, tokens)| format!("{stage} {tokens}")).collect();
                format!("; total budget {total} tokens ({})", shares.join(", "))
            }
            None => String::new(),
        };
        lines.push(format!("  {}: per run {}; {runs} run{}{budget}", named.name, p.calls_per_run(), if runs == 1 { "" } else { "s" }));
        let stages: Vec<String> = tally
            .iter()
            .map(|t| {
                let unknown = if t.unknown > 0 { format!(", {} known once earlier calls run", t.unknown) } else { String::new() };
                format!("{} {} cached, {} to run{unknown}", t.stage, t.cached, t.to_run)
            })
            .collect();
        if !stages.is_empty() {
            lines.push(format!("    calls: {}", stages.join("; ")));
        }
    }
    lines
}

/// One line of `runner plan`'s node table.
struct NodeLine {
    kind: runner::plan::NodeKind,
    count: usize,
    status: String,
}

/// Each node kind of the plan: how many, and whether its work is cached, to do, or not needed.
fn node_summary(prepared: &experiment::Prepared, cached_runs: usize, (match_calls, match_cached): (usize, usize)) -> Vec<NodeLine> {
    use runner::plan::NodeKind;
    use runner::scoring::stages::RqsStage;
    let counts = prepared.plan.node_counts();
    let runs = prepared.plan.runs.len();
    counts
        .into_iter()
        .map(|(kind, count)| {
            let status = match kind {
                NodeKind::Materialize if cached_runs == runs => "not cached; built only for runs that are not cached (none now)".to_string(),
                NodeKind::Materialize => "not cached; built only for runs that are not cached".to_string(),
                NodeKind::Review => format!("cached by key: {cached_runs} cached, {} to run", runs - cached_runs),
                NodeKind::Score(stage) if RqsStage::of(stage) == Some(RqsStage::Match) => format!(
                    "cached per call (one per pair the judges are asked about; a replayed judge's, one per oracle finding, read from its file): {match_calls} calls known from the cached reviews, {match_cached} cached, {} to run; the other runs' calls are known once reviewed",
                    match_calls - match_cached
                ),
                NodeKind::Score(_) => {
                    "cached per call, keyed by the producer's fingerprint and the content it reads (known once its review is)".to_string()
                }
                NodeKind::AnalyzePart => {
                    "part of an analysis (a group of cells), computed from its own runs as soon as they are done, while the rest run (not cached)".to_string()
                }
                NodeKind::Analyze => "computed from the runs' outcomes at every execution (not cached)".to_string(),
                NodeKind::Render => "writes RESULTS.md and results.json".to_string(),
            };
            NodeLine { kind, count, status }
        })
        .collect()
}
