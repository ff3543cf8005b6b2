//! Cache keys: blake3 over a canonical serialization of every input that can change a run's
//! output — never concurrency, retries, timeouts, paths or secrets.

use crate::matrix::Cell;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;

/// Bumped when the meaning of cached results changes; old entries then miss.
pub const CACHE_SCHEMA: u32 = 1;

/// A run's cache key: 64 hex digits of blake3.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CacheKey(pub String);

impl fmt::Display for CacheKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl CacheKey {
    pub fn short(&self) -> &str {
        &self.0[..self.0.len().min(12)]
    }
}

/// A cell's values rendered as text, by axis name: sorted and flat, as few bytes as a
/// cell's handful of axes needs.
pub type CellText = litemap::LiteMap<String, String>;

/// Everything a review's key is computed from. Serialized with sorted keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyInputs {
    pub schema: u32,
    pub reviewer_kind: String,
    /// The reviewer's resolved configuration for this cell (shared by the runs of a cell).
    pub reviewer: Arc<serde_json::Value>,
    /// The cell's values, rendered as text (shared by the runs of a cell).
    pub cell: Arc<CellText>,
    /// blake3 identity of the subject (resolved SHAs, or a corpus case's content).
    pub subject: String,
    pub repeat: u32,
}

impl KeyInputs {
    pub fn new(kind: &str, reviewer: serde_json::Value, cell: &Cell, subject: &str, repeat: u32) -> Self {
        Self::shared(kind, Arc::new(reviewer), Self::cell_values(cell), subject, repeat)
    }

    /// The inputs of one run, sharing its cell's reviewer configuration and values with the
    /// cell's other runs (a 100k-run plan holds each once).
    pub fn shared(kind: &str, reviewer: Arc<serde_json::Value>, cell: Arc<CellText>, subject: &str, repeat: u32) -> Self {
        Self { schema: CACHE_SCHEMA, reviewer_kind: kind.to_string(), reviewer, cell, subject: subject.to_string(), repeat }
    }

    /// A cell's values as they enter keys: rendered as text, by axis name.
    pub fn cell_values(cell: &Cell) -> Arc<CellText> {
        Arc::new(cell.values.iter().map(|(k, v)| (k.clone(), v.render())).collect())
    }

    /// Canonical bytes: JSON with object keys sorted at every level.
    pub fn canonical_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::new();
        self.write_canonical(&mut bytes);
        bytes
    }

    /// Writes [`Self::canonical_bytes`] into `out` without building a JSON tree first: the
    /// fields in sorted order ([`Canonical`]), the reviewer's configuration and the cell's
    /// values as they are (a JSON object's keys, and a cell's axes, are kept sorted).
    fn write_canonical(&self, out: &mut impl std::io::Write) {
        let canonical = Canonical {
            cell: &self.cell,
            repeat: self.repeat,
            reviewer: &self.reviewer,
            reviewer_kind: &self.reviewer_kind,
            schema: self.schema,
            subject: &self.subject,
        };
        // Writing into memory or a hasher cannot fail.
        let _ = serde_json::to_writer(out, &canonical);
    }

    /// Paths (`reviewer.args[2]`, `cell.model`, …) whose values differ between two inputs.
    pub fn changed_fields(&self, previous: &KeyInputs) -> Vec<String> {
        self.changes(previous).into_iter().map(|c| c.path).collect()
    }

    /// Each field whose value differs from `previous`, with both values.
    pub fn changes(&self, previous: &KeyInputs) -> Vec<FieldChange> {
        let a = serde_json::to_value(previous).unwrap_or_default();
        let b = serde_json::to_value(self).unwrap_or_default();
        let mut out = Vec::new();
        diff_values("", Some(&a), Some(&b), &mut out);
        out
    }
}

/// One input of a key that changed: its path and its old and new values (`None`: absent).
#[derive(Debug, Clone, PartialEq)]
pub struct FieldChange {
    pub path: String,
    pub old: Option<serde_json::Value>,
    pub new: Option<serde_json::Value>,
}

/// Values longer than this are cut in the middle when shown.
const SHOWN_VALUE_CHARS: usize = 40;

impl fmt::Display for FieldChange {
    /// `cell.model: smollm2 → gemma3`; hashes shortened, long values cut, absence `(none)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} → {}", self.path, show_value(self.old.as_ref()), show_value(self.new.as_ref()))
    }
}

fn show_value(value: Option<&serde_json::Value>) -> String {
    let text = match value {
        None => return "(none)".to_string(),
        Some(serde_json::Value::String(s)) if s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) => return s[..12].to_string(),
        Some(serde_json::Value::String(s)) => serde_json::to_string(s).unwrap_or_default(),
        Some(other) => other.to_string(),
    };
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= SHOWN_VALUE_CHARS {
        return text;
    }
    let half = (SHOWN_VALUE_CHARS - 1) / 2;
    let head: String = chars[..half].iter().collect();
    let tail: String = chars[chars.len() - half..].iter().collect();
    format!("{head}…{tail}")
}

