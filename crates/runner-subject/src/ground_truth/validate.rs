//! `runner corpus validate DIR`: everything seed 002's validator checks on a corpus
//! (`cases.public.json` + `oracle.json`), every problem at once, each with its case id and
//! `file:line:column`, and each case's ground-truth program run on both source versions.
//!
//! Structure: exact key sets in both files (a leaked `expectedFindingIds` or `label` in the
//! public file is an error; `groundTruth` is the object `{before, after, program}`), case ids
//! `case-NN` titled `Scenario NN`, relative source paths that stay inside the case directory
//! once normalized and out of `.git`, equal public and oracle case sets, unique finding ids
//! (any non-empty string) that every case's expected ids resolve to, at least one clean and
//! one finding case (runner's rule, stricter than seed 002's validator on the clean case).
//! Programs: a finding case declares and does pass on `before` and fail on `after` with an
//! assertion failure; a clean case passes on both; anything else (syntax errors, other
//! exceptions, signals, timeouts, spawn errors) is a rejection that keeps the child's output.

use super::oracle::{Interpreter, OracleCase, OracleFinding, Outcome, Split, ORACLE_FILE};
use super::program::{self, ChildOutput, Limits, Verdict};
use super::spanned::{self, Pos, Spanned};
use crate::subject::corpus::{normalize_relative_path, PublicCase, PUBLIC_FILE};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// The exact key sets. A test keeps them in step with the serde models.
pub const PUBLIC_TOP_KEYS: [&str; 2] = ["version", "cases"];
pub const PUBLIC_CASE_KEYS: [&str; 5] = ["id", "title", "reviewTask", "spec", "source"];
pub const PUBLIC_SOURCE_KEYS: [&str; 3] = ["path", "before", "after"];
pub const ORACLE_TOP_KEYS: [&str; 3] = ["version", "findings", "cases"];
/// Seed 002's keys; the optional ones are runner's additions.
pub const ORACLE_FINDING_REQUIRED: [&str; 3] = ["id", "caseId", "description"];
pub const ORACLE_FINDING_OPTIONAL: [&str; 7] = ["file", "line", "range", "category", "severity", "blocking", "severityLabel"];
pub const ORACLE_CASE_REQUIRED: [&str; 4] = ["id", "expectedFindingIds", "groundTruth", "rationale"];
pub const ORACLE_CASE_OPTIONAL: [&str; 2] = ["split", "interpreter"];
pub const GROUND_TRUTH_KEYS: [&str; 3] = ["before", "after", "program"];
pub const RANGE_KEYS: [&str; 2] = ["start", "end"];

/// Keys that name private oracle content: in the public file they are a leak, not a typo.
const PRIVATE_KEYS: [&str; 11] =
    ["expectedFindingIds", "label", "labels", "expected", "findings", "rationale", "groundTruth", "oracle", "split", "interpreter", "description"];

#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Programs run at once.
    pub jobs: usize,
    pub limits: Limits,
    /// Skip running ground-truth programs (structure only).
    pub structure_only: bool,
}

impl Default for Options {
    fn default() -> Self {
        // Runs mostly wait on interpreter start-up, so twice the CPUs keeps them busy.
        let jobs = std::thread::available_parallelism().map(|n| n.get() * 2).unwrap_or(4).max(2);
        Self { jobs, limits: Limits::default(), structure_only: false }
    }
}

/// One problem, located as precisely as the files allow.
#[derive(Debug, Clone, Serialize)]
pub struct Problem {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
    /// The file the location is in (as joined to the corpus directory).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    pub message: String,
    /// Child stdout/stderr of the step that decided a program's verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<ChildOutput>,
}

/// One ground-truth run.
#[derive(Debug, Clone, Serialize)]
pub struct CaseRun {
    pub case: String,
    pub version: &'static str,
    pub interpreter: Interpreter,
    pub verdict: Verdict,
    pub expected: &'static str,
    pub ok: bool,
    pub elapsed_ms: u64,
}

