//! `runner show` (what reviewers said, from the cache) and `runner report` (the self-contained
//! HTML page), driven from the CLI on the bundled experiments and their committed caches, and
//! on a hostile reviewer whose findings and diff carry markup. The `html_report_chromium_*`
//! tests open the page in a real headless Chromium (`.ci/run` installs Debian's `chromium`).

use crate::{calc_repo, git, project_root, runner, stderr_of, stdout_of, write_manifest};
use std::path::{Path, PathBuf};

/// The committed results.json of a bundled experiment.
fn committed(name: &str) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(project_root().join("results").join(name).join("results.json")).expect("committed results.json")).expect("json")
}

#[test]
fn show_prints_a_runs_findings_from_the_committed_cache_as_text_and_json() {
    let root = project_root();
    let args = ["show", "experiments/quickstart.toml", "--cell", "baseline=heuristic", "--subject", "case-07", "--repeat", "1", "--cache-dir", "cache"];
    let out = runner(&root).args(args).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let text = stdout_of(&out);
    assert!(text.starts_with("quickstart: 1 run selected, 1 in the cache, 2 findings\n"), "{text}");
    assert!(text.contains("baseline=heuristic #1 @case-07  (key "), "{text}");
    assert!(text.contains("  src/query.mjs:37  error security  [partial F05]\n      SQL text is built from interpolated values"), "{text}");
    assert!(text.contains("      suggestion: Use bound parameters"), "{text}");

    let out = runner(&root).args(args).arg("--json").output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let json: serde_json::Value = serde_json::from_str(&stdout_of(&out)).expect("json");
    let run = &json["runs"][0];
    assert_eq!(json["runs"].as_array().map(Vec::len), Some(1));
    assert_eq!((run["status"].as_str(), run["reviewer"].as_str(), run["repeat"].as_u64()), (Some("cached"), Some("reviewer"), Some(1)));
    let findings = run["findings"].as_array().expect("findings");
    assert_eq!(findings.len(), 2);
    assert_eq!(findings[1]["file"], "src/query.mjs");
    assert_eq!(findings[1]["line"], 37);
    assert_eq!(findings[1]["verdict"], serde_json::json!({"verdict": "partial", "oracle": "F05"}));

    // The same run by the key results.json prints, with no manifest; and through results.json.
    let results = committed("quickstart");
    let key = results["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .find(|r| r["cell"] == "baseline=heuristic" && r["subject"] == "case-07" && r["repeat"] == 1)
        .and_then(|r| r["key"].as_str())
        .expect("the run's key")
        .to_string();
    assert_eq!(run["key"].as_str().map(|k| &k[..12]), Some(key.as_str()));
    let by_key = runner(&root).args(["show", &key, "--cache-dir", "cache"]).output().expect("runs");
    assert!(by_key.status.success(), "{}", stderr_of(&by_key));
    let by_key = stdout_of(&by_key);
    assert!(by_key.contains("baseline=heuristic #1 @case-07") && by_key.contains("src/query.mjs:37  error security\n"), "{by_key}");
    let by_label = runner(&root).args(["show", "baseline=heuristic #1 @case-07", "--cache-dir", "cache"]).output().expect("runs");
    assert!(by_label.status.success(), "{}", stderr_of(&by_label));
    assert!(stdout_of(&by_label).contains(&format!("baseline=heuristic #1 @case-07  (key {key}): 2 findings")), "{}", stdout_of(&by_label));
    let via_results =
        runner(&root).args(["show", "results/quickstart", "--subject", "case-07", "--cell", "baseline=heuristic", "--repeat", "1"]).output().expect("runs");
    assert!(via_results.status.success(), "{}", stderr_of(&via_results));
    assert_eq!(stdout_of(&via_results), text);
}

#[test]
fn show_says_which_runs_are_not_in_the_cache_and_what_a_selection_can_name() {
    let root = project_root();
    let empty = tempfile::tempdir().expect("tempdir");
    let out = runner(&root).args(["show", "experiments/quickstart.toml", "--subject", "case-01", "--cache-dir"]).arg(empty.path()).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let text = stdout_of(&out);
    assert!(text.starts_with("quickstart: 4 runs selected, 0 in the cache, 0 findings\n"), "{text}");
    assert_eq!(text.matches("not in the cache (never run, or run elsewhere): nothing to show").count(), 4, "{text}");

    let out = runner(&root).args(["show", "experiments/quickstart.toml", "--cell", "baseline=nope"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr_of(&out).contains("no planned run matches cell `baseline=nope`; cells: `baseline=dry-run`, `baseline=heuristic`"), "{}", stderr_of(&out));

    let out = runner(&root).args(["show", "0123456789ab", "--cache-dir"]).arg(empty.path()).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr_of(&out).contains("no run in the cache") && stderr_of(&out).contains("starting with `0123456789ab`"), "{}", stderr_of(&out));
}

/// Renders `runner report` for `results` (and `against`) into `out`; returns the page.
fn report(dir: &Path, results: &str, against: Option<&str>, out: &Path, work: &Path) -> String {
    let mut cmd = runner(dir);
    cmd.args(["report", results]);
    if let Some(b) = against {
        cmd.args(["--against", b]);
    }
    let run = cmd.arg("-o").arg(out).arg("--work-dir").arg(work).output().expect("runs");
    assert!(run.status.success(), "{}", stderr_of(&run));
    std::fs::read_to_string(out).expect("the page")
}

/// The element ids every analysis table of `results` gets on side `side`.
fn table_ids(results: &serde_json::Value, side: &str) -> Vec<String> {
    let mut ids = Vec::new();
    for (i, analysis) in results["analyses"].as_array().expect("analyses").iter().enumerate() {
        for j in 0..analysis["tables"].as_array().map_or(0, Vec::len) {
            ids.push(format!("{side}-analysis-{i}-table-{j}"));
        }
    }
    ids
}

#[test]
fn report_writes_one_self_contained_deterministic_page_with_every_table_and_finding() {
    let root = project_root();
    let tmp = tempfile::tempdir().expect("tempdir");
    let (first, second) = (tmp.path().join("a.html"), tmp.path().join("b.html"));
    let page = report(&root, "results/scored/results.json", None, &first, &tmp.path().join("work"));
    let again = report(&root, "results/scored/results.json", None, &second, &tmp.path().join("work2"));
    assert!(page == again, "the page is byte-stable");
    let results = committed("scored");
    let ids = table_ids(&results, "a");
    assert!(ids.len() > 5, "{ids:?}");
    for id in &ids {
        assert!(page.contains(&format!("id=\"{id}\" class=\"analysis-table\"")), "{id} missing");
    }
    assert_eq!(page.matches("class=\"analysis-table\"").count(), ids.len());
    let findings = results["totals"]["findings"].as_u64().expect("findings") as usize;
    assert_eq!(page.matches("<div class=\"finding\"").count(), findings);
    // Every subject with its diff, every verdict kind the oracle gives.
    assert_eq!(page.matches("<section class=\"subject\"").count(), 16);
    assert!(page.contains("diff --git a/src/query.mjs b/src/query.mjs"));
    assert!(page.contains("data-verdict=\"found\"") && page.contains("data-verdict=\"noise\""));
    // Nothing is fetched at view time.
    for remote in ["src=\"http", "href=\"http", "<link", "@import", "url(", "fetch(", "XMLHttpRequest"] {
        assert!(!page.contains(remote), "the page refers to `{remote}`");
    }
    assert!(page.contains("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none';"));
    assert_eq!(page.matches("<script").count(), 1, "only the page's own script");

    // Two executions side by side: both sides' tables, an execution filter.
    let both = report(&root, "results/quickstart/results.json", Some("results/scored/results.json"), &tmp.path().join("ab.html"), &tmp.path().join("work"));
    for id in table_ids(&committed("quickstart"), "a").iter().chain(&ids.iter().map(|i| i.replacen("a-", "b-", 1)).collect::<Vec<_>>()) {
        assert!(both.contains(&format!("id=\"{id}\"")), "{id} missing from the side-by-side page");
    }
    assert!(both.contains("<title>quickstart vs scored · runner report</title>") && both.contains("<option value=\"b\">B: scored</option>"));
}

#[test]
fn report_inlines_the_plots_beside_results_json_in_name_order_as_images() {
    let root = project_root();
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("exec");
    std::fs::create_dir_all(dir.join("plots")).expect("mkdir");
    std::fs::copy(root.join("results/quickstart/results.json"), dir.join("results.json")).expect("copy");
    let svg = |label: &str| format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\"><script>alert(1)</script><text>{label}</text></svg>");
    std::fs::write(dir.join("plots/b-latency.svg"), svg("b")).expect("write");
    std::fs::write(dir.join("plots/a-headline.svg"), svg("a")).expect("write");
    std::fs::write(dir.join("plots/notes.txt"), "not a plot").expect("write");
    // Run from a directory where the manifest results.json names is not found: a partial page,
    // accepted as such.
    let run = runner(tmp.path()).arg("report").arg(dir.join("results.json")).arg("-o").arg(tmp.path().join("p.html")).arg("--partial").output().expect("runs");
    assert!(run.status.success(), "{}", stderr_of(&run));
    let page = std::fs::read_to_string(tmp.path().join("p.html")).expect("the page");
    use base64::Engine as _;
    let a = page.find(&base64::engine::general_purpose::STANDARD.encode(svg("a"))).expect("a-headline.svg inline");
    let b = page.find(&base64::engine::general_purpose::STANDARD.encode(svg("b"))).expect("b-latency.svg inline");
    assert!(a < b, "plots in file-name order");
    assert_eq!(page.matches("<figure class=\"plot\">").count(), 2);
    assert!(!page.contains("alert(1)"), "an SVG is an image (data: URI), never markup of the page");
    // What cannot be read is said on the page.
    assert!(
        page.contains("Findings cannot be shown: the manifest <code>experiments/quickstart.toml</code> it names was found neither"),
        "the missing manifest is said"
    );
    assert_eq!(page.matches("No diff is available for this subject.").count(), 16);
    assert!(!page.contains("<div class=\"finding\""));
}

