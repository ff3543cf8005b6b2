//! The scoring stages' JSON, typed per stage: what a call carries beside its key (its
//! payload), the parts of its key a call reads back when it runs, and what each stage's answer
//! holds. The engine stores and hands back JSON (it names no stage); this is the one place a
//! stage's JSON is written and read, so no field is looked up by a string anywhere else.
//!
//! Answers are read leniently (a missing field takes its default), since the cache holds
//! answers written by earlier versions; keys are built from the same values as before, so no
//! cache key changes.

use crate::analysis::rqs::metric::{StageCost, Vote};
use crate::finding::Finding;
use crate::judge::rubric::Verdict;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Reads a stage's JSON as `T` without copying it; `None` when it is not of that shape.
pub(crate) fn read<'a, T: Deserialize<'a>>(value: &'a Value) -> Option<T> {
    T::deserialize(value).ok()
}

/// Writes a stage's JSON (a map's keys sorted, as `json!` writes them).
pub(crate) fn write<T: Serialize>(value: &T) -> Result<Value, String> {
    serde_json::to_value(value).map_err(|e| e.to_string())
}

/// A `judge` call's payload: which of the run's findings it judges, under which rubric, and the
/// finding as shown.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct JudgeCall {
    pub finding: usize,
    pub rubric: String,
    pub shown: Finding,
    /// Which of the judge's samples asks (from 0; not written for the first).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sample: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// A `match` call's payload: an oracle finding and the report it is paired with, or (`golden`)
/// an oracle finding a replayed judge decided on by itself.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct MatchCall {
    pub oracle: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub golden: bool,
    /// Which of the judge's samples asks (from 0; not written for the first).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sample: u32,
}

/// An `embed` call's payload: a review's sentences, or a subject's pseudo-references (its
/// claims, then its smells).
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "of", rename_all = "lowercase")]
pub(crate) enum EmbedCall {
    Review,
    References { claims: usize, smells: usize },
}

/// The key of a call that asks about texts (a same-issue pair, an embedding batch): the texts,
/// in the order asked.
#[derive(Debug, Deserialize)]
pub(crate) struct TextsKey {
    #[serde(default)]
    pub texts: Vec<String>,
}

/// The key of a replayed judge's call: the reviewer whose review it read and the oracle
/// finding it decided on.
#[derive(Debug, Deserialize)]
pub(crate) struct ReplayKey {
    pub tool: String,
    pub golden: String,
}

/// Tokens as an answer records them: a total, or its parts (`prompt`, `completion`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(crate) enum Tokens {
    Total(u64),
    Parts(std::collections::BTreeMap<String, Value>),
    Other(serde::de::IgnoredAny),
}

impl Default for Tokens {
    fn default() -> Self {
        Self::Total(0)
    }
}

impl Tokens {
    fn total(&self) -> u64 {
        match self {
            Self::Total(n) => *n,
            Self::Parts(parts) => parts.values().filter_map(Value::as_u64).sum(),
            Self::Other(_) => 0,
        }
    }
}

/// What every model answer records of its cost.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Metered {
    #[serde(default)]
    pub tokens: Tokens,
    #[serde(default)]
    pub seconds: Option<Value>,
}

impl Metered {
    pub(crate) fn of(value: &Value) -> Self {
        read(value).unwrap_or_default()
    }

    pub(crate) fn cost(&self) -> StageCost {
        StageCost { tokens: self.tokens.total(), seconds: self.seconds.as_ref().and_then(Value::as_f64).unwrap_or(0.0) }
    }
}

/// A `claims` answer: the claims parsed from the model's raw answer.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ClaimsAnswer {
    #[serde(default)]
    pub claims: Vec<String>,
    #[serde(default)]
    pub raw: String,
    #[serde(default)]
    pub truncated: bool,
    #[serde(default)]
    pub tokens: u64,
    #[serde(default)]
    pub seconds: f64,
}

/// A `smells` answer: the analyzers' smells, their texts (what is embedded), and the analyzers'
/// identity.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct SmellsAnswer<S> {
    #[serde(default)]
    pub smells: Vec<S>,
    #[serde(default)]
    pub texts: Vec<String>,
    #[serde(default)]
    pub analyzers: Value,
}

/// An `embed` answer: the vectors as stored (see `scoring::encode_vectors`).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct EmbedAnswer {
    #[serde(default)]
    pub vectors: Value,
    #[serde(default)]
    pub tokens: u64,
    #[serde(default)]
    pub seconds: f64,
}

/// A `judge` or `match` answer, as far as a vote reads it: its verdict, and (a replayed
/// judge's) the false positives it counted in the review.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct VerdictAnswer {
    #[serde(default)]
    pub verdict: Option<Value>,
    #[serde(default)]
    pub false_positives: Option<u64>,
}

