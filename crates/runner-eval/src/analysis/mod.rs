//! Analyses: pure functions from finished runs to tables. One file per kind; each result is
//! serializable (results.json) and rendered generically (RESULTS.md). [`ANALYSES`] is the
//! registry: a kind is found, read and computed through it, so adding an analysis is its file
//! in a room and one line there (and, for options of its own, their reading in `read.rs`).
//!
//! The analyses live in rooms by what they measure: `efficacy` (Stet's A- and H-tests, seed
//! 000), `statistics` (paired comparisons, agreement, cost and budget), `corpus` (seeds 002
//! and 003, scored against a private oracle), `rqs` (seed 001: RQS v2, its alignment and the
//! resolution rate) and `matching` (the rules that decide "found", and the judges that check
//! them). What every room shares sits here: the runs they read and the tables they produce
//! (`model`, `data`), and what a manifest asks of them (`spec`, `read`).

pub mod data;
pub mod model;
pub mod read;
pub mod spec;
#[cfg(test)]
pub(crate) mod test_support;

pub use model::*;

use spec::{AnalysisKind, AnalysisSpec};

/// Declares each room with its modules, and registers each analysis's `compute` under its
/// kind. A room reads `name (modules that are not analyses) { module => kind, ... }`: one
/// line per analysis.
macro_rules! analyses {
    ($(
        $(#[$room_doc:meta])*
        $room:ident ($($helper:ident),*) {
            $($module:ident => $kind:expr,)*
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
        pub static ANALYSES: &[&dyn Analysis] = &[$($(&Computed($kind, $room::$module::compute),)*)*];
    };
}

analyses! {
    /// Stet's efficacy tests (seed 000): the A-tests on runs, H2 on a fixture, and the
    /// H-tests a study's sheets answer.
    efficacy () {
        overlap => AnalysisKind::OVERLAP,
        latency => AnalysisKind::LATENCY,
        repeatability => AnalysisKind::REPEATABILITY,
        distribution => AnalysisKind::DISTRIBUTION,
        id_stability => AnalysisKind::ID_STABILITY,
        schema => AnalysisKind::SCHEMA,
        rag_ablation => AnalysisKind::RAG_ABLATION,
        fixture => AnalysisKind::FIXTURE,
        aggregation => AnalysisKind::AGGREGATION,
        context_level => AnalysisKind::CONTEXT_LEVEL,
        study_sheets => AnalysisKind::STUDY,
    }
    /// Statistics across cells: paired comparisons, agreement between raters, and what the
    /// reviews cost.
    statistics (agreement) {
        cost => AnalysisKind::COST,
        budget => AnalysisKind::BUDGET,
        compare => AnalysisKind::COMPARE,
    }
    /// The before/after corpus (seed 002's scorer) and the review-eval loop (seed 003):
    /// reviews scored against a private oracle.
    corpus (score, contamination) {
        review_eval => AnalysisKind::REVIEW_EVAL,
        aacr => AnalysisKind::AACR,
    }
    /// Seed 001: RQS v2 from the jury's verdicts and CRScore's alignment, checked against
    /// CRScore's human study, and the resolution rate from the repository's history.
    rqs (alignment, crscore) {
        metric => AnalysisKind::RQS,
        resolution => AnalysisKind::RESOLUTION,
    }
    /// Deciding "found": the matching rules, oracle matching, people's adjudications, and the
    /// judges' decisions that measure and calibrate the rule.
    matching (rule, matcher, adjudication, calibration, judgements, probability, evaluate) {
        jury => AnalysisKind::JURY,
    }
}

/// A kind computed by a function of its module.
struct Computed(AnalysisKind, fn(&AnalysisSpec, &AnalysisInput<'_>) -> AnalysisResult);

impl Analysis for Computed {
    fn kind(&self) -> AnalysisKind {
        self.0
    }

    fn compute(&self, spec: &AnalysisSpec, input: &AnalysisInput<'_>) -> AnalysisResult {
        (self.1)(spec, input)
    }
}

/// The kind a manifest or a results.json names, if it is registered.
pub(crate) fn kind_named(name: &str) -> Option<AnalysisKind> {
    ANALYSES.iter().map(|a| a.kind()).find(|k| k.as_str() == name)
}

/// Every registered kind, in registry order.
pub fn kinds() -> impl Iterator<Item = AnalysisKind> {
    ANALYSES.iter().map(|a| a.kind())
}

impl<'de> serde::Deserialize<'de> for AnalysisKind {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        kind_named(&name).ok_or_else(|| serde::de::Error::custom(format!("unknown analysis kind `{name}`")))
    }
}

/// Computes one analysis through the registry.
pub fn compute(spec: &AnalysisSpec, input: &AnalysisInput<'_>) -> AnalysisResult {
    let mut result = match ANALYSES.iter().find(|a| a.kind() == spec.kind) {
        Some(analysis) => analysis.compute(spec, input),
        None => AnalysisResult::new(spec, "?", spec.kind.as_str(), "An analysis kind this build does not know."),
    };
    for table in &mut result.tables {
        table.fold();
    }
    result
}
