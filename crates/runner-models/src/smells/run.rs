//! One analyzer process, hermetic and bounded, the way ground-truth programs run
//! (through `runner-core`'s `sandbox`, as `ground_truth::program` does): its own
//! session, a cleared environment (`PATH`, a `HOME` and `TMPDIR` of its own, the C.UTF-8
//! locale, no colour), `RLIMIT_CPU`, `RLIMIT_FSIZE`, `RLIMIT_AS` and no core files, a wall-clock
//! backstop, and stdout and stderr read whole up to a bound: an analyzer that prints more is
//! an error, never a truncated parse.

pub use crate::sandbox::{is_executable, on_path};
use crate::sandbox::{kill_run, limit, reap, MARKER_VAR};
use std::ffi::OsString;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Bounds of one analyzer process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// CPU time (whole seconds, at least one): the time bound a busy machine cannot reach.
    pub cpu: Duration,
    /// Wall-clock backstop, for a process that waits instead of working.
    pub wall: Duration,
    /// Bytes read from each of stdout and stderr; more is an error.
    pub output_bytes: usize,
    /// The largest file the process may write.
    pub file_bytes: u64,
    /// Address space (`RLIMIT_AS`): a file that makes an analyzer read without end (rustc's
    /// `include_bytes!("/dev/zero")`) ends in an allocation failure, not in the machine's
    /// memory running out.
    pub memory_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            cpu: Duration::from_secs(120),
            wall: Duration::from_secs(600),
            output_bytes: 32 * 1024 * 1024,
            file_bytes: 64 * 1024 * 1024,
            memory_bytes: 4 * 1024 * 1024 * 1024,
        }
    }
}

/// How a bounded process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    Exited(i32),
    Signal(i32),
    CpuLimit(u64),
    TimedOut(Duration),
    /// stdout or stderr went past [`Limits::output_bytes`].
    OutputTooLarge {
        stream: &'static str,
        limit: usize,
    },
}

impl std::fmt::Display for Ending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ending::Exited(code) => write!(f, "exit code {code}"),
            Ending::Signal(sig) => write!(f, "killed by signal {sig}"),
            Ending::CpuLimit(secs) => write!(f, "used more than {secs} s of CPU time"),
            Ending::TimedOut(wall) => write!(f, "timed out after {} s of wall-clock time", wall.as_secs()),
            Ending::OutputTooLarge { stream, limit } if limit % (1024 * 1024) == 0 => write!(f, "printed more than {} MiB on {stream}", limit / (1024 * 1024)),
            Ending::OutputTooLarge { stream, limit } => write!(f, "printed more than {limit} bytes on {stream}"),
        }
    }
}

/// What a finished process left.
#[derive(Debug, Clone)]
pub struct Finished {
    pub ending: Ending,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// The environment every analyzer process gets: runner's `PATH`, `<sandbox>/home` as
/// `HOME`, `<sandbox>/tmp` as `TMPDIR`, the C.UTF-8 locale and no colour; nothing else.
pub fn hermetic_env(sandbox: &Path) -> Vec<(String, OsString)> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    vec![
        ("PATH".into(), path),
        ("HOME".into(), sandbox.join("home").into_os_string()),
        ("TMPDIR".into(), sandbox.join("tmp").into_os_string()),
        ("LANG".into(), "C.UTF-8".into()),
        ("LC_ALL".into(), "C.UTF-8".into()),
        ("NO_COLOR".into(), "1".into()),
        ("NODE_DISABLE_COLORS".into(), "1".into()),
        ("FORCE_COLOR".into(), "0".into()),
        ("RUST_BACKTRACE".into(), "0".into()),
    ]
}

/// Runs `program args…` in `cwd` with a cleared environment set to `env` (plus the run's
/// marker), within `limits`. `Err` only when it could not be started or waited for.
pub fn run(program: &Path, args: &[OsString], cwd: &Path, env: &[(String, OsString)], limits: Limits) -> Result<Finished, String> {
    use std::os::unix::process::CommandExt;
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let marker = format!("smells-{}-{}", std::process::id(), RUNS.fetch_add(1, Ordering::Relaxed));
    let cpu = limits.cpu.as_secs_f64().ceil().max(1.0) as u64;
    let (file_bytes, memory_bytes) = (limits.file_bytes, limits.memory_bytes);
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env(MARKER_VAR, &marker);
    // SAFETY: the closure runs in the forked child before exec and only makes
    // async-signal-safe system calls (setsid, getrlimit, setrlimit); it allocates nothing.
    unsafe {
        command.pre_exec(move || {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            limit(libc::RLIMIT_CPU, cpu, cpu + 1)?;
            limit(libc::RLIMIT_FSIZE, file_bytes, file_bytes)?;
            limit(libc::RLIMIT_CORE, 0, 0)?;
            limit(libc::RLIMIT_AS, memory_bytes, memory_bytes)?;
            Ok(())
        });
    }
    let mut child = command.spawn().map_err(|e| format!("cannot start `{}`: {e}", program.display()))?;
    let pid = child.id() as libc::pid_t;
    let readers = [child.stdout.take().map(|s| read_bounded(s, limits.output_bytes)), child.stderr.take().map(|s| read_bounded(s, limits.output_bytes))];
    let timed_out = crate::sandbox::wait_until_ended(pid, Instant::now() + limits.wall);
    kill_run(pid, &marker);
    let ended = reap(pid);
    drop(child);
    let [stdout, stderr] = readers.map(|r| match r {
        Some(rx) => rx.recv_timeout(Duration::from_secs(5)).unwrap_or((Vec::new(), false)),
        None => (Vec::new(), false),
    });
    let (status, cpu_used) = ended.map_err(|e| format!("cannot wait for `{}`: {e}", program.display()))?;
    let ending = if timed_out {
        Ending::TimedOut(limits.wall)
    } else if stdout.1 {
        Ending::OutputTooLarge { stream: "stdout", limit: limits.output_bytes }
    } else if stderr.1 {
        Ending::OutputTooLarge { stream: "stderr", limit: limits.output_bytes }
    } else if libc::WIFEXITED(status) {
        Ending::Exited(libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        match libc::WTERMSIG(status) {
            libc::SIGXCPU => Ending::CpuLimit(cpu),
            libc::SIGKILL if cpu_used >= Duration::from_secs(cpu) => Ending::CpuLimit(cpu),
            sig => Ending::Signal(sig),
        }
    } else {
        Ending::Signal(0)
    };
    Ok(Finished { ending, stdout: stdout.0, stderr: stderr.0 })
}

/// Reads `stream` to its end in a thread of its own: the first `cap` bytes, and whether
/// there was more (read and dropped, so the writer never blocks).
fn read_bounded(mut stream: impl Read + Send + 'static, cap: usize) -> std::sync::mpsc::Receiver<(Vec<u8>, bool)> {
    let (done, result) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let (mut kept, mut over) = (Vec::new(), false);
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match stream.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let room = cap.saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                    over |= n > room;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        let _ = done.send((kept, over));
    });
    result
}

