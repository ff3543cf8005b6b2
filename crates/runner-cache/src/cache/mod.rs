//! The content-addressed cache: run records keyed by [`key::CacheKey`], objects by blake3.
//!
//! Layout under the cache directory:
//! - `objects/ab/cdef…` — immutable blobs named by the blake3 of their bytes;
//! - `runs/ab/<key>` — the hash of the run's record object (successes only);
//! - `values/ab/<key>` — the hash of a stage value's record (judge calls, claims, smells,
//!   embeddings: every cached stage other than a review);
//! - `failures/ab/<key>.json` — the last failure for a key, never served as a result;
//! - `slots/<hash>.jsonl` — per experiment, the last key seen for each (cell, repeat,
//!   subject) slot, to explain which input changed when that slot misses (appended lines;
//!   `slots/ab/<hash>`, a file per slot, is the older form, still read).
//!
//! Writes are atomic (temp file, rename), and an execution ends with one sync of the cache's
//! filesystem rather than an fsync per entry; reads verify hashes, and a corrupt entry (a
//! power loss before that sync can leave one empty) is reported and treated as a miss.
//! [`layered::LayeredStore`] puts an S3-compatible bucket ([`remote::RemoteStore`]) with the
//! same layout behind the directory.

pub mod key;
pub mod layered;
pub mod remote;
pub mod store;

pub use key::{CacheKey, KeyInputs};
pub use layered::{LayeredStore, Transfer};
pub use remote::{RemoteError, RemoteStore, RemoteUrl};
pub use store::{CacheError, CacheStore, EntryError, Findings, FindingsMemo, Keep, Lookup, RunRecord, ValueLookup, ValueRecord};

use crate::reviewer::{ReviewError, ReviewOutput};

/// The answer to [`Store::lease`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lease {
    /// This worker may run it.
    Granted,
    /// Another worker stored it meanwhile: look it up again.
    Done,
    /// Another worker holds an unexpired lease on it.
    Held { holder: String },
}

/// A lock held while it lives: dropping it releases it.
pub type Guard = Box<dyn Send + Sync>;

/// What the engine needs of a cache: lookups, writes and locks. [`CacheStore`] (a directory)
/// is one implementation; a remote or layered store implements the same trait and the engine,
/// which only holds an `Arc<dyn Store>`, does not change. Calls may block (disk, network):
/// the engine makes its writes and lock waits off the async threads.
pub trait Store: Send + Sync {
    /// A verified result for `key`, a miss, or a corrupt entry (treated as a miss).
    fn lookup(&self, key: &CacheKey) -> Lookup;

    /// [`Self::lookup`] of each key, in order, as one batch: a store may read an object that
    /// several of them share once (see [`FindingsMemo`]).
    fn lookup_batch(&self, keys: &[&CacheKey]) -> Vec<Lookup> {
        keys.iter().map(|key| self.lookup(key)).collect()
    }

    /// Stores a successful run so that a crash leaves either no entry or the whole one.
    #[allow(clippy::too_many_arguments)]
    fn store_success(
        &self,
        experiment: &str,
        label: &str,
        slot: &str,
        key: &CacheKey,
        inputs: &KeyInputs,
        output: &ReviewOutput,
    ) -> Result<RunRecord, CacheError>;

    /// Records a failure (for `plan` and summaries); lookups never serve it.
    fn store_failure(&self, label: &str, slot: &str, key: &CacheKey, error: &ReviewError) -> Result<(), CacheError>;

    /// The failure recorded for a run key, if any: never a result, but a frozen execution
    /// reports a deterministic reviewer's recorded failure as it was.
    fn failure(&self, _key: &CacheKey) -> Option<store::FailureRecord> {
        None
    }

    /// The lock of one run key, without waiting (the engine polls it): `None` while someone
    /// else holds it. A holder that dies must release it.
    fn try_lock_run(&self, key: &CacheKey) -> Result<Option<Guard>, CacheError>;

    /// Held for a whole execution: what the store must not collect meanwhile (waits for a
    /// running garbage collection).
    fn hold(&self) -> Result<Guard, CacheError>;

    /// Remembers that `slot` (a run's place in an experiment) last had `key`, so `plan` can
    /// explain a later miss against it.
    fn remember_slot(&self, slot: &str, key: &CacheKey) -> Result<(), CacheError>;

    /// A verified stage value for `key` (a judge call, claims, smells, embeddings).
    fn lookup_value(&self, key: &CacheKey) -> ValueLookup;

