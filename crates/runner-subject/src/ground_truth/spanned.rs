//! A small JSON reader that keeps the line and column of every value and key, so corpus
//! validation can report every problem at its place (serde stops at the first one).
//!
//! Syntax is checked by `serde_json` first (its messages are good); this reader then walks
//! text already known to be valid JSON and decodes strings and numbers with `serde_json`.

use serde::Serialize;
use std::fmt;

/// The deepest nesting of arrays and objects read, as `serde_json`'s own limit: the reader
/// is recursive, and a deeper file (50,000 `[`) would overflow the stack.
pub(crate) const MAX_DEPTH: usize = 128;

/// A 1-based line and column (in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub(crate) struct Pos {
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Spanned>),
    Object(Vec<Member>),
}

/// A value, where it starts, and its byte span in the text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Spanned {
    pub pos: Pos,
    pub start: usize,
    pub end: usize,
    pub node: Node,
}

/// One `"key": value` pair of an object, in file order (duplicates kept).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Member {
    pub key: String,
    pub key_pos: Pos,
    pub value: Spanned,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message} at {pos}")]
pub(crate) struct SyntaxError {
    pub pos: Pos,
    pub message: String,
}

impl Spanned {
    pub(crate) fn as_object(&self) -> Option<&[Member]> {
        match &self.node {
            Node::Object(m) => Some(m),
            _ => None,
        }
    }

    pub(crate) fn as_array(&self) -> Option<&[Spanned]> {
        match &self.node {
            Node::Array(a) => Some(a),
            _ => None,
        }
    }

    pub(crate) fn as_str(&self) -> Option<&str> {
        match &self.node {
            Node::String(s) => Some(s),
            _ => None,
        }
    }

    /// The first member named `key`, when this is an object.
    pub(crate) fn get(&self, key: &str) -> Option<&Member> {
        self.as_object()?.iter().find(|m| m.key == key)
    }

    /// The position of `key`'s value, else of this value.
    pub(crate) fn pos_of(&self, key: &str) -> Pos {
        self.get(key).map(|m| m.value.pos).unwrap_or(self.pos)
    }

    /// What kind of JSON value this is, for messages.
    pub(crate) fn kind(&self) -> &'static str {
        match self.node {
            Node::Null => "null",
            Node::Bool(_) => "a boolean",
            Node::Number(_) => "a number",
            Node::String(_) => "a string",
            Node::Array(_) => "an array",
            Node::Object(_) => "an object",
        }
    }

    /// The plain value (for typed decoding with serde). With duplicate keys the last wins,
    /// as in `serde_json`; validation reports duplicates separately.
    pub(crate) fn to_value(&self) -> serde_json::Value {
        match &self.node {
            Node::Null => serde_json::Value::Null,
            Node::Bool(b) => serde_json::Value::Bool(*b),
            Node::Number(n) => serde_json::Value::Number(n.clone()),
            Node::String(s) => serde_json::Value::String(s.clone()),
            Node::Array(a) => serde_json::Value::Array(a.iter().map(Spanned::to_value).collect()),
            Node::Object(m) => serde_json::Value::Object(m.iter().map(|m| (m.key.clone(), m.value.to_value())).collect()),
        }
    }
}

/// Decodes `node` (a part of `text`) into `T`, locating a type error in the whole text.
pub(crate) fn decode<T: serde::de::DeserializeOwned>(text: &str, node: &Spanned) -> Result<T, SyntaxError> {
    let slice = text.get(node.start..node.end).unwrap_or_default();
    serde_json::from_str(slice).map_err(|e| {
        let message = e.to_string();
        let message = message.rsplit_once(" at line ").map(|(m, _)| m.to_string()).unwrap_or(message);
        let pos = if e.line() <= 1 {
            Pos { line: node.pos.line, column: node.pos.column + e.column().saturating_sub(1) }
        } else {
            Pos { line: node.pos.line + e.line() - 1, column: e.column() }
        };
        SyntaxError { pos, message }
    })
}

/// Parses `text`, reporting a syntax error with its line and column.
pub(crate) fn parse(text: &str) -> Result<Spanned, SyntaxError> {
    if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(text) {
        let message = e.to_string();
        let message = message.rsplit_once(" at line ").map(|(m, _)| m.to_string()).unwrap_or(message);
        return Err(SyntaxError { pos: Pos { line: e.line(), column: e.column() }, message });
    }
    let mut reader = Reader { text, bytes: text.as_bytes(), at: 0, lines: line_starts(text), depth: 0 };
    let value = reader.value()?;
    reader.skip_ws();
    if reader.at != reader.bytes.len() {
        return Err(reader.error("trailing characters"));
    }
    Ok(value)
}

fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect()
}

struct Reader<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    lines: Vec<usize>,
    /// Arrays and objects open around the value being read.
    depth: usize,
}

