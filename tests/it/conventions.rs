//! The conventions a command-line user expects: usage errors exit 1 (2 is "model server
//! unreachable"), completions and a man page, colour only where it is wanted (`NO_COLOR`,
//! `CLICOLOR=0`, `TERM=dumb`, `--color`), an NDJSON stream that ends with a `finished`
//! event, and "wrote" said only of a file that changed.

use super::*;

/// A manifest over the three commits of [`calc_repo`], two built-in reviewers.
fn experiment(dir: &Path) -> PathBuf {
    calc_repo(dir);
    write_manifest(
        dir,
        "m.toml",
        "version = 1\n[experiment]\nname = \"conventions\"\n[target]\nrepo = \"repo\"\ncommits = [\"HEAD~1\", \"HEAD\"]\n[matrix]\nbaseline = [\"dry-run\", \"heuristic\"]\n[reviewer]\nkind = \"builtin\"\nname = \"{{baseline}}\"\n[[analysis]]\nkind = \"compare\"\naxis = \"baseline\"\nmetrics = [\"findings\"]\n[report]\noutput = \"out\"\n",
    )
}

#[test]
fn axes_keep_the_order_written_and_reordering_them_changes_no_cache_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    calc_repo(dir.path());
    let manifest = |name: &str, axes: &str| {
        write_manifest(
            dir.path(),
            name,
            &format!("version = 1\n[experiment]\nname = \"order\"\n[target]\nrepo = \"repo\"\ncommits = [\"HEAD\"]\n[matrix]\n{axes}\n[reviewer]\nkind = \"builtin\"\nname = \"{{{{baseline}}}}\"\n[report]\noutput = \"out\"\n"),
        )
    };
    let written = manifest("written.toml", "zeta = [\"1\", \"2\"]\nbaseline = [\"dry-run\", \"heuristic\"]");
    let sorted = manifest("sorted.toml", "baseline = [\"dry-run\", \"heuristic\"]\nzeta = [\"1\", \"2\"]");
    let runs = |m: &Path| -> Vec<(String, String)> {
        let out = runner(dir.path()).args(["plan", "--json"]).arg(m).output().expect("runs");
        assert!(out.status.success(), "{}", stderr_of(&out));
        let plan: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        plan["runs"]
            .as_array()
            .expect("runs")
            .iter()
            .map(|r| (r["run"].as_str().expect("run").to_string(), r["key"].as_str().expect("key").to_string()))
            .collect()
    };
    let (written, sorted) = (runs(&written), runs(&sorted));
    let labels: Vec<&str> = written.iter().map(|(run, _)| run.split(" #").next().expect("cell")).collect();
    assert_eq!(labels, ["zeta=1,baseline=dry-run", "zeta=1,baseline=heuristic", "zeta=2,baseline=dry-run", "zeta=2,baseline=heuristic"]);
    assert_eq!(sorted[0].0.split(" #").next(), Some("baseline=dry-run,zeta=1"));
    let keys = |runs: &[(String, String)]| runs.iter().map(|(_, key)| key.clone()).collect::<std::collections::BTreeSet<_>>();
    assert_eq!(keys(&written), keys(&sorted), "the same runs under the same keys");
}

#[test]
fn usage_errors_exit_1_and_help_exits_0() {
    let dir = tempfile::tempdir().expect("tempdir");
    let no_manifest = runner(dir.path()).arg("exec").output().expect("runs");
    assert_eq!(no_manifest.status.code(), Some(1), "{}", stderr_of(&no_manifest));
    assert!(stderr_of(&no_manifest).contains("<MANIFEST>"), "{}", stderr_of(&no_manifest));
    for args in [&["--no-such-flag"][..], &["exec", "m.toml", "--progress=sometimes"], &[]] {
        assert_eq!(runner(dir.path()).args(args).output().expect("runs").status.code(), Some(1), "{args:?}");
    }
    let help = runner(dir.path()).args(["exec", "--help"]).output().expect("runs");
    assert_eq!(help.status.code(), Some(0));
    assert!(stdout_of(&help).contains("Example:\n  runner exec experiments/quickstart.toml"), "{}", stdout_of(&help));
}

/// What `runner PATH… --help` lacks: the example at its end, a description under an argument;
/// then the same for each of its subcommands.
fn lacking(dir: &Path, path: &[String], out: &mut Vec<String>) {
    let help = runner(dir).args(path).arg("--help").output().expect("runs");
    assert!(help.status.success(), "{path:?}");
    let text = stdout_of(&help);
    let name = format!("runner {}", path.join(" "));
    if !path.is_empty() && !text.contains("\nExample:\n  runner ") {
        out.push(format!("{name}: no example"));
    }
    let lines: Vec<&str> = text.lines().collect();
    let mut section = "";
    let mut subcommands = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if !line.starts_with(' ') && line.ends_with(':') {
            section = line;
            continue;
        }
        // An entry is indented 2 (6 for a long flag without a short one); descriptions, 10.
        let indent = line.len() - line.trim_start().len();
        let entry = (2..10).contains(&indent).then(|| line.trim_start()).filter(|l| !l.is_empty());
        match (section, entry) {
            ("Commands:", Some(entry)) => subcommands.extend(entry.split_whitespace().next().filter(|c| *c != "help").map(str::to_string)),
            ("Arguments:" | "Options:", Some(entry)) => {
                // Beside the argument (short help) or on the lines under it (long help).
                let beside = entry.split_once("  ").is_some_and(|(_, d)| !d.trim().is_empty());
                let described = beside || lines.get(i + 1).is_some_and(|next| next.starts_with("          ") && !next.trim().is_empty());
                if !described && !entry.starts_with("-h, --help") && !entry.starts_with("-V, --version") {
                    out.push(format!("{name} {entry}: no description"));
                }
            }
            _ => {}
        }
    }
    for sub in subcommands {
        let mut deeper = path.to_vec();
        deeper.push(sub);
        lacking(dir, &deeper, out);
    }
}

