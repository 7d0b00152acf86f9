//! `metav1.Time` as Go prints it: RFC 3339, whole seconds, UTC. One formatter for every layer
//! that writes times (stored metadata, decoded protobuf bodies, status defaults); reading the
//! clock is the caller's. And Go's `time.ParseDuration`, the one reader of the durations
//! users write in flags, query parameters, cron descriptors and CEL literals.

/// `t` as `metav1.Time` prints it (RFC 3339, whole seconds, UTC; a fraction is dropped). Years
/// 1970 to 9999 are written digit by digit (every create writes two times, and the general
/// formatter was 1% of a create's instructions); other times by jiff's `strftime`, as before.
pub fn rfc3339_seconds(t: jiff::Timestamp) -> String {
    const END_OF_9999: i64 = 253_402_300_800;
    let secs = t.as_second();
    // A time in the second before 1970 has `as_second() == 0` and a negative fraction: the
    // digit-by-digit path would print 1970; `strftime` floors to 1969-12-31T23:59:59Z.
    if !(0..END_OF_9999).contains(&secs) || t.subsec_nanosecond() < 0 {
        return t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    }
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days);
    let mut out = [0u8; 20];
    let mut put = |at: usize, value: i64, width: usize| {
        let mut v = value;
        for i in (at..at + width).rev() {
            // `v % 10` is a digit: the value is non-negative.
            out[i] = b'0' + u8::try_from(v % 10).unwrap_or(0);
            v /= 10;
        }
    };
    put(0, year, 4);
    put(5, month, 2);
    put(8, day, 2);
    put(11, rem / 3600, 2);
    put(14, rem % 3600 / 60, 2);
    put(17, rem % 60, 2);
    for (at, sep) in [
        (4, b'-'),
        (7, b'-'),
        (10, b'T'),
        (13, b':'),
        (16, b':'),
        (19, b'Z'),
    ] {
        out[at] = sep;
    }
    out.iter().map(|&b| char::from(b)).collect()
}

/// The proleptic Gregorian date of a day counted from 1970-01-01 (Howard Hinnant's
/// `civil_from_days`), for days from 0 on.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Go's `time.Duration.String()` (`1h2m3s`, `1.5s`, `500ms`, `0s`): how Go components print
/// durations in messages and query parameters (`?timeout=30s`), which clients read back.
pub fn format_go_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let n = nanos.unsigned_abs();
    let frac = |value: u64, unit: u64| -> String {
        let whole = value / unit;
        let rest = value % unit;
        if rest == 0 {
            whole.to_string()
        } else {
            let digits = unit.to_string().len() - 1;
            let f = format!("{rest:0digits$}");
            format!("{whole}.{}", f.trim_end_matches('0'))
        }
    };
    if n < 1_000 {
        return format!("{sign}{n}ns");
    }
    if n < 1_000_000 {
        return format!("{sign}{}µs", frac(n, 1_000));
    }
    if n < 1_000_000_000 {
        return format!("{sign}{}ms", frac(n, 1_000_000));
    }
    let secs = n / 1_000_000_000;
    let sub = n % 1_000_000_000;
    let (h, m, s) = (secs / 3600, (secs % 3600) / 60, secs % 60);
    let s = frac(s * 1_000_000_000 + sub, 1_000_000_000);
    if h > 0 {
        format!("{sign}{h}h{m}m{s}s")
    } else if m > 0 {
        format!("{sign}{m}m{s}s")
    } else {
        format!("{sign}{s}s")
    }
}