/// The last `max` characters of `bytes` as text, for an error message.
pub fn tail(bytes: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    let count = text.chars().count();
    if count <= max {
        text.to_string()
    } else {
        format!("…{}", text.chars().skip(count - max).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn sandbox() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        for d in ["home", "tmp"] {
            std::fs::create_dir_all(dir.path().join(d)).expect("mkdir");
        }
        dir
    }

    fn sh(script: &str, limits: Limits) -> Finished {
        let dir = sandbox();
        let env = hermetic_env(dir.path());
        run(Path::new("/bin/sh"), &["-c".into(), script.into()], dir.path(), &env, limits).expect("runs")
    }

    #[test]
    fn the_environment_is_cleared_and_home_is_the_sandboxes() {
        std::env::var("PATH").expect("PATH is set for the tests");
        let dir = sandbox();
        let env = hermetic_env(dir.path());
        let out = run(Path::new("/bin/sh"), &["-c".into(), "env".into()], dir.path(), &env, Limits::default()).expect("runs");
        assert_eq!(out.ending, Ending::Exited(0));
        let text = String::from_utf8_lossy(&out.stdout);
        let names: std::collections::BTreeSet<&str> = text.lines().filter_map(|l| l.split_once('=').map(|(k, _)| k)).collect();
        let expected: std::collections::BTreeSet<&str> =
            ["PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "NO_COLOR", "NODE_DISABLE_COLORS", "FORCE_COLOR", "RUST_BACKTRACE", MARKER_VAR, "PWD", "SHLVL", "_"]
                .into_iter()
                .collect();
        assert!(names.is_subset(&expected), "unexpected variables: {:?}", names.difference(&expected).collect::<Vec<_>>());
        assert!(text.contains(&format!("HOME={}", dir.path().join("home").display())), "{text}");
    }

    #[test]
    fn output_past_the_bound_is_an_ending_of_its_own() {
        let limits = Limits { output_bytes: 1024, ..Limits::default() };
        let out = sh("head -c 100000 /dev/zero", limits);
        assert_eq!(out.ending, Ending::OutputTooLarge { stream: "stdout", limit: 1024 });
        assert_eq!(out.stdout.len(), 1024);
        let out = sh("head -c 1000 /dev/zero >&2; exit 3", limits);
        assert_eq!(out.ending, Ending::Exited(3));
        assert_eq!(out.stderr.len(), 1000);
    }

    #[test]
    fn cpu_time_bounds_a_spinning_process() {
        let out = sh("while :; do :; done", Limits { cpu: Duration::from_secs(1), ..Limits::default() });
        assert_eq!(out.ending, Ending::CpuLimit(1));
    }

    #[test]
    fn address_space_bounds_an_allocation() {
        let python = std::process::Command::new("python3").args(["-c", "import sys; print(sys.executable)"]).output().expect("python3 runs");
        let python = PathBuf::from(String::from_utf8_lossy(&python.stdout).trim());
        let dir = sandbox();
        let env = hermetic_env(dir.path());
        let limits = Limits { memory_bytes: 256 * 1024 * 1024, ..Limits::default() };
        let script = "try:\n    b = bytearray(1024 * 1024 * 1024)\nexcept MemoryError:\n    raise SystemExit(7)";
        let out = run(&python, &["-c".into(), script.into()], dir.path(), &env, limits).expect("runs");
        assert_eq!(out.ending, Ending::Exited(7), "{}", String::from_utf8_lossy(&out.stderr));
        let out = run(&python, &["-c".into(), "b = bytearray(64 * 1024 * 1024)".into()], dir.path(), &env, limits).expect("runs");
        assert_eq!(out.ending, Ending::Exited(0), "{}", String::from_utf8_lossy(&out.stderr));
    }

    #[test]
    fn tails_keep_the_end() {
        assert_eq!(tail(b"  abcdef \n", 3), "…def");
        assert_eq!(tail(b"abc", 3), "abc");
    }
}
