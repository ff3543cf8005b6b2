//! Outside text made safe to print on a terminal: the one rule every message that quotes a
//! file's contents, a path or an export's field goes through before it reaches stdout or
//! stderr.

/// Whether `c` must not reach a terminal as it is: a control character (C0, DEL and C1: NUL,
/// ESC and the CSI/OSC introducers of escape sequences, line breaks that would forge a line)
/// other than a tab, or a bidirectional control (the overrides, embeddings and isolates
/// U+202A–U+202E and U+2066–U+2069, the marks U+200E, U+200F and U+061C) that would reorder
/// what follows it on screen, or a line or paragraph separator.
pub fn is_unsafe(c: char) -> bool {
    (c.is_control() && c != '\t')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}' | '\u{2028}' | '\u{2029}')
}

/// `text` with every character [`is_unsafe`] says must not reach a terminal shown as `�`
/// (U+FFFD), so an escape sequence, a NUL or a right-to-left override is visible and inert.
pub fn sanitize(text: &str) -> String {
    text.chars().map(|c| if is_unsafe(c) { '\u{fffd}' } else { c }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_nuls_line_breaks_and_bidi_controls_are_shown_as_replacement_characters() {
        assert_eq!(sanitize("bad \u{1b}[31mred\u{1b}]0;title\u{7}"), "bad \u{fffd}[31mred\u{fffd}]0;title\u{fffd}");
        assert_eq!(sanitize("a\0b\u{9b}c\u{7f}"), "a\u{fffd}b\u{fffd}c\u{fffd}");
        assert_eq!(sanitize("one\ntwo\rthree"), "one\u{fffd}two\u{fffd}three");
        assert_eq!(sanitize("abc\u{202e}fed\u{2066}x\u{2069}\u{200f}"), "abc\u{fffd}fed\u{fffd}x\u{fffd}\u{fffd}");
        // Tabs, accents, other scripts and emoji are kept.
        assert_eq!(sanitize("a\tb é 名前 ✓"), "a\tb é 名前 ✓");
    }
}
