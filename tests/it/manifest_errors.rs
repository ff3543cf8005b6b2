//! Bad manifests: every problem at once, each with file, line and column.

use super::*;

#[test]
fn a_typo_a_wrong_type_and_a_missing_reviewer_are_three_located_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = write_manifest(
        dir.path(),
        "bad.toml",
        r#"version = 1

[experiment]
name = "bad"
descripton = "typo"

[target]
corpus = "corpus"

[matrix]
baseline = ["dry-run"]
repeat = "three"

[report]
output = "out"
"#,
    );
    std::fs::create_dir_all(dir.path().join("corpus")).expect("mkdir");
    let out = runner(dir.path()).arg("validate").arg(&manifest).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(err.contains("unknown key `descripton` in [experiment]"), "{err}");
    assert!(err.contains("did you mean `description`?"), "{err}");
    assert!(err.contains("bad.toml:5:1"), "typo located at line 5 col 1: {err}");
    assert!(err.contains("`repeat` in [matrix] must be an integer, found a string"), "{err}");
    assert!(err.contains("bad.toml:12:10"), "{err}");
    assert!(err.contains("missing section [reviewer]"), "{err}");
    assert!(err.contains("3 problems in"), "{err}");
}

#[test]
fn exec_refuses_an_invalid_manifest_and_runs_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = write_manifest(
        dir.path(),
        "bad.toml",
        "version = 2\n[experiment]\nname = \"x\"\n[target]\nrepo = \".\"\n[matrix]\nmodel = []\n[reviewer]\nkind = \"telepathy\"\n[report]\noutput = \"o\"\n",
    );
    let out = runner(dir.path()).arg("exec").arg(&manifest).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    for expected in ["unsupported manifest version 2", "axis `model` has no values", "unknown reviewer kind `telepathy`"] {
        assert!(err.contains(expected), "missing `{expected}` in {err}");
    }
    assert!(!dir.path().join("cache").exists(), "nothing ran, nothing was cached");
}

#[test]
fn a_misspelled_axis_and_an_unknown_template_variable_are_reported() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = write_manifest(
        dir.path(),
        "bad.toml",
        "version = 1\n[experiment]\nname = \"x\"\n[target]\ncorpus = \"c\"\n[matrix]\nbaseline = [\"dry-run\"]\ntemprature = [0.2]\n[reviewer]\nkind = \"builtin\"\nname = \"{{baselin}}\"\n[report]\noutput = \"o\"\n",
    );
    let out = runner(dir.path()).arg("validate").arg(&manifest).output().expect("runs");
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(err.contains("axis `temprature` looks like a misspelling of `temperature`"), "{err}");
    assert!(err.contains("unknown template variable `{{baselin}}`"), "{err}");
}

#[test]
fn the_bundled_experiments_validate() {
    let root = project_root();
    let out = runner(&root).arg("validate").arg("experiments/quickstart.toml").output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
}

#[test]
fn the_rendered_diagnostics_are_stable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = write_manifest(
        dir.path(),
        "bad.toml",
        "version = 1\n[experiment]\nname = \"x y\"\n[target]\ncorpus = \"c\"\n[matrix]\nmodel = [\"a\", \"a\"]\n[reviewer]\nkind = \"builtin\"\nnmae = \"dry-run\"\n[report]\noutput = 3\n",
    );
    let out = runner(dir.path()).arg("validate").arg("bad.toml").output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let _ = manifest;
    insta::assert_snapshot!(stderr_of(&out));
}

#[test]
fn plan_output_is_stable_with_hashes_redacted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    let manifest = write_manifest(
        dir.path(),
        "plan.toml",
        &format!(
            "version = 1\n[experiment]\nname = \"p\"\n[target]\nrepo = \"{}\"\n[matrix]\nref = [\"HEAD~1\", \"HEAD~2\"]\nvariant = [\"a\", \"b\"]\nrepeat = 2\n[reviewer]\nkind = \"builtin\"\nname = \"dry-run\"\n[[analysis]]\nkind = \"latency\"\n[report]\noutput = \"out\"\n",
            repo.display()
        ),
    );
    let out = runner(dir.path()).arg("plan").arg(&manifest).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    insta::with_settings!({ filters => vec![(r"\b[0-9a-f]{12}\b", "[key]")] }, {
        insta::assert_snapshot!(stdout_of(&out));
    });
    // The compact plan counts the runs; `--runs` lists each, after the same summary.
    let compact = stdout_of(&out);
    assert!(!compact.contains("#1 @HEAD~1"), "{compact}");
    let out = runner(dir.path()).args(["plan", "--runs"]).arg(&manifest).output().expect("runs");
    let full = stdout_of(&out);
    let listed: Vec<&str> = full.lines().filter(|l| l.starts_with("  run     ") && l.ends_with("(never run)")).collect();
    assert_eq!(listed.len(), 8, "{full}");
    assert!(listed[0].ends_with("ref=HEAD~1,variant=a #1 @HEAD~1  (never run)"), "{full}");
    assert!(full.starts_with(compact.lines().next().unwrap_or_default()), "{full}");
}

