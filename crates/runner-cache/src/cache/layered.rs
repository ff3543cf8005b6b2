//! The local cache in front of a remote one: reads are local first, then remote (what the
//! remote has is verified and copied into the local cache); writes go to the local cache and
//! then to the remote, create-if-absent. Every object read from the remote is checked against
//! its blake3 name before it is used. A remote that cannot be reached degrades the execution
//! to local-only, with one warning, never to a wrong result.
//!
//! Run pointers (`runs/ab/<key>` → record hash) and value pointers (`values/ab/<key>`) are
//! objects of the remote too, so it needs no database: the remote mirrors the local layout.

use super::key::{CacheKey, KeyInputs};
use super::remote::{RemoteError, RemoteStore};
use super::store::{is_hex64, CacheError, CacheStore, EntryError, FindingsMemo, Lookup, RunRecord, ValueLookup, ValueRecord};
use super::{Guard, Lease, Store};
use crate::reviewer::{ReviewError, ReviewOutput};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Told once, when the remote first fails: what failed. The execution goes on locally.
pub type Warn = Arc<dyn Fn(String) + Send + Sync>;

/// How many requests a prefetch or a push keeps in flight.
const PARALLEL: usize = 32;

/// `dir/ab/name`, the layout of the local cache and of the remote.
fn sharded(dir: &str, name: &str) -> String {
    format!("{dir}/{}/{name}", &name[..2.min(name.len())])
}

/// What pulling one entry from the remote gave.
#[derive(Debug, PartialEq)]
enum Pulled {
    /// Verified and copied into the local cache.
    Copied,
    /// The remote has no such entry.
    Absent,
    /// The remote's entry failed verification; it was not used.
    Corrupt(String),
    /// The remote could not be reached (now or earlier in this execution).
    Down,
}

/// What moved between the local cache and the remote.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Transfer {
    /// Entries (runs and values) copied from the remote into the local cache.
    pub pulled: usize,
    /// Entries the remote did not have and now has.
    pub pushed: usize,
    /// Entries the remote already had.
    pub present: usize,
    /// Remote entries that failed verification.
    pub corrupt: usize,
}

/// A local cache with a remote behind it.
pub struct LayeredStore {
    local: CacheStore,
    remote: Arc<RemoteStore>,
    warn: Warn,
    /// Why the remote was given up on, once it failed.
    down: Mutex<Option<String>>,
    /// Remote names found corrupt: the next write replaces them instead of keeping them.
    corrupt: Mutex<HashSet<String>>,
    /// Run keys a prefetch found absent from the remote: their lookups ask it no more.
    absent: Mutex<HashSet<CacheKey>>,
    /// This process, as its leases name it.
    worker: String,
    pulled: AtomicUsize,
    pushed: AtomicUsize,
    present: AtomicUsize,
    corrupt_seen: AtomicUsize,
}

impl LayeredStore {
    pub fn new(local: CacheStore, remote: Arc<RemoteStore>, warn: Warn) -> Self {
        Self {
            local,
            remote,
            warn,
            down: Mutex::new(None),
            corrupt: Mutex::new(HashSet::new()),
            absent: Mutex::new(HashSet::new()),
            worker: worker_id(),
            pulled: AtomicUsize::new(0),
            pushed: AtomicUsize::new(0),
            present: AtomicUsize::new(0),
            corrupt_seen: AtomicUsize::new(0),
        }
    }

    pub fn local(&self) -> &CacheStore {
        &self.local
    }

    /// A lookup within a batch ([`CacheStore::lookup_in`]): local first, then pulled from the
    /// remote and looked up locally again.
    fn lookup_in(&self, key: &CacheKey, memo: &mut FindingsMemo) -> Lookup {
        match self.local.lookup_in(key, memo) {
            hit @ Lookup::Hit { .. } => hit,
            local => match (self.pull_run(key), local) {
                (Pulled::Copied, _) => self.local.lookup_in(key, memo),
                (Pulled::Corrupt(detail), _) => Lookup::Corrupt(format!("run `{}`: {detail}", key.short())),
                (_, local) => local,
            },
        }
    }

    /// Why the remote was given up on in this execution, if it was.
    pub fn outage(&self) -> Option<String> {
        self.down.lock().ok().and_then(|d| d.clone())
    }

    /// What moved so far.
    pub fn transfer(&self) -> Transfer {
        Transfer {
            pulled: self.pulled.load(Ordering::Relaxed),
            pushed: self.pushed.load(Ordering::Relaxed),
            present: self.present.load(Ordering::Relaxed),
            corrupt: self.corrupt_seen.load(Ordering::Relaxed),
        }
    }

