//! A1, same-diff swap: how far the findings of two values of one axis (two models, two
//! prompts, …) coincide on the same subject, exactly and fuzzily.

use crate::analysis::definition::{AxisUse, Definition, Partition};
use crate::analysis::spec::AnalysisKind;
use crate::analysis::matching::matcher::{describe_rule, exact_match, fuzzy_match_normalized, match_count, normalized_messages};
use crate::analysis::{
    model::axis_values, model::missing_note, model::AnalysisInput, model::AnalysisResult, model::DataList, model::PartResult, model::Parts, model::PartsShared, model::RunView,
    model::Table, model::TableCell,
};
use crate::analysis::spec::{AnalysisSpec, MatchRule};
use crate::finding::Finding;
use crate::matrix::Cell;
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

/// One comparison: a pair of axis values (by their index among the axis's values) within one
/// group of the other axes.
struct Comparison<'r> {
    a: usize,
    b: usize,
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
    group: &'c str,
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
                Field::Group => map.serialize_entry(key, self.group)?,
                Field::RunsCompared => map.serialize_entry(key, &cmp.runs_compared)?,
                Field::Total(i) => map.serialize_entry(key, &totals.get(i).map_or(0, |(_, n)| *n))?,
                Field::PerSubject => map.serialize_entry(key, &cmp.per_subject)?,
            }
        }
        map.end()
    }
}

/// `overlap` (A1): findings shared between the values of one axis, which it must name. Its
/// parts are the groups of the other axes: a group's comparisons are computed as soon as its
/// runs are done.
pub(crate) const ANALYSIS: Definition = Definition::new(AnalysisKind::OVERLAP, compute)
    .with_axis(AxisUse::Required)
    .in_parts(Partition { part_of: group_of_cell, compute: compute_group });

/// What the tables' layout depends on beyond one group: whether the groups are named (more than
/// one, or one that is not `all`) and whether there is more than one comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layout {
    show_group: bool,
    many: bool,
}

impl Layout {
    fn of<'g>(groups: impl ExactSizeIterator<Item = &'g str> + Clone, values: usize) -> Self {
        let count = groups.len();
        let show_group = count > 1 || groups.clone().any(|g| g != "all");
        Self { show_group, many: count * (values * values.saturating_sub(1) / 2) > 1 }
    }
}

/// One group's share of A1: its rows of each table and its comparisons' `data`, laid out for
/// `layout`, from `runs` successful runs.
struct GroupPart {
    layout: Layout,
    runs: usize,
    /// Handed over whole to the one analysis that reads them (taken, not copied).
    rows: std::sync::Mutex<Option<GroupRows>>,
    subjects: std::collections::BTreeSet<String>,
    data: DataList,
    unpaired: usize,
}

/// A group's part as the analysis holds it: computed early, or here.
enum Held<'p> {
    Early(&'p GroupPart),
    Here(GroupPart),
}

impl Held<'_> {
    fn part(&self) -> &GroupPart {
        match self {
            Self::Early(part) => part,
            Self::Here(part) => part,
        }
    }
}

/// A group's rows of each of A1's tables.
#[derive(Default)]
struct GroupRows {
    summary: Vec<Vec<TableCell>>,
    unique: Vec<Vec<TableCell>>,
    per_subject: Vec<Vec<TableCell>>,
}

impl GroupPart {
    /// Its rows, unless they were taken already.
    fn take_rows(&self) -> Option<GroupRows> {
        self.rows.lock().ok().and_then(|mut rows| rows.take())
    }
}

/// The part a cell belongs to: its group, the cell without the compared axis.
fn group_of_cell(spec: &AnalysisSpec, cell: &Cell, axis_order: &[String]) -> Option<String> {
    let axis = spec.axis.as_deref()?;
    cell.get(axis).map(|_| cell.id_without(axis, axis_order))
}

