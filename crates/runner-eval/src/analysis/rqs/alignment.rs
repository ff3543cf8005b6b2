//! CRScore's alignment scores (METRICS.md "RQS v2 details"): a review's sentences against a
//! change's pseudo-references by cosine similarity with a strict `> τ`, giving Conciseness
//! (precision-like), Comprehensiveness (recall-like) and Relevance (their harmonic mean), and
//! the calibration of τ from human reference reviews. Pure functions over embedding vectors.
//!
//! The rules are those of the authors' public code: `compute_scores_from_sts_sim_matrix` in
//! `src/metrics/claim_based/relevance_score.py` (the scores), `safe_division` there (a 0/0
//! relevance is 0) and `scripts/compute_sts_thresh_v3.py` (τ).

use crate::text::cosine;
use serde::Serialize;

/// One review aligned against one change's pseudo-references.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Alignment {
    /// Share of review sentences whose best match exceeds τ; `None` when the review has no
    /// sentences.
    pub conciseness: Option<f64>,
    /// Share of pseudo-references matched (> τ) by some sentence; `None` when there are no
    /// pseudo-references.
    pub comprehensiveness: Option<f64>,
    /// 2PR / (P + R), 0 when P + R = 0 (the authors' `safe_division`); `None` when either side
    /// is `None`.
    pub relevance: Option<f64>,
    pub sentences: usize,
    pub references: usize,
    pub matched_sentences: usize,
    pub covered_references: usize,
}

/// The harmonic mean of two shares, 0 when both are 0.
fn harmonic(p: f64, r: f64) -> f64 {
    if p + r == 0.0 {
        0.0
    } else {
        2.0 * p * r / (p + r)
    }
}

impl Alignment {
    /// The three scores the CRScore way, where an empty side scores 0.
    ///
    /// The authors' `compute_inst` never sees an empty side: it puts a blank string in place
    /// of missing review sentences or missing claims, embeds it and scores it like any other.
    /// A blank string's embedding does not reach τ against real text, so a review with no
    /// sentences scores Conciseness 0 and Comprehensiveness 0, and a change with no claims
    /// scores both 0 too (recall is normalised by `max(1, claims)`). Runner does not embed a
    /// blank: it records the side as undefined (`None`) and this maps it to 0, so such a
    /// review still counts, as 0, in every mean — as in the authors' numbers.
    pub(crate) fn crscore_scores(&self) -> (f64, f64, f64) {
        let p = self.conciseness.unwrap_or(0.0);
        let r = self.comprehensiveness.unwrap_or(0.0);
        (p, r, harmonic(p, r))
    }
}

/// Aligns `sentences` (one vector per review sentence) with `references` (one vector per
/// pseudo-reference) at threshold `tau`: a sentence is matched when its best cosine
/// similarity with any reference is `> tau` (strictly), a reference is covered when some
/// sentence's similarity with it is `> tau`. See [`Alignment`] for the empty cases.
pub(crate) fn align(sentences: &[&[f32]], references: &[&[f32]], tau: f64) -> Alignment {
    let mut covered = vec![false; references.len()];
    let mut matched_sentences = 0;
    for s in sentences {
        let mut matched = false;
        for (j, r) in references.iter().enumerate() {
            if cosine(s, r) > tau {
                matched = true;
                covered[j] = true;
            }
        }
        if matched {
            matched_sentences += 1;
        }
    }
    let covered_references = covered.iter().filter(|c| **c).count();
    let conciseness = (!sentences.is_empty()).then(|| matched_sentences as f64 / sentences.len() as f64);
    let comprehensiveness = (!references.is_empty()).then(|| covered_references as f64 / references.len() as f64);
    let relevance = match (conciseness, comprehensiveness) {
        (Some(p), Some(r)) => Some(harmonic(p, r)),
        _ => None,
    };
    Alignment { conciseness, comprehensiveness, relevance, sentences: sentences.len(), references: references.len(), matched_sentences, covered_references }
}

/// The means of the three scores over a set of reviews (one cell, one run), CRScore's way.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AlignmentMeans {
    pub conciseness: f64,
    pub comprehensiveness: f64,
    /// The mean of the per-review harmonic means (not the harmonic mean of the two means).
    pub relevance: f64,
    pub reviews: usize,
    /// Reviews with no sentences (scored 0, see [`Alignment::crscore_scores`]).
    pub reviews_without_sentences: usize,
    /// Reviews of a change with no pseudo-references (scored 0 likewise).
    pub reviews_without_references: usize,
}

