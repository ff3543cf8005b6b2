//! AACR-Bench's own scoring (`kind = "aacr"`, `gold = "…/gold"`): each cell's reviews of the
//! benchmark's pull requests against its reference comments, by the benchmark's location rule
//! and in its order, with the figures its published scorers print; runner's calibrated matcher
//! in the place of its LLM judge as a column of its own; the rejected comments as a labelled
//! negative side; recall per category and per context level; and a paired comparison of each
//! cell with the first over the pull requests.
//!
//! The rule (the leaderboard's `evaluation/judge.py`, `evaluate_comments` with k = 1, which the
//! benchmark's `evaluation/evaluate.py` shares), for one pull request:
//!
//! - A reference comment and a generated one are at the same place when their paths are the
//!   same once `\/` and `\` are written `/` (an empty path on either side passes), their sides
//!   are the same where both are given (a generated comment is `right`: both scorers say so of
//!   every output), and their line ranges overlap or lie within one line of each other
//!   (`min(|from₁ − to₂|, |from₂ − to₁|) ≤ 1`); a comment without lines passes the line check.
//!   A range is read with a missing end filled from its start and the reverse, and a reversed
//!   one swapped. A generated finding with line 0 has no line.
//! - References are taken one by one in the gold's order, each scanning the generated comments
//!   in their order: the first one at its place that no earlier reference was credited with is
//!   its line match; the scan ends at the first one at its place, not yet semantically matched,
//!   that the judge calls the same issue (its semantic match). A generated comment is credited
//!   at most once per stage. A note that is empty once `<details>…</details>` blocks are cut is
//!   passed over (it still counts, as both scorers count it).
//! - Precision = hits / generated comments, recall = hits / reference comments, F1 = 2PR/(P+R),
//!   summed over every pull request of the gold: a pull request without a review counts as
//!   reviewed with no comment, its references missed (the leaderboard's rule).
//!
//! The line hits therefore depend on the judge: its "yes" on a comment an earlier reference was
//! credited with ends a scan before a free one. The `Line hits` column is the rule with a judge
//! that never says yes (the most any judge can give); `Any judge` is the range over every answer
//! a judge could give, enumerated per pull request where it has at most
//! [`EXHAUSTIVE_PAIRS`] pairs at the same place, and otherwise bounded below by one fewer for
//! each reference with two or more comments at its place. The semantic column puts runner's
//! calibrated text rule (the manifest's `similarity` and measure, by default content-word Dice
//! ≥ 0.22, calibrated on three judges' decisions) in the judge's place, in the same scan.
//!
//! The rejected comments: a generated comment not credited to a reference that is at a rejected
//! comment's place (the same rule) is a known false positive; precision over labelled comments
//! is credited / (credited + known false). With runner's matcher, a comment that matches no
//! reference but says what a rejected comment said (at its place) is counted apart.

use crate::analysis::definition::{Definition, OptionsContext};
use crate::analysis::spec::{AacrOptions, AnalysisKind, AnalysisOptions};
use crate::config::{resolve_path, TableReader};
use std::path::Path;
use crate::analysis::matching::matcher::text_evidence;
use crate::analysis::model::{fmt_num, fmt_ratio, json_num, ratio, runs_of, AnalysisInput, AnalysisResult, Table, TableCell};
use crate::analysis::spec::{AnalysisSpec, OracleRule};
use crate::finding::Finding;
use crate::ground_truth::aacr::{self, Comment, Gold};
use crate::matrix::Cell;
use rand_chacha::rand_core::RngCore;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// The scorer's line tolerance (`--line-k`, 1 for every published figure).
pub const LINE_K: i64 = 1;

/// The most located pairs of one pull request whose every judge answer is enumerated.
pub const EXHAUSTIVE_PAIRS: usize = 12;

/// Resamples of the paired tests and intervals, their seed, level and α.
const RESAMPLES: usize = 10_000;
const SEED: u64 = 0;
const LEVEL: f64 = 0.95;
const ALPHA: f64 = 0.05;
/// The ChaCha streams of the paired swaps and the paired bootstrap (apart from `stats`' own).
const SWAP_STREAM: u64 = 11;
const BOOTSTRAP_STREAM: u64 = 12;

/// A comment as the scorer compares it.
#[derive(Debug, Clone)]
struct Place {
    path: String,
    side: Option<String>,
    lines: Option<(i64, i64)>,
    /// The note with `<details>` blocks cut, trimmed: what the judge reads.
    text: String,
    /// Counted among the reference (or generated) comments: its note is not empty.
    counted: bool,
}

impl Place {
    fn usable(&self) -> bool {
        self.counted && !self.text.is_empty()
    }

    fn of_comment(c: &Comment) -> Self {
        Self {
            path: normalize_path(&c.path),
            side: c.side.clone(),
            lines: aacr::line_range(c.from_line, c.to_line),
            text: strip_details(&c.note),
            counted: !c.note.is_empty(),
        }
    }

