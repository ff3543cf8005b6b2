//! H7/H8 finding studies end to end: the bundled H7 and H8 examples re-export byte for byte from the
//! committed quickstart cache and import to their committed results; an H8 sheet is blind and
//! stratified by cell.

use crate::{project_root, runner};
use std::path::Path;

fn export(out: &Path, study: &str, seed: &str, sample: &str) {
    let root = project_root();
    let o = runner(&root)
        .args(["study", "export", "experiments/quickstart.toml", "--study", study, "--seed", seed, "--sample", sample, "--out"])
        .arg(out)
        .arg("--cache-dir")
        .arg(root.join("cache"))
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_bundled_examples_round_trip() {
    round_trip("h7", "40");
    round_trip("h8", "12");
}

fn round_trip(study: &str, sample: &str) {
    let root = project_root();
    let name = format!("results/studies/{study}-quickstart");
    let bundled = root.join(&name);
    let dir = tempfile::tempdir().expect("tempdir");
    export(dir.path(), study, "0", sample);
    assert_eq!(read(&dir.path().join("key.json")), read(&bundled.join("key.json")), "the same seed gives the same key");
    // The committed sheet is the exported one with the label columns filled.
    let blank = |text: &str| -> Vec<Vec<String>> {
        let mut r = csv::ReaderBuilder::new().has_headers(false).from_reader(text.as_bytes());
        r.records().map(|rec| rec.expect("csv").iter().take(8).map(str::to_string).collect()).collect()
    };
    assert_eq!(blank(&read(&dir.path().join("sheet.csv"))), blank(&read(&bundled.join("sheet.csv"))));

    let o = runner(&root)
        .args(["study", "import", &format!("{name}/sheet.csv"), "--key", &format!("{name}/key.json"), "--out"])
        .arg(dir.path().join("result"))
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(read(&dir.path().join("result/result.md")), read(&bundled.join("result.md")));
    assert_eq!(read(&dir.path().join("result/result.json")), read(&bundled.join("result.json")));
}

#[test]
fn an_h8_sheet_is_blind_and_samples_every_cell() {
    let dir = tempfile::tempdir().expect("tempdir");
    export(dir.path(), "h8", "3", "6");
    let sheet = read(&dir.path().join("sheet.csv"));
    assert_eq!(sheet.lines().next(), Some("item,case,file,line,severity,category,message,suggestion,verdict,suggested_severity,note,rater"));
    assert_eq!(sheet.lines().count(), 7, "{sheet}");
    for hidden in ["baseline", "heuristic", "dry-run #", "repeat", "trial"] {
        assert!(!sheet.contains(hidden), "the sheet must not say `{hidden}`:\n{sheet}");
    }
    let key: serde_json::Value = serde_json::from_str(&read(&dir.path().join("key.json"))).expect("json");
    let items = key["items"].as_object().expect("items");
    for cell in ["baseline=dry-run", "baseline=heuristic"] {
        assert!(items.values().any(|i| i["cell"] == cell), "{cell} sampled: {items:?}");
    }
    // An unfilled sheet is refused row by row.
    let o = runner(dir.path()).args(["study", "import", "sheet.csv", "--key", "key.json", "--out", "r"]).output().expect("runs");
    assert_eq!(o.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("sheet.csv:2: item `S001`: column `verdict`: empty; every row needs a label"), "{stderr}");
}