    /// Stores a stage value atomically, with what its key was computed from.
    fn store_value(&self, experiment: &str, stage: &str, key: &CacheKey, inputs: &serde_json::Value, value: &serde_json::Value) -> Result<(), CacheError>;

    /// `exec --steal`: takes the lease of a run before starting it, so that two workers of a
    /// shared remote cache do not both start it. A store nothing else can see grants every
    /// lease (its run locks already serialize the processes that share it).
    fn lease(&self, _key: &CacheKey, _ttl: std::time::Duration) -> Lease {
        Lease::Granted
    }

    /// A hint that these runs will be looked up next: a remote store fetches the ones it
    /// has in parallel. Nothing for a local one.
    fn prefetch(&self, _keys: &[CacheKey]) {}

    /// Makes what was stored durable; an execution calls it once, at its end (entries are
    /// written without an fsync each). Nothing for a store that has nothing to sync.
    fn sync(&self) -> Result<(), CacheError> {
        Ok(())
    }

    /// Where it keeps what it stores, as messages name it: the local directory (the one a
    /// layered store reads through).
    fn location(&self) -> String;

    /// The keys of the runs it can list whose key starts with `prefix` (at least two hex
    /// digits), sorted: what a short key as RESULTS.md prints it may name.
    fn run_keys_with_prefix(&self, _prefix: &str) -> Vec<CacheKey> {
        Vec::new()
    }

    /// A run's raw output (the reviewer's own answer), as stored beside its record.
    fn raw_output(&self, record: &RunRecord) -> Result<String, EntryError>;

    /// Every run record it can list, verified.
    fn list_runs(&self) -> Vec<Result<RunRecord, (std::path::PathBuf, String)>> {
        Vec::new()
    }

    /// Every stage value record it can list, verified.
    fn list_values(&self) -> Vec<Result<ValueRecord, (std::path::PathBuf, String)>> {
        Vec::new()
    }
}

impl Store for CacheStore {
    fn lookup(&self, key: &CacheKey) -> Lookup {
        CacheStore::lookup(self, key)
    }

    fn location(&self) -> String {
        self.root().display().to_string()
    }

    fn run_keys_with_prefix(&self, prefix: &str) -> Vec<CacheKey> {
        CacheStore::run_keys_with_prefix(self, prefix)
    }

    fn raw_output(&self, record: &RunRecord) -> Result<String, EntryError> {
        CacheStore::raw_output(self, record)
    }

    fn list_runs(&self) -> Vec<Result<RunRecord, (std::path::PathBuf, String)>> {
        CacheStore::list(self)
    }

    fn list_values(&self) -> Vec<Result<ValueRecord, (std::path::PathBuf, String)>> {
        CacheStore::list_values(self)
    }

    fn lookup_batch(&self, keys: &[&CacheKey]) -> Vec<Lookup> {
        let mut memo = FindingsMemo::default();
        keys.iter().map(|key| self.lookup_in(key, &mut memo)).collect()
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
        CacheStore::store_success(self, experiment, label, slot, key, inputs, output)
    }

    fn store_failure(&self, label: &str, slot: &str, key: &CacheKey, error: &ReviewError) -> Result<(), CacheError> {
        CacheStore::store_failure(self, label, slot, key, error)
    }

    fn failure(&self, key: &CacheKey) -> Option<store::FailureRecord> {
        CacheStore::failure(self, key)
    }

    fn try_lock_run(&self, key: &CacheKey) -> Result<Option<Guard>, CacheError> {
        Ok(CacheStore::try_lock_run(self, key)?.map(|lock| Box::new(lock) as Guard))
    }

    fn hold(&self) -> Result<Guard, CacheError> {
        Ok(Box::new(self.lock_shared()?))
    }

    fn remember_slot(&self, slot: &str, key: &CacheKey) -> Result<(), CacheError> {
        CacheStore::remember_slot(self, slot, key)
    }

    fn sync(&self) -> Result<(), CacheError> {
        CacheStore::sync(self)
    }

    fn lookup_value(&self, key: &CacheKey) -> ValueLookup {
        CacheStore::lookup_value(self, key)
    }

    fn store_value(&self, experiment: &str, stage: &str, key: &CacheKey, inputs: &serde_json::Value, value: &serde_json::Value) -> Result<(), CacheError> {
        CacheStore::store_value(self, experiment, stage, key, inputs, value)
    }
}
