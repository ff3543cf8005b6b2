//! The `[matrix]` table: its axes and values, the `exclude` rules, and the checks of axes a
//! reviewer ignores or a known axis misspelled.

use super::*;
use crate::config::{did_you_mean, TableReader, BUILTIN_TEMPLATE_VARS};
use crate::matrix::{Axis, AxisValue, Matrix};
use std::collections::{BTreeSet, HashSet};
use toml::de::DeValue;

pub(super) fn read_matrix(t: &TableReader<'_, '_>) -> Option<Matrix> {
    let mut axes = Vec::new();
    let mut ok = true;
    let repeat = match t.integer("repeat", 1, 10_000) {
        Some(r) => *r.get_ref() as u32,
        None if t.has("repeat") => {
            ok = false;
            1
        }
        None => 1,
    };
    // The axes in the order written (the table itself is sorted by name): the matrix expands
    // in that order and cell ids read in it; keys hash the values by name, so order moves none.
    let mut keys = t.keys();
    keys.sort_by_key(|(_, span)| span.start);
    for (name, key_span) in keys {
        if name == "repeat" || name == "exclude" {
            continue;
        }
        t.allow(&name);
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || BUILTIN_TEMPLATE_VARS.contains(&name.as_str()) {
            t.problems().push(key_span.clone(), format!("axis name `{name}` must be letters, digits and `_`, and not one of {BUILTIN_TEMPLATE_VARS:?}"));
            ok = false;
            continue;
        }
        let Some(value) = t.get(&name) else { continue };
        let DeValue::Array(items) = value.get_ref() else {
            t.problems().push(value.span(), format!("axis `{name}` must be an array of values, found {}", crate::config::reader::type_name(value.get_ref())));
            ok = false;
            continue;
        };
        if items.is_empty() {
            t.problems().push(value.span(), format!("axis `{name}` has no values"));
            ok = false;
            continue;
        }
        let mut values = Vec::new();
        // Rendered values seen so far: a duplicate is found in constant time, so a long axis
        // reads in time linear in its length.
        let mut seen: HashSet<String> = HashSet::with_capacity(items.len());
        for item in items.iter() {
            let v = match item.get_ref() {
                DeValue::String(s) => Some(AxisValue::Str(s.to_string())),
                DeValue::Integer(_) => crate::config::reader::as_i64(item.get_ref()).map(AxisValue::Int),
                DeValue::Float(_) => crate::config::reader::as_f64(item.get_ref()).map(AxisValue::Float),
                DeValue::Boolean(b) => Some(AxisValue::Bool(*b)),
                _ => None,
            };
            match v {
                Some(v) if !seen.insert(v.render()) => {
                    t.problems().push(item.span(), format!("axis `{name}` lists `{}` twice", v.render()));
                    ok = false;
                }
                Some(v) => values.push(v),
                None => {
                    t.problems().push(
                        item.span(),
                        format!("axis `{name}` values must be strings, numbers or booleans, found {}", crate::config::reader::type_name(item.get_ref())),
                    );
                    ok = false;
                }
            }
        }
        if let Some(known) = misspelled_known_axis(&name) {
            t.problems().push_with_help(key_span.clone(), format!("axis `{name}` looks like a misspelling of `{known}`"), format!("did you mean `{known}`?"));
            ok = false;
        }
        check_known_axis(t, &name, &values, value.span());
        axes.push(Axis { name, values });
    }
    // A wrong entry is reported and left out; the matrix stays, so nothing that reads it
    // reports a problem of its own.
    let exclude = read_exclude(t, &axes);
    let matrix = Matrix { axes, repeat, exclude };
    let product = matrix.axes.iter().try_fold(1u64, |n, a| n.checked_mul(a.values.len() as u64));
    if !matrix.exclude.is_empty() && product.is_some() && matrix.excluded_cells(1_000_000) == product {
        t.problems().push(t.get("exclude").map_or_else(|| t.span(), |v| v.span()), "`exclude` drops every cell of the matrix");
    }
    ok.then_some(matrix)
}

/// Axes that mean something to a model reviewer only.
pub(super) const MODEL_AXES: [&str; 4] = ["model", "temperature", "seed", "rag_symbol_max_definitions"];

/// Cells a validation expands at most to look for identical runs.
pub(super) const MAX_CHECKED_CELLS: u64 = 100_000;

