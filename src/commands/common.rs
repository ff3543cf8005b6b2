//! What several commands share: locations from the flags, results.json's path, and the output-file writer.

use crate::cli::LocationArgs;
use runner::error::Error;
use runner::experiment::Locations;
use std::path::{Path, PathBuf};

/// Where the cache, the work directory and the remote cache are, as the flags say.
pub(crate) fn locations(args: &LocationArgs) -> Locations {
    Locations { cache_dir: args.cache_dir.clone(), work_dir: args.work_dir.clone(), remote_cache: args.remote_cache.clone() }
}

/// results.json given as itself or as its directory.
pub(crate) fn results_file(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.join("results.json")
    } else {
        path.to_path_buf()
    }
}

/// Writes a file the user named, creating its directory: never through a link, over one of
/// `inputs`, or over a file that is not `what` this command writes unless `force`.
pub(crate) fn write_output(
    path: &Path,
    text: &str,
    inputs: &[&Path],
    what: &'static str,
    replaceable: &dyn Fn(&[u8]) -> bool,
    force: bool,
) -> Result<(), Error> {
    let replace = runner::output_file::Replace { what, replaceable, force };
    Ok(runner::output_file::write(path, text.as_bytes(), inputs, &replace)?)
}

/// A JSON object: what the oracle, patch and record writers write.
pub(crate) fn is_json_object(bytes: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(bytes).is_ok_and(|v| v.is_object())
}
