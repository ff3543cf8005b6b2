//! One experiment end to end: manifest → targets → plan → execution → analyses → reports.

use crate::analysis::efficacy::context_level::DiffScope;
use crate::analysis::spec::AnalysisKind;
use crate::analysis::{self, AnalysisInput, AnalysisResult, Extras, RunView};
use crate::cache::{CacheStore, LayeredStore, RemoteStore, Store};
use crate::error::Error;
use crate::exec::{self, Emitter, ExecOptions, ReviewerLimits, RunOutcome, WalkView};
use crate::ground_truth::{self, oracle::Oracle};
use crate::manifest::Manifest;
use crate::plan::{self, Plan, ReviewerSet};
use crate::report::{self, model::Results};
use crate::reviewer;
use crate::scoring::stages::{RqsStage, RqsStages};
use crate::scoring::ExperimentScorers;
use crate::subject::TargetSpec;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::watch;

/// A manifest with its reviewers, subjects and plan, ready to execute or show.
pub struct Prepared {
    pub manifest: Manifest,
    /// Where the execution keeps its scratch state (`--work-dir`, else `.runner/` at the
    /// project root).
    pub work_dir: PathBuf,
    /// The reviewers by name (one, `reviewer`, for a manifest with a single `[reviewer]`).
    pub reviewers: ReviewerSet,
    pub plan: Plan,
    pub cache: CacheStore,
    /// The remote cache behind `cache`, when one is configured (`--remote-cache`).
    pub remote: Option<Arc<RemoteStore>>,
    /// The target's ground truth, for analyses only: never passed to a reviewer.
    pub oracle: Option<Oracle>,
    /// Adjudication records named by analyses, by resolved path.
    pub adjudications: BTreeMap<PathBuf, crate::analysis::matching::adjudication::Adjudication>,
    /// RQS v2's jury, claims model, analyzers and embedder, when the plan has scoring nodes.
    pub scorers: Option<Arc<ExperimentScorers>>,
    /// Per `rqs` analysis (by index): its τ and where it came from, and its anchor set.
    pub rqs: BTreeMap<usize, RqsResources>,
}

/// What one `rqs` analysis reads besides the scoring nodes.
#[derive(Debug, Clone, Default)]
pub struct RqsResources {
    pub tau: Option<(f64, String)>,
    pub anchor: Option<crate::analysis::rqs::metric::Anchor>,
}

/// Where things go; CLI flags override the manifest.
#[derive(Debug, Clone, Default)]
pub struct Locations {
    pub cache_dir: Option<PathBuf>,
    pub work_dir: Option<PathBuf>,
    /// A remote cache behind the local one (`s3://bucket/prefix`).
    pub remote_cache: Option<String>,
}

/// Limits on what a plan may hold, and how it will execute; CLI flags set them.
#[derive(Debug, Clone, Copy)]
pub struct PrepareOptions {
    /// Refuse a plan of more runs (`--max-runs`).
    pub max_runs: u64,
    /// The execution will run nothing (`--frozen`): the analyzers' versions come from the
    /// manifest or the cache, never from the installed tools.
    pub frozen: bool,
}

impl Default for PrepareOptions {
    fn default() -> Self {
        Self { max_runs: plan::DEFAULT_MAX_RUNS, frozen: false }
    }
}

pub fn prepare(manifest_path: &std::path::Path, locations: &Locations) -> Result<Prepared, Error> {
    prepare_with(manifest_path, locations, &PrepareOptions::default())
}

/// [`prepare`] under explicit limits.
pub fn prepare_with(manifest_path: &std::path::Path, locations: &Locations, options: &PrepareOptions) -> Result<Prepared, Error> {
    let manifest = crate::manifest::load(manifest_path)?;
    prepare_manifest(manifest, locations, options)
}

fn prepare_manifest(manifest: Manifest, locations: &Locations, options: &PrepareOptions) -> Result<Prepared, Error> {
    let mut reviewers = ReviewerSet::new();
    for named in &manifest.reviewers.entries {
        reviewers.insert(named.name.clone(), reviewer::build::from_spec(&named.spec)?);
    }
    let subjects = crate::plan::subjects::resolve(&manifest)?;
    let plan = plan::build_limited(&manifest, subjects, &reviewers, &RqsStages, options.max_runs)?;
    let cache = CacheStore::new(locations.cache_dir.clone().unwrap_or_else(|| manifest.cache_dir.clone()));
    cache.check_layout()?;
    let oracle = load_oracle(&manifest)?;
    let adjudications = load_adjudications(&manifest)?;
    let (scorers, rqs) = load_scoring(&manifest, &plan, &cache, options.frozen, oracle.as_ref())?;
    let remote = open_remote(locations)?;
    let work_dir = work_dir_of(&manifest, locations);
    Ok(Prepared { manifest, work_dir, reviewers, plan, cache, remote, oracle, adjudications, scorers, rqs })
}

