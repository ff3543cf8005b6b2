//! Reading findings out of reviewer output: stet's `{"findings":[…]}`, its NDJSON stream,
//! and the looser shapes models write (code fences, a bare array, a single object).
//!
//! Token usage, where a reviewer states it in its output: a `usage` object beside `findings`,
//! or in an NDJSON stream a `{"type":"usage",…}` event (its counts at the top level, under
//! `data` or under `usage`) or a `usage` object on any other event. Counts are named
//! `prompt_tokens`/`completion_tokens` (OpenAI's chat completions) or
//! `input_tokens`/`output_tokens` (OpenAI's responses, Anthropic); the usages of a stream's
//! events add up (each is one request's).

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
        let obj = value.as_object().ok_or("`usage` is not an object")?;
        let count = |names: [&str; 2]| -> Result<Option<u64>, String> {
            match names.iter().find_map(|n| obj.get(*n).map(|v| (*n, v))) {
                None | Some((_, Value::Null)) => Ok(None),
                Some((name, v)) => v.as_u64().map(Some).ok_or_else(|| format!("`usage.{name}` is not a whole number of tokens: {v}")),
            }
        };
        let usage = Self { prompt_tokens: count(["prompt_tokens", "input_tokens"])?, completion_tokens: count(["completion_tokens", "output_tokens"])? };
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
        return Err("expected `{\"findings\":[…]}` or an NDJSON stream of events".into());
    }
    parse_stream(trimmed)
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
        let event: Value = serde_json::from_str(line).map_err(|e| format!("stream line {}: not JSON: {e}", n + 1))?;
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
    let problems = schema_problems(item);
    for p in &problems {
        parsed.schema_problems.push(format!("{at}: {p}"));
    }
    match finding_from_value(item, true) {
        Some(f) => parsed.findings.push(f),
        None => parsed.schema_problems.push(format!("{at}: dropped, not usable as a finding")),
    }
}

/// stet's schema rules for one finding object (A7).
pub fn schema_problems(item: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let Some(obj) = item.as_object() else {
        return vec!["not an object".into()];
    };
    for key in ["file", "severity", "category", "confidence", "message"] {
        if !obj.contains_key(key) {
            out.push(format!("missing `{key}`"));
        }
    }
    if let Some(s) = obj.get("severity") {
        if !s.as_str().is_some_and(|s| Severity::ALL.iter().any(|v| v.as_str() == s)) {
            out.push(format!("severity {s} is not one of error, warning, info, nitpick"));
        }
    }
    if let Some(c) = obj.get("category") {
        if !c.as_str().is_some_and(|s| Category::ALL.iter().any(|v| v.as_str() == s)) {
            out.push(format!("category {c} is not in stet's category set"));
        }
    }
    if let Some(c) = obj.get("confidence") {
        if !c.as_f64().is_some_and(|f| (0.0..=1.0).contains(&f)) {
            out.push(format!("confidence {c} is not a number in [0, 1]"));
        }
    }
    if let Some(m) = obj.get("message") {
        if m.as_str().is_none_or(|m| m.trim().is_empty()) {
            out.push("message is empty or not a string".into());
        }
    }
    if let Some(id) = obj.get("id") {
        if !id.as_str().is_some_and(|s| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())) {
            out.push("id is not 64 hex digits".into());
        }
    }
    out
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

    #[test]
    fn empty_output_is_no_findings_and_garbage_is_an_error() {
        assert!(parse_stet_output("  \n").expect("empty ok").findings.is_empty());
        assert!(parse_stet_output("Reviewing hunk 1/2").is_err());
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
