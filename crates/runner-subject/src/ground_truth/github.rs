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
//! - A comment's `path` is made a path inside the repository: `./` components are dropped
//!   (`./app.py` is `app.py`); an empty or absolute path, or one with `..`, is left out.
//! - Left out, each with its reason: bots (`user.type = "Bot"`, unless `--include-bots`),
//!   comments of pull requests not in the pulls export (open ones), replies whose thread is
//!   not in the export (or whose replies loop), comments on a removed line (`side: "LEFT"`),
//!   comments with no line, comments whose path is not one inside the repository, comments
//!   whose commit or pull request head is not in the local repository, comments on a file
//!   their commit does not hold or on lines beyond its end, and comments whose commit is no
//!   longer an ancestor of the head (rewritten by a force-push: outdated beyond tracing).
//! - The repository must exist and be a git repository. Git is started a few times, not per
//!   comment: commits and files are looked up through one `git cat-file --batch` process,
//!   each walk and each commit's diff read once, each path traced once per walk.
//! - Every outside text the import quotes in an error or in its list of comments left out
//!   (paths, logins, URLs, SHAs, serde's messages) is made safe for a terminal
//!   (`runner_core::terminal`).

use super::oracle::{Oracle, OracleCase, OracleFinding, Skipped};
use crate::finding::{LineRange, Severity};
use crate::subject::git::GitError;
use crate::subject::trace::{repo_path, Fate, FileAt, PathTrace, Span, Tracer};
use runner_core::terminal::sanitize;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("failed to read `{}`: {}", shown(path), sanitize(&source.to_string()))]
    Read { path: PathBuf, source: std::io::Error },
    #[error("`{}`: {}", shown(path), sanitize(message))]
    Format { path: PathBuf, message: String },
    /// `--repo` names no git repository.
    #[error("repository `{}` {}", shown(path), sanitize(message))]
    Repository { path: PathBuf, message: String },
    #[error("{}", sanitize(&.0.to_string()))]
    Git(#[from] GitError),
}

/// A path as a message shows it.
fn shown(path: &Path) -> String {
    sanitize(&path.display().to_string())
}

/// A comment left out, its texts made safe for a terminal.
fn left_out(source: String, reason: String) -> Skipped {
    Skipped { source: sanitize(&source), reason: sanitize(&reason) }
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
    pub line: Option<u64>,
    #[serde(default)]
    pub original_line: Option<u64>,
    #[serde(default)]
    pub start_line: Option<u64>,
    #[serde(default)]
    pub original_start_line: Option<u64>,
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
    /// Git processes the import started (a few, however many comments).
    pub git_processes: usize,
}

/// Where a comment's thread starts: its first comment, the reply whose parent is not in the
/// export, or a loop of replies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Root {
    Thread(u64),
    Missing(u64),
    Loop,
}

/// Each comment's thread root, following `in_reply_to_id`: every comment is visited once, the
/// chain walked from it stops at the first comment whose root is known, and every comment on
/// it is given that root (linear in the comments, however long the reply chains). Also how
/// many comments the chains visited, at most one per comment.
fn thread_roots(comments: &[&Comment]) -> (HashMap<u64, Root>, usize) {
    let by_id: HashMap<u64, &Comment> = comments.iter().map(|c| (c.id, *c)).collect();
    let mut roots: HashMap<u64, Root> = HashMap::with_capacity(comments.len());
    let mut chain: Vec<u64> = Vec::new();
    let mut on_chain: HashSet<u64> = HashSet::new();
    let mut visited = 0;
    for &c in comments {
        let mut at = c;
        let root = loop {
            if let Some(root) = roots.get(&at.id) {
                break *root;
            }
            if !on_chain.insert(at.id) {
                break Root::Loop;
            }
            chain.push(at.id);
            visited += 1;
            match at.in_reply_to_id {
                None => break Root::Thread(at.id),
                Some(parent) => match by_id.get(&parent) {
                    Some(p) => at = p,
                    None => break Root::Missing(parent),
                },
            }
        };
        for id in chain.drain(..) {
            on_chain.remove(&id);
            roots.insert(id, root);
        }
    }
    (roots, visited)
}