/// The work directory: `--work-dir`, else `.runner/` at the manifest's project root.
fn work_dir_of(manifest: &Manifest, locations: &Locations) -> PathBuf {
    locations.work_dir.clone().unwrap_or_else(|| crate::config::project_root(&manifest.base_dir).join(".runner"))
}

/// The remote cache `locations` names, opened (nothing is sent until it is used).
fn open_remote(locations: &Locations) -> Result<Option<Arc<RemoteStore>>, Error> {
    Ok(locations.remote_cache.as_deref().filter(|u| !u.trim().is_empty()).map(RemoteStore::open).transpose()?.map(Arc::new))
}

/// The scoring clients and, per `rqs` analysis index, its resources.
type Scoring = (Option<Arc<ExperimentScorers>>, BTreeMap<usize, RqsResources>);

/// The scoring clients, when the plan has scoring nodes, and each `rqs` analysis's τ and
/// anchor set. Analyzers are looked up only when the plan has smells, and never by a frozen
/// execution (`scoring::analyzers_for`).
fn load_scoring(manifest: &Manifest, plan: &Plan, cache: &dyn Store, frozen: bool, oracle: Option<&Oracle>) -> Result<Scoring, Error> {
    let counts = plan.node_counts();
    if !counts.keys().any(|k| matches!(k, plan::NodeKind::Score(_))) {
        return Ok((None, BTreeMap::new()));
    }
    let options: Vec<(usize, &crate::analysis::spec::RqsOptions)> = manifest.analyses.iter().enumerate().filter_map(|(i, a)| a.rqs().map(|o| (i, o))).collect();
    let shuffle_seed = options.first().map_or(0, |(_, o)| o.shuffle_seed);
    // Absolute: analyzers run in a scratch directory.
    let root = crate::config::project_root(&manifest.base_dir);
    let root = if root.as_os_str().is_empty() { PathBuf::from(".") } else { root };
    let tools_dir = std::path::absolute(&root).unwrap_or(root).join(".tools");
    let smells_of: std::collections::BTreeSet<&str> = plan
        .graph
        .node_weights()
        .filter_map(|n| match n {
            plan::Node::Score { stage, target: plan::ScoreTarget::Subject(subject), .. } if RqsStage::of(*stage) == Some(RqsStage::Smells) => {
                plan.subjects.get(subject).map(|s| s.identity.as_str())
            }
            _ => None,
        })
        .collect();
    let analyzers = crate::scoring::analyzers_for(&manifest.scoring, &smells_of, &tools_dir, frozen, cache).map_err(Error::Scoring)?;
    let mut scorers = ExperimentScorers::new(&manifest.scoring, shuffle_seed, analyzers).map_err(Error::Scoring)?;
    // The judges match under the first analysis that asks them to (as `runner show` reads the
    // first oracle-matching analysis's rule).
    // A `jury` analysis measures the judges themselves, so they are asked every pair.
    if let (Some(spec), Some(oracle)) = (manifest.analyses.iter().find(|a| a.asks_judges_to_match()), oracle) {
        let every_pair = manifest.analyses.iter().any(|a| a.needs().judges);
        scorers = scorers.with_matching(Arc::new(oracle.clone()), spec.oracle_rule, every_pair);
    }
    let mut rqs = BTreeMap::new();
    for (index, o) in options {
        let mut resources = RqsResources::default();
        if let Some(tau) = o.tau {
            resources.tau = Some((tau, "given in the manifest (`tau`)".to_string()));
        }
        if let (Some(path), Some(fingerprint)) = (&o.calibration, scorers.embedder_fingerprint()) {
            resources.tau = Some(crate::scoring::read_calibration(path, &manifest.base_dir, &fingerprint).map_err(Error::Scoring)?);
        }
        if let Some(path) = &o.anchor {
            resources.anchor = Some(crate::scoring::read_anchor(path, &manifest.base_dir).map_err(Error::Scoring)?);
        }
        rqs.insert(index, resources);
    }
    Ok((Some(Arc::new(scorers)), rqs))
}

impl Prepared {
    /// The store executions read and write: the local cache, with the remote behind it when
    /// one is configured. `warn` is told once if the remote fails.
    pub fn store(&self, warn: crate::cache::layered::Warn) -> Arc<dyn Store> {
        match &self.remote {
            Some(remote) => Arc::new(LayeredStore::new(self.cache.clone(), remote.clone(), warn)),
            None => Arc::new(self.cache.clone()),
        }
    }

    /// The layered store itself, for `cache push` and `cache pull`.
    pub fn layered(&self, warn: crate::cache::layered::Warn) -> Option<LayeredStore> {
        self.remote.as_ref().map(|remote| LayeredStore::new(self.cache.clone(), remote.clone(), warn))
    }

