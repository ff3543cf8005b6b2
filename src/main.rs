//! The `runner` binary: parse the command line, call the library, print, pick the exit code.

mod cli;

/// `print!` to stdout; a write that fails (a full disk, a closed pipe) ends the command with
/// [`Error::Output`] rather than a panic.
macro_rules! out {
    ($($arg:tt)*) => { write_to(Stream::Stdout, format_args!($($arg)*))? };
}

/// `println!`, as [`out!`].
macro_rules! outln {
    ($($arg:tt)*) => { out!("{}\n", format_args!($($arg)*)) };
}

/// `eprint!`, as [`out!`] on stderr.
macro_rules! err {
    ($($arg:tt)*) => { write_to(Stream::Stderr, format_args!($($arg)*))? };
}

/// `eprintln!`, as [`out!`] on stderr.
macro_rules! errln {
    ($($arg:tt)*) => { err!("{}\n", format_args!($($arg)*)) };
}

use cli::{
    A2Args, AdjudicateCommand, AdjudicateExportArgs, AdjudicateImportArgs, CacheCommand, Cli, Command, CorpusCommand, CorpusValidateArgs, CrscoreArgs,
    DiffArgs, ExecArgs, ImportGithubArgs, InitArgs, LocationArgs, MatchingCalibrateArgs, MatchingCommand, MatchingEmbedderArgs, MatchingEvaluateArgs,
    MergeArgs, OracleCommand, OracleProposeArgs, PlanArgs, ReportArgs, ResolutionArgs, ScoreArgs, ShowArgs, StudyAuditArgs, StudyCommand, StudyExportArgs,
    StudyImportArgs, StudyPreferenceArgs,
};
use runner::analysis::corpus::score::ScoreError;
use runner::cache::Lookup;
use runner::error::{Ending, Error, Exit};
use runner::exec::{Emitter, ExecOptions};
use runner::experiment::{self, Locations};
use runner::manifest::{self, LoadError};
use runner::report::progress::{self, Mode};
use runner::study::adjudication::AdjudicationError;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// mimalloc: allocation-heavy work (reading 100k cache entries, building reports) runs
/// faster and leaves less memory stranded between threads than with the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // Behave like a Unix filter: `runner plan … | head` ends quietly instead of panicking.
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = match parse_cli() {
        Ok(cli) => cli,
        Err(exit) => return exit.into(),
    };
    let _ = COLOR.set(cli.color.choice());
    if matches!(cli.command, Command::Exec(_) | Command::Merge(_)) {
        // An execution must outlive its reader: a closed pipe is a failed write it sees (and
        // ends like Ctrl-C, killing its reviewers), not a signal that kills runner alone and
        // leaves them running. Children start with the default disposition again.
        // SAFETY: setting a signal disposition before any thread starts.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        }
    }
    let result = match cli.command {
        Command::Init(args) => init(&args),
        Command::Completions { shell } => completions(shell),
        Command::Man => man(),
        Command::Exec(args) => exec(args),
        Command::Plan(args) => plan(args),
        Command::Merge(args) => merge(args),
        Command::Validate { files, max_runs } => validate(&files, max_runs),
        Command::Diff(args) => diff(args),
        Command::Show(args) => show(&args),
        Command::Report(args) => report(&args),
        Command::Cache { command, locations } => cache(command, &locations),
        Command::Corpus { command: CorpusCommand::Validate(args) } => corpus_validate(&args),
        Command::Score(args) => score(&args),
        Command::Crscore(args) => crscore(&args),
        Command::Matching { command: MatchingCommand::Evaluate(args) } => matching_evaluate(&args),
        Command::Matching { command: MatchingCommand::Calibrate(args) } => matching_calibrate(&args),
        Command::A2(args) => a2(&args),
        Command::Resolution(args) => resolution(&args),
        Command::Oracle { command: OracleCommand::ImportGithub(args) } => oracle_import_github(&args),
        Command::Oracle { command: OracleCommand::Propose(args) } => oracle_propose(&args),
        Command::Adjudicate { command: AdjudicateCommand::Export(args) } => adjudicate_export(&args),
        Command::Adjudicate { command: AdjudicateCommand::Import(args) } => adjudicate_import(&args),
        Command::Study { command: StudyCommand::Export(args) } => study_export(&args),
        Command::Study { command: StudyCommand::Import(args) } => study_import(&args),
        Command::Study { command: StudyCommand::Audit(args) } => study_audit(&args),
        Command::Study { command: StudyCommand::Preference(args) } => study_preference(&args),
    };
    // What is still buffered for stdout must get there too, or the command failed.
    let result =
        result.and_then(|exit| std::io::Write::flush(&mut std::io::stdout()).map(|()| exit).map_err(|source| Error::Output { stream: "stdout", source }));
    // The run directories of this process go with it.
    runner::scratch::finish();
    match result {
        Ok(exit) => exit.into(),
        Err(error) => {
            // Nowhere left to say it when stderr itself fails: the exit code does.
            let _ = report_error(&error);
            error.exit().into()
        }
    }
}

/// `--color`, as the command line said it.
static COLOR: std::sync::OnceLock<runner::config::color::ColorChoice> = std::sync::OnceLock::new();

/// Whether what goes to stderr is coloured.
fn stderr_color() -> bool {
    runner::config::color::enabled(COLOR.get().copied().unwrap_or_default(), std::io::stderr().is_terminal())
}

/// The command line, with clap's help and errors coloured as `--color` and the environment
/// say. A usage error exits 1, as every other error does: clap's own 2 means "a model server
/// is unreachable" here.
fn parse_cli() -> Result<Cli, Exit> {
    use clap::{CommandFactory, FromArgMatches};
    use runner::config::color::{decide, Decision};
    let choice = cli::ColorArg::from_raw(std::env::args_os()).choice();
    let color = match decide(choice, |name| std::env::var(name).ok()) {
        Decision::Always => clap::ColorChoice::Always,
        Decision::Never => clap::ColorChoice::Never,
        Decision::IfTerminal => clap::ColorChoice::Auto,
    };
    let mut command = Cli::command().color(color);
    match command.try_get_matches_from_mut(std::env::args_os()).and_then(|m| Cli::from_arg_matches(&m)) {
        Ok(cli) => Ok(cli),
        Err(error) => {
            let _ = error.print();
            Err(if error.use_stderr() { Exit::Error } else { Exit::Ok })
        }
    }
}

/// `runner completions SHELL`.
fn completions(shell: clap_complete::Shell) -> Result<Exit, Error> {
    use clap::CommandFactory;
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "runner", &mut script);
    out!("{}", String::from_utf8_lossy(&script));
    Ok(Exit::Ok)
}

