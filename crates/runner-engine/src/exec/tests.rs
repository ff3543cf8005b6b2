//! Engine tests with a fake backend: limits, failure isolation, cache hits, resume.

use super::*;
use crate::cache::{CacheError, CacheKey, CacheStore, Guard, KeyInputs, Lookup, RunRecord, Store};
use crate::matrix::{expand, Cell};
use crate::matrix::{Axis, AxisValue, Matrix};
use crate::plan::{Dependency, Node, Plan, PlannedRun, ReviewerSet};
use crate::reviewer::{Cost, ReviewError, ReviewJob, ReviewOutput, Reviewer};
use crate::subject::{Subject, SubjectSource, SubjectSpec};
use futures::future::BoxFuture;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex};

/// One execution through the engine, its parts given in order.
#[allow(clippy::too_many_arguments)]
async fn execute<C: Conclusions>(
    plan: &Plan,
    reviewers: &ReviewerSet,
    scorers: Option<Arc<dyn Scorers>>,
    materializer: Materializer,
    cache: Arc<dyn Store>,
    options: &ExecOptions,
    conclusions: &C,
    emitter: &Emitter,
    cancel: watch::Receiver<bool>,
) -> Execution<C::Analysis, C::Report, C::Error> {
    Engine::new(EngineParts { plan, reviewers, scorers, materializer, cache, options, conclusions, emitter, cancel }).run().await
}

/// A reviewer that sleeps, counts concurrency and calls, and fails where told.
#[derive(Default)]
struct FakeReviewer {
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    calls: AtomicUsize,
    latency_ms: u64,
    fail_model: Option<String>,
    exclusive: bool,
    /// Turns cancellation on once this many reviews have finished.
    cancel_after: Option<(usize, StdMutex<Option<watch::Sender<bool>>>)>,
    finished: AtomicUsize,
    /// Reviews in flight wait until this turns true, so a test can see how many run at once.
    gate: Option<watch::Receiver<bool>>,
    /// Findings each review reports.
    findings: usize,
    /// Prompt tokens each review reports.
    tokens: Option<u64>,
    /// The runs reviewed, in the order they started (`cell #repeat @subject`).
    started: StdMutex<Vec<String>>,
    /// How long its cross-process hold takes to come (another process's turn).
    hold_ms: u64,
}

impl Reviewer for FakeReviewer {
    fn kind(&self) -> &'static str {
        "fake"
    }

    fn fingerprint(&self, _cell: &Cell) -> serde_json::Value {
        serde_json::json!({ "fake": 1 })
    }

    fn exclusive_scope(&self, job: &ReviewJob) -> Option<String> {
        self.exclusive.then(|| job.subject.id.clone())
    }

    fn exclusive_hold<'a>(&'a self, _job: &'a ReviewJob) -> BoxFuture<'a, Result<Option<crate::reviewer::Hold>, ReviewError>> {
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(self.hold_ms)).await;
            Ok((self.hold_ms > 0).then(|| Box::new(()) as crate::reviewer::Hold))
        })
    }

    fn review<'a>(&'a self, job: &'a ReviewJob) -> BoxFuture<'a, Result<ReviewOutput, ReviewError>> {
        Box::pin(async move {
            self.calls.fetch_add(1, Ordering::SeqCst);
            self.started.lock().expect("lock").push(crate::matrix::RunId::new(job.cell.id.clone(), job.repeat, job.subject.id.clone()).to_string());
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.max_in_flight.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(self.latency_ms)).await;
            if let Some(gate) = &self.gate {
                let mut gate = gate.clone();
                let _ = gate.wait_for(|open| *open).await;
            }
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            let finished = self.finished.fetch_add(1, Ordering::SeqCst) + 1;
            if let Some((after, tx)) = &self.cancel_after {
                if finished == *after {
                    if let Some(tx) = tx.lock().expect("lock").take() {
                        let _ = tx.send(true);
                    }
                }
            }
            let model = job.cell.get("model").map(|v| v.render()).unwrap_or_default();
            if self.fail_model.as_deref() == Some(model.as_str()) {
                return Err(ReviewError::Failed { message: format!("model {model} broke"), stderr_tail: "boom".into() });
            }
            let findings = (0..self.findings).map(|i| test_finding(&format!("{model} finding {i}"), i as u32 + 1)).collect();
            Ok(ReviewOutput {
                raw: model,
                findings,
                cost: Cost { wall_ms: self.latency_ms, prompt_tokens: self.tokens, ..Cost::default() },
                ..ReviewOutput::default()
            })
        })
    }
}

/// A plan of `models × repeat` runs over git-like subjects, built without git, with one
/// analyze node observing every run and a render node after it.
fn plan(models: &[&str], repeat: u32, subjects: &[&str]) -> Plan {
    let matrix = Matrix::new(vec![Axis { name: "model".into(), values: models.iter().map(|m| AxisValue::Str(m.to_string())).collect() }], repeat);
    let cells = expand(&matrix);
    let subject_specs: BTreeMap<String, SubjectSpec> = subjects
        .iter()
        .map(|s| {
            (
                s.to_string(),
                SubjectSpec {
                    id: s.to_string(),
                    identity: format!("identity-{s}"),
                    source: SubjectSource::Git { repo: PathBuf::from("/nonexistent"), base_sha: "a".into(), head_sha: "b".into() },
                    holdout: false,
                },
            )
        })
        .collect();
    let mut runs = Vec::new();
    let mut graph = petgraph::graph::DiGraph::new();
    let mats: BTreeMap<String, _> = subjects.iter().map(|s| (s.to_string(), graph.add_node(Node::Materialize { subject: s.to_string() }))).collect();
    let analysis = graph.add_node(Node::Analyze { index: 0 });
    let render = graph.add_node(Node::Render);
    graph.add_edge(analysis, render, Dependency::Observes);
    for cell in &cells {
        for r in 1..=repeat {
            for s in subjects {
                let inputs = KeyInputs::new("fake", serde_json::json!({}), cell, &format!("identity-{s}"), r);
                let key = crate::cache::key::review_key(&inputs);
                let n = graph.add_node(Node::Review { run: runs.len() });
                graph.add_edge(mats[*s], n, Dependency::Requires);
                graph.add_edge(n, analysis, Dependency::Observes);
                runs.push(PlannedRun { cell: cell.clone().into(), repeat: r, subject_id: s.to_string(), reviewer: "fake".into(), key, inputs, order: 0 });
            }
        }
    }
    Plan { cells: cells.into_iter().map(std::sync::Arc::new).collect(), subjects: subject_specs, runs, graph, axis_order: vec!["model".into()], history: None }
}

