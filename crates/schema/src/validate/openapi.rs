//! kube-openapi's JSON-schema validator (`pkg/validation/validate`) as apiextensions-apiserver
//! runs it: root path `""`, `in = "body"`, results converted by `kubeOpenAPIResultToFieldErrors`.
//!
//! The traversal mirrors `SchemaValidator.Validate` closely, including its match counting (which
//! picks the reported branch of a failed `anyOf`/`oneOf`) and its de-duplication of messages,
//! because both decide which errors a client sees.

use std::collections::HashSet;

use crd_core::field::go_quote;
use crd_core::{ErrorList, FieldError, Path};
use serde_json::{Map, Number, Value};

use super::{formats, gofmt, pattern};

/// How an error converts into a field error.
#[derive(Clone, Debug)]
enum Code {
    Required,
    Enum(Vec<String>),
    TooLong(i64),
    TooMany { actual: i64, max: i64 },
    InvalidType,
    Other,
    Composite,
}

/// One kube-openapi error: the validator path (`Name`), its code, value and message.
#[derive(Clone, Debug)]
struct VError {
    name: String,
    code: Code,
    value: Option<Value>,
    message: String,
}

impl VError {
    fn new(name: &str, code: Code, value: Option<Value>, message: String) -> Self {
        VError {
            name: name.to_string(),
            code,
            value,
            message,
        }
    }
}

/// kube-openapi's `Result`: errors kept unique by message, and a match count.
#[derive(Default)]
struct Res {
    errors: Vec<VError>,
    seen: HashSet<String>,
    matches: i64,
}

impl Res {
    fn fail(e: VError) -> Self {
        let mut r = Res::default();
        r.add(e);
        r
    }

    fn add(&mut self, e: VError) {
        if self.seen.insert(e.message.clone()) {
            self.errors.push(e);
        }
    }

    fn merge(&mut self, other: Res) {
        for e in other.errors {
            self.add(e);
        }
        self.matches += other.matches;
    }

    fn inc(&mut self) {
        self.matches += 1;
    }

    fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }

    /// `MergeAsWarnings`: the errors are dropped, the match count kept.
    fn ratcheted(self) -> Self {
        Res {
            matches: self.matches,
            ..Res::default()
        }
    }
}

/// A JSON number as Kubernetes decodes it: `int64` when it fits, else `float64`.
#[derive(Clone, Copy)]
enum Num {
    Int(i64),
    Float(f64),
}

fn num(n: &Number) -> Num {
    if let Some(i) = n.as_i64() {
        Num::Int(i)
    } else if let Some(u) = n.as_u64() {
        Num::Float(u as f64)
    } else {
        Num::Float(n.as_f64().unwrap_or(0.0))
    }
}

fn get<'a>(s: &'a Value, key: &str) -> Option<&'a Value> {
    s.as_object().and_then(|m| m.get(key))
}

fn flag(s: &Value, key: &str) -> bool {
    get(s, key).and_then(Value::as_bool).unwrap_or(false)
}

fn float_kw(s: &Value, key: &str) -> Option<f64> {
    get(s, key).and_then(Value::as_f64)
}

fn int_kw(s: &Value, key: &str) -> Option<i64> {
    let v = get(s, key)?;
    v.as_i64().or_else(|| v.as_f64().map(|f| f as i64))
}

fn schema_kw<'a>(s: &'a Value, key: &str) -> Option<&'a Value> {
    get(s, key).filter(|v| v.is_object())
}

