//! The sandbox of every child program runner starts (ground-truth programs, static
//! analyzers): resource limits set below runner's own, waiting with a deadline,
//! reaping with the child's CPU time, and killing a run's whole session — and any process that
//! left it but carries the run's marker in its environment — until none is left; and where a
//! program named without a path is found (`on_path`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The variable every process of a run inherits, naming the run: what left the run's
/// session but kept its environment is found by it and killed.
pub const MARKER_VAR: &str = "RUNNER_GROUND_TRUTH_RUN";

/// `name` as an executable in one of `search`'s directories (a `PATH` value), the first as
/// the shell would find it.
pub fn on_path(name: &str, search: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    std::env::split_paths(search?).map(|dir| dir.join(name)).find(|p| is_executable(p))
}

/// Whether `path` is a regular file its owner, group or others may execute.
pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Sets a resource limit, never above the hard limit runner itself has.
pub fn limit(resource: libc::__rlimit_resource_t, soft: u64, hard: u64) -> std::io::Result<()> {
    let mut current = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `current` is a valid rlimit to write into.
    if unsafe { libc::getrlimit(resource, &mut current) } == -1 {
        return Err(std::io::Error::last_os_error());
    }
    let max = current.rlim_max;
    let new = libc::rlimit { rlim_cur: (soft as libc::rlim_t).min(max), rlim_max: (hard as libc::rlim_t).min(max) };
    // SAFETY: `new` is a valid rlimit.
    if unsafe { libc::setrlimit(resource, &new) } == -1 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Polls (2 ms, doubling up to 25 ms) until the child has ended, leaving it unreaped, or
/// `deadline` passes: `true` when the deadline came first.
pub fn wait_until_ended(pid: libc::pid_t, deadline: Instant) -> bool {
    let mut pause = Duration::from_millis(2);
    loop {
        match has_ended(pid) {
            Ok(true) | Err(_) => return false,
            Ok(false) if Instant::now() >= deadline => return true,
            Ok(false) => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(25));
            }
        }
    }
}

/// Whether the child has ended, leaving it unreaped (`WNOWAIT`).
pub fn has_ended(pid: libc::pid_t) -> std::io::Result<bool> {
    loop {
        // SAFETY: an all-zero siginfo is a valid value of that plain C struct.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is valid to write into; `pid` is our own child.
        let r = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT) };
        if r == 0 {
            // SAFETY: waitid filled `info` (or left it zeroed when nothing has ended).
            return Ok(unsafe { info.si_pid() } == pid);
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Reaps the child (it has ended or been killed): its raw wait status and the CPU time
/// (user + system) it and the descendants it waited for used.
pub fn reap(pid: libc::pid_t) -> std::io::Result<(libc::c_int, Duration)> {
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: an all-zero rusage is a valid value of that plain C struct.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `status` and `usage` are valid to write into; `pid` is our own child.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            let time = |t: libc::timeval| Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64);
            return Ok((status, time(usage.ru_utime) + time(usage.ru_stime)));
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Kills the run's whole session, then every process still in it or carrying the run's
/// marker (a daemon that called `setsid` after a double fork), until none is left.
pub fn kill_run(sid: libc::pid_t, marker: &str) {
    let needle = format!("{MARKER_VAR}={marker}\0").into_bytes();
    for round in 0..50 {
        // SAFETY: `kill` has no memory-safety preconditions; a negative pid names the
        // process group the child leads (its session's, created with `setsid`).
        unsafe {
            libc::kill(-sid, libc::SIGKILL);
        }
        let strays = strays(sid, &needle);
        if strays.is_empty() {
            return;
        }
        for pid in strays {
            // SAFETY: as above, for one process of this run.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        if round > 0 {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

/// Live processes in session or group `sid`, or whose environment holds `needle`.
fn strays(sid: libc::pid_t, needle: &[u8]) -> Vec<libc::pid_t> {
    let own = std::process::id() as libc::pid_t;
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<libc::pid_t>().ok()) else { continue };
        if pid == own {
            continue;
        }
        let dir = PathBuf::from("/proc").join(pid.to_string());
        let Ok(stat) = std::fs::read_to_string(dir.join("stat")) else { continue };
        // `pid (comm) state ppid pgrp session …`; comm may hold anything but the last `)`.
        let Some((_, rest)) = stat.rsplit_once(')') else { continue };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if matches!(fields.first(), Some(&"Z") | Some(&"X") | None) {
            continue;
        }
        let in_run = |i: usize| fields.get(i).and_then(|f| f.parse::<libc::pid_t>().ok()) == Some(sid);
        let marked = || std::fs::read(dir.join("environ")).is_ok_and(|env| env.windows(needle.len()).any(|w| w == needle));
        if in_run(2) || in_run(3) || marked() {
            found.push(pid);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_program_is_found_on_path_skipping_what_cannot_run() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (plain, runnable, not_a_file) = (dir.path().join("plain"), dir.path().join("bin"), dir.path().join("dir"));
        for d in [&plain, &runnable, &not_a_file] {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        std::fs::write(plain.join("tool"), "").expect("write");
        std::fs::write(runnable.join("tool"), "").expect("write");
        std::fs::set_permissions(runnable.join("tool"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
        std::fs::create_dir_all(not_a_file.join("tool")).expect("mkdir");
        let path = std::env::join_paths([not_a_file.clone(), plain.clone(), runnable.clone()]).expect("join");
        assert_eq!(on_path("tool", Some(&path)), Some(runnable.join("tool")), "not a directory, not a file without the execute bit");
        assert_eq!(on_path("tool", Some(&std::env::join_paths([plain]).expect("join"))), None);
        assert_eq!(on_path("tool", None), None);
    }
}
