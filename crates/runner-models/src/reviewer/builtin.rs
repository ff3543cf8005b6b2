//! Built-in, deterministic, offline reviewers: baselines that need no model.
//!
//! - `dry-run` reproduces `stet start --dry-run --json` exactly: one placeholder finding per
//!   hunk at its new-side start line, with stet's ID scheme.
//! - `heuristic` flags added lines that match a fixed set of rules (debug output, eval,
//!   swallowed errors, division by a length, …): a cheap lexical baseline to beat.
//! - `sleep` is `dry-run` after a fixed simulated latency, for benchmarking the engine.

use super::{template, Cost, ReviewError, ReviewJob, ReviewOutput, Reviewer};
use crate::config::{check_template, did_you_mean, template_var_regex, TableReader};
use crate::finding::{collapse_whitespace, sha256_hex, stet_finding_id_bytes, Category, Finding, Severity};
use crate::matrix::{expand, Axis, Cell, Matrix};
use crate::subject::diff::{hunks, Hunk};
use crate::subject::Subject;
use futures::future::BoxFuture;
use regex::Regex;
use serde::Serialize;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Combinations of a template's axes tried when checking a built-in reviewer's name.
const MAX_NAME_RENDERINGS: usize = 10_000;

/// A built-in reviewer's `name` templated over the matrix (`"{{baseline}}"`) must render a
/// known baseline for every cell: each value combination of the axes it uses is rendered.
pub fn check_names(root: &TableReader<'_, '_>, spec: &BuiltinSpec, matrix: &Matrix, span: std::ops::Range<usize>) {
    if !spec.name.contains("{{") {
        return;
    }
    let used: BTreeSet<String> = template_var_regex().captures_iter(&spec.name).map(|c| c[1].to_string()).collect();
    let axes: Vec<&Axis> = matrix.axes.iter().filter(|a| used.contains(&a.name)).collect();
    let combinations = axes.iter().try_fold(1usize, |n, a| n.checked_mul(a.values.len()));
    if axes.is_empty() || combinations.is_none_or(|n| n > MAX_NAME_RENDERINGS) {
        return;
    }
    let sub = Matrix::new(axes.into_iter().cloned().collect(), 1);
    let mut reported = BTreeSet::new();
    for cell in expand(&sub) {
        let vars = template::variables(&cell, 0, None);
        let Ok(name) = template::render(&spec.name, &vars) else { continue };
        if Baseline::parse(&name).is_some() || !reported.insert(name.clone()) {
            continue;
        }
        let message = format!("builtin reviewer name `{}` renders `{name}` for {}: not a builtin reviewer", spec.name, cell.id);
        match did_you_mean(&name, Baseline::NAMES) {
            Some(best) => root.problems().push_with_help(span.clone(), message, format!("did you mean `{best}`? ({})", Baseline::help())),
            None => root.problems().push_with_help(span.clone(), message, Baseline::help()),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct BuiltinSpec {
    /// The baseline's name; may be a template such as `{{baseline}}`.
    pub name: String,
    /// Simulated latency per run, for the `sleep` baseline (benchmarks).
    pub latency_ms: u64,
}

/// Reads a `kind = "builtin"` reviewer table.
pub fn read_spec(t: &TableReader<'_, '_>, axes: &BTreeSet<String>) -> Option<BuiltinSpec> {
    let name = t.required_string("name")?;
    check_template(t.problems(), &name, axes, &[]);
    if !name.get_ref().contains("{{") && Baseline::parse(name.get_ref()).is_none() {
        let help = match did_you_mean(name.get_ref(), Baseline::NAMES) {
            Some(best) => format!("did you mean `{best}`? ({})", Baseline::help()),
            None => Baseline::help().to_string(),
        };
        t.problems().push_with_help(name.span(), format!("unknown builtin reviewer `{}`", name.get_ref()), help);
    }
    let latency_ms = t.integer("latency-ms", 0, 3_600_000).map(|n| *n.get_ref() as u64).unwrap_or(0);
    Some(BuiltinSpec { name: name.into_inner(), latency_ms })
}

/// The built-in baselines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Baseline {
    DryRun,
    Heuristic,
    Sleep,
}

impl Baseline {
    /// Every baseline's name, as `parse` reads it.
    pub(crate) const NAMES: [&'static str; 3] = ["dry-run", "heuristic", "sleep"];

    pub(crate) fn parse(name: &str) -> Option<Self> {
        match name {
            "dry-run" => Some(Self::DryRun),
            "heuristic" => Some(Self::Heuristic),
            "sleep" => Some(Self::Sleep),
            _ => None,
        }
    }

    pub(crate) fn help() -> &'static str {
        "builtin reviewers: dry-run (stet --dry-run), heuristic (lexical rules), sleep (dry-run after `latency-ms`)"
    }

    /// Changes whenever the baseline's output for the same input would change.
    fn version(self) -> &'static str {
        match self {
            Self::DryRun | Self::Sleep => "stet-dry-run-2",
            Self::Heuristic => "heuristic-2",
        }
    }
}

pub struct BuiltinReviewer {
    spec: BuiltinSpec,
}

impl BuiltinReviewer {
    pub fn new(spec: BuiltinSpec) -> Self {
        Self { spec }
    }

    fn baseline(&self, cell: &Cell) -> Result<Baseline, ReviewError> {
        let name = template::render(&self.spec.name, &template::variables(cell, 0, None)).map_err(ReviewError::failed)?;
        Baseline::parse(&name).ok_or_else(|| ReviewError::failed(format!("unknown builtin reviewer `{name}`; {}", Baseline::help())))
    }
}

impl Reviewer for BuiltinReviewer {
    fn failures_are_deterministic(&self) -> bool {
        true
    }

    fn kind(&self) -> &'static str {
        "builtin"
    }

    fn fingerprint(&self, cell: &Cell) -> serde_json::Value {
        match self.baseline(cell) {
            Ok(b) => serde_json::json!({ "baseline": b.version() }),
            Err(e) => serde_json::json!({ "invalid": e.to_string() }),
        }
    }

    fn review<'a>(&'a self, job: &'a ReviewJob) -> BoxFuture<'a, Result<ReviewOutput, ReviewError>> {
        Box::pin(async move {
            let started = Instant::now();
            let baseline = self.baseline(&job.cell)?;
            if baseline == Baseline::Sleep && self.spec.latency_ms > 0 {
                tokio::time::sleep(Duration::from_millis(self.spec.latency_ms)).await;
            }
            let findings = match baseline {
                Baseline::DryRun | Baseline::Sleep => dry_run(&job.subject).map_err(ReviewError::failed)?,
                Baseline::Heuristic => heuristic(&job.subject),
            };
            let raw = serde_json::to_string(&serde_json::json!({ "findings": findings })).unwrap_or_default();
            let hunks = hunks(&job.subject.files).count() as u32;
            Ok(ReviewOutput {
                findings,
                raw,
                cost: Cost { wall_ms: started.elapsed().as_millis() as u64, hunks, ..Cost::default() },
                ..ReviewOutput::default()
            })
        })
    }
}