/// The per-review scores averaged: Relevance is computed per review, then averaged (METRICS;
/// the authors' `inst_rel_F_scores`), and undefined scores count as 0 as in
/// [`Alignment::crscore_scores`]. `None` for no reviews.
pub fn means(alignments: &[Alignment]) -> Option<AlignmentMeans> {
    if alignments.is_empty() {
        return None;
    }
    let n = alignments.len() as f64;
    let (mut p, mut r, mut f) = (0.0, 0.0, 0.0);
    for a in alignments {
        let (ap, ar, af) = a.crscore_scores();
        p += ap;
        r += ar;
        f += af;
    }
    Some(AlignmentMeans {
        conciseness: p / n,
        comprehensiveness: r / n,
        relevance: f / n,
        reviews: alignments.len(),
        reviews_without_sentences: alignments.iter().filter(|a| a.sentences == 0).count(),
        reviews_without_references: alignments.iter().filter(|a| a.references == 0).count(),
    })
}

/// The mean per-review Relevance (see [`means`]); `None` for no reviews.
pub fn relevance_mean(alignments: &[Alignment]) -> Option<f64> {
    means(alignments).map(|m| m.relevance)
}

/// A calibrated τ and what it was computed from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Calibration {
    /// The mean rounded to 4 decimals, as the authors report and use it (0.7314).
    pub tau: f64,
    /// The unrounded mean best-match similarity.
    pub mean: f64,
    /// Items (reference review + pseudo-references) used.
    pub items: usize,
    /// Review sentences whose best match entered the mean.
    pub sentences: usize,
    /// Items left out because the review had no sentences or the change no
    /// pseudo-references.
    pub skipped_items: usize,
}

/// One calibration item: a reference review's sentence vectors and its change's
/// pseudo-reference vectors.
pub type CalibrationItem<'a> = (Vec<&'a [f32]>, Vec<&'a [f32]>);

