//! Agreement statistics for juries and anchors (METRICS.md "Agreement statistics"): Cohen's
//! κ, Fleiss' κ, percent agreement, majority vote with ties, and Spearman's ρ. Pure
//! functions; each returns `None` where the statistic is undefined, as documented on it.

use serde::Serialize;
use std::collections::BTreeMap;

/// Cohen's κ between two raters, with its parts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CohenKappa {
    pub kappa: f64,
    /// Observed agreement: the share of items both raters labelled the same.
    pub p_o: f64,
    /// Chance agreement from the two raters' marginals: Σ_label p_a(label) · p_b(label).
    pub p_e: f64,
    pub items: usize,
}

/// Cohen's κ = (p_o − p_e) / (1 − p_e) for two raters labelling the same items (`a[i]` and
/// `b[i]` are the two labels of item `i`), any label type. `None` when the two slices differ
/// in length, when there are no items, or when p_e = 1 (both raters gave every item one and
/// the same label: agreement beyond chance is undefined).
pub fn cohen_kappa<L: Ord>(a: &[L], b: &[L]) -> Option<CohenKappa> {
    if a.len() != b.len() || a.is_empty() {
        return None;
    }
    let n = a.len() as f64;
    let mut marg: BTreeMap<&L, (usize, usize)> = BTreeMap::new();
    let mut same = 0usize;
    for (x, y) in a.iter().zip(b) {
        marg.entry(x).or_default().0 += 1;
        marg.entry(y).or_default().1 += 1;
        if x == y {
            same += 1;
        }
    }
    let p_o = same as f64 / n;
    let p_e: f64 = marg.values().map(|&(ca, cb)| (ca as f64 / n) * (cb as f64 / n)).sum();
    if (1.0 - p_e).abs() < 1e-12 {
        return None;
    }
    Some(CohenKappa { kappa: (p_o - p_e) / (1.0 - p_e), p_o, p_e, items: a.len() })
}

/// Fleiss' κ over items that each received the same number of ratings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleissKappa {
    pub kappa: f64,
    /// Mean per-item agreement P̄.
    pub p_bar: f64,
    /// Chance agreement P̄_e = Σ_j p_j², p_j the share of all ratings in category j.
    pub p_e: f64,
    pub items: usize,
    /// Ratings per item (n).
    pub raters: usize,
}

/// Fleiss' κ (Fleiss 1971) for `items[i]` = the n labels item `i` received (n the same for
/// every item, n ≥ 2; the raters need not be the same people across items). Per item
/// P_i = (Σ_j n_ij² − n) / (n(n − 1)); κ = (P̄ − P̄_e) / (1 − P̄_e). `None` when there are no
/// items, when n < 2, when items have different numbers of ratings, or when P̄_e = 1 (every
/// rating is the same label).
pub fn fleiss_kappa<L: Ord>(items: &[Vec<L>]) -> Option<FleissKappa> {
    let raters = items.first()?.len();
    if raters < 2 || items.iter().any(|i| i.len() != raters) {
        return None;
    }
    let n = raters as f64;
    let mut totals: BTreeMap<&L, usize> = BTreeMap::new();
    let mut p_sum = 0.0;
    for item in items {
        let mut counts: BTreeMap<&L, usize> = BTreeMap::new();
        for label in item {
            *counts.entry(label).or_default() += 1;
            *totals.entry(label).or_default() += 1;
        }
        let sq: f64 = counts.values().map(|&c| (c * c) as f64).sum();
        p_sum += (sq - n) / (n * (n - 1.0));
    }
    let all = (items.len() * raters) as f64;
    let p_bar = p_sum / items.len() as f64;
    let p_e: f64 = totals.values().map(|&c| (c as f64 / all).powi(2)).sum();
    if (1.0 - p_e).abs() < 1e-12 {
        return None;
    }
    Some(FleissKappa { kappa: (p_bar - p_e) / (1.0 - p_e), p_bar, p_e, items: items.len(), raters })
}

/// The share of items two raters labelled the same. `None` when the slices differ in length
/// or are empty.
pub fn percent_agreement<L: PartialEq>(a: &[L], b: &[L]) -> Option<f64> {
    if a.len() != b.len() || a.is_empty() {
        return None;
    }
    Some(a.iter().zip(b).filter(|(x, y)| x == y).count() as f64 / a.len() as f64)
}

