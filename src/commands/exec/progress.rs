//! Reporters over engine events: indicatif progress on a terminal, progress lines elsewhere
//! (a pipe, CI), NDJSON for machines, and the execution summary (wall time, cache hits,
//! failures with stderr tails). Each writes to an injected writer, and progress lines take
//! their time from an injected clock, so each is tested against a buffer without waiting.

use indicatif::{ProgressBar, ProgressStyle};
use runner::exec::{CallsSpent, CostReport, Event, SkipReason, Spent};
use runner::reviewer::llm::adaptive::EndpointReport;
use serde::Serialize;
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// How events reach the person or program that started runner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Progress bar on stderr (when it is a terminal), summary at the end.
    Human,
    /// One JSON object per event on stdout.
    Json,
    /// Nothing but errors.
    Quiet,
}

/// Which progress `--progress` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum ProgressKind {
    /// A bar when stderr is a terminal, lines otherwise.
    #[default]
    Auto,
    Bar,
    Lines,
    /// No progress; warnings and errors still show.
    None,
}

/// Time since the execution started, as progress lines read it (a test injects its own).
pub(crate) type Clock = Arc<dyn Fn() -> Duration + Send + Sync>;

/// When progress lines are written: every `every_runs` finished runs (by default a tenth of
/// the runs to run) or every `every` of time, whichever comes first, while runs remain.
#[derive(Clone)]
pub(crate) struct Pacing {
    pub(crate) every_runs: Option<usize>,
    pub(crate) every: Duration,
    pub(crate) clock: Clock,
}

impl Pacing {
    /// A tenth of the runs or 30 s, on the process's clock.
    pub(crate) fn standard() -> Self {
        let started = Instant::now();
        Self { every_runs: None, every: Duration::from_secs(30), clock: Arc::new(move || started.elapsed()) }
    }
}

/// How progress is shown on stderr.
#[derive(Clone)]
pub(crate) enum Display {
    Bar,
    Lines(Pacing),
    None,
}

impl Display {
    /// What `kind` means on a stderr that is, or is not, a terminal.
    pub(crate) fn of(kind: ProgressKind, terminal: bool) -> Self {
        match kind {
            ProgressKind::Auto if terminal => Self::Bar,
            ProgressKind::Bar => Self::Bar,
            ProgressKind::Auto | ProgressKind::Lines => Self::Lines(Pacing::standard()),
            ProgressKind::None => Self::None,
        }
    }
}

/// The counts a progress line reports, and when the last one was written.
struct Lines {
    pacing: Pacing,
    total: usize,
    /// Runs done when the plan was known (from the cache): not part of the rate.
    cached: usize,
    done: usize,
    failed: usize,
    skipped: usize,
    since_line: usize,
    last_line: Duration,
}

impl Lines {
    fn new(pacing: Pacing) -> Self {
        Self { pacing, total: 0, cached: 0, done: 0, failed: 0, skipped: 0, since_line: 0, last_line: Duration::ZERO }
    }

    /// Runs between two lines.
    fn every_runs(&self) -> usize {
        self.pacing.every_runs.unwrap_or_else(|| (self.total - self.cached).div_ceil(10)).max(1)
    }

    /// The line due now, if one is: after a run (`ran`) or on a tick of the clock.
    fn due(&mut self, ran: bool) -> Option<String> {
        if self.done >= self.total {
            return None;
        }
        let now = (self.pacing.clock)();
        if ran {
            self.since_line += 1;
        }
        let by_runs = ran && self.since_line >= self.every_runs();
        let by_time = now.saturating_sub(self.last_line) >= self.pacing.every;
        if !(by_runs || by_time) {
            return None;
        }
        self.since_line = 0;
        self.last_line = now;
        Some(self.render(now))
    }

    /// `progress: 12/120 runs (2 failed), 1m30s elapsed, about 11m15s left`.
    fn render(&self, elapsed: Duration) -> String {
        let mut trouble = Vec::new();
        if self.failed > 0 {
            trouble.push(format!("{} failed", self.failed));
        }
        if self.skipped > 0 {
            trouble.push(format!("{} skipped", self.skipped));
        }
        let trouble = if trouble.is_empty() { String::new() } else { format!(" ({})", trouble.join(", ")) };
        let ran = self.done - self.cached;
        let left = if ran == 0 {
            "time left not known yet".to_string()
        } else {
            let per_run = elapsed.as_secs_f64() / ran as f64;
            format!("about {} left", clock_time(Duration::from_secs_f64(per_run * (self.total - self.done) as f64)))
        };
        format!("progress: {}/{} {}{trouble}, {} elapsed, {left}", self.done, self.total, plural(self.total, "run", "runs"), clock_time(elapsed))
    }
}

/// `1h02m`, `4m10s`, `35s`.
pub(crate) fn clock_time(d: Duration) -> String {
    let s = d.as_secs();
    match (s / 3600, s % 3600 / 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s:02}s"),
        (h, m, _) => format!("{h}h{m:02}m"),
    }
}

/// `singular` for one, `plural` otherwise.
pub(crate) fn plural(n: usize, singular: &'static str, plural: &'static str) -> &'static str {
    if n == 1 {
        singular
    } else {
        plural
    }
}

