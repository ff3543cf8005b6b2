//! Matrix expansion: axes × values in a documented, deterministic order.
//!
//! Order: the cartesian product of the axes in manifest order, the last axis varying fastest
//! (like nested loops), each axis's values in the order written. A cell's id is built from
//! its values (`model=a,temperature=0.2`), never from its position, so adding a value to an
//! axis leaves every other cell's id and cache key unchanged.

use crate::manifest::{AxisValue, Matrix};
use serde::Serialize;
use std::collections::BTreeMap;

/// One combination of axis values.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    /// `axis=value` pairs in manifest axis order, joined with `,`; `default` for an empty matrix.
    pub id: String,
    /// The same values keyed by axis name (sorted, for hashing and templates).
    pub values: BTreeMap<String, AxisValue>,
}

impl Cell {
    pub fn get(&self, axis: &str) -> Option<&AxisValue> {
        self.values.get(axis)
    }

    /// The id without one axis, to group cells that differ only in that axis.
    pub fn id_without(&self, axis: &str, order: &[String]) -> String {
        let parts: Vec<String> = order
            .iter()
            .filter(|a| a.as_str() != axis)
            .filter_map(|a| self.values.get(a).map(|v| format!("{a}={}", v.render())))
            .collect();
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
        .map(|pairs| {
            let id = if pairs.is_empty() {
                "default".to_string()
            } else {
                pairs.iter().map(|(k, v)| format!("{k}={}", v.render())).collect::<Vec<_>>().join(",")
            };
            Cell { id, values: pairs.into_iter().collect() }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::Axis;
    use proptest::prelude::*;

    fn matrix(axes: &[(&str, &[&str])]) -> Matrix {
        Matrix {
            axes: axes
                .iter()
                .map(|(n, vs)| Axis { name: n.to_string(), values: vs.iter().map(|v| AxisValue::Str(v.to_string())).collect() })
                .collect(),
            repeat: 1,
        }
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
            let m = Matrix {
                axes: names.iter().zip(&values).map(|(n, vs)| Axis { name: n.clone(), values: vs.iter().map(|v| AxisValue::Str(v.clone())).collect() }).collect(),
                repeat: 1,
            };
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
