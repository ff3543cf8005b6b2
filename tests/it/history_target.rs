//! A repository's own history as the target: `commits = "A..B"` (or a list) and
//! `pull-requests`, each commit a subject reviewed against its first parent; root commits,
//! merges, empty, binary-only and oversized changes; a seeded sample; comparisons that say
//! when they cannot be significant; the `ref` axis refused beside `commits`.

use super::*;

/// Runs git in `repo` with a fixed identity and the date of minute `n` of 2024 (so SHAs are the
/// same at every run of the test).
fn git_at(repo: &Path, n: u32, args: &[&str]) {
    let date = format!("2024-01-01T00:{:02}:{:02}Z", n / 60, n % 60);
    crate::git_dated(repo, Some(&date), args);
}

/// Commits what is staged in `repo` at a fixed date; `extra` goes before `-m`. Returns the SHA.
fn commit(repo: &Path, n: u32, message: &str, extra: &[&str]) -> String {
    let mut args = vec!["commit", "--quiet"];
    args.extend_from_slice(extra);
    args.extend(["-m", message]);
    git_at(repo, n, &args);
    git(repo, &["rev-parse", "HEAD"])
}

fn init(dir: &Path) -> PathBuf {
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "--quiet", "--initial-branch=main"]);
    git(&repo, &["config", "user.name", "t"]);
    git(&repo, &["config", "user.email", "t@example.com"]);
    repo
}

/// A repository of `n` commits, each adding a Python file the heuristic reviewer flags twice
/// (an `eval(` and a `TODO`) where the dry-run flags once.
fn python_history(dir: &Path, n: u32) -> PathBuf {
    let repo = init(dir);
    for i in 1..=n {
        std::fs::write(repo.join(format!("f{i}.py")), format!("def f{i}(code):\n    return eval(code)  # TODO: sandbox {i}\n")).expect("write");
        git(&repo, &["add", "--all"]);
        commit(&repo, i, &format!("Add f{i}"), &[]);
    }
    repo
}

/// Two built-in reviewers compared on findings over `commits`, with `target_extra` in [target].
fn history_manifest(dir: &Path, target: &str, matrix_extra: &str) -> PathBuf {
    write_manifest(
        dir,
        "history.toml",
        &format!(
            "version = 1\n[experiment]\nname = \"history\"\n[target]\nrepo = \"repo\"\n{target}\n[matrix]\nbaseline = [\"dry-run\", \"heuristic\"]\n{matrix_extra}\n[reviewer]\nkind = \"builtin\"\nname = \"{{{{baseline}}}}\"\n[[analysis]]\nkind = \"compare\"\naxis = \"baseline\"\nmetrics = [\"findings\"]\n[report]\noutput = \"out\"\n"
        ),
    )
}

fn results_json(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("out/results.json")).expect("results.json")).expect("json")
}

fn compare_data(results: &serde_json::Value) -> &serde_json::Value {
    &results["analyses"].as_array().expect("analyses").iter().find(|a| a["kind"] == "compare").expect("compare analysis")["data"]
}

