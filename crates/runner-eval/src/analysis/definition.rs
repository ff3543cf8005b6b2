//! What a kind of analysis is and knows, in one value its module declares: its kind, how it
//! computes, the options it reads from its `[[analysis]]` table, the charts it draws, what it
//! reads beyond the runs, and how it uses the table's `axis` and `adjudication`. The registry (`analysis::ANALYSES`) lists one per
//! kind; nothing else switches on a kind to read, chart or check it.

use super::chart::{ChartCells, Named};
pub use super::spec::Needs;
use super::spec::{AnalysisKind, AnalysisOptions, AnalysisSpec, MatchRule};
use super::{AnalysisInput, AnalysisResult};
use crate::config::TableReader;
use std::collections::BTreeSet;
use std::path::Path;

/// How an analysis computes its result over the runs.
pub type Compute = fn(&AnalysisSpec, &AnalysisInput<'_>) -> AnalysisResult;

/// How an analysis reads the options of its own from its table, every problem located.
pub type ReadOptions = fn(&TableReader<'_, '_>, &OptionsContext<'_>) -> AnalysisOptions;

/// The charts an analysis draws from its result and the cells around it.
pub type Charts = fn(&AnalysisResult, &dyn ChartCells) -> Vec<Named>;

/// Which part of an analysis a cell's runs belong to (`None`: to none), given the matrix's
/// axis order.
pub type PartOf = fn(&AnalysisSpec, &crate::matrix::Cell, &[String]) -> Option<String>;

/// One part's share of the result, computed from that part's runs alone (and every cell of
/// the matrix); the analysis's [`Compute`] finds it among the input's [`super::Parts`].
pub type ComputePart = fn(&AnalysisSpec, &AnalysisInput<'_>) -> Option<super::PartResult>;

/// How an analysis splits into parts that can be computed as soon as their own runs are done,
/// while other runs are still under way: what remains once the last run ends is putting the
/// parts together. The result is the same whether or not its parts were computed early.
#[derive(Clone, Copy)]
pub struct Partition {
    pub part_of: PartOf,
    pub compute: ComputePart,
}

/// What an options reader may need beyond its table: what the table's shared keys said.
pub struct OptionsContext<'a> {
    /// The table's `axis` (or the kind's default axis).
    pub axis: Option<&'a str>,
    /// Every axis of the manifest's matrix.
    pub axes: &'a BTreeSet<String>,
    /// The table's rule for matching findings between runs.
    pub matching: &'a MatchRule,
    /// The directory the manifest's relative paths start from.
    pub base_dir: &'a Path,
}

/// How an analysis uses the table's `axis`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AxisUse {
    /// It may name one (a comparison between its values), or not.
    Optional,
    /// It compares the values of one axis and must name it.
    Required,
    /// This axis, unless the table names another.
    DefaultsTo(&'static str),
}

/// One analysis kind, as its module declares it.
pub struct Definition {
    kind: AnalysisKind,
    compute: Compute,
    options: Option<(&'static [&'static str], ReadOptions)>,
    charts: Option<Charts>,
    axis: AxisUse,
    adjudication: bool,
    needs: Needs,
    partition: Option<Partition>,
}

impl Definition {
    /// A kind that computes its result and takes only the shared keys.
    pub const fn new(kind: AnalysisKind, compute: Compute) -> Self {
        Self {
            kind,
            compute,
            options: None,
            charts: None,
            axis: AxisUse::Optional,
            adjudication: false,
            needs: Needs { subjects: false, history: false, scoring: false, judges: false },
            partition: None,
        }
    }

    /// The keys of its own it reads (`keys`, for messages about the keys of other kinds) and how.
    pub const fn with_options(self, keys: &'static [&'static str], read: ReadOptions) -> Self {
        Self { options: Some((keys, read)), ..self }
    }

    /// The charts it draws beside its tables.
    pub const fn with_charts(self, charts: Charts) -> Self {
        Self { charts: Some(charts), ..self }
    }

    /// How it uses `axis`.
    pub const fn with_axis(self, axis: AxisUse) -> Self {
        Self { axis, ..self }
    }

    /// It scores runs one by one, so people's adjudications can decide them (`adjudication`).
    pub const fn taking_adjudication(self) -> Self {
        Self { adjudication: true, ..self }
    }

    /// What it reads beyond the runs' outcomes.
    pub const fn needing(self, needs: Needs) -> Self {
        Self { needs, ..self }
    }

    /// Its parts, computed early as their runs finish.
    pub const fn in_parts(self, partition: Partition) -> Self {
        Self { partition: Some(partition), ..self }
    }

    /// How it splits into parts, when it does.
    pub fn partition(&self) -> Option<Partition> {
        self.partition
    }

    pub fn kind(&self) -> AnalysisKind {
        self.kind
    }

    /// Its result over the runs (the tables are folded by `analysis::compute`).
    pub fn compute(&self, spec: &AnalysisSpec, input: &AnalysisInput<'_>) -> AnalysisResult {
        (self.compute)(spec, input)
    }

    /// The charts it draws of `result` (none for a kind without charts).
    pub fn charts(&self, result: &AnalysisResult, cells: &dyn ChartCells) -> Vec<Named> {
        self.charts.map_or_else(Vec::new, |charts| charts(result, cells))
    }

    /// The keys of its own its table may hold.
    pub(crate) fn option_keys(&self) -> &'static [&'static str] {
        self.options.map_or(&[], |(keys, _)| keys)
    }

    /// Its options, read from its table (`AnalysisOptions::None` for a kind without any).
    pub(crate) fn read_options(&self, t: &TableReader<'_, '_>, context: &OptionsContext<'_>) -> AnalysisOptions {
        self.options.map_or(AnalysisOptions::None, |(_, read)| read(t, context))
    }

    pub(crate) fn axis(&self) -> AxisUse {
        self.axis
    }

    pub(crate) fn takes_adjudication(&self) -> bool {
        self.adjudication
    }

    pub fn needs(&self) -> Needs {
        self.needs
    }
}
