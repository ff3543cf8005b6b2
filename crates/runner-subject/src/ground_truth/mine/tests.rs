//! The miner on a real repository built commit by commit: each way a fix is found, each skip,
//! and a second run that reads every fix back from its memo.

use super::*;
use crate::subject::git::git;

struct Repo {
    dir: tempfile::TempDir,
}

impl Repo {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        for args in [&["init", "--quiet", "--initial-branch=main"][..], &["config", "user.name", "Dev"], &["config", "user.email", "dev@example.com"]] {
            git(dir.path(), args).expect("git");
        }
        Self { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes the files and commits them at second `t` (so dates order the history).
    fn commit(&self, t: u32, files: &[(&str, &str)], message: &str) -> String {
        self.commit_as(t, files, message, "Dev", "dev@example.com")
    }

    fn commit_as(&self, t: u32, files: &[(&str, &str)], message: &str, name: &str, email: &str) -> String {
        for (path, text) in files {
            let full = self.path().join(path);
            std::fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
            std::fs::write(full, text).expect("write");
        }
        git(self.path(), &["add", "--all"]).expect("add");
        let date = format!("2024-01-01T00:{:02}:{:02}Z", t / 60, t % 60);
        let env = [("GIT_AUTHOR_DATE", date.as_str()), ("GIT_COMMITTER_DATE", date.as_str()), ("GIT_AUTHOR_NAME", name), ("GIT_AUTHOR_EMAIL", email)];
        crate::subject::git::git_with_env(self.path(), &["commit", "--quiet", "--allow-empty", "-m", message], &env).expect("commit");
        git(self.path(), &["rev-parse", "HEAD"]).expect("rev-parse").trim().to_string()
    }
}

const APP_0: &str = "import os\n\n\ndef main():\n    return 0\n";
const APP_1: &str = "import os\n\n\ndef main():\n    return 0\n\n\ndef div(a, b):\n    total = a\n    return total / b\n";
const APP_3: &str = "import os\n\n\ndef main():\n    return 0\n\n\ndef div(a, b):\n    total = a\n    return total / b if b else 0\n";

#[test]
fn fixes_are_found_by_message_revert_and_reference_and_blamed_to_what_they_repair() {
    let repo = Repo::new();
    let root = repo.commit(1, &[("app.py", APP_0)], "Initial import");
    let bug = repo.commit(2, &[("app.py", APP_1)], "Add a division helper");
    repo.commit(3, &[("README.md", "# app\n")], "Add a README");
    let fix = repo.commit(4, &[("app.py", APP_3)], "Fix division by zero in div");
    let parser = repo.commit(5, &[("parse.py", "def parse(text):\n    return text.split(',')\n")], "Add a parser");
    // The revert, with git's own message.
    let at = [("GIT_AUTHOR_DATE", "2024-01-01T00:00:06Z"), ("GIT_COMMITTER_DATE", "2024-01-01T00:00:06Z")];
    crate::subject::git::git_with_env(repo.path(), &["revert", "--no-edit", &parser], &at).expect("revert");
    let reverted = git(repo.path(), &["rev-parse", "HEAD"]).expect("rev-parse").trim().to_string();
    let named = repo.commit(
        8,
        &[("app.py", &APP_3.replace("def main():\n    return 0", "def main():\n    return 1"))],
        &format!("Return 1 from main\n\nThe exit code was wrong: a regression introduced in {}.", &root[..8]),
    );
    repo.commit(9, &[("README.md", "# app\n\nfixed typo\n")], "Fix a typo in the README");
    let main_1 = APP_3.replace("def main():\n    return 0", "def main():\n    return 1");
    repo.commit(10, &[("app.py", &(main_1 + "\n\ndef guard(x):\n    return x\n"))], "fix: add a guard");
    repo.commit_as(11, &[("requirements.txt", "six==1\n")], "Fix the pin of six", "dependabot[bot]", "bot@example.com");

    let mined = mine(repo.path(), &MineOptions::default()).expect("mined");
    let s = &mined.summary;
    assert_eq!(s.commits, 10);
    // Fixes: the division fix, the revert, the regression naming the root by its hash, the
    // typo (docs only: skipped), the guard (adds only: unmapped), the bot's pin (skipped).
    assert_eq!((s.fixes, s.examined, s.mapped, s.unmapped), (6, 4, 3, 1), "{s:#?}");
    assert_eq!(s.by_how.get("explicit reference"), Some(&1));
    let reasons: Vec<&str> = s.skipped.iter().map(|k| k.reason.as_str()).collect();
    assert!(reasons.iter().any(|r| r.starts_with("touches only tests, docs or configuration")), "{reasons:?}");
    assert!(reasons.iter().any(|r| r.starts_with("written by a bot")), "{reasons:?}");
    let regression = mined.fixes.iter().find(|f| f.sha == named).expect("the regression");
    assert_eq!(regression.inducing.iter().map(|i| (i.sha.as_str(), i.how)).collect::<Vec<_>>(), [(root.as_str(), How::ExplicitReference)]);

    let division = mined.fixes.iter().find(|f| f.sha == fix).expect("the division fix");
    assert_eq!(division.inducing.len(), 1, "{division:#?}");
    let inducing = &division.inducing[0];
    assert_eq!((inducing.sha.as_str(), inducing.how), (bug.as_str(), How::SingleBlameCandidate));
    assert_eq!(inducing.lines, vec![Place { path: "app.py".into(), line: 10 }], "the line as numbered in the inducing commit");
    assert!(division.hunks.contains("-    return total / b"), "{}", division.hunks);

    let revert = mined.fixes.iter().find(|f| f.sha == reverted).expect("the revert");
    assert_eq!(revert.inducing.iter().map(|i| (i.sha.as_str(), i.how)).collect::<Vec<_>>(), [(parser.as_str(), How::Revert)]);
    assert_eq!(revert.inducing[0].lines.len(), 2, "the reverted commit's lines");

    let guard = mined.fixes.iter().find(|f| f.title == "fix: add a guard").expect("the guard");
    assert_eq!(guard.unmapped.as_deref(), Some("the fix only adds lines: nothing it changed can be blamed"));

    // The oracle: one case per inducing commit, each finding at its lines, with the fix.
    let o = &mined.oracle;
    assert_eq!(o.cases.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), [bug.as_str(), parser.as_str(), root.as_str()]);
    let f = o.findings.iter().find(|f| f.case_id.as_deref() == Some(bug.as_str())).expect("finding");
    assert_eq!((f.file.as_deref(), f.line), (Some("app.py"), Some(10)));
    assert!(f.description.starts_with("Fix division by zero in div — fixed later by "), "{}", f.description);
    assert!(o.skipped.iter().any(|k| k.reason.starts_with("unmapped: the fix only adds lines")), "{:?}", o.skipped);
    // It reads back as runner's oracle format.
    let text = serde_json::to_string(o).expect("json");
    let back: Oracle = serde_json::from_str(&text).expect("oracle format");
    assert_eq!(back.findings.len(), o.findings.len());
}

