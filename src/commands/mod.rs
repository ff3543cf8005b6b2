//! The commands: one file per command (sub-commands of one parent share a file), and the
//! dispatch from the parsed [`Command`] to them. A new subcommand is its variant in `cli.rs`,
//! its file here and its line in [`run`].

// First: the output macros are in scope in every module declared after it.
#[macro_use]
pub(crate) mod output;
mod common;

mod a2;
mod adjudicate;
mod cache;
mod completions;
mod corpus;
mod crscore;
mod diff;
pub(crate) mod exec;
mod init;
mod matching;
mod merge;
mod oracle;
mod plan;
mod report;
mod resolution;
mod score;
mod show;
mod study;
mod validate;

use crate::cli::{AdjudicateCommand, Command, CorpusCommand, MatchingCommand, OracleCommand, StudyCommand};
use runner::error::{Error, Exit};

/// Runs one command; its exit code, or the error that ended it.
pub(crate) fn run(command: Command) -> Result<Exit, Error> {
    match command {
        Command::Init(args) => init::run(&args),
        Command::Completions { shell } => completions::completions(shell),
        Command::Man => completions::man(),
        Command::Exec(args) => exec::run(args),
        Command::Plan(args) => plan::run(args),
        Command::Merge(args) => merge::run(args),
        Command::Validate { files, max_runs } => validate::run(&files, max_runs),
        Command::Diff(args) => diff::run(args),
        Command::Show(args) => show::run(&args),
        Command::Report(args) => report::run(&args),
        Command::Cache { command, locations } => cache::run(command, &locations),
        Command::Corpus { command: CorpusCommand::Validate(args) } => corpus::validate(&args),
        Command::Corpus { command: CorpusCommand::Import(args) } => corpus::import(&args),
        Command::Score(args) => score::run(&args),
        Command::Crscore(args) => crscore::run(&args),
        Command::Matching { command: MatchingCommand::Evaluate(args) } => matching::evaluate(&args),
        Command::Matching { command: MatchingCommand::Calibrate(args) } => matching::calibrate(&args),
        Command::A2(args) => a2::run(&args),
        Command::Resolution(args) => resolution::run(&args),
        Command::Oracle { command: OracleCommand::ImportGithub(args) } => oracle::import_github(&args),
        Command::Oracle { command: OracleCommand::Propose(args) } => oracle::propose(&args),
        Command::Oracle { command: OracleCommand::Mine(args) } => oracle::mine(&args),
        Command::Adjudicate { command: AdjudicateCommand::Export(args) } => adjudicate::export(&args),
        Command::Adjudicate { command: AdjudicateCommand::Import(args) } => adjudicate::import(&args),
        Command::Study { command: StudyCommand::Export(args) } => study::export(&args),
        Command::Study { command: StudyCommand::Import(args) } => study::import(&args),
        Command::Study { command: StudyCommand::Audit(args) } => study::audit(&args),
        Command::Study { command: StudyCommand::Preference(args) } => study::preference(&args),
    }
}
