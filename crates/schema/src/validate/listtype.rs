//! `x-kubernetes-list-type` `set` and `map` uniqueness (apiextensions `schema/listtype`):
//! each duplicate is reported once, at its second occurrence.

use crd_core::{ErrorList, FieldError, Path};
use serde_json::{Map, Value};

fn get<'a>(s: &'a Value, key: &str) -> Option<&'a Value> {
    s.as_object().and_then(|m| m.get(key))
}

/// `ValidateListSetsAndMaps` for any value: objects recurse through `additionalProperties` and
/// `properties`, arrays through `items`.
pub(crate) fn validate(path: &Path, s: &Value, x: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    walk(path, s, x, &mut errs);
    errs
}

fn sorted(m: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut v: Vec<(&String, &Value)> = m.iter().collect();
    v.sort_by(|a, b| a.0.cmp(b.0));
    v
}

fn walk(path: &Path, s: &Value, x: &Value, errs: &mut ErrorList) {
    match x {
        Value::Object(m) => {
            if let Some(ap) = get(s, "additionalProperties").filter(|a| a.is_object()) {
                for (k, v) in sorted(m) {
                    walk(&path.key(k), ap, v, errs);
                }
            }
            if let Some(props) = get(s, "properties").and_then(Value::as_object) {
                for (k, v) in sorted(m) {
                    if let Some(sub) = props.get(k.as_str()) {
                        walk(&path.child(k), sub, v, errs);
                    }
                }
            }
        }
        Value::Array(items) => array(path, s, items, errs),
        _ => {}
    }
}

fn array(path: &Path, s: &Value, items: &[Value], errs: &mut ErrorList) {
    match get(s, "x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => {
            for i in non_unique(items) {
                errs.push(FieldError::duplicate(&path.index(i), items[i].clone()));
            }
        }
        Some("map") => errs.extend(list_map(path, s, items)),
        _ => {}
    }
    if let Some(item_schema) = get(s, "items").filter(|i| i.is_object()) {
        for (i, v) in items.iter().enumerate() {
            walk(&path.index(i), item_schema, v, errs);
        }
    }
}

/// The index of the second occurrence of each value that occurs more than once.
fn non_unique(items: &[Value]) -> Vec<usize> {
    let mut out = Vec::new();
    for (i, x) in items.iter().enumerate() {
        let earlier = items[..i].iter().filter(|y| *y == x).count();
        if earlier == 1 {
            out.push(i);
        }
    }
    out
}

fn list_map(path: &Path, s: &Value, items: &[Value]) -> ErrorList {
    let mut errs = ErrorList::new();
    if let Some((i, x)) = items
        .iter()
        .enumerate()
        .find(|(_, x)| !x.is_null() && !x.is_object())
    {
        errs.push(FieldError::invalid(
            &path.index(i),
            x.clone(),
            "must be an object for an array of list-type map",
        ));
        return errs;
    }
    if items.len() <= 1 {
        return errs;
    }
    let keys: Vec<&str> = get(s, "x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    // The key of each item: the map-key fields it has (an absent field is no key at all).
    let key_of = |x: &Value| -> Map<String, Value> {
        let mut key = Map::new();
        if let Some(o) = x.as_object() {
            for k in &keys {
                if let Some(v) = o.get(*k) {
                    key.insert((*k).to_string(), v.clone());
                }
            }
        }
        key
    };
    let item_keys: Vec<Value> = items.iter().map(|x| Value::Object(key_of(x))).collect();
    for i in non_unique(&item_keys) {
        errs.push(FieldError::duplicate(&path.index(i), item_keys[i].clone()));
    }
    errs
}
