//! AACR-Bench's ground truth (alibaba/aacr-bench, Apache-2.0): its pull requests, each
//! reference comment anchored to a path, a side and a line range, and the candidate comments
//! its annotators rejected — read as the benchmark writes them, and imported as runner's
//! external target and oracle (`runner corpus import aacr`).
//!
//! The gold is a directory holding `positive_samples.json` (required: an array of pull
//! requests, `githubPrUrl`, `source_commit`, `target_commit`, `project_main_language`,
//! `change_line_count`, `category` and `comments[]` with `note`, `path`, `side`, `from_line`,
//! `to_line`, `category`, `context`, `is_ai_comment`, `source_model`) and
//! `negative_samples.json` (optional, the same schema: the rejected comments). Keys the
//! benchmark may add are ignored; a key repeated within an object takes its last value, as
//! Python's `json.load` reads it.
//!
//! - A pull request is keyed as the benchmark's published outputs key it: its instance id
//!   `OWNER__REPO@HEAD7` (the repository from `githubPrUrl`, the first seven hex digits of
//!   `target_commit`, its head), with its base (`source_commit`) and head kept whole.
//! - A rejected comment belongs to the pull request with the same URL and head; a rejected
//!   pull request that is not among the positive ones is kept apart
//!   ([`Gold::unmatched_rejected`]) and listed by the import as left out.
//! - Comments are kept verbatim and in the benchmark's order: the benchmark's scorer matches
//!   reference by reference in that order, so the order is part of the ground truth. Lines,
//!   sides and notes are not normalized here; the scorer's normalization (a missing end filled
//!   from the start, a reversed range swapped) is the analysis's (`analysis::corpus::aacr`).
//!
//! The import ([`to_oracle`], [`to_changes`]) writes what runner's formats can hold:
//!
//! - `changes.json`: one external change per pull request, id the instance id, title
//!   `OWNER/REPO#N (LANGUAGE, N changed lines) BASE7..HEAD7`, URL the pull request's.
//! - `oracle.json`: one case per pull request (id the instance id; its rationale names the
//!   repository, the pull request and both commits in full), one finding per reference comment
//!   in order (`<instance>/G1`, `G2`, …): the note as description, the path as file, the line
//!   range (one line when it starts and ends there; a reversed range swapped), runner's
//!   category for the benchmark's (Code Defect → bug, Security Vulnerability → security,
//!   Performance → performance, Maintainability and Readability → maintainability), and the
//!   context level as its class (`diff`, `file`, `repo`; recall is reported per class).
//! - What runner's oracle format cannot hold: the side, and rejected comments as known-false
//!   findings. A comment on the diff's left side (a removed line) has no line on the head, so
//!   its finding names its file and no line (runner's matcher locates it anywhere in the file;
//!   the benchmark's own rule never matches it, since the outputs it scores are right-side).
//!   Each rejected comment is listed in the oracle's `skipped` with its place and why. The
//!   `aacr` analysis reads sides and rejected comments from the gold itself.

use super::oracle::{Oracle, OracleCase, OracleError, OracleFinding, Skipped};
use crate::finding::{Category, LineRange};
use runner_core::terminal::sanitize;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::Path;

/// The gold's reference comments, beside the rejected ones.
pub const POSITIVE_FILE: &str = "positive_samples.json";
/// The candidate comments the annotators rejected.
pub const NEGATIVE_FILE: &str = "negative_samples.json";

/// One comment of the gold, verbatim.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comment {
    pub note: String,
    pub path: String,
    /// `right` (the head) or `left` (the base: a removed line); compared as text, as the
    /// benchmark's scorer compares it.
    pub side: Option<String>,
    pub from_line: Option<i64>,
    pub to_line: Option<i64>,
    /// The benchmark's category: Code Defect, Security Vulnerability, Performance,
    /// Maintainability and Readability.
    pub category: String,
    /// The benchmark's context level: Diff Level, File Level, Repo Level.
    pub context: String,
    pub is_ai_comment: Option<bool>,
    pub source_model: Option<String>,
}