fn schema_list<'a>(s: &'a Value, key: &str) -> &'a [Value] {
    get(s, key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The type list of a node: `[type]`, or `[integer, string]` for int-or-string.
fn types(s: &Value) -> Vec<&str> {
    if flag(s, "x-kubernetes-int-or-string") {
        return vec!["integer", "string"];
    }
    match get(s, "type").and_then(Value::as_str) {
        Some(t) if !t.is_empty() => vec![t],
        _ => Vec::new(),
    }
}

/// The `format` left after apiextensions strips the formats it does not support.
fn format(s: &Value) -> Option<&str> {
    get(s, "format")
        .and_then(Value::as_str)
        .filter(|f| formats::is_supported(f))
}

/// `swag.IsFloat64AJSONInteger`.
#[allow(clippy::float_cmp)] // exact comparisons are the point here, as in Go
fn is_json_integer(f: f64) -> bool {
    const MAX: f64 = 9_007_199_254_740_991.0;
    if !f.is_finite() || !(-MAX..=MAX).contains(&f) {
        return false;
    }
    if f.fract() == 0.0 {
        return true;
    }
    if f < 0.0 {
        return false;
    }
    let g = f.trunc();
    if g == 0.0 {
        return false;
    }
    (f - g).abs() / (f + g) < 1e-9
}

fn in_body(path: &str, rest: &str) -> String {
    format!("{path} in body {rest}")
}

fn type_error(path: &str, type_name: &str, value: &str) -> VError {
    VError::new(
        path,
        Code::InvalidType,
        Some(Value::from(value)),
        in_body(
            path,
            &format!("must be of type {type_name}: {}", go_quote(value)),
        ),
    )
}

/// The JSON type name and Go format kube-openapi infers for a value.
fn schema_info(data: &Value) -> (&'static str, &'static str) {
    match data {
        Value::Null => ("null", ""),
        Value::Bool(_) => ("boolean", ""),
        Value::String(_) => ("string", ""),
        Value::Number(n) => match num(n) {
            Num::Int(_) => ("integer", "int64"),
            Num::Float(_) => ("number", "float64"),
        },
        Value::Array(_) => ("array", ""),
        Value::Object(_) => ("object", ""),
    }
}

/// `typeValidator.Validate`.
fn check_type(s: &Value, data: &Value, path: &str) -> Res {
    let types = types(s);
    let fmt = format(s).unwrap_or("");
    if data.is_null() {
        if !types.is_empty() && !types.contains(&"null") && !flag(s, "nullable") {
            return Res::fail(type_error(path, &types.join(","), "null"));
        }
        let mut r = Res::default();
        r.inc();
        return r;
    }
    let (sch_type, data_fmt) = schema_info(data);
    let has = |t: &str| types.contains(&t);
    let is_float_int =
        sch_type == "number" && data.as_f64().is_some_and(is_json_integer) && has("integer");
    let is_int_float = sch_type == "integer" && has("number");
    let scalar_like = !data.is_string() && !data.is_array();
    if scalar_like
        && !fmt.is_empty()
        && !(has(sch_type) || data_fmt == fmt || is_float_int || is_int_float)
    {
        return Res::fail(type_error(path, fmt, data_fmt));
    }
    // A string or array with a format skips the type check unless the type is numeric.
    if !(has("number") || has("integer") || fmt.is_empty() || scalar_like) {
        let mut r = Res::default();
        r.inc();
        return r;
    }
    if !(has(sch_type) || is_float_int || is_int_float) {
        return Res::fail(type_error(path, &types.join(","), sch_type));
    }
    let mut r = Res::default();
    r.inc();
    r
}

/// `basicCommonValidator`: `enum`, compared with Go's reflect conversions.
fn check_enum(s: &Value, data: &Value, path: &str) -> Option<VError> {
    let values = get(s, "enum").and_then(Value::as_array)?;
    if values.is_empty() || values.iter().any(|e| enum_matches(data, e)) {
        return None;
    }
    let allowed = values
        .iter()
        .map(|v| match v {
            Value::String(s) => s.clone(),
            other => gofmt::json(other),
        })
        .collect();
    Some(VError::new(
        path,
        Code::Enum(allowed),
        Some(data.clone()),
        in_body(
            path,
            &format!(
                "should be one of {}",
                gofmt::value_v(&Value::Array(values.clone()))
            ),
        ),
    ))
}

#[allow(clippy::float_cmp)] // Go compares converted values exactly
fn enum_matches(data: &Value, allowed: &Value) -> bool {
    match (data, allowed) {
        (Value::String(got), Value::String(want)) => got == want,
        (Value::Number(got), Value::String(want)) => match num(got) {
            // Go converts an integer to the string of that code point.
            Num::Int(code) => {
                let ch = u32::try_from(code)
                    .ok()
                    .and_then(char::from_u32)
                    .unwrap_or('\u{fffd}');
                ch.to_string() == *want
            }
            Num::Float(_) => false,
        },
        (Value::Number(got), Value::Number(want)) => match (num(got), num(want)) {
            (Num::Int(x), Num::Int(y)) => x == y,
            (Num::Float(x), Num::Int(y)) => x as i64 == y,
            (Num::Int(x), Num::Float(y)) => x as f64 == y,
            (Num::Float(x), Num::Float(y)) => x == y,
        },
        (Value::Bool(got), Value::Bool(want)) => got == want,
        (Value::Array(_), Value::Array(_)) | (Value::Object(_), Value::Object(_)) => {
            data == allowed
        }
        _ => false,
    }
}

/// `stringValidator`: the first failing of maxLength, minLength, pattern.
fn check_string(s: &Value, data: &str, path: &str) -> Option<VError> {
    let value = || Some(Value::from(data));
    let runes = data.chars().count() as i64;
    if let Some(max) = int_kw(s, "maxLength")
        && runes > max
    {
        return Some(VError::new(
            path,
            Code::TooLong(max),
            value(),
            in_body(path, &format!("should be at most {max} chars long")),
        ));
    }
    if let Some(min) = int_kw(s, "minLength")
        && runes < min
    {
        return Some(VError::new(
            path,
            Code::Other,
            value(),
            in_body(path, &format!("should be at least {min} chars long")),
        ));
    }
    let p = get(s, "pattern").and_then(Value::as_str).unwrap_or("");
    if !p.is_empty() {
        match pattern::compile(p) {
            Err(e) => {
                return Some(VError::new(
                    path,
                    Code::Other,
                    value(),
                    in_body(
                        path,
                        &format!("should match '{p}, but pattern is invalid: {e}'"),
                    ),
                ));
            }
            Ok(re) if !re.is_match(data) => {
                return Some(VError::new(
                    path,
                    Code::Other,
                    value(),
                    in_body(path, &format!("should match '{p}'")),
                ));
            }
            Ok(_) => {}
        }
    }
    None
}

fn bound_error(path: &str, data: &Value, max: bool, exclusive: bool, bound: &str) -> Res {
    let rel = match (max, exclusive) {
        (true, false) => "less than or equal to",
        (true, true) => "less than",
        (false, false) => "greater than or equal to",
        (false, true) => "greater than",
    };
    Res::fail(VError::new(
        path,
        Code::Other,
        Some(data.clone()),
        in_body(path, &format!("should be {rel} {bound}")),
    ))
}

fn multiple_of_float(path: &str, data: &Value, v: f64, factor: f64) -> Res {
    if factor < 0.0 {
        return Res::fail(VError::new(
            path,
            Code::Other,
            Some(Value::from(factor)),
            format!(
                "factor MultipleOf declared for {path} must be positive: {}",
                gofmt::float_v(factor)
            ),
        ));
    }
    let mult = if factor < 1.0 {
        1.0 / factor * v
    } else {
        v / factor
    };
    if is_json_integer(mult) {
        return Res::default();
    }
    Res::fail(VError::new(
        path,
        Code::Other,
        Some(data.clone()),
        in_body(
            path,
            &format!("should be a multiple of {}", gofmt::float_v(factor)),
        ),
    ))
}

/// `numberValidator`: multipleOf, minimum, maximum, in native integer or float arithmetic.
fn check_number(s: &Value, n: &Number, data: &Value, path: &str) -> Res {
    let mut mult = Res::default();
    let mut min = Res::default();
    let mut max = Res::default();
    let ex_max = flag(s, "exclusiveMaximum");
    let ex_min = flag(s, "exclusiveMinimum");
    match num(n) {
        Num::Int(v) => {
            if let Some(f) = float_kw(s, "multipleOf") {
                let factor = f as i64;
                if factor < 0 {
                    mult = Res::fail(VError::new(
                        path,
                        Code::Other,
                        Some(Value::from(factor)),
                        format!("factor MultipleOf declared for {path} must be positive: {factor}"),
                    ));
                } else if factor == 0 {
                    // Go divides by zero here; compare as floats instead.
                    mult = multiple_of_float(path, data, v as f64, f);
                } else if v.checked_rem(factor).is_some_and(|r| r != 0) {
                    mult = Res::fail(VError::new(
                        path,
                        Code::Other,
                        Some(data.clone()),
                        in_body(path, &format!("should be a multiple of {factor}")),
                    ));
                }
            }
            if let Some(m) = float_kw(s, "maximum") {
                let m = m as i64;
                if (!ex_max && v > m) || (ex_max && v >= m) {
                    max = bound_error(path, data, true, ex_max, &m.to_string());
                }
            }
            if let Some(m) = float_kw(s, "minimum") {
                let m = m as i64;
                if (!ex_min && v < m) || (ex_min && v <= m) {
                    min = bound_error(path, data, false, ex_min, &m.to_string());
                }
            }
        }
        Num::Float(v) => {
            if let Some(f) = float_kw(s, "multipleOf") {
                mult = multiple_of_float(path, data, v, f);
            }
            if let Some(m) = float_kw(s, "maximum")
                && ((!ex_max && v > m) || (ex_max && v >= m))
            {
                max = bound_error(path, data, true, ex_max, &gofmt::float_v(m));
            }
            if let Some(m) = float_kw(s, "minimum")
                && ((!ex_min && v < m) || (ex_min && v <= m))
            {
                min = bound_error(path, data, false, ex_min, &gofmt::float_v(m));
            }
        }
    }
    let mut res = Res::default();
    res.merge(mult);
    res.merge(min);
    res.merge(max);
    res.inc();
    res
}

fn composite(message: String) -> VError {
    VError::new("", Code::Composite, None, message)
}

/// The root `metadata` schema reduced to what the CRD may constrain: `name` and `generateName`.
fn root_metadata_schema(s: &Value) -> Value {
    let mut out = Map::new();
    if let Some(t) = get(s, "type") {
        out.insert("type".to_string(), t.clone());
    }
    let mut props = Map::new();
    for k in ["name", "generateName"] {
        if let Some(p) = get(s, "properties").and_then(|p| get(p, k)) {
            props.insert(k.to_string(), p.clone());
        }
    }
    if !props.is_empty() {
        out.insert("properties".to_string(), Value::Object(props));
    }
    Value::Object(out)
}

fn list_type(s: &Value) -> &str {
    get(s, "x-kubernetes-list-type")
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn map_keys(s: &Value) -> Vec<&str> {
    schema_list(s, "x-kubernetes-list-map-keys")
        .iter()
        .filter_map(Value::as_str)
        .collect()
}

/// The old item of a list-type map with the same key values as `item`.
fn correlate_map_item<'a>(s: &Value, old: &'a [Value], item: &Value) -> Option<&'a Value> {
    let keys = map_keys(s);
    let item = item.as_object()?;
    if keys.is_empty() {
        return None;
    }
    let key: Vec<&Value> = keys.iter().map(|k| item.get(*k)).collect::<Option<_>>()?;
    old.iter().find(|o| {
        o.as_object().is_some_and(|o| {
            keys.iter()
                .zip(&key)
                .all(|(k, v)| o.get(*k).is_some_and(|ov| ov == *v))
        })
    })
}

