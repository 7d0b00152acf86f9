//! Cron job schedules and time zones as kube-apiserver checks them: a schedule must parse as
//! `robfig/cron/v3`'s `ParseStandard` parses it (five fields, or a `@` descriptor, after an
//! optional `TZ=`/`CRON_TZ=` prefix), and its errors are that parser's words; a time zone must
//! be one Go's `time.LoadLocation` knows (the IANA database, bundled).

/// One field's bounds and, for months and weekdays, its names.
struct Bounds {
    min: u64,
    max: u64,
    names: &'static [&'static str],
    /// The value of the first name.
    first_name: u64,
}

const SECONDS: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
    first_name: 0,
};
const MINUTES: Bounds = SECONDS;
const HOURS: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
    first_name: 0,
};
const DAYS_OF_MONTH: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
    first_name: 0,
};
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ],
    first_name: 1,
};
const DAYS_OF_WEEK: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
    first_name: 0,
};

/// Parses `spec` as `cron.ParseStandard` does; the error is its message.
pub fn parse_standard(spec: &str) -> Result<(), String> {
    if spec.is_empty() {
        return Err("empty spec string".into());
    }
    let mut spec = spec;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        let eq = spec.find('=').unwrap_or(0);
        let end = spec.find(' ').unwrap_or(spec.len());
        let name = spec.get(eq + 1..end).unwrap_or("");
        if let Err(e) = load_location(name) {
            return Err(format!("provided bad location {name}: {e}"));
        }
        spec = spec[end..].trim();
    }
    if spec.starts_with('@') {
        return descriptor(spec);
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    let bounds = [&MINUTES, &HOURS, &DAYS_OF_MONTH, &MONTHS, &DAYS_OF_WEEK];
    // The standard parser's seconds field is a fixed "0".
    field("0", &SECONDS)?;
    for (f, b) in fields.iter().zip(bounds) {
        field(f, b)?;
    }
    Ok(())
}

/// `getField`: comma-separated ranges (empty ones skipped, as `strings.FieldsFunc` skips them).
fn field(field: &str, b: &Bounds) -> Result<(), String> {
    field
        .split(',')
        .filter(|r| !r.is_empty())
        .try_for_each(|r| range(r, b))
}

/// `getRange`: `*`, `?`, `N`, `N-M`, each with an optional `/step`.
fn range(expr: &str, b: &Bounds) -> Result<(), String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let (start, mut end) = if matches!(low_and_high[0], "*" | "?") {
        (b.min, b.max)
    } else {
        let start = int_or_name(low_and_high[0], b)?;
        match low_and_high.len() {
            1 => (start, start),
            2 => (start, int_or_name(low_and_high[1], b)?),
            _ => return Err(format!("too many hyphens: {expr}")),
        }
    };
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = non_negative_int(range_and_step[1])?;
            // "N/step" means "N-max/step".
            if low_and_high.len() == 1 {
                end = b.max;
            }
            step
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < b.min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({}): {expr}",
            b.min
        ));
    }
    if end > b.max {
        return Err(format!(
            "end of range ({end}) above maximum ({}): {expr}",
            b.max
        ));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(())
}

fn int_or_name(expr: &str, b: &Bounds) -> Result<u64, String> {
    let lower = expr.to_ascii_lowercase();
    match b.names.iter().position(|n| *n == lower) {
        Some(i) => Ok(b.first_name + i as u64),
        None => non_negative_int(expr),
    }
}

/// `mustParseInt`: Go's `strconv.Atoi`, then no negative numbers.
fn non_negative_int(expr: &str) -> Result<u64, String> {
    let digits = expr.strip_prefix(['+', '-']).unwrap_or(expr);
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return Err(format!(
            "failed to parse int from {expr}: strconv.Atoi: parsing \"{expr}\": invalid syntax"
        ));
    }
    let Ok(n) = expr.parse::<i64>() else {
        return Err(format!(
            "failed to parse int from {expr}: strconv.Atoi: parsing \"{expr}\": value out of range"
        ));
    };
    u64::try_from(n).map_err(|_| format!("negative number ({n}) not allowed: {expr}"))
}

