//! Analyses: pure functions from finished runs to tables. One file per kind; each result is
//! serializable (results.json) and rendered generically (RESULTS.md). [`ANALYSES`] is the
//! registry: a kind is found, read and computed through it, so adding an analysis is its file
//! and one line there (and, for options of its own, their reading in `read.rs`).

pub mod adjudication;
pub mod agreement;
pub mod alignment;
pub mod crscore;
pub mod data;
pub mod judgements;
pub mod match_calibration;
pub mod matching;
pub mod model;
pub mod read;
pub mod rule;
pub mod score;
pub mod spec;
#[cfg(test)]
pub(crate) mod test_support;

pub use model::*;

use spec::{AnalysisKind, AnalysisSpec};

/// Declares each analysis module and registers its `compute` under its kind, one line each.
macro_rules! analyses {
    ($($module:ident => $kind:expr,)*) => {
        $(pub mod $module;)*

        /// Every analysis kind, in the order `runner validate` lists them.
        pub static ANALYSES: &[&dyn Analysis] = &[$(&Computed($kind, $module::compute)),*];
    };
}

analyses! {
    overlap => AnalysisKind::OVERLAP,
    latency => AnalysisKind::LATENCY,
    repeatability => AnalysisKind::REPEATABILITY,
    distribution => AnalysisKind::DISTRIBUTION,
    id_stability => AnalysisKind::ID_STABILITY,
    schema => AnalysisKind::SCHEMA,
    rag_ablation => AnalysisKind::RAG_ABLATION,
    cost => AnalysisKind::COST,
    budget => AnalysisKind::BUDGET,
    fixture => AnalysisKind::FIXTURE,
    aggregation => AnalysisKind::AGGREGATION,
    context_level => AnalysisKind::CONTEXT_LEVEL,
    review_eval => AnalysisKind::REVIEW_EVAL,
    rqs => AnalysisKind::RQS,
    compare => AnalysisKind::COMPARE,
    study_sheets => AnalysisKind::STUDY,
    jury => AnalysisKind::JURY,
    resolution => AnalysisKind::RESOLUTION,
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
