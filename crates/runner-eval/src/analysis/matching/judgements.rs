//! Judges' match decisions as labels for runner's matcher: the code-review benchmark's
//! judgements format read, every record matched by the rule an experiment uses, and the
//! matcher's agreement with each judge (κ, precision, recall, per-tool rankings), the
//! judges' agreement with one another, and their majority.
//!
//! The format (`{judge, records: [{pr, project, tool, skipped, golden: [{comment, severity,
//! matched_candidate?}], unmatched_candidates?, candidates?}]}`): a record's candidates are
//! `candidates` when present, else its matched candidates (in golden order, each once) and
//! then its unmatched ones. A golden comment is labelled when it has the `matched_candidate`
//! key: a text means the judge found it, `null` that it did not. A file whose golden comments
//! all lack the key is unlabelled: it is matched, and nothing is compared.
//!
//! Each record is matched at change level (the golden comments name no file or line) by the
//! rule an experiment applies: every pair graded as `matcher::grade_change_level` grades it,
//! the pairs taken best first one to one as [`match_case_with`] takes them — the same
//! decisions, checked against it by a test. Rather than holding every pair of a record (a
//! record of 4,500 golden comments and 4,500 candidates has 20 million), each text is prepared
//! once (its content-word stems, or its normalized text) and the pairs are taken in passes:
//! a pass grades the golden comments and candidates still free, keeps only the best
//! [`PASS_PAIRS`] pairs (a prefix of the order every pair is taken in), and takes from them;
//! the pairs it dropped can only matter between comments and candidates still free after it,
//! which the next pass grades again. A record of ordinary size is one pass.
//!
//! The names the report prints (the file's name, its judge, its tools) are made safe for a
//! terminal (`runner_core::terminal`), as are the paths and parser messages of read errors.

use crate::analysis::matching::matcher::{report_text, text_evidence, Prf, Verdict};
use crate::analysis::matching::rule::{content_words, normalize_message, OracleRule, SimilarityMeasure};
use crate::agreement::{cohen_kappa, spearman};
use crate::finding::{Category, Finding, Severity};
use runner_core::terminal::sanitize;
use serde::Serialize;
use serde_json::Value;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

/// One golden comment of a record.
#[derive(Debug, Clone, PartialEq)]
pub struct Golden {
    pub comment: String,
    pub severity: Option<String>,
    /// `None`: unlabelled; `Some(None)`: the judge found no candidate; `Some(Some(text))`: the
    /// candidate the judge matched to it.
    pub label: Option<Option<String>>,
}

/// One pull request × tool: the golden comments and the tool's candidate issues.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub pr: String,
    pub project: Option<String>,
    pub tool: String,
    pub skipped: bool,
    pub golden: Vec<Golden>,
    pub candidates: Vec<String>,
    /// The judge's unmatched candidates, where the file lists them (its false positives).
    pub unmatched: Option<usize>,
}

/// One file of judgements.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgementFile {
    /// The file's name, as given.
    pub name: String,
    pub judge: String,
    pub records: Vec<Record>,
    /// blake3 of the file's bytes.
    pub digest: String,
}

impl JudgementFile {
    /// Reads a judgements file; every problem names the record it is in.
    pub fn read(path: &Path) -> Result<Self, String> {
        let shown = sanitize(&path.display().to_string());
        let text = crate::subject::files::read_text(path).map_err(|e| format!("cannot read `{shown}`: {}", sanitize(&e.to_string())))?;
        let digest = blake3::hash(text.as_bytes()).to_hex().to_string();
        let doc: Value = serde_json::from_str(&text).map_err(|e| format!("`{shown}` is not JSON: {}", sanitize(&e.to_string())))?;
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| path.display().to_string());
        Self::from_value(&doc, name, digest).map_err(|e| format!("`{shown}`: {}", sanitize(&e)))
    }

    /// Reads the format from a parsed document. The file's name and its judge's are made safe
    /// for a terminal: reports print them.
    pub fn from_value(doc: &Value, name: String, digest: String) -> Result<Self, String> {
        let name = sanitize(&name);
        let judge = sanitize(doc.get("judge").and_then(Value::as_str).unwrap_or(&name));
        let records = doc.get("records").and_then(Value::as_array).ok_or("no `records` array")?;
        let mut out = Vec::with_capacity(records.len());
        for (i, r) in records.iter().enumerate() {
            out.push(read_record(r).map_err(|e| format!("record {i}: {e}"))?);
        }
        Ok(Self { name, judge, records: out, digest })
    }

    /// Whether every golden comment carries a label.
    pub fn labelled(&self) -> bool {
        self.records.iter().flat_map(|r| &r.golden).all(|g| g.label.is_some()) && self.records.iter().any(|r| !r.golden.is_empty())
    }

    /// Golden-comment cells.
    pub fn cells(&self) -> usize {
        self.records.iter().map(|r| r.golden.len()).sum()
    }

    /// Distinct pull requests.
    pub fn pull_requests(&self) -> usize {
        self.records.iter().map(|r| r.pr.as_str()).collect::<BTreeSet<_>>().len()
    }

    /// Every text a matcher compares: golden comments and candidates, sorted and distinct.
    pub fn texts(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for r in &self.records {
            out.extend(r.golden.iter().map(|g| g.comment.clone()));
            out.extend(r.candidates.iter().cloned());
        }
        out
    }
}