/// The outcome of a vote on one item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Vote<L> {
    /// One label has strictly more votes than every other.
    Winner { label: L, votes: usize, of: usize },
    /// Two or more labels share the highest count (labels in ascending order); no winner.
    Tie { labels: Vec<L>, votes: usize, of: usize },
    /// Nobody voted.
    NoVotes,
}

/// The vote on one item: the label with strictly the most votes (a plurality: with two
/// labels and an odd number of judges, the majority) wins; a shared top count is a tie and is
/// reported as such, never broken.
pub fn majority_vote<L: Ord + Clone>(votes: &[L]) -> Vote<L> {
    let mut counts: BTreeMap<&L, usize> = BTreeMap::new();
    for v in votes {
        *counts.entry(v).or_default() += 1;
    }
    let Some(top) = counts.values().copied().max() else {
        return Vote::NoVotes;
    };
    let leaders: Vec<L> = counts.iter().filter(|(_, &c)| c == top).map(|(l, _)| (*l).clone()).collect();
    match <[L; 1]>::try_from(leaders) {
        Ok([label]) => Vote::Winner { label, votes: top, of: votes.len() },
        Err(labels) => Vote::Tie { labels, votes: top, of: votes.len() },
    }
}

/// Ranks 1..=n of `values`, ties given the average of the ranks they span (`[10, 20, 20, 30]`
/// → `[1, 2.5, 2.5, 4]`). NaN values sort last (callers reject them first).
pub fn average_ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&i, &j| values[i].total_cmp(&values[j]));
    let mut ranks = vec![0.0; values.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start;
        while end + 1 < order.len() && values[order[end + 1]] == values[order[start]] {
            end += 1;
        }
        // Positions start..=end hold ranks start+1 ..= end+1; their mean:
        let rank = (start + end) as f64 / 2.0 + 1.0;
        for &i in &order[start..=end] {
            ranks[i] = rank;
        }
        start = end + 1;
    }
    ranks
}

/// Pearson's r. `None` when the slices differ in length, n < 2, a value is not finite, or a
/// side has zero variance.
pub fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.len() != y.len() || x.len() < 2 || x.iter().chain(y).any(|v| !v.is_finite()) {
        return None;
    }
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    if sxx == 0.0 || syy == 0.0 {
        return None;
    }
    Some(sxy / (sxx.sqrt() * syy.sqrt()))
}