/// A project whose reviewer reports markup and whose diff is markup: `(dir, results.json)`.
fn hostile_project(dir: &Path) -> PathBuf {
    let repo = calc_repo(dir);
    std::fs::write(repo.join("page.html"), "</div></pre><script>document.title='pwned-by-diff'</script>\n").expect("write");
    git(&repo, &["add", "page.html"]);
    git(&repo, &["commit", "--quiet", "-m", "markup"]);
    let script = dir.join("hostile.sh");
    let message = r#"<script>document.title='pwned-by-finding'</script><img src=x onerror=\"document.title='pwned-by-img'\"> & \"quotes\""#;
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ncat <<'EOF'\n{{\"findings\":[{{\"id\":\"h1\",\"file\":\"page.html\",\"line\":1,\"severity\":\"error\",\"category\":\"security\",\"confidence\":1,\"message\":\"{message}\",\"suggestion\":\"</textarea><script>alert(2)</script>\"}}]}}\nEOF\n"
        ),
    )
    .expect("write script");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let manifest = write_manifest(
        dir,
        "hostile.toml",
        &format!(
            "version = 1\n[experiment]\nname = \"hostile\"\n[target]\nrepo = \"{}\"\n[matrix]\nref = [\"HEAD~1\"]\n[reviewer]\nkind = \"command\"\nprogram = \"./hostile.sh\"\n[report]\noutput = \"out\"\n",
            repo.display()
        ),
    );
    let out = runner(dir).arg("exec").arg("--quiet").arg("--html").arg(&manifest).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    // `--html`: the page beside RESULTS.md, naming results.json as the file beside it.
    let page = std::fs::read_to_string(dir.join("out/report.html")).expect("exec --html writes report.html");
    assert!(page.contains("<span class=\"absent\">(results.json)</span>") && page.contains("<div class=\"finding\""));
    dir.join("out/results.json")
}

