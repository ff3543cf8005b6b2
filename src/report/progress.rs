//! Reporters over engine events: indicatif progress on a terminal, NDJSON for machines, and
//! the execution summary (wall time, cache hits, failures with stderr tails).

use crate::exec::Event;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::io::Write;
use std::time::Instant;
use tokio::sync::mpsc;

/// How events reach the person or program that started runner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Progress bar on stderr (when it is a terminal), summary at the end.
    Human,
    /// One JSON object per event on stdout.
    Json,
    /// Nothing but errors.
    Quiet,
}

/// What one execution did; printed at the end and written to the execution log.
#[derive(Debug, Default, Clone, Serialize)]
pub struct ExecutionSummary {
    pub experiment: String,
    pub planned: usize,
    pub cached: usize,
    pub ran: usize,
    pub failed: usize,
    pub skipped: usize,
    pub missing: Vec<String>,
    pub corrupt: Vec<String>,
    pub failures: Vec<FailureLine>,
    pub wall_seconds: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct FailureLine {
    pub run: String,
    pub error: String,
    pub stderr_tail: String,
}

/// Consumes events until the channel closes; returns the summary.
pub async fn consume(mut rx: mpsc::UnboundedReceiver<Event>, mode: Mode, log: Option<std::fs::File>) -> ExecutionSummary {
    let started = Instant::now();
    let mut summary = ExecutionSummary::default();
    let mut log = log;
    let bar = (mode == Mode::Human && std::io::IsTerminal::is_terminal(&std::io::stderr())).then(|| {
        let bar = ProgressBar::new(0);
        bar.set_style(
            ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} runs {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar
    });
    while let Some(event) = rx.recv().await {
        if let Some(file) = log.as_mut() {
            if let Ok(line) = serde_json::to_string(&event) {
                let _ = writeln!(file, "{line}");
            }
        }
        if mode == Mode::Json {
            if let Ok(line) = serde_json::to_string(&event) {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{line}");
            }
        }
        match &event {
            Event::Planned { experiment, runs, cached, .. } => {
                summary.experiment = experiment.clone();
                summary.planned = *runs;
                summary.cached = *cached;
                if let Some(b) = &bar {
                    b.set_length(*runs as u64);
                    b.set_position(*cached as u64);
                }
            }
            Event::RunStarted { run } => {
                if let Some(b) = &bar {
                    b.set_message(run.clone());
                }
            }
            Event::RunFinished { .. } => {
                summary.ran += 1;
                if let Some(b) = &bar {
                    b.inc(1);
                }
            }
            Event::RunFailed { run, error } => {
                summary.failed += 1;
                summary.failures.push(FailureLine { run: run.clone(), error: error.to_string(), stderr_tail: error.stderr_tail().to_string() });
                if let Some(b) = &bar {
                    b.inc(1);
                    b.println(format!("failed: {run}: {error}"));
                }
            }
            Event::RunSkipped { run, reason } => {
                summary.skipped += 1;
                summary.failures.push(FailureLine { run: run.clone(), error: format!("skipped: {reason}"), stderr_tail: String::new() });
                if let Some(b) = &bar {
                    b.inc(1);
                }
            }
            Event::RunMissing { run } => summary.missing.push(run.clone()),
            Event::CacheCorrupt { run, detail } => {
                summary.corrupt.push(format!("{run}: {detail}"));
                if mode == Mode::Human {
                    let msg = format!("warning: corrupt cache entry for {run}: {detail}; recomputing");
                    match &bar {
                        Some(b) => b.println(msg),
                        None => eprintln!("{msg}"),
                    }
                }
            }
            Event::MaterializeFailed { subject, error } => {
                if mode == Mode::Human {
                    eprintln!("error: could not materialize {subject}: {error}");
                }
            }
            Event::RunCached { .. } | Event::Interrupted => {}
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    summary.wall_seconds = started.elapsed().as_secs_f64();
    summary
}

impl ExecutionSummary {
    /// The human summary printed at the end of `runner exec`.
    pub fn render(&self) -> String {
        let mut out = format!(
            "{}: {} runs: {} from cache, {} ran, {} failed, {} skipped in {:.2}s\n",
            self.experiment, self.planned, self.cached, self.ran, self.failed, self.skipped, self.wall_seconds
        );
        for c in &self.corrupt {
            out.push_str(&format!("  corrupt cache entry (recomputed): {c}\n"));
        }
        // Runs skipped for one reason (a server down, say) make one line, not one per run.
        let mut skipped: Vec<(&str, Vec<&str>)> = Vec::new();
        for f in self.failures.iter().filter(|f| f.error.starts_with("skipped: ") && f.stderr_tail.is_empty()) {
            match skipped.iter_mut().find(|(e, _)| *e == f.error) {
                Some((_, runs)) => runs.push(&f.run),
                None => skipped.push((&f.error, vec![&f.run])),
            }
        }
        for f in &self.failures {
            if let Some((error, runs)) = skipped.iter().find(|(e, runs)| *e == f.error && runs.len() > 1) {
                if runs[0] == f.run {
                    out.push_str(&format!("  ✗ {} runs {error} (first: {})\n", runs.len(), runs[0]));
                }
                continue;
            }
            out.push_str(&format!("  ✗ {}: {}\n", f.run, f.error));
            for line in f.stderr_tail.lines().rev().take(8).collect::<Vec<_>>().into_iter().rev() {
                out.push_str(&format!("      | {line}\n"));
            }
        }
        out
    }
}
