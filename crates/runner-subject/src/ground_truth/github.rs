//! An oracle from a repository's GitHub review history: `runner oracle import-github` reads
//! the REST exports of `GET /repos/{owner}/{repo}/pulls?state=closed` and
//! `GET /repos/{owner}/{repo}/pulls/comments` (as `gh api --paginate` writes them: one JSON
//! array, or several arrays one after another, `][` included) and the local clone.
//!
//! - Each thread — a review comment and its replies (`in_reply_to_id`, followed to the first
//!   comment) — is one human finding of its pull request, at the first comment's `path` and
//!   `original_start_line`..`original_line` on `original_commit_id`, the commit it was
//!   written against (`subject_type: "file"`: the whole file). The description is the first
//!   comment's body.
//! - A pull request's case is keyed by its subject: `merge_commit_sha` when merged
//!   (`merged_at` set), else `head.sha` (an unmerged pull request's `merge_commit_sha` is
//!   GitHub's test merge, never part of the history). Only pull requests with a finding get
//!   a case.
//! - Severity from the first comment's own marker (its first line, Conventional Comments'
//!   `label (decorations):` or a bracketed `[label]`): `blocking` (also as a decoration, and
//!   `[blocking]`) → error, blocking; `nit`, `nitpick`, `typo`, `polish` → nitpick; `issue`,
//!   `bug`, `todo` → warning; `suggestion`, `question`, `thought`, `note`, `chore`,
//!   `optional`, `minor` → info; the marker as written is its `severityLabel`. Unmarked
//!   comments have no severity and are not blocking; `praise` threads are left out.
//! - `resolved`: a later commit of the pull request (the walk from the comment's commit to
//!   `head.sha` along its first-parent line) changed or removed a commented line, the lines
//!   followed through each commit's diff with moves and renames.
//! - Left out, each with its reason: bots (`user.type = "Bot"`, unless `--include-bots`),
//!   comments of pull requests not in the pulls export (open ones), replies whose thread is
//!   not in the export, comments on a removed line (`side: "LEFT"`), comments with no line,
//!   comments whose commit or pull request head is not in the local repository, comments on a
//!   file their commit does not hold, and comments whose commit is no longer an ancestor of
//!   the head (rewritten by a force-push: outdated beyond tracing).