#[test]
fn report_escapes_hostile_findings_and_diffs() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let results = hostile_project(tmp.path());
    let page = report(tmp.path(), &results.display().to_string(), None, &tmp.path().join("r.html"), &tmp.path().join("work"));
    assert_eq!(page.matches("<script").count(), 1, "only the page's own script");
    assert!(!page.contains("<img src=x"), "no markup of a finding reaches the page");
    assert!(page.contains("&lt;script&gt;document.title&#x3D;&#x27;pwned-by-finding&#x27;&lt;/script&gt;"), "the message is shown, escaped");
    assert!(page.contains("&lt;/div&gt;&lt;/pre&gt;&lt;script&gt;document.title"), "the diff is shown, escaped");
    assert!(page.contains("Suggestion: &lt;/textarea&gt;"));
}

/// Chromium, headless and isolated, on `url`, with `extra` arguments; returns its stdout.
fn chromium(profile: &Path, url: &str, extra: &[&str]) -> String {
    let out = std::process::Command::new("chromium")
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking"])
        .args(["--disable-component-update", "--disable-sync"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url)
        .output()
        .expect("chromium runs (Debian's `chromium` package; .ci/run installs it)");
    assert!(out.status.success(), "chromium: {}", stderr_of(&out));
    stdout_of(&out)
}

/// The opening tags in `dom` that start with `start`.
fn tags<'a>(dom: &'a str, start: &str) -> Vec<&'a str> {
    dom.match_indices(start).map(|(i, _)| &dom[i..i + dom[i..].find('>').unwrap_or(dom.len() - i)]).collect()
}

