//! Payload strings of a `format` Cedar has an extension type for, spelled as that type's
//! constructor accepts them — exactly, or not at all.
//!
//! - `date-time` (RFC 3339) → the argument of `datetime(…)`: `YYYY-MM-DD'T'hh:mm:ss[.SSS]`
//!   then `Z` or `(+|-)hhmm`. A `+hh:mm` offset becomes `+hhmm`, a lower-case `t`/`z` upper
//!   case, a fraction of one to three digits milliseconds. Cedar holds milliseconds: a
//!   fraction with a non-zero digit beyond the third, and a leap second (`:60`), cannot be
//!   held and are refused.
//! - `duration` (ISO 8601, as in RFC 3339's appendix A) → the argument of `duration(…)`:
//!   `PT1H30M` → `1h30m`, `P1D` → `1d`, `P2W` → `14d`, `PT0.5S` → `500ms`. Cedar's day is 24
//!   hours; years and months have no fixed length and are refused (unless zero), and so is a
//!   part of a millisecond and anything beyond the 64-bit millisecond range.
//! - `ipv4` / `ipv6` → the argument of `ip(…)`: one address (never a range). An IPv4-mapped
//!   IPv6 address (`::ffff:10.0.0.1`) is its IPv4 address, as in `context.url.ip`, so a policy's
//!   IPv4 ranges cover it; other IPv6 addresses are written as eight hexadecimal groups.
//!
//! The authorizer builds `context.input` with these; a refusal denies the call with its reason,
//! as a number Cedar's `decimal` cannot hold does.

use std::net::IpAddr;

/// A payload string Cedar's extension type cannot hold exactly.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    /// Not an RFC 3339 date-time.
    #[error("`{0}` is not an RFC 3339 date-time ({1})")]
    NotDateTime(String, &'static str),
    /// Fractional seconds beyond milliseconds.
    #[error(
        "`{0}` has fractional seconds beyond milliseconds, which Cedar's `datetime` cannot hold"
    )]
    SubMillisecond(String),
    /// A leap second.
    #[error("`{0}` is a leap second (`:60`), which Cedar's `datetime` cannot hold")]
    LeapSecond(String),
    /// Not an ISO 8601 duration.
    #[error("`{0}` is not an ISO 8601 duration ({1})")]
    NotDuration(String, &'static str),
    /// Years or months: no fixed length.
    #[error("`{0}` counts years or months, which have no fixed length, so Cedar's `duration` cannot hold it")]
    NominalDuration(String),
    /// A part of a millisecond, or beyond the 64-bit millisecond range.
    #[error("`{0}` is not a whole number of milliseconds within Cedar's `duration` range")]
    DurationRange(String),
    /// Not one IP address.
    #[error("`{0}` is not an IP address Cedar's `ipaddr` holds ({1})")]
    NotIpAddr(String, &'static str),
}

/// An RFC 3339 date-time as the argument of Cedar's `datetime(…)`.
///
/// # Errors
/// [`FormatError::NotDateTime`] for text that is not RFC 3339 (or names a day, hour or offset
/// that does not exist), [`FormatError::SubMillisecond`] and [`FormatError::LeapSecond`] for
/// instants Cedar cannot hold.
pub fn cedar_datetime(text: &str) -> Result<String, FormatError> {
    let bad = |why| FormatError::NotDateTime(text.to_string(), why);
    let b = text.as_bytes();
    if b.len() < 20 {
        return Err(bad("too short"));
    }
    let digits = |at: usize, n: usize| -> Option<u32> {
        let s = text.get(at..at + n)?;
        if s.bytes().all(|c| c.is_ascii_digit()) {
            s.parse().ok()
        } else {
            None
        }
    };
    let sep = |at: usize, c: u8| b.get(at) == Some(&c);
    let (Some(year), Some(month), Some(day)) = (digits(0, 4), digits(5, 2), digits(8, 2)) else {
        return Err(bad("the date is not YYYY-MM-DD"));
    };
    if !sep(4, b'-') || !sep(7, b'-') {
        return Err(bad("the date is not YYYY-MM-DD"));
    }
    if !matches!(b[10], b'T' | b't') {
        return Err(bad("no `T` between date and time"));
    }
    let (Some(hour), Some(minute), Some(second)) = (digits(11, 2), digits(14, 2), digits(17, 2))
    else {
        return Err(bad("the time is not hh:mm:ss"));
    };
    if !sep(13, b':') || !sep(16, b':') {
        return Err(bad("the time is not hh:mm:ss"));
    }
    if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return Err(bad("no such day"));
    }
    if hour > 23 || minute > 59 || second > 60 {
        return Err(bad("no such time of day"));
    }
    let mut rest = &text[19..];
    let mut millis = None;
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return Err(bad("an empty fraction of a second"));
        }
        let (digits, tail) = frac.split_at(n);
        if digits.bytes().skip(3).any(|d| d != b'0') {
            return Err(FormatError::SubMillisecond(text.to_string()));
        }
        millis = Some(format!("{:0<3}", &digits[..n.min(3)]));
        rest = tail;
    }
    let offset = match rest {
        "Z" | "z" => "Z".to_string(),
        _ => {
            let ob = rest.as_bytes();
            let sign_ok = matches!(ob.first(), Some(b'+' | b'-'));
            let well_formed = ob.len() == 6
                && sign_ok
                && ob[3] == b':'
                && [1, 2, 4, 5].iter().all(|&i| ob[i].is_ascii_digit());
            if !well_formed {
                return Err(bad("the offset is not `Z` or ±hh:mm"));
            }
            if rest[1..3] > *"23" || rest[4..6] > *"59" {
                return Err(bad("no such offset"));
            }
            format!("{}{}{}", &rest[..1], &rest[1..3], &rest[4..6])
        }
    };
    if second == 60 {
        return Err(FormatError::LeapSecond(text.to_string()));
    }
    Ok(format!(
        "{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}{}{offset}",
        millis.map(|m| format!(".{m}")).unwrap_or_default()
    ))
}

