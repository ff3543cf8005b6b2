//! Resolution rate, seed 001's online metric computed offline from git: of the findings
//! posted on a commit, how many had their flagged lines changed by a later commit? The one
//! place that traces a finding ([`Resolver`]: `subject::trace` from the reviewed commit along
//! the head's first-parent line) and counts it ([`Rate`], with a Wilson interval); `runner
//! resolution` (`study::resolution`, over stet's history) and the `resolution` analysis (over
//! an experiment's runs on a history target) both use it.
//!
//! It is a proxy, and needs no oracle and no person: a later change to the flagged lines may be
//! unrelated to the finding, and a fix made elsewhere is not seen.
//!
//! # The analysis
//!
//! For an experiment on a `[target] repo` with `commits` or `pull-requests`: each finding a run
//! reported on commit C (the subject) is followed through the `window` commits after C on the
//! first-parent line of `head` (default: the target's range end, else `HEAD`); it is resolved
//! when one of them changed or removed a line within ±`tolerance` of its lines. A finding on a
//! commit with fewer than `window` later commits up to the head is pending (its window is not
//! complete: counting it would favour findings resolved early), and one that cannot be traced
//! (no file or line, a path that is not one inside the repository, a file the commit lacks,
//! a line beyond the file's end, a commit git cannot read) is listed with why. Per cell:
//! resolved / posted with a 95 % Wilson interval, per category and per severity.
//!
//! Git is read a few times, not once per finding: commits and files through the tracer's one
//! `cat-file` process, each walk and each step's diff once, and each (commit, path) traced
//! once ([`PathTrace`]), which then answers every finding at that path.

use crate::analysis::definition::{Definition, Needs, OptionsContext};
use crate::analysis::spec::{AnalysisKind, AnalysisOptions};
use crate::config::TableReader;
use crate::analysis::chart::{Chart, ChartCells, IntervalChart, IntervalPoint, Named};
use crate::analysis::spec::{AnalysisSpec, ResolutionOptions};
pub use crate::analysis::spec::{DEFAULT_TOLERANCE, DEFAULT_WINDOW};
use crate::analysis::{
    data::DataList, model::fmt_ratio, model::json_num, model::missing_note, model::runs_of, model::AnalysisInput, model::AnalysisResult, model::Table,
};
use crate::finding::{Finding, Severity};
use crate::stats::wilson_interval;
use crate::subject::git::GitError;
use crate::subject::history::short;
use crate::subject::trace::{repo_path, Fate, FileAt, PathTrace, Span, Step, Tracer};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// The confidence level of the intervals.
pub const LEVEL: f64 = 0.95;

/// How far a finding is followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Options {
    /// How many later commits are looked at.
    pub window: usize,
    /// Lines either side of the flagged ones that count.
    pub tolerance: u32,
    /// When a finding is pending rather than counted.
    pub pending: Pending,
}

/// When a finding is not counted yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pending {
    /// Only when no later commit exists (`runner resolution`: a window cut short by the head
    /// counts the commits there are).
    NoLaterCommit,
    /// Whenever fewer than `window` later commits exist up to the head (the analysis).
    IncompleteWindow,
}

/// What the numbers are, said in the report.
pub fn definition(window: usize, tolerance: u32) -> String {
    format!(
        "A finding counts as resolved when one of the {window} commits after its reviewed commit, on the head's first-parent line, changed or removed a line within ±{tolerance} of the lines it flagged. This is a proxy for \"the author acted on it\": a later change to those lines may be unrelated to the finding, and a fix made elsewhere is not seen."
    )
}

/// resolved / posted, with a Wilson interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    pub resolved: usize,
    pub posted: usize,
    pub rate: Option<f64>,
    pub wilson_low: Option<f64>,
    pub wilson_high: Option<f64>,
}

impl Rate {
    /// Counts one traced finding.
    pub(crate) fn add(&mut self, resolved: bool) {
        self.posted += 1;
        self.resolved += usize::from(resolved);
    }

    /// The rate and its interval from the counts.
    pub(crate) fn finish(mut self) -> Self {
        self.rate = (self.posted > 0).then(|| self.resolved as f64 / self.posted as f64);
        let interval = wilson_interval(self.resolved as u64, self.posted as u64, LEVEL);
        (self.wilson_low, self.wilson_high) = (interval.map(|i| i.0), interval.map(|i| i.1));
        self
    }

    /// `[0.123, 0.456]`, or `–` without findings.
    pub(crate) fn interval_text(&self) -> String {
        match (self.wilson_low, self.wilson_high) {
            (Some(l), Some(h)) => format!("[{l:.3}, {h:.3}]"),
            _ => "–".to_string(),
        }
    }
}