/// One group, from its runs alone, laid out as the matrix's cells say the whole will be
/// (every group present): [`compute`] reads it when the runs that succeeded agree.
fn compute_group(spec: &AnalysisSpec, input: &AnalysisInput<'_>) -> Option<PartResult> {
    let axis = spec.axis.as_deref()?;
    let first = input.runs.iter().find(|r| r.cell.get(axis).is_some())?;
    let name = first.cell.id_without(axis, input.axis_order);
    // The values and the layout come from the whole matrix: worked out once, by the first part.
    let local;
    let whole = match input.extras.get::<PartsShared>().and_then(|shared| shared.get_or_init(|| Whole::of(spec, axis, input))) {
        Some(whole) => whole,
        None => {
            local = Whole::of(spec, axis, input);
            &local
        }
    };
    let runs: Vec<&RunView<'_>> = input.runs.iter().filter(|r| r.cell.get(axis).is_some() && r.cell.id_without(axis, input.axis_order) == name).collect();
    let part = group_part(spec, axis, &whole.values, &name, &runs, whole.layout);
    Some(PartResult { name, value: Box::new(part) })
}

/// What every group's part reads of the whole matrix: the axis's values, and the layout the
/// tables take when every group of the plan is present.
struct Whole {
    values: Quoted,
    layout: Layout,
}

impl Whole {
    fn of(spec: &AnalysisSpec, axis: &str, input: &AnalysisInput<'_>) -> Self {
        let values = axis_values(input, axis);
        let mut planned: Vec<String> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for cell in input.cells {
            if let Some(group) = group_of_cell(spec, cell, input.axis_order) {
                if seen.insert(group.clone()) {
                    planned.push(group);
                }
            }
        }
        let layout = Layout::of(planned.iter().map(String::as_str), values.len());
        Self { values: Quoted::of(values), layout }
    }
}

/// Each value of the axis, and as the tables quote it, written once.
struct Quoted {
    values: Vec<String>,
    quoted: Vec<String>,
}

impl Quoted {
    fn of(values: Vec<String>) -> Self {
        let quoted = values.iter().map(|v| format!("`{v}`")).collect();
        Self { values, quoted }
    }
}