#[test]
fn unknown_keys_are_reported_even_when_a_required_key_is_missing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = write_manifest(
        dir.path(),
        "bad.toml",
        "version = 1\n[experiment]\nnmae = \"x\"\n[target]\ncorpus = \"c\"\n[matrix]\n[reviewer]\nkind = \"builtin\"\nname = \"dry-run\"\n[report]\noutput = \"o\"\n",
    );
    let out = runner(dir.path()).arg("validate").arg(&manifest).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(err.contains("missing key `name` in [experiment]"), "{err}");
    assert!(err.contains("unknown key `nmae` in [experiment]"), "{err}");
}

#[test]
fn garbage_is_one_problem_at_its_first_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let garbage = "[[[[ = = \"\n".repeat(6000);
    let manifest = write_manifest(dir.path(), "garbage.toml", &garbage);
    let out = runner(dir.path()).arg("validate").arg(&manifest).env("NO_COLOR", "1").output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert_eq!(err.matches("error: invalid TOML").count(), 1, "{}", &err[..err.len().min(2000)]);
    assert!(err.contains(&format!("({}:1:", manifest.display())), "{err}");
    assert!(err.contains("the rest of the file is checked once this parses"), "{err}");
    assert!(err.ends_with(&format!("1 problem in `{}`\n", manifest.display())), "{err}");
}

/// The new user's mistake: one `]` missing in `[matrix]` of a git manifest with analyses. The
/// parser's recovery finds dozens of errors from the next line on; the one message is at the
/// array left open.
#[test]
fn an_unclosed_array_is_one_message_at_the_array() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    let text = git_manifest(&repo, "ref = [\"HEAD~1\"]\nvariant = [\"a\", \"b\"]  # two variants\nrepeat = 2", "kind = \"builtin\"\nname = \"dry-run\"");
    let manifest = write_manifest(dir.path(), "m.toml", &text.replace("\"b\"]", "\"b\""));
    let out = runner(dir.path()).arg("validate").arg(&manifest).env("NO_COLOR", "1").output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    let messages: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(messages, [format!("error: invalid TOML: array `variant` is never closed ({}:8:11)", manifest.display())], "{err}");
    assert!(err.contains("add `]` after its last value: from line 9 on, the file reads as more of its values"), "{err}");
    assert!(err.ends_with(&format!("1 problem in `{}`\n", manifest.display())), "{err}");
}

/// `comits` for `commits` on a git target: one message, the misspelling with its correction,
/// and nothing that follows from reading the target as a `ref` target.
#[test]
fn a_misspelled_target_key_is_one_message_with_its_correction() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    let text = format!(
        "version = 1\n[experiment]\nname = \"p\"\n[target]\nrepo = \"{}\"\ncomits = \"HEAD~2..HEAD\"\nsample = 2\n[matrix]\nreviewer = [\"a\", \"b\"]\n[reviewers.a]\nkind = \"builtin\"\nname = \"dry-run\"\n[reviewers.b]\nkind = \"builtin\"\nname = \"heuristic\"\n[[analysis]]\nkind = \"compare\"\naxis = \"reviewer\"\nmetrics = [\"findings\", \"resolution\"]\n[[analysis]]\nkind = \"resolution\"\n[report]\noutput = \"out\"\n",
        repo.display()
    );
    let manifest = write_manifest(dir.path(), "m.toml", &text);
    let out = runner(dir.path()).arg("validate").arg(&manifest).env("NO_COLOR", "1").output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    let messages: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(messages, [format!("error: unknown key `comits` in [target] ({}:6:1)", manifest.display())], "{err}");
    assert!(err.contains("did you mean `commits`?"), "{err}");

    // A key far from every other is listed against every key a target takes, of any kind.
    std::fs::write(&manifest, text.replace("comits", "commits").replace("sample = 2", "sample = 2\nzzz = 1")).expect("write");
    let err = stderr_of(&runner(dir.path()).arg("validate").arg(&manifest).env("NO_COLOR", "1").output().expect("runs"));
    assert!(err.contains("unknown key `zzz` in [target]") && err.contains("1 problem in"), "{err}");
    for key in ["commits", "pull-requests", "external", "head", "evals", "corpus", "paths", "exclude-paths", "merges", "exclude-authors", "min-changed-lines"] {
        assert!(err.contains(&format!(" {key},")) || err.contains(&format!(" {key}\n")), "known keys name `{key}`: {err}");
    }
    // A commit-filter key misspelled is its correction too.
    std::fs::write(&manifest, text.replace("comits", "commits").replace("sample = 2", "exclude-author = [\"bot*\"]")).expect("write");
    let err = stderr_of(&runner(dir.path()).arg("validate").arg(&manifest).env("NO_COLOR", "1").output().expect("runs"));
    assert!(err.contains("unknown key `exclude-author` in [target]") && err.contains("did you mean `exclude-authors`?"), "{err}");
    assert!(err.contains("1 problem in"), "{err}");
}

