//! Matching findings: to one another, and to an oracle — one module for every rule that
//! decides whether two findings are the same.
//!
//! Between reports: exact (same file and line or overlapping range) and fuzzy (same file,
//! lines within a tolerance, similar normalized messages).
//!
//! Against an oracle: automatic matching of a run's reported findings to the oracle's findings
//! on one case: each oracle finding is `found`, `partial` or `missed`, each reported finding
//! left over is an extra (`real` or `rejected`; unadjudicated extras are `rejected`, i.e. noise).
//!
//! The rule (seed 003's definitions, made mechanical):
//! - *located*: same file, and the reported span within `line-tolerance` lines of the oracle
//!   finding's line or range (an oracle finding with a file but no line is located anywhere in
//!   its file; one without a file is matched at change level: text alone, see
//!   [`grade_change_level`]);
//! - `found`: located, with the configured evidence — message similarity to the oracle
//!   description ≥ `similarity`, and/or category agreement (see [`Evidence`]);
//! - `partial`: located, without that evidence, but with a similarity ≥ `partial-similarity`
//!   (the same place with part of the defect);
//! - `missed`: neither.
//!
//! Matching is one-to-one and greedy: candidate pairs are taken best first (found before
//! partial, then higher similarity, then nearer lines, then oracle and report order), so a
//! second report of the same defect is an extra. What automatic matching cannot judge — "the
//! same bug at another line", "the opposite conclusion", whether an extra is a real bug —
//! needs an adjudication: [`Adjudicated`] is the hook through which a person's decisions
//! replace the automatic ones, and [`Method`] records which produced each score.

pub use crate::analysis::matching::rule::{content_words, message_similarity, normalize_message, normalized_similarity, token_similarity, Evidence, SimilarityMeasure, STEM_LETTERS};
use crate::analysis::matching::rule::{MatchRule, OracleRule};
use crate::analysis::model::RunView;
use crate::finding::Finding;
use crate::ground_truth::oracle::{Oracle, OracleFinding};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// Same file, and the same line or overlapping ranges.
pub(crate) fn exact_match(a: &Finding, b: &Finding) -> bool {
    let (a0, a1) = a.span();
    let (b0, b1) = b.span();
    a.file == b.file && a0 <= b1 && b0 <= a1
}

/// Lines between two inclusive spans: 0 when they overlap.
pub(crate) fn span_gap((a0, a1): (u32, u32), (b0, b1): (u32, u32)) -> u32 {
    b0.saturating_sub(a1).max(a0.saturating_sub(b1))
}

/// Same file, spans within `line_tolerance`, and messages at least `similarity` alike by the
/// rule's measure.
pub(crate) fn fuzzy_match(a: &Finding, b: &Finding, rule: &MatchRule) -> bool {
    fuzzy_match_normalized(a, b, None, rule)
}

/// Each finding's message as [`fuzzy_match_normalized`] compares it, normalized once per list
/// rather than once per pair; empty unless the rule's measure is Levenshtein, the one that
/// compares normalized texts.
pub(crate) fn normalized_messages<'f>(findings: impl IntoIterator<Item = &'f Finding>, rule: &MatchRule) -> Vec<String> {
    if rule.measure != SimilarityMeasure::Levenshtein {
        return Vec::new();
    }
    findings.into_iter().map(|f| normalize_message(&f.message)).collect()
}

/// [`fuzzy_match`], given the two messages normalized ([`normalized_messages`]) where the
/// measure compares normalized texts; `None` measures the messages themselves.
pub(crate) fn fuzzy_match_normalized(a: &Finding, b: &Finding, normalized: Option<(&str, &str)>, rule: &MatchRule) -> bool {
    if a.file != b.file || span_gap(a.span(), b.span()) > rule.line_tolerance {
        return false;
    }
    let similarity = match normalized {
        Some((na, nb)) => normalized_similarity(na, nb),
        None => rule.measure.similarity(&a.message, &b.message),
    };
    similarity >= rule.similarity
}

/// One-to-one matching: pairs (i in a, j in b), taken greedily in order of best similarity
/// first, then extended along augmenting paths until no more pairs fit. The number of pairs
/// is therefore the maximum possible, and the same whichever side is passed first.
pub(crate) fn match_pairs(a: &[Finding], b: &[Finding], matches: impl Fn(&Finding, &Finding) -> bool) -> Vec<(usize, usize)> {
    let mut candidates: Vec<(f64, usize, usize)> = Vec::new();
    for (i, fa) in a.iter().enumerate() {
        for (j, fb) in b.iter().enumerate() {
            if matches(fa, fb) {
                candidates.push((message_similarity(&fa.message, &fb.message), i, j));
            }
        }
    }
    candidates.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)).then(x.2.cmp(&y.2)));
    let mut partner_of_a: Vec<Option<usize>> = vec![None; a.len()];
    let mut partner_of_b: Vec<Option<usize>> = vec![None; b.len()];
    let mut edges: Vec<Vec<usize>> = vec![Vec::new(); a.len()];
    for &(_, i, j) in &candidates {
        edges[i].push(j);
        if partner_of_a[i].is_none() && partner_of_b[j].is_none() {
            partner_of_a[i] = Some(j);
            partner_of_b[j] = Some(i);
        }
    }
    for i in 0..a.len() {
        if partner_of_a[i].is_none() {
            let mut seen = vec![false; b.len()];
            augment(i, &edges, &mut seen, &mut partner_of_a, &mut partner_of_b);
        }
    }
    partner_of_a.iter().enumerate().filter_map(|(i, j)| j.map(|j| (i, j))).collect()
}

/// Kuhn's augmenting-path step: tries to give `i` a partner, re-pairing others as needed.
fn augment(i: usize, edges: &[Vec<usize>], seen: &mut [bool], partner_of_a: &mut [Option<usize>], partner_of_b: &mut [Option<usize>]) -> bool {
    for &j in &edges[i] {
        if seen[j] {
            continue;
        }
        seen[j] = true;
        let free = match partner_of_b[j] {
            None => true,
            Some(k) => augment(k, edges, seen, partner_of_a, partner_of_b),
        };
        if free {
            partner_of_a[i] = Some(j);
            partner_of_b[j] = Some(i);
            return true;
        }
    }
    false
}

/// How many pairs a maximum one-to-one matching of `a_len` and `b_len` items has, where
/// `matches(i, j)` says whether item `i` of one side may pair with item `j` of the other:
/// `match_pairs(..).len()` without ordering the candidates by similarity (the greedy order
/// changes which pairs are made, never how many).
pub(crate) fn match_count(a_len: usize, b_len: usize, matches: impl Fn(usize, usize) -> bool) -> usize {
    let edges: Vec<Vec<usize>> = (0..a_len).map(|i| (0..b_len).filter(|&j| matches(i, j)).collect()).collect();
    let mut partner_of_a: Vec<Option<usize>> = vec![None; a_len];
    let mut partner_of_b: Vec<Option<usize>> = vec![None; b_len];
    for i in 0..a_len {
        let mut seen = vec![false; b_len];
        augment(i, &edges, &mut seen, &mut partner_of_a, &mut partner_of_b);
    }
    partner_of_a.iter().flatten().count()
}