/// One finding's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Outcome {
    /// `commit` changed or removed a flagged line (± the tolerance).
    Resolved { commit: String },
    /// No commit of the window changed them.
    Unresolved,
    /// Not counted yet: `later` commits exist after the reviewed one, fewer than needed.
    Pending { later: usize },
    /// Not counted: why the finding cannot be followed.
    NotTraced(String),
}

impl Outcome {
    /// `resolved`, `unresolved`, `pending` or `not traced`.
    pub(crate) fn as_str(&self) -> &'static str {
        match self {
            Self::Resolved { .. } => "resolved",
            Self::Unresolved => "unresolved",
            Self::Pending { .. } => "pending",
            Self::NotTraced(_) => "not traced",
        }
    }

    /// Whether the finding is counted, and if so whether it was resolved.
    pub(crate) fn counted(&self) -> Option<bool> {
        match self {
            Self::Resolved { .. } => Some(true),
            Self::Unresolved => Some(false),
            Self::Pending { .. } | Self::NotTraced(_) => None,
        }
    }

    /// Why the finding is not counted, in words.
    pub(crate) fn reason(&self, window: usize) -> Option<String> {
        match self {
            Self::Pending { later: 0 } => Some("no later commit yet".to_string()),
            Self::Pending { later } => Some(format!("{later} of the {window} later commits so far")),
            Self::NotTraced(why) => Some(why.clone()),
            Self::Resolved { .. } | Self::Unresolved => None,
        }
    }
}

/// The later commits of one reviewed commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Walk {
    /// The reviewed commit's full SHA, when the repository has it.
    pub commit: Option<String>,
    /// Up to `window` steps along the head's first-parent line.
    pub steps: Vec<Step>,
    /// Why no finding on it can be traced, when none can.
    pub problem: Option<String>,
}

/// Follows findings of one repository up to one head.
pub(crate) struct Resolver {
    tracer: Tracer,
    head: String,
    head_rev: String,
    options: Options,
    /// Each (reviewed commit, path) traced once through its walk.
    traces: HashMap<(String, String), PathTrace>,
}

impl Resolver {
    /// A resolver up to `head` (a revision), which must be a commit of `repo`.
    pub(crate) fn new(repo: &Path, head: &str, options: Options) -> Result<Self, GitError> {
        let tracer = Tracer::new(repo);
        let sha = tracer.commit(head).ok_or_else(|| GitError::Failed {
            dir: repo.display().to_string(),
            args: format!("rev-parse {head}"),
            stderr: format!("`{head}` is not a commit of this repository"),
        })?;
        Ok(Self { tracer, head: sha, head_rev: head.to_string(), options, traces: HashMap::new() })
    }

    /// The head's full SHA.
    pub(crate) fn head(&self) -> &str {
        &self.head
    }

    /// The commits after `reviewed` (a revision) that its findings are followed through. A
    /// commit git cannot walk from is the walk's problem, not an error: its findings are not
    /// traced, and other commits' are.
    pub(crate) fn walk(&mut self, reviewed: &str) -> Result<Walk, GitError> {
        let Some(commit) = self.tracer.commit(reviewed) else {
            return Ok(Walk { commit: None, steps: Vec::new(), problem: Some(format!("the reviewed commit `{reviewed}` is not in the repository")) });
        };
        Ok(match self.tracer.walk(&commit, &self.head, Some(self.options.window)) {
            Ok(Some(steps)) => Walk { commit: Some(commit), steps, problem: None },
            Ok(None) => {
                let problem = Some(format!("the reviewed commit {commit} is not an ancestor of {}", self.head_rev));
                Walk { commit: Some(commit), steps: Vec::new(), problem }
            }
            Err(e) => Walk { commit: Some(commit), steps: Vec::new(), problem: Some(format!("git failed: {e}")) },
        })
    }

    /// What became of a finding on `file` at `span` (`None`: no line) of the walk's commit. A
    /// finding git cannot trace is not traced, with git's error as its reason.
    pub(crate) fn trace(&mut self, walk: &Walk, file: &str, span: Option<Span>) -> Result<Outcome, GitError> {
        Ok(self.outcome(walk, file, span).unwrap_or_else(|e| Outcome::NotTraced(format!("git failed: {e}"))))
    }