fn git_manifest(repo: &Path, matrix: &str, reviewer: &str) -> String {
    format!(
        "version = 1\n[experiment]\nname = \"p\"\n[target]\nrepo = \"{}\"\n[matrix]\n{matrix}\n[reviewer]\n{reviewer}\n[[analysis]]\nkind = \"latency\"\n[report]\noutput = \"out\"\n",
        repo.display()
    )
}

#[test]
fn a_huge_matrix_is_refused_before_it_is_expanded_and_max_runs_allows_more() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    let values: Vec<String> = (0..20).map(|i| format!("\"v{i}\"")).collect();
    let axes: String = (0..7).map(|a| format!("axis{a} = [{}]\n", values.join(", "))).collect();
    let huge = write_manifest(
        dir.path(),
        "huge.toml",
        &git_manifest(&repo, &format!("ref = [\"HEAD~1\"]\n{axes}repeat = 10000"), "kind = \"builtin\"\nname = \"dry-run\""),
    );
    for command in ["validate", "plan", "exec"] {
        let out = runner(dir.path()).arg(command).arg(&huge).output().expect("runs");
        assert_eq!(out.status.code(), Some(1), "{command}");
        let err = stderr_of(&out);
        assert!(
            err.contains("the matrix plans 1,280,000,000 cells × 1 subject × 10,000 repeats = 12,800,000,000,000 runs, more than the limit of 1,000,000 runs"),
            "{command}: {err}"
        );
        assert!(err.contains("--max-runs 12800000000000"), "{command}: {err}");
    }
    let small =
        write_manifest(dir.path(), "small.toml", &git_manifest(&repo, "ref = [\"HEAD~1\", \"HEAD~2\"]\nrepeat = 3", "kind = \"builtin\"\nname = \"dry-run\""));
    let out = runner(dir.path()).args(["plan", "--max-runs", "5"]).arg(&small).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr_of(&out).contains("2 cells × 1 subject × 3 repeats = 6 runs, more than the limit of 5 runs"), "{}", stderr_of(&out));
    let out = runner(dir.path()).args(["validate", "--max-runs", "6"]).arg(&small).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(stdout_of(&out).contains("2 cells × 1 subject × 3 repeats = 6 runs"), "{}", stdout_of(&out));
}

#[test]
fn validate_locates_a_missing_corpus_a_misspelled_builtin_and_analysis_kind_and_a_bad_url() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_manifest(
        dir.path(),
        "bad.toml",
        "version = 1\n[experiment]\nname = \"x\"\n[target]\ncorpus = \"nowhere\"\n[matrix]\nrepeat = 1\n[reviewer]\nkind = \"builtin\"\nname = \"dry-rn\"\n[[analysis]]\nkind = \"overlpa\"\naxis = \"x\"\n[report]\noutput = \"o\"\n",
    );
    let out = runner(dir.path()).arg("validate").arg("bad.toml").output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(err.contains("corpus directory ") && err.contains("nowhere` does not exist (bad.toml:5:10)"), "{err}");
    assert!(err.contains("unknown builtin reviewer `dry-rn` (bad.toml:10:8)"), "{err}");
    assert!(err.contains("did you mean `dry-run`?"), "{err}");
    assert!(err.contains("unknown analysis kind `overlpa`"), "{err}");
    assert!(err.contains("did you mean `overlap`?"), "{err}");
    assert!(err.contains("3 problems in"), "no follow-on errors from the unknown kind's keys: {err}");

    std::fs::create_dir_all(dir.path().join("c")).expect("mkdir");
    let url = write_manifest(
        dir.path(),
        "url.toml",
        "version = 1\n[experiment]\nname = \"x\"\n[target]\ncorpus = \"c\"\n[matrix]\nmodel = [\"m\"]\n[reviewer]\nkind = \"openai\"\nbase-urls = [\"${LLM_URL:-http://127.0.0.1:1/v1\"]\n[report]\noutput = \"o\"\n",
    );
    let out = runner(dir.path()).arg("validate").arg(&url).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(err.contains("unclosed `${`"), "{err}");
    assert!(err.contains("url.toml:10:14"), "{err}");
}