/// stet's `--dry-run` output for a subject: one finding per hunk, or stet's failure when it
/// cannot compute the hunks (a diff line over 64 KiB).
pub fn dry_run(subject: &Subject) -> Result<Vec<Finding>, String> {
    if let Some(e) = &subject.stet_error {
        return Err(e.clone());
    }
    let root = stet_repo_root(&subject.repo_dir);
    Ok(hunks(&subject.files).map(|h| dry_run_finding(h, &root)).collect())
}

/// The repository root as stet prints it in `cursor_uri` (`git rev-parse --show-toplevel`):
/// absolute, symbolic links resolved, the top of the work tree even when the manifest names
/// a folder inside it.
fn stet_repo_root(repo: &Path) -> PathBuf {
    let resolved = repo.canonicalize().or_else(|_| std::path::absolute(repo)).unwrap_or_else(|_| repo.to_path_buf());
    resolved.ancestors().find(|dir| dir.join(".git").exists()).map(Path::to_path_buf).unwrap_or(resolved)
}

/// stet's placeholder finding for a hunk: at the hunk's new-side start line (1 when it has
/// none), its stem naming the hunk by `sha256(file + ":" + text)` over the raw bytes with
/// CRLF turned into LF (stet's `StrictHunkID`).
fn dry_run_finding(hunk: &Hunk, root: &Path) -> Finding {
    let line = hunk.stet_line();
    let mut keyed = hunk.raw_file.clone();
    keyed.push(b':');
    keyed.extend(crlf_to_lf(&hunk.raw_text));
    let stem = format!("{DRY_RUN_MESSAGE}:{}", sha256_hex(&keyed));
    Finding {
        id: stet_finding_id_bytes(&hunk.raw_file, line, None, &collapse_whitespace(&stem)),
        file: hunk.file.clone(),
        line,
        range: None,
        severity: Severity::Info,
        category: Category::Maintainability,
        confidence: 1.0,
        message: DRY_RUN_MESSAGE.to_string(),
        suggestion: None,
        cursor_uri: Some(format!("file://{}#L{line}", lexical_join(root, &hunk.file).display())),
        evidence_lines: None,
    }
}