/// The whole answer of `runner corpus validate`.
#[derive(Debug, Clone, Serialize)]
pub struct Validation {
    pub dir: String,
    pub valid: bool,
    pub cases: usize,
    pub finding_cases: usize,
    pub clean_cases: usize,
    pub findings: usize,
    /// Cases per interpreter (`node` where none is declared).
    pub interpreters: BTreeMap<String, usize>,
    /// Cases per split, where the oracle declares one.
    pub splits: BTreeMap<String, Vec<String>>,
    pub runs: Vec<CaseRun>,
    pub problems: Vec<Problem>,
    pub elapsed_ms: u64,
}

/// Where problems are collected.
struct Problems {
    list: Vec<Problem>,
}

impl Problems {
    fn at(&mut self, case: Option<&str>, file: &str, pos: Pos, message: impl Into<String>) {
        self.list.push(Problem {
            case: case.map(str::to_string),
            file: Some(file.to_string()),
            line: Some(pos.line),
            column: Some(pos.column),
            message: message.into(),
            output: None,
        });
    }

    fn global(&mut self, file: Option<&str>, message: impl Into<String>) {
        self.list.push(Problem { case: None, file: file.map(str::to_string), line: None, column: None, message: message.into(), output: None });
    }
}

/// A parsed file: its text and spanned tree.
struct Parsed {
    label: String,
    text: String,
    root: Spanned,
}

fn read(dir: &Path, name: &str, problems: &mut Problems) -> Option<Parsed> {
    let path = dir.join(name);
    let label = path.display().to_string();
    let text = match crate::subject::files::read_text(&path) {
        Ok(t) => t,
        Err(e) => {
            problems.global(Some(&label), format!("cannot read `{label}`: {e}"));
            return None;
        }
    };
    match spanned::parse(&text) {
        Ok(root) => Some(Parsed { label, text, root }),
        Err(e) => {
            problems.at(None, &label, e.pos, format!("invalid JSON: {}", e.message));
            None
        }
    }
}

/// Checks an object's key set: not an object, duplicate, unknown and missing keys are
/// problems. Returns whether the key set is exactly right.
#[allow(clippy::too_many_arguments)]
fn check_keys(
    node: &Spanned,
    file: &str,
    what: &str,
    case: Option<&str>,
    required: &[&str],
    optional: &[&str],
    leak_hint: bool,
    problems: &mut Problems,
) -> bool {
    let Some(members) = node.as_object() else {
        problems.at(case, file, node.pos, format!("{what} must be an object, not {}", node.kind()));
        return false;
    };
    let mut ok = true;
    let mut seen = BTreeSet::new();
    let expected = required.iter().chain(optional).map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ");
    for m in members {
        if !seen.insert(m.key.as_str()) {
            problems.at(case, file, m.key_pos, format!("duplicate key `{}` in {what}", m.key));
            ok = false;
        }
        if !required.contains(&m.key.as_str()) && !optional.contains(&m.key.as_str()) {
            let message = if leak_hint && PRIVATE_KEYS.contains(&m.key.as_str()) {
                format!("unknown key `{}` in {what}: private labels must never be part of reviewer input (they belong in `{ORACLE_FILE}`)", m.key)
            } else {
                format!("unknown key `{}` in {what}; expected exactly {expected}", m.key)
            };
            problems.at(case, file, m.key_pos, message);
            ok = false;
        }
    }
    for key in required {
        if !seen.contains(key) {
            problems.at(case, file, node.pos, format!("{what} lacks `{key}`"));
            ok = false;
        }
    }
    ok
}

fn check_version(root: &Spanned, file: &str, problems: &mut Problems) {
    if let Some(m) = root.get("version") {
        // `1.0` is the number 1, as in seed 002's JavaScript.
        if m.value.to_value().as_f64() != Some(1.0) {
            problems.at(None, file, m.value.pos, "`version` must be 1");
        }
    }
}