fn file_url(path: &Path) -> String {
    format!("file://{}", path.canonicalize().expect("absolute").display())
}

#[test]
#[ignore = "needs Debian's chromium; .ci/run installs it and runs this with --ignored"]
fn html_report_chromium_renders_the_model_swap_report_with_every_table_and_a_working_filter() {
    let root = project_root();
    let tmp = tempfile::tempdir().expect("tempdir");
    let page_path = tmp.path().join("report.html");
    report(&root, "results/model-swap/results.json", None, &page_path, &tmp.path().join("work"));
    let results = committed("model-swap");
    let url = file_url(&page_path);

    // After the page's script ran: every table, every finding, nothing hidden.
    let dom = chromium(&tmp.path().join("p1"), &url, &["--dump-dom"]);
    let ids = table_ids(&results, "a");
    assert!(ids.len() >= 10, "{ids:?}");
    for id in &ids {
        assert!(dom.contains(&format!("id=\"{id}\"")), "{id} missing from the DOM");
    }
    let findings = results["totals"]["findings"].as_u64().expect("findings") as usize;
    assert_eq!(dom.matches("<div class=\"finding\"").count(), findings);
    assert!(dom.contains(&format!("<span id=\"finding-count\" data-shown=\"{findings}\">{findings} findings</span>")), "the script ran");
    assert!(tags(&dom, "<div class=\"finding\"").iter().all(|t| !t.contains("hidden")), "no finding is hidden");

    // A cell selected from the URL fragment: the other cells' findings and rows are hidden.
    let cell = "model=gemma3-270m,rag_symbol_max_definitions=5";
    let of_cell = results["cells"].as_array().expect("cells").iter().find(|c| c["cell"] == cell).and_then(|c| c["findings"].as_u64()).expect("cell") as usize;
    let fragment = format!("#cell={}", cell.replace('=', "%3D").replace(',', "%2C"));
    let dom = chromium(&tmp.path().join("p2"), &format!("{url}{fragment}"), &["--dump-dom"]);
    assert!(dom.contains(&format!("data-shown=\"{of_cell}\">{of_cell} of {findings} findings shown</span>")), "the filter applied");
    let finding_tags = tags(&dom, "<div class=\"finding\"");
    let hidden: Vec<&&str> = finding_tags.iter().filter(|t| t.contains("hidden=\"\"")).collect();
    assert_eq!(hidden.len(), findings - of_cell);
    assert!(hidden.iter().all(|t| !t.contains(&format!("data-cell=\"{cell}\""))), "only other cells' findings are hidden");
    let rows = tags(&dom, "<tr data-cell=");
    let (mine, others): (Vec<&&str>, Vec<&&str>) = rows.iter().partition(|t| t.starts_with(&format!("<tr data-cell=\"{cell}\"")));
    assert!(!mine.is_empty() && mine.iter().all(|t| !t.contains("hidden")), "the selected cell's table rows stay");
    assert!(!others.is_empty() && others.iter().all(|t| t.contains("hidden=\"\"")), "other cells' table rows are hidden");

    // And a screenshot that is a real picture of the page.
    let png = tmp.path().join("report.png");
    chromium(&tmp.path().join("p3"), &url, &[&format!("--screenshot={}", png.display()), "--window-size=1280,2000"]);
    let bytes = std::fs::read(&png).expect("the screenshot");
    assert!(bytes.starts_with(b"\x89PNG") && bytes.len() > 50_000, "a non-trivial PNG: {} bytes", bytes.len());
    if let Ok(dir) = std::env::var("RUNNER_SCREENSHOT_DIR") {
        std::fs::copy(&png, Path::new(&dir).join("report-model-swap.png")).expect("copy the screenshot");
    }
}

