//! Lenient parsing of the dates feeds carry: RFC 3339 / ISO 8601 (with or without a zone,
//! date only), RFC 822 / 2822 (two- or four-digit years, named zones, `UTC`/`Z`, long or
//! misspelt day and month names). A date that cannot be understood is kept verbatim by the
//! caller rather than guessed.

use chrono::{DateTime, NaiveDate, NaiveDateTime, SecondsFormat, Utc};

/// The earliest year taken as a real date; anything before is treated as unparseable.
const MIN_YEAR: i32 = 1000;

/// Parses a feed date into UTC.
pub(super) fn parse_date(raw: &str) -> Option<DateTime<Utc>> {
    let text = raw.trim();
    if text.is_empty() || text.len() > 100 {
        return None;
    }
    let parsed = iso(text).or_else(|| rfc2822(text))?;
    (chrono::Datelike::year(&parsed) >= MIN_YEAR).then_some(parsed)
}

/// RFC 3339 in UTC with whole seconds, e.g. `2026-11-21T10:15:00Z`.
pub(super) fn to_rfc3339(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn iso(text: &str) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t.with_timezone(&Utc));
    }
    // A space instead of `T`, a zone without a colon, or no zone at all (taken as UTC).
    let normalized = text.replacen(' ', "T", 1);
    for format in ["%Y-%m-%dT%H:%M:%S%.f%z", "%Y-%m-%dT%H:%M%z"] {
        if let Ok(t) = DateTime::parse_from_str(&normalized, format) {
            return Some(t.with_timezone(&Utc));
        }
    }
    let naive = normalized.trim_end_matches('Z');
    for format in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(naive, format) {
            return Some(t.and_utc());
        }
    }
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
}

fn rfc2822(text: &str) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc2822(text) {
        return Some(t.with_timezone(&Utc));
    }
    let fixed = fix_rfc822(text);
    DateTime::parse_from_rfc2822(&fixed)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Repairs what real feeds get wrong: the day name (often long, misspelt or localised) is
/// dropped, long month names are shortened, `UTC`/`Z` become `+0000`, a missing zone is UTC,
/// one-digit hours are padded.
fn fix_rfc822(text: &str) -> String {
    let without_day = match text.split_once(',') {
        Some((day, rest)) if day.chars().all(char::is_alphabetic) => rest.trim(),
        _ => text,
    };
    let mut words: Vec<String> = without_day.split_whitespace().map(str::to_string).collect();
    for word in &mut words {
        if word.len() > 3 && word.chars().all(char::is_alphabetic) {
            let short: String = word.chars().take(3).collect();
            if MONTHS.iter().any(|m| m.eq_ignore_ascii_case(&short)) {
                *word = short;
            }
        }
        if word.contains(':') && word.find(':') == Some(1) {
            word.insert(0, '0');
        }
    }
    match words.last().map(String::as_str) {
        Some("UTC" | "Z" | "z") => {
            words.pop();
            words.push("+0000".into());
        }
        Some(last) if last.contains(':') => words.push("+0000".into()),
        _ => {}
    }
    words.join(" ")
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Option<String> {
        parse_date(s).map(to_rfc3339)
    }

    #[test]
    fn rfc822_forms() {
        let want = Some("2026-11-20T09:30:00Z".to_string());
        assert_eq!(p("Fri, 20 Nov 2026 09:30:00 GMT"), want);
        assert_eq!(p("Fri, 20 Nov 2026 09:30:00 +0000"), want);
        assert_eq!(p("Fri, 20 Nov 2026 10:30:00 +0100"), want);
        assert_eq!(p("Friday, 20 November 2026 09:30:00 UTC"), want);
        assert_eq!(p("20 Nov 2026 09:30:00 Z"), want);
        assert_eq!(p("Fri, 20 Nov 2026 9:30:00 GMT"), want);
        assert_eq!(p("Fri, 20 Nov 2026 09:30:00"), want);
        assert_eq!(p("Fri, 20 Nov 2026 04:30:00 EST"), want);
    }

    #[test]
    fn iso_forms() {
        let want = Some("2026-11-20T09:30:00Z".to_string());
        assert_eq!(p("2026-11-20T09:30:00Z"), want);
        assert_eq!(p("2026-11-20T10:30:00+01:00"), want);
        assert_eq!(p("2026-11-20T10:30:00+0100"), want);
        assert_eq!(p("2026-11-20 09:30:00"), want);
        assert_eq!(
            p("2026-11-20T09:30:00.250Z").as_deref(),
            Some("2026-11-20T09:30:00Z")
        );
        assert_eq!(p("2026-11-20").as_deref(), Some("2026-11-20T00:00:00Z"));
    }

    #[test]
    fn nonsense_is_not_guessed() {
        for s in [
            "",
            "yesterday",
            "soon",
            "0001-01-01T00:00:00Z",
            "32 Foo 2026",
            "2026-13-40",
        ] {
            assert_eq!(p(s), None, "{s}");
        }
    }
}
