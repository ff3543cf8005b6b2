//! What an analysis is asked to do: its kind and options ([`AnalysisSpec`]), the rules that
//! match findings ([`MatchRule`] between runs, [`OracleRule`] against an oracle), and the
//! reader of a manifest's `[[analysis]]` tables.

use super::matching::rule::Evidence;
pub use super::matching::rule::{
    group_thousands, Calibrated, MatchRule, OracleRule, DEFAULT_CALIBRATION, DEFAULT_EMBEDDING_CALIBRATION, DEFAULT_EMBEDDING_RULE_SIMILARITY,
    DEFAULT_EMBEDDING_SIMILARITY, DEFAULT_JUDGE_FLOOR, DEFAULT_SIMILARITY, JURY_PLACEHOLDER,
};
use serde::Serialize;

/// One analysis the report shows.
#[derive(Debug, Clone, Serialize)]
pub struct AnalysisSpec {
    pub kind: AnalysisKind,
    /// Optional title shown in the report.
    pub title: Option<String>,
    /// The axis compared (overlap, RAG ablation) or grouped by (latency, distribution, …).
    pub axis: Option<String>,
    pub matching: MatchRule,
    /// How reported findings are matched to an oracle (fixture, aggregation, review-eval).
    pub oracle_rule: OracleRule,
    /// A person's adjudication record (`captured.adjudication.json`, from `runner adjudicate
    /// import`), resolved against the manifest's directory: applied over automatic matching
    /// for the runs it covers (fixture, review-eval).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adjudication: Option<std::path::PathBuf>,
    /// The options of its own its kind takes, if any.
    pub options: AnalysisOptions,
}

/// What an analysis reads beyond the runs' outcomes; the plan makes it wait for each, and the
/// manifest check asks a target and judges that provide them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Needs {
    /// The subjects' diffs (their files and scopes).
    pub subjects: bool,
    /// The later commits of a history target's repository.
    pub history: bool,
    /// The scoring stages' values (RQS v2's jury, claims and embeddings).
    pub scoring: bool,
    /// The judges, each asked about every pair at the place.
    pub judges: bool,
}

impl Needs {
    pub const SUBJECTS: Self = Self { subjects: true, history: false, scoring: false, judges: false };
    pub const HISTORY: Self = Self { subjects: false, history: true, scoring: false, judges: false };
    pub const SCORING: Self = Self { subjects: false, history: false, scoring: true, judges: false };
    pub const JUDGES: Self = Self { subjects: false, history: false, scoring: false, judges: true };
}

/// The options an analysis kind takes of its own: one kind's, or none.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AnalysisOptions {
    #[default]
    None,
    /// RQS v2's own options (`kind = "rqs"`).
    Rqs(RqsOptions),
    /// A paired comparison's options (`kind = "compare"`).
    Compare(CompareOptions),
    /// `fixture`: a ranking of the cells by this rate (`rank-by`).
    RankBy(RankBy),
    /// A human study's filled sheets (`kind = "study"`).
    Study(StudyOptions),
    /// The resolution rate's window, tolerance and head (`kind = "resolution"`).
    Resolution(ResolutionOptions),
    /// AACR-Bench's gold (`kind = "aacr"`).
    Aacr(AacrOptions),
    /// The options of a kind that no other code reads: kept as its own reader made them, read
    /// back by its own `compute` ([`AnalysisSpec::own_options`]).
    Own(OwnOptions),
}

/// A kind's options of a type only its own module knows: the value, and the JSON it serializes
/// as (so a spec still serializes whole).
#[derive(Clone)]
pub struct OwnOptions {
    value: std::sync::Arc<dyn std::any::Any + Send + Sync>,
    json: serde_json::Value,
}

