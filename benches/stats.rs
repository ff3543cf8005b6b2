//! Benchmark of the paired statistics: a paired bootstrap (percentile and BCa) and a
//! Monte-Carlo sign-flip test over 10 000 subjects × 10 000 resamples, timed with
//! `std::time` (median of 5 rounds). Run with `cargo bench --bench stats`; target: the
//! bootstrap plus the sign-flip test under 2 s in release.

use runner::stats::{self, IntervalMethod};
use std::time::{Duration, Instant};

const SUBJECTS: usize = 10_000;
const RESAMPLES: usize = 10_000;
const ROUNDS: usize = 5;

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn time<T>(mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut times = Vec::with_capacity(ROUNDS);
    let mut last = None;
    for _ in 0..ROUNDS {
        let start = Instant::now();
        let out = f();
        times.push(start.elapsed());
        last = Some(out);
    }
    (median(times), last.expect("at least one round"))
}

fn main() {
    // Per-subject differences of rates: a deterministic spread in [-1, 1] with a small shift.
    let diffs: Vec<f64> = (0..SUBJECTS).map(|i| ((i * 7919) % 201) as f64 / 100.0 - 1.0 + 0.01).collect();
    let (percentile, p) = time(|| stats::bootstrap_mean_interval(&diffs, RESAMPLES, 1, 0.95, IntervalMethod::Percentile));
    let (bca, b) = time(|| stats::bootstrap_mean_interval(&diffs, RESAMPLES, 1, 0.95, IntervalMethod::Bca));
    let (flip, t) = time(|| stats::sign_flip_test(&diffs, RESAMPLES, 1));
    println!("{SUBJECTS} subjects × {RESAMPLES} resamples, median of {ROUNDS} rounds:");
    println!("  bootstrap, percentile: {:>8.3} s  {p:?}", percentile.as_secs_f64());
    println!("  bootstrap, BCa:        {:>8.3} s  {b:?}", bca.as_secs_f64());
    println!("  sign-flip test:        {:>8.3} s  {t:?}", flip.as_secs_f64());
    let total = bca + flip;
    println!("  BCa bootstrap + sign-flip test: {:.3} s (target under 2 s)", total.as_secs_f64());
}
