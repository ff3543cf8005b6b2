//! The reviewer-output schema (`schemas/reviewer-output.schema.json`), read at build time, and
//! the validator that checks values against it: the parser's finding and usage checks and the
//! `schema` analysis both go through it, so the file is the one statement of the rules.
//!
//! The validator implements the JSON Schema keywords the file uses — `type`, `enum`, `const`,
//! `minimum`, `maximum`, `pattern`, `required`, `properties`, `items`, `$ref` (within the file),
//! `allOf`, `if`/`then` — with JSON Schema 2020-12's meaning; [`unsupported_keywords`] names any
//! other keyword, and a test keeps that list empty, so the file cannot state a rule that is not
//! enforced.

use serde_json::Value;
use std::sync::LazyLock;

/// The schema file's text, as shipped.
pub(crate) const SCHEMA_TEXT: &str = include_str!("../../../../schemas/reviewer-output.schema.json");

/// The schema, parsed once.
static SCHEMA: LazyLock<Result<Value, String>> =
    LazyLock::new(|| serde_json::from_str(SCHEMA_TEXT).map_err(|e| format!("schemas/reviewer-output.schema.json is not JSON: {e}")));

/// Keywords the validator applies.
#[cfg(test)]
const APPLIED: [&str; 13] = ["type", "enum", "const", "minimum", "maximum", "pattern", "required", "properties", "items", "$ref", "allOf", "if", "then"];
/// Keywords that only annotate.
#[cfg(test)]
const ANNOTATIONS: [&str; 6] = ["$schema", "$id", "$defs", "title", "description", "$comment"];

/// One broken rule: where in the value (`[]` for the value itself), and what.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Violation {
    /// The instance path, one key or index per step.
    pub path: Vec<String>,
    pub rule: Rule,
}

/// The kind of rule broken.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Rule {
    /// A `required` key is absent.
    Missing(String),
    /// `type`: the types allowed.
    Type(Vec<String>),
    /// `enum` or `const`: the values allowed.
    OneOf(Vec<Value>),
    Minimum(f64),
    Maximum(f64),
    Pattern(String),
    /// The schema itself is unreadable or names a definition it lacks.
    Schema(String),
}

impl Violation {
    /// `line`, `range.start`, `evidence_lines[0]`; `value` for the value itself.
    pub(crate) fn at(&self) -> String {
        if self.path.is_empty() {
            return "value".into();
        }
        let mut out = String::new();
        for step in &self.path {
            if step.parse::<usize>().is_ok() {
                out.push_str(&format!("[{step}]"));
            } else {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(step);
            }
        }
        out
    }

    /// The rule in words, about `value` (the part of the instance at [`Self::path`]).
    pub(crate) fn describe(&self, value: Option<&Value>) -> String {
        let at = self.at();
        let shown = value.map(Value::to_string).unwrap_or_default();
        match &self.rule {
            Rule::Missing(key) => format!("missing `{key}`"),
            Rule::Type(types) => format!("{at} {shown} is not {}", types.iter().map(|t| article(t)).collect::<Vec<_>>().join(" or ")),
            Rule::OneOf(values) => {
                format!(
                    "{at} {shown} is not one of {}",
                    values.iter().map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())).collect::<Vec<_>>().join(", ")
                )
            }
            Rule::Minimum(m) => format!("{at} {shown} is below {}", number(*m)),
            Rule::Maximum(m) => format!("{at} {shown} is above {}", number(*m)),
            Rule::Pattern(p) => format!("{at} {shown} does not match `{p}`"),
            Rule::Schema(why) => why.clone(),
        }
    }
}

fn article(json_type: &str) -> String {
    match json_type {
        "integer" => "a whole number".into(),
        "array" | "object" => format!("an {json_type}"),
        "null" => "null".into(),
        other => format!("a {other}"),
    }
}

/// `1` for 1.0, `0.5` for 0.5.
pub(crate) fn number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        n.to_string()
    }
}

/// The schema, or why it cannot be read.
pub(crate) fn schema() -> Result<&'static Value, String> {
    SCHEMA.as_ref().map_err(Clone::clone)
}

/// The definition `name` under `$defs` (`finding`, `usage`, `event`), or `""` for the document.
pub(crate) fn definition(name: &str) -> Result<&'static Value, String> {
    let root = schema()?;
    if name.is_empty() {
        return Ok(root);
    }
    root.get("$defs").and_then(|d| d.get(name)).ok_or_else(|| format!("schemas/reviewer-output.schema.json has no `$defs/{name}`"))
}

