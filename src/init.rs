//! `runner init`: a first experiment on the repository runner is started in (a manifest over
//! its recent commits, an example `command` reviewer, a `compare`), a `.gitignore` that keeps
//! runner's work directory out of `git status`, and with `--corpus` a seed-002 corpus of one
//! finding case and one clean case. It never overwrites a file.

use crate::subject::git::{git, GitError};
use std::path::{Path, PathBuf};

/// The manifest written, with `@NAME@` and `@COMMITS@` to fill.
const EXPERIMENT: &str = include_str!("../templates/init/experiment.toml");
/// The example reviewer the manifest runs.
const EXAMPLE_REVIEWER: &str = include_str!("../templates/init/example.py");
/// runner's work directory holds nothing to commit.
const WORK_DIR_GITIGNORE: &str = "# runner's work directory (materialized cases, execution logs): nothing here is committed.\n*\n";

/// How many recent first-parent commits a new experiment reviews.
pub(crate) const RECENT_COMMITS: usize = 10;

#[derive(Debug, thiserror::Error)]
pub enum InitError {
    #[error(
        "`runner init` writes an experiment into a git repository, and `{0}` is not in one (`git init` first, or `runner init --corpus DIR` for a corpus)"
    )]
    NotARepository(String),
    #[error("the repository has no commits yet: an experiment over its history needs at least one")]
    NoCommits,
    #[error(
        "this clone is shallow: the history stops at {0}, whose parent was not fetched, so no commit's change can be known; `git fetch --deepen=20` (or `git fetch --unshallow`) and run `runner init` again"
    )]
    Shallow(String),
    #[error("{} already exist{}: runner init never overwrites a file (move {} away or choose another name)", list(.0), if .0.len() == 1 { "s" } else { "" }, if .0.len() == 1 { "it" } else { "them" })]
    Exists(Vec<PathBuf>),
    #[error("experiment name `{0}`: use letters, digits, `-`, `_` and `.`, not starting with `.`, at most 128 characters")]
    Name(String),
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("failed to write `{path}`: {source}")]
    Write { path: PathBuf, source: std::io::Error },
}

fn list(paths: &[PathBuf]) -> String {
    paths.iter().map(|p| format!("`{}`", p.display())).collect::<Vec<_>>().join(", ")
}

/// One file to write: where, what, and whether it is a program.
struct NewFile {
    path: PathBuf,
    text: String,
    executable: bool,
}

/// What `runner init` wrote.
#[derive(Debug, Default)]
pub struct Written {
    /// The files written, in order.
    pub files: Vec<PathBuf>,
    /// Files left as they were because they already say what runner would write.
    pub kept: Vec<PathBuf>,
    /// The experiment's manifest, when one was written.
    pub manifest: Option<PathBuf>,
}

/// Writes `experiments/NAME.toml`, `experiments/reviewers/example.py` and
/// `.runner/.gitignore` at the root of the repository holding `dir`.
pub fn experiment(dir: &Path, name: &str) -> Result<Written, InitError> {
    check_name(name)?;
    let root = git(dir, &["rev-parse", "--show-toplevel"]).map_err(|_| InitError::NotARepository(dir.display().to_string()))?;
    let root = PathBuf::from(root.trim());
    let boundary = crate::subject::history::shallow_boundary(&root);
    let recent = recent_commits(&root)?;
    if recent.is_empty() {
        return Err(InitError::NoCommits);
    }
    // A shallow clone's boundary shows no parent: its change is unknown, so it is not listed
    // (as the base of the newest ten's range it is only their parent, which is fine).
    let cut = recent.iter().position(|c| boundary.contains(&c.sha)).unwrap_or(recent.len());
    if cut == 0 {
        return Err(InitError::Shallow(recent[0].sha.chars().take(7).collect()));
    }
    let reviewable: Vec<&Recent> = recent[..cut].iter().filter(|c| c.changes_source && !c.merge && !c.bot).take(RECENT_COMMITS).collect();
    let newest_reviewable = reviewable.len() == RECENT_COMMITS.min(cut) && reviewable.iter().zip(&recent).all(|(a, b)| a.sha == b.sha);
    let commits = if newest_reviewable || reviewable.is_empty() {
        // The newest commits change source files (or none does): their range, with the commit
        // before them as its base (a shallow clone's boundary only ever as that base).
        let upto: Vec<&str> = recent.iter().take(if cut > RECENT_COMMITS { RECENT_COMMITS + 1 } else { cut }).map(|c| c.sha.as_str()).collect();
        commits_value(&upto)
    } else {
        // Bot bumps, merges or docs among the newest: the newest commits that change source
        // files, listed, oldest first.
        let listed: Vec<String> = reviewable.iter().rev().map(|c| format!("\"{}\"", c.sha)).collect();
        format!("[{}]", listed.join(", "))
    };
    let manifest = root.join("experiments").join(format!("{name}.toml"));
    let text = EXPERIMENT.replace("@NAME@", name).replace("@COMMITS@", &commits);
    let files = vec![
        NewFile { path: manifest.clone(), text, executable: false },
        NewFile { path: root.join("experiments/reviewers/example.py"), text: EXAMPLE_REVIEWER.to_string(), executable: true },
        NewFile { path: root.join(".runner/.gitignore"), text: WORK_DIR_GITIGNORE.to_string(), executable: false },
    ];
    let mut written = write_new(files)?;
    written.manifest = Some(manifest);
    Ok(written)
}