    /// Each reviewer's limits, as the engine applies them.
    pub fn reviewer_limits(&self) -> BTreeMap<String, ReviewerLimits> {
        self.manifest
            .reviewers
            .entries
            .iter()
            .map(|named| (named.name.clone(), ReviewerLimits { max_concurrency: named.spec.max_concurrency, timeout: named.spec.timeout }))
            .collect()
    }
}

/// What `runner validate` checks beyond the manifest's text, so that `exec` does not fail
/// on it later: the reviewer can be built, the target resolves (refs, cases), the plan's
/// size is within `max_runs`, the corpus's oracle is readable and names a ground-truth
/// program for every case, and the report template compiles and renders (strictly) an
/// execution with no results yet. Reads only: runs no reviewer, materializes nothing.
pub fn check(manifest: Manifest, options: &PrepareOptions) -> Result<plan::PlanSize, Vec<String>> {
    let template = manifest.report.template.clone();
    let prepared = prepare_manifest(manifest, &Locations::default(), options).map_err(|e| vec![e.to_string()])?;
    let mut problems = Vec::new();
    if let Some(oracle) = &prepared.oracle {
        let oracle_path = match &prepared.manifest.target {
            TargetSpec::Corpus { dir, .. } => dir.join(ground_truth::oracle::ORACLE_FILE).display().to_string(),
            _ => "the oracle".to_string(),
        };
        for case in &oracle.cases {
            if prepared.plan.subjects.contains_key(&case.id)
                && matches!(prepared.manifest.target, TargetSpec::Corpus { .. })
                && case.ground_truth.program.trim().is_empty()
            {
                problems.push(format!(
                    "case `{}` in `{oracle_path}` has an empty ground-truth program (`groundTruth`): write the program that shows its defect",
                    case.id
                ));
            }
        }
    }
    // Reviewers that could run nothing (a command's program missing), each once.
    for (name, reviewer) in &prepared.reviewers {
        if let Some(problem) = reviewer.setup_problem() {
            problems.push(format!("reviewer `{name}`: {problem}"));
        }
    }
    // Runs that would fail from their inputs alone (a replayed capture missing or malformed),
    // each distinct problem once.
    for run in &prepared.plan.runs {
        if let Some(problem) = prepared.reviewers.get(&run.reviewer).and_then(|r| r.input_problem(&run.cell, &run.subject_id, run.repeat)) {
            let problem = format!("reviewer `{}`: {problem}", run.reviewer);
            if !problems.contains(&problem) {
                problems.push(problem);
            }
        }
    }
    // A resolution rate's head must be a commit of the repository, or nothing can be traced.
    for (i, spec) in prepared.manifest.analyses.iter().enumerate().filter(|(_, a)| a.kind == AnalysisKind::RESOLUTION) {
        let Some(repository) = history_repository(&prepared) else { continue };
        let head = spec.resolution().and_then(|r| r.head.clone()).unwrap_or_else(|| repository.head.clone());
        if crate::subject::trace::Tracer::new(&repository.repo).commit(&head).is_none() {
            problems.push(format!("analysis #{} (`resolution`): `head = \"{head}\"` is not a commit of `{}`", i + 1, repository.repo.display()));
        }
    }
    let missing = RunOutcome::Missing;
    let outcomes: Vec<&RunOutcome> = prepared.plan.runs.iter().map(|_| &missing).collect();
    // No run has results, so no diff scope is needed: nothing is materialized.
    let analyses = (0..prepared.manifest.analyses.len()).map(|i| Arc::new(analyze(&prepared, i, &outcomes, None, None, None, None))).collect();
    let results = build_results(&prepared, &prepared.manifest.path.display().to_string(), &outcomes, analyses);
    if let Err(e) = report::render::check_template(&results, template.as_deref()) {
        problems.push(e.to_string());
    }
    if problems.is_empty() {
        Ok(prepared.plan.size())
    } else {
        Err(problems)
    }
}

/// The adjudication records the analyses name; a missing or unparsable one is an error naming
/// its path and the analysis.
pub(crate) fn load_adjudications(manifest: &Manifest) -> Result<BTreeMap<PathBuf, crate::analysis::matching::adjudication::Adjudication>, Error> {
    let mut out = BTreeMap::new();
    for spec in &manifest.analyses {
        let Some(path) = &spec.adjudication else { continue };
        if out.contains_key(path) {
            continue;
        }
        let record = crate::analysis::matching::adjudication::load(path)
            .map_err(|source| Error::AnalysisAdjudication { analysis: spec.kind.as_str().to_string(), source })?;
        out.insert(path.clone(), record);
    }
    Ok(out)
}