/// Checks that `repo` is a git repository.
fn check_repository(repo: &Path) -> Result<(), ImportError> {
    let problem = |message: String| ImportError::Repository { path: repo.to_path_buf(), message };
    match std::fs::metadata(repo) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(problem("does not exist".into())),
        Err(e) => return Err(problem(format!("cannot be read: {e}"))),
        Ok(meta) if !meta.is_dir() => return Err(problem("is not a directory".into())),
        Ok(_) => {}
    }
    // One git process, counted in `Imported::git_processes`.
    crate::subject::git::git(repo, &["rev-parse", "--git-dir"])
        .map_err(|_| problem("is not a git repository (`git rev-parse --git-dir` fails there)".into()))?;
    Ok(())
}

/// Builds the oracle from the exports and the local repository `repo`, which must be a git
/// repository. A pull request or comment listed twice (pages shift while `gh` paginates) is
/// read once.
pub fn import(pulls: &[Pull], comments: &[Comment], repo: &Path, include_bots: bool) -> Result<Imported, ImportError> {
    check_repository(repo)?;
    let mut seen = HashSet::new();
    let pulls: Vec<&Pull> = pulls.iter().filter(|p| seen.insert(p.number)).collect();
    let mut seen = HashSet::new();
    let comments: Vec<&Comment> = comments.iter().filter(|c| seen.insert(c.id)).collect();
    let by_url: HashMap<&str, &Pull> = pulls.iter().map(|p| (p.url.as_str(), *p)).collect();
    let mut skipped = Vec::new();
    let pull_of = |c: &Comment| by_url.get(c.pull_request_url.as_str()).copied();
    let number_of = |c: &Comment| pull_of(c).map(|p| p.number);
    // Threads: the first comment's id → its comments (first comment first, then replies).
    let (roots, _) = thread_roots(&comments);
    let mut threads: BTreeMap<u64, Vec<&Comment>> = BTreeMap::new();
    for &c in &comments {
        match roots.get(&c.id).copied().unwrap_or(Root::Loop) {
            Root::Thread(root) => threads.entry(root).or_default().push(c),
            Root::Missing(parent) => {
                skipped.push(left_out(c.describe(number_of(c)), format!("a reply to comment {parent}, which is not in the comments export")))
            }
            Root::Loop => skipped.push(left_out(c.describe(number_of(c)), "its reply chain (`in_reply_to_id`) loops: no first comment".into())),
        }
    }
    for list in threads.values_mut() {
        list.sort_by(|a, b| (a.in_reply_to_id.is_some(), &a.created_at, a.id).cmp(&(b.in_reply_to_id.is_some(), &b.created_at, b.id)));
    }

    let mut tracer = Tracer::new(repo);
    // Each path traced once per walk (the commit it was written on, the head).
    let mut traces: HashMap<(String, String, String), PathTrace> = HashMap::new();
    let mut findings: Vec<(u64, String, OracleFinding)> = Vec::new();
    let (mut resolved, mut replies) = (0, 0);
    for list in threads.values() {
        let first = list[0];
        let skip = |reason: String| left_out(first.describe(number_of(first)), reason);
        let Some(pull) = pull_of(first) else {
            skipped.push(left_out(
                first.describe(None),
                format!("its pull request ({}) is not in the pulls export (still open, or another repository's)", first.pull_request_url),
            ));
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
        let lines = match (first.subject_type.as_deref(), first.original_line) {
            (Some("file"), _) => None,
            (_, Some(line)) => Some((first.original_start_line.unwrap_or(line), line)),
            (_, None) => {
                skipped.push(skip("no line on the commit it was written against (`original_line` is null)".into()));
                continue;
            }
        };
        if lines.is_some_and(|(start, end)| start == 0 || end == 0) {
            skipped.push(skip("line 0: lines are numbered from 1".into()));
            continue;
        }
        let path = match repo_path(&first.path) {
            Ok(path) => path,
            Err(why) => {
                skipped.push(skip(format!("its path `{}` is {why}", first.path)));
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
        let Some(written_on) = tracer.commit(written_on) else {
            skipped.push(skip(format!(
                "no local commit: {written_on}, the commit it was written against, is not in the repository (fetch `pull/{}/head`)",
                pull.number
            )));
            continue;
        };
        let Some(head) = tracer.commit(&pull.head.sha) else {
            skipped
                .push(skip(format!("no local commit: the pull request's head {} is not in the repository (fetch `pull/{}/head`)", pull.head.sha, pull.number)));
            continue;
        };
        if merged && tracer.commit(&subject).is_none() {
            skipped.push(skip(format!("no local commit: the merge commit {subject} is not in the repository (fetch the base branch)")));
            continue;
        }
        match tracer.file_at(&written_on, &path)? {
            FileAt::Missing => {
                skipped.push(skip(format!("deleted file: `{path}` is not in {written_on}, the commit it was written against")));
                continue;
            }
            FileAt::NotAFile(kind) => {
                let what = if kind == "tree" { "a directory".to_string() } else { format!("a {kind}") };
                skipped.push(skip(format!("not a file: `{path}` is {what} in {written_on}, the commit it was written against")));
                continue;
            }
            FileAt::File { lines: count } => {
                if let Some(last) = lines.map(|(start, end)| start.max(end)).filter(|last| *last > count) {
                    skipped.push(skip(format!(
                        "line {last} is beyond the end of `{path}`, which has {count} line{} in {written_on}, the commit it was written against",
                        if count == 1 { "" } else { "s" }
                    )));
                    continue;
                }
            }
        }
        // Within the file, so within u32.
        let span = lines.map(|(start, end)| Span::new(u32::try_from(start).unwrap_or(u32::MAX), u32::try_from(end).unwrap_or(u32::MAX)));
        let Some(steps) = tracer.walk(&written_on, &head, None)? else {
            skipped.push(skip(format!(
                "outdated beyond tracing: {written_on}, the commit it was written against, is not an ancestor of the pull request's head {head} (rewritten by a force-push)"
            )));
            continue;
        };
        let key = (written_on.clone(), head.clone(), path.clone());
        let trace = match traces.get(&key) {
            Some(trace) => trace,
            None => {
                let trace = tracer.path_trace(&path, &steps)?;
                traces.entry(key).or_insert(trace)
            }
        };
        let was_resolved = matches!(trace.fate(span), Fate::Changed { .. });
        resolved += usize::from(was_resolved);
        replies += list.len() - 1;
        let finding = OracleFinding {
            id: format!("pr{}/{}", pull.number, first.id),
            case_id: Some(subject.clone()),
            description: first.body.trim().to_string(),
            file: Some(path),
            line: span.map(|s| s.end),
            range: span.filter(|s| s.start != s.end).map(|s| LineRange { start: s.start, end: s.end }),
            category: None,
            severity,
            blocking,
            severity_label: label,
            resolved: Some(was_resolved),
            class: None,
            fixed: None,
        };
        findings.push((pull.number, first.created_at.clone(), finding));
    }
    findings.sort_by(|a, b| (a.0, &a.1, &a.2.id).cmp(&(b.0, &b.1, &b.2.id)));

    let threads = findings.len();
    let mut of_pull: HashMap<u64, Vec<usize>> = HashMap::new();
    for (i, (number, _, _)) in findings.iter().enumerate() {
        of_pull.entry(*number).or_default().push(i);
    }
    let mut cases: Vec<OracleCase> = Vec::new();
    let mut case_of: HashMap<String, usize> = HashMap::new();
    for pull in &pulls {
        let Some(indices) = of_pull.get(&pull.number) else { continue };
        let ids: Vec<String> = indices.iter().map(|&i| findings[i].2.id.clone()).collect();
        let Some(subject) = indices.first().and_then(|&i| findings[i].2.case_id.clone()) else { continue };
        let url = pull.html_url.clone().unwrap_or_else(|| pull.url.clone());
        let kind = if pull.merged_at.is_some() { "merge commit" } else { "head (not merged)" };
        let rationale = format!("#{} {} ({url}); subject: its {kind}", pull.number, pull.title);
        match case_of.get(&subject) {
            Some(&at) => {
                cases[at].expected_finding_ids.extend(ids);
                cases[at].rationale.push_str(&format!("; {rationale}"));
            }
            None => {
                case_of.insert(subject.clone(), cases.len());
                cases.push(OracleCase { id: subject, expected_finding_ids: ids, rationale, split: None, interpreter: None, ground_truth: Default::default() });
            }
        }
    }
    let oracle = Oracle { version: 1, findings: findings.into_iter().map(|(_, _, f)| f).collect(), cases, skipped };
    Ok(Imported { oracle, threads, resolved, replies, git_processes: tracer.processes() + 1 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::subject::git::run_for_test as run;
    use serde_json::json;

    /// A repository whose one commit holds `app.py` (22 lines) and `src/lib.py`, and a second
    /// commit that rewrites app.py's line 5; an open pull request from the first to the second.
    fn repository(dir: &Path) -> (String, String) {
        run(dir, &["init", "-q", "--initial-branch=main"]);
        let lines: Vec<String> = (1..=22).map(|i| format!("line {i}")).collect();
        std::fs::write(dir.join("app.py"), lines.join("\n") + "\n").expect("write");
        std::fs::create_dir_all(dir.join("src")).expect("mkdir");
        std::fs::write(dir.join("src/lib.py"), "x = 1\n").expect("write");
        run(dir, &["add", "-A"]);
        run(dir, &["commit", "-q", "-m", "base"]);
        let base = run(dir, &["rev-parse", "HEAD"]);
        let mut changed = lines.clone();
        changed[4] = "line five".into();
        std::fs::write(dir.join("app.py"), changed.join("\n") + "\n").expect("write");
        run(dir, &["commit", "-q", "-am", "five"]);
        (base, run(dir, &["rev-parse", "HEAD"]))
    }

    fn pull(head: &str) -> Pull {
        serde_json::from_value(json!({"number": 7, "url": "https://api/pulls/7", "base": {"sha": head}, "head": {"sha": head}, "title": "t"})).expect("pull")
    }

    fn comment(id: u64, path: &str, line: Option<u64>, commit: &str) -> Comment {
        serde_json::from_value(json!({
            "id": id, "path": path, "line": line, "original_line": line, "original_commit_id": commit,
            "user": {"login": "ann", "type": "User"}, "body": "issue: this breaks", "pull_request_url": "https://api/pulls/7"
        }))
        .expect("comment")
    }

    fn reasons(imported: &Imported) -> Vec<String> {
        imported.oracle.skipped.iter().map(|s| format!("{} | {}", s.source, s.reason)).collect()
    }

    #[test]
    fn a_repository_that_is_missing_or_not_git_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let message = |repo: &Path| import(&[], &[], repo, false).map(|_| ()).expect_err("not a repository").to_string();
        assert!(message(&dir.path().join("none")).ends_with("does not exist"), "{}", message(&dir.path().join("none")));
        assert!(message(dir.path()).contains("is not a git repository"), "{}", message(dir.path()));
        std::fs::write(dir.path().join("file"), "x").expect("write");
        assert!(message(&dir.path().join("file")).ends_with("is not a directory"));
        // An escape sequence in the path reaches the message inert.
        let hostile = dir.path().join("\u{1b}]0;owned\u{7}");
        assert!(!message(&hostile).contains('\u{1b}'), "{}", message(&hostile));
        run(dir.path(), &["init", "-q"]);
        let empty = import(&[], &[], dir.path(), false).expect("an empty repository is a repository");
        assert_eq!(empty.oracle.findings.len(), 0);
    }

    #[test]
    fn paths_outside_the_repository_and_lines_beyond_the_file_are_left_out_with_why() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (base, head) = repository(dir.path());
        let comments = vec![
            comment(1, "./app.py", Some(5), &base),
            comment(2, "", Some(3), &base),
            comment(3, "/etc/passwd", Some(1), &base),
            comment(4, "src/../../secret", Some(1), &base),
            comment(5, "app.py", Some(4_294_967_295), &base),
            comment(6, "app.py", Some(1 << 40), &base),
            comment(7, "app.py", Some(0), &base),
            comment(8, "src", Some(1), &base),
            comment(9, "app.py", Some(22), &base),
            comment(10, "app.py", Some(23), &base),
        ];
        let imported = import(&[pull(&head)], &comments, dir.path(), false).expect("imports");
        let found: Vec<String> = imported.oracle.findings.iter().map(|f| format!("{} {:?} {:?} {:?}", f.id, f.file, f.line, f.resolved)).collect();
        assert_eq!(
            found,
            ["pr7/1 Some(\"app.py\") Some(5) Some(true)", "pr7/9 Some(\"app.py\") Some(22) Some(false)"],
            "`./app.py` is app.py: {:?}",
            reasons(&imported)
        );
        let why = reasons(&imported);
        let reason = |id: u64| why.iter().find(|r| r.contains(&format!("comment {id} "))).cloned().unwrap_or_default();
        assert!(reason(2).ends_with("its path `` is an empty path"), "{why:?}");
        assert!(reason(3).contains("its path `/etc/passwd` is an absolute path"), "{why:?}");
        assert!(reason(4).contains("climbs out with `..`"), "{why:?}");
        assert!(reason(5).contains(&format!("line 4294967295 is beyond the end of `app.py`, which has 22 lines in {base}")), "{why:?}");
        assert!(reason(6).contains("line 1099511627776 is beyond the end of `app.py`"), "{why:?}");
        assert!(reason(7).contains("line 0: lines are numbered from 1"), "{why:?}");
        assert!(reason(8).contains("not a file: `src` is a directory"), "{why:?}");
        assert!(reason(10).contains("line 23 is beyond the end"), "{why:?}");
        assert_eq!(imported.oracle.skipped.len(), 8, "{why:?}");
    }

    #[test]
    fn many_threads_on_few_places_start_few_git_processes_and_outside_text_is_made_inert() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (base, head) = repository(dir.path());
        // 300 threads on 3 lines of one file at one commit, and a reply to each.
        let mut comments: Vec<Comment> = Vec::new();
        for i in 0..300u64 {
            comments.push(comment(1000 + i, "app.py", Some(4 + i % 3), &base));
            let mut reply = comment(5000 + i, "app.py", Some(4 + i % 3), &base);
            reply.in_reply_to_id = Some(1000 + i);
            comments.push(reply);
        }
        let mut hostile = comment(9, "\u{1b}[2J\u{202e}gpj.exe", Some(1), &base);
        hostile.user = Some(User { login: "\u{1b}]8;;http://x\u{7}bot".into(), kind: "Bot".into() });
        comments.push(hostile);
        let mut missing = comment(10, "a\u{0}b", Some(1), "\u{9b}31m");
        missing.in_reply_to_id = Some(77);
        comments.push(missing);
        let imported = import(&[pull(&head)], &comments, dir.path(), false).expect("imports");
        assert_eq!((imported.threads, imported.replies, imported.resolved), (300, 300, 100), "line 5 rewritten: a third resolved");
        // rev-parse, one cat-file, one rev-list, one diff.
        assert_eq!(imported.git_processes, 4);
        let skipped = reasons(&imported);
        assert_eq!(skipped.len(), 2, "{skipped:?}");
        for text in &skipped {
            assert!(!text.contains(['\u{1b}', '\u{202e}', '\u{0}', '\u{7}', '\u{9b}']), "{text:?}");
        }
        assert!(skipped.iter().any(|s| s.contains("written by a bot (`\u{fffd}]8;;http://x\u{fffd}bot`)")), "{skipped:?}");
    }

    #[test]
    fn reply_chains_are_followed_once_each_and_loops_are_left_out() {
        let mut comments: Vec<Comment> = (0..20_000u64)
            .map(|i| {
                let mut c = comment(i + 1, "app.py", Some(1), "c");
                c.in_reply_to_id = (i > 0).then_some(i);
                c
            })
            .collect();
        // Newest first, as an export may list them: the worst order for a walk per comment.
        comments.reverse();
        let mut looped = comment(900_001, "app.py", Some(1), "c");
        looped.in_reply_to_id = Some(900_002);
        let mut back = comment(900_002, "app.py", Some(1), "c");
        back.in_reply_to_id = Some(900_001);
        let mut orphan = comment(900_003, "app.py", Some(1), "c");
        orphan.in_reply_to_id = Some(123_456_789);
        comments.extend([looped, back, orphan]);
        let refs: Vec<&Comment> = comments.iter().collect();
        let (roots, visited) = thread_roots(&refs);
        assert_eq!(visited, refs.len(), "each comment visited once");
        assert!((1..=20_000).all(|id| roots[&id] == Root::Thread(1)));
        assert_eq!((roots[&900_001], roots[&900_002], roots[&900_003]), (Root::Loop, Root::Loop, Root::Missing(123_456_789)));
    }

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