    fn outcome(&mut self, walk: &Walk, file: &str, span: Option<Span>) -> Result<Outcome, GitError> {
        if let Some(problem) = &walk.problem {
            return Ok(Outcome::NotTraced(problem.clone()));
        }
        let (Some(commit), Some(span)) = (&walk.commit, span) else {
            return Ok(Outcome::NotTraced(if file.is_empty() { "no file" } else { "no line" }.to_string()));
        };
        if file.is_empty() {
            return Ok(Outcome::NotTraced("no file".to_string()));
        }
        let path = match repo_path(file) {
            Ok(path) => path,
            Err(why) => return Ok(Outcome::NotTraced(format!("`{file}` is {why}"))),
        };
        match self.tracer.file_at(commit, &path)? {
            FileAt::Missing => return Ok(Outcome::NotTraced(format!("`{file}` is not in the reviewed commit"))),
            FileAt::NotAFile(kind) => {
                let what = if kind == "tree" { "a directory".to_string() } else { format!("a {kind}") };
                return Ok(Outcome::NotTraced(format!("`{file}` is {what} in the reviewed commit, not a file")));
            }
            // A line past the end flags nothing a later commit could change: not counted.
            FileAt::File { lines } if u64::from(span.end) > lines => {
                return Ok(Outcome::NotTraced(format!(
                    "line {} is beyond the end of `{file}`, which has {lines} line{} in the reviewed commit",
                    span.end,
                    if lines == 1 { "" } else { "s" }
                )));
            }
            FileAt::File { .. } => {}
        }
        let later = walk.steps.len();
        let pending = match self.options.pending {
            Pending::NoLaterCommit => later == 0,
            Pending::IncompleteWindow => later < self.options.window,
        };
        if pending {
            return Ok(Outcome::Pending { later });
        }
        let key = (commit.clone(), path);
        let trace = match self.traces.get(&key) {
            Some(trace) => trace,
            None => {
                let trace = self.tracer.path_trace(&key.1, &walk.steps)?;
                self.traces.entry(key).or_insert(trace)
            }
        };
        Ok(match trace.fate(Some(span.widened(self.options.tolerance))) {
            Fate::Changed { commit, .. } => Outcome::Resolved { commit },
            Fate::Kept { .. } => Outcome::Unresolved,
        })
    }
}

/// What the analysis reads of a history target: the repository, the head it follows findings
/// up to unless the analysis names one, and each subject's reviewed commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repository {
    pub repo: PathBuf,
    /// The target's range end (`B` of `A..B`), else `HEAD`.
    pub head: String,
    /// Subject id → the reviewed commit's full SHA (a history subject's id is that SHA).
    pub commits: BTreeMap<String, String>,
    /// Subject id → `1a2b3c4 Fix the parser`.
    pub labels: BTreeMap<String, String>,
    /// What a comparison's `resolution` metric follows: the first `resolution` analysis's
    /// window, tolerance and head, else the defaults.
    pub options: ResolutionOptions,
    /// Where traced outcomes are kept between executions (`None`: nothing kept).
    pub memo_dir: Option<PathBuf>,
}

/// One cell of the analysis's `data`, as a chart reads it back.
#[derive(Debug, Clone, Deserialize)]
pub struct CellData {
    pub cell: String,
    pub resolution: Rate,
}

/// The lines a reported finding flags, `None` when it names none.
fn span_of(finding: &Finding) -> Option<Span> {
    (finding.line > 0 || finding.range.is_some_and(|r| r.is_valid())).then(|| {
        let (start, end) = finding.span();
        Span::new(start, end)
    })
}

/// Where a finding points: its subject, file and lines.
type Place = (String, String, Option<(u32, u32)>);

/// An experiment's findings traced, each place once: the resolver of a history target, up to
/// the head `options` names (else the target's), and the walk of each subject's commit.
pub(crate) struct RunTracer<'a> {
    repository: &'a Repository,
    resolver: Resolver,
    /// The head as written.
    head_rev: String,
    walks: HashMap<String, Walk>,
    traced: HashMap<Place, Outcome>,
    /// Outcomes kept from earlier executions, per subject, and whether new ones were added.
    memo: HashMap<String, (Memo, bool)>,
}

/// One reviewed commit's traced places up to one head, under one window and tolerance, as
/// kept between executions: the commits are fixed by their SHAs, so what was traced once is
/// what would be traced again.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Memo {
    /// `file` and `start-end` (empty: no line) → the outcome and the walk's length.
    places: BTreeMap<String, (Outcome, usize)>,
}

/// A place's key in its [`Memo`].
fn memo_place(file: &str, span: Option<Span>) -> String {
    match span {
        Some(s) => format!("{file}\0{}-{}", s.start, s.end),
        None => format!("{file}\0"),
    }
}

impl<'a> RunTracer<'a> {
    pub(crate) fn new(repository: &'a Repository, options: &ResolutionOptions) -> Result<Self, GitError> {
        let head_rev = options.head.clone().unwrap_or_else(|| repository.head.clone());
        let traced = Options { window: options.window, tolerance: options.tolerance, pending: Pending::IncompleteWindow };
        let resolver = Resolver::new(&repository.repo, &head_rev, traced)?;
        Ok(Self { repository, resolver, head_rev, walks: HashMap::new(), traced: HashMap::new(), memo: HashMap::new() })
    }