/// One pull request of the benchmark.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Instance {
    /// `OWNER__REPO@HEAD7`, as the published outputs name it.
    pub id: String,
    /// `OWNER/REPO`.
    pub repo: String,
    pub number: u64,
    pub url: String,
    /// `source_commit`.
    pub base: String,
    /// `target_commit`.
    pub head: String,
    pub language: Option<String>,
    pub changed_lines: Option<u64>,
    /// The pull request's own category (e.g. Code Refactoring / Architectural Improvement).
    pub category: Option<String>,
    /// The reference comments, in the benchmark's order.
    pub references: Vec<Comment>,
    /// The comments the annotators rejected on this pull request, in the benchmark's order.
    pub rejected: Vec<Comment>,
}

/// Rejected comments of a pull request that is not among the benchmark's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnmatchedRejected {
    pub url: String,
    pub head: String,
    pub comments: usize,
}

/// The benchmark's gold.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Gold {
    /// The pull requests, in `positive_samples.json`'s order.
    pub instances: Vec<Instance>,
    pub unmatched_rejected: Vec<UnmatchedRejected>,
}

#[derive(Deserialize)]
struct RawInstance {
    #[serde(rename = "githubPrUrl")]
    url: String,
    source_commit: String,
    target_commit: String,
    #[serde(default)]
    project_main_language: Option<String>,
    #[serde(default)]
    change_line_count: Option<u64>,
    #[serde(default)]
    category: Option<String>,
    #[serde(default)]
    comments: Vec<RawComment>,
}

#[derive(Deserialize)]
struct RawComment {
    #[serde(default)]
    note: Option<String>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    side: Option<String>,
    #[serde(default)]
    from_line: Option<i64>,
    #[serde(default)]
    to_line: Option<i64>,
    #[serde(default)]
    category: Option<String>,
    #[serde(default)]
    context: Option<String>,
    #[serde(default)]
    is_ai_comment: Option<bool>,
    #[serde(default)]
    source_model: Option<String>,
}

impl From<RawComment> for Comment {
    fn from(c: RawComment) -> Self {
        Self {
            note: c.note.unwrap_or_default(),
            path: c.path.unwrap_or_default(),
            side: c.side,
            from_line: c.from_line,
            to_line: c.to_line,
            category: c.category.unwrap_or_default(),
            context: c.context.unwrap_or_default(),
            is_ai_comment: c.is_ai_comment,
            source_model: c.source_model.filter(|m| !m.is_empty()),
        }
    }
}

/// `https://github.com/OWNER/REPO/pull/N` → (`OWNER/REPO`, N).
fn pull_of(url: &str) -> Option<(String, u64)> {
    let rest = url.trim_end_matches('/').strip_prefix("https://github.com/")?;
    let mut parts = rest.split('/');
    let (owner, repo, pull, number) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let name_ok = |s: &str| !s.is_empty() && !s.starts_with('.') && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    (parts.next().is_none() && pull == "pull" && name_ok(owner) && name_ok(repo)).then_some(())?;
    Some((format!("{owner}/{repo}"), number.parse().ok()?))
}

/// The benchmark's instance id of a pull request: `OWNER__REPO@HEAD7`.
pub fn instance_id(repo: &str, head: &str) -> String {
    format!("{}@{}", repo.replacen('/', "__", 1), head.get(..7).unwrap_or(head))
}