#[test]
#[ignore = "needs Debian's chromium; .ci/run installs it and runs this with --ignored"]
fn html_report_chromium_runs_no_script_of_a_hostile_finding_or_diff() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let results = hostile_project(tmp.path());
    let page_path = tmp.path().join("r.html");
    report(tmp.path(), &results.display().to_string(), None, &page_path, &tmp.path().join("work"));
    let dom = chromium(&tmp.path().join("p"), &file_url(&page_path), &["--dump-dom", "--virtual-time-budget=2000"]);
    assert!(dom.contains("<title>hostile · runner report</title>"), "no injected script changed the title");
    assert_eq!(dom.matches("<script").count(), 1, "the DOM holds only the page's own script");
    assert!(!dom.contains("<img src=\"x\""), "no element of a finding reached the DOM");
    assert!(dom.contains("&lt;script&gt;document.title='pwned-by-finding'&lt;/script&gt;"), "the message is text");
}

#[test]
fn report_finds_the_manifest_above_results_json_from_any_directory_and_a_page_without_diffs_fails_unless_partial() {
    // A tree without git: the manifest beside its report directory.
    let dir = tempfile::tempdir().expect("tempdir");
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).expect("mkdir");
    let corpus = project_root().join("corpus/quickstart");
    write_manifest(
        &project,
        "m.toml",
        &format!(
            "version = 1\n[experiment]\nname = \"anywhere\"\n[target]\ncorpus = \"{}\"\nunseal-holdout = true\n[matrix]\nbaseline = [\"dry-run\", \"heuristic\"]\n[reviewer]\nkind = \"builtin\"\nname = \"{{{{baseline}}}}\"\n[[analysis]]\nkind = \"latency\"\n[report]\noutput = \"out\"\n",
            corpus.display()
        ),
    );
    let exec = runner(&project).args(["exec", "--quiet", "m.toml"]).output().expect("runs");
    assert!(exec.status.success(), "{}", stderr_of(&exec));
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).expect("mkdir");
    let results = project.join("out/results.json");
    let page = elsewhere.join("page.html");
    let run = runner(&elsewhere).arg("report").arg(&results).arg("-o").arg(&page).output().expect("runs");
    assert!(run.status.success(), "found from another directory: {}", stderr_of(&run));
    assert!(std::fs::read_to_string(&page).expect("page").contains("def "), "the subjects' diffs are on the page");

    // Without its manifest the page has neither findings nor diffs: it says so and fails...
    std::fs::rename(project.join("m.toml"), project.join("moved.toml")).expect("rename");
    let run = runner(&elsewhere).arg("report").arg(&results).arg("-o").arg(&page).output().expect("runs");
    assert_eq!(run.status.code(), Some(1), "{}", stderr_of(&run));
    assert!(stderr_of(&run).contains("the page shows no findings and no diffs; pass --partial"), "{}", stderr_of(&run));
    // ...unless a partial page is what was asked for.
    let run = runner(&elsewhere).arg("report").arg(&results).arg("-o").arg(&page).arg("--partial").output().expect("runs");
    assert!(run.status.success(), "{}", stderr_of(&run));
}

/// A repository of `n` commits at fixed dates, each adding a Python file the built-in
/// reviewers flag (an `eval(` and a `TODO`).
fn python_commits(dir: &Path, n: u32) -> PathBuf {
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "--quiet", "--initial-branch=main"]);
    for i in 1..=n {
        std::fs::write(repo.join(format!("f{i}.py")), format!("def f{i}(code):\n    return eval(code)  # TODO: sandbox {i}\n")).expect("write");
        git(&repo, &["add", "--all"]);
        crate::git_dated(&repo, Some(&format!("2024-01-01T00:00:{i:02}Z")), &["commit", "--quiet", "-m", &format!("Add f{i}")]);
    }
    repo
}

/// Built-in reviewers (the `baseline` values) over the first-parent commits of `commits`.
fn history_manifest_text(commits: &str, baselines: &str) -> String {
    format!(
        "version = 1\n[experiment]\nname = \"recorded\"\n[target]\nrepo = \"repo\"\ncommits = \"{commits}\"\n[matrix]\nbaseline = [{baselines}]\n[reviewer]\nkind = \"builtin\"\nname = \"{{{{baseline}}}}\"\n[[analysis]]\nkind = \"latency\"\n[report]\noutput = \"out\"\n"
    )
}

fn results_at(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path.join("results.json")).expect("results.json")).expect("json")
}

