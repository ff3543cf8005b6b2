//! Reading findings out of reviewer output: stet's `{"findings":[…]}`, its NDJSON stream,
//! and the looser shapes models write (code fences, a bare array, a single object).
//!
//! Token usage, where a reviewer states it in its output: a `usage` object beside `findings`,
//! or in an NDJSON stream a `{"type":"usage",…}` event (its counts at the top level, under
//! `data` or under `usage`) or a `usage` object on any other event. Counts are named
//! `prompt_tokens`/`completion_tokens` (OpenAI's chat completions) or
//! `input_tokens`/`output_tokens` (OpenAI's responses, Anthropic); the usages of a stream's
//! events add up (each is one request's).

use super::output_schema::{self, Rule};
use crate::finding::{collapse_whitespace, stet_finding_id, Category, Finding, LineRange, Severity};
use serde_json::Value;

/// Findings read from an output, and every deviation from stet's schema (A7).
#[derive(Debug, Default, Clone)]
pub struct Parsed {
    pub findings: Vec<Finding>,
    pub schema_problems: Vec<String>,
    /// Tokens the output reports, when it reports any.
    pub usage: Option<Usage>,
}

/// Token counts a reviewer reported in its output.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
}

impl Usage {
    /// Reads a usage object: `prompt_tokens`/`completion_tokens` or `input_tokens`/`output_tokens`.
    /// `Ok(None)` when it names neither; an error for a count that is not a whole number ≥ 0.
    pub fn from_value(value: &Value) -> Result<Option<Self>, String> {
        // `$defs/usage` of the reviewer-output schema: an object whose counts are whole numbers ≥ 0.
        if let Some(violation) = output_schema::validate("usage", value).first() {
            return Err(match violation.path.first() {
                None => "`usage` is not an object".to_string(),
                Some(name) => format!("`usage.{name}` is not a whole number of tokens: {}", value.get(name).unwrap_or(&Value::Null)),
            });
        }
        let obj = value.as_object().ok_or("`usage` is not an object")?;
        let count = |names: [&str; 2]| -> Option<u64> {
            let v = names.iter().find_map(|n| obj.get(*n))?;
            v.as_u64().or_else(|| v.as_f64().map(|f| f as u64))
        };
        let usage = Self { prompt_tokens: count(["prompt_tokens", "input_tokens"]), completion_tokens: count(["completion_tokens", "output_tokens"]) };
        Ok((usage != Self::default()).then_some(usage))
    }

    fn plus(self, other: Self) -> Self {
        let add = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            (a, b) => a.or(b),
        };
        Self { prompt_tokens: add(self.prompt_tokens, other.prompt_tokens), completion_tokens: add(self.completion_tokens, other.completion_tokens) }
    }
}

impl Parsed {
    /// Adds a usage object's counts; a malformed one is a schema problem.
    fn add_usage(&mut self, value: &Value, at: &str) {
        match Usage::from_value(value) {
            Ok(Some(u)) => self.usage = Some(self.usage.map_or(u, |sum| sum.plus(u))),
            Ok(None) => {}
            Err(e) => self.schema_problems.push(format!("{at}: {e}")),
        }
    }
}

/// Reads a command's stdout: one JSON document with `findings`, or an NDJSON stream of
/// `{"type":"progress"|"finding"|"done"}` events. Empty output means no findings.
pub fn parse_stet_output(stdout: &str) -> Result<Parsed, String> {
    let trimmed = stdout.trim();
    if trimmed.is_empty() {
        return Ok(Parsed::default());
    }
    if let Ok(doc) = serde_json::from_str::<Value>(trimmed) {
        if doc.get("findings").is_some() {
            return parse_findings_document(&doc);
        }
        if doc.get("type").is_some() {
            return parse_stream(trimmed);
        }
        return Err(format!("expected `{{\"findings\":[…]}}` or an NDJSON stream of events; it printed {}", quoted(trimmed)));
    }
    parse_stream(trimmed)
}

/// How much of a reviewer's output an error quotes, in characters.
const QUOTED_CHARS: usize = 120;