/// The array under `key` of an object root, or a problem.
fn array_at<'a>(root: &'a Spanned, key: &str, file: &str, problems: &mut Problems) -> &'a [Spanned] {
    match root.get(key).map(|m| &m.value) {
        Some(v) => match v.as_array() {
            Some(a) => a,
            None => {
                problems.at(None, file, v.pos, format!("`{key}` must be an array, not {}", v.kind()));
                &[]
            }
        },
        None => &[],
    }
}

fn case_id_ok(id: &str) -> bool {
    id.strip_prefix("case-").is_some_and(|n| n.len() >= 2 && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The title seed 002 requires of case `case-NN`: `Scenario NN`.
fn expected_title(id: &str) -> Option<String> {
    id.strip_prefix("case-").filter(|_| case_id_ok(id)).map(|n| format!("Scenario {n}"))
}

/// The id of a case object, for messages about it, when it has a string one.
fn node_id(node: &Spanned) -> Option<String> {
    node.get("id").and_then(|m| m.value.as_str()).map(str::to_string)
}

struct PublicEntry<'a> {
    node: &'a Spanned,
    case: PublicCase,
    /// `source.path` normalized inside the case directory; `None` when it is unsafe.
    path: Option<String>,
}

struct OracleCaseEntry<'a> {
    node: &'a Spanned,
    case: OracleCase,
}

struct FindingEntry<'a> {
    node: &'a Spanned,
    finding: OracleFinding,
}

fn check_public<'a>(p: &'a Parsed, problems: &mut Problems) -> Vec<PublicEntry<'a>> {
    let file = p.label.as_str();
    let cases: &[Spanned] = match (&p.root.as_object(), p.root.as_array()) {
        (Some(_), _) => {
            if check_keys(&p.root, file, "the public file", None, &PUBLIC_TOP_KEYS, &[], true, problems) {
                check_version(&p.root, file, problems);
            }
            array_at(&p.root, "cases", file, problems)
        }
        (None, Some(a)) => a,
        (None, None) => {
            problems.at(None, file, p.root.pos, format!("the public file must be an object or an array, not {}", p.root.kind()));
            &[]
        }
    };
    let mut out = Vec::new();
    for node in cases {
        let id = node_id(node);
        let case = id.as_deref();
        let mut ok = check_keys(node, file, "a public case", case, &PUBLIC_CASE_KEYS, &[], true, problems);
        if let Some(source) = node.get("source").map(|m| &m.value) {
            ok &= check_keys(source, file, "a public case's `source`", case, &PUBLIC_SOURCE_KEYS, &[], true, problems);
        }
        if !ok {
            continue;
        }
        let decoded: PublicCase = match spanned::decode(&p.text, node) {
            Ok(c) => c,
            Err(e) => {
                problems.at(case, file, e.pos, format!("invalid public case: {}", e.message));
                continue;
            }
        };
        if !case_id_ok(&decoded.id) {
            problems.at(case, file, node.pos_of("id"), format!("case id `{}` must look like `case-NN`", decoded.id));
        } else if let Some(title) = expected_title(&decoded.id).filter(|t| *t != decoded.title) {
            problems.at(
                case,
                file,
                node.pos_of("title"),
                format!("case `{}` must be titled `{title}`, not `{}` (titles are neutral: `Scenario NN`)", decoded.id, decoded.title),
            );
        }
        let source_node = node.get("source").map(|m| &m.value).unwrap_or(node);
        let path = normalize_relative_path(&decoded.source.path);
        if path.is_none() {
            problems.at(case, file, source_node.pos_of("path"), unsafe_path_message("source path", &decoded.source.path));
        }
        out.push(PublicEntry { node, case: decoded, path });
    }
    let mut seen: BTreeMap<&str, Pos> = BTreeMap::new();
    for e in &out {
        if let Some(first) = seen.insert(&e.case.id, e.node.pos) {
            problems.at(Some(&e.case.id), file, e.node.pos_of("id"), format!("duplicate case id `{}` (first at line {})", e.case.id, first.line));
        }
    }
    out
}

