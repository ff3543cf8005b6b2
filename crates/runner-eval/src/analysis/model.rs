//! What every analysis reads and produces: runs as analyses see them ([`RunView`],
//! [`AnalysisInput`]), typed tables and results ([`Table`], [`AnalysisResult`]), the
//! formatting helpers their cells use, and the [`Analysis`] trait each kind implements.

pub use crate::analysis::data::{as_raw_text, Data, DataList};
use crate::analysis::spec::{AnalysisKind, AnalysisSpec};
use crate::cache::RunRecord;
use crate::finding::Finding;
use crate::ground_truth::oracle::Oracle;
use crate::matrix::Cell;
use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize};

/// One successful run as analyses see it.
#[derive(Debug, Clone, Copy)]
pub struct RunView<'a> {
    pub cell: &'a Cell,
    pub repeat: u32,
    pub subject: &'a str,
    pub record: &'a RunRecord,
    pub findings: &'a [Finding],
    /// Where the run started among its subject and repeat's runs (the plan's rotation), from 0.
    pub order: u32,
}

/// Everything an analysis may read.
pub struct AnalysisInput<'a> {
    /// Successful runs, in plan order.
    pub runs: Vec<RunView<'a>>,
    /// Every cell of the matrix, in matrix order.
    pub cells: &'a [std::sync::Arc<Cell>],
    /// Axis names in manifest order.
    pub axis_order: &'a [String],
    /// Planned runs that produced no result (failed, skipped, missing).
    pub missing: Vec<crate::matrix::RunId>,
    pub repeat: u32,
    /// The target's oracle: a corpus's `oracle.json`, or an eval set's case findings.
    pub oracle: Option<&'a Oracle>,
    /// What some analyses read beyond the runs, handed in by the experiment: the diffs' scopes
    /// (context level), a history's repository (resolution), adjudication records, what the
    /// scoring stages produced (RQS v2), the judges' same-issue votes. Each such analysis reads
    /// its own through an accessor in its module (`input.scopes()`, `input.rqs()`, …), so this
    /// model names none of their types.
    pub extras: Extras<'a>,
    /// `runs` and `missing` by cell id, built on first use (`CellIndex::default()` when
    /// constructing), so per-cell reads are linear in runs rather than cells × runs.
    pub by_cell: CellIndex<'a>,
}

/// Positions in an input's `runs`, and counts of its `missing`, by cell id.
#[derive(Debug, Default)]
pub struct CellIndex<'a>(std::sync::OnceLock<ByCell<'a>>);

/// Each cell's runs as a span of one array of positions (a 100k-cell grid holds no list per
/// cell), and each cell's count of missing runs.
#[derive(Debug)]
struct ByCell<'a> {
    spans: std::collections::HashMap<&'a str, (u32, u32)>,
    /// Positions in `runs`, grouped by cell; plan order within a cell.
    order: Vec<u32>,
    missing: std::collections::HashMap<String, usize>,
}

impl<'a> CellIndex<'a> {
    fn get(&self, input: &AnalysisInput<'a>) -> &ByCell<'a> {
        self.0.get_or_init(|| {
            // Counted, then placed: each cell's span starts where the previous cell's ends.
            let mut spans: std::collections::HashMap<&'a str, (u32, u32)> = std::collections::HashMap::new();
            for run in &input.runs {
                spans.entry(run.cell.id.as_str()).or_default().1 += 1;
            }
            let mut next = 0;
            for span in spans.values_mut() {
                span.0 = next;
                next += span.1;
                span.1 = 0;
            }
            let mut order = vec![0u32; input.runs.len()];
            for (i, run) in input.runs.iter().enumerate() {
                if let Some(span) = spans.get_mut(run.cell.id.as_str()) {
                    order[(span.0 + span.1) as usize] = i as u32;
                    span.1 += 1;
                }
            }
            let mut missing: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
            for run in &input.missing {
                match missing.get_mut(run.cell.as_str()) {
                    Some(n) => *n += 1,
                    None => {
                        missing.insert(run.cell.clone(), 1);
                    }
                }
            }
            ByCell { spans, order, missing }
        })
    }
}

/// Inputs of particular analyses, by type: at most one of each type, each borrowed for the
/// analysis's lifetime.
#[derive(Default)]
pub struct Extras<'a> {
    items: Vec<&'a (dyn std::any::Any + Sync)>,
}

