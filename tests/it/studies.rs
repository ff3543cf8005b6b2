//! H1/H7/H8 finding studies end to end: the bundled H1, H7 and H8 examples re-export byte for byte from the
//! committed quickstart cache and import to their committed results; an H8 sheet is blind and
//! stratified by cell.

use crate::{project_root, runner};
use std::path::Path;

fn export(out: &Path, study: &str, seed: &str, sample: &str) {
    export_from("experiments/quickstart.toml", out, study, seed, sample);
}

fn export_from(manifest: &str, out: &Path, study: &str, seed: &str, sample: &str) {
    let root = project_root();
    let o = runner(&root)
        .args(["study", "export", manifest, "--study", study, "--seed", seed, "--sample", sample, "--out"])
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
    round_trip("h7", "40", "quickstart");
    round_trip("h8", "12", "quickstart");
    round_trip("h1", "12", "quickstart");
    // The RQS v2 experiment's reviews, read from the cache without its scoring clients.
    round_trip("h1", "44", "rqs");
    // H4: the findings only one reviewer of the replay experiment reported.
    round_trip("h4", "40", "replay-tools");
}

fn round_trip(study: &str, sample: &str, experiment: &str) {
    let root = project_root();
    let name = format!("results/studies/{study}-{experiment}");
    let bundled = root.join(&name);
    let dir = tempfile::tempdir().expect("tempdir");
    export_from(&format!("experiments/{experiment}.toml"), dir.path(), study, "0", sample);
    assert_eq!(read(&dir.path().join("key.json")), read(&bundled.join("key.json")), "the same seed gives the same key");
    // The committed sheet is the exported one with the label columns filled.
    let blank = |text: &str| -> Vec<Vec<String>> {
        let mut r = csv::ReaderBuilder::new().has_headers(false).from_reader(text.as_bytes());
        r.records().map(|rec| rec.expect("csv").iter().take(9).map(str::to_string).collect()).collect()
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
    assert_eq!(sheet.lines().next(), Some("item,case,file,line,context,severity,category,message,suggestion,verdict,suggested_severity,note,rater"));
    let rows: Vec<csv::StringRecord> = csv::Reader::from_reader(sheet.as_bytes()).records().map(|r| r.expect("row")).collect();
    assert_eq!(rows.len(), 6, "{sheet}");
    // Each row shows the code around its line, from the case's source after the change.
    for row in &rows {
        let line: u32 = row[3].split('-').next().and_then(|l| l.parse().ok()).expect("a line");
        assert!(row[4].lines().any(|l| l.trim_start().starts_with(&format!("{line}: "))), "{:?}", &row);
    }
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

/// Two raters' copies of one H1 sheet, imported at once from the command line: Cohen's κ
/// before aggregation, then precision over the plurality labels.
#[test]
fn two_h1_raters_import_together_with_cohen_kappa() {
    let dir = tempfile::tempdir().expect("tempdir");
    export(dir.path(), "h1", "3", "4");
    let sheet = read(&dir.path().join("sheet.csv"));
    // ann: A A F F; bob: A F F F. p_o = 3/4; p_e = 2/4·1/4 + 2/4·3/4 = 1/2; κ = (3/4 − 1/2)/(1/2) = 0.5.
    // Aggregated: A, tied, F, F: precision 1/4.
    let fill = |rater: &str, labels: [&str; 4]| {
        let mut r = csv::ReaderBuilder::new().from_reader(sheet.as_bytes());
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(r.headers().expect("header")).expect("write");
        for (rec, label) in r.records().zip(labels) {
            let mut rec: Vec<String> = rec.expect("row").iter().map(str::to_string).collect();
            let n = rec.len();
            (rec[n - 3], rec[n - 1]) = (label.to_string(), rater.to_string());
            w.write_record(&rec).expect("write");
        }
        std::fs::write(dir.path().join(format!("{rater}.csv")), w.into_inner().expect("bytes")).expect("write");
    };
    fill("ann", ["actionable", "actionable", "false_positive", "false_positive"]);
    fill("bob", ["actionable", "false_positive", "false_positive", "false_positive"]);
    let o = runner(dir.path()).args(["study", "import", "ann.csv", "bob.csv", "--key", "key.json", "--out", "r"]).output().expect("runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = read(&dir.path().join("r/result.md"));
    assert!(
        md.contains("Agreement before aggregation: Cohen's κ = 0.500 over 4 findings rated by all 2 raters (observed agreement 0.750, chance 0.500)."),
        "{md}"
    );
    assert!(md.contains("| all | 4 | 1 | 2 | 0 | 0 | 1 | 1/4 = 25.0 % [4.6, 69.9] |"), "{md}");
    let json: serde_json::Value = serde_json::from_str(&read(&dir.path().join("r/result.json"))).expect("json");
    assert_eq!(json["agreement"]["kappa"], 0.5);
}

/// A `study` analysis names a known study, its sheets and its key; every mistake is located.
#[test]
fn a_study_analysis_is_checked_in_the_manifest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let corpus = project_root().join("corpus/quickstart");
    let manifest = format!(
        "version = 1\n[experiment]\nname = \"x\"\n[target]\ncorpus = \"{}\"\nunseal-holdout = true\n[matrix]\nrepeat = 1\n[reviewer]\nkind = \"builtin\"\nname = \"dry-run\"\n\
[[analysis]]\nkind = \"study\"\nstudy = \"h11\"\nkey = \"k.json\"\n[[analysis]]\nkind = \"study\"\nstudy = \"h1\"\nsheets = [\"a.csv\"]\n[[analysis]]\nkind = \"study\"\nstudy = \"h9\"\nsheets = [\"s.csv\"]\n[report]\noutput = \"o\"\n",
        corpus.display()
    );
    std::fs::write(dir.path().join("bad.toml"), manifest).expect("write");
    let o = runner(dir.path()).args(["validate", "bad.toml"]).output().expect("runs");
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("unknown study `h11`") && err.contains("did you mean `h1`?"), "{err}");
    assert!(err.contains("analysis `study` needs `sheets`, the filled sheets"), "{err}");
    assert!(err.contains("missing key `key` in [[analysis]] #2"), "{err}");
    assert!(err.contains("study file `") && err.contains("a.csv` does not exist"), "{err}");
    assert!(err.contains("k.json` does not exist"), "{err}");
    // H9 has no key, and reads exactly a session log and a survey.
    assert!(err.contains("study `h9` reads two files") && !err.contains("missing key `key` in [[analysis]] #3"), "{err}");
    assert!(err.contains("s.csv` does not exist"), "{err}");
    assert!(!err.contains("unknown key `sheets`") && err.contains("7 problems"), "{err}");
    // `--axis` names H4's tools; another study is told so.
    let root = project_root();
    let o = runner(&root)
        .args(["study", "export", "experiments/quickstart.toml", "--study", "h1", "--axis", "baseline", "--out"])
        .arg(dir.path().join("x"))
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("`--axis` is for `--study h4` only"), "{}", String::from_utf8_lossy(&o.stderr));
    let o = runner(&root)
        .args(["study", "export", "experiments/quickstart.toml", "--study", "h4", "--axis", "nope", "--out"])
        .arg(dir.path().join("y"))
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("`nope` is not an axis of the matrix (baseline)"), "{}", String::from_utf8_lossy(&o.stderr));
}

