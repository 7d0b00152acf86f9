//! What Go's decoding of a typed Kubernetes object refuses beyond a value's JSON type, in Go's
//! words: `[]byte` fields (standard base64, `encoding/base64`), `resource.Quantity`
//! (`ParseQuantity`) and `metav1.Time`/`MicroTime` (`time.Parse` with RFC 3339 layouts).
//! kube-apiserver answers such a body with a 400 (`Secret in version "v1" cannot be handled as a
//! Secret: illegal base64 data at input byte 3`) and stores nothing; a value it refuses must not
//! be stored here either, or typed clients fail to read it back. Pure functions, one per Go
//! decoder, each giving the error text Go gives.

use std::fmt::Write as _;

/// The word Go's `UnmarshalTypeError` uses for a JSON value's kind (`cannot unmarshal number
/// into Go value of type string`).
pub fn json_kind(v: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Go's `metav1.Time` layout (`time.RFC3339`).
pub const RFC3339: &str = "2006-01-02T15:04:05Z07:00";
/// Go's `metav1.MicroTime` layout (`metav1.RFC3339Micro`).
pub const RFC3339_MICRO: &str = "2006-01-02T15:04:05.000000Z07:00";

/// `base64.StdEncoding.DecodeString`'s error (`illegal base64 data at input byte N`), as
/// `encoding/json` decodes a `[]byte` field: padding required, `\r` and `\n` skipped.
pub fn base64_std(s: &str) -> Result<(), String> {
    let src = s.as_bytes();
    let corrupt = |at: usize| Err(format!("illegal base64 data at input byte {at}"));
    let valid = |c: u8| c.is_ascii_alphanumeric() || c == b'+' || c == b'/';
    let newline = |c: u8| c == b'\n' || c == b'\r';
    let mut si = 0;
    // One quantum of four characters at a time (Go's `decodeQuantum`).
    loop {
        let mut j = 0;
        while j < 4 {
            if si == src.len() {
                return match j {
                    0 => Ok(()),
                    _ => corrupt(si - j),
                };
            }
            let c = src[si];
            si += 1;
            if valid(c) {
                j += 1;
                continue;
            }
            if newline(c) {
                continue;
            }
            if c != b'=' {
                return corrupt(si - 1);
            }
            // Padding: only after two or three characters, and it ends the input.
            match j {
                0 | 1 => return corrupt(si - 1),
                2 => {
                    while si < src.len() && newline(src[si]) {
                        si += 1;
                    }
                    if si == src.len() {
                        return corrupt(src.len());
                    }
                    if src[si] != b'=' {
                        return corrupt(si - 1);
                    }
                    si += 1;
                }
                _ => {}
            }
            while si < src.len() && newline(src[si]) {
                si += 1;
            }
            return if si < src.len() { corrupt(si) } else { Ok(()) };
        }
    }
}

/// apimachinery's `ErrFormatWrong`.
pub const QUANTITY_FORMAT: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
/// apimachinery's `ErrSuffix`.
pub const QUANTITY_SUFFIX: &str = "unable to parse quantity's suffix";

/// `resource.ParseQuantity` of a quantity's text (surrounding white space trimmed, as its JSON
/// decoding trims it): `Err` is apimachinery's error text for a text that is not of the form
/// number, suffix, or whose suffix is not one it knows. (Its `ErrNumeric`, for numbers past its
/// precision, is not reproduced: such a value is accepted here.)
pub fn quantity(text: &str) -> Result<(), &'static str> {
    let s = text.trim().as_bytes();
    if s.is_empty() {
        return Err(QUANTITY_FORMAT);
    }
    let digits = |from: usize| {
        s[from..]
            .iter()
            .position(|c| !c.is_ascii_digit())
            .map_or(s.len(), |n| from + n)
    };
    let mut pos = usize::from(matches!(s[0], b'+' | b'-'));
    pos = digits(pos);
    if pos < s.len() && s[pos] == b'.' {
        pos = digits(pos + 1);
    }
    // A number without digits (`.`, `-`) is zero to apimachinery's fast path, not an error.
    if pos == s.len() {
        return Ok(());
    }
    let suffix_start = pos;
    while pos < s.len() && b"eEinumkKMGTP".contains(&s[pos]) {
        pos += 1;
    }
    if pos < s.len() && matches!(s[pos], b'+' | b'-') {
        pos += 1;
    }
    if digits(pos) != s.len() {
        return Err(QUANTITY_FORMAT);
    }
    let suffix = &s[suffix_start..];
    let known = crate::quantity::DECIMAL_SUFFIXES
        .iter()
        .map(|(text, _)| text)
        .chain(&crate::quantity::BINARY_SUFFIXES)
        .any(|text| text.as_bytes() == suffix);
    let exponent = matches!(suffix.first(), Some(b'e' | b'E'))
        && std::str::from_utf8(&suffix[1..]).is_ok_and(|e| e.parse::<i64>().is_ok());
    if known || exponent {
        Ok(())
    } else {
        Err(QUANTITY_SUFFIX)
    }
}

