//! The pseudo-references' claims, in the spirit of CRScore (arXiv 2409.19801): a model is
//! shown the diff, its removed lines and its added lines, and asked for two sections, a
//! "Summary of changes" and "Implications", each as flat numbered points
//! (`templates/prompts/claims.hbs`). This module asks and returns the answer as written;
//! `crate::text::parse_claims` splits it into one claim per point.
//!
//! Like CRScore, the diff and the line lists are cut before they reach the prompt: at most
//! [`DIFF_MAX_CHARS`] characters of diff and [`LINES_MAX_CHARS`] of each line list. The answer
//! is not schema-constrained (it is prose); one cut at `max-tokens` is returned with
//! `truncated` set, for the caller to decide.

use super::client::{short_hash, JudgeError, ModelClient, Tokens};
use super::spec::ClaimsSpec;
use crate::reviewer::llm::prompt::render_template;
use crate::reviewer::llm::wire::Message;
use crate::subject::diff::parse_unified_diff;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Version of the prompt's inputs (what is cut, how lines are listed); the template's text
/// is hashed into the fingerprint too.
pub const CLAIMS_PROMPT_VERSION: &str = "claims-2";
pub const DIFF_MAX_CHARS: usize = 3000;
pub const LINES_MAX_CHARS: usize = 1000;

/// The claims generator's answer, unparsed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimsAnswer {
    pub raw: String,
    pub tokens: Tokens,
    pub seconds: f64,
    /// The model stopped at `max-tokens`: the last point may be cut.
    pub truncated: bool,
    /// HTTP requests, transport retries included.
    pub requests: u32,
}

pub struct ClaimsGenerator {
    spec: ClaimsSpec,
    client: ModelClient,
}

/// The first `max` characters of `text`.
fn head(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}

/// The removed and added lines of a diff (without their `-`/`+`), one per line.
pub fn changed_lines(diff: &str) -> (String, String) {
    let files = parse_unified_diff(diff);
    let (mut removed, mut added) = (Vec::new(), Vec::new());
    for file in &files {
        for h in &file.hunks {
            for line in h.text.lines().skip(1) {
                if let Some(rest) = line.strip_prefix('-') {
                    removed.push(rest);
                } else if let Some(rest) = line.strip_prefix('+') {
                    added.push(rest);
                }
            }
        }
    }
    (removed.join("\n"), added.join("\n"))
}

impl ClaimsGenerator {
    pub fn new(spec: ClaimsSpec) -> Result<Self, JudgeError> {
        Ok(Self { client: ModelClient::new(&spec.settings)?, spec })
    }

    pub fn spec(&self) -> &ClaimsSpec {
        &self.spec
    }

    /// The prompt for `diff`: the template over `diff`, `removed` and `added` (each cut, see
    /// the module doc; an empty list is left out by the template).
    pub fn prompt(&self, diff: &str) -> Result<String, JudgeError> {
        let (removed, added) = changed_lines(diff);
        let vars = json!({
            "diff": head(diff.trim_end(), DIFF_MAX_CHARS),
            "removed": head(&removed, LINES_MAX_CHARS),
            "added": head(&added, LINES_MAX_CHARS),
        });
        render_template(&format!("claims prompt `{}`", self.spec.prompt.name), &self.spec.prompt.text, &vars).map_err(JudgeError::Failed)
    }

    /// Asks the model for the claims about `diff`.
    pub async fn generate(&self, diff: &str) -> Result<ClaimsAnswer, JudgeError> {
        let messages = [Message { role: "user", content: self.prompt(diff)? }];
        let answer = self.client.ask(&messages, None, self.spec.settings.seed).await?;
        Ok(ClaimsAnswer {
            truncated: answer.completion.truncated(),
            raw: answer.completion.text,
            tokens: answer.tokens,
            seconds: answer.seconds,
            requests: answer.requests,
        })
    }

    /// Everything that changes the answer: protocol, model, family, temperature, seed, max
    /// tokens, the prompt's text (hashed) and inputs' version; not URLs, keys or limits.
    pub fn fingerprint(&self) -> Value {
        let s = &self.spec.settings;
        json!({
            "stage": "claims",
            "protocol": s.provider.as_str(),
            "model": s.model,
            "family": s.family,
            "temperature": s.temperature,
            "seed": s.seed,
            "max_tokens": s.max_tokens,
            "prompt": short_hash(&self.spec.prompt.text),
            "inputs": CLAIMS_PROMPT_VERSION,
        })
    }

    /// The claims model's provenance, as [`super::rubric::Judge::provenance`].
    pub async fn provenance(&self) -> Result<BTreeMap<String, Value>, JudgeError> {
        self.client.provenance().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::spec::ModelSettings;
    use crate::reviewer::llm::Protocol;

    const DIFF: &str =
        "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def div(a, b):\n-    return a / b\n+    return a // b\n";

    fn generator(f: impl FnOnce(&mut ClaimsSpec)) -> ClaimsGenerator {
        let mut spec = ClaimsSpec::new(ModelSettings::new(Protocol::OpenAi, "http://127.0.0.1:9/v1", "q", "qwen"));
        f(&mut spec);
        ClaimsGenerator::new(spec).expect("generator")
    }

    #[test]
    fn the_prompt_asks_for_both_sections_over_the_diff_and_its_lines() {
        let p = generator(|_| {}).prompt(DIFF).expect("renders");
        assert!(p.contains("\"Summary of changes:\"") && p.contains("\"Implications:\"") && p.contains("numbered points"), "{p}");
        assert!(p.contains("Git diff:\ndiff --git a/calc.py b/calc.py"), "{p}");
        assert!(p.contains("Lines removed:\n    return a / b") && p.contains("Lines added:\n    return a // b"), "{p}");
        let only_added = generator(|_| {}).prompt("diff --git a/n.py b/n.py\n--- /dev/null\n+++ b/n.py\n@@ -0,0 +1 @@\n+x = 1\n").expect("renders");
        assert!(!only_added.contains("Lines removed") && only_added.contains("Lines added:\nx = 1"), "{only_added}");
        let long = format!("{DIFF}{}", "+x\n".repeat(5000));
        assert!(generator(|_| {}).prompt(&long).expect("renders").len() < DIFF_MAX_CHARS + 2 * LINES_MAX_CHARS + 2000);
    }

    #[test]
    fn fingerprint_follows_the_prompt_and_sampling_only() {
        let base = generator(|_| {}).fingerprint();
        assert_eq!((base["stage"].as_str(), base["max_tokens"].as_u64()), (Some("claims"), Some(1024)));
        assert_ne!(generator(|s| s.prompt.text.push('!')).fingerprint(), base);
        assert_ne!(generator(|s| s.settings.seed = 3).fingerprint(), base);
        assert_eq!(generator(|s| s.settings.base_urls = vec!["http://other:1/v1".into()]).fingerprint(), base);
    }
}