/// `runner man`.
fn man() -> Result<Exit, Error> {
    use clap::CommandFactory;
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut page).map_err(|source| Error::Output { stream: "stdout", source })?;
    out!("{}", String::from_utf8_lossy(&page));
    Ok(Exit::Ok)
}

/// Where [`out!`] and [`err!`] write.
#[derive(Clone, Copy)]
enum Stream {
    Stdout,
    Stderr,
}

/// Writes to stdout or stderr; the error names the stream.
fn write_to(stream: Stream, text: std::fmt::Arguments<'_>) -> Result<(), Error> {
    use std::io::Write;
    match stream {
        Stream::Stdout => std::io::stdout().lock().write_fmt(text).map_err(|source| Error::Output { stream: "stdout", source }),
        Stream::Stderr => std::io::stderr().lock().write_fmt(text).map_err(|source| Error::Output { stream: "stderr", source }),
    }
}

/// A warning on stderr from where an error cannot be returned (a store's callback); a failed
/// write is left to the command's next one to report.
fn warn(message: &str) {
    let _ = write_to(Stream::Stderr, format_args!("warning: {message}\n"));
}

fn report_error(error: &Error) -> Result<(), Error> {
    match error {
        Error::Manifest(LoadError::Invalid(errors)) => err!("{}", errors.render(stderr_color())),
        Error::Score(ScoreError::Invalid { path, problems }) => report_problems("score", path, problems)?,
        Error::Adjudication(AdjudicationError::Invalid { path, problems }) => report_problems("import", path, problems)?,
        other => errln!("error: {other}"),
    }
    Ok(())
}

fn report_problems(what: &str, path: &Path, problems: &[String]) -> Result<(), Error> {
    errln!("error: failed to {what} `{}`: {} problem{}", path.display(), problems.len(), if problems.len() == 1 { "" } else { "s" });
    for p in problems {
        errln!("  - {p}");
    }
    Ok(())
}

fn locations(args: &LocationArgs) -> Locations {
    Locations { cache_dir: args.cache_dir.clone(), work_dir: args.work_dir.clone(), remote_cache: args.remote_cache.clone() }
}

/// `runner init`: a first experiment on this repository, or a corpus.
fn init(args: &InitArgs) -> Result<Exit, Error> {
    use runner::config::diagnostics::display_path;
    let written = match &args.corpus {
        Some(dir) => runner::init::corpus(dir)?,
        None => runner::init::experiment(Path::new("."), &args.name)?,
    };
    for path in &written.files {
        outln!("wrote {}", display_path(path));
    }
    for path in &written.kept {
        outln!("kept {} (it already says that)", display_path(path));
    }
    match (&written.manifest, &args.corpus) {
        (Some(manifest), _) => {
            let manifest = display_path(manifest);
            outln!("next: `runner exec {manifest}` reviews the commits and writes RESULTS.md; then replace the example reviewer with yours");
        }
        (None, Some(dir)) => outln!(
            "next: `runner corpus validate {}` runs both cases' ground-truth programs; add your cases, then point an experiment's `[target] corpus` at it",
            dir.display()
        ),
        (None, None) => {}
    }
    Ok(Exit::Ok)
}

fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(Error::Runtime)
}

/// `runner merge`: `exec --frozen`, listing each missing run with the shard that owns it.
fn merge(args: MergeArgs) -> Result<Exit, Error> {
    exec(ExecArgs {
        manifest: args.manifest,
        jobs: cli::default_jobs(),
        frozen: true,
        refresh: false,
        reports: args.reports,
        max_cost: None,
        shard: None,
        steal: false,
        lease_ttl: None,
        shards: args.shards,
        locations: args.locations,
    })
}

