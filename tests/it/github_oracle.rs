//! `runner oracle import-github` end to end: a real repository with a merged pull request
//! (a thread on lines a later commit changed, one on lines that only moved, one on a file that
//! was then renamed, a reply, a bot) and a closed unmerged one (a comment on a commit the
//! clone lacks, on a file its commit lacks, on a commit a force-push replaced), read from the
//! hand-written exports in `tests/fixtures/github/`.

use super::*;
use serde_json::json;

/// Commits a file's text on the current branch.
fn commit(repo: &Path, files: &[(&str, &str)], message: &str) -> String {
    for (path, text) in files {
        std::fs::write(repo.join(path), text).expect("write");
        git(repo, &["add", path]);
    }
    git(repo, &["commit", "--quiet", "-m", message]);
    git(repo, &["rev-parse", "HEAD"])
}

const APP_BASE: &str = "import os\n\n\ndef load(path):\n    with open(path) as f:\n        return f.read()\n\n\ndef save(path, text):\n    with open(path, \"w\") as f:\n        f.write(text)\n";
const APP_FETCH: &str = "\n\ndef fetch(url):\n    try:\n        return os.popen(\"curl \" + url).read()\n    except Exception:\n        return None\n\n\ndef size(path):\n    return os.path.getsize(path)\n";
const UTIL: &str = "def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n\n\ndef double(x):\n    return x * 2\n\n\ndef half(x):\n    return x / 2\n";

struct Repo {
    dir: PathBuf,
    shas: Vec<(&'static str, String)>,
}

/// main: BASE; `feature` (pull #1): C1 adds `fetch` and `size` (app.py 14–22) and `half`
/// (util.py 9–10); C2 puts two lines atop app.py, rewrites the `except` (lines 17–18) and
/// renames util.py to helpers.py; C3 appends to helpers.py after line 10; merged with
/// `--no-ff` as MERGE. `stale` (pull #2, closed): D0 (kept on `stale-old`, then replaced by
/// a force-push) and D1, which adds notes.md.
fn repository(dir: &Path) -> Repo {
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "--quiet", "--initial-branch=main"]);
    let base = commit(&repo, &[("app.py", APP_BASE), ("util.py", &UTIL[..UTIL.find("\n\n\ndef half").expect("half")])], "base");
    git(&repo, &["checkout", "--quiet", "-b", "feature"]);
    let c1 = commit(&repo, &[("app.py", &format!("{APP_BASE}{APP_FETCH}")), ("util.py", UTIL)], "fetch, size, half");
    let fixed = APP_FETCH.replace("    except Exception:\n        return None\n", "    except OSError as e:\n        raise RuntimeError(url) from e\n");
    std::fs::write(repo.join("app.py"), format!("#!/usr/bin/env python3\n# file helpers\n{APP_BASE}{fixed}")).expect("write");
    git(&repo, &["mv", "util.py", "helpers.py"]);
    git(&repo, &["add", "app.py"]);
    git(&repo, &["commit", "--quiet", "-m", "raise fetch errors; util is helpers"]);
    let head1 = commit(&repo, &[("helpers.py", &format!("{UTIL}\n\ndef third(x):\n    return x / 3\n"))], "third");
    git(&repo, &["checkout", "--quiet", "main"]);
    git(&repo, &["merge", "--quiet", "--no-ff", "-m", "Merge pull request #1", "feature"]);
    let merge = git(&repo, &["rev-parse", "HEAD"]);
    git(&repo, &["checkout", "--quiet", "-b", "stale-old", &base]);
    let d0 = commit(&repo, &[("app.py", &APP_BASE.replace("import os", "import os, sys"))], "d0");
    git(&repo, &["checkout", "--quiet", "-b", "stale", &base]);
    let d1 = commit(&repo, &[("notes.md", "# Notes\n\nSee the issue.\n")], "notes");
    git(&repo, &["checkout", "--quiet", "main"]);
    Repo { dir: repo, shas: vec![("@BASE@", base), ("@C1@", c1), ("@HEAD1@", head1), ("@MERGE@", merge), ("@D0@", d0), ("@D1@", d1)] }
}