/// The oracle of a corpus (`oracle.json`, when present), of an eval set (its cases' findings) or
/// of a git or external target (its `oracle` file).
pub(crate) fn load_oracle(manifest: &Manifest) -> Result<Option<Oracle>, Error> {
    match &manifest.target {
        TargetSpec::Corpus { dir, .. } => Ok(ground_truth::oracle::load(dir)?),
        TargetSpec::Evals { dir, .. } => {
            let cases = ground_truth::evalcase::load_dir(dir)?;
            Ok(Some(ground_truth::evalcase::to_oracle(&cases)))
        }
        TargetSpec::External { oracle: Some(path), .. } | TargetSpec::Git { oracle: Some(path), .. } | TargetSpec::History { oracle: Some(path), .. } => {
            Ok(Some(ground_truth::oracle::load_file(path)?))
        }
        TargetSpec::Git { oracle: None, .. } | TargetSpec::History { oracle: None, .. } | TargetSpec::External { oracle: None, .. } => Ok(None),
    }
}

/// What `exec` produced.
pub struct Executed {
    pub outcomes: Vec<RunOutcome>,
    /// What the executed reviews cost, what the cache saved, and what `--max-cost` left unrun.
    pub cost: exec::CostReport,
    /// How the scoring nodes (RQS v2) ended.
    pub scoring: exec::ScoringTally,
    pub results: Results,
    /// The report files, and those whose bytes this execution changed.
    pub written: report::render::Written,
}

/// What an execution builds subjects and reads and writes the cache through, when not the
/// prepared experiment's own (`Default`: `subject::materialize` and [`Prepared::store`]); a
/// test counts both.
#[derive(Default, Clone)]
pub struct Through {
    pub materializer: Option<exec::Materializer>,
    pub store: Option<Arc<dyn Store>>,
}

/// Executes a prepared experiment: walks its plan, whose analyze and render nodes compute
/// the analyses and write the reports.
pub async fn execute(
    prepared: &Prepared,
    manifest_label: &str,
    options: ExecOptions,
    asked: report::formats::Asked,
    emitter: &Emitter,
    cancel: watch::Receiver<bool>,
) -> Result<Executed, Error> {
    execute_through(prepared, manifest_label, options, asked, emitter, cancel, Through::default()).await
}

/// [`execute`], building subjects and reading the cache through `through`.
pub async fn execute_through(
    prepared: &Prepared,
    manifest_label: &str,
    options: ExecOptions,
    asked: report::formats::Asked,
    emitter: &Emitter,
    cancel: watch::Receiver<bool>,
    through: Through,
) -> Result<Executed, Error> {
    if options.shard.is_none() {
        check_output(&prepared.manifest.report)?;
    }
    let conclusions = ExperimentConclusions {
        prepared,
        manifest_label,
        frozen: options.frozen,
        sharded: options.shard.is_some(),
        render_stamps: Some(options.work_dir.join("renders")),
        asked,
        parts_shared: prepared.manifest.analyses.iter().map(|_| Default::default()).collect(),
    };
    let materializer: exec::Materializer =
        through.materializer.unwrap_or_else(|| Arc::new(|spec, work_dir| crate::subject::materialize(spec, work_dir).map_err(|e| e.to_string())));
    let scorers = prepared.scorers.clone().map(|s| s as Arc<dyn exec::Scorers>);
    let warner = emitter.clone();
    let store = through.store.unwrap_or_else(|| prepared.store(Arc::new(move |message| warner.emit(exec::Event::Warning { message }))));
    let window = crate::reviewer::llm::adaptive::Registry::global().window();
    let parts = exec::EngineParts {
        plan: &prepared.plan,
        reviewers: &prepared.reviewers,
        scorers,
        materializer,
        cache: store,
        options: &options,
        conclusions: &conclusions,
        emitter,
        cancel,
    };
    let execution = exec::Engine::new(parts).run().await;
    let mut endpoints = window.reports();
    if !endpoints.is_empty() {
        // Base URLs are shown without credentials; a secret a reviewer names is redacted too.
        let redactor = crate::reviewer::redact::Redactor::new(prepared.reviewers.values().flat_map(|r| r.secrets()));
        for e in &mut endpoints {
            e.endpoint = redactor.text(&e.endpoint);
        }
        emitter.emit(exec::Event::Endpoints { endpoints });
    }
    let rendered = execution.report.ok_or(Error::NotRendered)??;
    Ok(Executed { outcomes: execution.outcomes, cost: execution.cost, scoring: rendered.scoring, results: rendered.results, written: rendered.written })
}

/// Before anything runs: the report directory can be written, and the reports' own files
/// there (RESULTS.md, results.json, report.html) are runner's to replace (the charts are
/// checked when they are known, as the reports are written).
fn check_output(report: &crate::manifest::ReportSpec) -> Result<(), Error> {
    crate::config::probe_writable(&report.output).map_err(|why| Error::OutputDir { path: report.output.clone(), why })?;
    let names = ["RESULTS.md", "results.json", report::render::HTML_FILE];
    let outputs = report::outputs::Outputs::open(&report.output, report.force)?;
    outputs.check(names.into_iter().take(if report.html { 3 } else { 2 }))?;
    Ok(())
}