#[test]
fn every_subcommand_s_help_ends_with_an_example_and_describes_every_argument() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut out = Vec::new();
    lacking(dir.path(), &[], &mut out);
    assert!(out.is_empty(), "{out:#?}");
    // The walk reached the nested subcommands: an undocumented one would have been named.
    let nested = runner(dir.path()).args(["cache", "gc", "--help"]).output().expect("runs");
    assert!(stdout_of(&nested).contains("Example:\n  runner cache gc --dry-run"), "{}", stdout_of(&nested));
}

#[test]
fn completions_for_four_shells_and_a_man_page() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (shell, mark) in
        [("bash", "complete -F _runner"), ("zsh", "#compdef runner"), ("fish", "complete -c runner"), ("powershell", "Register-ArgumentCompleter")]
    {
        let out = runner(dir.path()).args(["completions", shell]).output().expect("runs");
        assert!(out.status.success(), "{shell}: {}", stderr_of(&out));
        let script = stdout_of(&out);
        assert!(script.contains(mark) && script.contains("exec") && script.contains("init"), "{shell}: {script}");
    }
    let man = runner(dir.path()).arg("man").output().expect("runs");
    assert!(man.status.success());
    let page = stdout_of(&man);
    assert!(page.contains(".TH runner") && page.contains("runner\\-init"), "{page}");
}

#[test]
fn no_color_clicolor_0_and_dumb_terminals_turn_colour_off_in_diagnostics() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = write_manifest(dir.path(), "bad.toml", "version = 1\n[experiment]\nname = \"x\"\nbogus = 1\n");
    let validate = |env: &[(&str, &str)], extra: &[&str]| {
        let mut cmd = runner(dir.path());
        cmd.env_remove("NO_COLOR").env_remove("CLICOLOR").env_remove("CLICOLOR_FORCE").env_remove("TERM");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.args(extra).arg("validate").arg(&bad).output().expect("runs");
        assert_eq!(out.status.code(), Some(1));
        stderr_of(&out)
    };
    // Forced on (stderr is a pipe here), the diagnostics are coloured...
    assert!(validate(&[("CLICOLOR_FORCE", "1")], &[]).contains("\u{1b}["));
    assert!(validate(&[], &["--color=always"]).contains("\u{1b}["));
    // ...and each convention turns it off.
    for (env, flags) in [
        (&[("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")][..], &[][..]),
        (&[("CLICOLOR_FORCE", "1")], &["--color=never"]),
        (&[("CLICOLOR_FORCE", "1")], &["--color", "never"]),
        (&[("CLICOLOR", "0")], &[]),
        (&[("TERM", "dumb")], &[]),
    ] {
        let text = validate(env, flags);
        assert!(!text.contains('\u{1b}') && text.contains("unknown key"), "{env:?} {flags:?}: {text}");
    }
    // clap's own errors too.
    let mut cmd = runner(dir.path());
    let out = cmd.env("CLICOLOR_FORCE", "1").env("NO_COLOR", "1").arg("--no-such-flag").output().expect("runs");
    assert!(!stderr_of(&out).contains('\u{1b}') && stderr_of(&out).contains("--no-such-flag"), "{}", stderr_of(&out));
}

#[test]
fn the_stream_ends_with_finished_and_an_unchanged_report_is_not_said_to_be_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = experiment(dir.path());
    let out = runner(dir.path()).args(["exec", "--json"]).arg(&manifest).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let events = events(&out);
    let last = events.last().expect("events");
    assert_eq!((last["event"].as_str(), last["exit_code"].as_u64()), (Some("finished"), Some(0)), "{last}");
    assert_eq!((last["runs"].as_u64(), last["ran"].as_u64(), last["cached"].as_u64(), last["failed"].as_u64()), (Some(4), Some(4), Some(0), Some(0)));
    let reports: Vec<&str> = last["reports"].as_array().expect("reports").iter().filter_map(|p| p.as_str()).collect();
    assert!(reports.iter().any(|p| p.ends_with("out/RESULTS.md")) && reports.iter().any(|p| p.ends_with("out/results.json")), "{reports:?}");
    assert_eq!(last["changed"], last["reports"], "a first execution writes every report");
    // The execution log ends the same way.
    let logs = std::fs::read_dir(dir.path().join(".runner/executions")).expect("logs").flatten().map(|e| e.path()).collect::<Vec<_>>();
    let log = std::fs::read_to_string(&logs[0]).expect("log");
    assert!(log.lines().last().is_some_and(|l| l.contains("\"event\":\"finished\"")), "{log}");

    // Again, from the cache: the same reports, none changed, so none is said to be written.
    let again = runner(dir.path()).arg("exec").arg(&manifest).output().expect("runs");
    let text = stderr_of(&again);
    assert!(again.status.success(), "{text}");
    assert!(!text.contains("wrote "), "{text}");
    assert!(text.contains("the reports in ") && text.contains(" are unchanged"), "{text}");
    assert!(text.contains("conventions: 4 runs: 4 from cache, 0 ran, 0 failed, 0 skipped"), "{text}");
}