    fn of_finding(f: &Finding) -> Self {
        let message = f.message.trim();
        let lines = (f.line >= 1).then(|| {
            let (a, b) = f.span();
            (i64::from(a), i64::from(b))
        });
        Self { path: normalize_path(&f.file), side: Some("right".into()), lines, text: strip_details(message), counted: !message.is_empty() }
    }
}

/// `\/` and `\` written `/`, as the scorer normalizes a path.
fn normalize_path(path: &str) -> String {
    path.replace("\\/", "/").replace('\\', "/")
}

/// A note with its `<details>…</details>` blocks cut, runs of three or more line breaks made
/// two, trimmed (the scorer's `_strip_thinking_tags`).
fn strip_details(text: &str) -> String {
    static PATTERNS: std::sync::OnceLock<Option<(regex::Regex, regex::Regex)>> = std::sync::OnceLock::new();
    let patterns = PATTERNS.get_or_init(|| Some((regex::Regex::new(r"(?s)<details>.*?</details>").ok()?, regex::Regex::new(r"\n{3,}").ok()?)));
    match patterns {
        Some((details, breaks)) => breaks.replace_all(&details.replace_all(text, ""), "\n\n").trim().to_string(),
        None => text.trim().to_string(),
    }
}

/// Whether two comments are at the same place under the benchmark's rule.
fn same_place(r: &Place, g: &Place) -> bool {
    if !r.path.is_empty() && !g.path.is_empty() && r.path != g.path {
        return false;
    }
    if let (Some(a), Some(b)) = (&r.side, &g.side) {
        if a != b {
            return false;
        }
    }
    match (r.lines, g.lines) {
        (Some((rf, rt)), Some((gf, gt))) => {
            let overlap = !(rf > gt || rt < gf);
            overlap || (rf - gt).abs().min((rt - gf).abs()) <= LINE_K
        }
        _ => true,
    }
}

/// One pull request's scan: which references got a line and a semantic match, and which
/// generated comments were credited with each.
#[derive(Debug, Clone, Default, PartialEq)]
struct Scan {
    line: Vec<bool>,
    semantic: Vec<bool>,
    line_credited: Vec<bool>,
    semantic_credited: Vec<bool>,
}

/// The benchmark's scan of one pull request with `judge` deciding "the same issue?".
fn scan(refs: &[Place], gens: &[Place], judge: &mut dyn FnMut(usize, usize) -> bool) -> Scan {
    let mut s = Scan {
        line: vec![false; refs.len()],
        semantic: vec![false; refs.len()],
        line_credited: vec![false; gens.len()],
        semantic_credited: vec![false; gens.len()],
    };
    for (ri, r) in refs.iter().enumerate() {
        if !r.usable() {
            continue;
        }
        for (gi, g) in gens.iter().enumerate() {
            if !g.usable() || !same_place(r, g) {
                continue;
            }
            if !s.line[ri] && !s.line_credited[gi] {
                s.line[ri] = true;
                s.line_credited[gi] = true;
            }
            if s.semantic_credited[gi] {
                continue;
            }
            if judge(ri, gi) {
                s.semantic[ri] = true;
                s.semantic_credited[gi] = true;
                break;
            }
        }
    }
    s
}

/// The fewest and most line hits any judge can give one pull request, and whether every
/// answer was enumerated (otherwise the fewest is a bound).
fn line_hits_any_judge(refs: &[Place], gens: &[Place]) -> (usize, usize, bool) {
    let most = scan(refs, gens, &mut |_, _| false).line.iter().filter(|x| **x).count();
    let pairs: Vec<(usize, usize)> = refs
        .iter()
        .enumerate()
        .filter(|(_, r)| r.usable())
        .flat_map(|(ri, r)| gens.iter().enumerate().filter(move |(_, g)| g.usable() && same_place(r, g)).map(move |(gi, _)| (ri, gi)))
        .collect();
    if pairs.len() > EXHAUSTIVE_PAIRS {
        let exposed = refs.iter().filter(|r| r.usable() && gens.iter().filter(|g| g.usable() && same_place(r, g)).count() >= 2).count();
        return (most.saturating_sub(exposed), most, false);
    }
    let index: HashMap<(usize, usize), usize> = pairs.iter().enumerate().map(|(i, p)| (*p, i)).collect();
    let mut fewest = most;
    for mask in 0u32..(1u32 << pairs.len()) {
        let hits = scan(refs, gens, &mut |ri, gi| index.get(&(ri, gi)).is_some_and(|i| mask >> i & 1 == 1)).line.iter().filter(|x| **x).count();
        fewest = fewest.min(hits);
    }
    (fewest, most, true)
}

/// One review of one pull request, scored.
#[derive(Debug, Clone, Default)]
struct Scored {
    submitted: bool,
    expected: usize,
    generated: usize,
    /// Per reference: credited with a line match (judge never says yes).
    line: Vec<bool>,
    any_judge: (usize, usize, bool),
    /// Per reference: runner's matcher as the judge.
    semantic: Vec<bool>,
    line_with_matcher: usize,
    credited: usize,
    known_false: usize,
    semantic_matched: usize,
    says_rejected: usize,
}

