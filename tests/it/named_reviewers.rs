//! Several named reviewers in one experiment: a `builtin` and a `command` reviewer (a real
//! child process) over the same subjects, picked per cell by the `reviewer` axis.

use super::*;

/// The two reviewers compared: runner's built-in dry-run and (the fake) stet's own, a real
/// child process; then A1 over the `reviewer` axis.
fn reviewers_and_overlap() -> String {
    format!(
        r#"
[reviewers.dry]
kind = "builtin"
name = "dry-run"

[reviewers.stet]
kind = "command"
program = "{stet}"
args = ["start", "{{{{base}}}}", "--dry-run", "--json"]
env = {{ FAKE_STET_SKIP_SERVER_CHECK = "1", STET_SUPPRESSION_ENABLED = "0" }}
cleanup = [["-{stet}", "finish"]]
ignore = [".review/"]
max-concurrency = 1

[[analysis]]
kind = "overlap"
axis = "reviewer"
[report]
output = "out"
"#,
        stet = fake_stet().display(),
    )
}

fn mixed_manifest(dir: &Path, repo: &Path) -> PathBuf {
    let head = format!(
        "version = 1\n[experiment]\nname = \"mixed\"\n[target]\nrepo = \"{}\"\n[matrix]\nreviewer = [\"dry\", \"stet\"]\nref = [\"HEAD~1\", \"HEAD~2\"]\n",
        repo.display()
    );
    write_manifest(dir, "mixed.toml", &(head + &reviewers_and_overlap()))
}

/// The same two reviewers over a corpus: the bundled one, three of its cases.
fn corpus_manifest(dir: &Path) -> PathBuf {
    let head = format!(
        "version = 1\n[experiment]\nname = \"mixed-corpus\"\n[target]\ncorpus = \"{}\"\ncases = [\"case-01\", \"case-02\", \"case-03\"]\nunseal-holdout = true\n[matrix]\nreviewer = [\"dry\", \"stet\"]\n",
        project_root().join("corpus/quickstart").display()
    );
    write_manifest(dir, "mixed-corpus.toml", &(head + &reviewers_and_overlap()))
}

#[test]
fn two_reviewers_over_one_corpus_are_cached_per_run_and_compared_in_a1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = corpus_manifest(dir.path());
    let exec = |dir: &Path| runner(dir).args(["exec", "--json", "--cache-dir", "cache", "--work-dir", "work"]).arg(&manifest).output().expect("runs");
    let out = exec(dir.path());
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(count_events(&events(&out), "run_finished"), 6, "2 reviewers × 3 cases");
    let results: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/results.json")).expect("results.json")).expect("json");
    let table = &results["analyses"][0]["tables"][0];
    let row = &table["rows"][0];
    assert_eq!((&row[0], &row[1]), (&serde_json::json!("`dry`"), &serde_json::json!("`stet`")), "{table}");
    assert_eq!(row[3], row[4], "both found one placeholder per hunk: {row}");
    assert_eq!(row[5], row[3], "and the same ids: {row}");
    let report = std::fs::read_to_string(dir.path().join("out/RESULTS.md")).expect("RESULTS.md");
    assert!(report.contains("builtin, command"), "{report}");

    let again = exec(dir.path());
    assert!(again.status.success(), "{}", stderr_of(&again));
    assert_eq!(count_events(&events(&again), "run_cached"), 6);
    assert_eq!(count_events(&events(&again), "run_started"), 0);
}

