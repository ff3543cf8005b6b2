//! The on-disk store: atomic writes, verified reads, listing, verification and garbage collection.

use super::key::{CacheKey, KeyInputs};
use crate::finding::Finding;
use crate::reviewer::{Cost, ReviewError};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Format version of a stored run record.
pub const RECORD_SCHEMA: u32 = 1;

/// A successful run as stored: findings and raw output are separate objects.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunRecord {
    pub schema: u32,
    pub key: CacheKey,
    pub experiment: String,
    /// `cell #repeat @subject`.
    pub label: String,
    pub inputs: KeyInputs,
    /// Object hash of the findings JSON array.
    pub findings: String,
    /// Object hash of the raw output.
    pub raw: String,
    pub finding_count: usize,
    pub cost: Cost,
    pub provenance: BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    pub schema_problems: Vec<String>,
    #[serde(default)]
    pub counters: BTreeMap<String, u64>,
    /// Files a reviewer left (stet's `history.jsonl`), by name: object hashes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attachments: BTreeMap<String, String>,
}

/// A failed run as stored, for `plan` and the summary; never served as a result.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FailureRecord {
    pub key: CacheKey,
    pub label: String,
    pub error: ReviewError,
}

/// Format version of a stored stage value.
pub const VALUE_SCHEMA: u32 = 1;

/// The result of a cached stage other than a review (a judge call, claims, smells,
/// embeddings), stored under its key with what the key was computed from.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ValueRecord {
    pub schema: u32,
    pub key: CacheKey,
    /// The stage that produced it: `judge`, `claims`, `smells`, `embed`.
    pub stage: String,
    /// The experiment that first stored it (`cache gc --keep` keeps values of kept experiments).
    pub experiment: String,
    /// What the key was computed from.
    pub inputs: serde_json::Value,
    /// Object hash of the value's JSON.
    pub value: String,
}

/// The answer to a stage value lookup.
#[derive(Debug, Clone)]
pub enum ValueLookup {
    Hit(serde_json::Value),
    Miss,
    /// The entry exists but failed verification; treated as a miss.
    Corrupt(String),
}

/// A run's findings as looked up: shared, so runs that found the same findings (one object)
/// hold one list.
pub type Findings = Arc<[Finding]>;

/// The findings objects one batch of lookups has read and verified, by object hash (see
/// [`CacheStore::lookup_in`]). It lives for one batch only: an object corrupted after the
/// batch is read again, and caught, by the next.
#[derive(Debug, Default)]
pub struct FindingsMemo {
    findings: HashMap<String, Findings>,
    /// Other objects (raw outputs, attachments) the batch has verified.
    verified: std::collections::HashSet<String>,
}

/// The answer to a lookup.
#[derive(Debug, Clone)]
pub enum Lookup {
    Hit {
        record: Box<RunRecord>,
        findings: Findings,
    },
    Miss,
    /// The entry exists but failed verification; treated as a miss.
    Corrupt(String),
    /// The entry could not be read (too many open files, permissions, an I/O error): not
    /// known to be corrupt, and treated as a miss.
    Unreadable(String),
}

/// Why a cache entry could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryError {
    /// Its bytes, type or size are wrong, or an object it names is missing.
    Corrupt(String),
    /// The system would not read it.
    Unreadable(String),
}

impl std::fmt::Display for EntryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Corrupt(m) | Self::Unreadable(m) => f.write_str(m),
        }
    }
}

impl EntryError {
    /// The same error, its text prefixed (`run `abc`: …`).
    fn context(self, prefix: &str) -> Self {
        match self {
            Self::Corrupt(m) => Self::Corrupt(format!("{prefix}{m}")),
            Self::Unreadable(m) => Self::Unreadable(format!("{prefix}{m}")),
        }
    }

    /// A failed read of the cache file `what` (`object `abc``): a content problem (its type,
    /// its size) or absence is corruption, anything else the system's.
    fn of_read(what: &str, error: &std::io::Error) -> Self {
        if error.kind() == std::io::ErrorKind::NotFound {
            Self::Corrupt(format!("{what} is missing"))
        } else if crate::bounded::is_content_problem(error) {
            Self::Corrupt(format!("{what} is corrupt: {error}"))
        } else {
            Self::Unreadable(format!("{what} could not be read: {error}"))
        }
    }

    fn lookup(self) -> Lookup {
        match self {
            Self::Corrupt(m) => Lookup::Corrupt(m),
            Self::Unreadable(m) => Lookup::Unreadable(m),
        }
    }
}

/// The largest cache object or journal read: far above any review's output or embedding,
/// far below what would exhaust memory. Larger objects are not stored.
pub const MAX_ENTRY_BYTES: u64 = 256 * crate::bounded::MIB;

/// The largest pointer file read (a pointer is one hash and a newline).
const MAX_POINTER_BYTES: u64 = 4096;

/// Reads a file of the cache: a regular file, never a link, of at most `limit` bytes; a FIFO
/// or a device put there is refused before anything blocks on it.
fn read_entry(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    crate::bounded::read(path, limit, crate::bounded::Links::Refuse, "cache entries")
}

/// A pointer file's text (trimmed): `Ok(None)` when there is none.
fn read_pointer(path: &Path, what: &str) -> Result<Option<String>, EntryError> {
    match read_entry(path, MAX_POINTER_BYTES) {
        Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).trim().to_string())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(EntryError::of_read(what, &e)),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("failed to write `{path}`: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("failed to read `{path}`: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("failed to encode a cache record: {0}")]
    Encode(String),
    #[error("the lock of cache `{0}` could not be taken")]
    Lock(PathBuf),
    #[error("`{path}` is {what}, not a directory of the cache's own: runner never follows a link out of its cache, nor reads or removes through one; replace it with a plain directory")]
    Layout { path: PathBuf, what: &'static str },
}

impl CacheError {
    /// Whether the write failed because a directory stood at the entry's path.
    fn is_directory_in_the_way(&self) -> bool {
        use std::io::ErrorKind::{DirectoryNotEmpty, IsADirectory};
        matches!(self, CacheError::Write { source, .. } if matches!(source.kind(), IsADirectory | DirectoryNotEmpty))
    }
}

/// How often a write retries while a directory stands in its entry's place (another writer
/// may be removing it at the same moment).
const DIRECTORY_REPAIR_ATTEMPTS: usize = 16;

/// A cache directory.
#[derive(Debug, Clone)]
pub struct CacheStore {
    root: PathBuf,
    /// Each experiment's slot journal as read so far (see [`CacheStore::remember_slot`]),
    /// shared by the clones of this store.
    slots: Arc<Mutex<HashMap<PathBuf, HashMap<String, String>>>>,
    /// Whether an entry was written since the last [`CacheStore::sync`].
    unsynced: Arc<AtomicBool>,
}

/// One line of an experiment's slot journal.
#[derive(Serialize, Deserialize)]
struct SlotLine {
    slot: String,
    key: String,
}

fn sharded(dir: &Path, name: &str) -> PathBuf {
    dir.join(&name[..2.min(name.len())]).join(name)
}

pub fn is_hex64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The directories of a cache's own layout, below its root.
const LAYOUT: [&str; 6] = ["objects", "runs", "values", "failures", "slots", "locks"];

