//! `runner crscore`: CRScore's human study, its texts embedded through the cache.

use crate::cli::CrscoreArgs;
use runner::error::{Error, Exit};

/// `runner crscore`: CRScore's human study against an embedder.
pub(crate) fn run(args: &CrscoreArgs) -> Result<Exit, Error> {
    use runner::analysis::rqs::crscore;
    use runner::judge::embed::{EmbedProtocol, Embedder, EmbedderSpec};
    let data = crscore::CrscoreData::load(&args.reference).map_err(|e| Error::Scoring(e.to_string()))?;
    let protocol = if args.provider == "ollama" { EmbedProtocol::Ollama } else { EmbedProtocol::OpenAi };
    let mut spec = EmbedderSpec::new(protocol, &args.embedder_url, &args.embedder_model);
    spec.models_json = args.models_json.clone();
    let embedder = Embedder::new(spec).map_err(|e| Error::Scoring(e.to_string()))?;
    let texts = crscore::texts(&data);
    let store = runner::cache::CacheStore::new(&args.cache);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(Error::Runtime)?;
    let embedded = runtime.block_on(runner::scoring::embed_cached(&embedder, &store, "crscore", &texts, args.frozen)).map_err(Error::Scoring)?;
    errln!("{} texts: {} batches from the cache, {} embedded now", texts.len(), embedded.cached, embedded.fresh);
    let mut report = crscore::evaluate(&data, &embedded.vectors, args.tau).map_err(|e| Error::Scoring(e.to_string()))?;
    let fingerprint = embedder.fingerprint();
    report.embedder = Some(fingerprint.to_string());
    let written = runner::scoring::write_crscore(&args.out, &report, &fingerprint).map_err(Error::Scoring)?;
    out!("{}", report.to_markdown());
    for path in written {
        errln!("wrote {}", path.display());
    }
    Ok(Exit::Ok)
}
