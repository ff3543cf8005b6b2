//! `runner init`: in a fresh repository, the experiment it writes validates and executes into
//! a RESULTS.md that opens with a verdict, touching nothing else that `git status` would show;
//! `--corpus` writes a corpus that `runner corpus validate` accepts; no file is ever overwritten.

use super::*;

/// A repository of `n` commits, each adding a file with one long line holding a work marker:
/// the built-in heuristic flags the marker, the example reviewer the marker and the length.
fn repository(dir: &Path, n: u32) -> PathBuf {
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "--quiet", "--initial-branch=main"]);
    for i in 1..=n {
        let long = "x".repeat(100);
        std::fs::write(repo.join(format!("m{i}.py")), format!("VALUE_{i} = \"{long}\"  # TODO: shorten {i}\n")).expect("write");
        git(&repo, &["add", "--all"]);
        git_dated(&repo, Some(&format!("2024-01-01T00:00:{i:02}Z")), &["commit", "--quiet", "-m", &format!("Add m{i}")]);
    }
    repo
}

/// `git status` of every file, sorted.
fn status(repo: &Path) -> Vec<String> {
    let mut lines: Vec<String> = git(repo, &["status", "--porcelain", "--untracked-files=all"]).lines().map(str::to_string).collect();
    lines.sort();
    lines
}

#[test]
fn init_then_exec_in_a_fresh_repository_gives_verdict_lines_and_leaves_the_work_directory_out_of_git() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = repository(dir.path(), 12);
    let out = runner(&repo).arg("init").output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(
        stdout_of(&out).lines().take(3).collect::<Vec<_>>(),
        ["wrote experiments/review.toml", "wrote experiments/reviewers/example.py", "wrote .runner/.gitignore"]
    );
    let manifest = std::fs::read_to_string(repo.join("experiments/review.toml")).expect("manifest");
    let range = format!("commits = \"{}..{}\"", git(&repo, &["rev-parse", "HEAD~10"]), git(&repo, &["rev-parse", "HEAD"]));
    assert!(manifest.contains(&range), "the newest ten commits, resolved: {manifest}");

    let validate = runner(&repo).args(["validate", "experiments/review.toml"]).output().expect("runs");
    assert!(validate.status.success(), "{}", stderr_of(&validate));
    assert!(stdout_of(&validate).contains("2 cells × 10 subjects × 1 repeat = 20 runs"), "{}", stdout_of(&validate));

    let exec = runner(&repo).args(["exec", "experiments/review.toml"]).output().expect("runs");
    assert!(exec.status.success(), "{}", stderr_of(&exec));
    // stderr is a pipe: progress comes as lines, one per tenth of the runs.
    let progress: Vec<String> = stderr_of(&exec).lines().filter(|l| l.starts_with("progress: ")).map(str::to_string).collect();
    assert_eq!(progress.len(), 9, "{progress:?}");
    assert!(progress[0].starts_with("progress: 2/20 runs, ") && progress[0].contains(" elapsed, about "), "{progress:?}");
    let md = std::fs::read_to_string(repo.join("results/review/RESULTS.md")).expect("RESULTS.md");
    assert!(md.contains("Does the example reviewer flag more than the heuristic?"), "{md}");
    assert!(md.contains("(paired permutation, 10 subjects, exact over 1 024 sign flips): **higher**."), "{md}");
    let results: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(repo.join("results/review/results.json")).expect("json")).expect("json");
    let failed: Vec<&serde_json::Value> = results["runs"].as_array().expect("runs").iter().filter(|r| r["error"].is_string()).collect();
    assert!(failed.is_empty(), "{failed:?}");

    // Nothing of runner's work directory shows; only what is meant to be committed does.
    let shown = status(&repo);
    assert!(shown.iter().all(|l| l.starts_with("?? ")), "nothing tracked was edited: {shown:?}");
    assert!(repo.join(".runner/executions").is_dir(), "the execution log is there");
    assert!(!shown.iter().any(|l| l.starts_with("?? .runner/")), "{shown:?}");
    for prefix in ["?? experiments/review.toml", "?? experiments/reviewers/example.py", "?? results/review/RESULTS.md"] {
        assert!(shown.iter().any(|l| l.starts_with(prefix)), "{prefix}: {shown:?}");
    }
    // The cache is kept in the work directory, out of git, unless the manifest says otherwise.
    assert!(repo.join(".runner/cache/runs").is_dir() && !repo.join("cache").exists(), "{shown:?}");
    assert!(shown.iter().all(|l| ["?? experiments/", "?? results/review/"].iter().any(|p| l.starts_with(p))), "{shown:?}");
    // `cache ls` finds those runs from any directory of the repository.
    for from in [repo.clone(), repo.join("experiments")] {
        let ls = runner(&from).args(["cache", "ls"]).output().expect("runs");
        assert!(stderr_of(&ls).contains("20 runs in `") && stderr_of(&ls).contains(".runner/cache`"), "{}", stderr_of(&ls));
    }
    // The scaffold's program is hashed once: an edit is one change, not two.
    let example = repo.join("experiments/reviewers/example.py");
    let script = std::fs::read_to_string(&example).expect("read");
    std::fs::write(&example, format!("{script}# edited\n")).expect("write");
    let plan = runner(&repo).args(["plan", "experiments/review.toml"]).output().expect("runs");
    let planned = stdout_of(&plan);
    let changed: Vec<&str> = planned.lines().filter(|l| l.contains("changed since last cached")).collect();
    assert!(changed.len() == 1 && changed[0].matches("blake3:").count() == 2, "{changed:?}");
    std::fs::write(&example, script).expect("restore");

    // A second init never overwrites: it names what exists and exits 1.
    std::fs::write(repo.join("experiments/review.toml"), "# mine\n").expect("write");
    let again = runner(&repo).arg("init").output().expect("runs");
    assert_eq!(again.status.code(), Some(1));
    let error = stderr_of(&again);
    assert!(error.contains("experiments/review.toml") && error.contains("experiments/reviewers/example.py") && error.contains("never overwrites"), "{error}");
    assert_eq!(std::fs::read_to_string(repo.join("experiments/review.toml")).expect("read"), "# mine\n");
}

