//! The `[target]` table: what is reviewed — a repository's refs, a corpus, external changes,
//! an eval set, or a history's commits or pull requests — with its keys checked together.

use crate::config::{did_you_mean, resolve_path, TableReader};
use crate::subject::TargetSpec;
use std::path::Path;
use toml::de::DeValue;
use toml::Spanned;

/// Every key `[target]` takes, for any kind of target.
pub(super) const TARGET_KEYS: [&str; 19] = [
    "repo",
    "corpus",
    "external",
    "evals",
    "commits",
    "pull-requests",
    "head",
    "oracle",
    "cases",
    "review-file",
    "unseal-holdout",
    "sample",
    "seed",
    "max-diff-lines",
    "paths",
    "exclude-paths",
    "merges",
    "exclude-authors",
    "min-changed-lines",
];

/// The `[target]` keys that decide what kind of target it is.
pub(super) const TARGET_KINDS: [&str; 6] = ["repo", "corpus", "external", "evals", "commits", "pull-requests"];

pub(super) fn read_target(t: &TableReader<'_, '_>, base_dir: &Path, check_paths: bool) -> Option<TargetSpec> {
    t.vocabulary(&TARGET_KEYS);
    // A misspelling of a key that decides the kind (`comits`) leaves the kind unknown: the
    // misspelling is the one problem (reported as an unknown key), not what the target would
    // lack as another kind.
    if t.keys().iter().any(|(k, _)| !TARGET_KEYS.contains(&k.as_str()) && did_you_mean(k, TARGET_KINDS).is_some()) {
        for key in TARGET_KEYS {
            t.allow(key);
        }
        return None;
    }
    let repo = t.string("repo");
    let corpus = t.string("corpus");
    if check_paths {
        let evals = t.get("evals").and_then(|v| v.get_ref().as_str().map(|s| Spanned::new(v.span(), s.to_string())));
        for (key, dir) in [("repo", &repo), ("corpus", &corpus), ("evals", &evals)] {
            if let Some(dir) = dir {
                let resolved = resolve_path(base_dir, dir.get_ref());
                if !resolved.is_dir() {
                    t.problems().push_with_help(
                        dir.span(),
                        format!("{key} directory `{}` does not exist", resolved.display()),
                        "paths in a manifest are relative to the manifest's directory",
                    );
                }
            }
        }
    }
    if t.has("external") {
        return read_external_target(t, base_dir, check_paths, repo.is_some() || corpus.is_some() || t.has("evals"));
    }
    let oracle = t.string("oracle");
    if let Some(o) = &oracle {
        if corpus.is_some() || t.has("evals") {
            t.problems().push(
                o.span(),
                "`oracle` applies to a git (`repo`) or `external` target; a corpus's oracle is its `oracle.json`, an eval set's its cases' findings",
            );
        } else if check_paths && !resolve_path(base_dir, o.get_ref()).is_file() {
            t.problems().push_with_help(
                o.span(),
                format!("oracle file `{}` does not exist", resolve_path(base_dir, o.get_ref()).display()),
                "paths in a manifest are relative to the manifest's directory",
            );
        }
    }
    let oracle = oracle.map(|o| resolve_path(base_dir, o.get_ref()));
    match (repo, corpus) {
        (Some(repo), None) if t.has("evals") => {
            let evals = t.string("evals")?;
            if let Some(head) = t.string("head") {
                t.problems().push(head.span(), "`head` does not apply with `evals`: each case's `Range: base..tip` says what is reviewed");
            }
            let cases = t.strings("cases").map(|v| v.into_iter().map(Spanned::into_inner).collect());
            let review_file = t.string("review-file");
            if let Some(f) = review_file.as_ref().filter(|f| check_paths && !resolve_path(base_dir, f.get_ref()).is_file()) {
                t.problems().push_with_help(
                    f.span(),
                    format!("review file `{}` does not exist", resolve_path(base_dir, f.get_ref()).display()),
                    "paths in a manifest are relative to the manifest's directory",
                );
            }
            let review_file = review_file.map(|f| resolve_path(base_dir, f.get_ref()));
            Some(TargetSpec::Evals { repo: base_dir.join(repo.get_ref()), dir: base_dir.join(evals.get_ref()), cases, review_file })
        }
        (Some(repo), None) if t.has("commits") || t.has("pull-requests") => {
            let history = read_history(t)?;
            Some(TargetSpec::History { repo: resolve_path(base_dir, repo.get_ref()), history, oracle })
        }
        (Some(repo), None) => {
            let head = t.string("head").map(|h| h.into_inner()).unwrap_or_else(|| "HEAD".to_string());
            history_keys_alone(t);
            Some(TargetSpec::Git { repo: resolve_path(base_dir, repo.get_ref()), head, oracle })
        }
        (None, Some(corpus)) => {
            let cases = t.strings("cases").map(|v| v.into_iter().map(Spanned::into_inner).collect());
            let unseal_holdout = t.boolean("unseal-holdout").unwrap_or(false);
            Some(TargetSpec::Corpus { dir: resolve_path(base_dir, corpus.get_ref()), cases, unseal_holdout })
        }
        (Some(repo), Some(_)) => {
            // Which keys belong is unknowable until one is chosen: the others are not also unknown.
            for (key, _) in t.keys() {
                t.allow(&key);
            }
            t.problems().push(repo.span(), "[target] takes either `repo` (a git repository) or `corpus` (a case directory), not both");
            None
        }
        (None, None) => {
            if !t.has("repo") && !t.has("corpus") {
                t.problems()
                    .push(t.span(), "[target] needs `repo` (a git repository), `corpus` (a case directory) or `external` (changes without a repository)");
            }
            None
        }
    }
}

