//! A git target's revisions and command reviewers checked against its repository while the
//! manifest is read, so each problem is told at the key that caused it (`file:line:col`), in
//! git's own words, instead of after the manifest, without a place: a `commits` or
//! `pull-requests` range, a listed commit, a `ref` axis value or `head` that does not resolve;
//! a command reviewer that would review the checked-out commit (no `isolation = "worktree"`)
//! when the commits to review are others; and a command reviewer's program that cannot be
//! started (`runner validate` only).

use super::Reviewers;
use crate::config::TableReader;
use crate::matrix::{AxisValue, Matrix};
use crate::reviewer::command::Isolation;
use crate::reviewer::spec::ReviewerKindSpec;
use crate::subject::git::{self, GitError};
use crate::subject::history::{self, Commits, HistorySpec};
use crate::subject::TargetSpec;
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;
use toml::de::DeValue;

/// git's first line of complaint, without its `fatal: ` (`bad revision 'HEAD~100..HEAD'`).
fn git_words(e: GitError) -> String {
    match e {
        GitError::Failed { stderr, .. } => stderr.lines().next().unwrap_or_default().trim_start_matches("fatal: ").to_string(),
        other => other.to_string(),
    }
}

/// Why `rev` (a revision or a range `A..B`) names no commit of `repo`, in git's words.
fn bad_revision(repo: &Path, rev: &str) -> Option<String> {
    git::git(repo, &["rev-list", "-n", "1", "--end-of-options", rev, "--"]).err().map(git_words)
}

/// The reviewer table of `name`: `[reviewers.NAME]`, or the one `[reviewer]`.
fn reviewer_table<'c, 'i>(root: &TableReader<'c, 'i>, reviewers: &Reviewers, name: &str) -> Option<TableReader<'c, 'i>> {
    if reviewers.by_axis || root.has("reviewers") {
        root.table("reviewers").and_then(|t| t.table(name))
    } else {
        root.table("reviewer")
    }
}

/// The span of each item of array `key` in `table`, in order.
fn item_spans(table: &TableReader<'_, '_>, key: &str) -> Vec<Range<usize>> {
    match table.get(key).map(|v| v.get_ref()) {
        Some(DeValue::Array(items)) => items.iter().map(|i| i.span()).collect(),
        _ => Vec::new(),
    }
}

/// Every revision of a git or history target resolved in its repository; for a history, every
/// command reviewer that would review the checked-out commit while others are selected.
/// Returns a git target's revisions resolved (revision → SHA) when every one resolved.
pub(super) fn check(root: &TableReader<'_, '_>, target: &TargetSpec, matrix: Option<&Matrix>, reviewers: Option<&Reviewers>) -> BTreeMap<String, String> {
    let repo = match target {
        TargetSpec::Git { repo, .. } | TargetSpec::History { repo, .. } => repo,
        _ => return BTreeMap::new(),
    };
    let Some(t) = root.table("target") else { return BTreeMap::new() };
    // A directory that does not exist is reported where it is read.
    if !repo.is_dir() {
        return BTreeMap::new();
    }
    // The common case in one git process: every revision of a git target resolves. Only
    // when one does not is each asked apart, for git's words at its key.
    if let TargetSpec::Git { head, .. } = target {
        let mut revs = vec![head.as_str()];
        if let Some(axis) = matrix.and_then(|m| m.axis("ref")) {
            revs.extend(axis.values.iter().filter_map(|v| match v {
                AxisValue::Str(rev) => Some(rev.as_str()),
                _ => None,
            }));
        }
        if let Ok(shas) = git::resolve_commits(repo, &revs) {
            let resolved: BTreeMap<String, String> = revs.iter().map(|r| r.to_string()).zip(shas).collect();
            let head_sha = resolved.get(head.as_str()).cloned().unwrap_or_default();
            check_checked_out(root, repo, reviewers, |checked_out| {
                (head_sha != checked_out).then(|| format!("`head = \"{head}\"` is not the commit checked out in `{}`", repo.display()))
            });
            return resolved;
        }
    }
    if let Err(e) = git::git(repo, &["rev-parse", "--git-dir"]) {
        let span = t.get("repo").map_or_else(|| t.span(), |v| v.span());
        root.problems().push(span, format!("`{}` is not a git repository: {}", repo.display(), git_words(e)));
        return BTreeMap::new();
    }
    let problems = root.problems();
    match target {
        TargetSpec::Git { head, .. } => {
            let mut ok = true;
            if let Some(why) = bad_revision(repo, head) {
                let span = t.get("head").map_or_else(|| t.span(), |v| v.span());
                problems.push(span, format!("`head = \"{head}\"` names no commit of `{}`: {why}", repo.display()));
                ok = false;
            }
            if let (Some(axis), Some(m)) = (matrix.and_then(|m| m.axis("ref")), root.table("matrix")) {
                let spans = item_spans(&m, "ref");
                for (value, span) in axis.values.iter().zip(spans) {
                    let AxisValue::Str(rev) = value else { continue };
                    if let Some(why) = bad_revision(repo, rev) {
                        problems.push(span, format!("`ref` value `{rev}` names no commit of `{}`: {why}", repo.display()));
                        ok = false;
                    }
                }
            }
            if ok {
                check_checked_out(root, repo, reviewers, |checked_out| {
                    let head_sha = git::resolve_commits(repo, &[head.as_str()]).ok()?.into_iter().next()?;
                    (head_sha != checked_out).then(|| format!("`head = \"{head}\"` is not the commit checked out in `{}`", repo.display()))
                });
            }
        }
        TargetSpec::History { history, .. } if check_selection(&t, repo, history) => {
            check_checked_out(root, repo, reviewers, |checked_out| {
                // The selection exactly as planning makes it; its own errors are planning's.
                let selected = history::select(repo, history).ok()?;
                let elsewhere = selected.planned.iter().filter(|c| c.sha != checked_out).count();
                (elsewhere > 0).then(|| {
                    format!(
                        "{elsewhere} of the {} selected commits {} not checked out in `{}`",
                        selected.planned.len(),
                        if elsewhere == 1 { "is" } else { "are" },
                        repo.display()
                    )
                })
            });
        }
        _ => {}
    }
    BTreeMap::new()
}