fn text_list(v: &Value, key: &str) -> Result<Option<Vec<String>>, String> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => {
            items.iter().map(|t| t.as_str().map(str::to_string).ok_or(format!("`{key}` holds a non-string"))).collect::<Result<_, _>>().map(Some)
        }
        Some(_) => Err(format!("`{key}` is not an array")),
    }
}

fn read_record(r: &Value) -> Result<Record, String> {
    let text = |key: &str| r.get(key).and_then(Value::as_str).map(str::to_string);
    let pr = text("pr").ok_or("no `pr`")?;
    let tool = text("tool").ok_or("no `tool`")?;
    let golden_values = r.get("golden").and_then(Value::as_array).ok_or("no `golden` array")?;
    let mut golden = Vec::with_capacity(golden_values.len());
    for (i, g) in golden_values.iter().enumerate() {
        let comment = g.get("comment").and_then(Value::as_str).ok_or(format!("golden {i}: no `comment`"))?.to_string();
        let label = match g.get("matched_candidate") {
            None => None,
            Some(Value::Null) => Some(None),
            Some(Value::String(s)) => Some(Some(s.clone())),
            Some(_) => return Err(format!("golden {i}: `matched_candidate` is neither a text nor null")),
        };
        golden.push(Golden { comment, severity: g.get("severity").and_then(Value::as_str).map(str::to_string), label });
    }
    let unmatched = text_list(r, "unmatched_candidates")?;
    let candidates = match text_list(r, "candidates")? {
        Some(c) => c,
        None => {
            let mut c: Vec<String> = Vec::new();
            for m in golden.iter().filter_map(|g| g.label.as_ref().and_then(|l| l.as_ref())) {
                if !c.contains(m) {
                    c.push(m.clone());
                }
            }
            for u in unmatched.iter().flatten() {
                if !c.contains(u) {
                    c.push(u.clone());
                }
            }
            c
        }
    };
    Ok(Record {
        pr,
        project: text("project"),
        tool,
        skipped: r.get("skipped").and_then(Value::as_bool).unwrap_or(false),
        golden,
        candidates,
        unmatched: unmatched.map(|u| u.len()),
    })
}

/// One judge's recorded decision on one golden comment of one tool's review, as a replayed
/// judge (`[judges.NAME] kind = "replay"`) answers it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedDecision {
    /// Whether the judge found the comment in the review; `None` where it left it unlabelled
    /// (or two records with the same tool and comment disagree).
    pub found: Option<bool>,
    /// The candidate, in the judge's own reading of the review, it matched.
    pub candidate: Option<String>,
    /// The judge's false positives in that review: its candidates matched to no golden
    /// comment (the benchmark's FP).
    pub false_positives: usize,
}

/// A labelled file's decisions by tool and golden comment: what a replayed judge answers for
/// a run of that tool (the reviewer's name) on the oracle finding with that description.
/// The pull request is not part of the key: the benchmark's URLs name each tool's fork of it,
/// and a golden comment's text already identifies its pull request.
pub fn recorded_decisions(file: &JudgementFile) -> HashMap<(String, String), RecordedDecision> {
    let mut out: HashMap<(String, String), RecordedDecision> = HashMap::new();
    for r in &file.records {
        let false_positives = judge_prf(r).fp;
        for g in &r.golden {
            let decision = RecordedDecision { found: g.label.as_ref().map(Option::is_some), candidate: g.label.clone().flatten(), false_positives };
            match out.entry((r.tool.clone(), g.comment.clone())) {
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert(decision);
                }
                std::collections::hash_map::Entry::Occupied(mut o) if o.get().found != decision.found => o.get_mut().found = None,
                std::collections::hash_map::Entry::Occupied(_) => {}
            }
        }
    }
    out
}