/// What one execution did; printed at the end and written to the execution log.
#[derive(Debug, Default, Clone, Serialize)]
pub(crate) struct ExecutionSummary {
    pub(crate) experiment: String,
    pub(crate) planned: usize,
    pub(crate) cached: usize,
    pub(crate) ran: usize,
    pub(crate) failed: usize,
    pub(crate) skipped: usize,
    /// Warnings that changed no result (a remote cache that went away).
    pub(crate) warnings: Vec<String>,
    /// `--shard`: runs left to the other shards.
    pub(crate) other_shards: usize,
    pub(crate) missing: Vec<String>,
    pub(crate) corrupt: Vec<String>,
    /// Cache entries that could not be read (not known to be corrupt), with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) unreadable: Vec<String>,
    pub(crate) failures: Vec<FailureLine>,
    /// Scoring nodes (claims, smells, judges, embeddings) that failed, with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) scoring_failures: Vec<String>,
    /// Runs not started because `--max-cost` was reached (not failures: running again with a
    /// larger budget does them).
    pub(crate) unrun: usize,
    /// What the executed reviews and scoring calls cost and what the cache saved; set once the
    /// execution ends.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cost: Option<CostReport>,
    /// Why events could not be written to stdout or stderr, when they could not: the
    /// execution was ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) output_error: Option<String>,
    /// Per model server: the concurrency its adaptive limit settled on and the 429s it met.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) endpoints: Vec<EndpointReport>,
    pub(crate) wall_seconds: f64,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct FailureLine {
    pub(crate) run: String,
    pub(crate) error: String,
    pub(crate) stderr_tail: String,
}

/// A writer the reporters own: stdout, stderr, a log file, or a test's buffer.
pub(crate) type Sink = Box<dyn Write + Send>;

/// NDJSON: one JSON object per event, one event per line (stdout with `--json`, and the
/// execution log). After a write fails it writes nothing more and keeps the error
/// ([`Self::error`]): lost events on stdout end the execution ([`consume`]), a lost log does not.
pub(crate) struct NdjsonReporter {
    out: Sink,
    failed: Option<std::io::Error>,
}

impl NdjsonReporter {
    pub(crate) fn new(out: Sink) -> Self {
        Self { out, failed: None }
    }

    pub(crate) fn event(&mut self, event: &Event) {
        if self.failed.is_some() {
            return;
        }
        if let Ok(line) = serde_json::to_string(event) {
            self.failed = writeln!(self.out, "{line}").err();
        }
    }

    pub(crate) fn finish(&mut self) {
        self.flush();
    }

    /// Writes out what is buffered (the sinks are buffered: a burst of events, such as a
    /// warm execution's cache hits, is one write).
    pub(crate) fn flush(&mut self) {
        if self.failed.is_none() {
            self.failed = self.out.flush().err();
        }
    }

    /// The write that failed, if one did.
    pub(crate) fn error(&self) -> Option<&std::io::Error> {
        self.failed.as_ref()
    }
}

/// Progress for a person: an indicatif bar on a terminal (it draws on the terminal; lines are
/// printed above it), or progress lines (see [`Pacing`]), or none; and in every case the lines
/// that need attention now — corrupt cache entries and subjects that could not be
/// materialized — written plainly to the injected writer. Run failures wait for the summary.
pub(crate) struct ProgressReporter {
    out: Sink,
    bar: Option<ProgressBar>,
    lines: Option<Lines>,
    failed: Option<std::io::Error>,
    /// Cache hits: those the plan announced, and those seen so far (the rest came during the
    /// walk, a run another process finished while this one waited for its lock).
    cached: CachedRuns,
}

/// The runs the cache answered: `announced` when the plan was known, `seen` as events.
#[derive(Debug, Default, Clone, Copy)]
struct CachedRuns {
    announced: usize,
    seen: usize,
}

impl CachedRuns {
    /// Counts one `RunCached` event: whether it came during the walk (beyond those announced).
    fn during_walk(&mut self) -> bool {
        self.seen += 1;
        self.seen > self.announced
    }
}

impl ProgressReporter {
    pub(crate) fn new(out: Sink, display: Display) -> Self {
        let (mut bar, mut lines) = (None, None);
        match display {
            Display::Bar => {
                let b = ProgressBar::new(0);
                b.set_style(
                    ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} runs {msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_bar()),
                );
                bar = Some(b);
            }
            Display::Lines(pacing) => lines = Some(Lines::new(pacing)),
            Display::None => {}
        }
        Self { out, bar, lines, failed: None, cached: CachedRuns::default() }
    }

    fn line(&mut self, text: String) {
        match &self.bar {
            Some(b) if !b.is_hidden() => b.println(text),
            _ if self.failed.is_none() => self.failed = writeln!(self.out, "{text}").err(),
            _ => {}
        }
    }

    /// Counts a run that ended and writes the progress line if one is due.
    fn run_ended(&mut self, failed: bool, skipped: bool) {
        let Some(lines) = &mut self.lines else { return };
        lines.done += 1;
        lines.failed += usize::from(failed);
        lines.skipped += usize::from(skipped);
        if let Some(text) = lines.due(true) {
            self.line(text);
        }
    }

    /// Writes the progress line if the time for one has come, with no run ended since.
    pub(crate) fn tick(&mut self) {
        if let Some(text) = self.lines.as_mut().and_then(|l| l.due(false)) {
            self.line(text);
        }
    }