#[test]
fn ten_commits_of_twelve_are_ten_subjects_oldest_first_and_a_compare_over_them_has_ten() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = python_history(dir.path(), 12);
    let manifest = history_manifest(dir.path(), "commits = \"HEAD~10..HEAD\"", "");
    let expected: Vec<String> = git(&repo, &["rev-list", "--first-parent", "--reverse", "HEAD~10..HEAD"]).lines().map(str::to_string).collect();
    assert_eq!(expected.len(), 10);

    let plan = runner(dir.path()).args(["plan"]).arg(&manifest).output().expect("runs");
    let text = stdout_of(&plan);
    assert!(plan.status.success(), "{}", stderr_of(&plan));
    assert!(text.contains("2 cells × 10 subjects × 1 repeat = 20 runs"), "{text}");
    assert!(text.contains("subjects: the first-parent commits of `HEAD~10..HEAD`: 10 commits, 10 reviewed:"), "{text}");
    assert!(text.contains(&format!("  {} Add f3\n", &expected[0][..7])), "short SHA and subject line: {text}");
    assert!(text.contains("compare #1 (axis `baseline`): 10 subjects per pair, smallest attainable p = 0.00195 (α = 0.05)"), "{text}");
    let json: serde_json::Value =
        serde_json::from_slice(&runner(dir.path()).args(["plan", "--json"]).arg(&manifest).output().expect("runs").stdout).expect("json");
    let planned: Vec<&str> = json["history"]["subjects"].as_array().expect("subjects").iter().map(|c| c["sha"].as_str().expect("sha")).collect();
    assert_eq!(planned, expected, "full SHAs, oldest first");
    assert_eq!(json["compare"][0]["fewest"], 10);

    let out = runner(dir.path()).args(["exec", "--quiet"]).arg(&manifest).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let results = results_json(dir.path());
    let comparison = &compare_data(&results)["comparisons"][0];
    assert_eq!(comparison["subjects"], 10);
    assert_eq!(comparison["conclusion"], "higher", "{comparison}");
    // Runs are the commits in history order, under their full SHAs.
    let subjects: Vec<&str> =
        results["runs"].as_array().expect("runs").iter().filter(|r| r["cell"] == "baseline=dry-run").map(|r| r["subject"].as_str().expect("subject")).collect();
    assert_eq!(subjects, expected);
    let md = std::fs::read_to_string(dir.path().join("out/RESULTS.md")).expect("RESULTS.md");
    assert!(md.contains("10 of 10 commits reviewed (the first-parent commits of `HEAD~10..HEAD`), each against its first parent."), "{md}");
    assert!(
        md.contains(&format!("| `{}` | Add f3 | `{}..{}` | 1 | 2 |", &expected[0][..7], &git(&repo, &["rev-parse", "HEAD~10"])[..7], &expected[0][..7])),
        "{md}"
    );
    assert!(md.contains("(paired permutation, 10 subjects, exact over 1 024 sign flips): **higher**."), "{md}");

    // Refs are resolved before hashing: one more commit shifts the range by one, and the nine
    // commits still in it are served from the cache.
    std::fs::write(repo.join("f13.py"), "x = 1\n").expect("write");
    git(&repo, &["add", "--all"]);
    commit(&repo, 13, "Add f13", &[]);
    let plan = runner(dir.path()).args(["plan"]).arg(&manifest).output().expect("runs");
    assert!(stdout_of(&plan).contains("(18 cached, 2 to run)"), "{}", stdout_of(&plan));
}

#[test]
fn three_subjects_cannot_be_significant_and_every_report_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    python_history(dir.path(), 5);
    let manifest = history_manifest(dir.path(), "commits = \"HEAD~3..HEAD\"", "");
    let plan = runner(dir.path()).args(["plan"]).arg(&manifest).output().expect("runs");
    let text = stdout_of(&plan);
    assert!(text.contains("compare #1 (axis `baseline`): 3 subjects per pair: cannot be significant at α = 0.05 (smallest attainable p = 0.250)"), "{text}");

    let summary = dir.path().join("summary.md");
    let out = runner(dir.path()).args(["exec", "--quiet", "--summary"]).arg(&summary).arg(&manifest).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    // Every commit has one more finding under the heuristic: as extreme as three subjects get,
    // and still p = 2/2³.
    let verdict = "(paired permutation, 3 subjects, exact over 8 sign flips): **3 subjects: cannot be significant at α = 0.05**.";
    let md = std::fs::read_to_string(dir.path().join("out/RESULTS.md")).expect("RESULTS.md");
    assert!(md.contains(&format!("p = 0.250 {verdict}")), "{md}");
    assert!(md.contains("| 3 | 3 subjects: cannot be significant at α = 0.05 |"), "the table's verdict: {md}");
    assert!(!md.contains("no detectable difference"), "{md}");
    let summary = std::fs::read_to_string(&summary).expect("summary");
    assert!(summary.contains(verdict), "{summary}");
    let results = results_json(dir.path());
    let comparison = &compare_data(&results)["comparisons"][0];
    assert_eq!((comparison["conclusion"].as_str(), comparison["min_p"].as_f64()), (Some("cannot_be_significant"), Some(0.25)));
}