    fn is_down(&self) -> bool {
        self.down.lock().map(|d| d.is_some()).unwrap_or(true)
    }

    /// Records the first outage and warns once; later calls skip the remote.
    fn give_up(&self, error: &RemoteError) {
        let Ok(mut down) = self.down.lock() else { return };
        if down.is_none() {
            let detail = error.to_string();
            *down = Some(detail.clone());
            drop(down);
            (self.warn)(format!("remote cache unavailable ({detail}); continuing with the local cache only"));
        }
    }

    fn mark_corrupt(&self, name: &str) {
        self.corrupt_seen.fetch_add(1, Ordering::Relaxed);
        self.replace_next(name);
    }

    /// The next write of `name` replaces what the remote holds there.
    fn replace_next(&self, name: &str) {
        if let Ok(mut corrupt) = self.corrupt.lock() {
            corrupt.insert(name.to_string());
        }
    }

    fn known_corrupt(&self, name: &str) -> bool {
        self.corrupt.lock().map(|c| c.contains(name)).unwrap_or(false)
    }

    /// Reads and verifies remote objects by hash, in parallel; `Err` names the first problem.
    fn fetch_objects(&self, hashes: &[String]) -> Result<Vec<Vec<u8>>, Pulled> {
        let names: Vec<String> = hashes.iter().map(|h| sharded("objects", h)).collect();
        let mut out = Vec::with_capacity(hashes.len());
        for ((hash, name), got) in hashes.iter().zip(&names).zip(self.remote.get_many(&names, PARALLEL)) {
            match got {
                Ok(Some(bytes)) => {
                    let actual = blake3::hash(&bytes).to_hex().to_string();
                    if actual != *hash {
                        self.mark_corrupt(name);
                        return Err(Pulled::Corrupt(format!("remote object `{}` is corrupt (its content hashes to `{}`)", short(hash), short(&actual))));
                    }
                    out.push(bytes);
                }
                Ok(None) => return Err(Pulled::Corrupt(format!("remote object `{}` is missing", short(hash)))),
                Err(e) => {
                    self.give_up(&e);
                    return Err(Pulled::Down);
                }
            }
        }
        Ok(out)
    }

    /// The record hash a remote pointer names, verified to be a hash.
    fn remote_pointer(&self, name: &str) -> Result<String, Pulled> {
        match self.remote.get(name) {
            Ok(Some(bytes)) => {
                let pointer = String::from_utf8_lossy(&bytes).trim().to_string();
                if is_hex64(&pointer) {
                    Ok(pointer)
                } else {
                    self.mark_corrupt(name);
                    Err(Pulled::Corrupt(format!("remote pointer `{name}` does not name an object")))
                }
            }
            Ok(None) => Err(Pulled::Absent),
            Err(e) => {
                self.give_up(&e);
                Err(Pulled::Down)
            }
        }
    }

    /// Copies verified bytes into the local cache.
    fn keep_locally(&self, objects: &[Vec<u8>]) -> Result<(), Pulled> {
        for bytes in objects {
            self.local.put_object(bytes).map_err(|e| Pulled::Corrupt(format!("could not copy into the local cache: {e}")))?;
        }
        Ok(())
    }

    fn pull_run(&self, key: &CacheKey) -> Pulled {
        if self.absent.lock().map(|a| a.contains(key)).unwrap_or(false) {
            return Pulled::Absent;
        }
        let parts = |bytes: &[u8]| {
            let record: RunRecord = serde_json::from_slice(bytes).map_err(|e| Pulled::Corrupt(format!("remote run record is not valid: {e}")))?;
            self.check_key(&record.key, "runs", key)?;
            let mut hashes = vec![record.findings, record.raw];
            hashes.extend(record.attachments.into_values());
            Ok(hashes)
        };
        self.pull_entry("runs", key, parts, |pointer| self.local.set_run_pointer(key, pointer))
    }

    fn pull_value(&self, key: &CacheKey, experiment: Option<&str>) -> Pulled {
        let parts = |bytes: &[u8]| {
            let record: ValueRecord = serde_json::from_slice(bytes).map_err(|e| Pulled::Corrupt(format!("remote value record is not valid: {e}")))?;
            self.check_key(&record.key, "values", key)?;
            if experiment.is_some_and(|name| name != record.experiment) {
                return Err(Pulled::Absent);
            }
            Ok(vec![record.value])
        };
        self.pull_entry("values", key, parts, |pointer| self.local.set_value_pointer(key, pointer))
    }

