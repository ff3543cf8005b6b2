//! Experiment manifests: TOML in, a validated [`Manifest`] out, or every problem at once.
//!
//! Paths inside a manifest are relative to the manifest's own directory. Keys are
//! kebab-case; matrix axes are named freely (`model`, `ref`, `temperature`,
//! `rag_symbol_max_definitions`, or anything else).

pub mod model;
mod revisions;
mod scoring;

pub use model::*;

use crate::analysis::read::read_analysis;
use crate::analysis::spec::AnalysisSpec;
use crate::config::{did_you_mean, project_root, resolve_path, Diagnostic, ManifestErrors, Problems, TableReader, BUILTIN_TEMPLATE_VARS};
use crate::matrix::{Axis, AxisValue, Matrix};
use crate::reviewer::spec::{read_reviewer, ReviewerKindSpec};
use crate::subject::TargetSpec;

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use toml::de::{DeTable, DeValue};
use toml::Spanned;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("failed to read manifest `{path}`: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{0}")]
    Invalid(#[from] ManifestErrors),
}

/// Reads and validates a manifest file.
///
/// Besides the text, this checks that the directories the target names exist.
pub fn load(path: &Path) -> Result<Manifest, LoadError> {
    load_checked(path, Checks::Paths)
}

/// [`load`] for `runner validate`: also reports a report directory that cannot be written
/// (which `plan` or `show` do not need).
pub fn load_to_validate(path: &Path) -> Result<Manifest, LoadError> {
    load_checked(path, Checks::Writable)
}

fn load_checked(path: &Path, checks: Checks) -> Result<Manifest, LoadError> {
    let source = std::fs::read_to_string(path).map_err(|source| LoadError::Read { path: path.to_path_buf(), source })?;
    parse_checked(path, &source, checks).map_err(LoadError::Invalid)
}

/// Validates manifest text; `path` names the file in messages and anchors relative paths.
pub fn parse(path: &Path, source: &str) -> Result<Manifest, ManifestErrors> {
    parse_checked(path, source, Checks::Text)
}

/// What a manifest is checked against besides its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Checks {
    Text,
    /// The directories and files the target names exist.
    Paths,
    /// And the report directory can be written.
    Writable,
}

/// [`parse`] with `checks`.
fn parse_checked(path: &Path, source: &str, checks: Checks) -> Result<Manifest, ManifestErrors> {
    let fail = |diagnostics: Vec<Diagnostic>| ManifestErrors { path: path.to_path_buf(), source: source.to_string(), diagnostics };
    let (document, syntax_errors) = DeTable::parse_recoverable(source);
    if !syntax_errors.is_empty() {
        // One message, at the cause: the parser's later errors follow from its first.
        return Err(fail(vec![crate::config::syntax_diagnostic(source, &syntax_errors)]));
    }
    let problems = Problems::default();
    let base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let root = TableReader::new(&problems, document.get_ref(), 0..source.len().min(1), "the manifest");
    let manifest = read_manifest(&root, path, &base_dir, checks);
    root.finish();
    if problems.is_empty() {
        if let Some(manifest) = manifest {
            return Ok(manifest);
        }
    }
    Err(fail(problems.into_sorted()))
}

