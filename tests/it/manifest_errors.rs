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
fn garbage_shows_fifty_problems_then_counts_the_rest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let garbage = "[[[[ = = \"\n".repeat(6000);
    let manifest = write_manifest(dir.path(), "garbage.toml", &garbage);
    let out = runner(dir.path()).arg("validate").arg(&manifest).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    let shown = err.matches("error: invalid TOML").count();
    assert_eq!(shown, 50, "{}", &err[..err.len().min(2000)]);
    let total: usize = err
        .lines()
        .find_map(|l| l.strip_suffix(&format!(" problems in `{}`", manifest.display())).and_then(|n| n.parse().ok()))
        .expect("a totals line");
    assert!(total >= 6000, "every line is a problem: {total}");
    assert!(err.contains(&format!("… and {} more problems", total - 50)), "{}", &err[err.len().saturating_sub(500)..]);
    assert!(err.len() < 20_000, "output stays small: {} bytes", err.len());
}
