//! Runs a case's ground-truth program against one version of its source, in a fresh
//! temporary directory and with CPU-time and output bounds, and classifies how it ended.
//!
//! The layout is the one `corpus/quickstart/README.md` documents: the source at its
//! `source.path` inside the working directory, the program beside it as
//! `__ground_truth__.{mjs,py,rs}`. What a program gets and what bounds it:
//!
//! - its own session (`setsid`), whose processes are all killed when the step ends, as
//!   are processes that left the session but still carry the run's marker variable;
//! - a cleared environment: `PATH`, a `HOME` and `TMPDIR` of its own inside the temporary
//!   directory (removed afterwards), `LANG` and the interpreter switches set below;
//! - `RLIMIT_CPU` (the time bound is CPU time, so a busy machine never turns a fast program
//!   into a timeout), `RLIMIT_FSIZE` ([`MAX_FILE_BYTES`] per file written) and no core
//!   files; a generous wall-clock backstop for programs that sleep or wait, and a run that
//!   reaches it is run once more, alone, before it is rejected;
//! - stdout and stderr read through pipes as they are written: the last [`KEEP`] bytes of
//!   each are kept for the diagnostic, the rest is counted and dropped.
//!
//! It runs as the same user as runner, so it can still read (and write) whatever that user
//! may: the README says so.

use super::oracle::Interpreter;
use crate::sandbox::{kill_run, limit, reap, wait_until_ended, MARKER_VAR};
use serde::Serialize;
use std::fmt;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

/// Bounds for one program run.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// CPU time of each run of a program (and each import check), rounded up to whole
    /// seconds: seed 002 uses three seconds.
    pub run: Duration,
    /// CPU time of each compile step (Rust), rounded up to whole seconds.
    pub compile: Duration,
    /// Wall-clock backstop of a run or import check, for programs that sleep or wait.
    pub wall: Duration,
    /// Wall-clock backstop of a compile step.
    pub compile_wall: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self { run: Duration::from_secs(3), compile: Duration::from_secs(60), wall: Duration::from_secs(60), compile_wall: Duration::from_secs(600) }
    }
}

/// How a run ended, as far as the corpus rules care.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum Verdict {
    /// Exit status 0.
    Pass,
    /// The program failed with an assertion failure of its interpreter.
    AssertionFailure,
    /// Anything else: a syntax or compile error, another exception, a signal, a timeout, a
    /// spawn error. The text says which.
    Rejected(String),
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Pass => f.write_str("passed"),
            Verdict::AssertionFailure => f.write_str("failed with an assertion failure"),
            Verdict::Rejected(why) => f.write_str(why),
        }
    }
}

/// What a child printed, kept for the diagnostic (each stream's tail, bounded).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct ChildOutput {
    /// The step that produced it: `import check`, `compile`, `run`.
    pub step: String,
    pub command: String,
    /// `exit code 1`, `signal 9`, `used more than 3 s of CPU time`, …
    pub status: String,
    pub stdout: String,
    pub stderr: String,
}

/// One program run against one source version.
#[derive(Debug, Clone, Serialize)]
pub struct ProgramRun {
    pub verdict: Verdict,
    /// The output of the step that decided the verdict.
    pub output: ChildOutput,
    pub elapsed_ms: u64,
}

/// Bytes kept per stream (its tail); the rest is read and dropped.
pub const KEEP: usize = 64 * 1024;

/// The largest file a program may write (`RLIMIT_FSIZE`): a longer write fails.
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Runs hold it shared; a run retried after the wall-clock backstop holds it alone.
static ALONE: RwLock<()> = RwLock::new(());

