//! The bundled experiments reproduce their committed RESULTS.md, results.json, charts and list
//! of outputs byte for byte from the committed cache with `--frozen`, written to a temporary
//! directory (the repository's `results/` and `.runner/` are left alone).

use crate::{project_root, runner};

#[test]
fn every_bundled_experiment_reproduces_its_committed_results_byte_for_byte() {
    let root = project_root();
    let tmp = tempfile::tempdir().expect("tempdir");
    for name in [
        "quickstart",
        "scored",
        "model-swap",
        "replay-tools",
        "code-review-benchmark",
        "aacr-bench",
        "studies",
        "studies-rqs",
        "strategies",
        "own-history",
        "shipped-bugs",
    ] {
        // own-history and shipped-bugs review pinned commits of this repository, which a
        // shallow clone lacks.
        let pinned = matches!(name, "own-history" | "shipped-bugs");
        if let Some(why) = pinned.then(|| pinned_commits_missing(&root, &root.join(format!("experiments/{name}.toml")))).flatten() {
            eprintln!("SKIPPED {name} (every other experiment is checked): {why}");
            continue;
        }
        let out = tmp.path().join(name);
        let run = runner(&root)
            .args(["exec", "--frozen", "--quiet", "--cache-dir", "cache", "--work-dir"])
            .arg(tmp.path().join("work"))
            .arg("--output")
            .arg(&out)
            .arg(format!("experiments/{name}.toml"))
            .output()
            .expect("runs");
        assert!(run.status.success(), "{name}: {}", String::from_utf8_lossy(&run.stderr));
        // report.html where the manifest asks for it (`[report] html = true`: model-swap).
        let html = root.join("results").join(name).join("report.html").is_file();
        // The list of what runner wrote there, too: committed, so an execution into `results/`
        // leaves the tree as it was.
        for file in ["RESULTS.md", "results.json", "report.html", ".runner-outputs.json"].into_iter().filter(|f| html || *f != "report.html") {
            let committed = std::fs::read_to_string(root.join("results").join(name).join(file)).expect("committed");
            let written = std::fs::read_to_string(out.join(file)).unwrap_or_else(|e| panic!("{name}/{file}: {e}"));
            assert!(written == committed, "{name}/{file} differs from the committed one; first differing line: {:?}", first_difference(&committed, &written));
        }
        same_charts(&root.join("results").join(name), &out, name);
    }
    for name in ["quickstart", "model-swap"] {
        let charts = svg_files(&root.join("results").join(name).join("plots"));
        for chart in ["latency-seconds.svg", "distribution-category.svg", "distribution-severity.svg"] {
            assert!(charts.iter().any(|c| c == chart), "{name} has no {chart}: {charts:?}");
        }
    }
    assert!(tmp.path().join("work/executions").is_dir(), "the execution logs went to --work-dir");
}

/// The paths a report names (study sheets, τ calibration, anchor set, matching calibration,
/// the target, the manifest) are relative to the project root, so every bundled manifest run
/// from its own directory writes the committed bytes (the two that review pinned commits of
/// this repository are checked from the root above); the default cache is the root's too.
#[test]
fn a_manifest_run_from_its_own_directory_writes_the_committed_reports() {
    let root = project_root();
    let tmp = tempfile::tempdir().expect("tempdir");
    let names = ["quickstart", "scored", "model-swap", "replay-tools", "code-review-benchmark", "aacr-bench", "studies", "studies-rqs", "rqs", "strategies"];
    for name in names {
        let out = tmp.path().join(name);
        let run = runner(&root.join("experiments"))
            .args(["exec", "--frozen", "--quiet", "--work-dir"])
            .arg(tmp.path().join("work"))
            .arg("--output")
            .arg(&out)
            .arg(format!("{name}.toml"))
            .output()
            .expect("runs");
        assert!(run.status.success(), "{name}: {}", String::from_utf8_lossy(&run.stderr));
        for file in ["RESULTS.md", "results.json"] {
            let committed = std::fs::read_to_string(root.join("results").join(name).join(file)).expect("committed");
            let written = std::fs::read_to_string(out.join(file)).unwrap_or_else(|e| panic!("{name}/{file}: {e}"));
            assert!(written == committed, "{name}/{file} from experiments/ differs; first differing line: {:?}", first_difference(&committed, &written));
        }
    }
}