#[test]
fn the_ref_axis_beside_commits_or_pull_requests_is_a_located_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    python_history(dir.path(), 3);
    for key in ["commits", "pull-requests"] {
        let manifest = history_manifest(dir.path(), &format!("{key} = \"HEAD~2..HEAD\""), "ref = [\"HEAD~1\"]");
        let out = runner(dir.path()).args(["validate"]).arg(&manifest).output().expect("runs");
        assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
        let err = stderr_of(&out);
        // Line 9 is `ref = [...]` in [matrix].
        assert!(err.contains(&format!("the `ref` axis does not apply with `{key}`: each commit is reviewed against its first parent")), "{err}");
        assert!(err.contains("history.toml:9:1"), "located at the axis: {err}");
    }
    // Nor do `head` beside `commits`, both selections at once, or a range that is not one.
    let manifest = history_manifest(dir.path(), "commits = \"HEAD~2\"\nhead = \"HEAD\"\nsample = 0", "");
    let err = stderr_of(&runner(dir.path()).args(["validate"]).arg(&manifest).output().expect("runs"));
    assert!(err.contains("`commits` must be a range `A..B`"), "{err}");
    assert!(err.contains("`head` does not apply with `commits` or `pull-requests`"), "{err}");
    assert!(err.contains("`sample` in [target] must be between 1 and"), "{err}");
    let manifest = history_manifest(dir.path(), "commits = \"HEAD~2..HEAD\"\npull-requests = \"HEAD~2..HEAD\"", "");
    let err = stderr_of(&runner(dir.path()).args(["validate"]).arg(&manifest).output().expect("runs"));
    assert!(err.contains("[target] takes `commits` or `pull-requests`, not both"), "{err}");
}

/// main: a root commit, an empty commit, a binary-only commit, an oversized one, a merge of a
/// feature branch, then a plain commit; the feature branch is one commit.
fn mixed_history(dir: &Path) -> (PathBuf, Vec<String>) {
    let repo = init(dir);
    let mut shas = Vec::new();
    std::fs::write(repo.join("calc.py"), "def add(a, b):\n    return a + b\n").expect("write");
    git(&repo, &["add", "--all"]);
    shas.push(commit(&repo, 1, "Start calc", &[]));
    shas.push(commit(&repo, 2, "Nothing at all", &["--allow-empty"]));
    std::fs::write(repo.join("logo.png"), [0x89, b'P', b'N', b'G', 0, 1, 2, 3, 0, 0xff]).expect("write");
    git(&repo, &["add", "--all"]);
    shas.push(commit(&repo, 3, "Add the logo", &[]));
    let big: String = (0..120).map(|i| format!("line {i}\n")).collect();
    std::fs::write(repo.join("big.txt"), big).expect("write");
    git(&repo, &["add", "--all"]);
    shas.push(commit(&repo, 4, "Vendor a large file", &[]));
    git(&repo, &["checkout", "--quiet", "-b", "feature"]);
    std::fs::write(repo.join("feature.py"), "def run(code):\n    return eval(code)\n").expect("write");
    git(&repo, &["add", "--all"]);
    commit(&repo, 5, "Run code", &[]);
    git(&repo, &["checkout", "--quiet", "main"]);
    git_at(&repo, 6, &["merge", "--quiet", "--no-ff", "-m", "Merge pull request #7 from feature", "feature"]);
    shas.push(git(&repo, &["rev-parse", "HEAD"]));
    std::fs::write(repo.join("calc.py"), "def add(a, b):\n    return a + b\n\n\ndef div(a, b):\n    return a / b  # TODO: zero\n").expect("write");
    git(&repo, &["add", "--all"]);
    shas.push(commit(&repo, 7, "Add div", &[]));
    git(&repo, &["tag", "start", &shas[0]]);
    (repo, shas)
}

