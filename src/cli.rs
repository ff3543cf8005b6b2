//! Command-line interface: clap definitions only; `main.rs` maps them onto the library.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(name = "runner", version, about = "Declarative experiment runner for evaluating LLM code reviewers")]
pub(crate) struct Cli {
    /// Colour: `auto` (on a terminal, unless NO_COLOR is set, CLICOLOR=0 or TERM=dumb),
    /// `always` or `never`.
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value = "auto")]
    pub color: ColorArg,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Start here: write a first experiment over this repository's recent commits (a built-in
    /// reviewer against an example command reviewer, and a paired comparison), or with
    /// `--corpus DIR` a before/after corpus of two cases. Never overwrites a file.
    #[command(
        after_help = "Example:\n  runner init                   # experiments/review.toml over this repository's newest commits\n  runner init --corpus corpus/mine"
    )]
    Init(InitArgs),
    /// Run an experiment: take results from the cache or run the reviewer, then write RESULTS.md.
    #[command(after_help = "Example:\n  runner exec experiments/quickstart.toml\n  runner exec experiments/quickstart.toml --frozen --progress=lines")]
    Exec(ExecArgs),
    /// Show what an experiment would run, what is cached, and why a cell misses.
    #[command(after_help = "Example:\n  runner plan experiments/quickstart.toml")]
    Plan(PlanArgs),
    /// Assemble the reports of an experiment its shards (`exec --shard i/n`) executed: like
    /// `exec --frozen`, it runs nothing and fails listing every run no shard stored.
    #[command(after_help = "Example:\n  runner merge experiments/quickstart.toml --shards 4")]
    Merge(MergeArgs),
    /// Check manifests and report every problem with its line and column.
    #[command(after_help = "Example:\n  runner validate experiments/*.toml")]
    Validate {
        /// Manifest files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Refuse a plan of more runs than this.
        #[arg(long, value_name = "N", default_value_t = runner::plan::DEFAULT_MAX_RUNS)]
        max_runs: u64,
    },
    /// Compare the review-eval verdicts of two executions (or two cells of one) and apply the
    /// keep rule: exit 0 to keep the change, 5 when a finding regressed or noise rose.
    #[command(after_help = "Example:\n  runner diff before/results.json after/results.json --metric recall")]
    Diff(DiffArgs),
    /// Show what reviewers said: every finding of an experiment's runs (or of one run), read
    /// from the cache; nothing is run.
    #[command(after_help = "Example:\n  runner show results/quickstart --cell baseline=heuristic")]
    Show(ShowArgs),
    /// Write one self-contained HTML page from results.json: the tables, the plots, the
    /// findings beside each subject's diff, filters; `--against` puts a second execution beside it.
    #[command(after_help = "Example:\n  runner report results/quickstart --against results/other")]
    Report(ReportArgs),
    /// Work with before/after corpora.
    #[command(after_help = "Example:\n  runner corpus validate corpus/quickstart")]
    Corpus {
        #[command(subcommand)]
        command: CorpusCommand,
    },
    /// Score human-adjudicated captured results (seed 002's format) against an oracle.
    #[command(after_help = "Example:\n  runner score captured-results.json --oracle corpus/quickstart")]
    Score(ScoreArgs),
    /// Check RQS v2's alignment scores against people: CRScore's human study, with an
    /// embedder, calibrating τ and correlating with the human scores.
    #[command(after_help = "Example:\n  runner crscore --frozen")]
    Crscore(CrscoreArgs),
    /// The rule that decides "found", measured and calibrated against judges' labels.
    #[command(after_help = "Example:\n  runner matching evaluate corpus/code-review-benchmark/judgements/*.json")]
    Matching {
        #[command(subcommand)]
        command: MatchingCommand,
    },
    /// Blind adjudication sheets: export one from an experiment's cached results, import the
    /// filled sheet as seed 002 captured results.
    #[command(after_help = "Example:\n  runner adjudicate export experiments/quickstart.toml --out sheet")]
    Adjudicate {
        #[command(subcommand)]
        command: AdjudicateCommand,
    },
    /// A2: actionability from stet's `.review/history.jsonl`, per session, per reason and per
    /// model, beside what stet's own `stats quality` reports.
    #[command(after_help = "Example:\n  runner a2 .review/history.jsonl --out a2")]
    A2(A2Args),
    /// Resolution rate (a proxy, offline): of the findings stet posted (`.review/history.jsonl`),
    /// the share whose flagged lines a later commit changed, per session, model, category and
    /// severity, dismissed findings apart.
    #[command(after_help = "Example:\n  runner resolution .review/history.jsonl --repo .")]
    Resolution(ResolutionArgs),
    /// Build oracles from a repository's review history.
    #[command(after_help = "Example:\n  runner oracle propose captured-results.adjudication.json --out oracle.patch.json")]
    Oracle {
        #[command(subcommand)]
        command: OracleCommand,
    },
    /// Seed 000's finding studies (H7 suggestion quality, H8 severity calibration): export a
    /// blind sampled sheet from an experiment's cached findings, import the filled sheet.
    #[command(after_help = "Example:\n  runner study export experiments/quickstart.toml --study h7 --out h7")]
    Study {
        #[command(subcommand)]
        command: StudyCommand,
    },
    /// Print a shell completion script (bash, zsh, fish, powershell or elvish) on stdout.
    #[command(
        after_help = "Example:\n  runner completions bash > ~/.local/share/bash-completion/completions/runner\n  runner completions zsh > \"${fpath[1]}/_runner\""
    )]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print runner's man page (roff) on stdout.
    #[command(after_help = "Example:\n  runner man > runner.1 && man ./runner.1")]
    Man,
    /// Inspect and maintain the cache.
    #[command(after_help = "Example:\n  runner cache gc --keep experiments/quickstart.toml --dry-run")]
    Cache {
        #[command(subcommand)]
        command: CacheCommand,
        #[command(flatten)]
        locations: LocationArgs,
    },
}

