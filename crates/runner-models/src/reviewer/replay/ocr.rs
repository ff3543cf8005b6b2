//! AACR-Bench's OCR-schema reviews (`format = "ocr"`): one JSON object per pull request, named
//! by its instance id (`OWNER__REPO@HEAD7.json`), as the benchmark's `evaluation/evaluate.py
//! --reviewer ocr` and its leaderboard's `grade.py` read them — `instance_id`, `ocr_exit_code`,
//! `duration_seconds`, `raw_output` and `review.comments[]` with `path`, `start_line`,
//! `end_line` and `content`.
//!
//! Read as those scorers read it: only `review.comments` counts (a review whose comments sit in
//! `raw_output` alone — a `content` or `start_line` key there — has none, and says so as a
//! schema problem); a comment that is not an
//! object, or whose `content` is empty once trimmed, is no comment (counted as
//! `ocr_empty_comments`); the message is the trimmed `content`; a missing end line is the start
//! line and the reverse, a reversed range is swapped. A comment with neither line has line 0
//! (no line: the benchmark's rule then checks its path alone), and so does one whose line is
//! not a line number (1 or more), with a schema problem. The path is kept as written (`""` when
//! missing). OCR comments carry no severity or category: each is `info`, `maintainability`.
//! The run's time is `duration_seconds`, its tokens `review.summary`'s when given; a non-zero
//! `ocr_exit_code` is counted (`ocr_exit_nonzero`). An `instance_id` other than the subject's is
//! an error: the capture is another pull request's.

use super::{finding, Replayed, DEFAULT_CATEGORY, DEFAULT_SEVERITY};
use runner_core::terminal::sanitize;
use serde_json::Value;

/// A number that is a whole number (`3` or `3.0`), as Python compares it.
fn whole(value: &Value) -> Option<i64> {
    value.as_i64().or_else(|| value.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15).map(|f| f as i64))
}

/// One OCR review file.
pub fn parse(text: &str, subject: &str) -> Result<Replayed, String> {
    let doc: Value = crate::subject::files::parse_json_last_wins(text).map_err(|e| format!("not JSON: {}", sanitize(&e.to_string())))?;
    let Some(obj) = doc.as_object() else {
        return Err("expected an OCR review: a JSON object with `review.comments`".into());
    };
    match obj.get("instance_id") {
        None | Some(Value::Null) => {}
        Some(Value::String(id)) if id == subject => {}
        Some(Value::String(id)) => return Err(format!("its `instance_id` is `{}`, not this subject's: the capture is another pull request's", sanitize(id))),
        Some(_) => return Err("`instance_id` is not text".into()),
    }
    let mut out = Replayed::default();
    if obj.get("ocr_exit_code").and_then(Value::as_i64).is_some_and(|code| code != 0) {
        out.counters.insert("ocr_exit_nonzero".into(), 1);
    }
    if let Some(reviewer) = obj.get("reviewer").and_then(Value::as_str) {
        out.provenance.insert("ocr_reviewer".into(), reviewer.to_string());
    }
    out.latency_ms = obj.get("duration_seconds").and_then(Value::as_f64).filter(|s| s.is_finite() && *s >= 0.0).map(|s| (s * 1000.0).round() as u64);
    let review = obj.get("review").and_then(Value::as_object);
    if let Some(summary) = review.and_then(|r| r.get("summary")).and_then(Value::as_object) {
        out.prompt_tokens = summary.get("input_tokens").and_then(Value::as_u64);
        out.completion_tokens = summary.get("output_tokens").and_then(Value::as_u64);
    }
    let comments: &[Value] = match review.and_then(|r| r.get("comments")) {
        None | Some(Value::Null) => &[],
        Some(Value::Array(items)) => items,
        Some(_) => {
            out.schema_problems.push("`review.comments` is not a list: no comments".into());
            &[]
        }
    };
    let mut empty = 0u64;
    for (i, comment) in comments.iter().enumerate() {
        let Some(c) = comment.as_object() else {
            out.schema_problems.push(format!("review.comments[{i}] is not an object: not a comment"));
            continue;
        };
        let content = match c.get("content") {
            None | Some(Value::Null) => "",
            Some(Value::String(s)) => s.trim(),
            Some(_) => {
                out.schema_problems.push(format!("review.comments[{i}].content is not text: not a comment"));
                continue;
            }
        };
        if content.is_empty() {
            empty += 1;
            continue;
        }
        let path = match c.get("path") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                out.schema_problems.push(format!("review.comments[{i}].path is not text ({other}): read as no path"));
                String::new()
            }
        };
        let mut line_of = |key: &str| match c.get(key) {
            None | Some(Value::Null) => None,
            Some(v) => match whole(v) {
                Some(n) => Some(n),
                None => {
                    out.schema_problems.push(format!("review.comments[{i}].{key} is not a whole number ({v}): read as missing"));
                    None
                }
            },
        };
        let (start, end) = (line_of("start_line"), line_of("end_line"));
        let lines = match (start, end) {
            (None, None) => None,
            (Some(a), None) | (None, Some(a)) => Some((a, a)),
            (Some(a), Some(b)) => Some((a.min(b), a.max(b))),
        };
        let (line, end_line) = match lines {
            None => (0, None),
            Some((a, b)) => match (u32::try_from(a).ok().filter(|a| *a >= 1), u32::try_from(b).ok()) {
                (Some(a), Some(b)) => (a, Some(b)),
                _ => {
                    out.schema_problems.push(format!("review.comments[{i}] names line {a}, not a line number: read as no line"));
                    (0, None)
                }
            },
        };
        out.findings.push(finding(path, line, end_line, content.to_string(), DEFAULT_SEVERITY, DEFAULT_CATEGORY, None));
    }
    if empty > 0 {
        out.counters.insert("ocr_empty_comments".into(), empty);
    }
    if out.findings.is_empty() && obj.get("raw_output").and_then(Value::as_str).is_some_and(holds_comments) {
        out.schema_problems.push(
            "`raw_output` holds comments but `review.comments` has none: the benchmark's scorers read `review.comments` only, so this review has no comment"
                .into(),
        );
    }
    Ok(out)
}