fn count(flags: &[bool]) -> usize {
    flags.iter().filter(|x| **x).count()
}

/// Scores one review (`None`: no submission) of one pull request.
fn score(instance: &aacr::Instance, findings: Option<&[Finding]>, rule: &OracleRule) -> Scored {
    let refs: Vec<Place> = instance.references.iter().map(Place::of_comment).collect();
    let rejected: Vec<Place> = instance.rejected.iter().map(Place::of_comment).collect();
    let expected = refs.iter().filter(|r| r.counted).count();
    let Some(findings) = findings else {
        return Scored { expected, line: vec![false; refs.len()], semantic: vec![false; refs.len()], ..Scored::default() };
    };
    let gens: Vec<Place> = findings.iter().map(Place::of_finding).collect();
    let generated = gens.iter().filter(|g| g.counted).count();
    let alike = |a: &Place, b: &Place| text_evidence(rule.measure.similarity(&b.text, &a.text), None, rule);
    let location = scan(&refs, &gens, &mut |_, _| false);
    let matcher = scan(&refs, &gens, &mut |ri, gi| alike(&refs[ri], &gens[gi]));
    let mut out = Scored {
        submitted: true,
        expected,
        generated,
        any_judge: line_hits_any_judge(&refs, &gens),
        line_with_matcher: count(&matcher.line),
        credited: count(&location.line_credited),
        semantic_matched: count(&matcher.semantic_credited),
        ..Scored::default()
    };
    for (gi, g) in gens.iter().enumerate().filter(|(_, g)| g.usable()) {
        let at_rejected: Vec<&Place> = rejected.iter().filter(|r| r.usable() && same_place(r, g)).collect();
        if !location.line_credited[gi] && !at_rejected.is_empty() {
            out.known_false += 1;
        }
        if !matcher.semantic_credited[gi] && at_rejected.iter().any(|r| alike(r, g)) {
            out.says_rejected += 1;
        }
    }
    out.line = location.line;
    out.semantic = matcher.semantic;
    out
}

/// `round(x, digits)` as Python computes it: the double nearest the decimal rounding (half to
/// even) of `x`'s exact value, which is what Rust's fixed-precision formatting gives.
fn py_round(x: f64, digits: usize) -> f64 {
    format!("{x:.digits$}").parse().unwrap_or(x)
}

/// Precision, recall and F1 as a published scorer prints them: each rate rounded to `digits`,
/// F1 from the rounded rates, rounded (0 where a denominator or P + R is 0).
fn as_printed(hits: usize, generated: usize, expected: usize, digits: usize) -> (f64, f64, f64) {
    let rate = |n: usize, d: usize| if d == 0 { 0.0 } else { py_round(n as f64 / d as f64, digits) };
    let (p, r) = (rate(hits, generated), rate(hits, expected));
    let f1 = if p + r <= 0.0 { 0.0 } else { py_round(2.0 * p * r / (p + r), digits) };
    (p, r, f1)
}

/// Per-pull-request counts of one cell (summed over repeats), for the paired comparison.
#[derive(Debug, Clone, Copy, Default)]
struct PrCounts {
    line: u64,
    semantic: u64,
    generated: u64,
    expected: u64,
}

/// What one cell's reviews add up to.
#[derive(Debug, Clone, Default)]
struct CellScore {
    label: String,
    id: String,
    submitted: usize,
    missing: usize,
    expected: usize,
    generated: usize,
    line: usize,
    any_low: usize,
    any_high: usize,
    any_exact: bool,
    semantic: usize,
    line_with_matcher: usize,
    credited: usize,
    known_false: usize,
    semantic_matched: usize,
    says_rejected: usize,
    /// Pull requests with at least one line hit (the original evaluator's ceiling).
    prs_with_line_hit: usize,
    /// By category and by context level: (references, line hits, semantic hits).
    by_category: BTreeMap<(usize, String), (usize, usize, usize)>,
    by_context: BTreeMap<(usize, String), (usize, usize, usize)>,
    /// Per pull request, in the gold's order.
    per_pr: Vec<PrCounts>,
    /// Per (repeat, pull request, reference): (line hit, semantic hit), for McNemar.
    per_reference: Vec<(bool, bool)>,
    pr_rows: Vec<serde_json::Value>,
}

const CATEGORY_ORDER: [&str; 4] = ["Code Defect", "Security Vulnerability", "Performance", "Maintainability and Readability"];
const CONTEXT_ORDER: [&str; 3] = ["Diff Level", "File Level", "Repo Level"];

fn ordered(order: &[&str], name: &str) -> (usize, String) {
    (order.iter().position(|o| *o == name).unwrap_or(order.len()), name.to_string())
}