/// `CorrelatedObject.CachedDeepEqual`: equality as ratcheting sees it (keys the schema does not
/// describe never compare equal; only list-type maps compare item by item).
fn deep_equal(new: &Value, old: &Value, s: &Value) -> bool {
    match (new, old) {
        (Value::Null, Value::Null) => true,
        (Value::Array(n), Value::Array(o)) => {
            if n.len() != o.len() {
                return false;
            }
            if n.is_empty() {
                return true;
            }
            if list_type(s) != "map" {
                return n == o;
            }
            let Some(items) = schema_kw(s, "items") else {
                return false;
            };
            n.iter().all(|item| {
                correlate_map_item(s, o, item).is_some_and(|oi| deep_equal(item, oi, items))
            })
        }
        (Value::Object(n), Value::Object(o)) => {
            if n.len() != o.len() {
                return false;
            }
            n.iter().all(|(k, v)| {
                let Some(ov) = o.get(k) else {
                    return false;
                };
                let sub = get(s, "properties")
                    .and_then(|p| get(p, k))
                    .or_else(|| schema_kw(s, "additionalProperties"));
                sub.is_some_and(|sub| deep_equal(v, ov, sub))
            })
        }
        (Value::Null | Value::Array(_) | Value::Object(_), _)
        | (_, Value::Null | Value::Array(_) | Value::Object(_)) => false,
        _ => new == old,
    }
}