#[test]
fn a_message_naming_the_change_decides_and_later_or_root_candidates_are_dropped() {
    let repo = Repo::new();
    let root = repo.commit(1, &[("lib.rs", "fn a() {}\nfn b() {}\nfn d() {}\n")], "Import");
    let bug = repo.commit(2, &[("lib.rs", "fn a() {}\nfn b() { panic!() }\nfn d() {}\nfn c() {}\n")], "Add c, change b");
    repo.commit(3, &[("lib.rs", "fn a() { 1 }\nfn b() { panic!() }\nfn d() {}\nfn c() {}\n")], "Tweak a");
    // Rewrites b's line and a line of the root import: the root is dropped, b's commit kept.
    let fix = repo.commit(4, &[("lib.rs", "fn a() { 1 }\nfn b() {}\nfn d() { 0 }\nfn c() {}\n")], "Fix the crash in b");
    // Names `bug` by its hash: decided outright, the other blamed commit left out.
    let named = repo.commit(5, &[("lib.rs", "fn a() { 3 }\nfn b() {}\nfn d() { 0 }\nfn c() { 0 }\n")], &format!("Fix c\n\nBroken since {}.", &bug[..9]));
    let mined = mine(repo.path(), &MineOptions::default()).expect("mined");
    let first = mined.fixes.iter().find(|f| f.sha == fix).expect("fix");
    let shas: Vec<&str> = first.inducing.iter().map(|i| i.sha.as_str()).collect();
    assert!(shas.contains(&bug.as_str()), "{first:#?}");
    assert!(!shas.contains(&root.as_str()), "the root import is dropped: {first:#?}");
    assert!(first.dropped.iter().any(|d| d.sha == root && d.reason.contains("root import")), "{first:#?}");
    let second = mined.fixes.iter().find(|f| f.sha == named).expect("named");
    assert_eq!(second.inducing.iter().map(|i| (i.sha.as_str(), i.how)).collect::<Vec<_>>(), [(bug.as_str(), How::ExplicitReference)]);
    assert!(second.dropped.iter().all(|d| d.reason.contains("names the change it repairs")), "{second:#?}");
}