/// Why the pinned commits a manifest names (every 40-hex-digit word) cannot all be read in
/// the repository at `root`, or `None` when they can.
fn pinned_commits_missing(root: &std::path::Path, manifest: &std::path::Path) -> Option<String> {
    let text = std::fs::read_to_string(manifest).expect("manifest");
    let mut shas: Vec<&str> = text.split(|c: char| !c.is_ascii_hexdigit()).filter(|w| w.len() == 40).collect();
    shas.sort_unstable();
    shas.dedup();
    assert!(!shas.is_empty(), "{} pins no commit", manifest.display());
    let has = |sha: &str| {
        std::process::Command::new("git").arg("-C").arg(root).args(["cat-file", "-e", &format!("{sha}^{{commit}}")]).output().is_ok_and(|o| o.status.success())
    };
    let missing: Vec<&str> = shas.into_iter().filter(|s| !has(s)).collect();
    (!missing.is_empty()).then(|| {
        format!(
            "this checkout lacks the commit{} {} that {} reviews (a shallow clone? `git fetch --unshallow`, as .ci/run does)",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", "),
            manifest.display()
        )
    })
}

/// The check that skips own-history names the pinned commits a repository lacks, and none in a
/// repository that has them.
#[test]
fn own_history_is_skipped_only_where_its_pinned_commits_are_missing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    crate::git(&repo, &["init", "--quiet", "--initial-branch=main"]);
    std::fs::write(repo.join("a.txt"), "a\n").expect("write");
    crate::git(&repo, &["add", "--all"]);
    crate::git(&repo, &["commit", "--quiet", "-m", "a"]);
    let head = crate::git(&repo, &["rev-parse", "HEAD"]);
    let manifest = dir.path().join("m.toml");
    let absent = "0123456789abcdef0123456789abcdef01234567";
    std::fs::write(&manifest, format!("commits = \"{head}..{absent}\"\n")).expect("write");
    let why = pinned_commits_missing(&repo, &manifest).expect("one commit is missing");
    assert!(why.contains(absent) && !why.contains(&head) && why.contains("git fetch --unshallow"), "{why}");
    std::fs::write(&manifest, format!("commits = \"{head}..{head}\"\n")).expect("write");
    assert_eq!(pinned_commits_missing(&repo, &manifest), None);
}