/// The meaning of the plan's analyze and render nodes for one experiment.
struct ExperimentConclusions<'a> {
    prepared: &'a Prepared,
    manifest_label: &'a str,
    frozen: bool,
    /// `--shard`: this execution holds part of the runs, so it writes no report.
    sharded: bool,
    /// Where what each report directory was last rendered from is noted, so reports whose
    /// results.json, template and runner are unchanged are not rendered again.
    render_stamps: Option<PathBuf>,
    /// The formats asked for beyond the core reports (the HTML page, the CI summary).
    asked: report::formats::Asked,
    /// What the parts of each analysis share (in manifest order), worked out by the first.
    parts_shared: Vec<crate::analysis::PartsShared>,
}

/// What the render node produced.
struct Rendered {
    results: Results,
    scoring: exec::ScoringTally,
    /// The report files and those it changed; none when the reports were left as they were.
    written: report::render::Written,
}

impl exec::Conclusions for ExperimentConclusions<'_> {
    type Analysis = Arc<AnalysisResult>;
    type Part = Option<Arc<crate::analysis::PartResult>>;
    type Report = Rendered;
    type Error = report::render::RenderError;

    fn analyze(&self, index: usize, view: &WalkView<'_, Arc<AnalysisResult>, Rendered>) -> Arc<AnalysisResult> {
        let prepared = self.prepared;
        let spec = &prepared.manifest.analyses[index];
        let scopes: Option<BTreeMap<String, DiffScope>> =
            spec.reads_subjects().then(|| view.subjects().into_iter().map(|(id, s)| (id.to_string(), DiffScope::from_files(&s.files))).collect());
        let outcomes = view.runs();
        // A comparison of RQS v2 metrics reads the scoring stages as the (first) rqs analysis does.
        let resources = prepared.rqs.get(&index).or_else(|| spec.reads_scoring().then(|| prepared.rqs.values().next()).flatten());
        let rqs = match (&prepared.scorers, resources) {
            (Some(scorers), Some(resources)) => {
                let mut input = crate::scoring::rqs_input(&prepared.plan, view, scorers, resources.tau.clone());
                input.anchor = resources.anchor.clone();
                Some(input)
            }
            _ => None,
        };
        let votes = match (&prepared.scorers, spec.asks_judges_to_match()) {
            (Some(scorers), true) => crate::scoring::match_votes(&prepared.plan, view, scorers),
            _ => None,
        };
        // The parts computed as their runs finished.
        let early = crate::analysis::Parts::new(view.parts::<Self::Part>(index).into_iter().flatten().cloned());
        let early = (!early.is_empty()).then_some(early);
        Arc::new(analyze(prepared, index, &outcomes, scopes.as_ref(), rqs.as_ref(), votes.as_ref(), early.as_ref()))
    }

    fn analyze_part(&self, index: usize, _part: &str, runs: &[usize], view: &WalkView<'_, Arc<AnalysisResult>, Rendered>) -> Self::Part {
        let prepared = self.prepared;
        let plan = &prepared.plan;
        let runs = runs.iter().filter_map(|&i| plan.runs.get(i).map(|run| (run, view.run(i))));
        let input = analysis_input(prepared, runs, Extras::default().with(self.parts_shared.get(index)));
        analysis::compute_part(&prepared.manifest.analyses[index], &input).map(Arc::new)
    }

    fn render(&self, view: &WalkView<'_, Arc<AnalysisResult>, Rendered>, analyses: &[&Arc<AnalysisResult>]) -> Result<Rendered, report::render::RenderError> {
        let prepared = self.prepared;
        let outcomes = view.runs();
        let results = build_results(prepared, self.manifest_label, &outcomes, analyses.iter().map(|a| Arc::clone(a)).collect());
        // Reports are not overwritten by an execution that has nothing to show: a frozen run
        // with gaps, or one where no run succeeded (a model server down, say).
        // Nor by an interrupted one: its report would be less complete than the one it replaces.
        let nothing_succeeded = !outcomes.is_empty() && outcomes.iter().all(|o| o.success().is_none());
        let scoring = view.scoring_tally();
        let gaps = self.frozen && (outcomes.iter().any(|o| matches!(o, RunOutcome::Missing)) || scoring.not_cached > 0);
        let interrupted = outcomes.iter().any(|o| o.is_interrupted()) || scoring.interrupted > 0;
        let written = if nothing_succeeded || gaps || interrupted || self.sharded {
            report::render::Written::default()
        } else {
            let report = &prepared.manifest.report;
            let options = report::render::WriteOptions {
                force: report.force,
                html: report.html,
                stamps: self.render_stamps.clone(),
                // A fresh run's record (its times) changes results.json: no need to compare.
                maybe_unchanged: !outcomes.iter().any(|o| matches!(o, RunOutcome::Fresh { .. })),
            };
            let mut written = report::render::write_reports(&results, &report.output, report.template.as_deref(), options)?;
            // The other formats, from the same results and what the walk holds (its outcomes,
            // the subjects it built), only beside core reports just written.
            if let Some(results_path) = written.files.iter().find(|p| p.ends_with("results.json")).cloned() {
                let side = || walk_side(prepared, results.clone(), &results_path, &outcomes, view);
                let input = report::formats::FormatInput { results: &results, results_path: &results_path, asked: &self.asked, side: &side };
                written.extend(report::formats::write_formats(&input)?);
            }
            written
        };
        Ok(Rendered { results, scoring, written })
    }

    /// The report template compiles while the reviews run, off the path to the report, at a
    /// background priority: it starts as the first requests are built and sent, and on a busy
    /// machine takes the idle time between answers instead of their core. An execution served
    /// from the cache, whose reports are often unchanged, does not spend a core on it.
    fn reviews_ahead(&self) {
        if !self.sharded {
            let template = self.prepared.manifest.report.template.clone();
            std::thread::spawn(move || {
                // Compiling at the normal priority would still be correct: only slower to yield.
                let _ = runner_core::priority::lower_this_thread();
                report::render::precompile(template.as_deref())
            });
        }
    }
}