/// The start of `text` as an error quotes it: its first line, at most [`QUOTED_CHARS`]
/// characters, made safe for a terminal, in backticks.
fn quoted(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default().trim_end();
    let mut shown: String = runner_core::terminal::sanitize(&line.chars().take(QUOTED_CHARS).collect::<String>()).replace('`', "'");
    if line.chars().count() > QUOTED_CHARS || text.trim_end().contains('\n') {
        shown.push('…');
    }
    format!("`{shown}`")
}

/// Reads stet's `{"findings":[…]}` document (already parsed as JSON).
pub fn parse_findings_document(doc: &Value) -> Result<Parsed, String> {
    let items = doc.get("findings").and_then(Value::as_array).ok_or("`findings` must be an array")?;
    let mut parsed = Parsed::default();
    for (i, item) in items.iter().enumerate() {
        push_strict(&mut parsed, item, &format!("findings[{i}]"));
    }
    if let Some(usage) = doc.get("usage") {
        parsed.add_usage(usage, "document");
    }
    Ok(parsed)
}

/// Reads stet's NDJSON stream of `progress`/`finding`/`done` events.
pub fn parse_stream(text: &str) -> Result<Parsed, String> {
    let mut parsed = Parsed::default();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let event: Value = serde_json::from_str(line).map_err(|e| format!("stream line {}: not JSON: {e}; it reads {}", n + 1, quoted(line)))?;
        let at = format!("stream line {}", n + 1);
        let kind = event.get("type").and_then(Value::as_str);
        if kind == Some("usage") {
            parsed.add_usage(event.get("data").or_else(|| event.get("usage")).unwrap_or(&event), &at);
            continue;
        }
        if let Some(usage) = event.get("usage") {
            parsed.add_usage(usage, &at);
        }
        match kind {
            Some("finding") => {
                let data = event.get("data").ok_or_else(|| format!("stream line {}: finding event without `data`", n + 1))?;
                push_strict(&mut parsed, data, &format!("stream line {}", n + 1));
            }
            Some("progress") | Some("done") => {}
            Some("error") => {
                let msg = event.get("msg").or_else(|| event.get("message")).and_then(Value::as_str).unwrap_or("unknown error");
                return Err(format!("reviewer reported an error: {msg}"));
            }
            Some(other) => parsed.schema_problems.push(format!("stream line {}: unknown event type `{other}`", n + 1)),
            // A findings document on a line of its own, beside usage events.
            None if event.get("findings").is_some() => {
                let doc = parse_findings_document(&event).map_err(|e| format!("{at}: {e}"))?;
                parsed.findings.extend(doc.findings);
                parsed.schema_problems.extend(doc.schema_problems);
                if let Some(u) = doc.usage {
                    parsed.usage = Some(parsed.usage.map_or(u, |sum| sum.plus(u)));
                }
            }
            None => return Err(format!("stream line {}: event without `type`", n + 1)),
        }
    }
    Ok(parsed)
}

/// A finding from a tool that claims stet's schema: checked field by field, kept when usable.
fn push_strict(parsed: &mut Parsed, item: &Value, at: &str) {
    let finding = finding_from_value(item, true);
    for p in schema_problems(item) {
        // What the lenient read made of a value outside the closed sets, so nothing is
        // changed without saying so.
        let read_as = match (&finding, p.split_whitespace().next()) {
            (Some(f), Some("severity")) => format!("; read as `{}`", f.severity),
            (Some(f), Some("category")) => format!("; read as `{}`", f.category),
            _ => String::new(),
        };
        parsed.schema_problems.push(format!("{at}: {p}{read_as}"));
    }
    match finding {
        Some(f) => parsed.findings.push(f),
        None => parsed.schema_problems.push(format!("{at}: dropped, not usable as a finding")),
    }
}

