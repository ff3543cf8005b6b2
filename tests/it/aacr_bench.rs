//! AACR-Bench as runner's external target: the import of the bundled gold (the real CLI),
//! the bundled outputs read by the `ocr` replay format, the figures the data fixes, and the
//! committed results checked by an independent script (`scripts/aacr-bench/check.py`, a real
//! Python process). The frozen reproduction of `experiments/aacr-bench.toml` is in `bundled.rs`.

use super::*;
use std::collections::BTreeMap;

fn corpus() -> PathBuf {
    project_root().join("corpus/aacr-bench")
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).expect("json")
}

#[test]
fn the_import_of_the_bundled_gold_writes_the_committed_target_and_oracle() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("aacr");
    let run = runner(&project_root()).args(["corpus", "import", "aacr", "corpus/aacr-bench/gold", "--out"]).arg(&out).output().expect("runs");
    assert!(run.status.success(), "{}", stderr_of(&run));
    assert!(
        stderr_of(&run).contains("196 pull requests, 1505 reference comments (8 on the diff's left side, at file level), 632 rejected comments listed as left out (and 8 on pull requests not in the benchmark)"),
        "{}",
        stderr_of(&run)
    );
    for file in ["changes.json", "oracle.json"] {
        let committed = std::fs::read_to_string(corpus().join(file)).expect("committed");
        assert!(std::fs::read_to_string(out.join(file)).expect("written") == committed, "{file} differs from the committed one");
    }

    // The counts the benchmark's data fixes: 196 pull requests, 1,505 reference comments (8 on
    // the left side), 640 rejected comments in 155 entries, 4 of them not benchmark pull requests.
    let oracle = json(&out.join("oracle.json"));
    let findings = oracle["findings"].as_array().expect("findings");
    assert_eq!((oracle["cases"].as_array().map(Vec::len), findings.len()), (Some(196), 1505));
    assert_eq!(findings.iter().filter(|f| f.get("line").is_none()).count(), 8, "the left-side comments, at file level");
    let mut classes: BTreeMap<&str, usize> = BTreeMap::new();
    for f in findings {
        *classes.entry(f["class"].as_str().expect("class")).or_default() += 1;
    }
    assert_eq!(classes, BTreeMap::from([("diff", 754), ("file", 518), ("repo", 233)]));
    let skipped = oracle["skipped"].as_array().expect("skipped");
    let on_benchmark = skipped.iter().filter(|s| s["reason"].as_str().is_some_and(|r| r.contains("known-false"))).count();
    let elsewhere: Vec<usize> = skipped
        .iter()
        .filter_map(|s| s["source"].as_str())
        .filter_map(|s| s.split_once(" (").and_then(|(_, n)| n.strip_suffix(" rejected comments)")).and_then(|n| n.parse().ok()))
        .collect();
    assert_eq!((on_benchmark, elsewhere.len(), on_benchmark + elsewhere.iter().sum::<usize>()), (632, 4, 640));
    let changes = json(&out.join("changes.json"));
    assert_eq!(changes.as_array().map(Vec::len), Some(196));
    assert_eq!(changes[0]["id"], "CherryHQ__cherry-studio@5644b00");

    // Run again: the files are the command's own, so it replaces them; a file it did not write is
    // refused without --force.
    let again = runner(&project_root()).args(["corpus", "import", "aacr", "corpus/aacr-bench/gold", "--out"]).arg(&out).output().expect("runs");
    assert!(again.status.success(), "{}", stderr_of(&again));
    std::fs::write(out.join("oracle.json"), "not an oracle").expect("write");
    let refused = runner(&project_root()).args(["corpus", "import", "aacr", "corpus/aacr-bench/gold", "--out"]).arg(&out).output().expect("runs");
    assert!(!refused.status.success() && stderr_of(&refused).contains("--force"), "{}", stderr_of(&refused));
    let missing = runner(&project_root()).args(["corpus", "import", "aacr", "corpus/aacr-bench", "--out"]).arg(&out).output().expect("runs");
    assert!(!missing.status.success() && stderr_of(&missing).contains("positive_samples.json"), "{}", stderr_of(&missing));
}

#[test]
fn the_bundled_outputs_replay_to_the_counts_the_data_fixes() {
    // Per model: comments in `review.comments`, pull requests with one, failed reviews, and the
    // reviews whose comments sit in `raw_output` alone.
    let expected = [("claude-opus-4-8", (221, 84, 70, 12)), ("gpt-5.6", (94, 67, 29, 1))];
    for (model, (comments, with_one, failed, held_back)) in expected {
        let dir = corpus().join("outputs").join(model);
        let (mut n, mut prs, mut exits, mut raw, mut files) = (0, 0, 0, 0, 0);
        for entry in std::fs::read_dir(&dir).expect("outputs") {
            let path = entry.expect("entry").path();
            let subject = path.file_stem().and_then(|s| s.to_str()).expect("stem").to_string();
            let text = std::fs::read_to_string(&path).expect("read");
            let replayed = runner::reviewer::replay::ocr::parse(&text, &subject).unwrap_or_else(|e| panic!("{subject}: {e}"));
            files += 1;
            n += replayed.findings.len();
            prs += usize::from(!replayed.findings.is_empty());
            exits += replayed.counters.get("ocr_exit_nonzero").copied().unwrap_or(0);
            raw += replayed.schema_problems.iter().filter(|p| p.contains("`raw_output` holds comments")).count();
        }
        assert_eq!((files, n, prs, exits, raw), (196, comments, with_one, failed, held_back), "{model}");
    }
    // The copies are the upstream files byte for byte.
    if let Ok(check) = StdCommand::new("sha256sum").args(["--check", "--quiet", "SHA256SUMS"]).current_dir(corpus()).output() {
        assert!(check.status.success(), "{}{}", stdout_of(&check), stderr_of(&check));
    }
}