fn exec(args: ExecArgs) -> Result<Exit, Error> {
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
    let work_dir = args.locations.work_dir.clone().unwrap_or_else(|| runner::config::project_root(&prepared.manifest.base_dir).join(".runner"));
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
    // What the report directory holds now: "wrote" is said only of a file that changed.
    let before = report_files(&prepared.manifest.report.output);

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
    let changed: Vec<PathBuf> = executed.written.iter().filter(|p| before.get(*p) != file_stamp(p).as_ref()).cloned().collect();
    match mode {
        Mode::Human => {
            err!("{}", summary.render());
            for path in &changed {
                errln!("wrote {}", path.display());
            }
            if changed.is_empty() && !executed.written.is_empty() {
                errln!("the reports in {} are unchanged", prepared.manifest.report.output.display());
            }
            if !interrupted && args.shard.is_none() && executed.written.is_empty() && summary.missing.is_empty() && !executed.outcomes.is_empty() {
                errln!("no run succeeded: the reports were left as they were");
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
    let finished = progress::finished_event(&summary, ending.exit() as u8, &executed.written, &changed);
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

/// A file's identity and last change: a file replaced (runner writes by renaming) or
/// rewritten has another.
#[derive(PartialEq, Eq)]
struct FileStamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    inode: u64,
}

fn file_stamp(path: &Path) -> Option<FileStamp> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&meta);
    #[cfg(not(unix))]
    let inode = 0;
    Some(FileStamp { len: meta.len(), modified: meta.modified().ok(), inode })
}

/// The files of a report directory and of its `plots/`, with their stamps.
fn report_files(dir: &Path) -> std::collections::HashMap<PathBuf, FileStamp> {
    [dir.to_path_buf(), dir.join("plots")]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .flatten()
        .filter_map(|entry| file_stamp(&entry.path()).map(|stamp| (entry.path(), stamp)))
        .collect()
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

fn plan(args: PlanArgs) -> Result<Exit, Error> {
    let prepared =
        experiment::prepare_with(&args.manifest, &locations(&args.locations), &experiment::PrepareOptions { max_runs: args.max_runs, ..Default::default() })?;
    let name = &prepared.manifest.experiment.name;
    let mut rows = Vec::new();
    let (mut cached, mut missing) = (0, 0);
    // With a remote cache, what it holds counts as cached (and is copied into the local one).
    let store = prepared.store(std::sync::Arc::new(|message| warn(&message)));
    let runs: Vec<(usize, &runner::plan::PlannedRun)> =
        prepared.plan.runs.iter().enumerate().filter(|(_, r)| args.shard.is_none_or(|s| s.contains(&r.key))).collect();
    store.prefetch(&runs.iter().map(|(_, r)| r.key.clone()).collect::<Vec<_>>());
    // The findings of cached reviews: what the match nodes' calls are computed from.
    let mut known = std::collections::BTreeMap::new();
    for (index, run) in runs {
        let (status, why) = match store.lookup(&run.key) {
            Lookup::Hit { findings, .. } => {
                known.insert(index, findings);
                cached += 1;
                ("cached", String::new())
            }
            Lookup::Corrupt(detail) => {
                missing += 1;
                ("corrupt", detail)
            }
            Lookup::Unreadable(detail) => {
                missing += 1;
                ("unreadable", detail)
            }
            Lookup::Miss => {
                missing += 1;
                let why = match prepared.cache.previous_inputs(&run.slot(name), &run.key) {
                    Some(previous) => {
                        format!("changed since last cached: {}", run.inputs.changes(&previous).iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))
                    }
                    None => match prepared.cache.failure(&run.key) {
                        Some(f) => format!("last attempt failed: {}", f.error),
                        None => "never run".to_string(),
                    },
                };
                ("run", why)
            }
        };
        rows.push(serde_json::json!({ "run": run.label(), "key": run.key.0, "order": run.order, "status": status, "why": why }));
    }
    let match_calls = prepared.scorers.as_ref().map(|s| runner::scoring::match_calls(&prepared.plan, s, store.as_ref(), &known));
    let nodes = node_summary(&prepared, cached, match_calls.unwrap_or_default());
    let reach = runner::plan::compare_reach(&prepared.manifest, &prepared.plan);
    // An earlier execution's results.json is the pilot of the power estimates.
    let pilot = (!reach.is_empty())
        .then(|| runner::report::model::Results::read(&prepared.manifest.report.output.join("results.json")).ok())
        .flatten()
        .map(|results| runner::report::pilot::pilot_power(&results, &reach.iter().map(|r| r.index).collect::<Vec<_>>()))
        .unwrap_or_default();
    let history = prepared.plan.history.as_ref();
    if args.json {
        let commit = |c: &runner::subject::history::Commit, note: Option<String>| serde_json::json!({ "sha": c.sha, "base": c.base, "title": c.title, "files": c.files, "lines": c.lines, "note": note });
        let doc = serde_json::json!({
            "experiment": name,
            "shard": args.shard.map(|s| s.to_string()),
            "history": history.map(|h| serde_json::json!({
                "selection": h.selection,
                "considered": h.considered,
                "subjects": h.planned.iter().map(|c| commit(c, c.note(h.merges).map(str::to_string))).collect::<Vec<_>>(),
                "skipped": h.skipped.iter().map(|(c, why)| commit(c, Some(why.to_string()))).collect::<Vec<_>>(),
                "sample": h.sample.map(|s| serde_json::json!({ "size": s.size, "of": s.of, "seed": s.seed })),
            })),
            "compare": reach,
            "power": pilot,
            "runs": rows,
            "cached": cached,
            "to_run": missing,
            "nodes": nodes.iter().map(|n| serde_json::json!({ "kind": n.kind.as_str(), "count": n.count, "cached": n.kind.cached(), "status": n.status })).collect::<Vec<_>>(),
            "edges": prepared.plan.graph.edge_count(),
        });
        outln!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
    } else {
        outln!("{name}: {} ({} cached, {} to run)", prepared.plan.size(), cached, missing,);
        if let Some(shard) = args.shard {
            outln!("shard {shard}: {} of the {} runs", cached + missing, prepared.plan.runs.len());
        }
        outln!("DAG: {} nodes, {} edges", prepared.plan.graph.node_count(), prepared.plan.graph.edge_count());
        for n in &nodes {
            outln!("  {:<12} {:>6}  {}", n.kind.as_str(), n.count, n.status);
        }
        for line in pipeline_lines(&prepared, &store) {
            outln!("{line}");
        }
        if let Some(h) = history {
            out!("{}", history_lines(h));
        }
        for r in &reach {
            outln!("{}", reach_line(r));
            for p in pilot.iter().filter(|p| p.index == r.index) {
                outln!("{}", runner::report::pilot::line(p));
            }
        }
        outln!("runs:");
        for row in &rows {
            let why = row["why"].as_str().unwrap_or_default();
            outln!(
                "  {:<7} {}  {}{}",
                row["status"].as_str().unwrap_or_default(),
                &row["key"].as_str().unwrap_or_default()[..12],
                row["run"].as_str().unwrap_or_default(),
                if why.is_empty() { String::new() } else { format!("  ({why})") }
            );
        }
    }
    Ok(Exit::Ok)
}

/// A history target's commits as `runner plan` lists them: the selection, each reviewed
/// commit (short SHA and subject line, with a note for a root or a merge), each skipped one
/// with why, and the sample.
fn history_lines(h: &runner::subject::history::History) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = write!(out, "subjects: {}: {} commit{}, {} reviewed", h.selection, h.considered, if h.considered == 1 { "" } else { "s" }, h.planned.len());
    if !h.skipped.is_empty() {
        let _ = write!(out, ", {} skipped", h.skipped.len());
    }
    if let Some(s) = h.sample {
        let _ = write!(out, " (a seeded sample of {} of the {} reviewable, seed {})", s.size, s.of, s.seed);
    }
    let _ = writeln!(out, ":");
    for c in &h.planned {
        let _ = writeln!(out, "  {}{}", c.label(), c.note(h.merges).map(|n| format!(" — {n}")).unwrap_or_default());
    }
    if !h.skipped.is_empty() {
        let _ = writeln!(out, "skipped:");
        for (c, why) in &h.skipped {
            let _ = writeln!(out, "  {} — {why}", c.label());
        }
    }
    out
}

/// A `compare` analysis's reach: `compare #1 (axis `model`): 10 subjects per pair, smallest
/// attainable p = 0.00195 (α = 0.05)`, or that it cannot be significant.
fn reach_line(r: &runner::plan::CompareReach) -> String {
    let subjects = if r.fewest == r.most { format!("{}", r.fewest) } else { format!("{}–{}", r.fewest, r.most) };
    let axis = r.axis.as_ref().map(|a| format!(" (axis `{a}`)")).unwrap_or_default();
    let plural = if r.most == 1 { "subject" } else { "subjects" };
    let p = r.min_p.map_or_else(|| "–".to_string(), significant);
    if r.pairs == 0 {
        format!("compare #{}{axis}: no pair of cells to compare", r.index + 1)
    } else if r.cannot_be_significant() {
        format!("compare #{}{axis}: {subjects} {plural} per pair: cannot be significant at α = {} (smallest attainable p = {p})", r.index + 1, r.alpha)
    } else {
        format!("compare #{}{axis}: {subjects} {plural} per pair, smallest attainable p = {p} (α = {})", r.index + 1, r.alpha)
    }
}

/// A p-value to three significant digits: `0.250`, `0.00195`.
fn significant(p: f64) -> String {
    let digits = if p > 0.0 { (2 - p.log10().floor() as i64).clamp(0, 12) as usize } else { 3 };
    format!("{p:.digits$}")
}

