//! One model request for a judge or the claims generator, through the LLM reviewer's
//! transport (per-endpoint limits, retries with backoff, fail-fast on unknown models and
//! unreachable servers) and wire protocols (Ollama `format`, OpenAI `response_format`).

use super::spec::ModelSettings;
use crate::reviewer::llm::wire::{Completion, Message, Sampling};
use crate::reviewer::llm::{LlmReviewer, Params};
use crate::reviewer::ReviewError;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Instant;

/// Why a judge or the claims generator gave no answer. A malformed answer is not an error
/// (it is retried, then recorded as unparseable); these are.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum JudgeError {
    /// No base URL could be reached, the model is not served there, or the key was refused:
    /// nothing to gain from asking again.
    #[error("model server unreachable: {0}")]
    Unreachable(String),
    /// The server answered with an error that retries did not clear, or a template failed.
    #[error("{0}")]
    Failed(String),
}

impl From<ReviewError> for JudgeError {
    fn from(e: ReviewError) -> Self {
        match e {
            ReviewError::Unreachable { message, .. } => Self::Unreachable(message),
            other => Self::Failed(other.to_string()),
        }
    }
}

/// Tokens a model read and wrote, summed over requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    pub prompt: u64,
    pub completion: u64,
}

impl Tokens {
    fn add(&mut self, c: &Completion) {
        self.prompt += c.prompt_tokens.unwrap_or(0);
        self.completion += c.completion_tokens.unwrap_or(0);
    }
}

/// One answer: the completion, its cost, and how many HTTP requests it took.
pub struct Answer {
    pub completion: Completion,
    pub tokens: Tokens,
    /// The request's own time, without waiting for a free endpoint.
    pub seconds: f64,
    pub requests: u32,
}

/// A model reached through the LLM reviewer's machinery.
pub struct ModelClient {
    settings: ModelSettings,
    inner: LlmReviewer,
}

impl ModelClient {
    pub fn new(settings: &ModelSettings) -> Result<Self, JudgeError> {
        Ok(Self { settings: settings.clone(), inner: LlmReviewer::new(settings.llm_spec())? })
    }

    /// Asks once (transport retries aside) with `seed`.
    pub async fn ask(&self, messages: &[Message], schema: Option<&Value>, seed: u64) -> Result<Answer, JudgeError> {
        let sampling = Sampling { temperature: self.settings.temperature, seed: Some(seed), max_tokens: self.settings.max_tokens, num_ctx: None };
        let started = Instant::now();
        let (completion, requests, waited) = self.inner.complete(&self.settings.model, messages, schema, &sampling).await?;
        let seconds = started.elapsed().saturating_sub(waited).as_secs_f64();
        let mut tokens = Tokens::default();
        tokens.add(&completion);
        Ok(Answer { completion, tokens, seconds, requests })
    }

    /// The model's provenance: sampling, `models-json` (file, sha256, quantization) and what
    /// the server reports, checked against each other.
    pub async fn provenance(&self) -> Result<BTreeMap<String, Value>, JudgeError> {
        let p = Params {
            model: self.settings.model.clone(),
            temperature: self.settings.temperature,
            seed: Some(self.settings.seed),
            base_seed: Some(self.settings.seed),
            rag_max_definitions: 0,
            max_tokens: None,
        };
        let mut prov = self.inner.served_provenance(&p).await?;
        prov.insert("family".into(), Value::from(self.settings.family.clone()));
        Ok(prov)
    }
}

/// `blake3:` and the first 16 hex digits of the text's hash, as the LLM reviewer's keys.
pub fn short_hash(text: &str) -> String {
    let hex = blake3::hash(text.as_bytes()).to_hex();
    format!("blake3:{}", &hex[..16])
}