/// The values of the axes that differ between cells (the cell id where none does).
fn labels(cells: &[Arc<Cell>], axis_order: &[String]) -> Vec<String> {
    let varying: Vec<&String> =
        axis_order.iter().filter(|a| cells.iter().filter_map(|c| c.get(a).map(|v| v.render())).collect::<std::collections::BTreeSet<_>>().len() > 1).collect();
    cells
        .iter()
        .map(|c| {
            let parts: Vec<String> = varying.iter().filter_map(|a| c.get(a).map(|v| v.render())).collect();
            if parts.is_empty() {
                c.id.clone()
            } else {
                parts.join(",")
            }
        })
        .collect()
}

fn score_cell(gold: &Gold, input: &AnalysisInput<'_>, cell: &Cell, label: String, rule: &OracleRule) -> CellScore {
    let mut runs: HashMap<(&str, u32), &[Finding]> = HashMap::new();
    for run in runs_of(input, cell) {
        runs.insert((run.subject, run.repeat), run.findings);
    }
    let mut out = CellScore { label, id: cell.id.clone(), any_exact: true, per_pr: vec![PrCounts::default(); gold.instances.len()], ..CellScore::default() };
    for repeat in 1..=input.repeat.max(1) {
        for (i, instance) in gold.instances.iter().enumerate() {
            let findings = runs.get(&(instance.id.as_str(), repeat)).copied();
            let s = score(instance, findings, rule);
            let (line, semantic) = (count(&s.line), count(&s.semantic));
            if s.submitted {
                out.submitted += 1;
            } else {
                out.missing += 1;
            }
            out.expected += s.expected;
            out.generated += s.generated;
            out.line += line;
            out.any_low += if s.submitted { s.any_judge.0 } else { 0 };
            out.any_high += if s.submitted { s.any_judge.1 } else { 0 };
            out.any_exact &= !s.submitted || s.any_judge.2;
            out.semantic += semantic;
            out.line_with_matcher += s.line_with_matcher;
            out.credited += s.credited;
            out.known_false += s.known_false;
            out.semantic_matched += s.semantic_matched;
            out.says_rejected += s.says_rejected;
            out.prs_with_line_hit += usize::from(line > 0);
            for (ri, c) in instance.references.iter().enumerate().filter(|(_, c)| !c.note.is_empty()) {
                for (map, key) in [(&mut out.by_category, ordered(&CATEGORY_ORDER, &c.category)), (&mut out.by_context, ordered(&CONTEXT_ORDER, &c.context))] {
                    let e = map.entry(key).or_default();
                    e.0 += 1;
                    e.1 += usize::from(s.line[ri]);
                    e.2 += usize::from(s.semantic[ri]);
                }
                out.per_reference.push((s.line[ri], s.semantic[ri]));
            }
            let pr = &mut out.per_pr[i];
            pr.line += line as u64;
            pr.semantic += semantic as u64;
            pr.generated += s.generated as u64;
            pr.expected += s.expected as u64;
            out.pr_rows.push(serde_json::json!({
                "pull_request": instance.id,
                "repeat": repeat,
                "submitted": s.submitted,
                "references": s.expected,
                "generated": s.generated,
                "line_hits": line,
                "line_hits_any_judge": [s.any_judge.0, s.any_judge.1],
                "semantic_hits": semantic,
                "known_false": s.known_false,
                "references_line_matched": s.line.iter().enumerate().filter(|(_, x)| **x).map(|(i, _)| i + 1).collect::<Vec<_>>(),
            }));
        }
    }
    out
}

/// A pooled rate of summed per-pull-request counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Metric {
    LineF1,
    LinePrecision,
    LineRecall,
    SemanticF1,
    SemanticPrecision,
    SemanticRecall,
}

impl Metric {
    const ALL: [Metric; 6] = [Self::LineF1, Self::LinePrecision, Self::LineRecall, Self::SemanticF1, Self::SemanticPrecision, Self::SemanticRecall];

    fn name(self) -> &'static str {
        match self {
            Self::LineF1 => "line F1",
            Self::LinePrecision => "line precision",
            Self::LineRecall => "line recall",
            Self::SemanticF1 => "semantic F1 (runner's matcher)",
            Self::SemanticPrecision => "semantic precision (runner's matcher)",
            Self::SemanticRecall => "semantic recall (runner's matcher)",
        }
    }

    /// The metric over counts summed as (hits, generated, expected).
    fn of(self, (line, semantic, generated, expected): (u64, u64, u64, u64)) -> Option<f64> {
        let hits = match self {
            Self::LineF1 | Self::LinePrecision | Self::LineRecall => line,
            _ => semantic,
        };
        match self {
            Self::LineF1 | Self::SemanticF1 => ratio(2.0 * hits as f64, (generated + expected) as f64),
            Self::LinePrecision | Self::SemanticPrecision => ratio(hits as f64, generated as f64),
            Self::LineRecall | Self::SemanticRecall => ratio(hits as f64, expected as f64),
        }
    }
}