#[test]
fn show_and_report_read_the_runs_results_json_recorded_after_the_manifest_changed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = python_commits(dir.path(), 4);
    let manifest = write_manifest(dir.path(), "m.toml", &history_manifest_text("HEAD~2..HEAD", "\"dry-run\", \"heuristic\""));
    let exec = |out: &str| {
        let run = runner(dir.path()).args(["exec", "--quiet", "--cache-dir", "cache", "--output", out, "m.toml"]).output().expect("runs");
        assert!(run.status.success(), "{}", stderr_of(&run));
        results_at(&dir.path().join(out))
    };
    let a = exec("a");
    // The manifest changes: another range, one reviewer less. A's dry-run runs and its first
    // subject are no longer planned.
    std::fs::write(&manifest, history_manifest_text("HEAD~1..HEAD", "\"heuristic\"")).expect("edit the manifest");
    let b = exec("b");
    let sha = git(&repo, &["rev-parse", "HEAD~1"]);
    let recorded = a["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .find(|r| r["cell"] == "baseline=dry-run" && r["subject"] == sha.as_str())
        .expect("A recorded the dry-run on HEAD~1")
        .clone();
    let key = recorded["key"].as_str().expect("key");
    assert_eq!(key.len(), 12, "the key as results.json and RESULTS.md print it");
    assert!(b["runs"].as_array().expect("runs").iter().all(|r| r["cell"] != "baseline=dry-run" && r["subject"] != sha.as_str()));

    // `show --key` of a run A recorded and the manifest no longer plans.
    let show = runner(dir.path()).args(["show", "a", "--key", key]).output().expect("runs");
    assert!(show.status.success(), "{}", stderr_of(&show));
    let text = stdout_of(&show);
    let findings = recorded["findings"].as_u64().expect("findings");
    assert!(findings > 0);
    assert!(text.starts_with(&format!("recorded: 1 run selected, 1 in the cache, {findings} finding")), "{text}");
    assert!(text.contains(&format!("baseline=dry-run #1 @{sha}  (key {key}, reviewer `reviewer`): {findings} finding")), "{text}");
    // The same run by its commit's short SHA, as RESULTS.md prints it.
    let short = &sha[..7];
    assert!(std::fs::read_to_string(dir.path().join("a/RESULTS.md")).expect("RESULTS.md").contains(&format!("`{short}`")));
    let by_sha = runner(dir.path()).args(["show", "a", "--subject", short, "--cell", "baseline=dry-run", "--json"]).output().expect("runs");
    assert!(by_sha.status.success(), "{}", stderr_of(&by_sha));
    let json: serde_json::Value = serde_json::from_str(&stdout_of(&by_sha)).expect("json");
    assert_eq!(json["runs"].as_array().map(Vec::len), Some(1), "{json}");
    assert_eq!(json["runs"][0]["subject"], sha.as_str());
    assert_eq!(json["runs"][0]["status"], "cached");
    assert!(json["runs"][0]["key"].as_str().is_some_and(|k| k.len() == 64 && k.starts_with(key)), "{json}");
    // The manifest itself shows what it plans now: not that run.
    let planned = runner(dir.path()).args(["show", "m.toml", "--key", key]).output().expect("runs");
    assert_eq!(planned.status.code(), Some(1), "{}", stdout_of(&planned));
    assert!(stderr_of(&planned).contains("no planned run matches key"), "{}", stderr_of(&planned));

    // Side by side: each side's own findings on its own side, and nothing to warn about.
    let page_path = dir.path().join("ab.html");
    let run = runner(dir.path()).args(["report", "a", "--against", "b", "-o"]).arg(&page_path).output().expect("runs");
    assert!(run.status.success(), "{}", stderr_of(&run));
    let stderr = stderr_of(&run);
    assert!(!stderr.contains("warning") && !stderr.contains("changed") && !stderr.contains("not as results.json records"), "{stderr}");
    let page = std::fs::read_to_string(&page_path).expect("the page");
    let total = |r: &serde_json::Value| r["totals"]["findings"].as_u64().expect("findings") as usize;
    assert_eq!(page.matches("<div class=\"finding\" data-filter=\"1\" data-side=\"a\"").count(), total(&a));
    assert_eq!(page.matches("<div class=\"finding\" data-filter=\"1\" data-side=\"b\"").count(), total(&b));
    assert!(page.contains("data-side=\"a\" data-cell=\"baseline&#x3D;dry-run\""), "A's dry-run findings are on A's side");
    assert!(!page.contains("data-side=\"b\" data-cell=\"baseline&#x3D;dry-run\""), "B has no dry-run runs");
    assert!(!page.contains("not as results.json records them"), "no warning on the page");
    // A subject the manifest no longer plans: said, not built from another target.
    assert!(page.contains("The diff could not be obtained: the manifest no longer plans this subject"), "the dropped subject's diff is explained");
    assert!(page.contains("+def f4(code):"), "the subject both plan shows its diff");
}

