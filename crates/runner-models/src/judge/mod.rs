//! RQS v2's model-based measures: rubric judges over blind findings, pseudo-reference claims and embeddings.

pub mod blind;
pub mod claims;
pub mod client;
pub mod embed;
pub mod rubric;
pub mod spec;

pub use blind::{blind_items, BlindItem};
pub use claims::{ClaimsAnswer, ClaimsGenerator};
pub use client::{JudgeError, Tokens};
pub use rubric::{Judge, Judgement, Rubric, Verdict};
pub use spec::{read_claims, read_judges, ClaimsSpec, JudgeSpec, ModelSettings};
