//! `runner matching`: the matching rule evaluated against judges' decisions, and calibrated on them.

use super::common::{is_json_object, write_output};
use crate::cli::{MatchingCalibrateArgs, MatchingEmbedderArgs, MatchingEvaluateArgs};
use runner::error::{Error, Exit};
use std::path::{Path, PathBuf};

/// `runner matching evaluate`: the matcher against judges' decisions. The rule is the default
/// (lexical) one unless a calibration file or a threshold says otherwise: with an embedder
/// set and no rule that uses it, embeddings are not computed, since the rule with embeddings
/// agreed less with the judges on projects its calibration never saw.
pub(crate) fn evaluate(args: &MatchingEvaluateArgs) -> Result<Exit, Error> {
    use runner::analysis::matching::matcher::SimilarityMeasure;
    use runner::analysis::spec::{OracleRule, DEFAULT_EMBEDDING_CALIBRATION};
    let mut rule = match &args.calibration {
        Some(path) => {
            let c = runner::analysis::matching::calibration::read_rule(path).map_err(|e| Error::Scoring(format!("`{}`: {e}", path.display())))?;
            OracleRule {
                similarity: c.similarity,
                measure: c.measure,
                embedding_similarity: c.embedding_similarity,
                calibrated: c.calibrated,
                ..OracleRule::default()
            }
        }
        None => OracleRule::default(),
    };
    let uses_embeddings = rule.embedding_similarity.is_some() || args.embedding_threshold.is_some();
    let mut embedder = args.embedder.clone();
    if !uses_embeddings && embedder.embedder_url.is_some() && !embedder.lexical {
        embedder.lexical = true;
        let unseen = |c: &runner::analysis::spec::Calibrated| c.unseen.map(|u| format!("κ {:.3}–{:.3}", u.kappa_low, u.kappa_high)).unwrap_or_default();
        super::output::warn(&format!(
            "an embedder is set, but the default rule is lexical: the rule with embeddings agreed less with the judges on projects its calibration never saw ({} against {}); `--calibration results/matching/calibration-embedding.json` evaluates it anyway",
            unseen(&DEFAULT_EMBEDDING_CALIBRATION),
            rule.calibrated.as_ref().map(unseen).unwrap_or_default()
        ));
    }
    let (files, vectors, _) = read_judgements(&args.files, &embedder)?;
    if rule.embedding_similarity.is_some() && vectors.is_none() {
        return Err(Error::Scoring("the rule uses embeddings: set an embedder (`--embedder-url` or RUNNER_EMBED_URL) or choose a lexical rule".into()));
    }
    if let Some(m) = &args.measure {
        let measure = SimilarityMeasure::parse(m).unwrap_or(SimilarityMeasure::Tokens);
        if measure != rule.measure {
            rule.measure = measure;
            rule.calibrated = None;
        }
    }
    if let Some(t) = args.threshold {
        rule.similarity = t;
        rule.calibrated = None;
    }
    if let Some(t) = args.embedding_threshold {
        rule.embedding_similarity = Some(t);
        rule.calibrated = None;
    }
    let report = runner::analysis::matching::evaluate::evaluate(&files, &rule, vectors.as_ref());
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report).map_err(|e| Error::Scoring(e.to_string()))?);
    } else {
        out!("{}", report.to_text());
    }
    Ok(Exit::Ok)
}