fn unsafe_path_message(what: &str, path: &str) -> String {
    let inside_git = path.split('/').any(|p| p.trim_end_matches(['.', ' ']).eq_ignore_ascii_case(".git") || p.eq_ignore_ascii_case("git~1"));
    if inside_git {
        format!("{what} `{path}` names `.git` or a file inside it: a case may never write into the repository's git directory")
    } else {
        format!("{what} `{path}` must be relative and must not escape the case directory (`./a` and `src/../a` are fine; no leading `/`, no `..` above the top, no `\\`) nor name `.git`")
    }
}

fn check_oracle<'a>(p: &'a Parsed, problems: &mut Problems) -> (Vec<FindingEntry<'a>>, Vec<OracleCaseEntry<'a>>) {
    let file = p.label.as_str();
    if !check_keys(&p.root, file, "the oracle", None, &ORACLE_TOP_KEYS, &[], false, problems) && p.root.as_object().is_none() {
        return (Vec::new(), Vec::new());
    }
    check_version(&p.root, file, problems);
    let mut findings = Vec::new();
    for node in array_at(&p.root, "findings", file, problems) {
        let id = node_id(node);
        let mut ok = check_keys(node, file, "an oracle finding", None, &ORACLE_FINDING_REQUIRED, &ORACLE_FINDING_OPTIONAL, false, problems);
        if let Some(range) = node.get("range").map(|m| &m.value) {
            ok &= check_keys(range, file, "a finding's `range`", None, &RANGE_KEYS, &[], false, problems);
        }
        if !ok {
            continue;
        }
        match spanned::decode::<OracleFinding>(&p.text, node) {
            Ok(finding) => {
                if finding.id.trim().is_empty() {
                    problems.at(finding.case_id.as_deref(), file, node.pos_of("id"), "a finding id must not be empty (any unique id will do: `F01`, `C01`, …)");
                }
                findings.push(FindingEntry { node, finding });
            }
            Err(e) => problems.at(None, file, e.pos, format!("invalid finding{}: {}", id.map(|i| format!(" `{i}`")).unwrap_or_default(), e.message)),
        }
    }
    let mut seen: BTreeMap<&str, Pos> = BTreeMap::new();
    for f in &findings {
        if let Some(first) = seen.insert(&f.finding.id, f.node.pos) {
            problems.at(
                f.finding.case_id.as_deref(),
                file,
                f.node.pos_of("id"),
                format!("duplicate finding id `{}` (first at line {})", f.finding.id, first.line),
            );
        }
    }

    let mut cases = Vec::new();
    for node in array_at(&p.root, "cases", file, problems) {
        let id = node_id(node);
        let case = id.as_deref();
        let mut ok = check_keys(node, file, "an oracle case", case, &ORACLE_CASE_REQUIRED, &ORACLE_CASE_OPTIONAL, false, problems);
        if let Some(gt) = node.get("groundTruth").map(|m| &m.value) {
            ok &= check_ground_truth(gt, file, case, problems);
        }
        if !ok {
            continue;
        }
        match spanned::decode::<OracleCase>(&p.text, node) {
            Ok(c) => {
                if !case_id_ok(&c.id) {
                    problems.at(case, file, node.pos_of("id"), format!("case id `{}` must look like `case-NN`", c.id));
                }
                let gt_node = node.get("groundTruth").map(|m| &m.value).unwrap_or(node);
                if c.ground_truth.program.trim().is_empty() {
                    problems.at(case, file, gt_node.pos_of("program"), "`groundTruth.program` is empty");
                }
                let g = &c.ground_truth;
                let (want_before, want_after) = if c.is_clean() { (Outcome::Pass, Outcome::Pass) } else { (Outcome::Pass, Outcome::Fail) };
                if (g.before, g.after) != (want_before, want_after) {
                    let kind = if c.is_clean() { "a clean case (no expected findings)" } else { "a finding case" };
                    problems.at(
                        case,
                        file,
                        gt_node.pos,
                        format!(
                            "`groundTruth` of {kind} must say `\"before\": \"{}\", \"after\": \"{}\"`, not `\"before\": \"{}\", \"after\": \"{}\"`",
                            want_before.as_str(),
                            want_after.as_str(),
                            g.before.as_str(),
                            g.after.as_str()
                        ),
                    );
                }
                cases.push(OracleCaseEntry { node, case: c });
            }
            Err(e) => problems.at(case, file, e.pos, format!("invalid oracle case: {}", e.message)),
        }
    }
    let mut seen: BTreeMap<&str, Pos> = BTreeMap::new();
    for c in &cases {
        if let Some(first) = seen.insert(&c.case.id, c.node.pos) {
            problems.at(Some(&c.case.id), file, c.node.pos_of("id"), format!("duplicate case id `{}` (first at line {})", c.case.id, first.line));
        }
    }
    (findings, cases)
}

