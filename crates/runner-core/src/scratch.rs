//! The per-process scratch directory: every temporary directory a run makes (its `HOME`, its
//! private copy of a repository, its worktree) lies in one directory of this process,
//! `$TMPDIR/runner-<pid>-<random>/`, removed when the process ends ([`finish`]). A process
//! killed before that leaves it behind; the next execution ([`sweep_stale`]), and any process
//! making its own, removes every such directory whose owner is gone. The owner holds an advisory lock on `owner.lock` inside it
//! while it lives (the kernel drops it when the process dies, whatever the signal), so
//! "gone" does not depend on pids, which are reused and differ between containers.
//!
//! A sweep removes only what it can prove runner made: a directory whose `owner.lock` begins
//! with [`SIGNATURE`] and is free, or one still being made (nothing in it but the unnamed lock
//! file) that is older than a maker takes. A directory of someone else's that happens to be
//! named `runner-2024-backup` is never touched, whatever it holds.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// The prefix of every scratch directory's name.
const PREFIX: &str = "runner-";
/// The file whose lock says the owner lives.
const OWNER: &str = "owner.lock";
/// The lock file while the directory is being made, before it is renamed to [`OWNER`].
const UNNAMED_OWNER: &str = ".owner";
/// What every scratch directory's lock file begins with: the proof that runner made it.
pub const SIGNATURE: &[u8] = b"runner scratch directory: removed when its owner is gone\n";

struct Scratch {
    path: PathBuf,
    /// Holds the owner's lock while the process lives.
    _lock: File,
}

static SCRATCH: OnceLock<Mutex<Option<Scratch>>> = OnceLock::new();

/// This process's scratch directory, made (and the stale ones swept) on first use.
pub fn dir() -> io::Result<PathBuf> {
    let cell = SCRATCH.get_or_init(|| Mutex::new(None));
    let mut held = cell.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(scratch) = held.as_ref() {
        return Ok(scratch.path.clone());
    }
    let parent = std::env::temp_dir();
    sweep(&parent);
    let path = tempfile::Builder::new().prefix(&format!("{PREFIX}{}-", std::process::id())).tempdir_in(&parent)?.keep();
    // Locked under another name, then renamed: a sweep never finds `owner.lock` unlocked here.
    let unnamed = path.join(UNNAMED_OWNER);
    let mut lock = File::options().create_new(true).read(true).write(true).open(&unnamed)?;
    if !try_lock(&lock)? {
        return Err(io::Error::other(format!("the lock of `{}` is taken", path.display())));
    }
    io::Write::write_all(&mut lock, SIGNATURE)?;
    std::fs::rename(&unnamed, path.join(OWNER))?;
    *held = Some(Scratch { path: path.clone(), _lock: lock });
    Ok(path)
}

/// A temporary directory named `<prefix>…` inside this process's scratch directory, removed
/// when dropped.
pub fn tempdir(prefix: &str) -> io::Result<tempfile::TempDir> {
    tempfile::Builder::new().prefix(prefix).tempdir_in(dir()?)
}

/// Removes this process's scratch directory and what is left in it; called as the process
/// ends. Nothing when none was made.
pub fn finish() {
    let Some(cell) = SCRATCH.get() else { return };
    let mut held = cell.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(scratch) = held.take() {
        let _ = std::fs::remove_dir_all(&scratch.path);
    }
}

/// Takes the exclusive lock of `file` without waiting: `false` while another holds it.
fn try_lock(file: &File) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    loop {
        // SAFETY: flock on a descriptor the caller owns; no memory is shared with it.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(true);
        }
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EWOULDBLOCK) => return Ok(false),
            _ => return Err(err),
        }
    }
}

/// Removes the scratch directories killed runners left in the temporary directory (see
/// [`sweep`]); an execution calls it as it starts, whether or not it makes its own.
pub fn sweep_stale() -> usize {
    sweep(&std::env::temp_dir())
}