    /// Where `subject`'s memo lives: keyed by the head's and the reviewed commit's SHAs, the
    /// window and the tolerance.
    fn memo_path(&self, subject: &str) -> Option<PathBuf> {
        let dir = self.repository.memo_dir.as_ref()?;
        let reviewed = self.repository.commits.get(subject).map_or(subject, String::as_str);
        let options = &self.resolver.options;
        let key = format!("resolution v1\0{}\0{reviewed}\0{}\0{}\0{:?}", self.resolver.head(), options.window, options.tolerance, options.pending);
        let hex = blake3::hash(key.as_bytes()).to_hex().to_string();
        Some(dir.join(&hex[..2]).join(format!("{hex}.json")))
    }

    /// `subject`'s memo, read on first use (an unreadable one is an empty one).
    fn memo_of(&mut self, subject: &str) -> &mut (Memo, bool) {
        let path = if self.memo.contains_key(subject) { None } else { self.memo_path(subject) };
        self.memo.entry(subject.to_string()).or_insert_with(|| {
            let kept = path.and_then(|p| crate::bounded::input(&p).ok()).and_then(|bytes| serde_json::from_slice::<Memo>(&bytes).ok());
            (kept.unwrap_or_default(), false)
        })
    }

    /// Writes the memos that gained outcomes, each through a temporary file of its own (the
    /// analysis and a comparison's `resolution` metric may write one memo side by side); a
    /// memo that cannot be written costs the next execution the tracing, nothing more.
    pub(crate) fn save(&self) {
        for (subject, (memo, dirty)) in &self.memo {
            let Some(path) = self.memo_path(subject).filter(|_| *dirty) else { continue };
            let (Some(dir), Ok(bytes)) = (path.parent(), serde_json::to_vec(memo)) else { continue };
            if std::fs::create_dir_all(dir).is_err() {
                continue;
            }
            if let Ok(mut temp) = tempfile::Builder::new().prefix(".tmp").tempfile_in(dir) {
                if std::io::Write::write_all(&mut temp, &bytes).is_ok() {
                    let _ = temp.persist(&path);
                }
            }
        }
    }

    /// What became of `finding`, reported on `subject`, and how many later commits its commit
    /// has (up to the window). A git failure is the finding's reason not to be traced.
    pub(crate) fn outcome(&mut self, subject: &str, finding: &Finding) -> (Outcome, usize) {
        let place = memo_place(finding.file.as_str(), span_of(finding));
        if let Some(kept) = self.memo_of(subject).0.places.get(&place) {
            return kept.clone();
        }
        let traced = self.trace_now(subject, finding);
        // A git failure may not happen again: it is not kept.
        if !matches!(&traced.0, Outcome::NotTraced(why) if why.starts_with("git failed")) {
            let memo = self.memo_of(subject);
            memo.0.places.insert(place, traced.clone());
            memo.1 = true;
        }
        traced
    }

    /// [`RunTracer::outcome`], from git.
    fn trace_now(&mut self, subject: &str, finding: &Finding) -> (Outcome, usize) {
        if !self.walks.contains_key(subject) {
            let reviewed = self.repository.commits.get(subject).map_or(subject, String::as_str);
            let walk = self.resolver.walk(reviewed).unwrap_or_else(|e| Walk { commit: None, steps: Vec::new(), problem: Some(format!("git failed: {e}")) });
            self.walks.insert(subject.to_string(), walk);
        }
        let Some(walk) = self.walks.get(subject) else { return (Outcome::NotTraced("no walk".into()), 0) };
        let file = finding.file.as_str();
        let span = span_of(finding);
        let key = (subject.to_string(), file.to_string(), span.map(|s| (s.start, s.end)));
        let outcome = match self.traced.get(&key) {
            Some(o) => o.clone(),
            None => {
                let o = self.resolver.trace(walk, file, span).unwrap_or_else(|e| Outcome::NotTraced(format!("git failed: {e}")));
                self.traced.insert(key, o.clone());
                o
            }
        };
        (outcome, walk.steps.len())
    }
}

/// (resolved, counted) findings by run: (cell, repeat, subject).
pub(crate) type RunCounts = BTreeMap<(String, u32, String), (usize, usize)>;

/// Each run's findings counted, for a comparison; `None` when the head cannot be resolved.
pub(crate) fn run_counts(input: &AnalysisInput<'_>, repository: &Repository) -> Option<RunCounts> {
    let mut tracer = RunTracer::new(repository, &repository.options).ok()?;
    let mut out = BTreeMap::new();
    for run in &input.runs {
        let (mut resolved, mut counted) = (0, 0);
        for f in run.findings {
            if let Some(r) = tracer.outcome(run.subject, f).0.counted() {
                counted += 1;
                resolved += usize::from(r);
            }
        }
        out.insert((run.cell.id.clone(), run.repeat, run.subject.to_string()), (resolved, counted));
    }
    tracer.save();
    Some(out)
}

/// One cell's counts.
#[derive(Default)]
struct CellCounts {
    runs: usize,
    findings: usize,
    all: Rate,
    categories: BTreeMap<String, Rate>,
    severities: BTreeMap<String, Rate>,
    pending: usize,
    not_traced: usize,
}

