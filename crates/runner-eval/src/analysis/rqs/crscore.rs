//! CRScore's human study (NAACL 2025, arXiv 2409.19801) as a check of runner's alignment
//! scores against people: loads the released files (GPT-4o pseudo-references for 291 diffs,
//! two annotators' 1–5 scores of reviews by 10 systems), scores every review with
//! [`alignment`](crate::analysis::rqs::alignment) under a caller's embeddings, and reports the Spearman
//! correlation with the human scores at comment and system level beside the published
//! figures. The one module of `analysis` that reads files (the study's own).
//!
//! The loading follows the authors' public code (`load_human_eval_samples` and
//! `human_eval_data_results` in `src/metrics/claim_based/relevance_score.py`,
//! `scripts/compare_our_metric_with_human_annot.py`):
//!
//! - per language, in the order Python, Java, JavaScript, the rows of
//!   `{lang}_marcus_review_qual_final.csv` are read; data row `i` (0-based, header excluded)
//!   is Marcus's row while `i ≤ 499` (`≤ 503` for JavaScript: their `501-2`, `505-2`) and
//!   Atharva's row `i` after — so the first annotator is Marcus;
//! - `index` and `diff` are carried forward from the last row that has an `index`;
//! - a row is a scored review when its `Rel (F)` is present and its system is not `msg` (the
//!   CodeReviewer reference review, left out of the correlations); its claims are those of
//!   the `gpt-4o.jsonl` row whose `code_change` is the diff's text, byte for byte;
//! - the authors' values file lists, per system, the scored reviews of that system in this
//!   order (291 per system over the three languages).
//!
//! The authors correlate every metric dimension with the human `Rel (F)` score (their
//! `model_to_GT_rel`); that is what the recomputed figures (0.492 P, 0.531 R, 0.531 F, 0.933
//! at system level with F) measure, over all three languages. Runner reports that and, beside
//! it, each dimension against the human score of the same dimension.
//!
//! Two differences from the authors' pipeline, both on the pseudo-reference side: runner's
//! [`parse_claims`](crate::text::parse_claims) recognises headers the authors' parser misses
//! (23 of the 291 responses), and no static-analysis smells are added (the authors attach the
//! smells of CodeReviewer test items `test0`…`test290` by the claims file's row number, which
//! is not the diff's `index`; the released data holds no smells for these diffs).

use crate::agreement::spearman;
use crate::analysis::rqs::alignment::{align, calibrate_tau, means, Alignment, AlignmentMeans, Calibration};
use crate::text::{parse_claims, review_sentences};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// The study's languages in the authors' order, each with the last data row (0-based) taken
/// from the first annotator.
pub const LANGUAGES: [(&str, usize); 3] = [("py", 499), ("java", 499), ("js", 503)];
/// The annotator whose rows come first (the authors' `marcus_annot`).
pub const FIRST_ANNOTATOR: &str = "marcus";
/// The annotator whose rows follow (the authors' `atharva_annot`).
pub const SECOND_ANNOTATOR: &str = "atharva";
/// The reference system, not scored.
pub const REFERENCE_SYSTEM: &str = "msg";

#[derive(Debug, thiserror::Error)]
pub enum CrscoreError {
    #[error(
        "CRScore data: cannot read `{path}`: {source} (the directory must hold CRScore's released files: gpt-4o.jsonl and {{py,java}}_{{marcus,atharva}}_review_qual_final.csv)"
    )]
    Read { path: PathBuf, source: std::io::Error },
    #[error("CRScore data: `{path}`: {source}")]
    Csv { path: PathBuf, source: csv::Error },
    #[error("CRScore data: `{path}` line {line}: {message}")]
    Format { path: PathBuf, line: u64, message: String },
    #[error("CRScore data: `{path}` is present but `{missing}` is not: a language needs both annotators' files")]
    HalfLanguage { path: PathBuf, missing: PathBuf },
    #[error("CRScore data: {lang} data row {row}: its diff is not the `code_change` of any row of gpt-4o.jsonl")]
    UnknownDiff { lang: String, row: usize },
    #[error("no embedding for the text {text:?}: embed every text `crscore::texts` lists before evaluating")]
    MissingEmbedding { text: String },
    #[error("embeddings of different dimensions ({first} and {other}): use one embedder for all texts")]
    Dimension { first: usize, other: usize },
    #[error("τ cannot be calibrated: no reference review has both sentences and claims; pass τ explicitly")]
    NoCalibration,
    #[error("scores: no values for system `{system}`")]
    MissingSystem { system: String },
    #[error("scores: system `{system}` has {got} `{dimension}` values, the study has {need} reviews of it")]
    ScoresTooShort { system: String, dimension: &'static str, got: usize, need: usize },
}