/// Group `group`'s comparisons over its successful `runs`, laid out for `layout`.
fn group_part(spec: &AnalysisSpec, axis: &str, values: &Quoted, group: &str, runs: &[&RunView<'_>], layout: Layout) -> GroupPart {
    let n = values.values.len();
    // (subject, repeat) → axis value → run.
    let mut slots: BTreeMap<(&str, u32), BTreeMap<String, &RunView<'_>>> = BTreeMap::new();
    for run in runs {
        let Some(value) = run.cell.get(axis) else { continue };
        slots.entry((run.subject, run.repeat)).or_default().insert(value.render(), run);
    }
    // Each slot's runs in the order of the axis's values, and their fuzzy matches.
    let slots: Vec<(&str, Vec<usize>, SlotMatches<'_>)> = slots
        .iter()
        .map(|(&(subject, _), by_value)| {
            let present: Vec<usize> = (0..n).filter(|&k| by_value.contains_key(&values.values[k])).collect();
            let found = present.iter().filter_map(|&k| by_value.get(&values.values[k]).map(|r| r.findings)).collect();
            (subject, present.clone(), SlotMatches::new(found, &spec.matching))
        })
        .collect();
    let position = |present: &[usize], k: usize| present.iter().position(|&p| p == k);

    let quoted_group = format!("`{group}`");
    let (key_a, key_b) = (format!("{axis}_a"), format!("{axis}_b"));
    let fields = data_fields(&key_a, &key_b);
    let mut part = GroupPart {
        layout,
        runs: runs.len(),
        rows: std::sync::Mutex::new(None),
        subjects: Default::default(),
        data: DataList::default(),
        unpaired: 0,
    };
    let mut rows = GroupRows::default();
    for i in 0..n {
        for j in i + 1..n {
            let mut cmp = Comparison { a: i, b: j, total: Counts::default(), runs_compared: 0, per_subject: BTreeMap::new() };
            for (subject, present, matches) in &slots {
                match (position(present, i), position(present, j)) {
                    (Some(x), Some(y)) => {
                        let counts = Counts::in_slot(matches, x, y);
                        cmp.total.add(counts);
                        cmp.per_subject.entry(subject).or_default().add(counts);
                        cmp.runs_compared += 1;
                    }
                    (Some(_), None) | (None, Some(_)) => part.unpaired += 1,
                    (None, None) => {}
                }
            }
            let mut row: Vec<TableCell> = Vec::with_capacity(10);
            if layout.show_group {
                row.push(quoted_group.clone().into());
            }
            row.extend([text(&values.quoted, i).into(), text(&values.quoted, j).into(), cmp.runs_compared.into()]);
            row.extend(cmp.total.cells());
            rows.summary.push(row);
            let label = layout.many.then(|| {
                let (a, b) = (text(&values.quoted, i), text(&values.quoted, j));
                if layout.show_group {
                    format!("{a} vs {b} ({group})")
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
                rows.per_subject.push(row);
                part.subjects.insert((*subject).to_string());
            }
            part.data.push(&ComparisonData { axis, values: &values.values, group, fields: &fields, cmp: &cmp });
        }
    }
    // With three or more values (H4's tools), what each value found that no other did.
    if n > 2 {
        for k in 0..n {
            let (mut total, mut unique) = (0usize, 0usize);
            for (_, present, matches) in &slots {
                let Some(x) = position(present, k) else { continue };
                let (findings, alone) = matches.unique(x);
                total += findings;
                unique += alone;
            }
            let mut row: Vec<TableCell> = Vec::with_capacity(4);
            if layout.show_group {
                row.push(quoted_group.clone().into());
            }
            row.extend([text(&values.quoted, k).into(), total.into(), crate::analysis::model::fmt_share(unique, total)]);
            rows.unique.push(row);
        }
    }
    part.rows = std::sync::Mutex::new(Some(rows));
    part
}

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

    // The groups of the other axes, in the order their first successful run comes, with their
    // runs: each group's comparisons read its own runs only, so the work is linear in runs.
    let mut groups: Vec<(String, Vec<&RunView<'_>>)> = Vec::new();
    let mut group_at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for run in &input.runs {
        if run.cell.get(axis).is_none() {
            continue;
        }
        let group = run.cell.id_without(axis, input.axis_order);
        match group_at.get(&group) {
            Some(&at) => groups[at].1.push(run),
            None => {
                group_at.insert(group.clone(), groups.len());
                groups.push((group, vec![run]));
            }
        }
    }
    let layout = Layout::of(groups.iter().map(|(g, _)| g.as_str()), values.len());
    let many_values = values.len() > 2;
    // A group computed early (as its runs finished) is read as it is when it was laid out as
    // the whole is and read the runs that succeeded; any other is computed here.
    let early = input.extras.get::<Parts>();
    let quoted = Quoted::of(values);
    let mut held: Vec<Held<'_>> = Vec::with_capacity(groups.len());
    let mut rows: Vec<GroupRows> = Vec::with_capacity(groups.len());
    for (group, runs) in &groups {
        let fits = early.and_then(|p| p.get::<GroupPart>(group)).filter(|p| p.layout == layout && p.runs == runs.len());
        let (part, taken) = match fits.and_then(|p| p.take_rows().map(|r| (p, r))) {
            Some((part, taken)) => (Held::Early(part), taken),
            None => {
                let part = group_part(spec, axis, &quoted, group, runs, layout);
                let taken = part.take_rows().unwrap_or_default();
                (Held::Here(part), taken)
            }
        };
        held.push(part);
        rows.push(taken);
    }
    let parts: Vec<&GroupPart> = held.iter().map(Held::part).collect();

    let mut columns: Vec<String> = Vec::new();
    if layout.show_group {
        columns.push("Other axes".into());
    }
    columns.extend([format!("A ({axis})"), format!("B ({axis})"), "Run pairs".into()]);
    columns.extend(["Findings A", "Findings B", "Exact overlap", "Fuzzy overlap", "Only A", "Only B"].map(String::from));
    let mut summary = Table::with_columns("", columns);
    summary.rows.reserve(rows.iter().map(|r| r.summary.len()).sum());
    for group in &mut rows {
        summary.rows.append(&mut group.summary);
    }
    result.tables.push(summary);

    if many_values {
        let mut columns: Vec<String> = Vec::new();
        if layout.show_group {
            columns.push("Other axes".into());
        }
        columns.extend([axis.to_string(), "Findings".into(), "Unique to it".into()]);
        let mut table = Table::with_columns(format!("Found by one value of `{axis}` only (no fuzzy match in any other value's run)"), columns);
        for group in &mut rows {
            table.rows.append(&mut group.unique);
        }
        result.tables.push(table);
    }

    let subjects: std::collections::BTreeSet<&str> = parts.iter().flat_map(|p| p.subjects.iter().map(String::as_str)).collect();
    if subjects.len() > 1 {
        let mut columns: Vec<String> = Vec::new();
        if layout.many {
            columns.push("Comparison".into());
        }
        columns.extend(["Subject", "Findings A", "Findings B", "Exact overlap", "Fuzzy overlap", "Only A", "Only B"].map(String::from));
        let mut table = Table::with_columns("Per subject, summed over repeats", columns);
        for group in &mut rows {
            table.rows.append(&mut group.per_subject);
        }
        result.tables.push(table);
    }

    let mut data = DataList::with_capacity(parts.iter().map(|p| p.data.len()).sum());
    for part in &parts {
        data.append(&part.data);
    }
    result.data = data.finish();

    if input.repeat > 1 {
        result.notes.push(format!("Counts are summed over subjects and {} repeats; repeat i of A is compared with repeat i of B.", input.repeat));
    }
    let unpaired: usize = parts.iter().map(|p| p.unpaired).sum();
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

    /// A1 from parts computed early, group by group from each group's runs alone, as the
    /// engine computes them while other runs are under way.
    fn from_parts(spec: &AnalysisSpec, fx: &Fixture) -> AnalysisResult {
        let whole = fx.input();
        let mut names: Vec<String> = Vec::new();
        for cell in whole.cells {
            if let Some(name) = group_of_cell(spec, cell, whole.axis_order) {
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
        let early = Parts::new(names.iter().filter_map(|name| {
            let mut input = fx.input();
            input.runs.retain(|r| group_of_cell(spec, r.cell, whole.axis_order).as_deref() == Some(name.as_str()));
            compute_group(spec, &input).map(std::sync::Arc::new)
        }));
        assert!(!early.is_empty());
        let mut input = fx.input();
        input.extras = crate::analysis::Extras::default().with(Some(&early));
        compute(spec, &input)
    }

    fn same(a: &AnalysisResult, b: &AnalysisResult) {
        assert_eq!(serde_json::to_string_pretty(a).expect("serializes"), serde_json::to_string_pretty(b).expect("serializes"));
    }

    #[test]
    fn parts_computed_early_give_the_whole_result_byte_for_byte() {
        let spec = spec(AnalysisKind::OVERLAP, Some("model"));
        // Two subjects, three values, two groups, one run missing.
        let mut fx = Fixture::new(&[("model", vec![s("a"), s("b"), s("c")]), ("t", vec![s("0"), s("1")])], 1);
        for (cell, subject, findings) in [
            ("model=a,t=0", "s1", vec![finding("f", 1, "unused import os"), finding("f", 9, "sql injection")]),
            ("model=b,t=0", "s1", vec![finding("f", 2, "unused import os")]),
            ("model=c,t=0", "s1", vec![]),
            ("model=a,t=0", "s2", vec![finding("g", 3, "panics")]),
            ("model=b,t=0", "s2", vec![finding("g", 3, "panics on empty")]),
            ("model=a,t=1", "s1", vec![finding("f", 1, "m")]),
            ("model=c,t=1", "s1", vec![finding("f", 1, "m")]),
        ] {
            fx.add(cell, 1, subject, findings);
        }
        fx.missing.push(crate::matrix::RunId::new("model=b,t=1", 1, "s1"));
        let direct = compute(&spec, &fx.input());
        let early = from_parts(&spec, &fx);
        same(&direct, &early);
        assert_eq!(direct.tables.len(), 3, "pairs, unique to one value, per subject");
        // And the parts are what it read: a part changed after the fact shows.
        let mut input = fx.input();
        input.runs.retain(|r| r.cell.id.ends_with("t=1"));
        let mut part = compute_group(&spec, &input).expect("a part");
        if let Some(rows) = part.value.downcast_mut::<GroupPart>().and_then(|g| g.rows.get_mut().ok()).and_then(Option::as_mut) {
            rows.summary[0][1] = "`changed`".into();
        }
        let parts = Parts::new([std::sync::Arc::new(part)]);
        let mut input = fx.input();
        input.extras = crate::analysis::Extras::default().with(Some(&parts));
        let read = compute(&spec, &input);
        assert_eq!(read.tables[0].rows.iter().filter(|r| r[1].render() == "`changed`").count(), 1, "the early part of t=1 was read");
        assert!(direct.notes.iter().any(|n| n.contains("no counterpart")), "{:?}", direct.notes);
        // Parts read once hand their rows over: read again, they are computed again, the same.
        // (Their values and layout worked out once, by the first, and shared.)
        let whole = fx.input();
        let shared = PartsShared::default();
        let parts = Parts::new(["t=0", "t=1"].into_iter().filter_map(|name| {
            let mut input = fx.input();
            input.runs.retain(|r| group_of_cell(&spec, r.cell, whole.axis_order).as_deref() == Some(name));
            input.extras = crate::analysis::Extras::default().with(Some(&shared));
            compute_group(&spec, &input).map(std::sync::Arc::new)
        }));
        assert!(shared.get_or_init(|| 0u8).is_none(), "the first part left its `Whole` there");
        for _ in 0..2 {
            let mut input = fx.input();
            input.extras = crate::analysis::Extras::default().with(Some(&parts));
            same(&direct, &compute(&spec, &input));
        }
        // One group, named `all`: no group column, one comparison, no label.
        let single = fixture();
        same(&compute(&spec, &single.input()), &from_parts(&spec, &single));
    }

    #[test]
    fn a_part_laid_out_for_groups_that_never_came_is_computed_again() {
        let spec = spec(AnalysisKind::OVERLAP, Some("model"));
        // Group t=1 has no successful run: the parts assumed two groups (a group column, many
        // comparisons), the whole has one.
        let mut fx = Fixture::new(&[("model", vec![s("a"), s("b")]), ("t", vec![s("0"), s("1")])], 1);
        fx.add("model=a,t=0", 1, "s", vec![finding("f", 1, "m")]);
        fx.add("model=b,t=0", 1, "s", vec![finding("f", 1, "m")]);
        fx.missing.push(crate::matrix::RunId::new("model=a,t=1", 1, "s"));
        fx.missing.push(crate::matrix::RunId::new("model=b,t=1", 1, "s"));
        let direct = compute(&spec, &fx.input());
        same(&direct, &from_parts(&spec, &fx));
        assert_eq!(direct.tables[0].columns[0], "Other axes", "a group that is not `all` is still named");
        assert_eq!(direct.data["group"], "t=0", "one comparison: the object itself");
    }
}