/// [`match_count`] under the fuzzy rule, each message normalized once rather than once per
/// pair.
pub(crate) fn fuzzy_match_count(a: &[Finding], b: &[Finding], rule: &MatchRule) -> usize {
    let (na, nb) = (normalized_messages(a, rule), normalized_messages(b, rule));
    let normalized = |i: usize, j: usize| na.get(i).zip(nb.get(j)).map(|(x, y)| (x.as_str(), y.as_str()));
    match_count(a.len(), b.len(), |i, j| fuzzy_match_normalized(&a[i], &b[j], normalized(i, j), rule))
}

/// A short text stating the rule, printed beside results.
pub(crate) fn describe_rule(rule: &MatchRule) -> String {
    format!(
        "exact: same file and same line or overlapping range; fuzzy: same file, lines within {} and {} of messages ≥ {:.2}",
        rule.line_tolerance,
        rule.measure.describe(),
        rule.similarity
    )
}

/// The fuzzy half of [`describe_rule`], for analyses that match fuzzily only.
pub(crate) fn describe_fuzzy_rule(rule: &MatchRule) -> String {
    format!("fuzzy: same file, lines within {} and {} of messages ≥ {:.2}, matched one to one", rule.line_tolerance, rule.measure.describe(), rule.similarity)
}

/// An oracle finding's verdict for one run on one case (seed 003).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Missed,
    Partial,
    Found,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Missed => "missed",
            Self::Partial => "partial",
            Self::Found => "found",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "missed" => Some(Self::Missed),
            "partial" => Some(Self::Partial),
            "found" => Some(Self::Found),
            _ => None,
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A reported finding that matched no oracle finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExtraVerdict {
    /// A bug nobody had found (only an adjudication says so).
    Real,
    /// Noise.
    Rejected,
}

/// One oracle finding's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OracleVerdict {
    /// The oracle finding's id.
    pub finding: String,
    pub verdict: Verdict,
    /// Index of the reported finding matched to it.
    pub reported: Option<usize>,
    /// Similarity of that report to the oracle description.
    pub similarity: Option<f64>,
}

/// One extra.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Extra {
    /// Index of the reported finding.
    pub reported: usize,
    pub verdict: ExtraVerdict,
}

/// A run's findings on one case against the case's oracle findings.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CaseMatch {
    /// One per oracle finding, in the oracle's order.
    pub verdicts: Vec<OracleVerdict>,
    /// Reported findings matched to no oracle finding, in report order.
    pub extras: Vec<Extra>,
    /// How many findings were reported.
    pub reported: usize,
}

/// Counts that every score is computed from; they add up over cases, runs and repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct MatchCounts {
    /// Oracle findings.
    pub oracle: usize,
    pub found: usize,
    pub partial: usize,
    pub missed: usize,
    /// Reported findings.
    pub reported: usize,
    pub extras_real: usize,
    pub extras_rejected: usize,
}

impl std::ops::AddAssign for MatchCounts {
    fn add_assign(&mut self, o: Self) {
        self.oracle += o.oracle;
        self.found += o.found;
        self.partial += o.partial;
        self.missed += o.missed;
        self.reported += o.reported;
        self.extras_real += o.extras_real;
        self.extras_rejected += o.extras_rejected;
    }
}

fn ratio(n: usize, d: usize) -> Option<f64> {
    (d > 0).then(|| n as f64 / d as f64)
}

impl MatchCounts {
    /// Counts one oracle finding with its verdict.
    pub(crate) fn add_verdict(&mut self, verdict: Verdict) {
        self.oracle += 1;
        match verdict {
            Verdict::Found => self.found += 1,
            Verdict::Partial => self.partial += 1,
            Verdict::Missed => self.missed += 1,
        }
    }

    /// Seed 003: found / oracle findings.
    pub(crate) fn recall_strict(&self) -> Option<f64> {
        ratio(self.found, self.oracle)
    }

    /// Seed 003: (found + partial) / oracle findings.
    pub(crate) fn recall_with_partials(&self) -> Option<f64> {
        ratio(self.found + self.partial, self.oracle)
    }

    /// Seed 003: rejected extras / everything reported.
    pub(crate) fn noise(&self) -> Option<f64> {
        ratio(self.extras_rejected, self.reported)
    }

    /// H2 true positives: reports matched as `found`, and extras adjudicated `real` (H2: "if
    /// new valid issue, add to ground truth and treat as TP").
    pub(crate) fn tp(&self) -> usize {
        self.found + self.extras_real
    }

    /// H2 false positives: every other report (partial matches and rejected extras).
    pub(crate) fn fp(&self) -> usize {
        self.reported.saturating_sub(self.tp())
    }

    /// H2 false negatives: oracle findings not found.
    pub(crate) fn fn_(&self) -> usize {
        self.oracle - self.found
    }

    pub(crate) fn precision(&self) -> Option<f64> {
        ratio(self.tp(), self.tp() + self.fp())
    }

    pub(crate) fn recall(&self) -> Option<f64> {
        ratio(self.tp(), self.tp() + self.fn_())
    }

    pub fn f1(&self) -> Option<f64> {
        f1(self.precision(), self.recall())
    }

    pub(crate) fn prf(&self) -> Prf {
        Prf { tp: self.tp(), fp: self.fp(), fn_: self.fn_() }
    }
}

/// True positives, false positives and false negatives, and the rates H2 and A8 report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Prf {
    pub tp: usize,
    pub fp: usize,
    #[serde(rename = "fn")]
    pub fn_: usize,
}

impl std::ops::AddAssign for Prf {
    fn add_assign(&mut self, o: Self) {
        self.tp += o.tp;
        self.fp += o.fp;
        self.fn_ += o.fn_;
    }
}

impl Prf {
    /// TP / (TP + FP).
    pub fn precision(&self) -> Option<f64> {
        ratio(self.tp, self.tp + self.fp)
    }

    /// TP / (TP + FN).
    pub fn recall(&self) -> Option<f64> {
        ratio(self.tp, self.tp + self.fn_)
    }

    pub fn f1(&self) -> Option<f64> {
        f1(self.precision(), self.recall())
    }

    /// `{"tp","fp","fn","precision","recall","f1"}`, undefined rates as null.
    pub(crate) fn to_json(self) -> serde_json::Value {
        serde_json::json!({
            "tp": self.tp, "fp": self.fp, "fn": self.fn_,
            "precision": self.precision(), "recall": self.recall(), "f1": self.f1(),
        })
    }
}

/// 2PR/(P+R); undefined when either is, 0 when both are 0.
pub(crate) fn f1(p: Option<f64>, r: Option<f64>) -> Option<f64> {
    match (p, r) {
        (Some(p), Some(r)) if p + r > 0.0 => Some(2.0 * p * r / (p + r)),
        (Some(_), Some(_)) => Some(0.0),
        _ => None,
    }
}