/// A finding not counted, listed in the report.
struct Listed {
    cell: String,
    subject: String,
    file: String,
    line: u32,
    why: String,
}

/// `resolution`: seed 001's resolution rate from git (`window`, `tolerance`, `head`), charted per cell.
pub(crate) const ANALYSIS: Definition =
    Definition::new(AnalysisKind::RESOLUTION, compute).needing(Needs::HISTORY).with_options(&["window", "tolerance", "head"], read_options).with_charts(charts);

pub fn compute(spec: &AnalysisSpec, input: &AnalysisInput<'_>) -> AnalysisResult {
    let options = spec.resolution().cloned().unwrap_or_default();
    let mut result = AnalysisResult::new(
        spec,
        "seed 001",
        "Resolution rate from git (a proxy)",
        format!(
            "{} Findings on a commit with fewer than {} later commits up to the head are pending, and findings without a file and line the reviewed commit has are not traced; neither is counted. Resolved / counted per cell with a 95 % Wilson interval, then per category and severity. It needs no oracle.",
            definition(options.window, options.tolerance),
            options.window
        ),
    );
    let Some(repository) = input.repository() else {
        result.notes.push("This analysis needs a history target (`[target] repo` with `commits` or `pull-requests`); this experiment has none.".into());
        return result;
    };
    let mut tracer = match RunTracer::new(repository, &options) {
        Ok(t) => t,
        Err(e) => {
            result.notes.push(format!("No finding could be traced: {e}."));
            return result;
        }
    };
    let head = tracer.head_rev.clone();
    let mut counts: Vec<(&crate::matrix::Cell, CellCounts)> = Vec::new();
    let mut listed: Vec<Listed> = Vec::new();
    let mut pending_subjects: BTreeMap<&str, usize> = BTreeMap::new();
    for cell in input.cells {
        let mut c = CellCounts::default();
        for run in runs_of(input, cell) {
            c.runs += 1;
            for f in run.findings {
                c.findings += 1;
                let (outcome, later) = tracer.outcome(run.subject, f);
                match outcome.counted() {
                    Some(resolved) => {
                        c.all.add(resolved);
                        c.categories.entry(f.category.as_str().to_string()).or_default().add(resolved);
                        c.severities.entry(f.severity.as_str().to_string()).or_default().add(resolved);
                    }
                    None if matches!(outcome, Outcome::Pending { .. }) => {
                        c.pending += 1;
                        pending_subjects.insert(run.subject, later);
                    }
                    None => {
                        c.not_traced += 1;
                        listed.push(Listed {
                            cell: cell.id.clone(),
                            subject: run.subject.to_string(),
                            file: f.file.clone(),
                            line: f.line,
                            why: outcome.reason(options.window).unwrap_or_default(),
                        });
                    }
                }
            }
        }
        counts.push((cell, c));
    }

    let label = |subject: &str| repository.labels.get(subject).cloned().unwrap_or_else(|| short(subject).to_string());
    let mut table = Table::new("", &["Cell", "Runs", "Findings", "Resolved / counted", "Rate", "95 % Wilson", "Pending", "Not traced"]);
    let mut by_category = Table::new("By category", &["Cell", "Category", "Resolved / counted", "Rate", "95 % Wilson"]);
    let mut by_severity = Table::new("By severity", &["Cell", "Severity", "Resolved / counted", "Rate", "95 % Wilson"]);
    let mut data = DataList::default();
    let rate_json = |r: &Rate| json!({ "resolved": r.resolved, "posted": r.posted, "rate": json_num(r.rate), "wilson_low": json_num(r.wilson_low), "wilson_high": json_num(r.wilson_high) });
    for (cell, c) in counts {
        if c.runs == 0 {
            continue;
        }
        let all = c.all.finish();
        table.push(vec![
            format!("`{}`", cell.id).into(),
            c.runs.into(),
            c.findings.into(),
            format!("{} / {}", all.resolved, all.posted).into(),
            fmt_ratio(all.rate),
            all.interval_text().into(),
            c.pending.into(),
            c.not_traced.into(),
        ]);
        let categories: BTreeMap<String, Rate> = c.categories.into_iter().map(|(k, r)| (k, r.finish())).collect();
        let mut severities: Vec<(String, Rate)> = c.severities.into_iter().map(|(k, r)| (k, r.finish())).collect();
        severities.sort_by_key(|(name, _)| Severity::ALL.iter().position(|s| s.as_str() == name).unwrap_or(usize::MAX));
        for (table, rows) in [(&mut by_category, categories.iter().collect::<Vec<_>>()), (&mut by_severity, severities.iter().map(|(k, r)| (k, r)).collect())] {
            for (name, r) in rows {
                table.push(vec![
                    format!("`{}`", cell.id).into(),
                    name.clone().into(),
                    format!("{} / {}", r.resolved, r.posted).into(),
                    fmt_ratio(r.rate),
                    r.interval_text().into(),
                ]);
            }
        }
        data.push(&json!({
            "cell": cell.id,
            "values": cell.values.iter().map(|(k, v)| (k.clone(), v.to_json())).collect::<serde_json::Map<_, _>>(),
            "runs": c.runs,
            "findings": c.findings,
            "resolution": rate_json(&all),
            "by_category": categories.iter().map(|(k, r)| (k.clone(), rate_json(r))).collect::<serde_json::Map<_, _>>(),
            "by_severity": severities.iter().map(|(k, r)| (k.clone(), rate_json(r))).collect::<serde_json::Map<_, _>>(),
            "pending": c.pending,
            "not_traced": c.not_traced,
        }));
    }
    result.tables.extend([table, by_category, by_severity]);
    if !listed.is_empty() {
        let mut t = Table::new("Findings not traced", &["Cell", "Commit", "File", "Line", "Why"]);
        for l in &listed {
            t.push(vec![format!("`{}`", l.cell).into(), label(&l.subject).into(), l.file.clone().into(), l.line.into(), l.why.clone().into()]);
        }
        result.tables.push(t);
    }
    result.data = data.finish();
    result.notes.push(format!(
        "Followed up to `{}` ({}), at most {} later commits on its first-parent line, ±{} lines. A proxy that needs no oracle: a later change to the flagged lines may be unrelated to the finding, and a fix made elsewhere is not seen.",
        short(tracer.resolver.head()),
        head,
        options.window,
        options.tolerance
    ));
    if !pending_subjects.is_empty() {
        let shown: Vec<String> = pending_subjects.iter().map(|(s, later)| format!("{} ({later} later)", short(s))).collect();
        result.notes.push(format!(
            "Pending (window not complete, not counted): findings on {} commit{}: {}.",
            pending_subjects.len(),
            if pending_subjects.len() == 1 { "" } else { "s" },
            shown.join(", ")
        ));
    }
    result.notes.extend(missing_note(input));
    tracer.save();
    result
}