/// `runner plan`'s lines on the pipeline reviewers it runs: each stage's calls per run, each
/// call cached on its own.
fn pipeline_lines(prepared: &experiment::Prepared, store: &std::sync::Arc<dyn runner::cache::Store>) -> Vec<String> {
    use runner::reviewer::spec::ReviewerKindSpec;
    let mut lines = Vec::new();
    let experiment = &prepared.manifest.experiment.name;
    for named in &prepared.manifest.reviewers.entries {
        let ReviewerKindSpec::Pipeline(p) = &named.spec.kind else { continue };
        let planned: Vec<&runner::plan::PlannedRun> = prepared.plan.runs.iter().filter(|r| r.reviewer == named.name).collect();
        let runs = planned.len();
        if runs == 0 {
            continue;
        }
        // What the call cache holds, stage by stage, summed over the runs.
        let mut tally: Vec<runner::reviewer::StageCalls> = Vec::new();
        if let Some(reviewer) = prepared.reviewers.get(&named.name) {
            for run in &planned {
                let calls = runner::exec::call_cache(store.clone(), experiment, &run.inputs.subject);
                for (i, stage) in reviewer.planned_calls(&run.cell, run.repeat, calls.0.as_ref()).unwrap_or_default().into_iter().enumerate() {
                    match tally.get_mut(i) {
                        Some(t) => {
                            t.cached += stage.cached;
                            t.to_run += stage.to_run;
                            t.unknown += stage.unknown;
                        }
                        None => tally.push(stage),
                    }
                }
            }
        }
        if lines.is_empty() {
            lines.push("pipeline stage calls (each cached on its own, keyed by its stage and what it receives):".to_string());
        }
        let budget = match p.total_budget {
            Some(total) => {
                let shares: Vec<String> = p.allocation().iter().map(|(stage, tokens)| format!("{stage} {tokens}")).collect();
                format!("; total budget {total} tokens ({})", shares.join(", "))
            }
            None => String::new(),
        };
        lines.push(format!("  {}: per run {}; {runs} run{}{budget}", named.name, p.calls_per_run(), if runs == 1 { "" } else { "s" }));
        let stages: Vec<String> = tally
            .iter()
            .map(|t| {
                let unknown = if t.unknown > 0 { format!(", {} known once earlier calls run", t.unknown) } else { String::new() };
                format!("{} {} cached, {} to run{unknown}", t.stage, t.cached, t.to_run)
            })
            .collect();
        if !stages.is_empty() {
            lines.push(format!("    calls: {}", stages.join("; ")));
        }
    }
    lines
}

/// One line of `runner plan`'s node table.
struct NodeLine {
    kind: runner::plan::NodeKind,
    count: usize,
    status: String,
}

/// Each node kind of the plan: how many, and whether its work is cached, to do, or not needed.
fn node_summary(prepared: &experiment::Prepared, cached_runs: usize, (match_calls, match_cached): (usize, usize)) -> Vec<NodeLine> {
    use runner::plan::NodeKind;
    use runner::scoring::stages::RqsStage;
    let counts = prepared.plan.node_counts();
    let runs = prepared.plan.runs.len();
    counts
        .into_iter()
        .map(|(kind, count)| {
            let status = match kind {
                NodeKind::Materialize if cached_runs == runs => "not cached; built only for runs that are not cached (none now)".to_string(),
                NodeKind::Materialize => "not cached; built only for runs that are not cached".to_string(),
                NodeKind::Review => format!("cached by key: {cached_runs} cached, {} to run", runs - cached_runs),
                NodeKind::Score(stage) if RqsStage::of(stage) == Some(RqsStage::Match) => format!(
                    "cached per call (one per pair the judges are asked about; a replayed judge's, one per oracle finding, read from its file): {match_calls} calls known from the cached reviews, {match_cached} cached, {} to run; the other runs' calls are known once reviewed",
                    match_calls - match_cached
                ),
                NodeKind::Score(_) => {
                    "cached per call, keyed by the producer's fingerprint and the content it reads (known once its review is)".to_string()
                }
                NodeKind::Analyze => "computed from the runs' outcomes at every execution (not cached)".to_string(),
                NodeKind::Render => "writes RESULTS.md and results.json".to_string(),
            };
            NodeLine { kind, count, status }
        })
        .collect()
}

fn validate(files: &[PathBuf], max_runs: u64) -> Result<Exit, Error> {
    let mut ok = true;
    for file in files {
        match manifest::load_to_validate(file) {
            Ok(m) => {
                let (axes, analyses) = (m.matrix.axes.len(), m.analyses.len());
                for warning in budget_warnings(&m) {
                    errln!("warning: {}: {warning}", file.display());
                }
                match experiment::check(m, &experiment::PrepareOptions { max_runs, ..Default::default() }) {
                    Ok(size) => outln!(
                        "{}: ok ({axes} ax{}, {analyses} analys{}; {size})",
                        file.display(),
                        if axes == 1 { "is" } else { "es" },
                        if analyses == 1 { "is" } else { "es" }
                    ),
                    Err(problems) => {
                        ok = false;
                        for p in &problems {
                            errln!("error: {}: {p}", file.display());
                        }
                    }
                }
            }
            Err(e) => {
                ok = false;
                report_error(&Error::Manifest(e))?;
            }
        }
    }
    Ok(if ok { Exit::Ok } else { Exit::Error })
}

/// Strategies (the `reviewer` axis's reviewers) whose total budgets differ.
fn budget_warnings(m: &runner::manifest::Manifest) -> Vec<String> {
    let Some(axis) = m.matrix.axis(runner::manifest::REVIEWER_AXIS) else { return Vec::new() };
    let compared: Vec<(&str, &runner::reviewer::spec::ReviewerSpec)> = axis
        .values
        .iter()
        .filter_map(|v| match v {
            runner::matrix::AxisValue::Str(name) => m.reviewers.get(name).map(|spec| (name.as_str(), spec)),
            _ => None,
        })
        .collect();
    runner::reviewer::bind::budget_mismatches(&compared)
}

fn seconds(value: f64, flag: &str) -> Result<std::time::Duration, Error> {
    std::time::Duration::try_from_secs_f64(value).ok().filter(|d| !d.is_zero()).ok_or_else(|| Error::InvalidFlag {
        flag: flag.to_string(),
        value: value.to_string(),
        expected: "a positive number of seconds",
    })
}

fn corpus_validate(args: &CorpusValidateArgs) -> Result<Exit, Error> {
    use runner::ground_truth::{program::Limits, validate};
    let defaults = validate::Options::default();
    let options = validate::Options {
        jobs: args.jobs.unwrap_or(defaults.jobs).max(1),
        limits: Limits {
            run: seconds(args.run_timeout, "--run-timeout")?,
            compile: seconds(args.compile_timeout, "--compile-timeout")?,
            wall: seconds(args.wall_timeout, "--wall-timeout")?,
            compile_wall: Limits::default().compile_wall.max(seconds(args.wall_timeout, "--wall-timeout")?),
        },
        structure_only: args.structure_only,
    };
    let validation = validate::validate(&args.dir, &options);
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&validation).unwrap_or_default());
    } else {
        out!("{}", validation.render());
    }
    Ok(if validation.valid { Exit::Ok } else { Exit::Error })
}

