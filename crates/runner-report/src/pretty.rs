//! Pretty-printed JSON byte for byte as `serde_json::to_writer_pretty` writes it (two-space
//! indent), written faster: each line break and its indentation in one write rather than one
//! write per level. results.json of a 100k-cell grid is 300 MB, mostly indentation.

use serde::Serialize;
use serde_json::ser::Formatter;
use std::io::{self, Write};

/// `value` pretty-printed into `writer`, exactly as `serde_json::to_writer_pretty` would. The
/// JSON text analyses hold (their `data`, a table's folded rows) is laid out from the text
/// (`Formatter::write_raw_fragment` below), not parsed and printed again.
pub fn to_writer_pretty<W: Write, T: Serialize + ?Sized>(writer: W, value: &T) -> serde_json::Result<()> {
    let mut serializer = serde_json::Serializer::with_formatter(writer, Pretty::default());
    crate::analysis::as_raw_text(|| value.serialize(&mut serializer))
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

    /// Compact JSON text (serde_json's own output, which analyses keep: see
    /// `analysis::as_raw_text`) laid out as its values would be: a line break and the
    /// indentation after each `[`, `{` and `,`, `": "` after each key, empty arrays and objects
    /// as `[]` and `{}`; strings and numbers copied as they are, which is how serde_json would
    /// print them again.
    fn write_raw_fragment<W: ?Sized + Write>(&mut self, writer: &mut W, fragment: &str) -> io::Result<()> {
        let bytes = fragment.as_bytes();
        let base = self.depth;
        let mut from = 0;
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'"' => {
                    // To the closing quote, over escaped characters.
                    i += 1;
                    while i < bytes.len() && bytes[i] != b'"' {
                        i += if bytes[i] == b'\\' { 2 } else { 1 };
                    }
                    i += 1;
                }
                open @ (b'[' | b'{') => {
                    writer.write_all(&bytes[from..=i])?;
                    let close = if open == b'[' { b']' } else { b'}' };
                    if bytes.get(i + 1) == Some(&close) {
                        writer.write_all(&[close])?;
                        i += 2;
                    } else {
                        self.depth += 1;
                        self.line(writer)?;
                        i += 1;
                    }
                    from = i;
                }
                close @ (b']' | b'}') => {
                    writer.write_all(&bytes[from..i])?;
                    self.depth = self.depth.saturating_sub(1).max(base);
                    self.line(writer)?;
                    writer.write_all(&[close])?;
                    i += 1;
                    from = i;
                }
                b',' => {
                    writer.write_all(&bytes[from..=i])?;
                    self.line(writer)?;
                    i += 1;
                    from = i;
                }
                b':' => {
                    writer.write_all(&bytes[from..i])?;
                    writer.write_all(b": ")?;
                    i += 1;
                    from = i;
                }
                _ => i += 1,
            }
        }
        writer.write_all(&bytes[from.min(bytes.len())..])?;
        self.depth = base;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pretty(value: &impl Serialize) -> String {
        let mut out = Vec::new();
        to_writer_pretty(&mut out, value).expect("writes");
        String::from_utf8(out).expect("utf-8")
    }

    /// Empty and nested containers, escapes and the characters that are structure outside a
    /// string, and numbers that print in more than one way.
    fn edge_values() -> [serde_json::Value; 7] {
        [
            serde_json::json!(null),
            serde_json::json!([]),
            serde_json::json!({}),
            serde_json::json!("a string with \\ \" , : [ ] { } and \u{1F600} and \n"),
            serde_json::json!({"a": [], "b": {}, "c": [1, [2, []], {"d": null}], "e": "x\n\"y\":,[]{}", "f": 1.5e300, "g": -0.0, "h": 0.1}),
            serde_json::json!([[[[{"deep": [{"er": [1, -2, 3.25e-7, u64::MAX]}]}]]]]),
            serde_json::json!({"k\"ey": {"nested": {"more": [true, false, null]}}, "x": "\\"}),
        ]
    }

    #[test]
    fn json_text_analyses_hold_is_laid_out_as_its_values_would_be() {
        use crate::analysis::Data;
        for value in &edge_values() {
            let data = Data::from(value.clone());
            // Inside a structure, at some depth, as results.json holds it.
            let outer = serde_json::json!({"analyses": [{"data": value.clone(), "more": [1]}]});
            #[derive(serde::Serialize)]
            struct Holder<'d> {
                data: &'d Data,
                more: [u8; 1],
            }
            #[derive(serde::Serialize)]
            struct Outer<'d> {
                analyses: [Holder<'d>; 1],
            }
            let held = Outer { analyses: [Holder { data: &data, more: [1] }] };
            assert_eq!(pretty(&held), serde_json::to_string_pretty(&outer).expect("serializes"), "{value}");
            // Outside the pretty-printer, the text is replayed as before.
            assert_eq!(serde_json::to_string_pretty(&data).expect("serializes"), serde_json::to_string_pretty(value).expect("serializes"));
            assert_eq!(serde_json::to_string(&data).expect("serializes"), serde_json::to_string(value).expect("serializes"));
        }
    }

    #[test]
    fn random_json_text_is_laid_out_as_serde_json_lays_out_its_values() {
        // A small linear congruential generator: the same values on every run.
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move |n: u64| {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) % n
        };
        fn value(next: &mut dyn FnMut(u64) -> u64, depth: u32) -> serde_json::Value {
            const TEXTS: [&str; 6] = ["", "plain", "quote \" and \\", "[{,:}]", "line\nbreak\ttab", "ünïcödé \u{7f}\u{1}"];
            match if depth == 0 { next(4) } else { next(6) } {
                0 => serde_json::Value::Null,
                1 => serde_json::json!(next(2) == 1),
                2 => serde_json::json!((next(2_000_001) as f64 - 1_000_000.0) / (1 + next(1000)) as f64),
                3 => serde_json::json!(TEXTS[next(6) as usize]),
                4 => serde_json::Value::Array((0..next(4)).map(|_| value(next, depth - 1)).collect()),
                _ => serde_json::Value::Object((0..next(4)).map(|i| (format!("{}{i}", TEXTS[next(6) as usize]), value(next, depth - 1))).collect()),
            }
        }
        for _ in 0..500 {
            let v = value(&mut next, 4);
            let data = crate::analysis::Data::from(v.clone());
            assert_eq!(pretty(&[&data]), serde_json::to_string_pretty(&[&v]).expect("serializes"), "{v}");
        }
    }

    #[test]
    fn writes_what_serde_json_writes() {
        for value in &edge_values() {
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