impl OwnOptions {
    /// Options of type `T`; `T`'s serialization is what the spec shows of them.
    pub fn new<T: Serialize + Send + Sync + 'static>(options: T) -> Self {
        let json = serde_json::to_value(&options).unwrap_or(serde_json::Value::Null);
        Self { value: std::sync::Arc::new(options), json }
    }

    /// The options, when they are of type `T`.
    pub fn get<T: 'static>(&self) -> Option<&T> {
        self.value.downcast_ref()
    }
}

impl std::fmt::Debug for OwnOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OwnOptions({})", self.json)
    }
}

impl Serialize for OwnOptions {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.json.serialize(serializer)
    }
}

impl AnalysisSpec {
    /// RQS v2's options, for an `rqs` analysis.
    pub fn rqs(&self) -> Option<&RqsOptions> {
        match &self.options {
            AnalysisOptions::Rqs(o) => Some(o),
            _ => None,
        }
    }

    /// A `compare` analysis's options.
    pub fn compare(&self) -> Option<&CompareOptions> {
        match &self.options {
            AnalysisOptions::Compare(o) => Some(o),
            _ => None,
        }
    }

    /// A `compare` analysis's options, to change.
    pub fn compare_mut(&mut self) -> Option<&mut CompareOptions> {
        match &mut self.options {
            AnalysisOptions::Compare(o) => Some(o),
            _ => None,
        }
    }

    /// A `fixture` analysis's ranking rate, when it asks for one.
    pub(crate) fn rank_by(&self) -> Option<RankBy> {
        match &self.options {
            AnalysisOptions::RankBy(r) => Some(*r),
            _ => None,
        }
    }

    /// A `study` analysis's study and sheets.
    pub fn study(&self) -> Option<&StudyOptions> {
        match &self.options {
            AnalysisOptions::Study(o) => Some(o),
            _ => None,
        }
    }

    /// A `resolution` analysis's window, tolerance and head.
    pub fn resolution(&self) -> Option<&ResolutionOptions> {
        match &self.options {
            AnalysisOptions::Resolution(o) => Some(o),
            _ => None,
        }
    }

    /// The options of type `T` a kind's own reader made (`AnalysisOptions::Own`).
    pub fn own_options<T: 'static>(&self) -> Option<&T> {
        match &self.options {
            AnalysisOptions::Own(o) => o.get(),
            _ => None,
        }
    }

    /// An `aacr` analysis's gold.
    pub fn aacr(&self) -> Option<&AacrOptions> {
        match &self.options {
            AnalysisOptions::Aacr(o) => Some(o),
            _ => None,
        }
    }
}

/// An `aacr` analysis's `gold`: AACR-Bench's gold directory (resolved against the manifest's
/// directory), read when the manifest is.
#[derive(Debug, Clone, Serialize)]
pub struct AacrOptions {
    pub gold: std::path::PathBuf,
    #[serde(skip)]
    pub loaded: std::sync::Arc<crate::ground_truth::aacr::Gold>,
}

/// A `resolution` analysis: how many later commits (`window`), lines either side
/// (`tolerance`), and the commit whose first-parent line is followed (`head`; default the
/// target's range end, else `HEAD`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResolutionOptions {
    pub window: usize,
    pub tolerance: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
}

impl Default for ResolutionOptions {
    fn default() -> Self {
        Self { window: DEFAULT_WINDOW, tolerance: DEFAULT_TOLERANCE, head: None }
    }
}

/// The human studies a `study` analysis renders: seed 000's H1, H4, H5, H6, H7, H8 and H9.
pub const STUDIES: [&str; 7] = ["h1", "h4", "h5", "h6", "h7", "h8", "h9"];

/// A `study` analysis: which study, its filled sheets and their key (paths resolved against
/// the manifest's directory). H5 reads H1 sheets and the experiment's jury; H6 reads H1 sheets;
/// H9 reads two files, the session log and the preference survey, and has no key (`key` is
/// then empty).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StudyOptions {
    pub study: String,
    pub sheets: Vec<std::path::PathBuf>,
    pub key: std::path::PathBuf,
    /// The manifest's directory, so the report names the files relative to the project root
    /// whatever directory runner was started from; not part of what the analysis computes.
    #[serde(skip)]
    pub base_dir: std::path::PathBuf,
}

