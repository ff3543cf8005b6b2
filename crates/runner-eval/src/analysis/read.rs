//! The reader of a manifest's `[[analysis]]` tables: each table's kind, looked up in the
//! registry, and the options that kind takes, with every problem located.

use super::matching::rule::{Evidence, SimilarityMeasure};
use super::spec::*;
use crate::config::{did_you_mean, resolve_path, TableReader};
use std::collections::BTreeSet;
use std::path::Path;
use toml::Spanned;

/// Reads one `[[analysis]]` table: its kind and the options that kind takes.
pub fn read_analysis(t: &TableReader<'_, '_>, axes: &BTreeSet<String>, base_dir: &Path) -> Option<AnalysisSpec> {
    let problems = t.problems();
    let kind_text = t.required_string("kind")?;
    let Some(kind) = super::kind_named(kind_text.get_ref()) else {
        let kinds: Vec<&str> = super::kinds().map(|k| k.as_str()).collect();
        let help = match did_you_mean(kind_text.get_ref(), kinds.iter().copied()) {
            Some(best) => format!("did you mean `{best}`? (kinds: {})", kinds.join(", ")),
            None => format!("kinds: {}", kinds.join(", ")),
        };
        // The analysis's other keys are still read, so they are not reported as unknown.
        for key in [
            "title",
            "axis",
            "line-tolerance",
            "similarity",
            "similarity-measure",
            "dedup-similarity",
            "partial-similarity",
            "evidence",
            "judge-floor",
            "matching-calibration",
            "adjudication",
            "tau",
            "calibration",
            "anchor",
            "shuffle-seed",
            "metrics",
            "headline",
            "baseline",
            "resamples",
            "seed",
            "alpha",
            "min-effect",
            "interval",
            "rank-by",
            "study",
            "sheets",
            "key",
            "window",
            "tolerance",
            "head",
            "gold",
        ] {
            t.allow(key);
        }
        problems.push_with_help(kind_text.span(), format!("unknown analysis kind `{}`", kind_text.get_ref()), help);
        return None;
    };
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
    let needs_axis = matches!(kind, AnalysisKind::OVERLAP);
    if needs_axis && axis.is_none() && !t.has("axis") {
        problems.push(t.span(), format!("analysis `{}` needs `axis`, the matrix axis whose values it compares", kind.as_str()));
    }
    let axis = axis.map(Spanned::into_inner).or_else(|| (kind == AnalysisKind::RAG_ABLATION).then(|| "rag_symbol_max_definitions".to_string()));
    if kind == AnalysisKind::RAG_ABLATION && !axes.contains(axis.as_deref().unwrap_or_default()) {
        problems.push(t.span(), "analysis `rag-ablation` needs a `rag_symbol_max_definitions` axis (or `axis = \"...\"`) with 0 among its values");
    }
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
        if matches!(kind, AnalysisKind::FIXTURE | AnalysisKind::REVIEW_EVAL) {
            Some(resolve_path(base_dir, a.get_ref()))
        } else {
            problems.push(
                a.span(),
                format!(
                    "analysis `{}` does not take `adjudication`: only `fixture` and `review-eval` score runs one by one, as an adjudication decides them",
                    kind.as_str()
                ),
            );
            None
        }
    });
    let rqs = (kind == AnalysisKind::RQS).then(|| {
        let tau = t.float("tau", -1.0, 1.0).map(Spanned::into_inner);
        let calibration = t.string("calibration").map(|c| resolve_path(base_dir, c.get_ref()));
        if tau.is_some() && calibration.is_some() {
            problems.push(t.span(), "analysis `rqs` takes `tau` or `calibration`, not both");
        }
        RqsOptions {
            tau,
            calibration,
            anchor: t.string("anchor").map(|a| resolve_path(base_dir, a.get_ref())),
            shuffle_seed: t.integer("shuffle-seed", 0, i64::MAX).map_or(0, |n| *n.get_ref() as u64),
        }
    });
    let compare = (kind == AnalysisKind::COMPARE).then(|| read_compare(t, axis.as_deref(), &matching));
    let rank_by = t.string("rank-by").and_then(|r| {
        if kind != AnalysisKind::FIXTURE {
            problems.push(r.span(), format!("analysis `{}` does not take `rank-by`: only `fixture` ranks its cells", kind.as_str()));
            return None;
        }
        let found = RankBy::ALL.into_iter().find(|k| k.as_str() == r.get_ref());
        if found.is_none() {
            problems.push_with_help(r.span(), format!("unknown `rank-by` rate `{}`", r.get_ref()), "rates: f1, precision, recall");
        }
        found
    });
    let study = (kind == AnalysisKind::STUDY).then(|| read_study(t, base_dir)).flatten();
    let resolution = (kind == AnalysisKind::RESOLUTION).then(|| read_resolution(t));
    let aacr = (kind == AnalysisKind::AACR).then(|| read_aacr(t, base_dir)).flatten();
    let options = match (rqs, compare, rank_by, study, resolution) {
        (Some(o), ..) => AnalysisOptions::Rqs(o),
        (_, Some(o), ..) => AnalysisOptions::Compare(o),
        (_, _, Some(r), ..) => AnalysisOptions::RankBy(r),
        (.., Some(o), _) => AnalysisOptions::Study(o),
        (.., Some(o)) => AnalysisOptions::Resolution(o),
        _ => aacr.map_or(AnalysisOptions::None, AnalysisOptions::Aacr),
    };
    Some(AnalysisSpec { kind, title, axis, matching, oracle_rule, adjudication, options })
}

