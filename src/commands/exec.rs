//! `runner exec`: one experiment end to end, with the progress reporters, the interrupt
//! handling (SIGINT, SIGTERM, SIGHUP), and "wrote" said only of the report files the render
//! node changed.

pub(crate) mod progress;

use super::common::locations;
use super::output::{write_to, Stream};
use crate::cli::ExecArgs;
use progress::Mode;
use runner::error::{Ending, Error, Exit};
use runner::exec::{Emitter, ExecOptions};
use runner::experiment;
use std::path::Path;

/// `runner exec`: one experiment end to end, its progress reported as it runs.
pub(crate) fn run(args: ExecArgs) -> Result<Exit, Error> {
    // What killed runners left behind goes first.
    runner::scratch::sweep_stale();
    let options = experiment::PrepareOptions { max_runs: args.reports.max_runs, frozen: args.frozen };
    let mut prepared = experiment::prepare_with(&args.manifest, &locations(&args.locations), &options)?;
    if let Some(dir) = &args.reports.output {
        prepared.manifest.report.output = dir.clone();
    }
    prepared.manifest.report.html |= args.reports.html;
    prepared.manifest.report.force = args.reports.force;
    if args.steal && prepared.remote.is_none() {
        return Err(Error::RemoteCache(runner::cache::RemoteError::Config(
            "--steal takes runs under leases kept in the remote cache: pass --remote-cache s3://bucket/prefix or set RUNNER_REMOTE_CACHE".to_string(),
        )));
    }
    let mode = if args.reports.json {
        Mode::Json
    } else if args.reports.quiet {
        Mode::Quiet
    } else {
        Mode::Human
    };
    let work_dir = prepared.work_dir.clone();
    let options = ExecOptions {
        jobs: args.jobs,
        frozen: args.frozen,
        refresh: args.refresh,
        work_dir: work_dir.clone(),
        experiment: prepared.manifest.experiment.name.clone(),
        reviewers: prepared.reviewer_limits(),
        max_cost: args.max_cost,
        shard: args.shard,
        steal: args.steal.then(|| {
            let longest = prepared.manifest.reviewers.entries.iter().map(|r| r.spec.timeout).max().unwrap_or_default();
            args.lease_ttl.map_or(longest + std::time::Duration::from_secs(60), std::time::Duration::from_secs)
        }),
    };
    let log_path = work_dir.join("executions").join(format!("{}-{}.ndjson", prepared.manifest.experiment.name, unix_millis()));
    let log = std::fs::create_dir_all(log_path.parent().unwrap_or(Path::new("."))).ok().and_then(|_| std::fs::File::create(&log_path).ok());
    let label = manifest_label(&args.manifest, &prepared.manifest.base_dir);

    let rt = runtime()?;
    let (executed, summary) = rt.block_on(async {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let (cancel_tx, cancel_rx) = tokio::sync::watch::channel(false);
        let cancel_tx = std::sync::Arc::new(cancel_tx);
        // Ctrl-C, SIGTERM (CI cancellation, `timeout`, `docker stop`) and SIGHUP (a closed
        // terminal or SSH session) take the same path: running reviews are abandoned (their
        // process groups killed), finished runs stay cached.
        let on_signal = cancel_tx.clone();
        tokio::spawn(async move {
            if interrupt_or_terminate().await {
                let _ = on_signal.send(true);
            }
        });
        // So does output that can no longer be written (a closed pipe, a full disk).
        let reporter = tokio::spawn(progress::consume(rx, mode, args.reports.progress.into(), log, move || {
            let _ = cancel_tx.send(true);
        }));
        let emitter = Emitter::new(tx);
        let asked = runner::report::formats::Asked { html: prepared.manifest.report.html, summary: args.reports.summary.clone() };
        let executed = experiment::execute(&prepared, &label, options, asked, &emitter, cancel_rx).await;
        drop(emitter);
        let summary = reporter.await.unwrap_or_default();
        (executed, summary)
    });
    let executed = executed?;
    // Force an exit now: a cancelled child's pipes must not keep the runtime waiting.
    rt.shutdown_background();
    if let Some(lost) = &summary.output_error {
        let _ = write_to(Stream::Stderr, format_args!("error: {lost}; the execution was stopped (finished runs are cached)\n"));
        return Ok(Exit::Error);
    }
    let ending = Ending::of(&executed.outcomes).with_scoring(&executed.scoring);
    let interrupted = ending == Ending::Interrupted;
    // "wrote" is said only of a file whose bytes changed, as the render node wrote it.
    let changed = &executed.written.changed;
    match mode {
        Mode::Human => {
            err!("{}", summary.render());
            for path in changed {
                errln!("wrote {}", path.display());
            }
            if changed.is_empty() && !executed.written.is_empty() {
                errln!("the reports in {} are unchanged", prepared.manifest.report.output.display());
            }
            if !interrupted && args.shard.is_none() && executed.written.is_empty() && summary.missing.is_empty() && !executed.outcomes.is_empty() {
                errln!("no run succeeded: the reports were left as they were");
            }
            for warning in silent_reviewers(&prepared, &executed.outcomes) {
                errln!("warning: {warning}");
            }
            // The answer, last: the verdict lines RESULTS.md opens with.
            if !interrupted && args.shard.is_none() && !executed.results.summary.is_empty() {
                errln!("verdicts:");
                for line in &executed.results.summary {
                    errln!("  {}", line.replace("**", ""));
                }
            }
        }
        // Quiet still shows errors: what failed and why.
        Mode::Quiet if summary.failed + summary.skipped + summary.unrun + summary.cost.as_ref().map_or(0, |c| c.unrun_calls) > 0 => {
            err!("{}", summary.render())
        }
        _ => {}
    }
    if ending == Ending::Missing {
        if !summary.missing.is_empty() {
            let n = summary.missing.len();
            errln!("error: --frozen: {n} {} not in the cache:", if n == 1 { "run is" } else { "runs are" });
        }
        // With the shard count known (`runner merge --shards`), each names the shard to re-run.
        let owners: std::collections::HashMap<String, &runner::cache::CacheKey> =
            if args.shards.is_some() { prepared.plan.runs.iter().map(|r| (r.label(), &r.key)).collect() } else { Default::default() };
        for run in &summary.missing {
            match (args.shards, owners.get(run)) {
                (Some(count), Some(key)) => errln!("  {run}  (shard {}/{count})", runner::plan::Shard::of(key, count)),
                _ => errln!("  {run}"),
            }
        }
        if executed.scoring.not_cached > 0 {
            errln!("error: --frozen: {} scoring nodes (judges, claims, smells, embeddings) are not in the cache", executed.scoring.not_cached);
        }
    }
    // The stream's last event, on stdout and in the execution log alike.
    let finished = progress::finished_event(&summary, ending.exit() as u8, &executed.written.files, changed);
    if mode == Mode::Json {
        outln!("{finished}");
    }
    if let Ok(mut log) = std::fs::OpenOptions::new().append(true).open(&log_path) {
        let _ = std::io::Write::write_all(&mut log, format!("{finished}\n").as_bytes());
    }
    if ending == Ending::Interrupted {
        errln!("interrupted: finished runs are cached; the reports were left as they were (an incomplete report never replaces them); run the same command again to complete the rest");
    }
    // The process ends next: freeing every run's record and every analysis row one at a time
    // (a second at 100k runs) would only delay it. Plain memory, no handles.
    std::mem::forget(executed.outcomes);
    std::mem::forget(executed.results);
    Ok(ending.exit())
}

fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(Error::Runtime)
}

/// The manifest's path as reports show it: relative to the project root, so a report does
/// not depend on the directory runner was started from.
fn manifest_label(path: &Path, base_dir: &Path) -> String {
    let root = runner::config::project_root(base_dir);
    let relative = if root.as_os_str().is_empty() { None } else { path.canonicalize().ok().and_then(|p| p.strip_prefix(&root).ok().map(Path::to_path_buf)) };
    relative.unwrap_or_else(|| runner::config::resolve_path(Path::new(""), &path.display().to_string())).display().to_string()
}

/// Resolves when SIGINT, SIGTERM or SIGHUP arrives; false when none can be listened for.
async fn interrupt_or_terminate() -> bool {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut hangup)) = (signal(SignalKind::terminate()), signal(SignalKind::hangup())) else {
        return tokio::signal::ctrl_c().await.is_ok();
    };
    tokio::select! {
        r = tokio::signal::ctrl_c() => r.is_ok(),
        r = term.recv() => r.is_some(),
        r = hangup.recv() => r.is_some(),
    }
}

fn unix_millis() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0)
}

/// A warning for each reviewer whose every successful run (two or more) found nothing: it is
/// likely reviewing nothing (a wrong path, an output format it does not print), and a
/// comparison against it says nothing about quality.
fn silent_reviewers(prepared: &experiment::Prepared, outcomes: &[runner::exec::RunOutcome]) -> Vec<String> {
    let mut by_reviewer: std::collections::BTreeMap<&str, (usize, usize)> = std::collections::BTreeMap::new();
    for (run, outcome) in prepared.plan.runs.iter().zip(outcomes) {
        if let Some((_, findings)) = outcome.success() {
            let entry = by_reviewer.entry(run.reviewer.as_str()).or_default();
            entry.0 += 1;
            entry.1 += findings.len();
        }
    }
    by_reviewer
        .into_iter()
        .filter(|(_, (runs, findings))| *runs >= 2 && *findings == 0)
        .map(|(name, (runs, _))| {
            format!("every run of reviewer `{name}` ({runs} runs) found nothing: check that it reviews what you think (`runner show` lists what a run printed)")
        })
        .collect()
}
