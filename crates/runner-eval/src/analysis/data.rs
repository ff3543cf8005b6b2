//! An analysis's machine-readable result held as compact JSON text: a few hundred bytes per
//! cell instead of a tree of `serde_json::Value` maps, written into results.json unchanged.

use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// JSON text, compact, plus its tree parsed on first use (by templates' tests and small
/// readers). Serializing it replays the text through the target serializer, so a pretty
/// results.json is laid out exactly as if the tree itself had been serialized.
pub struct Data {
    json: Box<str>,
    parsed: OnceLock<serde_json::Value>,
}

impl Data {
    /// JSON `null`: an analysis with no machine-readable result.
    pub(crate) fn null() -> Self {
        Self::from_json("null".into())
    }

    fn from_json(json: Box<str>) -> Self {
        Self { json, parsed: OnceLock::new() }
    }

    /// The compact JSON text.
    pub fn as_json(&self) -> &str {
        &self.json
    }

    pub fn is_null(&self) -> bool {
        &*self.json == "null"
    }

    /// The tree, parsed on first use and kept. Readers of large results should prefer
    /// [`Self::read`], which builds only the type they need.
    pub fn value(&self) -> &serde_json::Value {
        self.parsed.get_or_init(|| serde_json::from_str(&self.json).unwrap_or(serde_json::Value::Null))
    }

    /// The data read as `T`, straight from the text.
    pub fn read<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(&self.json)
    }
}

impl Default for Data {
    fn default() -> Self {
        Self::null()
    }
}

impl From<serde_json::Value> for Data {
    fn from(value: serde_json::Value) -> Self {
        // A `Value` always serializes (its map keys are strings).
        let json = serde_json::to_string(&value).unwrap_or_else(|_| "null".into());
        Self { json: json.into_boxed_str(), parsed: OnceLock::from(value) }
    }
}

impl Clone for Data {
    fn clone(&self) -> Self {
        Self::from_json(self.json.clone())
    }
}

impl std::fmt::Debug for Data {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.json)
    }
}

impl PartialEq for Data {
    fn eq(&self, other: &Self) -> bool {
        self.json == other.json || self.value() == other.value()
    }
}

/// Tests and small readers index the data as a tree: `result.data["cells"][0]`.
impl std::ops::Deref for Data {
    type Target = serde_json::Value;
    fn deref(&self) -> &serde_json::Value {
        self.value()
    }
}

impl Serialize for Data {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serialize_text(&self.json, serializer)
    }
}

thread_local! {
    /// Whether JSON text held as text goes to the serializer as a raw fragment ([`as_raw_text`]).
    static RAW_TEXT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `write` with the JSON text analyses hold (their `data`, a table's folded rows) handed to
/// serde_json's serializer as a raw fragment, for its formatter to lay out
/// (`Formatter::write_raw_fragment`) instead of being parsed and printed again value by value.
/// Only for a serde_json serializer whose formatter lays a fragment out as it would the values
/// (runner-report's pretty-printer): another formatter writes the compact text as it is.
pub fn as_raw_text<R>(write: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            RAW_TEXT.with(|raw| raw.set(self.0));
        }
    }
    let _restore = Restore(RAW_TEXT.with(|raw| raw.replace(true)));
    write()
}

/// JSON text (serde_json's compact output) serialized as the value it holds: replayed into the
/// serializer, or handed over as a raw fragment inside [`as_raw_text`].
pub(crate) fn serialize_text<S: serde::Serializer>(text: &str, serializer: S) -> Result<S::Ok, S::Error> {
    if RAW_TEXT.with(std::cell::Cell::get) {
        let raw: &serde_json::value::RawValue = serde_json::from_str(text).map_err(serde::ser::Error::custom)?;
        return raw.serialize(serializer);
    }
    let mut source = serde_json::Deserializer::from_str(text);
    serde_transcode::Transcoder::new(&mut source).serialize(serializer)
}

impl<'de> Deserialize<'de> for Data {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        serde_json::Value::deserialize(deserializer).map(Self::from)
    }
}