impl<'a> Extras<'a> {
    /// These extras and `item`, when there is one.
    pub fn with<T: std::any::Any + Sync>(mut self, item: Option<&'a T>) -> Self {
        if let Some(item) = item {
            self.items.push(item);
        }
        self
    }

    /// The extra of type `T`, when one was handed in.
    pub(crate) fn get<T: std::any::Any>(&self) -> Option<&'a T> {
        self.items.iter().find_map(|item| (*item as &dyn std::any::Any).downcast_ref::<T>())
    }
}

impl std::fmt::Debug for Extras<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Extras({} items)", self.items.len())
    }
}

/// One part of an analysis, computed from that part's runs as soon as they were all done
/// ([`super::definition::Partition`]): its name (what `part_of` said) and what the analysis
/// keeps of it, which only the analysis's own module reads.
pub struct PartResult {
    pub name: String,
    pub value: Box<dyn std::any::Any + Send + Sync>,
}

impl std::fmt::Debug for PartResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PartResult({})", self.name)
    }
}

/// The parts of one analysis computed early, handed to it among its [`Extras`]: a part is read
/// only where the analysis finds it still fits the whole (an analysis recomputes any other).
#[derive(Debug, Default)]
pub struct Parts {
    by_name: std::collections::HashMap<String, std::sync::Arc<PartResult>>,
}

impl Parts {
    pub fn new(parts: impl IntoIterator<Item = std::sync::Arc<PartResult>>) -> Self {
        Self { by_name: parts.into_iter().map(|p| (p.name.clone(), p)).collect() }
    }

    /// The part named `name`, when it was computed and holds a `T`.
    pub(crate) fn get<T: std::any::Any>(&self, name: &str) -> Option<&T> {
        self.by_name.get(name).and_then(|p| p.value.downcast_ref::<T>())
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}

/// What the parts of one analysis share, worked out once from the whole plan (the matrix's
/// cells) by the first part that needs it, so that each part's work stays its own runs'.
/// Handed to each part among its [`Extras`]; one per analysis of an execution.
#[derive(Debug, Default)]
pub struct PartsShared(std::sync::OnceLock<Box<dyn std::any::Any + Send + Sync>>);

impl PartsShared {
    /// The shared value, made by `init` on first use; `None` when it holds another type.
    pub(crate) fn get_or_init<T: std::any::Any + Send + Sync>(&self, init: impl FnOnce() -> T) -> Option<&T> {
        self.0.get_or_init(|| Box::new(init())).downcast_ref::<T>()
    }
}

/// One cell of a table: Markdown text, or a number that the template formats (results.json
/// keeps the number; RESULTS.md shows it through the `cell` helper, see [`TableCell::render`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TableCell {
    /// A count, shown as is.
    Int(i64),
    /// Markdown text (escaped for the table when rendered).
    Text(String),
    /// A measured quantity shown with `digits` decimals; undefined (`null`) shows as `–`.
    Num {
        #[serde(deserialize_with = "present_option")]
        num: Option<f64>,
        digits: u8,
    },
    /// A count with its share of a total: `5 (41.7%)`, or `0` alone.
    Share { count: u64, of: u64 },
    /// A difference, always signed (`+1`, `-0.50`); undefined shows as `–`.
    Delta {
        #[serde(deserialize_with = "present_option")]
        delta: Option<f64>,
        digits: u8,
    },
}

/// An `Option` field that must be present (`null` for `None`), so the untagged cell kinds
/// cannot be mistaken for one another.
fn present_option<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<f64>, D::Error> {
    Option::<f64>::deserialize(deserializer)
}

