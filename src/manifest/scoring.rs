//! Reading RQS v2's scoring resources: `[judges.NAME]`, `[pseudo-references]` and
//! `[embedder]`, checked against the `rqs` analyses that read them.

use super::model::Scoring;
use crate::analysis::spec::{AnalysisKind, AnalysisSpec};
use crate::config::TableReader;
use std::path::Path;

/// The scoring tables, every problem reported at once. `analyses` are the manifest's
/// analyses as read (`None` where one had problems).
pub(super) fn read_scoring(root: &TableReader<'_, '_>, base_dir: &Path, analyses: &[Option<AnalysisSpec>]) -> Option<Scoring> {
    let problems = root.problems();
    let judges = crate::judge::spec::read_judges(root, base_dir);
    let mut claims = None;
    let mut analyzers = Vec::new();
    let mut references_ok = true;
    if let Some(t) = root.table("pseudo-references") {
        if let Some(list) = t.strings("analyzers") {
            for name in &list {
                match crate::smells::AnalyzerKind::parse(name.get_ref()) {
                    Ok(kind) => analyzers.push(kind),
                    Err(e) => {
                        problems.push(name.span(), e.to_string());
                        references_ok = false;
                    }
                }
            }
        }
        if t.has("provider") || t.has("model") {
            claims = crate::judge::spec::read_claims(&t, base_dir);
            references_ok &= claims.is_some();
        }
        t.finish();
    } else {
        root.allow("pseudo-references");
    }
    let embedder = match root.table("embedder") {
        Some(t) => {
            let spec = crate::judge::embed::read_embedder_spec(&t, base_dir);
            t.finish();
            Some(spec?)
        }
        None => {
            root.allow("embedder");
            None
        }
    };
    let judges = judges?;
    if let Err(e) = crate::judge::spec::check_cross_family(&judges.iter().collect::<Vec<_>>()) {
        problems.push(root.key_span("judges").unwrap_or(0..0), e);
    }
    for spec in analyses.iter().flatten().filter(|a| a.kind == AnalysisKind::Rqs) {
        if judges.is_empty() {
            problems.push_with_help(root.span(), "analysis `rqs` needs a jury", "declare [judges.NAME] tables (2–3 judges of different model families)");
        }
        let options = spec.rqs.as_ref();
        let has_tau = options.is_some_and(|o| o.tau.is_some() || o.calibration.is_some());
        if embedder.is_some() && !has_tau {
            problems.push_with_help(
                root.span(),
                "analysis `rqs` aligns reviews with an embedder but names no threshold",
                "add `tau = …` or `calibration = \"…\"` (written by `runner crscore --calibrate`) to the analysis",
            );
        }
        if embedder.is_none() && (claims.is_some() || !analyzers.is_empty()) {
            problems.push_with_help(root.span(), "pseudo-references are declared but no [embedder] aligns reviews with them", "declare [embedder]");
        }
    }
    references_ok.then_some(Scoring { judges, claims, analyzers, embedder })
}
