//! Runs a case's ground-truth program against one version of its source, in a fresh
//! temporary directory and with a time bound, and classifies how it ended.
//!
//! The layout is the one `corpus/quickstart/README.md` documents: the source at its
//! `source.path` inside the working directory, the program beside it as
//! `__ground_truth__.{mjs,py,rs}`. Each child runs in its own process group, which is
//! killed when the bound is reached; stdout and stderr go to files outside the working
//! directory and are kept for the diagnostic.

use super::oracle::Interpreter;
use serde::Serialize;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Time bounds for one program run.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Each run of a program (and each import check): seed 002 uses three seconds.
    pub run: Duration,
    /// Each compile step (Rust).
    pub compile: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self { run: Duration::from_secs(3), compile: Duration::from_secs(60) }
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
    /// `exit code 1`, `signal 9`, `timed out after 3 s`, …
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

/// Bytes kept per stream.
const KEEP: usize = 6 * 1024;

/// Runs `program` against a source file at `source_path` holding `source_text`.
pub fn run(interpreter: Interpreter, source_path: &str, source_text: &str, program: &str, limits: Limits) -> ProgramRun {
    let started = Instant::now();
    let verdict_output = match prepare_and_run(interpreter, source_path, source_text, program, limits) {
        Ok(v) => v,
        Err(message) => (Verdict::Rejected(message), ChildOutput::default()),
    };
    ProgramRun { verdict: verdict_output.0, output: verdict_output.1, elapsed_ms: started.elapsed().as_millis() as u64 }
}

