//! A spanned TOML reader that collects every problem instead of stopping at the first.
//!
//! serde stops at the first error; a manifest author wants all of them at once, each with
//! its line and column. Tables are read key by key; whatever was not asked for is reported
//! as unknown (with a did-you-mean), every wrong type and every missing key is reported, and
//! reading carries on.

use super::diagnostics::Diagnostic;
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::ops::Range;
use toml::de::{DeTable, DeValue};
use toml::Spanned;

/// Collects diagnostics while a manifest is read.
#[derive(Default)]
pub struct Problems {
    list: RefCell<Vec<Diagnostic>>,
}

impl Problems {
    pub fn push(&self, span: Range<usize>, message: impl Into<String>) {
        self.list.borrow_mut().push(Diagnostic { span, message: message.into(), help: None });
    }

    pub fn push_with_help(&self, span: Range<usize>, message: impl Into<String>, help: impl Into<String>) {
        self.list.borrow_mut().push(Diagnostic { span, message: message.into(), help: Some(help.into()) });
    }

    pub fn is_empty(&self) -> bool {
        self.list.borrow().is_empty()
    }

    pub fn into_sorted(self) -> Vec<Diagnostic> {
        let mut list = self.list.into_inner();
        list.sort_by_key(|d| (d.span.start, d.span.end));
        list.dedup();
        list
    }
}

/// A scalar or list value with its span.
pub type Value<'i> = Spanned<DeValue<'i>>;

