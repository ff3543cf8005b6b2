//! Before/after corpora in the public `cases.public.json` format, and their materialization
//! as two-commit git repositories so every reviewer sees a real repository.

use super::git::{git, git_with_env, GitError};
use serde::{Deserialize, Serialize};
use std::path::Component;
use std::path::{Path, PathBuf};

/// The public half of a case: the only fields a reviewer may ever see.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublicCase {
    pub id: String,
    pub title: String,
    #[serde(rename = "reviewTask")]
    pub review_task: String,
    pub spec: String,
    pub source: CaseSource,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseSource {
    pub path: String,
    pub before: String,
    pub after: String,
}

/// `cases.public.json`: `{"version":1,"cases":[…]}` or, as some corpora write it, a bare array.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum PublicFile {
    Versioned {
        /// The number 1 (`1.0` is the same number, as in seed 002's JavaScript).
        #[allow(dead_code)]
        #[serde(deserialize_with = "version_one")]
        version: u32,
        cases: Vec<PublicCase>,
    },
    Bare(Vec<PublicCase>),
}

fn version_one<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<u32, D::Error> {
    let value = f64::deserialize(deserializer)?;
    if value == 1.0 {
        Ok(1)
    } else {
        Err(serde::de::Error::custom(format!("`version` must be 1, not {value}")))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    #[error("failed to read `{path}`: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("failed to parse `{path}`: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("case `{id}`: source path `{path}` must be relative, must stay inside the case directory and must not name `.git`")]
    UnsafePath { id: String, path: String },
    #[error("case `{id}`: source path `{path}` names git's own directory (`.git`); a case may only write files of the work tree, since git's directory holds configuration and hooks that run programs. Rename the file")]
    GitDirPath { id: String, path: String },
    #[error("case `{0}` is listed in the manifest but not in the corpus")]
    UnknownCase(String),
    #[error("failed to materialize case `{id}`: {message}")]
    Materialize { id: String, message: String },
    #[error(transparent)]
    Git(#[from] GitError),
}

pub const PUBLIC_FILE: &str = "cases.public.json";

/// Reads a corpus's public cases, in file order.
pub fn load_public_cases(dir: &Path) -> Result<Vec<PublicCase>, CorpusError> {
    let path = dir.join(PUBLIC_FILE);
    let text = super::files::read_text(&path).map_err(|source| CorpusError::Read { path: path.clone(), source })?;
    let file: PublicFile = serde_json::from_str(&text).map_err(|e| CorpusError::Parse {
        path: path.clone(),
        message: format!("{e} (each case has exactly id, title, reviewTask, spec, source{{path, before, after}})"),
    })?;
    let cases = match file {
        PublicFile::Versioned { cases, .. } | PublicFile::Bare(cases) => cases,
    };
    let mut cases = cases;
    for case in &mut cases {
        if names_git_dir(&case.source.path) {
            return Err(CorpusError::GitDirPath { id: case.id.clone(), path: case.source.path.clone() });
        }
        match normalize_relative_path(&case.source.path) {
            Some(normal) => case.source.path = normal,
            None => return Err(CorpusError::UnsafePath { id: case.id.clone(), path: case.source.path.clone() }),
        }
    }
    Ok(cases)
}

/// The path inside the tree that a relative path names, with `.` segments dropped and `..`
/// resolved (`./a` and `src/../a` are `a`); `None` when it is empty, absolute, uses `\`,
/// escapes the directory it is joined to, or names `.git` or anything in it, in any case
/// folding (`.GIT/config`, `sub/.git/x`; also `.git.` and `git~1`): a file written there
/// could set `core.fsmonitor` and run commands.
pub fn normalize_relative_path(path: &str) -> Option<String> {
    if path.is_empty() || path.starts_with('/') || path.contains('\\') || path.contains('\0') {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            _ => {
                if names_git_dir(part) {
                    return None;
                }
                parts.push(part);
            }
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// A case's source path must stay inside the work tree and out of git's directory.
pub fn check_source_path(case: &PublicCase) -> Result<(), CorpusError> {
    let path = &case.source.path;
    if names_git_dir(path) {
        return Err(CorpusError::GitDirPath { id: case.id.clone(), path: path.clone() });
    }
    if !is_safe_relative_path(path) {
        return Err(CorpusError::UnsafePath { id: case.id.clone(), path: path.clone() });
    }
    Ok(())
}

/// Whether any component of `path` is, or a file system may take it for, git's directory:
/// `.git` in any letter case (case-folding file systems), with the trailing dots and spaces
/// Windows drops, with the code points HFS+ ignores, or as its 8.3 short name `git~1`. A
/// component that is only a prefix (`.github`, `.gitignore`) is fine.
pub fn names_git_dir(path: &str) -> bool {
    path.split(['/', '\\']).any(|component| {
        let visible: String = component.chars().filter(|c| !is_hfs_ignorable(*c)).collect();
        let trimmed = visible.trim_end_matches(['.', ' ']).to_lowercase();
        trimmed == ".git" || trimmed == "git~1"
    })
}

/// Code points HFS+ ignores when comparing names (as git's own `is_hfs_dotgit` lists them).
fn is_hfs_ignorable(c: char) -> bool {
    matches!(c, '\u{200c}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{206a}'..='\u{206f}' | '\u{feff}')
}

/// A relative path that stays inside the directory it is joined to.
pub fn is_safe_relative_path(path: &str) -> bool {
    normalize_relative_path(path).is_some()
}

/// blake3 over the case's public content: what a review of it can depend on.
pub fn case_content_hash(case: &PublicCase) -> String {
    let canonical = serde_json::to_vec(case).unwrap_or_default();
    blake3::hash(&canonical).to_hex().to_string()
}

/// Fixed identity and dates so a case's commits have the same SHAs on every machine.
const COMMIT_ENV: [(&str, &str); 6] = [
    ("GIT_AUTHOR_NAME", "runner"),
    ("GIT_AUTHOR_EMAIL", "runner@localhost"),
    ("GIT_AUTHOR_DATE", "2000-01-01T00:00:00Z"),
    ("GIT_COMMITTER_NAME", "runner"),
    ("GIT_COMMITTER_EMAIL", "runner@localhost"),
    ("GIT_COMMITTER_DATE", "2000-01-01T00:00:00Z"),
];

/// Writes `case` as a repository with a `before` commit and an `after` commit under
/// `root`, reusing one that is already complete. Returns the repository directory.
pub fn materialize(case: &PublicCase, root: &Path) -> Result<PathBuf, CorpusError> {
    check_source_path(case)?;
    let hash = case_content_hash(case);
    let dir = root.join(format!("{}-{}", sanitize(&case.id), &hash[..16]));
    if super::staging::is_ready(&dir) {
        return Ok(dir);
    }
    let fail = |message: String| CorpusError::Materialize { id: case.id.clone(), message };
    std::fs::create_dir_all(root).map_err(|e| fail(format!("cannot create `{}`: {e}", root.display())))?;
    let staging = tempfile::Builder::new().prefix(".staging-").tempdir_in(root).map_err(|e| fail(format!("cannot create a staging directory: {e}")))?;
    let work = staging.path();
    git(work, &["init", "--quiet", "--initial-branch=main"])?;
    // A reviewer that commits notes (stet) needs a repository-local identity.
    git(work, &["config", "user.name", "runner"])?;
    git(work, &["config", "user.email", "runner@localhost"])?;
    git(work, &["config", "commit.gpgsign", "false"])?;
    let Some(relative) = normalize_relative_path(&case.source.path) else {
        return Err(CorpusError::UnsafePath { id: case.id.clone(), path: case.source.path.clone() });
    };
    let file = work.join(relative);
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent).map_err(|e| fail(e.to_string()))?;
    }
    // Nothing in a fresh repository is a symbolic link, but check where the file really
    // lands: inside the work tree, outside `.git`, and not through a link.
    let inside = match (file.parent().map(Path::canonicalize), work.canonicalize()) {
        (Some(Ok(parent)), Ok(top)) => parent
            .strip_prefix(&top)
            .ok()
            .is_some_and(|rel| !rel.components().any(|c| matches!(c, Component::Normal(n) if names_git_dir(&n.to_string_lossy())))),
        _ => false,
    };
    if !inside || std::fs::symlink_metadata(&file).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(CorpusError::GitDirPath { id: case.id.clone(), path: case.source.path.clone() });
    }
    for (text, message) in [(&case.source.before, "before"), (&case.source.after, "after")] {
        std::fs::write(&file, text).map_err(|e| fail(e.to_string()))?;
        git(work, &["add", "--all"])?;
        git_with_env(work, &["commit", "--quiet", "--allow-empty", "--no-verify", "-m", message], &COMMIT_ENV)?;
    }
    super::staging::mark_ready(work).map_err(|e| fail(e.to_string()))?;
    // Another process that finished the same case first made an identical one: theirs stays.
    super::staging::put_in_place(&staging.keep(), &dir).map_err(fail)?;
    Ok(dir)
}

fn sanitize(id: &str) -> String {
    id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_paths() {
        assert!(is_safe_relative_path("src/a.py"));
        assert!(!is_safe_relative_path("../a.py"));
        assert!(!is_safe_relative_path("/etc/passwd"));
        assert!(!is_safe_relative_path("src/../../a"));
        assert!(!is_safe_relative_path(""));
        assert_eq!(normalize_relative_path("./a.py").as_deref(), Some("a.py"));
        assert_eq!(normalize_relative_path("src/../a.py").as_deref(), Some("a.py"));
        assert_eq!(normalize_relative_path("src//./b/a.py").as_deref(), Some("src/b/a.py"));
        for bad in [
            ".",
            "src/..",
            ".git",
            ".git/config",
            ".GIT/config",
            ".Git/hooks/pre-commit",
            "sub/.git/x",
            "sub/.git",
            ".git./config",
            "GIT~1/config",
            "a\\b",
            "/a",
        ] {
            assert_eq!(normalize_relative_path(bad), None, "{bad}");
        }
        assert!(is_safe_relative_path(".github/workflows/ci.yml"));
        assert!(is_safe_relative_path(".gitignore"));
    }

    #[test]
    fn paths_into_gits_directory_are_refused() {
        for p in [".git/config", ".GIT/hooks/pre-commit", "a/.Git/config", ".git./config", ".git /x", "git~1/config", ".g\u{200c}it/config", ".git"] {
            assert!(names_git_dir(p), "{p}");
        }
        for p in [".github/workflows/ci.yml", ".gitignore", "src/git.rs", "a.git/x", "git/config"] {
            assert!(!names_git_dir(p), "{p}");
        }
        let case = PublicCase {
            id: "case-01".into(),
            title: "Scenario 01".into(),
            review_task: "t".into(),
            spec: "s".into(),
            source: CaseSource { path: ".git/config".into(), before: "[core]\n".into(), after: "[core]\n\n".into() },
        };
        let root = tempfile::tempdir().expect("tempdir");
        assert!(matches!(materialize(&case, root.path()), Err(CorpusError::GitDirPath { .. })));
        assert_eq!(std::fs::read_dir(root.path()).expect("read").count(), 0, "nothing was written");
    }

    #[test]
    fn materialized_cases_have_stable_shas() {
        let case = PublicCase {
            id: "case-01".into(),
            title: "Scenario 01".into(),
            review_task: "t".into(),
            spec: "s".into(),
            source: CaseSource { path: "src/a.py".into(), before: "x = 1\n".into(), after: "x = 2\n".into() },
        };
        let a = tempfile::tempdir().expect("tempdir");
        let b = tempfile::tempdir().expect("tempdir");
        let ra = materialize(&case, a.path()).expect("materialize");
        let rb = materialize(&case, b.path()).expect("materialize");
        let head = |d: &Path| git(d, &["rev-parse", "HEAD"]).expect("rev-parse");
        assert_eq!(head(&ra), head(&rb));
        assert_eq!(materialize(&case, a.path()).expect("reuse"), ra);
        let diff = super::super::git::diff(&ra, "HEAD~1", "HEAD").expect("diff");
        assert!(diff.contains("+x = 2"));
    }

    #[test]
    fn a_case_that_would_write_into_git_is_never_materialized() {
        let mut case = PublicCase {
            id: "case-01".into(),
            title: "Scenario 01".into(),
            review_task: "t".into(),
            spec: "s".into(),
            source: CaseSource { path: ".GIT/config".into(), before: "".into(), after: "[core]\n\tfsmonitor = touch pwned\n".into() },
        };
        let root = tempfile::tempdir().expect("tempdir");
        assert!(matches!(materialize(&case, root.path()), Err(CorpusError::GitDirPath { .. })));
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join(PUBLIC_FILE), serde_json::to_string(&vec![&case]).expect("json")).expect("write");
        assert!(matches!(load_public_cases(dir.path()), Err(CorpusError::GitDirPath { .. })));
        // `./x` and `src/../x` name `x`, and are read as `x`.
        case.source.path = "src/../a.py".into();
        std::fs::write(dir.path().join(PUBLIC_FILE), serde_json::to_string(&vec![&case]).expect("json")).expect("write");
        assert_eq!(load_public_cases(dir.path()).expect("loads")[0].source.path, "a.py");
        std::fs::write(dir.path().join(PUBLIC_FILE), format!(r#"{{"version": 1.0, "cases": {}}}"#, serde_json::to_string(&vec![&case]).expect("json")))
            .expect("write");
        assert_eq!(load_public_cases(dir.path()).expect("version 1.0 is 1").len(), 1);
    }
}