/// What an analysis (or one of its parts) reads of planned runs and their outcomes: the
/// successful runs' views, the ids of the others (failed, skipped, not done), the plan's
/// matrix and the target's oracle, and `extras`.
fn analysis_input<'p>(
    prepared: &'p Prepared,
    runs: impl Iterator<Item = (&'p crate::plan::PlannedRun, Option<&'p RunOutcome>)>,
    extras: Extras<'p>,
) -> AnalysisInput<'p> {
    let mut views = Vec::with_capacity(runs.size_hint().0);
    let mut missing = Vec::new();
    for (run, outcome) in runs {
        match outcome.and_then(RunOutcome::success) {
            Some((record, findings)) => {
                views.push(RunView { cell: &run.cell, repeat: run.repeat, subject: &run.subject_id, record, findings, order: run.order })
            }
            None => missing.push(run.id()),
        }
    }
    AnalysisInput {
        runs: views,
        cells: &prepared.plan.cells,
        axis_order: &prepared.plan.axis_order,
        missing,
        repeat: prepared.manifest.matrix.repeat,
        oracle: prepared.oracle.as_ref(),
        extras,
        by_cell: Default::default(),
    }
}

/// Analysis number `index` over the runs' outcomes (plan order).
fn analyze(
    prepared: &Prepared,
    index: usize,
    outcomes: &[&RunOutcome],
    scopes: Option<&BTreeMap<String, DiffScope>>,
    rqs: Option<&crate::analysis::rqs::metric::RqsInput>,
    match_votes: Option<&crate::analysis::matching::matcher::MatchVotes>,
    early: Option<&crate::analysis::Parts>,
) -> AnalysisResult {
    let spec = &prepared.manifest.analyses[index];
    let repository = spec.reads_history().then(|| history_repository(prepared)).flatten();
    let cutoffs = training_cutoffs(prepared);
    let extras = Extras::default()
        .with(scopes)
        .with(repository.as_ref())
        .with(Some(&prepared.adjudications))
        .with(rqs)
        .with(match_votes)
        .with(cutoffs.as_ref())
        .with(early);
    let input = analysis_input(prepared, prepared.plan.runs.iter().zip(outcomes.iter().map(|o| Some(*o))), extras);
    if spec.kind == AnalysisKind::STUDY {
        return crate::study::report::compute(spec, &input);
    }
    analysis::compute(spec, &input)
}

/// Each cell's reviewer's declared training cut-off, by cell id; `None` when no reviewer
/// declares one.
fn training_cutoffs(prepared: &Prepared) -> Option<crate::analysis::corpus::contamination::TrainingCutoffs> {
    let reviewers = &prepared.manifest.reviewers;
    if reviewers.entries.iter().all(|e| e.spec.training_cutoff.is_none()) {
        return None;
    }
    let by_cell = prepared
        .plan
        .cells
        .iter()
        .filter_map(|cell| {
            let value = cell.get(crate::manifest::REVIEWER_AXIS).map(|v| v.render());
            let name = reviewers.name_for(value.as_deref())?;
            let cutoff = reviewers.entries.iter().find(|e| e.name == name)?.spec.training_cutoff.clone()?;
            Some((cell.id.clone(), cutoff))
        })
        .collect();
    Some(crate::analysis::corpus::contamination::TrainingCutoffs(by_cell))
}