#[derive(Debug, Args, Clone)]
pub(crate) struct LocationArgs {
    /// Cache directory (default: the manifest's `[cache] dir`, else `cache/` at the manifest's
    /// project root — the nearest directory above it with `.git`; `cache` commands: `cache/` at
    /// the current directory's project root, or its `.runner/cache/` when only that exists).
    #[arg(long, env = "RUNNER_CACHE_DIR", global = true)]
    pub cache_dir: Option<PathBuf>,
    /// Where corpus cases are materialized as repositories (default: `.runner/` at the
    /// manifest's project root).
    #[arg(long, env = "RUNNER_WORK_DIR", global = true)]
    pub work_dir: Option<PathBuf>,
    /// A shared cache behind the local one, in any S3-compatible store:
    /// `s3://bucket/prefix`. Read-through and write-through; credentials and endpoint come
    /// from the AWS environment variables (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
    /// `AWS_ENDPOINT_URL`, `AWS_REGION`) or `AWS_PROFILE`, never from here.
    #[arg(long, env = "RUNNER_REMOTE_CACHE", global = true, value_name = "URL")]
    pub remote_cache: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct InitArgs {
    /// The experiment's name: it writes `experiments/NAME.toml` at the repository's root and
    /// reports into `results/NAME/`.
    #[arg(default_value = "review", conflicts_with = "corpus")]
    pub name: String,
    /// Write a seed-002 corpus (`cases.public.json` and `oracle.json`: one case with a known
    /// defect, one clean case) into DIR instead; check it with `runner corpus validate DIR`.
    #[arg(long, value_name = "DIR")]
    pub corpus: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct ExecArgs {
    /// The experiment manifest.
    pub manifest: PathBuf,
    /// Run at most this many reviews at once.
    #[arg(short, long, default_value_t = default_jobs())]
    pub jobs: usize,
    /// Call no reviewer: fail, listing what the cache lacks.
    #[arg(long, conflicts_with = "refresh")]
    pub frozen: bool,
    /// Ignore cached results and run every review again.
    #[arg(long)]
    pub refresh: bool,
    #[command(flatten)]
    pub reports: ReportFlags,
    /// Start no new review once the reviews this execution ran cost this much: tokens
    /// (`50000tokens`, `50k-tokens`) or review seconds (`600s`, `10m`); the rest is left
    /// unrun (exit 6) and a re-run with a larger budget continues from the cache.
    #[arg(long, value_name = "COST")]
    pub max_cost: Option<runner::exec::Budget>,
    /// Execute only shard INDEX of COUNT (0-based): the runs whose `blake3(run key) mod
    /// COUNT` is INDEX. Writes results to the cache and no report; `runner merge` assembles
    /// the reports once every shard is done.
    #[arg(long, value_name = "INDEX/COUNT", conflicts_with = "frozen")]
    pub shard: Option<runner::plan::Shard>,
    /// With `--shard` and a remote cache: once this shard's runs are started, also take the
    /// other shards' runs that no worker has started, each under a lease object in the bucket
    /// (for shards that turn out uneven). A worker that dies loses its leases after
    /// `--lease-ttl`.
    #[arg(long, requires = "shard")]
    pub steal: bool,
    /// How long a lease lasts: longer than the longest run (default: the longest reviewer
    /// timeout plus a minute).
    #[arg(long, value_name = "SECONDS", requires = "steal")]
    pub lease_ttl: Option<u64>,
    /// Set by `runner merge --shards`: name each missing run's shard.
    #[arg(skip)]
    pub shards: Option<u64>,
    #[command(flatten)]
    pub locations: LocationArgs,
}

#[derive(Debug, Args)]
pub(crate) struct MergeArgs {
    /// The experiment manifest the shards executed.
    pub manifest: PathBuf,
    /// How many shards executed it: each missing run is listed with the shard that owns it.
    #[arg(long, value_name = "COUNT")]
    pub shards: Option<u64>,
    #[command(flatten)]
    pub reports: ReportFlags,
    #[command(flatten)]
    pub locations: LocationArgs,
}

/// How an execution reports: the progress it prints and the files it writes.
#[derive(Debug, Args)]
pub(crate) struct ReportFlags {
    /// Print NDJSON events on stdout instead of progress.
    #[arg(long, conflicts_with = "quiet")]
    pub json: bool,
    /// Print only errors.
    #[arg(short, long)]
    pub quiet: bool,
    /// Progress on stderr: `bar` (a terminal's progress bar), `lines` (a line every tenth of the
    /// runs or every 30 s: done/total, failures, elapsed, estimated time left), `none`, or
    /// `auto`: the bar on a terminal, lines otherwise (a pipe, CI).
    #[arg(long, value_enum, value_name = "WHEN", default_value = "auto")]
    pub progress: ProgressArg,
    /// Write RESULTS.md, results.json and the charts (plots/) into this directory instead of the manifest's
    /// `[report] output`.
    #[arg(long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Refuse a plan of more runs than this.
    #[arg(long, value_name = "N", default_value_t = runner::plan::DEFAULT_MAX_RUNS)]
    pub max_runs: u64,
    /// Also write a compact Markdown summary (verdict lines and cells) here, for a
    /// pull-request comment or `$GITHUB_STEP_SUMMARY`.
    #[arg(long, value_name = "PATH")]
    pub summary: Option<PathBuf>,
    /// Also write report.html (as `runner report` does) beside RESULTS.md, as `[report] html
    /// = true` does.
    #[arg(long)]
    pub html: bool,
    /// Overwrite files in the report directory that runner did not write (it lists those it
    /// did in `.runner-outputs.json` there, and otherwise refuses to write over others).
    #[arg(long)]
    pub force: bool,
}

/// `--color`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum ColorArg {
    Auto,
    Always,
    Never,
}

impl ColorArg {
    /// The library's choice.
    pub(crate) fn choice(self) -> runner::config::color::ColorChoice {
        use runner::config::color::ColorChoice;
        match self {
            Self::Auto => ColorChoice::Auto,
            Self::Always => ColorChoice::Always,
            Self::Never => ColorChoice::Never,
        }
    }