impl TableCell {
    /// The text RESULTS.md shows (before Markdown escaping).
    pub fn render(&self) -> String {
        match self {
            Self::Int(n) => n.to_string(),
            Self::Text(t) => t.clone(),
            Self::Num { num, digits } => format_number(*num, Some(*digits)),
            Self::Share { count, of } => format_share(*count, *of),
            Self::Delta { delta, digits } => match delta.filter(|d| d.is_finite()) {
                Some(d) => format!("{d:+.prec$}", prec = *digits as usize),
                None => "–".to_string(),
            },
        }
    }
}

impl std::fmt::Display for TableCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render())
    }
}

impl From<String> for TableCell {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<&str> for TableCell {
    fn from(text: &str) -> Self {
        Self::Text(text.to_string())
    }
}

macro_rules! int_cells {
    ($($t:ty),*) => {$(
        impl From<$t> for TableCell {
            fn from(n: $t) -> Self {
                Self::Int(i64::try_from(n).unwrap_or(i64::MAX))
            }
        }
    )*};
}
int_cells!(usize, u64, u32, i64);

/// Cells compare with the text they render, so tests read like the table.
impl PartialEq<&str> for TableCell {
    fn eq(&self, other: &&str) -> bool {
        self.render() == *other
    }
}

impl PartialEq<str> for TableCell {
    fn eq(&self, other: &str) -> bool {
        self.render() == other
    }
}

/// A number with `digits` decimals (integers as they are when `digits` is `None`), or `–`
/// when undefined or not finite. The one number format of tables and templates.
pub fn format_number(value: Option<f64>, digits: Option<u8>) -> String {
    match (value.filter(|v| v.is_finite()), digits) {
        (None, _) => "–".to_string(),
        (Some(v), Some(d)) => format!("{v:.prec$}", prec = d as usize),
        (Some(v), None) => v.to_string(),
    }
}

/// A count with its share of `total` in parentheses (`5 (41.7%)`), or the count alone when
/// either is zero.
pub fn format_share(count: u64, total: u64) -> String {
    if count == 0 || total == 0 {
        count.to_string()
    } else {
        format!("{count} ({:.1}%)", 100.0 * count as f64 / total as f64)
    }
}

/// A table a person reads at a glance.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(from = "TableData")]
pub struct Table {
    pub title: String,
    pub columns: Vec<String>,
    /// The rows as cells: every row, or a folded table's first [`Table::HELD_ROWS`].
    pub rows: Vec<Vec<TableCell>>,
    /// A folded table's rows after `rows` (see [`Table::fold`]).
    pub folded: FoldedRows,
}

/// A table as results.json stores it; the derived fields are recomputed when read.
#[derive(Deserialize)]
struct TableData {
    title: String,
    columns: Vec<String>,
    rows: Vec<Vec<TableCell>>,
}

impl From<TableData> for Table {
    fn from(t: TableData) -> Self {
        Self { title: t.title, columns: t.columns, rows: t.rows, folded: FoldedRows::default() }
    }
}

/// What one column's cells say about its alignment: whether any is non-empty, and whether
/// every non-empty one reads as a number.
#[derive(Debug, Clone, Copy, PartialEq)]
struct ColumnKind {
    any: bool,
    numeric: bool,
}

impl Default for ColumnKind {
    fn default() -> Self {
        Self { any: false, numeric: true }
    }
}

impl ColumnKind {
    fn add(&mut self, cell: &TableCell) {
        match cell {
            TableCell::Text(t) if t.is_empty() => {}
            // Numbers, counts and `–` always read as numbers (a test holds every kind to it);
            // only text is looked at, so no cell is rendered.
            TableCell::Text(t) => {
                self.any = true;
                self.numeric &= looks_numeric(t);
            }
            _ => self.any = true,
        }
    }

    fn and(self, other: Self) -> Self {
        Self { any: self.any || other.any, numeric: self.numeric && other.numeric }
    }