impl CaseMatch {
    pub(crate) fn counts(&self) -> MatchCounts {
        let count = |v: Verdict| self.verdicts.iter().filter(|x| x.verdict == v).count();
        MatchCounts {
            oracle: self.verdicts.len(),
            found: count(Verdict::Found),
            partial: count(Verdict::Partial),
            missed: count(Verdict::Missed),
            reported: self.reported,
            extras_real: self.extras.iter().filter(|e| e.verdict == ExtraVerdict::Real).count(),
            extras_rejected: self.extras.iter().filter(|e| e.verdict == ExtraVerdict::Rejected).count(),
        }
    }
}

/// A path as written by a reviewer or an oracle, compared without a leading `./`.
fn same_file(a: &str, b: &str) -> bool {
    a.trim_start_matches("./") == b.trim_start_matches("./")
}

/// The oracle finding's line span; `None` when it names a file but no line.
pub(crate) fn oracle_span(o: &OracleFinding) -> Option<(u32, u32)> {
    match (o.range, o.line) {
        (Some(r), _) if r.is_valid() => Some((r.start, r.end)),
        (_, Some(line)) => Some((line.max(1), line.max(1))),
        _ => None,
    }
}

/// The text of a report compared with the description: its message and its suggestion.
pub(crate) fn report_text(f: &Finding) -> String {
    match &f.suggestion {
        Some(s) => format!("{} {s}", f.message),
        None => f.message.clone(),
    }
}

/// How one report relates to one oracle finding: its verdict, similarity and line gap. An
/// oracle finding without a file is graded at change level ([`grade_change_level`]).
pub fn grade(reported: &Finding, oracle: &OracleFinding, rule: &OracleRule) -> (Verdict, f64, u32) {
    grade_with(reported, oracle, rule, None)
}

/// [`grade`], with the embedding cosine of the two texts where it is at hand (evidence when
/// the rule has an `embedding_similarity`).
pub(crate) fn grade_with(reported: &Finding, oracle: &OracleFinding, rule: &OracleRule, cosine: Option<f64>) -> (Verdict, f64, u32) {
    let Some(file) = &oracle.file else { return grade_change_level_with(reported, oracle, rule, cosine) };
    if !same_file(&reported.file, file) {
        return (Verdict::Missed, 0.0, u32::MAX);
    }
    let gap = oracle_span(oracle).map(|span| span_gap(reported.span(), span)).unwrap_or(0);
    let similarity = rule.measure.similarity(&report_text(reported), &oracle.description);
    if gap > rule.line_tolerance {
        return (Verdict::Missed, similarity, gap);
    }
    let similar = text_evidence(similarity, cosine, rule);
    let same_category = oracle.category == Some(reported.category);
    let strong = match rule.evidence {
        Evidence::SimilarityOrCategory => similar || same_category,
        Evidence::Similarity | Evidence::Judge => similar,
        Evidence::Category => same_category,
        Evidence::Location => true,
    };
    let verdict = if strong {
        Verdict::Found
    } else if similarity >= rule.partial_similarity {
        Verdict::Partial
    } else {
        Verdict::Missed
    };
    (verdict, similarity, gap)
}

/// Whether two texts' similarity (and embedding cosine, when the rule uses one and it is at
/// hand) is evidence of the same defect.
pub(crate) fn text_evidence(similarity: f64, cosine: Option<f64>, rule: &OracleRule) -> bool {
    similarity >= rule.similarity || matches!((rule.embedding_similarity, cosine), (Some(threshold), Some(c)) if c >= threshold)
}

/// Change level, for an oracle finding that names no file (a benchmark that knows only which
/// change a defect is in): every report on the change is a candidate, whatever file or line it
/// names, and text alone decides — `found` at similarity ≥ `similarity` (or embedding cosine
/// ≥ `embedding_similarity`), `partial` at ≥ `partial-similarity` (category is no evidence
/// here). The gap is 0.
pub fn grade_change_level(reported: &Finding, oracle: &OracleFinding, rule: &OracleRule) -> (Verdict, f64, u32) {
    grade_change_level_with(reported, oracle, rule, None)
}

fn grade_change_level_with(reported: &Finding, oracle: &OracleFinding, rule: &OracleRule, cosine: Option<f64>) -> (Verdict, f64, u32) {
    let similarity = rule.measure.similarity(&report_text(reported), &oracle.description);
    let verdict = if text_evidence(similarity, cosine, rule) {
        Verdict::Found
    } else if similarity >= rule.partial_similarity {
        Verdict::Partial
    } else {
        Verdict::Missed
    };
    (verdict, similarity, 0)
}

/// Whether an oracle finding can only be matched at change level (it names no file).
pub(crate) fn is_change_level(o: &OracleFinding) -> bool {
    o.file.is_none()
}

/// The rule as it applies to `oracle`: [`OracleRule::describe`] for line-anchored findings,
/// the change-level rule for findings without a file, both when the oracle has both kinds.
pub(crate) fn describe_rule_for(rule: &OracleRule, oracle: &Oracle) -> String {
    let change_level = oracle.findings.iter().filter(|f| is_change_level(f)).count();
    if change_level == 0 {
        return rule.describe();
    }
    let text = format!(
        "change-level matching ({change_level} of {} oracle findings name no file or line): found = {}, by text alone, whatever file or line the report names; partial = similarity ≥ {:.2} but below that; one report per oracle finding, one to one and greedy (the most similar pair first); unmatched reports are extras, rejected (noise) unless adjudicated real; {}",
        oracle.findings.len(),
        rule.describe_text_evidence(),
        rule.partial_similarity,
        rule.describe_source()
    );
    if change_level == oracle.findings.len() {
        text
    } else {
        format!("{}; {text}", rule.describe())
    }
}

/// Matches one run's reports on a case to the case's oracle findings.
pub fn match_case(reported: &[Finding], expected: &[&OracleFinding], rule: &OracleRule) -> CaseMatch {
    match_case_with(reported, expected, rule, |_, _| None)
}

/// [`match_case`], with the embedding cosine of oracle finding `oi` and report `ri` where it
/// is at hand. Pairs are taken best first: found before partial, then the higher similarity
/// plus cosine, then nearer lines, then oracle and report order.
pub fn match_case_with(reported: &[Finding], expected: &[&OracleFinding], rule: &OracleRule, cosine: impl Fn(usize, usize) -> Option<f64>) -> CaseMatch {
    match_case_full(reported, expected, rule, cosine, None)
}

/// [`match_case`], with the judges' same-issue votes where the rule's evidence is
/// [`Evidence::Judge`]: a pair [`judge_candidate`] selects that a majority of judges call the
/// same issue is `found` (a tie is not).
pub(crate) fn match_case_judged(reported: &[Finding], expected: &[&OracleFinding], rule: &OracleRule, votes: Option<&MatchVotes>) -> CaseMatch {
    match_case_full(reported, expected, rule, |_, _| None, votes)
}