/// `groundTruth`: exactly `{before, after, program}`, `before`/`after` `"pass"` or `"fail"`,
/// `program` a string. Returns whether the case can still be decoded (a legacy bare string
/// is reported but can: the rest of the case is checked and its program run as usual).
fn check_ground_truth(node: &Spanned, file: &str, case: Option<&str>, problems: &mut Problems) -> bool {
    if node.as_str().is_some() {
        problems.at(
            case,
            file,
            node.pos,
            "`groundTruth` must be an object `{\"before\": \"pass\", \"after\": \"fail\" (\"pass\" for a clean case), \"program\": \"…\"}` (seed 002's format); \
             a bare program string is the form of earlier runner versions, still read by `exec` and `score` but not a valid corpus: move the string into `program`",
        );
        return true;
    }
    if !check_keys(node, file, "`groundTruth`", case, &GROUND_TRUTH_KEYS, &[], false, problems) {
        return false;
    }
    let mut ok = true;
    for key in ["before", "after"] {
        let Some(m) = node.get(key) else { continue };
        if !matches!(m.value.as_str(), Some("pass" | "fail")) {
            let shown = m.value.as_str().map(|s| format!("`\"{s}\"`")).unwrap_or_else(|| m.value.kind().to_string());
            problems.at(case, file, m.value.pos, format!("`groundTruth.{key}` must be \"pass\" or \"fail\", not {shown}"));
            ok = false;
        }
    }
    if let Some(m) = node.get("program").filter(|m| m.value.as_str().is_none()) {
        problems.at(case, file, m.value.pos, format!("`groundTruth.program` must be a string (an ES-module Node program by default), not {}", m.value.kind()));
        ok = false;
    }
    ok
}