/// The rules of `$defs/finding` in `schemas/reviewer-output.schema.json` that one finding
/// object breaks (A7): the missing required keys first, then one problem per field, in the
/// order severity, category, confidence, message, id, then the other fields by name.
pub fn schema_problems(item: &Value) -> Vec<String> {
    const FIELD_ORDER: [&str; 5] = ["severity", "category", "confidence", "message", "id"];
    let mut missing = Vec::new();
    let mut by_field: Vec<(usize, String, String)> = Vec::new();
    for violation in output_schema::validate("finding", item) {
        let Some(field) = violation.path.first() else {
            match violation.rule {
                Rule::Missing(key) => missing.push(format!("missing `{key}`")),
                Rule::Type(_) => return vec!["not an object".into()],
                _ => missing.push(violation.describe(Some(item))),
            }
            continue;
        };
        if by_field.iter().any(|(_, f, _)| f == field) {
            continue;
        }
        let value = item.get(field).unwrap_or(&Value::Null);
        let problem = match field.as_str() {
            "severity" => format!("severity {value} is not one of {}", Severity::ALL.map(Severity::as_str).join(", ")),
            "category" => format!("category {value} is not in stet's category set"),
            "confidence" => format!("confidence {value} is not a number in [{}, {}]", bound("minimum"), bound("maximum")),
            "message" => "message is empty or not a string".into(),
            "id" => "id is not 64 hex digits".into(),
            _ => violation.describe(output_schema::pointer(item, &violation.path)),
        };
        let rank = FIELD_ORDER.iter().position(|f| f == field).unwrap_or(FIELD_ORDER.len());
        by_field.push((rank, field.clone(), problem));
    }
    by_field.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    missing.extend(by_field.into_iter().map(|(_, _, p)| p));
    missing
}

/// The schema's `minimum` or `maximum` of a finding's confidence, as written.
fn bound(keyword: &str) -> String {
    output_schema::definition("finding")
        .ok()
        .and_then(|f| f["properties"]["confidence"][keyword].as_f64())
        .map(output_schema::number)
        .unwrap_or_else(|| "?".into())
}

/// Builds a finding from a JSON object. `strict` keeps the tool's own id when it has one;
/// otherwise (model output) the id is computed with stet's scheme. Unknown severities and
/// categories fall back to `info` / `maintainability` rather than losing the finding.
pub fn finding_from_value(item: &Value, strict: bool) -> Option<Finding> {
    let obj = item.as_object()?;
    let text = |k: &str| obj.get(k).and_then(Value::as_str).map(str::to_string);
    let int = |v: Option<&Value>| -> Option<u32> {
        v.and_then(|v| v.as_u64().or_else(|| v.as_f64().map(|f| f as u64)).or_else(|| v.as_str().and_then(|s| s.trim().parse().ok())))
            .map(|n| n.min(u32::MAX as u64) as u32)
    };
    let message = text("message").or_else(|| text("description")).or_else(|| text("issue"))?;
    if message.trim().is_empty() {
        return None;
    }
    let file = text("file").or_else(|| text("path")).unwrap_or_default();
    let mut line = int(obj.get("line")).unwrap_or(0);
    let range = obj.get("range").and_then(|r| {
        let start = int(r.get("start"))?;
        let end = int(r.get("end")).unwrap_or(start);
        Some(LineRange { start, end })
    });
    if line == 0 {
        if let Some(r) = range.filter(LineRange::is_valid) {
            line = r.start;
        }
    }
    let severity = text("severity").and_then(|s| Severity::parse_lenient(&s)).unwrap_or(Severity::Info);
    let category = text("category").and_then(|s| Category::parse_lenient(&s)).unwrap_or(Category::Maintainability);
    let confidence = obj
        .get("confidence")
        .and_then(|c| c.as_f64().or_else(|| c.as_str().and_then(|s| s.parse().ok())))
        .map(|c| if c > 1.0 && c <= 100.0 { c / 100.0 } else { c })
        .unwrap_or(1.0)
        .clamp(0.0, 1.0);
    let suggestion = text("suggestion").filter(|s| !s.trim().is_empty());
    let id = match text("id") {
        Some(id) if strict && !id.is_empty() => id,
        _ => stet_finding_id(&file, line, range, &collapse_whitespace(&message)),
    };
    Some(Finding {
        id,
        file,
        line,
        range,
        severity,
        category,
        confidence,
        message,
        suggestion,
        cursor_uri: text("cursor_uri"),
        evidence_lines: obj.get("evidence_lines").and_then(|v| serde_json::from_value(v.clone()).ok()),
    })
}