    pub(crate) fn event(&mut self, event: &Event) {
        match event {
            Event::Planned { runs, cached, .. } => {
                self.cached = CachedRuns { announced: *cached, seen: 0 };
                if let Some(b) = &self.bar {
                    b.set_length(*runs as u64);
                    b.set_position(*cached as u64);
                }
                if let Some(l) = &mut self.lines {
                    (l.total, l.cached, l.done) = (*runs, *cached, *cached);
                    l.last_line = (l.pacing.clock)();
                }
            }
            Event::RunStarted { run } => {
                if let Some(b) = &self.bar {
                    b.set_message(run.to_string());
                }
            }
            Event::RunFinished { .. } | Event::RunSkipped { .. } => {
                if let Some(b) = &self.bar {
                    b.inc(1);
                }
                self.run_ended(false, matches!(event, Event::RunSkipped { .. }));
            }
            Event::RunFailed { run, error } => {
                if let Some(b) = &self.bar {
                    b.inc(1);
                    b.println(format!("failed: {run}: {error}"));
                }
                self.run_ended(true, false);
            }
            Event::CacheCorrupt { run, detail } => self.line(format!("warning: corrupt cache entry for {run}: {detail}; recomputing")),
            Event::CacheUnreadable { run, detail } => self.line(format!("warning: cannot read the cache entry for {run}: {detail}; running it again")),
            Event::Warning { message } => self.line(format!("warning: {message}")),
            Event::MaterializeFailed { subject, error } => self.line(format!("error: could not materialize {subject}: {error}")),
            Event::StageFailed { node, error } => self.line(format!("error: {node}: {error}")),
            Event::StageDone { node, .. } => {
                if let Some(b) = &self.bar {
                    b.set_message(node.clone());
                }
            }
            Event::RunCached { .. } => {
                if self.cached.during_walk() {
                    if let Some(b) = &self.bar {
                        b.inc(1);
                    }
                    self.run_ended(false, false);
                }
            }
            Event::RunMissing { .. } | Event::Interrupted | Event::Cost(_) | Event::Endpoints { .. } => {}
        }
    }

    pub(crate) fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
        if self.failed.is_none() {
            self.failed = self.out.flush().err();
        }
    }
}

/// Collects the execution summary from events.
pub(crate) struct SummaryReporter {
    started: Instant,
    summary: ExecutionSummary,
    cached: CachedRuns,
}

impl Default for SummaryReporter {
    fn default() -> Self {
        Self { started: Instant::now(), summary: ExecutionSummary::default(), cached: CachedRuns::default() }
    }
}

impl SummaryReporter {
    pub(crate) fn event(&mut self, event: &Event) {
        let summary = &mut self.summary;
        match event {
            Event::Planned { experiment, runs, cached, .. } => {
                summary.experiment = experiment.clone();
                summary.planned = *runs;
                summary.cached = *cached;
                self.cached = CachedRuns { announced: *cached, seen: 0 };
            }
            // A run another process finished while this one waited for its lock.
            Event::RunCached { .. } if self.cached.during_walk() => summary.cached += 1,
            Event::RunFinished { .. } => summary.ran += 1,
            Event::RunFailed { run, error } => {
                summary.failed += 1;
                summary.failures.push(FailureLine { run: run.to_string(), error: error.to_string(), stderr_tail: error.stderr_tail().to_string() });
            }
            Event::RunSkipped { reason: SkipReason::OverBudget { .. }, .. } => summary.unrun += 1,
            Event::RunSkipped { reason: SkipReason::OtherShard { .. } | SkipReason::Leased { .. }, .. } => summary.other_shards += 1,
            Event::RunSkipped { run, reason } => {
                summary.skipped += 1;
                summary.failures.push(FailureLine { run: run.to_string(), error: format!("skipped: {reason}"), stderr_tail: String::new() });
            }
            Event::RunMissing { run } => summary.missing.push(run.to_string()),
            Event::CacheCorrupt { run, detail } => summary.corrupt.push(format!("{run}: {detail}")),
            Event::CacheUnreadable { run, detail } => summary.unreadable.push(format!("{run}: {detail}")),
            Event::Warning { message } => summary.warnings.push(message.clone()),
            Event::StageFailed { node, error } => summary.scoring_failures.push(format!("{node}: {error}")),
            Event::Cost(cost) => summary.cost = Some(cost.clone()),
            Event::Endpoints { endpoints } => summary.endpoints = endpoints.clone(),
            Event::RunStarted { .. } | Event::MaterializeFailed { .. } | Event::RunCached { .. } | Event::StageDone { .. } | Event::Interrupted => {}
        }
    }

    /// The summary, with the wall time since the reporter was made.
    pub(crate) fn finish(self) -> ExecutionSummary {
        ExecutionSummary { wall_seconds: self.started.elapsed().as_secs_f64(), ..self.summary }
    }
}

/// Every reporter of one execution, fed the same events.
pub(crate) struct Reporters {
    log: Option<NdjsonReporter>,
    /// NDJSON on stdout (`--json`).
    stdout: Option<NdjsonReporter>,
    progress: Option<ProgressReporter>,
    summary: SummaryReporter,
}

impl Reporters {
    /// The reporters of `mode` on the process's stdout and stderr, plus the execution log.
    pub(crate) fn standard(mode: Mode, progress: ProgressKind, log: Option<Sink>) -> Self {
        let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let stdout = Box::new(std::io::BufWriter::new(std::io::stdout()));
        Self::new(mode, stdout, Box::new(std::io::stderr()), Display::of(progress, terminal), log)
    }

    /// The reporters of `mode` on injected writers: NDJSON on `stdout` (`--json`), progress on
    /// `stderr` (human mode, as `display` says), and NDJSON on `log`.
    pub(crate) fn new(mode: Mode, stdout: Sink, stderr: Sink, display: Display, log: Option<Sink>) -> Self {
        let log = log.map(NdjsonReporter::new);
        let (mut out, mut progress) = (None, None);
        match mode {
            Mode::Json => out = Some(NdjsonReporter::new(stdout)),
            Mode::Human => progress = Some(ProgressReporter::new(stderr, display)),
            Mode::Quiet => {}
        }
        Self { log, stdout: out, progress, summary: SummaryReporter::default() }
    }