/// `runner crscore --frozen` reproduces the committed CRScore correlation table from the
/// embeddings in the committed cache.
#[test]
fn the_crscore_check_reproduces_its_committed_results_from_the_cache() {
    let root = project_root();
    let tmp = tempfile::tempdir().expect("tempdir");
    let run = runner(&root).args(["crscore", "--frozen", "--cache", "cache", "--out"]).arg(tmp.path()).output().expect("runs");
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    for file in ["RESULTS.md", "crscore.json", "calibration.json"] {
        let committed = std::fs::read_to_string(root.join("results/crscore").join(file)).expect("committed");
        let written = std::fs::read_to_string(tmp.path().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(written == committed, "crscore/{file} differs; first differing line: {:?}", first_difference(&committed, &written));
    }
}

/// RQS v2's bundled experiment reproduces its committed results with `--frozen` on a machine
/// without the analyzers: every judge call, claims answer, analyzer run and embedding comes
/// from the committed cache, and so do the analyzers' versions its smells are keyed by. `PATH`
/// names an empty directory, so no ruff, JSHint, node or rustc can be asked for a version.
#[test]
fn rqs_reproduces_its_committed_results_without_the_analyzers() {
    let root = project_root();
    let tmp = tempfile::tempdir().expect("tempdir");
    let empty = tmp.path().join("bin");
    std::fs::create_dir_all(&empty).expect("mkdir");
    let frozen = |manifest: &std::path::Path, out: &std::path::Path| {
        runner(&root)
            .args(["exec", "--frozen", "--quiet", "--cache-dir", "cache", "--work-dir"])
            .arg(tmp.path().join("work"))
            .arg("--output")
            .arg(out)
            .arg(manifest)
            .env("PATH", &empty)
            .output()
            .expect("runs")
    };
    let out = tmp.path().join("rqs");
    let run = frozen(std::path::Path::new("experiments/rqs.toml"), &out);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    for file in ["RESULTS.md", "results.json", ".runner-outputs.json"] {
        let committed = std::fs::read_to_string(root.join("results/rqs").join(file)).expect("committed");
        let written = std::fs::read_to_string(out.join(file)).unwrap_or_else(|e| panic!("rqs/{file}: {e}"));
        assert!(written == committed, "rqs/{file} differs; first differing line: {:?}", first_difference(&committed, &written));
    }
    same_charts(&root.join("results/rqs"), &out, "rqs");

    // The versions pinned in the manifest instead: the same results. The manifest's copy names
    // the project's files by absolute paths.
    let text = std::fs::read_to_string(root.join("experiments/rqs.toml")).expect("manifest").replace("\"../", &format!("\"{}/", root.display()));
    let versions = r#"analyzer-versions = { clippy = "clippy 0.1.95 (59807616e1 2026-04-14); rustc 1.95.0 (59807616e 2026-04-14)", jshint = "jshint v2.13.6 (node v20.20.2)", ruff = "ruff 0.17.5" }"#;
    let analyzers = "analyzers = [\"ruff\", \"jshint\", \"rustc\"]";
    assert!(text.contains(analyzers), "the manifest declares its analyzers so");
    let pinned = tmp.path().join("pinned.toml");
    std::fs::write(&pinned, text.replace(analyzers, &format!("{analyzers}\n{versions}"))).expect("write");
    let out = tmp.path().join("pinned");
    let run = frozen(&pinned, &out);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    // The same numbers; only the paths the copy names differ in the text.
    let committed = std::fs::read_to_string(root.join("results/rqs/results.json")).expect("committed");
    let written = std::fs::read_to_string(out.join("results.json"))
        .expect("written")
        .replace(&format!("{}/", root.display()), "")
        .replace(&format!("\"manifest\": \"{}\"", pinned.display()), "\"manifest\": \"experiments/rqs.toml\"")
        .replace("\"manifest\": \"pinned.toml\"", "\"manifest\": \"experiments/rqs.toml\"");
    assert!(written == committed, "pinned: results.json differs; first differing line: {:?}", first_difference(&committed, &written));

    // Another pinned version keys other smells, which the cache does not hold.
    std::fs::write(&pinned, text.replace(analyzers, &format!("{analyzers}\n{}", versions.replace("ruff 0.17.5", "ruff 0.18.0")))).expect("write");
    let run = frozen(&pinned, &tmp.path().join("other"));
    assert!(!run.status.success());
    assert!(
        String::from_utf8_lossy(&run.stderr).contains("scoring nodes (judges, claims, smells, embeddings) are not in the cache"),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

/// The `.svg` files directly in `dir`, sorted.
fn svg_files(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(Result::ok).map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.ends_with(".svg")).collect())
        .unwrap_or_default();
    names.sort();
    names
}

/// The charts written under `out/plots/` are the committed ones under `committed/plots/`, the
/// same files byte for byte; and RESULTS.md links each of them.
fn same_charts(committed: &std::path::Path, out: &std::path::Path, name: &str) {
    let (expected, written) = (svg_files(&committed.join("plots")), svg_files(&out.join("plots")));
    assert_eq!(written, expected, "{name}: the charts written are not the committed ones");
    let markdown = std::fs::read_to_string(out.join("RESULTS.md")).expect("RESULTS.md");
    for chart in &written {
        let (a, b) = (std::fs::read(committed.join("plots").join(chart)).expect("committed"), std::fs::read(out.join("plots").join(chart)).expect("written"));
        assert!(a == b, "{name}/plots/{chart} differs from the committed one");
        assert!(markdown.contains(&format!("](plots/{chart})")), "{name}/RESULTS.md does not link plots/{chart}");
    }
}

fn first_difference(a: &str, b: &str) -> Option<(usize, String, String)> {
    a.lines().zip(b.lines()).enumerate().find(|(_, (x, y))| x != y).map(|(i, (x, y))| (i + 1, x.to_string(), y.to_string()))
}

/// The strategies experiment's captured results, adjudicated by runner's automatic matcher
/// from the committed cache (`adjudicate export --fill matcher`, then `import`), are the
/// committed ones, labelled machine-adjudicated, and `runner score` scores them as committed:
/// metrics only where the provider reported them.
#[test]
fn the_strategies_machine_adjudication_is_scored_as_committed() {
    let root = project_root();
    let tmp = tempfile::tempdir().expect("tempdir");
    let adj = tmp.path().join("adj");
    let committed = root.join("results/strategies/adjudication");
    let run = |args: Vec<std::ffi::OsString>| {
        let out = runner(&root).args(args).output().expect("runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let os = |words: &[&str]| words.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
    let mut export = os(&["adjudicate", "export", "experiments/strategies.toml", "--fill", "matcher", "--cache-dir", "cache", "--out"]);
    export.push(adj.clone().into());
    run(export);
    assert_eq!(std::fs::read_to_string(adj.join("sheet.csv")).ok(), std::fs::read_to_string(committed.join("sheet.csv")).ok(), "the filled sheet");
    let mut import = os(&["adjudicate", "import"]);
    import.extend([adj.join("sheet.csv").into(), "--key".into(), adj.join("key.json").into(), "--oracle".into(), "corpus/quickstart".into(), "--out".into()]);
    import.push(adj.join("captured-results.json").into());
    run(import);
    let captured = std::fs::read_to_string(adj.join("captured-results.json")).expect("captured");
    assert_eq!(captured, std::fs::read_to_string(committed.join("captured-results.json")).expect("committed"));
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(adj.join("captured-results.adjudication.json")).expect("record")).expect("json");
    assert!(record["method"].as_str().is_some_and(|m| m.starts_with("machine-adjudicated, not by a person: runner's automatic matcher")), "{record}");
    // Every run's provider reported latency and tokens; a run without them would have no `metrics`.
    let results: serde_json::Value = serde_json::from_str(&captured).expect("json");
    let runs: Vec<&serde_json::Value> =
        results["strategies"].as_array().into_iter().flatten().flat_map(|s| s["runs"].as_array().into_iter().flatten()).collect();
    assert_eq!(runs.len(), 12);
    assert!(runs.iter().all(|r| r["metrics"]["inputTokens"].is_number() && r["metrics"]["latencyMs"].is_number()), "{captured}");
    let mut score = os(&["score"]);
    score.extend([adj.join("captured-results.json").into(), "--oracle".into(), "corpus/quickstart".into()]);
    let scored = run(score);
    let committed_score = std::fs::read_to_string(committed.join("score.txt")).expect("score.txt");
    // The first two lines name the files scored; the scores below them are the committed ones.
    let tail = |text: &str| text.lines().skip(2).collect::<Vec<_>>().join("\n");
    assert_eq!(tail(&scored), tail(&committed_score));
    assert!(scored.lines().nth(1).is_some_and(|l| l.starts_with("method: machine-adjudicated, not by a person")), "{scored}");
}
