//! The bundled experiments reproduce their committed RESULTS.md and results.json byte for
//! byte from the committed cache with `--frozen`, written to a temporary directory (the
//! repository's `results/` and `.runner/` are left alone).

use crate::{project_root, runner};

#[test]
fn every_bundled_experiment_reproduces_its_committed_results_byte_for_byte() {
    let root = project_root();
    let tmp = tempfile::tempdir().expect("tempdir");
    for name in ["quickstart", "scored", "model-swap"] {
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
        for file in ["RESULTS.md", "results.json"] {
            let committed = std::fs::read_to_string(root.join("results").join(name).join(file)).expect("committed");
            let written = std::fs::read_to_string(out.join(file)).unwrap_or_else(|e| panic!("{name}/{file}: {e}"));
            assert!(written == committed, "{name}/{file} differs from the committed one; first differing line: {:?}", first_difference(&committed, &written));
        }
    }
    assert!(tmp.path().join("work/executions").is_dir(), "the execution logs went to --work-dir");
}

fn first_difference(a: &str, b: &str) -> Option<(usize, String, String)> {
    a.lines().zip(b.lines()).enumerate().find(|(_, (x, y))| x != y).map(|(i, (x, y))| (i + 1, x.to_string(), y.to_string()))
}