/// Embedding vectors by text, where an embedder was used.
pub type Vectors = HashMap<String, Vec<f32>>;

/// The matcher's decision on one golden comment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decision {
    pub pr: String,
    pub tool: String,
    pub golden: String,
    pub found: bool,
    /// The candidate matched to it.
    pub candidate: Option<String>,
}

/// The most pairs one pass of [`match_record`] keeps (it holds at most twice as many at once,
/// 24 bytes each): far above an ordinary record's pairs, so those are matched in one pass.
pub const PASS_PAIRS: usize = 1 << 21;

/// A text prepared once for every pair it is in, as `rule.measure` compares it.
enum Prepared {
    /// Its content-word stems, interned and sorted.
    Stems(Vec<u32>),
    /// Its normalized text.
    Normalized(String),
}

impl Prepared {
    fn new(text: &str, measure: SimilarityMeasure, stems: &mut HashMap<String, u32>) -> Self {
        match measure {
            SimilarityMeasure::Tokens => {
                let mut ids: Vec<u32> = content_words(text)
                    .into_iter()
                    .map(|w| {
                        let next = stems.len() as u32;
                        *stems.entry(w).or_insert(next)
                    })
                    .collect();
                ids.sort_unstable();
                Self::Stems(ids)
            }
            SimilarityMeasure::Levenshtein => Self::Normalized(normalize_message(text)),
        }
    }

    /// `measure.similarity(report, description)` over the prepared texts: the same number.
    fn similarity(report: &Self, description: &Self) -> f64 {
        match (report, description) {
            (Self::Stems(a), Self::Stems(b)) => {
                if a.is_empty() || b.is_empty() {
                    return 0.0;
                }
                let (mut i, mut j, mut shared) = (0, 0, 0usize);
                while i < a.len() && j < b.len() {
                    match a[i].cmp(&b[j]) {
                        Ordering::Less => i += 1,
                        Ordering::Greater => j += 1,
                        Ordering::Equal => {
                            shared += 1;
                            i += 1;
                            j += 1;
                        }
                    }
                }
                2.0 * shared as f64 / (a.len() + b.len()) as f64
            }
            (Self::Normalized(a), Self::Normalized(b)) => strsim::normalized_levenshtein(a, b),
            _ => 0.0,
        }
    }
}

/// A pair a pass keeps: a golden comment and a candidate, graded.
#[derive(Debug, Clone, Copy)]
struct Pair {
    verdict: Verdict,
    /// Similarity, plus the embedding cosine where the rule uses one.
    strength: f64,
    golden: u32,
    candidate: u32,
}

/// The order pairs are taken in, best first: found before partial, then the stronger, then
/// golden and candidate order (at change level every gap is 0). No two pairs are equal.
fn best_first(a: &Pair, b: &Pair) -> Ordering {
    b.verdict.cmp(&a.verdict).then(b.strength.total_cmp(&a.strength)).then(a.golden.cmp(&b.golden)).then(a.candidate.cmp(&b.candidate))
}

/// Matches one record's candidates to its golden comments by `rule` (one to one, best
/// first): per golden comment, the index of the candidate found for it.
pub fn match_record(record: &Record, rule: &OracleRule, vectors: Option<&Vectors>) -> Vec<Option<usize>> {
    match_record_in_passes(record, rule, vectors, PASS_PAIRS).0
}