fn options(jobs: usize, limit: Option<usize>) -> ExecOptions {
    ExecOptions {
        jobs,
        frozen: false,
        refresh: false,
        work_dir: PathBuf::from("/nonexistent"),
        experiment: "t".into(),
        reviewers: [("fake".to_string(), ReviewerLimits { max_concurrency: limit, timeout: Duration::from_secs(30) })].into(),
        max_cost: None,
        shard: None,
        steal: None,
    }
}

/// Counts what the analyze, part and render nodes saw.
#[derive(Default)]
struct Counting {
    analyzed_runs: AtomicUsize,
    analyzed_successes: AtomicUsize,
    rendered: AtomicUsize,
    /// Each part as it ran: its name, its runs, and how many runs of the whole plan were done.
    parts_run: StdMutex<Vec<(String, usize, usize)>>,
    /// The parts the analysis read: their names and successes.
    parts_read: StdMutex<Vec<(String, usize)>>,
}

impl Conclusions for Counting {
    type Analysis = usize;
    type Part = (String, usize);
    type Report = usize;
    type Error = String;

    fn analyze_part(&self, _index: usize, part: &str, runs: &[usize], view: &WalkView<'_, usize, usize>) -> (String, usize) {
        let done = (0..view.runs().len()).filter(|&i| view.run(i).is_some()).count();
        self.parts_run.lock().expect("lock").push((part.to_string(), runs.len(), done));
        (part.to_string(), runs.iter().filter(|&&i| view.run(i).and_then(RunOutcome::success).is_some()).count())
    }

    fn analyze(&self, _index: usize, view: &WalkView<'_, usize, usize>) -> usize {
        *self.parts_read.lock().expect("lock") = view.parts::<(String, usize)>(0).into_iter().cloned().collect();
        let runs = view.runs();
        self.analyzed_runs.store(runs.len(), Ordering::SeqCst);
        let ok = runs.iter().filter(|o| o.success().is_some()).count();
        self.analyzed_successes.store(ok, Ordering::SeqCst);
        ok
    }

    fn render(&self, _view: &WalkView<'_, usize, usize>, analyses: &[&usize]) -> Result<usize, String> {
        self.rendered.fetch_add(1, Ordering::SeqCst);
        Ok(analyses.iter().copied().sum())
    }
}

/// A materializer that counts its calls and fails for the subjects named.
fn materializer(calls: Arc<AtomicUsize>, failing: &[&str]) -> Materializer {
    let failing: Vec<String> = failing.iter().map(|s| s.to_string()).collect();
    Arc::new(move |spec: &SubjectSpec, _: &std::path::Path| {
        calls.fetch_add(1, Ordering::SeqCst);
        if failing.contains(&spec.id) {
            return Err(format!("cannot build {}", spec.id));
        }
        Ok(fake_subject(&spec.id))
    })
}

async fn walk(
    plan: &Plan,
    reviewer: Arc<FakeReviewer>,
    cache: &CacheStore,
    opts: &ExecOptions,
    cancel: watch::Receiver<bool>,
) -> (Execution<usize, usize, String>, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let reviewers: ReviewerSet = [("fake".to_string(), reviewer as Arc<dyn Reviewer>)].into();
    let execution =
        execute(plan, &reviewers, None, materializer(calls.clone(), &[]), Arc::new(cache.clone()), opts, &Counting::default(), &Emitter::silent(), cancel)
            .await;
    (execution, calls)
}

async fn run_with(plan: &Plan, reviewer: Arc<FakeReviewer>, cache: &CacheStore, opts: &ExecOptions) -> Vec<RunOutcome> {
    let (_tx, rx) = watch::channel(false);
    walk(plan, reviewer, cache, opts, rx).await.0.outcomes
}