#[test]
fn root_empty_binary_only_oversized_and_merge_commits_are_reported_not_crashed_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_repo, shas) = mixed_history(dir.path());
    // The root by its tag, the rest by position from HEAD: refs become full SHAs.
    let target = "commits = [\"start\", \"HEAD~4\", \"HEAD~3\", \"HEAD~2\", \"HEAD~1\", \"HEAD\"]\nmax-diff-lines = 100";
    let manifest = history_manifest(dir.path(), target, "");
    let plan = runner(dir.path()).args(["plan"]).arg(&manifest).output().expect("runs");
    let text = stdout_of(&plan);
    assert!(plan.status.success(), "{}", stderr_of(&plan));
    assert!(text.contains("subjects: 6 listed commits: 6 commits, 3 reviewed, 3 skipped:"), "{text}");
    assert!(text.contains(&format!("  {} Start calc — root commit: reviewed against the empty tree\n", &shas[0][..7])), "{text}");
    assert!(text.contains(&format!("  {} Merge pull request #7 from feature — merge commit: reviewed against its first parent\n", &shas[4][..7])), "{text}");
    assert!(text.contains(&format!("  {} Nothing at all — empty change\n", &shas[1][..7])), "{text}");
    assert!(text.contains(&format!("  {} Add the logo — binary files only (1 file)\n", &shas[2][..7])), "{text}");
    assert!(text.contains(&format!("  {} Vendor a large file — 120 changed lines, over the limit of 100 (`max-diff-lines`)\n", &shas[3][..7])), "{text}");
    assert!(text.contains("2 cells × 3 subjects × 1 repeat = 6 runs"), "{text}");

    let out = runner(dir.path()).args(["exec", "--quiet"]).arg(&manifest).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let results = results_json(dir.path());
    assert_eq!(results["totals"]["succeeded"], 6, "the root, the merge and the plain commit each reviewed: {}", results["totals"]);
    let history = &results["target"]["history"];
    let reviewed: Vec<&str> = history["subjects"].as_array().expect("subjects").iter().map(|c| c["sha"].as_str().expect("sha")).collect();
    assert_eq!(reviewed, [shas[0].as_str(), shas[4].as_str(), shas[5].as_str()]);
    // The root commit's change is its whole tree; the merge's is what the branch brought in.
    assert_eq!(history["subjects"][0]["base"], "4b825dc642cb6eb9a060e54bf8d69288fbee4904");
    assert_eq!((history["subjects"][1]["files"].as_u64(), history["subjects"][1]["lines"].as_u64()), (Some(1), Some(2)));
    let md = std::fs::read_to_string(dir.path().join("out/RESULTS.md")).expect("RESULTS.md");
    assert!(md.contains("3 of 6 commits reviewed (6 listed commits), each against its first parent; 3 skipped."), "{md}");
    assert!(
        md.contains(&format!("| `{}` | Start calc | `4b825dc..{}` | 1 | 2 | root commit: reviewed against the empty tree |", &shas[0][..7], &shas[0][..7])),
        "{md}"
    );
    assert!(md.contains(&format!("| `{}` | Nothing at all | empty change |", &shas[1][..7])), "{md}");
    assert!(md.contains(&format!("| `{}` | Add the logo | binary files only (1 file) |", &shas[2][..7])), "{md}");
    assert!(md.contains("120 changed lines, over the limit of 100 (`max-diff-lines`)"), "{md}");

    // Pull requests: the merge commits on the first-parent line, none of them noted as merges.
    let manifest = history_manifest(dir.path(), "pull-requests = \"start..HEAD\"", "");
    let text = stdout_of(&runner(dir.path()).args(["plan"]).arg(&manifest).output().expect("runs"));
    assert!(text.contains("2 cells × 1 subject × 1 repeat = 2 runs"), "{text}");
    assert!(text.contains(&format!("  {} Merge pull request #7 from feature\n", &shas[4][..7])), "{text}");
    // A range without merges says what to do instead.
    let manifest = history_manifest(dir.path(), "pull-requests = \"HEAD~1..HEAD\"", "");
    let out = runner(dir.path()).args(["plan"]).arg(&manifest).output().expect("runs");
    assert!(!out.status.success());
    assert!(stderr_of(&out).contains("selects no merge commit on the first-parent line"), "{}", stderr_of(&out));
    // A selection where nothing can be reviewed is refused with every reason.
    let manifest = history_manifest(dir.path(), "commits = [\"HEAD~4\", \"HEAD~3\"]", "");
    let err = stderr_of(&runner(dir.path()).args(["plan"]).arg(&manifest).output().expect("runs"));
    assert!(err.contains("leave nothing to review") && err.contains("empty change") && err.contains("binary files only"), "{err}");
}