fn match_case_full(
    reported: &[Finding],
    expected: &[&OracleFinding],
    rule: &OracleRule,
    cosine: impl Fn(usize, usize) -> Option<f64>,
    votes: Option<&MatchVotes>,
) -> CaseMatch {
    let mut candidates: Vec<(Verdict, f64, u32, usize, usize, f64)> = Vec::new();
    for (oi, o) in expected.iter().enumerate() {
        for (ri, r) in reported.iter().enumerate() {
            let c = cosine(oi, ri);
            let (mut verdict, similarity, gap) = grade_with(r, o, rule, c);
            // With `judge-pairs = "borderline"` the judges were asked about the borderline
            // decisions only (`probability::pairs_to_judge`); where they answered about a pair at
            // the place, their majority settles it either way.
            if let Some(votes) = votes.filter(|_| rule.judge_borderline && gap <= rule.line_tolerance) {
                match votes.decision(&o.description, &report_text(r)) {
                    Some(JudgedSame::Yes) => verdict = Verdict::Found,
                    Some(JudgedSame::No | JudgedSame::Tie) if verdict == Verdict::Found => verdict = Verdict::Partial,
                    _ => {}
                }
            } else if let Some(votes) = votes.filter(|_| !rule.judge_borderline && verdict != Verdict::Found && judge_candidate(similarity, gap, rule)) {
                if votes.decision(&o.description, &report_text(r)) == Some(JudgedSame::Yes) {
                    verdict = Verdict::Found;
                }
            }
            if verdict > Verdict::Missed {
                let strength = similarity + if rule.embedding_similarity.is_some() { c.unwrap_or(0.0) } else { 0.0 };
                candidates.push((verdict, strength, gap, oi, ri, similarity));
            }
        }
    }
    candidates.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.total_cmp(&a.1)).then(a.2.cmp(&b.2)).then(a.3.cmp(&b.3)).then(a.4.cmp(&b.4)));
    let mut verdicts: Vec<OracleVerdict> =
        expected.iter().map(|o| OracleVerdict { finding: o.id.clone(), verdict: Verdict::Missed, reported: None, similarity: None }).collect();
    let mut used = vec![false; reported.len()];
    for (verdict, _, _, oi, ri, similarity) in candidates {
        if verdicts[oi].reported.is_none() && !used[ri] {
            used[ri] = true;
            verdicts[oi] = OracleVerdict { finding: expected[oi].id.clone(), verdict, reported: Some(ri), similarity: Some(similarity) };
        }
    }
    let extras = used.iter().enumerate().filter(|(_, u)| !**u).map(|(ri, _)| Extra { reported: ri, verdict: ExtraVerdict::Rejected }).collect();
    CaseMatch { verdicts, extras, reported: reported.len() }
}

/// Whether the judges are asked about a pair graded with `similarity` at line gap `gap`: the
/// rule takes [`Evidence::Judge`], the pair is located (change level: always; otherwise the
/// same file, within the line tolerance), text alone does not make it `found`, and its
/// similarity is at least the rule's judge floor.
pub(crate) fn judge_candidate(similarity: f64, gap: u32, rule: &OracleRule) -> bool {
    rule.evidence == Evidence::Judge && gap <= rule.line_tolerance && !text_evidence(similarity, None, rule) && similarity >= rule.judge_floor()
}

/// The pairs of one run's reports and a case's oracle findings that the judges are asked
/// about, as (oracle description, report text), in oracle then report order, each once:
/// those `rule` leaves to them (the pairs the words leave open), or with `every` (a `jury`
/// analysis, which measures the judges themselves) every pair at the same place (change
/// level: every pair). With `judge-pairs = "borderline"` the calibration's decision model says
/// which: `probability::pairs_to_judge`.
pub fn judge_pairs(reported: &[Finding], expected: &[&OracleFinding], rule: &OracleRule, every: bool) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for o in expected {
        for r in reported {
            let (verdict, similarity, gap) = grade(r, o, rule);
            let asked = if every { gap <= rule.line_tolerance } else { verdict != Verdict::Found && judge_candidate(similarity, gap, rule) };
            if !asked {
                continue;
            }
            let pair = (o.description.clone(), report_text(r));
            if !pairs.contains(&pair) {
                pairs.push(pair);
            }
        }
    }
    pairs
}

/// A jury's majority about one pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JudgedSame {
    /// More judges said "the same issue" than said otherwise.
    Yes,
    No,
    /// As many yes as no (a tie is not a find).
    Tie,
}

/// The judges' answers to "do these two texts describe the same issue?", by pair of texts
/// (the oracle description and the report's message and suggestion, [`report_text`]), so a
/// pair reported alike in several runs reads one answer, as its cached call does.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MatchVotes {
    /// The judges' names, in manifest order.
    pub judges: Vec<String>,
    /// Each asked pair's votes, one per judge: `Some(true)` the same issue, `Some(false)` not,
    /// `None` no well-formed answer (or none yet).
    pub pairs: BTreeMap<(String, String), Vec<Option<bool>>>,
    /// Each asked pair's answers per judge, in sample order (`None`: no well-formed answer):
    /// their share of yes weighs the decision under judging uncertainty ([`MatchVotes::share`]),
    /// and a verdict can be drawn on each sample alone ([`MatchVotes::for_sample`]).
    pub sampled: BTreeMap<(String, String), Vec<Vec<Option<bool>>>>,
    /// Why some answers are missing (a judge's node that failed).
    pub problems: Vec<String>,
    /// Per judge: whether it decides per oracle finding (a replayed judge) rather than per pair.
    pub replayed: Vec<bool>,
    /// The decisions of judges that decide per oracle finding rather than per pair (replayed
    /// judges: "did this run find it?"), by run label and oracle description, one per judge.
    pub findings: BTreeMap<(String, String), Vec<Option<bool>>>,
    /// What replayed judges counted as a run's false positives (candidates they matched to
    /// no oracle finding, in their own reading of the review), by run label, one per judge.
    pub false_positives: BTreeMap<String, Vec<Option<usize>>>,
}

impl MatchVotes {
    /// The majority about a pair; `None` when it was not asked or no judge answered.
    pub(crate) fn decision(&self, description: &str, report: &str) -> Option<JudgedSame> {
        let votes = self.pairs.get(&(description.to_string(), report.to_string()))?;
        majority(votes)
    }

    /// The share of the answers about a pair, over every judge and sample, that called it the
    /// same issue; `None` when it was not asked or nobody answered.
    pub(crate) fn share(&self, description: &str, report: &str) -> Option<f64> {
        let answers: Vec<bool> = self.sampled.get(&(description.to_string(), report.to_string()))?.iter().flatten().filter_map(|a| *a).collect();
        (!answers.is_empty()).then(|| answers.iter().filter(|yes| **yes).count() as f64 / answers.len() as f64)
    }

    /// The most samples any judge was asked per pair (1 when none was asked more than once).
    pub fn samples(&self) -> usize {
        self.sampled.values().flatten().map(Vec::len).max().unwrap_or(1).max(1)
    }

    /// The votes as sample `s` alone gives them: each judge's answer in that sample (a judge
    /// asked fewer times, its last), so a verdict can be required to hold in k of N samples.
    pub fn for_sample(&self, s: usize) -> MatchVotes {
        let pairs = self
            .pairs
            .iter()
            .map(|(pair, majority)| {
                let votes = match self.sampled.get(pair) {
                    Some(judges) => judges.iter().zip(majority).map(|(answers, m)| if answers.is_empty() { *m } else { answers[s.min(answers.len() - 1)] }).collect(),
                    None => majority.clone(),
                };
                (pair.clone(), votes)
            })
            .collect();
        MatchVotes { pairs, sampled: BTreeMap::new(), ..self.clone() }
    }