/// Expected ids against the catalog, and each finding's location against its case's source.
fn check_links(
    oracle_file: &str,
    findings: &[FindingEntry<'_>],
    cases: &[OracleCaseEntry<'_>],
    public: &BTreeMap<&str, &PublicEntry<'_>>,
    problems: &mut Problems,
) {
    let catalog: BTreeMap<&str, &FindingEntry<'_>> = findings.iter().map(|f| (f.finding.id.as_str(), f)).collect();
    let mut expected_by: BTreeMap<&str, &str> = BTreeMap::new();
    for c in cases {
        let id = c.case.id.as_str();
        let items = c.node.get("expectedFindingIds").and_then(|m| m.value.as_array()).unwrap_or(&[]);
        let mut in_case = BTreeSet::new();
        for (i, fid) in c.case.expected_finding_ids.iter().enumerate() {
            let pos = items.get(i).map(|n| n.pos).unwrap_or(c.node.pos);
            if !in_case.insert(fid.as_str()) {
                problems.at(Some(id), oracle_file, pos, format!("finding `{fid}` is listed twice in `expectedFindingIds`"));
                continue;
            }
            let Some(entry) = catalog.get(fid.as_str()) else {
                problems.at(Some(id), oracle_file, pos, format!("expected finding `{fid}` is not in the oracle's `findings` catalog"));
                continue;
            };
            if let Some(other) = expected_by.insert(fid, id) {
                problems.at(Some(id), oracle_file, pos, format!("finding `{fid}` is already expected by `{other}`; finding ids are unique across cases"));
            }
            let f = &entry.finding;
            if let Some(owner) = &f.case_id {
                if owner != id {
                    problems.at(Some(id), oracle_file, entry.node.pos_of("caseId"), format!("finding `{fid}` says `caseId: {owner}` but `{id}` expects it"));
                }
            }
            let Some((public, source_path)) = public.get(id).and_then(|p| p.path.as_deref().map(|s| (p, s))) else { continue };
            if let Some(file) = &f.file {
                let normal = normalize_relative_path(file);
                if normal.is_none() {
                    problems.at(Some(id), oracle_file, entry.node.pos_of("file"), format!("finding `{fid}`: {}", unsafe_path_message("file", file)));
                } else if normal.as_deref() != Some(source_path) {
                    problems.at(
                        Some(id),
                        oracle_file,
                        entry.node.pos_of("file"),
                        format!("finding `{fid}`: file `{file}` is not the case's source `{}`", public.case.source.path),
                    );
                }
            }
            let lines = public.case.source.after.lines().count().max(1) as u32;
            if let Some(line) = f.line {
                if line == 0 || line > lines {
                    problems.at(
                        Some(id),
                        oracle_file,
                        entry.node.pos_of("line"),
                        format!("finding `{fid}`: line {line} is outside the `after` text (1..={lines})"),
                    );
                }
            }
            if let Some(r) = f.range {
                if !r.is_valid() || r.end > lines {
                    problems.at(
                        Some(id),
                        oracle_file,
                        entry.node.pos_of("range"),
                        format!("finding `{fid}`: range {}..={} must run forwards inside the `after` text (1..={lines})", r.start, r.end),
                    );
                }
            }
        }
    }
    for f in findings {
        if !expected_by.contains_key(f.finding.id.as_str()) && catalog.get(f.finding.id.as_str()).is_some_and(|e| std::ptr::eq(*e, f)) {
            problems.at(f.finding.case_id.as_deref(), oracle_file, f.node.pos_of("id"), format!("finding `{}` is expected by no case", f.finding.id));
        }
    }
}

/// The ids of a file's case objects (`cases` of an object root, or a bare array) and where
/// each case starts.
fn case_ids(root: &Spanned) -> BTreeMap<String, Pos> {
    let cases = root.get("cases").and_then(|m| m.value.as_array()).or_else(|| root.as_array()).unwrap_or(&[]);
    let mut out = BTreeMap::new();
    for c in cases {
        if let Some(id) = node_id(c) {
            out.entry(id).or_insert(c.pos);
        }
    }
    out
}

/// One program run to do.
struct Job<'a> {
    case: &'a OracleCase,
    node: &'a Spanned,
    public: &'a PublicCase,
    /// The normalized source path.
    path: &'a str,
    version: &'static str,
}

/// Validates the corpus in `dir`.
pub fn validate(dir: &Path, options: &Options) -> Validation {
    let started = Instant::now();
    let mut problems = Problems { list: Vec::new() };
    let public_file = read(dir, PUBLIC_FILE, &mut problems);
    let oracle_file = read(dir, ORACLE_FILE, &mut problems);
    let public = public_file.as_ref().map(|p| check_public(p, &mut problems)).unwrap_or_default();
    let (findings, cases) = oracle_file.as_ref().map(|p| check_oracle(p, &mut problems)).unwrap_or_default();
    let oracle_label = oracle_file.as_ref().map(|p| p.label.clone()).unwrap_or_else(|| dir.join(ORACLE_FILE).display().to_string());
    let public_label = public_file.as_ref().map(|p| p.label.clone()).unwrap_or_else(|| dir.join(PUBLIC_FILE).display().to_string());

    let public_by_id: BTreeMap<&str, &PublicEntry<'_>> = public.iter().map(|e| (e.case.id.as_str(), e)).collect();
    if let (Some(p), Some(o)) = (&public_file, &oracle_file) {
        // Every case object with an id counts here, even one with other problems.
        let public_ids = case_ids(&p.root);
        let oracle_ids = case_ids(&o.root);
        for (id, pos) in &public_ids {
            if !oracle_ids.contains_key(id) {
                problems.at(Some(id), &public_label, *pos, format!("case `{id}` is in `{PUBLIC_FILE}` but not in `{ORACLE_FILE}`"));
            }
        }
        for (id, pos) in &oracle_ids {
            if !public_ids.contains_key(id) {
                problems.at(Some(id), &oracle_label, *pos, format!("case `{id}` is in `{ORACLE_FILE}` but not in `{PUBLIC_FILE}`"));
            }
        }
    }
    check_links(&oracle_label, &findings, &cases, &public_by_id, &mut problems);
    if oracle_file.is_some() {
        if !cases.iter().any(|c| c.case.is_clean()) {
            problems.global(
                Some(&oracle_label),
                "the corpus needs at least one clean case (no expected findings): runner's rule, deliberately stricter than seed 002's validator, \
                 because a clean case is what measures false positives (seed 002's scorer requires one in every plan)",
            );
        }
        if !cases.iter().any(|c| !c.case.is_clean()) {
            problems.global(Some(&oracle_label), "the corpus needs at least one finding case");
        }
    }

    let mut jobs = Vec::new();
    if !options.structure_only {
        for c in &cases {
            let Some(p) = public_by_id.get(c.case.id.as_str()) else { continue };
            let Some(path) = p.path.as_deref() else { continue };
            if c.case.ground_truth.program.trim().is_empty() {
                continue;
            }
            for version in ["before", "after"] {
                jobs.push(Job { case: &c.case, node: c.node, public: &p.case, path, version });
            }
        }
    }
    let results = run_jobs(&jobs, options);
    let mut runs = Vec::new();
    for (job, result) in jobs.iter().zip(results) {
        let declared = if job.version == "before" { job.case.ground_truth.before } else { job.case.ground_truth.after };
        let expected = match declared {
            Outcome::Pass => "pass",
            Outcome::Fail => "assertion failure",
        };
        let ok = match expected {
            "pass" => result.verdict == Verdict::Pass,
            _ => result.verdict == Verdict::AssertionFailure,
        };
        if !ok {
            let id = job.case.id.as_str();
            let message = match (&result.verdict, declared, job.case.is_clean(), job.version) {
                (Verdict::Pass, Outcome::Fail, _, version) => {
                    format!("ground truth passes on `{version}`; a finding case must fail on `{version}` with an assertion failure")
                }
                (v, Outcome::Pass, true, version) => format!("ground truth must pass on `{version}` (a clean case), but it {v}"),
                (v, Outcome::Pass, false, version) => format!("ground truth must pass on `{version}`, but it {v}"),
                (v, Outcome::Fail, _, version) => format!("ground truth must fail on `{version}` with an assertion failure, but it {}", rejected_text(v)),
            };
            let message = format!("{message} [{}]", job.case.interpreter().name());
            problems.list.push(Problem {
                case: Some(id.to_string()),
                file: Some(oracle_label.clone()),
                line: Some(job.node.pos_of("groundTruth").line),
                column: Some(job.node.pos_of("groundTruth").column),
                message,
                output: Some(result.output.clone()),
            });
        }
        runs.push(CaseRun {
            case: job.case.id.clone(),
            version: job.version,
            interpreter: job.case.interpreter(),
            verdict: result.verdict,
            expected,
            ok,
            elapsed_ms: result.elapsed_ms,
        });
    }

    let mut list = problems.list;
    // Corpus-wide problems first, then by case id; the order found within a case is kept.
    list.sort_by(|a, b| a.case.cmp(&b.case));
    let mut interpreters = BTreeMap::new();
    let mut splits: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for c in &cases {
        *interpreters.entry(c.case.interpreter().name().to_string()).or_insert(0) += 1;
        if let Some(split) = c.case.split {
            splits.entry(split_name(split).to_string()).or_default().push(c.case.id.clone());
        }
    }
    Validation {
        dir: dir.display().to_string(),
        valid: list.is_empty(),
        cases: cases.len().max(public.len()),
        finding_cases: cases.iter().filter(|c| !c.case.is_clean()).count(),
        clean_cases: cases.iter().filter(|c| c.case.is_clean()).count(),
        findings: findings.len(),
        interpreters,
        splits,
        runs,
        problems: list,
        elapsed_ms: started.elapsed().as_millis() as u64,
    }
}

fn rejected_text(v: &Verdict) -> String {
    match v {
        Verdict::Rejected(why) => why.clone(),
        other => other.to_string(),
    }
}

fn split_name(split: Split) -> &'static str {
    match split {
        Split::Tuning => "tuning",
        Split::Holdout => "holdout",
    }
}

