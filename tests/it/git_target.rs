//! Git targets: refs resolved to SHAs before hashing; stet's dry-run test vector; `plan`
//! explains a miss after the repository moves.

use super::*;

fn builtin_manifest(dir: &Path, repo: &Path, refs: &str) -> PathBuf {
    write_manifest(
        dir,
        "git.toml",
        &format!(
            "version = 1\n[experiment]\nname = \"g\"\n[target]\nrepo = \"{}\"\n[matrix]\nref = [{refs}]\n[reviewer]\nkind = \"builtin\"\nname = \"dry-run\"\n[[analysis]]\nkind = \"schema\"\n[report]\noutput = \"out\"\n",
            repo.display()
        ),
    )
}

#[test]
fn the_builtin_dry_run_reproduces_stets_test_vector() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    // Keep only the first two commits: the contract's calc.py change.
    git(&repo, &["reset", "--quiet", "--hard", "HEAD~1"]);
    let manifest = builtin_manifest(dir.path(), &repo, "\"HEAD~1\"");
    let out = runner(dir.path()).args(["exec", "--quiet"]).arg(&manifest).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let object = super::exec_corpus::walk(&dir.path().join("cache/objects"))
        .into_iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .find(|t| t.contains("Dry-run placeholder (CI)") && t.trim_start().starts_with('['))
        .expect("findings object");
    let findings: serde_json::Value = serde_json::from_str(&object).expect("json");
    assert_eq!(findings[0]["id"], "09fd85503157675d43d1845f0ae7fa4c7fe470b22b46d49cad2b02d5c64f9457");
    assert_eq!(findings[0]["line"], 4);
    assert_eq!(findings[0]["file"], "calc.py");
}

#[test]
fn a_moved_head_misses_and_plan_says_the_subject_changed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    let manifest = builtin_manifest(dir.path(), &repo, "\"HEAD~1\", \"HEAD~2\"");
    assert!(runner(dir.path()).args(["exec", "--quiet"]).arg(&manifest).output().expect("runs").status.success());
    let plan = runner(dir.path()).args(["plan"]).arg(&manifest).output().expect("runs");
    assert!(stdout_of(&plan).contains("(2 cached, 0 to run)"), "{}", stdout_of(&plan));

    std::fs::write(repo.join("notes.md"), "new\n").expect("write");
    git(&repo, &["add", "notes.md"]);
    git(&repo, &["commit", "--quiet", "-m", "more"]);
    let plan = runner(dir.path()).args(["plan"]).arg(&manifest).output().expect("runs");
    let text = stdout_of(&plan);
    assert!(text.contains("(0 cached, 2 to run)"), "{text}");
    assert!(text.contains("changed since last cached: subject"), "{text}");
}

#[test]
fn an_unknown_ref_is_a_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    let manifest = builtin_manifest(dir.path(), &repo, "\"no-such-branch\"");
    let out = runner(dir.path()).args(["exec"]).arg(&manifest).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    // Told at the axis value, in git's words, before anything runs.
    let err = stderr_of(&out);
    assert!(err.contains("`ref` value `no-such-branch` names no commit of") && err.contains("bad revision 'no-such-branch'"), "{err}");
    assert!(err.contains(&format!("{}:", manifest.display())) && err.contains("1 problem in"), "located: {err}");
}