fn diff_values(path: &str, a: Option<&serde_json::Value>, b: Option<&serde_json::Value>, out: &mut Vec<FieldChange>) {
    use serde_json::Value;
    let join = |k: &str| if path.is_empty() { k.to_string() } else { format!("{path}.{k}") };
    match (a, b) {
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                diff_values(&join(k), x.get(k), y.get(k), out);
            }
        }
        (Some(Value::Array(x)), Some(Value::Array(y))) if x.len() == y.len() => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                diff_values(&format!("{path}[{i}]"), Some(va), Some(vb), out);
            }
        }
        _ if a != b => out.push(FieldChange { path: if path.is_empty() { "(everything)".into() } else { path.to_string() }, old: a.cloned(), new: b.cloned() }),
        _ => {}
    }
}

/// The key of a review run.
pub fn review_key(inputs: &KeyInputs) -> CacheKey {
    let mut hasher = blake3::Hasher::new();
    inputs.write_canonical(&mut hasher);
    CacheKey(hasher.finalize().to_hex().to_string())
}

/// [`KeyInputs`] as its key hashes it: the same fields, declared in sorted order.
#[derive(Serialize)]
struct Canonical<'a> {
    cell: &'a CellText,
    repeat: u32,
    reviewer: &'a serde_json::Value,
    reviewer_kind: &'a str,
    schema: u32,
    subject: &'a str,
}

/// The key of a cached stage other than a review: the stage's name and its inputs (the
/// producer's fingerprint and the content keys of what it reads), canonically serialized.
pub fn stage_key(stage: &str, inputs: &serde_json::Value) -> CacheKey {
    let bytes = serde_json::to_vec(&serde_json::json!({"stage": stage, "inputs": inputs})).unwrap_or_default();
    CacheKey(blake3::hash(&bytes).to_hex().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::AxisValue;

    fn cell(model: &str) -> Cell {
        Cell { id: format!("model={model}"), values: [("model".to_string(), AxisValue::Str(model.into()))].into_iter().collect() }
    }

    #[test]
    fn key_is_stable_and_sensitive_to_each_input() {
        let base = KeyInputs::new("builtin", serde_json::json!({"name": "dry-run"}), &cell("a"), "s1", 1);
        assert_eq!(review_key(&base), review_key(&base.clone()));
        let other_model = KeyInputs::new("builtin", serde_json::json!({"name": "dry-run"}), &cell("b"), "s1", 1);
        let other_repeat = KeyInputs { repeat: 2, ..base.clone() };
        let other_subject = KeyInputs { subject: "s2".into(), ..base.clone() };
        for other in [&other_model, &other_repeat, &other_subject] {
            assert_ne!(review_key(&base), review_key(other));
        }
        assert_eq!(other_model.changed_fields(&base), vec!["cell.model".to_string()]);
    }

    #[test]
    fn canonical_bytes_are_the_sorted_json_tree_of_the_inputs() {
        // Written directly, they are byte for byte the JSON tree of the inputs with every
        // object's keys sorted (what keys were always computed from), so no key changes.
        let reviewer = serde_json::json!({"z": [1, {"b": 2.5, "a": null}], "prompt": "say \"hi\"\n", "model": "m", "n": -3, "nested": {"y": true, "x": "é"}});
        let cell = Cell {
            id: "temperature=0.7,model=b".into(),
            values: [("temperature".to_string(), AxisValue::Float(0.7)), ("model".to_string(), AxisValue::Str("b".into()))].into_iter().collect(),
        };
        let inputs = KeyInputs::new("openai", reviewer, &cell, &"ab".repeat(32), 3);
        let tree = serde_json::to_vec(&serde_json::to_value(&inputs).expect("value")).expect("bytes");
        assert_eq!(String::from_utf8(inputs.canonical_bytes()).expect("utf8"), String::from_utf8(tree.clone()).expect("utf8"));
        assert_eq!(review_key(&inputs).0, blake3::hash(&tree).to_hex().to_string());
    }

    #[test]
    fn canonical_bytes_sort_object_keys() {
        let a = KeyInputs::new("x", serde_json::json!({"b": 1, "a": 2}), &cell("a"), "s", 1);
        let text = String::from_utf8(a.canonical_bytes()).expect("utf8");
        assert!(text.find("\"a\":2").expect("a") < text.find("\"b\":1").expect("b"));
    }

    #[test]
    fn changes_show_old_and_new_values_shortened() {
        let base = KeyInputs::new("builtin", serde_json::json!({"name": "dry-run", "prompt": "x".repeat(100)}), &cell("a"), &"0".repeat(64), 1);
        let next = KeyInputs::new("builtin", serde_json::json!({"name": "heuristic", "prompt": "y".repeat(100), "extra": 3}), &cell("b"), &"f".repeat(64), 1);
        let shown: Vec<String> = next.changes(&base).iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            vec![
                "cell.model: \"a\" → \"b\"".to_string(),
                "reviewer.extra: (none) → 3".to_string(),
                "reviewer.name: \"dry-run\" → \"heuristic\"".to_string(),
                format!("reviewer.prompt: \"{}…{}\" → \"{}…{}\"", "x".repeat(18), "x".repeat(18), "y".repeat(18), "y".repeat(18)),
                format!("subject: {} → {}", "0".repeat(12), "f".repeat(12)),
            ]
        );
    }
}
