//! The one source of "now" (DESIGN.md "Time"): `KB_NOW` (RFC 3339) pins it
//! so tests, fixtures and golden files are reproducible.

use jiff::Timestamp;

use crate::error::{Error, Result};

/// The current instant, or `KB_NOW` when set.
pub fn now() -> Result<Timestamp> {
    match std::env::var("KB_NOW") {
        Ok(s) if !s.trim().is_empty() => {
            parse_instant(s.trim()).ok_or_else(|| Error::usage(format!("KB_NOW is not an RFC 3339 timestamp: '{s}'")))
        }
        _ => Ok(Timestamp::now()),
    }
}

/// Formats an instant the way every record and log line carries it:
/// RFC 3339 in UTC with whole seconds, e.g. `2026-02-21T09:30:00Z`.
pub fn format(ts: Timestamp) -> String {
    let secs = ts.as_second();
    Timestamp::from_second(secs).unwrap_or(ts).strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The calendar day of an instant in UTC, `YYYY-MM-DD`.
pub fn day(ts: Timestamp) -> String {
    ts.strftime("%Y-%m-%d").to_string()
}

/// Parses the instants people and tools write into frontmatter and logs:
/// RFC 3339, a civil date-time taken as UTC, a bare date at midnight UTC,
/// or epoch seconds/milliseconds. `None`: not an instant (each caller
/// says what that means for it; the conversions below cannot fail in UTC).
pub fn parse_instant(s: &str) -> Option<Timestamp> {
    let s = s.trim();
    if let Ok(ts) = s.parse::<Timestamp>() {
        return Some(ts);
    }
    if let Ok(dt) = s.parse::<jiff::civil::DateTime>() {
        return dt.to_zoned(jiff::tz::TimeZone::UTC).ok().map(|z| z.timestamp());
    }
    if let Ok(d) = s.parse::<jiff::civil::Date>() {
        return d.to_zoned(jiff::tz::TimeZone::UTC).ok().map(|z| z.timestamp());
    }
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        let n: i64 = s.parse().ok()?;
        return if n > 100_000_000_000 { Timestamp::from_millisecond(n).ok() } else { Timestamp::from_second(n).ok() };
    }
    None
}

/// Whole days from `then` to `now` (negative when `then` is in the future).
pub fn days_between(then: Timestamp, now: Timestamp) -> f64 {
    (now.as_second() - then.as_second()) as f64 / 86_400.0
}

/// `now` minus a number of days.
pub fn days_before(now: Timestamp, days: i64) -> Timestamp {
    // Checked twice: a span past jiff's range panics when built unchecked.
    jiff::Span::new()
        .try_hours(days.saturating_mul(24))
        .ok()
        .and_then(|span| now.checked_sub(span).ok())
        .unwrap_or(Timestamp::MIN)
}

/// Parses a duration flag such as `30s`, `500ms`, `2m`, `90d`, `1h`.
pub fn parse_duration(s: &str) -> Result<std::time::Duration> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num.parse().map_err(|_| Error::usage(format!("invalid duration '{s}' (try 30s, 2m, 90d)")))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "" | "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        "d" => n * 86_400.0,
        _ => return Err(Error::usage(format!("invalid duration unit in '{s}' (use ms, s, m, h or d)"))),
    };
    // `try_from`: a value past `Duration`'s range is an error, not a panic.
    std::time::Duration::try_from_secs_f64(secs).map_err(|_| Error::usage(format!("invalid duration '{s}'")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_shapes_frontmatter_uses() {
        let want = "2026-01-02T00:00:00Z";
        for s in ["2026-01-02", "2026-01-02T00:00:00Z", "2026-01-02T00:00:00", "1767312000", "1767312000000"] {
            assert_eq!(format(parse_instant(s).unwrap()), want, "{s}");
        }
        assert!(parse_instant("yesterday").is_none());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s").unwrap().as_secs(), 30);
        assert_eq!(parse_duration("90d").unwrap().as_secs(), 90 * 86_400);
        assert_eq!(parse_duration("250ms").unwrap().as_millis(), 250);
        assert!(parse_duration("3 weeks").is_err());
    }
}
