//! runner's paired statistics against scipy's (the reference implementation): exact
//! sign-flip p-values equal, Monte-Carlo p-values and bootstrap bounds within a tolerance
//! derived from the Monte-Carlo error of both sides. Ignored by default: it needs numpy and
//! scipy from `scripts/stats-reference/install.sh` (pinned, in `.tools/venv`); `.ci/run`
//! installs them and runs these with `--ignored`.

use crate::project_root;
use runner::stats::{self, IntervalMethod};
use serde_json::{json, Value};
use std::io::Write;
use std::process::{Command, Stdio};

const RESAMPLES: usize = 100_000;
const LEVEL: f64 = 0.95;
const SEED: u64 = 20_260_101;

struct Dataset {
    name: &'static str,
    diffs: Vec<f64>,
    /// Small enough (2ⁿ ≤ RESAMPLES) for every sign pattern to be enumerated.
    exact: bool,
}

fn datasets() -> Vec<Dataset> {
    let d = |name, diffs: Vec<f64>| Dataset { name, exact: (1usize << diffs.len()) <= RESAMPLES, diffs };
    vec![
        d("by-hand", vec![1.0, 2.0, 3.0, 4.0]),
        d("rounding-ties", vec![0.9, -0.5, 0.1, 0.4]),
        d("with-zeros", vec![0.0, 0.0, 0.5, -0.25, 0.75, 0.0, 1.0, -0.5]),
        d("twelve", vec![0.4, -0.1, 0.3, 0.25, 0.0, 0.5, -0.2, 0.15, 0.35, 0.05, -0.05, 0.3]),
        // Per-subject recall differences of 16 subjects with 2 oracle findings each.
        d("recall-16", vec![0.5, 0.0, 0.0, 1.0, -0.5, 0.0, 0.5, 0.5, 0.0, 1.0, 0.0, -1.0, 0.5, 0.0, 0.0, 0.5]),
        d("smooth-30", (0..30).map(|i| (f64::from(i) * 1.7).sin() * 0.8 + 0.1).collect()),
        // Exponential quantiles, shifted: right-skewed, where BCa and percentile part.
        d("skewed-25", (0..25).map(|i| -((f64::from(i) + 0.5) / 25.0).ln() - 0.8).collect()),
    ]
}

