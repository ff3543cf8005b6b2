//! Reading corpus, oracle and results files with bounds: only regular files (a FIFO, a
//! device or a symlink to one is refused before anything blocks on it), at most
//! [`MAX_FILE_BYTES`] each, so a hostile corpus cannot hang or exhaust `corpus validate`,
//! `score` or `exec`.

use crate::bounded::Links;
use std::io;
use std::path::Path;

/// The largest corpus file read: far above any real corpus (the bundled one is under
/// 100 KB), far below what would exhaust memory.
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Reads `path` as UTF-8 text, refusing anything but a regular file of at most `limit`
/// bytes ([`crate::bounded`]). The error says which and names the limit; the caller names the file.
pub fn read_text_limited(path: &Path, limit: u64) -> io::Result<String> {
    crate::bounded::read_text(path, limit, Links::Follow, "corpus files")
}

/// [`read_text_limited`] with [`MAX_FILE_BYTES`].
pub fn read_text(path: &Path) -> io::Result<String> {
    read_text_limited(path, MAX_FILE_BYTES)
}

/// Parses JSON as JavaScript's `JSON.parse` reads it (seed 002's reference validator and
/// scorer do): a key repeated within an object takes its last value, at every level, where
/// serde's derived structs would reject a duplicate field. Everything else is as strict as
/// `T` is (unknown keys, types, values). An error in a document that repeats no key carries
/// its line and column; in one that does, the document is read through a
/// `serde_json::Value`, so the error has no place and says why.
pub fn parse_json_last_wins<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, serde_json::Error> {
    let first = match serde_json::from_str::<T>(text) {
        Ok(value) => return Ok(value),
        Err(e) => e,
    };
    // A document that is not JSON gets its syntax error, even where a repeated key came first.
    if !first.is_data() || !repeats_a_key(text)? {
        return Err(first);
    }
    let value: serde_json::Value = serde_json::from_str(text)?;
    serde_json::from_value(value).map_err(|e| {
        <serde_json::Error as serde::de::Error>::custom(format!("{e} (the document repeats a key; each repeated key was read with its last value)"))
    })
}

/// Whether some object in the JSON text has a key twice; the syntax error of text that is
/// not JSON.
fn repeats_a_key(text: &str) -> Result<bool, serde_json::Error> {
    serde_json::from_str::<RepeatedKey>(text).map(|r| r.0)
}

/// Any JSON value, read only to tell whether one of its objects repeats a key.
struct RepeatedKey(bool);

impl<'de> serde::Deserialize<'de> for RepeatedKey {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(RepeatedKeyVisitor)
    }
}

struct RepeatedKeyVisitor;

impl<'de> serde::de::Visitor<'de> for RepeatedKeyVisitor {
    type Value = RepeatedKey;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<RepeatedKey, E> {
        Ok(RepeatedKey(false))
    }

    fn visit_i64<E>(self, _: i64) -> Result<RepeatedKey, E> {
        Ok(RepeatedKey(false))
    }

    fn visit_u64<E>(self, _: u64) -> Result<RepeatedKey, E> {
        Ok(RepeatedKey(false))
    }

    fn visit_f64<E>(self, _: f64) -> Result<RepeatedKey, E> {
        Ok(RepeatedKey(false))
    }

    fn visit_str<E>(self, _: &str) -> Result<RepeatedKey, E> {
        Ok(RepeatedKey(false))
    }