/// The keys that tune a history selection, which mean nothing without one.
pub(super) const HISTORY_TUNING: [&str; 8] = ["sample", "seed", "max-diff-lines", "paths", "exclude-paths", "merges", "exclude-authors", "min-changed-lines"];

/// A history selection's tuning (`sample`, `seed`, `max-diff-lines`, the commit filter) on a
/// target that selects no commits.
pub(super) fn history_keys_alone(t: &TableReader<'_, '_>) {
    for key in HISTORY_TUNING {
        if let Some(v) = t.get(key) {
            t.problems().push_with_help(
                v.span(),
                format!("`{key}` applies to a repository's history only"),
                "select commits with `commits = \"A..B\"` (or a list) or `pull-requests = \"A..B\"` beside `repo`",
            );
        }
    }
}

/// A revision range as `commits` and `pull-requests` take it: `A..B`, never an option.
pub(super) fn check_range(t: &TableReader<'_, '_>, key: &str, range: &Spanned<String>) -> bool {
    let text = range.get_ref();
    let problem = if text.starts_with('-') {
        Some(format!("`{key}` must name revisions, not an option: `{text}`"))
    } else if text.contains("...") || !text.contains("..") {
        Some(format!("`{key}` must be a range `A..B` (the commits reachable from B and not from A), found `{text}`"))
    } else {
        None
    };
    match problem {
        Some(message) => {
            t.problems().push_with_help(range.span(), message, "e.g. `\"HEAD~10..HEAD\"` or `\"v1.2..main\"`");
            false
        }
        None => true,
    }
}