/// `runner matching calibrate`: the rule's thresholds chosen on labelled judgements.
pub(crate) fn calibrate(args: &MatchingCalibrateArgs) -> Result<Exit, Error> {
    use runner::analysis::matching::matcher::SimilarityMeasure;
    let (files, vectors, fingerprint) = read_judgements(&args.files, &args.embedder)?;
    let measure = SimilarityMeasure::parse(&args.measure).unwrap_or(SimilarityMeasure::Tokens);
    use runner::analysis::matching::calibration::{calibrate, FoldBy, HeldOut};
    let by = if args.folds == "project" { FoldBy::Project } else { FoldBy::PullRequest };
    let mut calibration = calibrate(&files, measure, vectors.as_ref(), fingerprint, by).map_err(Error::Scoring)?;
    if let Some(path) = &args.held_out {
        let held_out = HeldOut::read(path).map_err(|e| Error::Scoring(format!("`{}`: {e}", path.display())))?;
        if !held_out.is_of(&calibration.rule) {
            return Err(Error::Scoring(format!(
                "`{}` measured the rule {} ≥ {:.2}{}, and the calibration chose {:.2}{}: its figures are not this rule's",
                path.display(),
                held_out.rule.measure.describe(),
                held_out.rule.similarity,
                held_out.rule.embedding_similarity.map(|e| format!(" or cosine ≥ {e:.2}")).unwrap_or_default(),
                calibration.rule.similarity,
                calibration.rule.embedding_similarity.map(|e| format!(" or cosine ≥ {e:.2}")).unwrap_or_default(),
            )));
        }
        calibration.held_out = Some(held_out);
    }
    let text = serde_json::to_string_pretty(&calibration).map_err(|e| Error::Scoring(e.to_string()))? + "\n";
    let mut inputs: Vec<&Path> = args.files.iter().map(PathBuf::as_path).collect();
    inputs.extend(args.held_out.as_deref());
    write_output(&args.out, &text, &inputs, "a matching calibration", &is_json_object, true)?;
    let rule = &calibration.rule;
    let embedding = rule.embedding_similarity.map(|e| format!(" or embedding cosine ≥ {e:.2}")).unwrap_or_default();
    errln!(
        "chose {} ≥ {:.2}{embedding}: κ {:.3} cross-validated by {} (lowest judge {:.3}), {} cells of {} judges; wrote {}",
        rule.measure.describe(),
        rule.similarity,
        calibration.calibrated.kappa,
        args.folds,
        calibration.calibrated.kappa_min,
        calibration.calibrated.cells,
        calibration.calibrated.judges,
        args.out.display()
    );
    if let Some(h) = &calibration.held_out {
        let u = h.unseen();
        errln!(
            "on {} project{} it never saw ({}; {} cells per judge): κ {:.3}–{:.3} against each judge",
            u.projects,
            if u.projects == 1 { "" } else { "s" },
            h.projects.join(", "),
            u.cells,
            u.kappa_low,
            u.kappa_high
        );
    }
    if let Some(p) = &calibration.probability {
        let cv = &p.cross_validation;
        errln!(
            "decision probabilities: Brier {:.4} out of fold on {} cells with a report (the rule's own 0/1 decisions {:.4}, the base rate {:.4}); {} cells without one, {} of them found by the judges' majority",
            cv.brier,
            p.located,
            cv.brier_decisions,
            cv.brier_base_rate,
            p.unlocated,
            p.unlocated_found
        );
        errln!("calibration curve (predicted → observed, cells):");
        for b in cv.curve.iter().filter(|b| b.cells > 0) {
            errln!("  {:.1}–{:.1}: {:.3} → {:.3} ({})", b.from, b.to, b.predicted.unwrap_or(0.0), b.observed.unwrap_or(0.0), b.cells);
        }
    }
    Ok(Exit::Ok)
}

/// Judgement files, with their texts' embeddings and the embedder's fingerprint when one is set.
type ReadJudgements =
    (Vec<runner::analysis::matching::judgements::JudgementFile>, Option<runner::analysis::matching::judgements::Vectors>, Option<serde_json::Value>);

/// Reads judgement files, and embeds their texts through the cache when an embedder is set.
fn read_judgements(files: &[PathBuf], embedder: &MatchingEmbedderArgs) -> Result<ReadJudgements, Error> {
    use runner::analysis::matching::judgements::JudgementFile;
    use runner::judge::embed::{EmbedProtocol, Embedder, EmbedderSpec};
    let read: Vec<JudgementFile> = files.iter().map(|f| JudgementFile::read(f)).collect::<Result<_, _>>().map_err(Error::Scoring)?;
    let url = match (&embedder.embedder_url, embedder.lexical) {
        (Some(url), false) => url,
        _ => return Ok((read, None, None)),
    };
    let protocol = if embedder.provider == "ollama" { EmbedProtocol::Ollama } else { EmbedProtocol::OpenAi };
    let client = Embedder::new(EmbedderSpec::new(protocol, url, &embedder.embedder_model)).map_err(|e| Error::Scoring(e.to_string()))?;
    let texts: Vec<String> = read.iter().flat_map(|f| f.texts()).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
    let store = runner::cache::CacheStore::new(&embedder.cache);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(Error::Runtime)?;
    let embedded = runtime.block_on(runner::scoring::embed_cached(&client, &store, "matching", &texts, embedder.frozen)).map_err(Error::Scoring)?;
    errln!("{} texts embedded: {} batches from the cache, {} embedded now", texts.len(), embedded.cached, embedded.fresh);
    Ok((read, Some(embedded.vectors), Some(client.fingerprint())))
}
