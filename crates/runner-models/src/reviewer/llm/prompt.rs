//! Units of review (hunk, file, change), the prompts rendered for them, and the JSON schema
//! the model's answer must follow.

use super::spec::{LlmSpec, UnitKind};
use crate::finding::{Category, Severity};
use crate::rag::Definition;
use crate::subject::diff::{FileDiff, Hunk};
use crate::subject::Subject;
use serde_json::{json, Value};

/// Version of the schema builder; the schema itself is hashed into the fingerprint too.
pub(crate) const SCHEMA_VERSION: &str = "findings-schema-2";

/// What one request reviews: some hunks of one or more files.
#[derive(Debug, Clone)]
pub(crate) struct Unit<'a> {
    pub kind: UnitKind,
    /// `file`, `file:start-end` or `*`.
    pub label: String,
    pub files: Vec<(&'a str, Vec<&'a Hunk>)>,
}

impl Unit<'_> {
    pub(crate) fn hunk_count(&self) -> u32 {
        self.files.iter().map(|(_, h)| h.len() as u32).sum()
    }

    /// New-side spans of the reviewed hunks: (file, first, last).
    pub(crate) fn spans(&self) -> Vec<(String, u32, u32)> {
        self.files
            .iter()
            .flat_map(|(f, hunks)| {
                hunks.iter().map(move |h| {
                    let (a, b) = h.new_span();
                    (f.to_string(), a, b)
                })
            })
            .collect()
    }

    pub(crate) fn first_file(&self) -> &str {
        self.files.first().map(|(f, _)| *f).unwrap_or_default()
    }
}

/// Splits a subject's diff into units.
pub(crate) fn units(files: &[FileDiff], kind: UnitKind) -> Vec<Unit<'_>> {
    let with_hunks = files.iter().filter(|f| !f.hunks.is_empty());
    match kind {
        UnitKind::Hunk => with_hunks
            .flat_map(|f| {
                f.hunks.iter().map(move |h| {
                    let (a, b) = h.new_span();
                    Unit { kind, label: format!("{}:{a}-{b}", f.path), files: vec![(f.path.as_str(), vec![h])] }
                })
            })
            .collect(),
        UnitKind::File => with_hunks.map(|f| Unit { kind, label: f.path.clone(), files: vec![(f.path.as_str(), f.hunks.iter().collect())] }).collect(),
        UnitKind::Change => {
            let files: Vec<(&str, Vec<&Hunk>)> = with_hunks.map(|f| (f.path.as_str(), f.hunks.iter().collect())).collect();
            if files.is_empty() {
                Vec::new()
            } else {
                vec![Unit { kind, label: "*".into(), files }]
            }
        }
    }
}

/// A hunk's lines with new-file line numbers at the left: `   12 + code`, `   13   code`,
/// `      - code` (removed lines have no new-side number).
pub(crate) fn numbered(hunk: &Hunk) -> String {
    let mut out = Vec::new();
    let mut new_line = hunk.new_start;
    for line in hunk.text.lines().skip(1) {
        if let Some(rest) = line.strip_prefix('+') {
            out.push(format!("{new_line:>5} + {rest}"));
            new_line += 1;
        } else if let Some(rest) = line.strip_prefix('-') {
            out.push(format!("      - {rest}"));
        } else if line.starts_with('\\') {
            continue;
        } else {
            out.push(format!("{new_line:>5}   {}", line.strip_prefix(' ').unwrap_or(line)));
            new_line += 1;
        }
    }
    out.join("\n")
}

/// The new-side code of a unit's hunks per file (added and context lines), for RAG.
pub(crate) fn new_side_code(unit: &Unit<'_>) -> Vec<(String, String)> {
    unit.files
        .iter()
        .map(|(f, hunks)| {
            let mut added = Vec::new();
            let mut context = Vec::new();
            for h in hunks {
                for line in h.text.lines().skip(1) {
                    if let Some(rest) = line.strip_prefix('+') {
                        added.push(rest);
                    } else if let Some(rest) = line.strip_prefix(' ') {
                        context.push(rest);
                    }
                }
            }
            // Added lines first: their identifiers matter most when the limit cuts.
            added.extend(context);
            (f.to_string(), added.join("\n"))
        })
        .collect()
}

/// New-side line numbers of a unit's hunks (context and added lines), sorted.
pub(crate) fn reviewed_lines(unit: &Unit<'_>) -> Vec<u32> {
    let mut lines: Vec<u32> = unit.spans().into_iter().flat_map(|(_, a, b)| a..=b).collect();
    lines.sort_unstable();
    lines.dedup();
    lines
}