/// A metric with a value per subject that a paired comparison can test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CompareMetric {
    /// H2 recall: TP / (TP + FN) against the oracle.
    Recall,
    /// Seed 003: (found + partial) / oracle findings.
    RecallWithPartials,
    /// H2 precision: TP / (TP + FP).
    Precision,
    F1,
    /// Seed 003: rejected extras / everything reported.
    Noise,
    /// Findings reported per run.
    Findings,
    /// A4: mean pairwise Jaccard between a subject's repeats.
    Jaccard,
    /// RQS v2's headline: the harmonic mean of severity-weighted recall, jury precision and
    /// actionability.
    RqsHeadline,
    /// RQS v2: found severity weights / expected weights.
    WeightedRecall,
    /// RQS v2: findings the jury's majority calls valid / decided findings.
    JuryPrecision,
    /// RQS v2: findings the jury's majority calls actionable / decided findings.
    Actionability,
    /// RQS v2 (CRScore): the share of review sentences aligned to a pseudo-reference.
    Conciseness,
    /// RQS v2 (CRScore): the share of pseudo-references a review sentence aligns to.
    Comprehensiveness,
    /// RQS v2 (CRScore): the harmonic mean of conciseness and comprehensiveness.
    Relevance,
    /// Seed 001 from git: findings a later commit changed the lines of / counted findings
    /// (a history target; the first `resolution` analysis's window, tolerance and head).
    Resolution,
}

impl CompareMetric {
    pub const ALL: [CompareMetric; 15] = [
        Self::Recall,
        Self::RecallWithPartials,
        Self::Precision,
        Self::F1,
        Self::Noise,
        Self::Findings,
        Self::Jaccard,
        Self::RqsHeadline,
        Self::WeightedRecall,
        Self::JuryPrecision,
        Self::Actionability,
        Self::Conciseness,
        Self::Comprehensiveness,
        Self::Relevance,
        Self::Resolution,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Recall => "recall",
            Self::RecallWithPartials => "recall-with-partials",
            Self::Precision => "precision",
            Self::F1 => "f1",
            Self::Noise => "noise",
            Self::Findings => "findings",
            Self::Jaccard => "jaccard",
            Self::RqsHeadline => "rqs-headline",
            Self::WeightedRecall => "weighted-recall",
            Self::JuryPrecision => "jury-precision",
            Self::Actionability => "actionability",
            Self::Conciseness => "conciseness",
            Self::Comprehensiveness => "comprehensiveness",
            Self::Relevance => "relevance",
            Self::Resolution => "resolution",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == text)
    }

    /// Whether the metric follows findings through a history target's later commits.
    pub(crate) fn needs_history(self) -> bool {
        self == Self::Resolution
    }

    /// Whether a larger value is better (`None`: neither, e.g. how many findings).
    pub fn higher_is_better(self) -> Option<bool> {
        match self {
            Self::Noise => Some(false),
            Self::Findings => None,
            _ => Some(true),
        }
    }

    /// Whether the metric is computed against the oracle.
    pub fn needs_oracle(self) -> bool {
        matches!(self, Self::Recall | Self::RecallWithPartials | Self::Precision | Self::F1 | Self::Noise | Self::WeightedRecall)
    }

    /// Whether the metric comes from RQS v2's scoring stages (judges, embeddings).
    pub(crate) fn needs_scoring(self) -> bool {
        matches!(
            self,
            Self::RqsHeadline
                | Self::WeightedRecall
                | Self::JuryPrecision
                | Self::Actionability
                | Self::Conciseness
                | Self::Comprehensiveness
                | Self::Relevance
        )
    }
}