#[test]
fn a_builtin_and_a_command_reviewer_are_compared_on_the_same_subjects() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    let manifest = mixed_manifest(dir.path(), &repo);
    let out = runner(dir.path()).args(["exec", "--json"]).arg(&manifest).env("FAKE_STET_SKIP_SERVER_CHECK", "1").output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(count_events(&events(&out), "run_finished"), 4, "2 reviewers × 2 refs");

    let results: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/results.json")).expect("results.json")).expect("json");
    assert_eq!(results["reviewer"]["kind"], "builtin, command");
    let overlap = &results["analyses"][0];
    assert_eq!(overlap["kind"], "overlap");
    let table = &overlap["tables"][0];
    assert_eq!(table["columns"][1], "A (reviewer)", "{table}");
    let rows = table["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 2, "one comparison per ref: {table}");
    for row in rows {
        assert_eq!(row[1], "`dry`");
        assert_eq!(row[2], "`stet`");
        // stet's own dry-run and runner's built-in one agree finding for finding.
        assert_eq!(row[4], row[5], "{row}");
        assert_eq!(row[6], row[4], "exact overlap is total: {row}");
    }

    // Each run is cached under its own reviewer: a re-run calls neither.
    let again = runner(dir.path()).args(["exec", "--json"]).arg(&manifest).output().expect("runs");
    assert!(again.status.success(), "{}", stderr_of(&again));
    let events = events(&again);
    assert_eq!(count_events(&events, "run_cached"), 4);
    assert_eq!(count_events(&events, "run_started"), 0);

    let plan = runner(dir.path()).args(["plan", "--json"]).arg(&manifest).output().expect("plan");
    let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).expect("plan json");
    let kinds: Vec<&str> = plan["nodes"].as_array().expect("nodes").iter().filter_map(|n| n["kind"].as_str()).collect();
    // The overlap analysis is computed in parts, one per group of the other axes.
    assert_eq!(kinds, ["materialize", "review", "analyze-part", "analyze", "render"]);
    assert_eq!(plan["cached"], 4);
}

#[test]
fn the_reviewer_axis_must_name_declared_reviewers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    let text =
        std::fs::read_to_string(mixed_manifest(dir.path(), &repo)).expect("read").replace(r#"reviewer = ["dry", "stet"]"#, r#"reviewer = ["dry", "stte"]"#);
    let manifest = write_manifest(dir.path(), "bad.toml", &text);
    let out = runner(dir.path()).arg("validate").arg(&manifest).output().expect("validate");
    assert!(!out.status.success());
    let err = stderr_of(&out);
    assert!(err.contains("`reviewer` axis names `stte`, which is not declared as [reviewers.stte]"), "{err}");
    assert!(err.contains("did you mean `stet`?"), "{err}");
}