/// Whether `name` is a scratch directory's: `runner-<pid>-<random>`.
fn is_scratch_name(name: &str) -> bool {
    name.strip_prefix(PREFIX)
        .and_then(|rest| rest.split_once('-'))
        .is_some_and(|(pid, rest)| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) && !rest.is_empty())
}

/// How long a scratch directory without its lock file may be in the making: older, its maker
/// died before it could lock it.
const MAKING: std::time::Duration = std::time::Duration::from_secs(60);

/// Removes the scratch directories under `parent` whose owner is gone: a directory (not a
/// link) of this user whose `owner.lock` carries runner's [`SIGNATURE`] and is held by no
/// process. One without its lock file is being made, and is removed only when it is older than
/// [`MAKING`] and holds nothing but the unnamed lock file (what a maker killed before the rename
/// leaves); anything else is not provably runner's and is left alone. Returns how many were
/// removed.
pub fn sweep(parent: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(parent) else { return 0 };
    let mut removed = 0;
    for entry in entries.flatten() {
        if !entry.file_name().to_str().is_some_and(is_scratch_name) {
            continue;
        }
        let path = entry.path();
        if !is_own_directory(&path) {
            continue;
        }
        let removal = match crate::bounded::open_regular(&path.join(OWNER), crate::bounded::Links::Refuse, "lock files") {
            Ok((lock, _)) if is_signed(&lock) && try_lock(&lock).unwrap_or(false) => remove_lock_last(&path),
            Ok(_) => continue,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let old = std::fs::symlink_metadata(&path).and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok()).is_some_and(|age| age > MAKING);
                if !old {
                    continue;
                }
                remove_unfinished(&path)
            }
            Err(_) => continue,
        };
        if removal.is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Whether a lock file begins with runner's [`SIGNATURE`].
fn is_signed(lock: &File) -> bool {
    let mut head = [0u8; SIGNATURE.len()];
    io::Read::read_exact(&mut &*lock, &mut head).is_ok() && head == SIGNATURE
}

/// Removes a directory a maker died making: only when it holds nothing but the unnamed lock
/// file (a plain file, not a link); otherwise it is not provably runner's and stays.
fn remove_unfinished(path: &Path) -> io::Result<()> {
    for entry in std::fs::read_dir(path)? {
        let entry = entry?;
        if entry.file_name() != UNNAMED_OWNER || !entry.file_type()?.is_file() {
            return Err(io::Error::other("not a scratch directory in the making"));
        }
    }
    let _ = std::fs::remove_file(path.join(UNNAMED_OWNER));
    std::fs::remove_dir(path)
}

/// Removes a scratch directory, its lock file last: a sweep cut short (the sweeper killed)
/// leaves a directory the next sweep still recognises as one whose owner is gone.
fn remove_lock_last(path: &Path) -> io::Result<()> {
    for entry in std::fs::read_dir(path)?.flatten() {
        if entry.file_name() == OWNER {
            continue;
        }
        if entry.file_type()?.is_dir() {
            forget_worktree(&entry.path());
            std::fs::remove_dir_all(entry.path())?;
        } else {
            std::fs::remove_file(entry.path())?;
        }
    }
    let _ = std::fs::remove_file(path.join(OWNER));
    std::fs::remove_dir(path)
}

/// The prefix of a worktree's directory in a scratch directory (`runner-worktree-<random>`,
/// holding the worktree itself under the same name).
const WORKTREE_PREFIX: &str = "runner-worktree-";

