//! Nothing outside runner's own files: each way a command could delete, overwrite or write
//! through what is not runner's, built for real and run from the CLI.

use super::{project_root, runner, stderr_of, write_manifest};
use std::path::Path;

/// A small offline experiment over the bundled corpus, its reports in `out/`, its cache in
/// `cache/`; executed once.
fn executed_project(dir: &Path) -> std::path::PathBuf {
    let project = dir.join("project");
    std::fs::create_dir_all(&project).expect("mkdir");
    let corpus = project_root().join("corpus/quickstart");
    write_manifest(
        &project,
        "m.toml",
        &format!(
            "version = 1\n[experiment]\nname = \"foreign\"\n[target]\ncorpus = \"{}\"\nunseal-holdout = true\n[matrix]\nbaseline = [\"dry-run\", \"heuristic\"]\n[reviewer]\nkind = \"builtin\"\nname = \"{{{{baseline}}}}\"\n[[analysis]]\nkind = \"latency\"\n[report]\noutput = \"out\"\n",
            corpus.display()
        ),
    );
    let exec = runner(&project).args(["exec", "--quiet", "m.toml"]).output().expect("runs");
    assert!(exec.status.success(), "{}", stderr_of(&exec));
    project
}

#[test]
fn cache_gc_never_deletes_through_a_linked_cache_directory_nor_a_file_that_is_not_an_entry() {
    let dir = tempfile::tempdir().expect("tempdir");
    let project = executed_project(dir.path());
    // A cloned repository can carry `cache/failures` as a link to anywhere.
    let elsewhere = dir.path().join("elsewhere");
    let hash = "ab".to_string() + &"1".repeat(62);
    std::fs::create_dir_all(elsewhere.join("ab")).expect("mkdir");
    std::fs::write(elsewhere.join("ab").join(format!("{hash}.json")), "precious").expect("write");
    std::fs::remove_dir_all(project.join("cache/failures")).ok();
    std::os::unix::fs::symlink(&elsewhere, project.join("cache/failures")).expect("symlink");
    let gc = runner(&project).args(["cache", "gc", "--cache-dir", "cache"]).output().expect("runs");
    assert_eq!(gc.status.code(), Some(1), "{}", stderr_of(&gc));
    assert!(stderr_of(&gc).contains("symbolic link"), "{}", stderr_of(&gc));
    assert_eq!(std::fs::read_to_string(elsewhere.join("ab").join(format!("{hash}.json"))).expect("still there"), "precious");
    // An execution refuses the linked cache as well, before it writes anything there.
    let exec = runner(&project).args(["exec", "--quiet", "m.toml"]).output().expect("runs");
    assert_eq!(exec.status.code(), Some(1), "{}", stderr_of(&exec));
    assert!(stderr_of(&exec).contains("cache/failures") && stderr_of(&exec).contains("symbolic link"), "{}", stderr_of(&exec));

    // A `.keep` in the cache's objects stays through a collection.
    std::fs::remove_file(project.join("cache/failures")).expect("unlink");
    std::fs::write(project.join("cache/objects/.keep"), "").expect("write");
    let gc = runner(&project).args(["cache", "gc", "--cache-dir", "cache"]).output().expect("runs");
    assert!(gc.status.success(), "{}", stderr_of(&gc));
    assert!(project.join("cache/objects/.keep").exists());
}

#[test]
fn an_execution_writes_and_removes_no_chart_through_a_linked_plots_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let project = executed_project(dir.path());
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).expect("mkdir");
    std::fs::write(elsewhere.join("precious.svg"), "keep").expect("write");
    // The list of outputs names the chart; `plots` now points elsewhere.
    let record = project.join("out/.runner-outputs.json");
    let mut list: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&record).expect("list")).expect("JSON");
    list["files"].as_array_mut().expect("files").push("plots/precious.svg".into());
    std::fs::write(&record, list.to_string()).expect("write");
    std::fs::remove_dir_all(project.join("out/plots")).expect("rm");
    std::os::unix::fs::symlink(&elsewhere, project.join("out/plots")).expect("symlink");
    let exec = runner(&project).args(["exec", "--quiet", "--force", "m.toml"]).output().expect("runs");
    assert_eq!(exec.status.code(), Some(1), "{}", stderr_of(&exec));
    assert!(stderr_of(&exec).contains("symbolic link"), "{}", stderr_of(&exec));
    assert_eq!(std::fs::read_to_string(elsewhere.join("precious.svg")).expect("still there"), "keep");
    assert_eq!(std::fs::read_dir(&elsewhere).expect("ls").count(), 1, "no chart was written there");
}

#[test]
fn runner_report_writes_no_page_over_a_foreign_file_an_input_or_through_a_link() {
    let dir = tempfile::tempdir().expect("tempdir");
    let project = executed_project(dir.path());
    let results = project.join("out/results.json");
    let before = std::fs::read(&results).expect("results.json");
    // A report.html that runner did not write: refused, as `exec --html` refuses it.
    std::fs::write(project.join("out/report.html"), "<p>my notes</p>").expect("write");
    let run = runner(&project).arg("report").arg(&results).output().expect("runs");
    assert_eq!(run.status.code(), Some(1), "{}", stderr_of(&run));
    assert!(stderr_of(&run).contains("is in the way") && stderr_of(&run).contains("--force"), "{}", stderr_of(&run));
    assert_eq!(std::fs::read_to_string(project.join("out/report.html")).expect("kept"), "<p>my notes</p>");
    // Over its own input, even with --force.
    let run = runner(&project).arg("report").arg(&results).arg("--force").arg("-o").arg(&results).output().expect("runs");
    assert_eq!(run.status.code(), Some(1), "{}", stderr_of(&run));
    assert!(stderr_of(&run).contains("own input"), "{}", stderr_of(&run));
    assert_eq!(std::fs::read(&results).expect("results.json"), before);
    // Through a link, even with --force.
    let target = dir.path().join("target.txt");
    std::fs::write(&target, "keep").expect("write");
    std::os::unix::fs::symlink(&target, project.join("page.html")).expect("symlink");
    let run = runner(&project).arg("report").arg(&results).arg("--force").arg("-o").arg("page.html").output().expect("runs");
    assert_eq!(run.status.code(), Some(1), "{}", stderr_of(&run));
    assert!(stderr_of(&run).contains("symbolic link"), "{}", stderr_of(&run));
    assert_eq!(std::fs::read_to_string(&target).expect("kept"), "keep");
    // With --force the foreign page is replaced; runner's own page is replaced without it.
    let run = runner(&project).arg("report").arg(&results).arg("--force").output().expect("runs");
    assert!(run.status.success(), "{}", stderr_of(&run));
    let run = runner(&project).arg("report").arg(&results).output().expect("runs");
    assert!(run.status.success(), "its own page: {}", stderr_of(&run));
}