fn read_manifest(root: &TableReader<'_, '_>, path: &Path, base_dir: &Path, checks: Checks) -> Option<Manifest> {
    let check_paths = checks >= Checks::Paths;
    let problems = root.problems();
    match root.integer("version", i64::MIN, i64::MAX) {
        Some(v) if *v.get_ref() == MANIFEST_VERSION => {}
        Some(v) => problems.push(v.span(), format!("unsupported manifest version {}; this runner reads version {MANIFEST_VERSION}", v.get_ref())),
        None if !root.has("version") => root.missing("version"),
        None => {}
    }
    let experiment = section(root, "experiment").and_then(|t| {
        let e = read_experiment(&t);
        t.finish();
        e
    });
    let target = section(root, "target").and_then(|t| {
        let target = read_target(&t, base_dir, check_paths);
        t.finish();
        target
    });
    // Axis names as written, even when an axis is invalid, plus the known axes that one is a
    // misspelling of: the matrix reports the problem once, and templates or analyses that
    // name the axis (either spelling) do not repeat it.
    let mut axes: BTreeSet<String> = BTreeSet::new();
    let matrix = section(root, "matrix").and_then(|t| {
        for (name, _) in t.keys().into_iter().filter(|(n, _)| n != "repeat" && n != "exclude") {
            axes.extend(misspelled_known_axis(&name).map(str::to_string));
            axes.insert(name);
        }
        let m = read_matrix(&t);
        t.finish();
        m
    });
    let reviewers = read_reviewers(root, &axes, matrix.as_ref(), base_dir);
    // `runner validate` only: `show` and `report` of past results need no program.
    if let (Some(reviewers), true) = (&reviewers, checks >= Checks::Writable) {
        revisions::check_programs(root, reviewers);
    }
    let analyses: Vec<Option<AnalysisSpec>> = root
        .tables("analysis")
        .into_iter()
        .map(|t| {
            let a = read_analysis(&t, &axes, base_dir);
            t.finish();
            a
        })
        .collect();
    let report = section(root, "report").and_then(|t| {
        let r = read_report(&t, base_dir, checks >= Checks::Writable);
        t.finish();
        r
    });
    let cache_dir = match root.table("cache") {
        Some(t) => {
            let dir = t.string("dir").map(|d| resolve_path(base_dir, d.get_ref()));
            t.finish();
            dir
        }
        None => None,
    }
    .unwrap_or_else(|| project_root(base_dir).join("cache"));

    let scoring = scoring::read_scoring(root, base_dir, &analyses);

    if let (Some(target), Some(matrix)) = (&target, &matrix) {
        check_target_axes(root, target, matrix);
    }
    let resolved_revisions = match (&target, check_paths) {
        (Some(target), true) => revisions::check(root, target, matrix.as_ref(), reviewers.as_ref()),
        _ => std::collections::BTreeMap::new(),
    };
    if let Some(target) = &target {
        check_oracle_needs(root, target, &analyses, check_paths);
        check_history_needs(root, target, &analyses);
    }
    if let Some(matrix) = &matrix {
        check_compare_baselines(root, &analyses, matrix);
    }
    if let (Some(reviewers), Some(matrix)) = (&reviewers, &matrix) {
        for named in &reviewers.entries {
            crate::reviewer::spec::check_unused_axes(root, &named.spec, matrix, reviewers.by_axis.then_some(REVIEWER_AXIS));
            let name_span = if reviewers.by_axis || root.has("reviewers") {
                root.table("reviewers").and_then(|r| r.table(&named.name)).and_then(|t| t.get("name").map(|v| v.span()))
            } else {
                root.table("reviewer").and_then(|r| r.get("name").map(|v| v.span()))
            };
            if let ReviewerKindSpec::Builtin(spec) = &named.spec.kind {
                crate::reviewer::builtin::check_names(root, spec, matrix, name_span.unwrap_or(0..0));
                check_ignored_axes(root, &named.name, spec, matrix, reviewers.by_axis);
            }
        }
    }
    Some(Manifest {
        path: path.to_path_buf(),
        base_dir: base_dir.to_path_buf(),
        experiment: experiment?,
        target: target?,
        matrix: matrix?,
        reviewers: reviewers?,
        analyses: analyses.into_iter().collect::<Option<Vec<_>>>()?,
        report: report?,
        cache_dir,
        scoring: scoring?,
        resolved_revisions,
    })
}

fn section<'c, 'i>(root: &TableReader<'c, 'i>, name: &str) -> Option<TableReader<'c, 'i>> {
    if !root.has(name) {
        root.allow(name);
        root.problems().push(root.span(), format!("missing section [{name}]"));
        return None;
    }
    root.table(name)
}

/// The longest experiment name: the execution log's file name (`<name>-<ms>.ndjson`) stays
/// well under a file name's 255 bytes.
pub(crate) const MAX_EXPERIMENT_NAME: usize = 128;

fn read_experiment(t: &TableReader<'_, '_>) -> Option<Experiment> {
    let name = t.required_string("name");
    if let Some(n) = &name {
        let ok = !n.get_ref().is_empty() && n.get_ref().chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
        if !ok {
            t.problems().push(n.span(), "experiment `name` must be non-empty and use only letters, digits, `-`, `_` and `.`");
        } else if n.get_ref().len() > MAX_EXPERIMENT_NAME {
            // It names files (the execution log): past a file name's 255 bytes none can be made.
            t.problems().push(n.span(), format!("experiment `name` is {} characters long; at most {MAX_EXPERIMENT_NAME}", n.get_ref().len()));
        }
    }
    let description = t.string("description").map(|d| d.into_inner()).unwrap_or_default();
    Some(Experiment { name: name?.into_inner(), description })
}

