//! The `runner` binary: parse the command line, set the colour and SIGPIPE, hand the command
//! to `commands/` (one file per command), render an error, pick the exit code.

mod cli;
#[macro_use]
mod commands;

use cli::{Cli, Command};
use runner::analysis::corpus::score::ScoreError;
use runner::error::{Error, Exit};
use runner::manifest::LoadError;
use runner::study::adjudication::AdjudicationError;
use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

/// mimalloc: allocation-heavy work (reading 100k cache entries, building reports) runs
/// faster and leaves less memory stranded between threads than with the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // No transparent huge pages for this process (its children inherit the setting): where
    // the kernel gives them to every anonymous mapping, each thread's first allocations fault
    // in whole 2 MiB pages that the kernel zeroes, a quarter to a third of a short execution's
    // CPU time (docs/benchmarks.md). A kernel without the option refuses it; nothing changes.
    // SAFETY: a process-wide flag, set before any thread starts; no memory is passed.
    #[cfg(target_os = "linux")]
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
    // Behave like a Unix filter: `runner plan … | head` ends quietly instead of panicking.
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = match parse_cli() {
        Ok(cli) => cli,
        Err(exit) => return exit.into(),
    };
    let _ = COLOR.set(cli.color.choice());
    if matches!(cli.command, Command::Exec(_) | Command::Merge(_)) {
        // An execution must outlive its reader: a closed pipe is a failed write it sees (and
        // ends like Ctrl-C, killing its reviewers), not a signal that kills runner alone and
        // leaves them running. Children start with the default disposition again.
        // SAFETY: setting a signal disposition before any thread starts.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        }
    }
    let result = commands::run(cli.command);
    // What is still buffered for stdout must get there too, or the command failed.
    let result =
        result.and_then(|exit| std::io::Write::flush(&mut std::io::stdout()).map(|()| exit).map_err(|source| Error::Output { stream: "stdout", source }));
    // The run directories of this process go with it.
    runner::scratch::finish();
    match result {
        Ok(exit) => exit.into(),
        Err(error) => {
            // Nowhere left to say it when stderr itself fails: the exit code does.
            let _ = report_error(&error);
            error.exit().into()
        }
    }
}

/// `--color`, as the command line said it.
static COLOR: std::sync::OnceLock<runner::config::color::ColorChoice> = std::sync::OnceLock::new();

/// Whether what goes to stderr is coloured.
fn stderr_color() -> bool {
    runner::config::color::enabled(COLOR.get().copied().unwrap_or_default(), std::io::stderr().is_terminal())
}

/// The command line, with clap's help and errors coloured as `--color` and the environment
/// say. A usage error exits 1, as every other error does: clap's own 2 means "a model server
/// is unreachable" here.
fn parse_cli() -> Result<Cli, Exit> {
    use clap::{CommandFactory, FromArgMatches};
    use runner::config::color::{decide, Decision};
    let choice = cli::ColorArg::from_raw(std::env::args_os()).choice();
    let color = match decide(choice, |name| std::env::var(name).ok()) {
        Decision::Always => clap::ColorChoice::Always,
        Decision::Never => clap::ColorChoice::Never,
        Decision::IfTerminal => clap::ColorChoice::Auto,
    };
    let mut command = Cli::command().color(color);
    match command.try_get_matches_from_mut(std::env::args_os()).and_then(|m| Cli::from_arg_matches(&m)) {
        Ok(cli) => Ok(cli),
        Err(error) => {
            let _ = error.print();
            Err(if error.use_stderr() { Exit::Error } else { Exit::Ok })
        }
    }
}

/// An error as the user sees it: a manifest's located diagnostics, a file's list of problems,
/// or one line.
pub(crate) fn report_error(error: &Error) -> Result<(), Error> {
    match error {
        Error::Manifest(LoadError::Invalid(errors)) => err!("{}", errors.render(stderr_color())),
        Error::Score(ScoreError::Invalid { path, problems }) => report_problems("score", path, problems)?,
        Error::Adjudication(AdjudicationError::Invalid { path, problems }) => report_problems("import", path, problems)?,
        other => errln!("error: {other}"),
    }
    Ok(())
}

fn report_problems(what: &str, path: &Path, problems: &[String]) -> Result<(), Error> {
    errln!("error: failed to {what} `{}`: {} problem{}", path.display(), problems.len(), if problems.len() == 1 { "" } else { "s" });
    for p in problems {
        errln!("  - {p}");
    }
    Ok(())
}