impl CacheStore {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into(), slots: Arc::default(), unsynced: Arc::default() }
    }

    /// Checks that each directory of the cache's layout (and each shard directory in it) is a
    /// directory itself, not a link: a cloned repository can carry `cache/objects` as a link to
    /// anywhere, and nothing may be written, read or removed through it. The root itself is the
    /// user's to place, a link included. A layout directory not yet made is fine.
    pub fn check_layout(&self) -> Result<(), CacheError> {
        for name in LAYOUT {
            let dir = self.root.join(name);
            check_directory(&dir)?;
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_symlink()) {
                    return Err(CacheError::Layout { path: entry.path(), what: "a symbolic link" });
                }
            }
        }
        Ok(())
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn object_path(&self, hash: &str) -> PathBuf {
        sharded(&self.root.join("objects"), hash)
    }

    fn run_path(&self, key: &CacheKey) -> PathBuf {
        sharded(&self.root.join("runs"), &key.0)
    }

    fn value_path(&self, key: &CacheKey) -> PathBuf {
        sharded(&self.root.join("values"), &key.0)
    }

    fn failure_path(&self, key: &CacheKey) -> PathBuf {
        sharded(&self.root.join("failures"), &format!("{}.json", key.0))
    }

    /// The one file whose bytes are the runs' locks (see [`FileLock::acquire_byte`]).
    #[cfg(target_os = "linux")]
    fn run_locks_path(&self) -> PathBuf {
        self.locks_dir().join("runs.lock")
    }

    /// A lock file per run key, where open-file-description byte locks are not available.
    #[cfg(not(target_os = "linux"))]
    fn lock_path(&self, key: &CacheKey) -> PathBuf {
        sharded(&self.locks_dir().join("runs"), &format!("{}.lock", key.0))
    }

    /// `locks/`, which ignores itself in git: lock files are never part of a committed cache.
    fn locks_dir(&self) -> PathBuf {
        let dir = self.root.join("locks");
        let ignore = dir.join(".gitignore");
        if !ignore.exists() && std::fs::create_dir_all(&dir).is_ok() {
            let _ = std::fs::write(&ignore, "*\n");
        }
        dir
    }

    fn cache_lock_path(&self) -> PathBuf {
        self.locks_dir().join("cache.lock")
    }

    /// Takes the lock of one run key without waiting: `None` while another process (or
    /// another handle in this one) holds it. Held until dropped; a crash releases it.
    pub fn try_lock_run(&self, key: &CacheKey) -> Result<Option<FileLock>, CacheError> {
        #[cfg(target_os = "linux")]
        return FileLock::acquire_byte(&self.run_locks_path(), run_lock_offset(key));
        #[cfg(not(target_os = "linux"))]
        return FileLock::acquire(&self.lock_path(key), LockMode::Exclusive, false);
    }

    /// The cache-wide lock an execution holds (shared) while it may write, so that `gc`
    /// (exclusive) never runs beside one. Waits for a running `gc`.
    pub fn lock_shared(&self) -> Result<FileLock, CacheError> {
        let path = self.cache_lock_path();
        FileLock::acquire(&path, LockMode::Shared, true)?.ok_or_else(|| lock_error(&path))
    }

    /// The cache-wide lock `gc` holds: with `wait` false, `None` while an execution holds
    /// the shared one.
    pub fn lock_exclusive(&self, wait: bool) -> Result<Option<FileLock>, CacheError> {
        FileLock::acquire(&self.cache_lock_path(), LockMode::Exclusive, wait)
    }

    /// A slot's file as earlier versions wrote it, one per slot (still read).
    fn slot_path(&self, slot: &str) -> PathBuf {
        sharded(&self.root.join("slots"), &blake3::hash(slot.as_bytes()).to_hex())
    }

    /// The slot journal of the experiment a slot belongs to (its text up to the first NUL).
    fn slot_journal_path(&self, slot: &str) -> PathBuf {
        let experiment = slot.split('\0').next().unwrap_or_default();
        self.root.join("slots").join(format!("{}.jsonl", blake3::hash(experiment.as_bytes()).to_hex()))
    }

    /// The key a slot last had: its journal's last line for it, else its file of old.
    fn slot_key(&self, slot: &str) -> Option<String> {
        let journal = self.slot_journal_path(slot);
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        let index = slots.entry(journal.clone()).or_insert_with(|| read_slot_journal(&journal));
        if let Some(key) = index.get(slot) {
            return Some(key.clone());
        }
        drop(slots);
        read_pointer(&self.slot_path(slot), "slot").ok().flatten()
    }

    /// Stores bytes under their blake3 hash and returns it.
    pub fn put_object(&self, bytes: &[u8]) -> Result<String, CacheError> {
        if bytes.len() as u64 > MAX_ENTRY_BYTES {
            return Err(CacheError::Encode(format!(
                "an object of {} bytes is over the {} MiB limit of cache entries",
                bytes.len(),
                MAX_ENTRY_BYTES / crate::bounded::MIB
            )));
        }
        let hash = blake3::hash(bytes).to_hex().to_string();
        let path = self.object_path(&hash);
        // An existing object is reused only when it is intact: a corrupt one is rewritten.
        if self.get_object(&hash).is_err() {
            self.write_entry(&path, bytes)?;
        }
        Ok(hash)
    }

    /// The record hash a run key points at, as filed (unverified); `None` when there is none.
    pub fn run_pointer(&self, key: &CacheKey) -> Option<String> {
        read_pointer(&self.run_path(key), "run").ok().flatten()
    }

    /// The record hash a stage value's key points at, as filed (unverified).
    pub fn value_pointer(&self, key: &CacheKey) -> Option<String> {
        read_pointer(&self.value_path(key), "value").ok().flatten()
    }

    /// Files `key` as pointing at the run record `hash`; the caller stored its objects first.
    pub fn set_run_pointer(&self, key: &CacheKey, hash: &str) -> Result<(), CacheError> {
        self.write_entry(&self.run_path(key), format!("{hash}\n").as_bytes())
    }

    /// Files `key` as pointing at the value record `hash`; the caller stored its objects first.
    pub fn set_value_pointer(&self, key: &CacheKey, hash: &str) -> Result<(), CacheError> {
        self.write_entry(&self.value_path(key), format!("{hash}\n").as_bytes())
    }

    /// Makes every entry written so far durable: one `syncfs(2)` of the filesystem the cache
    /// is on (Linux), or a `sync(2)` elsewhere; nothing when nothing was written. An execution
    /// calls it once it has finished.
    pub fn sync(&self) -> Result<(), CacheError> {
        if !self.unsynced.swap(false, Ordering::SeqCst) {
            return Ok(());
        }
        let wrap = |source| CacheError::Write { path: self.root.clone(), source };
        let Ok(dir) = std::fs::File::open(&self.root) else { return Ok(()) };
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            // SAFETY: syncfs on a descriptor this function owns.
            if unsafe { libc::syncfs(dir.as_raw_fd()) } != 0 {
                return Err(wrap(std::io::Error::last_os_error()));
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (&dir, wrap);
            // SAFETY: sync takes no arguments and cannot fail.
            unsafe { libc::sync() };
        }
        Ok(())
    }

    /// Writes a cache entry atomically (a temp file renamed into place) without an fsync of its
    /// own: an execution syncs the cache's filesystem once, at its end ([`CacheStore::sync`]).
    /// Until then a power loss can leave an entry empty or missing, never wrong: every read is
    /// verified, so such an entry is a miss (reported as corrupt) and its run runs again. A
    /// killed process loses nothing (the kernel has the bytes). An fsync per entry made a cold
    /// 100k-run execution 2.6 times slower.
    ///
    /// Whatever is in the entry's place is replaced: a corrupt file, a FIFO, or a directory
    /// (removed with what it holds: nothing of the cache's own layout lives at an entry's path).
    ///
    /// Runs that share an object write it at once. Where a directory stands in its place, one
    /// writer's rename fails while another is still removing the directory, or has already
    /// put the file there: each writer retries (a rename over a file always succeeds) for as
    /// long as it finds a directory, and stops at the first write that lands.
    fn write_entry(&self, path: &Path, bytes: &[u8]) -> Result<(), CacheError> {
        self.unsynced.store(true, Ordering::SeqCst);
        let mut written = write_via_temp(path, bytes, false);
        for attempt in 0..DIRECTORY_REPAIR_ATTEMPTS {
            let Err(error) = &written else { break };
            let directory_now = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir());
            if !directory_now && !error.is_directory_in_the_way() {
                break;
            }
            if directory_now {
                let _ = std::fs::remove_dir_all(path);
            }
            if attempt > 0 {
                std::thread::yield_now();
            }
            written = write_via_temp(path, bytes, false);
        }
        written
    }

    /// Reads an object and checks that its bytes still hash to its name.
    pub fn get_object(&self, hash: &str) -> Result<Vec<u8>, EntryError> {
        if !is_hex64(hash) {
            return Err(EntryError::Corrupt(format!("`{hash}` is not an object hash")));
        }
        let path = self.object_path(hash);
        let what = format!("object `{}`", short(hash));
        let bytes = read_entry(&path, MAX_ENTRY_BYTES).map_err(|e| EntryError::of_read(&what, &e))?;
        let actual = blake3::hash(&bytes).to_hex().to_string();
        if actual != hash {
            return Err(EntryError::Corrupt(format!("{what} is corrupt (its content hashes to `{}`)", short(&actual))));
        }
        Ok(bytes)
    }

    /// Checks that an object is intact, once per batch.
    fn verify_object(&self, hash: &str, memo: &mut FindingsMemo) -> Result<(), EntryError> {
        if !memo.verified.contains(hash) {
            self.get_object(hash)?;
            memo.verified.insert(hash.to_string());
        }
        Ok(())
    }

    /// Looks a run up, verifying every object it touches.
    pub fn lookup(&self, key: &CacheKey) -> Lookup {
        self.lookup_in(key, &mut FindingsMemo::default())
    }

    /// [`Self::lookup`] within a batch: a findings object the batch has already read and
    /// verified is not read again (at 100k runs of a deterministic reviewer, one object
    /// serves them all).
    ///
    /// Every object the run's record names is verified: its findings (read), its raw output
    /// and attachments (hashed), so an entry with any part damaged is not served (`--frozen`
    /// refuses it; an execution runs it again and so repairs it).
    pub fn lookup_in(&self, key: &CacheKey, memo: &mut FindingsMemo) -> Lookup {
        let run = format!("run `{}`", key.short());
        let pointer = match read_pointer(&self.run_path(key), &run) {
            Ok(Some(p)) => p,
            Ok(None) => return Lookup::Miss,
            Err(e) => return e.lookup(),
        };
        let read = self.read_record(&pointer, memo).and_then(|(record, findings)| {
            for hash in std::iter::once(&record.raw).chain(record.attachments.values()) {
                let part = if *hash == record.raw { "raw output: " } else { "attachment: " };
                self.verify_object(hash, memo).map_err(|e| e.context(part))?;
            }
            Ok((record, findings))
        });
        match read {
            Ok((record, findings)) if record.key == *key => Lookup::Hit { record: Box::new(record), findings },
            Ok(_) => Lookup::Corrupt(format!("{run} points at a record for another key")),
            Err(e) => e.context(&format!("{run}: ")).lookup(),
        }
    }

    fn read_record(&self, pointer: &str, memo: &mut FindingsMemo) -> Result<(RunRecord, Findings), EntryError> {
        let bytes = self.get_object(pointer)?;
        let record: RunRecord = serde_json::from_slice(&bytes).map_err(|e| EntryError::Corrupt(format!("record is not a valid run record: {e}")))?;
        if let Some(findings) = memo.findings.get(&record.findings) {
            return Ok((record, findings.clone()));
        }
        let findings_bytes = self.get_object(&record.findings)?;
        let findings: Findings =
            serde_json::from_slice::<Vec<Finding>>(&findings_bytes).map_err(|e| EntryError::Corrupt(format!("findings are not valid: {e}")))?.into();
        memo.findings.insert(record.findings.clone(), findings.clone());
        Ok((record, findings))
    }

    /// Looks a stage value up, verifying its record and value objects.
    pub fn lookup_value(&self, key: &CacheKey) -> ValueLookup {
        let value = format!("value `{}`", key.short());
        let pointer = match read_pointer(&self.value_path(key), &value) {
            Ok(Some(p)) => p,
            Ok(None) => return ValueLookup::Miss,
            Err(e) => return ValueLookup::Corrupt(e.to_string()),
        };
        match self.read_value_record(&pointer) {
            Ok((record, found)) if record.key == *key => ValueLookup::Hit(found),
            Ok(_) => ValueLookup::Corrupt(format!("{value} points at a record for another key")),
            Err(e) => ValueLookup::Corrupt(format!("{value}: {e}")),
        }
    }

    fn read_value_record(&self, pointer: &str) -> Result<(ValueRecord, serde_json::Value), EntryError> {
        let bytes = self.get_object(pointer)?;
        let record: ValueRecord = serde_json::from_slice(&bytes).map_err(|e| EntryError::Corrupt(format!("record is not a valid value record: {e}")))?;
        let value_bytes = self.get_object(&record.value)?;
        let value = serde_json::from_slice(&value_bytes).map_err(|e| EntryError::Corrupt(format!("the value is not valid JSON: {e}")))?;
        Ok((record, value))
    }

    /// Stores a stage value: objects first, then the pointer, so a crash leaves no half entry.
    pub fn store_value(&self, experiment: &str, stage: &str, key: &CacheKey, inputs: &serde_json::Value, value: &serde_json::Value) -> Result<(), CacheError> {
        // Compact: values are machine-read (embeddings are large); the record stays readable.
        let value_bytes = serde_json::to_vec(value).map_err(|e| CacheError::Encode(e.to_string()))?;
        let record = ValueRecord {
            schema: VALUE_SCHEMA,
            key: key.clone(),
            stage: stage.to_string(),
            experiment: experiment.to_string(),
            inputs: inputs.clone(),
            value: self.put_object(&value_bytes)?,
        };
        let record_bytes = serde_json::to_vec_pretty(&record).map_err(|e| CacheError::Encode(e.to_string()))?;
        let pointer = self.put_object(&record_bytes)?;
        self.write_entry(&self.value_path(key), format!("{pointer}\n").as_bytes())
    }

    /// Every stage value record, verified like [`Self::list`].
    pub fn list_values(&self) -> Vec<Result<ValueRecord, (PathBuf, String)>> {
        let mut out = Vec::new();
        for path in files_under(&self.root.join("values")) {
            let filed_as = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let result = read_pointer(&path, "the pointer")
                .and_then(|p| p.ok_or_else(|| EntryError::Corrupt("the pointer is missing".into())))
                .map_err(|e| e.to_string())
                .and_then(|p| {
                    let (record, _) = self.read_value_record(&p).map_err(|e| e.to_string())?;
                    if record.key.0 != filed_as {
                        return Err(format!("the pointer for key `{}` names a record for key `{}`", short(&filed_as), record.key.short()));
                    }
                    Ok(record)
                });
            out.push(result.map_err(|e| (path, e)));
        }
        out
    }

    /// Reads a record's raw output object.
    pub fn raw_output(&self, record: &RunRecord) -> Result<String, EntryError> {
        self.get_object(&record.raw).map(|b| String::from_utf8_lossy(&b).into_owned())
    }

    /// Stores a successful run: objects first, then the pointer, so a crash leaves no half entry.
    #[allow(clippy::too_many_arguments)]
    pub fn store_success(
        &self,
        experiment: &str,
        label: &str,
        slot: &str,
        key: &CacheKey,
        inputs: &KeyInputs,
        output: &crate::reviewer::ReviewOutput,
    ) -> Result<RunRecord, CacheError> {
        let findings_bytes = serde_json::to_vec_pretty(&output.findings).map_err(|e| CacheError::Encode(e.to_string()))?;
        let findings = self.put_object(&findings_bytes)?;
        let raw = self.put_object(output.raw.as_bytes())?;
        let mut attachments = BTreeMap::new();
        for (name, text) in &output.attachments {
            attachments.insert(name.clone(), self.put_object(text.as_bytes())?);
        }
        let record = RunRecord {
            schema: RECORD_SCHEMA,
            key: key.clone(),
            experiment: experiment.to_string(),
            label: label.to_string(),
            inputs: inputs.clone(),
            findings,
            raw,
            finding_count: output.findings.len(),
            cost: output.cost.clone(),
            provenance: output.provenance.clone(),
            schema_problems: output.schema_problems.clone(),
            counters: output.counters.clone(),
            attachments,
        };
        let record_bytes = serde_json::to_vec_pretty(&record).map_err(|e| CacheError::Encode(e.to_string()))?;
        let pointer = self.put_object(&record_bytes)?;
        self.write_entry(&self.run_path(key), format!("{pointer}\n").as_bytes())?;
        let _ = std::fs::remove_file(self.failure_path(key));
        self.remember_slot(slot, key)?;
        Ok(record)
    }

    /// Records a failure for `plan` and summaries; lookups never serve it.
    pub fn store_failure(&self, label: &str, slot: &str, key: &CacheKey, error: &ReviewError) -> Result<(), CacheError> {
        let record = FailureRecord { key: key.clone(), label: label.to_string(), error: error.clone() };
        let bytes = serde_json::to_vec_pretty(&record).map_err(|e| CacheError::Encode(e.to_string()))?;
        self.write_entry(&self.failure_path(key), &bytes)?;
        self.remember_slot(slot, key)
    }

    pub fn failure(&self, key: &CacheKey) -> Option<FailureRecord> {
        let bytes = read_entry(&self.failure_path(key), MAX_ENTRY_BYTES).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Records `key` as the slot's last executed key (written only when it changes): stores
    /// do it, and so does an execution served from the cache, so `plan` explains a later
    /// miss against what actually ran last.
    ///
    /// An experiment's slots are lines appended to one journal,
    /// `slots/<blake3 of the experiment's name>.jsonl` (`{"slot": …, "key": …}`), the last
    /// line for a slot winning: a run stored costs an append, not a file, and appends from
    /// several processes do not interleave (each line is one `write` to a file opened for
    /// appending). A torn last line, from a crash, is skipped when read.
    pub fn remember_slot(&self, slot: &str, key: &CacheKey) -> Result<(), CacheError> {
        if self.slot_key(slot).is_some_and(|k| k == key.0) {
            return Ok(());
        }
        let journal = self.slot_journal_path(slot);
        let wrap = |source| CacheError::Write { path: journal.clone(), source };
        let mut line = serde_json::to_vec(&SlotLine { slot: slot.to_string(), key: key.0.clone() }).map_err(|e| CacheError::Encode(e.to_string()))?;
        line.push(b'\n');
        if let Some(dir) = journal.parent() {
            std::fs::create_dir_all(dir).map_err(wrap)?;
        }
        self.unsynced.store(true, Ordering::SeqCst);
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&journal).map_err(wrap)?;
        file.write_all(&line).map_err(wrap)?;
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(index) = slots.get_mut(&journal) {
            index.insert(slot.to_string(), key.0.clone());
        }
        Ok(())
    }

    /// The inputs of the last successful entry for a slot, when it had another key.
    pub fn previous_inputs(&self, slot: &str, current: &CacheKey) -> Option<KeyInputs> {
        let previous = CacheKey(self.slot_key(slot)?);
        if previous == *current {
            return None;
        }
        match self.lookup(&previous) {
            Lookup::Hit { record, .. } => Some(record.inputs),
            _ => None,
        }
    }

    /// The keys of the cached runs whose key starts with `prefix` (at least two hex digits),
    /// sorted; reads one shard directory, nothing else.
    pub fn run_keys_with_prefix(&self, prefix: &str) -> Vec<CacheKey> {
        if prefix.len() < 2 || !prefix.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Vec::new();
        }
        let Ok(entries) = std::fs::read_dir(self.root.join("runs").join(&prefix[..2])) else { return Vec::new() };
        let mut keys: Vec<CacheKey> = entries
            .flatten()
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .filter(|name| is_hex64(name) && name.starts_with(prefix))
            .map(CacheKey)
            .collect();
        keys.sort_by(|a, b| a.0.cmp(&b.0));
        keys
    }

    /// Every run record, verified: its objects (record, findings, raw output) hash to their
    /// names, and the record is for the key its pointer is filed under.
    pub fn list(&self) -> Vec<Result<RunRecord, (PathBuf, String)>> {
        let mut out = Vec::new();
        for path in files_under(&self.root.join("runs")) {
            let filed_as = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let result = read_pointer(&path, "the pointer")
                .and_then(|p| p.ok_or_else(|| EntryError::Corrupt("the pointer is missing".into())))
                .map_err(|e| e.to_string())
                .and_then(|p| {
                    let (record, _) = self.read_record(&p, &mut FindingsMemo::default()).map_err(|e| e.to_string())?;
                    if record.key.0 != filed_as {
                        return Err(format!("the pointer for key `{}` names a record for key `{}`", short(&filed_as), record.key.short()));
                    }
                    self.get_object(&record.raw).map_err(|e| format!("raw output: {e}"))?;
                    Ok(record)
                });
            out.push(result.map_err(|e| (path, e)));
        }
        out
    }

    /// Checks every object's hash and every run's references; returns the problems found.
    pub fn verify(&self) -> VerifyReport {
        let mut report = VerifyReport::default();
        if let Err(e) = self.check_layout() {
            report.problems.push(e.to_string());
        }
        for path in files_under(&self.root.join("objects")) {
            report.objects += 1;
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if let Err(e) = self.get_object(&name) {
                report.problems.push(format!("{}: {e}", path.display()));
            }
        }
        for entry in self.list() {
            report.runs += 1;
            if let Err((path, e)) = entry {
                report.problems.push(format!("{}: {e}", path.display()));
            }
        }
        for entry in self.list_values() {
            report.values += 1;
            if let Err((path, e)) = entry {
                report.problems.push(format!("{}: {e}", path.display()));
            }
        }
        report
    }

    /// Removes objects no run or value references, failure records, and (with `keep`) runs
    /// whose keys are not in `keep.runs` and stage values stored by experiments not in
    /// `keep.experiments`. Returns what was (or, with `dry_run`, would be) removed.
    ///
    /// The caller holds the exclusive cache lock ([`Self::lock_exclusive`]), so no execution
    /// writes meanwhile; temporary files older than [`STALE_TEMP_AGE`] (left by a killed
    /// process) and run lock files are removed too.
    ///
    /// Only files of the cache's own layout are removed: a sharded entry whose name is a hash
    /// in its shard (`objects/ab/ab…`, `failures/ab/ab….json`), a temporary file of runner's
    /// (`.tmp` and six letters or digits), a run lock file; a `.keep` or any other file stays,
    /// and a layout directory that is a link fails the collection before anything is removed.
    pub fn gc(&self, keep: Option<&Keep>, dry_run: bool) -> Result<GcReport, CacheError> {
        self.check_layout()?;
        let mut report = GcReport::default();
        let temp_files = LAYOUT.iter().flat_map(|d| temp_files_under(&self.root.join(d)));
        for path in temp_files {
            let stale = std::fs::metadata(&path).and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok()).is_some_and(|age| age >= STALE_TEMP_AGE);
            if stale {
                report.temp_files_removed += 1;
                if !dry_run {
                    std::fs::remove_file(&path).map_err(|source| CacheError::Write { path: path.clone(), source })?;
                }
            }
        }
        if !dry_run {
            for path in files_under(&self.root.join("locks").join("runs")).into_iter().filter(|p| is_sharded_entry(p, ".lock")) {
                let _ = std::fs::remove_file(&path);
            }
        }
        let mut live: BTreeSet<String> = BTreeSet::new();
        for path in files_under(&self.root.join("runs")).into_iter().filter(|p| is_sharded_entry(p, "")) {
            let key = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if keep.is_some_and(|k| !k.runs.contains(&CacheKey(key.clone()))) {
                report.runs_removed += 1;
                if !dry_run {
                    std::fs::remove_file(&path).map_err(|source| CacheError::Write { path: path.clone(), source })?;
                }
                continue;
            }
            if let Ok(Some(pointer)) = read_pointer(&path, "the pointer") {
                if let Ok(bytes) = self.get_object(&pointer) {
                    if let Ok(record) = serde_json::from_slice::<RunRecord>(&bytes) {
                        live.insert(record.findings);
                        live.insert(record.raw);
                        live.extend(record.attachments.into_values());
                    }
                }
                live.insert(pointer);
            }
        }
        for path in files_under(&self.root.join("values")).into_iter().filter(|p| is_sharded_entry(p, "")) {
            let record = read_pointer(&path, "the pointer").ok().flatten().and_then(|pointer| {
                let bytes = self.get_object(&pointer).ok()?;
                serde_json::from_slice::<ValueRecord>(&bytes).ok().map(|record| (pointer, record))
            });
            let kept = match (&record, keep) {
                (Some((_, record)), Some(k)) => k.experiments.contains(&record.experiment),
                (Some(_), None) => true,
                (None, _) => false,
            };
            match record {
                Some((pointer, record)) if kept => {
                    live.insert(pointer);
                    live.insert(record.value);
                }
                _ => {
                    report.values_removed += 1;
                    if !dry_run {
                        std::fs::remove_file(&path).map_err(|source| CacheError::Write { path: path.clone(), source })?;
                    }
                }
            }
        }
        for path in files_under(&self.root.join("objects")).into_iter().filter(|p| is_sharded_entry(p, "")) {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if !live.contains(&name) {
                report.objects_removed += 1;
                report.bytes_freed += std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
                if !dry_run {
                    std::fs::remove_file(&path).map_err(|source| CacheError::Write { path: path.clone(), source })?;
                }
            }
        }
        for path in files_under(&self.root.join("failures")).into_iter().filter(|p| is_sharded_entry(p, ".json")) {
            report.failures_removed += 1;
            if !dry_run {
                std::fs::remove_file(&path).map_err(|source| CacheError::Write { path: path.clone(), source })?;
            }
        }
        Ok(report)
    }
}