#[test]
fn a_short_history_is_listed_commit_by_commit_and_outside_a_repository_init_says_why() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = repository(dir.path(), 3);
    let out = runner(&repo).args(["init", "short"]).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let validate = runner(&repo).args(["validate", "experiments/short.toml"]).output().expect("runs");
    assert!(stdout_of(&validate).contains("2 cells × 3 subjects × 1 repeat = 6 runs"), "the root commit included: {}", stdout_of(&validate));

    let outside = tempfile::tempdir().expect("tempdir");
    let out = runner(outside.path()).arg("init").output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr_of(&out).contains("is not in one"), "{}", stderr_of(&out));
    assert!(!outside.path().join("experiments").exists());
}

#[test]
fn init_corpus_writes_a_finding_case_and_a_clean_case_that_validate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = runner(dir.path()).args(["init", "--corpus", "mine"]).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(stdout_of(&out).starts_with("wrote mine/cases.public.json\nwrote mine/oracle.json\n"), "{}", stdout_of(&out));
    let validate = runner(dir.path()).args(["corpus", "validate", "mine", "--json"]).output().expect("runs");
    assert!(validate.status.success(), "{}{}", stdout_of(&validate), stderr_of(&validate));
    let again = runner(dir.path()).args(["init", "--corpus", "mine"]).output().expect("runs");
    assert_eq!(again.status.code(), Some(1));
    assert!(stderr_of(&again).contains("mine/cases.public.json"), "{}", stderr_of(&again));
}

/// A clone one commit deep (as CI checks out): `init` refuses, saying how to deepen it; a
/// clone three deep lists the two commits whose parents it has, never the boundary.
#[test]
fn init_in_a_shallow_clone_never_lists_the_boundary_commit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = repository(dir.path(), 5);
    let url = format!("file://{}", repo.display());
    let one = dir.path().join("one");
    git(dir.path(), &["clone", "--quiet", "--depth", "1", &url, &one.display().to_string()]);
    let out = runner(&one).arg("init").output().expect("runs");
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains("this clone is shallow") && stderr_of(&out).contains("git fetch --deepen"), "{}", stderr_of(&out));
    assert!(!one.join("experiments").exists(), "nothing written");

    let three = dir.path().join("three");
    git(dir.path(), &["clone", "--quiet", "--depth", "3", &url, &three.display().to_string()]);
    let out = runner(&three).arg("init").output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let manifest = std::fs::read_to_string(three.join("experiments/review.toml")).expect("manifest");
    let listed = format!("commits = [\"{}\", \"{}\"]", git(&three, &["rev-parse", "HEAD~1"]), git(&three, &["rev-parse", "HEAD"]));
    assert!(manifest.contains(&listed), "{manifest}");
    // `plan` over a list naming the boundary says why it is skipped.
    let with_boundary =
        manifest.replace(&listed, &format!("commits = [\"{}\", \"{}\"]", git(&three, &["rev-parse", "HEAD~2"]), git(&three, &["rev-parse", "HEAD"])));
    std::fs::write(three.join("experiments/review.toml"), with_boundary).expect("write");
    let plan = runner(&three).args(["plan", "experiments/review.toml"]).output().expect("runs");
    assert!(plan.status.success(), "{}", stderr_of(&plan));
    let said = format!("{}{}", stdout_of(&plan), stderr_of(&plan));
    assert!(said.contains("the boundary of a shallow clone"), "{said}");
}

/// A repository whose newest commits are a bot's bumps and a docs change: `init` lists the
/// newest commits that change source files, and the bot is excluded by the manifest too.
#[test]
fn init_on_a_repository_of_bot_bumps_picks_the_recent_source_changes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = repository(dir.path(), 3);
    for i in 0..4 {
        std::fs::write(repo.join("requirements.txt"), format!("six=={i}\n")).expect("write");
        git(&repo, &["add", "--all"]);
        git_dated(&repo, Some(&format!("2024-01-02T00:00:{i:02}Z")), &["commit", "--quiet", "--author", "dependabot[bot] <bot@example.com>", "-m", "Bump six"]);
    }
    std::fs::write(repo.join("README.md"), "# docs\n").expect("write");
    git(&repo, &["add", "--all"]);
    git_dated(&repo, Some("2024-01-03T00:00:00Z"), &["commit", "--quiet", "-m", "Document it"]);
    let out = runner(&repo).arg("init").output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let manifest = std::fs::read_to_string(repo.join("experiments/review.toml")).expect("manifest");
    let sources: Vec<String> = (0..3).rev().map(|i| git(&repo, &["rev-parse", &format!("HEAD~{}", 5 + i)])).collect();
    let listed = format!("commits = [{}]", sources.iter().map(|s| format!("\"{s}\"")).collect::<Vec<_>>().join(", "));
    assert!(manifest.contains(&listed), "the three source changes, oldest first: {manifest}");
    assert!(manifest.contains("exclude-authors = [\"*[bot]*\""), "{manifest}");
    let plan = runner(&repo).args(["validate", "experiments/review.toml"]).output().expect("runs");
    assert!(plan.status.success(), "{}", stderr_of(&plan));
    assert!(stdout_of(&plan).contains("× 3 subjects"), "{}", stdout_of(&plan));
}