fn score(args: &ScoreArgs) -> Result<Exit, Error> {
    use runner::analysis::corpus::score;
    use runner::ground_truth::oracle;
    let oracle = oracle::load_file(&args.oracle)?;
    let captured = score::load_captured(&args.results)?;
    let problems = score::check(&captured, &oracle);
    if !problems.is_empty() {
        return Err(ScoreError::Invalid { path: args.results.clone(), problems }.into());
    }
    let method = args.method.clone().or_else(|| score::recorded_method(&args.results)).unwrap_or_else(|| score::DEFAULT_METHOD.to_string());
    let scored = score::score(&captured, &oracle, &method, &args.results.display().to_string(), &args.oracle.display().to_string());
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&scored).unwrap_or_default());
    } else {
        out!("{}", scored.render());
    }
    Ok(Exit::Ok)
}

fn oracle_import_github(args: &ImportGithubArgs) -> Result<Exit, Error> {
    use runner::ground_truth::github;
    let pulls: Vec<github::Pull> = github::read_export(&args.pulls)?;
    let comments: Vec<github::Comment> = github::read_export(&args.comments)?;
    let imported = github::import(&pulls, &comments, &args.repo, args.include_bots)?;
    let json = serde_json::to_string_pretty(&imported.oracle).unwrap_or_default();
    let inputs = [args.pulls.as_path(), args.comments.as_path()];
    write_output(&args.out, &format!("{json}\n"), &inputs, "an oracle", &is_json_object, args.force)?;
    for s in &imported.oracle.skipped {
        errln!("skipped {}: {}", s.source, s.reason);
    }
    errln!(
        "wrote {}: {} findings ({} resolved; {} replies merged into their threads) in {} cases from {} pull requests and {} review comments; {} left out",
        args.out.display(),
        imported.threads,
        imported.resolved,
        imported.replies,
        imported.oracle.cases.len(),
        pulls.len(),
        comments.len(),
        imported.oracle.skipped.len()
    );
    Ok(Exit::Ok)
}

fn oracle_propose(args: &OracleProposeArgs) -> Result<Exit, Error> {
    let patch = runner::study::propose::build(&args.adjudication, args.oracle.as_deref())?;
    let json = serde_json::to_string_pretty(&patch).unwrap_or_default();
    let inputs: Vec<&Path> = std::iter::once(args.adjudication.as_path()).chain(args.oracle.as_deref()).collect();
    write_output(&args.out, &format!("{json}\n"), &inputs, "an oracle patch", &is_json_object, args.force)?;
    for a in &patch.additions {
        let place = match (&a.finding.file, a.finding.line) {
            (Some(f), Some(l)) => format!("{f}:{l}"),
            (Some(f), None) => f.clone(),
            _ => "(no location)".into(),
        };
        eprintln!("{} ({}) {place}: {}", a.finding.id, a.case, a.finding.description);
    }
    eprintln!(
        "wrote {}: {} proposed findings for oracle {} → {}; verify each in the code before adding it",
        args.out.display(),
        patch.additions.len(),
        patch.applies_to,
        patch.makes
    );
    Ok(Exit::Ok)
}

fn resolution(args: &ResolutionArgs) -> Result<Exit, Error> {
    use runner::study::{history, resolution};
    let side = args.models.as_deref().map(history::SideFile::load).transpose()?;
    let options = resolution::Options { window: args.window, tolerance: args.tolerance };
    let report = resolution::load(&args.history, side.as_ref(), &args.repo, &args.head, options)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report).unwrap_or_default());
    } else {
        out!("{}", report.render());
    }
    for s in &report.skipped_lines {
        errln!("warning: `{}` line {} skipped: {}", args.history.display(), s.line, s.why);
    }
    if report.is_empty() {
        errln!("error: no record could be read from `{}`: is it stet's `.review/history.jsonl`?", args.history.display());
        return Ok(Exit::Error);
    }
    Ok(Exit::Ok)
}

fn a2(args: &A2Args) -> Result<Exit, Error> {
    use runner::study::history;
    let side = args.models.as_deref().map(history::SideFile::load).transpose()?;
    let report = history::load(&args.history, side.as_ref())?;
    let json = serde_json::to_string_pretty(&report).unwrap_or_default();
    if let Some(dir) = &args.out {
        for (name, text) in [("A2.md", report.render()), ("a2.json", format!("{json}\n"))] {
            let first_line = text.lines().next().unwrap_or_default().to_string();
            let same_kind = move |old: &[u8]| old.split(|b| *b == b'\n').next() == Some(first_line.as_bytes());
            write_output(&dir.join(name), &text, &[args.history.as_path()], "an A2 report", &same_kind, args.force)?;
        }
        errln!("wrote {} and {}", dir.join("A2.md").display(), dir.join("a2.json").display());
    } else if args.json {
        outln!("{json}");
    } else {
        out!("{}", report.render());
    }
    for s in &report.skipped {
        errln!("warning: `{}` line {} skipped: {}", args.history.display(), s.line, s.why);
    }
    if report.is_empty() {
        errln!("error: no record could be read from `{}`: is it stet's `.review/history.jsonl`?", args.history.display());
        return Ok(Exit::Error);
    }
    Ok(Exit::Ok)
}

fn crscore(args: &CrscoreArgs) -> Result<Exit, Error> {
    use runner::analysis::rqs::crscore;
    use runner::judge::embed::{EmbedProtocol, Embedder, EmbedderSpec};
    let data = crscore::CrscoreData::load(&args.reference).map_err(|e| Error::Scoring(e.to_string()))?;
    let protocol = if args.provider == "ollama" { EmbedProtocol::Ollama } else { EmbedProtocol::OpenAi };
    let mut spec = EmbedderSpec::new(protocol, &args.embedder_url, &args.embedder_model);
    spec.models_json = args.models_json.clone();
    let embedder = Embedder::new(spec).map_err(|e| Error::Scoring(e.to_string()))?;
    let texts = crscore::texts(&data);
    let store = runner::cache::CacheStore::new(&args.cache);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(Error::Runtime)?;
    let embedded = runtime.block_on(runner::scoring::embed_cached(&embedder, &store, "crscore", &texts, args.frozen)).map_err(Error::Scoring)?;
    errln!("{} texts: {} batches from the cache, {} embedded now", texts.len(), embedded.cached, embedded.fresh);
    let mut report = crscore::evaluate(&data, &embedded.vectors, args.tau).map_err(|e| Error::Scoring(e.to_string()))?;
    let fingerprint = embedder.fingerprint();
    report.embedder = Some(fingerprint.to_string());
    let written = runner::scoring::write_crscore(&args.out, &report, &fingerprint).map_err(Error::Scoring)?;
    out!("{}", report.to_markdown());
    for path in written {
        errln!("wrote {}", path.display());
    }
    Ok(Exit::Ok)
}