/// What `gc` keeps when it is given manifests.
#[derive(Debug, Default, Clone)]
pub struct Keep {
    /// The run keys the manifests plan.
    pub runs: BTreeSet<CacheKey>,
    /// The manifests' experiment names: their stage values stay.
    pub experiments: BTreeSet<String>,
}

#[derive(Debug, Default, Clone, Serialize)]
pub struct VerifyReport {
    pub objects: usize,
    pub runs: usize,
    pub values: usize,
    pub problems: Vec<String>,
}

#[derive(Debug, Default, Clone, Serialize)]
pub struct GcReport {
    pub runs_removed: usize,
    pub values_removed: usize,
    pub objects_removed: usize,
    pub failures_removed: usize,
    pub temp_files_removed: usize,
    pub bytes_freed: u64,
}

/// An experiment's slot journal, the last line for each slot winning; lines that do not
/// parse (a torn write) are skipped. A missing journal is an empty one.
fn read_slot_journal(path: &Path) -> HashMap<String, String> {
    let Ok(bytes) = read_entry(path, MAX_ENTRY_BYTES) else { return HashMap::new() };
    String::from_utf8_lossy(&bytes).lines().filter_map(|line| serde_json::from_str::<SlotLine>(line).ok()).map(|l| (l.slot, l.key)).collect()
}

