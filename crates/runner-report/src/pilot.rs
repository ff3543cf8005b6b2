//! `runner plan`'s power estimate: from the per-subject values an earlier execution of the
//! same experiment wrote (its results.json, a pilot), how many subjects each `compare` pair's
//! headline metric would need for 80 % power at the analysis's α and `min-effect`
//! ([`crate::stats::subjects_for_power`]: a seeded simulation resampling the pilot's paired
//! differences; an estimate, per comparison, before Holm's correction over the table).

use super::model::Results;
use crate::analysis::spec::AnalysisKind;
use crate::stats::{subjects_for_power, PowerEstimate};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// The power a plan aims at.
pub const POWER: f64 = 0.8;
/// Simulated experiments per size tried.
pub const SIMS: usize = 400;

/// One pair's estimate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PilotPower {
    /// The `compare` analysis's position among the manifest's `[[analysis]]` tables.
    pub index: usize,
    pub metric: String,
    pub a: String,
    pub b: String,
    /// The cells' other axes' values, where the analysis compares within groups.
    pub group: Option<String>,
    /// Subjects the pilot's pair shares.
    pub pilot_subjects: usize,
    /// The pilot's mean paired difference, b − a.
    pub difference: f64,
    /// `None`: no difference in the pilot, or more than 1,000 subjects needed.
    pub estimate: Option<PowerEstimate>,
}

/// The estimates for every headline comparison of the `compare` analyses at `indices` (the
/// manifest's positions) that the pilot holds, seeded by each analysis's `seed`.
pub fn pilot_power(pilot: &Results, indices: &[usize]) -> Vec<PilotPower> {
    let mut out = Vec::new();
    for &index in indices {
        let Some(analysis) = pilot.analyses.get(index).filter(|a| a.kind == AnalysisKind::COMPARE) else { continue };
        let data = analysis.data.value();
        let (alpha, min_effect, seed) =
            (data["alpha"].as_f64().unwrap_or(0.05), data["min_effect"].as_f64().unwrap_or(0.0), data["seed"].as_u64().unwrap_or(0));
        let headline: Vec<&str> = data["headline"].as_array().map(|h| h.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
        let cells: BTreeMap<&str, &Value> =
            data["cells"].as_array().map(|c| c.iter().filter_map(|c| Some((c["cell"].as_str()?, &c["metrics"]))).collect()).unwrap_or_default();
        for comparison in data["comparisons"].as_array().into_iter().flatten() {
            let (Some(a), Some(b), Some(metric)) = (comparison["a"].as_str(), comparison["b"].as_str(), comparison["metric"].as_str()) else { continue };
            if !headline.contains(&metric) {
                continue;
            }
            let values = |cell: &str| cells.get(cell).and_then(|m| m[metric]["subjects"].as_object());
            let (Some(va), Some(vb)) = (values(a), values(b)) else { continue };
            let diffs: Vec<f64> = va.iter().filter_map(|(s, x)| Some(vb.get(s)?.as_f64()? - x.as_f64()?)).collect();
            if diffs.is_empty() {
                continue;
            }
            let label = |key: &str, cell: &str| comparison[key].as_str().unwrap_or(cell).to_string();
            out.push(PilotPower {
                index,
                metric: metric.to_string(),
                a: label("a_label", a),
                b: label("b_label", b),
                group: comparison["group"].as_str().filter(|g| !g.is_empty()).map(str::to_string),
                pilot_subjects: diffs.len(),
                difference: diffs.iter().sum::<f64>() / diffs.len() as f64,
                estimate: subjects_for_power(&diffs, alpha, min_effect, POWER, SIMS, seed),
            });
        }
    }
    out
}

/// One estimate as `runner plan` prints it, under its analysis's reach line.
pub fn line(p: &PilotPower) -> String {
    let group = p.group.as_ref().map(|g| format!(" ({g})")).unwrap_or_default();
    let head = format!("  pilot: {} {} − {}{group} = {:+.3} over {} subjects", p.metric, p.b, p.a, p.difference, p.pilot_subjects);
    match p.estimate {
        Some(e) => format!(
            "{head}: about {} subjects for {:.0} % power (an estimate: {} simulated experiments resampling the pilot)",
            e.subjects,
            POWER * 100.0,
            e.sims
        ),
        None if p.difference == 0.0 => format!("{head}: no difference in the pilot, so no number of subjects"),
        None => format!("{head}: more than 1,000 subjects for {:.0} % power (or a min-effect above the pilot's difference)", POWER * 100.0),
    }
}