/// Runs `program` against a source file at `source_path` holding `source_text`.
pub fn run(interpreter: Interpreter, source_path: &str, source_text: &str, program: &str, limits: Limits) -> ProgramRun {
    let started = Instant::now();
    let attempt = || match prepare_and_run(interpreter, source_path, source_text, program, limits) {
        Ok(v) => v,
        Err(message) => (Verdict::Rejected(message), ChildOutput::default(), false),
    };
    let first = {
        let _shared = ALONE.read().unwrap_or_else(|e| e.into_inner());
        attempt()
    };
    let (verdict, output) = match first {
        // The backstop is wall time, which a busy machine stretches: once more, alone.
        (_, _, true) => {
            let _alone = ALONE.write().unwrap_or_else(|e| e.into_inner());
            match attempt() {
                (Verdict::Rejected(why), output, true) => (Verdict::Rejected(format!("{why}, also when run again alone")), output),
                (verdict, output, _) => (verdict, output),
            }
        }
        (verdict, output, false) => (verdict, output),
    };
    ProgramRun { verdict, output, elapsed_ms: started.elapsed().as_millis() as u64 }
}

/// One attempt: the verdict, the deciding step's output, and whether the wall-clock
/// backstop ended it.
fn prepare_and_run(
    interpreter: Interpreter,
    source_path: &str,
    source_text: &str,
    program: &str,
    limits: Limits,
) -> Result<(Verdict, ChildOutput, bool), String> {
    let temp = tempfile::Builder::new().prefix("runner-ground-truth-").tempdir().map_err(|e| format!("cannot create a temporary directory: {e}"))?;
    let work = temp.path().join("work");
    let sandbox = Sandbox::new(temp.path())?;
    let source = work.join(source_path);
    if let Some(parent) = source.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("cannot create `{}`: {e}", parent.display()))?;
    }
    std::fs::write(&source, source_text).map_err(|e| format!("cannot write `{source_path}`: {e}"))?;
    let run_bounds = Bounds { cpu: limits.run, wall: limits.wall };
    let decided = |status: &Status, output: ChildOutput| {
        let wall = matches!(status, Status::TimedOut { .. });
        (classify(interpreter, status, &output.stderr), output, wall)
    };

    match interpreter {
        Interpreter::Node => {
            let node = resolved(Interpreter::Node);
            // Seed 002 imports each source version before it runs the program.
            let specifier = serde_json::to_string(&format!("./{source_path}")).unwrap_or_default();
            let check = Child::new("import check", node, &["--input-type=module", "-e", &format!("await import({specifier});")]);
            let (status, output) = check.run(&work, &sandbox, run_bounds);
            if status != Status::Exited(0) {
                let wall = matches!(status, Status::TimedOut { .. });
                return Ok((reject_step(&status, "the source does not import"), output, wall));
            }
            write(&work, "__ground_truth__.mjs", program)?;
            let (status, output) = Child::new("run", node, &["__ground_truth__.mjs"]).run(&work, &sandbox, run_bounds);
            Ok(decided(&status, output))
        }
        Interpreter::Python3 => {
            let python = resolved(Interpreter::Python3);
            let check = Child::new(
                "import check",
                python,
                &["-c", "import sys; compile(open(sys.argv[1], encoding='utf-8').read(), sys.argv[1], 'exec')", source_path],
            );
            let (status, output) = check.run(&work, &sandbox, run_bounds);
            if status != Status::Exited(0) {
                let wall = matches!(status, Status::TimedOut { .. });
                return Ok((reject_step(&status, "the source does not compile"), output, wall));
            }
            write(&work, "__ground_truth__.py", program)?;
            let (status, output) = Child::new("run", python, &["__ground_truth__.py"]).run(&work, &sandbox, run_bounds);
            Ok(decided(&status, output))
        }
        Interpreter::Rust => {
            write(&work, "__ground_truth__.rs", program)?;
            let compile = Child::new("compile", resolved(Interpreter::Rust), &["--edition", "2021", "-O", "-o", "__ground_truth__", "__ground_truth__.rs"]);
            let (status, output) = compile.run(&work, &sandbox, Bounds { cpu: limits.compile, wall: limits.compile_wall });
            if status != Status::Exited(0) {
                let wall = matches!(status, Status::TimedOut { .. });
                return Ok((reject_step(&status, "the program does not compile"), output, wall));
            }
            let binary = work.join("__ground_truth__");
            let binary = binary.to_string_lossy();
            let (status, output) = Child::new("run", &binary, &[]).run(&work, &sandbox, run_bounds);
            Ok(decided(&status, output))
        }
    }
}

