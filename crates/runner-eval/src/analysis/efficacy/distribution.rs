//! A5, category and severity distribution: how each value of an axis (or each cell) spreads
//! its findings over stet's categories and severities.

use crate::analysis::definition::Definition;
use crate::analysis::spec::AnalysisKind;
use crate::analysis::chart::{BarChart, Chart, ChartCells, Named, Series, MAX_CHART_MARKS};
use serde::Deserialize;
use crate::analysis::{
    data::DataList, model::axis_values, model::fmt_num, model::fmt_share, model::missing_note, model::ratio, model::AnalysisInput, model::AnalysisResult,
    model::Table, model::TableCell,
};
use crate::analysis::spec::AnalysisSpec;
use crate::finding::{Category, Severity};
use serde_json::json;
use std::collections::BTreeMap;

/// A group's counts; by category and severity in the order of `Category::ALL` and
/// `Severity::ALL` (an array, not a map: a 100k-cell grid has 100k groups).
#[derive(Default)]
struct Group {
    runs: usize,
    findings: usize,
    by_category: [usize; Category::ALL.len()],
    by_severity: [usize; Severity::ALL.len()],
}

impl Group {
    fn category(&self, c: Category) -> usize {
        Category::ALL.iter().position(|x| *x == c).map_or(0, |i| self.by_category[i])
    }

    fn severity(&self, s: Severity) -> usize {
        Severity::ALL.iter().position(|x| *x == s).map_or(0, |i| self.by_severity[i])
    }

    /// The categories that occur, with their counts, in `Category::ALL` order.
    fn categories(&self) -> impl Iterator<Item = (Category, usize)> + '_ {
        Category::ALL.into_iter().zip(self.by_category).filter(|(_, n)| *n > 0)
    }

    fn severities(&self) -> impl Iterator<Item = (Severity, usize)> + '_ {
        Severity::ALL.into_iter().zip(self.by_severity).filter(|(_, n)| *n > 0)
    }
}

/// `distribution` (A5): findings by category and severity, charted per cell.
pub(crate) const ANALYSIS: Definition = Definition::new(AnalysisKind::DISTRIBUTION, compute).with_charts(charts);