fn scipy(sets: &[Dataset]) -> Vec<Value> {
    let python = project_root().join(".tools/venv/bin/python");
    assert!(python.exists(), "{} is missing: run scripts/stats-reference/install.sh (numpy and scipy, pinned)", python.display());
    let request = json!({
        "resamples": RESAMPLES,
        "level": LEVEL,
        "seed": SEED,
        "datasets": sets.iter().map(|s| json!({"name": s.name, "diffs": s.diffs, "exact": s.exact})).collect::<Vec<_>>(),
    });
    let mut child = Command::new(&python)
        .arg(project_root().join("tests/helpers/scipy_reference.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the helper starts");
    child.stdin.take().expect("stdin").write_all(request.to_string().as_bytes()).expect("request written");
    let out = child.wait_with_output().expect("the helper ran");
    assert!(out.status.success(), "scipy_reference.py failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice::<Vec<Value>>(&out.stdout).expect("the helper prints a JSON array")
}

/// The population standard deviation over √n: the bootstrap distribution's spread of the mean.
fn bootstrap_sd(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let m = stats::mean(xs).expect("not empty");
    (xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n).sqrt() / n.sqrt()
}

/// How far two independent B-resample estimates of a bound may be apart: 5 standard errors
/// of their difference, in units of the bootstrap spread σ_b. One estimate's error: the
/// α-quantile's √(α(1−α)/B)/φ(z_α) (≈ 0.0084 σ_b at α = 2.5 %, B = 10⁵) and, for BCa, the
/// bias correction's: z₀'s standard error ≈ √(1/4B)/φ(0), which moves the bound by about
/// 2 σ_b per unit (≈ 0.0079 σ_b). The difference of two independent estimates: × √2.
/// Data on a grid of step h (rates of a few findings) give bootstrap means on a lattice of
/// step h/n, where the two quantiles may land on neighbouring atoms: one atom more, with the
/// smallest gap between distinct values as h's upper bound (negligible on continuous data).
fn bound_tolerance(xs: &[f64], bca: bool) -> f64 {
    let b = RESAMPLES as f64;
    let alpha = (1.0 - LEVEL) / 2.0;
    let phi = |z: f64| (-z * z / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt();
    let quantile_se = (alpha * (1.0 - alpha) / b).sqrt() / phi(stats::normal_quantile(alpha));
    let z0_se = if bca { 2.0 * (0.25 / b).sqrt() / phi(0.0) } else { 0.0 };
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    let grid = sorted.windows(2).map(|w| w[1] - w[0]).filter(|&g| g > 0.0).fold(f64::INFINITY, f64::min);
    let atom = if grid.is_finite() { grid / xs.len() as f64 } else { 0.0 };
    5.0 * std::f64::consts::SQRT_2 * (quantile_se * quantile_se + z0_se * z0_se).sqrt() * bootstrap_sd(xs) + atom
}

#[test]
#[ignore = "needs numpy and scipy from scripts/stats-reference/install.sh; .ci/run installs them and runs this with --ignored"]
fn scipy_reference_permutation_and_bootstrap_agree() {
    let sets = datasets();
    let reference = scipy(&sets);
    assert_eq!(reference.len(), sets.len());
    for (set, want) in sets.iter().zip(&reference) {
        let name = set.name;
        let num = |key: &str| want[key].as_f64().unwrap_or_else(|| panic!("{name}: {key} in {want}"));
        let test = stats::sign_flip_test(&set.diffs, RESAMPLES, SEED).expect("defined");
        if set.exact {
            let exact = num("exact_p");
            assert!(test.exact, "{name}: 2^n <= resamples is enumerated");
            assert!((test.p_value - exact).abs() <= 1e-12, "{name}: exact sign-flip p {} vs scipy {exact}", test.p_value);
        } else {
            // Two independent Monte-Carlo estimates of the same p: SE of each two-sided p is
            // 2·√(p/2·(1 − p/2)/B); 5 standard errors of the difference.
            let mc = num("mc_p");
            let half = mc / 2.0;
            let tol = 5.0 * std::f64::consts::SQRT_2 * 2.0 * (half * (1.0 - half) / RESAMPLES as f64).sqrt() + 1e-9;
            assert!(!test.exact);
            assert!((test.p_value - mc).abs() <= tol, "{name}: Monte-Carlo p {} vs scipy {mc} (tolerance {tol})", test.p_value);
        }
        for (method, key) in [(IntervalMethod::Percentile, "percentile"), (IntervalMethod::Bca, "bca")] {
            let ours = stats::bootstrap_mean_interval(&set.diffs, RESAMPLES, SEED, LEVEL, method).expect("defined");
            assert_eq!(ours.method, method, "{name}: {key} is defined here");
            let bounds = want[key].as_array().unwrap_or_else(|| panic!("{name}: {key} in {want}"));
            let (low, high) = (bounds[0].as_f64().expect("low"), bounds[1].as_f64().expect("high"));
            let tol = bound_tolerance(&set.diffs, method == IntervalMethod::Bca);
            eprintln!("{name:>14} {key:>10}: ours [{:.5}, {:.5}] scipy [{low:.5}, {high:.5}] tolerance {tol:.5}", ours.low, ours.high);
            assert!((ours.low - low).abs() <= tol && (ours.high - high).abs() <= tol, "{name}: {key} {ours:?} vs scipy [{low}, {high}] (tolerance {tol})");
        }
    }
    // On the skewed sample BCa and percentile part by more than the tolerance, so the
    // comparison above tells the two methods apart.
    let skewed = sets.iter().position(|s| s.name == "skewed-25").expect("skewed-25");
    let set = &sets[skewed];
    let p = stats::bootstrap_mean_interval(&set.diffs, RESAMPLES, SEED, LEVEL, IntervalMethod::Percentile).expect("defined");
    let b = stats::bootstrap_mean_interval(&set.diffs, RESAMPLES, SEED, LEVEL, IntervalMethod::Bca).expect("defined");
    let tol = bound_tolerance(&set.diffs, true);
    assert!((p.low - b.low).abs() > tol || (p.high - b.high).abs() > tol, "percentile {p:?} and BCa {b:?} are within {tol}");
}

/// The committed comparisons of the bundled experiments, recomputed independently: each
/// comparison's paired differences rebuilt from the per-subject values in results.json, their
/// mean, scipy's exact sign-flip p-value (equal to 1e-12) and scipy's bootstrap interval
/// (within the Monte-Carlo error of runner's 10 000 and scipy's 100 000 resamples).
/// Comparisons whose differences are all equal (a degenerate bootstrap) are skipped: under the
/// calibrated matching rule the small models' oracle metrics in model-swap are all 0, so most
/// of what is checked comes from the other bundled comparisons.
#[test]
#[ignore = "needs numpy and scipy from scripts/stats-reference/install.sh; .ci/run installs them and runs this with --ignored"]
fn scipy_reference_reproduces_the_committed_comparisons() {
    let mut checked = (0, 0);
    for name in ["model-swap", "replay-tools", "rqs", "code-review-benchmark"] {
        let text = std::fs::read_to_string(project_root().join("results").join(name).join("results.json")).expect("committed results");
        let results: Value = serde_json::from_str(&text).expect("json");
        for analysis in results["analyses"].as_array().expect("analyses").iter().filter(|a| a["kind"] == "compare") {
            let data = &analysis["data"];
            let committed_resamples = data["resamples"].as_u64().expect("resamples") as usize;
            let cell = |id: &Value, metric: &str| -> serde_json::Map<String, Value> {
                let c = data["cells"].as_array().expect("cells").iter().find(|c| &c["cell"] == id).expect("the compared cell");
                c["metrics"][metric]["subjects"].as_object().expect("per-subject values").clone()
            };
            let mut sets = Vec::new();
            let mut rows = Vec::new();
            for row in data["comparisons"].as_array().expect("comparisons") {
                let metric = row["metric"].as_str().expect("metric");
                let (a, b) = (cell(&row["a"], metric), cell(&row["b"], metric));
                let diffs: Vec<f64> = a.iter().filter_map(|(s, av)| b.get(s).map(|bv| bv.as_f64().expect("b") - av.as_f64().expect("a"))).collect();
                assert_eq!(diffs.len() as u64, row["subjects"].as_u64().expect("subjects"));
                let mean = diffs.iter().sum::<f64>() / diffs.len() as f64;
                assert!((mean - row["difference"].as_f64().expect("difference")).abs() < 1e-12, "{row}");
                // A constant sample has a degenerate bootstrap (scipy gives NaN): skip it.
                if diffs.iter().all(|d| *d == diffs[0]) {
                    continue;
                }
                let exact = (1usize << diffs.len().min(63)) <= committed_resamples;
                sets.push(Dataset { name, diffs, exact });
                rows.push(row.clone());
            }
            for ((set, row), want) in sets.iter().zip(&rows).zip(scipy(&sets)) {
                if set.exact {
                    let exact = want["exact_p"].as_f64().expect("exact p");
                    let ours = row["test"]["p_value"].as_f64().expect("p");
                    assert!((ours - exact).abs() <= 1e-12, "{row}: p {ours} vs scipy {exact}");
                    checked.0 += 1;
                }
                let interval = &row["interval"];
                let key = if interval["method"] == "bca" { "bca" } else { "percentile" };
                let bounds = want[key].as_array().expect("bounds");
                let (low, high) = (bounds[0].as_f64().expect("low"), bounds[1].as_f64().expect("high"));
                // Runner's bounds come from 10× fewer resamples: √10 times the reference's error.
                let tol = bound_tolerance(&set.diffs, key == "bca") * (1.0 + 10f64.sqrt()) / std::f64::consts::SQRT_2;
                let (ours_low, ours_high) = (interval["low"].as_f64().expect("low"), interval["high"].as_f64().expect("high"));
                assert!(
                    (ours_low - low).abs() <= tol && (ours_high - high).abs() <= tol,
                    "{row}: [{ours_low}, {ours_high}] vs scipy {key} [{low}, {high}] (tolerance {tol})"
                );
                checked.1 += 1;
            }
        }
    }
    eprintln!("bundled comparisons: {} exact p-values and {} intervals checked against scipy", checked.0, checked.1);
    assert!(checked.0 >= 4 && checked.1 >= 20, "{checked:?}");
}