/// Whether a model's raw answer names a comment's `content` or `start_line` as a JSON key
/// (prose, a `<think>` block or a code fence around them kept them out of `review.comments`).
fn holds_comments(raw: &str) -> bool {
    ["\"content\"", "\"start_line\""].iter().any(|key| raw.match_indices(key).any(|(at, k)| raw[at + k.len()..].trim_start().starts_with(':')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_are_read_as_the_benchmarks_scorer_reads_them() {
        let text = r#"{"instance_id": "acme__w@a050e42", "reviewer": "ocr", "ocr_exit_code": 0, "duration_seconds": 12.5,
            "review": {"comments": [
                {"path": "a.go", "start_line": 10, "end_line": 12, "content": "  nil map write \n"},
                {"path": "b.go", "start_line": 30, "end_line": 22, "content": "reversed"},
                {"path": "c.go", "start_line": 7, "content": "start only"},
                {"path": null, "content": "no place"},
                {"path": "d.go", "start_line": 3, "end_line": 3, "content": "   "},
                {"path": "e.go", "start_line": 0, "end_line": 2, "content": "line zero"},
                "not an object"],
              "summary": {"input_tokens": 100, "output_tokens": 20}},
            "raw_output": "..."}"#;
        let r = parse(text, "acme__w@a050e42").expect("parses");
        type Place<'a> = (&'a str, u32, Option<(u32, u32)>, &'a str);
        let places: Vec<Place<'_>> = r.findings.iter().map(|f| (f.file.as_str(), f.line, f.range.map(|x| (x.start, x.end)), f.message.as_str())).collect();
        assert_eq!(
            places,
            [
                ("a.go", 10, Some((10, 12)), "nil map write"),
                ("b.go", 22, Some((22, 30)), "reversed"),
                ("c.go", 7, None, "start only"),
                ("", 0, None, "no place"),
                ("e.go", 0, None, "line zero"),
            ]
        );
        assert_eq!(r.counters.get("ocr_empty_comments"), Some(&1));
        assert_eq!(r.counters.get("ocr_exit_nonzero"), None);
        assert_eq!((r.latency_ms, r.prompt_tokens, r.completion_tokens), (Some(12_500), Some(100), Some(20)));
        assert_eq!(r.schema_problems.len(), 2, "line 0 and the string: {:?}", r.schema_problems);
        assert_eq!(r.provenance.get("ocr_reviewer").map(String::as_str), Some("ocr"));
    }

    #[test]
    fn a_failed_review_has_no_comments_and_one_held_in_raw_output_says_so() {
        let failed = r#"{"instance_id": "x@1234567", "ocr_exit_code": 1, "review": {"comments": []}, "raw_output": "", "stderr": "500"}"#;
        let r = parse(failed, "x@1234567").expect("parses");
        assert!(r.findings.is_empty() && r.schema_problems.is_empty());
        assert_eq!(r.counters.get("ocr_exit_nonzero"), Some(&1));
        let held = r#"{"instance_id": "x@1234567", "ocr_exit_code": 0, "review": {"comments": []}, "raw_output": "<think>x</think>```json\n[{\"path\": \"a\", \"content\" : \"b\"}]\n```"}"#;
        let r = parse(held, "x@1234567").expect("parses");
        assert!(r.findings.is_empty());
        assert!(r.schema_problems[0].contains("`raw_output` holds comments"), "{:?}", r.schema_problems);
        let none = r#"{"instance_id": "x@1234567", "review": {"comments": []}, "raw_output": "{\"comments\":[]} and the word \"content\" in prose"}"#;
        assert!(parse(none, "x@1234567").expect("parses").schema_problems.is_empty(), "an empty answer, or the word in prose, is no comment held back");
        assert!(parse(r#"{"review": null}"#, "x@1234567").expect("no review").findings.is_empty());
    }

    #[test]
    fn another_pull_requests_capture_or_a_malformed_file_is_an_error() {
        let e = parse(r#"{"instance_id": "other@1234567", "review": {"comments": []}}"#, "x@1234567").expect_err("another subject");
        assert!(e.contains("`other@1234567`"), "{e}");
        assert!(parse("[]", "x").expect_err("not an object").contains("JSON object"));
        assert!(parse("{", "x").expect_err("not JSON").starts_with("not JSON"));
    }
}