    /// Asked pairs, and how many of them were ties.
    pub(crate) fn tally(&self) -> (usize, usize) {
        (self.pairs.len(), self.pairs.values().filter(|v| majority(v) == Some(JudgedSame::Tie)).count())
    }
}

/// The majority of well-formed votes: yes over no, a tie when they are as many.
pub(crate) fn majority(votes: &[Option<bool>]) -> Option<JudgedSame> {
    let yes = votes.iter().filter(|v| **v == Some(true)).count();
    let no = votes.iter().filter(|v| **v == Some(false)).count();
    match yes.cmp(&no) {
        _ if yes + no == 0 => None,
        std::cmp::Ordering::Greater => Some(JudgedSame::Yes),
        std::cmp::Ordering::Less => Some(JudgedSame::No),
        std::cmp::Ordering::Equal => Some(JudgedSame::Tie),
    }
}

/// A rule's description with the jury named and its ties counted, where the rule takes the
/// judges' word (`votes` present).
pub(crate) fn with_jury(text: String, votes: Option<&MatchVotes>) -> String {
    let Some(votes) = votes else { return text };
    let names: Vec<String> = votes.judges.iter().map(|j| format!("`{j}`")).collect();
    let (asked, ties) = votes.tally();
    let named = text.replace(crate::analysis::matching::rule::JURY_PLACEHOLDER, &format!("judges {}", names.join(", ")));
    let problems = if votes.problems.is_empty() { String::new() } else { format!("; missing answers: {}", votes.problems.join("; ")) };
    format!(
        "{named}; judges asked about {asked} pair{}, {ties} tie{} (not found){problems}",
        if asked == 1 { "" } else { "s" },
        if ties == 1 { "" } else { "s" }
    )
}

/// One run's reports on its case, matched to the case's oracle findings.
#[derive(Debug, Clone)]
pub struct ScoredRun<'a> {
    pub view: RunView<'a>,
    pub case: CaseMatch,
}

/// Matches every run whose subject the oracle knows; returns them in plan order, with the
/// subjects the oracle lacks (sorted, distinct).
pub fn score_runs<'a>(runs: &[RunView<'a>], oracle: &Oracle, rule: &OracleRule) -> (Vec<ScoredRun<'a>>, Vec<String>) {
    score_runs_judged(runs, oracle, rule, None)
}

/// [`score_runs`], with the judges' same-issue votes where the rule asks for them.
pub(crate) fn score_runs_judged<'a>(runs: &[RunView<'a>], oracle: &Oracle, rule: &OracleRule, votes: Option<&MatchVotes>) -> (Vec<ScoredRun<'a>>, Vec<String>) {
    let mut scored = Vec::new();
    let mut unknown = std::collections::BTreeSet::new();
    for view in runs {
        if oracle.case(view.subject).is_none() {
            unknown.insert(view.subject.to_string());
            continue;
        }
        let expected = oracle.expected_for(view.subject);
        scored.push(ScoredRun { view: *view, case: match_case_judged(view.findings, &expected, rule, votes) });
    }
    (scored, unknown.into_iter().collect())
}

/// Which method produced a score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Method {
    /// [`match_case`] under a rule.
    Automatic { rule: String },
    /// A person's decisions, read from a file, over automatic matching for what it leaves open.
    Adjudication { source: String, rule: String },
}

impl Method {
    pub fn describe(&self) -> String {
        match self {
            Self::Automatic { rule } => rule.clone(),
            Self::Adjudication { source, rule } => format!("adjudication `{source}` (what it does not decide: {rule})"),
        }
    }
}

/// A person's decisions for one run on one case: the hook through which an adjudication file
/// (seed 003's `found|partial|missed` per oracle finding, `real|rejected` per extra) replaces
/// automatic matching. Extras are named by the reported finding's id.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Adjudicated {
    pub findings: BTreeMap<String, Verdict>,
    pub extras: BTreeMap<String, ExtraVerdict>,
    /// Oracle finding id → the id of the report a person matched to it (`found`/`partial`).
    pub matches: BTreeMap<String, String>,
}

impl Adjudicated {
    /// Applies the decisions: an oracle finding's verdict is replaced (a report it had taken
    /// is released as an extra when the new verdict is `missed`, or when the person matched it
    /// to another report, which then stops being an extra); an extra's verdict is set.
    pub(crate) fn apply(&self, case: &mut CaseMatch, reported: &[Finding]) {
        for v in &mut case.verdicts {
            if let Some(&decided) = self.findings.get(&v.finding) {
                let chosen = self.matches.get(&v.finding).and_then(|id| reported.iter().position(|f| &f.id == id));
                if let (true, Some(ri)) = (decided != Verdict::Missed, chosen) {
                    if let Some(at) = case.extras.iter().position(|e| e.reported == ri) {
                        case.extras.remove(at);
                        if let Some(old) = v.reported.replace(ri) {
                            case.extras.push(Extra { reported: old, verdict: ExtraVerdict::Rejected });
                        }
                        v.similarity = None;
                    }
                }
                if decided == Verdict::Missed {
                    if let Some(ri) = v.reported.take() {
                        case.extras.push(Extra { reported: ri, verdict: ExtraVerdict::Rejected });
                    }
                    v.similarity = None;
                }
                v.verdict = decided;
            }
        }
        case.extras.sort_by_key(|e| e.reported);
        for e in &mut case.extras {
            if let Some(&decided) = reported.get(e.reported).and_then(|f| self.extras.get(&f.id)) {
                e.verdict = decided;
            }
        }
    }
}

impl<'a> crate::analysis::model::AnalysisInput<'a> {
    /// The judges' same-issue votes, for oracle matching whose evidence is the judges' word.
    pub fn match_votes(&self) -> Option<&'a MatchVotes> {
        self.extras.get()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::finding::{Category, LineRange, Severity};

    pub(crate) fn reported(id: &str, file: &str, line: u32, category: Category, message: &str) -> Finding {
        Finding {
            id: id.into(),
            file: file.into(),
            line,
            range: None,
            severity: Severity::Warning,
            category,
            confidence: 0.5,
            message: message.into(),
            suggestion: None,
            cursor_uri: None,
            evidence_lines: None,
        }
    }

    /// A stored run record for tests; `tokens` is the prompt-token count the run reported.
    pub(crate) fn record(cell: &crate::matrix::Cell, tokens: Option<u64>) -> crate::cache::RunRecord {
        crate::cache::RunRecord {
            schema: 1,
            key: crate::cache::CacheKey("k".into()),
            experiment: "e".into(),
            label: "l".into(),
            inputs: crate::cache::KeyInputs::new("builtin", serde_json::Value::Null, cell, "s", 1),
            findings: String::new(),
            raw: String::new(),
            finding_count: 0,
            cost: crate::reviewer::Cost { prompt_tokens: tokens, ..Default::default() },
            provenance: BTreeMap::new(),
            schema_problems: Vec::new(),
            counters: BTreeMap::new(),
            attachments: BTreeMap::new(),
        }
    }

