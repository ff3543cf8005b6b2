//! Running scoring nodes ([`crate::plan::Node::Score`], of stages declared above the engine:
//! RQS v2's claims, smells, judges and embeddings). A scoring node is a list of calls; each call is cached under its own key ([`stage_key`] of the stage and what
//! determines the answer), so an interrupted node repeats no finished call, and runs under
//! its endpoint's own limit. A model call (the scorers say which) starts only while the
//! execution's `--max-cost` budget is not reached, and what it cost is counted against it.
//!
//! The experiment supplies what the calls are ([`Scorers`]); the engine decides when they
//! run, whether the cache already has them, and records what they produced.

use super::budget::{CallCost, Meter};
use crate::cache::key::stage_key;
use crate::cache::{CacheKey, Store, ValueLookup};
use crate::finding::Finding;
use crate::plan::{Node, Stage};
use crate::subject::Subject;
use futures::future::BoxFuture;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex as StdMutex};
use tokio::sync::{watch, Semaphore};

/// A call's answer, or why it failed.
pub type CallFuture = BoxFuture<'static, Result<Value, String>>;

/// One model or analyzer call of a scoring node.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The stage's name (RQS v2's `claims`, `smells`, `judge`, `match`, `embed`): part of the key.
    pub stage: &'static str,
    /// Everything that determines the answer: the producer's fingerprint and the content key
    /// of what it reads. Known without materializing anything, so a cached call needs no
    /// repository.
    pub inputs: Value,
    /// The endpoint whose concurrency limit the call counts against.
    pub endpoint: String,
    /// What the call needs to run that is not in its key (a finding to show, texts to embed).
    pub payload: Value,
}

impl Call {
    pub fn key(&self) -> CacheKey {
        stage_key(self.stage, &self.inputs)
    }
}

/// What a scoring node's calls are computed from.
pub struct NodeInputs<'a> {
    /// The id of the subject the node scores (what an oracle knows it by).
    pub subject: &'a str,
    /// The content key of the subject the node scores.
    pub subject_identity: &'a str,
    /// The run's findings (judge and review-embedding nodes).
    pub findings: Option<&'a [Finding]>,
    /// The name of the reviewer whose run the node scores (judge, match and review-embedding
    /// nodes); empty for a subject's nodes.
    pub reviewer: &'a str,
    /// The answers of the scoring nodes this node requires, by stage (a subject's claims and
    /// smells, for its pseudo-reference embedding).
    pub scored: Vec<(Stage, &'a [Value])>,
}

impl<'a> NodeInputs<'a> {
    /// The answers of the required node of `stage`; `None` where the node requires none.
    pub fn scored_by(&self, stage: Stage) -> Option<&'a [Value]> {
        self.scored.iter().find(|(s, _)| *s == stage).map(|(_, values)| *values)
    }
}

/// The scoring stages' meaning: the experiment's jury, claims model, analyzers and embedder
/// (and, for match nodes, whatever the experiment compares a run's findings with).
pub trait Scorers: Send + Sync {
    /// The calls of a scoring node, in a stable order.
    fn calls(&self, node: &Node, inputs: &NodeInputs<'_>) -> Result<Vec<Call>, String>;
    /// Runs one call that the cache does not have; `subject` is the node's materialized subject.
    fn run(self: Arc<Self>, call: Call, subject: Option<Arc<Subject>>) -> CallFuture;
    /// How many calls to `endpoint` may run at once (within `--jobs`).
    fn endpoint_limit(&self, endpoint: &str) -> usize;
    /// The answer of a call that needs no work and no cache: one read from data already in
    /// memory (a replayed judge's recorded decision). It is neither stored nor metered, and
    /// a frozen execution has it too.
    fn answer_now(&self, _call: &Call) -> Option<Result<Value, String>> {
        None
    }
    /// Whether `--max-cost` counts and stops this call (a model call, not local work).
    fn metered(&self, _call: &Call) -> bool {
        false
    }
    /// What a metered call that ran cost: from its answer, or, failed, the `elapsed` time.
    fn cost(&self, _call: &Call, answer: Option<&Value>, elapsed: std::time::Duration) -> CallCost {
        let _ = answer;
        CallCost { tokens: 0, ms: elapsed.as_millis() as u64 }
    }
}

/// The answers of one scoring node's calls, in call order, with the calls' payloads (a
/// cached answer may be shared by several calls with equal keys, so what it was for is the
/// call's, not the answer's).
#[derive(Debug, Clone, Default)]
pub struct Scored {
    pub values: Vec<Value>,
    pub payloads: Vec<Value>,
    /// How many came from the cache.
    pub cached: usize,
}

/// Looks every call up (answered at once, or in the cache): all of them known, or `None`.
pub(crate) fn all_cached(cache: &dyn Store, scorers: &dyn Scorers, calls: &[Call]) -> Option<Scored> {
    let mut values = Vec::with_capacity(calls.len());
    for call in calls {
        if let Some(answer) = scorers.answer_now(call) {
            values.push(answer.ok()?);
            continue;
        }
        match cache.lookup_value(&call.key()) {
            ValueLookup::Hit(value) => values.push(value),
            ValueLookup::Miss | ValueLookup::Corrupt(_) => return None,
        }
    }
    Some(Scored { cached: values.len(), values, payloads: calls.iter().map(|c| c.payload.clone()).collect() })
}

/// The limits scoring calls share.
#[derive(Clone)]
pub(crate) struct StageShared {
    pub cache: Arc<dyn Store>,
    pub scorers: Arc<dyn Scorers>,
    pub experiment: String,
    pub refresh: bool,
    pub frozen: bool,
    pub endpoints: Arc<StdMutex<HashMap<String, Arc<Semaphore>>>>,
    pub cancel: watch::Receiver<bool>,
    /// Bounds the cache writes in flight, shared with the reviews.
    pub(super) writers: super::writes::Writers,
    /// What reviews and calls cost so far, against `--max-cost`.
    pub(super) meter: Arc<Meter>,
}

impl StageShared {
    fn endpoint(&self, name: &str) -> Arc<Semaphore> {
        let mut map = self.endpoints.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(name.to_string()).or_insert_with(|| Arc::new(Semaphore::new(self.scorers.endpoint_limit(name).max(1)))).clone()
    }
}

/// Why a scoring node has no result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum NodeError {
    /// The execution was interrupted; finished calls are cached.
    Interrupted,
    /// Frozen mode and a call is not in the cache.
    NotCached,
    /// `--max-cost` was reached before a call could start (the budget, as shown).
    OverBudget(String),
    Failed(String),
}

