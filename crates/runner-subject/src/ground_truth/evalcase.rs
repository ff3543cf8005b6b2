//! Seed 003's eval cases for git targets: `evals/<id>/case.md`, one past change per case,
//! reviewed as `Range: base..tip` and scored against the findings outside reviewers raised.
//!
//! ```text
//! Case: <id>
//! Range: <full sha of base>..<full sha of tip>
//! Source: <outside reviewer | incident | audit, with a link or a number>
//! Date: <yyyy-mm-dd>
//! Groups: <optional tags, space separated>
//!
//! Findings (one per line: id | path:line | class | the defect, in a sentence):
//!
//! F1 | src/session/store.cpp:212 | state | a damaged metadata file is read as "no metadata"
//! ```
//!
//! A location may be a range (`path:12-15`). Text after the `Range` value is a comment;
//! lines of the findings section without a `|` are notes. The set becomes an [`Oracle`] whose
//! finding ids are namespaced by case (`<case>/F1`), since seed 003 numbers findings per case.

use crate::finding::{Category, LineRange};
use crate::ground_truth::oracle::{Oracle, OracleCase, OracleFinding};
use std::path::{Path, PathBuf};

/// The file name of a case inside its directory.
pub const CASE_FILE: &str = "case.md";

/// One finding of a case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalFinding {
    /// `F1`, as written in the case.
    pub id: String,
    pub path: String,
    pub line: u32,
    /// The end line when the location is a range.
    pub end: Option<u32>,
    /// The case's class (`state`, `validation`, …), free text.
    pub class: String,
    pub defect: String,
    /// The line of `case.md` it is written on, for located errors.
    pub written_at: usize,
}

/// One case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalCase {
    pub id: String,
    pub base: String,
    pub tip: String,
    pub source: String,
    pub date: Option<String>,
    pub groups: Vec<String>,
    pub findings: Vec<EvalFinding>,
    /// Lines of the findings section that are not findings.
    pub notes: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum EvalCaseError {
    #[error("failed to read `{path}`: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("`{path}:{line}`: {message}")]
    Invalid { path: PathBuf, line: usize, message: String },
    #[error("no eval cases under `{0}` (expected `<id>/case.md` directories)")]
    Empty(PathBuf),
}