/// The JSON schema the answer must follow (Ollama `format`, OpenAI `response_format`).
/// With `lines`, `line` must be one of them (the reviewed lines), so a constrained decoder
/// cannot point outside the change.
pub(crate) fn response_schema(spec: &LlmSpec, multi_file: bool, lines: Option<&[u32]>) -> Value {
    let severities: Vec<&str> = Severity::ALL.iter().map(|s| s.as_str()).collect();
    let categories: Vec<&str> = Category::ALL.iter().map(|c| c.as_str()).collect();
    let mut properties = serde_json::Map::new();
    let mut required = vec!["line", "severity", "category", "message"];
    if multi_file {
        properties.insert("file".into(), json!({ "type": "string" }));
        required.insert(0, "file");
    }
    match lines {
        Some(lines) if !lines.is_empty() => properties.insert("line".into(), json!({ "type": "integer", "enum": lines })),
        _ => properties.insert("line".into(), json!({ "type": "integer", "minimum": 0 })),
    };
    properties.insert("severity".into(), json!({ "type": "string", "enum": severities }));
    properties.insert("category".into(), json!({ "type": "string", "enum": categories }));
    properties.insert("message".into(), json!({ "type": "string", "minLength": 1, "maxLength": spec.message_max_chars }));
    if spec.suggestion_max_chars > 0 {
        properties.insert("suggestion".into(), json!({ "type": "string", "maxLength": spec.suggestion_max_chars }));
    }
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["findings"],
        "properties": {
            "findings": {
                "type": "array",
                "maxItems": spec.max_findings,
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": required,
                    "properties": properties,
                }
            }
        }
    })
}

/// The two prompts of one request.
#[derive(Debug, Clone)]
pub(crate) struct Prompts {
    pub system: String,
    pub user: String,
}