impl Repo {
    fn sha(&self, name: &str) -> &str {
        self.shas.iter().find(|(n, _)| *n == name).map(|(_, s)| s.as_str()).expect("known name")
    }

    /// A fixture with its placeholders replaced by this repository's SHAs.
    fn fixture(&self, name: &str, into: &Path) -> PathBuf {
        let mut text = std::fs::read_to_string(project_root().join("tests/fixtures/github").join(name)).expect("fixture");
        for (placeholder, sha) in &self.shas {
            text = text.replace(placeholder, sha);
        }
        let path = into.join(name);
        std::fs::write(&path, text).expect("write");
        path
    }
}

/// Runs the import on the fixtures (`pulls.json` as already written into `dir`, if it is).
fn import(dir: &Path, repo: &Repo, extra: &[&str]) -> (std::process::Output, serde_json::Value) {
    let pulls = if dir.join("pulls.json").is_file() { dir.join("pulls.json") } else { repo.fixture("pulls.json", dir) };
    let comments = repo.fixture("comments.json", dir);
    let out_file = dir.join("out/oracle.json");
    let out = runner(dir)
        .args(["oracle", "import-github", "--pulls"])
        .arg(&pulls)
        .arg("--comments")
        .arg(&comments)
        .arg("--repo")
        .arg(&repo.dir)
        .arg("--out")
        .arg(&out_file)
        .args(extra)
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let json = serde_json::from_str(&std::fs::read_to_string(&out_file).expect("oracle written")).expect("JSON");
    (out, json)
}

#[test]
fn review_threads_become_findings_keyed_by_the_merge_commit_with_resolution_traced_in_git() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = repository(dir.path());
    let (out, oracle) = import(dir.path(), &repo, &[]);
    let findings = oracle["findings"].as_array().expect("findings");
    let ids: Vec<&str> = findings.iter().filter_map(|f| f["id"].as_str()).collect();
    // 102 is a reply (merged into 101's finding); 104 a bot's.
    assert_eq!(ids, ["pr1/101", "pr1/103", "pr1/105", "pr2/204"], "{oracle:#}");
    let f = |id: &str| findings.iter().find(|f| f["id"] == id).expect("finding");
    // C2 rewrote lines 17–18: resolved, and marked [blocking].
    let blocking = f("pr1/101");
    assert_eq!((&blocking["resolved"], &blocking["blocking"], &blocking["severity"]), (&json!(true), &json!(true), &json!("error")));
    assert_eq!((&blocking["file"], &blocking["line"], &blocking["range"]), (&json!("app.py"), &json!(18), &json!({"start": 17, "end": 18})));
    assert_eq!(blocking["caseId"], repo.sha("@MERGE@"));
    assert!(blocking["description"].as_str().is_some_and(|d| d.starts_with("[blocking] This swallows")));
    // Line 21 only moved (two lines were put above it): not resolved; a nit.
    let nit = f("pr1/103");
    assert_eq!((&nit["resolved"], &nit["blocking"], &nit["severity"], &nit["severityLabel"]), (&json!(false), &json!(false), &json!("nitpick"), &json!("nit")));
    // util.py was renamed and then appended to after the commented line: not resolved.
    assert_eq!((&f("pr1/105")["resolved"], &f("pr1/105")["file"]), (&json!(false), &json!("util.py")));
    // The unmerged pull request is keyed by its head.
    assert_eq!((&f("pr2/204")["caseId"], &f("pr2/204")["resolved"]), (&json!(repo.sha("@D1@")), &json!(false)));

    let cases = oracle["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 2);
    assert_eq!((&cases[0]["id"], &cases[0]["expectedFindingIds"]), (&json!(repo.sha("@MERGE@")), &json!(["pr1/101", "pr1/103", "pr1/105"])));
    assert!(cases[0]["rationale"].as_str().is_some_and(|r| r.contains("#1 Fetch remote files") && r.contains("merge commit")));
    assert_eq!((&cases[1]["id"], &cases[1]["expectedFindingIds"]), (&json!(repo.sha("@D1@")), &json!(["pr2/204"])));
    assert!(cases[0].get("groundTruth").is_none());

    // Every comment left out, with its reason, in the oracle and on stderr.
    let skipped: Vec<(String, String)> = oracle["skipped"]
        .as_array()
        .expect("skipped")
        .iter()
        .map(|s| (s["source"].as_str().unwrap_or("").to_string(), s["reason"].as_str().unwrap_or("").to_string()))
        .collect();
    let reason = |comment: &str| skipped.iter().find(|(s, _)| s.contains(&format!("comment {comment} "))).map(|(_, r)| r.as_str()).unwrap_or("");
    assert_eq!(skipped.len(), 5, "{skipped:?}");
    assert!(reason("104").starts_with("written by a bot (`coverage-bot[bot]`)"), "{skipped:?}");
    assert!(reason("201").starts_with("no local commit: 0123456789abcdef"), "{skipped:?}");
    assert!(reason("202").starts_with("deleted file: `gone.py`"), "{skipped:?}");
    assert!(reason("203").starts_with("outdated beyond tracing"), "{skipped:?}");
    assert!(reason("301").contains("not in the pulls export"), "{skipped:?}");
    let stderr = stderr_of(&out);
    assert!(stderr.contains("skipped pull #1 comment 104 (app.py:16): written by a bot"), "{stderr}");
    assert!(
        stderr.contains("4 findings (1 resolved; 1 replies merged into their threads) in 2 cases from 2 pull requests and 10 review comments; 5 left out"),
        "{stderr}"
    );

    // runner reads it back, and finds the merged pull request's case by an abbreviated SHA.
    let loaded = runner::ground_truth::oracle::load_file(&dir.path().join("out/oracle.json")).expect("runner's oracle format");
    let short = &repo.sha("@MERGE@")[..10];
    assert_eq!(loaded.expected_for(short).iter().map(|f| f.resolved).collect::<Vec<_>>(), [Some(true), Some(false), Some(false)]);
}