#[test]
fn the_committed_results_hold_the_figures_and_an_independent_script_agrees() {
    let results = project_root().join("results/aacr-bench/results.json");
    let doc = json(&results);
    let analysis = doc["analyses"].as_array().and_then(|a| a.iter().find(|a| a["kind"] == "aacr")).expect("the aacr analysis");
    let data = &analysis["data"];
    assert_eq!(
        (data["gold"]["pull_requests"].as_u64(), data["gold"]["references"].as_u64(), data["gold"]["left_side"].as_u64()),
        (Some(196), Some(1505), Some(8))
    );
    let cells: BTreeMap<&str, &serde_json::Value> = data["cells"].as_array().expect("cells").iter().map(|c| (c["label"].as_str().expect("label"), c)).collect();
    // generated (the outputs' own count), line hits, the fewest and most under any judge, and the
    // figures as evaluate.py prints them (rates rounded to 3, F1 from the rounded rates).
    let expected = [("claude-opus-4-8", (221, 112, 110, 112, [0.507, 0.074, 0.129])), ("gpt-5.6", (94, 62, 62, 62, [0.66, 0.041, 0.077]))];
    for (model, (generated, hits, fewest, most, printed)) in expected {
        let c = cells[model];
        assert_eq!((c["reviewed"].as_u64(), c["missing"].as_u64(), c["references"].as_u64()), (Some(196), Some(0), Some(1505)), "{model}");
        assert_eq!(
            (c["generated"].as_u64(), c["line_hits"].as_u64(), c["line_hits_any_judge"]["fewest"].as_u64(), c["line_hits_any_judge"]["most"].as_u64()),
            (Some(generated), Some(hits), Some(fewest), Some(most)),
            "{model}"
        );
        let f1 = c["line_f1"].as_f64().expect("line F1");
        assert!((f1 - 2.0 * hits as f64 / (generated + 1505) as f64).abs() < 1e-12, "{model}: F1 over all 196 pull requests, {f1}");
        let e = &c["evaluate_py"];
        assert_eq!([e["precision"].as_f64(), e["recall"].as_f64(), e["f1"].as_f64()], printed.map(Some), "{model}");
        let prs = c["pull_requests"].as_array().expect("rows");
        assert_eq!(prs.len(), 196);
        assert_eq!(prs.iter().map(|p| p["line_hits"].as_u64().unwrap_or(0)).sum::<u64>(), hits);
    }
    assert!(
        doc["summary"]
            .as_array()
            .is_some_and(|s| s.iter().any(|l| l.as_str().is_some_and(|l| l.starts_with("**line F1**, `claude-opus-4-8` − `gpt-5.6` = +0.052")))),
        "the paired verdict opens RESULTS.md: {}",
        doc["summary"]
    );
    let run = StdCommand::new("python3").arg(project_root().join("scripts/aacr-bench/check.py")).arg(corpus()).arg(&results).output().expect("python3 runs");
    assert!(run.status.success(), "{}{}", stdout_of(&run), stderr_of(&run));
    assert!(stdout_of(&run).contains("claude-opus-4-8: 221 generated, 112 line hits, 110–112 under any judge"), "{}", stdout_of(&run));
    assert!(stdout_of(&run).ends_with("runner's figures agree\n"), "{}", stdout_of(&run));
}

#[test]
fn an_aacr_analysis_needs_a_readable_gold() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (gold, expected) in [("", "`gold`"), ("gold = \"nowhere\"\n", "positive_samples.json")] {
        let manifest = format!(
            "version = 1\n[experiment]\nname = \"a\"\n[target]\nexternal = \"{root}/corpus/aacr-bench/changes.json\"\noracle = \"{root}/corpus/aacr-bench/oracle.json\"\n\
             [reviewer]\nkind = \"replay\"\nformat = \"ocr\"\npath = \"{root}/corpus/aacr-bench/outputs/gpt-5.6/{{subject}}.json\"\n[[analysis]]\nkind = \"aacr\"\n{gold}",
            root = project_root().display()
        );
        let path = write_manifest(dir.path(), "m.toml", &manifest);
        let out = runner(dir.path()).arg("validate").arg(&path).output().expect("runs");
        assert!(!out.status.success() && stderr_of(&out).contains(expected), "{gold}: {}", stderr_of(&out));
    }
}