/// A store that counts every read of a run (lookups, recorded failures) and of a stage value.
struct CountingStore {
    inner: runner::cache::CacheStore,
    reads: std::sync::atomic::AtomicUsize,
}

impl CountingStore {
    fn count(&self, n: usize) {
        self.reads.fetch_add(n, std::sync::atomic::Ordering::SeqCst);
    }
}

impl runner::cache::Store for CountingStore {
    fn lookup(&self, key: &runner::cache::CacheKey) -> runner::cache::Lookup {
        self.count(1);
        self.inner.lookup(key)
    }

    fn location(&self) -> String {
        runner::cache::Store::location(&self.inner)
    }

    fn raw_output(&self, record: &runner::cache::RunRecord) -> Result<String, runner::cache::EntryError> {
        self.count(1);
        self.inner.raw_output(record)
    }

    fn lookup_batch(&self, keys: &[&runner::cache::CacheKey]) -> Vec<runner::cache::Lookup> {
        self.count(keys.len());
        runner::cache::Store::lookup_batch(&self.inner, keys)
    }

    fn store_success(
        &self,
        experiment: &str,
        label: &str,
        slot: &str,
        key: &runner::cache::CacheKey,
        inputs: &runner::cache::KeyInputs,
        output: &runner::reviewer::ReviewOutput,
    ) -> Result<runner::cache::RunRecord, runner::cache::CacheError> {
        self.inner.store_success(experiment, label, slot, key, inputs, output)
    }

    fn store_failure(
        &self,
        label: &str,
        slot: &str,
        key: &runner::cache::CacheKey,
        error: &runner::reviewer::ReviewError,
    ) -> Result<(), runner::cache::CacheError> {
        self.inner.store_failure(label, slot, key, error)
    }

    fn failure(&self, key: &runner::cache::CacheKey) -> Option<runner::cache::store::FailureRecord> {
        self.count(1);
        self.inner.failure(key)
    }

    fn try_lock_run(&self, key: &runner::cache::CacheKey) -> Result<Option<runner::cache::Guard>, runner::cache::CacheError> {
        runner::cache::Store::try_lock_run(&self.inner, key)
    }

    fn hold(&self) -> Result<runner::cache::Guard, runner::cache::CacheError> {
        runner::cache::Store::hold(&self.inner)
    }

    fn remember_slot(&self, slot: &str, key: &runner::cache::CacheKey) -> Result<(), runner::cache::CacheError> {
        self.inner.remember_slot(slot, key)
    }

    fn lookup_value(&self, key: &runner::cache::CacheKey) -> runner::cache::ValueLookup {
        self.count(1);
        self.inner.lookup_value(key)
    }

    fn store_value(
        &self,
        experiment: &str,
        stage: &str,
        key: &runner::cache::CacheKey,
        inputs: &serde_json::Value,
        value: &serde_json::Value,
    ) -> Result<(), runner::cache::CacheError> {
        self.inner.store_value(experiment, stage, key, inputs, value)
    }
}