/// Every key `[target]` takes, for any kind of target.
const TARGET_KEYS: [&str; 19] = [
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
const TARGET_KINDS: [&str; 6] = ["repo", "corpus", "external", "evals", "commits", "pull-requests"];

fn read_target(t: &TableReader<'_, '_>, base_dir: &Path, check_paths: bool) -> Option<TargetSpec> {
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
const HISTORY_TUNING: [&str; 8] = ["sample", "seed", "max-diff-lines", "paths", "exclude-paths", "merges", "exclude-authors", "min-changed-lines"];

/// A history selection's tuning (`sample`, `seed`, `max-diff-lines`, the commit filter) on a
/// target that selects no commits.
fn history_keys_alone(t: &TableReader<'_, '_>) {
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
fn check_range(t: &TableReader<'_, '_>, key: &str, range: &Spanned<String>) -> bool {
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
fn read_history(t: &TableReader<'_, '_>) -> Option<crate::subject::history::HistorySpec> {
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
fn read_commit_filter(t: &TableReader<'_, '_>) -> crate::subject::history::CommitFilter {
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
fn read_external_target(t: &TableReader<'_, '_>, base_dir: &Path, check_paths: bool, other: bool) -> Option<TargetSpec> {
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

fn read_matrix(t: &TableReader<'_, '_>) -> Option<Matrix> {
    let mut axes = Vec::new();
    let mut ok = true;
    let repeat = match t.integer("repeat", 1, 10_000) {
        Some(r) => *r.get_ref() as u32,
        None if t.has("repeat") => {
            ok = false;
            1
        }
        None => 1,
    };
    // The axes in the order written (the table itself is sorted by name): the matrix expands
    // in that order and cell ids read in it; keys hash the values by name, so order moves none.
    let mut keys = t.keys();
    keys.sort_by_key(|(_, span)| span.start);
    for (name, key_span) in keys {
        if name == "repeat" || name == "exclude" {
            continue;
        }
        t.allow(&name);
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || BUILTIN_TEMPLATE_VARS.contains(&name.as_str()) {
            t.problems().push(key_span.clone(), format!("axis name `{name}` must be letters, digits and `_`, and not one of {BUILTIN_TEMPLATE_VARS:?}"));
            ok = false;
            continue;
        }
        let Some(value) = t.get(&name) else { continue };
        let DeValue::Array(items) = value.get_ref() else {
            t.problems().push(value.span(), format!("axis `{name}` must be an array of values, found {}", crate::config::reader::type_name(value.get_ref())));
            ok = false;
            continue;
        };
        if items.is_empty() {
            t.problems().push(value.span(), format!("axis `{name}` has no values"));
            ok = false;
            continue;
        }
        let mut values = Vec::new();
        // Rendered values seen so far: a duplicate is found in constant time, so a long axis
        // reads in time linear in its length.
        let mut seen: HashSet<String> = HashSet::with_capacity(items.len());
        for item in items.iter() {
            let v = match item.get_ref() {
                DeValue::String(s) => Some(AxisValue::Str(s.to_string())),
                DeValue::Integer(_) => crate::config::reader::as_i64(item.get_ref()).map(AxisValue::Int),
                DeValue::Float(_) => crate::config::reader::as_f64(item.get_ref()).map(AxisValue::Float),
                DeValue::Boolean(b) => Some(AxisValue::Bool(*b)),
                _ => None,
            };
            match v {
                Some(v) if !seen.insert(v.render()) => {
                    t.problems().push(item.span(), format!("axis `{name}` lists `{}` twice", v.render()));
                    ok = false;
                }
                Some(v) => values.push(v),
                None => {
                    t.problems().push(
                        item.span(),
                        format!("axis `{name}` values must be strings, numbers or booleans, found {}", crate::config::reader::type_name(item.get_ref())),
                    );
                    ok = false;
                }
            }
        }
        if let Some(known) = misspelled_known_axis(&name) {
            t.problems().push_with_help(key_span.clone(), format!("axis `{name}` looks like a misspelling of `{known}`"), format!("did you mean `{known}`?"));
            ok = false;
        }
        check_known_axis(t, &name, &values, value.span());
        axes.push(Axis { name, values });
    }
    // A wrong entry is reported and left out; the matrix stays, so nothing that reads it
    // reports a problem of its own.
    let exclude = read_exclude(t, &axes);
    let matrix = Matrix { axes, repeat, exclude };
    let product = matrix.axes.iter().try_fold(1u64, |n, a| n.checked_mul(a.values.len() as u64));
    if !matrix.exclude.is_empty() && product.is_some() && matrix.excluded_cells(1_000_000) == product {
        t.problems().push(t.get("exclude").map_or_else(|| t.span(), |v| v.span()), "`exclude` drops every cell of the matrix");
    }
    ok.then_some(matrix)
}

/// Axes that mean something to a model reviewer only.
const MODEL_AXES: [&str; 4] = ["model", "temperature", "seed", "rag_symbol_max_definitions"];

/// Cells a validation expands at most to look for identical runs.
const MAX_CHECKED_CELLS: u64 = 100_000;

/// A built-in reviewer calls no model: a model axis its `name` does not use makes cells that
/// differ only in that axis identical runs. Flagged at the axis, unless `exclude` leaves the
/// reviewer one value of it.
fn check_ignored_axes(root: &TableReader<'_, '_>, name: &str, spec: &crate::reviewer::builtin::BuiltinSpec, matrix: &Matrix, by_axis: bool) {
    let used: BTreeSet<String> = crate::config::template_var_regex().captures_iter(&spec.name).map(|c| c[1].to_string()).collect();
    let size = matrix.axes.iter().try_fold(1u64, |n, a| n.checked_mul(a.values.len() as u64));
    if size.is_none_or(|n| n > MAX_CHECKED_CELLS) {
        return;
    }
    let order: Vec<String> = matrix.axes.iter().map(|a| a.name.clone()).collect();
    let cells: Vec<crate::matrix::Cell> =
        crate::matrix::expand(matrix).into_iter().filter(|c| !by_axis || c.get(REVIEWER_AXIS).is_some_and(|v| v.render() == name)).collect();
    for axis in matrix.axes.iter().filter(|a| MODEL_AXES.contains(&a.name.as_str()) && !used.contains(&a.name)) {
        let mut groups: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for cell in &cells {
            *groups.entry(cell.id_without(&axis.name, &order)).or_default() += 1;
        }
        let identical = groups.values().filter(|n| **n > 1).map(|n| n - 1).sum::<usize>();
        if identical == 0 {
            continue;
        }
        let span = root.table("matrix").and_then(|m| m.key_span(&axis.name)).unwrap_or(0..0);
        let help = if by_axis {
            format!("keep one `{}` value for this reviewer: `exclude = [{{{REVIEWER_AXIS} = \"{name}\", {} = …}}]`", axis.name, axis.name)
        } else {
            "remove the axis, or compare against a model reviewer with named reviewers and `exclude` this one's extra cells".to_string()
        };
        root.problems().push_with_help(
            span,
            format!("axis `{}` is ignored by the builtin reviewer `{name}` (it calls no model): {identical} of its cells repeat another's runs", axis.name),
            help,
        );
    }
}

/// `[matrix] exclude = [{axis = value, …}, …]`: each entry names axes of the matrix and one of
/// each one's values; a problem is reported where it is written.
fn read_exclude(t: &TableReader<'_, '_>, axes: &[Axis]) -> Vec<crate::matrix::Exclusion> {
    let mut out = Vec::new();
    for entry in t.tables("exclude") {
        let keys = entry.keys();
        if keys.is_empty() {
            entry.problems().push(entry.span(), "an `exclude` entry names no axis: write `{axis = value, …}`");
            continue;
        }
        let (mut rule, mut complete) = (Vec::new(), true);
        for (name, key_span) in keys {
            let Some(value) = entry.get(&name) else { continue };
            let Some(axis) = axes.iter().find(|a| a.name == name) else {
                let message = format!("`exclude` names `{name}`, which is not a matrix axis");
                match did_you_mean(&name, axes.iter().map(|a| a.name.as_str())) {
                    Some(best) => entry.problems().push_with_help(key_span, message, format!("did you mean `{best}`?")),
                    None => entry.problems().push_with_help(
                        key_span,
                        message,
                        format!("axes: {}", axes.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().join(", ")),
                    ),
                }
                complete = false;
                continue;
            };
            let written = match value.get_ref() {
                DeValue::String(s) => Some(s.to_string()),
                DeValue::Integer(_) => crate::config::reader::as_i64(value.get_ref()).map(|i| AxisValue::Int(i).render()),
                DeValue::Float(_) => crate::config::reader::as_f64(value.get_ref()).map(|f| AxisValue::Float(f).render()),
                DeValue::Boolean(b) => Some(b.to_string()),
                _ => None,
            };
            match written.and_then(|w| axis.values.iter().find(|v| v.render() == w)) {
                Some(v) => rule.push((name, v.clone())),
                None => {
                    let values: Vec<String> = axis.values.iter().map(|v| format!("`{}`", v.render())).collect();
                    entry.problems().push_with_help(
                        value.span(),
                        format!("`exclude` names a value axis `{name}` does not have"),
                        format!("its values: {}", values.join(", ")),
                    );
                    complete = false;
                }
            }
        }
        if complete {
            out.push(rule);
        }
    }
    out
}

/// Axes that mean something to runner's reviewers.
pub(crate) const KNOWN_AXES: [&str; 5] = ["model", "ref", "temperature", "rag_symbol_max_definitions", "seed"];

/// The known axis `name` is a misspelling of (at most two edits away, not equal).
fn misspelled_known_axis(name: &str) -> Option<&'static str> {
    KNOWN_AXES.iter().copied().find(|k| *k != name && strsim::damerau_levenshtein(k, name) <= 2)
}

/// Axes with a meaning to runner are checked for plausible values.
fn check_known_axis(t: &TableReader<'_, '_>, name: &str, values: &[AxisValue], span: std::ops::Range<usize>) {
    let bad = match name {
        "temperature" => values.iter().any(|v| !matches!(v.as_f64(), Some(f) if (0.0..=2.0).contains(&f))),
        "rag_symbol_max_definitions" | "seed" => values.iter().any(|v| !matches!(v.as_i64(), Some(i) if i >= 0)),
        _ => false,
    };
    if bad {
        let expected = if name == "temperature" { "numbers between 0 and 2" } else { "non-negative integers" };
        t.problems().push(span, format!("axis `{name}` must hold {expected}"));
    }
}

fn check_target_axes(root: &TableReader<'_, '_>, target: &TargetSpec, matrix: &Matrix) {
    match target {
        TargetSpec::Git { .. } if matrix.axis("ref").is_none() => {
            root.problems().push_with_help(
                root.span(),
                "a git target needs a `ref` axis in [matrix] (the base of `ref..head`), e.g. `ref = [\"HEAD~1\"]`",
                "or review each commit of a range as a subject of its own: `commits = \"HEAD~10..HEAD\"` in [target]",
            );
        }
        TargetSpec::History { history, .. } if matrix.axis("ref").is_some() => {
            let key = if matches!(history.commits, crate::subject::history::Commits::Merges(_)) { "pull-requests" } else { "commits" };
            let span = root.table("matrix").and_then(|m| m.key_span("ref")).unwrap_or_else(|| root.span());
            root.problems().push_with_help(
                span,
                format!("the `ref` axis does not apply with `{key}`: each commit is reviewed against its first parent, so there is no base to vary"),
                format!("remove `ref` from [matrix]; or, to review one range as a single change, remove `{key}` from [target] and keep `ref`"),
            );
        }
        TargetSpec::Corpus { .. } if matrix.axis("ref").is_some() => {
            root.problems().push(root.span(), "the `ref` axis applies to git targets only; a corpus target reviews each case's before..after");
        }
        TargetSpec::External { .. } if matrix.axis("ref").is_some() => {
            root.problems().push(root.span(), "the `ref` axis does not apply to an `external` target: each change is reviewed as it is");
        }
        TargetSpec::Evals { .. } if matrix.axis("ref").is_some() => {
            root.problems().push(root.span(), "the `ref` axis does not apply with `evals`: each eval case's `Range: base..tip` is reviewed");
        }
        _ => {}
    }
}

/// Why the target has no oracle, when it has none (with `check_paths`, a corpus without
/// `oracle.json` too).
fn missing_oracle(target: &TargetSpec, check_paths: bool) -> Option<&'static str> {
    match target {
        TargetSpec::Git { oracle: None, .. } | TargetSpec::History { oracle: None, .. } => Some("the git repository names no `oracle` file"),
        TargetSpec::Git { .. } | TargetSpec::History { .. } => None,
        TargetSpec::External { oracle: None, .. } => Some("the external target names no `oracle` file"),
        TargetSpec::Corpus { dir, .. } if check_paths && dir.is_dir() && !dir.join(crate::ground_truth::oracle::ORACLE_FILE).is_file() => {
            Some("the corpus has no `oracle.json`")
        }
        TargetSpec::External { .. } | TargetSpec::Corpus { .. } | TargetSpec::Evals { .. } => None,
    }
}

/// An analysis that scores findings against an oracle, on a target without one, is an error
/// at its `kind`; a `compare` analysis that lists oracle metrics, at its `metrics`.
fn check_oracle_needs(root: &TableReader<'_, '_>, target: &TargetSpec, analyses: &[Option<AnalysisSpec>], check_paths: bool) {
    use crate::analysis::spec::AnalysisKind;
    let Some(why) = missing_oracle(target, check_paths) else { return };
    // Read again for the spans only where every item is a table, so no problem is told twice.
    let all_tables =
        root.get("analysis").is_some_and(|v| matches!(v.get_ref(), DeValue::Array(items) if items.iter().all(|i| matches!(i.get_ref(), DeValue::Table(_)))));
    if !all_tables {
        return;
    }
    let help = "score against an oracle with a corpus that has `oracle.json`, an eval set (`evals`) or an `external` target with `oracle`";
    for (t, spec) in root.tables("analysis").iter().zip(analyses) {
        let Some(spec) = spec else { continue };
        match spec.kind {
            AnalysisKind::FIXTURE | AnalysisKind::REVIEW_EVAL | AnalysisKind::JURY => {
                let span = t.get("kind").map_or_else(|| t.span(), |k| k.span());
                t.problems().push_with_help(
                    span,
                    format!("analysis `{}` scores findings against an oracle, but {why}", spec.kind.as_str()),
                    format!("{help}, or remove this analysis"),
                );
            }
            AnalysisKind::COMPARE if t.has("metrics") => {
                let needing: Vec<&str> = spec.compare().into_iter().flat_map(|c| &c.metrics).filter(|m| m.needs_oracle()).map(|m| m.as_str()).collect();
                if !needing.is_empty() {
                    let span = t.get("metrics").map_or_else(|| t.span(), |k| k.span());
                    t.problems().push_with_help(
                        span,
                        format!(
                            "compare metric{} {} need{} an oracle, but {why}",
                            if needing.len() == 1 { "" } else { "s" },
                            needing.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", "),
                            if needing.len() == 1 { "s" } else { "" }
                        ),
                        format!("compare `findings` or `jaccard` (or RQS v2's jury and alignment metrics) here; {help}"),
                    );
                }
            }
            _ => {}
        }
    }
}

/// A `resolution` analysis follows findings through the later commits of a repository's own
/// history: on any other target it is an error at its `kind`.
fn check_history_needs(root: &TableReader<'_, '_>, target: &TargetSpec, analyses: &[Option<AnalysisSpec>]) {
    use crate::analysis::spec::AnalysisKind;
    if matches!(target, TargetSpec::History { .. }) || !analyses.iter().flatten().any(|a| a.reads_history()) {
        return;
    }
    let what = match target {
        TargetSpec::Git { .. } => "a `ref` target reviews one change per ref, not commits of a history",
        TargetSpec::Corpus { .. } => "a corpus's cases have no later commits",
        TargetSpec::Evals { .. } => "an eval set's cases are reviewed in blind clones without their later commits",
        TargetSpec::External { .. } => "external changes have no repository",
        TargetSpec::History { .. } => return,
    };
    // Read again for the spans only where every item is a table, so no problem is told twice.
    if !root.get("analysis").is_some_and(|v| matches!(v.get_ref(), DeValue::Array(items) if items.iter().all(|i| matches!(i.get_ref(), DeValue::Table(_))))) {
        return;
    }
    let help = "select commits beside `repo` in [target]: `commits = \"A..B\"` (or a list) or `pull-requests = \"A..B\"`";
    for (t, spec) in root.tables("analysis").iter().zip(analyses) {
        match spec {
            Some(s) if s.kind == AnalysisKind::RESOLUTION => {
                let span = t.get("kind").map_or_else(|| t.span(), |k| k.span());
                t.problems().push_with_help(
                    span,
                    format!("analysis `resolution` follows findings through later commits of a repository's history, but {what}"),
                    help,
                );
            }
            Some(s) if s.reads_history() => {
                let span = t.get("metrics").map_or_else(|| t.span(), |k| k.span());
                t.problems().push_with_help(
                    span,
                    format!("compare metric `resolution` follows findings through later commits of a repository's history, but {what}"),
                    help,
                );
            }
            _ => {}
        }
    }
}

/// The reviewers: one `[reviewer]` table, or named `[reviewers.NAME]` tables chosen per cell
/// by the matrix's `reviewer` axis.
/// A `compare` analysis's `baseline` that is not a value of its axis: nothing would be
/// compared, which `exec` could only say after the runs.
fn check_compare_baselines(root: &TableReader<'_, '_>, analyses: &[Option<AnalysisSpec>], matrix: &Matrix) {
    // Only where every `[[analysis]]` is a table (another shape is reported where it is read).
    match root.get("analysis").map(|v| v.get_ref()) {
        Some(DeValue::Array(items)) if items.iter().all(|i| matches!(i.get_ref(), DeValue::Table(_))) => {}
        _ => return,
    }
    let tables = root.tables("analysis");
    for (spec, table) in analyses.iter().zip(&tables) {
        let Some(spec) = spec else { continue };
        let (Some(axis_name), Some(baseline)) = (spec.axis.as_deref(), spec.compare().and_then(|c| c.baseline.as_deref())) else { continue };
        // An axis that is not in the matrix is its own (already reported) mistake.
        let Some(axis) = matrix.axis(axis_name) else { continue };
        let values: Vec<String> = axis.values.iter().map(AxisValue::render).collect();
        if values.iter().any(|v| v == baseline) {
            continue;
        }
        let span = table.get("baseline").map(|v| v.span()).unwrap_or_else(|| table.span());
        let message = format!("`baseline = \"{baseline}\"` is not a value of axis `{axis_name}`");
        match did_you_mean(baseline, values.iter().map(String::as_str)) {
            Some(best) => root.problems().push_with_help(span, message, format!("did you mean `{best}`?")),
            None => root.problems().push_with_help(span, message, format!("values: {}", values.join(", "))),
        }
    }
}

fn read_reviewers(root: &TableReader<'_, '_>, axes: &BTreeSet<String>, matrix: Option<&Matrix>, base_dir: &Path) -> Option<Reviewers> {
    let problems = root.problems();
    match (root.has("reviewer"), root.has("reviewers")) {
        (true, true) => {
            root.allow("reviewers");
            problems.push_with_help(
                root.key_span("reviewers").unwrap_or(0..0),
                "both [reviewer] and [reviewers.NAME] are given",
                "use one [reviewer], or name every reviewer as [reviewers.NAME] and add a `reviewer` axis",
            );
            let t = root.table("reviewer")?;
            t.finish();
            None
        }
        (false, false) => {
            root.allow("reviewer");
            problems.push_with_help(root.span(), "missing section [reviewer]", "declare one [reviewer], or named [reviewers.NAME] tables");
            None
        }
        (true, false) => {
            if matrix.is_some_and(|m| m.axis(REVIEWER_AXIS).is_some()) {
                let span = root.table("matrix").and_then(|m| m.key_span(REVIEWER_AXIS)).unwrap_or(0..0);
                problems.push_with_help(
                    span,
                    "the `reviewer` axis chooses among named reviewers, but this manifest has one [reviewer]",
                    "name the reviewers as [reviewers.NAME] tables, or rename the axis",
                );
            }
            let t = root.table("reviewer")?;
            let spec = read_reviewer(&t, axes, base_dir);
            let span = t.span();
            t.finish();
            let spec = spec?;
            if matches!(spec.kind, ReviewerKindSpec::Pipeline(_)) {
                problems.push_with_help(
                    span,
                    "a pipeline's stages call named reviewers",
                    "declare it and the reviewers its stages call as [reviewers.NAME] tables",
                );
                return None;
            }
            Some(Reviewers { entries: vec![NamedReviewer { name: SINGLE_REVIEWER.to_string(), spec }], by_axis: false })
        }
        (false, true) => {
            let table = root.table("reviewers")?;
            let mut entries = Vec::new();
            let mut complete = true;
            let names = table.keys();
            for (name, span) in &names {
                if !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) || name.is_empty() {
                    problems.push(span.clone(), format!("reviewer name `{name}` must use only letters, digits, `-`, `_` and `.`"));
                }
                match table.table(name) {
                    Some(t) => {
                        let spec = read_reviewer(&t, axes, base_dir);
                        t.finish();
                        match spec {
                            Some(spec) => entries.push(NamedReviewer { name: name.clone(), spec }),
                            None => complete = false,
                        }
                    }
                    None => complete = false,
                }
            }
            let table_span = table.span();
            table.finish();
            if names.is_empty() {
                problems.push(table_span, "[reviewers] names no reviewer: add [reviewers.NAME] tables");
                return None;
            }
            let declared: Vec<&str> = names.iter().map(|(n, _)| n.as_str()).collect();
            let axis = matrix.and_then(|m| m.axis(REVIEWER_AXIS));
            match axis {
                Some(axis) => {
                    let span = root.table("matrix").and_then(|m| m.key_span(REVIEWER_AXIS)).unwrap_or(0..0);
                    for value in &axis.values {
                        let AxisValue::Str(v) = value else {
                            problems.push(span.clone(), format!("`reviewer` axis values name reviewers: `{value}` is not a name"));
                            continue;
                        };
                        if !declared.contains(&v.as_str()) {
                            let help = match did_you_mean(v, declared.iter().copied()) {
                                Some(best) => format!("did you mean `{best}`? declared: {}", declared.join(", ")),
                                None => format!("declared: {}", declared.join(", ")),
                            };
                            problems.push_with_help(span.clone(), format!("`reviewer` axis names `{v}`, which is not declared as [reviewers.{v}]"), help);
                        }
                    }
                }
                None if names.len() > 1 => {
                    problems.push_with_help(
                        root.table("matrix").map(|m| m.span()).unwrap_or(0..0),
                        format!("{} reviewers are declared but the matrix has no `reviewer` axis to choose among them", names.len()),
                        format!("add `reviewer = [{}]` to [matrix]", declared.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(", ")),
                    );
                }
                None => {}
            }
            complete &= resolve_pipelines(&mut entries, problems);
            complete.then_some(Reviewers { entries, by_axis: axis.is_some() })
        }
    }
}

/// Resolves each pipeline's stages against the other named reviewers.
fn resolve_pipelines(entries: &mut [NamedReviewer], problems: &crate::config::Problems) -> bool {
    let declared: Vec<NamedReviewer> = entries.to_vec();
    let named: Vec<(&str, &crate::reviewer::spec::ReviewerSpec)> = declared.iter().map(|e| (e.name.as_str(), &e.spec)).collect();
    let mut ok = true;
    for entry in entries.iter_mut() {
        if let ReviewerKindSpec::Pipeline(p) = &mut entry.spec.kind {
            ok &= crate::reviewer::bind::resolve(p, &entry.name, &named, problems);
        }
    }
    ok
}

fn read_report(t: &TableReader<'_, '_>, base_dir: &Path, check_writable: bool) -> Option<ReportSpec> {
    let output = t.required_string("output");
    if let (Some(dir), true) = (&output, check_writable) {
        if let Err(why) = crate::config::probe_writable(&resolve_path(base_dir, dir.get_ref())) {
            t.problems().push_with_help(
                dir.span(),
                format!("the report directory cannot be written: {why}"),
                "`exec` writes RESULTS.md and results.json there; choose another `output`",
            );
        }
    }
    let template = t.string("template").map(|p| resolve_path(base_dir, p.get_ref()));
    if let Some(path) = &template {
        if !path.is_file() {
            if let Some(span) = t.get("template").map(|v| v.span()) {
                t.problems().push(span, format!("template `{}` does not exist", path.display()));
            }
        }
    }
    let html = t.boolean("html").unwrap_or(false);
    Some(ReportSpec { output: resolve_path(base_dir, output?.get_ref()), template, html, force: false })
}

#[cfg(test)]
mod reviewer_tables;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handlebars_else_is_not_a_template_variable() {
        let text = "version = 1\n[experiment]\nname = \"e\"\n[target]\nrepo = \".\"\n[matrix]\nref = [\"HEAD~1\"]\nmodel = [\"a\", \"b\"]\n[reviewer]\nkind = \"command\"\nprogram = \"tool\"\nargs = [\"{{#if (eq model \\\"a\\\")}}--fast{{else}}--slow{{/if}}\", \"{{#each [1]}}{{this}}{{/each}}\"]\nendpoint = \"http://{{model}}:1\"\ninputs = [\"x.txt\"]\n[report]\noutput = \"out\"\n";
        let manifest = parse(Path::new("e.toml"), text).map_err(|e| format!("{:?}", e.diagnostics)).expect("valid");
        let ReviewerKindSpec::Command(c) = &manifest.reviewers.entries[0].spec.kind else { panic!("command") };
        assert_eq!(c.inputs, vec!["x.txt".to_string()]);
        assert_eq!(c.endpoint.as_deref(), Some("http://{{model}}:1"));
        let err = parse(Path::new("e.toml"), &text.replace("{{else}}", "{{elze}}")).expect_err("unknown variable");
        assert!(format!("{:?}", err.diagnostics).contains("elze"));
    }

    fn with_axis(values: &str) -> String {
        format!("version = 1\n[experiment]\nname = \"e\"\n[target]\nrepo = \".\"\n[matrix]\nref = [\"HEAD~1\"]\nshard = [{values}]\n[reviewer]\nkind = \"builtin\"\nname = \"dry-run\"\n[report]\noutput = \"out\"\n")
    }

    #[test]
    fn a_30k_value_axis_reads_and_its_duplicates_are_each_named() {
        let values: Vec<String> = (0..30_000).map(|i| i.to_string()).collect();
        let manifest = parse(Path::new("e.toml"), &with_axis(&values.join(", "))).map_err(|e| format!("{:?}", e.diagnostics)).expect("valid");
        let shard = manifest.matrix.axis("shard").expect("axis");
        assert_eq!(shard.values.len(), 30_000);
        assert_eq!((shard.values[0].render(), shard.values[29_999].render()), ("0".to_string(), "29999".to_string()));
        // Duplicates far apart, one of them written as a string that renders the same, and one
        // value three times: each repetition is named, at its own place.
        let mut dup = values.clone();
        dup.push("17".into());
        dup.push("\"29998\"".into());
        dup.push("5".into());
        dup.push("5".into());
        let text = with_axis(&dup.join(", "));
        let err = parse(Path::new("e.toml"), &text).expect_err("duplicates");
        let messages: Vec<(String, usize)> = err.diagnostics.iter().map(|d| (d.message.clone(), d.span.start)).collect();
        let twice: Vec<&(String, usize)> = messages.iter().filter(|(m, _)| m.contains("twice")).collect();
        let named: Vec<&str> = twice.iter().map(|(m, _)| m.as_str()).collect();
        assert_eq!(
            named,
            ["axis `shard` lists `17` twice", "axis `shard` lists `29998` twice", "axis `shard` lists `5` twice", "axis `shard` lists `5` twice"]
        );
        let tail = text.find("17, \"29998\"").expect("appended values");
        assert!(twice.iter().all(|(_, at)| *at >= tail), "each duplicate is located at its repetition: {twice:?}");
    }
}