#[test]
fn a_seeded_sample_is_reproducible_and_recorded() {
    let dir = tempfile::tempdir().expect("tempdir");
    python_history(dir.path(), 12);
    let sampled = |seed: u64| -> Vec<String> {
        let manifest = history_manifest(dir.path(), &format!("commits = \"HEAD~10..HEAD\"\nsample = 4\nseed = {seed}"), "");
        let json: serde_json::Value =
            serde_json::from_slice(&runner(dir.path()).args(["plan", "--json"]).arg(&manifest).output().expect("runs").stdout).expect("json");
        assert_eq!(json["history"]["sample"], serde_json::json!({ "size": 4, "of": 10, "seed": seed }));
        json["history"]["subjects"].as_array().expect("subjects").iter().map(|c| c["sha"].as_str().expect("sha").to_string()).collect()
    };
    let seven = sampled(7);
    assert_eq!(seven.len(), 4);
    assert_eq!(seven, sampled(7), "the same seed draws the same commits");
    assert_ne!(seven, sampled(8), "another seed draws others");
    let manifest = history_manifest(dir.path(), "commits = \"HEAD~10..HEAD\"\nsample = 4\nseed = 7", "");
    let out = runner(dir.path()).args(["exec", "--quiet"]).arg(&manifest).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let md = std::fs::read_to_string(dir.path().join("out/RESULTS.md")).expect("RESULTS.md");
    assert!(md.contains("The reviewed commits are a seeded sample of 4 of the 10 reviewable ones (seed 7)."), "{md}");
    for sha in &seven {
        assert!(md.contains(&format!("| `{}` |", &sha[..7])), "{sha} listed: {md}");
    }
}

#[test]
fn a_command_reviewer_gets_each_commits_base_and_head_in_its_own_worktree() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = python_history(dir.path(), 4);
    // The script reports the range it was given and the commit checked out where it runs.
    let script = dir.path().join("review.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\nhead=$(git rev-parse HEAD)\nprintf '{\"findings\":[{\"id\":\"x\",\"file\":\"a.py\",\"line\":1,\"severity\":\"info\",\"category\":\"style\",\"confidence\":1,\"message\":\"%s..%s at %s\"}]}\\n' \"$1\" \"$2\" \"$head\"\n",
    )
    .expect("write");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let text = |isolation: &str| {
        format!(
            "version = 1\n[experiment]\nname = \"cmd\"\n[target]\nrepo = \"repo\"\ncommits = \"HEAD~3..HEAD\"\n[matrix]\nrepeat = 1\n[reviewer]\nkind = \"command\"\nprogram = \"./review.sh\"\nargs = [\"{{{{base}}}}\", \"{{{{head}}}}\"]\n{isolation}\n[report]\noutput = \"out\"\n"
        )
    };
    // Without a worktree per run, a command reviewer would review the checked-out commit.
    let manifest = write_manifest(dir.path(), "cmd.toml", &text(""));
    let err = stderr_of(&runner(dir.path()).args(["validate"]).arg(&manifest).output().expect("runs"));
    assert!(err.contains("reviewer `reviewer` (command) reviews the checked-out commit, but 2 of the 3 selected commits are not checked out"), "{err}");
    assert!(err.contains("set `isolation = \"worktree\"`"), "{err}");

    let manifest = write_manifest(dir.path(), "cmd.toml", &text("isolation = \"worktree\""));
    let out = runner(dir.path()).args(["exec", "--quiet"]).arg(&manifest).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let shown = runner(dir.path()).args(["show", "--json"]).arg(&manifest).output().expect("runs");
    let shown = stdout_of(&shown);
    for i in 0..3 {
        let head = git(&repo, &["rev-parse", &format!("HEAD~{i}")]);
        let base = git(&repo, &["rev-parse", &format!("HEAD~{}", i + 1)]);
        assert!(shown.contains(&format!("{base}..{head} at {head}")), "commit {head} reviewed as {base}..{head} in its own checkout: {shown}");
    }
    assert_eq!(git(&repo, &["worktree", "list"]).lines().count(), 1, "every worktree removed");
}

#[test]
fn an_analysis_that_needs_an_oracle_is_refused_on_a_target_without_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    python_history(dir.path(), 3);
    let text = std::fs::read_to_string(history_manifest(dir.path(), "commits = \"HEAD~2..HEAD\"", "")).expect("read");
    let text = text
        .replace("metrics = [\"findings\"]", "metrics = [\"findings\", \"recall\", \"f1\"]")
        .replace("[report]", "[[analysis]]\nkind = \"review-eval\"\n[report]");
    let manifest = write_manifest(dir.path(), "history.toml", &text);
    let out = runner(dir.path()).args(["validate"]).arg(&manifest).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(err.contains("compare metrics `recall`, `f1` need an oracle, but the git repository names no `oracle` file"), "{err}");
    assert!(err.contains("analysis `review-eval` scores findings against an oracle, but the git repository names no `oracle` file"), "{err}");
    // Each at its own place: the `metrics` value, the analysis's `kind`.
    assert!(err.contains("history.toml:16:11") && err.contains("history.toml:18:8"), "{err}");
    // Without `metrics`, a comparison compares what it can: no error.
    let text = text.replace("metrics = [\"findings\", \"recall\", \"f1\"]\n", "").replace("[[analysis]]\nkind = \"review-eval\"\n", "");
    let manifest = write_manifest(dir.path(), "history.toml", &text);
    let out = runner(dir.path()).args(["validate"]).arg(&manifest).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
}