#[test]
fn of_several_blame_candidates_the_latest_is_kept_unless_all_are_asked_for() {
    let repo = Repo::new();
    repo.commit(1, &[("lib.rs", "fn a() {}\nfn b() {}\n")], "Import");
    let older = repo.commit(2, &[("lib.rs", "fn a() { 1 }\nfn b() {}\n")], "Change a");
    let newer = repo.commit(3, &[("lib.rs", "fn a() { 1 }\nfn b() { 2 }\n")], "Change b");
    let fix = repo.commit(4, &[("lib.rs", "fn a() { 0 }\nfn b() { 0 }\n")], "Fix the overflow in a and b");
    let mined = mine(repo.path(), &MineOptions::default()).expect("mined");
    let result = mined.fixes.iter().find(|f| f.sha == fix).expect("fix");
    assert_eq!(result.inducing.iter().map(|i| (i.sha.as_str(), i.how)).collect::<Vec<_>>(), [(newer.as_str(), How::LatestBlameCandidate)]);
    let dropped = result.dropped.iter().find(|d| d.sha == older).expect("the older candidate is dropped");
    assert!(dropped.reason.contains("the latest of the blame candidates"), "{}", dropped.reason);
    assert_eq!(mined.summary.by_how.get("latest of several blame candidates"), Some(&1), "{:?}", mined.summary.by_how);

    let all = mine(repo.path(), &MineOptions { candidates: Candidates::All, ..MineOptions::default() }).expect("mined");
    let result = all.fixes.iter().find(|f| f.sha == fix).expect("fix");
    let mut shas: Vec<(&str, How)> = result.inducing.iter().map(|i| (i.sha.as_str(), i.how)).collect();
    shas.sort();
    let mut expected = [(older.as_str(), How::SeveralBlameCandidates), (newer.as_str(), How::SeveralBlameCandidates)];
    expected.sort();
    assert_eq!(shas, expected);
}

#[test]
fn a_second_run_reads_every_fix_back_and_examines_only_new_ones() {
    let repo = Repo::new();
    repo.commit(1, &[("a.py", "x = 1\n")], "Import");
    repo.commit(2, &[("a.py", "x = 1\ny = 2\n")], "Add y");
    repo.commit(3, &[("a.py", "x = 1\ny = 3\n")], "Fix y");
    let memo = tempfile::tempdir().expect("tempdir");
    let options = MineOptions { memo_dir: Some(memo.path().to_path_buf()), ..MineOptions::default() };
    let first = mine(repo.path(), &options).expect("first");
    assert_eq!((first.summary.examined, first.summary.from_memo), (1, 0));
    repo.commit(4, &[("a.py", "x = 2\ny = 3\n")], "Fix x");
    let second = mine(repo.path(), &options).expect("second");
    assert_eq!((second.summary.examined, second.summary.from_memo), (2, 1), "only the new fix is mined");
    assert_eq!(second.fixes.iter().find(|f| f.title == "Fix y"), first.fixes.first());
    // Other options: nothing is read back.
    let other = MineOptions { max_files: 3, ..options };
    assert_eq!(mine(repo.path(), &other).expect("third").summary.from_memo, 0);
}

#[test]
fn a_listed_fix_is_mined_whatever_its_message_and_an_unknown_one_is_reported() {
    let repo = Repo::new();
    repo.commit(1, &[("a.js", "let x = 1;\n")], "Import");
    let bug = repo.commit(2, &[("a.js", "let x = 1;\nlet y = x / 0;\n")], "Add y");
    let listed = repo.commit(3, &[("a.js", "let x = 1;\nlet y = x;\n")], "Tidy y");
    let options = MineOptions { listed: vec![listed[..10].to_string(), "feedbeef00".into()], ..MineOptions::default() };
    let mined = mine(repo.path(), &options).expect("mined");
    assert_eq!(mined.summary.fixes, 1);
    assert_eq!(mined.fixes[0].signal, "listed");
    assert_eq!(mined.fixes[0].inducing[0].sha, bug);
    assert_eq!(mined.summary.not_found, ["feedbeef00"]);
    assert!(mine(&repo.path().join("nowhere"), &MineOptions::default()).is_err(), "not a repository");
    let e = mine(repo.path(), &MineOptions { range: "nope..HEAD".into(), ..MineOptions::default() }).expect_err("a bad range");
    assert!(e.to_string().contains("nope..HEAD"), "{e}");
}