    fn separator(self) -> &'static str {
        if self.any && self.numeric {
            "---:"
        } else {
            "---"
        }
    }
}

/// Rows of a long table past the ones held as cells, as compact JSON text: the per-cell
/// tables of a 100k-cell grid are written to results.json and read as cells no more (RESULTS.md
/// shows a table's first rows). A third of the memory of the same rows as cells.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FoldedRows {
    /// Each row's compact JSON array, one after another.
    text: String,
    /// Where each row ends in `text`.
    ends: Vec<usize>,
    /// The alignment evidence of each column over these rows.
    columns: Vec<ColumnKind>,
}

impl FoldedRows {
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    fn push(&mut self, row: &[TableCell]) {
        if self.columns.len() < row.len() {
            self.columns.resize(row.len(), ColumnKind::default());
        }
        for (kind, cell) in self.columns.iter_mut().zip(row) {
            kind.add(cell);
        }
        // Writing cells into a `String` cannot fail.
        if let Ok(text) = serde_json::to_string(row) {
            self.text.push_str(&text);
        }
        self.ends.push(self.text.len());
    }

    /// Each row's JSON text.
    fn texts(&self) -> impl Iterator<Item = &str> {
        self.ends.iter().scan(0, |start, &end| {
            let text = self.text.get(*start..end).unwrap_or("[]");
            *start = end;
            Some(text)
        })
    }
}

impl Table {
    pub fn new(title: impl Into<String>, columns: &[&str]) -> Self {
        Self::with_columns(title, columns.iter().map(|c| c.to_string()).collect())
    }

    pub(crate) fn with_columns(title: impl Into<String>, columns: Vec<String>) -> Self {
        Self { title: title.into(), columns, rows: Vec::new(), folded: FoldedRows::default() }
    }

    /// A titled table longer than this many rows is folded in RESULTS.md (a detail table).
    pub(crate) const FOLD_ROWS: usize = 10;

    /// How many rows [`Table::fold`] keeps as cells: all that RESULTS.md shows of a table.
    pub const HELD_ROWS: usize = 1_000;

    /// Every row, folded ones included.
    pub fn row_count(&self) -> usize {
        self.rows.len() + self.folded.len()
    }

    /// Every row as cells, folded ones read back from their text.
    pub fn each_row(&self) -> impl Iterator<Item = std::borrow::Cow<'_, [TableCell]>> {
        let held = self.rows.iter().map(|r| std::borrow::Cow::Borrowed(r.as_slice()));
        let folded = self.folded.texts().map(|text| std::borrow::Cow::Owned(serde_json::from_str::<Vec<TableCell>>(text).unwrap_or_default()));
        held.chain(folded)
    }

    /// Whether RESULTS.md shows the table folded under its title.
    pub fn collapsed(&self) -> bool {
        !self.title.is_empty() && self.row_count() > Self::FOLD_ROWS
    }

    /// Adds a row at the end, folded at once past the first [`Table::HELD_ROWS`] (see
    /// [`Table::fold`]): for a table whose rows are added in their final order, so that a
    /// 100k-row table never exists as cells.
    pub(crate) fn push(&mut self, row: Vec<TableCell>) {
        if self.rows.len() < Self::HELD_ROWS {
            self.rows.push(row);
        } else {
            self.folded.push(&row);
        }
    }

    /// Keeps the first [`Table::HELD_ROWS`] rows as cells and the rest as text, and gives back
    /// the room the rows grew into: a result is held until the reports are written.
    pub fn fold(&mut self) {
        // Rows added to `rows` after [`Table::push`] folded some would be out of order.
        debug_assert!(self.folded.is_empty() || self.rows.len() <= Self::HELD_ROWS, "rows pushed behind folded ones");
        if self.rows.len() > Self::HELD_ROWS {
            for row in self.rows.drain(Self::HELD_ROWS..) {
                self.folded.push(&row);
            }
        }
        self.folded.text.shrink_to_fit();
        self.folded.ends.shrink_to_fit();
        self.rows.shrink_to_fit();
        for row in &mut self.rows {
            row.shrink_to_fit();
            for cell in row.iter_mut() {
                if let TableCell::Text(text) = cell {
                    text.shrink_to_fit();
                }
            }
        }
    }

    /// The Markdown separator cell of each column: right-aligned (`---:`) when every
    /// non-empty cell of the column reads as a number, `–`, or a `n (p%)` count. Folded rows
    /// count.
    pub fn align(&self) -> Vec<&'static str> {
        let held = Self::column_kinds(self.columns.len(), &self.rows);
        held.into_iter().enumerate().map(|(i, kind)| kind.and(self.folded.columns.get(i).copied().unwrap_or_default()).separator()).collect()
    }

    /// [`Self::align`] of `columns` columns over these rows.
    pub fn align_rows(columns: usize, rows: &[Vec<TableCell>]) -> Vec<&'static str> {
        Self::column_kinds(columns, rows).into_iter().map(ColumnKind::separator).collect()
    }

    fn column_kinds(columns: usize, rows: &[Vec<TableCell>]) -> Vec<ColumnKind> {
        let mut kinds = vec![ColumnKind::default(); columns];
        for row in rows {
            for (kind, cell) in kinds.iter_mut().zip(row) {
                kind.add(cell);
            }
        }
        kinds
    }
}