/// Go's `time.Parse(layout, value)` error for [`RFC3339`] or [`RFC3339_MICRO`]: `parsing time
/// "x" as "2006-01-02T15:04:05Z07:00": cannot parse "x" as "2006"`, a range error (`month out of
/// range`) or extra text.
pub fn time(value: &str, layout: &str) -> Result<(), String> {
    // The layout's chunks: a literal to skip, then a value element.
    enum Elem {
        Year,
        /// Two digits (one for the hour, whose layout element is not zero-padded), what it
        /// is, and its range.
        Num2(&'static str, i64, i64),
        Frac6,
        Zone,
    }
    let micro = layout == RFC3339_MICRO;
    let mut chunks: Vec<(&str, Elem, &str)> = vec![
        ("", Elem::Year, "2006"),
        ("-", Elem::Num2("month", 1, 12), "01"),
        ("-", Elem::Num2("day", 0, 99), "02"),
        ("T", Elem::Num2("hour", 0, 23), "15"),
        (":", Elem::Num2("minute", 0, 59), "04"),
        (":", Elem::Num2("second", 0, 59), "05"),
    ];
    if micro {
        chunks.push(("", Elem::Frac6, ".000000"));
    }
    chunks.push(("", Elem::Zone, "Z07:00"));
    let fail = |elem_value: &str, elem_layout: &str| {
        Err(format!(
            "parsing time {} as {}: cannot parse {} as {}",
            go_quote(value),
            go_quote(layout),
            go_quote(elem_value),
            go_quote(elem_layout)
        ))
    };
    let range = |what: &str| {
        Err(format!(
            "parsing time {}: {what} out of range",
            go_quote(value)
        ))
    };
    // Bytes, not `str` slices: a zone's digits may sit next to a multi-byte character.
    let num2 = |b: &[u8]| -> Option<i64> {
        (b.len() >= 2 && b[0].is_ascii_digit() && b[1].is_ascii_digit())
            .then(|| i64::from(b[0] - b'0') * 10 + i64::from(b[1] - b'0'))
    };
    let (mut year, mut month, mut day) = (0i64, 0i64, 0i64);
    let mut rest = value;
    for (literal, elem, elem_layout) in chunks {
        if let Some(after) = rest.strip_prefix(literal) {
            rest = after;
        } else {
            return fail(rest, literal);
        }
        let hold = rest;
        match elem {
            Elem::Year => {
                let b = rest.as_bytes();
                if b.len() < 4 || !b[..4].iter().all(u8::is_ascii_digit) {
                    return fail(hold, elem_layout);
                }
                year = rest[..4].parse().unwrap_or(0);
                rest = &rest[4..];
            }
            Elem::Num2(what, lo, hi) => {
                let b = rest.as_bytes();
                let n = if let Some(n) = num2(b) {
                    rest = &rest[2..];
                    n
                } else if what == "hour" && b.first().is_some_and(u8::is_ascii_digit) {
                    rest = &rest[1..];
                    i64::from(b[0] - b'0')
                } else {
                    return fail(hold, elem_layout);
                };
                match what {
                    "month" => month = n,
                    "day" => day = n,
                    _ => {}
                }
                if what != "day" && !(lo..=hi).contains(&n) {
                    return range(what);
                }
                // A fraction the layout does not name is taken after the seconds.
                if what == "second" && !micro {
                    let b = rest.as_bytes();
                    if b.len() >= 2 && matches!(b[0], b'.' | b',') && b[1].is_ascii_digit() {
                        let n = 1 + b[1..].iter().take_while(|c| c.is_ascii_digit()).count();
                        rest = &rest[n..];
                    }
                }
            }
            Elem::Frac6 => {
                let b = rest.as_bytes();
                if b.len() < 7
                    || !matches!(b[0], b'.' | b',')
                    || !b[1..7].iter().all(u8::is_ascii_digit)
                {
                    return fail(hold, elem_layout);
                }
                rest = &rest[7..];
            }
            Elem::Zone => {
                if let Some(after) = rest.strip_prefix('Z') {
                    rest = after;
                } else {
                    let b = rest.as_bytes();
                    if b.len() < 6 || b[3] != b':' {
                        return fail(hold, elem_layout);
                    }
                    let (Some(hh), Some(mm)) = (num2(&b[1..3]), num2(&b[4..6])) else {
                        return fail(hold, elem_layout);
                    };
                    if hh > 24 {
                        return range("time zone offset hour");
                    }
                    if mm > 60 {
                        return range("time zone offset minute");
                    }
                    if !matches!(b[0], b'+' | b'-') {
                        return fail(hold, elem_layout);
                    }
                    rest = &rest[6..];
                }
            }
        }
    }
    if !rest.is_empty() {
        return Err(format!(
            "parsing time {}: extra text: {}",
            go_quote(value),
            go_quote(rest)
        ));
    }
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if day < 1 || day > days {
        return range("day");
    }
    Ok(())
}

/// Go's `time.quote`: double quotes, `"` and `\` escaped, bytes of non-ASCII and control
/// characters as `\xNN`.
fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if c.is_ascii() && !c.is_ascii_control() {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_errors_are_gos() {
        for (input, want) in [
            ("", Ok(())),
            ("YQ==", Ok(())),
            ("YWI=", Ok(())),
            ("YWJj", Ok(())),
            ("YW\nJj", Ok(())),
            ("YQ==\n", Ok(())),
            ("not base64!", Err(3)),
            ("YQ", Err(0)),
            ("YWI", Err(0)),
            ("Y", Err(0)),
            ("YQ=", Err(3)),
            ("YQ=x", Err(2)),
            ("=", Err(0)),
            ("Y===", Err(1)),
            ("YWI=YWI=", Err(4)),
            ("YWJj!", Err(4)),
            ("YWJjZA", Err(4)),
        ] {
            let got = base64_std(input);
            let want = want.map_err(|at| format!("illegal base64 data at input byte {at}"));
            assert_eq!(got, want, "{input:?}");
        }
    }

    #[test]
    fn quantities_parse_as_apimachinery_parses_them() {
        for (input, want) in [
            ("1", Ok(())),
            ("0", Ok(())),
            ("100m", Ok(())),
            ("1.5Gi", Ok(())),
            ("-1", Ok(())),
            ("+2k", Ok(())),
            ("1e3", Ok(())),
            ("1E-3", Ok(())),
            (" 64Mi ", Ok(())),
            ("1.", Ok(())),
            ("1Gb", Err(QUANTITY_FORMAT)),
            ("lots", Err(QUANTITY_FORMAT)),
            ("", Err(QUANTITY_FORMAT)),
            ("1 Gi", Err(QUANTITY_FORMAT)),
            ("1Mb", Err(QUANTITY_FORMAT)),
            ("1KiB", Err(QUANTITY_FORMAT)),
            ("1Gii", Err(QUANTITY_SUFFIX)),
            ("1ki", Err(QUANTITY_SUFFIX)),
            ("1e", Err(QUANTITY_SUFFIX)),
            (".", Ok(())),
        ] {
            assert_eq!(quantity(input), want, "{input:?}");
        }
    }

    #[test]
    fn times_parse_as_go_parses_them() {
        let t = |v: &str| time(v, RFC3339);
        let m = |v: &str| time(v, RFC3339_MICRO);
        for ok in [
            "2024-01-01T00:00:00Z",
            "2024-02-29T23:59:59+01:00",
            "2024-01-01T00:00:00.5Z",
            "2024-01-01T00:00:00.123456789-07:00",
            "2024-01-01T1:00:00Z",
        ] {
            assert_eq!(t(ok), Ok(()), "{ok}");
        }
        assert_eq!(m("2024-01-01T00:00:00.000000Z"), Ok(()));
        assert_eq!(m("2024-01-01T10:11:12.123456+02:00"), Ok(()));
        for (got, want) in [
            (
                t("yesterday"),
                r#"parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006""#,
            ),
            (
                t(""),
                r#"parsing time "" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "2006""#,
            ),
            (
                t("2024-01-01"),
                r#"parsing time "2024-01-01" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "T""#,
            ),
            (
                t("2024-01-01 00:00:00Z"),
                r#"parsing time "2024-01-01 00:00:00Z" as "2006-01-02T15:04:05Z07:00": cannot parse " 00:00:00Z" as "T""#,
            ),
            (
                t("2024-1-01T00:00:00Z"),
                r#"parsing time "2024-1-01T00:00:00Z" as "2006-01-02T15:04:05Z07:00": cannot parse "1-01T00:00:00Z" as "01""#,
            ),
            (
                t("2024-13-01T00:00:00Z"),
                r#"parsing time "2024-13-01T00:00:00Z": month out of range"#,
            ),
            (
                t("2023-02-29T00:00:00Z"),
                r#"parsing time "2023-02-29T00:00:00Z": day out of range"#,
            ),
            (
                t("2024-01-01T24:00:00Z"),
                r#"parsing time "2024-01-01T24:00:00Z": hour out of range"#,
            ),
            (
                t("2024-01-01T00:00:00"),
                r#"parsing time "2024-01-01T00:00:00" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "Z07:00""#,
            ),
            (
                t("2024-01-01T00:00:00Zjunk"),
                r#"parsing time "2024-01-01T00:00:00Zjunk": extra text: "junk""#,
            ),
            (
                m("2024-01-01T00:00:00Z"),
                r#"parsing time "2024-01-01T00:00:00Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000""#,
            ),
            (
                // A multi-byte character where the zone's digits would be: an error, no panic.
                t("2024-01-01T00:00:00é1:00"),
                r#"parsing time "2024-01-01T00:00:00\xc3\xa91:00" as "2006-01-02T15:04:05Z07:00": cannot parse "\xc3\xa91:00" as "Z07:00""#,
            ),
            (
                t("2024-01-01T00:00:00+€:00"),
                r#"parsing time "2024-01-01T00:00:00+\xe2\x82\xac:00" as "2006-01-02T15:04:05Z07:00": cannot parse "+\xe2\x82\xac:00" as "Z07:00""#,
            ),
            (
                t("2024-01-01T00:00:00Zé"),
                r#"parsing time "2024-01-01T00:00:00Z\xc3\xa9": extra text: "\xc3\xa9""#,
            ),
        ] {
            assert_eq!(got, Err(want.to_string()));
        }
    }
}