/// [`match_record`], keeping at most `budget` pairs a pass; also the most pairs held at once.
fn match_record_in_passes(record: &Record, rule: &OracleRule, vectors: Option<&Vectors>, budget: usize) -> (Vec<Option<usize>>, usize) {
    let budget = budget.max(1);
    let mut stems = HashMap::new();
    let golden: Vec<Prepared> = record.golden.iter().map(|g| Prepared::new(&g.comment, rule.measure, &mut stems)).collect();
    let candidates: Vec<Prepared> = record
        .candidates
        .iter()
        .map(|text| {
            let finding = Finding {
                id: String::new(),
                file: String::new(),
                line: 0,
                range: None,
                severity: Severity::Warning,
                category: Category::Bug,
                confidence: 1.0,
                message: text.clone(),
                suggestion: None,
                cursor_uri: None,
                evidence_lines: None,
            };
            Prepared::new(&report_text(&finding), rule.measure, &mut stems)
        })
        .collect();
    let golden_vectors: Vec<Option<&Vec<f32>>> = record.golden.iter().map(|g| vectors.and_then(|v| v.get(&g.comment))).collect();
    let candidate_vectors: Vec<Option<&Vec<f32>>> = record.candidates.iter().map(|c| vectors.and_then(|v| v.get(c))).collect();
    let grade = |oi: usize, ri: usize| -> Option<Pair> {
        let cosine = match (golden_vectors[oi], candidate_vectors[ri]) {
            (Some(g), Some(c)) => Some(crate::text::cosine(g, c)),
            _ => None,
        };
        let similarity = Prepared::similarity(&candidates[ri], &golden[oi]);
        let verdict = if text_evidence(similarity, cosine, rule) {
            Verdict::Found
        } else if similarity >= rule.partial_similarity {
            Verdict::Partial
        } else {
            return None;
        };
        let strength = similarity + if rule.embedding_similarity.is_some() { cosine.unwrap_or(0.0) } else { 0.0 };
        Some(Pair { verdict, strength, golden: oi as u32, candidate: ri as u32 })
    };

    let mut taken = vec![false; golden.len()];
    let mut used = vec![false; candidates.len()];
    let mut found: Vec<Option<usize>> = vec![None; golden.len()];
    let mut most = 0;
    loop {
        let free_golden: Vec<usize> = (0..golden.len()).filter(|&i| !taken[i]).collect();
        let free_candidates: Vec<usize> = (0..candidates.len()).filter(|&i| !used[i]).collect();
        if free_golden.is_empty() || free_candidates.is_empty() {
            break;
        }
        // The best `budget` pairs of the free ones (and some better than the worst of them):
        // pairs are dropped only when they are worse than a pair kept.
        let mut kept: Vec<Pair> = Vec::new();
        let mut worst: Option<Pair> = None;
        let mut dropped = false;
        for &oi in &free_golden {
            for &ri in &free_candidates {
                let Some(pair) = grade(oi, ri) else { continue };
                if worst.is_some_and(|w| best_first(&pair, &w) != Ordering::Less) {
                    dropped = true;
                    continue;
                }
                kept.push(pair);
                most = most.max(kept.len());
                if kept.len() >= 2 * budget {
                    kept.select_nth_unstable_by(budget - 1, best_first);
                    kept.truncate(budget);
                    worst = Some(kept[budget - 1]);
                    dropped = true;
                }
            }
        }
        kept.sort_unstable_by(best_first);
        for pair in &kept {
            let (oi, ri) = (pair.golden as usize, pair.candidate as usize);
            if !taken[oi] && !used[ri] {
                taken[oi] = true;
                used[ri] = true;
                if pair.verdict == Verdict::Found {
                    found[oi] = Some(ri);
                }
            }
        }
        if !dropped {
            break;
        }
    }
    (found, most)
}

/// Every record of a file matched: one decision per golden comment, in file order.
pub fn decide(file: &JudgementFile, rule: &OracleRule, vectors: Option<&Vectors>) -> Vec<Decision> {
    let mut out = Vec::with_capacity(file.cells());
    for r in &file.records {
        for (g, m) in r.golden.iter().zip(match_record(r, rule, vectors)) {
            out.push(Decision {
                pr: r.pr.clone(),
                tool: r.tool.clone(),
                golden: g.comment.clone(),
                found: m.is_some(),
                candidate: m.map(|i| r.candidates[i].clone()),
            });
        }
    }
    out
}

/// One tool's scores under the judge and under the matcher, over all its records.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolScores {
    pub tool: String,
    pub judge: Prf,
    pub matcher: Prf,
}

/// How the matcher's decisions compare with one judge's labels.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Agreement {
    pub cells: usize,
    /// Cells both call found, only the matcher, only the judge, neither.
    pub both: usize,
    pub matcher_only: usize,
    pub judge_only: usize,
    pub neither: usize,
    pub agreement: f64,
    pub kappa: Option<f64>,
    /// Of the matcher's finds, the share the judge also made.
    pub precision: Option<f64>,
    /// Of the judge's finds, the share the matcher also made.
    pub recall: Option<f64>,
    /// Spearman's ρ between the tools' recall under the judge and under the matcher.
    pub tool_recall_rho: Option<f64>,
    pub tool_f1_rho: Option<f64>,
    pub tools: Vec<ToolScores>,
}