fn is_full_sha(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Parses one `case.md`; `path` names it in messages.
pub fn parse(path: &Path, text: &str) -> Result<EvalCase, EvalCaseError> {
    let err = |line: usize, message: String| EvalCaseError::Invalid { path: path.to_path_buf(), line, message };
    let (mut id, mut range, mut source, mut date, mut groups) = (None, None, None, None, Vec::new());
    let mut findings: Vec<EvalFinding> = Vec::new();
    let mut notes = Vec::new();
    let mut in_findings = false;
    for (n, raw) in text.lines().enumerate() {
        let line_no = n + 1;
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if !in_findings {
            if line.starts_with("Findings") && line.ends_with(':') {
                in_findings = true;
                continue;
            }
            let Some((key, value)) = line.split_once(':') else {
                return Err(err(line_no, format!("expected `Key: value` or the `Findings:` line, found `{line}`")));
            };
            let value = value.trim();
            match key.trim() {
                "Case" => id = Some(value.to_string()),
                "Range" => {
                    // The range is one word; anything after it is a comment.
                    let value = value.split_whitespace().next().unwrap_or_default();
                    let Some((base, tip)) = value.split_once("..") else {
                        return Err(err(line_no, format!("`Range` must be `<base sha>..<tip sha>`, found `{value}`")));
                    };
                    if !is_full_sha(base) || !is_full_sha(tip) {
                        return Err(err(line_no, format!("`Range` needs full commit SHAs so the case can be rerun, found `{value}`")));
                    }
                    range = Some((base.to_ascii_lowercase(), tip.to_ascii_lowercase()));
                }
                "Source" => source = Some(value.to_string()),
                "Date" => date = Some(value.to_string()),
                "Groups" => groups = value.split_whitespace().map(str::to_string).collect(),
                other => return Err(err(line_no, format!("unknown header `{other}` (headers: Case, Range, Source, Date, Groups)"))),
            }
            continue;
        }
        if !line.contains('|') {
            // A note, unless it reads like a finding written without its separators (`F2
            // src/a.py:10 state …`): dropped, that bug would silently leave the oracle.
            if looks_like_finding(line) {
                return Err(err(line_no, format!("`{line}` reads like a finding but is not `id | path:line | class | the defect, in a sentence`")));
            }
            notes.push(line.to_string());
            continue;
        }
        let parts: Vec<&str> = line.splitn(4, '|').map(str::trim).collect();
        let [fid, location, class, defect] = parts.as_slice() else {
            return Err(err(line_no, "a finding is `id | path:line | class | the defect, in a sentence`".into()));
        };
        if fid.is_empty() || fid.contains(char::is_whitespace) {
            return Err(err(line_no, format!("finding id `{fid}` must be one word, e.g. `F1`")));
        }
        if findings.iter().any(|f| f.id == *fid) {
            return Err(err(line_no, format!("finding id `{fid}` is used twice")));
        }
        let Some((file, place)) = location.rsplit_once(':') else {
            return Err(err(line_no, format!("location `{location}` must be `path:line` or `path:start-end`")));
        };
        let (start, end) = match place.split_once('-') {
            Some((a, b)) => (a.parse::<u32>().ok(), b.parse::<u32>().ok().map(Some)),
            None => (place.parse::<u32>().ok(), Some(None)),
        };
        let (Some(start), Some(end)) = (start, end) else {
            return Err(err(line_no, format!("location `{location}` must be `path:line` or `path:start-end` with line numbers from 1")));
        };
        if start == 0 || end.is_some_and(|e| e < start) || file.is_empty() {
            return Err(err(line_no, format!("location `{location}` must be `path:line` or `path:start-end` with line numbers from 1")));
        }
        if defect.is_empty() || class.is_empty() {
            return Err(err(line_no, "a finding needs a class and a sentence saying what breaks".into()));
        }
        findings.push(EvalFinding {
            id: fid.to_string(),
            path: file.trim_start_matches("./").to_string(),
            line: start,
            end,
            class: class.to_string(),
            defect: defect.to_string(),
            written_at: line_no,
        });
    }
    let id = id.ok_or_else(|| err(1, "missing `Case:`".into()))?;
    let (base, tip) = range.ok_or_else(|| err(1, "missing `Range: <base>..<tip>`".into()))?;
    if !in_findings {
        return Err(err(text.lines().count().max(1), "missing the `Findings:` line".into()));
    }
    Ok(EvalCase { id, base, tip, source: source.unwrap_or_default(), date, groups, findings, notes })
}

/// Whether a line without `|` reads like a finding: it starts with a finding id (`F2`, `B12`)
/// or holds a `path:line` location (`src/a.py:10`).
fn looks_like_finding(line: &str) -> bool {
    let first = line.split_whitespace().next().unwrap_or_default();
    let id_like = first.len() <= 6
        && first.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && first.chars().skip(1).all(|c| c.is_ascii_digit())
        && first.len() > 1;
    let located = line.split_whitespace().any(|w| {
        w.rsplit_once(':').is_some_and(|(path, place)| {
            path.contains(['.', '/']) && !place.is_empty() && place.split('-').all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
    });
    id_like || located
}

/// Reads every `<dir>/<id>/case.md`, sorted by id; a case's `Case:` must name its directory.
pub fn load_dir(dir: &Path) -> Result<Vec<EvalCase>, EvalCaseError> {
    let entries = std::fs::read_dir(dir).map_err(|source| EvalCaseError::Read { path: dir.to_path_buf(), source })?;
    let mut dirs: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.join(CASE_FILE).is_file()).collect();
    dirs.sort();
    let mut cases = Vec::new();
    for d in dirs {
        let path = d.join(CASE_FILE);
        let text = crate::subject::files::read_text(&path).map_err(|source| EvalCaseError::Read { path: path.clone(), source })?;
        let case = parse(&path, &text)?;
        let name = d.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if case.id != name {
            return Err(EvalCaseError::Invalid { path, line: 1, message: format!("`Case: {}` must match its directory `{name}`", case.id) });
        }
        cases.push(case);
    }
    if cases.is_empty() {
        return Err(EvalCaseError::Empty(dir.to_path_buf()));
    }
    Ok(cases)
}

/// The review guide the reviewer reads (`REVIEW.md`), put into each blind clone.
pub use crate::subject::evals::REVIEW_FILE;

/// Whether `line` carries the tag `case:<tag>`: the tag must end there (`case:x` does not tag
/// `case:x-2`), a sentence's closing punctuation aside.
fn has_tag(line: &str, tag: &str) -> bool {
    let needle = format!("case:{tag}");
    line.match_indices(&needle).any(|(at, _)| {
        let starts_word = line[..at].chars().next_back().is_none_or(|c| !(c.is_alphanumeric() || c == '-' || c == '_'));
        let rest = &line[at + needle.len()..];
        let mut chars = rest.chars();
        let ends_word = match chars.next() {
            None => true,
            Some(c) if c.is_alphanumeric() || c == '-' || c == '_' || c == '/' => false,
            Some('.') => !chars.next().is_some_and(|c| c.is_alphanumeric()),
            Some(_) => true,
        };
        starts_word && ends_word
    })
}

/// `text` (a review guide) without the lines tagged `case:<id>` or `case:<group>` for a group
/// on the case's `Groups:` line: seed 003's hold-out, since a reviewer that reads a line
/// written because of the case has been told the answer.
pub fn strip_tagged(text: &str, case: &EvalCase) -> String {
    let tags: Vec<&str> = std::iter::once(case.id.as_str()).chain(case.groups.iter().map(String::as_str)).collect();
    text.split_inclusive('\n').filter(|line| !tags.iter().any(|t| has_tag(line, t))).collect()
}

/// The oracle id of a case's finding.
pub fn oracle_id(case: &str, finding: &str) -> String {
    format!("{case}/{finding}")
}

/// The cases as an oracle: every finding located, with its class, which is also the category
/// where it is one of stet's categories.
pub fn to_oracle(cases: &[EvalCase]) -> Oracle {
    let mut findings = Vec::new();
    let mut oracle_cases = Vec::new();
    for c in cases {
        let ids: Vec<String> = c.findings.iter().map(|f| oracle_id(&c.id, &f.id)).collect();
        for f in &c.findings {
            findings.push(OracleFinding {
                id: oracle_id(&c.id, &f.id),
                case_id: Some(c.id.clone()),
                description: f.defect.clone(),
                file: Some(f.path.clone()),
                line: Some(f.line),
                range: f.end.map(|end| LineRange { start: f.line, end }),
                category: Category::parse_lenient(&f.class),
                severity: None,
                blocking: true,
                severity_label: None,
                resolved: None,
                class: Some(f.class.clone()),
                fixed: None,
            });
        }
        let mut rationale = format!("Source: {}", c.source);
        if let Some(d) = &c.date {
            rationale.push_str(&format!("; date: {d}"));
        }
        if !c.groups.is_empty() {
            rationale.push_str(&format!("; groups: {}", c.groups.join(" ")));
        }
        oracle_cases.push(OracleCase {
            id: c.id.clone(),
            expected_finding_ids: ids,
            rationale,
            split: None,
            interpreter: None,
            ground_truth: Default::default(),
        });
    }
    Oracle { version: 1, findings, cases: oracle_cases, skipped: Vec::new() }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA_A: &str = "1111111111111111111111111111111111111111";
    const SHA_B: &str = "2222222222222222222222222222222222222222";

    fn sample() -> String {
        format!(
            "Case: store-damage\nRange: {SHA_A}..{SHA_B}     # the change as it was reviewed\nSource: outside reviewer, PR #41\nDate: 2025-03-02\nGroups: round-2 state\n\nFindings (one per line: id | path:line | class | the defect, in a sentence):\n\nF1 | src/session/store.cpp:212 | state | a damaged metadata file is read as \"no metadata\", so the next write replaces it\nF2 | src/api/params.cpp:88-90 | validation | a non-string `model_id` is treated as absent\nverified by the owner of the store\n"
        )
    }

    #[test]
    fn parses_the_seed_example() {
        let case = parse(Path::new("evals/store-damage/case.md"), &sample()).expect("valid");
        assert_eq!(case.id, "store-damage");
        assert_eq!((case.base.as_str(), case.tip.as_str()), (SHA_A, SHA_B));
        assert_eq!(case.source, "outside reviewer, PR #41");
        assert_eq!(case.groups, vec!["round-2", "state"]);
        assert_eq!(case.findings.len(), 2);
        assert_eq!(case.findings[0].line, 212);
        assert_eq!(case.findings[1].end, Some(90));
        assert_eq!(case.notes, vec!["verified by the owner of the store"]);
        let oracle = to_oracle(&[case]);
        assert_eq!(oracle.expected_for("store-damage").len(), 2);
        assert_eq!(oracle.findings[1].id, "store-damage/F2");
        assert_eq!(oracle.findings[1].range, Some(LineRange { start: 88, end: 90 }));
        assert_eq!(oracle.findings[0].category, None);
        assert_eq!(oracle.findings[0].class.as_deref(), Some("state"));
    }

    #[test]
    fn lines_tagged_with_the_case_or_its_groups_are_stripped() {
        let case = parse(Path::new("c.md"), &sample()).expect("valid");
        let guide = "# Review\n\
- state: a damaged file is not an empty one (case:store-damage)\n\
- validation: check types of request fields  <!-- case:round-2 -->\n\
- naming: short names are fine\n\
- ordering: lock before reading (case:store-damage-2)\n\
- errors: case:state.\n\
- style: see mycase:store-damage\n";
        let stripped = strip_tagged(guide, &case);
        assert_eq!(
            stripped,
            "# Review\n- naming: short names are fine\n- ordering: lock before reading (case:store-damage-2)\n- style: see mycase:store-damage\n"
        );
        assert!(has_tag("x case:a.", "a") && !has_tag("x case:a.b", "a") && has_tag("case:a", "a"));
    }

    #[test]
    fn problems_are_located() {
        let bad_sha = sample().replace(SHA_A, "HEAD~1");
        let e = parse(Path::new("c.md"), &bad_sha).expect_err("short sha");
        assert!(e.to_string().starts_with("`c.md:2`: `Range` needs full commit SHAs"), "{e}");
        let dup = sample().replace("F2 |", "F1 |");
        let e = parse(Path::new("c.md"), &dup).expect_err("duplicate");
        assert!(e.to_string().contains("`c.md:10`") && e.to_string().contains("used twice"), "{e}");
        let bad_loc = sample().replace("store.cpp:212", "store.cpp");
        assert!(parse(Path::new("c.md"), &bad_loc).expect_err("location").to_string().contains("path:line"));
        let no_findings = format!("Case: x\nRange: {SHA_A}..{SHA_B}\n");
        assert!(parse(Path::new("c.md"), &no_findings).expect_err("findings").to_string().contains("Findings"));
    }
}