pub fn compute(spec: &AnalysisSpec, input: &AnalysisInput<'_>) -> AnalysisResult {
    let grouping = match spec.axis.as_deref() {
        Some(axis) => format!("value of `{axis}`"),
        None => "cell".to_string(),
    };
    let mut result = AnalysisResult::new(
        spec,
        "A5",
        "Findings by category and severity",
        format!("Findings counted by stet category and by severity per {grouping}, over every successful run and subject; the percentage is the share of that row's findings."),
    );

    // Group labels in matrix order.
    let labels: Vec<String> = match spec.axis.as_deref() {
        Some(axis) => axis_values(input, axis),
        None => input.cells.iter().map(|c| c.id.clone()).collect(),
    };
    let mut groups: BTreeMap<&str, Group> = labels.iter().map(|l| (l.as_str(), Group::default())).collect();
    for run in &input.runs {
        let label = match spec.axis.as_deref() {
            Some(axis) => match run.cell.get(axis) {
                Some(v) => v.render(),
                None => continue,
            },
            None => run.cell.id.clone(),
        };
        let Some(group) = groups.get_mut(label.as_str()) else { continue };
        group.runs += 1;
        group.findings += run.findings.len();
        for f in run.findings {
            if let Some(i) = Category::ALL.iter().position(|c| *c == f.category) {
                group.by_category[i] += 1;
            }
            if let Some(i) = Severity::ALL.iter().position(|s| *s == f.severity) {
                group.by_severity[i] += 1;
            }
        }
    }

    let categories: Vec<Category> = Category::ALL.into_iter().filter(|c| groups.values().any(|g| g.category(*c) > 0)).collect();
    let severities: Vec<Severity> = Severity::ALL.into_iter().filter(|s| groups.values().any(|g| g.severity(*s) > 0)).collect();
    let head = match spec.axis.as_deref() {
        Some(axis) => format!("`{axis}`"),
        None => "Cell".to_string(),
    };

    let mut cat_columns = vec![head.clone(), "Runs".into(), "Findings".into(), "Per run".into()];
    cat_columns.extend(categories.iter().map(|c| c.as_str().to_string()));
    let mut by_category = Table::with_columns("By category", cat_columns);
    let mut sev_columns = vec![head];
    sev_columns.extend(severities.iter().map(|s| s.as_str().to_string()));
    let mut by_severity = Table::with_columns("By severity", sev_columns);
    let mut data = DataList::default();
    for label in &labels {
        let Some(g) = groups.get(label.as_str()) else { continue };
        let mut row = vec![format!("`{label}`").into(), g.runs.into(), g.findings.into(), fmt_num(ratio(g.findings as f64, g.runs as f64), 2)];
        row.extend(categories.iter().map(|c| fmt_share(g.category(*c), g.findings)));
        by_category.push(row);
        let mut row = vec![TableCell::from(format!("`{label}`"))];
        row.extend(severities.iter().map(|s| fmt_share(g.severity(*s), g.findings)));
        by_severity.push(row);
        data.push(&json!({
            "source": match spec.axis.as_deref() { Some(axis) => format!("{axis}={label}"), None => label.clone() },
            "runs": g.runs,
            "findings": g.findings,
            "by_category": g.categories().map(|(c, n)| (c.as_str().to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
            "by_severity": g.severities().map(|(s, n)| (s.as_str().to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
        }));
    }
    if categories.is_empty() {
        result.notes.push("No run produced any finding, so there is nothing to distribute.".into());
    }
    result.tables.push(by_category);
    result.tables.push(by_severity);
    result.data = data.finish();
    result.notes.push("Only categories and severities that occur are shown.".into());
    result.notes.extend(missing_note(input));
    result
}

/// One row of A5's data: a cell's or axis value's findings by category and by severity.
#[derive(Deserialize)]
struct SpreadRow {
    source: Option<String>,
    #[serde(default)]
    by_category: Counts,
    #[serde(default)]
    by_severity: Counts,
}

/// A5's data read in one pass: how many rows it has, the rows themselves while there are no
/// more than a chart draws (a 100k-cell grid's are counted, not held), and the (table, key)
/// pairs with a non-zero count in any row. The data is one row object, or an array of them.
#[derive(Default)]
struct Spread {
    count: usize,
    rows: Vec<SpreadRow>,
    occurring: std::collections::HashSet<(&'static str, String)>,
}

impl Spread {
    fn add(&mut self, row: SpreadRow) {
        for (table, counts) in [("by_category", &row.by_category), ("by_severity", &row.by_severity)] {
            for (key, n) in &counts.0 {
                if *n > 0.0 {
                    self.occurring.insert((table, key.clone()));
                }
            }
        }
        self.count += 1;
        if self.count <= MAX_CHART_MARKS {
            self.rows.push(row);
        }
    }
}

impl<'de> Deserialize<'de> for Spread {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Spread;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an A5 row or an array of them")
            }
            fn visit_seq<S: serde::de::SeqAccess<'de>>(self, mut seq: S) -> Result<Spread, S::Error> {
                let mut spread = Spread::default();
                while let Some(row) = seq.next_element::<SpreadRow>()? {
                    spread.add(row);
                }
                Ok(spread)
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, map: M) -> Result<Spread, M::Error> {
                let mut spread = Spread::default();
                spread.add(SpreadRow::deserialize(serde::de::value::MapAccessDeserializer::new(map))?);
                Ok(spread)
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// A JSON object of counts as a list: a few bytes per key, where a map would hold a node.
#[derive(Default)]
struct Counts(Vec<(String, f64)>);

impl Counts {
    fn get(&self, key: &str) -> Option<f64> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, n)| *n)
    }
}

impl<'de> Deserialize<'de> for Counts {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Counts;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object of counts")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<Counts, M::Error> {
                let mut counts = Vec::new();
                while let Some(entry) = map.next_entry::<String, f64>()? {
                    counts.push(entry);
                }
                Ok(Counts(counts))
            }
        }
        deserializer.deserialize_map(Visitor)
    }
}