/// Days in `month` of `year` (proleptic Gregorian).
fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        _ => 31,
    }
}

const MS_PER_SECOND: i128 = 1_000;
const MS_PER_MINUTE: i128 = 60 * MS_PER_SECOND;
const MS_PER_HOUR: i128 = 60 * MS_PER_MINUTE;
const MS_PER_DAY: i128 = 24 * MS_PER_HOUR;

/// An ISO 8601 duration as the argument of Cedar's `duration(…)`.
///
/// `P[nY][nM][nW][nD][T[nH][nM][nS]]`, at least one part, the last part may have a fraction
/// (`.` or `,`); a leading `-` negates. The value is written in Cedar's units from days down
/// (`1d12h`, `90s` → `1m30s`, zero → `0ms`).
///
/// # Errors
/// [`FormatError::NotDuration`] for text that is not such a duration,
/// [`FormatError::NominalDuration`] for non-zero years or months and
/// [`FormatError::DurationRange`] for a part of a millisecond or a value beyond `i64`
/// milliseconds.
pub fn cedar_duration(text: &str) -> Result<String, FormatError> {
    let bad = |why| FormatError::NotDuration(text.to_string(), why);
    let (negative, body) = match text.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, text),
    };
    let body = body
        .strip_prefix('P')
        .ok_or_else(|| bad("it does not start with `P`"))?;
    let (date, time) = match body.split_once('T') {
        Some((_, "")) => return Err(bad("`T` with no time part after it")),
        Some((d, t)) => (d, Some(t)),
        None => (body, None),
    };
    let date_parts =
        parts(date, &['Y', 'M', 'W', 'D']).ok_or_else(|| bad("malformed date part"))?;
    let time_parts = match time {
        Some(t) => parts(t, &['H', 'M', 'S']).ok_or_else(|| bad("malformed time part"))?,
        None => Vec::new(),
    };
    if date_parts.is_empty() && time_parts.is_empty() {
        return Err(bad("no part"));
    }
    let all = date_parts.len() + time_parts.len();
    let mut total: i128 = 0;
    for (i, (part, in_time)) in date_parts
        .iter()
        .map(|p| (p, false))
        .chain(time_parts.iter().map(|p| (p, true)))
        .enumerate()
    {
        if !part.fraction.is_empty() && i + 1 != all {
            return Err(bad("only the last part may have a fraction"));
        }
        let unit = match (part.designator, in_time) {
            ('Y' | 'M', false) => {
                if part.is_zero() {
                    continue;
                }
                return Err(FormatError::NominalDuration(text.to_string()));
            }
            ('W', false) => 7 * MS_PER_DAY,
            ('D', false) => MS_PER_DAY,
            ('H', true) => MS_PER_HOUR,
            ('M', true) => MS_PER_MINUTE,
            _ => MS_PER_SECOND,
        };
        let ms = part
            .scaled(unit)
            .ok_or_else(|| FormatError::DurationRange(text.to_string()))?;
        total = total
            .checked_add(ms)
            .ok_or_else(|| FormatError::DurationRange(text.to_string()))?;
    }
    let signed = if negative { -total } else { total };
    if i64::try_from(signed).is_err() {
        return Err(FormatError::DurationRange(text.to_string()));
    }
    Ok(cedar_duration_text(signed))
}