/// A built-in reviewer calls no model: a model axis its `name` does not use makes cells that
/// differ only in that axis identical runs. Flagged at the axis, unless `exclude` leaves the
/// reviewer one value of it.
pub(super) fn check_ignored_axes(root: &TableReader<'_, '_>, name: &str, spec: &crate::reviewer::builtin::BuiltinSpec, matrix: &Matrix, by_axis: bool) {
    let used: BTreeSet<String> = crate::config::template_var_regex().captures_iter(&spec.name).map(|c| c[1].to_string()).collect();
    let size = matrix.axes.iter().try_fold(1u64, |n, a| n.checked_mul(a.values.len() as u64));
    if size.is_none_or(|n| n > MAX_CHECKED_CELLS) {
        return;
    }
    let order: Vec<String> = matrix.axes.iter().map(|a| a.name.clone()).collect();
    let cells: Vec<crate::matrix::Cell> =
        crate::matrix::expand(matrix).into_iter().filter(|c| !by_axis || c.get(REVIEWER_AXIS).is_some_and(|v| v.render() == name)).collect();
    for axis in matrix.axes.iter().filter(|a| MODEL_AXES.contains(&a.name.as_str()) && !used.contains(&a.name)) {
        let mut groups: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for cell in &cells {
            *groups.entry(cell.id_without(&axis.name, &order)).or_default() += 1;
        }
        let identical = groups.values().filter(|n| **n > 1).map(|n| n - 1).sum::<usize>();
        if identical == 0 {
            continue;
        }
        let span = root.table("matrix").and_then(|m| m.key_span(&axis.name)).unwrap_or(0..0);
        let help = if by_axis {
            format!("keep one `{}` value for this reviewer: `exclude = [{{{REVIEWER_AXIS} = \"{name}\", {} = …}}]`", axis.name, axis.name)
        } else {
            "remove the axis, or compare against a model reviewer with named reviewers and `exclude` this one's extra cells".to_string()
        };
        root.problems().push_with_help(
            span,
            format!("axis `{}` is ignored by the builtin reviewer `{name}` (it calls no model): {identical} of its cells repeat another's runs", axis.name),
            help,
        );
    }
}

/// `[matrix] exclude = [{axis = value, …}, …]`: each entry names axes of the matrix and one of
/// each one's values; a problem is reported where it is written.
pub(super) fn read_exclude(t: &TableReader<'_, '_>, axes: &[Axis]) -> Vec<crate::matrix::Exclusion> {
    let mut out = Vec::new();
    for entry in t.tables("exclude") {
        let keys = entry.keys();
        if keys.is_empty() {
            entry.problems().push(entry.span(), "an `exclude` entry names no axis: write `{axis = value, …}`");
            continue;
        }
        let (mut rule, mut complete) = (Vec::new(), true);
        for (name, key_span) in keys {
            let Some(value) = entry.get(&name) else { continue };
            let Some(axis) = axes.iter().find(|a| a.name == name) else {
                let message = format!("`exclude` names `{name}`, which is not a matrix axis");
                match did_you_mean(&name, axes.iter().map(|a| a.name.as_str())) {
                    Some(best) => entry.problems().push_with_help(key_span, message, format!("did you mean `{best}`?")),
                    None => entry.problems().push_with_help(
                        key_span,
                        message,
                        format!("axes: {}", axes.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().join(", ")),
                    ),
                }
                complete = false;
                continue;
            };
            let written = match value.get_ref() {
                DeValue::String(s) => Some(s.to_string()),
                DeValue::Integer(_) => crate::config::reader::as_i64(value.get_ref()).map(|i| AxisValue::Int(i).render()),
                DeValue::Float(_) => crate::config::reader::as_f64(value.get_ref()).map(|f| AxisValue::Float(f).render()),
                DeValue::Boolean(b) => Some(b.to_string()),
                _ => None,
            };
            match written.and_then(|w| axis.values.iter().find(|v| v.render() == w)) {
                Some(v) => rule.push((name, v.clone())),
                None => {
                    let values: Vec<String> = axis.values.iter().map(|v| format!("`{}`", v.render())).collect();
                    entry.problems().push_with_help(
                        value.span(),
                        format!("`exclude` names a value axis `{name}` does not have"),
                        format!("its values: {}", values.join(", ")),
                    );
                    complete = false;
                }
            }
        }
        if complete {
            out.push(rule);
        }
    }
    out
}

/// Axes that mean something to runner's reviewers.
pub(crate) const KNOWN_AXES: [&str; 5] = ["model", "ref", "temperature", "rag_symbol_max_definitions", "seed"];

/// The known axis `name` is a misspelling of (at most two edits away, not equal).
pub(super) fn misspelled_known_axis(name: &str) -> Option<&'static str> {
    KNOWN_AXES.iter().copied().find(|k| *k != name && strsim::damerau_levenshtein(k, name) <= 2)
}

/// Axes with a meaning to runner are checked for plausible values.
pub(super) fn check_known_axis(t: &TableReader<'_, '_>, name: &str, values: &[AxisValue], span: std::ops::Range<usize>) {
    let bad = match name {
        "temperature" => values.iter().any(|v| !matches!(v.as_f64(), Some(f) if (0.0..=2.0).contains(&f))),
        "rag_symbol_max_definitions" | "seed" => values.iter().any(|v| !matches!(v.as_i64(), Some(i) if i >= 0)),
        _ => false,
    };
    if bad {
        let expected = if name == "temperature" { "numbers between 0 and 2" } else { "non-negative integers" };
        t.problems().push(span, format!("axis `{name}` must hold {expected}"));
    }
}
