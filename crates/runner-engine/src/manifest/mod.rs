//! Experiment manifests: TOML in, a validated [`Manifest`] out, or every problem at once.
//!
//! Paths inside a manifest are relative to the manifest's own directory. Keys are
//! kebab-case; matrix axes are named freely (`model`, `ref`, `temperature`,
//! `rag_symbol_max_definitions`, or anything else).

mod checks;
mod matrix;
pub(crate) mod model;
mod reviewers;
mod revisions;
mod scoring;
mod target;

pub use model::*;

use checks::{check_compare_baselines, check_history_needs, check_oracle_needs, check_target_axes};
use matrix::{check_ignored_axes, misspelled_known_axis, read_matrix};
use reviewers::read_reviewers;
use target::read_target;

use crate::analysis::read::read_analysis;
use crate::analysis::spec::AnalysisSpec;
use crate::config::{project_root, resolve_path, Diagnostic, ManifestErrors, Problems, TableReader};
use crate::reviewer::spec::ReviewerKindSpec;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use toml::de::DeTable;

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