/// Judgement files, with their texts' embeddings and the embedder's fingerprint when one is set.
type ReadJudgements =
    (Vec<runner::analysis::matching::judgements::JudgementFile>, Option<runner::analysis::matching::judgements::Vectors>, Option<serde_json::Value>);

/// Reads judgement files, and embeds their texts through the cache when an embedder is set.
fn read_judgements(files: &[PathBuf], embedder: &MatchingEmbedderArgs) -> Result<ReadJudgements, Error> {
    use runner::analysis::matching::judgements::JudgementFile;
    use runner::judge::embed::{EmbedProtocol, Embedder, EmbedderSpec};
    let read: Vec<JudgementFile> = files.iter().map(|f| JudgementFile::read(f)).collect::<Result<_, _>>().map_err(Error::Scoring)?;
    let url = match (&embedder.embedder_url, embedder.lexical) {
        (Some(url), false) => url,
        _ => return Ok((read, None, None)),
    };
    let protocol = if embedder.provider == "ollama" { EmbedProtocol::Ollama } else { EmbedProtocol::OpenAi };
    let client = Embedder::new(EmbedderSpec::new(protocol, url, &embedder.embedder_model)).map_err(|e| Error::Scoring(e.to_string()))?;
    let texts: Vec<String> = read.iter().flat_map(|f| f.texts()).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
    let store = runner::cache::CacheStore::new(&embedder.cache);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(Error::Runtime)?;
    let embedded = runtime.block_on(runner::scoring::embed_cached(&client, &store, "matching", &texts, embedder.frozen)).map_err(Error::Scoring)?;
    errln!("{} texts embedded: {} batches from the cache, {} embedded now", texts.len(), embedded.cached, embedded.fresh);
    Ok((read, Some(embedded.vectors), Some(client.fingerprint())))
}

fn matching_evaluate(args: &MatchingEvaluateArgs) -> Result<Exit, Error> {
    use runner::analysis::matching::matcher::SimilarityMeasure;
    use runner::analysis::spec::OracleRule;
    let (files, vectors, _) = read_judgements(&args.files, &args.embedder)?;
    let mut rule = match (&args.calibration, vectors.is_some()) {
        (Some(path), _) => {
            let c = runner::analysis::matching::calibration::read_rule(path).map_err(|e| Error::Scoring(format!("`{}`: {e}", path.display())))?;
            OracleRule {
                similarity: c.similarity,
                measure: c.measure,
                embedding_similarity: c.embedding_similarity,
                calibrated: c.calibrated,
                ..OracleRule::default()
            }
        }
        (None, true) => OracleRule::default_with_embeddings(),
        (None, false) => OracleRule::default(),
    };
    if rule.embedding_similarity.is_some() && vectors.is_none() {
        return Err(Error::Scoring("the rule uses embeddings: set an embedder (`--embedder-url` or RUNNER_EMBED_URL) or choose a lexical rule".into()));
    }
    if let Some(m) = &args.measure {
        let measure = SimilarityMeasure::parse(m).unwrap_or(SimilarityMeasure::Tokens);
        if measure != rule.measure {
            rule.measure = measure;
            rule.calibrated = None;
        }
    }
    if let Some(t) = args.threshold {
        rule.similarity = t;
        rule.calibrated = None;
    }
    if let Some(t) = args.embedding_threshold {
        rule.embedding_similarity = Some(t);
        rule.calibrated = None;
    }
    let report = runner::report::matching::evaluate(&files, &rule, vectors.as_ref());
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report).map_err(|e| Error::Scoring(e.to_string()))?);
    } else {
        out!("{}", report.to_text());
    }
    Ok(Exit::Ok)
}

fn matching_calibrate(args: &MatchingCalibrateArgs) -> Result<Exit, Error> {
    use runner::analysis::matching::matcher::SimilarityMeasure;
    let (files, vectors, fingerprint) = read_judgements(&args.files, &args.embedder)?;
    let measure = SimilarityMeasure::parse(&args.measure).unwrap_or(SimilarityMeasure::Tokens);
    use runner::analysis::matching::calibration::{calibrate, FoldBy};
    let by = if args.folds == "project" { FoldBy::Project } else { FoldBy::PullRequest };
    let calibration = calibrate(&files, measure, vectors.as_ref(), fingerprint, by).map_err(Error::Scoring)?;
    let text = serde_json::to_string_pretty(&calibration).map_err(|e| Error::Scoring(e.to_string()))? + "\n";
    let inputs: Vec<&Path> = args.files.iter().map(PathBuf::as_path).collect();
    write_output(&args.out, &text, &inputs, "a matching calibration", &is_json_object, true)?;
    let rule = &calibration.rule;
    let embedding = rule.embedding_similarity.map(|e| format!(" or embedding cosine ≥ {e:.2}")).unwrap_or_default();
    errln!(
        "chose {} ≥ {:.2}{embedding}: κ {:.3} cross-validated by {} (lowest judge {:.3}), {} cells of {} judges; wrote {}",
        rule.measure.describe(),
        rule.similarity,
        calibration.calibrated.kappa,
        args.folds,
        calibration.calibrated.kappa_min,
        calibration.calibrated.cells,
        calibration.calibrated.judges,
        args.out.display()
    );
    Ok(Exit::Ok)
}

fn adjudicate_export(args: &AdjudicateExportArgs) -> Result<Exit, Error> {
    let prepared = experiment::prepare(&args.manifest, &locations(&args.locations))?;
    // `--fill matcher`: the rule oracle analyses use by default (its thresholds calibrated
    // against judges, docs/matching.md).
    let fill = args.fill.is_some().then(runner::analysis::spec::OracleRule::default);
    let exported = runner::study::adjudication::export(
        &runner::experiment::sheet_source(&prepared),
        &args.manifest.display().to_string(),
        &args.out,
        args.seed,
        fill.as_ref(),
    )?;
    outln!(
        "{} rows from {} findings of {} cached runs{}",
        exported.rows,
        exported.findings,
        exported.runs_submitted,
        if exported.runs_missing > 0 {
            format!(" ({} planned runs are not in the cache and will count as misses)", exported.runs_missing)
        } else {
            String::new()
        }
    );
    for file in &exported.files {
        outln!("wrote {}", file.display());
    }
    if fill.is_some() {
        outln!("runner's automatic matcher filled `disposition` and `oracle_id`: importing it gives a machine adjudication, labelled as such");
    } else {
        outln!("fill `disposition` and `oracle_id` in the sheet (see README.md); keep key.json from the adjudicator");
    }
    Ok(Exit::Ok)
}