#[test]
fn a_fully_cached_exec_html_builds_its_page_from_the_walk_materializing_nothing_and_reading_no_run_again() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let dir = tempfile::tempdir().expect("tempdir");
    let corpus = project_root().join("corpus/quickstart");
    let manifest = write_manifest(
        dir.path(),
        "m.toml",
        &format!(
            "version = 1\n[experiment]\nname = \"walked\"\n[target]\ncorpus = \"{}\"\nunseal-holdout = true\n[matrix]\nbaseline = [\"dry-run\", \"heuristic\"]\n[reviewer]\nkind = \"builtin\"\nname = \"{{{{baseline}}}}\"\n[[analysis]]\nkind = \"fixture\"\n[report]\noutput = \"out\"\n",
            corpus.display()
        ),
    );
    // The CLI fills the cache (and writes a page with every diff, since it built every subject).
    let first = runner(dir.path()).args(["exec", "--quiet", "--html", "--cache-dir", "cache", "--work-dir", "work", "m.toml"]).output().expect("runs");
    assert!(first.status.success(), "{}", stderr_of(&first));
    let fresh_page = std::fs::read_to_string(dir.path().join("out/report.html")).expect("report.html");
    assert_eq!(fresh_page.matches("No diff here").count(), 0, "a fresh execution built every subject: every diff is on its page");
    assert!(fresh_page.contains("diff --git"));

    // Then the same execution, fully cached, through the library: the cache behind a store that
    // counts reads, subjects built by a materializer that counts calls, and the prepared
    // experiment's own cache handle pointed at an empty directory, so a read that went around
    // the walk's store would find nothing.
    // A work directory of its own, where any corpus case built (by the materializer or around
    // it) would be left as a repository under `cases/`.
    let work = dir.path().join("work-cached");
    let locations = runner::experiment::Locations { cache_dir: Some(dir.path().join("cache")), work_dir: Some(work.clone()), remote_cache: None };
    let mut prepared = runner::experiment::prepare(&manifest, &locations).expect("prepares");
    prepared.manifest.report.html = true;
    let store = Arc::new(CountingStore { inner: prepared.cache.clone(), reads: AtomicUsize::new(0) });
    prepared.cache = runner::cache::CacheStore::new(dir.path().join("empty-cache"));
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let materializer: runner::exec::Materializer = Arc::new(move |spec, work| {
        counted.fetch_add(1, Ordering::SeqCst);
        runner::subject::materialize(spec, work).map_err(|e| e.to_string())
    });
    let options = runner::exec::ExecOptions {
        jobs: 2,
        frozen: false,
        refresh: false,
        work_dir: work.clone(),
        experiment: prepared.manifest.experiment.name.clone(),
        reviewers: prepared.reviewer_limits(),
        max_cost: None,
        shard: None,
        steal: None,
    };
    let runs = prepared.plan.runs.len();
    let asked = runner::report::formats::Asked { html: true, summary: None };
    let through = runner::experiment::Through { materializer: Some(materializer), store: Some(store.clone()) };
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a runtime");
    let (_cancel, cancelled) = tokio::sync::watch::channel(false);
    let executed = runtime
        .block_on(runner::experiment::execute_through(&prepared, "m.toml", options, asked, &runner::exec::Emitter::silent(), cancelled, through))
        .expect("executes");
    assert!(executed.outcomes.iter().all(|o| matches!(o, runner::exec::RunOutcome::Cached { .. })), "fully cached");
    assert_eq!(calls.load(Ordering::SeqCst), 0, "no subject was materialized");
    assert!(!work.join("cases").exists(), "no corpus case was built, not even around the materializer");
    assert!(dir.path().join("work/cases").is_dir(), "where the first execution built them");
    assert_eq!(store.reads.load(Ordering::SeqCst), runs, "each run was read once, by the walk's own lookups, and never again for the page");
    assert!(executed.written.files.iter().any(|p| p.ends_with("report.html")));

    // The page has every finding (from the walk's outcomes: the empty cache handle was not
    // read) and says, per subject, that its diff was not built.
    let page = std::fs::read_to_string(dir.path().join("out/report.html")).expect("report.html");
    let results = results_at(&dir.path().join("out"));
    let findings = results["totals"]["findings"].as_u64().expect("findings") as usize;
    assert!(findings > 0);
    assert_eq!(page.matches("<div class=\"finding\"").count(), findings);
    assert_eq!(page.matches("data-verdict=\"found\"").count(), fresh_page.matches("data-verdict=\"found\"").count(), "the same verdicts as the fresh page");
    let subjects = results["target"]["subjects"].as_array().map_or(0, Vec::len);
    assert!(subjects > 0);
    assert_eq!(page.matches("No diff here: every review of this subject came from the cache").count(), subjects);
    assert!(!page.contains("diff --git"));

    // `runner report` on the same results draws the page with every diff.
    let report_page = report(dir.path(), "out/results.json", None, &dir.path().join("full.html"), &dir.path().join("work"));
    assert_eq!(report_page.matches("No diff here").count(), 0);
    assert_eq!(report_page.matches("<div class=\"finding\"").count(), findings);
    assert!(report_page.contains("diff --git"));
}
