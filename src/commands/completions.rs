//! `runner completions` and `runner man`: the shell completions and the man page, from the clap model.

use crate::cli::Cli;
use runner::error::{Error, Exit};

/// `runner completions SHELL`.
pub(crate) fn completions(shell: clap_complete::Shell) -> Result<Exit, Error> {
    use clap::CommandFactory;
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "runner", &mut script);
    out!("{}", String::from_utf8_lossy(&script));
    Ok(Exit::Ok)
}

/// `runner man`.
pub(crate) fn man() -> Result<Exit, Error> {
    use clap::CommandFactory;
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut page).map_err(|source| Error::Output { stream: "stdout", source })?;
    out!("{}", String::from_utf8_lossy(&page));
    Ok(Exit::Ok)
}