pub fn type_name(value: &DeValue<'_>) -> &'static str {
    match value {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a datetime",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

pub fn as_i64(value: &DeValue<'_>) -> Option<i64> {
    match value {
        DeValue::Integer(i) => i64::from_str_radix(&i.as_str().replace('_', ""), i.radix()).ok(),
        _ => None,
    }
}

pub fn as_f64(value: &DeValue<'_>) -> Option<f64> {
    match value {
        DeValue::Float(f) => f.as_str().replace('_', "").parse().ok(),
        DeValue::Integer(_) => as_i64(value).map(|i| i as f64),
        _ => None,
    }
}

/// Reads one TOML table, remembering which keys were asked for.
pub struct TableReader<'c, 'i> {
    problems: &'c Problems,
    table: &'c DeTable<'i>,
    span: Range<usize>,
    /// How the table is named in messages, e.g. `[reviewer]`.
    name: String,
    /// Its dotted path from the document's root (`reviewers.ruff`): empty for the root, `None`
    /// for an item of an array of tables, whose sub-tables are named by their key in it.
    path: Option<String>,
    asked: RefCell<BTreeSet<String>>,
    /// Keys the table takes in another of its forms (a target of another kind), named and
    /// suggested as known, though reported when this form does not read them.
    elsewhere: RefCell<BTreeSet<String>>,
}

impl<'c, 'i> TableReader<'c, 'i> {
    pub fn new(problems: &'c Problems, table: &'c DeTable<'i>, span: Range<usize>, name: impl Into<String>) -> Self {
        Self {
            problems,
            table,
            span,
            name: name.into(),
            path: Some(String::new()),
            asked: RefCell::new(BTreeSet::new()),
            elsewhere: RefCell::new(BTreeSet::new()),
        }
    }

    /// The same reader, named otherwise in messages (e.g. `[judges.NAME]` for a sub-table).
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    pub fn problems(&self) -> &'c Problems {
        self.problems
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn span(&self) -> Range<usize> {
        self.span.clone()
    }

    /// The raw value of `key`, marking it as known.
    pub fn get(&self, key: &str) -> Option<&'c Value<'i>> {
        self.asked.borrow_mut().insert(key.to_string());
        self.table.get(key)
    }

    /// The span of `key`'s name, for messages about the key itself.
    pub fn key_span(&self, key: &str) -> Option<Range<usize>> {
        self.table.keys().find(|k| k.get_ref().as_ref() == key).map(|k| k.span())
    }

    /// Every key the table takes in any of its forms: a misspelling is matched against all of
    /// them, and one that this form does not read is said not to apply rather than unknown.
    pub fn vocabulary(&self, keys: &[&str]) {
        self.elsewhere.borrow_mut().extend(keys.iter().map(|k| k.to_string()));
    }

    /// Marks `key` as known without reading it.
    pub fn allow(&self, key: &str) {
        self.asked.borrow_mut().insert(key.to_string());
    }

    pub fn has(&self, key: &str) -> bool {
        self.table.contains_key(key)
    }

    /// Keys present in the table, in order.
    pub fn keys(&self) -> Vec<(String, Range<usize>)> {
        self.table.keys().map(|k| (k.get_ref().to_string(), k.span())).collect()
    }

    pub fn missing(&self, key: &str) {
        self.problems.push(self.span.clone(), format!("missing key `{key}` in {}", self.name));
    }

    fn wrong_type(&self, key: &str, value: &Value<'i>, expected: &str) {
        self.problems.push(value.span(), format!("`{key}` in {} must be {expected}, found {}", self.name, type_name(value.get_ref())));
    }

    pub fn string(&self, key: &str) -> Option<Spanned<String>> {
        let value = self.get(key)?;
        match value.get_ref() {
            DeValue::String(s) => Some(Spanned::new(value.span(), s.to_string())),
            _ => {
                self.wrong_type(key, value, "a string");
                None
            }
        }
    }

    pub fn required_string(&self, key: &str) -> Option<Spanned<String>> {
        if !self.has(key) {
            self.allow(key);
            self.missing(key);
            return None;
        }
        self.string(key)
    }

    pub fn integer(&self, key: &str, min: i64, max: i64) -> Option<Spanned<i64>> {
        let value = self.get(key)?;
        match as_i64(value.get_ref()) {
            Some(i) if (min..=max).contains(&i) => Some(Spanned::new(value.span(), i)),
            Some(i) => {
                self.problems.push(value.span(), format!("`{key}` in {} must be between {min} and {max}, found {i}", self.name));
                None
            }
            None => {
                self.wrong_type(key, value, "an integer");
                None
            }
        }
    }

    pub fn float(&self, key: &str, min: f64, max: f64) -> Option<Spanned<f64>> {
        let value = self.get(key)?;
        match as_f64(value.get_ref()) {
            Some(f) if f >= min && f <= max => Some(Spanned::new(value.span(), f)),
            Some(f) => {
                self.problems.push(value.span(), format!("`{key}` in {} must be between {min} and {max}, found {f}", self.name));
                None
            }
            None => {
                self.wrong_type(key, value, "a number");
                None
            }
        }
    }

    pub fn boolean(&self, key: &str) -> Option<bool> {
        let value = self.get(key)?;
        match value.get_ref() {
            DeValue::Boolean(b) => Some(*b),
            _ => {
                self.wrong_type(key, value, "a boolean");
                None
            }
        }
    }

    /// An array of strings.
    pub fn strings(&self, key: &str) -> Option<Vec<Spanned<String>>> {
        let value = self.get(key)?;
        let DeValue::Array(items) = value.get_ref() else {
            self.wrong_type(key, value, "an array of strings");
            return None;
        };
        let mut out = Vec::new();
        let mut ok = true;
        for item in items.iter() {
            match item.get_ref() {
                DeValue::String(s) => out.push(Spanned::new(item.span(), s.to_string())),
                other => {
                    ok = false;
                    self.problems.push(item.span(), format!("`{key}` in {} must hold only strings, found {}", self.name, type_name(other)));
                }
            }
        }
        ok.then_some(out)
    }

    /// A table of string values (e.g. an environment).
    pub fn string_map(&self, key: &str) -> Option<Vec<(Spanned<String>, Spanned<String>)>> {
        let value = self.get(key)?;
        let DeValue::Table(table) = value.get_ref() else {
            self.wrong_type(key, value, "a table of strings");
            return None;
        };
        let mut out = Vec::new();
        for (k, v) in table.iter() {
            match v.get_ref() {
                DeValue::String(s) => out.push((Spanned::new(k.span(), k.get_ref().to_string()), Spanned::new(v.span(), s.to_string()))),
                other => self.problems.push(v.span(), format!("`{key}.{}` in {} must be a string, found {}", k.get_ref(), self.name, type_name(other))),
            }
        }
        Some(out)
    }

    /// A sub-table, read with its own reader and named by its whole path: `[reviewers.ruff]`,
    /// as the manifest writes it, never `[ruff]`.
    pub fn table(&self, key: &str) -> Option<TableReader<'c, 'i>> {
        let value = self.get(key)?;
        match value.get_ref() {
            DeValue::Table(t) => {
                let (name, path) = match &self.path {
                    Some(parent) => {
                        let path = if parent.is_empty() { key.to_string() } else { format!("{parent}.{key}") };
                        (format!("[{path}]"), Some(path))
                    }
                    None => (format!("`{key}` in {}", self.name), None),
                };
                let mut reader = TableReader::new(self.problems, t, value.span(), name);
                reader.path = path;
                Some(reader)
            }
            _ => {
                self.wrong_type(key, value, "a table");
                None
            }
        }
    }

    /// An array of tables (`[[key]]`).
    pub fn tables(&self, key: &str) -> Vec<TableReader<'c, 'i>> {
        let Some(value) = self.get(key) else { return Vec::new() };
        let DeValue::Array(items) = value.get_ref() else {
            self.wrong_type(key, value, "an array of tables (`[[{key}]]`)");
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            match item.get_ref() {
                DeValue::Table(t) => {
                    let mut reader = TableReader::new(self.problems, t, item.span(), format!("[[{key}]] #{}", i + 1));
                    reader.path = None;
                    out.push(reader)
                }
                other => self.problems.push(item.span(), format!("`{key}` #{} must be a table, found {}", i + 1, type_name(other))),
            }
        }
        out
    }

    /// Reports every key that nothing asked for, with the closest known key as help.
    pub fn finish(self) {
        let asked = self.asked.into_inner();
        let elsewhere = self.elsewhere.into_inner();
        let known: BTreeSet<&str> = asked.iter().chain(&elsewhere).map(String::as_str).collect();
        for key in self.table.keys() {
            let name = key.get_ref().as_ref();
            if asked.contains(name) {
                continue;
            }
            if elsewhere.contains(name) {
                let here: Vec<&str> = asked.iter().map(String::as_str).collect();
                self.problems.push_with_help(
                    key.span(),
                    format!("`{name}` does not apply to this {}", self.name),
                    format!("keys that apply here: {}", here.join(", ")),
                );
                continue;
            }
            let message = format!("unknown key `{name}` in {}", self.name);
            match super::did_you_mean(name, known.iter().copied()) {
                Some(k) => self.problems.push_with_help(key.span(), message, format!("did you mean `{k}`?")),
                None => {
                    let known: Vec<&str> = known.iter().copied().collect();
                    self.problems.push_with_help(key.span(), message, format!("known keys: {}", known.join(", ")))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sub-table is named by its whole path, as the file writes it: `[reviewers.ruff]`.
    #[test]
    fn sub_tables_are_named_by_their_whole_path() {
        let text = "[reviewers.ruff]\nkind = 1\n[reviewers.ruff.endpoints]\nx = 1\n[[analysis]]\nopts = { a = 1 }\n";
        let doc = DeTable::parse(text).expect("valid TOML");
        let problems = Problems::default();
        let root = TableReader::new(&problems, doc.get_ref(), 0..1, "the manifest");
        let reviewers = root.table("reviewers").expect("reviewers");
        let ruff = reviewers.table("ruff").expect("ruff");
        assert_eq!((reviewers.name(), ruff.name()), ("[reviewers]", "[reviewers.ruff]"));
        assert_eq!(ruff.table("endpoints").expect("endpoints").name(), "[reviewers.ruff.endpoints]");
        assert_eq!(ruff.with_name("[judges.ruff]").table("endpoints").expect("endpoints").name(), "[reviewers.ruff.endpoints]");
        let analysis = root.tables("analysis");
        assert_eq!(analysis[0].table("opts").expect("opts").name(), "`opts` in [[analysis]] #1");
        let ruff = reviewers.table("ruff").expect("ruff");
        ruff.allow("kind");
        ruff.finish();
        let messages: Vec<String> = problems.into_sorted().into_iter().map(|d| d.message).collect();
        assert_eq!(messages, ["unknown key `endpoints` in [reviewers.ruff]"]);
    }
}
