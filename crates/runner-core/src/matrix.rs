//! The experiment matrix (axes, values, cells) and its expansion: axes × values in a documented, deterministic order.
//!
//! Order: the cartesian product of the axes in manifest order, the last axis varying fastest
//! (like nested loops), each axis's values in the order written. A cell's id is built from
//! its values (`model=a,temperature=0.2`), never from its position, so adding a value to an
//! axis leaves every other cell's id and cache key unchanged.

use serde::{Serialize, Serializer};
use std::fmt;

/// One value of a matrix axis.
#[derive(Debug, Clone, PartialEq, PartialOrd, Serialize)]
#[serde(untagged)]
pub enum AxisValue {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl AxisValue {
    /// The text a template sees and a cell id is built from.
    pub fn render(&self) -> String {
        match self {
            Self::Str(s) => s.clone(),
            Self::Int(i) => i.to_string(),
            Self::Float(f) => format_float(*f),
            Self::Bool(b) => b.to_string(),
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Self::Str(s) => serde_json::Value::String(s.clone()),
            Self::Int(i) => serde_json::Value::from(*i),
            Self::Float(f) => serde_json::Value::from(*f),
            Self::Bool(b) => serde_json::Value::Bool(*b),
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Self::Int(i) => Some(*i as f64),
            Self::Float(f) => Some(*f),
            Self::Str(s) => s.parse().ok(),
            Self::Bool(_) => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Self::Int(i) => Some(*i),
            Self::Str(s) => s.parse().ok(),
            Self::Float(f) if f.fract() == 0.0 => Some(*f as i64),
            _ => None,
        }
    }
}

/// Floats print with at least one decimal so `0.0` and `0` stay distinct in ids.
pub fn format_float(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        format!("{f:.1}")
    } else {
        format!("{f}")
    }
}

impl fmt::Display for AxisValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render())
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Axis {
    pub name: String,
    pub values: Vec<AxisValue>,
}

/// Named axes in manifest order, plus the number of repeats of every cell, less the cells
/// `exclude` drops.
#[derive(Debug, Clone, Serialize)]
pub struct Matrix {
    pub axes: Vec<Axis>,
    pub repeat: u32,
    /// `[matrix] exclude = [{axis = value, …}, …]`: a cell is dropped when it has every
    /// value of one of these (each value one of its axis's values).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<Exclusion>,
}

/// One `exclude` entry: axis name → value, by axis name.
pub type Exclusion = Vec<(String, AxisValue)>;

impl Matrix {
    /// Axes and repeats, nothing excluded.
    pub fn new(axes: Vec<Axis>, repeat: u32) -> Self {
        Self { axes, repeat, exclude: Vec::new() }
    }

    pub fn axis(&self, name: &str) -> Option<&Axis> {
        self.axes.iter().find(|a| a.name == name)
    }

    /// Whether a cell with these values is excluded.
    pub fn excludes<'a>(&self, value_of: impl Fn(&str) -> Option<&'a AxisValue>) -> bool {
        self.exclude.iter().any(|rule| rule.iter().all(|(axis, value)| value_of(axis) == Some(value)))
    }

    /// How many of the axes' combinations `exclude` drops, counted over the axes it names only
    /// (each combination of those stands for the product of the other axes' sizes); `None`
    /// when that count does not fit 64 bits or those axes alone combine past `limit`.
    pub fn excluded_cells(&self, limit: u64) -> Option<u64> {
        if self.exclude.is_empty() {
            return Some(0);
        }
        let named: Vec<&Axis> = self.axes.iter().filter(|a| self.exclude.iter().any(|r| r.iter().any(|(n, _)| *n == a.name))).collect();
        let others = self.axes.iter().filter(|a| !named.iter().any(|n| n.name == a.name)).try_fold(1u64, |n, a| n.checked_mul(a.values.len() as u64))?;
        let combinations = named.iter().try_fold(1u64, |n, a| n.checked_mul(a.values.len() as u64)).filter(|n| *n <= limit)?;
        let sub = Matrix { axes: named.into_iter().cloned().collect(), repeat: 1, exclude: self.exclude.clone() };
        let mut dropped = 0u64;
        let mut at = vec![0usize; sub.axes.len()];
        for _ in 0..combinations {
            dropped += u64::from(sub.excludes(|name| sub.axes.iter().position(|a| a.name == name).map(|i| &sub.axes[i].values[at[i]])));
            // The next combination, last axis fastest.
            for i in (0..at.len()).rev() {
                at[i] += 1;
                if at[i] < sub.axes[i].values.len() {
                    break;
                }
                at[i] = 0;
            }
        }
        dropped.checked_mul(others)
    }
}

/// One combination of axis values.
/// A cell's values by axis name, sorted: a flat list (a handful of axes), not a tree.
pub type CellValues = litemap::LiteMap<String, AxisValue>;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    /// `axis=value` pairs in manifest axis order, joined with `,`; `default` for an empty matrix.
    pub id: String,
    /// The same values keyed by axis name (sorted, for hashing and templates).
    pub values: CellValues,
}

impl Cell {
    pub fn get(&self, axis: &str) -> Option<&AxisValue> {
        self.values.get(axis)
    }

    /// The id without one axis, to group cells that differ only in that axis.
    pub fn id_without(&self, axis: &str, order: &[String]) -> String {
        let parts: Vec<String> =
            order.iter().filter(|a| a.as_str() != axis).filter_map(|a| self.values.get(a).map(|v| format!("{a}={}", v.render()))).collect();
        if parts.is_empty() {
            "all".to_string()
        } else {
            parts.join(",")
        }
    }
}

