//! `runner show`: the selected runs' findings, from the cache.

use super::common::{locations, results_file};
use super::output::warn;
use crate::cli::ShowArgs;
use runner::error::{Error, Exit};
use runner::experiment;
use std::path::PathBuf;
use std::sync::Arc;

/// `runner show`: what the selected runs' reviewers said, from the cache. A manifest shows
/// the runs it plans now; a results.json (or its directory) the runs it recorded.
pub(crate) fn run(args: &ShowArgs) -> Result<Exit, Error> {
    use runner::report::show::{self, Selection, ShowError};
    let target = &args.target;
    let is_manifest = target.extension().is_some_and(|e| e == "toml");
    let is_results = !is_manifest && (target.is_dir() || target.extension().is_some_and(|e| e == "json"));
    let selection = Selection { cell: args.cell.clone(), subject: args.subject.clone(), repeat: args.repeat, key: args.key.clone() };
    let shown = if is_manifest {
        let prepared = experiment::prepare_to_read(target, &locations(&args.locations))?;
        experiment::show(&prepared, &selection, Arc::new(|message| warn(&message)))?
    } else if is_results {
        let path = results_file(target);
        let results = runner::report::model::Results::read(&path)?;
        let manifest = runner::report::html::manifest_of(&path, &results).map_err(|why| ShowError::Manifest { results: path.display().to_string(), why })?;
        let prepared = experiment::prepare_to_read(&manifest, &locations(&args.locations))?;
        experiment::show_recorded(&prepared, &results, &selection, Arc::new(|message| warn(&message)))?
    } else {
        let store = runner::cache::CacheStore::new(args.locations.cache_dir.clone().unwrap_or_else(|| PathBuf::from("cache")));
        show::collect_run(&store, &target.display().to_string())?
    };
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&shown).unwrap_or_default());
    } else {
        out!("{}", show::render_text(&shown));
    }
    Ok(Exit::Ok)
}