/// Runs the jobs on `options.jobs` threads; results come back in job order.
fn run_jobs(jobs: &[Job<'_>], options: &Options) -> Vec<program::ProgramRun> {
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<program::ProgramRun>>> = jobs.iter().map(|_| Mutex::new(None)).collect();
    let workers = options.jobs.clamp(1, jobs.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(job) = jobs.get(i) else { break };
                let text = if job.version == "before" { &job.public.source.before } else { &job.public.source.after };
                let run = program::run(job.case.interpreter(), job.path, text, &job.case.ground_truth.program, options.limits);
                if let Ok(mut slot) = slots[i].lock() {
                    *slot = Some(run);
                }
            });
        }
    });
    slots
        .into_iter()
        .map(|m| {
            m.into_inner().ok().flatten().unwrap_or(program::ProgramRun {
                verdict: Verdict::Rejected("the run did not complete".into()),
                output: ChildOutput::default(),
                elapsed_ms: 0,
            })
        })
        .collect()
}

impl Validation {
    /// The human report: a summary line, then each problem with its location and the
    /// child output that decided it.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for p in &self.problems {
            let case = p.case.as_deref().map(|c| format!("[{c}]")).unwrap_or_default();
            let at = match (&p.file, p.line, p.column) {
                (Some(f), Some(l), Some(c)) => format!("{f}:{l}:{c}: "),
                (Some(f), _, _) => format!("{f}: "),
                _ => String::new(),
            };
            let _ = writeln!(out, "error{case}: {at}{}", p.message);
            if let Some(o) = &p.output {
                let _ = writeln!(out, "  {} `{}` → {}", o.step, o.command, o.status);
                for (name, text) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
                    if text.trim().is_empty() {
                        continue;
                    }
                    let _ = writeln!(out, "  {name}:");
                    for line in text.trim_end().lines() {
                        let _ = writeln!(out, "    │ {line}");
                    }
                }
            }
        }
        let interpreters = self.interpreters.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ");
        let _ = writeln!(
            out,
            "corpus `{}`: {} cases ({} with findings, {} clean), {} findings{}",
            self.dir,
            self.cases,
            self.finding_cases,
            self.clean_cases,
            self.findings,
            if interpreters.is_empty() { String::new() } else { format!("; {interpreters}") }
        );
        for (split, ids) in &self.splits {
            let _ = writeln!(out, "  {split}: {} case{} ({})", ids.len(), if ids.len() == 1 { "" } else { "s" }, ids.join(", "));
        }
        let failed = self.runs.iter().filter(|r| !r.ok).count();
        let slowest = self.runs.iter().max_by_key(|r| r.elapsed_ms);
        let _ = writeln!(
            out,
            "ground truth: {} runs, {} as expected{}{}",
            self.runs.len(),
            self.runs.len() - failed,
            slowest.map(|r| format!("; slowest {} `{}` {} ms", r.case, r.version, r.elapsed_ms)).unwrap_or_default(),
            format_args!("; {:.1} s in all", self.elapsed_ms as f64 / 1000.0)
        );
        if self.valid {
            let _ = writeln!(out, "valid");
        } else {
            let _ = writeln!(out, "invalid: {} problem{}", self.problems.len(), if self.problems.len() == 1 { "" } else { "s" });
        }
        out
    }
}

#[cfg(test)]
mod tests;