/// A number of milliseconds in Cedar's duration syntax, largest unit first.
fn cedar_duration_text(ms: i128) -> String {
    if ms == 0 {
        return "0ms".to_string();
    }
    let mut out = String::from(if ms < 0 { "-" } else { "" });
    let mut rest = ms.abs();
    for (unit, name) in [
        (MS_PER_DAY, "d"),
        (MS_PER_HOUR, "h"),
        (MS_PER_MINUTE, "m"),
        (MS_PER_SECOND, "s"),
        (1, "ms"),
    ] {
        let n = rest / unit;
        rest %= unit;
        if n > 0 {
            out.push_str(&format!("{n}{name}"));
        }
    }
    out
}

/// One `<digits>[.<digits>]<designator>` part of a duration.
struct Part<'a> {
    whole: &'a str,
    fraction: &'a str,
    designator: char,
}

impl Part<'_> {
    fn is_zero(&self) -> bool {
        self.whole
            .bytes()
            .chain(self.fraction.bytes())
            .all(|b| b == b'0')
    }

    /// `value × unit` when it is a whole number (of milliseconds).
    fn scaled(&self, unit: i128) -> Option<i128> {
        let whole: i128 = self.whole.parse().ok()?;
        let mut total = whole.checked_mul(unit)?;
        let frac = self.fraction.trim_end_matches('0');
        if !frac.is_empty() {
            let len = u32::try_from(frac.len()).ok()?;
            let denominator = 10i128.checked_pow(len)?;
            let numerator: i128 = frac.parse().ok()?;
            let scaled = numerator.checked_mul(unit)?;
            if scaled % denominator != 0 {
                return None;
            }
            total = total.checked_add(scaled / denominator)?;
        }
        Some(total)
    }
}

/// The parts of one section (date or time), designators in the order given, each at most once.
fn parts<'a>(mut text: &'a str, order: &[char]) -> Option<Vec<Part<'a>>> {
    let mut out = Vec::new();
    let mut next = 0;
    while !text.is_empty() {
        let n = text.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 || n > 30 {
            return None;
        }
        let (whole, after) = text.split_at(n);
        let (fraction, after) = match after.strip_prefix(['.', ',']) {
            Some(f) => {
                let m = f.bytes().take_while(u8::is_ascii_digit).count();
                if m == 0 || m > 30 {
                    return None;
                }
                f.split_at(m)
            }
            None => ("", after),
        };
        let designator = after.chars().next()?;
        let at = order[next..].iter().position(|&d| d == designator)? + next;
        next = at + 1;
        out.push(Part {
            whole,
            fraction,
            designator,
        });
        text = &after[designator.len_utf8()..];
    }
    Some(out)
}

