//! The reader of a manifest's `[[analysis]]` tables: each table's kind, looked up in the
//! registry, the keys every kind shares, and the options its kind reads, every problem located.

use super::definition::{AxisUse, OptionsContext};
use super::matching::rule::{Evidence, SimilarityMeasure};
use super::spec::*;
use crate::config::{did_you_mean, resolve_path, TableReader};
use std::collections::BTreeSet;
use std::path::Path;
use toml::Spanned;

/// The keys every `[[analysis]]` table may hold, whatever its kind.
const SHARED_KEYS: &[&str] = &["kind", "title", "axis", "line-tolerance", "similarity", "similarity-measure", "adjudication"];

/// The oracle-matching keys, read by the kinds that match findings to an oracle.
const ORACLE_KEYS: &[&str] = &["dedup-similarity", "partial-similarity", "evidence", "judge-floor", "judge-pairs", "matching-calibration"];

/// Every key any kind reads: a key of another kind is said not to apply, not to be unknown.
fn every_key() -> Vec<&'static str> {
    let mut keys: Vec<&str> = SHARED_KEYS.iter().chain(ORACLE_KEYS).copied().collect();
    for definition in super::ANALYSES {
        keys.extend(definition.option_keys().iter().copied().filter(|k| !keys.contains(k)).collect::<Vec<_>>());
    }
    keys
}

/// Reads one `[[analysis]]` table: its kind, looked up in the registry, the keys every kind
/// shares, and the options of its own its kind reads (`Definition::read_options`).
pub fn read_analysis(t: &TableReader<'_, '_>, axes: &BTreeSet<String>, base_dir: &Path) -> Option<AnalysisSpec> {
    let problems = t.problems();
    let kind_text = t.required_string("kind")?;
    let every_key = every_key();
    let Some(definition) = super::definition_of_name(kind_text.get_ref()) else {
        let kinds: Vec<&str> = super::kinds().map(|k| k.as_str()).collect();
        let help = match did_you_mean(kind_text.get_ref(), kinds.iter().copied()) {
            Some(best) => format!("did you mean `{best}`? (kinds: {})", kinds.join(", ")),
            None => format!("kinds: {}", kinds.join(", ")),
        };
        // The analysis's other keys are still read, so they are not reported as unknown.
        for key in every_key {
            t.allow(key);
        }
        problems.push_with_help(kind_text.span(), format!("unknown analysis kind `{}`", kind_text.get_ref()), help);
        return None;
    };
    t.vocabulary(&every_key);
    let kind = definition.kind();
    let title = t.string("title").map(Spanned::into_inner);
    let axis = t.string("axis");
    if let Some(a) = &axis {
        if !axes.contains(a.get_ref()) {
            let message = format!("analysis axis `{}` is not a matrix axis", a.get_ref());
            match did_you_mean(a.get_ref(), axes.iter().map(String::as_str)) {
                Some(best) => problems.push_with_help(a.span(), message, format!("did you mean `{best}`?")),
                None => problems.push_with_help(a.span(), message, format!("axes: {}", axes.iter().map(String::as_str).collect::<Vec<_>>().join(", "))),
            }
        }
    }
    if definition.axis() == AxisUse::Required && axis.is_none() && !t.has("axis") {
        problems.push(t.span(), format!("analysis `{}` needs `axis`, the matrix axis whose values it compares", kind.as_str()));
    }
    let axis = axis.map(Spanned::into_inner).or_else(|| match definition.axis() {
        AxisUse::DefaultsTo(default) => Some(default.to_string()),
        _ => None,
    });
    let mut matching = MatchRule::default();
    if let Some(n) = t.integer("line-tolerance", 0, 1000) {
        matching.line_tolerance = *n.get_ref() as u32;
    }
    if let Some(s) = t.float("similarity", 0.0, 1.0) {
        matching.similarity = *s.get_ref();
    }
    let mut oracle_rule = OracleRule::default();
    if kind.uses_oracle() {
        read_oracle_rule(t, &mut matching, &mut oracle_rule, base_dir);
    } else if let Some(m) = t.string("similarity-measure") {
        match SimilarityMeasure::parse(m.get_ref()) {
            Some(measure) => matching.measure = measure,
            None => problems.push_with_help(
                m.span(),
                format!("unknown similarity measure `{}`", m.get_ref()),
                "measures: levenshtein (default between runs), tokens",
            ),
        }
    }
    let adjudication = t.string("adjudication").and_then(|a| {
        if definition.takes_adjudication() {
            Some(resolve_path(base_dir, a.get_ref()))
        } else {
            let takers: Vec<String> = super::ANALYSES.iter().filter(|d| d.takes_adjudication()).map(|d| format!("`{}`", d.kind().as_str())).collect();
            problems.push(
                a.span(),
                format!(
                    "analysis `{}` does not take `adjudication`: only {} score runs one by one, as an adjudication decides them",
                    kind.as_str(),
                    takers.join(" and ")
                ),
            );
            None
        }
    });
    let context = OptionsContext { axis: axis.as_deref(), axes, matching: &matching, base_dir };
    let options = definition.read_options(t, &context);
    Some(AnalysisSpec { kind, title, axis, matching, oracle_rule, adjudication, options })
}