#[test]
fn a_templated_builtin_name_is_checked_for_every_value_of_its_axis() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    let manifest = write_manifest(
        dir.path(),
        "m.toml",
        &git_manifest(&repo, "ref = [\"HEAD~1\"]\nbaseline = [\"dry-run\", \"heuristc\"]", "kind = \"builtin\"\nname = \"{{baseline}}\""),
    );
    let out = runner(dir.path()).arg("validate").arg(&manifest).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(err.contains("builtin reviewer name `{{baseline}}` renders `heuristc` for baseline=heuristc: not a builtin reviewer"), "{err}");
    assert!(err.contains("did you mean `heuristic`?"), "{err}");
    assert!(err.contains("1 problem in"), "{err}");
}

#[test]
fn a_misspelled_axis_is_one_error_not_a_cascade() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = write_manifest(
        dir.path(),
        "bad.toml",
        "version = 1\n[experiment]\nname = \"x\"\n[target]\ncorpus = \"c\"\n[matrix]\nbaseline = [\"dry-run\"]\ntemprature = [0.2]\n[reviewer]\nkind = \"builtin\"\nname = \"{{baseline}}\"\n[[analysis]]\nkind = \"overlap\"\naxis = \"temperature\"\n[[analysis]]\nkind = \"distribution\"\naxis = \"baselin\"\n[report]\noutput = \"o\"\n",
    );
    std::fs::create_dir_all(dir.path().join("c")).expect("mkdir");
    let out = runner(dir.path()).arg("validate").arg(&manifest).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(err.contains("axis `temprature` looks like a misspelling of `temperature`"), "{err}");
    assert!(err.contains("analysis axis `baselin` is not a matrix axis"), "{err}");
    assert!(err.contains("did you mean `baseline`?"), "{err}");
    assert!(!err.contains("unknown template variable"), "{err}");
    assert!(err.contains("2 problems in"), "{err}");
}

/// The bundled corpus, copied so a test may break it.
fn corpus_copy(dir: &Path) -> PathBuf {
    let corpus = dir.join("corpus");
    std::fs::create_dir_all(&corpus).expect("mkdir");
    for file in ["cases.public.json", "oracle.json"] {
        std::fs::copy(project_root().join("corpus/quickstart").join(file), corpus.join(file)).expect("copy");
    }
    corpus
}

fn corpus_manifest(dir: &Path, report: &str) -> PathBuf {
    write_manifest(
        dir,
        "m.toml",
        &format!("version = 1\n[experiment]\nname = \"x\"\n[target]\ncorpus = \"corpus\"\nunseal-holdout = true\n[matrix]\nbaseline = [\"dry-run\"]\n[reviewer]\nkind = \"builtin\"\nname = \"{{{{baseline}}}}\"\n[[analysis]]\nkind = \"schema\"\n[report]\noutput = \"o\"\n{report}"),
    )
}

#[test]
fn validate_compiles_the_report_template_and_checks_its_variables() {
    let dir = tempfile::tempdir().expect("tempdir");
    corpus_copy(dir.path());
    let manifest = corpus_manifest(dir.path(), "template = \"t.hbs\"\n");
    std::fs::write(dir.path().join("t.hbs"), "# {{experiment.name}}\n\n{{#each cells}}\n{{id}}\n").expect("write");
    let out = runner(dir.path()).arg("validate").arg(&manifest).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(err.contains("Template error in \"") && err.contains("t.hbs\":5:1"), "the unclosed block, located in the template: {err}");

    std::fs::write(dir.path().join("t.hbs"), "# {{experiment.name}}\n\n{{totals.planed}}\n").expect("write");
    let out = runner(dir.path()).arg("validate").arg(&manifest).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(err.contains("totals.planed") && err.contains("t.hbs"), "{err}");
    assert!(err.contains("line 3"), "{err}");

    std::fs::write(dir.path().join("t.hbs"), "# {{experiment.name}}: {{totals.planned}} runs\n").expect("write");
    let out = runner(dir.path()).arg("validate").arg(&manifest).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(stdout_of(&out).contains("1 cell × 16 subjects × 1 repeat = 16 runs"), "{}", stdout_of(&out));
}

#[test]
fn validate_reports_an_empty_ground_truth_program() {
    let dir = tempfile::tempdir().expect("tempdir");
    let corpus = corpus_copy(dir.path());
    let path = corpus.join("oracle.json");
    let mut oracle: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
    let id = oracle["cases"][0]["id"].as_str().expect("id").to_string();
    oracle["cases"][0]["groundTruth"] = serde_json::json!("  ");
    std::fs::write(&path, serde_json::to_string_pretty(&oracle).expect("json")).expect("write");
    let manifest = corpus_manifest(dir.path(), "");
    let out = runner(dir.path()).arg("validate").arg(&manifest).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(err.contains(&format!("case `{id}` in `")) && err.contains("oracle.json` has an empty ground-truth program"), "{err}");
}