/// One validation run; `ratcheting` enables old-value correlation.
struct Validator {
    ratcheting: bool,
}

impl Validator {
    /// A child validator (`SubPropertyValidator`/`SubIndexValidator`): correlated children are
    /// ratcheted, others validated plainly.
    fn child(&self, s: &Value, data: &Value, path: &str, old: Option<&Value>) -> Res {
        match old {
            Some(old) if self.ratcheting => {
                let res = self.value(s, data, path, Some(old), false);
                if !res.is_valid() && deep_equal(data, old, s) {
                    res.ratcheted()
                } else {
                    res
                }
            }
            _ => self.value(s, data, path, None, false),
        }
    }

    /// `SchemaValidator.Validate`.
    fn value(&self, s: &Value, data: &Value, path: &str, old: Option<&Value>, root: bool) -> Res {
        let mut result = Res::default();
        if data.is_null() {
            result.merge(check_type(s, data, path));
            if let Some(e) = check_enum(s, data, path) {
                result.merge(Res::fail(e));
            }
            return result;
        }
        if !types(s).is_empty() || format(s).is_some() {
            result.merge(check_type(s, data, path));
            result.inc();
        }
        result.merge(self.schema_props(s, data, path, old));
        result.inc();
        if let Value::String(st) = data {
            if let Some(e) = check_string(s, st, path) {
                result.merge(Res::fail(e));
            }
            result.inc();
            if let Some(f) = format(s) {
                if !formats::is_valid(f, st) {
                    result.merge(Res::fail(VError::new(
                        path,
                        Code::InvalidType,
                        Some(data.clone()),
                        in_body(path, &format!("must be of type {f}: {}", go_quote(st))),
                    )));
                }
                result.inc();
            }
        }
        if let Value::Number(n) = data {
            result.merge(check_number(s, n, data, path));
            result.inc();
        }
        if let Value::Array(items) = data {
            result.merge(self.slice(s, items, path, old));
            result.inc();
        }
        if let Some(e) = check_enum(s, data, path) {
            result.merge(Res::fail(e));
        }
        result.inc();
        if let Value::Object(m) = data {
            result.merge(self.object(s, m, path, old, root));
            result.inc();
        }
        result.inc();
        result
    }