    pub(crate) fn event(&mut self, event: &Event) {
        for r in self.log.iter_mut().chain(self.stdout.as_mut()) {
            r.event(event);
        }
        if let Some(p) = &mut self.progress {
            p.event(event);
        }
        self.summary.event(event);
    }

    /// No event is waiting: what the NDJSON sinks buffered is written out, so the log and
    /// `--json` stay current whenever the execution is not mid-burst.
    pub(crate) fn idle(&mut self) {
        for r in self.log.iter_mut().chain(self.stdout.as_mut()) {
            r.flush();
        }
    }

    /// A moment with no event: a progress line may be due.
    pub(crate) fn tick(&mut self) {
        if let Some(p) = &mut self.progress {
            p.tick();
        }
    }

    /// The failed write to stdout or stderr, if one failed: events are being lost.
    pub(crate) fn output_error(&self) -> Option<String> {
        if let Some(e) = self.stdout.as_ref().and_then(NdjsonReporter::error) {
            return Some(format!("cannot write events to stdout: {e}"));
        }
        self.progress.as_ref().and_then(|p| p.failed.as_ref()).map(|e| format!("cannot write progress to stderr: {e}"))
    }

    pub(crate) fn finish(mut self) -> ExecutionSummary {
        for r in self.log.iter_mut().chain(self.stdout.as_mut()) {
            r.finish();
        }
        if let Some(p) = &mut self.progress {
            p.finish();
        }
        let output_error = self.output_error();
        ExecutionSummary { output_error, ..self.summary.finish() }
    }
}

/// Consumes events until the channel closes; returns the summary. `lost` is called once,
/// when a write to stdout or stderr first fails (a closed pipe, a full disk): the caller ends
/// the execution as it would for Ctrl-C, and the summary's `output_error` says why.
pub(crate) async fn consume(
    rx: mpsc::UnboundedReceiver<Event>,
    mode: Mode,
    progress: ProgressKind,
    log: Option<std::fs::File>,
    lost: impl FnOnce() + Send,
) -> ExecutionSummary {
    consume_into(rx, Reporters::standard(mode, progress, log.map(|f| Box::new(std::io::BufWriter::new(f)) as Sink)), lost).await
}

/// How often a quiet channel lets the reporters look at the clock.
const TICK: Duration = Duration::from_secs(5);

/// Feeds every event to `reporters` until the channel closes; returns the summary (see [`consume`]).
pub(crate) async fn consume_into(mut rx: mpsc::UnboundedReceiver<Event>, mut reporters: Reporters, lost: impl FnOnce() + Send) -> ExecutionSummary {
    let mut lost = Some(lost);
    loop {
        let event = match tokio::time::timeout(TICK, rx.recv()).await {
            Ok(Some(event)) => event,
            Ok(None) => break,
            Err(_) => {
                reporters.tick();
                continue;
            }
        };
        reporters.event(&event);
        if rx.is_empty() {
            reporters.idle();
        }
        if reporters.output_error().is_some() {
            if let Some(lost) = lost.take() {
                lost();
            }
        }
    }
    reporters.finish()
}

/// The NDJSON stream's last event, written once the exit code is known: the code, the runs'
/// counts, the report files (`reports`) and those of them this execution changed (`changed`).
pub(crate) fn finished_event(summary: &ExecutionSummary, exit_code: u8, reports: &[std::path::PathBuf], changed: &[std::path::PathBuf]) -> String {
    let paths = |p: &[std::path::PathBuf]| p.iter().map(|p| p.display().to_string()).collect::<Vec<_>>();
    serde_json::json!({
        "event": "finished",
        "experiment": summary.experiment,
        "exit_code": exit_code,
        "runs": summary.planned,
        "cached": summary.cached,
        "ran": summary.ran,
        "failed": summary.failed,
        "skipped": summary.skipped,
        "unrun": summary.unrun,
        "missing": summary.missing.len(),
        "other_shards": summary.other_shards,
        "reports": paths(reports),
        "changed": paths(changed),
        "wall_ms": (summary.wall_seconds * 1000.0).round() as u64,
    })
    .to_string()
}

