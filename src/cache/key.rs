//! Cache keys: blake3 over a canonical serialization of every input that can change a run's
//! output — never concurrency, retries, timeouts, paths or secrets.

use crate::plan::Cell;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

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

/// Everything a review's key is computed from. Serialized with sorted keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyInputs {
    pub schema: u32,
    pub reviewer_kind: String,
    /// The reviewer's resolved configuration for this cell.
    pub reviewer: serde_json::Value,
    /// The cell's values, rendered as text.
    pub cell: BTreeMap<String, String>,
    /// blake3 identity of the subject (resolved SHAs, or a corpus case's content).
    pub subject: String,
    pub repeat: u32,
}

impl KeyInputs {
    pub fn new(kind: &str, reviewer: serde_json::Value, cell: &Cell, subject: &str, repeat: u32) -> Self {
        Self {
            schema: CACHE_SCHEMA,
            reviewer_kind: kind.to_string(),
            reviewer,
            cell: cell.values.iter().map(|(k, v)| (k.clone(), v.render())).collect(),
            subject: subject.to_string(),
            repeat,
        }
    }

    /// Canonical bytes: JSON with object keys sorted at every level.
    pub fn canonical_bytes(&self) -> Vec<u8> {
        let value = serde_json::to_value(self).unwrap_or(serde_json::Value::Null);
        serde_json::to_vec(&value).unwrap_or_default()
    }

    /// Paths (`reviewer.args[2]`, `cell.model`, …) whose values differ between two inputs.
    pub fn changed_fields(&self, previous: &KeyInputs) -> Vec<String> {
        let a = serde_json::to_value(previous).unwrap_or_default();
        let b = serde_json::to_value(self).unwrap_or_default();
        let mut out = Vec::new();
        diff_values("", &a, &b, &mut out);
        out
    }
}

fn diff_values(path: &str, a: &serde_json::Value, b: &serde_json::Value, out: &mut Vec<String>) {
    use serde_json::Value;
    let join = |k: &str| if path.is_empty() { k.to_string() } else { format!("{path}.{k}") };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                match (x.get(k), y.get(k)) {
                    (Some(va), Some(vb)) => diff_values(&join(k), va, vb, out),
                    _ => out.push(join(k)),
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                diff_values(&format!("{path}[{i}]"), va, vb, out);
            }
        }
        _ if a != b => out.push(if path.is_empty() { "(everything)".into() } else { path.to_string() }),
        _ => {}
    }
}

/// The key of a review run.
pub fn review_key(inputs: &KeyInputs) -> CacheKey {
    CacheKey(blake3::hash(&inputs.canonical_bytes()).to_hex().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::AxisValue;

    fn cell(model: &str) -> Cell {
        Cell { id: format!("model={model}"), values: [("model".to_string(), AxisValue::Str(model.into()))].into() }
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
    fn canonical_bytes_sort_object_keys() {
        let a = KeyInputs::new("x", serde_json::json!({"b": 1, "a": 2}), &cell("a"), "s", 1);
        let text = String::from_utf8(a.canonical_bytes()).expect("utf8");
        assert!(text.find("\"a\":2").expect("a") < text.find("\"b\":1").expect("b"));
    }
}