/// A history target's repository, the head its findings are followed up to by default (the
/// range's end, else `HEAD`) and each subject's reviewed commit, for the resolution rate.
fn history_repository(prepared: &Prepared) -> Option<crate::analysis::rqs::resolution::Repository> {
    use crate::subject::history::Commits;
    let TargetSpec::History { repo, history, .. } = &prepared.manifest.target else { return None };
    let head = match &history.commits {
        Commits::Range(range) | Commits::Merges(range) => range.split_once("..").map(|(_, end)| end.trim()).filter(|e| !e.is_empty()).unwrap_or("HEAD"),
        Commits::Listed(_) => "HEAD",
    };
    let commits = prepared
        .plan
        .subjects
        .iter()
        .filter_map(|(id, s)| match &s.source {
            crate::subject::SubjectSource::Git { head_sha, .. } => Some((id.clone(), head_sha.clone())),
            _ => None,
        })
        .collect();
    let labels = prepared.plan.history.iter().flat_map(|h| &h.planned).map(|c| (c.sha.clone(), c.label())).collect();
    let options = prepared.manifest.analyses.iter().find_map(|a| a.resolution().cloned()).unwrap_or_default();
    // Traced outcomes are kept in the work directory: a re-report traces only what is new.
    let memo_dir = Some(prepared.work_dir.join("resolution"));
    Some(crate::analysis::rqs::resolution::Repository { repo: repo.clone(), head: head.to_string(), commits, labels, options, memo_dir })
}

/// The results model of an execution.
fn build_results(prepared: &Prepared, manifest_label: &str, outcomes: &[&RunOutcome], analyses: Vec<Arc<AnalysisResult>>) -> Results {
    report::build_results(&prepared.manifest, manifest_label, &prepared.plan, outcomes, reviewer_configs(prepared), analyses)
}

/// Distinct reviewer configurations (as hashed into keys) and the cells that use each.
fn reviewer_configs(prepared: &Prepared) -> Vec<report::model::ReviewerConfig> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    let mut group_of: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let reviewer_of: BTreeMap<&str, &str> = prepared.plan.runs.iter().map(|r| (r.cell.id.as_str(), r.reviewer.as_str())).collect();
    for cell in &prepared.plan.cells {
        let Some(reviewer) = reviewer_of.get(cell.id.as_str()).and_then(|name| prepared.reviewers.get(*name)) else { continue };
        let config = serde_json::to_string(&reviewer.fingerprint(cell)).unwrap_or_default();
        match group_of.get(&config) {
            Some(&at) => groups[at].1.push(cell.id.clone()),
            None => {
                group_of.insert(config.clone(), groups.len());
                groups.push((config, vec![cell.id.clone()]));
            }
        }
    }
    let single = groups.len() == 1;
    groups
        .into_iter()
        .map(|(config, cells)| report::model::ReviewerConfig { config, cells: if single { "all cells".to_string() } else { cells.join(", ") } })
        .collect()
}

/// The planned runs of `prepared` and the cache that holds them, for a blind adjudication sheet.
pub fn sheet_source(prepared: &Prepared) -> crate::study::adjudication::SheetSource<'_> {
    use crate::study::adjudication::{SheetRun, SheetSource};
    SheetSource {
        experiment: &prepared.manifest.experiment.name,
        target: &prepared.manifest.target,
        runs: prepared
            .plan
            .runs
            .iter()
            .map(|r| SheetRun { cell: &r.cell.id, matrix_cell: &r.cell, repeat: r.repeat, case: &r.subject_id, key: &r.key, order: r.order })
            .collect(),
        cases: prepared.plan.subjects.keys().cloned().collect(),
        cells: prepared.plan.cells.iter().map(|c| c.id.clone()).collect(),
        repeats: prepared.manifest.matrix.repeat,
        cache: &prepared.cache,
    }
}

/// A manifest's plan, cache and oracle, to read what its runs said (`runner show`, `runner
/// report`): no scoring client or adjudication is loaded, and nothing is run or written.
pub fn prepare_to_read(manifest_path: &std::path::Path, locations: &Locations) -> Result<Prepared, Error> {
    let manifest = crate::manifest::load(manifest_path)?;
    let mut reviewers = ReviewerSet::new();
    for named in &manifest.reviewers.entries {
        reviewers.insert(named.name.clone(), reviewer::build::from_spec(&named.spec)?);
    }
    let subjects = crate::plan::subjects::resolve(&manifest)?;
    let plan = plan::build_limited(&manifest, subjects, &reviewers, &RqsStages, PrepareOptions::default().max_runs)?;
    let cache = CacheStore::new(locations.cache_dir.clone().unwrap_or_else(|| manifest.cache_dir.clone()));
    cache.check_layout()?;
    let oracle = load_oracle(&manifest)?;
    let remote = open_remote(locations)?;
    let work_dir = work_dir_of(&manifest, locations);
    Ok(Prepared { manifest, work_dir, reviewers, plan, cache, remote, oracle, adjudications: BTreeMap::new(), scorers: None, rqs: BTreeMap::new() })
}

