//! A1, same-diff swap: how far the findings of two values of one axis (two models, two
//! prompts, …) coincide on the same subject, exactly and fuzzily.

use crate::analysis::definition::{AxisUse, Definition};
use crate::analysis::spec::AnalysisKind;
use crate::analysis::matching::matcher::{describe_rule, exact_match, fuzzy_match_normalized, match_count, normalized_messages};
use crate::analysis::{
    model::axis_values, model::missing_note, model::one_or_many, model::AnalysisInput, model::AnalysisResult, model::RunView, model::Table, model::TableCell,
};
use crate::analysis::spec::{AnalysisSpec, MatchRule};
use crate::finding::Finding;
use serde::Serialize;
use std::collections::BTreeMap;

/// Overlap counts between the findings of side A and side B.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub count_a: usize,
    pub count_b: usize,
    pub overlap_exact: usize,
    pub overlap_fuzzy: usize,
    pub unique_a: usize,
    pub unique_b: usize,
}

impl Counts {
    /// Counts for one pair of finding lists: one-to-one matches; unique = not fuzzily matched.
    pub(crate) fn of(a: &[Finding], b: &[Finding], rule: &MatchRule) -> Self {
        Self::in_slot(&SlotMatches::new(vec![a, b], rule), 0, 1)
    }

    /// [`Counts::of`] runs `x` and `y` of one slot.
    fn in_slot(slot: &SlotMatches<'_>, x: usize, y: usize) -> Self {
        let (a, b) = (slot.runs[x], slot.runs[y]);
        let exact = match_count(a.len(), b.len(), |i, j| exact_match(&a[i], &b[j]));
        let fuzzy = match_count(a.len(), b.len(), |i, j| slot.fuzzy(x, i, y, j));
        Self { count_a: a.len(), count_b: b.len(), overlap_exact: exact, overlap_fuzzy: fuzzy, unique_a: a.len() - fuzzy, unique_b: b.len() - fuzzy }
    }

    fn add(&mut self, other: Counts) {
        self.count_a += other.count_a;
        self.count_b += other.count_b;
        self.overlap_exact += other.overlap_exact;
        self.overlap_fuzzy += other.overlap_fuzzy;
        self.unique_a += other.unique_a;
        self.unique_b += other.unique_b;
    }

    fn cells(&self) -> [TableCell; 6] {
        [self.count_a, self.count_b, self.overlap_exact, self.overlap_fuzzy, self.unique_a, self.unique_b].map(TableCell::from)
    }

    /// The counts as `data` lists them: `(key, value)`, keys in the order a JSON map sorts them.
    fn entries(&self) -> [(&'static str, usize); 6] {
        [
            ("count_a", self.count_a),
            ("count_b", self.count_b),
            ("overlap_exact", self.overlap_exact),
            ("overlap_fuzzy", self.overlap_fuzzy),
            ("unique_a", self.unique_a),
            ("unique_b", self.unique_b),
        ]
    }
}

/// Counts in `data` (`per_subject`): an object of [`Counts::entries`].
impl Serialize for Counts {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.entries())
    }
}

/// Which findings of one slot's runs (one subject and repeat, the other axes equal) match
/// fuzzily across runs: every pair compared once, each message normalized once, and read by
/// both the pair counts and the unique-finding counts.
struct SlotMatches<'r> {
    runs: Vec<&'r [Finding]>,
    /// Where each run's findings start in the flat numbering.
    starts: Vec<usize>,
    /// Flat finding × flat finding; only pairs from different runs are filled.
    fuzzy: Vec<bool>,
    total: usize,
}

impl<'r> SlotMatches<'r> {
    fn new(runs: Vec<&'r [Finding]>, rule: &MatchRule) -> Self {
        let mut starts = Vec::with_capacity(runs.len());
        let mut flat: Vec<(usize, &Finding)> = Vec::new();
        for (r, findings) in runs.iter().enumerate() {
            starts.push(flat.len());
            flat.extend(findings.iter().map(|f| (r, f)));
        }
        let total = flat.len();
        let normalized = normalized_messages(flat.iter().map(|(_, f)| *f), rule);
        let mut fuzzy = vec![false; total * total];
        for i in 0..total {
            for j in i + 1..total {
                let ((ri, a), (rj, b)) = (flat[i], flat[j]);
                let texts = normalized.get(i).zip(normalized.get(j)).map(|(x, y)| (x.as_str(), y.as_str()));
                if ri != rj && fuzzy_match_normalized(a, b, texts, rule) {
                    fuzzy[i * total + j] = true;
                    fuzzy[j * total + i] = true;
                }
            }
        }
        Self { runs, starts, fuzzy, total }
    }

