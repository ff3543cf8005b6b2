//! Pretty-printed JSON byte for byte as `serde_json::to_writer_pretty` writes it (two-space
//! indent), written faster: each line break and its indentation in one write rather than one
//! write per level. results.json of a 100k-cell grid is 300 MB, mostly indentation.

use serde::Serialize;
use serde_json::ser::Formatter;
use std::io::{self, Write};

/// `value` pretty-printed into `writer`, exactly as `serde_json::to_writer_pretty` would.
pub fn to_writer_pretty<W: Write, T: Serialize + ?Sized>(writer: W, value: &T) -> serde_json::Result<()> {
    let mut serializer = serde_json::Serializer::with_formatter(writer, Pretty::default());
    value.serialize(&mut serializer)
}

/// A line break followed by this many spaces of indentation, in one slice.
const BREAK: &[u8] = b"\n                                                                                                                                ";

/// [`serde_json::ser::PrettyFormatter`] with a two-space indent.
#[derive(Default)]
struct Pretty {
    depth: usize,
    has_value: bool,
}

impl Pretty {
    /// A line break and the current indentation.
    fn line<W: ?Sized + Write>(&self, writer: &mut W) -> io::Result<()> {
        let mut spaces = 2 * self.depth;
        let first = spaces.min(BREAK.len() - 1);
        writer.write_all(&BREAK[..1 + first])?;
        spaces -= first;
        while spaces > 0 {
            let more = spaces.min(BREAK.len() - 1);
            writer.write_all(&BREAK[1..1 + more])?;
            spaces -= more;
        }
        Ok(())
    }
}

impl Pretty {
    /// `[` or `{`: one level deeper, nothing in it yet.
    fn open<W: ?Sized + Write>(&mut self, writer: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        writer.write_all(bracket)
    }

    /// `]` or `}`, on a line of its own unless the array or object is empty.
    fn close<W: ?Sized + Write>(&mut self, writer: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.depth -= 1;
        if self.has_value {
            self.line(writer)?;
        }
        writer.write_all(bracket)
    }

    /// Before an element or a key: a comma after the first, then a line of its own.
    fn item<W: ?Sized + Write>(&mut self, writer: &mut W, first: bool) -> io::Result<()> {
        if !first {
            writer.write_all(b",")?;
        }
        self.line(writer)
    }
}

impl Formatter for Pretty {
    #[inline]
    fn begin_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.open(writer, b"[")
    }

    #[inline]
    fn end_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.close(writer, b"]")
    }

    #[inline]
    fn begin_array_value<W: ?Sized + Write>(&mut self, writer: &mut W, first: bool) -> io::Result<()> {
        self.item(writer, first)
    }

    #[inline]
    fn end_array_value<W: ?Sized + Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    #[inline]
    fn begin_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.open(writer, b"{")
    }

    #[inline]
    fn end_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.close(writer, b"}")
    }

    #[inline]
    fn begin_object_key<W: ?Sized + Write>(&mut self, writer: &mut W, first: bool) -> io::Result<()> {
        self.item(writer, first)
    }

    #[inline]
    fn begin_object_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        writer.write_all(b": ")
    }

    #[inline]
    fn end_object_value<W: ?Sized + Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pretty(value: &serde_json::Value) -> String {
        let mut out = Vec::new();
        to_writer_pretty(&mut out, value).expect("writes");
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn writes_what_serde_json_writes() {
        let values = [
            serde_json::json!(null),
            serde_json::json!([]),
            serde_json::json!({}),
            serde_json::json!({"a": [], "b": {}, "c": [1, [2, []], {"d": null}], "e": "x\n\"y\"", "f": 1.5e300, "g": -0.0}),
            serde_json::json!([[[[{"deep": [{"er": [1]}]}]]]]),
        ];
        for value in &values {
            assert_eq!(pretty(value), serde_json::to_string_pretty(value).expect("serializes"), "{value}");
        }
        // Deeper than one slice of indentation holds.
        let mut deep = serde_json::json!(1);
        for i in 0..150 {
            deep = if i % 2 == 0 { serde_json::json!([deep]) } else { serde_json::json!({ "k": deep }) };
        }
        assert_eq!(pretty(&deep), serde_json::to_string_pretty(&deep).expect("serializes"));
    }
}
