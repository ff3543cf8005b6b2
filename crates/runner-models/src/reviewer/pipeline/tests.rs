use super::*;

#[test]
fn timestamps_are_rfc3339_utc() {
    assert_eq!(utc_text(0), "1970-01-01T00:00:00.000Z");
    assert_eq!(utc_text(951_782_400_123), "2000-02-29T00:00:00.123Z");
    assert_eq!(utc_text(1_796_208_000_007), "2026-12-02T10:40:00.007Z");
}