impl ExecutionSummary {
    /// The human summary printed at the end of `runner exec`.
    pub(crate) fn render(&self) -> String {
        let mut out = format!(
            "{}: {} {}: {} from cache, {} ran, {} failed, {} skipped in {:.2}s\n",
            self.experiment,
            self.planned,
            plural(self.planned, "run", "runs"),
            self.cached,
            self.ran,
            self.failed,
            self.skipped,
            self.wall_seconds
        );
        for w in &self.warnings {
            out.push_str(&format!("  warning: {w}\n"));
        }
        if self.other_shards > 0 {
            out.push_str(&format!(
                "  left to other shards: {} {}; no report written (assemble with `runner merge` or `runner exec --frozen` once every shard is done)\n",
                self.other_shards,
                plural(self.other_shards, "run", "runs")
            ));
        }
        if let Some(cost) = &self.cost {
            out.push_str(&cost_line(cost));
        }
        for e in &self.endpoints {
            out.push_str(&endpoint_line(e));
        }
        let unrun_calls = self.cost.as_ref().map_or(0, |c| c.unrun_calls);
        if self.unrun > 0 || unrun_calls > 0 {
            let budget = self.cost.as_ref().and_then(|c| c.budget).map(|b| format!(" (--max-cost {b})")).unwrap_or_default();
            let what = match (self.unrun, unrun_calls) {
                (runs, 0) => format!("{runs} {}", plural(runs, "run", "runs")),
                (0, calls) => format!("{calls} scoring {}", plural(calls, "call", "calls")),
                (runs, calls) => format!("{runs} {} and {calls} scoring {}", plural(runs, "run", "runs"), plural(calls, "call", "calls")),
            };
            out.push_str(&format!("  left unrun: {what}, over budget{budget}; run again with a larger --max-cost to continue from the cache\n"));
        }
        for c in &self.corrupt {
            out.push_str(&format!("  corrupt cache entry (recomputed): {c}\n"));
        }
        for c in &self.unreadable {
            out.push_str(&format!("  unreadable cache entry (run again): {c}\n"));
        }
        const SHOWN: usize = 5;
        for f in self.scoring_failures.iter().take(SHOWN) {
            out.push_str(&format!("  ✗ scoring: {f}\n"));
        }
        if self.scoring_failures.len() > SHOWN {
            out.push_str(&format!("  ✗ scoring: and {} more\n", self.scoring_failures.len() - SHOWN));
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
            // The reviewer's words made safe for a terminal; its stderr's last lines as
            // RESULTS.md's failure table holds them.
            out.push_str(&format!("  ✗ {}: {}\n", f.run, runner_core::terminal::sanitize(&f.error)));
            for line in runner::report::model::FailureRow::stderr_lines(&f.stderr_tail) {
                out.push_str(&format!("      | {}\n", runner_core::terminal::sanitize(&line)));
            }
        }
        out
    }
}

/// `  endpoint URL: N requests, M answered 429; concurrency settled at …`.
fn endpoint_line(e: &EndpointReport) -> String {
    let held = if e.held > 0 { format!("; held {} times by its x-ratelimit headers", e.held) } else { String::new() };
    format!(
        "  endpoint {}: {} requests, {} answered 429; concurrency settled at {} (lowest {}, highest {}, ceiling {}){held}\n",
        e.endpoint, e.requests, e.throttled, e.final_limit, e.min_limit, e.max_limit, e.ceiling
    )
}

/// `  cost: incurred …; saved by the cache …`, or nothing when neither was spent nor saved.
/// Scoring calls, when any ran, follow the reviews per stage.
fn cost_line(cost: &CostReport) -> String {
    fn spent(s: &Spent) -> String {
        if s.runs == 0 {
            return "nothing".to_string();
        }
        let tokens = if s.tokens > 0 { format!("{} tokens, ", s.tokens) } else { String::new() };
        format!("{tokens}{:.2} review s ({} {})", s.review_ms as f64 / 1000.0, s.runs, plural(s.runs, "run", "runs"))
    }
    fn calls(stage: &str, c: &CallsSpent) -> String {
        let tokens = if c.tokens > 0 { format!("{} tokens, ", c.tokens) } else { String::new() };
        format!("{stage} {tokens}{:.2} s ({} {})", c.ms as f64 / 1000.0, c.calls, plural(c.calls, "call", "calls"))
    }
    if cost.incurred.runs == 0 && cost.saved.runs == 0 && cost.scoring.is_empty() {
        return String::new();
    }
    let scoring = if cost.scoring.is_empty() {
        String::new()
    } else {
        let stages: Vec<String> = cost.scoring.iter().map(|(stage, c)| calls(stage, c)).collect();
        format!(", and scoring calls: {}", stages.join(", "))
    };
    let budget = cost.budget.map(|b| format!(" against --max-cost {b}")).unwrap_or_default();
    format!("  cost: incurred {}{scoring}{budget}; saved by the cache {}\n", spent(&cost.incurred), spent(&cost.saved))
}

#[cfg(test)]
mod tests {
    use super::*;
    use runner::exec::SkipReason;
    use runner::matrix::RunId;
    use runner::reviewer::ReviewError;
    use std::sync::{Arc, Mutex};