#[test]
fn plan_explains_a_miss_with_old_and_new_values_against_the_last_executed_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    let manifest_for = |name: &str| git_manifest(&repo, "ref = [\"HEAD~1\"]", &format!("kind = \"builtin\"\nname = \"{name}\""));
    let path = dir.path().join("m.toml");
    for name in ["dry-run", "heuristic", "dry-run"] {
        std::fs::write(&path, manifest_for(name)).expect("write");
        let out = runner(dir.path()).args(["exec", "--quiet"]).arg(&path).output().expect("runs");
        assert!(out.status.success(), "{}", stderr_of(&out));
    }
    let report = std::fs::read_to_string(dir.path().join("out/RESULTS.md")).expect("RESULTS.md");
    assert!(report.contains("1 of 1 succeeded (1 cell × 1 subject × 1 repeat)"), "{report}");
    // The last execution was served from the cache: its key is what the slot remembers.
    std::fs::write(repo.join("calc.py"), "def add(a, b):\n    return a - b\n").expect("write");
    git(&repo, &["commit", "--quiet", "-am", "v3"]);
    let out = runner(dir.path()).arg("plan").arg(&path).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let text = stdout_of(&out);
    assert!(text.contains("p: 1 cell × 1 subject × 1 repeat = 1 run (0 cached, 1 to run)"), "{text}");
    let why = text.lines().find(|l| l.contains("changed since last cached")).expect("a why");
    assert!(why.contains("subject: ") && why.contains(" → "), "{why}");
    assert!(!why.contains("reviewer.baseline"), "compared with the last executed key, not an older one: {why}");

    std::fs::write(&path, manifest_for("heuristic")).expect("write");
    let out = runner(dir.path()).arg("plan").arg(&path).output().expect("runs");
    let text = stdout_of(&out);
    assert!(text.contains("reviewer.baseline: \"stet-dry-run-2\" → \"heuristic-2\""), "{text}");
}

#[test]
fn one_mistake_is_one_message_not_a_cascade() {
    let dir = tempfile::tempdir().expect("tempdir");
    let corpus = project_root().join("corpus/quickstart");
    let manifest = write_manifest(
        dir.path(),
        "bad.toml",
        &format!(
            "version = 1\n[experiment]\nname = \"x\"\n[target]\ncorpus = \"{}\"\n[matrix]\nbaseline = [\"dry-run\", \"heuristic\"]\n[reviewer]\nkind = \"bultin\"\nname = \"{{{{baseline}}}}\"\n[[analysis]]\nkind = \"compare\"\naxis = \"baseline\"\nmetrics = [\"recal\"]\n[report]\noutput = \"o\"\n",
            corpus.display()
        ),
    );
    let out = runner(dir.path()).arg("validate").arg(&manifest).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(err.contains("unknown reviewer kind `bultin`") && err.contains("unknown metric `recal`"), "{err}");
    // A wrong kind is not also an unknown `name`; unknown metrics are not also "no metrics".
    assert!(!err.contains("unknown key `name`") && !err.contains("lists no `metrics`"), "{err}");
    assert!(err.contains("2 problems in"), "{err}");
    // An empty list is still its own mistake.
    let empty = std::fs::read_to_string(&manifest).expect("read").replace("[\"recal\"]", "[]").replace("bultin", "builtin");
    std::fs::write(&manifest, empty).expect("write");
    let err = stderr_of(&runner(dir.path()).arg("validate").arg(&manifest).output().expect("runs"));
    assert!(err.contains("analysis `compare` lists no `metrics`") && err.contains("1 problem in"), "{err}");
}

/// A manifest that validates; each row of the sweep below breaks it in one place.
const SWEEP_BASE: &str = r#"version = 1
[experiment]
name = "x"
[target]
corpus = "CORPUS"
unseal-holdout = true
[matrix]
baseline = ["dry-run", "heuristic"]
repeat = 1
[reviewer]
kind = "builtin"
name = "{{baseline}}"
[[analysis]]
kind = "compare"
axis = "baseline"
baseline = "dry-run"
metrics = ["recall"]
[report]
output = "o"
"#;

