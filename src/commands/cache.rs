//! `runner cache`: the local cache listed, verified and collected; runs moved to and from the remote cache.

use super::output::warn;
use crate::cli::{CacheCommand, LocationArgs};
use runner::cache::Lookup;
use runner::error::{Error, Exit};
use runner::experiment::{self, Locations};
use std::path::PathBuf;

/// The cache a manifest here would use by default: `cache/` at the project root (the nearest
/// directory above with `.git`), else the `.runner/cache/` that `runner init`'s manifests name
/// when only that one exists, so `cache ls` finds the same runs from any directory.
fn default_cache_dir() -> PathBuf {
    let root = runner::config::project_root(std::path::Path::new("."));
    let (shared, private) = (root.join("cache"), root.join(".runner").join("cache"));
    if !shared.is_dir() && private.is_dir() {
        private
    } else {
        shared
    }
}

/// `runner cache`: ls, verify, gc, push and pull.
pub(crate) fn run(command: CacheCommand, locations: &LocationArgs) -> Result<Exit, Error> {
    let store = runner::cache::CacheStore::new(locations.cache_dir.clone().unwrap_or_else(default_cache_dir));
    match command {
        CacheCommand::Push { manifests } => cache_transfer(&manifests, locations, true),
        CacheCommand::Pull { manifests } => cache_transfer(&manifests, locations, false),
        CacheCommand::Ls { json } => {
            let entries = store.list();
            for entry in &entries {
                match entry {
                    Ok(r) if json => outln!(
                        "{}",
                        serde_json::json!({"key": r.key.0, "experiment": r.experiment, "run": r.label, "findings": r.finding_count, "wall_ms": r.cost.wall_ms})
                    ),
                    Ok(r) => outln!("{}  {:<20} {:>4} findings  {}", r.key.short(), r.experiment, r.finding_count, r.label),
                    Err((path, e)) => errln!("corrupt: {}: {e}", path.display()),
                }
            }
            if !json {
                errln!("{} runs in `{}`", entries.len(), store.root().display());
            }
            Ok(if entries.iter().all(Result::is_ok) { Exit::Ok } else { Exit::Error })
        }
        CacheCommand::Verify => {
            let report = store.verify();
            for p in &report.problems {
                outln!("corrupt: {p}");
            }
            outln!("{} objects, {} runs, {} stage values checked, {} problems", report.objects, report.runs, report.values, report.problems.len());
            Ok(if report.problems.is_empty() { Exit::Ok } else { Exit::Error })
        }
        CacheCommand::Gc { keep, dry_run } => {
            let keep_keys = if keep.is_empty() {
                None
            } else {
                let mut kept = runner::cache::Keep::default();
                for m in &keep {
                    let prepared = experiment::prepare(m, &Locations { cache_dir: Some(store.root().to_path_buf()), ..Locations::default() })?;
                    kept.runs.extend(prepared.plan.runs.iter().map(|r| r.key.clone()));
                    kept.experiments.insert(prepared.manifest.experiment.name.clone());
                }
                Some(kept)
            };
            // Never beside a running `exec`: it holds the shared lock while it writes.
            let _lock = match store.lock_exclusive(false)? {
                Some(lock) => lock,
                None => {
                    errln!("waiting for the `runner exec` processes using `{}` to finish…", store.root().display());
                    store.lock_exclusive(true)?.ok_or_else(|| runner::cache::CacheError::Lock(store.root().to_path_buf()))?
                }
            };
            let report = store.gc(keep_keys.as_ref(), dry_run)?;
            outln!(
                "{}{} runs, {} stage values, {} objects ({} bytes), {} failure records, {} stale temporary files",
                if dry_run { "would remove " } else { "removed " },
                report.runs_removed,
                report.values_removed,
                report.objects_removed,
                report.bytes_freed,
                report.failures_removed,
                report.temp_files_removed
            );
            Ok(Exit::Ok)
        }
    }
}

/// `cache push` / `cache pull`: moves each manifest's runs and stage values between the local
/// cache and the remote one.
fn cache_transfer(manifests: &[PathBuf], locations: &LocationArgs, push: bool) -> Result<Exit, Error> {
    if locations.remote_cache.is_none() {
        return Err(Error::RemoteCache(runner::cache::RemoteError::Config(
            "`cache push` and `cache pull` need a remote cache: pass --remote-cache s3://bucket/prefix or set RUNNER_REMOTE_CACHE".to_string(),
        )));
    }
    let mut ok = true;
    for manifest in manifests {
        let prepared = experiment::prepare_to_read(manifest, &super::common::locations(locations))?;
        let name = prepared.manifest.experiment.name.clone();
        let Some(layered) = prepared.layered(std::sync::Arc::new(|message| warn(&message))) else { continue };
        let keys: Vec<runner::cache::CacheKey> = prepared.plan.runs.iter().map(|r| r.key.clone()).collect();
        let mut values = 0usize;
        let runs = if push {
            for record in prepared.cache.list_values().into_iter().flatten().filter(|r| r.experiment == name) {
                values += usize::from(layered.push_value(&record));
            }
            keys.iter().filter(|k| layered.push_run(k)).count()
        } else {
            layered.prefetch_runs(&keys);
            if layered.outage().is_none() {
                values = layered.pull_values(&name)?;
            }
            keys.iter().filter(|k| matches!(layered.local().lookup(k), Lookup::Hit { .. })).count()
        };
        // What was copied in is made durable (entries are written without an fsync each).
        layered.local().sync()?;
        let moved = layered.transfer();
        if let Some(outage) = layered.outage() {
            errln!("error: {name}: the remote cache failed: {outage}");
            ok = false;
            continue;
        }
        if push {
            outln!(
                "{name}: {runs} of {} runs and {values} stage values checked against {}: {} new there, {} already there",
                keys.len(),
                layered_url(&prepared),
                moved.pushed,
                moved.present
            );
        } else {
            outln!(
                "{name}: {} entries copied from {}; {runs} of {} runs now in the local cache, {values} stage values copied",
                moved.pulled,
                layered_url(&prepared),
                keys.len()
            );
            if moved.corrupt > 0 {
                errln!("warning: {name}: {} remote entries failed verification and were not used", moved.corrupt);
            }
        }
    }
    Ok(if ok { Exit::Ok } else { Exit::Error })
}

fn layered_url(prepared: &experiment::Prepared) -> String {
    prepared.remote.as_ref().map(|r| r.url().to_string()).unwrap_or_default()
}