    /// A writer whose bytes the test can read afterwards.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("buffer").extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Buffer {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().expect("buffer").clone()).expect("utf-8")
        }
    }

    fn events() -> Vec<Event> {
        vec![
            Event::Planned { experiment: "demo".into(), runs: 4, cached: 1, to_run: 3 },
            Event::RunCached { run: RunId::new("a", 1, "s1"), findings: 2 },
            Event::CacheCorrupt { run: RunId::new("b", 1, "s1"), detail: "hash mismatch".into() },
            Event::RunStarted { run: RunId::new("b", 1, "s1") },
            Event::RunFinished { run: RunId::new("b", 1, "s1"), findings: 3, wall_ms: 1200 },
            Event::RunStarted { run: RunId::new("c", 1, "s1") },
            Event::RunFailed {
                run: RunId::new("c", 1, "s1"),
                error: ReviewError::Failed { message: "`stet` exited with exit code 1".into(), stderr_tail: "line 1\nline 2\npanic: boom".into() },
            },
            Event::RunSkipped { run: RunId::new("d", 1, "s2"), reason: SkipReason::SubjectFailed { subject: "s2".into(), error: "git failed".into() } },
        ]
    }

    #[test]
    fn ndjson_writes_one_object_per_event_per_line() {
        let out = Buffer::default();
        let mut reporter = NdjsonReporter::new(Box::new(out.clone()));
        for e in events() {
            reporter.event(&e);
        }
        reporter.finish();
        let text = out.text();
        assert!(text.ends_with('\n'));
        let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).expect("one JSON object per line")).collect();
        assert_eq!(lines.len(), events().len());
        assert_eq!(lines[0], serde_json::json!({"event": "planned", "experiment": "demo", "runs": 4, "cached": 1, "to_run": 3}));
        assert_eq!(lines[4], serde_json::json!({"event": "run_finished", "run": "b #1 @s1", "findings": 3, "wall_ms": 1200}));
        assert_eq!(lines[6]["event"], "run_failed");
        assert_eq!(lines[6]["run"], "c #1 @s1");
        assert_eq!(
            lines[7],
            serde_json::json!({"event": "run_skipped", "run": "d #1 @s2", "reason": {"kind": "subject_failed", "subject": "s2", "error": "git failed"}})
        );
    }

    /// Runs another process finished while this one waited for their locks come from the
    /// cache during the walk: counted as cached, so the counts add up to the plan.
    #[test]
    fn runs_the_cache_answers_during_the_walk_count_as_cached() {
        let mut reporter = SummaryReporter::default();
        let out = Buffer::default();
        let (display, _now) = paced(None);
        let mut progress = ProgressReporter::new(Box::new(out.clone()), display);
        let events = [
            Event::Planned { experiment: "demo".into(), runs: 3, cached: 1, to_run: 2 },
            Event::RunCached { run: RunId::new("a", 1, "s1"), findings: 0 },
            Event::RunStarted { run: RunId::new("a", 1, "s2") },
            Event::RunCached { run: RunId::new("a", 1, "s2"), findings: 1 },
            Event::RunCached { run: RunId::new("a", 1, "s3"), findings: 1 },
        ];
        for e in &events {
            reporter.event(e);
            progress.event(e);
        }
        let summary = reporter.finish();
        assert_eq!((summary.planned, summary.cached, summary.ran, summary.failed), (3, 3, 0, 0));
        assert_eq!(progress.lines.as_ref().map(|l| l.done), Some(3), "{}", out.text());
    }

    #[test]
    fn summary_counts_runs_and_lists_failures_with_their_stderr_tail() {
        let mut reporter = SummaryReporter::default();
        for e in events() {
            reporter.event(&e);
        }
        reporter.event(&Event::RunMissing { run: RunId::new("e", 1, "s1") });
        let summary = reporter.finish();
        assert_eq!((summary.planned, summary.cached, summary.ran, summary.failed, summary.skipped), (4, 1, 1, 1, 1));
        assert_eq!(summary.missing, vec!["e #1 @s1"]);
        assert_eq!(summary.corrupt, vec!["b #1 @s1: hash mismatch"]);
        let text = ExecutionSummary { wall_seconds: 0.5, ..summary }.render();
        assert_eq!(
            text,
            "demo: 4 runs: 1 from cache, 1 ran, 1 failed, 1 skipped in 0.50s\n\
             \x20 corrupt cache entry (recomputed): b #1 @s1: hash mismatch\n\
             \x20 ✗ c #1 @s1: `stet` exited with exit code 1\n\
             \x20     | line 1\n\
             \x20     | line 2\n\
             \x20     | panic: boom\n\
             \x20 ✗ d #1 @s2: skipped: subject `s2` could not be materialized: git failed\n"
        );
    }

    /// The terminal shows a failure's stderr as RESULTS.md's failure table holds it (its last 8
    /// non-empty lines), with escape sequences and control characters inert.
    #[test]
    fn a_failures_stderr_is_its_last_lines_made_safe() {
        let mut reporter = SummaryReporter::default();
        reporter.event(&Event::Planned { experiment: "demo".into(), runs: 1, cached: 0, to_run: 1 });
        let stderr = format!("{}\n\n\u{1b}[31mred\u{1b}[0m\n", (1..=9).map(|i| format!("l{i}")).collect::<Vec<_>>().join("\n"));
        let error = ReviewError::Failed { message: "bad \u{1b}]0;title\u{7}".into(), stderr_tail: stderr };
        reporter.event(&Event::RunFailed { run: RunId::new("c", 1, "s1"), error });
        let text = ExecutionSummary { wall_seconds: 0.5, ..reporter.finish() }.render();
        let shown: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(
            shown,
            [
                "  ✗ c #1 @s1: bad \u{fffd}]0;title\u{fffd}",
                "      | l3",
                "      | l4",
                "      | l5",
                "      | l6",
                "      | l7",
                "      | l8",
                "      | l9",
                "      | \u{fffd}[31mred\u{fffd}[0m",
            ],
            "{text}"
        );
    }

    #[test]
    fn summary_reports_cost_incurred_and_saved_and_what_the_budget_left_unrun() {
        let mut reporter = SummaryReporter::default();
        reporter.event(&Event::Planned { experiment: "demo".into(), runs: 5, cached: 1, to_run: 4 });
        reporter.event(&Event::RunFinished { run: RunId::new("a", 1, "s1"), findings: 0, wall_ms: 1000 });
        for s in ["s2", "s3", "s4"] {
            reporter.event(&Event::RunSkipped { run: RunId::new("a", 1, s), reason: SkipReason::OverBudget { budget: "100 tokens".into() } });
        }
        let mut summary = reporter.finish();
        assert_eq!((summary.ran, summary.skipped, summary.unrun, summary.failures.len()), (1, 0, 3, 0), "unrun runs are not failures");
        summary.cost = Some(CostReport {
            budget: Some(runner::exec::Budget::Tokens(100)),
            incurred: Spent { tokens: 150, review_ms: 1000, runs: 1 },
            saved: Spent { tokens: 120, review_ms: 800, runs: 1 },
            unrun: 3,
            ..CostReport::default()
        });
        let text = ExecutionSummary { wall_seconds: 0.5, ..summary }.render();
        assert_eq!(
            text,
            "demo: 5 runs: 1 from cache, 1 ran, 0 failed, 0 skipped in 0.50s\n\
             \x20 cost: incurred 150 tokens, 1.00 review s (1 run) against --max-cost 100 tokens; saved by the cache 120 tokens, 0.80 review s (1 run)\n\
             \x20 left unrun: 3 runs, over budget (--max-cost 100 tokens); run again with a larger --max-cost to continue from the cache\n"
        );
    }

    #[test]
    fn summary_and_ndjson_report_endpoints_and_scoring_calls_apart() {
        let report = EndpointReport {
            endpoint: "http://127.0.0.1:9/v1".into(),
            ceiling: 16,
            final_limit: 5,
            min_limit: 2,
            max_limit: 16,
            requests: 540,
            throttled: 40,
            held: 3,
        };
        let mut scoring = std::collections::BTreeMap::new();
        scoring.insert("judge".to_string(), CallsSpent { tokens: 900, ms: 1500, calls: 6 });
        scoring.insert("embed".to_string(), CallsSpent { tokens: 0, ms: 200, calls: 1 });
        let cost = CostReport {
            budget: Some(runner::exec::Budget::Tokens(1000)),
            incurred: Spent { tokens: 150, review_ms: 1000, runs: 1 },
            scoring,
            unrun_calls: 4,
            ..CostReport::default()
        };
        let events = [
            Event::Planned { experiment: "demo".into(), runs: 1, cached: 0, to_run: 1 },
            Event::RunFinished { run: RunId::new("a", 1, "s1"), findings: 0, wall_ms: 1000 },
            Event::Cost(cost),
            Event::Endpoints { endpoints: vec![report] },
        ];
        let out = Buffer::default();
        let mut ndjson = NdjsonReporter::new(Box::new(out.clone()));
        let mut reporter = SummaryReporter::default();
        for e in &events {
            ndjson.event(e);
            reporter.event(e);
        }
        let lines: Vec<serde_json::Value> = out.text().lines().map(|l| serde_json::from_str(l).expect("json")).collect();
        assert_eq!(lines[2]["scoring"]["judge"], serde_json::json!({"tokens": 900, "ms": 1500, "calls": 6}));
        assert_eq!(lines[2]["unrun_calls"], 4);
        assert_eq!(
            lines[3],
            serde_json::json!({"event": "endpoints", "endpoints": [{"endpoint": "http://127.0.0.1:9/v1", "ceiling": 16, "final_limit": 5, "min_limit": 2, "max_limit": 16, "requests": 540, "throttled": 40, "held": 3}]})
        );
        let text = ExecutionSummary { wall_seconds: 0.5, ..reporter.finish() }.render();
        assert_eq!(
            text,
            "demo: 1 run: 0 from cache, 1 ran, 0 failed, 0 skipped in 0.50s\n\
             \x20 cost: incurred 150 tokens, 1.00 review s (1 run), and scoring calls: embed 0.20 s (1 call), judge 900 tokens, 1.50 s (6 calls) against --max-cost 1000 tokens; saved by the cache nothing\n\
             \x20 endpoint http://127.0.0.1:9/v1: 540 requests, 40 answered 429; concurrency settled at 5 (lowest 2, highest 16, ceiling 16); held 3 times by its x-ratelimit headers\n\
             \x20 left unrun: 4 scoring calls, over budget (--max-cost 1000 tokens); run again with a larger --max-cost to continue from the cache\n"
        );
    }

    #[test]
    fn the_finished_event_holds_the_exit_code_counts_and_reports() {
        let mut reporter = SummaryReporter::default();
        for e in events() {
            reporter.event(&e);
        }
        let summary = reporter.finish();
        let reports = [std::path::PathBuf::from("out/RESULTS.md"), std::path::PathBuf::from("out/results.json")];
        let line = finished_event(&summary, 3, &reports, &reports[1..]);
        let mut event: serde_json::Value = serde_json::from_str(&line).expect("one JSON object");
        assert!(event["wall_ms"].is_u64());
        event["wall_ms"] = serde_json::json!("<redacted>");
        assert_eq!(
            event,
            serde_json::json!({"event": "finished", "experiment": "demo", "exit_code": 3, "runs": 4, "cached": 1, "ran": 1, "failed": 1, "skipped": 1,
                "unrun": 0, "missing": 0, "other_shards": 0, "reports": ["out/RESULTS.md", "out/results.json"], "changed": ["out/results.json"], "wall_ms": "<redacted>"})
        );
        assert!(!line.contains('\n'), "one line");
    }

    #[test]
    fn progress_off_a_terminal_writes_only_plain_lines_that_need_attention() {
        let out = Buffer::default();
        let mut reporter = ProgressReporter::new(Box::new(out.clone()), Display::None);
        for e in events() {
            reporter.event(&e);
        }
        reporter.event(&Event::MaterializeFailed { subject: "s2".into(), error: "git failed".into() });
        reporter.finish();
        assert_eq!(out.text(), "warning: corrupt cache entry for b #1 @s1: hash mismatch; recomputing\nerror: could not materialize s2: git failed\n");
    }

    /// Progress lines on a clock the test moves.
    fn paced(every_runs: Option<usize>) -> (Display, Arc<Mutex<Duration>>) {
        let now = Arc::new(Mutex::new(Duration::ZERO));
        let read = now.clone();
        let clock: Clock = Arc::new(move || *read.lock().expect("clock"));
        (Display::Lines(Pacing { every_runs, every: Duration::from_secs(30), clock }), now)
    }

    #[test]
    fn progress_lines_come_every_tenth_of_the_runs_with_counts_elapsed_and_time_left() {
        let out = Buffer::default();
        let (display, now) = paced(None);
        let mut reporter = ProgressReporter::new(Box::new(out.clone()), display);
        reporter.event(&Event::Planned { experiment: "demo".into(), runs: 24, cached: 4, to_run: 20 });
        for i in 0..20u32 {
            *now.lock().expect("clock") = Duration::from_secs(3 * u64::from(i + 1));
            let run = RunId::new("a", 1, format!("s{i}"));
            if i == 2 {
                reporter.event(&Event::RunFailed { run, error: ReviewError::Failed { message: "boom".into(), stderr_tail: String::new() } });
            } else {
                reporter.event(&Event::RunFinished { run, findings: 0, wall_ms: 3000 });
            }
        }
        reporter.finish();
        let text = out.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 9, "one per 2 runs of 20, none once all are done: {text}");
        assert_eq!(lines[0], "progress: 6/24 runs, 6s elapsed, about 54s left");
        assert_eq!(lines[1], "progress: 8/24 runs (1 failed), 12s elapsed, about 48s left");
        assert_eq!(lines[8], "progress: 22/24 runs (1 failed), 54s elapsed, about 6s left");
    }

    #[test]
    fn a_quiet_half_minute_writes_a_progress_line_and_a_fully_cached_execution_none() {
        let out = Buffer::default();
        let (display, now) = paced(Some(1000));
        let mut reporter = ProgressReporter::new(Box::new(out.clone()), display);
        reporter.event(&Event::Planned { experiment: "demo".into(), runs: 3, cached: 0, to_run: 3 });
        *now.lock().expect("clock") = Duration::from_secs(29);
        reporter.tick();
        assert_eq!(out.text(), "", "not yet");
        *now.lock().expect("clock") = Duration::from_secs(31);
        reporter.tick();
        reporter.tick();
        assert_eq!(out.text(), "progress: 0/3 runs, 31s elapsed, time left not known yet\n", "once per interval");
        *now.lock().expect("clock") = Duration::from_secs(3725);
        reporter.event(&Event::RunSkipped { run: RunId::new("a", 1, "s1"), reason: SkipReason::SubjectFailed { subject: "s1".into(), error: "x".into() } });
        assert!(out.text().ends_with("progress: 1/3 runs (1 skipped), 1h02m elapsed, about 2h04m left\n"), "{}", out.text());

        let cached = Buffer::default();
        let (display, now) = paced(None);
        let mut reporter = ProgressReporter::new(Box::new(cached.clone()), display);
        reporter.event(&Event::Planned { experiment: "demo".into(), runs: 3, cached: 3, to_run: 0 });
        *now.lock().expect("clock") = Duration::from_secs(60);
        reporter.tick();
        assert_eq!(cached.text(), "", "nothing is left to wait for");
        assert_eq!(plural(1, "subject", "subjects"), "subject");
    }

    #[test]
    fn reporters_route_by_mode() {
        let (stdout, stderr, log) = (Buffer::default(), Buffer::default(), Buffer::default());
        let mut json = Reporters::new(Mode::Json, Box::new(stdout.clone()), Box::new(stderr.clone()), Display::None, Some(Box::new(log.clone())));
        let mut quiet = Reporters::new(Mode::Quiet, Box::new(stdout.clone()), Box::new(stderr.clone()), Display::None, None);
        for e in events() {
            json.event(&e);
            quiet.event(&e);
        }
        assert_eq!(json.finish().failed, 1);
        assert_eq!(quiet.finish().failed, 1);
        assert_eq!(stdout.text().lines().count(), events().len());
        assert_eq!(stdout.text(), log.text());
        assert_eq!(stderr.text(), "", "neither JSON nor quiet mode draws progress");
    }

    /// A writer that fails every write, as stdout does once its reader has gone.
    struct Closed;

    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_failed_write_to_stdout_is_reported_once_and_the_log_keeps_every_event() {
        let log = Buffer::default();
        let reporters = Reporters::new(Mode::Json, Box::new(Closed), Box::new(Buffer::default()), Display::None, Some(Box::new(log.clone())));
        let (tx, rx) = mpsc::unbounded_channel();
        for e in events() {
            tx.send(e).expect("send");
        }
        drop(tx);
        let calls = Arc::new(Mutex::new(0));
        let counted = calls.clone();
        let summary = consume_into(rx, reporters, move || *counted.lock().expect("count") += 1).await;
        assert_eq!(*calls.lock().expect("count"), 1, "the execution is told once");
        let error = summary.output_error.expect("the lost output is in the summary");
        assert!(error.starts_with("cannot write events to stdout: ") && error.contains("broken pipe"), "{error}");
        assert_eq!(log.text().lines().count(), events().len());
        // A working stdout: nothing to report.
        let (tx, rx) = mpsc::unbounded_channel();
        tx.send(events().remove(0)).expect("send");
        drop(tx);
        let fine = Reporters::new(Mode::Json, Box::new(Buffer::default()), Box::new(Buffer::default()), Display::None, None);
        assert!(consume_into(rx, fine, || panic!("not lost")).await.output_error.is_none());
    }
}