/// One mistake, one message: each broken manifest gets exactly one diagnostic, located
/// (`bad.toml:LINE:COL`) and saying what is wrong — no cascade of follow-on messages.
#[test]
fn every_single_mistake_is_exactly_one_located_message() {
    const COMMAND: &str = "kind = \"command\"\nprogram = \"git\"\nargs = [\"{{baseline}}\"]";
    const BUILTIN: &str = "kind = \"builtin\"\nname = \"{{baseline}}\"";
    // (mistake, text replaced, replacement, words of the message, where it points)
    let cases: Vec<(&str, &str, String, &str, &str)> = vec![
        ("unknown top-level key", "version = 1", "version = 1\ncolour = 1".into(), "unknown key `colour` in the manifest", "2:1"),
        ("unknown section", "[report]", "[reprot]\nhtml = true\n[report]".into(), "unknown key `reprot` in the manifest", "18:2"),
        ("unknown key in [experiment]", "name = \"x\"", "name = \"x\"\ntitel = \"y\"".into(), "unknown key `titel` in [experiment]", "4:1"),
        ("missing required key", "name = \"x\"\n", String::new(), "missing key `name` in [experiment]", "2:1"),
        ("missing section", "[report]\noutput = \"o\"\n", String::new(), "missing section [report]", "1:1"),
        ("unsupported version", "version = 1", "version = 2".into(), "unsupported manifest version 2", "1:11"),
        ("invalid TOML", "repeat = 1", "repeat = 1\nrepeat = 2".into(), "invalid TOML: duplicate key", "10:1"),
        ("unclosed array", "\"heuristic\"]", "\"heuristic\"".into(), "invalid TOML: array `baseline` is never closed", "8:12"),
        ("key without a value", "repeat = 1", "repeat =".into(), "invalid TOML: `repeat` has no value after `=`", "9:9"),
        ("misspelled target kind", "corpus = ", "corpsu = ".into(), "unknown key `corpsu` in [target]", "5:1"),
        (
            "target key of another kind",
            "unseal-holdout = true",
            "unseal-holdout = true\nhead = \"main\"".into(),
            "`head` does not apply to this [target]",
            "7:1",
        ),
        ("wrong type", "repeat = 1", "repeat = \"two\"".into(), "`repeat` in [matrix] must be an integer, found a string", "9:10"),
        ("out of range", "repeat = 1", "repeat = 0".into(), "must be between 1 and 10000, found 0", "9:10"),
        ("axis not a list", "baseline = [\"dry-run\", \"heuristic\"]", "baseline = \"dry-run\"".into(), "axis `baseline` must be an array", "8:12"),
        ("empty axis", "baseline = [\"dry-run\", \"heuristic\"]", "baseline = []".into(), "axis `baseline` has no values", "8:12"),
        ("exclude names no axis", "repeat = 1", "repeat = 1\nexclude = [{ basline = \"dry-run\" }]".into(), "`exclude` names `basline`", "10:14"),
        ("missing corpus", "corpus = \"/", "corpus = \"/nonexistent/corpus//".into(), "does not exist", "5:10"),
        ("two target kinds", "unseal-holdout = true", "unseal-holdout = true\nrepo = \".\"".into(), "takes either `repo`", "7:8"),
        (
            "target key of a wrong type",
            "unseal-holdout = true",
            "unseal-holdout = true\ncases = \"case-01\"".into(),
            "`cases` in [target] must be an array of strings",
            "7:9",
        ),
        ("wrong reviewer kind", "kind = \"builtin\"", "kind = \"bultin\"".into(), "unknown reviewer kind `bultin`", "11:8"),
        ("unknown builtin", "\"heuristic\"]", "\"heuristc\"]".into(), "not a builtin reviewer", "12:8"),
        ("key of another reviewer kind", BUILTIN, format!("{BUILTIN}\ntemperature = 0.5"), "unknown key `temperature` in [reviewer]", "13:1"),
        ("unknown template variable", "{{baseline}}", "{{baselin}}".into(), "unknown template variable `{{baselin}}`", "12:8"),
        (
            "missing program file",
            BUILTIN,
            "kind = \"command\"\nprogram = \"./nope.py\"\nargs = [\"{{baseline}}\"]".into(),
            "reviewer program `./nope.py` was not found",
            "12:11",
        ),
        ("misspelled command key", BUILTIN, format!("{COMMAND}\nprogam = \"x\""), "unknown key `progam` in [reviewer]", "14:1"),
        ("unknown isolation", BUILTIN, format!("{COMMAND}\nisolation = \"jail\""), "unknown isolation `jail`", "14:13"),
        ("bad duration", BUILTIN, format!("{COMMAND}\ntimeout = \"soon\""), "`timeout` must be a duration", "14:11"),
        ("unknown analysis kind", "kind = \"compare\"", "kind = \"compar\"".into(), "unknown analysis kind `compar`", "14:8"),
        (
            "unknown analysis key",
            "metrics = [\"recall\"]",
            "metrics = [\"recall\"]\naxes = \"baseline\"".into(),
            "unknown key `axes` in [[analysis]] #1",
            "18:1",
        ),
        ("analysis axis not in the matrix", "axis = \"baseline\"", "axis = \"basline\"".into(), "analysis axis `basline` is not a matrix axis", "15:8"),
        ("unknown metric", "[\"recall\"]", "[\"recal\"]".into(), "unknown metric `recal`", "17:12"),
        (
            "compare baseline not a value",
            "baseline = \"dry-run\"",
            "baseline = \"heurstic\"".into(),
            "`baseline = \"heurstic\"` is not a value of axis `baseline`",
            "16:12",
        ),
        (
            "compare option out of range",
            "metrics = [\"recall\"]",
            "metrics = [\"recall\"]\nalpha = 2".into(),
            "`alpha` in [[analysis]] #1 must be between",
            "18:9",
        ),
        (
            "headline not compared",
            "metrics = [\"recall\"]",
            "metrics = [\"recall\"]\nheadline = [\"precision\"]".into(),
            "headline metric `precision` is not among `metrics`",
            "18:1",
        ),
        ("report option of a wrong type", "output = \"o\"", "output = 3".into(), "`output` in [report] must be a string, found an integer", "19:10"),
    ];
    let dir = tempfile::tempdir().expect("tempdir");
    let base = SWEEP_BASE.replace("CORPUS", &project_root().join("corpus/quickstart").display().to_string());
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, &base).expect("write");
    let out = runner(dir.path()).args(["validate", "bad.toml"]).output().expect("runs");
    assert!(out.status.success(), "the base manifest validates: {}", stderr_of(&out));
    let mut wrong = Vec::new();
    for (mistake, from, to, words, at) in &cases {
        assert!(base.contains(from), "{mistake}: the base has no `{from}`");
        std::fs::write(&path, base.replacen(from, to, 1)).expect("write");
        let out = runner(dir.path()).args(["validate", "bad.toml"]).env("NO_COLOR", "1").output().expect("runs");
        let err = stderr_of(&out);
        let messages: Vec<&str> = err.lines().filter(|l| l.starts_with("error:") || l.starts_with("warning:")).collect();
        let located = messages.first().is_some_and(|m| m.contains(words) && m.ends_with(&format!("(bad.toml:{at})")));
        if out.status.code() != Some(1) || messages.len() != 1 || !located {
            wrong.push(format!("{mistake}: exit {:?}, {} message(s), expected one with {words:?} at {at}:\n{err}", out.status.code(), messages.len()));
        }
    }
    assert!(wrong.is_empty(), "{} of {} mistakes:\n\n{}", wrong.len(), cases.len(), wrong.join("\n\n"));
}