/// How many first-parent commits `init` looks through for recent changes to source files.
const LOOKED_AT: usize = 300;

/// A recent first-parent commit, as `init` chooses among them.
struct Recent {
    sha: String,
    merge: bool,
    bot: bool,
    /// It changes at least one source file (not only tests, docs or configuration).
    changes_source: bool,
}

/// The newest [`LOOKED_AT`] first-parent commits of `HEAD`, newest first, in one git call.
fn recent_commits(root: &Path) -> Result<Vec<Recent>, InitError> {
    use crate::ground_truth::mine::fixes::{is_bot, path_kind, LoggedCommit, PathKind};
    let log = git(
        root,
        &["log", "--first-parent", &format!("--max-count={LOOKED_AT}"), "--no-renames", "--name-only", "--format=%x1e%H%x1f%P%x1f%an%x1f%ae%x1f", "HEAD", "--"],
    )
    .map_err(|_| InitError::NoCommits)?;
    Ok(log
        .split('\u{1e}')
        .filter_map(|record| {
            let f: Vec<&str> = record.splitn(5, '\u{1f}').collect();
            let [sha, parents, author, email, paths] = f[..] else { return None };
            let paths: Vec<String> = paths.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_string).collect();
            let commit = LoggedCommit {
                sha: sha.trim().to_string(),
                parents: parents.split_whitespace().map(str::to_string).collect(),
                author: author.to_string(),
                email: email.to_string(),
                date: String::new(),
                time: 0,
                message: String::new(),
                paths,
            };
            Some(Recent {
                merge: commit.parents.len() > 1,
                bot: is_bot(&commit),
                changes_source: commit.paths.iter().any(|p| path_kind(p) == PathKind::Source),
                sha: commit.sha,
            })
        })
        .collect())
}

/// The `commits` value for the first-parent commits `newest_first` (at most
/// [`RECENT_COMMITS`] + 1 of them): the range of the newest [`RECENT_COMMITS`] when there is a
/// commit before them, else every commit listed, the root included, oldest first.
pub(crate) fn commits_value(newest_first: &[&str]) -> String {
    if newest_first.len() > RECENT_COMMITS {
        format!("\"{}..{}\"", newest_first[RECENT_COMMITS], newest_first[0])
    } else {
        let listed: Vec<String> = newest_first.iter().rev().map(|sha| format!("\"{sha}\"")).collect();
        format!("[{}]", listed.join(", "))
    }
}

/// Writes `cases.public.json` and `oracle.json` into `dir`: a seed-002 corpus of one finding
/// case and one clean case (Python), which `runner corpus validate` accepts.
pub fn corpus(dir: &Path) -> Result<Written, InitError> {
    let pretty = |v: serde_json::Value| serde_json::to_string_pretty(&v).unwrap_or_default() + "\n";
    let files = vec![
        NewFile { path: dir.join(crate::subject::corpus::PUBLIC_FILE), text: pretty(corpus_public()), executable: false },
        NewFile { path: dir.join(crate::ground_truth::oracle::ORACLE_FILE), text: pretty(corpus_oracle()), executable: false },
    ];
    write_new(files)
}

const MEAN_BEFORE: &str = "def mean(values):\n    \"\"\"The arithmetic mean of a non-empty list of numbers.\"\"\"\n    if not values:\n        raise ValueError(\"mean of an empty list\")\n    return sum(values) / len(values)\n";
const MEAN_AFTER: &str = "def mean(values):\n    \"\"\"The arithmetic mean of a non-empty list of numbers.\"\"\"\n    if not values:\n        raise ValueError(\"mean of an empty list\")\n    total = 0\n    for value in values:\n        total += value\n    return total // len(values)\n";
const GREET_BEFORE: &str = "def greet(name):\n    return \"Hello, \" + name + \"!\"\n";
const GREET_AFTER: &str = "def greet(name):\n    \"\"\"A greeting for `name`.\"\"\"\n    return f\"Hello, {name}!\"\n";

fn corpus_public() -> serde_json::Value {
    serde_json::json!({
        "version": 1,
        "cases": [
            {
                "id": "case-01",
                "title": "Scenario 01",
                "reviewTask": "Review this change to the statistics helpers, which replaces sum() with an explicit loop.",
                "spec": "mean(values) returns the arithmetic mean of a non-empty list of numbers as a float (mean([1, 2]) is 1.5); an empty list raises ValueError.",
                "source": { "path": "src/stats.py", "before": MEAN_BEFORE, "after": MEAN_AFTER }
            },
            {
                "id": "case-02",
                "title": "Scenario 02",
                "reviewTask": "Review this change to the greeting helper, which switches to an f-string and adds a docstring.",
                "spec": "greet(name) returns \"Hello, <name>!\".",
                "source": { "path": "src/greeting.py", "before": GREET_BEFORE, "after": GREET_AFTER }
            }
        ]
    })
}