/// Temporary files at least this old were left by a process that died mid-write.
pub const STALE_TEMP_AGE: std::time::Duration = std::time::Duration::from_secs(60);

fn short(key: &str) -> &str {
    &key[..12.min(key.len())]
}

fn lock_error(path: &Path) -> CacheError {
    CacheError::Lock(path.to_path_buf())
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum LockMode {
    Shared,
    Exclusive,
}

/// An advisory `flock(2)` on a file, released when dropped — or by the kernel when the
/// process dies, so a crash never leaves a run locked.
#[derive(Debug)]
pub struct FileLock {
    _file: std::fs::File,
}

impl FileLock {
    fn acquire(path: &Path, mode: LockMode, wait: bool) -> Result<Option<Self>, CacheError> {
        use std::os::fd::AsRawFd;
        let wrap = |source| CacheError::Write { path: path.to_path_buf(), source };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(wrap)?;
        }
        let file = std::fs::OpenOptions::new().create(true).truncate(false).read(true).write(true).open(path).map_err(wrap)?;
        let mut op = if mode == LockMode::Shared { libc::LOCK_SH } else { libc::LOCK_EX };
        if !wait {
            op |= libc::LOCK_NB;
        }
        loop {
            // SAFETY: flock on a descriptor this function owns; no memory is shared with it.
            let rc = unsafe { libc::flock(file.as_raw_fd(), op) };
            if rc == 0 {
                return Ok(Some(Self { _file: file }));
            }
            let err = std::io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EWOULDBLOCK) if !wait => return Ok(None),
                _ => return Err(wrap(err)),
            }
        }
    }

    /// Locks byte `offset` of `path` exclusively without waiting, with an open file
    /// description lock (`F_OFD_SETLK`): `None` while another holder (another process, or
    /// another handle in this one) has it. One file holds every run's lock, so locking a run
    /// creates no file; the kernel releases the byte when the holder closes it or dies.
    #[cfg(target_os = "linux")]
    fn acquire_byte(path: &Path, offset: i64) -> Result<Option<Self>, CacheError> {
        use std::os::fd::AsRawFd;
        let wrap = |source| CacheError::Write { path: path.to_path_buf(), source };
        let file = std::fs::OpenOptions::new().create(true).truncate(false).read(true).write(true).open(path).map_err(wrap)?;
        // SAFETY: `flock` is a plain C struct for which all-zero bytes are a valid value.
        let mut range: libc::flock = unsafe { std::mem::zeroed() };
        range.l_type = libc::F_WRLCK as libc::c_short;
        range.l_whence = libc::SEEK_SET as libc::c_short;
        range.l_start = offset;
        range.l_len = 1;
        loop {
            // SAFETY: fcntl on a descriptor this function owns, with a pointer to a local struct.
            let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLK, &mut range) };
            if rc == 0 {
                return Ok(Some(Self { _file: file }));
            }
            let err = std::io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EAGAIN) | Some(libc::EACCES) => return Ok(None),
                _ => return Err(wrap(err)),
            }
        }
    }
}