/// Every rule of definition `name` that `value` breaks, in the order the schema states them
/// (`required` before `properties`).
pub(crate) fn validate(name: &str, value: &Value) -> Vec<Violation> {
    let mut out = Vec::new();
    match (schema(), definition(name)) {
        (Ok(root), Ok(def)) => check(root, def, value, &mut Vec::new(), &mut out),
        (Err(e), _) | (_, Err(e)) => out.push(Violation { path: Vec::new(), rule: Rule::Schema(e) }),
    }
    out
}

/// The value at `path` inside `value`.
pub(crate) fn pointer<'v>(value: &'v Value, path: &[String]) -> Option<&'v Value> {
    path.iter().try_fold(value, |v, step| match v {
        Value::Array(items) => step.parse::<usize>().ok().and_then(|i| items.get(i)),
        Value::Object(map) => map.get(step),
        _ => None,
    })
}

fn type_matches(name: &str, value: &Value) -> bool {
    match name {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        // JSON Schema: a number with a zero fractional part (`3.0` too).
        "integer" => value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0),
        _ => false,
    }
}

/// Whether `value` satisfies `schema` (used for `if`).
fn satisfies(root: &Value, schema: &Value, value: &Value) -> bool {
    let mut out = Vec::new();
    check(root, schema, value, &mut Vec::new(), &mut out);
    out.is_empty()
}

fn check(root: &Value, schema: &Value, value: &Value, path: &mut Vec<String>, out: &mut Vec<Violation>) {
    let Some(rules) = schema.as_object() else { return };
    let push = |out: &mut Vec<Violation>, path: &[String], rule: Rule| out.push(Violation { path: path.to_vec(), rule });
    if let Some(reference) = rules.get("$ref").and_then(Value::as_str) {
        match reference.strip_prefix("#/$defs/").and_then(|name| root.get("$defs").and_then(|d| d.get(name))) {
            Some(target) => check(root, target, value, path, out),
            None => push(out, path, Rule::Schema(format!("the schema's `$ref` {reference} names no definition"))),
        }
    }
    if let Some(types) = rules.get("type") {
        let names: Vec<String> = match types {
            Value::String(s) => vec![s.clone()],
            Value::Array(items) => items.iter().filter_map(Value::as_str).map(str::to_string).collect(),
            _ => Vec::new(),
        };
        if !names.iter().any(|t| type_matches(t, value)) {
            push(out, path, Rule::Type(names));
            // The other rules about this value would only restate it.
            return;
        }
    }
    if let Some(Value::Array(allowed)) = rules.get("enum") {
        if !allowed.contains(value) {
            push(out, path, Rule::OneOf(allowed.clone()));
        }
    }
    if let Some(allowed) = rules.get("const") {
        if allowed != value {
            push(out, path, Rule::OneOf(vec![allowed.clone()]));
        }
    }
    if let Some(n) = value.as_f64() {
        if let Some(min) = rules.get("minimum").and_then(Value::as_f64) {
            if n < min {
                push(out, path, Rule::Minimum(min));
            }
        }
        if let Some(max) = rules.get("maximum").and_then(Value::as_f64) {
            if n > max {
                push(out, path, Rule::Maximum(max));
            }
        }
    }
    if let (Some(text), Some(pattern)) = (value.as_str(), rules.get("pattern").and_then(Value::as_str)) {
        match regex::Regex::new(pattern) {
            Ok(re) if re.is_match(text) => {}
            Ok(_) => push(out, path, Rule::Pattern(pattern.to_string())),
            Err(e) => push(out, path, Rule::Schema(format!("the schema's pattern `{pattern}` is not a regular expression: {e}"))),
        }
    }
    if let Some(object) = value.as_object() {
        if let Some(Value::Array(required)) = rules.get("required") {
            for key in required.iter().filter_map(Value::as_str) {
                if !object.contains_key(key) {
                    push(out, path, Rule::Missing(key.to_string()));
                }
            }
        }
        if let Some(Value::Object(properties)) = rules.get("properties") {
            for (key, sub) in properties {
                if let Some(v) = object.get(key) {
                    path.push(key.clone());
                    check(root, sub, v, path, out);
                    path.pop();
                }
            }
        }
    }
    if let (Some(items), Some(sub)) = (value.as_array(), rules.get("items")) {
        for (i, item) in items.iter().enumerate() {
            path.push(i.to_string());
            check(root, sub, item, path, out);
            path.pop();
        }
    }
    if let Some(Value::Array(all)) = rules.get("allOf") {
        for sub in all {
            check(root, sub, value, path, out);
        }
    }
    if let (Some(condition), Some(then)) = (rules.get("if"), rules.get("then")) {
        if satisfies(root, condition, value) {
            check(root, then, value, path, out);
        }
    }
}

