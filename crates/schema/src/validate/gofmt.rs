//! Go's text renderings of numbers and JSON, so messages read exactly as kube-apiserver's do.

use std::fmt::Write as _;

use serde_json::Value;

/// The decimal digits and decimal exponent of the shortest representation of `f` (`f` finite,
/// non-zero): `1.5` → (`"15"`, 0), `1e21` → (`"1"`, 21).
fn shortest_digits(f: f64) -> (String, i32) {
    let s = format!("{:e}", f.abs());
    let (mantissa, exp) = s.split_once('e').unwrap_or((s.as_str(), "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    (digits, exp.parse().unwrap_or(0))
}

fn e_format(neg: bool, digits: &str, exp: i32) -> String {
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    out.push_str(&digits[..1]);
    if digits.len() > 1 {
        out.push('.');
        out.push_str(&digits[1..]);
    }
    out.push('e');
    out.push(if exp < 0 { '-' } else { '+' });
    let e = exp.unsigned_abs();
    if e < 10 {
        out.push('0');
    }
    out.push_str(&e.to_string());
    out
}

fn f_format(neg: bool, digits: &str, exp: i32) -> String {
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if exp < 0 {
        out.push_str("0.");
        for _ in 0..(-exp - 1) {
            out.push('0');
        }
        out.push_str(digits);
    } else {
        let int_len = exp as usize + 1;
        if digits.len() <= int_len {
            out.push_str(digits);
            for _ in digits.len()..int_len {
                out.push('0');
            }
        } else {
            out.push_str(&digits[..int_len]);
            out.push('.');
            out.push_str(&digits[int_len..]);
        }
    }
    out
}

/// Go's `%v` of a `float64` (`strconv.FormatFloat(f, 'g', -1, 64)`): `10`, `1.5`, `1e+06`.
pub fn float_v(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let (digits, exp) = shortest_digits(f);
    let neg = f < 0.0;
    // Shortest precision uses 6 as the exponent threshold for %e.
    if (-4..6).contains(&exp) {
        f_format(neg, &digits, exp)
    } else {
        e_format(neg, &digits, exp)
    }
}

/// `encoding/json`'s rendering of a `float64`: `%f`-style, or `%e` below 1e-6 and from 1e21.
pub(crate) fn float_json(f: f64) -> String {
    if !f.is_finite() {
        return float_v(f);
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let abs = f.abs();
    let (digits, exp) = shortest_digits(f);
    let neg = f < 0.0;
    if (1e-6..1e21).contains(&abs) {
        return f_format(neg, &digits, exp);
    }
    let s = e_format(neg, &digits, exp);
    // encoding/json cleans `e-07` up to `e-7`.
    if let Some(pos) = s.find("e-0") {
        let mut t = s[..pos + 2].to_string();
        t.push_str(&s[pos + 3..]);
        return t;
    }
    s
}

/// `encoding/json`'s string escaping, HTML-safe as `json.Marshal` is.
fn string_json(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn json_into(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                out.push_str(&i.to_string());
            } else if let Some(u) = n.as_u64() {
                // Kubernetes decodes integers beyond int64 as float64.
                out.push_str(&float_json(u as f64));
            } else {
                out.push_str(&float_json(n.as_f64().unwrap_or(0.0)));
            }
        }
        Value::String(s) => string_json(s, out),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json_into(x, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                string_json(k, out);
                out.push(':');
                json_into(&m[k], out);
            }
            out.push('}');
        }
    }
}

/// `json.Marshal` of a decoded JSON value, as Go prints it.
pub(crate) fn json(v: &Value) -> String {
    let mut out = String::new();
    json_into(v, &mut out);
    out
}

/// Go's `%v` of a decoded JSON value (`map[a:1]`, `[x y]`, `<nil>`): how messages compare
/// values, and how the `JSONPath` of client-go prints a printer column's result.
pub fn value_v(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n
            .as_i64()
            .map_or_else(|| float_v(n.as_f64().unwrap_or(0.0)), |i| i.to_string()),
        Value::String(s) => s.clone(),
        Value::Array(a) => {
            let parts: Vec<String> = a.iter().map(value_v).collect();
            format!("[{}]", parts.join(" "))
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{k}:{}", value_v(&m[k])))
                .collect();
            format!("map[{}]", parts.join(" "))
        }
    }
}

/// A copy of `v` whose integral floats below 1e6 become integers, so `FieldError` prints them
/// as Go's `%v` does (`11`, not `11.0`).
pub(crate) fn printable(v: &Value) -> Value {
    match v {
        Value::Number(n) if n.as_i64().is_none() && n.as_u64().is_none() => {
            let f = n.as_f64().unwrap_or(0.0);
            if f.fract() == 0.0 && f.abs() < 1e6 {
                Value::from(f as i64)
            } else {
                v.clone()
            }
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_print_like_go() {
        let cases = [
            (10.0, "10"),
            (1.5, "1.5"),
            (1e21, "1e+21"),
            (1e6, "1e+06"),
            (123_456.0, "123456"),
            (1_234_567.0, "1.234567e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5, "-2.5"),
            (0.0, "0"),
        ];
        for (f, want) in cases {
            assert_eq!(float_v(f), want, "{f}");
        }
    }

    #[test]
    fn json_prints_like_go() {
        assert_eq!(float_json(2.0), "2");
        assert_eq!(float_json(1e21), "1e+21");
        assert_eq!(float_json(1e-7), "1e-7");
        assert_eq!(float_json(1_000_000.0), "1000000");
        assert_eq!(
            json(&json!({"b": 1, "a": "<x>"})),
            r#"{"a":"\u003cx\u003e","b":1}"#
        );
        assert_eq!(json(&json!([1.0, true, null])), "[1,true,null]");
    }
}