/// The byte of `locks/runs.lock` that is a run key's lock: 60 bits of the key's hash, so two
/// keys of one cache share a byte with negligible probability (and then only wait in turn).
#[cfg(target_os = "linux")]
fn run_lock_offset(key: &CacheKey) -> i64 {
    let hash = blake3::hash(key.0.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&hash.as_bytes()[..8]);
    (u64::from_le_bytes(first) >> 4) as i64
}

/// Whether a file is one of `atomic_write`'s temporary files.
fn is_temp(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n.to_string_lossy().starts_with(".tmp"))
}

/// A temporary file runner made: `.tmp` and six letters or digits (tempfile's names).
fn is_own_temp(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix(".tmp"))
        .is_some_and(|rest| rest.len() == 6 && rest.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// A cache entry filed where runner files it: `<shard>/<hash><suffix>` whose shard is the
/// hash's first two digits.
fn is_sharded_entry(path: &Path, suffix: &str) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(suffix));
    let shard = path.parent().and_then(|p| p.file_name()).and_then(|n| n.to_str());
    match (name, shard) {
        (Some(name), Some(shard)) => is_hex64(name) && name.starts_with(shard) && shard.len() == 2,
        _ => false,
    }
}

/// A directory of the layout: a directory itself, or not there.
fn check_directory(dir: &Path) -> Result<(), CacheError> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_symlink() => Err(CacheError::Layout { path: dir.to_path_buf(), what: "a symbolic link" }),
        Ok(m) if !m.is_dir() => Err(CacheError::Layout { path: dir.to_path_buf(), what: "not a directory" }),
        _ => Ok(()),
    }
}

/// Temporary files (`.tmp*`) anywhere below `dir`.
fn temp_files_under(dir: &Path) -> Vec<PathBuf> {
    walk_files(dir, is_own_temp)
}

/// Regular files below `dir`, sorted, skipping temporary files.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = walk_files(dir, |p| !is_temp(p));
    out.sort();
    out
}

/// Every file below `dir` that `keep` accepts (directories are walked, not returned; a link is
/// returned as itself, never followed). A walk never leaves the directory it was given: `dir`
/// itself is walked only when it is a directory, not a link to one.
fn walk_files(dir: &Path, keep: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if !std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) {
        return out;
    }
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() {
                stack.push(path);
            } else if keep(&path) {
                out.push(path);
            }
        }
    }
    out
}

/// A file a report would replace, opened to compare with: a regular file only (anything else
/// is replaced without being read).
fn open_existing(path: &Path) -> std::io::Result<std::fs::File> {
    crate::bounded::open_regular(path, crate::bounded::Links::Follow, "reports").map(|(file, _)| file)
}

/// [`open_existing`], read whole when at most `limit` bytes.
fn read_existing(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    crate::bounded::read(path, limit, crate::bounded::Links::Follow, "reports")
}

/// Writes a file atomically: a temp file in the same directory, fsync, rename. A file that
/// already holds exactly these bytes is left as it is (no rename, no fsync), so a re-report
/// that changes nothing writes nothing.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> Result<(), CacheError> {
    atomic_replace(path, bytes).map(|_| ())
}

/// [`atomic_write`], saying whether it replaced the file (`false`: its bytes were already
/// these, and it was left as it is).
pub fn atomic_replace(path: &Path, bytes: &[u8]) -> Result<bool, CacheError> {
    match stage_replace(path, bytes)? {
        Some(staged) => staged.persist().map(|()| true),
        None => Ok(false),
    }
}

/// [`atomic_write`] of bytes `write` streams out, never held whole in memory. While they equal
/// the file already at `path`, they are only compared with it; from the first byte that
/// differs (or a longer or shorter file) they go to a temporary file beside it, which is
/// fsynced, then renamed over it once `proceed` agrees (a report written beside another waits
/// for that one to render, its fsync done meanwhile; `false` drops the new bytes). An
/// unchanged file is left as it is, unwritten. Returns whether the file was replaced.
pub fn atomic_write_streamed(path: &Path, write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>, proceed: impl FnOnce() -> bool) -> std::io::Result<bool> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let old = open_existing(path).ok().map(|file| std::io::BufReader::with_capacity(STREAM_BUFFER, file));
    let mut out = std::io::BufWriter::with_capacity(STREAM_BUFFER, Compared::with(dir, path, old, false));
    write(&mut out)?;
    let mut compared = out.into_inner().map_err(|e| e.into_error())?;
    if compared.temp.is_none() {
        // Every byte matched: unchanged unless the old file goes on.
        let longer = match compared.old.as_mut() {
            Some(old) => !std::io::BufRead::fill_buf(old)?.is_empty(),
            None => true,
        };
        if !longer {
            return Ok(false);
        }
        compared.diverge()?;
    }
    let temp = compared.temp.take().ok_or_else(|| std::io::Error::other("no temporary file"))?;
    // On the disk before `proceed` is asked, so the fsync overlaps whatever it waits for.
    temp.as_file().sync_all()?;
    if !proceed() {
        return Ok(false);
    }
    temp.persist(path).map_err(|e| e.error)?;
    Ok(true)
}