const DRY_RUN_MESSAGE: &str = "Dry-run placeholder (CI)";

fn crlf_to_lf(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'\r' && bytes.get(i + 1) == Some(&b'\n') {
            continue;
        }
        out.push(*b);
    }
    out
}

/// Go's `filepath.Join`: the joined path cleaned lexically (`.` and `..` resolved, doubled
/// slashes removed).
fn lexical_join(root: &Path, file: &str) -> PathBuf {
    super::lexical_clean(&root.join(file))
}

struct Rule {
    pattern: &'static str,
    severity: Severity,
    category: Category,
    message: &'static str,
    suggestion: &'static str,
}

const RULES: &[Rule] = &[
    Rule {
        pattern: r"\b(eval|exec)\s*\(|os\.system\(|shell\s*=\s*True|child_process|\.innerHTML\s*=",
        severity: Severity::Error,
        category: Category::Security,
        message: "Dynamic code or shell execution on a changed line; check that no untrusted input reaches it.",
        suggestion: "Pass arguments as a list or use a safe API instead of evaluating text.",
    },
    Rule {
        pattern: r#"(?i)(password|secret|api[_-]?key|token)\s*[:=]\s*["'][^"']+["']"#,
        severity: Severity::Error,
        category: Category::Security,
        message: "Hard-coded credential on a changed line.",
        suggestion: "Read the secret from the environment or a secret store.",
    },
    Rule {
        pattern: r"(\$\{[^}]*\}|\+\s*\w+\s*\+|%s|\{\})[^\n]*\b(SELECT|INSERT|UPDATE|DELETE|ORDER BY|WHERE)\b|\b(SELECT|INSERT|UPDATE|DELETE|ORDER BY|WHERE)\b[^\n]*(\$\{|\+\s*\w|%s|\{\})",
        severity: Severity::Error,
        category: Category::Security,
        message: "SQL text is built from interpolated values; this is an injection risk.",
        suggestion: "Use bound parameters or an allow-list for identifiers.",
    },
    Rule {
        pattern: r"/\s*len\(|/\s*\w+\.len\(\)|/\s*\w+\.length\b|/\s*count\b",
        severity: Severity::Warning,
        category: Category::Correctness,
        message: "Division by a length or count that may be zero.",
        suggestion: "Guard the empty case before dividing.",
    },
    Rule {
        pattern: r"\.unwrap\(\)|\.expect\(",
        severity: Severity::Warning,
        category: Category::Correctness,
        message: "This can panic at run time.",
        suggestion: "Propagate the error with `?` or handle the failure case.",
    },
    Rule {
        pattern: r"except\s*:|except\s+Exception\s*:\s*(pass)?\s*$|catch\s*(\(\w*\))?\s*\{\s*\}",
        severity: Severity::Warning,
        category: Category::Correctness,
        message: "Errors are caught broadly and may be swallowed.",
        suggestion: "Catch the specific error and handle or re-raise it.",
    },
    Rule {
        pattern: r"\b(TODO|FIXME|XXX|HACK)\b",
        severity: Severity::Info,
        category: Category::Maintainability,
        message: "Unfinished work marker left in the change.",
        suggestion: "Resolve it or track it in an issue.",
    },
    Rule {
        pattern: r"console\.log\(|\bprint\(|dbg[!]\(|println[!]\(|System\.out\.print",
        severity: Severity::Nitpick,
        category: Category::Style,
        message: "Debug output left in the change.",
        suggestion: "Remove it or use the project's logger.",
    },
    Rule {
        pattern: r"\bstarts_?[wW]ith\(",
        severity: Severity::Warning,
        category: Category::Security,
        message: "Prefix check on a path or name; `..` segments and sibling prefixes can pass it.",
        suggestion: "Normalize or canonicalize the path before checking containment.",
    },
];