/// Runs a scoring node's calls concurrently: each is taken from the cache when it is there,
/// else run under the limits and stored. The first failure fails the node; what finished is
/// stored already, so running again repeats none of it. Calls the budget keeps from starting
/// leave the node unrun once the calls in flight have finished (and been stored).
pub(crate) async fn run_node(shared: StageShared, calls: Vec<Call>, subject: Option<Arc<Subject>>) -> Result<Scored, NodeError> {
    let total = calls.len();
    let payloads = calls.iter().map(|c| c.payload.clone()).collect();
    let mut pending = futures::stream::FuturesOrdered::new();
    for call in calls {
        let (shared, subject) = (shared.clone(), subject.clone());
        pending.push_back(async move { run_call(&shared, call, subject).await });
    }
    let mut values = Vec::with_capacity(total);
    let mut cached = 0;
    let mut over_budget = None;
    use futures::StreamExt;
    while let Some(result) = pending.next().await {
        match result {
            Ok((value, hit)) => {
                cached += usize::from(hit);
                values.push(value);
            }
            Err(NodeError::OverBudget(budget)) => over_budget = Some(budget),
            Err(e) => return Err(e),
        }
    }
    match over_budget {
        Some(budget) => Err(NodeError::OverBudget(budget)),
        None => Ok(Scored { values, payloads, cached }),
    }
}

/// One call: the cached answer (`true`), or a fresh one, stored (`false`).
async fn run_call(shared: &StageShared, call: Call, subject: Option<Arc<Subject>>) -> Result<(Value, bool), NodeError> {
    if let Some(answer) = shared.scorers.answer_now(&call) {
        return answer.map(|value| (value, true)).map_err(NodeError::Failed);
    }
    let key = call.key();
    if !shared.refresh {
        let cache = shared.cache.clone();
        let lookup_key = key.clone();
        match tokio::task::spawn_blocking(move || cache.lookup_value(&lookup_key)).await {
            Ok(ValueLookup::Hit(value)) => return Ok((value, true)),
            Ok(ValueLookup::Miss | ValueLookup::Corrupt(_)) | Err(_) => {}
        }
    }
    if shared.frozen {
        return Err(NodeError::NotCached);
    }
    // A model call starts only while the budget is not reached: checked before it waits for
    // its endpoint and again once it has a place, as a review is.
    let metered = shared.scorers.metered(&call);
    let over_budget = || {
        shared.meter.refuse_call();
        NodeError::OverBudget(shared.meter.budget.map(|b| b.to_string()).unwrap_or_default())
    };
    if metered && !shared.meter.may_start() {
        return Err(over_budget());
    }
    // Only the endpoint's own limit applies: a call mostly waits on its server, and holding a
    // `--jobs` permit meanwhile would starve the other stages (claims behind judges, say).
    // Local work (the analyzers) is its own endpoint, limited to the machine's cores.
    let endpoint = shared.endpoint(&call.endpoint);
    let _endpoint = endpoint.acquire_owned().await.map_err(|e| NodeError::Failed(e.to_string()))?;
    if *shared.cancel.borrow() {
        return Err(NodeError::Interrupted);
    }
    if metered && !shared.meter.may_start() {
        return Err(over_budget());
    }
    let mut cancel = shared.cancel.clone();
    let (stage, inputs) = (call.stage, call.inputs.clone());
    let scorers = shared.scorers.clone();
    let counted = metered.then(|| call.clone());
    let started = tokio::time::Instant::now();
    let work = shared.scorers.clone().run(call, subject);
    let value = tokio::select! {
        value = work => value,
        () = super::wait_cancel(&mut cancel) => return Err(NodeError::Interrupted),
    };
    if let Some(call) = &counted {
        shared.meter.add_call(stage, scorers.cost(call, value.as_ref().ok(), started.elapsed()));
    }
    let value = value.map_err(NodeError::Failed)?;
    let (cache, experiment, stored) = (shared.cache.clone(), shared.experiment.clone(), value.clone());
    shared
        .writers
        .run(move || cache.store_value(&experiment, stage, &key, &inputs, &stored))
        .await
        .map_err(|e| NodeError::Failed(format!("storing a {stage} answer failed: {e}")))?
        .map_err(|e| NodeError::Failed(format!("storing a {stage} answer failed: {e}")))?;
    Ok((value, false))
}
