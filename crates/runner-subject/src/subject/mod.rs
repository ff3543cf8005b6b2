//! Subjects: what is reviewed. Plan-time identities (resolved SHAs, case content hashes) and
//! materialized subjects (a repository on disk plus the diff a reviewer sees).

pub mod corpus;
pub mod diff;
pub(crate) mod evals;
pub mod external;
pub mod files;
pub mod git;
pub mod glob;
pub mod history;
pub mod staging;
pub mod trace;

use corpus::{CorpusError, PublicCase};
use diff::FileDiff;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// What is reviewed.
#[derive(Debug, Clone)]
pub enum TargetSpec {
    /// A git repository reviewed as `ref..head`; `ref` comes from the matrix. Its optional
    /// oracle (runner's format) is keyed by subject id; commit ids match by SHA prefix.
    Git { repo: PathBuf, head: String, oracle: Option<PathBuf> },
    /// A git repository's own history: each selected commit is a subject, reviewed as the
    /// change it made against its first parent; its optional oracle is keyed by commit SHA
    /// (`runner oracle import-github` writes one).
    History { repo: PathBuf, history: history::HistorySpec, oracle: Option<PathBuf> },
    /// A directory with `cases.public.json` (and optionally `oracle.json`).
    Corpus { dir: PathBuf, cases: Option<Vec<String>>, unseal_holdout: bool },
    /// A git repository with seed 003's eval cases (`<dir>/<id>/case.md`): each case's
    /// `Range: base..tip` is a subject, reviewed in a blind clone, and its findings are the oracle.
    /// The review guide put into each clone, its lines tagged `case:<id>` or `case:<group>`
    /// stripped: `review-file`, or the repository's current `REVIEW.md` when there is one.
    Evals { repo: PathBuf, dir: PathBuf, cases: Option<Vec<String>>, review_file: Option<PathBuf> },
    /// Changes without a repository (`changes.json`: ids, titles, URLs, optional diffs), with
    /// an optional oracle file in runner's format.
    External { changes: PathBuf, oracle: Option<PathBuf>, cases: Option<Vec<String>> },
}

/// What one review node reviews, known before anything runs.
#[derive(Debug, Clone, Serialize)]
pub struct SubjectSpec {
    /// Stable id: the case id, the base ref as written in the manifest, or a history
    /// commit's full SHA.
    pub id: String,
    /// blake3 over everything about the subject that a review can depend on.
    pub identity: String,
    #[serde(skip)]
    pub source: SubjectSource,
    /// A holdout case of its corpus, planned because the manifest unsealed the holdout.
    #[serde(skip)]
    pub holdout: bool,
}

#[derive(Debug, Clone)]
pub enum SubjectSource {
    Git {
        repo: PathBuf,
        base_sha: String,
        head_sha: String,
    },
    /// Only the public half of a case: the type admits no oracle content.
    Case(Box<PublicCase>),
    /// A seed-003 eval case: `base..tip` of `repo`, reviewed in a blind clone that holds no
    /// history after the tip and not the eval set (`strip`, relative to the repository).
    Eval {
        repo: PathBuf,
        base_sha: String,
        head_sha: String,
        strip: Option<PathBuf>,
        /// The review guide (`REVIEW.md`) as this case's reviewer may read it.
        review: Option<String>,
    },
    /// An external change: an id, a title and URL, and its diff when it has one.
    External(Box<external::ExternalChange>),
}

/// A subject ready for a reviewer: a repository on disk and the diff of `base..head`.
///
/// Everything here is reviewer input. For a corpus case it is built from a [`PublicCase`]
/// only (the public file's `reviewTask`, `spec` and `source`); nothing from the oracle (ids,
/// descriptions, rationales, splits, ground-truth programs) may reach it. The test
/// `ground_truth::no_leak` checks both the content and that this module never reads the
/// oracle (`plan::subjects` resolves targets, reaching only the holdout seal's case ids).
#[derive(Debug, Clone)]
pub struct Subject {
    pub id: String,
    pub repo_dir: PathBuf,
    pub base_sha: String,
    pub head_sha: String,
    pub diff: String,
    pub files: Vec<FileDiff>,
    /// Why stet could not compute hunks for this diff (a line over 64 KiB), if it could not:
    /// the built-in dry-run then fails as `stet start --dry-run` does.
    pub stet_error: Option<String>,
    /// Public review instructions for corpus cases (never oracle content).
    pub review_task: Option<String>,
    pub spec: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("failed to resolve `{rev}` in `{repo}`: {message}")]
    Resolve { repo: String, rev: String, message: String },
    #[error(transparent)]
    Corpus(#[from] CorpusError),
    #[error(transparent)]
    Git(#[from] git::GitError),
    #[error("eval case `{0}` is listed in the manifest but not in the eval set")]
    UnknownEvalCase(String),
    #[error("{0}")]
    External(String),
    #[error("{0}")]
    History(String),
}

/// Puts a subject on disk (corpus cases become repositories under `work_dir`) and reads its diff.
pub fn materialize(spec: &SubjectSpec, work_dir: &Path) -> Result<Subject, TargetError> {
    match &spec.source {
        SubjectSource::Git { repo, base_sha, head_sha } => {
            let raw = git::diff_bytes(repo, base_sha, head_sha)?;
            let parsed = diff::parse(&raw);
            Ok(Subject {
                id: spec.id.clone(),
                repo_dir: repo.clone(),
                base_sha: base_sha.clone(),
                head_sha: head_sha.clone(),
                files: parsed.files,
                stet_error: parsed.stet_error,
                diff: String::from_utf8_lossy(&raw).into_owned(),
                review_task: None,
                spec: None,
            })
        }
        SubjectSource::Eval { repo, base_sha, head_sha, strip, review } => {
            evals::materialize(&spec.id, &spec.identity, repo, (base_sha, head_sha), strip.as_deref(), review.as_deref(), work_dir)
        }
        SubjectSource::External(change) => external::materialize(change, &spec.identity, work_dir),
        SubjectSource::Case(case) => {
            let repo = corpus::materialize(case, &work_dir.join("cases"))?;
            let shas = git::resolve_commits(&repo, &["HEAD~1", "HEAD"])?;
            let (base_sha, head_sha) = match shas.as_slice() {
                [b, h] => (b.clone(), h.clone()),
                _ => {
                    return Err(TargetError::Resolve {
                        repo: repo.display().to_string(),
                        rev: "HEAD~1, HEAD".into(),
                        message: "unexpected rev-parse output".into(),
                    })
                }
            };
            let raw = git::diff_bytes(&repo, &base_sha, &head_sha)?;
            let parsed = diff::parse(&raw);
            Ok(Subject {
                id: spec.id.clone(),
                repo_dir: repo,
                base_sha,
                head_sha,
                files: parsed.files,
                stet_error: parsed.stet_error,
                diff: String::from_utf8_lossy(&raw).into_owned(),
                review_task: Some(case.review_task.clone()),
                spec: Some(case.spec.clone()),
            })
        }
    }
}