/// One IP address as the argument of Cedar's `ip(…)`: IPv4 (and IPv4-mapped IPv6) dotted,
/// other IPv6 as eight groups.
///
/// # Errors
/// [`FormatError::NotIpAddr`] for a range (`/n`), a zone (`%eth0`) or text that is not an
/// address.
pub fn cedar_ipaddr(text: &str) -> Result<String, FormatError> {
    if text.contains('/') {
        return Err(FormatError::NotIpAddr(
            text.to_string(),
            "a range, not one address",
        ));
    }
    match text.parse::<IpAddr>() {
        Ok(IpAddr::V4(a)) => Ok(a.to_string()),
        Ok(IpAddr::V6(a)) => Ok(match a.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => a
                .segments()
                .iter()
                .map(|s| format!("{s:x}"))
                .collect::<Vec<_>>()
                .join(":"),
        }),
        Err(_) => Err(FormatError::NotIpAddr(text.to_string(), "not an address")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_times_in_cedar_spelling() {
        let ok = |s: &str| cedar_datetime(s).expect(s);
        assert_eq!(ok("2024-01-01T00:00:00Z"), "2024-01-01T00:00:00Z");
        assert_eq!(ok("2024-01-01t10:20:30z"), "2024-01-01T10:20:30Z");
        assert_eq!(ok("2024-01-01T00:00:00+05:30"), "2024-01-01T00:00:00+0530");
        assert_eq!(ok("2024-01-01T00:00:00-00:00"), "2024-01-01T00:00:00-0000");
        assert_eq!(ok("2024-01-01T00:00:00.5Z"), "2024-01-01T00:00:00.500Z");
        assert_eq!(ok("2024-01-01T00:00:00.123Z"), "2024-01-01T00:00:00.123Z");
        assert_eq!(
            ok("2024-01-01T00:00:00.123000Z"),
            "2024-01-01T00:00:00.123Z"
        );
        assert_eq!(
            ok("2024-02-29T23:59:59.999-12:00"),
            "2024-02-29T23:59:59.999-1200"
        );
    }

    #[test]
    fn date_times_cedar_cannot_hold_are_refused() {
        let err = |s: &str| cedar_datetime(s).expect_err(s);
        assert!(matches!(
            err("2024-01-01T00:00:00.123456Z"),
            FormatError::SubMillisecond(_)
        ));
        assert!(matches!(
            err("2024-01-01T00:00:00.0001Z"),
            FormatError::SubMillisecond(_)
        ));
        assert!(matches!(
            err("2016-12-31T23:59:60Z"),
            FormatError::LeapSecond(_)
        ));
        for s in [
            "2024-01-01",
            "2024-01-01 00:00:00Z",
            "2024-13-01T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2024-01-01T24:00:00Z",
            "2024-01-01T00:00:00",
            "2024-01-01T00:00:00+0530",
            "2024-01-01T00:00:00+24:00",
            "2024-01-01T00:00:00.Z",
            "２０２４-01-01T00:00:00Z",
        ] {
            assert!(matches!(err(s), FormatError::NotDateTime(..)), "{s}");
        }
    }

    #[test]
    fn durations_in_cedar_spelling() {
        let ok = |s: &str| cedar_duration(s).expect(s);
        assert_eq!(ok("PT1H30M"), "1h30m");
        assert_eq!(ok("P1D"), "1d");
        assert_eq!(ok("P2W"), "14d");
        assert_eq!(ok("PT90S"), "1m30s");
        assert_eq!(ok("PT0.5S"), "500ms");
        assert_eq!(ok("PT1,25S"), "1s250ms");
        assert_eq!(ok("P1DT12H"), "1d12h");
        assert_eq!(ok("PT0S"), "0ms");
        assert_eq!(ok("P0Y0M3D"), "3d");
        assert_eq!(ok("PT1.5H"), "1h30m");
        assert_eq!(ok("-PT1M"), "-1m");
    }

    #[test]
    fn durations_cedar_cannot_hold_are_refused() {
        let err = |s: &str| cedar_duration(s).expect_err(s);
        assert!(matches!(err("P1Y"), FormatError::NominalDuration(_)));
        assert!(matches!(err("P1M"), FormatError::NominalDuration(_)));
        assert!(matches!(err("P1Y2M3DT4H"), FormatError::NominalDuration(_)));
        assert!(matches!(err("PT0.0001S"), FormatError::DurationRange(_)));
        assert!(matches!(
            err("P999999999999999D"),
            FormatError::DurationRange(_)
        ));
        for s in [
            "", "P", "PT", "1h", "PT1H1H", "PM1D", "P1.5DT1H", "PT1.S", "P1DT",
        ] {
            assert!(matches!(err(s), FormatError::NotDuration(..)), "{s}");
        }
    }

    #[test]
    fn addresses_in_cedar_spelling() {
        assert_eq!(cedar_ipaddr("192.0.2.1").as_deref(), Ok("192.0.2.1"));
        assert_eq!(cedar_ipaddr("::1").as_deref(), Ok("0:0:0:0:0:0:0:1"));
        assert_eq!(cedar_ipaddr("::ffff:1.2.3.4").as_deref(), Ok("1.2.3.4"));
        assert_eq!(cedar_ipaddr("::ffff:102:304").as_deref(), Ok("1.2.3.4"));
        assert_eq!(
            cedar_ipaddr("2001:db8::1.2.3.4").as_deref(),
            Ok("2001:db8:0:0:0:0:102:304")
        );
        for s in ["10.0.0.0/8", "fe80::1%eth0", "01.2.3.4", "example.com", ""] {
            assert!(cedar_ipaddr(s).is_err(), "{s}");
        }
    }
}