/// One scored review of the study.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HumanItem {
    /// `py`, `java` or `js`.
    pub lang: String,
    /// Data row (0-based) in the annotation files.
    pub row: usize,
    /// Whose row it is ([`FIRST_ANNOTATOR`] or [`SECOND_ANNOTATOR`]).
    pub annotator: &'static str,
    /// The CodeReviewer test-set index (`index` column).
    pub index: u64,
    /// The `id` of the gpt-4o.jsonl row with this diff.
    pub diff_id: u64,
    /// The system's name without `_pred` (as in the authors' values file).
    pub system: String,
    pub review: String,
    /// Human `Con (P)`, 1–5, when given.
    pub con: Option<f64>,
    /// Human `Comp (R)`, 1–5, when given.
    pub comp: Option<f64>,
    /// Human `Rel (F)`, 1–5.
    pub rel: f64,
}

/// A reference review (system `msg`): the input of τ's calibration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReferenceReview {
    pub lang: String,
    pub row: usize,
    pub index: u64,
    /// `None` when gpt-4o.jsonl has no claims for the diff.
    pub diff_id: Option<u64>,
    pub review: String,
}

/// The loaded study.
#[derive(Debug, Clone, PartialEq)]
pub struct CrscoreData {
    /// The languages loaded, in order.
    pub languages: Vec<String>,
    /// Claims per gpt-4o.jsonl `id`, parsed with [`parse_claims`].
    pub claims: BTreeMap<u64, Vec<String>>,
    /// Scored reviews in the authors' order.
    pub items: Vec<HumanItem>,
    /// Reference reviews, one per diff.
    pub references: Vec<ReferenceReview>,
}

#[derive(Deserialize)]
struct ClaimRow {
    id: u64,
    code_change: String,
    response: String,
}

fn read(path: &Path) -> Result<String, CrscoreError> {
    std::fs::read_to_string(path).map_err(|source| CrscoreError::Read { path: path.to_path_buf(), source })
}

/// The rows of one annotation file.
struct Sheet {
    path: PathBuf,
    /// (line of the record's start, the 15 cells).
    rows: Vec<(u64, csv::StringRecord)>,
    col: BTreeMap<&'static str, usize>,
}

const COLUMNS: [&str; 7] = ["index", "diff", "review", "system", "Con (P)", "Comp (R)", "Rel (F)"];

impl Sheet {
    fn load(path: &Path) -> Result<Sheet, CrscoreError> {
        let csv_err = |source| CrscoreError::Csv { path: path.to_path_buf(), source };
        let file = std::fs::File::open(path).map_err(|source| CrscoreError::Read { path: path.to_path_buf(), source })?;
        let mut reader = csv::ReaderBuilder::new().has_headers(true).from_reader(file);
        let headers = reader.headers().map_err(csv_err)?.clone();
        let mut col = BTreeMap::new();
        for name in COLUMNS {
            let at = headers.iter().position(|h| h == name).ok_or_else(|| CrscoreError::Format {
                path: path.to_path_buf(),
                line: 1,
                message: format!("no column `{name}`"),
            })?;
            col.insert(name, at);
        }
        let mut rows = Vec::new();
        for record in reader.records() {
            let record = record.map_err(csv_err)?;
            let line = record.position().map_or(0, |p| p.line());
            rows.push((line, record));
        }
        Ok(Sheet { path: path.to_path_buf(), rows, col })
    }

