//! Text rules of the review-quality metrics (CRScore, arXiv 2409.19801): splitting a review
//! into sentences, parsing a model's numbered "summary of changes" / "implications" answer
//! into claims, and cosine similarity of embedding vectors. Pure functions, no I/O.
//!
//! The rules follow the authors' public code (`src/metrics/claim_based/relevance_score.py`,
//! functions `split_claims`, `split_claims_and_impl` and `compute_scores_from_sts_sim_matrix`);
//! where runner differs, the function says so.

/// The sentences of a review, CRScore's way: every non-blank line is split on `". "` and
/// `"? "` (the delimiters are dropped, so a sentence keeps no final `.` or `?` unless it
/// ended the line); each piece is trimmed and empty pieces are dropped.
///
/// The authors' `split_claims` keeps pieces untrimmed and keeps empty ones (a line ending in
/// `". "` yields a trailing `""`, which they embed like any sentence); runner drops them, so
/// an empty piece never counts as an unmatched sentence. A review with no text has no
/// sentences.
pub fn review_sentences(review: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in review.split('\n') {
        if line.trim().is_empty() {
            continue;
        }
        let mut rest = line;
        loop {
            let cut = [". ", "? "].iter().filter_map(|d| rest.find(d)).min();
            let (piece, next) = match cut {
                Some(at) => (&rest[..at], Some(&rest[at + 2..])),
                None => (rest, None),
            };
            let piece = piece.trim();
            if !piece.is_empty() {
                out.push(piece.to_string());
            }
            match next {
                Some(n) => rest = n,
                None => break,
            }
        }
    }
    out
}

/// Which section of a claim response a header line opens.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Section {
    Summary,
    Implications,
}

/// The section a line opens, if it is a header: after removing markdown (`#`, `*`, `_`),
/// surrounding spaces and a trailing `:`, it starts with "summary of changes" or
/// "implications" (case-insensitive).
fn header(line: &str) -> Option<Section> {
    let bare = line.trim().trim_matches(|c: char| c == '#' || c == '*' || c == '_' || c.is_whitespace());
    let bare = bare.trim_end_matches(':').trim_end_matches(|c: char| c == '*' || c == '_' || c.is_whitespace());
    let lower = bare.to_lowercase();
    if lower.starts_with("summary of changes") {
        Some(Section::Summary)
    } else if lower.starts_with("implications") {
        Some(Section::Implications)
    } else {
        None
    }
}

/// A point without its leading number (`"3. "`, `"3) "`).
fn strip_number(line: &str) -> &str {
    let digits = line.len() - line.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return line;
    }
    let rest = &line[digits..];
    match rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") ")) {
        Some(point) => point.trim_start(),
        None => line,
    }
}

/// The claims of a pseudo-reference response (a model asked for a "summary of changes" and
/// "implications" section with numbered points), CRScore's way (`split_claims_and_impl`):
///
/// - header lines open a section and are not claims;
/// - every other non-blank line is one claim, trimmed, without its leading number; lines
///   before any header count as summary points;
/// - in the implications section, parsing stops at the first point that does not end with
///   `.` (the authors' rule: it drops a trailing half-sentence, and with it a hierarchical
///   implications section whose points are bold sub-headings ending in `:`);
/// - the result is the summary points followed by the implications points.
///
/// Differences from the authors' code, which recognises a header only in the exact forms
/// `Summary of changes:`, `**Summary of Changes:**`, `### Implications:`, `Implications…`
/// (by string replacement) and removes the number it expects (`"{n}. "`, anywhere in the
/// line): runner recognises any markdown form of the two headers (`### Implications`,
/// `## Summary of Changes:`) and removes a leading number only. On the 291 GPT-4o responses
/// of CRScore's human study the two agree on 268; on the other 23 the authors' parser keeps a
/// header line (`### Implications`, or `##` left by the replacement) as a claim, keeps the
/// numbers, and never enters its implications mode.
pub fn parse_claims(response: &str) -> Vec<String> {
    let mut summary = Vec::new();
    let mut implications = Vec::new();
    let mut section = Section::Summary;
    for line in response.split('\n') {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(opened) = header(line) {
            section = opened;
            continue;
        }
        let point = strip_number(line).trim();
        if point.is_empty() {
            continue;
        }
        match section {
            Section::Summary => summary.push(point.to_string()),
            Section::Implications => {
                if !point.ends_with('.') {
                    break;
                }
                implications.push(point.to_string());
            }
        }
    }
    summary.extend(implications);
    summary
}

