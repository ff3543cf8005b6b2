//! Thin, synchronous wrappers over the `git` command line, all built by one hermetic command
//! builder ([`command`]): every git process runner starts goes through it.

use std::path::Path;
use std::process::Command;

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("failed to run git in `{dir}`: {source}")]
    Spawn { dir: String, source: std::io::Error },
    #[error("`git {args}` failed in `{dir}`: {stderr}")]
    Failed { dir: String, args: String, stderr: String },
}

/// Configuration forced on every git call, overriding whatever the repository's own
/// `.git/config` says: no hooks, no fsmonitor daemon or hook, no pager, no credential helper,
/// no automatic gc or maintenance in the background, no transport but local paths, and no
/// signing. A hostile repository config can then make git run nothing.
const FORCED_CONFIG: &[&str] = &[
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.pager=cat",
    "core.editor=false",
    "core.sshCommand=false",
    "core.askPass=",
    "core.attributesFile=/dev/null",
    "credential.helper=",
    "gc.auto=0",
    "maintenance.auto=false",
    "protocol.allow=never",
    "protocol.file.allow=always",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
];

/// A `git -C dir` command with a hermetic environment: the environment cleared except
/// `PATH`; no system or global config (`GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL=/dev/null`,
/// no `HOME`), no system attributes, no prompts, the C locale; and [`FORCED_CONFIG`] on the
/// command line. Only the repository's own config applies, minus anything that runs code
/// (stet runs git the same way: `PATH` and `GIT_TERMINAL_PROMPT=0`, no `HOME`).
pub fn command(dir: &Path) -> Command {
    let mut cmd = Command::new(git_program());
    cmd.env_clear();
    if let Some(path) = std::env::var_os("PATH") {
        cmd.env("PATH", path);
    }
    cmd.env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_ATTR_NOSYSTEM", "1")
        .env("GIT_PAGER", "cat")
        .env("LC_ALL", "C");
    cmd.arg("--no-pager");
    for setting in FORCED_CONFIG {
        cmd.arg("-c").arg(setting);
    }
    cmd.arg("-C").arg(dir);
    cmd
}

/// The `git` program: its full path, found once on `PATH`, else the bare name (also where the
/// first `git` on `PATH` is in a relative directory). A command that sets `PATH` for a program
/// named without a path is started by `fork`, which copies the page tables of all runner's
/// memory; one named by its path starts through `posix_spawn`, which copies nothing — most of a
/// git process's cost to runner, and materializing a subject is one.
fn git_program() -> &'static std::ffi::OsStr {
    static FOUND: std::sync::OnceLock<std::ffi::OsString> = std::sync::OnceLock::new();
    FOUND.get_or_init(|| {
        runner_core::sandbox::on_path("git", std::env::var_os("PATH").as_deref())
            .filter(|p| p.is_absolute())
            .map_or_else(|| "git".into(), |p| p.into_os_string())
    })
}

/// Runs `git args…` in `dir` with a fixed, hermetic environment and returns stdout.
pub fn git(dir: &Path, args: &[&str]) -> Result<String, GitError> {
    git_with_env(dir, args, &[])
}

pub fn git_with_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<String, GitError> {
    git_bytes(dir, args, env).map(|out| String::from_utf8_lossy(&out).into_owned())
}

/// Subcommands that read or write work-tree files, where git runs the clean, smudge and
/// process filters a repository's config names for its `.gitattributes`.
const WORK_TREE_COMMANDS: &[&str] = &["add", "checkout", "commit", "diff", "reset", "restore", "stash", "status", "switch", "worktree"];

/// `-c` overrides that turn off every filter driver the repository's own config defines
/// (`filter.<name>.clean`, `.smudge`, `.process`; `.required` off so git does not refuse).
/// Asked of git once per state of the repository's config file (its path, size and
/// modification time), not once per command: materializing 25 subjects of one repository
/// is 25 git processes, not 50.
fn filter_overrides(dir: &Path) -> Vec<String> {
    type Stamp = (std::path::PathBuf, u64, Option<std::time::SystemTime>);
    static KNOWN: std::sync::OnceLock<std::sync::Mutex<std::collections::HashMap<Stamp, Vec<String>>>> = std::sync::OnceLock::new();
    let stamp: Option<Stamp> = [dir.join(".git").join("config"), dir.join("config")]
        .into_iter()
        .find_map(|path| std::fs::symlink_metadata(&path).ok().filter(|m| m.is_file()).map(|m| (path, m.len(), m.modified().ok())));
    let known = KNOWN.get_or_init(Default::default);
    if let Some(overrides) = stamp.as_ref().and_then(|s| known.lock().unwrap_or_else(|p| p.into_inner()).get(s).cloned()) {
        return overrides;
    }
    let overrides = if defines_no_filter(dir) { Vec::new() } else { read_filter_overrides(dir) };
    if let Some(stamp) = stamp {
        known.lock().unwrap_or_else(|p| p.into_inner()).insert(stamp, overrides.clone());
    }
    overrides
}