    fn cell<'a>(&self, record: &'a csv::StringRecord, name: &str) -> &'a str {
        self.col.get(name).and_then(|&i| record.get(i)).unwrap_or("")
    }

    /// A 1–5 score; an empty cell (the files' only missing marker, read as NaN by pandas) is
    /// `None`.
    fn score(&self, line: u64, record: &csv::StringRecord, name: &str) -> Result<Option<f64>, CrscoreError> {
        let cell = self.cell(record, name).trim();
        if cell.is_empty() {
            return Ok(None);
        }
        cell.parse::<f64>().map(Some).map_err(|_| CrscoreError::Format {
            path: self.path.clone(),
            line,
            message: format!("`{name}` is {cell:?}, not a number"),
        })
    }
}

impl CrscoreData {
    /// Loads the study from `dir`: gpt-4o.jsonl and the annotation files of Python and Java
    /// (required) and JavaScript (when both of its files are there).
    pub fn load(dir: &Path) -> Result<CrscoreData, CrscoreError> {
        let js = LANGUAGES[2].0;
        let js_files = [FIRST_ANNOTATOR, SECOND_ANNOTATOR].map(|a| sheet_path(dir, js, a));
        let langs: Vec<&str> = match js_files.iter().map(|p| p.exists()).collect::<Vec<_>>().as_slice() {
            [true, true] => vec!["py", "java", "js"],
            [false, false] => vec!["py", "java"],
            [true, false] => return Err(CrscoreError::HalfLanguage { path: js_files[0].clone(), missing: js_files[1].clone() }),
            _ => return Err(CrscoreError::HalfLanguage { path: js_files[1].clone(), missing: js_files[0].clone() }),
        };
        Self::load_languages(dir, &langs)
    }

    /// Loads the study for the given languages (a subset of `py`, `java`, `js`, read in the
    /// authors' order whatever the order given).
    pub fn load_languages(dir: &Path, languages: &[&str]) -> Result<CrscoreData, CrscoreError> {
        let claims_path = dir.join("gpt-4o.jsonl");
        let text = read(&claims_path)?;
        let mut claims = BTreeMap::new();
        let mut by_diff: HashMap<String, u64> = HashMap::new();
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let row: ClaimRow =
                serde_json::from_str(line).map_err(|e| CrscoreError::Format { path: claims_path.clone(), line: n as u64 + 1, message: e.to_string() })?;
            claims.insert(row.id, parse_claims(&row.response));
            by_diff.insert(row.code_change, row.id);
        }
        let mut data = CrscoreData { languages: Vec::new(), claims, items: Vec::new(), references: Vec::new() };
        for (lang, last_first) in LANGUAGES {
            if !languages.contains(&lang) {
                continue;
            }
            data.languages.push(lang.to_string());
            let first = Sheet::load(&sheet_path(dir, lang, FIRST_ANNOTATOR))?;
            let second = Sheet::load(&sheet_path(dir, lang, SECOND_ANNOTATOR))?;
            let (mut index, mut diff): (Option<u64>, Option<String>) = (None, None);
            for (i, (line, record)) in first.rows.iter().enumerate() {
                let (sheet, annotator, line, record) = if i > last_first {
                    match second.rows.get(i) {
                        Some((l, r)) => (&second, SECOND_ANNOTATOR, *l, r),
                        None => {
                            return Err(CrscoreError::Format {
                                path: second.path.clone(),
                                line: 0,
                                message: format!("has no data row {i}, which {}'s file has", FIRST_ANNOTATOR),
                            });
                        }
                    }
                } else {
                    (&first, FIRST_ANNOTATOR, *line, record)
                };
                let cell_index = sheet.cell(record, "index").trim();
                if !cell_index.is_empty() {
                    let parsed = cell_index.parse::<f64>().ok().filter(|v| v.fract() == 0.0 && *v >= 0.0);
                    let Some(parsed) = parsed else {
                        return Err(CrscoreError::Format { path: sheet.path.clone(), line, message: format!("`index` is {cell_index:?}, not a number") });
                    };
                    index = Some(parsed as u64);
                    diff = Some(sheet.cell(record, "diff").to_string());
                }
                let system = sheet.cell(record, "system");
                let (Some(idx), Some(d)) = (index, diff.as_ref()) else {
                    continue;
                };
                let review = sheet.cell(record, "review").to_string();
                if system == REFERENCE_SYSTEM {
                    data.references.push(ReferenceReview { lang: lang.to_string(), row: i, index: idx, diff_id: by_diff.get(d).copied(), review });
                    continue;
                }
                let Some(rel) = sheet.score(line, record, "Rel (F)")? else {
                    continue;
                };
                if system.is_empty() {
                    continue;
                }
                let diff_id = *by_diff.get(d).ok_or_else(|| CrscoreError::UnknownDiff { lang: lang.to_string(), row: i })?;
                data.items.push(HumanItem {
                    lang: lang.to_string(),
                    row: i,
                    annotator,
                    index: idx,
                    diff_id,
                    system: system.strip_suffix("_pred").unwrap_or(system).to_string(),
                    review,
                    con: sheet.score(line, record, "Con (P)")?,
                    comp: sheet.score(line, record, "Comp (R)")?,
                    rel,
                });
            }
        }
        Ok(data)
    }

    /// The systems, in order of first appearance.
    pub fn systems(&self) -> Vec<String> {
        let mut seen = BTreeSet::new();
        self.items.iter().filter(|i| seen.insert(i.system.clone())).map(|i| i.system.clone()).collect()
    }

    fn claims_of(&self, diff_id: u64) -> &[String] {
        self.claims.get(&diff_id).map_or(&[], Vec::as_slice)
    }
}

