//! `runner matching`: the matching rule evaluated against judges' decisions, and calibrated on them.

use super::common::{is_json_object, write_output};
use crate::cli::{MatchingCalibrateArgs, MatchingEmbedderArgs, MatchingEvaluateArgs};
use runner::error::{Error, Exit};
use std::path::{Path, PathBuf};

/// `runner matching evaluate`: the matcher against judges' decisions.
pub(crate) fn evaluate(args: &MatchingEvaluateArgs) -> Result<Exit, Error> {
    use runner::analysis::matching::matcher::SimilarityMeasure;
    use runner::analysis::spec::OracleRule;
    let (files, vectors, _) = read_judgements(&args.files, &args.embedder)?;
    let mut rule = match (&args.calibration, vectors.is_some()) {
        (Some(path), _) => {
            let c = runner::analysis::matching::calibration::read_rule(path).map_err(|e| Error::Scoring(format!("`{}`: {e}", path.display())))?;
            OracleRule {
                similarity: c.similarity,
                measure: c.measure,
                embedding_similarity: c.embedding_similarity,
                calibrated: c.calibrated,
                ..OracleRule::default()
            }
        }
        (None, true) => OracleRule::default_with_embeddings(),
        (None, false) => OracleRule::default(),
    };
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
    let report = runner::report::matching::evaluate(&files, &rule, vectors.as_ref());
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
    use runner::analysis::matching::calibration::{calibrate, FoldBy};
    let by = if args.folds == "project" { FoldBy::Project } else { FoldBy::PullRequest };
    let calibration = calibrate(&files, measure, vectors.as_ref(), fingerprint, by).map_err(Error::Scoring)?;
    let text = serde_json::to_string_pretty(&calibration).map_err(|e| Error::Scoring(e.to_string()))? + "\n";
    let inputs: Vec<&Path> = args.files.iter().map(PathBuf::as_path).collect();
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