/// Cosine similarity of two vectors, accumulated in `f64`. A zero vector has similarity 0
/// with everything (as with L2-normalised vectors, the authors' `F.normalize` maps it to
/// zero); vectors of different lengths are not comparable and also give 0 — callers that
/// embed check the dimension once, up front.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0.0f64, 0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    dot / (na.sqrt() * nb.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_split_on_period_space_and_question_space_per_line() {
        let review = "Why is this needed? It duplicates foo. Consider removing it.\n\n  Also: rename x.y. ";
        assert_eq!(review_sentences(review), vec!["Why is this needed", "It duplicates foo", "Consider removing it.", "Also: rename x.y"]);
    }

    #[test]
    fn sentences_keep_dots_without_a_space_and_drop_empty_pieces() {
        assert_eq!(review_sentences("Use a.b.c here.. . Done?"), vec!["Use a.b.c here.", "Done?"]);
        assert!(review_sentences("").is_empty());
        assert!(review_sentences(" \n \n").is_empty());
        assert_eq!(review_sentences(". ? "), Vec::<String>::new());
    }

    #[test]
    fn claims_of_the_usual_bold_headers() {
        let response = "**Summary of changes:**\n\n1. The call now passes `False`.\n\n**Implications:**\n\n1. Behaviour may change.\n   \n2. Callers relying on the old default, e.g. 2. keep working.\n";
        assert_eq!(
            parse_claims(response),
            vec!["The call now passes `False`.", "Behaviour may change.", "Callers relying on the old default, e.g. 2. keep working."]
        );
    }

    #[test]
    fn claims_of_headers_the_authors_replacements_miss() {
        let response = "### Summary of Changes\n1. Renamed `a` to `b`.\n2. Removed `forced=True`.\n### Implications\n1. Fewer mistakes.\n";
        assert_eq!(parse_claims(response), vec!["Renamed `a` to `b`.", "Removed `forced=True`.", "Fewer mistakes."]);
        let response = "## Summary of Changes:\n1. Docs updated.\n## Implications:\n1. Users are informed.";
        assert_eq!(parse_claims(response), vec!["Docs updated.", "Users are informed."]);
    }

    #[test]
    fn implications_stop_at_the_first_point_without_a_final_period() {
        let response =
            "Summary of changes:\n1. A flag was added\n\nImplications:\n1. Behaviour changes.\n2. **Improved Error Handling**:\n   - more detail.\n3. Later.";
        // Summary points need no period; the implications stop at point 2.
        assert_eq!(parse_claims(response), vec!["A flag was added", "Behaviour changes."]);
    }

    #[test]
    fn claims_keep_unnumbered_points_and_lines_before_a_header() {
        let response = "Intro line\n- a bullet point\n10) tenth point\n2.5 is a number, not a marker";
        assert_eq!(parse_claims(response), vec!["Intro line", "- a bullet point", "tenth point", "2.5 is a number, not a marker"]);
        assert!(parse_claims("").is_empty());
    }

    #[test]
    fn cosine_of_known_vectors() {
        assert!((cosine(&[1.0, 0.0], &[1.0, 0.0]) - 1.0).abs() < 1e-12);
        assert!(cosine(&[1.0, 0.0], &[0.0, 2.0]).abs() < 1e-12);
        // (1,1)·(1,0) / (√2 · 1) = 1/√2
        assert!((cosine(&[1.0, 1.0], &[3.0, 0.0]) - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-9);
        assert!((cosine(&[1.0, 2.0], &[-1.0, -2.0]) + 1.0).abs() < 1e-12);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
        assert_eq!(cosine(&[1.0], &[1.0, 0.0]), 0.0);
    }
}