    fn visit_unit<E>(self) -> Result<RepeatedKey, E> {
        Ok(RepeatedKey(false))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<RepeatedKey, A::Error> {
        let mut repeats = false;
        while let Some(RepeatedKey(inner)) = seq.next_element()? {
            repeats |= inner;
        }
        Ok(RepeatedKey(repeats))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<RepeatedKey, A::Error> {
        let mut keys = std::collections::HashSet::new();
        let mut repeats = false;
        while let Some(key) = map.next_key::<String>()? {
            repeats |= !keys.insert(key);
            let RepeatedKey(inner) = map.next_value()?;
            repeats |= inner;
        }
        Ok(RepeatedKey(repeats))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Outer {
        a: u32,
        inner: Vec<Inner>,
    }

    #[derive(Debug, PartialEq, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        b: String,
    }

    #[test]
    fn a_repeated_key_takes_its_last_value_at_every_level() {
        let read = |text: &str| parse_json_last_wins::<Outer>(text);
        let inner = |b: &str| vec![Inner { b: b.into() }];
        assert!(serde_json::from_str::<Outer>(r#"{"a":1,"a":2,"inner":[]}"#).is_err(), "serde's derived structs reject it");
        assert_eq!(read(r#"{"a":1,"inner":[{"b":"x","b":"y"}],"a":2}"#).expect("last wins"), Outer { a: 2, inner: inner("y") });
        // The value a later key replaces may even be of the wrong type, as in `JSON.parse`.
        assert_eq!(read(r#"{"a":"one","a":3,"inner":[{"b":1,"b":"z"}]}"#).expect("last wins"), Outer { a: 3, inner: inner("z") });
        assert!(!repeats_a_key(r#"{"a":{"a":1},"b":[{"a":1},{"a":2}]}"#).expect("JSON"), "the same key in different objects is no repetition");
        assert!(repeats_a_key(r#"[{"x":[{"k":1,"k":2}]}]"#).expect("JSON"));
    }

    #[test]
    fn other_strictness_stays_and_errors_keep_their_place() {
        let e = parse_json_last_wins::<Outer>("{\"a\":1,\n\"inner\":[],\"label\":1}").expect_err("unknown key");
        assert!(e.to_string().contains("unknown field `label`") && e.line() == 2, "{e}");
        let e = parse_json_last_wins::<Outer>(r#"{"a":1,"a":2,"inner":[],"label":1}"#).expect_err("unknown key beside a repeated one");
        assert!(e.to_string().contains("unknown field `label`") && e.to_string().contains("repeats a key"), "{e}");
        let e = parse_json_last_wins::<Outer>(r#"{"a":1,"inner":[{"b":"x","b":2}]}"#).expect_err("the last value has the wrong type");
        assert!(e.to_string().contains("invalid type"), "{e}");
        let e = parse_json_last_wins::<Outer>("{\"a\":1,\"a\":").expect_err("truncated");
        assert!(e.is_eof(), "{e}");
    }

    #[test]
    fn regular_files_are_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a.json");
        std::fs::write(&path, "{\"é\": 1}").expect("write");
        assert_eq!(read_text(&path).expect("read"), "{\"é\": 1}");
        let missing = read_text(&dir.path().join("none")).expect_err("missing");
        assert_eq!(missing.kind(), io::ErrorKind::NotFound, "callers tell a missing file apart");
    }

    #[test]
    fn fifos_devices_and_directories_are_refused_without_blocking() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fifo = dir.path().join("fifo.json");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).expect("path");
        // SAFETY: `c` is a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Nothing ever writes to it: a plain read would wait forever.
        let e = read_text(&fifo).expect_err("a FIFO");
        assert!(e.to_string().contains("a FIFO") && e.to_string().contains("regular file"), "{e}");
        let zero = dir.path().join("zero.json");
        std::os::unix::fs::symlink("/dev/zero", &zero).expect("symlink");
        let e = read_text(&zero).expect_err("a device");
        assert!(e.to_string().contains("a device"), "{e}");
        let e = read_text(dir.path()).expect_err("a directory");
        assert!(e.to_string().contains("a directory"), "{e}");
    }

    #[test]
    fn files_over_the_limit_are_refused_with_the_limit() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("big.json");
        // Sparse: the size is there, the bytes are not.
        std::fs::File::create(&path).expect("create").set_len(MAX_FILE_BYTES + 1).expect("set_len");
        let e = read_text(&path).expect_err("too big");
        assert!(e.to_string().contains("64 MiB limit"), "{e}");
        std::fs::write(&path, "x".repeat(3 * 1024 * 1024)).expect("write");
        let e = read_text_limited(&path, 2 * 1024 * 1024).expect_err("too big");
        assert!(e.to_string().contains("3145728 bytes, over the 2 MiB limit"), "{e}");
    }
}