    /// A record filed under `key` must be for `key`.
    fn check_key(&self, found: &CacheKey, dir: &str, key: &CacheKey) -> Result<(), Pulled> {
        if found == key {
            return Ok(());
        }
        self.mark_corrupt(&sharded(dir, &key.0));
        Err(Pulled::Corrupt("the remote pointer names a record for another key".to_string()))
    }

    /// Pulls one entry: its pointer under `dir`, the record it names, and the objects `parts`
    /// reads off the record, every one verified; then copies them into the local cache and
    /// files the pointer there (`file`).
    fn pull_entry(
        &self,
        dir: &str,
        key: &CacheKey,
        parts: impl Fn(&[u8]) -> Result<Vec<String>, Pulled>,
        file: impl Fn(&str) -> Result<(), CacheError>,
    ) -> Pulled {
        if self.is_down() {
            return Pulled::Down;
        }
        let pointer_name = sharded(dir, &key.0);
        let result = (|| {
            let pointer = self.remote_pointer(&pointer_name)?;
            let record_bytes = self.fetch_objects(std::slice::from_ref(&pointer))?.remove(0);
            let mut objects = self.fetch_objects(&parts(&record_bytes)?)?;
            objects.push(record_bytes);
            self.keep_locally(&objects)?;
            file(&pointer).map_err(|e| Pulled::Corrupt(format!("could not copy into the local cache: {e}")))
        })();
        match result {
            Ok(()) => {
                self.pulled.fetch_add(1, Ordering::Relaxed);
                Pulled::Copied
            }
            // An entry whose objects do not verify is rewritten whole when it is stored again:
            // its pointer too, or it would keep naming the bad record.
            Err(Pulled::Corrupt(detail)) => {
                self.replace_next(&pointer_name);
                Pulled::Corrupt(detail)
            }
            Err(pulled) => pulled,
        }
    }

