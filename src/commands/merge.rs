//! `runner merge`: `exec --frozen` over the shards' cached runs.

use crate::cli::{ExecArgs, MergeArgs};
use runner::error::{Error, Exit};

/// `runner merge`: `exec --frozen`, listing each missing run with the shard that owns it.
pub(crate) fn run(args: MergeArgs) -> Result<Exit, Error> {
    super::exec::run(ExecArgs {
        manifest: args.manifest,
        jobs: crate::cli::default_jobs(),
        frozen: true,
        refresh: false,
        reports: args.reports,
        max_cost: None,
        shard: None,
        steal: false,
        lease_ttl: None,
        shards: args.shards,
        locations: args.locations,
    })
}