fn write(dir: &Path, name: &str, text: &str) -> Result<(), String> {
    std::fs::write(dir.join(name), text).map_err(|e| format!("cannot write `{name}`: {e}"))
}

fn reject_step(status: &Status, what: &str) -> Verdict {
    match status {
        Status::SpawnFailed(_) => Verdict::Rejected(status.to_string()),
        _ => Verdict::Rejected(format!("{what} ({status})")),
    }
}

/// The interpreter's own executable, resolved once in runner's environment: a child runs
/// with a cleared environment and a `HOME` of its own, where version-manager shims
/// (rustup, pyenv) could not find their toolchain. Falls back to the plain name.
fn resolved(interpreter: Interpreter) -> &'static str {
    static NODE: OnceLock<String> = OnceLock::new();
    static PYTHON: OnceLock<String> = OnceLock::new();
    static RUSTC: OnceLock<String> = OnceLock::new();
    let ask = |program: &str, args: &[&str]| -> Option<String> {
        let out = Command::new(program).args(args).stdin(Stdio::null()).stderr(Stdio::null()).output().ok()?;
        let text = String::from_utf8(out.stdout).ok()?;
        let text = text.trim();
        (out.status.success() && !text.is_empty()).then(|| text.to_string())
    };
    let exists = |p: String| Path::new(&p).is_file().then_some(p);
    match interpreter {
        Interpreter::Node => NODE.get_or_init(|| ask("node", &["-p", "process.execPath"]).and_then(exists).unwrap_or_else(|| "node".into())),
        Interpreter::Python3 => {
            PYTHON.get_or_init(|| ask("python3", &["-c", "import sys; print(sys.executable)"]).and_then(exists).unwrap_or_else(|| "python3".into()))
        }
        Interpreter::Rust => RUSTC.get_or_init(|| {
            ask("rustc", &["--print", "sysroot"])
                .map(|root| Path::new(&root).join("bin/rustc").to_string_lossy().into_owned())
                .and_then(exists)
                .unwrap_or_else(|| "rustc".into())
        }),
    }
}

/// The per-run environment: its marker, `HOME` and `TMPDIR`.
struct Sandbox {
    marker: String,
    env: Vec<(String, String)>,
}

impl Sandbox {
    fn new(temp: &Path) -> Result<Self, String> {
        static RUNS: AtomicU64 = AtomicU64::new(0);
        let home = temp.join("home");
        let tmp = temp.join("tmp");
        for dir in [&home, &tmp] {
            std::fs::create_dir_all(dir).map_err(|e| format!("cannot create `{}`: {e}", dir.display()))?;
        }
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        let marker = format!("{}-{}-{nanos}", std::process::id(), RUNS.fetch_add(1, Ordering::Relaxed));
        let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into());
        let (home, tmp) = (home.to_string_lossy().into_owned(), tmp.to_string_lossy().into_owned());
        let env = [
            ("PATH", path.as_str()),
            ("HOME", &home),
            ("TMPDIR", &tmp),
            ("TMP", &tmp),
            ("TEMP", &tmp),
            ("LANG", "C.UTF-8"),
            (MARKER_VAR, &marker),
            // Output the same wherever runner runs.
            ("PYTHONDONTWRITEBYTECODE", "1"),
            ("PYTHONHASHSEED", "0"),
            ("NO_COLOR", "1"),
            ("NODE_DISABLE_COLORS", "1"),
            ("RUST_BACKTRACE", "0"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        Ok(Self { marker, env })
    }
}

/// The bounds of one step.
#[derive(Debug, Clone, Copy)]
struct Bounds {
    cpu: Duration,
    wall: Duration,
}

/// CPU seconds as `RLIMIT_CPU` counts them: whole seconds, at least one.
fn cpu_seconds(d: Duration) -> u64 {
    (d.as_secs_f64().ceil() as u64).max(1)
}

/// How a child ended.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Status {
    Exited(i32),
    Signal(i32),
    /// Killed by `RLIMIT_CPU`.
    CpuLimit(u64),
    /// Killed by `RLIMIT_FSIZE`.
    FileTooLarge,
    /// Stopped by the wall-clock backstop, having used this much CPU time.
    TimedOut {
        wall: Duration,
        cpu: Duration,
    },
    SpawnFailed(String),
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Status::Exited(code) => write!(f, "exit code {code}"),
            Status::Signal(sig) => write!(f, "killed by signal {sig}"),
            Status::CpuLimit(secs) => write!(f, "used more than {secs} s of CPU time"),
            Status::FileTooLarge => write!(f, "tried to write a file over the {} MiB limit", MAX_FILE_BYTES / (1024 * 1024)),
            Status::TimedOut { wall, cpu } => {
                write!(f, "timed out after {} s of wall-clock time, using {} s of CPU time", fmt_secs(*wall), fmt_secs(*cpu))
            }
            Status::SpawnFailed(e) => write!(f, "could not start: {e}"),
        }
    }
}