/// The `resolution` analysis over an execution on a history: the engine walks it like any
/// analysis, and its counts are the hand count. Commits c1–c4 each add f{i}.py (the heuristic
/// flags line 2 twice, the dry-run flags line 1 once); c5 rewrites f3.py's line 2. With a
/// window of 2 up to the range's end (c5): c2's findings are followed through c3 and c4
/// (unresolved), c3's through c4 and c5 (resolved), c4's and c5's are pending (c5 leaves the
/// heuristic nothing to flag).
#[test]
fn the_resolution_analysis_counts_findings_a_later_commit_changed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = python_history(dir.path(), 4);
    std::fs::write(repo.join("f3.py"), "def f3(code):\n    return int(code)\n").expect("write");
    git(&repo, &["add", "--all"]);
    let c5 = commit(&repo, 5, "Parse f3's input", &[]);
    let c3 = git(&repo, &["rev-parse", "HEAD~2"]);
    let text = std::fs::read_to_string(history_manifest(dir.path(), "commits = \"HEAD~4..HEAD\"", "")).expect("read");
    let text = text
        .replace("metrics = [\"findings\"]", "metrics = [\"findings\", \"resolution\"]")
        .replace("[report]", "[[analysis]]\nkind = \"resolution\"\nwindow = 2\n[report]");
    let manifest = write_manifest(dir.path(), "history.toml", &text);
    let out = runner(dir.path()).args(["exec", "--quiet"]).arg(&manifest).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let results = results_json(dir.path());
    let analysis = results["analyses"].as_array().expect("analyses").iter().find(|a| a["kind"] == "resolution").expect("resolution analysis");
    let cell = |id: &str| analysis["data"].as_array().expect("cells").iter().find(|c| c["cell"] == id).expect("cell").clone();
    let (dry, heuristic) = (cell("baseline=dry-run"), cell("baseline=heuristic"));
    assert_eq!((dry["resolution"]["resolved"].as_u64(), dry["resolution"]["posted"].as_u64(), dry["pending"].as_u64()), (Some(1), Some(2), Some(2)), "{dry}");
    assert_eq!(
        (heuristic["resolution"]["resolved"].as_u64(), heuristic["resolution"]["posted"].as_u64(), heuristic["pending"].as_u64()),
        (Some(2), Some(4), Some(2)),
        "{heuristic}"
    );
    // The comparison's per-commit values are the same counts: c2's findings unresolved, c3's
    // resolved, c4 and c5 without a value (their windows are not complete).
    let c2 = git(&repo, &["rev-parse", "HEAD~3"]);
    for cell in compare_data(&results)["cells"].as_array().expect("cells") {
        assert_eq!(cell["metrics"]["resolution"]["subjects"], serde_json::json!({ c2.clone(): 0.0, c3.clone(): 1.0 }), "{cell}");
    }
    let markdown = std::fs::read_to_string(dir.path().join("out/RESULTS.md")).expect("RESULTS.md");
    assert!(markdown.contains("a proxy") && markdown.contains(&format!("Followed up to `{}`", &c5[..7])), "{markdown}");
    assert!(markdown.contains("| resolution |"), "compared: {markdown}");
    assert!(!markdown.contains(&format!("{} (", &c3[..7])), "c3's window is complete: not pending: {markdown}");
    assert!(markdown.contains("](plots/resolution-rate.svg)") && dir.path().join("out/plots/resolution-rate.svg").is_file(), "the rates charted: {markdown}");

    // A head the repository does not have is said before anything runs.
    let wrong = std::fs::read_to_string(&manifest).expect("read").replace("window = 2\n", "window = 2\nhead = \"no-such-branch\"\n");
    let out = runner(dir.path()).args(["validate"]).arg(write_manifest(dir.path(), "wrong-head.toml", &wrong)).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr_of(&out).contains("analysis #2 (`resolution`): `head = \"no-such-branch\"` is not a commit of"), "{}", stderr_of(&out));

    // On a target that is not a history, `validate` says so where the analysis is.
    let text =
        std::fs::read_to_string(&manifest).expect("read").replace("commits = \"HEAD~4..HEAD\"\n", "").replace("[matrix]\n", "[matrix]\nref = [\"HEAD~1\"]\n");
    let manifest = write_manifest(dir.path(), "history.toml", &text);
    let out = runner(dir.path()).args(["validate"]).arg(&manifest).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(
        err.contains("analysis `resolution` follows findings through later commits of a repository's history, but a `ref` target reviews one change per ref"),
        "{err}"
    );
    assert!(err.contains("compare metric `resolution` follows findings through later commits"), "{err}");
    let line = text.lines().position(|l| l == "kind = \"resolution\"").expect("kind line") + 1;
    assert!(err.contains(&format!("history.toml:{line}:8")), "{err}");
}

