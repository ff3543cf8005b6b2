//! `runner resolution` on a real repository and a hand-written history
//! (`tests/fixtures/stet-history/resolution.jsonl`), every number counted by hand.

use super::*;
use serde_json::json;

/// calc.py over seven commits, on `main`: c0, c1 (reviewed by session 1), c2 rewrites line 4,
/// c3 (reviewed by session 2) rewrites line 7, c4 rewrites line 1, c5 puts two lines on top,
/// c6 (reviewed by session 3, the head) rewrites line 12 (c1's line 10).
fn repository(dir: &Path) -> (PathBuf, Vec<String>) {
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "--quiet", "--initial-branch=main"]);
    let v1 = "import math\n\ndef area(r):\n    return 3.14 * r * r\n\ndef mean(xs):\n    return sum(xs) / len(xs)\n\ndef half(x):\n    return x / 2\n";
    let v2 = v1.replace("3.14 * r", "math.pi * r");
    let v3 = v2.replace("sum(xs) / len(xs)\n", "sum(xs) / len(xs) if xs else 0.0\n");
    let v4 = v3.replace("import math\n", "import math, statistics\n");
    let v5 = format!("# calc\n# helpers\n{v4}");
    let v6 = v5.replace("x / 2\n", "x // 2\n");
    let versions = ["import math\n\ndef area(r):\n    return 3.14 * r * r\n".to_string(), v1.to_string(), v2, v3, v4, v5, v6];
    let mut shas = Vec::new();
    for (i, text) in versions.iter().enumerate() {
        std::fs::write(repo.join("calc.py"), text).expect("write");
        git(&repo, &["add", "calc.py"]);
        git(&repo, &["commit", "--quiet", "-m", &format!("c{i}")]);
        shas.push(git(&repo, &["rev-parse", "HEAD"]));
    }
    (repo, shas)
}

fn history(dir: &Path, shas: &[String]) -> PathBuf {
    let text = std::fs::read_to_string(project_root().join("tests/fixtures/stet-history/resolution.jsonl")).expect("fixture");
    let text = text.replace("@C1@", &shas[1]).replace("@C3@", &shas[3]).replace("@C6@", &shas[6]);
    let path = dir.join("history.jsonl");
    std::fs::write(&path, text).expect("write");
    path
}