fn sum(prs: impl Iterator<Item = PrCounts>) -> (u64, u64, u64, u64) {
    prs.fold((0, 0, 0, 0), |acc, p| (acc.0 + p.line, acc.1 + p.semantic, acc.2 + p.generated, acc.3 + p.expected))
}

/// A uniform index below `n` (Lemire's widening multiply with rejection, as `stats` draws).
fn index_below(rng: &mut rand_chacha::ChaCha8Rng, n: u32) -> usize {
    let mut m = u64::from(rng.next_u32()) * u64::from(n);
    if (m as u32) < n {
        let threshold = n.wrapping_neg() % n;
        while (m as u32) < threshold {
            m = u64::from(rng.next_u32()) * u64::from(n);
        }
    }
    (m >> 32) as usize
}

/// One metric compared between a cell (`a`) and the baseline (`b`), paired by pull request.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
struct Paired {
    value: f64,
    baseline: f64,
    difference: f64,
    low: f64,
    high: f64,
    p_value: f64,
}

/// The difference of a pooled metric between two cells over the same pull requests: a paired
/// randomization test (each pull request's two reviews swapped or not, as a fair coin says,
/// [`RESAMPLES`] times; two-sided, as `stats::sign_flip_test` counts) and a paired percentile
/// bootstrap interval (pull requests resampled with both reviews).
fn paired(metric: Metric, a: &[PrCounts], b: &[PrCounts]) -> Option<Paired> {
    let value = metric.of(sum(a.iter().copied()))?;
    let baseline = metric.of(sum(b.iter().copied()))?;
    let observed = value - baseline;
    let gamma = (100.0 * f64::EPSILON * observed).abs();
    let add = |s: &mut (u64, u64, u64, u64), p: PrCounts| *s = (s.0 + p.line, s.1 + p.semantic, s.2 + p.generated, s.3 + p.expected);
    let mut rng = crate::stats::rng(SEED, SWAP_STREAM);
    let (mut less, mut greater) = (0u64, 0u64);
    for _ in 0..RESAMPLES {
        let (mut sa, mut sb) = ((0, 0, 0, 0), (0, 0, 0, 0));
        for (chunk_a, chunk_b) in a.chunks(64).zip(b.chunks(64)) {
            let bits = rng.next_u64();
            for (i, (x, y)) in chunk_a.iter().zip(chunk_b).enumerate() {
                let (x, y) = if bits >> i & 1 == 1 { (*y, *x) } else { (*x, *y) };
                add(&mut sa, x);
                add(&mut sb, y);
            }
        }
        let d = match (metric.of(sa), metric.of(sb)) {
            (Some(x), Some(y)) => x - y,
            _ => 0.0,
        };
        less += u64::from(d <= observed + gamma);
        greater += u64::from(d >= observed - gamma);
    }
    let denominator = RESAMPLES as f64 + 1.0;
    let p_value = (2.0 * ((less as f64 + 1.0) / denominator).min((greater as f64 + 1.0) / denominator)).clamp(0.0, 1.0);
    let n = u32::try_from(a.len()).ok().filter(|n| *n > 0)?;
    let mut rng = crate::stats::rng(SEED, BOOTSTRAP_STREAM);
    let mut draws = Vec::with_capacity(RESAMPLES);
    for _ in 0..RESAMPLES {
        let (mut sa, mut sb) = ((0, 0, 0, 0), (0, 0, 0, 0));
        for _ in 0..n {
            let i = index_below(&mut rng, n);
            add(&mut sa, a[i]);
            add(&mut sb, b[i]);
        }
        if let (Some(x), Some(y)) = (metric.of(sa), metric.of(sb)) {
            draws.push(x - y);
        }
    }
    draws.sort_by(f64::total_cmp);
    let alpha = (1.0 - LEVEL) / 2.0;
    let (low, high) = if draws.is_empty() {
        (observed, observed)
    } else {
        (crate::stats::quantile_linear(&draws, alpha), crate::stats::quantile_linear(&draws, 1.0 - alpha))
    };
    Some(Paired { value, baseline, difference: observed, low, high, p_value })
}

fn verdict(p: &Paired) -> &'static str {
    if p.p_value < ALPHA && (p.low > 0.0 || p.high < 0.0) {
        if p.difference > 0.0 {
            "better"
        } else {
            "worse"
        }
    } else {
        "no detectable difference"
    }
}

fn format_p(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".into()
    } else {
        format!("p = {p:.3}")
    }
}

/// A p-value as a table cell: `0.012`, `< 0.001`.
fn p_cell(p: f64) -> TableCell {
    if p < 0.001 {
        "< 0.001".into()
    } else {
        fmt_num(Some(p), 3)
    }
}

/// `10 000`: a count with a space between thousands, as verdict lines print resamples.
fn spaced(n: usize) -> String {
    crate::analysis::spec::group_thousands(n as u64).replace(',', " ")
}