/// Paths a manifest names are shown in its report from the project root: the same manifest
/// executed from the repository's root and from `experiments/` writes the same bytes.
#[test]
fn the_report_is_the_same_from_any_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    std::fs::create_dir_all(repo.join("experiments")).expect("mkdir");
    write_manifest(
        &repo.join("experiments"),
        "m.toml",
        "version = 1\n[experiment]\nname = \"m\"\n[target]\nrepo = \"..\"\ncommits = \"HEAD~2..HEAD\"\n[matrix]\nrepeat = 1\n[reviewer]\nkind = \"builtin\"\nname = \"heuristic\"\n[report]\noutput = \"../results/m\"\n",
    );
    let read = |name: &str| std::fs::read(repo.join("results/m").join(name)).expect("report");
    let out = runner(&repo).args(["exec", "-q", "experiments/m.toml"]).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let (markdown, json) = (read("RESULTS.md"), read("results.json"));
    let text = String::from_utf8_lossy(&markdown).into_owned();
    assert!(text.contains("| Target | git: `.`: the first-parent commits of `HEAD~2..HEAD`"), "{text}");
    let out = runner(&repo.join("experiments")).args(["exec", "-q", "m.toml"]).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(String::from_utf8_lossy(&read("RESULTS.md")), text, "RESULTS.md from experiments/");
    assert!(read("results.json") == json, "results.json from experiments/");
}