/// Whether the bytes `write` streams out are exactly those of the file at `path` (no file
/// there: they are not). They are compared as they stream, never written anywhere, and the
/// comparison stops at the first byte that differs: `write` then gets an error, which it should
/// pass on as it came (any other error it returns is returned).
pub fn same_as_file(path: &Path, write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> std::io::Result<bool> {
    let old = match open_existing(path) {
        Ok(file) => std::io::BufReader::with_capacity(STREAM_BUFFER, file),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut out = std::io::BufWriter::with_capacity(STREAM_BUFFER, Compared::with(dir, path, Some(old), true));
    match write(&mut out).and_then(|()| out.flush()) {
        Err(e) if e.get_ref().is_some_and(|inner| inner.is::<Differs>()) => Ok(false),
        Err(e) => Err(e),
        // Every byte matched: the same unless the old file goes on (it is never dropped here).
        Ok(()) => match out.into_inner().map_err(|e| e.into_error())?.old.as_mut() {
            Some(old) => Ok(std::io::BufRead::fill_buf(old)?.is_empty()),
            None => Ok(false),
        },
    }
}

/// What [`same_as_file`]'s comparison reports, as an error to the writer, at the first byte
/// that differs.
#[derive(Debug)]
struct Differs;

impl std::fmt::Display for Differs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the bytes differ from the file's")
    }
}

impl std::error::Error for Differs {}

/// The buffer size of [`atomic_write_streamed`]'s reads and writes.
const STREAM_BUFFER: usize = 1 << 16;

/// Bytes compared with the file they would replace until one differs, then written to a
/// temporary file that starts with the matched prefix.
struct Compared {
    dir: PathBuf,
    path: PathBuf,
    old: Option<std::io::BufReader<std::fs::File>>,
    /// How many leading bytes equal the old file's.
    matched: u64,
    temp: Option<tempfile::NamedTempFile>,
    scratch: Vec<u8>,
    /// [`same_as_file`]: the first byte that differs ends the write ([`Differs`]) instead of
    /// starting a temporary file.
    stop_at_difference: bool,
}

impl Compared {
    /// Comparing with `old` (the file at `path`, when there is one) in `dir`.
    fn with(dir: &Path, path: &Path, old: Option<std::io::BufReader<std::fs::File>>, stop_at_difference: bool) -> Self {
        Self { dir: dir.to_path_buf(), path: path.to_path_buf(), old, matched: 0, temp: None, scratch: Vec::new(), stop_at_difference }
    }

    /// Starts the temporary file with the old file's matched prefix.
    fn diverge(&mut self) -> std::io::Result<()> {
        let mut temp = temp_file_in(&self.dir)?;
        if self.matched > 0 {
            let mut prefix = std::io::Read::take(open_existing(&self.path)?, self.matched);
            if std::io::copy(&mut prefix, temp.as_file_mut())? != self.matched {
                return Err(std::io::Error::other(format!("`{}` changed while it was being replaced", self.path.display())));
            }
        }
        self.old = None;
        self.temp = Some(temp);
        Ok(())
    }
}

impl Write for Compared {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if let Some(temp) = self.temp.as_mut() {
            return temp.write(bytes);
        }
        if let Some(old) = self.old.as_mut() {
            self.scratch.resize(bytes.len(), 0);
            let mut got = 0;
            while got < bytes.len() {
                match std::io::Read::read(old, &mut self.scratch[got..])? {
                    0 => break,
                    n => got += n,
                }
            }
            if got == bytes.len() && self.scratch == bytes {
                self.matched += bytes.len() as u64;
                return Ok(bytes.len());
            }
        }
        if self.stop_at_difference {
            return Err(std::io::Error::other(Differs));
        }
        self.diverge()?;
        self.write(bytes)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self.temp.as_mut() {
            Some(temp) => temp.flush(),
            None => Ok(()),
        }
    }
}

/// A temporary file in `dir` (named `.tmp…`, so `gc` knows it) to be renamed over a file
/// there. Created with the mode any new file gets (0666 less the umask), not tempfile's
/// owner-only 0600: reports and cache entries hold no secrets, and teammates on a shared
/// machine read them.
pub fn temp_file_in(dir: &Path) -> std::io::Result<tempfile::NamedTempFile> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    builder.tempfile_in(dir)
}

/// [`atomic_replace`] in two steps: the bytes are written and synced to a temporary file beside
/// `path` now, and take its place only when [`Staged::persist`] says so (so that a file whose
/// presence tells readers what the directory is, such as a report's results.json, can be put in
/// place before the others). `None`: the file already holds exactly these bytes.
pub fn stage_replace(path: &Path, bytes: &[u8]) -> Result<Option<Staged>, CacheError> {
    // Read only when it is a regular file of exactly this size (a FIFO there is replaced, not waited on).
    let unchanged =
        std::fs::metadata(path).is_ok_and(|m| m.len() == bytes.len() as u64) && read_existing(path, bytes.len() as u64).is_ok_and(|old| old == bytes);
    if unchanged {
        return Ok(None);
    }
    let temp = synced_temp(path, bytes, true)?;
    Ok(Some(Staged { temp, path: path.to_path_buf() }))
}

/// New bytes for a file, synced beside it and not yet in its place ([`stage_replace`]).
pub struct Staged {
    temp: tempfile::NamedTempFile,
    path: PathBuf,
}

impl Staged {
    /// Renames the bytes over the file.
    pub fn persist(self) -> Result<(), CacheError> {
        let path = self.path;
        self.temp.persist(&path).map(|_| ()).map_err(|e| CacheError::Write { path, source: e.error })
    }
}

fn write_via_temp(path: &Path, bytes: &[u8], fsync: bool) -> Result<(), CacheError> {
    let tmp = synced_temp(path, bytes, fsync)?;
    tmp.persist(path).map_err(|e| CacheError::Write { path: path.to_path_buf(), source: e.error })?;
    Ok(())
}