use super::oracle::{Oracle, OracleCase, OracleFinding, Skipped};
use crate::finding::{LineRange, Severity};
use crate::subject::git::GitError;
use crate::subject::trace::{Fate, Span, Tracer};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("failed to read `{path}`: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("`{path}`: {message}")]
    Format { path: PathBuf, message: String },
    #[error(transparent)]
    Git(#[from] GitError),
}

/// A pull request, as `GET /repos/{owner}/{repo}/pulls` returns it (the fields read).
#[derive(Debug, Clone, Deserialize)]
pub struct Pull {
    pub number: u64,
    /// The API URL, which each review comment's `pull_request_url` names.
    pub url: String,
    #[serde(default)]
    pub html_url: Option<String>,
    #[serde(default)]
    pub merge_commit_sha: Option<String>,
    pub base: GitRef,
    pub head: GitRef,
    #[serde(default)]
    pub merged_at: Option<String>,
    #[serde(default)]
    pub title: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct GitRef {
    pub sha: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct User {
    pub login: String,
    #[serde(rename = "type")]
    pub kind: String,
}

/// A review comment, as `GET /repos/{owner}/{repo}/pulls/comments` returns it (the fields read).
#[derive(Debug, Clone, Deserialize)]
pub struct Comment {
    pub id: u64,
    pub path: String,
    #[serde(default)]
    pub line: Option<u32>,
    #[serde(default)]
    pub original_line: Option<u32>,
    #[serde(default)]
    pub start_line: Option<u32>,
    #[serde(default)]
    pub original_start_line: Option<u32>,
    #[serde(default)]
    pub commit_id: Option<String>,
    #[serde(default)]
    pub original_commit_id: Option<String>,
    #[serde(default)]
    pub in_reply_to_id: Option<u64>,
    /// `null` for a deleted account.
    #[serde(default)]
    pub user: Option<User>,
    #[serde(default)]
    pub body: String,
    #[serde(default)]
    pub created_at: String,
    pub pull_request_url: String,
    /// `LEFT` (a removed line) or `RIGHT`.
    #[serde(default)]
    pub side: Option<String>,
    /// `line` or `file`.
    #[serde(default)]
    pub subject_type: Option<String>,
}

impl Comment {
    fn is_bot(&self) -> bool {
        self.user.as_ref().is_some_and(|u| u.kind == "Bot")
    }

    fn describe(&self, pull: Option<u64>) -> String {
        let at = match self.original_line.or(self.line) {
            Some(line) => format!("{}:{line}", self.path),
            None => self.path.clone(),
        };
        match pull {
            Some(n) => format!("pull #{n} comment {} ({at})", self.id),
            None => format!("comment {} ({at})", self.id),
        }
    }
}

/// Reads a `gh api --paginate` export: one JSON array, several arrays one after another (with
/// or without whitespace between them), or an array of arrays (`--slurp`).
pub fn read_export<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>, ImportError> {
    let text = crate::subject::files::read_text(path).map_err(|source| ImportError::Read { path: path.to_path_buf(), source })?;
    parse_export(&text).map_err(|message| ImportError::Format { path: path.to_path_buf(), message })
}

/// [`read_export`] over text.
pub fn parse_export<T: DeserializeOwned>(text: &str) -> Result<Vec<T>, String> {
    let mut items = Vec::new();
    let stream = serde_json::Deserializer::from_str(text.strip_prefix('\u{feff}').unwrap_or(text)).into_iter::<serde_json::Value>();
    for (page, value) in stream.enumerate() {
        let value = value.map_err(|e| format!("not a JSON array or concatenated arrays: {e}"))?;
        let serde_json::Value::Array(values) = value else {
            return Err(format!("page {} is not a JSON array (expected what `gh api --paginate` writes)", page + 1));
        };
        let nested = !values.is_empty() && values.iter().all(serde_json::Value::is_array);
        let values: Vec<serde_json::Value> = if nested { values.into_iter().flat_map(|v| v.as_array().cloned().unwrap_or_default()).collect() } else { values };
        for value in values {
            let at = items.len();
            items.push(serde_json::from_value(value).map_err(|e| format!("item {at}: {e}"))?);
        }
    }
    Ok(items)
}

/// A comment's marker: its severity, whether it blocks, the marker as written; `None` severity
/// for an unmarked comment. `Err(())` for praise.
fn marker(body: &str) -> Result<(Option<Severity>, bool, Option<String>), ()> {
    let first = body.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let first = first.trim_start_matches(['*', '_', '#', '>', ' ']);
    let (label, decorations) = if let Some(rest) = first.strip_prefix('[') {
        match rest.split_once(']') {
            Some((inside, _)) => (inside.trim().to_lowercase(), String::new()),
            None => return Ok((None, false, None)),
        }
    } else {
        let Some((head, _)) = first.split_once(':') else { return Ok((None, false, None)) };
        let head = head.trim_end_matches(['*', '_']).trim();
        let (label, decorations) = match head.split_once('(') {
            Some((l, d)) => (l.trim(), d.trim_end_matches(')').trim()),
            None => (head, ""),
        };
        if label.is_empty() || label.contains(char::is_whitespace) {
            return Ok((None, false, None));
        }
        (label.to_lowercase(), decorations.to_lowercase())
    };
    let decorated: Vec<&str> = decorations.split(',').map(str::trim).filter(|d| !d.is_empty()).collect();
    let written = if decorations.is_empty() { label.clone() } else { format!("{label} ({decorations})") };
    let label = label.as_str();
    if label == "praise" {
        return Err(());
    }
    if label == "blocking" || decorated.contains(&"blocking") {
        return Ok((Some(Severity::Error), true, Some(written)));
    }
    let severity = match label {
        "nit" | "nitpick" | "typo" | "polish" => Severity::Nitpick,
        "issue" | "bug" | "todo" => Severity::Warning,
        "suggestion" | "question" | "thought" | "note" | "chore" | "optional" | "minor" | "non-blocking" => Severity::Info,
        _ => return Ok((None, false, None)),
    };
    Ok((Some(severity), false, Some(written)))
}

/// What an import produced.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The oracle, its `skipped` list included.
    pub oracle: Oracle,
    /// Threads turned into findings, and how many of them were resolved.
    pub threads: usize,
    pub resolved: usize,
    /// Replies merged into their threads' findings.
    pub replies: usize,
}

/// Builds the oracle from the exports and the local repository `repo`.
/// A pull request or comment listed twice (pages shift while `gh` paginates) is read once.
pub fn import(pulls: &[Pull], comments: &[Comment], repo: &Path, include_bots: bool) -> Result<Imported, ImportError> {
    let mut seen = std::collections::HashSet::new();
    let pulls: Vec<&Pull> = pulls.iter().filter(|p| seen.insert(p.number)).collect();
    let mut seen = std::collections::HashSet::new();
    let comments: Vec<&Comment> = comments.iter().filter(|c| seen.insert(c.id)).collect();
    let by_url: HashMap<&str, &Pull> = pulls.iter().map(|p| (p.url.as_str(), *p)).collect();
    let by_id: HashMap<u64, &Comment> = comments.iter().map(|c| (c.id, *c)).collect();
    let mut skipped = Vec::new();
    let pull_of = |c: &Comment| by_url.get(c.pull_request_url.as_str()).copied();
    let number_of = |c: &Comment| pull_of(c).map(|p| p.number);
    // Threads: the first comment's id → its comments (first comment first, then replies).
    let mut threads: BTreeMap<u64, Vec<&Comment>> = BTreeMap::new();
    for &c in &comments {
        let mut root = c;
        let mut missing = None;
        let mut hops = 0;
        while let Some(parent) = root.in_reply_to_id {
            match by_id.get(&parent) {
                Some(p) if hops < comments.len() => {
                    root = p;
                    hops += 1;
                }
                _ => {
                    missing = Some(parent);
                    break;
                }
            }
        }
        match missing {
            Some(parent) => {
                skipped.push(Skipped { source: c.describe(number_of(c)), reason: format!("a reply to comment {parent}, which is not in the comments export") })
            }
            None => threads.entry(root.id).or_default().push(c),
        }
    }
    for list in threads.values_mut() {
        list.sort_by(|a, b| (a.in_reply_to_id.is_some(), &a.created_at, a.id).cmp(&(b.in_reply_to_id.is_some(), &b.created_at, b.id)));
    }

    let mut tracer = Tracer::new(repo);
    let mut commits: HashMap<String, Option<String>> = HashMap::new();
    let mut local = |tracer: &Tracer, sha: &str| -> Option<String> { commits.entry(sha.to_string()).or_insert_with(|| tracer.commit(sha)).clone() };
    let mut findings: Vec<(u64, String, OracleFinding)> = Vec::new();
    let (mut resolved, mut replies) = (0, 0);
    for list in threads.values() {
        let first = list[0];
        let skip = |reason: String| Skipped { source: first.describe(number_of(first)), reason };
        let Some(pull) = pull_of(first) else {
            skipped.push(Skipped {
                source: first.describe(None),
                reason: format!("its pull request ({}) is not in the pulls export (still open, or another repository's)", first.pull_request_url),
            });
            continue;
        };
        if first.is_bot() && !include_bots {
            let login = first.user.as_ref().map(|u| u.login.as_str()).unwrap_or("");
            skipped.push(skip(format!("written by a bot (`{login}`); --include-bots keeps bots' threads")));
            continue;
        }
        let Ok((severity, blocking, label)) = marker(&first.body) else {
            skipped.push(skip("praise, not an issue".into()));
            continue;
        };
        if first.side.as_deref() == Some("LEFT") {
            skipped.push(skip("on a removed line (the diff's left side): no line on the commit it was written against".into()));
            continue;
        }
        let span = match (first.subject_type.as_deref(), first.original_line) {
            (Some("file"), _) => None,
            (_, Some(line)) => Some(Span::new(first.original_start_line.unwrap_or(line), line)),
            (_, None) => {
                skipped.push(skip("no line on the commit it was written against (`original_line` is null)".into()));
                continue;
            }
        };
        let merged = pull.merged_at.is_some();
        let subject = match (merged, &pull.merge_commit_sha) {
            (true, Some(sha)) => sha.clone(),
            _ => pull.head.sha.clone(),
        };
        let Some(written_on) = first.original_commit_id.as_deref().or(first.commit_id.as_deref()) else {
            skipped.push(skip("no commit (`original_commit_id` is null)".into()));
            continue;
        };
        let Some(written_on) = local(&tracer, written_on) else {
            skipped.push(skip(format!(
                "no local commit: {written_on}, the commit it was written against, is not in the repository (fetch `pull/{}/head`)",
                pull.number
            )));
            continue;
        };
        let Some(head) = local(&tracer, &pull.head.sha) else {
            skipped
                .push(skip(format!("no local commit: the pull request's head {} is not in the repository (fetch `pull/{}/head`)", pull.head.sha, pull.number)));
            continue;
        };
        if merged && local(&tracer, &subject).is_none() {
            skipped.push(skip(format!("no local commit: the merge commit {subject} is not in the repository (fetch the base branch)")));
            continue;
        }
        if !tracer.has_file(&written_on, &first.path) {
            skipped.push(skip(format!("deleted file: `{}` is not in {written_on}, the commit it was written against", first.path)));
            continue;
        }
        let Some(steps) = tracer.walk(&written_on, &head, None)? else {
            skipped.push(skip(format!(
                "outdated beyond tracing: {written_on}, the commit it was written against, is not an ancestor of the pull request's head {head} (rewritten by a force-push)"
            )));
            continue;
        };
        let fate = tracer.follow(&first.path, span, &steps)?;
        let was_resolved = matches!(fate, Fate::Changed { .. });
        resolved += usize::from(was_resolved);
        replies += list.len() - 1;
        let finding = OracleFinding {
            id: format!("pr{}/{}", pull.number, first.id),
            case_id: Some(subject.clone()),
            description: first.body.trim().to_string(),
            file: Some(first.path.clone()),
            line: span.map(|s| s.end),
            range: span.filter(|s| s.start != s.end).map(|s| LineRange { start: s.start, end: s.end }),
            category: None,
            severity,
            blocking,
            severity_label: label,
            resolved: Some(was_resolved),
            class: None,
        };
        findings.push((pull.number, first.created_at.clone(), finding));
    }
    findings.sort_by(|a, b| (a.0, &a.1, &a.2.id).cmp(&(b.0, &b.1, &b.2.id)));

    let threads = findings.len();
    let mut cases: Vec<OracleCase> = Vec::new();
    for pull in &pulls {
        let ids: Vec<String> = findings.iter().filter(|(n, _, _)| *n == pull.number).map(|(_, _, f)| f.id.clone()).collect();
        let Some(subject) = findings.iter().find(|(n, _, _)| *n == pull.number).and_then(|(_, _, f)| f.case_id.clone()) else { continue };
        let url = pull.html_url.clone().unwrap_or_else(|| pull.url.clone());
        let kind = if pull.merged_at.is_some() { "merge commit" } else { "head (not merged)" };
        let rationale = format!("#{} {} ({url}); subject: its {kind}", pull.number, pull.title);
        match cases.iter_mut().find(|c| c.id == subject) {
            Some(case) => {
                case.expected_finding_ids.extend(ids);
                case.rationale.push_str(&format!("; {rationale}"));
            }
            None => {
                cases.push(OracleCase { id: subject, expected_finding_ids: ids, rationale, split: None, interpreter: None, ground_truth: Default::default() })
            }
        }
    }
    let oracle = Oracle { version: 1, findings: findings.into_iter().map(|(_, _, f)| f).collect(), cases, skipped };
    Ok(Imported { oracle, threads, resolved, replies })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exports_are_one_array_or_arrays_one_after_another() {
        #[derive(Deserialize)]
        struct Item {
            id: u64,
        }
        let ids = |text: &str| parse_export::<Item>(text).map(|v| v.into_iter().map(|i| i.id).collect::<Vec<_>>());
        assert_eq!(ids(r#"[{"id":1},{"id":2}]"#), Ok(vec![1, 2]));
        assert_eq!(ids(r#"[{"id":1}][{"id":2},{"id":3}]"#), Ok(vec![1, 2, 3]), "`][` as gh writes pages");
        assert_eq!(ids("[{\"id\":1}]\n[]\n[{\"id\":2}]\n"), Ok(vec![1, 2]));
        assert_eq!(ids(r#"[[{"id":1}],[{"id":2}]]"#), Ok(vec![1, 2]), "--slurp");
        assert_eq!(ids(""), Ok(vec![]));
        assert!(ids(r#"{"id":1}"#).is_err_and(|e| e.contains("not a JSON array")));
        assert!(ids(r#"[{"id":1}]["#).is_err());
        assert!(ids(r#"[{"id":"x"}]"#).is_err_and(|e| e.starts_with("item 0")));
    }

    #[test]
    fn markers_map_to_severity_and_blocking() {
        let m = |body: &str| marker(body);
        assert_eq!(m("[blocking] this drops the error"), Ok((Some(Severity::Error), true, Some("blocking".into()))));
        assert_eq!(m("blocking: this drops the error"), Ok((Some(Severity::Error), true, Some("blocking".into()))));
        assert_eq!(m("**issue (blocking):** this drops the error"), Ok((Some(Severity::Error), true, Some("issue (blocking)".into()))));
        assert_eq!(m("issue (non-blocking): later"), Ok((Some(Severity::Warning), false, Some("issue (non-blocking)".into()))));
        assert_eq!(m("nit: trailing space"), Ok((Some(Severity::Nitpick), false, Some("nit".into()))));
        assert_eq!(m("\n  Nit: trailing space"), Ok((Some(Severity::Nitpick), false, Some("nit".into()))));
        assert_eq!(m("[NIT] trailing space"), Ok((Some(Severity::Nitpick), false, Some("nit".into()))));
        assert_eq!(m("suggestion: use a map"), Ok((Some(Severity::Info), false, Some("suggestion".into()))));
        assert_eq!(m("This loop misses the last page."), Ok((None, false, None)));
        assert_eq!(m("Note that this: is prose"), Ok((None, false, None)), "words before the colon are prose");
        assert_eq!(m("praise: lovely"), Err(()));
    }
}
