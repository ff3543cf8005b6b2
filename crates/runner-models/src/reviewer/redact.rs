//! Redaction of the secret values runner knows (values of `pass-env` variables, of `${VAR}`
//! expansions and of API-key variables) from everything a run leaves behind.
//!
//! The engine applies one [`Redactor`] to every outcome as it enters the engine — findings,
//! raw output, provenance, attachments, error messages and stderr tails — so failure records,
//! findings objects, raw outputs, the execution log and the reports all see redacted text.

use super::{ReviewError, ReviewOutput};
use crate::finding::Finding;

/// What a secret is replaced with.
pub const REDACTED: &str = "<redacted>";

/// Shorter values are not redacted: replacing `1` or `on` everywhere would mangle every text.
pub const MIN_SECRET_LEN: usize = 4;

/// A set of secret values, longest first (so a secret that contains another is removed whole).
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    secrets: Vec<String>,
}

impl Redactor {
    pub fn new(values: impl IntoIterator<Item = String>) -> Self {
        let mut secrets: Vec<String> = values.into_iter().filter(|v| v.len() >= MIN_SECRET_LEN).collect();
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        Self { secrets }
    }

    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    pub fn text(&self, text: &str) -> String {
        let mut out = text.to_string();
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), REDACTED);
            }
        }
        out
    }

    fn in_place(&self, text: &mut String) {
        if self.secrets.iter().any(|s| text.contains(s.as_str())) {
            *text = self.text(text);
        }
    }

    fn json(&self, value: &mut serde_json::Value) {
        match value {
            serde_json::Value::String(s) => self.in_place(s),
            serde_json::Value::Array(items) => items.iter_mut().for_each(|v| self.json(v)),
            serde_json::Value::Object(map) => map.values_mut().for_each(|v| self.json(v)),
            _ => {}
        }
    }

    fn finding(&self, f: &mut Finding) {
        self.in_place(&mut f.message);
        self.in_place(&mut f.file);
        if let Some(s) = f.suggestion.as_mut() {
            self.in_place(s);
        }
        if let Some(s) = f.cursor_uri.as_mut() {
            self.in_place(s);
        }
    }

    /// Redacts a successful run's output everywhere it holds text.
    pub fn output(&self, mut output: ReviewOutput) -> ReviewOutput {
        if self.is_empty() {
            return output;
        }
        output.findings.iter_mut().for_each(|f| self.finding(f));
        self.in_place(&mut output.raw);
        output.provenance.values_mut().for_each(|v| self.json(v));
        output.schema_problems.iter_mut().for_each(|p| self.in_place(p));
        output.attachments.values_mut().for_each(|a| self.in_place(a));
        output
    }

    /// Redacts a failure's message and stderr tail.
    pub fn error(&self, error: ReviewError) -> ReviewError {
        match error {
            ReviewError::Unreachable { message, stderr_tail } => {
                ReviewError::Unreachable { message: self.text(&message), stderr_tail: self.text(&stderr_tail) }
            }
            ReviewError::Failed { message, stderr_tail } => ReviewError::Failed { message: self.text(&message), stderr_tail: self.text(&stderr_tail) },
            other => other,
        }
    }
}

/// The names of the variables a `${VAR}` / `${VAR:-default}` text reads.
pub fn env_references(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else { break };
        let inner = &after[..end];
        let name = inner.split(":-").next().unwrap_or_default();
        if !name.is_empty() {
            names.push(name.to_string());
        }
        rest = &after[end + 1..];
    }
    names
}

/// The secret parts of a value expanded into a URL through `${VAR}`: the whole value, unless
/// it is a plain address (`scheme://host[:port][/path]`, no credentials, no query), which
/// error messages must still be able to name; an address's `user:password@` part is secret.
pub fn secret_parts_of_url_value(value: &str) -> Vec<String> {
    let Some((scheme, rest)) = value.split_once("://") else { return vec![value.to_string()] };
    if scheme.is_empty() || !scheme.chars().all(|c| c.is_ascii_alphanumeric() || c == '+') {
        return vec![value.to_string()];
    }
    if rest.contains('?') || rest.contains('#') {
        return vec![value.to_string()];
    }
    let authority = rest.split('/').next().unwrap_or_default();
    match authority.rsplit_once('@') {
        Some((userinfo, _)) => {
            let mut parts = vec![userinfo.to_string()];
            if let Some((_, password)) = userinfo.split_once(':') {
                parts.push(password.to_string());
            }
            parts
        }
        None => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_replaced_longest_first_and_short_values_are_kept() {
        let r = Redactor::new(["abcd".to_string(), "abcdef-key".to_string(), "1".to_string()]);
        assert_eq!(r.text("x abcdef-key y abcd z 1"), "x <redacted> y <redacted> z 1");
    }

    #[test]
    fn outputs_and_errors_are_redacted_in_every_text_field() {
        let r = Redactor::new(["sk-live-123".to_string()]);
        let mut out = ReviewOutput { raw: "raw sk-live-123".into(), ..ReviewOutput::default() };
        out.provenance.insert("server".into(), serde_json::json!({"error": ["key sk-live-123"]}));
        out.attachments.insert("history.jsonl".into(), "{\"k\":\"sk-live-123\"}".into());
        let out = r.output(out);
        assert!(!format!("{:?}", out).contains("sk-live-123"), "{out:?}");
        let e = r.error(ReviewError::Failed { message: "bad key sk-live-123".into(), stderr_tail: "sk-live-123".into() });
        assert!(!format!("{e:?}").contains("sk-live-123"));
    }

    #[test]
    fn env_references_and_url_values() {
        assert_eq!(env_references("${A}/v1?k=${B:-x}"), vec!["A", "B"]);
        assert!(secret_parts_of_url_value("http://127.0.0.1:8080/v1").is_empty());
        assert_eq!(secret_parts_of_url_value("https://u:pw123@h/v1"), vec!["u:pw123", "pw123"]);
        assert_eq!(secret_parts_of_url_value("sk-123456"), vec!["sk-123456"]);
        assert_eq!(secret_parts_of_url_value("http://h/v1?key=abc"), vec!["http://h/v1?key=abc"]);
    }
}