fn sheet_path(dir: &Path, lang: &str, annotator: &str) -> PathBuf {
    dir.join(format!("{lang}_{annotator}_review_qual_final.csv"))
}

/// Every distinct text [`evaluate`] embeds, sorted: the sentences of the scored reviews and
/// of the reference reviews with claims, and the claims of their diffs.
pub fn texts(data: &CrscoreData) -> Vec<String> {
    let mut out = BTreeSet::new();
    let mut diffs = BTreeSet::new();
    for item in &data.items {
        out.extend(review_sentences(&item.review));
        diffs.insert(item.diff_id);
    }
    for r in &data.references {
        if let Some(id) = r.diff_id {
            out.extend(review_sentences(&r.review));
            diffs.insert(id);
        }
    }
    for id in diffs {
        out.extend(data.claims_of(id).iter().cloned());
    }
    out.into_iter().collect()
}

/// Looks texts up, checking that every vector has one dimension.
struct Lookup<'a> {
    embeddings: &'a HashMap<String, Vec<f32>>,
    dimension: Option<usize>,
}

impl<'a> Lookup<'a> {
    fn get(&mut self, text: &str) -> Result<&'a [f32], CrscoreError> {
        let v = self.embeddings.get(text).ok_or_else(|| CrscoreError::MissingEmbedding { text: text.to_string() })?;
        match self.dimension {
            None => self.dimension = Some(v.len()),
            Some(d) if d != v.len() => return Err(CrscoreError::Dimension { first: d, other: v.len() }),
            Some(_) => {}
        }
        Ok(v.as_slice())
    }

    fn all(&mut self, texts: &[String]) -> Result<Vec<&'a [f32]>, CrscoreError> {
        texts.iter().map(|t| self.get(t)).collect()
    }
}

/// τ calibrated the CRScore way on the study's reference reviews (system `msg`) against
/// their diffs' claims (see [`calibrate_tau`]). The authors calibrated on CodeReviewer
/// reference reviews outside the study; those are not in the released files, so runner uses
/// the study's own reference reviews, which the correlations leave out.
pub fn calibrate(data: &CrscoreData, embeddings: &HashMap<String, Vec<f32>>) -> Result<Calibration, CrscoreError> {
    let mut lookup = Lookup { embeddings, dimension: None };
    let mut items = Vec::new();
    for r in &data.references {
        let Some(id) = r.diff_id else { continue };
        items.push((lookup.all(&review_sentences(&r.review))?, lookup.all(data.claims_of(id))?));
    }
    calibrate_tau(&items).ok_or(CrscoreError::NoCalibration)
}

/// Every scored review aligned at `tau`, in [`CrscoreData::items`] order.
pub fn score_reviews(data: &CrscoreData, embeddings: &HashMap<String, Vec<f32>>, tau: f64) -> Result<Vec<Alignment>, CrscoreError> {
    let mut lookup = Lookup { embeddings, dimension: None };
    data.items
        .iter()
        .map(|item| {
            let sentences = lookup.all(&review_sentences(&item.review))?;
            let claims = lookup.all(data.claims_of(item.diff_id))?;
            Ok(align(&sentences, &claims, tau))
        })
        .collect()
}