/// Renders the system and user prompts for a unit; `extra` (an object: a pipeline stage's
/// earlier findings) adds variables beside the unit's.
pub(crate) fn render(spec: &LlmSpec, subject: &Subject, unit: &Unit<'_>, definitions: &[Definition], extra: Option<&Value>) -> Result<Prompts, String> {
    let multi_file = unit.files.len() > 1;
    let files: Vec<Value> = unit
        .files
        .iter()
        .map(|(path, hunks)| {
            json!({
                "path": path,
                "language": crate::rag::Language::from_path(path).map(|l| l.as_str()),
                "hunks": hunks.iter().map(|h| {
                    let (a, b) = h.new_span();
                    json!({ "header": h.text.lines().next().unwrap_or_default(), "new_start": a, "new_end": b, "text": h.text, "numbered": numbered(h) })
                }).collect::<Vec<_>>(),
            })
        })
        .collect();
    let mut vars = json!({
        "unit": unit.kind.as_str(),
        "file": unit.first_file(),
        "multi_file": multi_file,
        "files": files,
        "review_task": subject.review_task,
        "spec": subject.spec,
        "definitions": definitions,
        "max_findings": spec.max_findings,
        "ask_suggestion": spec.suggestion_max_chars > 0,
        "severities": Severity::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
        "categories": Category::ALL.iter().map(|c| c.as_str()).collect::<Vec<_>>(),
    });
    if let (Some(Value::Object(extra)), Value::Object(vars)) = (extra, &mut vars) {
        vars.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    let system = render_template(&format!("system prompt `{}`", spec.system_prompt.name), &spec.system_prompt.text, &vars)?;
    let user = render_template(&format!("prompt `{}`", spec.prompt.name), &spec.prompt.text, &vars)?;
    Ok(Prompts { system, user })
}

/// Renders a prompt template strictly (an unknown variable is an error) and without HTML
/// escaping, trimmed; `what` names it in the error.
pub(crate) fn render_template(what: &str, text: &str, vars: &Value) -> Result<String, String> {
    let out = crate::reviewer::template::render_strict(text, vars).map_err(|e| format!("failed to render {what}: {e}"))?;
    Ok(out.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reviewer::llm::spec::Protocol;
    use crate::subject::diff::parse_unified_diff;
    use std::path::PathBuf;

    const DIFF: &str = "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -4,3 +4,7 @@ def add(a, b):\n \n def div(a, b):\n-    return a / b\n+    return a // b\n+\n+def avg(xs):\n+    return sum(xs) / len(xs)\n@@ -20,1 +24,2 @@\n x = 1\n+y = 2\ndiff --git a/b.rs b/b.rs\n--- a/b.rs\n+++ b/b.rs\n@@ -1 +1 @@\n-a\n+b\n";

    fn subject() -> Subject {
        Subject {
            id: "case-01".into(),
            repo_dir: PathBuf::from("/r"),
            base_sha: "a".into(),
            head_sha: "b".into(),
            diff: DIFF.into(),
            files: parse_unified_diff(DIFF),
            stet_error: None,
            review_task: Some("Review the averaging helper.".into()),
            spec: Some("avg([]) must return 0.".into()),
        }
    }

    #[test]
    fn units_by_kind() {
        let s = subject();
        let hunks = units(&s.files, UnitKind::Hunk);
        assert_eq!(hunks.iter().map(|u| u.label.as_str()).collect::<Vec<_>>(), vec!["calc.py:4-10", "calc.py:24-25", "b.rs:1-1"]);
        let files = units(&s.files, UnitKind::File);
        assert_eq!(files.len(), 2);
        assert_eq!(files[0].hunk_count(), 2);
        let change = units(&s.files, UnitKind::Change);
        assert_eq!(change.len(), 1);
        assert_eq!(change[0].hunk_count(), 3);
        assert_eq!(change[0].spans().len(), 3);
    }

    #[test]
    fn lines_are_numbered_on_the_new_side() {
        let s = subject();
        let text = numbered(&s.files[0].hunks[0]);
        assert_eq!(
            text,
            "    4   \n    5   def div(a, b):\n      -     return a / b\n    6 +     return a // b\n    7 + \n    8 + def avg(xs):\n    9 +     return sum(xs) / len(xs)"
        );
    }

    #[test]
    fn prompts_carry_task_spec_code_and_definitions() {
        let s = subject();
        let spec = LlmSpec::new(Protocol::OpenAi, "http://x/v1");
        let unit = &units(&s.files, UnitKind::File)[0];
        let def = Definition {
            symbol: "mean".into(),
            kind: "function".into(),
            file: "stats.py".into(),
            line: 3,
            end_line: 4,
            language: "python".into(),
            snippet: "def mean(xs):\n    return 0".into(),
            truncated: false,
        };
        let p = render(&spec, &s, unit, &[def], None).expect("renders");
        assert!(p.user.contains("Review the averaging helper."));
        assert!(p.user.contains("avg([]) must return 0."));
        assert!(p.user.contains("File `calc.py`:"));
        assert!(p.user.contains("    9 +     return sum(xs) / len(xs)"));
        assert!(p.user.contains("`mean` (function) in `stats.py`, line 3:"));
        assert!(!p.user.contains("b.rs"), "one file per unit");
        assert!(p.system.contains("at most 8 findings"));
        assert!(p.system.contains("one of error, warning, info, nitpick;"), "{}", p.system);
        assert!(!p.system.contains("\"file\": the path"), "single-file units need no file field");
        let change = &units(&s.files, UnitKind::Change)[0];
        let p = render(&spec, &s, change, &[], None).expect("renders");
        assert!(p.system.contains("\"file\": the path"));
        assert!(!p.user.contains("## Definitions"));
    }

    #[test]
    fn prompts_without_task_or_spec() {
        let mut s = subject();
        s.review_task = None;
        s.spec = None;
        let spec = LlmSpec::new(Protocol::Ollama, "http://x");
        let p = render(&spec, &s, &units(&s.files, UnitKind::Hunk)[2], &[], None).expect("renders");
        assert!(p.user.starts_with("## Change to review"), "{}", p.user);
    }

    #[test]
    fn schema_bounds_the_answer() {
        let spec = LlmSpec::new(Protocol::OpenAi, "http://x/v1");
        let schema = response_schema(&spec, false, None);
        assert_eq!(schema["properties"]["findings"]["maxItems"], 8);
        assert_eq!(schema["properties"]["findings"]["items"]["properties"]["message"]["maxLength"], 300);
        assert!(schema["properties"]["findings"]["items"]["properties"].get("file").is_none());
        assert_eq!(schema["properties"]["findings"]["items"]["properties"]["suggestion"]["maxLength"], 300);
        let mut terse = spec.clone();
        terse.suggestion_max_chars = 0;
        assert!(response_schema(&terse, false, None)["properties"]["findings"]["items"]["properties"].get("suggestion").is_none());
        assert_eq!(response_schema(&spec, true, None)["properties"]["findings"]["items"]["required"][0], "file");
        let s = subject();
        let unit = &units(&s.files, UnitKind::File)[0];
        assert_eq!(reviewed_lines(unit), vec![4, 5, 6, 7, 8, 9, 10, 24, 25]);
        let constrained = response_schema(&spec, false, Some(&reviewed_lines(unit)));
        assert_eq!(constrained["properties"]["findings"]["items"]["properties"]["line"]["enum"], json!([4, 5, 6, 7, 8, 9, 10, 24, 25]));
    }
}