/// The oracle-matching keys of `fixture`, `aggregation` and `review-eval`: `line-tolerance`
/// and `similarity` configure matching to the oracle (the similarity with its own default),
/// `partial-similarity`, `similarity-measure` and `evidence` refine it, and `aggregation`
/// deduplicates repeats with `dedup-similarity` (normalized Levenshtein, default 0.6).
fn read_oracle_rule(t: &TableReader<'_, '_>, matching: &mut MatchRule, rule: &mut OracleRule, base_dir: &Path) {
    let problems = t.problems();
    rule.line_tolerance = matching.line_tolerance;
    if let Some(c) = t.string("matching-calibration") {
        let path = resolve_path(base_dir, c.get_ref());
        match crate::analysis::matching::calibration::read_rule(&path) {
            Ok(calibrated) if calibrated.embedding_similarity.is_some() => problems.push_with_help(
                c.span(),
                format!("the calibration `{}` needs embeddings, which oracle matching in an experiment does not compute", c.get_ref()),
                "calibrate without an embedder (`runner matching calibrate --lexical`) for an experiment's rule",
            ),
            Ok(calibrated) => {
                rule.similarity = calibrated.similarity;
                rule.measure = calibrated.measure;
                rule.calibrated = calibrated.calibrated;
                if rule.partial_similarity > rule.similarity {
                    rule.partial_similarity = rule.similarity / 2.0;
                }
            }
            Err(e) => problems.push(c.span(), format!("cannot use the matching calibration `{}`: {e}", c.get_ref())),
        }
    }
    if t.has("similarity") {
        rule.similarity = matching.similarity;
        rule.partial_similarity = matching.similarity / 2.0;
        rule.calibrated = None;
    }
    matching.similarity = MatchRule::default().similarity;
    if let Some(s) = t.float("dedup-similarity", 0.0, 1.0) {
        matching.similarity = *s.get_ref();
    }
    if let Some(s) = t.float("partial-similarity", 0.0, 1.0) {
        rule.partial_similarity = *s.get_ref();
        if rule.partial_similarity > rule.similarity {
            problems.push(s.span(), format!("`partial-similarity` ({}) must not exceed `similarity` ({})", rule.partial_similarity, rule.similarity));
        }
    }
    if let Some(m) = t.string("similarity-measure") {
        match SimilarityMeasure::parse(m.get_ref()) {
            Some(measure) if measure != rule.measure => {
                rule.measure = measure;
                rule.calibrated = None;
            }
            Some(_) => {}
            None => problems.push_with_help(m.span(), format!("unknown similarity measure `{}`", m.get_ref()), "measures: tokens, levenshtein"),
        }
    }
    if let Some(f) = t.float("judge-floor", 0.0, 1.0) {
        rule.judge_floor = Some(*f.get_ref());
    }
    let judge_pairs = t.string("judge-pairs");
    if let Some(p) = &judge_pairs {
        match p.get_ref().as_str() {
            "open" => {}
            "borderline" => rule.judge_borderline = true,
            other => problems.push_with_help(
                p.span(),
                format!("unknown judge-pairs `{other}`"),
                "judge-pairs: open (every pair the words leave open, the default) or borderline",
            ),
        }
    }
    if let Some(e) = t.string("evidence") {
        match Evidence::parse(e.get_ref()) {
            Some(evidence) => {
                // The judges asked about the borderline decisions only: the words, and the
                // calibration's decision model that says which are borderline, stay.
                if evidence != Evidence::Similarity && !(evidence == Evidence::Judge && rule.judge_borderline) {
                    rule.calibrated = None;
                }
                rule.evidence = evidence
            }
            None => {
                let all: Vec<&str> = Evidence::ALL.iter().map(|e| e.as_str()).collect();
                problems.push_with_help(e.span(), format!("unknown evidence `{}`", e.get_ref()), format!("evidence: {}", all.join(", ")))
            }
        }
    }
    if let Some(p) = judge_pairs.filter(|_| rule.judge_borderline) {
        if rule.evidence != Evidence::Judge {
            problems.push_with_help(
                p.span(),
                "`judge-pairs = \"borderline\"` applies where the judges have the word",
                "add `evidence = \"judge\"` and declare `[judges.NAME]`",
            );
        } else if rule.calibrated.and_then(|c| c.decisions).is_none() {
            problems.push_with_help(
                p.span(),
                "`judge-pairs = \"borderline\"` needs a matching calibration with a decision model, which says which decisions are borderline",
                "keep the default rule (its calibration has one), or name a `matching-calibration` written by `runner matching calibrate --lexical`; thresholds set by hand have none",
            );
        }
    }
}