fn prepare_and_run(
    interpreter: Interpreter,
    source_path: &str,
    source_text: &str,
    program: &str,
    limits: Limits,
) -> Result<(Verdict, ChildOutput), String> {
    let temp = tempfile::Builder::new().prefix("runner-ground-truth-").tempdir().map_err(|e| format!("cannot create a temporary directory: {e}"))?;
    let work = temp.path().join("work");
    let source = work.join(source_path);
    if let Some(parent) = source.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("cannot create `{}`: {e}", parent.display()))?;
    }
    std::fs::write(&source, source_text).map_err(|e| format!("cannot write `{source_path}`: {e}"))?;
    let logs = temp.path();

    match interpreter {
        Interpreter::Node => {
            // Seed 002 imports each source version before it runs the program.
            let specifier = serde_json::to_string(&format!("./{source_path}")).unwrap_or_default();
            let check = Child::new("import check", "node", &["--input-type=module", "-e", &format!("await import({specifier});")]);
            let (verdict, output) = check.run(&work, logs, limits.run);
            if verdict != Status::Exited(0) {
                return Ok((reject_step(&verdict, "the source does not import"), output));
            }
            write(&work, "__ground_truth__.mjs", program)?;
            let (status, output) = Child::new("run", "node", &["__ground_truth__.mjs"]).run(&work, logs, limits.run);
            Ok((classify(interpreter, &status, &output.stderr), output))
        }
        Interpreter::Python3 => {
            let check = Child::new(
                "import check",
                "python3",
                &["-c", "import sys; compile(open(sys.argv[1], encoding='utf-8').read(), sys.argv[1], 'exec')", source_path],
            );
            let (verdict, output) = check.run(&work, logs, limits.run);
            if verdict != Status::Exited(0) {
                return Ok((reject_step(&verdict, "the source does not compile"), output));
            }
            write(&work, "__ground_truth__.py", program)?;
            let (status, output) = Child::new("run", "python3", &["__ground_truth__.py"]).run(&work, logs, limits.run);
            Ok((classify(interpreter, &status, &output.stderr), output))
        }
        Interpreter::Rust => {
            write(&work, "__ground_truth__.rs", program)?;
            let compile =
                Child::new("compile", "rustc", &["--edition", "2021", "-O", "-o", "__ground_truth__", "__ground_truth__.rs"]);
            let (status, output) = compile.run(&work, logs, limits.compile);
            if status != Status::Exited(0) {
                return Ok((reject_step(&status, "the program does not compile"), output));
            }
            let binary = work.join("__ground_truth__");
            let binary = binary.to_string_lossy();
            let (status, output) = Child::new("run", &binary, &[]).run(&work, logs, limits.run);
            Ok((classify(interpreter, &status, &output.stderr), output))
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

/// How a child ended.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Status {
    Exited(i32),
    Signal(i32),
    TimedOut(Duration),
    SpawnFailed(String),
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Status::Exited(code) => write!(f, "exit code {code}"),
            Status::Signal(sig) => write!(f, "killed by signal {sig}"),
            Status::TimedOut(d) => write!(f, "timed out after {} s", fmt_secs(*d)),
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

    /// Runs the child in `cwd` with a fresh process group, killed at `limit`.
    fn run(&self, cwd: &Path, logs: &Path, limit: Duration) -> (Status, ChildOutput) {
        let out_path = logs.join(format!("{}.stdout", self.step.replace(' ', "-")));
        let err_path = logs.join(format!("{}.stderr", self.step.replace(' ', "-")));
        let status = self.spawn_and_wait(cwd, &out_path, &err_path, limit);
        let output = ChildOutput {
            step: self.step.to_string(),
            command: self.command_line(),
            status: status.to_string(),
            stdout: tail(&out_path),
            stderr: tail(&err_path),
        };
        (status, output)
    }

    fn spawn_and_wait(&self, cwd: &Path, out_path: &PathBuf, err_path: &PathBuf, limit: Duration) -> Status {
        use std::os::unix::process::{CommandExt, ExitStatusExt};
        let (stdout, stderr) = match (std::fs::File::create(out_path), std::fs::File::create(err_path)) {
            (Ok(o), Ok(e)) => (o, e),
            (Err(e), _) | (_, Err(e)) => return Status::SpawnFailed(format!("cannot create an output file: {e}")),
        };
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .process_group(0)
            // What would make a run depend on the caller's environment.
            .env_remove("NODE_OPTIONS")
            .env_remove("NODE_PATH")
            .env_remove("PYTHONPATH")
            .env_remove("PYTHONSTARTUP")
            .env_remove("RUSTFLAGS")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("PYTHONHASHSEED", "0")
            .env("NO_COLOR", "1")
            .env("NODE_DISABLE_COLORS", "1")
            .env("RUST_BACKTRACE", "0");
        let mut child = match command.spawn() {
            Ok(c) => c,
            Err(e) => return Status::SpawnFailed(format!("`{}`: {e}", self.program)),
        };
        let pid = child.id() as libc::pid_t;
        let deadline = Instant::now() + limit;
        let mut pause = Duration::from_millis(2);
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if Instant::now() >= deadline => break None,
                Ok(None) => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(25));
                }
                Err(e) => {
                    kill_group(pid);
                    let _ = child.wait();
                    return Status::SpawnFailed(format!("cannot wait for `{}`: {e}", self.program));
                }
            }
        };
        // Whatever the program left behind in its group goes too.
        kill_group(pid);
        match status {
            Some(s) => match (s.code(), s.signal()) {
                (Some(code), _) => Status::Exited(code),
                (None, Some(sig)) => Status::Signal(sig),
                (None, None) => Status::SpawnFailed("no exit status".into()),
            },
            None => {
                let _ = child.wait();
                Status::TimedOut(limit)
            }
        }
    }
}

fn kill_group(pid: libc::pid_t) {
    // SAFETY: `kill` has no memory-safety preconditions; a negative pid names the process
    // group this child leads (created with `process_group(0)`).
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
}

/// The last `KEEP` bytes of a file, on a character boundary, marked when cut.
fn tail(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    if text.len() <= KEEP {
        return text.into_owned();
    }
    let mut cut = text.len() - KEEP;
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    format!("[… {} bytes cut …]\n{}", cut, &text[cut..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn have(tool: &str) -> bool {
        Command::new(tool).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
    }

    #[test]
    fn python_tracebacks_are_read_for_the_final_exception() {
        let tb = "Traceback (most recent call last):\n  File \"x.py\", line 3, in <module>\n    assert f() == 2\n           ^^^^^^^^\nAssertionError: two\nmore\n";
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
    fn node_assertions_syntax_errors_and_timeouts() {
        if !have("node") {
            return;
        }
        let src = "export const two = () => 2;\n";
        let limits = Limits { run: Duration::from_millis(1500), compile: Duration::from_secs(30) };
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
        let started = Instant::now();
        let slow = run(Interpreter::Node, "src/t.mjs", src, "while (true) {}\n", limits);
        assert!(matches!(&slow.verdict, Verdict::Rejected(m) if m.contains("timed out")), "{:?}", slow.verdict);
        assert!(started.elapsed() < Duration::from_secs(5));
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
}