/// A5's charts: findings per category and per severity, one bar per cell or axis value.
pub(crate) fn charts(analysis: &AnalysisResult, cells: &dyn ChartCells) -> Vec<Named> {
    let Spread { count: row_count, rows, occurring } = analysis.data_as().unwrap_or_default();
    let count = |row: &SpreadRow, table: &str, key: &str| if table == "by_category" { &row.by_category } else { &row.by_severity }.get(key);
    let mut labelled = false;
    let mut names: Vec<String> = Vec::new();
    let mut out = Vec::new();
    let categories: Vec<&str> = Category::ALL.iter().map(|c| c.as_str()).collect();
    let severities: Vec<&str> = Severity::ALL.iter().map(|s| s.as_str()).collect();
    for (name, table, order, what) in [("category", "by_category", &categories, "stet category"), ("severity", "by_severity", &severities, "severity")] {
        let groups: Vec<&str> = order.iter().copied().filter(|k| occurring.contains(&(table, k.to_string()))).collect();
        if groups.is_empty() {
            continue;
        }
        let title = format!("Findings by {what}");
        // Past this, `rows` holds only the first rows: the chart is not drawn.
        if groups.len() * row_count > MAX_CHART_MARKS {
            out.push(Named { name, chart: Chart::TooLarge { title, marks: groups.len() * row_count } });
            continue;
        }
        if !labelled {
            names = rows.iter().map(|r| cells.label(r.source.as_deref().unwrap_or("?"))).collect();
            labelled = true;
        }
        out.push(Named {
            name,
            chart: Chart::Bars(BarChart {
                title,
                note: "Findings over every successful run and subject; only the values that occur are shown.".into(),
                x_label: "findings".into(),
                groups: groups.iter().map(|g| g.to_string()).collect(),
                series: rows
                    .iter()
                    .zip(&names)
                    .map(|(row, name)| Series { name: name.clone(), values: groups.iter().map(|g| Some(count(row, table, g).unwrap_or(0.0))).collect() })
                    .collect(),
                range: None,
                digits: 0,
            }),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::spec::AnalysisKind;
    use crate::analysis::test_support::{finding, s, spec, with_kind, Fixture};

    fn fixture() -> Fixture {
        let mut fx = Fixture::new(&[("model", vec![s("a"), s("b")]), ("t", vec![s("0"), s("1")])], 1);
        let sec = |l| with_kind(finding("f", l, "m"), Category::Security, Severity::Error);
        let style = |l| with_kind(finding("f", l, "m"), Category::Style, Severity::Nitpick);
        fx.add("model=a,t=0", 1, "s", vec![sec(1), style(2), style(3)]);
        fx.add("model=a,t=1", 1, "s", vec![style(4)]);
        fx.add("model=b,t=0", 1, "s", vec![]);
        fx
    }

    #[test]
    fn counts_per_axis_value_with_shares() {
        let fx = fixture();
        let out = compute(&spec(AnalysisKind::DISTRIBUTION, Some("model")), &fx.input());
        assert_eq!(out.test_id, "A5");
        assert_eq!(out.data[0]["source"], "model=a");
        assert_eq!(out.data[0]["by_category"]["style"], 3);
        assert_eq!(out.data[0]["by_severity"]["error"], 1);
        assert_eq!(out.data[1]["findings"], 0);
        assert_eq!(out.tables[0].columns, vec!["`model`", "Runs", "Findings", "Per run", "security", "style"]);
        assert_eq!(out.tables[0].rows[0], vec!["`a`", "2", "4", "2.00", "1 (25.0%)", "3 (75.0%)"]);
        assert_eq!(out.tables[0].rows[1], vec!["`b`", "1", "0", "0.00", "0", "0"]);
        assert_eq!(out.tables[1].columns, vec!["`model`", "error", "nitpick"]);
    }

    #[test]
    fn per_cell_without_axis() {
        let fx = fixture();
        let out = compute(&spec(AnalysisKind::DISTRIBUTION, None), &fx.input());
        assert_eq!(out.tables[0].rows.len(), 4);
        assert_eq!(out.tables[0].rows[3], vec!["`model=b,t=1`", "0", "0", "–", "0", "0"]);
        assert_eq!(out.data[1]["by_category"]["style"], 1);
    }
}