#[test]
fn several_reviewers_without_a_reviewer_axis_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    let text = std::fs::read_to_string(mixed_manifest(dir.path(), &repo)).expect("read").replace("reviewer = [\"dry\", \"stet\"]\n", "");
    let manifest = write_manifest(dir.path(), "noaxis.toml", &text);
    let out = runner(dir.path()).arg("validate").arg(&manifest).output().expect("validate");
    assert!(!out.status.success());
    let err = stderr_of(&out);
    assert!(err.contains("2 reviewers are declared but the matrix has no `reviewer` axis"), "{err}");
    assert!(err.contains(r#"add `reviewer = ["dry", "stet"]` to [matrix]"#), "{err}");
}

/// A built-in reviewer beside one that takes `model`: the builtin's cells for a second model
/// repeat its runs, which `validate` says at the axis; `[matrix] exclude` drops them, the plan
/// and the report count the cells left, and a wrong axis or value in `exclude` is located.
#[test]
fn exclude_drops_the_cells_a_builtin_would_repeat_and_validate_names_the_ignored_axis() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("review.sh");
    std::fs::write(&script, "#!/bin/sh\nprintf '{\"findings\":[]}\\n'\n").expect("write");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let text = |exclude: &str| {
        format!(
            "version = 1\n[experiment]\nname = \"excluded\"\n[target]\ncorpus = \"{}\"\ncases = [\"case-01\", \"case-02\"]\nunseal-holdout = true\n[matrix]\nreviewer = [\"dry\", \"tool\"]\nmodel = [\"a\", \"b\"]\n{exclude}\n[reviewers.dry]\nkind = \"builtin\"\nname = \"dry-run\"\n[reviewers.tool]\nkind = \"command\"\nprogram = \"./review.sh\"\nargs = [\"{{{{model}}}}\"]\n[[analysis]]\nkind = \"distribution\"\n[report]\noutput = \"out\"\n",
            project_root().join("corpus/quickstart").display()
        )
    };
    let validate = |exclude: &str| {
        let manifest = write_manifest(dir.path(), "m.toml", &text(exclude));
        runner(dir.path()).args(["validate"]).arg(&manifest).output().expect("runs")
    };

    let out = validate("");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(err.contains("axis `model` is ignored by the builtin reviewer `dry` (it calls no model): 1 of its cells repeat another's runs"), "{err}");
    assert!(err.contains("m.toml:10:1") && err.contains(r#"exclude = [{reviewer = "dry", model = …}]"#), "at the axis, with the fix: {err}");

    let err = stderr_of(&validate("exclude = [{reviewr = \"dry\"}, {model = \"c\"}]"));
    assert!(err.contains("`exclude` names `reviewr`, which is not a matrix axis") && err.contains("did you mean `reviewer`?"), "{err}");
    assert!(err.contains("`exclude` names a value axis `model` does not have") && err.contains("its values: `a`, `b`"), "{err}");
    assert!(err.contains("m.toml:11:13") && err.contains("m.toml:11:40"), "each where it is written: {err}");
    assert!(stderr_of(&validate("exclude = [{model = \"a\"}, {model = \"b\"}]")).contains("`exclude` drops every cell of the matrix"));

    let manifest = write_manifest(dir.path(), "m.toml", &text("exclude = [{reviewer = \"dry\", model = \"b\"}]"));
    let out = runner(dir.path()).args(["validate"]).arg(&manifest).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(stdout_of(&out).contains("3 cells × 2 subjects × 1 repeat = 6 runs"), "{}", stdout_of(&out));
    let out = runner(dir.path()).args(["exec", "--quiet"]).arg(&manifest).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let results: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/results.json")).expect("results")).expect("json");
    let cells: Vec<&str> = results["cells"].as_array().expect("cells").iter().filter_map(|c| c["cell"].as_str()).collect();
    // The axes in the order written: `reviewer`, then `model`.
    assert_eq!(cells, ["reviewer=dry,model=a", "reviewer=tool,model=a", "reviewer=tool,model=b"]);
    assert_eq!(results["matrix"]["excluded"], serde_json::json!(["`model=b`, `reviewer=dry`"]));
    let markdown = std::fs::read_to_string(dir.path().join("out/RESULTS.md")).expect("RESULTS.md");
    assert!(markdown.contains("repeat 1, less the cells with `model=b`, `reviewer=dry` (`exclude`) |"), "{markdown}");
}

/// `validate` says, once per reviewer and not once per run, that a command reviewer's program
/// is missing or not executable — what the engine's preflight would fail every run with.
#[test]
fn validate_names_a_missing_or_non_executable_program_once() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = write_manifest(
        dir.path(),
        "m.toml",
        &format!(
            "version = 1\n[experiment]\nname = \"program\"\n[target]\ncorpus = \"{}\"\ncases = [\"case-01\", \"case-02\"]\nunseal-holdout = true\n[matrix]\nmodel = [\"a\", \"b\"]\n[reviewer]\nkind = \"command\"\nprogram = \"./review.sh\"\nargs = [\"{{{{model}}}}\"]\n[report]\noutput = \"out\"\n",
            project_root().join("corpus/quickstart").display()
        ),
    );
    let validate = || runner(dir.path()).args(["validate"]).arg(&manifest).output().expect("runs");
    let message = "reviewer program `./review.sh` was not found (paths are relative to the manifest's directory";
    let out = validate();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr_of(&out).matches(message).count(), 1, "once for its 4 runs: {}", stderr_of(&out));
    assert!(stderr_of(&out).contains("m.toml:12:11)"), "located at `program`: {}", stderr_of(&out));
    let script = dir.path().join("review.sh");
    std::fs::write(&script, "#!/bin/sh\nprintf '{\"findings\":[]}\\n'\n").expect("write");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let out = validate();
    assert!(!out.status.success() && stderr_of(&out).contains("reviewer program `./review.sh` is not executable"), "{}", stderr_of(&out));
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let out = validate();
    assert!(out.status.success(), "{}", stderr_of(&out));
}