impl<'a> crate::analysis::model::AnalysisInput<'a> {
    /// A history target's repository and reviewed commits, for the resolution rate.
    pub(crate) fn repository(&self) -> Option<&'a Repository> {
        self.extras.get()
    }
}

/// Seed 001's resolution rate from git: resolved / counted findings per cell, with the
/// Wilson interval the analysis computed.
pub(crate) fn charts(analysis: &AnalysisResult, labels: &dyn ChartCells) -> Vec<Named> {
    chart(analysis, labels).into_iter().collect()
}

fn chart(analysis: &AnalysisResult, labels: &dyn ChartCells) -> Option<Named> {
    let cells: Vec<CellData> = analysis.data_as().ok()?;
    if cells.iter().all(|c| c.resolution.posted == 0) {
        return None;
    }
    Some(Named {
        name: "rate",
        chart: Chart::Interval(IntervalChart {
            title: "Resolution rate per cell (a proxy)".into(),
            interval: "Whiskers: Wilson 95 % interval of resolved / counted findings (a later commit changed the flagged lines).".into(),
            x_label: "resolved / counted".into(),
            points: cells
                .iter()
                .map(|c| IntervalPoint { label: labels.label(&c.cell), value: c.resolution.rate, low: c.resolution.wilson_low, high: c.resolution.wilson_high })
                .collect(),
            range: Some((0.0, 1.0)),
            digits: 3,
        }),
    })
}

/// A `resolution` analysis's `window`, `tolerance` and `head`.
fn read_options(t: &TableReader<'_, '_>, _context: &OptionsContext<'_>) -> AnalysisOptions {
    AnalysisOptions::Resolution(read_resolution(t))
}