/// The options of a `compare` analysis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompareOptions {
    /// Metrics compared, in table order (`metrics`).
    pub metrics: Vec<CompareMetric>,
    /// Metrics whose verdict lines open RESULTS.md (`headline`; default: recall, or the first metric).
    pub headline: Vec<CompareMetric>,
    /// The axis value every other value is compared with (`baseline`; default the first).
    pub baseline: Option<String>,
    /// Bootstrap and Monte Carlo permutation resamples (`resamples`).
    pub resamples: usize,
    /// The seed of both (`seed`).
    pub seed: u64,
    /// The significance level (`alpha`); the interval's level is 1 − alpha ([`Self::level`]).
    pub alpha: f64,
    /// Differences smaller than this are not called (`min-effect`).
    pub min_effect: f64,
    /// `percentile` or `bca` (`interval`).
    pub interval: crate::stats::IntervalMethod,
    /// The rule A4 Jaccard matches findings between repeats with.
    #[serde(skip)]
    pub matching: MatchRule,
}

impl CompareOptions {
    /// The confidence level of the intervals: 1 − alpha.
    pub(crate) fn level(&self) -> f64 {
        1.0 - self.alpha
    }
}

impl Default for CompareOptions {
    fn default() -> Self {
        Self {
            metrics: vec![CompareMetric::Recall, CompareMetric::Precision, CompareMetric::F1, CompareMetric::Noise, CompareMetric::Findings],
            headline: vec![CompareMetric::Recall],
            baseline: None,
            resamples: 10_000,
            seed: 0,
            alpha: 0.05,
            min_effect: 0.0,
            interval: crate::stats::IntervalMethod::Bca,
            matching: MatchRule::default(),
        }
    }
}

impl AnalysisSpec {
    /// What its kind reads beyond the runs' outcomes.
    pub fn needs(&self) -> Needs {
        super::definition_of(self.kind).map_or_else(Default::default, |d| d.needs())
    }

    /// Whether the analysis reads the subjects' diffs.
    pub fn reads_subjects(&self) -> bool {
        self.needs().subjects
    }

    /// Whether the analysis follows findings through a history target's later commits: the
    /// resolution rate, and a comparison of it.
    pub fn reads_history(&self) -> bool {
        self.needs().history || self.compare().is_some_and(|c| c.metrics.iter().any(|m| m.needs_history()))
    }

    /// Whether the analysis reads the scoring stages' values: RQS v2 itself, and a comparison
    /// of RQS v2 metrics.
    pub fn reads_scoring(&self) -> bool {
        self.asks_judges_to_match()
            || self.needs().scoring
            || self.study().is_some_and(|s| s.study == "h5")
            || self.compare().is_some_and(|c| c.metrics.iter().any(|m| m.needs_scoring()))
    }
}

impl AnalysisSpec {
    /// Whether the analysis matches against the oracle with the judges' word as evidence.
    pub fn asks_judges_to_match(&self) -> bool {
        self.needs().judges || (self.kind.uses_oracle() && self.oracle_rule.evidence == Evidence::Judge)
    }
}

/// The rate a `fixture` analysis ranks its cells by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RankBy {
    F1,
    Precision,
    Recall,
}

impl RankBy {
    pub const ALL: [RankBy; 3] = [Self::F1, Self::Precision, Self::Recall];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::F1 => "f1",
            Self::Precision => "precision",
            Self::Recall => "recall",
        }
    }
}

/// The options of an `rqs` analysis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RqsOptions {
    /// The alignment threshold, given directly (`tau`).
    pub tau: Option<f64>,
    /// A calibration file with τ for the experiment's embedder (`calibration`).
    pub calibration: Option<std::path::PathBuf>,
    /// The human anchor set, a CSV (`anchor`).
    pub anchor: Option<std::path::PathBuf>,
    /// The seed of the blind presentation's shuffle (`shuffle-seed`, default 0).
    pub shuffle_seed: u64,
}