/// τ the CRScore way (`scripts/compute_sts_thresh_v3.py`): for each item, a human reference
/// review's sentences against its own change's pseudo-references; every sentence's best
/// cosine similarity with any pseudo-reference is collected, pooled over all items, and τ is
/// their mean (so an item weighs by its number of sentences), rounded to 4 decimals.
///
/// The authors' script scores blank placeholders for an empty side (see
/// [`Alignment::crscore_scores`]); runner leaves such items out and counts them. `None` when
/// no item has both sentences and pseudo-references.
pub fn calibrate_tau(items: &[CalibrationItem<'_>]) -> Option<Calibration> {
    let (mut sum, mut sentences, mut used, mut skipped) = (0.0f64, 0usize, 0usize, 0usize);
    for (review, references) in items {
        if review.is_empty() || references.is_empty() {
            skipped += 1;
            continue;
        }
        used += 1;
        for s in review {
            let best = references.iter().map(|r| cosine(s, r)).fold(f64::NEG_INFINITY, f64::max);
            sum += best;
            sentences += 1;
        }
    }
    if sentences == 0 {
        return None;
    }
    let mean = sum / sentences as f64;
    Some(Calibration { tau: (mean * 10_000.0).round() / 10_000.0, mean, items: used, sentences, skipped_items: skipped })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Unit vector at `deg` degrees in the plane: cos(a, b) = cos(angle between them).
    fn at(deg: f64) -> Vec<f32> {
        let r = deg.to_radians();
        vec![r.cos() as f32, r.sin() as f32]
    }

    fn refs(v: &[Vec<f32>]) -> Vec<&[f32]> {
        v.iter().map(Vec::as_slice).collect()
    }

    #[test]
    fn scores_of_a_small_alignment_worked_by_hand() {
        // Sentences at 0°, 5°, 90°; references at 2°, 60°, 180°. τ = 0.9 (≈ 25.8°).
        // 0° matches 2° (cos 2° ≈ .999); 5° matches 2°; 90° is 30° from 60° (cos .866 < .9).
        // Matched sentences 2/3; covered references {2°} = 1/3; F = 2·(2/3)(1/3)/(1) = 4/9.
        let s = [at(0.0), at(5.0), at(90.0)];
        let r = [at(2.0), at(60.0), at(180.0)];
        let a = align(&refs(&s), &refs(&r), 0.9);
        assert_eq!((a.sentences, a.references, a.matched_sentences, a.covered_references), (3, 3, 2, 1));
        assert!((a.conciseness.expect("defined") - 2.0 / 3.0).abs() < 1e-12);
        assert!((a.comprehensiveness.expect("defined") - 1.0 / 3.0).abs() < 1e-12);
        assert!((a.relevance.expect("defined") - 4.0 / 9.0).abs() < 1e-12);
    }

    #[test]
    fn threshold_is_strict() {
        let s = [vec![1.0f32, 0.0]];
        let r = [vec![1.0f32, 0.0]];
        // cos = 1 exactly: not > 1.
        let a = align(&refs(&s), &refs(&r), 1.0);
        assert_eq!((a.matched_sentences, a.covered_references), (0, 0));
        assert_eq!(a.relevance, Some(0.0));
        let a = align(&refs(&s), &refs(&r), 0.999);
        assert_eq!(a.relevance, Some(1.0));
    }

    #[test]
    fn empty_sides_are_undefined_and_score_zero_the_crscore_way() {
        let s = [at(0.0)];
        let r = [at(0.0)];
        let no_sentences = align(&[], &refs(&r), 0.5);
        assert_eq!((no_sentences.conciseness, no_sentences.comprehensiveness, no_sentences.relevance), (None, Some(0.0), None));
        assert_eq!(no_sentences.crscore_scores(), (0.0, 0.0, 0.0));
        let no_refs = align(&refs(&s), &[], 0.5);
        assert_eq!((no_refs.conciseness, no_refs.comprehensiveness, no_refs.relevance), (Some(0.0), None, None));
        assert_eq!(no_refs.crscore_scores(), (0.0, 0.0, 0.0));
        let neither = align(&[], &[], 0.5);
        assert_eq!((neither.conciseness, neither.comprehensiveness), (None, None));
    }

    #[test]
    fn relevance_is_averaged_per_review() {
        // References at 0°, 90°, 180°; τ = 0.9.
        // Review 1: a sentence at 1° → P = 1, R = 1/3, F = 0.5.
        // Review 2: a sentence at 45° (cos .707 to its nearest) → P = 0, R = 0, F = 0.
        // Review 3: no sentences → 0, 0, 0.
        // Review 4 (its own reference at 1°): a sentence at 0° → P = 1, R = 1, F = 1.
        // Means: P = 2/4, R = (1/3 + 1)/4 = 1/3, F = (0.5 + 1)/4 = 0.375 — not the harmonic
        // mean of the means, 2·(1/2)(1/3)/(5/6) = 0.4.
        let r3 = [at(0.0), at(90.0), at(180.0)];
        let one = align(&refs(&[at(1.0)]), &refs(&r3), 0.9);
        let zero = align(&refs(&[at(45.0)]), &refs(&r3), 0.9);
        let empty = align(&[], &refs(&r3), 0.9);
        let full = align(&refs(&[at(0.0)]), &refs(&[at(1.0)]), 0.9);
        let all = [one, zero, empty, full];
        let m = means(&all).expect("defined");
        assert!((m.conciseness - 0.5).abs() < 1e-12);
        assert!((m.comprehensiveness - 1.0 / 3.0).abs() < 1e-12);
        assert!((m.relevance - 0.375).abs() < 1e-12);
        assert_eq!((m.reviews, m.reviews_without_sentences, m.reviews_without_references), (4, 1, 0));
        assert_eq!(relevance_mean(&all), Some(0.375));
        assert_eq!(relevance_mean(&[]), None);
    }

    #[test]
    fn tau_is_the_pooled_mean_best_match_of_reference_reviews() {
        // Item 1: sentences at 0° and 60° vs references at 0° and 90°:
        //   best matches cos 0° = 1 and max(cos 60°, cos 30°) = .8660.
        // Item 2: sentence at 45° vs reference at 0°: cos 45° = .7071.
        // Item 3: no references → skipped.
        // Pooled mean over 3 sentences: (1 + .866025 + .707107) / 3 = .857711 → τ = .8577.
        let (a, b, c, d, e) = (at(0.0), at(60.0), at(90.0), at(45.0), at(10.0));
        let items =
            vec![(vec![a.as_slice(), b.as_slice()], vec![a.as_slice(), c.as_slice()]), (vec![d.as_slice()], vec![a.as_slice()]), (vec![e.as_slice()], vec![])];
        let cal = calibrate_tau(&items).expect("defined");
        let expect = (1.0 + 3f64.sqrt() / 2.0 + std::f64::consts::FRAC_1_SQRT_2) / 3.0;
        assert!((cal.mean - expect).abs() < 1e-6, "{cal:?}");
        assert_eq!(cal.tau, 0.8577);
        assert_eq!((cal.items, cal.sentences, cal.skipped_items), (2, 3, 1));
        assert_eq!(calibrate_tau(&[(vec![], vec![a.as_slice()])]), None);
    }
}