fn fmt_secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0}")
    } else {
        format!("{s:.1}")
    }
}

/// Decides whether a finished run passed, failed an assertion, or is a rejection.
fn classify(interpreter: Interpreter, status: &Status, stderr: &str) -> Verdict {
    let code = match status {
        Status::Exited(0) => return Verdict::Pass,
        Status::Exited(code) => *code,
        other => return Verdict::Rejected(other.to_string()),
    };
    let assertion = match interpreter {
        Interpreter::Node => stderr.lines().any(|l| l.starts_with("AssertionError")) || stderr.contains("ERR_ASSERTION"),
        Interpreter::Python3 => code == 1 && python_exception(stderr).is_some_and(|e| e.starts_with("AssertionError")),
        Interpreter::Rust => code == 101 && stderr.contains("assertion"),
    };
    if assertion {
        return Verdict::AssertionFailure;
    }
    let what = match interpreter {
        Interpreter::Python3 => python_exception(stderr).map(|e| format!(": {}", first_words(e))),
        Interpreter::Node => node_error(stderr).map(|e| format!(": {}", first_words(e))),
        Interpreter::Rust => stderr.lines().find(|l| l.contains("panicked")).map(|l| format!(": {}", first_words(l))),
    }
    .unwrap_or_default();
    Verdict::Rejected(format!("exit code {code} without an assertion failure{what}"))
}

/// The line naming the uncaught exception in a Python traceback: after the last
/// `Traceback` header, the first line that is not indented.
fn python_exception(stderr: &str) -> Option<&str> {
    let lines: Vec<&str> = stderr.lines().collect();
    let start = lines.iter().rposition(|l| l.starts_with("Traceback (most recent call last)"))?;
    lines[start + 1..].iter().find(|l| !l.is_empty() && !l.starts_with(' ')).copied()
}

/// The line naming the error in node's uncaught-exception report (`TypeError: …`).
fn node_error(stderr: &str) -> Option<&str> {
    stderr.lines().find(|l| {
        let name = l.split(':').next().unwrap_or_default();
        !name.is_empty() && !name.contains(' ') && (name.ends_with("Error") || name.ends_with("Exception"))
    })
}

fn first_words(line: &str) -> String {
    let line = line.trim();
    if line.chars().count() > 120 {
        format!("{}…", line.chars().take(120).collect::<String>())
    } else {
        line.to_string()
    }
}

struct Child {
    step: &'static str,
    program: String,
    args: Vec<String>,
}

/// A stream's tail and its length so far.
#[derive(Default)]
struct Tail {
    kept: Vec<u8>,
    total: u64,
}

impl Tail {
    fn push(&mut self, bytes: &[u8]) {
        self.kept.extend_from_slice(bytes);
        self.total += bytes.len() as u64;
        if self.kept.len() > 2 * KEEP {
            let cut = self.kept.len() - KEEP;
            self.kept.drain(..cut);
        }
    }

    /// The last `KEEP` bytes, on a character boundary, marked when cut.
    fn text(&self) -> String {
        let start = self.kept.len().saturating_sub(KEEP);
        let text = String::from_utf8_lossy(&self.kept[start..]);
        let dropped = self.total - (self.kept.len() - start) as u64;
        if dropped == 0 {
            return text.into_owned();
        }
        // Skip a character cut in half at the start.
        let text = text.trim_start_matches('\u{FFFD}');
        format!("[… {dropped} bytes cut …]\n{text}")
    }
}