/// Whether the repository whose work tree's top is `dir` certainly defines no filter driver,
/// known without a git process: its config is `dir/.git/config` (git finds `dir/.git` first,
/// and [`command`] lets no other config in), a regular file of at most 1 MiB that names no
/// filter and includes no other file, with no per-worktree config beside it. Anything else —
/// a linked worktree, a bare repository, a subdirectory, a link, a larger file — is asked of
/// git.
fn defines_no_filter(dir: &Path) -> bool {
    let git_dir = dir.join(".git");
    if !std::fs::symlink_metadata(&git_dir).is_ok_and(|m| m.is_dir()) || git_dir.join("config.worktree").exists() {
        return false;
    }
    let Ok(config) = runner_core::bounded::read(&git_dir.join("config"), 1 << 20, runner_core::bounded::Links::Refuse, "git config files") else {
        return false;
    };
    let config = config.to_ascii_lowercase();
    let names = |word: &[u8]| config.windows(word.len()).any(|w| w == word);
    !names(b"filter") && !names(b"include")
}

/// [`filter_overrides`], from git.
fn read_filter_overrides(dir: &Path) -> Vec<String> {
    let Ok(out) = command(dir).args(["config", "--null", "--name-only", "--get-regexp", r"^filter\..*\.(clean|smudge|process|required)$"]).output() else {
        return Vec::new();
    };
    let mut names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .split('\0')
        .filter_map(|key| key.strip_prefix("filter.").and_then(|k| k.rsplit_once('.')).map(|(name, _)| name.to_string()))
        .collect();
    names.sort();
    names.dedup();
    names
        .iter()
        .flat_map(|n| [format!("filter.{n}.clean="), format!("filter.{n}.smudge="), format!("filter.{n}.process="), format!("filter.{n}.required=false")])
        .collect()
}