/// `parseDescriptor`: the named schedules and `@every <duration>`.
fn descriptor(spec: &str) -> Result<(), String> {
    match spec {
        "@yearly" | "@annually" | "@monthly" | "@weekly" | "@daily" | "@midnight" | "@hourly" => {
            Ok(())
        }
        _ => match spec.strip_prefix("@every ") {
            Some(d) => crd_core::time::parse_go_duration(d)
                .map(drop)
                .map_err(|e| format!("failed to parse duration {spec}: {e}")),
            None => Err(format!("unrecognized descriptor: {spec}")),
        },
    }
}

/// Go's `time.LoadLocation`: `""` and `UTC` are UTC, `Local` the local zone, any other name
/// must be in the IANA database.
pub fn load_location(name: &str) -> Result<(), String> {
    if name.is_empty() || name == "UTC" || name == "Local" {
        return Ok(());
    }
    if name.contains("..") || name.starts_with('/') || name.contains('\\') {
        return Err("time: invalid location name".into());
    }
    jiff::tz::TimeZone::get(name)
        .map(drop)
        .map_err(|_| format!("unknown time zone {name}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Schedules in, `ParseStandard`'s verdict out (cases from robfig/cron's parser tests and
    /// kube-apiserver's cron job validation tests).
    #[test]
    fn schedules_parse_as_robfig_cron_parses_them() {
        let cases: &[(&str, Result<(), &str>)] = &[
            ("* * * * *", Ok(())),
            ("*/5 0-23/2 1,15 jan-dec/3 MON-fri", Ok(())),
            ("5/15 * ? * *", Ok(())),
            ("@hourly", Ok(())),
            ("@every 1h30m", Ok(())),
            ("TZ=UTC 0 0 * * *", Ok(())),
            ("CRON_TZ=Europe/Paris 0 0 * * *", Ok(())),
            ("", Err("empty spec string")),
            (
                "not a schedule",
                Err("expected exactly 5 fields, found 3: [not a schedule]"),
            ),
            (
                "* * * * * *",
                Err("expected exactly 5 fields, found 6: [* * * * * *]"),
            ),
            (
                "61 * * * *",
                Err("end of range (61) above maximum (59): 61"),
            ),
            (
                "* * 0 * *",
                Err("beginning of range (0) below minimum (1): 0"),
            ),
            (
                "5-1 * * * *",
                Err("beginning of range (5) beyond end of range (1): 5-1"),
            ),
            ("1-2-3 * * * *", Err("too many hyphens: 1-2-3")),
            ("*/2/3 * * * *", Err("too many slashes: */2/3")),
            (
                "*/0 * * * *",
                Err("step of range should be a positive number: */0"),
            ),
            (
                "x * * * *",
                Err("failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax"),
            ),
            (
                "* -1 * * *",
                Err("failed to parse int from : strconv.Atoi: parsing \"\": invalid syntax"),
            ),
            (
                "TZ=Mars/Olympus * * * * *",
                Err("provided bad location Mars/Olympus: unknown time zone Mars/Olympus"),
            ),
            ("@sometimes", Err("unrecognized descriptor: @sometimes")),
            (
                "@every 5",
                Err("failed to parse duration @every 5: time: missing unit in duration \"5\""),
            ),
            (
                "@every 5y",
                Err(
                    "failed to parse duration @every 5y: time: unknown unit \"y\" in duration \"5y\"",
                ),
            ),
        ];
        for (spec, want) in cases {
            assert_eq!(parse_standard(spec), want.map_err(String::from), "{spec:?}");
        }
    }

    #[test]
    fn time_zones_are_the_iana_database() {
        for ok in ["UTC", "Europe/Berlin", "America/New_York", "Local", ""] {
            assert_eq!(load_location(ok), Ok(()), "{ok}");
        }
        assert_eq!(
            load_location("Mars/Olympus"),
            Err("unknown time zone Mars/Olympus".to_string())
        );
        assert_eq!(
            load_location("../etc/passwd"),
            Err("time: invalid location name".to_string())
        );
    }
}
