//! `metav1.Time` as Go prints it: RFC 3339, whole seconds, UTC. One formatter for every layer
//! that writes times (stored metadata, decoded protobuf bodies, status defaults); reading the
//! clock is the caller's.

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
}