    /// `schemaPropsValidator`: allOf, anyOf, oneOf, not.
    fn schema_props(&self, s: &Value, data: &Value, path: &str, old: Option<&Value>) -> Res {
        let mut main = Res::default();
        let any_of = schema_list(s, "anyOf");
        if !any_of.is_empty() {
            let mut best: Option<Res> = None;
            let mut first_success: Option<Res> = None;
            for alt in any_of {
                let r = self.value(alt, data, path, old, false);
                if r.is_valid() {
                    best = None;
                    first_success = Some(r);
                    break;
                }
                if best.as_ref().is_none_or(|b| r.matches > b.matches) {
                    best = Some(r);
                }
            }
            if first_success.is_none() {
                main.add(composite(format!(
                    "{} must validate at least one schema (anyOf)",
                    go_quote(path)
                )));
            }
            if let Some(b) = best {
                main.merge(b);
            } else if let Some(f) = first_success {
                main.merge(f);
            }
        }
        let one_of = schema_list(s, "oneOf");
        if !one_of.is_empty() {
            let mut best: Option<Res> = None;
            let mut first_success: Option<Res> = None;
            let mut validated = 0;
            for alt in one_of {
                let r = self.value(alt, data, path, old, false);
                if r.is_valid() {
                    validated += 1;
                    best = None;
                    if first_success.is_none() {
                        first_success = Some(r);
                    }
                    continue;
                }
                if validated == 0 && best.as_ref().is_none_or(|b| r.matches > b.matches) {
                    best = Some(r);
                }
            }
            if validated == 1 {
                if let Some(f) = first_success {
                    main.merge(f);
                }
            } else {
                let extra = if validated == 0 {
                    "Found none valid".to_string()
                } else {
                    format!("Found {validated} valid alternatives")
                };
                main.add(composite(format!(
                    "{} must validate one and only one schema (oneOf). {extra}",
                    go_quote(path)
                )));
                if let Some(b) = best {
                    main.merge(b);
                }
            }
        }
        let all_of = schema_list(s, "allOf");
        if !all_of.is_empty() {
            let mut validated = 0;
            for alt in all_of {
                let r = self.value(alt, data, path, old, false);
                if r.is_valid() {
                    validated += 1;
                }
                main.merge(r);
            }
            if validated != all_of.len() {
                let extra = if validated == 0 {
                    ". None validated"
                } else {
                    ""
                };
                main.add(composite(format!(
                    "{} must validate all the schemas (allOf){extra}",
                    go_quote(path)
                )));
            }
        }
        if let Some(not) = schema_kw(s, "not")
            && self.value(not, data, path, old, false).is_valid()
        {
            main.add(composite(format!(
                "{} must not validate the schema (not)",
                go_quote(path)
            )));
        }
        main.inc();
        main
    }