fn share(n: usize, d: usize) -> Option<f64> {
    (d > 0).then(|| n as f64 / d as f64)
}

/// The judge's per-tool scores as the benchmark computes them: TP = golden comments matched,
/// FN = golden comments not matched, FP = candidates matched to none (the file's unmatched
/// candidates where it lists them).
fn judge_prf(r: &Record) -> Prf {
    let found: Vec<&String> = r.golden.iter().filter_map(|g| g.label.as_ref().and_then(|l| l.as_ref())).collect();
    let fp = r.unmatched.unwrap_or_else(|| r.candidates.iter().filter(|c| !found.contains(c)).count());
    Prf { tp: found.len(), fp, fn_: r.golden.len() - found.len() }
}

/// Compares the matcher's decisions with a labelled file's labels (`decisions` from [`decide`]).
pub fn agreement(file: &JudgementFile, decisions: &[Decision]) -> Agreement {
    let (mut both, mut matcher_only, mut judge_only, mut neither) = (0, 0, 0, 0);
    let (mut judge_labels, mut matcher_labels) = (Vec::new(), Vec::new());
    let mut tools: BTreeMap<&str, (Prf, Prf)> = BTreeMap::new();
    let mut at = 0;
    for r in &file.records {
        let entry = tools.entry(r.tool.as_str()).or_default();
        entry.0 += judge_prf(r);
        let mut found = 0;
        for g in &r.golden {
            let judge = matches!(g.label, Some(Some(_)));
            let matcher = decisions.get(at).is_some_and(|d| d.found);
            at += 1;
            found += usize::from(matcher);
            match (matcher, judge) {
                (true, true) => both += 1,
                (true, false) => matcher_only += 1,
                (false, true) => judge_only += 1,
                (false, false) => neither += 1,
            }
            judge_labels.push(judge);
            matcher_labels.push(matcher);
        }
        entry.1 += Prf { tp: found, fp: r.candidates.len() - found, fn_: r.golden.len() - found };
    }
    let cells = judge_labels.len();
    let tools: Vec<ToolScores> = tools.into_iter().map(|(tool, (judge, matcher))| ToolScores { tool: sanitize(tool), judge, matcher }).collect();
    let rho = |f: fn(&Prf) -> Option<f64>| {
        let (a, b): (Vec<f64>, Vec<f64>) = tools.iter().map(|t| (f(&t.judge).unwrap_or(0.0), f(&t.matcher).unwrap_or(0.0))).unzip();
        spearman(&a, &b)
    };
    Agreement {
        cells,
        both,
        matcher_only,
        judge_only,
        neither,
        agreement: share(both + neither, cells).unwrap_or(0.0),
        kappa: cohen_kappa(&judge_labels, &matcher_labels).map(|k| k.kappa),
        precision: share(both, both + matcher_only),
        recall: share(both, both + judge_only),
        tool_recall_rho: rho(Prf::recall),
        tool_f1_rho: rho(Prf::f1),
        tools,
    }
}

/// A golden-comment cell's identity across judges: the pull request, the tool, the comment
/// and which occurrence of that comment in the record it is.
type CellKey = (String, String, String, usize);

fn cell_labels(file: &JudgementFile) -> BTreeMap<CellKey, bool> {
    let mut out = BTreeMap::new();
    for r in &file.records {
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for g in &r.golden {
            let n = seen.entry(g.comment.as_str()).or_default();
            out.insert((r.pr.clone(), r.tool.clone(), g.comment.clone(), *n), matches!(g.label, Some(Some(_))));
            *n += 1;
        }
    }
    out
}

/// Two judges on the cells both labelled.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JudgePair {
    pub a: String,
    pub b: String,
    pub cells: usize,
    pub agreement: f64,
    pub kappa: Option<f64>,
}

/// The judges side by side: each pair's κ, and the majority against the matcher.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Jury {
    pub judges: Vec<String>,
    pub pairs: Vec<JudgePair>,
    /// Cells every judge labelled.
    pub cells: usize,
    /// Cells where the judges split evenly (no majority; counted as not found).
    pub ties: usize,
    /// The matcher against the majority of the judges, on the cells every judge labelled.
    pub matcher_vs_majority: Option<f64>,
    pub matcher_vs_majority_agreement: f64,
    /// Each judge against the majority of the others (for three judges, the other two agreeing).
    pub judge_vs_majority: Vec<(String, Option<f64>)>,
}