/// Extracts finding objects from model text: strips code fences and surrounding prose and
/// accepts `{"findings":[…]}`, a bare array, or one finding object.
pub fn extract_model_findings(text: &str) -> Result<Vec<Value>, String> {
    let body = strip_code_fence(text.trim());
    let value: Value = match serde_json::from_str(body) {
        Ok(v) => v,
        Err(first) => {
            let start = body.find(['{', '[']).ok_or_else(|| format!("no JSON in model output: {first}"))?;
            let end = body.rfind(['}', ']']).ok_or_else(|| format!("no JSON in model output: {first}"))?;
            if end < start {
                return Err(format!("no JSON in model output: {first}"));
            }
            serde_json::from_str(&body[start..=end]).map_err(|e| format!("model output is not valid JSON: {e}"))?
        }
    };
    Ok(match value {
        Value::Array(items) => items,
        Value::Object(ref obj) => match obj.get("findings") {
            Some(Value::Array(items)) => items.clone(),
            Some(Value::Null) | None if obj.contains_key("message") || obj.contains_key("description") => vec![value],
            Some(Value::Null) | None => Vec::new(),
            Some(_) => return Err("`findings` in model output is not an array".into()),
        },
        _ => return Err("model output is JSON but neither an object nor an array".into()),
    })
}

