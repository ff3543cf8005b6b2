//! Analyses: pure functions from finished runs to tables. One file per kind, which declares
//! what its kind knows (a [`definition::Definition`]: how it computes, the options it reads,
//! the charts it draws); each result is serializable (results.json) and rendered generically
//! (RESULTS.md). [`ANALYSES`] is the registry: a kind is found, read, computed and charted
//! through it, so adding an analysis is its file in a room and one line there.
//!
//! The analyses live in rooms by what they measure: `efficacy` (Stet's A- and H-tests, seed
//! 000), `statistics` (paired comparisons, agreement, cost and budget), `corpus` (seeds 002
//! and 003, scored against a private oracle), `rqs` (seed 001: RQS v2, its alignment and the
//! resolution rate) and `matching` (the rules that decide "found", and the judges that check
//! them). What every room shares sits here: the runs they read and the tables they produce
//! (`model`, `data`), and what a manifest asks of them (`spec`, `read`).

pub mod chart;
pub(crate) mod data;
pub mod definition;
pub(crate) mod model;
pub mod read;
pub mod spec;
#[cfg(test)]
pub(crate) mod test_support;

pub use model::*;

use definition::Definition;
use spec::{AnalysisKind, AnalysisSpec};

/// Declares each room with its modules, and registers each analysis: the `ANALYSIS`
/// definition its module declares. A room reads `name (modules that are not analyses) {
/// module, ... }`: one line per analysis.
macro_rules! analyses {
    ($(
        $(#[$room_doc:meta])*
        $room:ident ($($helper:ident),*) {
            $($module:ident,)*
        }
    )*) => {
        $(
            $(#[$room_doc])*
            pub mod $room {
                $(pub mod $helper;)*
                $(pub mod $module;)*
            }
        )*

        /// Every analysis kind, room by room, in the order `runner validate` lists them.
        pub static ANALYSES: &[&Definition] = &[$($(&$room::$module::ANALYSIS,)*)*];
    };
}

analyses! {
    /// Stet's efficacy tests (seed 000): the A-tests on runs, H2 on a fixture, and the
    /// H-tests a study's sheets answer.
    efficacy () {
        overlap,
        latency,
        repeatability,
        distribution,
        id_stability,
        schema,
        rag_ablation,
        fixture,
        aggregation,
        context_level,
        study_sheets,
    }
    /// Statistics across cells: paired comparisons and what the reviews cost (agreement
    /// between raters is `runner-core`'s `agreement`).
    statistics () {
        cost,
        budget,
        compare,
    }
    /// The before/after corpus (seed 002's scorer) and the review-eval loop (seed 003):
    /// reviews scored against a private oracle.
    corpus (score, contamination) {
        review_eval,
        aacr,
    }
    /// Seed 001: RQS v2 from the jury's verdicts and CRScore's alignment, checked against
    /// CRScore's human study, and the resolution rate from the repository's history.
    rqs (alignment, crscore) {
        metric,
        resolution,
    }
    /// Deciding "found": the matching rules, oracle matching, people's adjudications, and the
    /// judges' decisions that measure and calibrate the rule.
    matching (rule, matcher, adjudication, calibration, judgements, probability, evaluate) {
        jury,
    }
}

/// The definition of the kind a manifest or a results.json names, if it is registered.
pub(crate) fn definition_of_name(name: &str) -> Option<&'static Definition> {
    ANALYSES.iter().copied().find(|d| d.kind().as_str() == name)
}

/// The definition of a kind, if it is registered.
pub fn definition_of(kind: AnalysisKind) -> Option<&'static Definition> {
    ANALYSES.iter().copied().find(|d| d.kind() == kind)
}

/// The part of `spec`'s analysis that `cell`'s runs belong to, when its kind computes in parts
/// ([`definition::Partition`]).
pub fn part_of(spec: &AnalysisSpec, cell: &crate::matrix::Cell, axis_order: &[String]) -> Option<String> {
    definition_of(spec.kind).and_then(Definition::partition).and_then(|p| (p.part_of)(spec, cell, axis_order))
}

/// One part of `spec`'s analysis over `input` (that part's runs), when its kind computes in parts.
pub fn compute_part(spec: &AnalysisSpec, input: &AnalysisInput<'_>) -> Option<PartResult> {
    definition_of(spec.kind).and_then(Definition::partition).and_then(|p| (p.compute)(spec, input))
}

/// Every registered kind, in registry order.
pub fn kinds() -> impl Iterator<Item = AnalysisKind> {
    ANALYSES.iter().map(|d| d.kind())
}

impl<'de> serde::Deserialize<'de> for AnalysisKind {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        definition_of_name(&name).map(|d| d.kind()).ok_or_else(|| serde::de::Error::custom(format!("unknown analysis kind `{name}`")))
    }
}

/// Computes one analysis through the registry.
pub fn compute(spec: &AnalysisSpec, input: &AnalysisInput<'_>) -> AnalysisResult {
    let mut result = match definition_of(spec.kind) {
        Some(definition) => definition.compute(spec, input),
        None => AnalysisResult::new(spec, "?", spec.kind.as_str(), "An analysis kind this build does not know."),
    };
    for table in &mut result.tables {
        table.fold();
    }
    result
}