    pub(crate) fn oracle(id: &str, file: &str, line: u32, category: Category, description: &str) -> OracleFinding {
        OracleFinding {
            id: id.into(),
            case_id: None,
            description: description.into(),
            file: Some(file.into()),
            line: Some(line),
            range: None,
            category: Some(category),
            severity: None,
            blocking: true,
            severity_label: None,
            resolved: None,
            class: None,
            fixed: None,
        }
    }

    const F1_DESC: &str = "the loop skips the last element of every page because the range end is exclusive";

    #[test]
    fn found_partial_and_missed_by_hand() {
        let rule = OracleRule::default();
        let o1 = oracle("F1", "src/a.rs", 10, Category::Bug, F1_DESC);
        let o2 = oracle("F2", "src/a.rs", 30, Category::Security, "user input reaches the shell command unescaped allowing injection");
        let o3 = oracle("F3", "src/b.rs", 5, Category::Bug, "the counter is never reset after a refused request");
        let reports = vec![
            // same line ±1, similar text: found.
            reported("r1", "src/a.rs", 11, Category::Style, "exclusive range end skips the last element of the page"),
            // same line, other category, a little shared vocabulary: partial.
            reported("r2", "./src/a.rs", 30, Category::Performance, "this shell call is slow, consider caching"),
            // right file, far away: an extra; F3 is missed.
            reported("r3", "src/b.rs", 40, Category::Bug, "counter never reset after refused request"),
        ];
        let m = match_case(&reports, &[&o1, &o2, &o3], &rule);
        let verdicts: Vec<Verdict> = m.verdicts.iter().map(|v| v.verdict).collect();
        assert_eq!(verdicts, vec![Verdict::Found, Verdict::Partial, Verdict::Missed]);
        // r2 vs F2: {shell, call, slow, consider, caching} and {user, input, reaches, shell,
        // command, unescaped, allowing, injection} share one word: 2·1/(5+8) = 2/13.
        let s = m.verdicts[1].similarity.expect("matched");
        assert!((s - 2.0 / 13.0).abs() < 1e-9, "{s}");
        assert_eq!(m.extras, vec![Extra { reported: 2, verdict: ExtraVerdict::Rejected }]);
        let c = m.counts();
        assert_eq!((c.oracle, c.found, c.partial, c.missed, c.reported, c.extras_rejected), (3, 1, 1, 1, 3, 1));
        assert_eq!(c.recall_strict(), Some(1.0 / 3.0));
        assert_eq!(c.recall_with_partials(), Some(2.0 / 3.0));
        assert_eq!(c.noise(), Some(1.0 / 3.0));
        assert_eq!((c.tp(), c.fp(), c.fn_()), (1, 2, 2));
    }

    #[test]
    fn category_alone_is_evidence_only_when_configured() {
        let o = oracle("F1", "a.py", 14, Category::Security, "prefix test lets a sibling directory escape the root");
        let r = reported("r", "a.py", 14, Category::Security, "looks risky");
        assert_eq!(grade(&r, &o, &OracleRule::default()).0, Verdict::Missed, "the default rule takes no category as evidence");
        let by_category = OracleRule { evidence: Evidence::SimilarityOrCategory, ..OracleRule::default() };
        assert_eq!(grade(&r, &o, &by_category).0, Verdict::Found);
        let anywhere = OracleRule { evidence: Evidence::Location, ..OracleRule::default() };
        assert_eq!(grade(&r, &o, &anywhere).0, Verdict::Found);
    }

    #[test]
    fn ranges_and_tolerance() {
        let mut o = oracle("F1", "a.py", 17, Category::Bug, "unchecked index overflows");
        o.range = Some(LineRange { start: 13, end: 19 });
        let at = |line| grade(&reported("r", "a.py", line, Category::Bug, "index overflows unchecked"), &o, &OracleRule::default()).0;
        assert_eq!(at(13), Verdict::Found);
        assert_eq!(at(20), Verdict::Found);
        assert_eq!(at(21), Verdict::Missed);
        let zero = OracleRule { line_tolerance: 0, ..OracleRule::default() };
        assert_eq!(grade(&reported("r", "a.py", 20, Category::Bug, "index overflows unchecked"), &o, &zero).0, Verdict::Missed);
    }

    #[test]
    fn a_second_report_of_the_same_defect_is_an_extra() {
        let o = oracle("F1", "a.rs", 10, Category::Bug, F1_DESC);
        let weak = reported("weak", "a.rs", 10, Category::Style, "the range end looks odd");
        let strong = reported("strong", "a.rs", 10, Category::Bug, "exclusive range end skips the last element");
        let m = match_case(&[weak, strong], &[&o], &OracleRule::default());
        assert_eq!(m.verdicts[0].reported, Some(1));
        assert_eq!(m.verdicts[0].verdict, Verdict::Found);
        assert_eq!(m.extras.len(), 1);
        assert_eq!(m.extras[0].reported, 0);
    }

    #[test]
    fn adjudication_overrides_automatic_verdicts() {
        let o = oracle("F1", "a.rs", 10, Category::Bug, F1_DESC);
        let reports = vec![
            reported("r1", "a.rs", 10, Category::Bug, "off by one: the exclusive range end skips the last element"),
            reported("r2", "b.rs", 1, Category::Bug, "real leak"),
        ];
        let mut m = match_case(&reports, &[&o], &OracleRule::default());
        assert_eq!(m.counts().found, 1);
        let adj = Adjudicated {
            findings: [("F1".to_string(), Verdict::Missed)].into(),
            extras: [("r2".to_string(), ExtraVerdict::Real)].into(),
            ..Adjudicated::default()
        };
        adj.apply(&mut m, &reports);
        let c = m.counts();
        assert_eq!((c.found, c.missed, c.extras_real, c.extras_rejected), (0, 1, 1, 1));
        assert_eq!(c.noise(), Some(0.5));
        // H2 counts the real extra as a TP; the released report is a FP.
        assert_eq!((c.tp(), c.fp(), c.fn_()), (1, 1, 1));
    }

    fn change_level(id: &str, description: &str) -> OracleFinding {
        OracleFinding { file: None, line: None, category: None, ..oracle(id, "", 0, Category::Bug, description) }
    }