    /// Whether finding `i` of run `x` and finding `j` of run `y` match fuzzily.
    fn fuzzy(&self, x: usize, i: usize, y: usize, j: usize) -> bool {
        self.fuzzy[(self.starts[x] + i) * self.total + self.starts[y] + j]
    }

    /// How many findings run `x` has, and how many of them match no other run's finding.
    fn unique(&self, x: usize) -> (usize, usize) {
        let start = self.starts[x];
        let own = start..start + self.runs[x].len();
        let unique = own.clone().filter(|&i| !self.fuzzy[i * self.total..(i + 1) * self.total].iter().any(|&m| m)).count();
        (own.len(), unique)
    }
}

/// One slot of a group: its subject, which of the axis's values it has runs for (in the
/// axis's order), and their fuzzy matches.
struct SlotIn<'r> {
    subject: &'r String,
    present: Vec<usize>,
    matches: SlotMatches<'r>,
}

impl SlotIn<'_> {
    /// The position of the axis's value `k` among the slot's runs.
    fn position(&self, k: usize) -> Option<usize> {
        self.present.iter().position(|&p| p == k)
    }
}

/// One comparison: a pair of axis values (by their index among the axis's values) within one
/// group of the other axes (by its index among the groups).
struct Comparison<'r> {
    a: usize,
    b: usize,
    group: usize,
    total: Counts,
    runs_compared: usize,
    per_subject: BTreeMap<&'r str, Counts>,
}

/// What one key of a comparison's `data` object holds.
#[derive(Clone, Copy)]
enum Field {
    Axis,
    ValueA,
    ValueB,
    Group,
    RunsCompared,
    /// The total's count at this index of [`Counts::entries`].
    Total(usize),
    PerSubject,
}

/// The keys of a comparison's `data` object in the order its JSON map writes them: the axis,
/// its two values (keys `<axis>_a`, `<axis>_b`), the group, the runs compared, the total
/// counts and `per_subject`, sorted, a later one replacing an earlier one of the same key (an
/// axis named `count` has a `count_a` of its own). Worked out once per analysis.
fn data_fields<'k>(key_a: &'k str, key_b: &'k str) -> Vec<(&'k str, Field)> {
    let mut fields: BTreeMap<&str, Field> = BTreeMap::new();
    fields.insert("axis", Field::Axis);
    fields.insert(key_a, Field::ValueA);
    fields.insert(key_b, Field::ValueB);
    fields.insert("group", Field::Group);
    fields.insert("runs_compared", Field::RunsCompared);
    for (i, (key, _)) in Counts::default().entries().into_iter().enumerate() {
        fields.insert(key, Field::Total(i));
    }
    fields.insert("per_subject", Field::PerSubject);
    fields.into_iter().collect()
}

/// Item `i` of `list`, or nothing.
fn text(list: &[String], i: usize) -> &str {
    list.get(i).map_or("", String::as_str)
}

/// One comparison as an item of `data`, its keys in [`data_fields`]' order.
struct ComparisonData<'c> {
    axis: &'c str,
    values: &'c [String],
    groups: &'c [String],
    fields: &'c [(&'c str, Field)],
    cmp: &'c Comparison<'c>,
}

impl<'c> Serialize for ComparisonData<'c> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let cmp = self.cmp;
        let totals = cmp.total.entries();
        let mut map = serializer.serialize_map(Some(self.fields.len()))?;
        for &(key, field) in self.fields {
            match field {
                Field::Axis => map.serialize_entry(key, self.axis)?,
                Field::ValueA => map.serialize_entry(key, text(self.values, cmp.a))?,
                Field::ValueB => map.serialize_entry(key, text(self.values, cmp.b))?,
                Field::Group => map.serialize_entry(key, text(self.groups, cmp.group))?,
                Field::RunsCompared => map.serialize_entry(key, &cmp.runs_compared)?,
                Field::Total(i) => map.serialize_entry(key, &totals.get(i).map_or(0, |(_, n)| *n))?,
                Field::PerSubject => map.serialize_entry(key, &cmp.per_subject)?,
            }
        }
        map.end()
    }
}