#[test]
fn bots_are_kept_when_asked_and_a_git_target_names_the_oracle() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = repository(dir.path());
    // The pulls listed twice, as shifting pages can make `gh api --paginate` write them.
    let pulls = std::fs::read_to_string(repo.fixture("pulls.json", dir.path())).expect("pulls");
    std::fs::write(dir.path().join("pulls.json"), format!("{pulls}{pulls}")).expect("write");
    let (_, oracle) = import(dir.path(), &repo, &["--include-bots"]);
    assert_eq!(oracle["cases"].as_array().map(Vec::len), Some(2));
    assert_eq!(oracle["cases"][0]["expectedFindingIds"], json!(["pr1/101", "pr1/103", "pr1/104", "pr1/105"]));
    let bot = oracle["findings"].as_array().expect("findings").iter().find(|f| f["id"] == "pr1/104").expect("the bot's thread").clone();
    // Line 16 moved by two and was not rewritten.
    assert_eq!((&bot["resolved"], &bot["line"]), (&json!(false), &json!(16)));
    assert_eq!(oracle["skipped"].as_array().map(Vec::len), Some(4));

    let manifest = |oracle: &str| {
        format!(
            "version = 1\n[experiment]\nname = \"gh\"\n[target]\nrepo = \"repo\"\nhead = \"{}\"\noracle = \"{oracle}\"\n[matrix]\nref = [\"{}\"]\n[reviewer]\nkind = \"builtin\"\nname = \"dry-run\"\n[[analysis]]\nkind = \"review-eval\"\n[report]\noutput = \"report\"\n",
            repo.sha("@MERGE@"),
            repo.sha("@BASE@")
        )
    };
    let good = write_manifest(dir.path(), "gh.toml", &manifest("out/oracle.json"));
    let out = runner(dir.path()).arg("validate").arg(&good).output().expect("runs");
    assert!(out.status.success(), "{}{}", stdout_of(&out), stderr_of(&out));
    let bad = write_manifest(dir.path(), "bad.toml", &manifest("out/none.json"));
    let out = runner(dir.path()).arg("validate").arg(&bad).output().expect("runs");
    assert!(!out.status.success() && stderr_of(&out).contains("oracle file"), "{}{}", stdout_of(&out), stderr_of(&out));
}