/// A temporary file beside `path` holding `bytes`, synced to the disk when `fsync` says so.
fn synced_temp(path: &Path, bytes: &[u8], fsync: bool) -> Result<tempfile::NamedTempFile, CacheError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let wrap = |source| CacheError::Write { path: path.to_path_buf(), source };
    // The directory is made only when it is missing: nearly every write goes to one that is
    // there, and asking first would cost each of them a `mkdir`.
    let mut tmp = match temp_file_in(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).map_err(wrap)?;
            temp_file_in(dir).map_err(wrap)?
        }
        made => made.map_err(wrap)?,
    };
    tmp.write_all(bytes).map_err(wrap)?;
    if fsync {
        tmp.as_file().sync_all().map_err(wrap)?;
    }
    Ok(tmp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reviewer::ReviewOutput;

    #[test]
    fn a_staged_replacement_takes_the_files_place_only_when_persisted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("RESULTS.md");
        std::fs::write(&path, "old").expect("write");
        assert!(stage_replace(&path, b"old").expect("stages").is_none(), "the same bytes: nothing to stage");
        let staged = stage_replace(&path, b"new").expect("stages").expect("new bytes");
        assert_eq!(std::fs::read(&path).expect("read"), b"old", "not in place before persist");
        staged.persist().expect("persists");
        assert_eq!(std::fs::read(&path).expect("read"), b"new");
        let dropped = stage_replace(&path, b"never").expect("stages");
        drop(dropped);
        assert_eq!(std::fs::read(&path).expect("read"), b"new", "a staged file dropped leaves the file as it was");
        let left: Vec<_> = std::fs::read_dir(dir.path()).expect("list").filter_map(Result::ok).map(|e| e.file_name()).collect();
        assert_eq!(left.len(), 1, "no temporary file left behind: {left:?}");
    }

    fn inputs() -> KeyInputs {
        KeyInputs {
            schema: 1,
            reviewer_kind: "builtin".into(),
            reviewer: serde_json::json!({}).into(),
            cell: Default::default(),
            subject: "s".into(),
            repeat: 1,
        }
    }

    #[test]
    fn stores_reads_and_detects_corruption() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = CacheStore::new(dir.path());
        let key = CacheKey("a".repeat(64));
        assert!(matches!(store.lookup(&key), Lookup::Miss));
        let output = ReviewOutput { raw: "raw".into(), ..Default::default() };
        let record = store.store_success("exp", "label", "slot", &key, &inputs(), &output).expect("store");
        assert!(matches!(store.lookup(&key), Lookup::Hit { .. }));
        assert!(store.verify().problems.is_empty());

        // Flip the findings object: the lookup must report it and not serve it.
        std::fs::write(store.object_path(&record.findings), b"[{\"tampered\":true}]").expect("tamper");
        match store.lookup(&key) {
            Lookup::Corrupt(reason) => assert!(reason.contains("corrupt"), "{reason}"),
            other => panic!("expected corrupt, got {other:?}"),
        }
        assert_eq!(store.verify().problems.len(), 2, "object and run both reported");
    }

    #[cfg(unix)]
    #[test]
    fn an_atomic_write_of_the_same_bytes_leaves_the_file_in_place() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("RESULTS.md");
        atomic_write(&path, b"one").expect("first");
        let inode = std::fs::metadata(&path).expect("meta").ino();
        atomic_write(&path, b"one").expect("same");
        assert_eq!(std::fs::metadata(&path).expect("meta").ino(), inode, "identical bytes: not replaced");
        atomic_write(&path, b"two").expect("changed");
        assert_ne!(std::fs::metadata(&path).expect("meta").ino(), inode, "changed bytes: replaced");
        assert_eq!(std::fs::read(&path).expect("read"), b"two");
        assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 1, "no temporary file is left");
    }

    #[cfg(unix)]
    #[test]
    fn a_streamed_write_replaces_a_file_exactly_when_a_byte_differs() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("results.json");
        // Written in uneven pieces: every other one larger than the stream's buffer (it goes
        // straight through), the rest in parts smaller than it.
        let stream = |bytes: &[u8]| {
            atomic_write_streamed(
                &path,
                |out| {
                    for (i, piece) in bytes.chunks(STREAM_BUFFER + 17).enumerate() {
                        if i % 2 == 0 {
                            out.write_all(piece)?;
                        } else {
                            for part in piece.chunks(STREAM_BUFFER / 3 + 1) {
                                out.write_all(part)?;
                            }
                        }
                    }
                    Ok(())
                },
                || true,
            )
            .expect("write");
        };
        let base: Vec<u8> = (0..3 * STREAM_BUFFER + 5).map(|i| (i % 251) as u8).collect();
        stream(&base);
        assert_eq!(std::fs::read(&path).expect("read"), base, "no file before: written");
        let inode = std::fs::metadata(&path).expect("meta").ino();
        stream(&base);
        assert_eq!(std::fs::metadata(&path).expect("meta").ino(), inode, "identical bytes: not replaced");
        let mut middle = base.clone();
        middle[2 * STREAM_BUFFER + 3] ^= 1;
        let longer = [base.as_slice(), b"tail"].concat();
        let shorter = base[..base.len() - 1].to_vec();
        for (what, bytes) in [("a byte in the middle", &middle), ("longer", &longer), ("shorter", &shorter), ("empty", &Vec::new()), ("back", &base)] {
            let before = std::fs::metadata(&path).expect("meta").ino();
            stream(bytes);
            assert_eq!(&std::fs::read(&path).expect("read"), bytes, "{what}: the new bytes, matched prefix included");
            assert_ne!(std::fs::metadata(&path).expect("meta").ino(), before, "{what}: replaced");
        }
        assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 1, "no temporary file is left");
    }

    #[cfg(unix)]
    #[test]
    fn a_streamed_comparison_says_whether_the_bytes_are_the_files_and_stops_at_the_first_difference() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("results.json");
        let base: Vec<u8> = (0..3 * STREAM_BUFFER + 5).map(|i| (i % 251) as u8).collect();
        // Streamed in pieces a third of the buffer; returns the answer and how many bytes the
        // comparison took before it answered.
        let compare = |bytes: &[u8]| {
            let mut taken = 0usize;
            let same = same_as_file(&path, |out| {
                for piece in bytes.chunks(STREAM_BUFFER / 3 + 1) {
                    out.write_all(piece)?;
                    taken += piece.len();
                }
                Ok(())
            })
            .expect("compare");
            (same, taken)
        };
        assert_eq!(compare(&base), (false, 0), "no file: not the same, and nothing streamed");
        std::fs::write(&path, &base).expect("write");
        let inode = std::fs::metadata(&path).expect("meta").ino();
        assert_eq!(compare(&base), (true, base.len()));
        let mut early = base.clone();
        early[10] ^= 1;
        let (same, taken) = compare(&early);
        assert!(!same, "a byte near the start differs");
        assert!(taken <= 2 * STREAM_BUFFER, "the comparison stopped soon after the difference ({taken} of {} bytes taken)", base.len());
        let mut late = base.clone();
        late[2 * STREAM_BUFFER + 3] ^= 1;
        let longer = [base.as_slice(), b"tail"].concat();
        let shorter = base[..base.len() - 1].to_vec();
        for (what, bytes) in [("a byte late", &late), ("longer", &longer), ("shorter", &shorter), ("empty", &Vec::new())] {
            assert!(!compare(bytes).0, "{what}: not the same");
        }
        assert_eq!(std::fs::read(&path).expect("read"), base, "the file is untouched");
        assert_eq!(std::fs::metadata(&path).expect("meta").ino(), inode, "and not replaced");
        assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 1, "no temporary file is made");
        // Another error of the writer's is returned as it came.
        let e = same_as_file(&path, |_| Err(std::io::Error::other("the writer's own"))).expect_err("passed on");
        assert_eq!(e.to_string(), "the writer's own");
    }

    #[test]
    fn failures_are_never_served() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = CacheStore::new(dir.path());
        let key = CacheKey("b".repeat(64));
        store.store_failure("label", "slot", &key, &ReviewError::failed("boom")).expect("store");
        assert!(matches!(store.lookup(&key), Lookup::Miss));
        assert_eq!(store.failure(&key).map(|f| f.error), Some(ReviewError::failed("boom")));
    }

    #[test]
    fn gc_keeps_live_objects_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = CacheStore::new(dir.path());
        let key = CacheKey("c".repeat(64));
        store.store_success("exp", "l", "slot", &key, &inputs(), &ReviewOutput::default()).expect("store");
        store.put_object(b"orphan").expect("orphan");
        let report = store.gc(None, false).expect("gc");
        assert_eq!(report.objects_removed, 1);
        assert!(matches!(store.lookup(&key), Lookup::Hit { .. }));
    }

    #[test]
    fn verify_finds_swapped_pointers_and_bad_raw_outputs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = CacheStore::new(dir.path());
        let (a, b) = (CacheKey("a".repeat(64)), CacheKey("b".repeat(64)));
        let out_a = ReviewOutput { raw: "raw a".into(), ..Default::default() };
        let out_b = ReviewOutput { raw: "raw b".into(), ..Default::default() };
        store.store_success("exp", "a", "slot-a", &a, &inputs(), &out_a).expect("store a");
        let rec_b = store.store_success("exp", "b", "slot-b", &b, &inputs(), &out_b).expect("store b");
        assert!(store.verify().problems.is_empty());

        // Swap the two run pointers: every object is intact, but each names the other's record.
        let (pa, pb) = (store.run_path(&a), store.run_path(&b));
        let (ta, tb) = (std::fs::read(&pa).expect("a"), std::fs::read(&pb).expect("b"));
        std::fs::write(&pa, &tb).expect("swap");
        std::fs::write(&pb, &ta).expect("swap");
        let problems = store.verify().problems;
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems.iter().all(|p| p.contains("names a record for key")), "{problems:?}");
        std::fs::write(&pa, &ta).expect("restore");
        std::fs::write(&pb, &tb).expect("restore");

        // A raw output that is gone is the run's problem.
        std::fs::remove_file(store.object_path(&rec_b.raw)).expect("remove raw");
        let problems = store.verify().problems;
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("raw output"), "{problems:?}");
        // A corrupt one is reported for the object and for the run.
        std::fs::write(store.object_path(&rec_b.raw), b"tampered").expect("tamper");
        let problems = store.verify().problems;
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("raw output") && p.contains("corrupt")), "{problems:?}");
    }

    #[cfg(unix)]
    #[test]
    fn written_files_get_the_mode_of_any_new_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let plain = dir.path().join("plain");
        std::fs::write(&plain, b"x").expect("write");
        let ours = dir.path().join("RESULTS.md");
        atomic_write(&ours, b"x").expect("atomic write");
        let mode = |p: &Path| std::fs::metadata(p).expect("metadata").permissions().mode() & 0o777;
        assert_eq!(mode(&ours), mode(&plain), "0666 less the umask, as for any new file");
    }

    #[test]
    fn run_locks_exclude_each_other_until_dropped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = CacheStore::new(dir.path());
        let key = CacheKey("f".repeat(64));
        let held = store.try_lock_run(&key).expect("lock").expect("free");
        assert!(store.try_lock_run(&key).expect("lock").is_none(), "a second holder must wait");
        assert!(store.try_lock_run(&CacheKey("0".repeat(64))).expect("lock").is_some(), "other keys are free");
        drop(held);
        assert!(store.try_lock_run(&key).expect("lock").is_some());
        // Lock files never show up in a committed cache.
        assert_eq!(std::fs::read_to_string(dir.path().join("locks/.gitignore")).expect("ignore"), "*\n");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn run_locks_create_no_file_per_run() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = CacheStore::new(dir.path());
        let held: Vec<FileLock> = (0..200u32).map(|i| store.try_lock_run(&CacheKey(format!("{i:064x}"))).expect("lock").expect("free")).collect();
        // Every key's lock is held at once, all in one file.
        assert!(store.try_lock_run(&CacheKey(format!("{:064x}", 7))).expect("lock").is_none());
        let mut files = walk_files(dir.path(), |_| true);
        files.sort();
        assert_eq!(files, vec![dir.path().join("locks/.gitignore"), dir.path().join("locks/runs.lock")]);
        drop(held);
        assert!(store.try_lock_run(&CacheKey(format!("{:064x}", 7))).expect("lock").is_some());
    }

    #[test]
    fn gc_waits_for_executions_and_removes_stale_temp_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = CacheStore::new(dir.path());
        let exec_lock = store.lock_shared().expect("shared");
        let second_exec = store.lock_shared().expect("executions share the cache");
        assert!(store.lock_exclusive(false).expect("lock").is_none(), "gc may not run beside an execution");
        drop((exec_lock, second_exec));
        let gc_lock = store.lock_exclusive(false).expect("lock").expect("free once executions end");

        // A temp file left by a killed writer, and one being written right now.
        let shard = dir.path().join("objects/ab");
        std::fs::create_dir_all(&shard).expect("mkdir");
        let stale = shard.join(".tmpSTALE1");
        std::fs::write(&stale, b"half").expect("write");
        let old = std::time::SystemTime::now() - STALE_TEMP_AGE - std::time::Duration::from_secs(1);
        std::fs::File::options().write(true).open(&stale).expect("open").set_modified(old).expect("age it");
        let fresh = shard.join(".tmpFRESH1");
        std::fs::write(&fresh, b"being written").expect("write");
        // Old, but not a name runner gives its temporary files: not runner's.
        let foreign = shard.join(".tmp-notes.txt");
        std::fs::write(&foreign, b"mine").expect("write");
        std::fs::File::options().write(true).open(&foreign).expect("open").set_modified(old).expect("age it");
        let report = store.gc(None, false).expect("gc");
        assert_eq!(report.temp_files_removed, 1);
        assert!(!stale.exists() && fresh.exists() && foreign.exists());
        drop(gc_lock);
    }

    #[test]
    fn gc_removes_nothing_through_a_link_nor_any_file_not_of_the_layout() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("cache");
        let elsewhere = dir.path().join("elsewhere");
        // What the user keeps elsewhere, named exactly like cache entries.
        let hash = "ab".to_string() + &"0".repeat(62);
        std::fs::create_dir_all(elsewhere.join("ab")).expect("mkdir");
        std::fs::write(elsewhere.join("ab").join(format!("{hash}.json")), b"precious").expect("write");
        std::fs::write(elsewhere.join("ab").join(&hash), b"precious").expect("write");
        for layout in ["failures", "objects"] {
            std::fs::create_dir_all(&root).expect("mkdir");
            std::os::unix::fs::symlink(Path::new("../elsewhere"), root.join(layout)).expect("symlink");
            let store = CacheStore::new(&root);
            let e = store.gc(None, false).expect_err("a linked layout directory");
            assert!(matches!(e, CacheError::Layout { .. }), "{e}");
            assert!(e.to_string().contains(layout) && e.to_string().contains("symbolic link"), "{e}");
            assert!(store.verify().problems.iter().any(|p| p.contains("symbolic link")));
            std::fs::remove_file(root.join(layout)).expect("unlink");
        }
        // A shard directory that is a link: refused too.
        std::fs::create_dir_all(root.join("objects")).expect("mkdir");
        std::os::unix::fs::symlink(elsewhere.join("ab"), root.join("objects/ab")).expect("symlink");
        assert!(CacheStore::new(&root).gc(None, false).is_err());
        std::fs::remove_file(root.join("objects/ab")).expect("unlink");
        assert_eq!(std::fs::read(elsewhere.join("ab").join(&hash)).expect("still there"), b"precious");
        assert!(elsewhere.join("ab").join(format!("{hash}.json")).exists());

        // Files of the user's own inside the cache's directories stay: only entries go.
        let store = CacheStore::new(&root);
        std::fs::write(root.join("objects/.keep"), b"").expect("write");
        std::fs::create_dir_all(root.join("objects/ab")).expect("mkdir");
        std::fs::write(root.join("objects/ab/README"), b"mine").expect("write");
        std::fs::write(root.join("objects/ab").join(&hash), b"unreferenced").expect("write");
        std::fs::create_dir_all(root.join("failures/ab")).expect("mkdir");
        std::fs::write(root.join("failures/.keep"), b"").expect("write");
        std::fs::write(root.join("failures/ab").join(format!("{hash}.json")), b"{}").expect("write");
        let report = store.gc(None, false).expect("gc");
        assert_eq!((report.objects_removed, report.failures_removed), (1, 1));
        for kept in ["objects/.keep", "objects/ab/README", "failures/.keep"] {
            assert!(root.join(kept).exists(), "{kept}");
        }
    }

    #[test]
    fn previous_inputs_explain_a_miss() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = CacheStore::new(dir.path());
        let old = CacheKey("d".repeat(64));
        store.store_success("exp", "l", "slot", &old, &inputs(), &ReviewOutput::default()).expect("store");
        let new_key = CacheKey("e".repeat(64));
        let prev = store.previous_inputs("slot", &new_key).expect("previous");
        let changed = KeyInputs { repeat: 2, ..inputs() }.changed_fields(&prev);
        assert_eq!(changed, vec!["repeat".to_string()]);
    }

    #[test]
    fn slots_are_lines_of_one_journal_per_experiment_and_old_slot_files_still_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = CacheStore::new(dir.path());
        let (a, b) = (CacheKey("a".repeat(64)), CacheKey("b".repeat(64)));
        let slot = |experiment: &str, repeat: u32| format!("{experiment}\0cell\0{repeat}\0s");
        for i in 0..50 {
            store.remember_slot(&slot("exp", i), &a).expect("remember");
        }
        store.remember_slot(&slot("exp", 0), &a).expect("again");
        store.remember_slot(&slot("exp", 1), &b).expect("changed");
        store.remember_slot(&slot("other", 1), &b).expect("another experiment");
        let journals: Vec<PathBuf> = walk_files(&dir.path().join("slots"), |_| true);
        assert_eq!(journals.len(), 2, "one journal per experiment, no file per slot: {journals:?}");
        let journal = store.slot_journal_path("exp\0x");
        let text = std::fs::read_to_string(&journal).expect("journal");
        assert_eq!(text.lines().count(), 51, "an unchanged slot is not written again; a changed one is appended");
        // A torn last line (a crash mid-append) is skipped; a fresh handle reads the rest.
        std::fs::write(&journal, format!("{text}{{\"slot\": \"exp")).expect("tear");
        let fresh = CacheStore::new(dir.path());
        assert_eq!(fresh.slot_key(&slot("exp", 1)), Some(b.0.clone()), "the last line wins");
        assert_eq!(fresh.slot_key(&slot("exp", 2)), Some(a.0.clone()));
        assert_eq!(fresh.slot_key(&slot("exp", 99)), None);
        // A slot file of the older layout is read, and not rewritten when it agrees.
        let old_slot = &slot("old", 1);
        atomic_write(&fresh.slot_path(old_slot), format!("{a}\n").as_bytes()).expect("old file");
        assert_eq!(fresh.slot_key(old_slot), Some(a.0.clone()));
        fresh.remember_slot(old_slot, &a).expect("agrees");
        assert!(!fresh.slot_journal_path(old_slot).exists());
    }

    #[test]
    fn writers_of_one_object_all_repair_a_directory_in_its_place() {
        // Runs that share an object write it at once; a directory in its place (holding
        // files) must not fail any of them, whichever removes it or lands first.
        for round in 0..100 {
            let dir = tempfile::tempdir().expect("tempdir");
            let store = CacheStore::new(dir.path());
            let bytes = format!("shared output {round}");
            let hash = blake3::hash(bytes.as_bytes()).to_hex().to_string();
            let path = store.object_path(&hash);
            std::fs::create_dir_all(path.join("inside").join("deeper")).expect("mkdir");
            std::fs::write(path.join("inside").join("file"), "x").expect("file");
            let barrier = std::sync::Barrier::new(4);
            let results: Vec<Result<String, String>> = std::thread::scope(|scope| {
                let writers: Vec<_> = (0..4)
                    .map(|_| {
                        scope.spawn(|| {
                            barrier.wait();
                            store.put_object(bytes.as_bytes()).map_err(|e| e.to_string())
                        })
                    })
                    .collect();
                writers.into_iter().map(|w| w.join().unwrap_or_else(|_| Err("panicked".into()))).collect()
            });
            assert!(results.iter().all(|r| r.as_deref() == Ok(hash.as_str())), "round {round}: {results:?}");
            assert_eq!(store.get_object(&hash).expect("whole"), bytes.as_bytes());
        }
    }
}