/// H6 from the command line: the bundled H1 sheets' false positives and wrong suggestions
/// become the committed candidate patterns.
#[test]
fn the_false_positive_audit_reproduces_the_bundled_patterns() {
    let root = project_root();
    let dir = tempfile::tempdir().expect("tempdir");
    for x in ["quickstart", "rqs"] {
        let out = dir.path().join(format!("{x}.csv"));
        let o = runner(&root)
            .args(["study", "audit", &format!("results/studies/h1-{x}/sheet.csv"), "--key", &format!("results/studies/h1-{x}/key.json"), "--out"])
            .arg(&out)
            .output()
            .expect("runs");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(read(&out), read(&root.join(format!("results/studies/h6-{x}/patterns.csv"))), "{x}");
    }
    let patterns = read(&root.join("results/studies/h6-quickstart/patterns.csv"));
    assert!(patterns.contains("maintainability,dry run placeholder ci,false_positive,"), "{patterns}");
    // An H7 key is refused: H6 audits H1 labels.
    let o = runner(&root)
        .args(["study", "audit", "results/studies/h7-quickstart/sheet.csv", "--key", "results/studies/h7-quickstart/key.json", "--out"])
        .arg(dir.path().join("x.csv"))
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(1));
}

/// H9 from the command line: the bundled format example (written by hand, and saying so in
/// its result) reproduces its committed result; a bad log is refused with located problems.
#[test]
fn the_h9_format_example_reproduces_and_a_bad_log_is_refused() {
    let root = project_root();
    let dir = tempfile::tempdir().expect("tempdir");
    let ex = "results/studies/h9-format-example";
    let o = runner(&root)
        .args(["study", "preference", "--sessions", &format!("{ex}/sessions.csv"), "--survey", &format!("{ex}/survey.csv"), "--out"])
        .arg(dir.path())
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for file in ["result.md", "result.json"] {
        assert_eq!(read(&dir.path().join(file)), read(&root.join(ex).join(file)), "{file}");
    }
    assert!(read(&dir.path().join("result.md")).contains("> FORMAT EXAMPLE, written by hand"));
    std::fs::write(dir.path().join("bad.csv"), "user,model,date,findings,dismissals,fixes_applied,minutes\nann,a,yesterday,1,0,0,1\n").expect("write");
    let o = runner(&root)
        .args(["study", "preference", "--survey", &format!("{ex}/survey.csv"), "--out"])
        .arg(dir.path().join("r"))
        .arg("--sessions")
        .arg(dir.path().join("bad.csv"))
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.csv:2: column `date`: `yesterday` is not a date YYYY-MM-DD"), "{err}");
}