fn looks_numeric(cell: &str) -> bool {
    let head = cell.split(" (").next().unwrap_or(cell).trim_end_matches('%');
    head == "–" || head.trim_start_matches(['+', '-']).parse::<f64>().is_ok()
}

/// Serialized with derived fields for templates: `align` separators, `row_count`, and
/// `collapsed` (see [`Table::collapsed`]), so templates can right-align numbers and fold long
/// tables. Folded rows are written after the held ones, as if they had never been folded.
impl Serialize for Table {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Table", 6)?;
        s.serialize_field("title", &self.title)?;
        s.serialize_field("columns", &self.columns)?;
        s.serialize_field("align", &self.align())?;
        s.serialize_field("rows", &AllRows(self))?;
        s.serialize_field("row_count", &self.row_count())?;
        s.serialize_field("collapsed", &self.collapsed())?;
        s.end()
    }
}

/// A folded row's JSON text, serialized as the row it holds.
struct JsonText<'t>(&'t str);

impl Serialize for JsonText<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        super::data::serialize_text(self.0, serializer)
    }
}

/// A table's rows, held and folded, as one sequence.
struct AllRows<'a>(&'a Table);

impl Serialize for AllRows<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = serializer.serialize_seq(Some(self.0.row_count()))?;
        for row in &self.0.rows {
            seq.serialize_element(row)?;
        }
        for text in self.0.folded.texts() {
            seq.serialize_element(&JsonText(text))?;
        }
        seq.end()
    }
}

/// An analysis's result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AnalysisResult {
    pub kind: AnalysisKind,
    /// The seed test it implements, e.g. `A1`.
    pub test_id: String,
    pub title: String,
    /// One or two sentences on what is measured and how.
    pub description: String,
    /// The matching rule and thresholds used, when findings are matched.
    pub rule: Option<String>,
    pub tables: Vec<Table>,
    /// The machine-readable result (the seed document's output JSON where it defines one).
    pub data: Data,
    pub notes: Vec<String>,
    /// Verdict lines that answer the experiment's question; RESULTS.md opens with them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headline: Vec<String>,
}

impl AnalysisResult {
    /// An empty result for `spec`, titled by the manifest's `title` or `default_title`.
    pub fn new(spec: &AnalysisSpec, test_id: &str, default_title: &str, description: impl Into<String>) -> Self {
        Self {
            kind: spec.kind,
            test_id: test_id.to_string(),
            title: spec.title.clone().unwrap_or_else(|| default_title.to_string()),
            description: description.into(),
            rule: None,
            tables: Vec::new(),
            data: Data::null(),
            notes: Vec::new(),
            headline: Vec::new(),
        }
    }
}