    /// `schemaSliceValidator`.
    fn slice(&self, s: &Value, items: &[Value], path: &str, old: Option<&Value>) -> Res {
        let mut result = Res::default();
        if let Some(item_schema) = schema_kw(s, "items") {
            let old_items = old.and_then(Value::as_array);
            for (i, item) in items.iter().enumerate() {
                let old_item = match old_items {
                    Some(o) if self.ratcheting && list_type(s) == "map" => {
                        correlate_map_item(s, o, item)
                    }
                    _ => None,
                };
                result.merge(self.child(item_schema, item, &format!("{path}[{i}]"), old_item));
            }
        }
        let size = items.len() as i64;
        if let Some(min) = int_kw(s, "minItems")
            && size < min
        {
            result.add(VError::new(
                path,
                Code::Other,
                Some(Value::from(size)),
                in_body(path, &format!("should have at least {min} items")),
            ));
        }
        if let Some(max) = int_kw(s, "maxItems")
            && size > max
        {
            result.add(VError::new(
                path,
                Code::TooMany { actual: size, max },
                Some(Value::from(size)),
                in_body(path, &format!("should have at most {max} items")),
            ));
        }
        if flag(s, "uniqueItems")
            && items
                .iter()
                .enumerate()
                .any(|(i, x)| items[..i].contains(x))
        {
            result.add(VError::new(
                path,
                Code::Other,
                None,
                in_body(path, "shouldn't contain duplicates"),
            ));
        }
        result.inc();
        result
    }