/// `paths`, `merges = false`, `exclude-authors` and `min-changed-lines` keep only the commits
/// that match; `plan` lists the rest with why.
#[test]
fn the_commit_filter_plans_only_matching_commits_and_says_why_others_are_skipped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = init(dir.path());
    let write = |path: &str, text: &str| {
        let full = repo.join(path);
        std::fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
        std::fs::write(full, text).expect("write");
        git(&repo, &["add", "--all"]);
    };
    write("README.md", "# r\n");
    commit(&repo, 1, "Import", &[]);
    write("src/a.py", "def a():\n    return eval(x)\n");
    let source = commit(&repo, 2, "Add a", &[]);
    write("docs/guide.md", "guide\n");
    commit(&repo, 3, "Write the guide", &[]);
    write("src/b.py", "def b():\n    return 1\n");
    commit(&repo, 4, "Bump b", &["--author", "dependabot[bot] <bot@example.com>"]);
    write("src/c.py", "c = 1\n");
    commit(&repo, 5, "Tiny c", &[]);
    git(&repo, &["checkout", "--quiet", "-b", "side"]);
    write("src/d.py", "def d():\n    return eval(y)\n    # TODO\n");
    commit(&repo, 6, "Add d", &[]);
    git(&repo, &["checkout", "--quiet", "main"]);
    git_at(&repo, 7, &["merge", "--quiet", "--no-ff", "-m", "Merge side", "side"]);
    let first = git(&repo, &["rev-list", "--max-parents=0", "HEAD"]);
    let target = format!("commits = \"{first}..HEAD\"\npaths = [\"src/**\"]\nmerges = false\nexclude-authors = [\"*[bot]*\"]\nmin-changed-lines = 2");
    let manifest = history_manifest(dir.path(), &target, "");
    let plan = runner(dir.path()).args(["plan"]).arg(&manifest).output().expect("runs");
    assert!(plan.status.success(), "{}", stderr_of(&plan));
    let said = stdout_of(&plan);
    assert!(said.contains(&source[..7]), "{said}");
    for why in
        ["changes no path that `paths` selects", "authored by `dependabot[bot]`", "fewer than `min-changed-lines` (2)", "a merge commit (`merges = false`)"]
    {
        assert!(said.contains(why), "{why}: {said}");
    }
    let exec = runner(dir.path()).args(["exec", "--quiet"]).arg(&manifest).output().expect("runs");
    assert!(exec.status.success() || exec.status.code() == Some(0), "{}", stderr_of(&exec));
    let results = results_json(dir.path());
    let subjects: Vec<&str> = results["runs"].as_array().expect("runs").iter().filter_map(|r| r["subject"].as_str()).collect();
    assert!(subjects.iter().all(|s| s.starts_with(&source[..7]) || s.starts_with(&git(&repo, &["rev-parse", "side"])[..7])), "{subjects:?}");
    // A typo'd filter key is a located error naming the right one.
    let bad = history_manifest(dir.path(), &format!("commits = \"{first}..HEAD\"\nmerges = \"no\""), "");
    let v = runner(dir.path()).args(["validate"]).arg(&bad).output().expect("runs");
    assert_eq!(v.status.code(), Some(1), "{}", stderr_of(&v));
}