fn report(dir: &Path, args: &[&str]) -> serde_json::Value {
    let out = runner(dir).arg("resolution").arg("history.jsonl").args(["--repo", "repo", "--json"]).args(args).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn counts(rate: &serde_json::Value) -> (u64, u64) {
    (rate["resolved"].as_u64().expect("resolved"), rate["posted"].as_u64().expect("posted"))
}

fn close(value: &serde_json::Value, expected: f64) -> bool {
    value.as_f64().is_some_and(|v| (v - expected).abs() < 1e-9)
}

#[test]
fn resolution_counts_later_changes_to_the_flagged_lines_by_hand() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, shas) = repository(dir.path());
    history(dir.path(), &shas);
    let r = report(dir.path(), &["--window", "2", "--tolerance", "1"]);
    assert!(r["definition"].as_str().is_some_and(|d| d.contains("proxy") && d.contains("may be unrelated")), "{r:#}");
    // Kept: 4:1 rewritten by c2 (yes), 10 untouched by c2, c3 (no), 1 rewritten by c4 (yes),
    // 10 moved to 12 by c5 and rewritten only by c6, outside the window (no): 2 of 4.
    assert_eq!(counts(&r["overall"]["kept"]), (2, 4));
    assert!(close(&r["overall"]["kept"]["wilson_low"], 0.15003898915214947) && close(&r["overall"]["kept"]["wilson_high"], 0.8499610108478506), "{r:#}");
    // Dismissed: 6, whose neighbour 7 c3 rewrote (±1): 1 of 1.
    assert_eq!(counts(&r["overall"]["dismissed"]), (1, 1));
    assert!(close(&r["overall"]["dismissed"]["wilson_low"], 0.20654931437723745));
    assert_eq!((r["pending"].as_u64(), r["not_traced"].as_u64()), (Some(1), Some(3)));

    let sessions = r["sessions"].as_array().expect("sessions");
    assert_eq!(sessions.len(), 4);
    assert_eq!(sessions[0]["session"], format!("{}@2026-12-01T10:00:00Z", shas[1]));
    assert_eq!(
        (counts(&sessions[0]["kept"]), counts(&sessions[0]["dismissed"]), &sessions[0]["not_traced"], &sessions[0]["commits"]),
        ((1, 2), (1, 1), &json!(2), &json!(2))
    );
    assert_eq!((counts(&sessions[1]["kept"]), &sessions[1]["model"]), ((1, 2), &json!("gpt-4o-mini")));
    assert_eq!((&sessions[2]["pending"], &sessions[2]["commits"]), (&json!(1), &json!(0)));
    assert_eq!(sessions[3]["not_traced"], 1);

    let row = |list: &str, name: &str| r[list].as_array().expect("rows").iter().find(|x| x["name"] == name).cloned().expect("row");
    assert_eq!(counts(&row("models", "qwen2.5-coder:7b")["kept"]), (1, 2));
    assert_eq!(counts(&row("categories", "bug")["kept"]), (1, 2));
    assert_eq!(counts(&row("categories", "style")["kept"]), (0, 1));
    assert_eq!(counts(&row("categories", "correctness")["kept"]), (1, 1));
    assert_eq!(counts(&row("categories", "correctness")["dismissed"]), (1, 1));
    let severities: Vec<&str> = r["severities"].as_array().expect("rows").iter().filter_map(|x| x["name"].as_str()).collect();
    assert_eq!(severities, ["error", "warning", "nitpick"]);
    assert_eq!(counts(&row("severities", "warning")["kept"]), (1, 2));

    // The repeated finding is counted once; each finding not counted says why.
    let findings = r["findings"].as_array().expect("findings");
    assert_eq!(findings.len(), 5 + 2 + 1 + 1);
    let why: Vec<&str> = findings.iter().filter_map(|f| f["reason"].as_str()).collect();
    assert!(why.contains(&"`notes.md` is not in the reviewed commit") && why.contains(&"no line") && why.contains(&"no later commit yet"), "{why:?}");
    assert!(why.iter().any(|w| w.contains("deadbeef") && w.contains("not in the repository")), "{why:?}");
    let first = findings.iter().find(|f| f["line"] == 4).expect("4");
    assert_eq!((&first["outcome"], &first["changed_by"]), (&json!("resolved"), &json!(shas[2])));
}

#[test]
fn the_window_tolerance_and_side_file_change_what_counts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, shas) = repository(dir.path());
    history(dir.path(), &shas);
    // Three commits after c3 reach c6, which rewrites session 2's line 10 (then 12): 3 of 4.
    assert_eq!(counts(&report(dir.path(), &["--window", "3", "--tolerance", "1"])["overall"]["kept"]), (3, 4));
    // Without tolerance the dismissed finding's line 6 is untouched (c3 rewrote 7).
    assert_eq!(counts(&report(dir.path(), &["--window", "2", "--tolerance", "0"])["overall"]["dismissed"]), (0, 1));
    std::fs::write(dir.path().join("models.csv"), format!("session,model\n{}@2026-12-01T11:00:00Z,gpt-4.1\n", shas[3])).expect("write");
    let r = report(dir.path(), &["--window", "2", "--models", "models.csv"]);
    let models: Vec<&str> = r["models"].as_array().expect("rows").iter().filter_map(|x| x["name"].as_str()).collect();
    assert_eq!(models, ["gpt-4.1", "qwen2.5-coder:7b"]);

    let out = runner(dir.path()).args(["resolution", "history.jsonl", "--repo", "repo", "--window", "2"]).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let md = stdout_of(&out);
    assert!(md.starts_with("# Resolution rate from git (a proxy)"), "{md}");
    assert!(md.contains("| all | 2 / 4 | 0.500 | [0.150, 0.850] | 1 / 1 | 1.000 | [0.207, 1.000] |"), "{md}");
    assert!(md.contains("## Not counted"), "{md}");
}