/// `overlap` (A1): findings shared between the values of one axis, which it must name.
pub(crate) const ANALYSIS: Definition = Definition::new(AnalysisKind::OVERLAP, compute).with_axis(AxisUse::Required);

pub fn compute(spec: &AnalysisSpec, input: &AnalysisInput<'_>) -> AnalysisResult {
    let mut result = AnalysisResult::new(
        spec,
        "A1",
        "Findings in common between values of an axis",
        "Findings of two values of one axis on the same subject and repeat (all other axes equal), matched one to one: \
         exact overlap needs the same location, fuzzy overlap also tolerates nearby lines but needs similar messages. \
         A finding is unique to its side when it has no fuzzy match.",
    );
    result.rule = Some(describe_rule(&spec.matching));
    let Some(axis) = spec.axis.as_deref() else {
        result.notes.push("No `axis` is set, so there is nothing to compare.".into());
        return result;
    };
    let values = axis_values(input, axis);
    if values.len() < 2 {
        result.notes.push(format!("Axis `{axis}` has fewer than two values, so there is nothing to compare."));
        return result;
    }

    // (other axes, subject, repeat) → axis value → run.
    let mut slots: BTreeMap<(String, String, u32), BTreeMap<String, &RunView<'_>>> = BTreeMap::new();
    let mut groups: Vec<String> = Vec::new();
    for run in &input.runs {
        let Some(value) = run.cell.get(axis) else { continue };
        let group = run.cell.id_without(axis, input.axis_order);
        if !groups.contains(&group) {
            groups.push(group.clone());
        }
        slots.entry((group, run.subject.to_string(), run.repeat)).or_default().insert(value.render(), run);
    }

    // Each slot's runs in the order of the axis's values, and their fuzzy matches, listed by
    // group: a group's comparisons read its own slots only, so the work is linear in slots.
    let mut by_group: BTreeMap<&str, Vec<SlotIn<'_>>> = BTreeMap::new();
    for ((group, subject, _), by_value) in &slots {
        let present: Vec<usize> = values.iter().enumerate().filter(|(_, v)| by_value.contains_key(*v)).map(|(k, _)| k).collect();
        let runs = present.iter().filter_map(|&k| by_value.get(&values[k]).map(|r| r.findings)).collect();
        by_group.entry(group.as_str()).or_default().push(SlotIn { subject, matches: SlotMatches::new(runs, &spec.matching), present });
    }
    let no_slots: Vec<SlotIn<'_>> = Vec::new();
    let slots_of = |group: &str| by_group.get(group).unwrap_or(&no_slots);

    let mut comparisons = Vec::new();
    let mut unpaired = 0usize;
    for (g, group) in groups.iter().enumerate() {
        for i in 0..values.len() {
            for j in i + 1..values.len() {
                let mut cmp = Comparison { a: i, b: j, group: g, total: Counts::default(), runs_compared: 0, per_subject: BTreeMap::new() };
                for slot in slots_of(group) {
                    match (slot.position(i), slot.position(j)) {
                        (Some(x), Some(y)) => {
                            let counts = Counts::in_slot(&slot.matches, x, y);
                            cmp.total.add(counts);
                            cmp.per_subject.entry(slot.subject.as_str()).or_default().add(counts);
                            cmp.runs_compared += 1;
                        }
                        (Some(_), None) | (None, Some(_)) => unpaired += 1,
                        (None, None) => {}
                    }
                }
                comparisons.push(cmp);
            }
        }
    }

    let show_group = groups.len() > 1 || groups.iter().any(|g| g != "all");
    // Each value and group as the tables quote them, written once.
    let quoted_values: Vec<String> = values.iter().map(|v| format!("`{v}`")).collect();
    let quoted_groups: Vec<String> = groups.iter().map(|g| format!("`{g}`")).collect();
    let quoted = |list: &[String], i: usize| -> TableCell { list.get(i).cloned().unwrap_or_default().into() };
    let mut columns: Vec<String> = Vec::new();
    if show_group {
        columns.push("Other axes".into());
    }
    columns.extend([format!("A ({axis})"), format!("B ({axis})"), "Run pairs".into()]);
    columns.extend(["Findings A", "Findings B", "Exact overlap", "Fuzzy overlap", "Only A", "Only B"].map(String::from));
    let mut summary = Table::with_columns("", columns);
    for cmp in &comparisons {
        let mut row: Vec<TableCell> = Vec::new();
        if show_group {
            row.push(quoted(&quoted_groups, cmp.group));
        }
        row.extend([quoted(&quoted_values, cmp.a), quoted(&quoted_values, cmp.b), cmp.runs_compared.into()]);
        row.extend(cmp.total.cells());
        summary.rows.push(row);
    }
    result.tables.push(summary);

    // With three or more values (H4's tools), what each value found that no other did.
    if values.len() > 2 {
        let mut columns: Vec<String> = Vec::new();
        if show_group {
            columns.push("Other axes".into());
        }
        columns.extend([axis.to_string(), "Findings".into(), "Unique to it".into()]);
        let mut table = Table::with_columns(format!("Found by one value of `{axis}` only (no fuzzy match in any other value's run)"), columns);
        for (g, group) in groups.iter().enumerate() {
            for k in 0..values.len() {
                let (mut total, mut unique) = (0usize, 0usize);
                for slot in slots_of(group) {
                    let Some(x) = slot.position(k) else { continue };
                    let (findings, alone) = slot.matches.unique(x);
                    total += findings;
                    unique += alone;
                }
                let mut row: Vec<TableCell> = Vec::new();
                if show_group {
                    row.push(quoted(&quoted_groups, g));
                }
                row.extend([quoted(&quoted_values, k), total.into(), crate::analysis::model::fmt_share(unique, total)]);
                table.rows.push(row);
            }
        }
        result.tables.push(table);
    }

    let subjects: std::collections::BTreeSet<&str> = comparisons.iter().flat_map(|c| c.per_subject.keys().copied()).collect();
    if subjects.len() > 1 {
        let mut columns: Vec<String> = Vec::new();
        if comparisons.len() > 1 {
            columns.push("Comparison".into());
        }
        columns.extend(["Subject", "Findings A", "Findings B", "Exact overlap", "Fuzzy overlap", "Only A", "Only B"].map(String::from));
        let mut table = Table::with_columns("Per subject, summed over repeats", columns);
        for cmp in &comparisons {
            let label = (comparisons.len() > 1).then(|| {
                let (a, b) = (text(&quoted_values, cmp.a), text(&quoted_values, cmp.b));
                if show_group {
                    format!("{a} vs {b} ({})", text(&groups, cmp.group))
                } else {
                    format!("{a} vs {b}")
                }
            });
            for (subject, counts) in &cmp.per_subject {
                let mut row: Vec<TableCell> = Vec::with_capacity(8);
                if let Some(label) = &label {
                    row.push(label.clone().into());
                }
                row.push((*subject).into());
                row.extend(counts.cells());
                table.rows.push(row);
            }
        }
        result.tables.push(table);
    }

    let (key_a, key_b) = (format!("{axis}_a"), format!("{axis}_b"));
    let fields = data_fields(&key_a, &key_b);
    result.data = one_or_many(comparisons.iter().map(|cmp| ComparisonData { axis, values: &values, groups: &groups, fields: &fields, cmp }));

    if input.repeat > 1 {
        result.notes.push(format!("Counts are summed over subjects and {} repeats; repeat i of A is compared with repeat i of B.", input.repeat));
    }
    if unpaired > 0 {
        result.notes.push(format!("{unpaired} run(s) had no counterpart on the other side (its run produced no result) and are not counted."));
    }
    result.notes.extend(missing_note(input));
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::spec::AnalysisKind;
    use crate::analysis::test_support::{finding, s, spec, Fixture};

    fn fixture() -> Fixture {
        let mut fx = Fixture::new(&[("model", vec![s("a"), s("b")])], 1);
        // Same location, unrelated messages: exact but not fuzzy.
        // Neighbouring lines, same message: fuzzy but not exact.
        fx.add(
            "model=a",
            1,
            "s1",
            vec![
                finding("x.py", 10, "division by zero when list is empty"),
                finding("x.py", 20, "unused import os"),
                finding("x.py", 30, "sql injection in query"),
                finding("x.py", 40, "missing error handling for io"),
            ],
        );
        fx.add(
            "model=b",
            1,
            "s1",
            vec![finding("x.py", 10, "rename this variable"), finding("x.py", 21, "unused import os"), finding("x.py", 40, "typo in comment")],
        );
        fx.add("model=a", 1, "s2", vec![]);
        fx.add("model=b", 1, "s2", vec![finding("y.rs", 1, "panics on empty input")]);
        fx
    }

    #[test]
    fn exact_and_fuzzy_overlap_differ() {
        let fx = fixture();
        let r = compute(&spec(AnalysisKind::OVERLAP, Some("model")), &fx.input());
        assert_eq!(r.test_id, "A1");
        assert_eq!(r.data["model_a"], "a");
        assert_eq!(r.data["count_a"], 4);
        assert_eq!(r.data["count_b"], 4);
        assert_eq!(r.data["overlap_exact"], 2);
        assert_eq!(r.data["overlap_fuzzy"], 1);
        assert_eq!(r.data["unique_a"], 3);
        assert_eq!(r.data["unique_b"], 3);
        assert_eq!(r.data["per_subject"]["s2"]["unique_b"], 1);
        assert_eq!(r.tables[0].rows[0], vec!["`a`", "`b`", "2", "4", "4", "2", "1", "3", "3"]);
        assert_eq!(r.tables.len(), 2, "per-subject table for two subjects");
    }

    #[test]
    fn with_three_tools_each_tools_unique_findings_are_counted() {
        let mut fx = Fixture::new(&[("reviewer", vec![s("a"), s("b"), s("c")])], 1);
        fx.add("reviewer=a", 1, "s1", vec![finding("x.py", 10, "unused import os"), finding("x.py", 30, "sql injection in query")]);
        fx.add("reviewer=b", 1, "s1", vec![finding("x.py", 11, "unused import os")]);
        fx.add("reviewer=c", 1, "s1", vec![finding("y.py", 5, "panics on empty input")]);
        let r = compute(&spec(AnalysisKind::OVERLAP, Some("reviewer")), &fx.input());
        let unique = r.tables.iter().find(|t| t.title.starts_with("Found by one value")).expect("unique table");
        // a's unused import is matched by b's (fuzzy: a line apart, same message); a's SQL
        // injection and c's panic are found by no other tool.
        assert_eq!(unique.rows[0], vec!["`a`", "2", "1 (50.0%)"]);
        assert_eq!(unique.rows[1], vec!["`b`", "1", "0"]);
        assert_eq!(unique.rows[2], vec!["`c`", "1", "1 (100.0%)"]);
        // Two tools only: no such table (the pair table says it).
        let two = compute(&spec(AnalysisKind::OVERLAP, Some("model")), &fixture().input());
        assert!(two.tables.iter().all(|t| !t.title.starts_with("Found by one value")));
    }

    #[test]
    fn three_values_give_three_pairs_and_unpaired_runs_are_noted() {
        let mut fx = Fixture::new(&[("model", vec![s("a"), s("b"), s("c")])], 1);
        fx.add("model=a", 1, "s1", vec![finding("f", 1, "m")]);
        fx.add("model=b", 1, "s1", vec![finding("f", 1, "m")]);
        fx.missing.push(crate::matrix::RunId::new("model=c", 1, "s1"));
        let r = compute(&spec(AnalysisKind::OVERLAP, Some("model")), &fx.input());
        let pairs: Vec<(String, String)> = r.tables[0].rows.iter().map(|row| (row[0].render(), row[1].render())).collect();
        assert_eq!(pairs.len(), 3);
        assert_eq!(r.data[0]["overlap_exact"], 1);
        assert_eq!(r.data[1]["runs_compared"], 0);
        assert!(r.notes.iter().any(|n| n.contains("no counterpart")), "{:?}", r.notes);
        assert!(r.notes.iter().any(|n| n.contains("`model=c #1 @s1`")), "{:?}", r.notes);
    }

    #[test]
    fn other_axes_form_separate_groups() {
        let mut fx = Fixture::new(&[("model", vec![s("a"), s("b")]), ("t", vec![s("0"), s("1")])], 1);
        fx.add("model=a,t=0", 1, "s", vec![finding("f", 1, "m")]);
        fx.add("model=b,t=0", 1, "s", vec![finding("f", 1, "m")]);
        fx.add("model=a,t=1", 1, "s", vec![finding("f", 1, "m")]);
        fx.add("model=b,t=1", 1, "s", vec![]);
        let r = compute(&spec(AnalysisKind::OVERLAP, Some("model")), &fx.input());
        assert_eq!(r.data[0]["group"], "t=0");
        assert_eq!(r.data[0]["overlap_fuzzy"], 1);
        assert_eq!(r.data[1]["group"], "t=1");
        assert_eq!(r.data[1]["unique_a"], 1);
        assert_eq!(r.tables[0].columns[0], "Other axes");
    }
}