    /// The last `--color` among the raw arguments, before clap has read them (so that its own
    /// help and errors are coloured as asked); `auto` when there is none.
    pub(crate) fn from_raw(args: impl IntoIterator<Item = std::ffi::OsString>) -> Self {
        let mut choice = Self::Auto;
        let mut next_is_value = false;
        for arg in args {
            let Some(arg) = arg.to_str().map(str::to_string) else { continue };
            if arg == "--" {
                break;
            }
            let value = if next_is_value { Some(arg.as_str()) } else { arg.strip_prefix("--color=") };
            next_is_value = arg == "--color";
            if let Some(v) = value {
                choice = <Self as ValueEnum>::from_str(v, true).unwrap_or(Self::Auto);
            }
        }
        choice
    }
}

/// `study export --study`: which study's sheet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum StudyArg {
    /// Blind triage.
    H1,
    /// Suggestion quality.
    H7,
    /// Severity calibration.
    H8,
    /// Human validity of the findings only one tool reported.
    H4,
}

impl From<StudyArg> for runner::study::findings::Study {
    fn from(arg: StudyArg) -> Self {
        match arg {
            StudyArg::H1 => Self::H1,
            StudyArg::H7 => Self::H7,
            StudyArg::H8 => Self::H8,
            StudyArg::H4 => Self::H4,
        }
    }
}

/// `--progress`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum ProgressArg {
    Auto,
    Bar,
    Lines,
    None,
}

impl From<ProgressArg> for crate::commands::exec::progress::ProgressKind {
    fn from(arg: ProgressArg) -> Self {
        match arg {
            ProgressArg::Auto => Self::Auto,
            ProgressArg::Bar => Self::Bar,
            ProgressArg::Lines => Self::Lines,
            ProgressArg::None => Self::None,
        }
    }
}

#[derive(Debug, Args)]
pub(crate) struct PlanArgs {
    /// The experiment manifest.
    pub manifest: PathBuf,
    /// Show only shard INDEX of COUNT's runs (as `exec --shard` would execute them).
    #[arg(long, value_name = "INDEX/COUNT")]
    pub shard: Option<runner::plan::Shard>,
    /// Print the plan as JSON.
    #[arg(long)]
    pub json: bool,
    /// List every run with its cache key, status and, for one to run, why (by default the runs
    /// are counted by why, and a history lists its first 30 commits).
    #[arg(long)]
    pub runs: bool,
    /// Refuse a plan of more runs than this.
    #[arg(long, value_name = "N", default_value_t = runner::plan::DEFAULT_MAX_RUNS)]
    pub max_runs: u64,
    #[command(flatten)]
    pub locations: LocationArgs,
}