    /// `objectValidator`.
    fn object(
        &self,
        s: &Value,
        m: &Map<String, Value>,
        path: &str,
        old: Option<&Value>,
        root: bool,
    ) -> Res {
        let n = m.len() as i64;
        if let Some(min) = int_kw(s, "minProperties")
            && n < min
        {
            return Res::fail(VError::new(
                path,
                Code::Other,
                Some(Value::from(n)),
                in_body(path, &format!("should have at least {min} properties")),
            ));
        }
        if let Some(max) = int_kw(s, "maxProperties")
            && n > max
        {
            return Res::fail(VError::new(
                path,
                Code::TooMany { actual: n, max },
                Some(Value::from(n)),
                in_body(path, &format!("should have at most {max} properties")),
            ));
        }
        let props = get(s, "properties").and_then(Value::as_object);
        let is_prop = |k: &str| props.is_some_and(|p| p.contains_key(k));
        let old_map = old.and_then(Value::as_object);
        let correlate = |k: &str| -> Option<&Value> {
            if path.is_empty() && (k == "kind" || k == "apiVersion") {
                return None;
            }
            old_map.and_then(|o| o.get(k))
        };
        let mut keys: Vec<&String> = m.keys().collect();
        keys.sort();
        let mut res = Res::default();
        match get(s, "additionalProperties") {
            Some(Value::Bool(false)) => {
                for k in &keys {
                    if !is_prop(k) {
                        res.add(VError::new(
                            path,
                            Code::Other,
                            Some(Value::from(k.as_str())),
                            format!("{path}.{k} in body is a forbidden property"),
                        ));
                    }
                }
            }
            Some(ap @ Value::Object(_)) => {
                for k in &keys {
                    if !is_prop(k) {
                        res.merge(self.child(ap, &m[*k], &format!("{path}.{k}"), correlate(k)));
                    }
                }
            }
            _ => {}
        }
        if let Some(props) = props {
            let mut names: Vec<&String> = props.keys().collect();
            names.sort();
            for name in names {
                let Some(v) = m.get(name) else {
                    continue;
                };
                let child_path = if path.is_empty() {
                    name.clone()
                } else {
                    format!("{path}.{name}")
                };
                let schema = &props[name];
                if root && name == "metadata" {
                    let reduced = root_metadata_schema(schema);
                    res.merge(self.child(&reduced, v, &child_path, correlate(name)));
                } else {
                    res.merge(self.child(schema, v, &child_path, correlate(name)));
                }
            }
        }
        for k in schema_list(s, "required").iter().filter_map(Value::as_str) {
            if !m.contains_key(k) {
                let name = format!("{path}.{k}");
                let message = in_body(&name, "is required");
                res.add(VError::new(&name, Code::Required, None, message));
            }
        }
        res
    }
}

fn to_field_errors(res: Res, fld: &Path) -> ErrorList {
    let mut out = ErrorList::new();
    for e in res.errors {
        let err_path = if e.name.is_empty() || e.name == "." {
            fld.clone()
        } else {
            fld.child(e.name.strip_prefix('.').unwrap_or(&e.name))
        };
        let value = || e.value.as_ref().map_or(Value::from(""), gofmt::printable);
        out.push(match e.code {
            Code::Required => FieldError::required(&err_path, ""),
            Code::Enum(ref allowed) => {
                let allowed: Vec<&str> = allowed.iter().map(String::as_str).collect();
                let v = e.value.as_ref().map_or(Value::Null, gofmt::printable);
                FieldError::not_supported(&err_path, v, &allowed)
            }
            Code::TooLong(max) => {
                FieldError::too_long(&err_path, usize::try_from(max).unwrap_or(0))
            }
            Code::TooMany { actual, max } => FieldError::too_many(
                &err_path,
                usize::try_from(actual).unwrap_or(0),
                usize::try_from(max).unwrap_or(0),
            ),
            Code::InvalidType => FieldError::type_invalid(&err_path, value(), e.message.clone()),
            Code::Other => FieldError::invalid(&err_path, value(), e.message.clone()),
            Code::Composite => FieldError::invalid(fld, "", e.message.clone()),
        });
    }
    out
}

/// Validates `data` against `schema` as kube-apiserver does, errors prefixed with `fld`.
/// `old` enables ratcheting (errors in parts equal to the old value are dropped); `root` applies
/// the resource-root rule that only `metadata.name`/`generateName` constraints are checked.
pub(crate) fn validate(
    schema: &Value,
    data: &Value,
    old: Option<&Value>,
    fld: &Path,
    root: bool,
) -> ErrorList {
    let v = Validator {
        ratcheting: old.is_some(),
    };
    let res = match old {
        Some(old) => {
            let res = v.value(schema, data, "", Some(old), root);
            if !res.is_valid() && deep_equal(data, old, schema) {
                res.ratcheted()
            } else {
                res
            }
        }
        None => v.value(schema, data, "", None, root),
    };
    to_field_errors(res, fld)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_integers() {
        assert!(is_json_integer(3.0));
        assert!(is_json_integer(-3.0));
        assert!(!is_json_integer(2.5));
        assert!(!is_json_integer(-2.5));
        assert!(!is_json_integer(0.5));
        assert!(is_json_integer(1e15 + 0.5));
        assert!(!is_json_integer(1e300));
        assert!(!is_json_integer(f64::NAN));
    }
}