/// Like [`git_with_env`], but stdout as the bytes git wrote.
pub fn git_bytes(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<Vec<u8>, GitError> {
    let mut cmd = command(dir);
    if args.first().is_some_and(|a| WORK_TREE_COMMANDS.contains(a)) {
        for setting in filter_overrides(dir) {
            cmd.arg("-c").arg(setting);
        }
    }
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().map_err(|source| GitError::Spawn { dir: dir.display().to_string(), source })?;
    if !out.status.success() {
        return Err(GitError::Failed { dir: dir.display().to_string(), args: args.join(" "), stderr: String::from_utf8_lossy(&out.stderr).trim().to_string() });
    }
    Ok(out.stdout)
}

/// Resolves each revision to a full commit SHA in one `git rev-parse` call.
pub fn resolve_commits(repo: &Path, revs: &[&str]) -> Result<Vec<String>, GitError> {
    let specs: Vec<String> = revs.iter().map(|r| format!("{r}^{{commit}}")).collect();
    let mut args = vec!["rev-parse"];
    args.extend(specs.iter().map(String::as_str));
    let out = git(repo, &args)?;
    Ok(out.lines().map(|l| l.trim().to_string()).collect())
}

/// The diff stet reviews, as the bytes git printed: `git diff --no-color --no-ext-diff
/// base..head`, plus `--no-textconv` so no conversion program configured by the repository
/// runs. No user config applies (stet runs git without `HOME`), so `core.quotePath`,
/// `diff.renames` and the like take git's defaults unless the repository's own config sets them.
pub fn diff_bytes(repo: &Path, base: &str, head: &str) -> Result<Vec<u8>, GitError> {
    git_bytes(repo, &["diff", "--no-color", "--no-ext-diff", "--no-textconv", &format!("{base}..{head}")], &[])
}

/// [`diff_bytes`] as text (invalid UTF-8 replaced), for display and templates.
pub fn diff(repo: &Path, base: &str, head: &str) -> Result<String, GitError> {
    diff_bytes(repo, base, head).map(|out| String::from_utf8_lossy(&out).into_owned())
}

/// Runs git in `dir` with a fixed identity and no signing, for unit tests that build a
/// repository; stdout, trimmed; panics with git's stderr when it fails. Other crates' tests
/// reach it through the `test-support` feature.
#[cfg(any(test, feature = "test-support"))]
pub fn run_for_test(dir: &Path, args: &[&str]) -> String {
    let out = command(dir).args(["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]).args(args).output().expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn git_is_named_by_the_full_path_path_finds_it_at() {
        let found = runner_core::sandbox::on_path("git", std::env::var_os("PATH").as_deref()).expect("git on PATH");
        let program = command(Path::new(".")).get_program().to_os_string();
        assert_eq!(Path::new(&program), found.as_path());
        assert!(git(Path::new("."), &["--version"]).expect("git runs").starts_with("git version"));
    }

    /// A repository whose own config and hooks try to run a program at every git call.
    fn hostile_repo(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
        let repo = dir.join("repo");
        let log = dir.join("ran.log");
        std::fs::create_dir_all(&repo).expect("mkdir");
        git(&repo, &["init", "--quiet", "--initial-branch=main"]).expect("init");
        git(&repo, &["config", "user.name", "t"]).expect("config");
        git(&repo, &["config", "user.email", "t@e"]).expect("config");
        let script = dir.join("evil.sh");
        std::fs::write(&script, format!("#!/bin/sh\necho \"$0 $*\" >> '{}'\n", log.display())).expect("write");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let hooks = repo.join(".git/hooks");
        std::fs::create_dir_all(&hooks).expect("hooks");
        for hook in ["pre-commit", "post-commit", "post-checkout", "reference-transaction", "post-index-change", "pre-auto-gc", "commit-msg"] {
            std::fs::copy(&script, hooks.join(hook)).expect("hook");
        }
        git(&repo, &["config", "core.fsmonitor", &script.display().to_string()]).expect("config");
        git(&repo, &["config", "core.pager", &script.display().to_string()]).expect("config");
        git(&repo, &["config", "diff.evil.textconv", &script.display().to_string()]).expect("config");
        for key in ["clean", "smudge", "process"] {
            git(&repo, &["config", &format!("filter.evil.{key}"), &script.display().to_string()]).expect("config");
        }
        git(&repo, &["config", "filter.evil.required", "true"]).expect("config");
        std::fs::write(repo.join(".gitattributes"), "*.txt diff=evil filter=evil\n").expect("write");
        (repo, log)
    }

    #[test]
    fn a_config_without_filters_is_read_without_git_and_one_with_them_or_an_include_is_asked_of_git() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = dir.path().join("r");
        std::fs::create_dir(&repo).expect("mkdir");
        git(&repo, &["init", "-q"]).expect("init");
        assert!(defines_no_filter(&repo), "a fresh repository's config names no filter");
        assert!(filter_overrides(&repo).is_empty());
        // A filter defined in a file the config includes is found by git, not by the scan.
        std::fs::write(repo.join("extra.cfg"), "[FILTER \"x\"]\n\tclean = cat\n").expect("write");
        git(&repo, &["config", "include.path", "../extra.cfg"]).expect("config");
        assert!(!defines_no_filter(&repo), "an include may define filters");
        assert_eq!(read_filter_overrides(&repo).first().map(String::as_str), Some("filter.x.clean="));
        // A subdirectory is not the repository's top: git is asked.
        std::fs::create_dir(repo.join("sub")).expect("mkdir");
        assert!(!defines_no_filter(&repo.join("sub")));
    }

    #[test]
    fn a_filter_configured_after_the_overrides_were_read_is_turned_off_too() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = dir.path().join("r");
        std::fs::create_dir_all(&repo).expect("mkdir");
        git(&repo, &["init", "--quiet"]).expect("init");
        git(&repo, &["config", "user.name", "t"]).expect("config");
        git(&repo, &["config", "user.email", "t@e"]).expect("config");
        std::fs::write(repo.join("a.txt"), "a\n").expect("write");
        git(&repo, &["add", "--all"]).expect("add");
        assert!(filter_overrides(&repo).is_empty(), "no filter yet (and the answer is kept)");
        let log = dir.path().join("ran.log");
        let script = dir.path().join("evil.sh");
        std::fs::write(&script, format!("#!/bin/sh\necho ran >> '{}'\ncat\n", log.display())).expect("write");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        git(&repo, &["config", "filter.late.clean", &script.display().to_string()]).expect("config");
        std::fs::write(repo.join(".gitattributes"), "*.txt filter=late\n").expect("write");
        std::fs::write(repo.join("a.txt"), "b\n").expect("write");
        git(&repo, &["add", "--all"]).expect("add");
        assert!(!filter_overrides(&repo).is_empty(), "the changed config is read again");
        assert!(!log.exists(), "the filter ran");
    }

    #[test]
    fn a_hostile_repository_config_and_hooks_run_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (repo, log) = hostile_repo(dir.path());
        for (i, text) in ["a\n", "b\n"].iter().enumerate() {
            std::fs::write(repo.join("a.txt"), text).expect("write");
            git(&repo, &["add", "--all"]).expect("add");
            git(&repo, &["status", "--porcelain"]).expect("status");
            git(&repo, &["commit", "--quiet", "-m", &format!("c{i}")]).expect("commit");
        }
        let diff = diff(&repo, "HEAD~1", "HEAD").expect("diff");
        assert!(diff.contains("+b"), "{diff}");
        git(&repo, &["diff"]).expect("worktree diff");
        let wt = dir.path().join("wt");
        git(&repo, &["worktree", "add", "--detach", "--quiet", &wt.display().to_string(), "HEAD~1"]).expect("worktree add");
        git(&repo, &["worktree", "remove", "--force", &wt.display().to_string()]).expect("worktree remove");
        git(&repo, &["checkout", "--quiet", "--detach", "HEAD~1"]).expect("checkout");
        resolve_commits(&repo, &["HEAD"]).expect("rev-parse");
        assert!(!log.exists(), "a hook or configured program ran: {}", std::fs::read_to_string(&log).unwrap_or_default());
    }

    #[test]
    fn no_user_config_reaches_git() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).expect("mkdir");
        std::fs::write(home.join(".gitconfig"), "[core]\n\tquotePath = false\n").expect("write");
        let out = command(dir.path()).env("HOME", &home).args(["config", "--get", "core.quotePath"]).output().expect("git");
        // Even with HOME pointing at a config, the global config is /dev/null.
        assert!(!out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    }
}