/// `commits` or `pull-requests` resolved: a range as a whole, each listed commit at its item.
/// Whether everything resolved.
fn check_selection(t: &TableReader<'_, '_>, repo: &Path, history: &HistorySpec) -> bool {
    let problems = t.problems();
    match &history.commits {
        Commits::Range(range) | Commits::Merges(range) => {
            let key = if matches!(history.commits, Commits::Merges(_)) { "pull-requests" } else { "commits" };
            match bad_revision(repo, range) {
                Some(why) => {
                    let span = t.get(key).map_or_else(|| t.span(), |v| v.span());
                    problems.push_with_help(
                        span,
                        format!("`{key} = \"{range}\"` does not resolve in `{}`: {why}", repo.display()),
                        "both ends must name commits of the repository, e.g. `\"HEAD~10..HEAD\"` (fewer commits than that? `git log --oneline | wc -l`)",
                    );
                    false
                }
                None => true,
            }
        }
        Commits::Listed(refs) => {
            let revs: Vec<&str> = refs.iter().map(String::as_str).collect();
            if git::resolve_commits(repo, &revs).is_ok() {
                return true;
            }
            let spans = item_spans(t, "commits");
            for (rev, span) in refs.iter().zip(spans) {
                if let Some(why) = bad_revision(repo, rev) {
                    problems.push(span, format!("`commits` lists `{rev}`, which names no commit of `{}`: {why}", repo.display()));
                }
            }
            false
        }
    }
}

/// Each command reviewer without `isolation = "worktree"` reviews the commit checked out in
/// `repo`: when `elsewhere` (given that commit's SHA) says what else the target reviews, it is
/// a problem at the reviewer's `isolation`, or at its table when it has none.
fn check_checked_out(root: &TableReader<'_, '_>, repo: &Path, reviewers: Option<&Reviewers>, elsewhere: impl FnOnce(&str) -> Option<String>) {
    let Some(reviewers) = reviewers else { return };
    let lacking: Vec<&super::NamedReviewer> = reviewers
        .entries
        .iter()
        .filter(|n| matches!(&n.spec.kind, ReviewerKindSpec::Command(c) if c.isolation != Isolation::Worktree && !c.program.contains("{{")))
        .collect();
    if lacking.is_empty() {
        return;
    }
    let Some(checked_out) = git::resolve_commits(repo, &["HEAD"]).ok().and_then(|s| s.into_iter().next()) else { return };
    let Some(but) = elsewhere(&checked_out) else { return };
    for named in lacking {
        let Some(table) = reviewer_table(root, reviewers, &named.name) else { continue };
        let message = format!("reviewer `{}` (command) reviews the checked-out commit, but {but}", named.name);
        match table.get("isolation") {
            Some(v) => root.problems().push_with_help(v.span(), message, "set `isolation = \"worktree\"` so each commit is reviewed in a worktree of its own"),
            None => root.problems().push_with_help(
                table.span(),
                format!("{message}; it has no `isolation`"),
                format!("set `isolation = \"worktree\"` in {} so each commit is reviewed in a worktree of its own", table.name()),
            ),
        }
    }
}

/// A command reviewer whose program cannot be started, at its `program`, saying which: a path
/// (relative to the manifest's directory) not found, a directory, or not executable; a bare
/// name not found in `PATH`, or found there but not executable.
pub(super) fn check_programs(root: &TableReader<'_, '_>, reviewers: &Reviewers) {
    for named in &reviewers.entries {
        let ReviewerKindSpec::Command(spec) = &named.spec.kind else { continue };
        let Some(problem) = crate::reviewer::command::program_problem(spec) else { continue };
        let span = reviewer_table(root, reviewers, &named.name).and_then(|t| t.get("program").map(|v| v.span())).unwrap_or(0..0);
        let help = if spec.program.contains('/') {
            "paths in a manifest are relative to the manifest's directory"
        } else {
            "a bare name is looked up in PATH: install it there, or give its path (relative to the manifest's directory)"
        };
        root.problems().push_with_help(span, problem, help);
    }
}