impl AnalysisResult {
    /// The machine-readable result read as the analysis's own type.
    pub fn data_as<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        self.data.read()
    }
}

/// A ratio cell: three decimals, or `–` when undefined.
pub(crate) fn fmt_ratio(value: Option<f64>) -> TableCell {
    fmt_num(value, 3)
}

/// A number cell with `decimals` decimals, or `–` when undefined.
pub(crate) fn fmt_num(value: Option<f64>, decimals: u8) -> TableCell {
    TableCell::Num { num: value, digits: decimals }
}

/// A count cell with its share of `total` (`5 (41.7%)`), or the count alone.
pub(crate) fn fmt_share(count: usize, total: usize) -> TableCell {
    TableCell::Share { count: count as u64, of: total as u64 }
}

/// `numerator / denominator`, undefined when the denominator is zero.
pub fn ratio(numerator: f64, denominator: f64) -> Option<f64> {
    (denominator != 0.0).then(|| numerator / denominator)
}

/// A finite float as JSON, `null` otherwise (JSON has no NaN).
pub(crate) fn json_num(value: Option<f64>) -> serde_json::Value {
    value.filter(|v| v.is_finite()).map(serde_json::Value::from).unwrap_or(serde_json::Value::Null)
}

/// The successful runs of one cell, in plan order.
pub(crate) fn runs_of<'i, 'a>(input: &'i AnalysisInput<'a>, cell: &'i Cell) -> impl Iterator<Item = &'i RunView<'a>> + 'i {
    let index = input.by_cell.get(input);
    let at: &'i [u32] = index.spans.get(cell.id.as_str()).and_then(|&(start, len)| index.order.get(start as usize..(start + len) as usize)).unwrap_or(&[]);
    at.iter().map(move |&i| &input.runs[i as usize])
}

/// How many planned runs of `cell` produced no result.
pub(crate) fn missing_in(input: &AnalysisInput<'_>, cell: &Cell) -> usize {
    input.by_cell.get(input).missing.get(cell.id.as_str()).copied().unwrap_or(0)
}

/// The standard note on planned runs that produced no result, when there are any.
pub(crate) fn missing_note(input: &AnalysisInput<'_>) -> Option<String> {
    if input.missing.is_empty() {
        return None;
    }
    const SHOWN: usize = 5;
    let mut listed: Vec<String> = input.missing.iter().take(SHOWN).map(|l| format!("`{l}`")).collect();
    if input.missing.len() > SHOWN {
        listed.push(format!("and {} more", input.missing.len() - SHOWN));
    }
    Some(format!(
        "{} planned run{} produced no result and {} not counted: {}.",
        input.missing.len(),
        if input.missing.len() == 1 { "" } else { "s" },
        if input.missing.len() == 1 { "is" } else { "are" },
        listed.join(", ")
    ))
}

/// The values of `axis` in matrix order, rendered, without duplicates.
pub(crate) fn axis_values(input: &AnalysisInput<'_>, axis: &str) -> Vec<String> {
    axis_values_of(input.cells, axis)
}

/// [`axis_values`] of a list of cells.
pub(crate) fn axis_values_of(cells: &[std::sync::Arc<Cell>], axis: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for cell in cells {
        if let Some(v) = cell.get(axis) {
            let text = v.render();
            if seen.insert(text.clone()) {
                out.push(text);
            }
        }
    }
    out
}

/// The first `max` characters of a text, with `…` when cut.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    let flat = crate::finding::collapse_whitespace(text);
    if flat.chars().count() <= max {
        flat
    } else {
        format!("{}…", flat.chars().take(max.saturating_sub(1)).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_format_consistently() {
        assert_eq!(fmt_ratio(Some(1.0 / 3.0)), "0.333");
        assert_eq!(fmt_ratio(None), "–");
        assert_eq!(fmt_share(5, 12), "5 (41.7%)");
        assert_eq!(fmt_share(0, 12), "0");
        assert_eq!(ratio(1.0, 0.0), None);
    }

    #[test]
    fn numeric_columns_align_right() {
        let mut t = Table::new("", &["Cell", "Count", "Share"]);
        t.rows.push(vec!["`a`".into(), 3usize.into(), fmt_ratio(None)]);
        t.rows.push(vec!["`b`".into(), fmt_share(4, 8), fmt_ratio(Some(0.5))]);
        assert_eq!(t.align(), vec!["---", "---:", "---:"]);
        let json = serde_json::to_value(&t).expect("serializes");
        assert_eq!(json["align"][1], "---:");
    }

    #[test]
    fn a_folded_table_reads_and_serializes_as_the_whole_table() {
        let mut whole = Table::new("Per cell", &["Cell", "Count", "Mean", "Note", "Share"]);
        let n = Table::HELD_ROWS + 250;
        for i in 0..n {
            // The `Note` column is numeric in the held rows only: the folded ones decide it.
            let note: TableCell = if i < Table::HELD_ROWS {
                format!("{i}").into()
            } else if i % 2 == 0 {
                "".into()
            } else {
                "a | \"quoted\"\nnote".into()
            };
            let mean = fmt_num((i % 3 != 0).then_some(i as f64 / 7.0), 3);
            whole.rows.push(vec![format!("`c{i}`").into(), i.into(), mean, note, fmt_share(i, n)]);
        }
        let mut folded = whole.clone();
        folded.fold();
        let mut pushed = Table::new("Per cell", &["Cell", "Count", "Mean", "Note", "Share"]);
        for row in &whole.rows {
            pushed.push(row.clone());
        }
        pushed.fold();
        assert_eq!(pushed, folded, "rows pushed one by one fold as the whole table does");
        assert_eq!((folded.rows.len(), folded.folded.len(), folded.row_count()), (Table::HELD_ROWS, 250, n));
        assert_eq!(folded.align(), whole.align());
        assert_eq!(folded.align()[3], "---", "a text cell past the held rows makes its column text");
        assert_eq!(folded.collapsed(), whole.collapsed());
        assert!(folded.each_row().map(|r| r.into_owned()).eq(whole.rows.iter().cloned()), "every row reads back as it was");
        let (pretty, compact) = (serde_json::to_string_pretty(&folded).expect("pretty"), serde_json::to_string(&folded).expect("compact"));
        assert_eq!(pretty, serde_json::to_string_pretty(&whole).expect("pretty"));
        assert_eq!(compact, serde_json::to_string(&whole).expect("compact"));
        let back: Table = serde_json::from_str(&compact).expect("reads back");
        assert_eq!((back.rows, back.folded.len()), (whole.rows.clone(), 0), "read back, every row is held");
        let mut short = Table::new("", &["Cell"]);
        short.rows.push(vec!["`a`".into()]);
        short.fold();
        assert!(short.folded.is_empty() && short.rows.len() == 1, "a short table is not folded");
    }

    #[test]
    fn every_kind_of_number_cell_reads_as_a_number() {
        let cells = [
            TableCell::Int(-7),
            TableCell::Num { num: Some(1e300), digits: 3 },
            TableCell::Num { num: Some(f64::NAN), digits: 2 },
            TableCell::Num { num: None, digits: 0 },
            TableCell::Share { count: 5, of: 12 },
            TableCell::Share { count: 0, of: 0 },
            TableCell::Delta { delta: Some(-0.25), digits: 2 },
            TableCell::Delta { delta: None, digits: 2 },
        ];
        for cell in &cells {
            assert!(looks_numeric(&cell.render()), "{cell:?} renders as `{}`", cell.render());
        }
        let rows: Vec<Vec<TableCell>> = cells.iter().map(|c| vec![c.clone(), "x".into()]).collect();
        assert_eq!(Table::align_rows(2, &rows), vec!["---:", "---"]);
    }
}