fn is_commit(sha: &str) -> bool {
    (7..=64).contains(&sha.len()) && sha.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Reads the gold directory: `positive_samples.json` and, when present, `negative_samples.json`.
pub fn load(dir: &Path) -> Result<Gold, OracleError> {
    let read = |name: &str| {
        let path = dir.join(name);
        crate::subject::files::read_text(&path).map_err(|source| OracleError::Read { path, source })
    };
    let positive = read(POSITIVE_FILE)?;
    let negative = match read(NEGATIVE_FILE) {
        Ok(text) => Some(text),
        Err(OracleError::Read { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    parse(&positive, negative.as_deref()).map_err(|(file, message)| OracleError::Parse { path: dir.join(file), message })
}

/// Parses the two files' texts; an error names the file it is about.
pub fn parse(positive: &str, negative: Option<&str>) -> Result<Gold, (&'static str, String)> {
    let read = |file: &'static str, text: &str| -> Result<Vec<RawInstance>, (&'static str, String)> {
        crate::subject::files::parse_json_last_wins(text).map_err(|e| (file, sanitize(&e.to_string())))
    };
    let mut instances: Vec<Instance> = Vec::new();
    let mut index: HashMap<(String, String), usize> = HashMap::new();
    for (n, raw) in read(POSITIVE_FILE, positive)?.into_iter().enumerate() {
        let what = |m: String| (POSITIVE_FILE, format!("pull request {} (`{}`): {m}", n + 1, sanitize(&raw.url)));
        let (repo, number) = pull_of(&raw.url).ok_or_else(|| what("`githubPrUrl` is not https://github.com/OWNER/REPO/pull/N".into()))?;
        if !is_commit(&raw.source_commit) || !is_commit(&raw.target_commit) {
            return Err(what("`source_commit` and `target_commit` must be commit SHAs".into()));
        }
        let id = instance_id(&repo, &raw.target_commit);
        if let Some(other) = instances.iter().find(|i| i.id == id) {
            return Err(what(format!("its instance id `{id}` is also pull request `{}`'s", sanitize(&other.url))));
        }
        index.insert((raw.url.clone(), raw.target_commit.to_ascii_lowercase()), instances.len());
        instances.push(Instance {
            id,
            repo,
            number,
            url: raw.url,
            base: raw.source_commit,
            head: raw.target_commit,
            language: raw.project_main_language,
            changed_lines: raw.change_line_count,
            category: raw.category,
            references: raw.comments.into_iter().map(Comment::from).collect(),
            rejected: Vec::new(),
        });
    }
    if instances.is_empty() {
        return Err((POSITIVE_FILE, "lists no pull request".into()));
    }
    let mut unmatched_rejected = Vec::new();
    if let Some(text) = negative {
        for raw in read(NEGATIVE_FILE, text)? {
            match index.get(&(raw.url.clone(), raw.target_commit.to_ascii_lowercase())) {
                Some(&i) => instances[i].rejected.extend(raw.comments.into_iter().map(Comment::from)),
                None => unmatched_rejected.push(UnmatchedRejected { url: raw.url, head: raw.target_commit, comments: raw.comments.len() }),
            }
        }
    }
    Ok(Gold { instances, unmatched_rejected })
}

/// runner's category for the benchmark's, where it has one.
pub fn runner_category(category: &str) -> Option<Category> {
    match category {
        "Code Defect" => Some(Category::Bug),
        "Security Vulnerability" => Some(Category::Security),
        "Performance" => Some(Category::Performance),
        "Maintainability and Readability" => Some(Category::Maintainability),
        _ => None,
    }
}

/// The context level as an oracle class: `diff`, `file`, `repo` (another text as written).
pub fn context_class(context: &str) -> String {
    match context {
        "Diff Level" => "diff".into(),
        "File Level" => "file".into(),
        "Repo Level" => "repo".into(),
        other => other.to_string(),
    }
}

/// A comment's line range as the benchmark's scorer reads it: a missing end filled from the
/// start and the reverse, a reversed range swapped; `None` when neither is given.
pub fn line_range(from: Option<i64>, to: Option<i64>) -> Option<(i64, i64)> {
    match (from, to) {
        (None, None) => None,
        (Some(a), None) | (None, Some(a)) => Some((a, a)),
        (Some(a), Some(b)) => Some((a.min(b), a.max(b))),
    }
}

/// Whether a comment sits on the diff's left side (a removed line).
fn on_left(c: &Comment) -> bool {
    c.side.as_deref().is_some_and(|s| s.eq_ignore_ascii_case("left"))
}

/// A comment's place, as text: `path:12-14 (left side)`.
fn place(c: &Comment) -> String {
    let lines = match line_range(c.from_line, c.to_line) {
        Some((a, b)) if a == b => format!(":{a}"),
        Some((a, b)) => format!(":{a}-{b}"),
        None => String::new(),
    };
    let side = c.side.as_deref().map(|s| format!(" ({s} side)")).unwrap_or_default();
    format!("{}{lines}{side}", c.path)
}

/// One reference comment as an oracle finding (see the module's list).
fn finding(instance: &Instance, n: usize, c: &Comment) -> OracleFinding {
    let file = (!c.path.is_empty()).then(|| c.path.clone());
    let lines = match line_range(c.from_line, c.to_line) {
        Some((a, b)) if file.is_some() && !on_left(c) && a >= 1 => u32::try_from(a).ok().zip(u32::try_from(b).ok()),
        _ => None,
    };
    OracleFinding {
        id: format!("{}/G{}", instance.id, n + 1),
        case_id: Some(instance.id.clone()),
        description: c.note.clone(),
        file,
        line: lines.map(|(a, _)| a),
        range: lines.filter(|(a, b)| b > a).map(|(start, end)| LineRange { start, end }),
        category: runner_category(&c.category),
        severity: None,
        blocking: false,
        severity_label: None,
        resolved: None,
        class: (!c.context.is_empty()).then(|| context_class(&c.context)),
        fixed: None,
    }
}

/// The gold as runner's oracle: a case per pull request, a finding per reference comment,
/// each rejected comment (and each rejected pull request not in the benchmark) in `skipped`.
pub fn to_oracle(gold: &Gold) -> Oracle {
    let mut findings = Vec::new();
    let mut cases = Vec::new();
    let mut skipped = Vec::new();
    for instance in &gold.instances {
        let ids: Vec<String> = instance
            .references
            .iter()
            .enumerate()
            .map(|(n, c)| {
                let f = finding(instance, n, c);
                let id = f.id.clone();
                findings.push(f);
                id
            })
            .collect();
        cases.push(OracleCase {
            id: instance.id.clone(),
            expected_finding_ids: ids,
            rationale: format!(
                "AACR-Bench's reference comments on {} ({} pull request {}; base {}, head {}).",
                instance.url, instance.repo, instance.number, instance.base, instance.head
            ),
            split: None,
            interpreter: None,
            ground_truth: Default::default(),
        });
        for (n, c) in instance.rejected.iter().enumerate() {
            skipped.push(Skipped {
                source: format!("{}/R{} {}", instance.id, n + 1, place(c)),
                reason: "rejected by the benchmark's annotators (negative_samples.json): a known-false comment, which the `aacr` analysis reads from the gold"
                    .into(),
            });
        }
    }
    for u in &gold.unmatched_rejected {
        skipped.push(Skipped {
            source: format!("{} at {} ({} rejected comments)", u.url, u.head.get(..7).unwrap_or(&u.head), u.comments),
            reason: "not one of the benchmark's pull requests (positive_samples.json)".into(),
        });
    }
    Oracle { version: 1, findings, cases, skipped }
}

/// One change of an external target, as `changes.json` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    pub id: String,
    pub title: String,
    pub url: String,
}

/// The pull requests as an external target's changes, sorted by id (as the target lists them).
pub fn to_changes(gold: &Gold) -> Vec<Change> {
    let mut changes: Vec<Change> = gold
        .instances
        .iter()
        .map(|i| {
            let mut about = Vec::new();
            if let Some(language) = &i.language {
                about.push(language.clone());
            }
            if let Some(n) = i.changed_lines {
                about.push(format!("{n} changed lines"));
            }
            let about = if about.is_empty() { String::new() } else { format!(" ({})", about.join(", ")) };
            let short = |sha: &str| sha.get(..7).unwrap_or(sha).to_string();
            Change { id: i.id.clone(), title: format!("{}#{}{about} {}..{}", i.repo, i.number, short(&i.base), short(&i.head)), url: i.url.clone() }
        })
        .collect();
    changes.sort_by(|a, b| a.id.cmp(&b.id));
    changes
}

/// What an import holds, in numbers: for the command's summary line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    pub pull_requests: usize,
    pub references: usize,
    pub left_side: usize,
    pub rejected: usize,
    pub rejected_elsewhere: usize,
}

impl Gold {
    pub fn counts(&self) -> Counts {
        Counts {
            pull_requests: self.instances.len(),
            references: self.instances.iter().map(|i| i.references.len()).sum(),
            left_side: self.instances.iter().flat_map(|i| &i.references).filter(|c| on_left(c)).count(),
            rejected: self.instances.iter().map(|i| i.rejected.len()).sum(),
            rejected_elsewhere: self.unmatched_rejected.iter().map(|u| u.comments).sum(),
        }
    }

    /// The pull request of an instance id.
    pub fn instance(&self, id: &str) -> Option<&Instance> {
        self.instances.iter().find(|i| i.id == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POSITIVE: &str = r#"[
      {"change_line_count": 12, "project_main_language": "Go", "source_commit": "0c65673a6fd2421be8fbe613116077120adea068",
       "target_commit": "a050e422e23ce3eaee960b75ceff236b34f369b9", "githubPrUrl": "https://github.com/acme/widget/pull/7", "category": "Bug Fix",
       "comments": [
         {"is_ai_comment": true, "note": "nil map write", "path": "a.go", "side": "right", "source_model": "GPT-5.2", "from_line": 10, "to_line": 10, "category": "Code Defect", "context": "Diff Level"},
         {"is_ai_comment": false, "note": "slow loop", "path": "b.go", "side": "right", "source_model": "", "from_line": 30, "to_line": 22, "category": "Performance", "context": "Repo Level"},
         {"is_ai_comment": false, "note": "removed check", "path": "a.go", "side": "left", "source_model": "", "from_line": 4, "to_line": 5, "category": "Security Vulnerability", "context": "File Level", "extra": 1}]},
      {"source_commit": "1111111111111111111111111111111111111111", "target_commit": "2222222222222222222222222222222222222222",
       "githubPrUrl": "https://github.com/acme/three.js/pull/8", "comments": []}]"#;

    const NEGATIVE: &str = r#"[
      {"source_commit": "0c65673a6fd2421be8fbe613116077120adea068", "target_commit": "a050e422e23ce3eaee960b75ceff236b34f369b9",
       "githubPrUrl": "https://github.com/acme/widget/pull/7",
       "comments": [{"note": "rename x", "path": "a.go", "side": "right", "from_line": 11, "to_line": 12, "category": "Maintainability and Readability", "context": "Diff Level"}]},
      {"source_commit": "3333333333333333333333333333333333333333", "target_commit": "4444444444444444444444444444444444444444",
       "githubPrUrl": "https://github.com/acme/widget/pull/9", "comments": [{"note": "n", "path": "c.go", "side": "right", "from_line": 1, "to_line": 1}]}]"#;

    #[test]
    fn the_gold_reads_keyed_as_the_outputs_are_with_rejected_comments_beside() {
        let gold = parse(POSITIVE, Some(NEGATIVE)).expect("parses");
        assert_eq!(gold.instances.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(), ["acme__widget@a050e42", "acme__three.js@2222222"]);
        let first = &gold.instances[0];
        assert_eq!((first.repo.as_str(), first.number, first.base.as_str()), ("acme/widget", 7, "0c65673a6fd2421be8fbe613116077120adea068"));
        assert_eq!(first.references.len(), 3);
        assert_eq!(first.references[1].from_line, Some(30), "lines are kept as written");
        assert_eq!(first.references[0].source_model.as_deref(), Some("GPT-5.2"));
        assert_eq!(first.references[1].source_model, None, "an empty source model is none");
        assert_eq!(first.rejected.len(), 1);
        assert_eq!(gold.unmatched_rejected, [UnmatchedRejected { url: "https://github.com/acme/widget/pull/9".into(), head: "4".repeat(40), comments: 1 }]);
        assert_eq!(gold.counts(), Counts { pull_requests: 2, references: 3, left_side: 1, rejected: 1, rejected_elsewhere: 1 });
        assert_eq!(line_range(Some(30), Some(22)), Some((22, 30)));
        assert_eq!(line_range(None, Some(4)), Some((4, 4)));
        assert_eq!(line_range(None, None), None);
    }

    #[test]
    fn the_import_writes_one_case_per_pull_request_and_one_finding_per_reference_in_order() {
        let gold = parse(POSITIVE, Some(NEGATIVE)).expect("parses");
        let oracle = to_oracle(&gold);
        assert_eq!(oracle.cases.len(), 2);
        assert_eq!(oracle.cases[0].expected_finding_ids, ["acme__widget@a050e42/G1", "acme__widget@a050e42/G2", "acme__widget@a050e42/G3"]);
        assert!(oracle.cases[0].rationale.contains("a050e422e23ce3eaee960b75ceff236b34f369b9") && oracle.cases[0].rationale.contains("0c65673a6fd2"));
        assert!(oracle.cases[1].is_clean());
        let f = &oracle.findings;
        assert_eq!((f[0].file.as_deref(), f[0].line, f[0].range, f[0].category), (Some("a.go"), Some(10), None, Some(Category::Bug)));
        assert_eq!((f[1].line, f[1].range, f[1].class.as_deref()), (Some(22), Some(LineRange { start: 22, end: 30 }), Some("repo")));
        assert_eq!((f[2].file.as_deref(), f[2].line, f[2].range, f[2].category), (Some("a.go"), None, None, Some(Category::Security)), "left side: file level");
        assert_eq!(oracle.skipped.len(), 2);
        assert!(oracle.skipped[0].source.starts_with("acme__widget@a050e42/R1 a.go:11-12 (right side)"), "{:?}", oracle.skipped[0]);
        assert!(oracle.skipped[1].reason.contains("not one of the benchmark's"), "{:?}", oracle.skipped[1]);
        let again: Oracle = serde_json::from_str(&serde_json::to_string(&oracle).expect("json")).expect("runner reads what the import writes");
        assert_eq!(again, oracle);
        let changes = to_changes(&gold);
        assert_eq!(changes.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["acme__three.js@2222222", "acme__widget@a050e42"], "sorted by id");
        assert_eq!(changes[1].title, "acme/widget#7 (Go, 12 changed lines) 0c65673..a050e42");
        assert_eq!(changes[0].title, "acme/three.js#8 1111111..2222222");
    }

    #[test]
    fn malformed_gold_is_refused_with_the_file_and_pull_request_named() {
        let cases = [
            (r#"[{"githubPrUrl": "https://gitlab.com/a/b/pull/1", "source_commit": "aaaaaaa", "target_commit": "bbbbbbb"}]"#, "is not https://github.com"),
            (r#"[{"githubPrUrl": "https://github.com/a/b/pull/x", "source_commit": "aaaaaaa", "target_commit": "bbbbbbb"}]"#, "is not https://github.com"),
            (r#"[{"githubPrUrl": "https://github.com/a/b/pull/1", "source_commit": "main", "target_commit": "bbbbbbb"}]"#, "must be commit SHAs"),
            (
                r#"[{"githubPrUrl": "https://github.com/a/b/pull/1", "source_commit": "aaaaaaa", "target_commit": "bbbbbbb1"},
                    {"githubPrUrl": "https://github.com/a/b/pull/2", "source_commit": "aaaaaaa", "target_commit": "bbbbbbb2"}]"#,
                "is also pull request",
            ),
            ("[]", "lists no pull request"),
            (r#"{"a": 1}"#, "invalid type"),
        ];
        for (text, expected) in cases {
            let (file, message) = parse(text, None).expect_err(text);
            assert_eq!(file, POSITIVE_FILE);
            assert!(message.contains(expected), "{text}: {message}");
        }
        let (file, _) = parse(POSITIVE, Some("[{]")).expect_err("bad negatives");
        assert_eq!(file, NEGATIVE_FILE);
    }
}