fn strip_code_fence(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else { return text };
    let rest = rest.split_once('\n').map(|(_, r)| r).unwrap_or("");
    rest.rsplit_once("```").map(|(body, _)| body).unwrap_or(rest).trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_findings_document_with_integer_confidence() {
        let out = r#"{"findings":[{"id":"09fd85503157675d43d1845f0ae7fa4c7fe470b22b46d49cad2b02d5c64f9457","file":"calc.py","line":4,"severity":"info","category":"maintainability","confidence":1,"message":"Dry-run placeholder (CI)"}]}"#;
        let parsed = parse_stet_output(out).expect("parses");
        assert_eq!(parsed.findings.len(), 1);
        assert_eq!(parsed.findings[0].id, "09fd85503157675d43d1845f0ae7fa4c7fe470b22b46d49cad2b02d5c64f9457");
        assert!(parsed.schema_problems.is_empty(), "{:?}", parsed.schema_problems);
    }

    #[test]
    fn reads_a_stream_with_keys_in_alphabetical_order() {
        let out = "{\"msg\":\"1 hunks to review\",\"type\":\"progress\"}\n{\"data\":{\"file\":\"a.go\",\"line\":3,\"severity\":\"warning\",\"category\":\"bug\",\"confidence\":0.5,\"message\":\"m\"},\"type\":\"finding\"}\n{\"type\":\"done\"}\n";
        let parsed = parse_stet_output(out).expect("parses");
        assert_eq!(parsed.findings.len(), 1);
        assert_eq!(parsed.findings[0].line, 3);
        assert_eq!(parsed.findings[0].id, stet_finding_id("a.go", 3, None, "m"));
    }

    #[test]
    fn usage_is_read_from_a_document_and_added_up_over_a_stream() {
        let usage = |p, c| Some(Usage { prompt_tokens: p, completion_tokens: c });
        let doc = r#"{"findings":[],"usage":{"prompt_tokens":120,"completion_tokens":30,"total_tokens":150}}"#;
        assert_eq!(parse_stet_output(doc).expect("parses").usage, usage(Some(120), Some(30)));
        let doc = r#"{"findings":[],"usage":{"input_tokens":7,"output_tokens":2}}"#;
        assert_eq!(parse_stet_output(doc).expect("parses").usage, usage(Some(7), Some(2)));
        assert_eq!(parse_stet_output(r#"{"findings":[]}"#).expect("parses").usage, None);
        let stream = concat!(
            "{\"msg\":\"2 hunks\",\"type\":\"progress\"}\n",
            "{\"data\":{\"prompt_tokens\":100,\"completion_tokens\":10},\"type\":\"usage\"}\n",
            "{\"input_tokens\":50,\"type\":\"usage\"}\n",
            "{\"type\":\"done\",\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}\n"
        );
        let parsed = parse_stet_output(stream).expect("parses");
        assert_eq!(parsed.usage, usage(Some(151), Some(11)));
        assert!(parsed.schema_problems.is_empty(), "a usage event is known: {:?}", parsed.schema_problems);
        // A findings document on its own line, then a usage event.
        let mixed = "{\"findings\":[{\"file\":\"a\",\"line\":1,\"severity\":\"info\",\"category\":\"style\",\"confidence\":1,\"message\":\"m\"}]}\n{\"type\":\"usage\",\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":4}}\n";
        let parsed = parse_stet_output(mixed).expect("parses");
        assert_eq!((parsed.findings.len(), parsed.usage), (1, usage(Some(9), Some(4))));
        let bad = parse_stet_output(r#"{"findings":[],"usage":{"prompt_tokens":-3}}"#).expect("parses");
        assert_eq!(bad.usage, None);
        assert!(bad.schema_problems.iter().any(|p| p.contains("usage.prompt_tokens")), "{:?}", bad.schema_problems);
    }

    #[test]
    fn schema_violations_are_reported_not_fatal() {
        let out = r#"{"findings":[{"file":"a","severity":"fatal","category":"bug","confidence":3,"message":"x"}]}"#;
        let parsed = parse_stet_output(out).expect("parses");
        assert_eq!(parsed.findings.len(), 1);
        assert_eq!(parsed.schema_problems.len(), 2, "{:?}", parsed.schema_problems);
    }

    /// Whether an output is valid under schemas/reviewer-output.schema.json as a whole: the
    /// document schema, or each NDJSON line against `$defs/event` (or the document schema).
    fn schema_accepts(output: &str) -> bool {
        use crate::reviewer::output_schema::validate;
        match serde_json::from_str::<Value>(output.trim()) {
            Ok(doc) if doc.get("findings").is_some() => validate("", &doc).is_empty(),
            _ => output.lines().filter(|l| !l.trim().is_empty()).all(|line| match serde_json::from_str::<Value>(line) {
                Ok(event) if event.get("type").is_none() => validate("", &event).is_empty(),
                Ok(event) => validate("event", &event).is_empty(),
                Err(_) => false,
            }),
        }
    }

    #[test]
    fn the_parser_accepts_exactly_what_the_schema_file_accepts() {
        let f = r#"{"file":"a.py","line":2,"severity":"info","category":"style","confidence":0.5,"message":"m"}"#;
        let cases: Vec<(String, bool)> = vec![
            (format!(r#"{{"findings":[{f}]}}"#), true),
            (format!(r#"{{"findings":[{f}],"usage":{{"prompt_tokens":3,"completion_tokens":null}},"extra":1}}"#), true),
            (
                format!("{{\"type\":\"progress\"}}\n{{\"type\":\"finding\",\"data\":{f}}}\n{{\"type\":\"usage\",\"input_tokens\":4}}\n{{\"type\":\"done\"}}\n"),
                true,
            ),
            (format!("{{\"findings\":[{f}]}}\n{{\"type\":\"usage\",\"usage\":{{\"output_tokens\":1}}}}\n"), true),
            (r#"{"findings":[{"file":"a","severity":"fatal","category":"bug","confidence":1,"message":"x"}]}"#.into(), false),
            (r#"{"findings":[{"file":"a","severity":"info","category":"bugs","confidence":1,"message":"x"}]}"#.into(), false),
            (r#"{"findings":[{"file":"a","severity":"info","category":"bug","confidence":1.5,"message":"x"}]}"#.into(), false),
            (r#"{"findings":[{"file":"a","severity":"info","category":"bug","confidence":1,"message":" "}]}"#.into(), false),
            (r#"{"findings":[{"file":"a","severity":"info","category":"bug","confidence":1,"message":"x","id":"abc"}]}"#.into(), false),
            (r#"{"findings":[{"file":"a","severity":"info","category":"bug","confidence":1,"message":"x","line":"3"}]}"#.into(), false),
            (r#"{"findings":[{"file":"a","severity":"info","category":"bug","confidence":1,"message":"x","range":{"start":0}}]}"#.into(), false),
            (r#"{"findings":[{"severity":"info","category":"bug","confidence":1,"message":"x"}]}"#.into(), false),
            (r#"{"findings":[],"usage":{"input_tokens":-1}}"#.into(), false),
            ("{\"type\":\"chatter\"}\n".into(), false),
        ];
        for (output, valid) in cases {
            assert_eq!(schema_accepts(&output), valid, "the schema on {output}");
            let parsed = parse_stet_output(&output).expect("parses");
            assert_eq!(parsed.schema_problems.is_empty(), valid, "the parser on {output}: {:?}", parsed.schema_problems);
        }
    }

    #[test]
    fn schema_problems_keep_their_words() {
        let item = serde_json::json!({"severity": "fatal", "category": 3, "confidence": "x", "message": "", "id": "z"});
        assert_eq!(
            schema_problems(&item),
            vec![
                "missing `file`",
                "severity \"fatal\" is not one of error, warning, info, nitpick",
                "category 3 is not in stet's category set",
                "confidence \"x\" is not a number in [0, 1]",
                "message is empty or not a string",
                "id is not 64 hex digits",
            ]
        );
        assert_eq!(schema_problems(&serde_json::json!("text")), vec!["not an object"]);
        let extra =
            serde_json::json!({"file": "a", "severity": "info", "category": "bug", "confidence": 1, "message": "m", "line": -1, "evidence_lines": ["x"]});
        assert_eq!(schema_problems(&extra), vec!["evidence_lines[0] \"x\" is not a whole number", "line -1 is below 0"]);
    }

    #[test]
    fn empty_output_is_no_findings_and_garbage_is_an_error() {
        assert!(parse_stet_output("  \n").expect("empty ok").findings.is_empty());
        assert!(parse_stet_output("Reviewing hunk 1/2").is_err());
    }

    /// An output that is not JSON is quoted: its first line, bounded, inert on a terminal.
    #[test]
    fn output_that_is_not_json_is_quoted() {
        let e = parse_stet_output("Traceback (most recent call last):\n  File \"x.py\"\n").expect_err("not JSON");
        assert!(e.starts_with("stream line 1: not JSON: "), "{e}");
        assert!(e.ends_with("; it reads `Traceback (most recent call last):`"), "{e}");
        let long = format!("\u{1b}[31m{}`x", "y".repeat(300));
        let e = parse_stet_output(&long).expect_err("not JSON");
        let quote = e.split("; it reads ").nth(1).expect("quoted");
        assert_eq!(quote, format!("`\u{fffd}[31m{}…`", "y".repeat(115)), "{e}");
        let e = parse_stet_output("{\"result\": \"ok\"}").expect_err("wrong shape");
        assert!(e.ends_with("; it printed `{\"result\": \"ok\"}`"), "{e}");
    }

    /// A severity or category outside the closed sets is a schema problem that says what it was
    /// read as, never a silent change.
    #[test]
    fn a_value_outside_the_closed_sets_says_what_it_was_read_as() {
        let out = r#"{"findings":[{"file":"a","line":1,"severity":"critical","category":"vibes","confidence":1,"message":"x"}]}"#;
        let parsed = parse_stet_output(out).expect("parses");
        assert_eq!(parsed.findings.len(), 1);
        assert_eq!(
            parsed.schema_problems,
            vec![
                "findings[0]: severity \"critical\" is not one of error, warning, info, nitpick; read as `error`",
                "findings[0]: category \"vibes\" is not in stet's category set; read as `maintainability`",
            ]
        );
    }

    #[test]
    fn model_output_shapes() {
        let fenced = "Here you go:\n```json\n{\"findings\":[{\"line\":2,\"message\":\"x\"}]}\n```";
        assert_eq!(extract_model_findings(fenced).expect("fenced").len(), 1);
        assert_eq!(extract_model_findings("[{\"message\":\"a\"},{\"message\":\"b\"}]").expect("array").len(), 2);
        assert_eq!(extract_model_findings("{\"message\":\"one\",\"line\":1}").expect("single").len(), 1);
        assert_eq!(extract_model_findings("{\"findings\":[]}").expect("empty").len(), 0);
        assert!(extract_model_findings("{\"findings\":[{\"mess").is_err());
    }
}
