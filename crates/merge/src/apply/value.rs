//! Scalar and tree comparisons on JSON values as structured-merge-diff's `value` package defines
//! them: a total order across types (numbers, strings, booleans, lists, maps, null), numeric
//! equality across integers and floats, and the human-readable form used in field paths.

use std::cmp::Ordering;
use std::fmt::Write as _;

use serde_json::{Map, Value};

/// A number as SMD sees it: an integer or a float.
enum Num {
    Int(i128),
    Float(f64),
}

fn num(n: &serde_json::Number) -> Num {
    if let Some(i) = n.as_i64() {
        Num::Int(i128::from(i))
    } else if let Some(u) = n.as_u64() {
        Num::Int(i128::from(u))
    } else {
        Num::Float(n.as_f64().unwrap_or(0.0))
    }
}

fn float_cmp(a: f64, b: f64) -> Ordering {
    a.partial_cmp(&b).unwrap_or(Ordering::Equal)
}

fn num_cmp(a: &serde_json::Number, b: &serde_json::Number) -> Ordering {
    match (num(a), num(b)) {
        (Num::Int(x), Num::Int(y)) => x.cmp(&y),
        (Num::Int(x), Num::Float(y)) => float_cmp(x as f64, y),
        (Num::Float(x), Num::Int(y)) => float_cmp(x, y as f64),
        (Num::Float(x), Num::Float(y)) => float_cmp(x, y),
    }
}

/// The rank of a value's type in SMD's total order.
fn rank(v: &Value) -> u8 {
    match v {
        Value::Number(_) => 0,
        Value::String(_) => 1,
        Value::Bool(_) => 2,
        Value::Array(_) => 3,
        Value::Object(_) => 4,
        Value::Null => 5,
    }
}

/// Returns SMD's total order of two values (`value.Compare`): numbers compare numerically
/// whatever their representation, then strings, booleans, lists (lexically), maps (by sorted
/// keys, then values) and null.
pub(crate) fn compare(lhs: &Value, rhs: &Value) -> Ordering {
    match (lhs, rhs) {
        (Value::Number(xs), Value::Number(ys)) => num_cmp(xs, ys),
        (Value::String(xs), Value::String(ys)) => xs.cmp(ys),
        (Value::Bool(xs), Value::Bool(ys)) => xs.cmp(ys),
        (Value::Array(xs), Value::Array(ys)) => {
            for (li, ri) in xs.iter().zip(ys) {
                let ord = compare(li, ri);
                if ord != Ordering::Equal {
                    return ord;
                }
            }
            xs.len().cmp(&ys.len())
        }
        (Value::Object(xs), Value::Object(ys)) => map_compare(xs, ys),
        (Value::Null, Value::Null) => Ordering::Equal,
        _ => rank(lhs).cmp(&rank(rhs)),
    }
}

fn map_compare(x: &Map<String, Value>, y: &Map<String, Value>) -> Ordering {
    let mut xk: Vec<&String> = x.keys().collect();
    let mut yk: Vec<&String> = y.keys().collect();
    xk.sort();
    yk.sort();
    for (l, r) in xk.iter().zip(&yk) {
        let c = l.cmp(r);
        if c != Ordering::Equal {
            return c;
        }
        let c = compare(&x[l.as_str()], &y[r.as_str()]);
        if c != Ordering::Equal {
            return c;
        }
    }
    xk.len().cmp(&yk.len())
}

/// Returns whether two values are equal as SMD's `value.Equals` decides: `1` equals `1.0`.
pub(crate) fn equals(lhs: &Value, rhs: &Value) -> bool {
    match (lhs, rhs) {
        (Value::Number(xs), Value::Number(ys)) => num_cmp(xs, ys) == Ordering::Equal,
        (Value::Array(xs), Value::Array(ys)) => {
            xs.len() == ys.len() && xs.iter().zip(ys).all(|(li, ri)| equals(li, ri))
        }
        (Value::Object(xs), Value::Object(ys)) => {
            xs.len() == ys.len()
                && xs
                    .iter()
                    .all(|(k, v)| ys.get(k).is_some_and(|w| equals(v, w)))
        }
        _ => lhs == rhs,
    }
}

/// Writes a value as SMD's `value.ToString` does: strings Go-quoted, lists `[a,b]`, maps as
/// `k=v` pairs.
pub(crate) fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => {
            let _ = write!(out, "{b}");
        }
        Value::Number(n) => match num(n) {
            Num::Int(i) => {
                let _ = write!(out, "{i}");
            }
            Num::Float(f) => write_go_float(out, f),
        },
        Value::String(s) => go_quote(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(m) => {
            for (k, v) in m {
                out.push_str(k);
                out.push('=');
                write_value(out, v);
            }
        }
    }
}

/// Writes a float as Go's `%v` does for the common cases (`1.5`, `2`, `1e+21`).
fn write_go_float(out: &mut String, f: f64) {
    let abs = f.abs();
    if abs != 0.0 && !(1e-4..1e21).contains(&abs) {
        let s = format!("{f:e}");
        // Rust writes `1e21`/`1.5e-7`; Go writes `1e+21`/`1.5e-07`.
        if let Some((mant, exp)) = s.split_once('e') {
            let (sign, digits) = match exp.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', exp),
            };
            let _ = write!(out, "{mant}e{sign}{digits:0>2}");
            return;
        }
        out.push_str(&s);
    } else {
        let _ = write!(out, "{f}");
    }
}

/// Quotes a string as Go's `%q` (`strconv.Quote`) does.
pub(crate) fn go_quote(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn total_order_across_types() {
        let ordered = [
            json!(-1),
            json!(1),
            json!(1.5),
            json!(2),
            json!("a"),
            json!("b"),
            json!(false),
            json!(true),
            json!([1]),
            json!([1, 2]),
            json!({"a": 1}),
            json!({"a": 2}),
            json!(null),
        ];
        for w in ordered.windows(2) {
            assert_eq!(compare(&w[0], &w[1]), Ordering::Less, "{} < {}", w[0], w[1]);
            assert_eq!(compare(&w[1], &w[0]), Ordering::Greater);
        }
        assert_eq!(compare(&json!(1), &json!(1.0)), Ordering::Equal);
        assert!(equals(&json!({"a": [1]}), &json!({"a": [1.0]})));
        assert!(!equals(&json!({"a": 1}), &json!({"b": 1})));
    }

    #[test]
    fn to_string_forms() {
        for (v, want) in [
            (json!("x\"y"), r#""x\"y""#),
            (json!(80), "80"),
            (json!(1.5), "1.5"),
            (json!(1e21), "1e+21"),
            (json!(true), "true"),
            (json!(null), "null"),
            (json!([1, "a"]), r#"[1,"a"]"#),
        ] {
            let mut s = String::new();
            write_value(&mut s, &v);
            assert_eq!(s, want);
        }
    }
}