/// The seed's output shape built one item at a time: one object for one item, an array for
/// several. Each item is written out as it is pushed, so a per-cell result never exists as
/// a tree of all cells at once.
#[derive(Default)]
pub struct DataList {
    /// `[` and the items so far, comma-separated: JSON text, so UTF-8.
    json: Vec<u8>,
    items: usize,
}

impl DataList {
    /// Writes `item` (a `Value`, or any type that serializes as that `Value` would) straight
    /// into the list.
    pub(crate) fn push(&mut self, item: &impl Serialize) {
        let mark = self.json.len();
        self.json.push(if self.items == 0 { b'[' } else { b',' });
        // Writing into a `Vec` cannot fail; an item that cannot serialize (a map with
        // non-string keys) is left out whole.
        if serde_json::to_writer(&mut self.json, item).is_err() {
            self.json.truncate(mark);
            return;
        }
        self.items += 1;
    }

    /// An empty list with room for `bytes` of items (what [`Self::len`] of the lists to be
    /// appended adds up to).
    pub(crate) fn with_capacity(bytes: usize) -> Self {
        Self { json: Vec::with_capacity(bytes + 2), items: 0 }
    }

    /// The bytes of its items so far.
    pub(crate) fn len(&self) -> usize {
        self.json.len()
    }

    /// Appends the items of `other`, in their order, as written there.
    pub(crate) fn append(&mut self, other: &DataList) {
        let Some(items) = other.json.get(1..) else { return };
        if other.items == 0 {
            return;
        }
        self.json.push(if self.items == 0 { b'[' } else { b',' });
        self.json.extend_from_slice(items);
        self.items += other.items;
    }

    pub(crate) fn finish(self) -> Data {
        // serde_json writes UTF-8 only.
        let text = String::from_utf8(self.json).unwrap_or_default();
        let json = match self.items {
            0 => "[]".to_string(),
            1 => text[1..].to_string(),
            _ => text + "]",
        };
        Data::from_json(json.into_boxed_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn one_item_is_the_item_and_several_are_an_array() {
        let empty = DataList::default().finish();
        assert_eq!(empty.as_json(), "[]");
        let mut one = DataList::default();
        one.push(&json!({"b": 1, "a": [1.5, null]}));
        assert_eq!(one.finish().as_json(), r#"{"a":[1.5,null],"b":1}"#);
        let mut two = DataList::default();
        two.push(&json!(1));
        two.push(&json!({"x": "y"}));
        let two = two.finish();
        assert_eq!(two.as_json(), r#"[1,{"x":"y"}]"#);
        assert_eq!(two[1]["x"], "y", "indexes as a tree");
    }

    #[test]
    fn appended_lists_are_one_list_in_order() {
        let list = |items: &[serde_json::Value]| {
            let mut list = DataList::default();
            items.iter().for_each(|i| list.push(i));
            list
        };
        let mut all = list(&[json!(1)]);
        all.append(&list(&[]));
        all.append(&list(&[json!({"a": 2}), json!("three")]));
        assert_eq!(all.finish().as_json(), r#"[1,{"a":2},"three"]"#);
        let mut from_empty = DataList::default();
        from_empty.append(&list(&[json!(4)]));
        assert_eq!(from_empty.finish().as_json(), "4", "one item is the item");
    }

    #[test]
    fn serializes_exactly_as_the_tree_would_pretty_and_compact() {
        let tree = json!({
            "cells": [{"cell": "a=1", "values": {}, "mean": 0.1 + 0.2, "tiny": 1.2345678901234567e-300, "n": -3}, []],
            "big": u64::MAX, "text": "quote \" and \\ and \n newline", "none": null
        });
        let mut list = DataList::default();
        list.push(&tree);
        let data = list.finish();
        assert_eq!(serde_json::to_string_pretty(&data).expect("pretty"), serde_json::to_string_pretty(&tree).expect("pretty"));
        assert_eq!(serde_json::to_string(&data).expect("compact"), serde_json::to_string(&tree).expect("compact"));
        let back: Data = serde_json::from_str(&serde_json::to_string_pretty(&data).expect("pretty")).expect("read back");
        assert_eq!(back, data);
        assert!(Data::null().is_null() && !data.is_null());
    }
}