/// An analysis kind: the name a manifest gives it and whether it matches findings to an
/// oracle (and so reads the oracle-matching keys). The registry (`analysis::ANALYSES`) lists
/// every kind; the ones below are the kinds other code refers to by name (a kind no other code
/// names is made where its module declares its definition).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnalysisKind {
    name: &'static str,
    oracle: bool,
}

impl AnalysisKind {
    /// A1: overlap between the values of one axis.
    pub const OVERLAP: Self = Self::new("overlap");
    /// A3: latency per run and per hunk.
    pub const LATENCY: Self = Self::new("latency");
    /// A4: Jaccard across repeats.
    pub(crate) const REPEATABILITY: Self = Self::new("repeatability");
    /// A5: category and severity counts.
    pub const DISTRIBUTION: Self = Self::new("distribution");
    /// A6: finding-ID stability across repeats.
    pub(crate) const ID_STABILITY: Self = Self::new("id-stability");
    /// A7: schema validation of every reviewer's output.
    pub(crate) const SCHEMA: Self = Self::new("schema");
    /// A10: RAG on versus off.
    pub(crate) const RAG_ABLATION: Self = Self::new("rag-ablation");
    /// Tokens and durations per cell.
    pub(crate) const COST: Self = Self::new("cost");
    /// Each review strategy's (pipeline's) total budget, allocation and spend.
    pub(crate) const BUDGET: Self = Self::new("budget");
    /// H2: TP, FP, FN, precision, recall and F1 against the oracle.
    pub const FIXTURE: Self = Self::new("fixture").matching_an_oracle();
    /// A8: the union of a cell's repeats against the average single run.
    pub(crate) const AGGREGATION: Self = Self::new("aggregation").matching_an_oracle();
    /// A9: diff / file / repo context level of each finding.
    pub const CONTEXT_LEVEL: Self = Self::new("context-level");
    /// Seed 003: found / partial / missed, recall, noise and cost per run and per case.
    pub const REVIEW_EVAL: Self = Self::new("review-eval").matching_an_oracle();
    /// Seed 001: RQS v2 — jury validity and actionability, pseudo-reference alignment,
    /// severity-weighted recall, cost and the headline.
    pub const RQS: Self = Self::new("rqs").matching_an_oracle();
    /// Paired statistics between the values of an axis: bootstrap intervals, permutation and
    /// McNemar tests, Holm-corrected, with a verdict.
    pub const COMPARE: Self = Self::new("compare").matching_an_oracle();
    /// Seed 000's human studies (H1, H5, H7, H8) from filled sheets.
    pub const STUDY: Self = Self::new("study");
    /// The judges measured: each judge's found / not found per oracle finding of every run
    /// (model judges asked every pair, replayed judges' recorded decisions), their recall and
    /// precision per cell, their pairwise κ and majority, runner's matcher against each and
    /// against the majority, and the cells' ranking under each.
    pub const JURY: Self = Self::new("jury").matching_an_oracle();
    /// Seed 001's resolution rate from git: findings whose lines a later commit changed.
    pub const RESOLUTION: Self = Self::new("resolution");
    /// AACR-Bench's own location rule and order against its gold, with runner's matcher in its
    /// judge's place.
    pub const AACR: Self = Self::new("aacr").matching_an_oracle();

    /// A kind named `name` that reads no oracle.
    pub const fn new(name: &'static str) -> Self {
        Self { name, oracle: false }
    }

    /// The same kind, matching findings to an oracle.
    pub const fn matching_an_oracle(self) -> Self {
        Self { oracle: true, ..self }
    }

    pub fn as_str(self) -> &'static str {
        self.name
    }

    /// Kinds that match findings to an oracle and read the oracle-matching keys.
    pub fn uses_oracle(self) -> bool {
        self.oracle
    }
}

impl Serialize for AnalysisKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name)
    }
}

/// Later commits looked at, unless the analysis or the command says otherwise.
pub const DEFAULT_WINDOW: usize = 10;
/// Lines either side of the flagged ones that count, unless said otherwise.
pub const DEFAULT_TOLERANCE: u32 = 1;