/// Spearman's ρ: Pearson's r of the average ranks (so ties are handled exactly as
/// `scipy.stats.spearmanr` does). `None` when the slices differ in length, n < 2, a value is
/// not finite, or a side is constant.
pub fn spearman(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.len() != y.len() || x.len() < 2 || x.iter().chain(y).any(|v| !v.is_finite()) {
        return None;
    }
    pearson(&average_ranks(x), &average_ranks(y))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn cohen_kappa_of_a_two_by_two_table() {
        // Two judges, 10 findings, labels valid (V) / invalid (I):
        //              B: V   B: I
        //   A: V         4      2     (A says V 6 times)
        //   A: I         1      3     (A says I 4 times)
        //   B says V 5 times, I 5 times.
        // p_o = (4 + 3) / 10 = 0.7
        // p_e = 0.6·0.5 + 0.4·0.5 = 0.5
        // κ = (0.7 − 0.5) / (1 − 0.5) = 0.4
        let mut a = Vec::new();
        let mut b = Vec::new();
        for (x, y, times) in [("V", "V", 4), ("V", "I", 2), ("I", "V", 1), ("I", "I", 3)] {
            for _ in 0..times {
                a.push(x);
                b.push(y);
            }
        }
        let k = cohen_kappa(&a, &b).expect("defined");
        assert!(close(k.p_o, 0.7) && close(k.p_e, 0.5) && close(k.kappa, 0.4), "{k:?}");
        assert_eq!(k.items, 10);
        assert!(close(percent_agreement(&a, &b).expect("defined"), 0.7));
    }

    #[test]
    fn cohen_kappa_with_a_label_only_one_rater_uses() {
        // A: [x, x, y, z], B: [x, y, y, y]. p_o = 2/4 = 0.5.
        // Marginals: x: A 2/4, B 1/4; y: A 1/4, B 3/4; z: A 1/4, B 0.
        // p_e = 0.5·0.25 + 0.25·0.75 + 0 = 0.3125; κ = (0.5 − 0.3125) / 0.6875 = 0.272727…
        let k = cohen_kappa(&['x', 'x', 'y', 'z'], &['x', 'y', 'y', 'y']).expect("defined");
        assert!(close(k.p_e, 0.3125));
        assert!(close(k.kappa, 0.1875 / 0.6875));
    }

    #[test]
    fn cohen_kappa_undefined_cases() {
        // Both raters always say the same single label: p_e = 1.
        assert_eq!(cohen_kappa(&[1, 1, 1], &[1, 1, 1]), None);
        assert_eq!(cohen_kappa::<u8>(&[], &[]), None);
        assert_eq!(cohen_kappa(&[1, 2], &[1]), None);
        assert_eq!(percent_agreement(&[1, 2], &[1]), None);
        assert_eq!(percent_agreement::<u8>(&[], &[]), None);
        // Perfect agreement with two labels: κ = 1; systematic disagreement: κ = −1.
        assert!(close(cohen_kappa(&[0, 1, 0, 1], &[0, 1, 0, 1]).expect("defined").kappa, 1.0));
        assert!(close(cohen_kappa(&[0, 1, 0, 1], &[1, 0, 1, 0]).expect("defined").kappa, -1.0));
    }

    #[test]
    fn fleiss_kappa_of_the_1971_worked_example() {
        // The worked example of Fleiss' κ (as in Fleiss 1971 and its textbook restatements):
        // 10 items, 14 raters each, 5 categories; rows are n_ij.
        let table: [[usize; 5]; 10] = [
            [0, 0, 0, 0, 14],
            [0, 2, 6, 4, 2],
            [0, 0, 3, 5, 6],
            [0, 3, 9, 2, 0],
            [2, 2, 8, 1, 1],
            [7, 7, 0, 0, 0],
            [3, 2, 6, 3, 0],
            [2, 5, 3, 2, 2],
            [6, 5, 2, 1, 0],
            [0, 2, 2, 3, 7],
        ];
        // Column totals 20, 28, 39, 21, 32 of 140 → p_j = .143, .200, .279, .150, .229;
        // P̄_e = Σ p_j² = (400 + 784 + 1521 + 441 + 1024) / 140² = 4170 / 19600 = 0.212755…
        // P_i = (Σ_j n_ij² − 14) / (14·13): e.g. row 1 = (196 − 14) / 182 = 1, row 2 =
        // (4 + 36 + 16 + 4 − 14) / 182 = 46/182 = 0.2527…; Σ_i (Σ_j n_ij²) = 196 + 60 + 70
        // + 94 + 74 + 98 + 58 + 46 + 66 + 66 = 828, so P̄ = (828 − 140) / 1820 = 0.378022…
        // κ = (0.378022 − 0.212755) / (1 − 0.212755) = 0.209930…
        let items: Vec<Vec<usize>> = table.iter().map(|row| row.iter().enumerate().flat_map(|(cat, &c)| std::iter::repeat_n(cat, c)).collect()).collect();
        let k = fleiss_kappa(&items).expect("defined");
        assert!(close(k.p_e, 4170.0 / 19600.0), "{k:?}");
        assert!(close(k.p_bar, 688.0 / 1820.0), "{k:?}");
        assert!(close(k.kappa, (688.0 / 1820.0 - 4170.0 / 19600.0) / (1.0 - 4170.0 / 19600.0)));
        assert!((k.kappa - 0.2099).abs() < 1e-4);
        assert_eq!((k.items, k.raters), (10, 14));
    }

    #[test]
    fn fleiss_kappa_of_three_judges_worked_by_hand() {
        // Three judges on four findings (labels true/false):
        //   item 1: T T T  → Σ n² = 9 → P = (9 − 3)/6 = 1
        //   item 2: T T F  → 4 + 1 = 5 → P = 2/6
        //   item 3: F F F  → 9 → P = 1
        //   item 4: T F F  → 1 + 4 = 5 → P = 2/6
        // P̄ = (1 + 1/3 + 1 + 1/3)/4 = 2/3; T: 6 of 12, F: 6 of 12 → P̄_e = 0.5; κ = (2/3 − 1/2)/(1/2) = 1/3.
        let items = vec![vec![true, true, true], vec![true, true, false], vec![false, false, false], vec![true, false, false]];
        let k = fleiss_kappa(&items).expect("defined");
        assert!(close(k.kappa, 1.0 / 3.0), "{k:?}");
        assert_eq!(fleiss_kappa::<bool>(&[]), None);
        assert_eq!(fleiss_kappa(&[vec![true], vec![false]]), None);
        assert_eq!(fleiss_kappa(&[vec![true, false], vec![false]]), None);
        assert_eq!(fleiss_kappa(&[vec![true, true], vec![true, true]]), None);
    }

    #[test]
    fn majority_vote_reports_winners_and_ties() {
        assert_eq!(majority_vote(&["valid", "valid", "invalid"]), Vote::Winner { label: "valid", votes: 2, of: 3 });
        assert_eq!(majority_vote(&["valid", "invalid"]), Vote::Tie { labels: vec!["invalid", "valid"], votes: 1, of: 2 });
        assert_eq!(majority_vote(&[1, 2, 3]), Vote::Tie { labels: vec![1, 2, 3], votes: 1, of: 3 });
        assert_eq!(majority_vote(&[2, 1, 2, 3]), Vote::Winner { label: 2, votes: 2, of: 4 });
        assert_eq!(majority_vote::<u8>(&[]), Vote::NoVotes);
        let json = serde_json::to_string(&majority_vote(&["a", "b"])).expect("serializes");
        assert_eq!(json, r#"{"outcome":"tie","labels":["a","b"],"votes":1,"of":2}"#);
    }

    #[test]
    fn spearman_with_ties_worked_by_hand() {
        // x = [1, 2, 2, 3, 4] → ranks [1, 2.5, 2.5, 4, 5]
        // y = [2, 1, 4, 3, 3] → ranks [2, 1, 5, 3.5, 3.5]
        // Both rank vectors have mean 3.
        // dx = [−2, −.5, −.5, 1, 2], dy = [−1, −2, 2, .5, .5]
        // Σ dx·dy = 2 + 1 − 1 + .5 + 1 = 3.5
        // Σ dx² = 4 + .25 + .25 + 1 + 4 = 9.5; Σ dy² = 1 + 4 + 4 + .25 + .25 = 9.5
        // ρ = 3.5 / √(9.5 · 9.5) = 3.5 / 9.5 = 0.368421…
        assert_eq!(average_ranks(&[1.0, 2.0, 2.0, 3.0, 4.0]), vec![1.0, 2.5, 2.5, 4.0, 5.0]);
        assert_eq!(average_ranks(&[2.0, 1.0, 4.0, 3.0, 3.0]), vec![2.0, 1.0, 5.0, 3.5, 3.5]);
        let rho = spearman(&[1.0, 2.0, 2.0, 3.0, 4.0], &[2.0, 1.0, 4.0, 3.0, 3.0]).expect("defined");
        assert!(close(rho, 3.5 / 9.5), "{rho}");
    }

    #[test]
    fn spearman_without_ties_matches_the_d_squared_formula() {
        // x ranks [1..5], y = [5, 6, 7, 8, 7.5] → ranks [1, 2, 3, 5, 4]; d = [0, 0, 0, −1, 1];
        // ρ = 1 − 6·Σd² / (n(n² − 1)) = 1 − 12/120 = 0.9.
        let rho = spearman(&[1.0, 2.0, 3.0, 4.0, 5.0], &[5.0, 6.0, 7.0, 8.0, 7.5]).expect("defined");
        assert!(close(rho, 0.9));
        assert!(close(spearman(&[1.0, 2.0, 3.0], &[30.0, 20.0, 10.0]).expect("defined"), -1.0));
    }

    #[test]
    fn spearman_undefined_cases() {
        assert_eq!(spearman(&[1.0], &[2.0]), None);
        assert_eq!(spearman(&[1.0, 2.0], &[2.0]), None);
        assert_eq!(spearman(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0]), None);
        assert_eq!(spearman(&[1.0, f64::NAN], &[1.0, 2.0]), None);
        assert_eq!(pearson(&[1.0, 2.0], &[3.0, 3.0]), None);
    }
}