/// The text rule that stands in for the judge, in words.
fn describe_matcher(rule: &OracleRule) -> String {
    let source = match rule.calibrated {
        Some(c) => format!(", the threshold calibrated on {} judges' decisions (κ {:.2} cross-validated)", c.judges, c.kappa),
        None => ", a threshold set by hand".into(),
    };
    format!("runner's text rule in the judge's place: {} of the two notes ≥ {:.2}{source}", rule.measure.describe(), rule.similarity)
}

fn thousands(n: usize) -> String {
    crate::analysis::spec::group_thousands(n as u64)
}

/// `aacr`: AACR-Bench's own location rule and order against its gold (`gold`).
pub(crate) const ANALYSIS: Definition = Definition::new(AnalysisKind::AACR, compute).with_options(&["gold"], read_options);

pub fn compute(spec: &AnalysisSpec, input: &AnalysisInput<'_>) -> AnalysisResult {
    let mut result = AnalysisResult::new(
        spec,
        "AACR",
        "AACR-Bench: line and semantic matching, the benchmark's rule",
        "Each cell's reviews of AACR-Bench's pull requests against its reference comments, by the benchmark's own location rule (k = 1) and in its order (reference by reference, each generated comment credited once per stage): line precision = line hits / generated comments, line recall = line hits / reference comments, F1 = 2PR/(P+R), summed over every pull request of the gold (one without a review is reviewed with no comment). The semantic column puts runner's calibrated matcher in the place of the benchmark's LLM judge, in the same scan.",
    );
    let Some(options) = spec.aacr() else {
        result.notes.push("No `gold`: name the directory holding AACR-Bench's positive_samples.json.".into());
        return result;
    };
    let gold = &*options.loaded;
    let rule = &spec.oracle_rule;
    result.rule = Some(format!(
        "the benchmark's location rule: the same path once `\\` is written `/` (an empty path passes), the same side where both are given (generated comments are right-side), line ranges overlapping or within {LINE_K} line (a comment without lines passes); reference by reference in the gold's order, each taking the first comment at its place not yet credited; {}",
        describe_matcher(rule)
    ));
    let labels = labels(input.cells, input.axis_order);
    let cells: Vec<CellScore> = input
        .cells
        .iter()
        .zip(&labels)
        .map(|(cell, label)| score_cell(gold, input, cell, label.clone(), rule))
        .filter(|c| c.submitted > 0 || c.missing > 0)
        .collect();
    let counts = gold.counts();
    let name = |c: &CellScore| format!("`{}`", c.label);

    let mut line = Table::new(
        "Line matching: the benchmark's rule",
        &["Cell", "Pull requests", "Reviewed", "Generated", "References", "Line hits", "Any judge", "Line precision", "Line recall", "Line F1"],
    );
    let mut printed = Table::new(
        "As the published scorers print them",
        &["Cell", "evaluate.py P", "evaluate.py R", "evaluate.py F1", "leaderboard P", "leaderboard R", "leaderboard F1"],
    );
    let mut semantic = Table::new(
        "Semantic matching: runner's calibrated matcher in the judge's place",
        &["Cell", "Semantic hits", "Semantic precision", "Semantic recall", "Semantic F1", "Line hits with this judge"],
    );
    let mut negative = Table::new(
        "The rejected comments: a labelled negative side",
        &["Cell", "Generated", "Credited to a reference", "At a rejected comment only", "Elsewhere", "Precision over labelled", "Says a rejected comment"],
    );
    let mut by_category = Table::new("Recall by category", &["Cell", "Category", "References", "Line hits", "Line recall", "Semantic hits", "Semantic recall"]);
    let mut by_context =
        Table::new("Recall by context level", &["Cell", "Context", "References", "Line hits", "Line recall", "Semantic hits", "Semantic recall"]);
    let mut cells_json = Vec::new();
    for c in &cells {
        let prf = |hits: usize| {
            let p = ratio(hits as f64, c.generated as f64);
            let r = ratio(hits as f64, c.expected as f64);
            (p, r, crate::analysis::matching::matcher::f1(p, r))
        };
        let (lp, lr, lf) = prf(c.line);
        let any =
            if c.any_low == c.any_high { c.any_high.to_string() } else { format!("{}{}–{}", if c.any_exact { "" } else { "≥ " }, c.any_low, c.any_high) };
        line.rows.push(vec![
            name(c).into(),
            (c.submitted + c.missing).into(),
            c.submitted.into(),
            c.generated.into(),
            c.expected.into(),
            c.line.into(),
            any.into(),
            fmt_num(lp, 4),
            fmt_num(lr, 4),
            fmt_num(lf, 4),
        ]);
        let (ep, er, ef) = as_printed(c.line, c.generated, c.expected, 3);
        let (bp, br, bf) = as_printed(c.line, c.generated, c.expected, 4);
        printed.rows.push(vec![
            name(c).into(),
            fmt_num(Some(ep), 3),
            fmt_num(Some(er), 3),
            fmt_num(Some(ef), 3),
            fmt_num(Some(bp), 4),
            fmt_num(Some(br), 4),
            fmt_num(Some(bf), 4),
        ]);
        let (sp, sr, sf) = prf(c.semantic);
        semantic.rows.push(vec![name(c).into(), c.semantic.into(), fmt_num(sp, 4), fmt_num(sr, 4), fmt_num(sf, 4), c.line_with_matcher.into()]);
        let elsewhere = c.generated.saturating_sub(c.credited + c.known_false);
        negative.rows.push(vec![
            name(c).into(),
            c.generated.into(),
            c.credited.into(),
            c.known_false.into(),
            elsewhere.into(),
            fmt_ratio(ratio(c.credited as f64, (c.credited + c.known_false) as f64)),
            c.says_rejected.into(),
        ]);
        for (table, map) in [(&mut by_category, &c.by_category), (&mut by_context, &c.by_context)] {
            for ((_, key), (refs, l, s)) in map {
                table.rows.push(vec![
                    name(c).into(),
                    key.clone().into(),
                    (*refs).into(),
                    (*l).into(),
                    fmt_ratio(ratio(*l as f64, *refs as f64)),
                    (*s).into(),
                    fmt_ratio(ratio(*s as f64, *refs as f64)),
                ]);
            }
        }
        cells_json.push(serde_json::json!({
            "cell": c.id,
            "label": c.label,
            "reviewed": c.submitted,
            "missing": c.missing,
            "generated": c.generated,
            "references": c.expected,
            "line_hits": c.line,
            "line_hits_any_judge": { "fewest": c.any_low, "most": c.any_high, "exact": c.any_exact },
            "line_precision": json_num(lp),
            "line_recall": json_num(lr),
            "line_f1": json_num(lf),
            "evaluate_py": { "precision": ep, "recall": er, "f1": ef },
            "leaderboard": { "precision": bp, "recall": br, "f1": bf },
            "semantic_hits": c.semantic,
            "semantic_precision": json_num(sp),
            "semantic_recall": json_num(sr),
            "semantic_f1": json_num(sf),
            "line_hits_with_matcher": c.line_with_matcher,
            "credited": c.credited,
            "known_false": c.known_false,
            "says_rejected": c.says_rejected,
            "pull_requests_with_a_line_hit": c.prs_with_line_hit,
            "pull_requests": c.pr_rows,
        }));
    }

    let mut paired_table = Table::new(
        "Paired over the pull requests: each cell against the first",
        &["Cell", "Metric", "Value", "Baseline", "Difference", "95% interval", "p", "Verdict"],
    );
    let mut mcnemar =
        Table::new("Reference comments found by one cell only (exact McNemar)", &["Cell", "Matching", "Found by it only", "Found by the baseline only", "p"]);
    let mut comparisons = Vec::new();
    if let Some((base, rest)) = cells.split_first() {
        for c in rest {
            for metric in Metric::ALL {
                let Some(p) = paired(metric, &c.per_pr, &base.per_pr) else {
                    continue;
                };
                paired_table.rows.push(vec![
                    name(c).into(),
                    metric.name().into(),
                    fmt_num(Some(p.value), 4),
                    fmt_num(Some(p.baseline), 4),
                    TableCell::Delta { delta: Some(p.difference), digits: 4 },
                    format!("[{:.4}, {:.4}]", p.low, p.high).into(),
                    p_cell(p.p_value),
                    verdict(&p).into(),
                ]);
                if matches!(metric, Metric::LineF1 | Metric::SemanticF1) {
                    result.headline.push(format!(
                        "**{}**, `{}` − `{}` = {:+.3} [{:.3}, {:.3}], {} (paired randomization over {} pull requests, {} resamples; percentile bootstrap interval): **{}**.",
                        metric.name(),
                        c.label,
                        base.label,
                        p.difference,
                        p.low,
                        p.high,
                        format_p(p.p_value),
                        c.per_pr.len(),
                        spaced(RESAMPLES),
                        verdict(&p)
                    ));
                }
                comparisons.push(serde_json::json!({ "cell": c.id, "baseline": base.id, "metric": metric.name(), "result": p, "verdict": verdict(&p) }));
            }
            for (label, pick) in [("line", 0usize), ("semantic (runner's matcher)", 1)] {
                let get = |x: &(bool, bool)| if pick == 0 { x.0 } else { x.1 };
                let b = c.per_reference.iter().zip(&base.per_reference).filter(|(x, y)| get(x) && !get(y)).count() as u64;
                let d = c.per_reference.iter().zip(&base.per_reference).filter(|(x, y)| !get(x) && get(y)).count() as u64;
                let test = crate::stats::mcnemar_exact(b, d);
                mcnemar.rows.push(vec![name(c).into(), label.into(), b.into(), d.into(), p_cell(test.p_value)]);
            }
        }
    }

    result.tables = vec![line, printed, semantic, negative, by_category, by_context];
    if !paired_table.rows.is_empty() {
        result.tables.push(paired_table);
        result.tables.push(mcnemar);
    }
    let left = counts.left_side;
    result.notes.push(format!(
        "The gold: {} pull requests, {} reference comments ({} on the diff's left side, which no right-side output can match), {} rejected comments on them{}. Some write-ups of the benchmark give 1,506 gold notes; the data holds {}, and recall here is over what it holds.",
        counts.pull_requests,
        thousands(counts.references),
        left,
        counts.rejected,
        if counts.rejected_elsewhere > 0 { format!(" ({} more on pull requests not in the benchmark, left out)", counts.rejected_elsewhere) } else { String::new() },
        thousands(counts.references)
    ));
    result.notes.push(format!(
        "Line hits depend on the judge in the published scorers: a reference's scan ends at its first semantic match, so a judge's yes on a comment an earlier reference was credited with can end it before a free one. `Line hits` is the rule with a judge that never says yes (the most any judge gives); `Any judge` is the range over every answer a judge could give (enumerated per pull request with at most {EXHAUSTIVE_PAIRS} pairs at the same place; `≥` marks a bound)."
    ));
    result.notes.push("As printed: the benchmark's `evaluation/evaluate.py` (which scored the published outputs) rounds precision and recall to 3 decimals and computes F1 from the rounded rates, rounded to 3; the leaderboard's `grade.py` does the same at 4 decimals. The other tables are computed from the counts.".into());
    for c in cells.iter().filter(|c| c.missing > 0) {
        result.notes.push(format!(
            "`{}`: {} of {} reviews missing, each counted as a review with no comment (the leaderboard's rule; `evaluate.py` leaves a pull request without a result file out).",
            c.label,
            c.missing,
            c.missing + c.submitted
        ));
    }
    result.notes.push(format!(
        "The benchmark's original `evaluator_runner` records credited references by `good_comment.get(\"id\")`, a key no gold comment has, so once one reference of a pull request is matched no other can be: under it the line hits could be at most the pull requests with a line hit here ({}).",
        cells.iter().map(|c| format!("`{}` {}", c.label, c.prs_with_line_hit)).collect::<Vec<_>>().join(", ")
    ));
    result.notes.push("The semantic figures the benchmark publishes come from an LLM judge whose decisions are not published; the semantic column is runner's matcher in that judge's place, so it estimates them, it does not reproduce them.".into());
    if let Some(oracle) = input.oracle {
        let differs: Vec<&str> = gold
            .instances
            .iter()
            .filter(|i| {
                let expected = oracle.expected_for(&i.id);
                expected.len() != i.references.len()
                    || expected.iter().zip(&i.references).any(|(f, c)| f.description != c.note || f.file.as_deref().unwrap_or_default() != c.path)
            })
            .map(|i| i.id.as_str())
            .collect();
        result.notes.push(if differs.is_empty() {
            "The target's oracle holds the gold's reference comments for every pull request: the same notes at the same paths, in the same order.".to_string()
        } else {
            format!(
                "The target's oracle differs from the gold for {} pull requests (first `{}`): import it again (`runner corpus import aacr`); this analysis scores against the gold.",
                differs.len(),
                differs[0]
            )
        });
    }
    let unknown: Vec<String> = input
        .runs
        .iter()
        .filter(|r| gold.instance(r.subject).is_none())
        .map(|r| format!("`{}`", r.subject))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if !unknown.is_empty() {
        result.notes.push(format!("Subjects not in the gold, left out: {}.", unknown.join(", ")));
    }
    result.data = serde_json::json!({
        "gold": {
            "pull_requests": counts.pull_requests,
            "references": counts.references,
            "left_side": counts.left_side,
            "rejected": counts.rejected,
            "rejected_elsewhere": counts.rejected_elsewhere,
        },
        "line_k": LINE_K,
        "cells": cells_json,
        "comparisons": comparisons,
    })
    .into();
    result
}

/// An `aacr` analysis's `gold`, loaded (a located problem when it cannot be read).
fn read_options(t: &TableReader<'_, '_>, context: &OptionsContext<'_>) -> AnalysisOptions {
    read_gold(t, context.base_dir).map_or(AnalysisOptions::None, AnalysisOptions::Aacr)
}

fn read_gold(t: &TableReader<'_, '_>, base_dir: &Path) -> Option<AacrOptions> {
    use crate::ground_truth::aacr;
    let written = t.required_string("gold")?;
    let gold = resolve_path(base_dir, written.get_ref());
    match aacr::load(&gold) {
        Ok(loaded) => Some(AacrOptions { gold, loaded: std::sync::Arc::new(loaded) }),
        Err(e) => {
            t.problems().push_with_help(
                written.span(),
                format!("`gold`: {e}"),
                format!("`gold` names the directory holding AACR-Bench's {} (and {})", aacr::POSITIVE_FILE, aacr::NEGATIVE_FILE),
            );
            None
        }
    }
}

#[cfg(test)]
mod tests;
