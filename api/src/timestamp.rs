//! ISO 8601 timestamps, always UTC with millisecond precision (`2026-11-21T10:00:00.123Z`).
//! Fixed width, so they also sort correctly as text in SQL.

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Formats a moment in the one timestamp shape the API uses.
pub fn format(t: OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    let (y, mo, d) = (t.year(), u8::from(t.month()), t.day());
    format!(
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond()
    )
}

/// Now, formatted.
pub fn now() -> String {
    format(OffsetDateTime::now_utc())
}

/// `secs` seconds before now, formatted (for expiry comparisons in SQL).
pub fn seconds_ago(secs: i64) -> String {
    format(OffsetDateTime::now_utc() - time::Duration::seconds(secs))
}

/// Parses any RFC 3339 timestamp (used by tests and admin output).
pub fn parse(s: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(s, &Rfc3339).ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn format_is_fixed_width_utc() {
        let t = time::macros::datetime!(2026-01-02 03:04:05.006 UTC);
        assert_eq!(super::format(t), "2026-01-02T03:04:05.006Z");
        assert!(super::parse(&super::now()).is_some());
    }
}