fn read_resolution(t: &TableReader<'_, '_>) -> ResolutionOptions {
    let mut options = ResolutionOptions::default();
    if let Some(n) = t.integer("window", 1, 100_000) {
        options.window = *n.get_ref() as usize;
    }
    if let Some(n) = t.integer("tolerance", 0, 1000) {
        options.tolerance = *n.get_ref() as u32;
    }
    if let Some(h) = t.string("head") {
        if h.get_ref().trim().is_empty() || h.get_ref().starts_with('-') {
            t.problems().push(h.span(), format!("`head` must name a commit (a SHA or a ref), found `{}`", h.get_ref()));
        } else {
            options.head = Some(h.into_inner());
        }
    }
    options
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::spec::{AnalysisKind, ResolutionOptions};
    use crate::analysis::test_support::{finding, s, spec, with_kind, Fixture};
    use crate::finding::{Category, Severity};
    use crate::subject::git::run_for_test as run;

    /// c0 writes f.txt (lines 1–10); c1 rewrites line 2; c2 line 8; c3 adds g.txt; c4 puts two
    /// lines on top of f.txt; c5 rewrites c0's line 5 (line 7 by then). The head is c5.
    fn repository(dir: &Path) -> Vec<String> {
        run(dir, &["init", "-q", "--initial-branch=main"]);
        let mut lines: Vec<String> = (1..=10).map(|i| format!("line {i}")).collect();
        let mut shas = Vec::new();
        let mut commit = |lines: &[String], message: &str| {
            std::fs::write(dir.join("f.txt"), lines.join("\n") + "\n").expect("write");
            run(dir, &["add", "-A"]);
            run(dir, &["commit", "-q", "-m", message]);
            shas.push(run(dir, &["rev-parse", "HEAD"]));
        };
        commit(&lines, "c0");
        lines[1] = "line two".into();
        commit(&lines, "c1");
        lines[7] = "line eight".into();
        commit(&lines, "c2");
        std::fs::write(dir.join("g.txt"), "other\n").expect("write");
        commit(&lines, "c3");
        lines.splice(0..0, ["top".to_string(), "top 2".to_string()]);
        commit(&lines, "c4");
        lines[6] = "line five".into();
        commit(&lines, "c5");
        shas
    }

    fn at(file: &str, line: u32, category: Category, severity: Severity) -> Finding {
        with_kind(finding(file, line, &format!("{file}:{line}")), category, severity)
    }

    #[test]
    fn lines_beyond_the_file_and_paths_outside_the_repository_are_not_traced_and_each_place_is_read_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let shas = repository(dir.path());
        let options = Options { window: 2, tolerance: 0, pending: Pending::IncompleteWindow };
        let mut resolver = Resolver::new(dir.path(), "main", options).expect("head");
        let walk = resolver.walk(&shas[1]).expect("walk");
        let mut trace = |file: &str, line: u32| resolver.trace(&walk, file, Some(Span::new(line, line))).expect("never an error");
        // c2 rewrites line 8; `./f.txt` is f.txt.
        assert_eq!(trace("./f.txt", 8), Outcome::Resolved { commit: shas[2].clone() });
        assert_eq!(trace("f.txt", 10), Outcome::Unresolved, "the last line");
        // A line of 2^40 reads as the largest line there is: beyond the file, not counted.
        let beyond = trace("f.txt", u32::MAX);
        assert_eq!(beyond, Outcome::NotTraced("line 4294967295 is beyond the end of `f.txt`, which has 10 lines in the reviewed commit".into()));
        assert_eq!(beyond.counted(), None);
        assert_eq!(trace("f.txt", 11).reason(2).as_deref(), Some("line 11 is beyond the end of `f.txt`, which has 10 lines in the reviewed commit"));
        assert_eq!(trace("/etc/passwd", 1), Outcome::NotTraced("`/etc/passwd` is an absolute path, not one inside the repository".into()));
        assert_eq!(trace("../f.txt", 1), Outcome::NotTraced("`../f.txt` is a path that climbs out with `..`".into()));
        // A thousand findings at a thousand places of one file: git started a few times.
        let walk = resolver.walk(&shas[2]).expect("walk");
        for i in 0..1000u32 {
            let outcome = resolver.trace(&walk, "f.txt", Some(Span::new(1 + i % 10, 1 + i % 10))).expect("never an error");
            assert!(outcome.counted().is_some(), "{outcome:?}");
        }
        // One cat-file, a rev-list per reviewed commit, a diff per step (c2, c3, c4).
        assert_eq!(resolver.tracer.processes(), 1 + 2 + 3);
    }

    #[test]
    fn findings_resolved_by_later_commits_are_counted_by_hand() {
        let dir = tempfile::tempdir().expect("tempdir");
        let shas = repository(dir.path());
        let mut fx = Fixture::new(&[("reviewer", vec![s("a"), s("b")])], 1);
        // a on c1: line 8 (7–9) rewritten by c2: resolved; line 5 (4–6) untouched by c2, c3:
        // unresolved; no line: not traced.
        fx.add(
            "reviewer=a",
            1,
            &shas[1],
            vec![
                at("f.txt", 8, Category::Bug, Severity::Error),
                at("f.txt", 5, Category::Style, Severity::Nitpick),
                at("f.txt", 0, Category::Bug, Severity::Info),
            ],
        );
        // a on c2: line 5 only moves (c4), c5 is outside its window of 2: unresolved.
        fx.add("reviewer=a", 1, &shas[2], vec![at("f.txt", 5, Category::Bug, Severity::Warning)]);
        // a on c3: line 5 moves to 7 (c4) and c5 rewrites it: resolved; a file c3 lacks: not traced.
        fx.add("reviewer=a", 1, &shas[3], vec![at("f.txt", 5, Category::Bug, Severity::Error), at("missing.txt", 3, Category::Bug, Severity::Error)]);
        // a on c4: one later commit of two: pending.
        fx.add("reviewer=a", 1, &shas[4], vec![at("f.txt", 1, Category::Bug, Severity::Error)]);
        // b on c1: line 3 (2–4): unresolved; on c3: line 9 (8–10, then 10–12): unresolved.
        fx.add("reviewer=b", 1, &shas[1], vec![at("f.txt", 3, Category::Bug, Severity::Error)]);
        fx.add("reviewer=b", 1, &shas[3], vec![at("./f.txt", 9, Category::Bug, Severity::Error)]);
        let repository = Repository {
            repo: dir.path().to_path_buf(),
            head: "main".into(),
            commits: shas.iter().map(|s| (s.clone(), s.clone())).collect(),
            labels: BTreeMap::new(),
            options: ResolutionOptions::default(),
            memo_dir: None,
        };
        let mut analysis = spec(AnalysisKind::RESOLUTION, None);
        analysis.options = crate::analysis::spec::AnalysisOptions::Resolution(ResolutionOptions { window: 2, tolerance: 1, head: None });
        let mut input = fx.input();
        input.extras = std::mem::take(&mut input.extras).with(Some(&repository));
        let out = compute(&analysis, &input);
        let rows = &out.tables[0].rows;
        assert_eq!(rows[0], vec!["`reviewer=a`", "4", "7", "2 / 4", "0.500", "[0.150, 0.850]", "1", "2"]);
        assert_eq!(rows[1], vec!["`reviewer=b`", "2", "2", "0 / 2", "0.000", "[0.000, 0.658]", "0", "0"]);
        assert_eq!(out.data[0]["resolution"]["resolved"], 2);
        assert_eq!(out.data[0]["by_category"]["bug"]["resolved"], 2);
        assert_eq!(out.data[0]["by_category"]["bug"]["posted"], 3);
        assert_eq!(out.data[0]["by_category"]["style"]["posted"], 1);
        let severities: Vec<String> = out.tables[2].rows.iter().filter(|r| r[0] == "`reviewer=a`").map(|r| format!("{} {}", r[1], r[2])).collect();
        assert_eq!(severities, ["error 2 / 2", "warning 0 / 1", "nitpick 0 / 1"], "in severity order");
        let listed: Vec<String> = out.tables[3].rows.iter().map(|r| format!("{} {} {}", r[2], r[3], r[4])).collect();
        assert_eq!(listed, ["f.txt 0 no line", "missing.txt 3 `missing.txt` is not in the reviewed commit"]);
        assert!(out.notes.iter().any(|n| n.contains("proxy") && n.contains("needs no oracle")), "{:?}", out.notes);
        assert!(out.notes.iter().any(|n| n.contains(&format!("{} (1 later)", &shas[4][..7]))), "{:?}", out.notes);

        // Up to c4 instead: c3's findings are pending (one later commit of two), c2's counted.
        analysis.options = crate::analysis::spec::AnalysisOptions::Resolution(ResolutionOptions { window: 2, tolerance: 1, head: Some(shas[4].clone()) });
        let out = compute(&analysis, &input);
        assert_eq!(out.tables[0].rows[0], vec!["`reviewer=a`", "4", "7", "1 / 3", "0.333", "[0.061, 0.792]", "2", "2"]);

        // With a memo directory: the same figures, and a second execution reads the outcomes
        // back instead of tracing them (an outcome edited in the memo shows through).
        let memo = tempfile::tempdir().expect("memo");
        let kept = Repository { memo_dir: Some(memo.path().to_path_buf()), ..repository.clone() };
        analysis.options = crate::analysis::spec::AnalysisOptions::Resolution(ResolutionOptions { window: 2, tolerance: 1, head: None });
        let mut input = fx.input();
        input.extras = std::mem::take(&mut input.extras).with(Some(&kept));
        assert_eq!(compute(&analysis, &input).tables[0].rows[0], vec!["`reviewer=a`", "4", "7", "2 / 4", "0.500", "[0.150, 0.850]", "1", "2"]);
        let files: Vec<std::path::PathBuf> = walk_files(memo.path());
        assert_eq!(files.len(), 4, "one memo per reviewed commit: {files:?}");
        for file in &files {
            let text = std::fs::read_to_string(file).expect("memo");
            let mut memo: Memo = serde_json::from_str(&text).expect("a memo");
            for (outcome, _) in memo.places.values_mut() {
                if matches!(outcome, Outcome::Resolved { .. }) {
                    *outcome = Outcome::Unresolved;
                }
            }
            std::fs::write(file, serde_json::to_vec(&memo).expect("json")).expect("write");
        }
        assert_eq!(compute(&analysis, &input).tables[0].rows[0][3], "0 / 4", "read back from the memo, not traced again");
    }

    fn walk_files(dir: &Path) -> Vec<std::path::PathBuf> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                out.extend(walk_files(&path));
            } else {
                out.push(path);
            }
        }
        out.sort();
        out
    }
}