/// Nanoseconds in each unit `time.ParseDuration` knows.
const DURATION_UNITS: &[(&str, u64)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("\u{b5}s", 1_000),
    ("\u{3bc}s", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// Go's `time.ParseDuration`: an optional sign, then decimal numbers each with a unit (`300ms`,
/// `-1.5h`, `2h45m`), or `0`; the result in nanoseconds, within Go's `int64`. Errors are Go's
/// texts (`time: invalid duration "x"`, `time: missing unit in duration "1"`, `time: unknown
/// unit "d" in duration "1d"`), since clients and scripts see them in responses.
pub fn parse_go_duration(orig: &str) -> Result<i64, String> {
    const LIMIT: u64 = 1 << 63;
    let invalid = || format!("time: invalid duration {}", go_quote(orig));
    let (neg, mut s) = match orig.as_bytes().first() {
        Some(b'-') => (true, &orig[1..]),
        Some(b'+') => (false, &orig[1..]),
        _ => (false, orig),
    };
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut total: u64 = 0;
    while !s.is_empty() {
        if !s.starts_with(|c: char| c == '.' || c.is_ascii_digit()) {
            return Err(invalid());
        }
        // The integer part, refused past 2^63 as Go's `leadingInt` refuses it.
        let int_len = s.bytes().take_while(u8::is_ascii_digit).count();
        let mut v: u64 = 0;
        for d in s[..int_len].bytes() {
            if v > LIMIT / 10 {
                return Err(invalid());
            }
            v = v * 10 + u64::from(d - b'0');
            if v > LIMIT {
                return Err(invalid());
            }
        }
        s = &s[int_len..];
        // The fraction, whose digits past what fits are read and ignored (`leadingFraction`).
        let (mut f, mut scale, mut frac_len) = (0u64, 1f64, 0usize);
        if let Some(rest) = s.strip_prefix('.') {
            frac_len = rest.bytes().take_while(u8::is_ascii_digit).count();
            let mut overflow = false;
            for d in rest[..frac_len].bytes() {
                if overflow || f > (LIMIT - 1) / 10 {
                    overflow = true;
                    continue;
                }
                let next = f * 10 + u64::from(d - b'0');
                if next >= LIMIT {
                    overflow = true;
                    continue;
                }
                f = next;
                scale *= 10.0;
            }
            s = &rest[frac_len..];
        }
        if int_len == 0 && frac_len == 0 {
            return Err(invalid());
        }
        let unit_len = s
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(s.len());
        if unit_len == 0 {
            return Err(format!("time: missing unit in duration {}", go_quote(orig)));
        }
        let (unit, rest) = s.split_at(unit_len);
        s = rest;
        let Some(&(_, nanos)) = DURATION_UNITS.iter().find(|(name, _)| *name == unit) else {
            return Err(format!(
                "time: unknown unit {} in duration {}",
                go_quote(unit),
                go_quote(orig)
            ));
        };
        if v > LIMIT / nanos {
            return Err(invalid());
        }
        v *= nanos;
        if f > 0 {
            // As Go: a float is nanosecond-exact for fractions of the largest unit.
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                clippy::cast_precision_loss
            )]
            let fraction = (f as f64 * (nanos as f64 / scale)) as u64;
            v += fraction;
            if v > LIMIT {
                return Err(invalid());
            }
        }
        total += v;
        if total > LIMIT {
            return Err(invalid());
        }
    }
    if neg {
        // `total` is at most 2^63, whose negation is `i64::MIN`.
        return Ok(0i64.wrapping_sub_unsigned(total));
    }
    i64::try_from(total).map_err(|_| invalid())
}