/// Mistakes that only the repository or PATH reveal are told at the key that made them, in
/// git's words or saying which, each as exactly one located message: a program not in PATH, not
/// executable or a directory; a range or listed commit that does not resolve; a `ref` value
/// that names no commit; a command reviewer that would review the checked-out commit.
#[test]
fn mistakes_the_repository_or_path_reveal_are_located() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    for (name, mode) in [("review.sh", 0o755), ("plain.sh", 0o644)] {
        std::fs::write(dir.path().join(name), "#!/bin/sh\nprintf '{\"findings\":[]}\\n'\n").expect("write");
        std::fs::set_permissions(dir.path().join(name), std::fs::Permissions::from_mode(mode)).expect("chmod");
    }
    std::fs::create_dir_all(dir.path().join("sub")).expect("mkdir");
    let base = format!(
        "version = 1\n[experiment]\nname = \"x\"\n[target]\nrepo = \"{}\"\ncommits = \"HEAD~2..HEAD\"\n[matrix]\nrepeat = 1\n[reviewer]\nkind = \"command\"\nprogram = \"./review.sh\"\nisolation = \"worktree\"\n[report]\noutput = \"o\"\n",
        repo.display()
    );
    const HISTORY: &str = "commits = \"HEAD~2..HEAD\"\n[matrix]\nrepeat = 1";
    // (mistake, replacements, words of the message, where it points)
    type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, &'a str, &'a str);
    let cases: Vec<Case> = vec![
        ("bare name not in PATH", vec![("./review.sh", "no-such-reviewer-x")], "reviewer program `no-such-reviewer-x` was not found in PATH", "11:11"),
        ("program not executable", vec![("./review.sh", "./plain.sh")], "reviewer program `./plain.sh` is not executable", "11:11"),
        ("program a directory", vec![("./review.sh", "./sub")], "reviewer program `./sub` is a directory", "11:11"),
        ("range that does not resolve", vec![("HEAD~2..HEAD", "HEAD~100..HEAD")], "bad revision 'HEAD~100..HEAD'", "6:11"),
        ("listed commit that does not resolve", vec![("\"HEAD~2..HEAD\"", "[\"HEAD\", \"nope\"]")], "`commits` lists `nope`, which names no commit", "6:20"),
        (
            "missing isolation",
            vec![("isolation = \"worktree\"\n", "")],
            "reviewer `reviewer` (command) reviews the checked-out commit, but 1 of the 2 selected commits is not checked out",
            "9:1",
        ),
        ("isolation that shares the checkout", vec![("\"worktree\"", "\"serialize\"")], "reviews the checked-out commit, but 1 of the 2", "12:13"),
        ("ref that names no commit", vec![(HISTORY, "[matrix]\nref = [\"HEAD~1\", \"nope\"]")], "`ref` value `nope` names no commit of", "7:18"),
        (
            "head not checked out",
            vec![(HISTORY, "head = \"HEAD~1\"\n[matrix]\nref = [\"HEAD~2\"]"), ("isolation = \"worktree\"\n", "")],
            "`head = \"HEAD~1\"` is not the commit checked out in",
            "9:1",
        ),
    ];
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, &base).expect("write");
    let out = runner(dir.path()).args(["validate", "bad.toml"]).output().expect("runs");
    assert!(out.status.success(), "the base manifest validates: {}", stderr_of(&out));
    let mut wrong = Vec::new();
    for (mistake, replacements, words, at) in &cases {
        let mut text = base.clone();
        for (from, to) in replacements {
            assert!(text.contains(from), "{mistake}: no `{from}`");
            text = text.replacen(from, to, 1);
        }
        std::fs::write(&path, &text).expect("write");
        let out = runner(dir.path()).args(["validate", "bad.toml"]).env("NO_COLOR", "1").output().expect("runs");
        let err = stderr_of(&out);
        let messages: Vec<&str> = err.lines().filter(|l| l.starts_with("error:") || l.starts_with("warning:")).collect();
        let located = messages.first().is_some_and(|m| m.contains(words) && m.ends_with(&format!("(bad.toml:{at})")));
        if out.status.code() != Some(1) || messages.len() != 1 || !located {
            wrong.push(format!("{mistake}: exit {:?}, {} message(s), expected one with {words:?} at {at}:\n{err}", out.status.code(), messages.len()));
        }
    }
    assert!(wrong.is_empty(), "{} of {} mistakes:\n\n{}", wrong.len(), cases.len(), wrong.join("\n\n"));
}

#[test]
fn a_key_another_analysis_kind_reads_is_said_not_to_apply_with_the_keys_that_do() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("corpus")).expect("mkdir");
    let manifest = write_manifest(
        dir.path(),
        "bad.toml",
        r#"version = 1

[experiment]
name = "kinds"

[target]
corpus = "corpus"

[matrix]
model = ["a", "b"]

[reviewer]
kind = "builtin"
name = "heuristic"

[report]
output = "out"

[[analysis]]
kind = "compare"
axis = "model"
rank-by = "f1"
metrics = ["findings"]

[[analysis]]
kind = "latency"
window = 3

[[analysis]]
kind = "fixture"
rank-by = "f2"
"#,
    );
    let out = runner(dir.path()).arg("validate").arg(&manifest).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    // `rank-by` is fixture's and `window` resolution's: each is located where it stands.
    assert!(err.contains("`rank-by` does not apply to this [[analysis]]"), "{err}");
    assert!(err.contains("bad.toml:22:1"), "{err}");
    assert!(err.contains("`window` does not apply to this [[analysis]]"), "{err}");
    assert!(err.contains("bad.toml:27:1"), "{err}");
    // The keys that do apply are the compare analysis's own and the shared ones.
    assert!(err.contains("metrics") && err.contains("baseline"), "{err}");
    // Fixture reads its own `rank-by` and names the rates.
    assert!(err.contains("unknown `rank-by` rate `f2`"), "{err}");
}