    #[test]
    fn change_level_findings_match_by_text_alone_whatever_the_report_names() {
        let rule = OracleRule::default();
        let o = change_level("G1", "Django querysets do not support negative slicing");
        // Anywhere, any category: {negat, slici, djang, query, suppo} vs {djang, query, suppo,
        // negat, slici} — the same five stems.
        let r = reported("r", "", 0, Category::Style, "Negative slicing of a Django queryset is not supported");
        let (verdict, similarity, gap) = grade(&r, &o, &rule);
        assert_eq!((verdict, gap), (Verdict::Found, 0));
        assert!((similarity - 1.0).abs() < 1e-9, "{similarity}");
        let elsewhere = reported("r", "src/x.py", 99, Category::Bug, "Negative slicing of a Django queryset is not supported");
        assert_eq!(grade(&elsewhere, &o, &rule).0, Verdict::Found, "a file or line the report names changes nothing");
        // Category alone is no evidence at change level, even where it is for located findings.
        let same_category = reported("r", "", 0, Category::Bug, "unrelated naming nit");
        assert_eq!(grade(&same_category, &o, &rule).0, Verdict::Missed);
        // {negat, offse, reach, queryset→query} shares {negat, query} with the 5 stems: 2·2/(4+5) = 0.444.
        let some = reported("r", "", 0, Category::Bug, "negative offset reaches the queryset");
        let (v, s, _) = grade(&some, &o, &rule);
        assert!((s - 4.0 / 9.0).abs() < 1e-9, "{s}");
        assert_eq!(v, Verdict::Found);
        let strict = OracleRule { similarity: 0.5, partial_similarity: 0.25, ..rule };
        assert_eq!(grade(&some, &o, &strict).0, Verdict::Partial);
        let stricter = OracleRule { similarity: 0.9, partial_similarity: 0.6, ..rule };
        assert_eq!(grade(&some, &o, &stricter).0, Verdict::Missed);
    }

    #[test]
    fn change_level_matching_is_one_to_one_and_greedy_by_similarity() {
        let rule = OracleRule { similarity: 0.3, partial_similarity: 0.15, ..OracleRule::default() };
        let g1 = change_level("G1", "race condition: the backup code can be used twice by concurrent logins");
        let g2 = change_level("G2", "backup code validation is case sensitive");
        let reports = vec![
            reported("a", "", 0, Category::Bug, "backup code validation is case sensitive, uppercase input fails"),
            reported("b", "", 0, Category::Bug, "concurrent logins can reuse the same backup code (race condition)"),
            reported("c", "", 0, Category::Bug, "race: concurrent logins use one backup code twice"),
            reported("d", "", 0, Category::Style, "rename the component file"),
        ];
        // Stems (`code` is a stop word): G1 {race, condi, backu, used, twice, concu, login},
        // G2 {backu, valid, case, sensi}; a–G2 4 shared of 7+4: 8/11; b–G1 5 of 7+7: 10/14;
        // c {race, concu, login, use, backu, twice}–G1 5 of 6+7: 10/13, the best pair of all.
        assert!((token_similarity(&reports[2].message, &g1.description) - 10.0 / 13.0).abs() < 1e-9);
        assert!((token_similarity(&reports[1].message, &g1.description) - 10.0 / 14.0).abs() < 1e-9);
        assert!((token_similarity(&reports[0].message, &g2.description) - 8.0 / 11.0).abs() < 1e-9);
        let m = match_case(&reports, &[&g1, &g2], &rule);
        let taken: Vec<(Verdict, Option<usize>)> = m.verdicts.iter().map(|v| (v.verdict, v.reported)).collect();
        assert_eq!(taken, vec![(Verdict::Found, Some(2)), (Verdict::Found, Some(0))]);
        assert_eq!(m.extras.iter().map(|e| e.reported).collect::<Vec<_>>(), [1, 3], "the second report of G1's defect is an extra");
        let c = m.counts();
        assert_eq!((c.tp(), c.fp(), c.fn_()), (2, 2, 0));
    }

    #[test]
    fn the_change_level_rule_is_printed_beside_the_scores_only_where_it_applies() {
        let rule = OracleRule::default();
        let located = oracle("F1", "a.rs", 1, Category::Bug, "x");
        let oracle_of = |findings: Vec<OracleFinding>| Oracle { version: 1, findings, cases: Vec::new(), skipped: Vec::new() };
        assert_eq!(describe_rule_for(&rule, &oracle_of(vec![located.clone()])), rule.describe(), "unchanged without change-level findings");
        let only = describe_rule_for(&rule, &oracle_of(vec![change_level("G1", "y")]));
        assert!(only.starts_with("change-level matching (1 of 1 oracle findings name no file or line)"), "{only}");
        assert!(only.contains("≥ 0.22") && only.contains("by text alone") && only.contains("one to one"), "{only}");
        assert!(only.contains("calibrated on 2,808 golden-comment cells of 3 judges"), "{only}");
        assert!(!only.contains("same file"), "{only}");
        let both = describe_rule_for(&rule, &oracle_of(vec![located, change_level("G1", "y")]));
        assert!(both.starts_with(&rule.describe()) && both.contains("change-level matching (1 of 2"), "{both}");
    }

    #[test]
    fn a_majority_of_judges_finds_a_located_pair_that_text_does_not_settle_and_a_tie_does_not() {
        let rule = OracleRule { evidence: Evidence::Judge, calibrated: None, ..OracleRule::default() };
        let o = oracle("F1", "a.rs", 10, Category::Bug, F1_DESC);
        // {loop, skips→skips, elemen, ...}: one shared stem with the description, under 0.22, over 0.05.
        let near = reported("near", "a.rs", 11, Category::Style, "pagination drops a record at each boundary loop");
        let far = reported("far", "a.rs", 40, Category::Style, "pagination drops a record at each boundary loop");
        let unrelated = reported("none", "a.rs", 10, Category::Style, "rename this variable");
        let (verdict, similarity, gap) = grade(&near, &o, &rule);
        assert!(verdict != Verdict::Found && similarity >= rule.judge_floor() && similarity < rule.similarity, "{verdict:?} {similarity}");
        assert!(judge_candidate(similarity, gap, &rule));
        let pairs = judge_pairs(&[near.clone(), far.clone(), unrelated.clone()], &[&o], &rule, false);
        assert_eq!(pairs, vec![(F1_DESC.to_string(), report_text(&near))], "far away or under the floor: not asked");
        assert!(judge_pairs(std::slice::from_ref(&near), &[&o], &OracleRule::default(), false).is_empty(), "only the judge evidence asks");
        let every = judge_pairs(&[near.clone(), far.clone(), unrelated.clone()], &[&o], &rule, true);
        assert_eq!(every.len(), 2, "a jury is asked every pair at the place, settled or not, and nothing elsewhere: {every:?}");
        let votes_of = |v: Vec<Option<bool>>| MatchVotes {
            judges: vec!["a".into(), "b".into(), "c".into()],
            pairs: [((F1_DESC.to_string(), report_text(&near)), v)].into(),
            ..MatchVotes::default()
        };
        let verdict_with = |v: Vec<Option<bool>>| match_case_judged(std::slice::from_ref(&near), &[&o], &rule, Some(&votes_of(v))).verdicts[0].verdict;
        assert_eq!(verdict_with(vec![Some(true), Some(true), Some(false)]), Verdict::Found);
        assert_eq!(verdict_with(vec![Some(true), Some(false), None]), verdict, "a tie is not a find");
        assert_eq!(verdict_with(vec![Some(false), Some(false), Some(true)]), verdict);
        assert_eq!(match_case_judged(std::slice::from_ref(&near), &[&o], &rule, None).verdicts[0].verdict, verdict, "no votes, no find");
        let tied = votes_of(vec![Some(true), Some(false), None]);
        assert_eq!(tied.tally(), (1, 1));
        let text = with_jury(rule.describe(), Some(&tied));
        assert!(text.contains("or a majority of judges `a`, `b`, `c` say the two describe the same issue"), "{text}");
        assert!(text.contains("similarity ≥ 0.05") && text.ends_with("judges asked about 1 pair, 1 tie (not found)"), "{text}");
        assert!(rule.describe().contains(crate::analysis::spec::JURY_PLACEHOLDER));
    }