/// An `aacr` analysis's `gold`, loaded (a located problem when it cannot be read).
fn read_aacr(t: &TableReader<'_, '_>, base_dir: &Path) -> Option<AacrOptions> {
    use crate::ground_truth::aacr;
    let written = t.required_string("gold")?;
    let gold = resolve_path(base_dir, written.get_ref());
    match aacr::load(&gold) {
        Ok(loaded) => Some(AacrOptions { gold, loaded: std::sync::Arc::new(loaded) }),
        Err(e) => {
            t.problems().push_with_help(
                written.span(),
                format!("`gold`: {e}"),
                format!("`gold` names the directory holding AACR-Bench's {} (and {})", aacr::POSITIVE_FILE, aacr::NEGATIVE_FILE),
            );
            None
        }
    }
}

/// A `resolution` analysis's `window`, `tolerance` and `head`.
fn read_resolution(t: &TableReader<'_, '_>) -> ResolutionOptions {
    let mut options = ResolutionOptions::default();
    if let Some(n) = t.integer("window", 1, 100_000) {
        options.window = *n.get_ref() as usize;
    }
    if let Some(n) = t.integer("tolerance", 0, 1000) {
        options.tolerance = *n.get_ref() as u32;
    }
    if let Some(h) = t.string("head") {
        if h.get_ref().trim().is_empty() || h.get_ref().starts_with('-') {
            t.problems().push(h.span(), format!("`head` must name a commit (a SHA or a ref), found `{}`", h.get_ref()));
        } else {
            options.head = Some(h.into_inner());
        }
    }
    options
}

/// A `study` analysis's `study`, `sheets` and `key`.
fn read_study(t: &TableReader<'_, '_>, base_dir: &Path) -> Option<StudyOptions> {
    let problems = t.problems();
    // Every key is read before any is found missing, so none is reported as unknown.
    let study = t.required_string("study");
    let preference = study.as_ref().is_some_and(|s| s.get_ref() == "h9");
    // H9's two files are a session log and a survey: there is no blind sheet, so no key.
    let (key, sheets) = (if preference { t.string("key") } else { t.required_string("key") }, t.strings("sheets"));
    if let (true, Some(list)) = (preference, &sheets) {
        if list.len() != 2 {
            problems.push_with_help(
                t.span(),
                "study `h9` reads two files",
                "`sheets = [\"…/sessions.csv\", \"…/survey.csv\"]`: the session log, then the preference survey",
            );
        }
    }
    if let Some(study) = &study {
        if !STUDIES.contains(&study.get_ref().as_str()) {
            let help = match did_you_mean(study.get_ref(), STUDIES.iter().copied()) {
                Some(best) => format!("did you mean `{best}`? (studies: {})", STUDIES.join(", ")),
                None => format!("studies: {}", STUDIES.join(", ")),
            };
            problems.push_with_help(study.span(), format!("unknown study `{}`", study.get_ref()), help);
        }
    }
    match &sheets {
        None => problems.push_with_help(
            t.span(),
            "analysis `study` needs `sheets`, the filled sheets",
            "`sheets = [\"…/sheet.csv\"]` (one per rater for h1 and h5)",
        ),
        Some(list) if list.is_empty() => problems.push(t.span(), "analysis `study` lists no `sheets`"),
        Some(_) => {}
    }
    // Files that are not there are said now, not only in the report.
    for file in sheets.iter().flatten().chain(key.iter()) {
        let path = resolve_path(base_dir, file.get_ref());
        if !path.is_file() {
            problems.push(file.span(), format!("study file `{}` does not exist", path.display()));
        }
    }
    Some(StudyOptions {
        study: study?.into_inner(),
        sheets: sheets?.iter().map(|s| resolve_path(base_dir, s.get_ref())).collect(),
        key: match key {
            Some(key) => resolve_path(base_dir, key.get_ref()),
            None if preference => std::path::PathBuf::new(),
            None => return None,
        },
    })
}