fn fake_subject(id: &str) -> Subject {
    Subject {
        id: id.into(),
        repo_dir: PathBuf::from("/nonexistent"),
        base_sha: "a".into(),
        head_sha: "b".into(),
        diff: String::new(),
        files: Vec::new(),
        stet_error: None,
        review_task: None,
        spec: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn global_and_reviewer_limits_are_respected() {
    // Reviews are held until as many are in flight as the binding limit allows; then no
    // further one may have started. No clock decides it.
    async fn max_in_flight(jobs: usize, reviewer_limit: Option<usize>, expected: usize) -> usize {
        let dir = tempfile::tempdir().expect("tempdir");
        let plan = plan(&["a", "b", "c", "d"], 3, &["s1"]);
        let (open, gate) = watch::channel(false);
        let reviewer = Arc::new(FakeReviewer { gate: Some(gate), ..Default::default() });
        let (held, opts) = (reviewer.clone(), options(jobs, reviewer_limit));
        let walk = tokio::spawn(async move { run_with(&plan, held, &CacheStore::new(dir.path()), &opts).await });
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        while reviewer.in_flight.load(Ordering::SeqCst) < expected {
            assert!(std::time::Instant::now() < deadline, "the engine never ran {expected} reviews at once");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        open.send(true).expect("open the gate");
        let outcomes = walk.await.expect("walk");
        assert!(outcomes.iter().all(|o| o.success().is_some()));
        assert_eq!(reviewer.calls.load(Ordering::SeqCst), 12);
        reviewer.max_in_flight.load(Ordering::SeqCst)
    }
    assert_eq!(max_in_flight(8, Some(3), 3).await, 3, "the reviewer limit (3) binds below --jobs (8)");
    assert_eq!(max_in_flight(2, None, 2).await, 2, "--jobs 2 binds");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exclusive_scopes_run_one_at_a_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = plan(&["a", "b", "c"], 2, &["only-repo"]);
    let reviewer = Arc::new(FakeReviewer { latency_ms: 10, exclusive: true, ..Default::default() });
    run_with(&plan, reviewer.clone(), &CacheStore::new(dir.path()), &options(8, None)).await;
    assert_eq!(reviewer.max_in_flight.load(Ordering::SeqCst), 1);
}

/// Waiting for another process's turn in the scope is not the run's time: a hold that comes
/// after longer than the run's timeout (and its backstop) still lets the run finish.
#[tokio::test(start_paused = true)]
async fn waiting_for_another_process_turn_is_not_the_runs_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = plan(&["a"], 1, &["repo"]);
    let reviewer = Arc::new(FakeReviewer { exclusive: true, hold_ms: 60_000, latency_ms: 10, ..Default::default() });
    let outcomes = run_with(&plan, reviewer.clone(), &CacheStore::new(dir.path()), &options(2, None)).await;
    assert!(outcomes.iter().all(|o| o.success().is_some()), "{outcomes:?}");
    assert_eq!(reviewer.calls.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_fails_only_its_own_runs_and_is_never_served() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = CacheStore::new(dir.path());
    let plan = plan(&["good", "bad"], 2, &["s1", "s2"]);
    let reviewer = Arc::new(FakeReviewer { fail_model: Some("bad".into()), ..Default::default() });
    let outcomes = run_with(&plan, reviewer, &cache, &options(4, None)).await;
    for (run, outcome) in plan.runs.iter().zip(&outcomes) {
        let bad = run.cell.id == "model=bad";
        assert_eq!(outcome.success().is_none(), bad, "{}", run.label());
    }
    // A second execution runs the failed runs again and only them.
    let again = Arc::new(FakeReviewer::default());
    let outcomes = run_with(&plan, again.clone(), &cache, &options(4, None)).await;
    assert_eq!(again.calls.load(Ordering::SeqCst), 4);
    assert!(outcomes.iter().all(|o| o.success().is_some()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cached_execution_materializes_nothing_and_still_analyzes_and_renders() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = CacheStore::new(dir.path());
    let plan = plan(&["a", "b"], 3, &["s1"]);
    let (first, calls) = walk(&plan, Arc::new(FakeReviewer::default()), &cache, &options(4, None), watch::channel(false).1).await;
    assert_eq!(calls.load(Ordering::SeqCst), 1, "one subject, materialized once");
    assert_eq!(first.analyses, vec![6]);
    let second = Arc::new(FakeReviewer::default());
    let (execution, calls) = walk(&plan, second.clone(), &cache, &options(4, None), watch::channel(false).1).await;
    assert_eq!(second.calls.load(Ordering::SeqCst), 0);
    assert_eq!(calls.load(Ordering::SeqCst), 0, "a fully cached execution touches no subject");
    assert!(execution.outcomes.iter().all(|o| matches!(o, RunOutcome::Cached { .. })));
    assert_eq!(execution.analyses, vec![6], "the analyze node ran over every cached run");
    assert_eq!(execution.report, Some(Ok(6)), "the render node ran after the analysis");
}

/// [`plan`] with its analysis in parts, one per repeat: each part observes the runs of its
/// repeat, and the analysis its parts.
fn plan_in_parts(models: &[&str], repeat: u32, subjects: &[&str]) -> Plan {
    let mut plan = plan(models, repeat, subjects);
    let analysis = plan.graph.node_indices().find(|n| matches!(plan.graph[*n], Node::Analyze { .. })).expect("analysis");
    for r in 1..=repeat {
        let part = plan.graph.add_node(Node::AnalyzePart { index: 0, part: format!("repeat {r}") });
        plan.graph.add_edge(part, analysis, Dependency::Observes);
        let reviews: Vec<_> = plan.review_nodes().into_iter().enumerate().filter(|(i, _)| plan.runs[*i].repeat == r).map(|(_, n)| n).collect();
        for review in reviews {
            plan.graph.add_edge(review, part, Dependency::Observes);
        }
    }
    plan
}

/// One execution of `plan` whose analyze, part and render nodes `conclusions` answers.
async fn with_conclusions<C: Conclusions>(
    plan: &Plan,
    reviewers: &ReviewerSet,
    cache: &CacheStore,
    opts: &ExecOptions,
    conclusions: &C,
) -> Execution<C::Analysis, C::Report, C::Error> {
    let (_tx, rx) = watch::channel(false);
    let subjects = materializer(Arc::new(AtomicUsize::new(0)), &[]);
    execute(plan, reviewers, None, subjects, Arc::new(cache.clone()), opts, conclusions, &Emitter::silent(), rx).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_analysis_part_runs_once_its_own_runs_are_done_and_the_analysis_reads_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = CacheStore::new(dir.path());
    let plan = plan_in_parts(&["a", "b"], 3, &["s1"]);
    let conclusions = Counting::default();
    // One review at a time: a repeat's part runs while the other repeats' runs wait.
    let reviewer = Arc::new(FakeReviewer { latency_ms: 5, fail_model: Some("b".into()), ..FakeReviewer::default() });
    let reviewers: ReviewerSet = [("fake".to_string(), reviewer as Arc<dyn Reviewer>)].into();
    let execution = with_conclusions(&plan, &reviewers, &cache, &options(1, Some(1)), &conclusions).await;
    let ran = conclusions.parts_run.lock().expect("lock").clone();
    assert_eq!(ran.len(), 3, "each part once: {ran:?}");
    assert!(ran.iter().all(|(_, runs, done)| *runs == 2 && done >= runs), "each read its own two runs, once done: {ran:?}");
    assert!(ran[0].2 < 6, "the first part ran before the other repeats' runs were all done: {ran:?}");
    let read = conclusions.parts_read.lock().expect("lock").clone();
    assert_eq!(read, vec![("repeat 1".to_string(), 1), ("repeat 2".to_string(), 1), ("repeat 3".to_string(), 1)], "model b failed: one success a part");
    assert_eq!(execution.analyses, vec![3]);
    // Served from the cache, the parts run again (beside nothing), and so does the analysis.
    let conclusions = Counting::default();
    let again = with_conclusions(&plan, &reviewers, &cache, &options(4, None), &conclusions).await;
    assert_eq!(conclusions.parts_run.lock().expect("lock").len(), 3);
    assert_eq!(conclusions.parts_read.lock().expect("lock").len(), 3);
    assert_eq!(again.report, Some(Ok(3)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_materialization_skips_exactly_its_dependents() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = CacheStore::new(dir.path());
    let plan = plan(&["a", "b"], 2, &["good", "broken"]);
    let reviewer = Arc::new(FakeReviewer::default());
    let reviewers: ReviewerSet = [("fake".to_string(), reviewer.clone() as Arc<dyn Reviewer>)].into();
    let conclusions = Counting::default();
    let calls = Arc::new(AtomicUsize::new(0));
    let execution = execute(
        &plan,
        &reviewers,
        None,
        materializer(calls, &["broken"]),
        Arc::new(cache.clone()),
        &options(4, None),
        &conclusions,
        &Emitter::silent(),
        watch::channel(false).1,
    )
    .await;
    for (run, outcome) in plan.runs.iter().zip(&execution.outcomes) {
        if run.subject_id == "broken" {
            let RunOutcome::Skipped(SkipReason::SubjectFailed { subject, error }) = outcome else { panic!("{outcome:?}") };
            assert_eq!(subject, "broken");
            assert_eq!(error, "cannot build broken");
        } else {
            assert!(outcome.success().is_some(), "{}", run.label());
        }
    }
    assert_eq!(reviewer.calls.load(Ordering::SeqCst), 4, "only the runs on the good subject ran");
    // The analysis observes every run, failed or not, and still runs.
    assert_eq!(conclusions.analyzed_runs.load(Ordering::SeqCst), 8);
    assert_eq!(conclusions.analyzed_successes.load(Ordering::SeqCst), 4);
    assert_eq!(conclusions.rendered.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn named_reviewers_run_their_own_cells_under_their_own_limits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = CacheStore::new(dir.path());
    let mut plan = plan(&["a", "b", "c", "d"], 2, &["s1"]);
    for run in &mut plan.runs {
        if run.cell.id == "model=a" || run.cell.id == "model=b" {
            run.reviewer = "serial".into();
        }
    }
    let serial = Arc::new(FakeReviewer { latency_ms: 10, ..Default::default() });
    let wide = Arc::new(FakeReviewer { latency_ms: 10, ..Default::default() });
    let reviewers: ReviewerSet = [("serial".to_string(), serial.clone() as Arc<dyn Reviewer>), ("fake".to_string(), wide.clone() as Arc<dyn Reviewer>)].into();
    let mut opts = options(8, None);
    opts.reviewers.insert("serial".into(), ReviewerLimits { max_concurrency: Some(1), timeout: Duration::from_secs(30) });
    let calls = Arc::new(AtomicUsize::new(0));
    let execution = execute(
        &plan,
        &reviewers,
        None,
        materializer(calls, &[]),
        Arc::new(cache.clone()),
        &opts,
        &Counting::default(),
        &Emitter::silent(),
        watch::channel(false).1,
    )
    .await;
    assert!(execution.outcomes.iter().all(|o| o.success().is_some()));
    assert_eq!(serial.calls.load(Ordering::SeqCst), 4);
    assert_eq!(wide.calls.load(Ordering::SeqCst), 4);
    assert_eq!(serial.max_in_flight.load(Ordering::SeqCst), 1, "the serial reviewer's own limit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_reviewer_stops_its_queue() {
    struct Down(AtomicUsize);
    impl Reviewer for Down {
        fn kind(&self) -> &'static str {
            "down"
        }
        fn fingerprint(&self, _cell: &Cell) -> serde_json::Value {
            serde_json::json!({})
        }
        fn review<'a>(&'a self, _job: &'a ReviewJob) -> BoxFuture<'a, Result<ReviewOutput, ReviewError>> {
            Box::pin(async move {
                self.0.fetch_add(1, Ordering::SeqCst);
                Err(ReviewError::Unreachable { message: "connection refused".into(), stderr_tail: String::new() })
            })
        }
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = plan(&["a", "b", "c"], 4, &["s1"]);
    let down = Arc::new(Down(AtomicUsize::new(0)));
    let reviewers: ReviewerSet = [("fake".to_string(), down.clone() as Arc<dyn Reviewer>)].into();
    let calls = Arc::new(AtomicUsize::new(0));
    let execution = execute(
        &plan,
        &reviewers,
        None,
        materializer(calls, &[]),
        Arc::new(CacheStore::new(dir.path())),
        &options(1, None),
        &Counting::default(),
        &Emitter::silent(),
        watch::channel(false).1,
    )
    .await;
    assert_eq!(down.0.load(Ordering::SeqCst), 1, "with one slot, the first failure stops every later run");
    let skipped = execution.outcomes.iter().filter(|o| matches!(o, RunOutcome::Skipped(SkipReason::ServerUnreachable { .. }))).count();
    assert_eq!(skipped, 11);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_keeps_finished_runs_and_resume_does_only_the_rest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = CacheStore::new(dir.path());
    let plan = plan(&["a", "b", "c", "d", "e", "f"], 2, &["s1"]);
    let (tx, rx) = watch::channel(false);
    // Cancellation arrives when the third review finishes: no clock decides it.
    let reviewer = Arc::new(FakeReviewer { latency_ms: 5, cancel_after: Some((3, StdMutex::new(Some(tx)))), ..Default::default() });
    let (execution, _) = walk(&plan, reviewer, &cache, &options(2, None), rx).await;
    let done = execution.outcomes.iter().filter(|o| o.success().is_some()).count();
    assert!((3..12).contains(&done), "some but not all runs finished before the interruption: {done}");
    assert!(execution.outcomes.iter().any(RunOutcome::is_interrupted));
    assert!(execution.report.is_some(), "the report node still runs over what finished");

    let resumed = Arc::new(FakeReviewer::default());
    let outcomes = run_with(&plan, resumed.clone(), &cache, &options(2, None)).await;
    assert_eq!(resumed.calls.load(Ordering::SeqCst), 12 - done, "only the unfinished runs run again");
    assert_eq!(outcomes.iter().filter(|o| o.success().is_some()).count(), 12);
}

/// A store in front of a directory store, as another kind of store would be: the first time
/// the engine asks for a run's lock, "another process" holds it and stores that run's result
/// meanwhile.
struct BusyElsewhere {
    inner: CacheStore,
    inputs: BTreeMap<CacheKey, KeyInputs>,
    seen: StdMutex<std::collections::BTreeSet<CacheKey>>,
    successes: AtomicUsize,
}

impl Store for BusyElsewhere {
    fn lookup(&self, key: &CacheKey) -> Lookup {
        self.inner.lookup(key)
    }

    fn location(&self) -> String {
        Store::location(&self.inner)
    }

    fn raw_output(&self, record: &crate::cache::RunRecord) -> Result<String, crate::cache::EntryError> {
        self.inner.raw_output(record)
    }

    fn store_success(
        &self,
        experiment: &str,
        label: &str,
        slot: &str,
        key: &CacheKey,
        inputs: &KeyInputs,
        output: &ReviewOutput,
    ) -> Result<RunRecord, CacheError> {
        self.successes.fetch_add(1, Ordering::SeqCst);
        self.inner.store_success(experiment, label, slot, key, inputs, output)
    }

    fn store_failure(&self, label: &str, slot: &str, key: &CacheKey, error: &ReviewError) -> Result<(), CacheError> {
        self.inner.store_failure(label, slot, key, error)
    }

    fn lookup_value(&self, key: &CacheKey) -> crate::cache::ValueLookup {
        self.inner.lookup_value(key)
    }

    fn store_value(&self, experiment: &str, stage: &str, key: &CacheKey, inputs: &serde_json::Value, value: &serde_json::Value) -> Result<(), CacheError> {
        self.inner.store_value(experiment, stage, key, inputs, value)
    }

    fn try_lock_run(&self, key: &CacheKey) -> Result<Option<Guard>, CacheError> {
        if self.seen.lock().expect("seen").insert(key.clone()) {
            let output = ReviewOutput { raw: "from the other process".into(), ..Default::default() };
            self.inner.store_success("t", "elsewhere", "slot", key, &self.inputs[key], &output)?;
            return Ok(None);
        }
        Store::try_lock_run(&self.inner, key)
    }

    fn hold(&self) -> Result<Guard, CacheError> {
        self.inner.hold()
    }

    fn remember_slot(&self, slot: &str, key: &CacheKey) -> Result<(), CacheError> {
        self.inner.remember_slot(slot, key)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engine_uses_any_store_and_takes_a_result_another_holder_of_the_lock_stored() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = plan(&["a", "b"], 2, &["s1"]);
    let store = Arc::new(BusyElsewhere {
        inner: CacheStore::new(dir.path()),
        inputs: plan.runs.iter().map(|r| (r.key.clone(), r.inputs.clone())).collect(),
        seen: StdMutex::default(),
        successes: AtomicUsize::new(0),
    });
    let reviewer = Arc::new(FakeReviewer::default());
    let reviewers: ReviewerSet = [("fake".to_string(), reviewer.clone() as Arc<dyn Reviewer>)].into();
    let calls = Arc::new(AtomicUsize::new(0));
    let execution = execute(
        &plan,
        &reviewers,
        None,
        materializer(calls, &[]),
        store.clone(),
        &options(2, None),
        &Counting::default(),
        &Emitter::silent(),
        watch::channel(false).1,
    )
    .await;
    assert_eq!(execution.outcomes.len(), 4);
    assert!(execution.outcomes.iter().all(|o| matches!(o, RunOutcome::Cached { .. })), "{:?}", execution.outcomes);
    assert_eq!(reviewer.calls.load(Ordering::SeqCst), 0, "no run started while another holder had its lock");
    assert_eq!(store.successes.load(Ordering::SeqCst), 0);
}

/// A directory store whose writes take a while and count how many are in flight at once.
struct SlowWrites {
    inner: CacheStore,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    writes: AtomicUsize,
    /// The reviewer whose results are written, to see how many finished reviews wait.
    reviewer: Arc<FakeReviewer>,
    max_backlog: AtomicUsize,
}

impl SlowWrites {
    fn write<T>(&self, write: impl FnOnce() -> T) -> T {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let backlog = self.reviewer.finished.load(Ordering::SeqCst).saturating_sub(self.writes.load(Ordering::SeqCst));
        self.max_backlog.fetch_max(backlog, Ordering::SeqCst);
        // Long enough for fast reviews to pile up behind it if nothing bounded the writes.
        std::thread::sleep(Duration::from_millis(20));
        let out = write();
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        out
    }
}

impl Store for SlowWrites {
    fn lookup(&self, key: &CacheKey) -> Lookup {
        self.inner.lookup(key)
    }

    fn location(&self) -> String {
        Store::location(&self.inner)
    }

    fn raw_output(&self, record: &crate::cache::RunRecord) -> Result<String, crate::cache::EntryError> {
        self.inner.raw_output(record)
    }

    fn store_success(
        &self,
        experiment: &str,
        label: &str,
        slot: &str,
        key: &CacheKey,
        inputs: &KeyInputs,
        output: &ReviewOutput,
    ) -> Result<RunRecord, CacheError> {
        self.write(|| self.inner.store_success(experiment, label, slot, key, inputs, output))
    }

    fn store_failure(&self, label: &str, slot: &str, key: &CacheKey, error: &ReviewError) -> Result<(), CacheError> {
        self.write(|| self.inner.store_failure(label, slot, key, error))
    }

    fn lookup_value(&self, key: &CacheKey) -> crate::cache::ValueLookup {
        self.inner.lookup_value(key)
    }

    fn store_value(&self, experiment: &str, stage: &str, key: &CacheKey, inputs: &serde_json::Value, value: &serde_json::Value) -> Result<(), CacheError> {
        self.write(|| self.inner.store_value(experiment, stage, key, inputs, value))
    }

    fn try_lock_run(&self, key: &CacheKey) -> Result<Option<Guard>, CacheError> {
        Store::try_lock_run(&self.inner, key)
    }

    fn hold(&self) -> Result<Guard, CacheError> {
        self.inner.hold()
    }

    fn remember_slot(&self, slot: &str, key: &CacheKey) -> Result<(), CacheError> {
        self.inner.remember_slot(slot, key)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_writes_in_flight_and_waiting_never_exceed_the_writer_bound() {
    assert_eq!((super::writes::writers_for(0), super::writes::writers_for(2), super::writes::writers_for(512)), (1, 2, super::writes::MAX_WRITERS));
    // Writes running at once leave a core to the requests, but never stop.
    assert_eq!((super::writes::running_for(1), super::writes::running_for(2), super::writes::running_for(16)), (1, 1, 15));
    let dir = tempfile::tempdir().expect("tempdir");
    // 48 instant reviews, a failing model among them: each review's slot is free again long
    // before its write is done, so unbounded writes would pile up far past `--jobs`.
    let plan = plan(&["a", "b", "broken"], 16, &["s1"]);
    let reviewer = Arc::new(FakeReviewer { fail_model: Some("broken".into()), ..FakeReviewer::default() });
    let store = Arc::new(SlowWrites {
        inner: CacheStore::new(dir.path()),
        in_flight: AtomicUsize::new(0),
        max_in_flight: AtomicUsize::new(0),
        writes: AtomicUsize::new(0),
        reviewer: reviewer.clone(),
        max_backlog: AtomicUsize::new(0),
    });
    let reviewers: ReviewerSet = [("fake".to_string(), reviewer.clone() as Arc<dyn Reviewer>)].into();
    let execution = execute(
        &plan,
        &reviewers,
        None,
        materializer(Arc::new(AtomicUsize::new(0)), &[]),
        store.clone(),
        &options(2, None),
        &Counting::default(),
        &Emitter::silent(),
        watch::channel(false).1,
    )
    .await;
    assert_eq!(execution.outcomes.iter().filter(|o| o.success().is_some()).count(), 32);
    assert_eq!(store.writes.load(Ordering::SeqCst), 48, "every success and every failure was written");
    let max = store.max_in_flight.load(Ordering::SeqCst);
    assert!((1..=2).contains(&max), "{max} writes in flight at once with --jobs 2");
    // Finished reviews not yet written: the writes in flight and the reviews waiting for a
    // writer in their slots, never a queue of finished results (each holding a lock file).
    let backlog = store.max_backlog.load(Ordering::SeqCst);
    assert!(backlog <= 4, "{backlog} finished reviews waited to be written with --jobs 2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_writes_run_on_background_threads_and_survive_a_panicking_write() {
    let caller = runner_core::priority::this_thread_nice();
    let writers = super::writes::Writers::for_jobs(4);
    let (name, nice) = writers.run(|| (std::thread::current().name().map(String::from), runner_core::priority::this_thread_nice())).await.expect("a write");
    assert_eq!(name.as_deref(), Some("runner-cache-writer"));
    if cfg!(target_os = "linux") {
        assert!(nice.is_some_and(|n| n >= runner_core::priority::BACKGROUND_NICE), "a writer thread runs at nice {nice:?}");
    }
    assert_eq!(runner_core::priority::this_thread_nice(), caller, "the caller keeps its priority");
    let failed = writers.run(|| -> usize { panic!("a write that panics") }).await;
    assert!(failed.is_err_and(|e| e.contains("panicked")));
    // Its thread goes on, and every permit came back.
    let after: Vec<usize> = futures::future::join_all((0..8).map(|i| writers.run(move || i * 2))).await.into_iter().map(|r| r.expect("a write")).collect();
    assert_eq!(after, (0..8).map(|i| i * 2).collect::<Vec<_>>());
}

fn test_finding(message: &str, line: u32) -> crate::finding::Finding {
    serde_json::from_value(serde_json::json!({
        "id": format!("f{line}"), "file": "a.rs", "line": line, "severity": "warning", "category": "bug", "confidence": 1, "message": message
    }))
    .expect("finding")
}

/// The fake judge's stage: declared here, as a scoring layer declares its own.
const FAKE_JUDGE: crate::plan::Stage = crate::plan::Stage::new("judge", 0, |_, target| format!("the fake judge on {target:?}"));

/// The fake judge's node on run `run`.
fn fake_judge(run: usize) -> Node {
    Node::Score { stage: FAKE_JUDGE, member: 0, target: crate::plan::ScoreTarget::Run(run) }
}

/// A jury of one fake judge: one call per finding, answering `yes`; counts the calls it runs
/// and turns cancellation on after `cancel_after` of them.
#[derive(Default)]
struct FakeScorers {
    runs: AtomicUsize,
    cancel_after: Option<(usize, StdMutex<Option<watch::Sender<bool>>>)>,
    /// Tokens each call costs against `--max-cost` (`None`: calls are not metered).
    tokens: Option<u64>,
}

impl super::Scorers for FakeScorers {
    fn calls(&self, node: &Node, inputs: &super::NodeInputs<'_>) -> Result<Vec<super::Call>, String> {
        let findings = inputs.findings.ok_or("no findings")?;
        assert!(matches!(node, Node::Score { stage, .. } if *stage == FAKE_JUDGE), "{node:?}");
        Ok(findings
            .iter()
            .enumerate()
            .map(|(i, f)| super::Call {
                stage: "judge",
                inputs: serde_json::json!({"subject": inputs.subject_identity, "message": f.message}),
                endpoint: "judge:fake".into(),
                payload: serde_json::json!({"finding": i}),
            })
            .collect())
    }

    fn run(self: Arc<Self>, call: super::Call, subject: Option<Arc<Subject>>) -> super::CallFuture {
        Box::pin(async move {
            assert!(subject.is_some(), "a call that runs has its subject");
            let done = self.runs.fetch_add(1, Ordering::SeqCst) + 1;
            if let Some((after, tx)) = &self.cancel_after {
                if done == *after {
                    if let Some(tx) = tx.lock().expect("lock").take() {
                        let _ = tx.send(true);
                    }
                    // Hold this call until the engine abandons it.
                    std::future::pending::<()>().await;
                }
            }
            Ok(serde_json::json!({"verdict": "yes", "for": call.inputs["message"]}))
        })
    }

    fn endpoint_limit(&self, _endpoint: &str) -> usize {
        1
    }

    fn metered(&self, _call: &super::Call) -> bool {
        self.tokens.is_some()
    }

    fn cost(&self, _call: &super::Call, answer: Option<&serde_json::Value>, _elapsed: Duration) -> CallCost {
        CallCost { tokens: if answer.is_some() { self.tokens.unwrap_or(0) } else { 0 }, ms: 1 }
    }
}

/// [`plan`] with one judge node per run, requiring the run and its subject.
fn judged_plan(models: &[&str], subjects: &[&str]) -> Plan {
    let mut plan = plan(models, 1, subjects);
    let analysis = plan.graph.node_indices().find(|n| matches!(plan.graph[*n], Node::Analyze { .. })).expect("analysis");
    for (i, n) in plan.review_nodes().into_iter().enumerate() {
        let judge = plan.graph.add_node(fake_judge(i));
        plan.graph.add_edge(n, judge, Dependency::Requires);
        let m = plan.graph.node_indices().find(|m| plan.graph[*m] == Node::Materialize { subject: plan.runs[i].subject_id.clone() }).expect("subject");
        plan.graph.add_edge(m, judge, Dependency::Requires);
        plan.graph.add_edge(judge, analysis, Dependency::Observes);
    }
    plan
}

/// Counts the judge answers the analysis saw.
#[derive(Default)]
struct CountingJudged;

impl Conclusions for CountingJudged {
    type Analysis = (usize, usize);
    type Part = ();
    type Report = ();
    type Error = String;

    fn analyze_part(&self, _index: usize, _part: &str, _runs: &[usize], _view: &WalkView<'_, (usize, usize), ()>) {}

    fn analyze(&self, _index: usize, view: &WalkView<'_, (usize, usize), ()>) -> (usize, usize) {
        let (mut answers, mut failed) = (0, 0);
        for i in 0..view.runs().len() {
            match view.scored(&fake_judge(i)) {
                super::ScoredView::Done(s) => answers += s.values.len(),
                super::ScoredView::Failed(_) => failed += 1,
                super::ScoredView::Absent => {}
            }
        }
        (answers, failed)
    }

    fn render(&self, _view: &WalkView<'_, (usize, usize), ()>, _analyses: &[&(usize, usize)]) -> Result<(), String> {
        Ok(())
    }
}

async fn judged_walk(
    plan: &Plan,
    reviewer: Arc<FakeReviewer>,
    scorers: Arc<FakeScorers>,
    cache: &CacheStore,
    opts: &ExecOptions,
    cancel: watch::Receiver<bool>,
) -> ((usize, usize), usize) {
    let calls = Arc::new(AtomicUsize::new(0));
    let reviewers: ReviewerSet = [("fake".to_string(), reviewer as Arc<dyn Reviewer>)].into();
    let execution =
        execute(plan, &reviewers, Some(scorers), materializer(calls.clone(), &[]), Arc::new(cache.clone()), opts, &CountingJudged, &Emitter::silent(), cancel)
            .await;
    (execution.analyses.first().copied().unwrap_or_default(), calls.load(Ordering::SeqCst))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn judge_calls_are_cached_one_by_one_and_a_cached_execution_builds_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = CacheStore::new(dir.path());
    let plan = judged_plan(&["a", "b"], &["s1", "s2"]);
    let reviewer = || Arc::new(FakeReviewer { findings: 3, ..Default::default() });
    let scorers = Arc::new(FakeScorers::default());
    let (seen, built) = judged_walk(&plan, reviewer(), scorers.clone(), &cache, &options(4, None), watch::channel(false).1).await;
    assert_eq!(seen, (4 * 3, 0), "every finding of every run is judged");
    assert_eq!(scorers.runs.load(Ordering::SeqCst), 12);
    assert_eq!(built, 2);

    let again = Arc::new(FakeScorers::default());
    let (seen, built) = judged_walk(&plan, reviewer(), again.clone(), &cache, &options(4, None), watch::channel(false).1).await;
    assert_eq!(seen, (12, 0));
    assert_eq!(again.runs.load(Ordering::SeqCst), 0, "every judge call came from the cache");
    assert_eq!(built, 0, "a fully cached execution materializes nothing");

    let mut frozen = options(4, None);
    frozen.frozen = true;
    let (seen, _) = judged_walk(&plan, reviewer(), Arc::new(FakeScorers::default()), &cache, &frozen, watch::channel(false).1).await;
    assert_eq!(seen, (12, 0), "a frozen execution reads the same answers");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_judge_node_resumes_without_repeating_finished_calls() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = CacheStore::new(dir.path());
    let plan = judged_plan(&["a"], &["s1"]);
    let reviewer = || Arc::new(FakeReviewer { findings: 5, ..Default::default() });
    let (tx, rx) = watch::channel(false);
    let first = Arc::new(FakeScorers { cancel_after: Some((3, StdMutex::new(Some(tx)))), ..Default::default() });
    let (seen, _) = judged_walk(&plan, reviewer(), first.clone(), &cache, &options(1, None), rx).await;
    assert_eq!(seen.0, 0, "the interrupted node has no result");
    assert_eq!(first.runs.load(Ordering::SeqCst), 3);

    let second = Arc::new(FakeScorers::default());
    let (seen, _) = judged_walk(&plan, reviewer(), second.clone(), &cache, &options(1, None), watch::channel(false).1).await;
    assert_eq!(seen, (5, 0));
    // Two calls finished before the interruption (the third was abandoned): three are left.
    assert_eq!(second.runs.load(Ordering::SeqCst), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_review_skips_exactly_its_judge_node() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = CacheStore::new(dir.path());
    let plan = judged_plan(&["ok", "broken"], &["s1"]);
    let reviewer = Arc::new(FakeReviewer { findings: 2, fail_model: Some("broken".into()), ..Default::default() });
    let scorers = Arc::new(FakeScorers::default());
    let (seen, _) = judged_walk(&plan, reviewer, scorers.clone(), &cache, &options(2, None), watch::channel(false).1).await;
    assert_eq!(seen, (2, 1), "the good run is judged, the broken run's judge node is skipped");
    assert_eq!(scorers.runs.load(Ordering::SeqCst), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cost_budget_stops_new_reviews_and_a_larger_one_continues_from_the_cache() {
    // 12 runs of 100 tokens each, 3 at a time, under a budget of 250 tokens: a review starts
    // only while fewer than 250 tokens are spent, so at least 3 run (0, 100, 200 spent when
    // they start) and at most the in-flight ones overshoot: 2 finished + 3 in flight = 5.
    let plan = plan(&["a", "b"], 1, &["s1", "s2", "s3", "s4", "s5", "s6"]);
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = CacheStore::new(dir.path().join("cache"));
    let reviewer = Arc::new(FakeReviewer { latency_ms: 5, tokens: Some(100), ..FakeReviewer::default() });
    let opts = ExecOptions { max_cost: Some(Budget::Tokens(250)), ..options(3, None) };
    let (_tx, rx) = watch::channel(false);
    let (execution, _) = walk(&plan, reviewer.clone(), &cache, &opts, rx).await;
    let ran = reviewer.calls.load(Ordering::SeqCst);
    assert!((3..=5).contains(&ran), "{ran} reviews ran");
    let over = execution.outcomes.iter().filter(|o| o.is_over_budget()).count();
    assert_eq!(over, 12 - ran, "every run not started is over budget");
    assert_eq!(execution.outcomes.iter().filter(|o| matches!(o, RunOutcome::Fresh { .. })).count(), ran);
    assert_eq!(execution.cost.incurred, Spent { tokens: 100 * ran as u64, review_ms: 5 * ran as u64, runs: ran });
    assert_eq!((execution.cost.saved.runs, execution.cost.unrun), (0, 12 - ran));
    assert!(execution.outcomes.iter().all(|o| o.success().is_some() || o.is_over_budget()), "nothing failed: the rest is over budget");

    // A larger budget: the finished runs come from the cache (their cost saved), only the rest run.
    let again = Arc::new(FakeReviewer { latency_ms: 5, tokens: Some(100), ..FakeReviewer::default() });
    let opts = ExecOptions { max_cost: Some(Budget::Tokens(5_000)), ..options(3, None) };
    let (_tx, rx) = watch::channel(false);
    let (execution, _) = walk(&plan, again.clone(), &cache, &opts, rx).await;
    assert_eq!(again.calls.load(Ordering::SeqCst), 12 - ran, "only the runs left unrun ran");
    assert!(execution.outcomes.iter().all(|o| o.success().is_some()));
    assert_eq!(execution.cost.saved, Spent { tokens: 100 * ran as u64, review_ms: 5 * ran as u64, runs: ran });
    assert_eq!(execution.cost.incurred.tokens, 100 * (12 - ran) as u64);
    assert_eq!(execution.cost.unrun, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_in_seconds_counts_review_wall_time() {
    // Each review records 40 ms; at most one in flight: under 100 ms, reviews start at 0, 40
    // and 80 ms spent, so exactly 3 run.
    let plan = plan(&["a"], 1, &["s1", "s2", "s3", "s4", "s5"]);
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = CacheStore::new(dir.path().join("cache"));
    let reviewer = Arc::new(FakeReviewer { latency_ms: 40, ..FakeReviewer::default() });
    let opts = ExecOptions { max_cost: Some(Budget::Seconds(0.1)), ..options(1, None) };
    let (_tx, rx) = watch::channel(false);
    let (execution, _) = walk(&plan, reviewer.clone(), &cache, &opts, rx).await;
    assert_eq!(reviewer.calls.load(Ordering::SeqCst), 3);
    assert_eq!((execution.cost.incurred.review_ms, execution.cost.unrun), (120, 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_runs_its_own_runs_and_judges_and_leaves_the_rest_unfailed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = CacheStore::new(dir.path());
    let plan = judged_plan(&["a", "b", "c", "d"], &["s1", "s2"]);
    let shard = crate::plan::Shard { index: 0, count: 2 };
    let own = plan.runs.iter().filter(|r| shard.contains(&r.key)).count();
    assert!(own > 0 && own < 8, "both shards have runs: {own}");
    let reviewer = Arc::new(FakeReviewer { findings: 2, ..Default::default() });
    let scorers = Arc::new(FakeScorers::default());
    let opts = ExecOptions { shard: Some(shard), ..options(2, None) };
    let calls = Arc::new(AtomicUsize::new(0));
    let reviewers: ReviewerSet = [("fake".to_string(), reviewer.clone() as Arc<dyn Reviewer>)].into();
    let execution = execute(
        &plan,
        &reviewers,
        Some(scorers.clone()),
        materializer(calls, &[]),
        Arc::new(cache.clone()),
        &opts,
        &CountingJudged,
        &Emitter::silent(),
        watch::channel(false).1,
    )
    .await;
    assert_eq!(reviewer.calls.load(Ordering::SeqCst), own, "only this shard's runs are reviewed");
    assert_eq!(scorers.runs.load(Ordering::SeqCst), own * 2, "and only their findings judged");
    let others: Vec<&RunOutcome> = execution.outcomes.iter().filter(|o| o.success().is_none()).collect();
    assert_eq!(others.len(), 8 - own);
    assert!(others.iter().all(|o| o.is_other_shard()), "the rest are left to the other shard, not failed");
    assert!(execution.outcomes.iter().all(|o| o.success().is_some() || o.is_other_shard()), "nothing failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stealing_shard_starts_its_own_runs_before_the_others() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = CacheStore::new(dir.path());
    let plan = plan(&["a", "b", "c", "d", "e", "f"], 2, &["s1"]);
    let shard = crate::plan::Shard { index: 1, count: 3 };
    let owned: std::collections::BTreeSet<String> = plan.runs.iter().filter(|r| shard.contains(&r.key)).map(|r| r.label()).collect();
    let reviewer = Arc::new(FakeReviewer::default());
    let opts = ExecOptions { shard: Some(shard), steal: Some(Duration::from_secs(60)), ..options(1, None) };
    let outcomes = run_with(&plan, reviewer.clone(), &cache, &opts).await;
    assert!(outcomes.iter().all(|o| o.success().is_some()), "a local store grants every lease: every run ran");
    let started = reviewer.started.lock().expect("lock").clone();
    assert_eq!(started.len(), 12);
    let (first, rest) = started.split_at(owned.len());
    assert!(first.iter().all(|r| owned.contains(r)), "own runs first: {started:?}");
    assert!(rest.iter().all(|r| !owned.contains(r)), "then the other shards': {started:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cost_budget_counts_and_stops_scoring_calls_and_reports_them_apart() {
    // One run of 5 findings, reviews free, each judge call 100 tokens, one call at a time,
    // under 250 tokens: calls start at 0, 100 and 200 spent; the other two are left unrun.
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = CacheStore::new(dir.path());
    let plan = judged_plan(&["a"], &["s1"]);
    let reviewers: ReviewerSet = [("fake".to_string(), Arc::new(FakeReviewer { findings: 5, ..Default::default() }) as Arc<dyn Reviewer>)].into();
    let run = |scorers: Arc<FakeScorers>, budget: u64| {
        let (reviewers, cache) = (reviewers.clone(), cache.clone());
        let plan = &plan;
        async move {
            let opts = ExecOptions { max_cost: Some(Budget::Tokens(budget)), ..options(2, None) };
            let (tx, rx) = watch::channel(false);
            let execution =
                execute(plan, &reviewers, Some(scorers), materializer(Arc::default(), &[]), Arc::new(cache), &opts, &CountingJudged, &Emitter::silent(), rx)
                    .await;
            drop(tx);
            execution
        }
    };
    let first = Arc::new(FakeScorers { tokens: Some(100), ..Default::default() });
    let execution = run(first.clone(), 250).await;
    assert_eq!(first.runs.load(Ordering::SeqCst), 3, "calls start only below the budget");
    assert_eq!(execution.analyses, vec![(0, 1)], "the judge node is left without a result");
    assert_eq!(execution.cost.scoring["judge"], CallsSpent { tokens: 300, ms: 3, calls: 3 });
    assert_eq!((execution.cost.unrun_calls, execution.cost.unrun, execution.cost.incurred.tokens), (2, 0, 0));
    assert_eq!(execution.cost.total(), (300, 3));

    // A larger budget: the three answers come from the cache, only the two left run.
    let second = Arc::new(FakeScorers { tokens: Some(100), ..Default::default() });
    let execution = run(second.clone(), 10_000).await;
    assert_eq!(second.runs.load(Ordering::SeqCst), 2);
    assert_eq!(execution.analyses, vec![(5, 0)]);
    assert_eq!((execution.cost.scoring["judge"].calls, execution.cost.unrun_calls), (2, 0));
}