fn adjudicate_import(args: &AdjudicateImportArgs) -> Result<Exit, Error> {
    use runner::study::adjudication;
    let imported = adjudication::import(&args.sheet, &args.key, args.oracle.as_deref())?;
    let written = adjudication::write_imported(&imported, &args.out)?;
    let runs: usize = imported.captured.strategies.iter().map(|s| s.runs.len()).sum();
    outln!(
        "{} rows → {} strategies × {} cases × {} trials ({} runs submitted)",
        imported.rows,
        imported.captured.strategies.len(),
        imported.captured.plan.case_ids.len(),
        imported.captured.plan.trial_ids.len(),
        runs
    );
    for file in &written {
        outln!("wrote {}", file.display());
    }
    outln!("score it: runner score {} --oracle {}", args.out.display(), imported.oracle.display());
    Ok(Exit::Ok)
}

fn study_export(args: &StudyExportArgs) -> Result<Exit, Error> {
    // Only the plan and the cache are read: no scoring client is built, no analyzer looked up.
    let prepared = experiment::prepare_to_read(&args.manifest, &locations(&args.locations))?;
    let source = runner::experiment::sheet_source(&prepared);
    let label = args.manifest.display().to_string();
    if args.axis.is_some() && args.study != runner::study::findings::Study::H4 {
        let problems = vec!["`--axis` is for `--study h4` only (the tools it compares)".to_string()];
        return Err(runner::study::adjudication::AdjudicationError::Invalid { path: args.manifest.clone(), problems }.into());
    }
    let exported = if args.study == runner::study::findings::Study::H4 {
        let overlap = prepared.manifest.analyses.iter().find(|a| a.kind == runner::analysis::spec::AnalysisKind::OVERLAP);
        let Some(axis) = args.axis.clone().or_else(|| overlap.and_then(|a| a.axis.clone())) else {
            let problems = vec!["h4 compares the values of one axis: give `--axis NAME`, or declare an `overlap` analysis with `axis`".to_string()];
            return Err(runner::study::adjudication::AdjudicationError::Invalid { path: args.manifest.clone(), problems }.into());
        };
        if !prepared.plan.axis_order.contains(&axis) {
            let problems = vec![format!("`{axis}` is not an axis of the matrix ({})", prepared.plan.axis_order.join(", "))];
            return Err(runner::study::adjudication::AdjudicationError::Invalid { path: args.manifest.clone(), problems }.into());
        }
        let rule = overlap.map(|a| a.matching).unwrap_or_default();
        runner::study::findings::export_unique(&source, &axis, &prepared.plan.axis_order, &rule, &label, &args.out, args.seed, args.sample)?
    } else {
        runner::study::findings::export(&source, args.study, &label, &args.out, args.seed, args.sample)?
    };
    outln!("{} rows sampled from {} eligible findings", exported.rows, exported.eligible);
    for file in &exported.files {
        outln!("wrote {}", file.display());
    }
    outln!("fill the label columns and `rater` (see README.md); keep key.json from the rater");
    Ok(Exit::Ok)
}

fn study_import(args: &StudyImportArgs) -> Result<Exit, Error> {
    let result = runner::study::findings::import_sheets(&args.sheets, &args.key)?;
    let written = runner::study::findings::write_result(&result, &args.out)?;
    out!("{}", result.to_markdown());
    for file in &written {
        errln!("wrote {}", file.display());
    }
    Ok(Exit::Ok)
}

fn study_audit(args: &StudyAuditArgs) -> Result<Exit, Error> {
    use runner::study::{adjudication::AdjudicationError, audit};
    if !(0.0..=1.0).contains(&args.similarity) {
        return Err(AdjudicationError::Invalid { path: args.key.clone(), problems: vec![format!("--similarity {} is not in 0..1", args.similarity)] }.into());
    }
    let (patterns, audited) = audit::audit(&args.sheets, &args.key, args.similarity)?;
    let text = audit::to_csv(&patterns).map_err(|e| AdjudicationError::Parse { path: args.out.clone(), message: e.to_string() })?;
    let inputs: Vec<&Path> = args.sheets.iter().map(PathBuf::as_path).chain([args.key.as_path()]).collect();
    write_output(&args.out, &text, &inputs, "a pattern list", &|_: &[u8]| true, true)?;
    outln!("{audited} findings labelled false_positive or wrong_suggestion, in {} candidate patterns", patterns.len());
    outln!("wrote {}", args.out.display());
    Ok(Exit::Ok)
}

fn study_preference(args: &StudyPreferenceArgs) -> Result<Exit, Error> {
    use runner::study::{adjudication::AdjudicationError, preference};
    let read = |p: &Path| runner::bounded::input(p).map_err(|source| AdjudicationError::Read { path: p.to_path_buf(), source });
    let (log, survey) = (read(&args.sessions)?, read(&args.survey)?);
    let result = preference::study(&args.sessions.display().to_string(), &log, &args.survey.display().to_string(), &survey, args.resamples, args.seed)
        .map_err(|problems| AdjudicationError::Invalid { path: args.sessions.clone(), problems })?;
    std::fs::create_dir_all(&args.out).map_err(|source| AdjudicationError::Write { path: args.out.clone(), source })?;
    let (json, md) = (args.out.join("result.json"), args.out.join("result.md"));
    let text = serde_json::to_string_pretty(&result).map_err(|e| AdjudicationError::Parse { path: json.clone(), message: e.to_string() })?;
    let inputs = [args.sessions.as_path(), args.survey.as_path()];
    write_output(&json, &(text + "\n"), &inputs, "a study result", &is_json_object, true)?;
    write_output(&md, &result.to_markdown(), &inputs, "a study result", &|_: &[u8]| true, true)?;
    out!("{}", result.to_markdown());
    errln!("wrote {}\nwrote {}", json.display(), md.display());
    Ok(Exit::Ok)
}

/// results.json given as itself or as its directory.
fn results_file(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.join("results.json")
    } else {
        path.to_path_buf()
    }
}