/// The judges of several labelled files side by side, with the matcher's decisions per file.
pub fn jury(files: &[&JudgementFile], decisions: &[&[Decision]]) -> Option<Jury> {
    if files.len() < 2 {
        return None;
    }
    let labels: Vec<BTreeMap<CellKey, bool>> = files.iter().map(|f| cell_labels(f)).collect();
    let mut pairs = Vec::new();
    for i in 0..files.len() {
        for j in i + 1..files.len() {
            let (a, b): (Vec<bool>, Vec<bool>) = labels[i].iter().filter_map(|(k, &x)| labels[j].get(k).map(|&y| (x, y))).unzip();
            let same = a.iter().zip(&b).filter(|(x, y)| x == y).count();
            pairs.push(JudgePair {
                a: files[i].judge.clone(),
                b: files[j].judge.clone(),
                cells: a.len(),
                agreement: share(same, a.len()).unwrap_or(0.0),
                kappa: cohen_kappa(&a, &b).map(|k| k.kappa),
            });
        }
    }
    // The matcher's decision per cell, from the first file's records (candidate texts differ a
    // little between judges, so the matcher is read from the first file).
    let mut matcher: BTreeMap<CellKey, bool> = BTreeMap::new();
    {
        let mut at = 0;
        for r in &files[0].records {
            let mut seen: HashMap<&str, usize> = HashMap::new();
            for g in &r.golden {
                let n = seen.entry(g.comment.as_str()).or_default();
                matcher.insert((r.pr.clone(), r.tool.clone(), g.comment.clone(), *n), decisions[0].get(at).is_some_and(|d| d.found));
                *n += 1;
                at += 1;
            }
        }
    }
    let common: Vec<&CellKey> = labels[0].keys().filter(|k| labels.iter().all(|l| l.contains_key(*k))).collect();
    let (mut majority, mut ties) = (Vec::new(), 0);
    for k in &common {
        let yes = labels.iter().filter(|l| l.get(*k) == Some(&true)).count();
        let no = labels.len() - yes;
        ties += usize::from(yes == no);
        majority.push(yes > no);
    }
    let ours: Vec<bool> = common.iter().map(|k| matcher.get(*k).copied().unwrap_or(false)).collect();
    let same = ours.iter().zip(&majority).filter(|(x, y)| x == y).count();
    let judge_vs_majority = (0..files.len())
        .map(|i| {
            let (mine, others): (Vec<bool>, Vec<bool>) = common
                .iter()
                .map(|k| {
                    let yes = labels.iter().enumerate().filter(|(j, l)| *j != i && l.get(*k) == Some(&true)).count();
                    (labels[i].get(*k) == Some(&true), 2 * yes > labels.len() - 1)
                })
                .unzip();
            (files[i].judge.clone(), cohen_kappa(&mine, &others).map(|k| k.kappa))
        })
        .collect();
    Some(Jury {
        judges: files.iter().map(|f| f.judge.clone()).collect(),
        pairs,
        cells: common.len(),
        ties,
        matcher_vs_majority: cohen_kappa(&ours, &majority).map(|k| k.kappa),
        matcher_vs_majority_agreement: share(same, common.len()).unwrap_or(0.0),
        judge_vs_majority,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::matching::matcher::match_case_with;
    use crate::ground_truth::oracle::OracleFinding;
    use serde_json::json;

    /// The record matched by [`match_case_with`] itself, every pair held: the reference.
    fn reference(record: &Record, rule: &OracleRule, vectors: Option<&Vectors>) -> Vec<Option<usize>> {
        let oracle: Vec<OracleFinding> = record
            .golden
            .iter()
            .enumerate()
            .map(|(i, g)| OracleFinding {
                id: format!("G{}", i + 1),
                case_id: None,
                description: g.comment.clone(),
                file: None,
                line: None,
                range: None,
                category: None,
                severity: None,
                blocking: false,
                severity_label: g.severity.clone(),
                resolved: None,
                class: None,
                fixed: None,
            })
            .collect();
        let expected: Vec<&OracleFinding> = oracle.iter().collect();
        let reported: Vec<Finding> = record
            .candidates
            .iter()
            .enumerate()
            .map(|(i, text)| Finding {
                id: format!("C{}", i + 1),
                file: String::new(),
                line: 0,
                range: None,
                severity: Severity::Warning,
                category: Category::Bug,
                confidence: 1.0,
                message: text.clone(),
                suggestion: None,
                cursor_uri: None,
                evidence_lines: None,
            })
            .collect();
        let cosine = |oi: usize, ri: usize| -> Option<f64> {
            let v = vectors?;
            Some(crate::text::cosine(v.get(&record.golden[oi].comment)?, v.get(&record.candidates[ri])?))
        };
        let case = match_case_with(&reported, &expected, rule, cosine);
        case.verdicts.iter().map(|v| if v.verdict == Verdict::Found { v.reported } else { None }).collect()
    }

    /// A record of `n` golden comments and `m` candidates drawn from a few words (so many
    /// pairs tie), by a seeded xorshift.
    fn random_record(seed: u64, n: usize, m: usize, words: usize) -> Record {
        const VOCABULARY: [&str; 12] =
            ["lock", "released", "error", "cache", "locale", "negative", "slicing", "queryset", "timeout", "retry", "buffer", "overflow"];
        let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut text = |_: usize| (0..1 + next() % words as u64).map(|_| VOCABULARY[(next() % VOCABULARY.len() as u64) as usize]).collect::<Vec<_>>().join(" ");
        let golden = (0..n).map(|i| Golden { comment: text(i), severity: None, label: None }).collect();
        let candidates = (0..m).map(&mut text).collect();
        Record { pr: "p".into(), project: None, tool: "t".into(), skipped: false, golden, candidates, unmatched: None }
    }

    #[test]
    fn passes_over_few_pairs_take_exactly_the_pairs_the_matcher_takes() {
        let lexical = OracleRule::default();
        let levenshtein = OracleRule { measure: SimilarityMeasure::Levenshtein, ..OracleRule::default() };
        let embedded = OracleRule::default_with_embeddings();
        for seed in 1..=40u64 {
            let (n, m) = (1 + (seed as usize * 7) % 13, 1 + (seed as usize * 5) % 17);
            let record = random_record(seed, n, m, 1 + seed as usize % 4);
            // Vectors for all but a few texts, from the same stream of words.
            let vectors: Vectors = record
                .golden
                .iter()
                .map(|g| g.comment.clone())
                .chain(record.candidates.iter().cloned())
                .filter(|t| t.len() % 5 != 0)
                .map(|t| {
                    let v = t.bytes().take(4).map(|b| f32::from(b % 7) - 3.0).collect::<Vec<f32>>();
                    (t, [v, vec![0.0; 4]].concat()[..4].to_vec())
                })
                .collect();
            for (rule, vectors) in [(&lexical, None), (&levenshtein, None), (&embedded, Some(&vectors))] {
                let expected = reference(&record, rule, vectors);
                for budget in [1, 2, 3, 7, 50, PASS_PAIRS] {
                    let (got, most) = match_record_in_passes(&record, rule, vectors, budget);
                    assert_eq!(got, expected, "seed {seed}, budget {budget}, {:?}", rule.measure);
                    assert!(most <= 2 * budget, "{most} pairs held with a budget of {budget}");
                }
            }
            assert_eq!(match_record(&record, &lexical, None), reference(&record, &lexical, None));
        }
    }

    #[test]
    fn a_record_of_many_alike_texts_is_matched_holding_a_bounded_number_of_pairs() {
        // 300 × 300 pairs, every one of them found with the same similarity: the matcher's
        // order is golden then candidate order, so golden i takes candidate i.
        let text = "the lock is never released on error";
        let record = Record {
            pr: "p".into(),
            project: None,
            tool: "t".into(),
            skipped: false,
            golden: (0..300).map(|_| Golden { comment: text.into(), severity: None, label: None }).collect(),
            candidates: vec![text.to_string(); 300],
            unmatched: None,
        };
        let rule = OracleRule::default();
        let (got, most) = match_record_in_passes(&record, &rule, None, 1000);
        assert_eq!(got, (0..300).map(Some).collect::<Vec<_>>());
        assert_eq!(got, reference(&record, &rule, None));
        assert!(most <= 2000, "at most twice the budget held, not the 90,000 pairs: {most}");
    }

    #[test]
    fn names_and_read_errors_reach_the_terminal_inert() {
        let f = JudgementFile::from_value(
            &json!({"judge": "j\u{1b}]0;x\u{7}", "records": [{"pr": "p", "tool": "t\u{202e}ool", "golden": [{"comment": "a b c", "matched_candidate": "a b c"}]}]}),
            "f\u{0}.json".into(),
            String::new(),
        )
        .expect("reads");
        assert_eq!((f.name.as_str(), f.judge.as_str()), ("f\u{fffd}.json", "j\u{fffd}]0;x\u{fffd}"));
        let a = agreement(&f, &decide(&f, &OracleRule::default(), None));
        assert_eq!(a.tools[0].tool, "t\u{fffd}ool");
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("bad\u{1b}[31m.json");
        std::fs::write(&path, "{\"records\": [{\"pr\": 1}]}").expect("write");
        let err = JudgementFile::read(&path).expect_err("no pr");
        assert!(err.contains("bad\u{fffd}[31m.json") && !err.contains('\u{1b}'), "{err}");
        std::fs::write(&path, "[\"\u{1b}[2J\"").expect("write");
        let err = JudgementFile::read(&path).expect_err("not JSON");
        assert!(!err.contains('\u{1b}'), "{err}");
    }

    fn file(records: Value) -> JudgementFile {
        JudgementFile::from_value(&json!({"judge": "j", "records": records}), "j.json".into(), String::new()).expect("reads")
    }

    #[test]
    fn candidates_are_the_matched_then_the_unmatched_each_once_and_labels_may_be_absent() {
        let f = file(json!([
            {"pr": "p", "tool": "t", "skipped": false, "golden": [
                {"comment": "a", "severity": "High", "matched_candidate": "x"},
                {"comment": "b", "severity": "Low", "matched_candidate": "x"},
                {"comment": "c", "severity": "Low", "matched_candidate": null}],
             "unmatched_candidates": ["y"]}
        ]));
        assert_eq!(f.records[0].candidates, vec!["x".to_string(), "y".to_string()]);
        assert!(f.labelled());
        let g = file(json!([{"pr": "p", "tool": "t", "golden": [{"comment": "a"}], "candidates": ["z"]}]));
        assert!(!g.labelled());
        assert_eq!(g.records[0].candidates, vec!["z".to_string()]);
        let bad = JudgementFile::from_value(&json!({"records": [{"pr": "p", "tool": "t", "golden": [{"comment": 1}]}]}), "b".into(), String::new());
        assert_eq!(bad.err().as_deref(), Some("record 0: golden 0: no `comment`"));
    }

    #[test]
    fn the_matcher_is_one_to_one_and_measured_against_the_judge_by_hand() {
        let f = file(json!([
            {"pr": "p1", "tool": "t", "golden": [
                {"comment": "negative slicing of a Django queryset raises", "matched_candidate": "Django querysets reject negative slicing"},
                {"comment": "the lock is never released on error", "matched_candidate": null}],
             "unmatched_candidates": ["typo in docstring"]},
            {"pr": "p2", "tool": "t", "golden": [
                {"comment": "cache key ignores the locale", "matched_candidate": "the cache key ignores locale"}],
             "unmatched_candidates": []}
        ]));
        let rule = OracleRule::default();
        let d = decide(&f, &rule, None);
        assert_eq!(d.iter().map(|d| d.found).collect::<Vec<_>>(), vec![true, false, true]);
        assert_eq!(d[0].candidate.as_deref(), Some("Django querysets reject negative slicing"));
        let a = agreement(&f, &d);
        assert_eq!((a.both, a.matcher_only, a.judge_only, a.neither), (2, 0, 0, 1));
        assert_eq!(a.kappa, Some(1.0));
        assert_eq!(a.tools[0].judge, Prf { tp: 2, fp: 1, fn_: 1 });
        assert_eq!(a.tools[0].matcher, Prf { tp: 2, fp: 1, fn_: 1 });
    }

    #[test]
    fn judges_side_by_side_with_their_majority() {
        let rec = |found: [bool; 2]| {
            json!([{"pr": "p", "tool": "t", "golden": [
                {"comment": "a b c", "matched_candidate": if found[0] { json!("a b c") } else { Value::Null }},
                {"comment": "d e f", "matched_candidate": if found[1] { json!("d e f") } else { Value::Null }}]}])
        };
        let (a, b, c) = (file(rec([true, false])), file(rec([true, true])), file(rec([true, false])));
        let d = decide(&a, &OracleRule::default(), None);
        let j = jury(&[&a, &b, &c], &[&d, &d, &d]).expect("three judges");
        assert_eq!(j.cells, 2);
        assert_eq!(j.pairs.len(), 3);
        assert_eq!(j.pairs[1].agreement, 1.0, "a and c agree everywhere");
        assert_eq!(j.pairs[0].agreement, 0.5);
        assert_eq!(j.ties, 0);
    }
}