fn corpus_oracle() -> serde_json::Value {
    serde_json::json!({
        "version": 1,
        "findings": [
            {
                "id": "F01",
                "caseId": "case-01",
                "description": "mean() now divides with `//`: the mean of [1, 2] is 1 instead of 1.5 (floor division of the total).",
                "file": "src/stats.py",
                "line": 8,
                "category": "correctness",
                "severity": "error",
                "blocking": true
            }
        ],
        "cases": [
            {
                "id": "case-01",
                "expectedFindingIds": ["F01"],
                "groundTruth": {
                    "before": "pass",
                    "after": "fail",
                    "program": "import sys\n\nsys.path.insert(0, \"src\")\nimport stats\n\nassert stats.mean([4]) == 4\nassert stats.mean([1, 2]) == 1.5, \"the mean of 1 and 2 is 1.5\"\ntry:\n    stats.mean([])\nexcept ValueError:\n    pass\nelse:\n    raise AssertionError(\"an empty list must raise ValueError\")\n"
                },
                "rationale": "The loop is fine, but the division became floor division, so every mean with a fractional part is wrong.",
                "split": "tuning",
                "interpreter": "python3"
            },
            {
                "id": "case-02",
                "expectedFindingIds": [],
                "groundTruth": {
                    "before": "pass",
                    "after": "pass",
                    "program": "import sys\n\nsys.path.insert(0, \"src\")\nimport greeting\n\nassert greeting.greet(\"Ada\") == \"Hello, Ada!\"\nassert greeting.greet(\"\") == \"Hello, !\"\n"
                },
                "rationale": "A clean change: the f-string builds the same text and the docstring changes no behaviour.",
                "split": "tuning",
                "interpreter": "python3"
            }
        ]
    })
}

fn check_name(name: &str) -> Result<(), InitError> {
    let ok = !name.is_empty() && name.len() <= 128 && !name.starts_with('.') && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    if ok {
        Ok(())
    } else {
        Err(InitError::Name(name.to_string()))
    }
}

/// Writes every file, or none when one of them exists (a `.gitignore` that already says
/// what runner would write is kept as it is). Files are created, never replaced, so a file
/// made meanwhile is not overwritten either.
fn write_new(files: Vec<NewFile>) -> Result<Written, InitError> {
    let mut written = Written::default();
    let mut existing = Vec::new();
    let mut to_write = Vec::new();
    for file in files {
        let same = std::fs::read_to_string(&file.path).is_ok_and(|t| t == file.text);
        if same && file.path.ends_with(".gitignore") {
            written.kept.push(file.path);
        } else if std::fs::symlink_metadata(&file.path).is_ok() {
            existing.push(file.path);
        } else {
            to_write.push(file);
        }
    }
    if !existing.is_empty() {
        return Err(InitError::Exists(existing));
    }
    for file in to_write {
        create(&file).map_err(|source| InitError::Write { path: file.path.clone(), source })?;
        written.files.push(file.path);
    }
    Ok(written)
}

fn create(file: &NewFile) -> std::io::Result<()> {
    use std::io::Write;
    if let Some(dir) = file.path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(if file.executable { 0o755 } else { 0o644 });
    }
    let mut out = options.open(&file.path)?;
    out.write_all(file.text.as_bytes())?;
    out.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_history_gives_the_range_of_the_newest_ten_and_a_short_one_lists_every_commit() {
        let shas: Vec<String> = (0..11).map(|i| format!("{i:040x}")).collect();
        let newest_first: Vec<&str> = shas.iter().map(String::as_str).collect();
        assert_eq!(commits_value(&newest_first), format!("\"{}..{}\"", shas[10], shas[0]));
        assert_eq!(commits_value(&newest_first[..3]), format!("[\"{}\", \"{}\", \"{}\"]", shas[2], shas[1], shas[0]), "oldest first, the root included");
    }

    #[test]
    fn names_that_cannot_name_a_file_are_refused() {
        for bad in ["", ".hidden", "a/b", "a b", &"x".repeat(129)] {
            assert!(matches!(check_name(bad), Err(InitError::Name(_))), "{bad:?}");
        }
        assert!(check_name("review-1.2_x").is_ok());
    }

    #[test]
    fn an_existing_file_stops_every_write_and_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("oracle.json"), "mine").expect("write");
        let error = corpus(dir.path()).expect_err("refused");
        assert_eq!(
            error.to_string(),
            format!("`{}` already exists: runner init never overwrites a file (move it away or choose another name)", dir.path().join("oracle.json").display())
        );
        assert!(!dir.path().join("cases.public.json").exists(), "nothing written");
        assert_eq!(std::fs::read_to_string(dir.path().join("oracle.json")).expect("read"), "mine");
    }
}