/// The matching rule `runner show` and the page give verdicts under: the manifest's first
/// analysis that scores against the oracle (the default rule when none does).
fn show_rule(prepared: &Prepared) -> crate::analysis::spec::OracleRule {
    prepared.manifest.analyses.iter().find(|a| a.kind.uses_oracle()).map(|a| a.oracle_rule).unwrap_or_default()
}

/// `runner show` on a manifest: the findings of its planned runs that `selection` picks,
/// from the cache (through the store, the remote behind it when one is configured; `warn` is
/// told if the remote fails), with their verdicts against the oracle under [`show_rule`].
pub fn show(prepared: &Prepared, selection: &report::show::Selection, warn: crate::cache::layered::Warn) -> Result<report::show::Shown, Error> {
    let rule = show_rule(prepared);
    let oracle = prepared.oracle.as_ref().map(|o| (o, &rule));
    let store = prepared.store(warn);
    Ok(report::show::collect(&prepared.manifest.experiment.name, &prepared.plan, store.as_ref(), oracle, selection)?)
}

/// `runner show` on a results.json: the findings of the runs it recorded that `selection`
/// picks, under their recorded keys whatever `prepared` (the manifest it names) plans now,
/// from the cache as [`show`] reads it, with verdicts as [`show`] gives them.
pub fn show_recorded(
    prepared: &Prepared,
    results: &Results,
    selection: &report::show::Selection,
    warn: crate::cache::layered::Warn,
) -> Result<report::show::Shown, Error> {
    let rule = show_rule(prepared);
    let oracle = prepared.oracle.as_ref().map(|o| (o, &rule));
    let store = prepared.store(warn);
    let sole_reviewer = match prepared.manifest.reviewers.entries.as_slice() {
        [one] => Some(one.name.as_str()),
        _ => None,
    };
    let recorded = report::show::Recorded { results, plan: &prepared.plan, sole_reviewer };
    Ok(report::show::collect_recorded(&recorded, store.as_ref(), oracle, selection)?)
}

/// One execution for `runner report`: its results.json, the plots beside it and, through the
/// manifest it names (or `manifest`), the findings of the runs it recorded, read from the cache
/// under their recorded keys whatever the manifest plans now, and its subjects' diffs (built
/// from the manifest's target where it still has them as they were reviewed). What cannot be
/// read is said on the page, not an error.
pub fn report_side(
    results_path: &std::path::Path,
    manifest: Option<&std::path::Path>,
    locations: &Locations,
    warn: crate::cache::layered::Warn,
) -> Result<report::html::Side, Error> {
    use report::html;
    let results = Results::read(results_path)?;
    let manifest_path = match manifest {
        Some(path) => Ok(path.to_path_buf()),
        None => html::manifest_of(results_path, &results),
    };
    let prepared =
        manifest_path.and_then(|path| prepare_to_read(&path, locations).map_err(|e| format!("its manifest `{}` could not be read: {e}", path.display())));
    let plots = html::read_plots(results_path);
    let (findings, diffs) = match prepared {
        Ok(prepared) => {
            let findings = show_recorded(&prepared, &results, &report::show::Selection::default(), warn).map_err(|e| e.to_string());
            let diffs = html::recorded_diffs(&results, findings.as_ref().ok(), &prepared.plan, &prepared.work_dir);
            (findings, diffs)
        }
        Err(why) => (Err(why), BTreeMap::new()),
    };
    Ok(html::Side { results_path: results_path.display().to_string(), results, findings, diffs, plots })
}

/// `exec --html`'s side of the page, from what the execution holds: its results, its runs'
/// outcomes (plan order) and the subjects its walk built. Nothing is read from the cache or
/// materialized: a subject whose every review came from the cache has no diff on this page
/// (`runner report` builds it).
fn walk_side(
    prepared: &Prepared,
    results: Results,
    results_path: &std::path::Path,
    outcomes: &[&RunOutcome],
    view: &WalkView<'_, Arc<AnalysisResult>, Rendered>,
) -> report::html::Side {
    let rule = show_rule(prepared);
    let oracle = prepared.oracle.as_ref().map(|o| (o, &rule));
    let shown = report::show::from_outcomes(&prepared.manifest.experiment.name, prepared.plan.runs.iter().zip(outcomes.iter().copied()), oracle);
    let diffs = report::html::built_diffs(prepared.plan.subjects.keys().map(String::as_str), &view.subjects());
    let plots = report::html::read_plots(results_path);
    report::html::Side { results_path: results_path.display().to_string(), results, findings: Ok(shown), diffs, plots }
}
