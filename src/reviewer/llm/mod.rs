//! LLM reviewers: runner reviews diffs itself through Ollama's native API or an
//! OpenAI-compatible server.

use super::{ReviewError, ReviewJob, ReviewOutput, Reviewer};
use crate::manifest::TableReader;
use crate::plan::Cell;
use futures::future::BoxFuture;
use std::collections::BTreeSet;
use std::path::Path;

/// Which wire protocol a model server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Ollama,
    OpenAi,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ollama => "ollama",
            Self::OpenAi => "openai",
        }
    }
}

#[derive(Debug, Clone)]
pub struct LlmSpec {
    pub protocol: Protocol,
}

/// Reads an `ollama` or `openai` `[reviewer]` table.
pub fn read_spec(t: &TableReader<'_, '_>, kind: &str, _axes: &BTreeSet<String>, _base_dir: &Path) -> Option<LlmSpec> {
    let protocol = if kind == "ollama" { Protocol::Ollama } else { Protocol::OpenAi };
    t.problems().push(t.span(), format!("reviewer kind `{kind}` is not available in this build"));
    Some(LlmSpec { protocol })
}

pub struct LlmReviewer {
    spec: LlmSpec,
}

impl LlmReviewer {
    pub fn new(spec: LlmSpec) -> Result<Self, ReviewError> {
        Ok(Self { spec })
    }
}

impl Reviewer for LlmReviewer {
    fn kind(&self) -> &'static str {
        self.spec.protocol.as_str()
    }

    fn fingerprint(&self, _cell: &Cell) -> serde_json::Value {
        serde_json::json!({ "protocol": self.spec.protocol.as_str() })
    }

    fn review<'a>(&'a self, _job: &'a ReviewJob) -> BoxFuture<'a, Result<ReviewOutput, ReviewError>> {
        Box::pin(async move { Err(ReviewError::failed("LLM reviewers are not available in this build")) })
    }
}
