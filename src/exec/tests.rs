//! Engine tests with a fake backend: limits, failure isolation, cache hits, resume.

use super::*;
use crate::cache::{CacheError, CacheKey, CacheStore, KeyInputs};
use crate::manifest::{Axis, AxisValue, Matrix};
use crate::plan::{expand, Node, PlannedRun};
use crate::reviewer::{Cost, ReviewOutput};
use crate::target::{SubjectSource, SubjectSpec};
use futures::future::BoxFuture;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A reviewer that sleeps, counts concurrency and calls, and fails where told.
#[derive(Default)]
struct FakeReviewer {
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    calls: AtomicUsize,
    latency_ms: u64,
    fail_model: Option<String>,
    exclusive: bool,
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

    fn review<'a>(&'a self, job: &'a ReviewJob) -> BoxFuture<'a, Result<ReviewOutput, ReviewError>> {
        Box::pin(async move {
            self.calls.fetch_add(1, Ordering::SeqCst);
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.max_in_flight.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(self.latency_ms)).await;
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            let model = job.cell.get("model").map(|v| v.render()).unwrap_or_default();
            if self.fail_model.as_deref() == Some(model.as_str()) {
                return Err(ReviewError::Failed { message: format!("model {model} broke"), stderr_tail: "boom".into() });
            }
            Ok(ReviewOutput { raw: model, cost: Cost { wall_ms: self.latency_ms, ..Cost::default() }, ..ReviewOutput::default() })
        })
    }
}

use crate::plan::Cell;

/// A plan of `models × repeat` runs over one git-like subject, built without git.
fn plan(models: &[&str], repeat: u32, subjects: &[&str]) -> Plan {
    let matrix = Matrix {
        axes: vec![Axis { name: "model".into(), values: models.iter().map(|m| AxisValue::Str(m.to_string())).collect() }],
        repeat,
    };
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
    let mut order = Vec::new();
    let mats: BTreeMap<String, _> = subjects.iter().map(|s| (s.to_string(), graph.add_node(Node::Materialize { subject: s.to_string() }))).collect();
    for cell in &cells {
        for r in 1..=repeat {
            for s in subjects {
                let inputs = KeyInputs::new("fake", serde_json::json!({}), cell, &format!("identity-{s}"), r);
                let key = crate::cache::key::review_key(&inputs);
                let n = graph.add_node(Node::Review { run: runs.len() });
                graph.add_edge(mats[*s], n, ());
                order.push(n);
                runs.push(PlannedRun { cell: cell.clone(), repeat: r, subject_id: s.to_string(), key, inputs });
            }
        }
    }
    Plan { cells, subjects: subject_specs, runs, graph, order, axis_order: vec!["model".into()] }
}

/// Subjects that need no git: materialization is replaced by a prepared subject map.
fn options(jobs: usize, limit: Option<usize>) -> ExecOptions {
    ExecOptions {
        jobs,
        frozen: false,
        refresh: false,
        work_dir: PathBuf::from("/nonexistent"),
        experiment: "t".into(),
        timeout: Duration::from_secs(30),
        reviewer_limit: limit,
    }
}

async fn run_with(plan: &Plan, reviewer: Arc<FakeReviewer>, cache: &CacheStore, opts: &ExecOptions) -> Vec<RunOutcome> {
    let (_tx, rx) = watch::channel(false);
    let prepared: BTreeMap<String, Arc<Subject>> = plan.subjects.keys().map(|id| (id.clone(), Arc::new(fake_subject(id)))).collect();
    let pending: Vec<usize> = (0..plan.runs.len()).filter(|i| !matches!(cache.lookup(&plan.runs[*i].key), Lookup::Hit { .. })).collect();
    let mut out: Vec<Option<RunOutcome>> = vec![None; plan.runs.len()];
    for (i, o) in out.iter_mut().enumerate() {
        if let Lookup::Hit { record, findings } = cache.lookup(&plan.runs[i].key) {
            *o = Some(RunOutcome::Cached { record, findings });
        }
    }
    let emitter = Emitter::silent();
    let engine = Engine { plan, reviewer, cache: Arc::new(cache.clone()), options: opts, emitter: &emitter };
    for (i, o) in engine.review(&pending, prepared, rx).await {
        out[i] = Some(o);
    }
    out.into_iter().map(|o| o.unwrap_or(RunOutcome::Missing)).collect()
}