    #[test]
    fn the_rule_is_printed_in_words() {
        let text = OracleRule::default().describe();
        assert!(text.starts_with("automatic matching:"), "{text}");
        assert!(text.contains("within 1") && text.contains("≥ 0.22") && !text.contains("same category"), "{text}");
        assert!(text.contains("κ 0.83 cross-validated"), "{text}");
        let by_hand = OracleRule { similarity: 0.4, calibrated: None, evidence: Evidence::SimilarityOrCategory, ..OracleRule::default() };
        assert!(by_hand.describe().contains("or the same category") && by_hand.describe().contains("not calibrated"));
    }

    /// With `judge-pairs = "borderline"` the judges are asked only about the decisions the
    /// decision model is unsure of, and their majority settles them either way: a "no" takes a
    /// find the words made, a "yes" makes one they did not; a sure decision is not asked.
    #[test]
    fn borderline_judging_asks_only_the_unsure_decisions_and_settles_them_either_way() {
        let rule = OracleRule { evidence: Evidence::Judge, judge_borderline: true, ..OracleRule::default() };
        let model = rule.calibrated.and_then(|c| c.decisions).expect("the default rule has a decision model");
        let o = oracle("F1", "a.rs", 10, Category::Bug, F1_DESC);
        // Found by its words but unsure (p 0.68); partial and unsure (p 0.34); found and sure;
        // missed and sure.
        let unsure_find = reported("a", "a.rs", 10, Category::Bug, "pagination drops the last element at each boundary");
        let unsure_partial = reported("b", "a.rs", 10, Category::Bug, "loop and range handling drop one final record across result sets listing");
        let sure_find = reported("c", "a.rs", 10, Category::Bug, "the range end is exclusive so the loop skips the last element");
        let sure_miss = reported("d", "a.rs", 10, Category::Bug, "rename this variable");
        let probability = |r: &Finding| model.probability(&crate::analysis::matching::probability::case_features(std::slice::from_ref(r), &[&o], &rule)[0]);
        let expected = [(&unsure_find, Verdict::Found, true), (&unsure_partial, Verdict::Partial, true), (&sure_find, Verdict::Found, false), (&sure_miss, Verdict::Missed, false)];
        for (r, verdict, borderline) in expected {
            assert_eq!(grade(r, &o, &rule).0, verdict, "{}", r.message);
            assert_eq!((0.2..=0.8).contains(&probability(r)), borderline, "{}: p = {}", r.message, probability(r));
            let asked = crate::analysis::matching::probability::pairs_to_judge(std::slice::from_ref(r), &[&o], &rule, false);
            assert_eq!(asked.len(), usize::from(borderline), "only the borderline decision is asked: {}", r.message);
        }
        // The pairs the words leave open, by contrast: the partial one only.
        let open = OracleRule { judge_borderline: false, ..rule };
        let to_judge = |r: &Finding, rule: &OracleRule| crate::analysis::matching::probability::pairs_to_judge(std::slice::from_ref(r), &[&o], rule, false);
        assert_eq!(to_judge(&unsure_partial, &open).len(), 1);
        assert!(to_judge(&unsure_find, &open).is_empty());
        let votes = |r: &Finding, yes: bool| MatchVotes {
            judges: vec!["a".into(), "b".into()],
            pairs: [((F1_DESC.to_string(), report_text(r)), vec![Some(yes), Some(yes)])].into(),
            ..MatchVotes::default()
        };
        let judged = |r: &Finding, yes: bool| match_case_judged(std::slice::from_ref(r), &[&o], &rule, Some(&votes(r, yes))).verdicts[0].verdict;
        assert_eq!(judged(&unsure_find, false), Verdict::Partial, "the judges' no takes the words' find");
        assert_eq!(judged(&unsure_find, true), Verdict::Found);
        assert_eq!(judged(&unsure_partial, true), Verdict::Found, "the judges' yes makes a find");
        assert_eq!(judged(&unsure_partial, false), Verdict::Partial);
        // Without an answer about a pair (a sure one is not asked), the words decide.
        assert_eq!(match_case_judged(std::slice::from_ref(&sure_find), &[&o], &rule, Some(&MatchVotes::default())).verdicts[0].verdict, Verdict::Found);
        assert!(rule.describe_text_evidence().contains("except where the decision is borderline (probability 0.2–0.8"), "{}", rule.describe_text_evidence());
    }
}

#[cfg(test)]
mod pair_tests {
    use super::*;
    use crate::analysis::test_support::finding;

    #[test]
    fn matching_is_maximum_where_greedy_falls_short() {
        // a0 (line 5) fits b0 (4) and b1 (6); a1 (line 3) fits only b0. Greedy takes a0–b0 and
        // leaves a1 alone; the augmenting step re-pairs a0 with b1.
        let a = [finding("f", 5, "same text"), finding("f", 3, "same text")];
        let b = [finding("f", 4, "same text"), finding("f", 6, "same text")];
        let rule = MatchRule::default();
        assert_eq!(match_pairs(&a, &b, |x, y| fuzzy_match(x, y, &rule)), vec![(0, 1), (1, 0)]);
        assert_eq!(match_pairs(&b, &a, |x, y| fuzzy_match(x, y, &rule)).len(), 2);
        // The counting forms give the same number without ordering candidates.
        assert_eq!((fuzzy_match_count(&a, &b, &rule), fuzzy_match_count(&b, &a, &rule)), (2, 2));
        assert_eq!(match_count(a.len(), b.len(), |i, j| exact_match(&a[i], &b[j])), match_pairs(&a, &b, exact_match).len());
    }

    #[test]
    fn the_fuzzy_count_agrees_with_the_pairs_under_every_measure_and_threshold() {
        let a = [finding("f", 5, "Null pointer dereference!"), finding("f", 9, "unused import"), finding("g", 1, "typo in name")];
        let b = [finding("f", 6, "null pointer dereference"), finding("f", 9, "unused imports here"), finding("g", 2, "naming typo")];
        for measure in [SimilarityMeasure::Levenshtein, SimilarityMeasure::Tokens] {
            for similarity in [0.0, 0.4, 0.7, 1.0] {
                let rule = MatchRule { measure, similarity, ..MatchRule::default() };
                assert_eq!(fuzzy_match_count(&a, &b, &rule), match_pairs(&a, &b, |x, y| fuzzy_match(x, y, &rule)).len(), "{measure:?} {similarity}");
            }
        }
    }

    #[test]
    fn best_similarity_pairs_first() {
        let a = [finding("f", 1, "null pointer dereference here")];
        let b = [finding("f", 1, "unrelated style nit about names"), finding("f", 1, "null pointer dereference")];
        assert_eq!(match_pairs(&a, &b, exact_match), vec![(0, 1)]);
    }

}
