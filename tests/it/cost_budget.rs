//! `runner exec --max-cost`: a command reviewer that reports tokens (as stet does, in
//! `.review/session.json`) and counts its executions; the budget stops new reviews, the
//! summary lists what was left unrun, and a re-run with a larger budget runs only the rest.

use super::*;
use std::path::{Path, PathBuf};

/// A manifest of 8 runs of a reviewer that appends its shard to `dir/count` and reports 70
/// prompt + 30 completion tokens.
fn token_reporting_manifest(dir: &Path, repo: &Path) -> PathBuf {
    let script = dir.join("reviewer.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$SHARD\" >> '{d}/count'\nmkdir -p .review\n\
             printf '{{\"last_run_prompt_tokens\": 70, \"last_run_completion_tokens\": 30, \"shard\": %s}}' \"$SHARD\" > .review/session.json\n",
            d = dir.display()
        ),
    )
    .expect("script");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    write_manifest(
        dir,
        "budget.toml",
        &format!(
            "version = 1\n[experiment]\nname = \"budget\"\n[target]\nrepo = \"{}\"\n[matrix]\nref = [\"HEAD~1\"]\nshard = [1, 2, 3, 4, 5, 6, 7, 8]\n[reviewer]\nkind = \"command\"\nprogram = \"{}\"\nenv = {{ SHARD = \"{{{{shard}}}}\" }}\n[report]\noutput = \"out\"\n",
            repo.display(),
            script.display()
        ),
    )
}

fn executions(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("count")).map(|t| t.lines().count()).unwrap_or(0)
}

#[test]
fn a_token_budget_leaves_runs_unrun_and_a_larger_one_continues_from_the_cache() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    let manifest = token_reporting_manifest(dir.path(), &repo);

    // 100 tokens a run, one at a time, 250 tokens: runs start at 0, 100 and 200 spent.
    let out = runner(dir.path()).args(["exec", "--jobs", "1", "--max-cost", "250tokens"]).arg(&manifest).output().expect("runs");
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(6), "over budget exits 6: {stderr}");
    assert_eq!(executions(dir.path()), 3, "{stderr}");
    assert!(stderr.contains("budget: 8 runs: 0 from cache, 3 ran, 0 failed, 0 skipped"), "{stderr}");
    assert!(stderr.contains("cost: incurred 300 tokens, "), "{stderr}");
    assert!(stderr.contains("(3 runs) against --max-cost 250 tokens; saved by the cache nothing"), "{stderr}");
    assert!(stderr.contains("left unrun: 5 runs, over budget (--max-cost 250 tokens)"), "{stderr}");
    // The report is written: the unrun runs have no result, and it says why.
    let results: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.path().join("out/results.json")).expect("results.json")).expect("json");
    let rows = results["runs"].as_array().expect("runs");
    assert_eq!(rows.len(), 8);
    assert_eq!(rows.iter().filter(|r| r["status"] == "ok").count(), 3);
    assert_eq!(rows.iter().filter(|r| r["status"] == "skipped").count(), 5);
    let failures = results["failures"].as_array().expect("failures");
    assert!(failures.iter().all(|f| f["error"].as_str().is_some_and(|e| e.starts_with("over budget"))), "{failures:?}");
    let md = std::fs::read_to_string(dir.path().join("out/RESULTS.md")).expect("RESULTS.md");
    assert!(md.contains("over budget: not started"), "{md}");

    // A larger budget (k- syntax): the three are served from the cache, only the five run.
    let out = runner(dir.path()).args(["exec", "--jobs", "1", "--max-cost", "1k-tokens", "--json"]).arg(&manifest).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(executions(dir.path()), 8, "only the runs left unrun ran");
    let ev = events(&out);
    assert_eq!((count_events(&ev, "run_cached"), count_events(&ev, "run_finished")), (3, 5));
    let cost = ev.iter().find(|e| e["event"] == "cost").expect("a cost event ends the stream");
    assert_eq!(cost["budget"], serde_json::json!({"unit": "tokens", "limit": 1000}));
    assert_eq!((cost["incurred"]["tokens"].as_u64(), cost["incurred"]["runs"].as_u64()), (Some(500), Some(5)));
    assert_eq!((cost["saved"]["tokens"].as_u64(), cost["saved"]["runs"].as_u64(), cost["unrun"].as_u64()), (Some(300), Some(3), Some(0)));

    // Everything cached: nothing incurred, all 800 tokens saved; --frozen agrees.
    let out = runner(dir.path()).args(["exec", "--max-cost", "1tokens"]).arg(&manifest).output().expect("runs");
    let stderr = stderr_of(&out);
    assert!(out.status.success(), "a cached execution spends nothing: {stderr}");
    assert!(stderr.contains("cost: incurred nothing against --max-cost 1 tokens; saved by the cache 800 tokens, "), "{stderr}");
    assert_eq!(executions(dir.path()), 8);
}

#[test]
fn a_budget_in_seconds_counts_review_wall_time() {
    // The `sleep` reviewer takes at least 200 ms a run; one at a time under 0.5 s, a run
    // starts only while less than 0.5 s is spent: at most 3 of the 12 (after 0, ≥0.2, ≥0.4 s).
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    let manifest = write_manifest(
        dir.path(),
        "slow.toml",
        &format!(
            "version = 1\n[experiment]\nname = \"slow\"\n[target]\nrepo = \"{}\"\n[matrix]\nref = [\"HEAD~1\"]\nshard = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]\n[reviewer]\nkind = \"builtin\"\nname = \"sleep\"\nlatency-ms = 200\n[report]\noutput = \"out\"\n",
            repo.display()
        ),
    );
    let out = runner(dir.path()).args(["exec", "--jobs", "1", "--max-cost", "0.5s", "--json"]).arg(&manifest).output().expect("runs");
    assert_eq!(out.status.code(), Some(6), "{}", stderr_of(&out));
    let ev = events(&out);
    let ran = count_events(&ev, "run_finished");
    assert!((1..=3).contains(&ran), "{ran} runs");
    let over: Vec<&serde_json::Value> = ev.iter().filter(|e| e["event"] == "run_skipped" && e["reason"]["kind"] == "over_budget").collect();
    assert_eq!(over.len(), 12 - ran);
    assert_eq!(over[0]["reason"]["budget"], "0.5 s");
}

#[test]
fn a_malformed_budget_is_refused_saying_what_is_accepted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = runner(dir.path()).args(["exec", "--max-cost", "600", "nothing.toml"]).output().expect("runs");
    assert!(!out.status.success());
    let stderr = stderr_of(&out);
    assert!(stderr.contains("--max-cost") && stderr.contains("50k-tokens") && stderr.contains("600s"), "{stderr}");
}