impl Reader<'_> {
    fn pos(&self, offset: usize) -> Pos {
        let line = self.lines.partition_point(|&start| start <= offset).max(1);
        let start = self.lines[line - 1];
        let column = self.text.get(start..offset).map(|s| s.chars().count()).unwrap_or(0) + 1;
        Pos { line, column }
    }

    fn error(&self, message: &str) -> SyntaxError {
        SyntaxError { pos: self.pos(self.at), message: message.to_string() }
    }

    fn skip_ws(&mut self) {
        while self.at < self.bytes.len() && matches!(self.bytes[self.at], b' ' | b'\t' | b'\n' | b'\r') {
            self.at += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn expect(&mut self, byte: u8) -> Result<(), SyntaxError> {
        self.skip_ws();
        if self.peek() == Some(byte) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.error(&format!("expected `{}`", byte as char)))
        }
    }

    fn value(&mut self) -> Result<Spanned, SyntaxError> {
        self.skip_ws();
        let start = self.at;
        let pos = self.pos(start);
        let node = match self.peek() {
            Some(b'{' | b'[') if self.depth >= MAX_DEPTH => return Err(self.error(&format!("nesting deeper than {MAX_DEPTH} levels of arrays and objects"))),
            Some(b'{') => {
                self.depth += 1;
                let node = self.object();
                self.depth -= 1;
                node?
            }
            Some(b'[') => {
                self.depth += 1;
                let node = self.array();
                self.depth -= 1;
                node?
            }
            Some(b'"') => Node::String(self.string()?),
            Some(b't') => self.literal("true", Node::Bool(true))?,
            Some(b'f') => self.literal("false", Node::Bool(false))?,
            Some(b'n') => self.literal("null", Node::Null)?,
            Some(_) => self.number()?,
            None => return Err(self.error("unexpected end of input")),
        };
        Ok(Spanned { pos, start, end: self.at, node })
    }

    fn literal(&mut self, word: &str, node: Node) -> Result<Node, SyntaxError> {
        if self.text[self.at..].starts_with(word) {
            self.at += word.len();
            Ok(node)
        } else {
            Err(self.error("invalid literal"))
        }
    }

    fn number(&mut self) -> Result<Node, SyntaxError> {
        let start = self.at;
        while self.at < self.bytes.len() && matches!(self.bytes[self.at], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
            self.at += 1;
        }
        serde_json::from_str::<serde_json::Number>(&self.text[start..self.at])
            .map(Node::Number)
            .map_err(|e| SyntaxError { pos: self.pos(start), message: e.to_string() })
    }

    fn string(&mut self) -> Result<String, SyntaxError> {
        let start = self.at;
        self.at += 1;
        loop {
            match self.peek() {
                Some(b'"') => break,
                Some(b'\\') => self.at += 2,
                Some(_) => self.at += 1,
                None => return Err(self.error("unterminated string")),
            }
        }
        self.at += 1;
        serde_json::from_str::<String>(&self.text[start..self.at]).map_err(|e| SyntaxError { pos: self.pos(start), message: e.to_string() })
    }

    fn array(&mut self) -> Result<Node, SyntaxError> {
        self.at += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.at += 1;
            return Ok(Node::Array(items));
        }
        loop {
            items.push(self.value()?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    return Ok(Node::Array(items));
                }
                _ => return Err(self.error("expected `,` or `]`")),
            }
        }
    }

    fn object(&mut self) -> Result<Node, SyntaxError> {
        self.at += 1;
        let mut members = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Ok(Node::Object(members));
        }
        loop {
            self.skip_ws();
            let key_pos = self.pos(self.at);
            if self.peek() != Some(b'"') {
                return Err(self.error("expected a key"));
            }
            let key = self.string()?;
            self.expect(b':')?;
            let value = self.value()?;
            members.push(Member { key, key_pos, value });
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(Node::Object(members));
                }
                _ => return Err(self.error("expected `,` or `}`")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_of_keys_and_values() {
        let text = "{\n  \"a\": [1, \"x\\\"é\"],\n  \"b\": {\"c\": null}\n}";
        let v = parse(text).expect("valid");
        let a = v.get("a").expect("a");
        assert_eq!(a.key_pos, Pos { line: 2, column: 3 });
        assert_eq!(a.value.pos, Pos { line: 2, column: 8 });
        assert_eq!(a.value.as_array().map(|x| x[1].as_str()), Some(Some("x\"é")));
        let b = v.get("b").expect("b");
        assert_eq!(b.value.get("c").map(|m| m.key_pos), Some(Pos { line: 3, column: 9 }));
        assert_eq!(v.to_value(), serde_json::from_str::<serde_json::Value>(text).expect("json"));
        let b_value: serde_json::Value = decode(text, &b.value).expect("decodes");
        assert_eq!(b_value, serde_json::json!({"c": null}));
    }

    #[test]
    fn decode_errors_point_into_the_whole_text() {
        let text = "{\n  \"a\": {\n    \"n\": \"x\"\n  }\n}";
        let v = parse(text).expect("valid");
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct A {
            n: u32,
        }
        let a = v.get("a").expect("a");
        let e = decode::<A>(text, &a.value).expect_err("a string is not a number");
        assert_eq!(e.pos.line, 3, "{e}");
    }

    #[test]
    fn nesting_is_bounded_without_overflowing_the_stack() {
        let deep = format!("{}{}", "[".repeat(50_000), "]".repeat(50_000));
        let e = parse(&deep).expect_err("too deep");
        assert!(e.message.contains("nesting deeper than 128"), "{e}");
        assert_eq!(e.pos, Pos { line: 1, column: 129 });
        let objects = format!("{}1{}", "{\"a\":".repeat(50_000), "}".repeat(50_000));
        assert!(parse(&objects).expect_err("too deep").message.contains("nesting deeper"));
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(parse(&ok).is_ok());
    }

    #[test]
    fn duplicate_keys_are_kept() {
        let v = parse(r#"{"a":1,"a":2}"#).expect("valid");
        assert_eq!(v.as_object().map(<[Member]>::len), Some(2));
    }

    #[test]
    fn syntax_errors_have_a_location() {
        let e = parse("{\n  \"a\": 1,\n}").expect_err("trailing comma");
        assert_eq!(e.pos.line, 3);
        assert!(!e.message.contains("at line"), "{}", e.message);
    }
}