#[test]
fn recall_over_a_mined_oracle_is_split_at_the_reviewers_training_cutoff() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = init(dir.path());
    let at = |date: &str, message: &str| {
        git(&repo, &["add", "--all"]);
        crate::git_dated(&repo, Some(date), &["commit", "--quiet", "-m", message]);
        git(&repo, &["rev-parse", "HEAD"])
    };
    std::fs::write(repo.join("README.md"), "# app\n").expect("write");
    at("2023-01-01T00:00:00Z", "Start");
    std::fs::write(repo.join("a.py"), "def f1(code):\n    return eval(code)  # TODO: sandbox 1\n").expect("write");
    let first = at("2023-02-01T00:00:00Z", "Add f1");
    std::fs::write(repo.join("b.py"), "def f2(code):\n    return eval(code)  # TODO: sandbox 2\n").expect("write");
    let second = at("2023-03-01T00:00:00Z", "Add f2");
    std::fs::write(repo.join("a.py"), "def f1(code):\n    return int(code)\n").expect("write");
    at("2023-06-01T00:00:00Z", "Fix code injection in f1");
    std::fs::write(repo.join("b.py"), "def f2(code):\n    return int(code)\n").expect("write");
    at("2024-06-01T00:00:00Z", "Fix code injection in f2");

    let mined = runner(dir.path()).args(["oracle", "mine", "--repo", "repo", "--out", "oracle.json"]).output().expect("runs");
    assert!(mined.status.success(), "{}", stderr_of(&mined));
    let oracle: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("oracle.json")).expect("oracle")).expect("json");
    let fixed: Vec<&str> = oracle["findings"].as_array().expect("findings").iter().filter_map(|f| f["fixed"].as_str()).collect();
    assert_eq!(fixed, ["2023-06-01", "2024-06-01"], "each mined bug carries its fix date: {oracle}");

    let manifest = |cutoff: &str| {
        write_manifest(
            dir.path(),
            "shipped.toml",
            &format!(
                "version = 1\n[experiment]\nname = \"shipped\"\n[target]\nrepo = \"repo\"\ncommits = [\"{first}\", \"{second}\"]\noracle = \"oracle.json\"\n[matrix]\nbaseline = [\"dry-run\", \"heuristic\"]\n[reviewer]\nkind = \"builtin\"\nname = \"{{{{baseline}}}}\"\ntraining-cutoff = \"{cutoff}\"\n[[analysis]]\nkind = \"review-eval\"\nevidence = \"location\"\n[report]\noutput = \"out\"\n"
            ),
        )
    };
    let bad = runner(dir.path()).args(["validate"]).arg(manifest("June 2024")).output().expect("runs");
    assert!(!bad.status.success());
    assert!(
        stderr_of(&bad).contains("shipped.toml:13:19") && stderr_of(&bad).contains("`training-cutoff` must be a date such as `2024-06-30`"),
        "{}",
        stderr_of(&bad)
    );

    let exec = runner(dir.path()).args(["exec", "--quiet"]).arg(manifest("2024-01-01")).output().expect("runs");
    assert!(exec.status.success(), "{}", stderr_of(&exec));
    let md = std::fs::read_to_string(dir.path().join("out/RESULTS.md")).expect("RESULTS.md");
    assert!(md.contains("Recall by fix date and training cut-off") && md.contains("a sign of contamination, not a proof"), "{md}");
    let results = results_json(dir.path());
    let eval = results["analyses"].as_array().expect("analyses").iter().find(|a| a["kind"] == "review-eval").expect("review-eval");
    let rows = eval["data"]["recall_by_cutoff"].as_array().expect("split rows");
    assert_eq!(rows.len(), 2, "{rows:?}");
    for row in rows {
        assert_eq!(
            (row["cutoff"].as_str(), row["before"].as_u64(), row["after"].as_u64(), row["undated"].as_u64()),
            (Some("2024-01-01"), Some(1), Some(1), Some(0)),
            "{row}"
        );
    }
    // The heuristic reviewer flags both `eval(` lines the fixes later changed.
    let heuristic = rows.iter().find(|r| r["cell"] == "baseline=heuristic").expect("heuristic");
    assert_eq!((heuristic["before_found"].as_u64(), heuristic["after_found"].as_u64()), (Some(1), Some(1)), "{heuristic}");
}