/// One system's scores for its reviews, in [`CrscoreData::items`] order (the authors' values
/// file's shape: `{system: {P: [...], R: [...], F: [...]}}`; other keys are ignored).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemScores {
    #[serde(rename = "P")]
    pub conciseness: Vec<f64>,
    #[serde(rename = "R")]
    pub comprehensiveness: Vec<f64>,
    #[serde(rename = "F")]
    pub relevance: Vec<f64>,
}

/// Reads a values file in the authors' shape (`human_eval_rel_scores_thresh_0.7314.json`).
pub fn load_scores(path: &Path) -> Result<BTreeMap<String, SystemScores>, CrscoreError> {
    serde_json::from_str(&read(path)?).map_err(|e| CrscoreError::Format { path: path.to_path_buf(), line: e.line() as u64, message: e.to_string() })
}

/// One metric dimension's correlation with the human scores.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DimensionCorrelation {
    /// `conciseness`, `comprehensiveness` or `relevance`.
    pub dimension: &'static str,
    /// Spearman's ρ with the human `Rel (F)` score (the authors' protocol).
    pub vs_human_relevance: Option<f64>,
    /// Pairs (reviews, or systems at system level) behind it.
    pub items: usize,
    /// Spearman's ρ with the human score of the same dimension (`Con (P)`, `Comp (R)`,
    /// `Rel (F)`), over the reviews that have it.
    pub vs_human_same: Option<f64>,
    pub items_same: usize,
}

/// One system's mean scores, metric and human.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SystemMeans {
    pub system: String,
    pub reviews: usize,
    pub conciseness: f64,
    pub comprehensiveness: f64,
    pub relevance: f64,
    /// Human means (1–5) over the reviews that have the score.
    pub human_con: Option<f64>,
    pub human_comp: Option<f64>,
    pub human_rel: f64,
}

/// Metric scores correlated with the study's human scores.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Correlations {
    pub languages: Vec<String>,
    pub systems: usize,
    pub reviews: usize,
    /// Per review.
    pub comment_level: Vec<DimensionCorrelation>,
    /// Per system: mean metric score against mean human score, ranked over the systems.
    pub system_level: Vec<DimensionCorrelation>,
    pub per_system: Vec<SystemMeans>,
    /// Values in the scores beyond the study's reviews of a system (in the authors' file, the
    /// JavaScript reviews when JavaScript is not loaded), not used.
    pub unused_scores: usize,
}