#[derive(Debug, Args)]
pub(crate) struct DiffArgs {
    /// results.json (or its directory) of the execution before the change.
    pub a: PathBuf,
    /// results.json (or its directory) after the change; omitted, A again (compare two cells).
    pub b: Option<PathBuf>,
    /// The cell of A to compare (also B's, unless `--cell-b` is given).
    #[arg(long)]
    pub cell_a: Option<String>,
    /// The cell of B to compare (also A's, unless `--cell-a` is given).
    #[arg(long)]
    pub cell_b: Option<String>,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub json: bool,
    /// Test one metric statistically instead of applying the keep rule: paired bootstrap
    /// interval and sign-flip permutation test over subjects, on any metric a `compare`
    /// analysis recorded (recall, precision, f1, noise, findings, jaccard, `resolution` from
    /// git, RQS v2's metrics; recall over a mined oracle included) or review-eval's counts.
    #[arg(long, value_name = "METRIC")]
    pub metric: Option<String>,
    /// With `--metric`: a difference smaller than this neither fails the gate nor counts as better.
    #[arg(long, value_name = "X", default_value_t = 0.0, requires = "metric")]
    pub min_effect: f64,
    /// With `--metric`: the significance level (the interval's level is 1 − alpha).
    #[arg(long, value_name = "A", default_value_t = 0.05, requires = "metric")]
    pub alpha: f64,
    /// With `--metric`: fail unless B is significantly better (not only when it is worse).
    #[arg(long, requires = "metric")]
    pub require_better: bool,
    /// With `--metric`: bootstrap and permutation resamples.
    #[arg(long, value_name = "N", default_value_t = 10_000, requires = "metric")]
    pub resamples: usize,
    /// With `--metric`: the resampling seed.
    #[arg(long, value_name = "N", default_value_t = 0, requires = "metric")]
    pub seed: u64,
    /// With `--metric`: `bca` or `percentile` bootstrap interval.
    #[arg(long, value_name = "METHOD", default_value = "bca", requires = "metric")]
    pub interval: String,
    /// Decide with matching uncertainty (each oracle decision weighed by the probability that
    /// judges agree with it). With `--metric`, on the comparison the results' `compare`
    /// analysis recorded (every pair says whether its verdict holds under it either way);
    /// without, the keep rule counts only the regressions more likely than not.
    #[arg(long)]
    pub matching_uncertainty: bool,
    /// With `--metric`: require each pair to pass in at least K of the judges' samples, each
    /// sample's answers alone deciding the matching (where the results' compare analysis has
    /// judges asked several times deciding it: `evidence = "judge"`, `samples = N`).
    #[arg(long, value_name = "K", requires = "metric")]
    pub judge_samples_pass: Option<usize>,
    /// Also write the gate's outcome as JUnit XML here (one test case per compared pair).
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,
    /// Overwrite the output file even when it is not one this command wrote (never a link,
    /// nor one of the command's inputs).
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ShowArgs {
    /// A manifest, a results.json (or its directory: its manifest is the one it names), or one
    /// run: its cache key as results.json prints it, or its label `cell #repeat @subject` as
    /// RESULTS.md prints it (looked up in `--cache-dir`, default `./cache`).
    pub target: PathBuf,
    /// Only this cell: its id, or some of its `axis=value` pairs (`model=gemma3-270m`).
    #[arg(long)]
    pub cell: Option<String>,
    /// Only this subject (a case id, or a git target's ref).
    #[arg(long)]
    pub subject: Option<String>,
    /// Only this repeat (1-based).
    #[arg(long)]
    pub repeat: Option<u32>,
    /// Only the run whose cache key starts with this.
    #[arg(long)]
    pub key: Option<String>,
    /// Print the runs and their findings as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub locations: LocationArgs,
}

#[derive(Debug, Args)]
pub(crate) struct ReportArgs {
    /// results.json (or its directory) of the execution to show.
    pub results: PathBuf,
    /// A second execution's results.json (or directory), shown beside the first.
    #[arg(long, value_name = "OTHER")]
    pub against: Option<PathBuf>,
    /// Where to write the page (default: report.html beside the first results.json).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The first execution's manifest, when results.json's own `experiment.manifest` is not
    /// found (it is looked up at the project root of results.json, then in each directory
    /// above it, then in the current directory).
    #[arg(long)]
    pub manifest: Option<PathBuf>,
    /// Accept a page without findings or diffs (its manifest not found, or no subject's diff
    /// could be built): exit 0 rather than 1.
    #[arg(long)]
    pub partial: bool,
    /// Overwrite the output file even when it is not one this command wrote (never a link,
    /// nor one of the command's inputs).
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub locations: LocationArgs,
}

#[derive(Debug, Subcommand)]
pub(crate) enum MatchingCommand {
    /// Match each record's candidates to its golden comments by the rule an experiment uses,
    /// and, where the file has a judge's labels, print how well the matcher agrees with it.
    #[command(after_help = "Example:\n  runner matching evaluate judgements.json --json")]
    Evaluate(MatchingEvaluateArgs),
    /// Choose the rule's thresholds on labelled records by cross-validation over pull requests,
    /// fit how sure each decision is (the probability that the judges' majority calls it
    /// found), and write them, with the data and the agreement they reached, as a calibration
    /// file.
    #[command(after_help = "Example:\n  runner matching calibrate judgements/*.json --out calibration.json")]
    Calibrate(MatchingCalibrateArgs),
}

/// Where embeddings come from, for a matcher that uses them.
#[derive(Debug, Args, Clone)]
pub(crate) struct MatchingEmbedderArgs {
    /// The embedding server's base URL. Embeddings are used when this (or `RUNNER_EMBED_URL`)
    /// is set and `--lexical` is not.
    #[arg(long, env = "RUNNER_EMBED_URL")]
    pub embedder_url: Option<String>,
    /// The embedding server's protocol.
    #[arg(long, default_value = "openai", value_parser = ["openai", "ollama"])]
    pub provider: String,
    /// The embedding model, as the server names it.
    #[arg(long, default_value = "minilm-l6-v2")]
    pub embedder_model: String,
    /// Use no embeddings, even with an embedder configured.
    #[arg(long)]
    pub lexical: bool,
    /// The cache the embeddings are kept in.
    #[arg(long, default_value = "cache")]
    pub cache: PathBuf,
    /// Call no embedder: take every embedding from the cache, failing when one is missing.
    #[arg(long)]
    pub frozen: bool,
}

#[derive(Debug, Args)]
pub(crate) struct MatchingEvaluateArgs {
    /// Judgement files (`{judge, records: [{pr, tool, golden, candidates | unmatched_candidates}]}`).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Print JSON: the figures and one decision per golden comment.
    #[arg(long)]
    pub json: bool,
    /// The rule from a calibration file (`runner matching calibrate`) instead of the default.
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,
    /// The similarity measure: `tokens` (content-word Dice) or `levenshtein`.
    #[arg(long, value_parser = ["tokens", "levenshtein"])]
    pub measure: Option<String>,
    /// The similarity that counts as a find.
    #[arg(long, value_name = "T")]
    pub threshold: Option<f64>,
    /// The embedding cosine that also counts as a find.
    #[arg(long, value_name = "T")]
    pub embedding_threshold: Option<f64>,
    #[command(flatten)]
    pub embedder: MatchingEmbedderArgs,
}

#[derive(Debug, Args)]
pub(crate) struct MatchingCalibrateArgs {
    /// Labelled judgement files.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Where the calibration file goes.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// The similarity measure: `tokens` (content-word Dice) or `levenshtein`.
    #[arg(long, default_value = "tokens", value_parser = ["tokens", "levenshtein"])]
    pub measure: String,
    /// What the cross-validation holds out together: `pull-request` (5 folds) or `project`
    /// (leave one project out).
    #[arg(long, default_value = "pull-request", value_parser = ["pull-request", "project"])]
    pub folds: String,
    /// The chosen rule's agreement measured on projects the labels do not cover
    /// (`results/matching/held-out.json`'s format), recorded in the file so every rule line
    /// states it; refused when it is of another rule.
    #[arg(long, value_name = "FILE")]
    pub held_out: Option<PathBuf>,
    #[command(flatten)]
    pub embedder: MatchingEmbedderArgs,
}

#[derive(Debug, Subcommand)]
pub(crate) enum CacheCommand {
    /// List cached runs.
    #[command(after_help = "Example:\n  runner cache ls --json")]
    Ls {
        /// One JSON object per run.
        #[arg(long)]
        json: bool,
    },
    /// Verify every object's hash and every run's references.
    #[command(after_help = "Example:\n  runner cache verify --cache-dir cache")]
    Verify,
    /// Copy the local cache's entries of these manifests' experiments (runs and stage values)
    /// to the remote cache (`--remote-cache`), create-if-absent.
    #[command(after_help = "Example:\n  runner cache push experiments/quickstart.toml --remote-cache s3://bucket/prefix")]
    Push {
        /// The manifests whose experiments are copied.
        #[arg(required = true)]
        manifests: Vec<PathBuf>,
    },
    /// Copy the remote cache's entries of these manifests' experiments into the local cache,
    /// verifying every object.
    #[command(after_help = "Example:\n  runner cache pull experiments/quickstart.toml --remote-cache s3://bucket/prefix")]
    Pull {
        /// The manifests whose experiments are copied.
        #[arg(required = true)]
        manifests: Vec<PathBuf>,
    },
    /// Remove unreferenced objects and failure records; with manifests, also runs they don't plan.
    #[command(after_help = "Example:\n  runner cache gc --dry-run")]
    Gc {
        /// Keep only runs planned by these manifests.
        #[arg(long = "keep")]
        keep: Vec<PathBuf>,
        /// Say what would be removed, remove nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

#[derive(Debug, Args)]
pub(crate) struct ScoreArgs {
    /// `captured-results.json` in seed 002's format.
    pub results: PathBuf,
    /// The oracle (`oracle.json`, or a corpus directory holding one).
    #[arg(long)]
    pub oracle: PathBuf,
    /// Say which method produced the dispositions (default: what `runner adjudicate import`
    /// recorded beside the results, else "adjudicated by a person").
    #[arg(long)]
    pub method: Option<String>,
    /// Print the score as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct CrscoreArgs {
    /// CRScore's released files (gpt-4o.jsonl and the annotators' CSVs).
    #[arg(long, default_value = "tests/fixtures/crscore")]
    pub reference: PathBuf,
    /// The embedding server's protocol.
    #[arg(long, default_value = "openai", value_parser = ["openai", "ollama"])]
    pub provider: String,
    /// The embedding server's base URL.
    #[arg(long, env = "RUNNER_EMBED_URL", default_value = "http://127.0.0.1:8094/v1")]
    pub embedder_url: String,
    /// The embedding model, as the server names it.
    #[arg(long, default_value = "minilm-l6-v2")]
    pub embedder_model: String,
    /// `.models/MODELS.json`, to check the served model file and record its sha256.
    #[arg(long)]
    pub models_json: Option<PathBuf>,
    /// Use this τ instead of calibrating one.
    #[arg(long)]
    pub tau: Option<f64>,
    /// Where RESULTS.md, crscore.json and calibration.json go.
    #[arg(long, default_value = "results/crscore")]
    pub out: PathBuf,
    /// The cache the embeddings are kept in.
    #[arg(long, default_value = "cache")]
    pub cache: PathBuf,
    /// Call no embedder: fail, listing what the cache lacks.
    #[arg(long)]
    pub frozen: bool,
}

#[derive(Debug, Args)]
pub(crate) struct A2Args {
    /// stet's history file (`.review/history.jsonl`).
    pub history: PathBuf,
    /// A CSV `session,model` tagging sessions (`diff_ref@finished_at`) with a model; without
    /// it, each session's `run_config.model` is used.
    #[arg(long, value_name = "SIDE.csv")]
    pub models: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Write `A2.md` and `a2.json` into this directory instead of printing.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Overwrite the output file even when it is not one this command wrote (never a link,
    /// nor one of the command's inputs).
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ResolutionArgs {
    /// stet's history file (`.review/history.jsonl`).
    pub history: PathBuf,
    /// The repository the sessions reviewed.
    #[arg(long, value_name = "DIR")]
    pub repo: PathBuf,
    /// How many commits after the reviewed one (on the head's first-parent line) are looked at.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub window: usize,
    /// Lines either side of a flagged line whose change also counts.
    #[arg(long, value_name = "L", default_value_t = 1)]
    pub tolerance: u32,
    /// Whose first-parent line the later commits are on.
    #[arg(long, value_name = "REF", default_value = "HEAD")]
    pub head: String,
    /// A CSV `session,model` tagging sessions (`diff_ref@finished_at`) with a model; without
    /// it, each session's `run_config.model` is used.
    #[arg(long, value_name = "SIDE.csv")]
    pub models: Option<PathBuf>,
    /// Print the report as JSON (with every finding's outcome).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum OracleCommand {
    /// An oracle in runner's format from GitHub's exports of a repository's closed pull
    /// requests and their review comments: one finding per review thread, keyed by the pull
    /// request's merge commit (its head when not merged), `resolved` when a later commit of the
    /// pull request changed the commented lines in the local clone.
    #[command(after_help = "Example:\n  runner oracle import-github --pulls pulls.json --comments comments.json --repo . --out oracle.json")]
    ImportGithub(ImportGithubArgs),
    /// Proposed oracle additions from an adjudication record: each extra a person adjudicated
    /// `real` becomes a new finding of its case (file, line and description from the report, a
    /// new id), in a patch naming the oracle version it applies to and the version it makes.
    #[command(after_help = "Example:\n  runner oracle propose captured-results.adjudication.json --out oracle.patch.json")]
    Propose(OracleProposeArgs),
    /// The bugs a repository shipped, mined from the commits that fixed them (SZZ): each fix's
    /// removed and rewritten lines blamed back to the commit that wrote them. Writes an oracle
    /// keyed by inducing commit, which a `commits` target reviews as it is, and says what it
    /// found: fixes seen, mapped, unmapped, and every skip with its reason.
    #[command(
        after_help = "Example:\n  runner oracle mine --repo . --out experiments/shipped-bugs.oracle.json\n  runner oracle mine --repo . --range v2.0..main --fixes fixes.txt --json"
    )]
    Mine(MineArgs),
}

#[derive(Debug, Args)]
pub(crate) struct MineArgs {
    /// The repository (a work tree or a bare clone).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub repo: PathBuf,
    /// The commits examined: `A..B`, or a ref for its whole history.
    #[arg(long, value_name = "RANGE", default_value = "HEAD")]
    pub range: String,
    /// Fix commits from an issue tracker, one SHA per line (`#` comments), mined whatever
    /// their messages say.
    #[arg(long, value_name = "FILE")]
    pub fixes: Option<PathBuf>,
    /// The words that mark a fix in a message, comma-separated (default: fix, fixes, fixed,
    /// fixing, bug, bugs, bugfix, hotfix, regression, crash, crashes, defect, fault, broken,
    /// repair, repairs).
    #[arg(long, value_name = "WORDS", value_delimiter = ',')]
    pub fix_words: Vec<String>,
    /// A fix touching more source files than this is taken for tangled and skipped.
    #[arg(long, value_name = "N", default_value_t = runner::ground_truth::mine::DEFAULT_MAX_FILES)]
    pub max_files: usize,
    /// Mine fixes written by bots too.
    #[arg(long)]
    pub include_bots: bool,
    /// Which of several blame candidates a fix keeps: `latest`, the one committed last
    /// (R-SZZ's rule), or `all`. A message naming the change it repairs decides before blame.
    #[arg(long, value_enum, value_name = "WHICH", default_value_t = BlameCandidates::Latest)]
    pub candidates: BlameCandidates,
    /// Fixes blamed side by side.
    #[arg(long, value_name = "N", default_value_t = crate::cli::default_jobs())]
    pub jobs: usize,
    /// Where the oracle is written (nothing is written without it).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Print every fix's record (SHA, date, message, hunk, inducing commits with their lines
    /// and how each was found, dropped candidates with why) and the summary as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Overwrite `--out` even when it is not an oracle (never a link or an input).
    #[arg(long)]
    pub force: bool,
    /// Where each fix's result is kept for the next run (default: `.runner/mine` in the
    /// repository's work tree, else in the current directory).
    #[arg(long, value_name = "DIR")]
    pub memo_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct OracleProposeArgs {
    /// The adjudication record (`captured-results.adjudication.json`, as `runner adjudicate import` writes it).
    pub adjudication: PathBuf,
    /// The oracle to extend: an `oracle.json`, a corpus directory or an eval set directory
    /// (default: the corpus named by the record's key).
    #[arg(long)]
    pub oracle: Option<PathBuf>,
    /// Where the patch is written.
    #[arg(long, default_value = "oracle.patch.json")]
    pub out: PathBuf,
    /// Overwrite the output file even when it is not one this command wrote (never a link,
    /// nor one of the command's inputs).
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ImportGithubArgs {
    /// `gh api --paginate 'repos/OWNER/REPO/pulls?state=closed'` output.
    #[arg(long, value_name = "PULLS.json")]
    pub pulls: PathBuf,
    /// `gh api --paginate repos/OWNER/REPO/pulls/comments` output.
    #[arg(long, value_name = "COMMENTS.json")]
    pub comments: PathBuf,
    /// A local clone holding the pull requests' commits (`git fetch origin 'refs/pull/*/head:refs/pull/*'`).
    #[arg(long, value_name = "DIR")]
    pub repo: PathBuf,
    /// Where the oracle is written.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Keep threads started by bots (`user.type = "Bot"`).
    #[arg(long)]
    pub include_bots: bool,
    /// Overwrite the output file even when it is not one this command wrote (never a link,
    /// nor one of the command's inputs).
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum AdjudicateCommand {
    /// Write a blind sheet (sheet.csv), its key (key.json), the cases (cases.md) and
    /// instructions (README.md) for an experiment's cached findings.
    #[command(after_help = "Example:\n  runner adjudicate export experiments/quickstart.toml --out sheet")]
    Export(AdjudicateExportArgs),
    /// Read a filled sheet with its key into seed 002's captured-results format.
    #[command(after_help = "Example:\n  runner adjudicate import sheet/sheet.csv --key sheet/key.json --out captured-results.json")]
    Import(AdjudicateImportArgs),
}

#[derive(Debug, Args)]
pub(crate) struct AdjudicateExportArgs {
    /// The experiment manifest (its target must be a corpus).
    pub manifest: PathBuf,
    /// The directory to write the sheet, key, cases and instructions into.
    #[arg(long)]
    pub out: PathBuf,
    /// Seed of the row shuffle (recorded in the key).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Fill `disposition` and `oracle_id` with runner's automatic matcher (its default rule,
    /// calibrated against judges: docs/matching.md): a machine adjudication, which `import`
    /// and `score` label as such. Without it a person fills the sheet.
    #[arg(long, value_parser = ["matcher"])]
    pub fill: Option<String>,
    #[command(flatten)]
    pub locations: LocationArgs,
}

#[derive(Debug, Args)]
pub(crate) struct AdjudicateImportArgs {
    /// The filled sheet.
    pub sheet: PathBuf,
    /// The key written with the sheet.
    #[arg(long)]
    pub key: PathBuf,
    /// Where to write the captured results (an adjudication record goes beside them).
    #[arg(long, default_value = "captured-results.json")]
    pub out: PathBuf,
    /// The oracle to check against (default: the one in the key's corpus).
    #[arg(long)]
    pub oracle: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum StudyCommand {
    /// Write a blind sheet (sheet.csv), its key (key.json) and instructions (README.md): a
    /// seeded sample stratified by cell and severity of an experiment's cached findings.
    #[command(after_help = "Example:\n  runner study export experiments/quickstart.toml --study h1 --out h1")]
    Export(StudyExportArgs),
    /// Check a filled sheet against its key and write the analysis (result.md, result.json).
    #[command(after_help = "Example:\n  runner study import h1/sheet-a.csv h1/sheet-b.csv --key h1/key.json --out h1-result")]
    Import(StudyImportArgs),
    /// H6: cluster the findings filled H1 sheets label false_positive or wrong_suggestion by
    /// message similarity, and write them as candidate patterns (CSV).
    #[command(after_help = "Example:\n  runner study audit h1/sheet-a.csv --key h1/key.json --out patterns.csv")]
    Audit(StudyAuditArgs),
    /// H9: a session log and a preference survey of an A/B between models; means per model
    /// with bootstrap intervals, counterbalancing, preference counts (result.md, result.json).
    #[command(after_help = "Example:\n  runner study preference --sessions sessions.csv --survey survey.csv --out h9")]
    Preference(StudyPreferenceArgs),
}

#[derive(Debug, Args)]
pub(crate) struct StudyPreferenceArgs {
    /// The session log: user,model,date,findings,dismissals,fixes_applied,minutes.
    #[arg(long)]
    pub sessions: PathBuf,
    /// The final survey: user,preferred,reason (`preferred` a model of the log or `none`).
    #[arg(long)]
    pub survey: PathBuf,
    /// The directory to write result.md and result.json into.
    #[arg(long, default_value = "study-result")]
    pub out: PathBuf,
    /// Bootstrap resamples of each mean's interval.
    #[arg(long, default_value_t = runner::study::preference::DEFAULT_RESAMPLES)]
    pub resamples: usize,
    /// Seed of the bootstrap.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

#[derive(Debug, Args)]
pub(crate) struct StudyAuditArgs {
    /// The filled H1 sheets (one per rater).
    #[arg(required = true)]
    pub sheets: Vec<PathBuf>,
    /// The key written with the sheet.
    #[arg(long)]
    pub key: PathBuf,
    /// The CSV to write: category, message_pattern, reason, note, findings, items.
    #[arg(long, default_value = "patterns.csv")]
    pub out: PathBuf,
    /// How alike two messages must be to share a pattern (normalized Levenshtein, 0..1).
    #[arg(long, default_value_t = runner::study::audit::DEFAULT_SIMILARITY)]
    pub similarity: f64,
}

#[derive(Debug, Args)]
pub(crate) struct StudyExportArgs {
    /// The experiment manifest.
    pub manifest: PathBuf,
    /// h1 (labels actionable | false_positive | wrong_suggestion | out_of_scope), h7 (findings
    /// with a suggestion; labels correct_safe | partial | wrong | harmful) or h8 (labels
    /// correct | too_high | too_low, with a suggested severity).
    #[arg(long, value_enum)]
    pub study: StudyArg,
    /// The directory to write the sheet, key and instructions into.
    #[arg(long)]
    pub out: PathBuf,
    /// How many findings to sample (seed 000: 30–50).
    #[arg(long, default_value_t = runner::study::findings::DEFAULT_SAMPLE)]
    pub sample: usize,
    /// h4: the matrix axis whose values are the tools (default: the axis of the manifest's
    /// first `overlap` analysis, whose matching rule decides what is unique).
    #[arg(long)]
    pub axis: Option<String>,
    /// Seed of the sampling and the row shuffle (recorded in the key).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub locations: LocationArgs,
}

#[derive(Debug, Args)]
pub(crate) struct StudyImportArgs {
    /// The filled sheet; for H1 one sheet per rater (each labels every row).
    #[arg(required = true)]
    pub sheets: Vec<PathBuf>,
    /// The key written with the sheet (it names the study).
    #[arg(long)]
    pub key: PathBuf,
    /// The directory to write result.md and result.json into.
    #[arg(long, default_value = "study-result")]
    pub out: PathBuf,
}

#[derive(Debug, Subcommand)]
pub(crate) enum CorpusCommand {
    /// Check a corpus (cases.public.json + oracle.json) as seed 002's validator does, and run
    /// every case's ground-truth program on both source versions.
    #[command(after_help = "Example:\n  runner corpus validate corpus/quickstart --structure-only")]
    Validate(CorpusValidateArgs),
    /// Import a public benchmark's ground truth: its pull requests as an external target's
    /// `changes.json` and its reference comments as an oracle (`oracle.json`), each
    /// comment's place, category and context level kept; what the oracle cannot hold (the
    /// rejected comments) is listed in its `skipped`.
    #[command(after_help = "Example:\n  runner corpus import aacr corpus/aacr-bench/gold --out corpus/aacr-bench")]
    Import(CorpusImportArgs),
}

/// The benchmarks `runner corpus import` reads.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum ImportFormat {
    /// AACR-Bench (alibaba/aacr-bench): `positive_samples.json` and `negative_samples.json`.
    Aacr,
}

#[derive(Debug, Args)]
pub(crate) struct CorpusImportArgs {
    /// The benchmark whose gold is read.
    #[arg(value_enum)]
    pub format: ImportFormat,
    /// The directory holding the benchmark's gold files.
    pub gold: PathBuf,
    /// The directory `changes.json` and `oracle.json` are written to (created if needed).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Overwrite the output files even when they are not ones this command wrote (never a
    /// link, nor one of the command's inputs).
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub(crate) struct CorpusValidateArgs {
    /// The corpus directory.
    pub dir: PathBuf,
    /// Ground-truth programs run at once (default: twice the number of CPUs).
    #[arg(short, long)]
    pub jobs: Option<usize>,
    /// CPU seconds each program run may use (rounded up to whole seconds).
    #[arg(long, default_value_t = 3.0)]
    pub run_timeout: f64,
    /// CPU seconds each compile step (Rust) may use.
    #[arg(long, default_value_t = 60.0)]
    pub compile_timeout: f64,
    /// Wall-clock seconds after which a run that sleeps or waits is stopped; it is run once
    /// more, alone, before it is rejected.
    #[arg(long, default_value_t = 60.0)]
    pub wall_timeout: f64,
    /// Check the files only; run no program.
    #[arg(long)]
    pub structure_only: bool,
    /// Print the validation as JSON.
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn default_jobs() -> usize {
    std::thread::available_parallelism().map(|n| n.get() * 2).unwrap_or(4).max(4)
}

/// `oracle mine --candidates`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BlameCandidates {
    Latest,
    All,
}

impl From<BlameCandidates> for runner::ground_truth::mine::Candidates {
    fn from(c: BlameCandidates) -> Self {
        match c {
            BlameCandidates::Latest => Self::Latest,
            BlameCandidates::All => Self::All,
        }
    }
}