fn compiled_rules() -> &'static Vec<(Regex, &'static Rule)> {
    static COMPILED: OnceLock<Vec<(Regex, &'static Rule)>> = OnceLock::new();
    COMPILED.get_or_init(|| RULES.iter().filter_map(|r| Regex::new(r.pattern).ok().map(|re| (re, r))).collect())
}

/// Lexical findings on added lines; at most one per rule per line.
pub fn heuristic(subject: &Subject) -> Vec<Finding> {
    let mut out = Vec::new();
    for hunk in hunks(&subject.files) {
        for (line, text) in hunk.added_lines() {
            for (re, rule) in compiled_rules() {
                if re.is_match(text) {
                    let mut f = Finding {
                        id: String::new(),
                        file: hunk.file.clone(),
                        line,
                        range: None,
                        severity: rule.severity,
                        category: rule.category,
                        confidence: 0.5,
                        message: rule.message.to_string(),
                        suggestion: Some(rule.suggestion.to_string()),
                        cursor_uri: Some(format!("file://{}#L{line}", subject.repo_dir.join(&hunk.file).display())),
                        evidence_lines: Some(vec![line]),
                    };
                    f.assign_stet_id();
                    out.push(f);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::subject::diff::parse_unified_diff;
    use std::path::PathBuf;

    fn subject(diff: &str) -> Subject {
        Subject {
            id: "s".into(),
            repo_dir: PathBuf::from("/repo"),
            base_sha: "a".into(),
            head_sha: "b".into(),
            diff: diff.into(),
            files: parse_unified_diff(diff),
            stet_error: None,
            review_task: None,
            spec: None,
        }
    }

    const CALC: &str = "diff --git a/calc.py b/calc.py\nindex 1111111..2222222 100644\n--- a/calc.py\n+++ b/calc.py\n@@ -4,3 +4,7 @@ def add(a, b):\n \n def div(a, b):\n     return a / b\n+\n+\n+def avg(xs):\n+    return sum(xs) / len(xs)\n";

    #[test]
    fn dry_run_matches_the_real_stet_test_vector() {
        let findings = dry_run(&subject(CALC)).expect("dry-run");
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].id, "09fd85503157675d43d1845f0ae7fa4c7fe470b22b46d49cad2b02d5c64f9457");
        assert_eq!(findings[0].line, 4);
        let json = serde_json::to_string(&findings[0]).expect("json");
        assert!(json.contains("\"confidence\":1,"), "{json}");
    }

    #[test]
    fn heuristic_flags_division_by_length() {
        let findings = heuristic(&subject(CALC));
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].line, 10);
        assert_eq!(findings[0].category, Category::Correctness);
    }
}