/// The options of a `compare` analysis; a `baseline` must be a value of its axis.
fn read_compare(t: &TableReader<'_, '_>, axis: Option<&str>, matching: &MatchRule) -> CompareOptions {
    let problems = t.problems();
    let mut options = CompareOptions { matching: *matching, ..CompareOptions::default() };
    // A list of unknown metrics is that mistake, not also an empty list.
    let unknown = std::cell::Cell::new(false);
    let read_metrics = |key: &str| -> Option<Vec<CompareMetric>> {
        let list = t.strings(key)?;
        let mut out = Vec::new();
        for m in list {
            match CompareMetric::parse(m.get_ref()) {
                Some(metric) if !out.contains(&metric) => out.push(metric),
                Some(_) => problems.push(m.span(), format!("metric `{}` is listed twice", m.get_ref())),
                None => {
                    let all: Vec<&str> = CompareMetric::ALL.iter().map(|m| m.as_str()).collect();
                    let help = match did_you_mean(m.get_ref(), all.iter().copied()) {
                        Some(best) => format!("did you mean `{best}`? (metrics: {})", all.join(", ")),
                        None => format!("metrics: {}", all.join(", ")),
                    };
                    problems.push_with_help(m.span(), format!("unknown metric `{}`", m.get_ref()), help);
                    unknown.set(true);
                }
            }
        }
        Some(out)
    };
    if let Some(metrics) = read_metrics("metrics") {
        if metrics.is_empty() && !unknown.get() {
            problems.push(t.span(), "analysis `compare` lists no `metrics`");
        }
        options.metrics = metrics;
    }
    options.headline = match read_metrics("headline") {
        Some(h) => {
            if let Some(stray) = h.iter().find(|m| !options.metrics.contains(m)) {
                problems.push(t.key_span("headline").unwrap_or_else(|| t.span()), format!("headline metric `{}` is not among `metrics`", stray.as_str()));
            }
            h
        }
        None if options.metrics.contains(&CompareMetric::Recall) => vec![CompareMetric::Recall],
        None => options.metrics.first().copied().into_iter().collect(),
    };
    if let Some(b) = t.string("baseline") {
        if axis.is_none() {
            problems.push(b.span(), "`baseline` names a value of `axis`; add the `axis` compared");
        }
        options.baseline = Some(b.into_inner());
    }
    if let Some(n) = t.integer("resamples", 100, 10_000_000) {
        options.resamples = *n.get_ref() as usize;
    }
    if let Some(n) = t.integer("seed", 0, i64::MAX) {
        options.seed = *n.get_ref() as u64;
    }
    if let Some(a) = t.float("alpha", 0.0001, 0.5) {
        options.alpha = *a.get_ref();
    }
    if let Some(m) = t.float("min-effect", 0.0, 1e9) {
        options.min_effect = *m.get_ref();
    }
    if let Some(i) = t.string("interval") {
        match i.get_ref().as_str() {
            "percentile" => options.interval = crate::stats::IntervalMethod::Percentile,
            "bca" => options.interval = crate::stats::IntervalMethod::Bca,
            other => problems.push_with_help(i.span(), format!("unknown interval method `{other}`"), "methods: bca (default), percentile"),
        }
    }
    options
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
    if let Some(e) = t.string("evidence") {
        match Evidence::parse(e.get_ref()) {
            Some(evidence) => {
                if evidence != Evidence::Similarity {
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
}