    /// Writes objects (then the pointer) of a local entry to the remote, create-if-absent;
    /// a name found corrupt earlier is replaced.
    fn push_entry(&self, pointer_name: &str, pointer: &str, hashes: &[String]) {
        if self.is_down() {
            return;
        }
        let mut wrote_pointer = false;
        let mut objects: Vec<(String, Vec<u8>)> = Vec::with_capacity(hashes.len());
        for hash in hashes {
            match self.local.get_object(hash) {
                Ok(bytes) => objects.push((sharded("objects", hash), bytes)),
                // A local entry that does not verify is never sent.
                Err(_) => return,
            }
        }
        objects.push((pointer_name.to_string(), format!("{pointer}\n").into_bytes()));
        let last = objects.len() - 1;
        for (i, (name, bytes)) in objects.into_iter().enumerate() {
            match self.remote.put(&name, bytes, self.known_corrupt(&name)) {
                Ok(created) => wrote_pointer = i == last && created,
                Err(e) => {
                    self.give_up(&e);
                    return;
                }
            }
        }
        if wrote_pointer {
            self.pushed.fetch_add(1, Ordering::Relaxed);
        } else {
            self.present.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Pushes the local run entry for `key`, if the local cache has a verified one.
    pub fn push_run(&self, key: &CacheKey) -> bool {
        let Lookup::Hit { record, .. } = self.local.lookup(key) else { return false };
        let Some(pointer) = self.local.run_pointer(key) else { return false };
        let mut hashes = vec![record.findings.clone(), record.raw.clone()];
        hashes.extend(record.attachments.values().cloned());
        hashes.push(pointer.clone());
        self.push_entry(&sharded("runs", &key.0), &pointer, &hashes);
        true
    }

    /// Pushes the local value entry for `key`, if the local cache has a verified one.
    pub fn push_value(&self, record: &ValueRecord) -> bool {
        let Some(pointer) = self.local.value_pointer(&record.key) else { return false };
        self.push_entry(&sharded("values", &record.key.0), &pointer, &[record.value.clone(), pointer.clone()]);
        true
    }

    /// Copies into the local cache, in parallel, the remote entries of `keys` it lacks, so the
    /// lookups that follow are local: all pointers at once, then all records, then all their
    /// objects. An entry that does not verify is left for its lookup to report. Returns how
    /// many were copied.
    pub fn prefetch_runs(&self, keys: &[CacheKey]) -> usize {
        // In batches, so memory stays flat however many runs there are.
        keys.chunks(1024).map(|batch| if self.is_down() { 0 } else { self.prefetch_batch(batch) }).sum()
    }

    fn prefetch_batch(&self, keys: &[CacheKey]) -> usize {
        let missing: Vec<&CacheKey> = keys.iter().filter(|k| self.local.run_pointer(k).is_none()).collect();
        let Some(pointers) = self.gather(&missing.iter().map(|k| sharded("runs", &k.0)).collect::<Vec<_>>()) else { return 0 };
        let mut present: Vec<(&CacheKey, String)> = Vec::new();
        for (key, bytes) in missing.iter().zip(pointers) {
            match bytes {
                Some(bytes) => present.push((*key, String::from_utf8_lossy(&bytes).trim().to_string())),
                None => {
                    if let Ok(mut absent) = self.absent.lock() {
                        absent.insert((*key).clone());
                    }
                }
            }
        }
        present.retain(|(_, pointer)| is_hex64(pointer));
        let Some(records) = self.gather(&present.iter().map(|(_, p)| sharded("objects", p)).collect::<Vec<_>>()) else { return 0 };
        let mut entries: Vec<(&CacheKey, &str, Vec<u8>, RunRecord)> = Vec::new();
        for ((key, pointer), bytes) in present.iter().zip(records) {
            let Some(bytes) = bytes.filter(|b| blake3::hash(b).to_hex().as_str() == pointer.as_str()) else { continue };
            if let Ok(record) = serde_json::from_slice::<RunRecord>(&bytes) {
                if record.key == **key {
                    entries.push((*key, pointer.as_str(), bytes, record));
                }
            }
        }
        // Each distinct object once, and none the local cache already holds intact.
        let mut fetched: HashMap<String, Option<Vec<u8>>> = HashMap::new();
        let parts_of = |r: &RunRecord| [r.findings.clone(), r.raw.clone()].into_iter().chain(r.attachments.values().cloned()).collect::<Vec<String>>();
        let mut wanted: Vec<String> = Vec::new();
        for (_, _, _, record) in &entries {
            for hash in parts_of(record) {
                if let std::collections::hash_map::Entry::Vacant(slot) = fetched.entry(hash) {
                    let local = self.local.get_object(slot.key()).ok();
                    if local.is_none() {
                        wanted.push(slot.key().clone());
                    }
                    slot.insert(local);
                }
            }
        }
        let Some(objects) = self.gather(&wanted.iter().map(|h| sharded("objects", h)).collect::<Vec<_>>()) else { return 0 };
        for (hash, bytes) in wanted.into_iter().zip(objects) {
            let verified = bytes.filter(|b| blake3::hash(b).to_hex().as_str() == hash.as_str());
            fetched.insert(hash, verified);
        }
        let mut copied = 0;
        for (key, pointer, record_bytes, record) in entries {
            let parts: Option<Vec<Vec<u8>>> = parts_of(&record).iter().map(|h| fetched.get(h).cloned().flatten()).collect();
            let Some(mut parts) = parts else { continue };
            parts.push(record_bytes);
            if self.keep_locally(&parts).is_ok() && self.local.set_run_pointer(key, pointer).is_ok() {
                copied += 1;
            }
        }
        self.pulled.fetch_add(copied, Ordering::Relaxed);
        copied
    }

    /// The bytes of each remote name (`None` where absent), fetched in parallel; `None` if
    /// the remote failed (and is then given up on).
    fn gather(&self, names: &[String]) -> Option<Vec<Option<Vec<u8>>>> {
        if names.is_empty() {
            return Some(Vec::new());
        }
        let mut out = Vec::with_capacity(names.len());
        for got in self.remote.get_many(names, PARALLEL) {
            match got {
                Ok(bytes) => out.push(bytes),
                Err(e) => {
                    self.give_up(&e);
                    return None;
                }
            }
        }
        Some(out)
    }

    /// Copies every remote stage value of `experiment` that the local cache lacks.
    pub fn pull_values(&self, experiment: &str) -> Result<usize, RemoteError> {
        let names = self.remote.list("values")?;
        let mut copied = 0;
        for name in names {
            let Some(key) = name.rsplit('/').next().filter(|k| is_hex64(k)).map(|k| CacheKey(k.to_string())) else { continue };
            if self.local.value_pointer(&key).is_none() && self.pull_value(&key, Some(experiment)) == Pulled::Copied {
                copied += 1;
            }
        }
        Ok(copied)
    }
}

fn short(hash: &str) -> &str {
    &hash[..12.min(hash.len())]
}

impl Store for LayeredStore {
    fn lookup(&self, key: &CacheKey) -> Lookup {
        self.lookup_in(key, &mut FindingsMemo::default())
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
        let record = self.local.store_success(experiment, label, slot, key, inputs, output)?;
        self.push_run(key);
        Ok(record)
    }

    fn store_failure(&self, label: &str, slot: &str, key: &CacheKey, error: &ReviewError) -> Result<(), CacheError> {
        self.local.store_failure(label, slot, key, error)
    }

    fn failure(&self, key: &CacheKey) -> Option<super::store::FailureRecord> {
        self.local.failure(key)
    }

    fn try_lock_run(&self, key: &CacheKey) -> Result<Option<Guard>, CacheError> {
        Store::try_lock_run(&self.local, key)
    }

    fn hold(&self) -> Result<Guard, CacheError> {
        Store::hold(&self.local)
    }

    fn remember_slot(&self, slot: &str, key: &CacheKey) -> Result<(), CacheError> {
        self.local.remember_slot(slot, key)
    }

    /// The local directory's entries; the bucket's writes were acknowledged as stored.
    fn sync(&self) -> Result<(), CacheError> {
        self.local.sync()
    }

    fn location(&self) -> String {
        self.local.root().display().to_string()
    }

    /// The local layer's: a run looked up through this store is copied there first.
    fn run_keys_with_prefix(&self, prefix: &str) -> Vec<CacheKey> {
        self.local.run_keys_with_prefix(prefix)
    }

    fn raw_output(&self, record: &RunRecord) -> Result<String, EntryError> {
        self.local.raw_output(record)
    }

    fn list_runs(&self) -> Vec<Result<RunRecord, (std::path::PathBuf, String)>> {
        self.local.list()
    }

    fn list_values(&self) -> Vec<Result<ValueRecord, (std::path::PathBuf, String)>> {
        self.local.list_values()
    }

    fn lookup_value(&self, key: &CacheKey) -> ValueLookup {
        match self.local.lookup_value(key) {
            ValueLookup::Hit(value) => ValueLookup::Hit(value),
            local => match (self.pull_value(key, None), local) {
                (Pulled::Copied, _) => self.local.lookup_value(key),
                (Pulled::Corrupt(detail), _) => ValueLookup::Corrupt(format!("value `{}`: {detail}", key.short())),
                (_, local) => local,
            },
        }
    }

    fn store_value(&self, experiment: &str, stage: &str, key: &CacheKey, inputs: &serde_json::Value, value: &serde_json::Value) -> Result<(), CacheError> {
        self.local.store_value(experiment, stage, key, inputs, value)?;
        // The record just filed names the value object; the push verifies both as it reads them.
        let record = self.local.value_pointer(key).and_then(|p| self.local.get_object(&p).ok()).and_then(|b| serde_json::from_slice::<ValueRecord>(&b).ok());
        if let Some(record) = record {
            self.push_value(&record);
        }
        Ok(())
    }

    fn prefetch(&self, keys: &[CacheKey]) {
        self.prefetch_runs(keys);
    }

    fn lease(&self, key: &CacheKey, ttl: std::time::Duration) -> Lease {
        if self.is_down() {
            // No one to coordinate with: running it twice is harmless, waiting forever is not.
            return Lease::Granted;
        }
        match self.remote.get(&sharded("runs", &key.0)) {
            Ok(Some(_)) => {
                // Stored by another worker since this one looked: look it up again.
                if let Ok(mut absent) = self.absent.lock() {
                    absent.remove(key);
                }
                return Lease::Done;
            }
            Ok(None) => {}
            Err(e) => {
                self.give_up(&e);
                return Lease::Granted;
            }
        }
        let name = sharded("leases", &key.0);
        let now = unix_seconds();
        let mine = serde_json::json!({ "holder": self.worker, "expires": now + ttl.as_secs() }).to_string().into_bytes();
        let taken = match self.remote.put(&name, mine.clone(), false) {
            Ok(true) => Ok(true),
            Ok(false) => match self.remote.get(&name) {
                Ok(Some(bytes)) => {
                    let held: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
                    let holder = held["holder"].as_str().unwrap_or_default().to_string();
                    let expired = held["expires"].as_u64().is_none_or(|expires| expires <= now);
                    if holder == self.worker {
                        Ok(true)
                    } else if expired {
                        // Its holder died (or outlived its lease): take it over.
                        self.remote.put(&name, mine, true)
                    } else {
                        return Lease::Held { holder };
                    }
                }
                Ok(None) => self.remote.put(&name, mine, false),
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        };
        match taken {
            Ok(true) => Lease::Granted,
            Ok(false) => Lease::Held { holder: "another worker".to_string() },
            Err(e) => {
                self.give_up(&e);
                Lease::Granted
            }
        }
    }
}

fn unix_seconds() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// This process, as its leases name it: the host and the process id.
fn worker_id() -> String {
    let host = std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "host".to_string());
    format!("{host}:{}", std::process::id())
}