/// Before a dead owner's worktree goes, its entry in the repository's `.git/worktrees/` goes
/// too, so a runner killed mid-review leaves no worktree record behind in the user's
/// repository. Only an entry that provably belongs to this worktree is removed: the worktree's
/// `.git` file names it (`gitdir: …/worktrees/runner-worktree-…`), and the entry's own
/// `gitdir` file names that `.git` file back. Anything else is left to git.
fn forget_worktree(dir: &Path) {
    let Some(name) = dir.file_name().and_then(|n| n.to_str()).filter(|n| n.starts_with(WORKTREE_PREFIX)) else { return };
    let dot_git = dir.join(name).join(".git");
    let Ok((file, _)) = crate::bounded::open_regular(&dot_git, crate::bounded::Links::Refuse, "worktree records") else { return };
    let mut text = String::new();
    if io::Read::read_to_string(&mut io::Read::take(file, 4096), &mut text).is_err() {
        return;
    }
    let Some(admin) = text.trim().strip_prefix("gitdir: ").map(PathBuf::from) else { return };
    let admin_named = admin.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(WORKTREE_PREFIX));
    let in_worktrees = admin.parent().and_then(|p| p.file_name()).is_some_and(|n| n == "worktrees");
    if !admin_named || !in_worktrees || !std::fs::symlink_metadata(&admin).is_ok_and(|m| m.is_dir()) {
        return;
    }
    let back = std::fs::read_to_string(admin.join("gitdir")).unwrap_or_default();
    let same = |a: &Path, b: &Path| a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y);
    if same(Path::new(back.trim()), &dot_git) {
        let _ = std::fs::remove_dir_all(&admin);
    }
}