/// The time package's `quote`: `"` and `\` escaped, control and non-ASCII bytes as `\xNN`.
fn go_quote(s: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if c < ' ' || !c.is_ascii() {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                let _ = write!(out, "\\x{b:02x}");
            }
        } else {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_written_as_strftime_writes_them() {
        let strftime = |t: jiff::Timestamp| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
        let mut seconds: Vec<i64> = vec![
            0,
            1,
            59,
            60,
            3_599,
            3_600,
            86_399,
            86_400,
            // 2000-02-28, -29, -03-01 (a leap year divisible by 400) and 2100-02-28, -03-01
            // (not a leap year), 2038-01-19T03:14:08Z (past 32 bits), jiff's latest time (in
            // 9999-12-30), and before 1970 (jiff's formatter).
            951_696_000,
            951_782_400,
            951_868_800,
            4_107_456_000,
            4_107_542_400,
            2_147_483_648,
            253_402_207_199,
            253_402_207_200,
            -1,
            -86_401,
            -62_135_596_800,
        ];
        // Every day of four years around a leap day, at a varying time of day, and a spread
        // over the whole range.
        seconds.extend((0..4 * 366).map(|d| 946_684_800 + d * 86_400 + d * 3_607 % 86_400));
        seconds.extend((0..2_000).map(|i| i * 126_701_100));
        for s in seconds {
            let t = jiff::Timestamp::from_second(s).unwrap();
            assert_eq!(rfc3339_seconds(t), strftime(t), "{s}");
        }
    }
    /// Go's `parseDurationTests` and `parseDurationErrorTests` (`time/time_test.go`): text in,
    /// nanoseconds or Go's error out.
    #[test]
    fn durations_parse_as_go_parses_them() {
        let ok: &[(&str, i64)] = &[
            ("0", 0),
            ("5s", 5_000_000_000),
            ("30s", 30_000_000_000),
            ("1478s", 1_478_000_000_000),
            ("-5s", -5_000_000_000),
            ("+5s", 5_000_000_000),
            ("-0", 0),
            ("+0", 0),
            ("5.0s", 5_000_000_000),
            ("5.6s", 5_600_000_000),
            ("5.s", 5_000_000_000),
            (".5s", 500_000_000),
            ("1.0s", 1_000_000_000),
            ("1.00s", 1_000_000_000),
            ("1.004s", 1_004_000_000),
            ("1.0040s", 1_004_000_000),
            ("100.00100s", 100_001_000_000),
            ("10ns", 10),
            ("11us", 11_000),
            ("12\u{b5}s", 12_000),
            ("12\u{3bc}s", 12_000),
            ("13ms", 13_000_000),
            ("14s", 14_000_000_000),
            ("15m", 900_000_000_000),
            ("16h", 57_600_000_000_000),
            ("3h30m", 12_600_000_000_000),
            ("10.5s4m", 250_500_000_000),
            ("-2m3.4s", -123_400_000_000),
            ("1h2m3s4ms5us6ns", 3_723_004_005_006),
            ("39h9m14.425s", 140_954_425_000_000),
            ("52763797000ns", 52_763_797_000),
            ("0.3333333333333333333h", 1_200_000_000_000),
            ("9007199254740993ns", 9_007_199_254_740_993),
            ("9223372036854775807ns", i64::MAX),
            ("9223372036854775.807us", i64::MAX),
            ("9223372036s854ms775us807ns", i64::MAX),
            ("-9223372036854775808ns", i64::MIN),
            ("-9223372036854775.808us", i64::MIN),
            ("-9223372036s854ms775us808ns", i64::MIN),
            ("-2562047h47m16.854775808s", i64::MIN),
            ("0.100000000000000000000h", 360_000_000_000),
            ("0.830103483285477580700h", 2_988_372_539_827),
        ];
        for (text, want) in ok {
            assert_eq!(parse_go_duration(text), Ok(*want), "{text}");
        }
        let errors: &[(&str, &str)] = &[
            ("", r#"time: invalid duration """#),
            ("3", r#"time: missing unit in duration "3""#),
            ("-", r#"time: invalid duration "-""#),
            ("s", r#"time: invalid duration "s""#),
            (".", r#"time: invalid duration ".""#),
            ("-.", r#"time: invalid duration "-.""#),
            (".s", r#"time: invalid duration ".s""#),
            ("+.s", r#"time: invalid duration "+.s""#),
            ("1d", r#"time: unknown unit "d" in duration "1d""#),
            (
                "\u{85}\u{85}",
                r#"time: invalid duration "\xc2\x85\xc2\x85""#,
            ),
            ("\u{FFFD}", r#"time: invalid duration "\xef\xbf\xbd""#),
            (
                "9223372036854775810ns",
                r#"time: invalid duration "9223372036854775810ns""#,
            ),
            (
                "9223372036854775808ns",
                r#"time: invalid duration "9223372036854775808ns""#,
            ),
            (
                "-9223372036854775809ns",
                r#"time: invalid duration "-9223372036854775809ns""#,
            ),
            (
                "9223372036854776us",
                r#"time: invalid duration "9223372036854776us""#,
            ),
            ("3000000h", r#"time: invalid duration "3000000h""#),
            (
                "9223372036854775.808us",
                r#"time: invalid duration "9223372036854775.808us""#,
            ),
            (
                "9223372036854ms775us808ns",
                r#"time: invalid duration "9223372036854ms775us808ns""#,
            ),
            ("abc", r#"time: invalid duration "abc""#),
            ("1s\"", r#"time: unknown unit "s\"" in duration "1s\"""#),
        ];
        for (text, want) in errors {
            assert_eq!(
                parse_go_duration(text),
                Err((*want).to_string()),
                "{text:?}"
            );
        }
    }
}