const DIMENSIONS: [&str; 3] = ["conciseness", "comprehensiveness", "relevance"];

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Correlates per-system scores (each system's values for its reviews, in
/// [`CrscoreData::items`] order; longer vectors have their tail ignored and counted) with the
/// human scores. Every system of the study must have scores.
pub fn correlate_scores(data: &CrscoreData, scores: &BTreeMap<String, SystemScores>) -> Result<Correlations, CrscoreError> {
    let systems = data.systems();
    let mut next: BTreeMap<&str, usize> = BTreeMap::new();
    // Per review: metric [P, R, F] and human [Con, Comp, Rel].
    let mut metric: Vec<[f64; 3]> = Vec::with_capacity(data.items.len());
    for item in &data.items {
        let s = scores.get(&item.system).ok_or_else(|| CrscoreError::MissingSystem { system: item.system.clone() })?;
        let k = next.entry(item.system.as_str()).or_default();
        let mut v = [0.0; 3];
        for (d, values) in [&s.conciseness, &s.comprehensiveness, &s.relevance].into_iter().enumerate() {
            v[d] = *values.get(*k).ok_or_else(|| CrscoreError::ScoresTooShort {
                system: item.system.clone(),
                dimension: ["P", "R", "F"][d],
                got: values.len(),
                need: data.items.iter().filter(|i| i.system == item.system).count(),
            })?;
        }
        *k += 1;
        metric.push(v);
    }
    let unused_scores =
        systems.iter().map(|sys| scores.get(sys).map_or(0, |s| s.relevance.len().saturating_sub(next.get(sys.as_str()).copied().unwrap_or(0)))).sum();
    let human = |item: &HumanItem, d: usize| [item.con, item.comp, Some(item.rel)][d];

    let comment_level = (0..3)
        .map(|d| {
            let x: Vec<f64> = metric.iter().map(|m| m[d]).collect();
            let y: Vec<f64> = data.items.iter().map(|i| i.rel).collect();
            let (xs, ys): (Vec<f64>, Vec<f64>) = metric.iter().zip(&data.items).filter_map(|(m, i)| human(i, d).map(|h| (m[d], h))).unzip();
            DimensionCorrelation {
                dimension: DIMENSIONS[d],
                vs_human_relevance: spearman(&x, &y),
                items: x.len(),
                vs_human_same: spearman(&xs, &ys),
                items_same: xs.len(),
            }
        })
        .collect();

    let per_system: Vec<SystemMeans> = systems
        .iter()
        .map(|sys| {
            let rows: Vec<(&[f64; 3], &HumanItem)> = metric.iter().zip(&data.items).filter(|(_, i)| &i.system == sys).collect();
            let m = |d: usize| mean(&rows.iter().map(|(m, _)| m[d]).collect::<Vec<_>>()).unwrap_or(0.0);
            let h = |d: usize| mean(&rows.iter().filter_map(|(_, i)| human(i, d)).collect::<Vec<_>>());
            SystemMeans {
                system: sys.clone(),
                reviews: rows.len(),
                conciseness: m(0),
                comprehensiveness: m(1),
                relevance: m(2),
                human_con: h(0),
                human_comp: h(1),
                human_rel: h(2).unwrap_or(0.0),
            }
        })
        .collect();
    let system_level = (0..3)
        .map(|d| {
            let pick = |s: &SystemMeans| [s.conciseness, s.comprehensiveness, s.relevance][d];
            let x: Vec<f64> = per_system.iter().map(pick).collect();
            let y: Vec<f64> = per_system.iter().map(|s| s.human_rel).collect();
            let (xs, ys): (Vec<f64>, Vec<f64>) =
                per_system.iter().filter_map(|s| [s.human_con, s.human_comp, Some(s.human_rel)][d].map(|h| (pick(s), h))).unzip();
            DimensionCorrelation {
                dimension: DIMENSIONS[d],
                vs_human_relevance: spearman(&x, &y),
                items: x.len(),
                vs_human_same: spearman(&xs, &ys),
                items_same: xs.len(),
            }
        })
        .collect();
    Ok(Correlations {
        languages: data.languages.clone(),
        systems: systems.len(),
        reviews: data.items.len(),
        comment_level,
        system_level,
        per_system,
        unused_scores,
    })
}

/// The published figures, for the table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Published {
    /// The paper (mxbai-embed-large, τ = 0.7314): comment level.
    pub paper_comment: f64,
    /// The paper: system level.
    pub paper_system: f64,
    /// Recomputed from the released values and annotations (all three languages, each
    /// dimension against human `Rel (F)`): Conciseness.
    pub recomputed_conciseness: f64,
    pub recomputed_comprehensiveness: f64,
    pub recomputed_relevance: f64,
    /// Recomputed, system level (Relevance).
    pub recomputed_system: f64,
    pub tau: f64,
    pub embedder: &'static str,
}

pub const PUBLISHED: Published = Published {
    paper_comment: 0.54,
    paper_system: 0.95,
    recomputed_conciseness: 0.492,
    recomputed_comprehensiveness: 0.531,
    recomputed_relevance: 0.531,
    recomputed_system: 0.933,
    tau: 0.7314,
    embedder: "mxbai-embed-large-v1",
};

/// Runner's alignment scores on the study, correlated with the human scores.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CrscoreReport {
    /// The embedder's identity, for the caller to fill in (evaluation sees vectors only).
    pub embedder: Option<String>,
    pub tau: f64,
    /// How τ was calibrated; `None` when it was given.
    pub calibration: Option<Calibration>,
    /// Mean scores over all scored reviews.
    pub means: Option<AlignmentMeans>,
    pub correlations: Correlations,
    pub published: Published,
}