/// Expands the matrix into cells, in the documented order.
pub fn expand(matrix: &Matrix) -> Vec<Cell> {
    let mut cells: Vec<Vec<(String, AxisValue)>> = vec![Vec::new()];
    for axis in &matrix.axes {
        let mut next = Vec::with_capacity(cells.len() * axis.values.len());
        for prefix in &cells {
            for value in &axis.values {
                let mut cell = prefix.clone();
                cell.push((axis.name.clone(), value.clone()));
                next.push(cell);
            }
        }
        cells = next;
    }
    cells
        .into_iter()
        .filter(|pairs| !matrix.excludes(|name| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v)))
        .map(|pairs| {
            let id =
                if pairs.is_empty() { "default".to_string() } else { pairs.iter().map(|(k, v)| format!("{k}={}", v.render())).collect::<Vec<_>>().join(",") };
            Cell { id, values: pairs.into_iter().collect() }
        })
        .collect()
}

/// A planned run's identity within its plan: its cell, repeat and subject. Shown (and
/// serialized) as its label, `cell #repeat @subject`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RunId {
    pub cell: String,
    pub repeat: u32,
    pub subject: String,
}

impl RunId {
    pub fn new(cell: impl Into<String>, repeat: u32, subject: impl Into<String>) -> Self {
        Self { cell: cell.into(), repeat, subject: subject.into() }
    }
}

impl std::fmt::Display for RunId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} #{} @{}", self.cell, self.repeat, self.subject)
    }
}

impl Serialize for RunId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn matrix(axes: &[(&str, &[&str])]) -> Matrix {
        Matrix::new(axes.iter().map(|(n, vs)| Axis { name: n.to_string(), values: vs.iter().map(|v| AxisValue::Str(v.to_string())).collect() }).collect(), 1)
    }

    #[test]
    fn last_axis_varies_fastest() {
        let cells = expand(&matrix(&[("model", &["a", "b"]), ("t", &["0", "1"])]));
        let ids: Vec<&str> = cells.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["model=a,t=0", "model=a,t=1", "model=b,t=0", "model=b,t=1"]);
    }

    #[test]
    fn empty_matrix_is_one_default_cell() {
        let cells = expand(&matrix(&[]));
        assert_eq!(cells.len(), 1);
        assert_eq!(cells[0].id, "default");
    }

    #[test]
    fn excluded_combinations_are_dropped_and_counted_without_expanding() {
        let mut m = matrix(&[("reviewer", &["builtin", "llm"]), ("model", &["a", "b", "c"]), ("t", &["0", "1"])]);
        let v = |s: &str| AxisValue::Str(s.to_string());
        // The builtin once (model a only), and the llm never with model c at t=1.
        m.exclude = vec![
            vec![("reviewer".into(), v("builtin")), ("model".into(), v("b"))],
            vec![("reviewer".into(), v("builtin")), ("model".into(), v("c"))],
            vec![("model".into(), v("c")), ("t".into(), v("1"))],
        ];
        let ids: Vec<String> = expand(&m).into_iter().map(|c| c.id).collect();
        assert_eq!(
            ids,
            [
                "reviewer=builtin,model=a,t=0",
                "reviewer=builtin,model=a,t=1",
                "reviewer=llm,model=a,t=0",
                "reviewer=llm,model=a,t=1",
                "reviewer=llm,model=b,t=0",
                "reviewer=llm,model=b,t=1",
                "reviewer=llm,model=c,t=0"
            ]
        );
        // 12 combinations, 7 kept: the count agrees without expanding.
        assert_eq!(m.excluded_cells(1000), Some(5));
        assert_eq!(m.excluded_cells(5), None, "the named axes combine past the limit");
    }

    #[test]
    fn id_without_drops_one_axis() {
        let cells = expand(&matrix(&[("model", &["a"]), ("t", &["0"])]));
        let order = vec!["model".to_string(), "t".to_string()];
        assert_eq!(cells[0].id_without("model", &order), "t=0");
    }

    proptest! {
        #[test]
        fn cell_count_is_the_product_and_ids_are_unique(sizes in proptest::collection::vec(1usize..4, 0..4)) {
            let names: Vec<String> = (0..sizes.len()).map(|i| format!("a{i}")).collect();
            let values: Vec<Vec<String>> = sizes.iter().map(|n| (0..*n).map(|v| format!("v{v}")).collect()).collect();
            let m = Matrix::new(names.iter().zip(&values).map(|(n, vs)| Axis { name: n.clone(), values: vs.iter().map(|v| AxisValue::Str(v.clone())).collect() }).collect(), 1);
            let cells = expand(&m);
            prop_assert_eq!(cells.len(), sizes.iter().product::<usize>());
            let ids: std::collections::BTreeSet<_> = cells.iter().map(|c| c.id.clone()).collect();
            prop_assert_eq!(ids.len(), cells.len());
        }

        #[test]
        fn adding_a_value_keeps_existing_ids(extra in "[a-z]{1,5}") {
            let before = expand(&matrix(&[("model", &["a", "b"]), ("t", &["0"])]));
            let values = ["a", "b", extra.as_str()];
            let after = expand(&matrix(&[("model", &values), ("t", &["0"])]));
            for cell in &before {
                prop_assert!(after.iter().any(|c| c.id == cell.id && c.values == cell.values));
            }
        }
    }
}