/// Reads `stream` to its end into a shared tail, in a thread of its own.
fn drain(mut stream: impl Read + Send + 'static) -> (Arc<Mutex<Tail>>, std::sync::mpsc::Receiver<()>) {
    let tail = Arc::new(Mutex::new(Tail::default()));
    let (done, finished) = std::sync::mpsc::channel();
    let shared = Arc::clone(&tail);
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match stream.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if let Ok(mut t) = shared.lock() {
                        t.push(&buf[..n]);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        let _ = done.send(());
    });
    (tail, finished)
}

impl Child {
    fn new(step: &'static str, program: &str, args: &[&str]) -> Self {
        Self { step, program: program.to_string(), args: args.iter().map(|a| a.to_string()).collect() }
    }

    fn command_line(&self) -> String {
        std::iter::once(self.program.as_str())
            .chain(self.args.iter().map(String::as_str))
            .map(|a| if a.contains([' ', '\'', '"', '(', ';']) { format!("'{a}'") } else { a.to_string() })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Runs the child in `cwd` in a session of its own, within `bounds`.
    fn run(&self, cwd: &Path, sandbox: &Sandbox, bounds: Bounds) -> (Status, ChildOutput) {
        let (status, stdout, stderr) = self.spawn_and_wait(cwd, sandbox, bounds);
        let output = ChildOutput { step: self.step.to_string(), command: self.command_line(), status: status.to_string(), stdout, stderr };
        (status, output)
    }

    fn spawn_and_wait(&self, cwd: &Path, sandbox: &Sandbox, bounds: Bounds) -> (Status, String, String) {
        use std::os::unix::process::CommandExt;
        let cpu = cpu_seconds(bounds.cpu);
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env_clear()
            .envs(sandbox.env.iter().map(|(k, v)| (k, v)));
        // SAFETY: the closure runs in the forked child before exec and only makes
        // async-signal-safe system calls (setsid, getrlimit, setrlimit); it allocates nothing.
        unsafe {
            command.pre_exec(move || {
                if libc::setsid() == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                // The soft CPU limit sends SIGXCPU, the hard one (a second later) SIGKILL.
                limit(libc::RLIMIT_CPU, cpu, cpu + 1)?;
                limit(libc::RLIMIT_FSIZE, MAX_FILE_BYTES, MAX_FILE_BYTES)?;
                limit(libc::RLIMIT_CORE, 0, 0)?;
                Ok(())
            });
        }
        let mut child = match command.spawn() {
            Ok(c) => c,
            Err(e) => return (Status::SpawnFailed(format!("`{}`: {e}", self.program)), String::new(), String::new()),
        };
        let pid = child.id() as libc::pid_t;
        let streams = [child.stdout.take().map(drain), child.stderr.take().map(drain)];
        // Output may still be flooding: the backstop holds all the same.
        let timed_out = wait_until_ended(pid, Instant::now() + bounds.wall);
        // Whatever the program left behind goes too: its session and its marked strays. The
        // child is not reaped yet, so its pid (the session's id) cannot have been reused.
        kill_run(pid, &sandbox.marker);
        let ended = reap(pid);
        drop(child);
        let [stdout, stderr] = streams.map(|s| match s {
            Some((tail, finished)) => {
                // Every writer is gone, so the pipe ends at once; a stray that escaped both
                // the session and the marker may hold it open: keep what came.
                let _ = finished.recv_timeout(Duration::from_secs(5));
                tail.lock().map(|t| t.text()).unwrap_or_default()
            }
            None => String::new(),
        });
        let status = match ended {
            Err(e) => Status::SpawnFailed(format!("cannot wait for `{}`: {e}", self.program)),
            Ok((_, cpu_used)) if timed_out => Status::TimedOut { wall: bounds.wall, cpu: cpu_used },
            Ok((status, cpu_used)) => {
                if libc::WIFEXITED(status) {
                    Status::Exited(libc::WEXITSTATUS(status))
                } else if libc::WIFSIGNALED(status) {
                    match libc::WTERMSIG(status) {
                        libc::SIGXCPU => Status::CpuLimit(cpu),
                        libc::SIGKILL if cpu_used >= Duration::from_secs(cpu) => Status::CpuLimit(cpu),
                        libc::SIGXFSZ => Status::FileTooLarge,
                        sig => Status::Signal(sig),
                    }
                } else {
                    Status::SpawnFailed("no exit status".into())
                }
            }
        };
        (status, stdout, stderr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn have(tool: &str) -> bool {
        Command::new(tool).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
    }

    /// A CPU bound of one second and a wall backstop no busy machine reaches first.
    fn cpu_bound() -> Limits {
        Limits { run: Duration::from_secs(1), compile: Duration::from_secs(60), wall: Duration::from_secs(600), compile_wall: Duration::from_secs(600) }
    }

    fn python(program: &str, limits: Limits) -> ProgramRun {
        run(Interpreter::Python3, "src/t.py", "X = 1\n", program, limits)
    }

    /// Whether process `pid` is gone (or only a zombie no one reaped).
    fn dead(pid: &str) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
        }
    }

    #[test]
    fn python_tracebacks_are_read_for_the_final_exception() {
        let tb =
            "Traceback (most recent call last):\n  File \"x.py\", line 3, in <module>\n    assert f() == 2\n           ^^^^^^^^\nAssertionError: two\nmore\n";
        assert_eq!(python_exception(tb), Some("AssertionError: two"));
        let chained = format!("{tb}\nDuring handling of the above exception, another exception occurred:\n\nTraceback (most recent call last):\n  File \"x.py\", line 5\nTypeError: bad\n");
        assert_eq!(python_exception(&chained), Some("TypeError: bad"));
        assert_eq!(classify(Interpreter::Python3, &Status::Exited(1), tb), Verdict::AssertionFailure);
        assert!(matches!(classify(Interpreter::Python3, &Status::Exited(1), &chained), Verdict::Rejected(m) if m.contains("TypeError")));
    }

    #[test]
    fn rust_needs_exit_101_and_an_assertion() {
        let panic = "thread 'main' panicked at x.rs:3:5:\nassertion `left == right` failed\n";
        assert_eq!(classify(Interpreter::Rust, &Status::Exited(101), panic), Verdict::AssertionFailure);
        let plain = "thread 'main' panicked at x.rs:3:5:\nindex out of bounds\n";
        assert!(matches!(classify(Interpreter::Rust, &Status::Exited(101), plain), Verdict::Rejected(_)));
        assert!(matches!(classify(Interpreter::Rust, &Status::Signal(9), panic), Verdict::Rejected(m) if m.contains("signal 9")));
    }

    #[test]
    fn tails_keep_the_end_and_count_the_rest() {
        let mut t = Tail::default();
        t.push(b"short");
        assert_eq!(t.text(), "short");
        for _ in 0..100 {
            t.push(&[b'a'; 4096]);
        }
        t.push("é-end".as_bytes());
        let text = t.text();
        assert!(text.starts_with(&format!("[… {} bytes cut …]\n", 5 + 409_600 + 6 - KEEP)), "{}", text.chars().take(40).collect::<String>());
        assert!(text.ends_with("é-end") && text.len() <= KEEP + 40);
    }

    #[test]
    fn node_assertions_syntax_errors_and_cpu_bound() {
        if !have("node") {
            return;
        }
        let src = "export const two = () => 2;\n";
        let limits = cpu_bound();
        let pass = "import assert from 'node:assert/strict';\nimport { two } from './src/t.mjs';\nassert.equal(two(), 2);\n";
        assert_eq!(run(Interpreter::Node, "src/t.mjs", src, pass, limits).verdict, Verdict::Pass);
        let fail = pass.replace("2);", "3);");
        assert_eq!(run(Interpreter::Node, "src/t.mjs", src, &fail, limits).verdict, Verdict::AssertionFailure);
        let thrown = "import { two } from './src/t.mjs';\nnull.x;\n";
        let r = run(Interpreter::Node, "src/t.mjs", src, thrown, limits);
        assert!(matches!(&r.verdict, Verdict::Rejected(m) if m.contains("TypeError")), "{:?}", r.verdict);
        assert!(r.output.stderr.contains("TypeError"));
        let broken = run(Interpreter::Node, "src/t.mjs", "export const = ;\n", pass, limits);
        assert!(matches!(&broken.verdict, Verdict::Rejected(m) if m.contains("does not import")), "{:?}", broken.verdict);
        assert!(broken.output.stderr.contains("SyntaxError"));
        // Stopped by CPU time, however busy the machine (the wall backstop is ten minutes).
        let spin = run(Interpreter::Node, "src/t.mjs", src, "while (true) {}\n", limits);
        assert_eq!(spin.verdict, Verdict::Rejected("used more than 1 s of CPU time".into()));
    }

    #[test]
    fn python_assertion_and_other_exceptions() {
        if !have("python3") {
            return;
        }
        let limits = Limits::default();
        let src = "def two():\n    return 2\n";
        let prog = "import sys\nsys.path.insert(0, 'src')\nimport t\nassert t.two() == 3, 'three'\n";
        assert_eq!(run(Interpreter::Python3, "src/t.py", src, prog, limits).verdict, Verdict::AssertionFailure);
        let other = "raise ValueError('x')\n";
        assert!(matches!(run(Interpreter::Python3, "src/t.py", src, other, limits).verdict, Verdict::Rejected(m) if m.contains("ValueError")));
        let syntax = run(Interpreter::Python3, "src/t.py", "def (:\n", prog, limits);
        assert!(matches!(&syntax.verdict, Verdict::Rejected(m) if m.contains("does not compile")), "{:?}", syntax.verdict);
    }

    #[test]
    fn cpu_time_bounds_a_spinning_program_and_its_forked_children() {
        if !have("python3") {
            return;
        }
        let spin = python("while True:\n    pass\n", cpu_bound());
        assert_eq!(spin.verdict, Verdict::Rejected("used more than 1 s of CPU time".into()));
        // A child that spins while the parent waits has the same bound.
        let forked = python("import os\nif os.fork() == 0:\n    while True:\n        pass\nos.wait()\nraise SystemExit(3)\n", cpu_bound());
        assert!(matches!(&forked.verdict, Verdict::Rejected(m) if m.contains("exit code 3")), "{:?}", forked.verdict);
    }

    #[test]
    fn the_wall_backstop_stops_a_sleeper_and_retries_it_alone() {
        if !have("python3") {
            return;
        }
        let limits = Limits { wall: Duration::from_millis(300), ..cpu_bound() };
        let r = python("import time\ntime.sleep(600)\n", limits);
        let Verdict::Rejected(why) = &r.verdict else { panic!("{:?}", r.verdict) };
        assert!(why.starts_with("timed out after 0.3 s of wall-clock time, using 0.") && why.ends_with("also when run again alone"), "{why}");
    }

    #[test]
    fn flooded_output_is_drained_and_only_its_tail_kept() {
        if !have("python3") {
            return;
        }
        // 128 MiB on stdout, then a last line: it passes and keeps only the tail.
        let r = python("import sys\nchunk = 'x' * 65536\nfor _ in range(2048):\n    sys.stdout.write(chunk)\nprint('the end')\n", Limits::default());
        assert_eq!(r.verdict, Verdict::Pass, "{:?}", r.output);
        assert!(
            r.output.stdout.starts_with(&format!("[… {} bytes cut …]", 128 * 1024 * 1024 + 8 - KEEP)),
            "{}",
            r.output.stdout.chars().take(40).collect::<String>()
        );
        assert!(r.output.stdout.ends_with("the end\n") && r.output.stdout.len() < KEEP + 40);
        // An endless flood on both streams ends at the CPU bound.
        let endless = python("import sys\nchunk = 'y' * 65536\nwhile True:\n    sys.stdout.write(chunk)\n    sys.stderr.write(chunk)\n", cpu_bound());
        assert_eq!(endless.verdict, Verdict::Rejected("used more than 1 s of CPU time".into()));
        assert!(endless.output.stdout.len() < KEEP + 40 && endless.output.stderr.len() < KEEP + 40);
    }

    #[test]
    fn double_forked_daemons_are_killed_whether_or_not_they_leave_the_session() {
        if !have("python3") {
            return;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let pids = dir.path().display().to_string();
        let program = format!(
            "import os, time\nPIDS = {pids:?}\ndef daemon(name, leave):\n    if os.fork() == 0:\n        if leave:\n            os.setsid()\n        if os.fork() == 0:\n            open(PIDS + '/' + name + '.tmp', 'w').write(str(os.getpid()))\n            os.rename(PIDS + '/' + name + '.tmp', PIDS + '/' + name)\n            time.sleep(600)\n        os._exit(0)\n    os.wait()\ndaemon('stays', False)\ndaemon('leaves', True)\nwhile not (os.path.exists(PIDS + '/stays') and os.path.exists(PIDS + '/leaves')):\n    time.sleep(0.01)\n"
        );
        let r = python(&program, cpu_bound());
        assert_eq!(r.verdict, Verdict::Pass, "{:?}", r.output);
        for name in ["stays", "leaves"] {
            let pid = std::fs::read_to_string(dir.path().join(name)).expect("the daemon wrote its pid");
            assert!(dead(&pid), "the {name} daemon ({pid}) is still running");
        }
    }

    #[test]
    fn each_run_has_its_own_home_tmpdir_and_a_cleared_environment() {
        if !have("python3") {
            return;
        }
        let program = "import json, os, tempfile\nopen(os.path.join(os.environ['HOME'], 'h'), 'w').write('x')\nprint(json.dumps({'env': dict(os.environ), 'cwd': os.getcwd(), 'tmp': tempfile.gettempdir()}))\n";
        let r = python(program, Limits::default());
        assert_eq!(r.verdict, Verdict::Pass, "{:?}", r.output);
        let seen: serde_json::Value = serde_json::from_str(r.output.stdout.trim()).expect("json");
        let env = seen["env"].as_object().expect("env");
        let allowed = [
            "PATH",
            "HOME",
            "TMPDIR",
            "TMP",
            "TEMP",
            "LANG",
            MARKER_VAR,
            "PYTHONDONTWRITEBYTECODE",
            "PYTHONHASHSEED",
            "NO_COLOR",
            "NODE_DISABLE_COLORS",
            "RUST_BACKTRACE",
        ];
        for key in env.keys() {
            // Python may add LC_CTYPE when it coerces the locale.
            assert!(allowed.contains(&key.as_str()) || key == "LC_CTYPE", "`{key}` reached the program");
        }
        let home = PathBuf::from(env["HOME"].as_str().expect("HOME"));
        let root = home.parent().expect("the run's temporary directory");
        assert!(root.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("runner-ground-truth-")), "{home:?}");
        assert_eq!(PathBuf::from(seen["cwd"].as_str().expect("cwd")), root.join("work"));
        assert_eq!(PathBuf::from(seen["tmp"].as_str().expect("tmp")), root.join("tmp"));
        assert_eq!(env["TMPDIR"].as_str(), root.join("tmp").to_str());
        assert!(!root.exists(), "the run's directory is removed afterwards");
    }

    #[test]
    fn files_written_are_bounded_in_size() {
        if !have("python3") {
            return;
        }
        // Outside its directory too: the bound is on the process, not on a place.
        let dir = tempfile::tempdir().expect("tempdir");
        let big = dir.path().join("big");
        let program = format!("f = open({:?}, 'wb')\nfor _ in range(65):\n    f.write(b'0' * (1 << 20))\n", big.display().to_string());
        let r = python(&program, Limits::default());
        assert!(matches!(&r.verdict, Verdict::Rejected(m) if m.contains("File too large") || m.contains("MiB limit")), "{:?}", r.verdict);
        assert!(std::fs::metadata(&big).expect("written").len() <= MAX_FILE_BYTES);
    }
}