/// `runner show`: what the selected runs' reviewers said, from the cache.
fn show(args: &ShowArgs) -> Result<Exit, Error> {
    use runner::report::show::{self, Selection, ShowError};
    let target = &args.target;
    let is_manifest = target.extension().is_some_and(|e| e == "toml");
    let is_results = !is_manifest && (target.is_dir() || target.extension().is_some_and(|e| e == "json"));
    let shown = if is_manifest || is_results {
        let manifest = if is_manifest {
            target.clone()
        } else {
            let path = results_file(target);
            let results = runner::report::model::Results::read(&path)?;
            runner::report::html::manifest_of(&path, &results).map_err(|why| ShowError::Manifest { results: path.display().to_string(), why })?
        };
        let prepared = experiment::prepare_to_read(&manifest, &locations(&args.locations))?;
        let selection = Selection { cell: args.cell.clone(), subject: args.subject.clone(), repeat: args.repeat, key: args.key.clone() };
        experiment::show(&prepared, &selection)?
    } else {
        let store = runner::cache::CacheStore::new(args.locations.cache_dir.clone().unwrap_or_else(|| PathBuf::from("cache")));
        show::collect_run(&store, &target.display().to_string())?
    };
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&shown).unwrap_or_default());
    } else {
        out!("{}", show::render_text(&shown));
    }
    Ok(Exit::Ok)
}

/// `runner report`: the self-contained HTML page.
fn report(args: &ReportArgs) -> Result<Exit, Error> {
    let places = locations(&args.locations);
    let first = results_file(&args.results);
    let mut sides = vec![experiment::report_side(&first, args.manifest.as_deref(), &places)?];
    if let Some(other) = &args.against {
        sides.push(experiment::report_side(&results_file(other), None, &places)?);
    }
    let page = runner::report::html::render(&sides)?;
    let out = args.output.clone().unwrap_or_else(|| first.parent().unwrap_or(Path::new(".")).join("report.html"));
    let mut inputs: Vec<PathBuf> = vec![first.clone()];
    inputs.extend(args.against.as_deref().map(results_file));
    let inputs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    write_output(&out, &page, &inputs, "a report page", &runner::report::outputs::is_generated_page, args.force)?;
    runner::report::outputs::record_also(&out)?;
    for side in &sides {
        for note in side.findings.as_ref().err().into_iter().chain(side.note.as_ref()) {
            errln!("{}: {note}", side.results_path);
        }
    }
    errln!("wrote {} ({} bytes)", out.display(), page.len());
    // A page without what reviewers said, or without a single diff, is not what was asked for.
    let partial: Vec<&runner::report::html::Side> =
        sides.iter().filter(|s| s.findings.is_err() || s.diffs.is_empty() || s.diffs.values().all(Result::is_err)).collect();
    if !partial.is_empty() && !args.partial {
        for side in partial {
            let what = if side.findings.is_err() { "no findings and no diffs" } else { "no diffs" };
            errln!("error: {}: the page shows {what}; pass --partial to accept such a page", side.results_path);
        }
        return Ok(Exit::Error);
    }
    Ok(Exit::Ok)
}

/// `runner diff`: the keep rule as a CI gate.
fn diff(args: DiffArgs) -> Result<Exit, Error> {
    use runner::report::diff;
    let results_file = |p: &Path| if p.is_dir() { p.join("results.json") } else { p.to_path_buf() };
    let a_path = results_file(&args.a);
    let b_path = args.b.as_deref().map(results_file).unwrap_or_else(|| a_path.clone());
    if let Some(metric) = &args.metric {
        return diff_metric(&args, metric, &a_path, &b_path);
    }
    let a = diff::load_side(&a_path)?;
    let b = if b_path == a_path { a.clone() } else { diff::load_side(&b_path)? };
    let report = diff::compare(&a, &b, args.cell_a.as_deref(), args.cell_b.as_deref())?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report).unwrap_or_default());
    } else {
        out!("{}", diff::render_text(&report));
    }
    if let Some(path) = &args.junit {
        write_output(path, &runner::report::ci::junit_keep(&report), &[a_path.as_path(), b_path.as_path()], "a JUnit report", &is_junit, args.force)?;
    }
    Ok(if report.kept { Exit::Ok } else { Exit::Gate })
}

/// `runner diff --metric`: the statistical gate.
fn diff_metric(args: &DiffArgs, metric: &str, a_path: &Path, b_path: &Path) -> Result<Exit, Error> {
    use runner::analysis::spec::CompareMetric;
    use runner::report::gate;
    let metric = CompareMetric::parse(metric).ok_or_else(|| Error::InvalidFlag {
        flag: "--metric".into(),
        value: metric.to_string(),
        expected: "recall, recall-with-partials, precision, f1, noise, findings or jaccard",
    })?;
    let interval = match args.interval.as_str() {
        "bca" => runner::stats::IntervalMethod::Bca,
        "percentile" => runner::stats::IntervalMethod::Percentile,
        other => return Err(Error::InvalidFlag { flag: "--interval".into(), value: other.to_string(), expected: "`bca` or `percentile`" }),
    };
    if !(args.alpha > 0.0 && args.alpha < 1.0) {
        return Err(Error::InvalidFlag { flag: "--alpha".into(), value: args.alpha.to_string(), expected: "between 0 and 1" });
    }
    let a = gate::load_metric(a_path, metric)?;
    let b = if b_path == a_path { a.clone() } else { gate::load_metric(b_path, metric)? };
    let options = gate::GateOptions {
        metric,
        min_effect: args.min_effect,
        alpha: args.alpha,
        require_better: args.require_better,
        resamples: args.resamples.max(1),
        seed: args.seed,
        interval,
    };
    let report = gate::gate(&a, &b, args.cell_a.as_deref(), args.cell_b.as_deref(), &options)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report).unwrap_or_default());
    } else {
        out!("{}", gate::render_text(&report));
    }
    if let Some(path) = &args.junit {
        write_output(path, &runner::report::ci::junit_gate(&report), &[a_path, b_path], "a JUnit report", &is_junit, args.force)?;
    }
    Ok(if report.passed { Exit::Ok } else { Exit::Gate })
}

/// Writes a file the user named, creating its directory: never through a link, over one of
/// `inputs`, or over a file that is not `what` this command writes unless `force`.
fn write_output(path: &Path, text: &str, inputs: &[&Path], what: &'static str, replaceable: &dyn Fn(&[u8]) -> bool, force: bool) -> Result<(), Error> {
    let replace = runner::output_file::Replace { what, replaceable, force };
    Ok(runner::output_file::write(path, text.as_bytes(), inputs, &replace)?)
}

/// A JSON object: what the oracle, patch and record writers write.
fn is_json_object(bytes: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(bytes).is_ok_and(|v| v.is_object())
}

/// A JUnit report runner wrote.
fn is_junit(bytes: &[u8]) -> bool {
    bytes.starts_with(b"<?xml") && bytes.windows(11).any(|w| w == b"<testsuites")
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
        let prepared = experiment::prepare_to_read(manifest, &self::locations(locations))?;
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

fn cache(command: CacheCommand, locations: &LocationArgs) -> Result<Exit, Error> {
    let store = runner::cache::CacheStore::new(locations.cache_dir.clone().unwrap_or_else(|| PathBuf::from("cache")));
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