fn fake_subject(id: &str) -> Subject {
    Subject {
        id: id.into(),
        repo_dir: PathBuf::from("/nonexistent"),
        base_sha: "a".into(),
        head_sha: "b".into(),
        diff: String::new(),
        files: Vec::new(),
        review_task: None,
        spec: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn global_and_reviewer_limits_are_respected() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = CacheStore::new(dir.path());
    let plan = plan(&["a", "b", "c", "d"], 3, &["s1"]);
    let reviewer = Arc::new(FakeReviewer { latency_ms: 20, ..Default::default() });
    let outcomes = run_with(&plan, reviewer.clone(), &cache, &options(8, Some(3))).await;
    assert!(outcomes.iter().all(|o| o.success().is_some()));
    assert_eq!(reviewer.calls.load(Ordering::SeqCst), 12);
    assert_eq!(reviewer.max_in_flight.load(Ordering::SeqCst), 3, "the reviewer limit (3) binds below --jobs (8)");

    let dir2 = tempfile::tempdir().expect("tempdir");
    let reviewer2 = Arc::new(FakeReviewer { latency_ms: 20, ..Default::default() });
    run_with(&plan, reviewer2.clone(), &CacheStore::new(dir2.path()), &options(2, None)).await;
    assert_eq!(reviewer2.max_in_flight.load(Ordering::SeqCst), 2, "--jobs 2 binds");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exclusive_scopes_run_one_at_a_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = plan(&["a", "b", "c"], 2, &["only-repo"]);
    let reviewer = Arc::new(FakeReviewer { latency_ms: 10, exclusive: true, ..Default::default() });
    run_with(&plan, reviewer.clone(), &CacheStore::new(dir.path()), &options(8, None)).await;
    assert_eq!(reviewer.max_in_flight.load(Ordering::SeqCst), 1);
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
async fn a_second_execution_is_served_from_the_cache() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = CacheStore::new(dir.path());
    let plan = plan(&["a", "b"], 3, &["s1"]);
    let first = Arc::new(FakeReviewer::default());
    run_with(&plan, first.clone(), &cache, &options(4, None)).await;
    let second = Arc::new(FakeReviewer::default());
    let outcomes = run_with(&plan, second.clone(), &cache, &options(4, None)).await;
    assert_eq!(second.calls.load(Ordering::SeqCst), 0);
    assert!(outcomes.iter().all(|o| matches!(o, RunOutcome::Cached { .. })));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_keeps_finished_runs_and_resume_does_only_the_rest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = CacheStore::new(dir.path());
    let plan = plan(&["a", "b", "c", "d", "e", "f"], 2, &["s1"]);
    let prepared: BTreeMap<String, Arc<Subject>> = [("s1".to_string(), Arc::new(fake_subject("s1")))].into();
    let slow = Arc::new(FakeReviewer { latency_ms: 60, ..Default::default() });
    let (tx, rx) = watch::channel(false);
    let pending: Vec<usize> = (0..plan.runs.len()).collect();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let _ = tx.send(true);
    });
    let (opts, emitter) = (options(2, None), Emitter::silent());
    let engine = Engine { plan: &plan, reviewer: slow, cache: Arc::new(cache.clone()), options: &opts, emitter: &emitter };
    let outcomes = engine.review(&pending, prepared, rx).await;
    canceller.await.expect("canceller");
    let done = outcomes.iter().filter(|(_, o)| o.success().is_some()).count();
    assert!((2..12).contains(&done), "some but not all runs finished before the interruption: {done}");

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
    seen: StdMutex<BTreeSet<CacheKey>>,
    successes: AtomicUsize,
}

impl Store for BusyElsewhere {
    fn lookup(&self, key: &CacheKey) -> Lookup {
        self.inner.lookup(key)
    }

    fn store_success(&self, experiment: &str, label: &str, slot: &str, key: &CacheKey, inputs: &KeyInputs, output: &ReviewOutput) -> Result<RunRecord, CacheError> {
        self.successes.fetch_add(1, Ordering::SeqCst);
        self.inner.store_success(experiment, label, slot, key, inputs, output)
    }

    fn store_failure(&self, label: &str, slot: &str, key: &CacheKey, error: &ReviewError) -> Result<(), CacheError> {
        self.inner.store_failure(label, slot, key, error)
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
    let prepared: BTreeMap<String, Arc<Subject>> = [("s1".to_string(), Arc::new(fake_subject("s1")))].into();
    let reviewer = Arc::new(FakeReviewer::default());
    let (_tx, rx) = watch::channel(false);
    let (opts, emitter) = (options(2, None), Emitter::silent());
    let pending: Vec<usize> = (0..plan.runs.len()).collect();
    let engine = Engine { plan: &plan, reviewer: reviewer.clone(), cache: store.clone(), options: &opts, emitter: &emitter };
    let outcomes = engine.review(&pending, prepared, rx).await;
    assert_eq!(outcomes.len(), 4);
    assert!(outcomes.iter().all(|(_, o)| matches!(o, RunOutcome::Cached { .. })), "{outcomes:?}");
    assert_eq!(reviewer.calls.load(Ordering::SeqCst), 0, "no run started while another holder had its lock");
    assert_eq!(store.successes.load(Ordering::SeqCst), 0);
}