/// Scores every review of the study with `embeddings` (every text of [`texts`] must be
/// there) at `tau`, or at τ calibrated by [`calibrate`] when `None`, and correlates the
/// scores with the human ones.
pub fn evaluate(data: &CrscoreData, embeddings: &HashMap<String, Vec<f32>>, tau: Option<f64>) -> Result<CrscoreReport, CrscoreError> {
    let (tau, calibration) = match tau {
        Some(t) => (t, None),
        None => {
            let c = calibrate(data, embeddings)?;
            (c.tau, Some(c))
        }
    };
    let alignments = score_reviews(data, embeddings, tau)?;
    let mut scores: BTreeMap<String, SystemScores> = BTreeMap::new();
    for (item, a) in data.items.iter().zip(&alignments) {
        let (p, r, f) = a.crscore_scores();
        let s =
            scores.entry(item.system.clone()).or_insert_with(|| SystemScores { conciseness: Vec::new(), comprehensiveness: Vec::new(), relevance: Vec::new() });
        s.conciseness.push(p);
        s.comprehensiveness.push(r);
        s.relevance.push(f);
    }
    let correlations = correlate_scores(data, &scores)?;
    Ok(CrscoreReport { embedder: None, tau, calibration, means: means(&alignments), correlations, published: PUBLISHED })
}

fn num(v: Option<f64>) -> String {
    v.map_or_else(|| "—".to_string(), |x| format!("{x:.3}"))
}

impl CrscoreReport {
    /// The correlation table (and the per-system means) as Markdown.
    pub fn to_markdown(&self) -> String {
        let c = &self.correlations;
        let p = &self.published;
        let mut out = String::new();
        let tau = match &self.calibration {
            Some(cal) => {
                format!("τ = {:.4}, calibrated on {} reference reviews ({} sentences; {} left out)", self.tau, cal.items, cal.sentences, cal.skipped_items)
            }
            None => format!("τ = {:.4}, given", self.tau),
        };
        out.push_str(&format!(
            "CRScore human study ({}): {} reviews by {} systems; embedder {}; {}.\n\n",
            c.languages.join(", "),
            c.reviews,
            c.systems,
            self.embedder.as_deref().unwrap_or("(not named)"),
            tau
        ));
        out.push_str("Spearman's ρ with the human scores, each dimension against the human Relevance (the authors' protocol) and against the human score of the same dimension.\n\n");
        out.push_str("| Dimension | comment level vs human Rel | comment level vs same | system level vs human Rel | system level vs same | published (recomputed, comment / system) |\n");
        out.push_str("|---|---|---|---|---|---|\n");
        let published = [
            format!("{:.3}", p.recomputed_conciseness),
            format!("{:.3}", p.recomputed_comprehensiveness),
            format!("{:.3} / {:.3}", p.recomputed_relevance, p.recomputed_system),
        ];
        for (d, (cl, sl)) in c.comment_level.iter().zip(&c.system_level).enumerate() {
            out.push_str(&format!(
                "| {} | {} (n = {}) | {} (n = {}) | {} (n = {}) | {} (n = {}) | {} |\n",
                cl.dimension,
                num(cl.vs_human_relevance),
                cl.items,
                num(cl.vs_human_same),
                cl.items_same,
                num(sl.vs_human_relevance),
                sl.items,
                num(sl.vs_human_same),
                sl.items_same,
                published.get(d).map_or("", String::as_str)
            ));
        }
        out.push_str(&format!(
            "\nPaper ({}, τ = {}): {:.2} at comment level, {:.2} at system level. The recomputed figures are over Python, Java and JavaScript.\n\n",
            p.embedder, p.tau, p.paper_comment, p.paper_system
        ));
        out.push_str("| System | reviews | Conciseness | Comprehensiveness | Relevance | human Con | human Comp | human Rel |\n");
        out.push_str("|---|---|---|---|---|---|---|---|\n");
        for s in &c.per_system {
            out.push_str(&format!(
                "| {} | {} | {:.3} | {:.3} | {:.3} | {} | {} | {:.3} |\n",
                s.system,
                s.reviews,
                s.conciseness,
                s.comprehensiveness,
                s.relevance,
                num(s.human_con),
                num(s.human_comp),
                s.human_rel
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests;