/// A directory itself (not a link to one) owned by this process's user.
fn is_own_directory(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid takes no arguments and cannot fail.
    let uid = unsafe { libc::geteuid() };
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir() && m.uid() == uid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_recognised_strictly() {
        assert!(is_scratch_name("runner-123-abcDEF"));
        for other in ["runner-home-x1", "runner-run-x", "runner-123", "runner--x", "runner-12a-x", "other-1-x"] {
            assert!(!is_scratch_name(other), "{other}");
        }
    }

    #[test]
    fn a_sweep_removes_only_directories_whose_owner_is_gone() {
        let parent = tempfile::tempdir().expect("tempdir");
        let dead = parent.path().join("runner-1-dead");
        std::fs::create_dir_all(dead.join("runner-home-a")).expect("mkdir");
        std::fs::write(dead.join(OWNER), SIGNATURE).expect("lock file");
        // A live owner: this test holds the lock, as the process that made it would.
        let live = parent.path().join("runner-2-live");
        std::fs::create_dir_all(&live).expect("mkdir");
        std::fs::write(live.join(OWNER), SIGNATURE).expect("lock file");
        let held = File::options().read(true).write(true).open(live.join(OWNER)).expect("open");
        assert!(try_lock(&held).expect("lock"));
        // Being made: no lock file yet. Not ours by name: left alone.
        let young = parent.path().join("runner-3-young");
        std::fs::create_dir_all(&young).expect("mkdir");
        let foreign = parent.path().join("runner-home-zzz");
        std::fs::create_dir_all(&foreign).expect("mkdir");
        assert_eq!(sweep(parent.path()), 1);
        assert!(!dead.exists());
        assert!(live.exists() && young.exists() && foreign.exists());
        drop(held);
        assert_eq!(sweep(parent.path()), 1, "once its owner is gone");
        assert!(!live.exists());
        // One whose maker died before locking it: removed once it is older than a maker takes.
        std::fs::write(young.join(UNNAMED_OWNER), b"").expect("unnamed lock");
        let old = std::time::SystemTime::now() - MAKING - std::time::Duration::from_secs(1);
        File::open(&young).expect("open").set_modified(old).expect("age it");
        assert_eq!(sweep(parent.path()), 1);
        assert!(!young.exists() && foreign.exists());
    }

    #[test]
    fn a_sweep_never_removes_a_directory_runner_cannot_prove_it_made() {
        let parent = tempfile::tempdir().expect("tempdir");
        let old = std::time::SystemTime::now() - MAKING - std::time::Duration::from_secs(1);
        // Named like a scratch directory, old, no lock file: a user's backup.
        let backup = parent.path().join("runner-2024-backup");
        std::fs::create_dir_all(backup.join("photos")).expect("mkdir");
        std::fs::write(backup.join("photos/cat.jpg"), b"meow").expect("write");
        File::open(&backup).expect("open").set_modified(old).expect("age it");
        // Old, with a free `owner.lock` that runner did not write.
        let unsigned = parent.path().join("runner-7-notes");
        std::fs::create_dir_all(&unsigned).expect("mkdir");
        std::fs::write(unsigned.join(OWNER), b"mine").expect("write");
        std::fs::write(unsigned.join("notes.txt"), b"keep").expect("write");
        File::open(&unsigned).expect("open").set_modified(old).expect("age it");
        // Old, the unnamed lock file and something else: not a directory in the making.
        let mixed = parent.path().join("runner-8-mixed");
        std::fs::create_dir_all(&mixed).expect("mkdir");
        std::fs::write(mixed.join(UNNAMED_OWNER), b"").expect("write");
        std::fs::write(mixed.join("data"), b"keep").expect("write");
        File::open(&mixed).expect("open").set_modified(old).expect("age it");
        // A link named like one, to a directory of the user's.
        let target = parent.path().join("elsewhere");
        std::fs::create_dir_all(&target).expect("mkdir");
        std::fs::write(target.join(OWNER), SIGNATURE).expect("write");
        std::os::unix::fs::symlink(&target, parent.path().join("runner-9-link")).expect("symlink");
        assert_eq!(sweep(parent.path()), 0);
        assert!(backup.join("photos/cat.jpg").exists());
        assert!(unsigned.join("notes.txt").exists() && mixed.join("data").exists());
        assert!(target.join(OWNER).exists());
    }

    #[test]
    fn a_scratch_directory_made_here_is_signed_and_swept_once_free() {
        let parent = tempfile::tempdir().expect("tempdir");
        let made = parent.path().join("runner-10-made");
        std::fs::create_dir_all(&made).expect("mkdir");
        let lock = File::options().create_new(true).read(true).write(true).open(made.join(OWNER)).expect("open");
        io::Write::write_all(&mut &lock, SIGNATURE).expect("sign");
        assert!(is_signed(&File::open(made.join(OWNER)).expect("open")));
        drop(lock);
        assert_eq!(sweep(parent.path()), 1);
        assert!(!made.exists());
    }

    /// A runner killed mid-review leaves a worktree in its scratch directory and the
    /// worktree's entry in the repository's `.git/worktrees/`: the sweep removes both, and
    /// leaves an entry that does not name the worktree back.
    #[test]
    fn a_sweep_forgets_a_dead_owners_worktrees_in_their_repositories() {
        let parent = tempfile::tempdir().expect("tempdir");
        let repo = parent.path().join("repo");
        let git = |args: &[&str]| {
            let out = std::process::Command::new("git").arg("-C").arg(&repo).args(args).output().expect("git");
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        };
        std::fs::create_dir_all(&repo).expect("mkdir");
        git(&["init", "--quiet", "--initial-branch=main"]);
        git(&["-c", "user.name=t", "-c", "user.email=t@e", "commit", "--quiet", "--allow-empty", "-m", "c"]);
        let dead = parent.path().join("runner-1-dead");
        let tree = dead.join("runner-worktree-abc123").join("runner-worktree-abc123");
        std::fs::create_dir_all(tree.parent().expect("parent")).expect("mkdir");
        git(&["worktree", "add", "--detach", "--quiet", &tree.display().to_string(), "HEAD"]);
        // The user's own worktree, and a look-alike entry that does not name a runner worktree.
        git(&["worktree", "add", "--detach", "--quiet", &parent.path().join("mine").display().to_string(), "HEAD"]);
        std::fs::write(dead.join(OWNER), SIGNATURE).expect("lock file");
        assert!(repo.join(".git/worktrees/runner-worktree-abc123").is_dir());
        assert_eq!(sweep(parent.path()), 1);
        assert!(!dead.exists());
        assert!(!repo.join(".git/worktrees/runner-worktree-abc123").exists(), "the dead owner's entry is gone");
        assert!(repo.join(".git/worktrees/mine").is_dir(), "the user's worktree stays");
    }
}