/// `[target] commits = "A..B"` (or a list of commits) or `pull-requests = "A..B"` beside `repo`,
/// with the optional `sample`, `seed` and `max-diff-lines`.
pub(super) fn read_history(t: &TableReader<'_, '_>) -> Option<crate::subject::history::HistorySpec> {
    use crate::subject::history::{Commits, HistorySpec, Sample, DEFAULT_MAX_DIFF_LINES};
    let problems = t.problems();
    if let Some(head) = t.get("head") {
        problems.push(head.span(), "`head` does not apply with `commits` or `pull-requests`: each commit is reviewed against its first parent");
    }
    let commits = match (t.get("commits"), t.get("pull-requests")) {
        (Some(c), Some(_)) => {
            problems.push_with_help(
                c.span(),
                "[target] takes `commits` or `pull-requests`, not both",
                "`pull-requests` reviews the merge commits of a range, `commits` every first-parent commit",
            );
            None
        }
        (Some(value), None) => match value.get_ref() {
            DeValue::String(_) => t.string("commits").filter(|r| check_range(t, "commits", r)).map(|r| Commits::Range(r.into_inner())),
            DeValue::Array(_) => {
                let refs = t.strings("commits")?;
                if refs.is_empty() {
                    problems.push(value.span(), "`commits` lists no commit");
                }
                let mut ok = !refs.is_empty();
                for r in &refs {
                    if r.get_ref().trim().is_empty() || r.get_ref().starts_with('-') {
                        problems.push(r.span(), format!("`commits` must name commits (SHAs or refs), found `{}`", r.get_ref()));
                        ok = false;
                    }
                }
                ok.then(|| Commits::Listed(refs.into_iter().map(Spanned::into_inner).collect()))
            }
            other => {
                problems.push(
                    value.span(),
                    format!("`commits` must be a range `\"A..B\"` or an array of commits, found {}", crate::config::reader::type_name(other)),
                );
                None
            }
        },
        (None, Some(_)) => t.string("pull-requests").filter(|r| check_range(t, "pull-requests", r)).map(|r| Commits::Merges(r.into_inner())),
        (None, None) => None,
    };
    let size = t.integer("sample", 1, i64::from(u32::MAX)).map(|n| *n.get_ref() as usize);
    let seed = t.integer("seed", 0, i64::MAX).map(|n| *n.get_ref() as u64);
    if let (Some(v), false) = (t.get("seed"), t.has("sample")) {
        problems.push_with_help(v.span(), "`seed` chooses a sample: it needs `sample`", "add `sample = N` to review N of the selected commits");
    }
    let max_diff_lines = t.integer("max-diff-lines", 1, i64::MAX).map_or(DEFAULT_MAX_DIFF_LINES, |n| *n.get_ref() as u64);
    let filter = read_commit_filter(t);
    if let (Some(v), true) = (t.get("merges"), t.has("pull-requests")) {
        problems.push(v.span(), "`merges` filters `commits`; `pull-requests` reviews merge commits only");
    }
    Some(HistorySpec { commits: commits?, sample: size.map(|size| Sample { size, seed: seed.unwrap_or(0) }), max_diff_lines, filter })
}

/// `paths`, `exclude-paths` and `exclude-authors` (globs), `merges` and `min-changed-lines`:
/// which of the selected commits are reviewed.
pub(super) fn read_commit_filter(t: &TableReader<'_, '_>) -> crate::subject::history::CommitFilter {
    use crate::subject::glob::Glob;
    let globs = |key: &str| -> Vec<Glob> {
        let patterns = t.strings(key).unwrap_or_default();
        for p in patterns.iter().filter(|p| p.get_ref().trim().is_empty()) {
            t.problems().push(p.span(), format!("`{key}` holds an empty pattern"));
        }
        patterns.iter().filter(|p| !p.get_ref().trim().is_empty()).map(|p| Glob::new(p.get_ref())).collect()
    };
    crate::subject::history::CommitFilter {
        paths: globs("paths"),
        exclude_paths: globs("exclude-paths"),
        merges: t.boolean("merges").unwrap_or(true),
        exclude_authors: globs("exclude-authors"),
        min_changed_lines: t.integer("min-changed-lines", 0, i64::MAX).map_or(0, |n| *n.get_ref() as u64),
    }
}

/// `[target] external = "changes.json"` (changes without a repository) and its optional
/// `oracle` file; `cases` selects changes by id.
pub(super) fn read_external_target(t: &TableReader<'_, '_>, base_dir: &Path, check_paths: bool, other: bool) -> Option<TargetSpec> {
    let changes = t.string("external");
    let oracle = t.string("oracle");
    t.allow("evals");
    if other {
        t.problems().push(
            t.key_span("external").unwrap_or(0..0),
            "[target] takes one of `repo` (a git repository), `corpus` (a case directory) or `external` (changes without a repository)",
        );
    }
    for key in ["head", "unseal-holdout"] {
        if let Some(v) = t.get(key) {
            t.problems().push(v.span(), format!("`{key}` does not apply to an `external` target"));
        }
    }
    if check_paths {
        for (key, file) in [("external", &changes), ("oracle", &oracle)] {
            if let Some(file) = file {
                let resolved = resolve_path(base_dir, file.get_ref());
                if !resolved.is_file() {
                    t.problems().push_with_help(
                        file.span(),
                        format!("{key} file `{}` does not exist", resolved.display()),
                        "paths in a manifest are relative to the manifest's directory",
                    );
                }
            }
        }
    }
    let cases = t.strings("cases").map(|v| v.into_iter().map(Spanned::into_inner).collect());
    let oracle = oracle.map(|o| resolve_path(base_dir, o.get_ref()));
    (!other).then_some(())?;
    Some(TargetSpec::External { changes: resolve_path(base_dir, changes?.get_ref()), oracle, cases })
}