impl VerdictAnswer {
    pub(crate) fn of(value: &Value) -> Self {
        read(value).unwrap_or_default()
    }

    /// The vote: yes or no, an answer that could not be read, or none.
    pub(crate) fn vote(&self) -> Vote {
        match self.verdict.as_ref().and_then(Value::as_str) {
            Some(v) if v == Verdict::Yes.as_str() => Vote::Yes,
            Some(v) if v == Verdict::No.as_str() => Vote::No,
            Some(_) => Vote::Unparseable,
            None => Vote::Absent,
        }
    }
}

/// A replayed judge's answer to a golden comment it decided on: yes, no, or null where it left
/// it unlabelled, with the candidate it matched and its false positives in that review.
#[derive(Debug, Serialize)]
pub(crate) struct ReplayedAnswer<'a> {
    pub verdict: Option<&'static str>,
    pub candidate: Option<&'a str>,
    pub false_positives: usize,
    pub replayed: &'a str,
}

/// A replayed judge's answer to a golden comment its file does not mention.
#[derive(Debug, Serialize)]
pub(crate) struct NotReplayed<'a> {
    pub verdict: Option<&'static str>,
    pub replayed: &'a str,
}

/// The key of a `smells` answer: the subject's content identity and the analyzers' identity.
#[derive(Debug, Deserialize)]
pub(crate) struct SmellsKey {
    pub subject: String,
    pub analyzers: Value,
}

/// A τ calibration file (`runner crscore --calibrate`): τ, the embedder it was calibrated for,
/// and what it was calibrated on.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct TauCalibration {
    #[serde(default)]
    pub tau: Option<f64>,
    #[serde(default)]
    pub embedder: Value,
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub calibration: Value,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn payloads_are_written_as_the_engine_has_always_carried_them() {
        let finding: Finding = serde_json::from_value(json!({
            "id": "f1", "file": "a.py", "line": 3, "severity": "warning", "category": "bug", "confidence": 0.5, "message": "m"
        }))
        .expect("a finding");
        let shown = serde_json::to_value(&finding).expect("json");
        assert_eq!(
            write(&JudgeCall { finding: 2, rubric: "validity".into(), shown: finding, sample: 0 }).ok(),
            Some(json!({"finding": 2, "rubric": "validity", "shown": shown}))
        );
        assert_eq!(write(&MatchCall { oracle: "o".into(), report: None, golden: true, sample: 0 }).ok(), Some(json!({"oracle": "o", "golden": true})));
        assert_eq!(
            write(&MatchCall { oracle: "o".into(), report: Some("r".into()), golden: false, sample: 0 }).ok(),
            Some(json!({"oracle": "o", "report": "r"}))
        );
        assert_eq!(write(&EmbedCall::Review).ok(), Some(json!({"of": "review"})));
        assert_eq!(write(&EmbedCall::References { claims: 1, smells: 2 }).ok(), Some(json!({"of": "references", "claims": 1, "smells": 2})));
        let back: Option<MatchCall> = read(&json!({"oracle": "o", "golden": true}));
        assert!(back.is_some_and(|m| m.golden && m.report.is_none()));
    }

    #[test]
    fn answers_of_every_shape_the_cache_holds_are_read() {
        // A judge's tokens are parts; a claims or embedding answer's a total.
        assert_eq!(Metered::of(&json!({"tokens": {"prompt": 3, "completion": 4}, "seconds": 0.5})).cost().tokens, 7);
        assert_eq!(Metered::of(&json!({"tokens": 5})).cost().tokens, 5);
        assert_eq!(Metered::of(&json!({"tokens": "many", "seconds": 2.0})).cost().seconds, 2.0);
        assert_eq!(Metered::of(&json!(null)).cost().tokens, 0);
        assert_eq!(VerdictAnswer::of(&json!({"verdict": "yes"})).vote(), Vote::Yes);
        assert_eq!(VerdictAnswer::of(&json!({"verdict": "no"})).vote(), Vote::No);
        assert_eq!(VerdictAnswer::of(&json!({"verdict": "unparseable"})).vote(), Vote::Unparseable);
        assert_eq!(VerdictAnswer::of(&json!({"verdict": null, "replayed": "j"})).vote(), Vote::Absent);
        assert_eq!(VerdictAnswer::of(&json!({"verdict": "no", "false_positives": 3})).false_positives, Some(3));
        let claims: Option<ClaimsAnswer> = read(&json!({"claims": ["a", "b"], "raw": "x", "truncated": false, "tokens": 9, "seconds": 1.5}));
        assert_eq!(claims.map(|c| c.claims.len()), Some(2));
    }
}
