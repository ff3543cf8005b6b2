//! The sheet checker: ten kinds of mistakes in one sheet, each reported once with its line and
//! column; and the writer's quoting.

use super::*;

fn spec() -> Spec {
    let labels = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    Spec {
        columns: vec![
            Column::new("item", Rule::Id, true),
            Column::new("message", Rule::Text, false),
            Column::new("verdict", Rule::Label { allowed: labels(&["correct", "too_high", "too_low"]), required: true }, true),
            Column::new(
                "suggested_severity",
                Rule::Suggested { allowed: labels(&["error", "warning", "info", "nitpick"]), on: "verdict".into(), none_when: "correct".into() },
                true,
            ),
            Column::new("rater", Rule::Rater, true),
        ],
        ids: (1..=9).map(|i| format!("A0{i}")).collect(),
    }
}

#[test]
fn a_sheet_with_ten_kinds_of_mistakes_gets_ten_located_messages() {
    let mut sheet: Vec<u8> = b"item,message,verdict,suggested_severity,comment\n".to_vec();
    sheet.extend_from_slice(b"A01,m,correct,,x\n"); // line 2: fine
    sheet.extend_from_slice(b"X99,m,correct,,x\n"); // 3: unknown id
    sheet.extend_from_slice(b"A02,m,correct,,x\n"); // 4: fine
    sheet.extend_from_slice(b"A02,m,correct,,x\n"); // 5: duplicate
    sheet.extend_from_slice(b"A03,m,maybe,,x\n"); // 6: label outside the set
    sheet.extend_from_slice(b"A04,m,,,x\n"); // 7: empty required label
    sheet.extend_from_slice(b"A05,m,correct\n"); // 8: too few fields
    sheet.extend_from_slice(b"A06,m,correct,error,x\n"); // 9: a suggested value where none is allowed
    sheet.extend_from_slice(b"A07,m\xff,correct,,x\n"); // 10: not UTF-8
    sheet.extend_from_slice(b"A08,\"a, quoted\nmessage\",too_high,warning,x\n"); // 11: fine
                                                                                 // A09 is missing; the header has an extra `comment` column and no `rater` column.
    let checked = check(&spec(), &sheet);
    let located: Vec<(Option<u64>, Option<&str>, Option<&str>)> = checked.problems.iter().map(|p| (p.line, p.id.as_deref(), p.column.as_deref())).collect();
    assert_eq!(
        located,
        vec![
            (Some(1), None, Some("comment")),
            (Some(1), None, Some("rater")),
            (Some(3), Some("X99"), Some("item")),
            (Some(5), Some("A02"), Some("item")),
            (Some(6), Some("A03"), Some("verdict")),
            (Some(7), Some("A04"), Some("verdict")),
            (Some(8), None, None),
            (Some(9), Some("A06"), Some("suggested_severity")),
            (Some(10), None, Some("message")),
            (None, Some("A09"), Some("item")),
        ],
        "{:#?}",
        checked.problems
    );
    let messages: Vec<String> = checked.problems.iter().map(|p| p.to_string()).collect();
    let expected = [
        "1: column `comment`: unknown column `comment`; the sheet's columns are item, message, verdict, suggested_severity, rater",
        "1: column `rater`: no `rater` column: add it and write who labelled each row",
        "3: item `X99`: column `item`: not in the key",
        "5: item `A02`: column `item`: listed twice (first on line 4)",
        "6: item `A03`: column `verdict`: `maybe` is not one of `correct`, `too_high`, `too_low`",
        "7: item `A04`: column `verdict`: empty; every row needs a label",
        "8: 3 fields where the header has 5",
        "9: item `A06`: column `suggested_severity`: `error` where none is allowed (`verdict` is `correct`)",
        "10: column `message`: not UTF-8 text; save the sheet as UTF-8 CSV",
        "item `A09`: column `item`: missing from the sheet (every exported row must come back)",
    ];
    assert_eq!(messages, expected);
    assert_eq!(checked.rows.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), ["A01", "A02", "A03", "A04", "A06", "A08"]);
    assert_eq!(checked.rows[5].get("message"), "a, quoted\nmessage");
}

#[test]
fn a_suggestion_is_required_unless_the_label_is_correct_and_the_rater_is_required() {
    let sheet = "\u{feff}item,message,verdict,suggested_severity,rater\r\n\r\nA01,m,too_low,,ann\r\nA02,m,too_high,fatal,ann\r\nA03,m,correct,,\r\n";
    let mut s = spec();
    s.ids = ["A01", "A02", "A03"].iter().map(|s| s.to_string()).collect();
    let messages: Vec<String> = check(&s, sheet.as_bytes()).problems.iter().map(|p| p.to_string()).collect();
    assert_eq!(
        messages,
        [
            "3: item `A01`: column `suggested_severity`: empty; required when `verdict` is `too_low` (one of `error`, `warning`, `info`, `nitpick`)",
            "4: item `A02`: column `suggested_severity`: `fatal` is not one of `error`, `warning`, `info`, `nitpick`",
            "5: item `A03`: column `rater`: empty; write who labelled the row",
        ]
    );
}

#[test]
fn the_writer_quotes_only_where_needed() {
    let text = write(&["a", "b"], &[vec!["x,y".into(), "say \"hi\"".into()], vec!["multi\nline".into(), String::new()]]).expect("writes");
    assert_eq!(text, "a,b\n\"x,y\",\"say \"\"hi\"\"\"\n\"multi\nline\",\n");
}