/// Keywords the schema file uses that the validator neither applies nor treats as an
/// annotation, each with where it is (`$defs/finding/properties/x/format`): a test holds the
/// schema file to what the validator applies.
#[cfg(test)]
pub(crate) fn unsupported_keywords(schema: &Value) -> Vec<String> {
    fn walk(schema: &Value, at: &str, out: &mut Vec<String>) {
        let Some(rules) = schema.as_object() else { return };
        for (key, sub) in rules {
            let here = format!("{at}/{key}");
            if !APPLIED.contains(&key.as_str()) && !ANNOTATIONS.contains(&key.as_str()) {
                out.push(here.clone());
            }
            match key.as_str() {
                "properties" | "$defs" => {
                    for (name, s) in sub.as_object().into_iter().flatten() {
                        walk(s, &format!("{here}/{name}"), out);
                    }
                }
                "items" | "if" | "then" => walk(sub, &here, out),
                "allOf" => {
                    for (i, s) in sub.as_array().into_iter().flatten().enumerate() {
                        walk(s, &format!("{here}/{i}"), out);
                    }
                }
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(schema, "", &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::{Category, Severity};
    use serde_json::json;

    #[test]
    fn the_schema_file_parses_and_uses_only_the_keywords_the_validator_applies() {
        let root = schema().expect("the schema parses");
        assert_eq!(unsupported_keywords(root), Vec::<String>::new());
        // The walk does see a keyword it does not apply.
        assert_eq!(unsupported_keywords(&json!({"properties": {"a": {"format": "uri"}}})), vec!["/properties/a/format"]);
        for name in ["finding", "usage", "event", "count"] {
            assert!(definition(name).is_ok(), "{name}");
        }
    }

    #[test]
    fn the_schema_names_the_severities_and_categories_runner_knows() {
        let finding = definition("finding").expect("finding");
        let listed = |field: &str| -> Vec<String> {
            finding["properties"][field]["enum"].as_array().expect("enum").iter().map(|v| v.as_str().expect("text").to_string()).collect()
        };
        assert_eq!(listed("severity"), Severity::ALL.iter().map(|s| s.as_str().to_string()).collect::<Vec<_>>());
        assert_eq!(listed("category"), Category::ALL.iter().map(|c| c.as_str().to_string()).collect::<Vec<_>>());
    }

    #[test]
    fn violations_name_the_place_and_the_rule() {
        let ok = json!({"file": "a.py", "severity": "info", "category": "bug", "confidence": 1, "message": "m", "line": 3, "range": {"start": 3, "end": 4}});
        assert_eq!(validate("finding", &ok), vec![]);
        let bad = json!({"file": "a.py", "severity": "fatal", "category": "bug", "confidence": "high", "message": " ", "range": {"start": 0}, "evidence_lines": [1, -2]});
        let found: Vec<String> = validate("finding", &bad).iter().map(|v| v.describe(pointer(&bad, &v.path))).collect();
        assert!(found.contains(&"severity \"fatal\" is not one of error, warning, info, nitpick".to_string()), "{found:?}");
        assert!(found.contains(&"confidence \"high\" is not a number".to_string()), "{found:?}");
        assert!(found.contains(&"message \" \" does not match `\\S`".to_string()), "{found:?}");
        assert!(found.contains(&"range.start 0 is below 1".to_string()), "{found:?}");
        assert!(found.contains(&"evidence_lines[1] -2 is below 0".to_string()), "{found:?}");
        assert_eq!(found.len(), 5, "{found:?}");
        assert_eq!(validate("finding", &json!([])).len(), 1);
        // `3.0` is a whole number, as JSON Schema says.
        assert_eq!(validate("usage", &json!({"prompt_tokens": 3.0})), vec![]);
        assert_eq!(validate("usage", &json!({"prompt_tokens": 3.5})).len(), 1);
    }

    #[test]
    fn events_are_checked_by_their_type() {
        assert_eq!(validate("event", &json!({"type": "progress", "msg": "x"})), vec![]);
        assert_eq!(validate("event", &json!({"type": "usage", "input_tokens": 4})), vec![]);
        assert_eq!(validate("event", &json!({"type": "usage", "data": {"input_tokens": -4}})).len(), 1);
        let missing_data = validate("event", &json!({"type": "finding"}));
        assert_eq!(missing_data, vec![Violation { path: vec![], rule: Rule::Missing("data".into()) }]);
        assert_eq!(validate("event", &json!({"type": "chatter"})).len(), 1);
        assert_eq!(validate("", &json!({"findings": {}})).len(), 1);
    }
}
