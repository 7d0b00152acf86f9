//! Strategic merge patch for built-in kinds, as kube-apiserver 1.32–1.34 applies it
//! (`k8s.io/apimachinery/pkg/util/strategicpatch` `StrategicMergeMapPatch` with
//! `MergeParallelList` and `IgnoreUnmatchedNulls`, errors mapped by `handlers/patch.go`
//! `interpretStrategicMergePatchError`).
//!
//! Upstream types the patch with Go struct tags; here the type is a schema given as
//! `JSONSchemaProps` JSON (`properties`, `additionalProperties`, `items`) carrying
//! `x-kubernetes-patch-strategy` and `x-kubernetes-patch-merge-key` (as in the OpenAPI the
//! apiserver publishes). Without those, `x-kubernetes-list-type: map` (merge on the first
//! `x-kubernetes-list-map-keys` entry) and `set` (merge) are used as fallbacks; any other list is
//! replaced, as upstream replaces lists without a strategy.
//!
//! Directives: `$patch: replace|delete|merge` (on maps and list elements), `$retainKeys`,
//! `$deleteFromPrimitiveList/<field>` and `$setElementOrder/<field>`, with upstream's errors
//! (400 for malformed directives, 422 for lists of lists, 500 with an empty reason for the
//! errors upstream does not map).
//!
//! Order of merged lists, as upstream: `$setElementOrder` first, then the patch list's order,
//! then the stored order; items the patch names come before the stored-only items that follow
//! them in the stored list (so without `$setElementOrder` a new item lands first, not last).
//! Nulls in values the original lacks are dropped, maps carrying `$patch` in such values vanish;
//! other directives inside new values are kept, as upstream keeps them (typed decoding drops
//! them there).

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use crate::json_patch::{FieldValidation, PatchError, Strict, go_kind, parse};

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_PREFIX: &str = "$deleteFromPrimitiveList";
const ORDER_PREFIX: &str = "$setElementOrder";

static NO_SCHEMA: Value = Value::Null;

/// Applies a strategic merge patch body to `doc`, typed by `schema` (`JSONSchemaProps` JSON of the
/// kind), with the default `fieldValidation`, dropping the strict-decoding problems. On error
/// `doc` is left unspecified: callers patch a copy of the stored object.
pub fn apply(doc: &mut Value, patch: &[u8], schema: &Value) -> Result<(), PatchError> {
    apply_with(doc, patch, schema, FieldValidation::Warn).map(drop)
}

/// Applies a strategic merge patch body to `doc`. `validation` changes no error text (upstream
/// reports decode errors of both decoders alike) but `Warn`/`Strict` return the body's
/// strict-decoding problems (`duplicate field "x"`) for warnings or
/// [`crate::json_patch::strict_decoding_error`].
pub fn apply_with(
    doc: &mut Value,
    patch: &[u8],
    schema: &Value,
    validation: FieldValidation,
) -> Result<Vec<String>, PatchError> {
    let mode = if validation == FieldValidation::Ignore {
        Strict::Off
    } else {
        Strict::Map
    };
    let (patch, problems) = parse(patch, mode).map_err(PatchError::bad_request)?;
    let patch = match patch {
        Value::Null => return Ok(problems),
        Value::Object(map) => map,
        other => {
            return Err(PatchError::bad_request(format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                go_kind(&other)
            )));
        }
    };
    let original = match std::mem::take(doc) {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let merged = merge_map(original, patch, schema).map_err(SmpError::into_patch_error)?;
    *doc = Value::Object(merged);
    Ok(problems)
}

/// The errors of `strategicpatch`, by how the apiserver reports them.
enum SmpError {
    /// One of the `mergepatch.ErrBadPatchFormat…` sentinels: 400.
    BadRequest(&'static str),
    /// `mergepatch.ErrNoListOfLists`: 422 without detail.
    Unprocessable(&'static str),
    /// Any other error: returned raw, so 500 with an empty reason.
    Other(String),
}

impl SmpError {
    fn into_patch_error(self) -> PatchError {
        match self {
            Self::BadRequest(m) => PatchError::bad_request(m),
            Self::Unprocessable(m) => PatchError::rejected(m),
            Self::Other(m) => PatchError::internal(m),
        }
    }
}

type Result<T, E = SmpError> = std::result::Result<T, E>;

const BAD_PRIMITIVE_LIST: SmpError = SmpError::BadRequest("invalid patch format of primitive list");
const BAD_RETAIN_KEYS: SmpError = SmpError::BadRequest("invalid patch format of retainKeys");
const BAD_ORDER_LIST: SmpError =
    SmpError::BadRequest("invalid patch format of setElementOrder list");

/// The schema that carries a schema's structure: itself, or the single `allOf` entry that
/// OpenAPI v3 uses to wrap a `$ref`'d type (resolved by the caller).
fn structural(schema: &Value) -> &Value {
    let has_structure = ["properties", "additionalProperties", "items"]
        .iter()
        .any(|k| schema.get(k).is_some());
    match schema.get("allOf").and_then(Value::as_array) {
        Some(all) if !has_structure && all.len() == 1 => &all[0],
        _ => schema,
    }
}

/// The schema of member `key` of an object schema.
fn member_schema<'a>(schema: &'a Value, key: &str) -> &'a Value {
    let schema = structural(schema);
    schema
        .get("properties")
        .and_then(|p| p.get(key))
        .or_else(|| schema.get("additionalProperties").filter(|a| a.is_object()))
        .unwrap_or(&NO_SCHEMA)
}

/// The schema of a list's elements.
fn items_schema(field: &Value) -> &Value {
    structural(field).get("items").unwrap_or(&NO_SCHEMA)
}

/// The patch strategy (without `retainKeys`) and merge key of a field
/// (`extractRetainKeysPatchStrategy` on the field's tags, with list-type fallbacks).
fn patch_meta(field: &Value) -> Result<(&str, &str)> {
    let merge_key = field
        .get("x-kubernetes-patch-merge-key")
        .and_then(Value::as_str);
    if let Some(strategy) = field
        .get("x-kubernetes-patch-strategy")
        .and_then(Value::as_str)
    {
        let parts: Vec<&str> = strategy.split(',').collect();
        let strategy = match parts.as_slice() {
            [] | ["retainKeys"] => "",
            [one] => one,
            ["retainKeys", other] | [other, "retainKeys"] => other,
            _ => {
                return Err(SmpError::Other(format!(
                    "unexpected patch strategy: [{}]",
                    parts.join(" ")
                )));
            }
        };
        return Ok((strategy, merge_key.unwrap_or("")));
    }
    if let Some(key) = merge_key {
        return Ok(("", key));
    }
    match field.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("map") => Ok((
            "merge",
            field
                .get("x-kubernetes-list-map-keys")
                .and_then(|k| k.get(0))
                .and_then(Value::as_str)
                .unwrap_or(""),
        )),
        Some("set") => Ok(("merge", "")),
        _ => Ok(("", "")),
    }
}

/// `mergeMap`.
fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    schema: &Value,
) -> Result<Map<String, Value>> {
    if let Some(directive) = patch.get(DIRECTIVE) {
        return match directive.as_str() {
            Some("replace") => {
                patch.remove(DIRECTIVE);
                Ok(patch)
            }
            Some("delete") => Ok(Map::new()),
            _ => Err(bad_patch_type(directive, &patch)),
        };
    }
    apply_retain_keys(&mut original, &mut patch)?;
    merge_ordered_lists(&mut original, &mut patch, schema)?;

    for (key, patch_v) in patch {
        let (key, delete_list) = if key.starts_with(DELETE_PREFIX) {
            (extract_key(&key, DELETE_PREFIX)?, true)
        } else {
            (key, false)
        };
        if patch_v.is_null() {
            original.remove(&key);
            continue;
        }
        let field = member_schema(schema, &key);
        let Some(cur) = original.get_mut(&key) else {
            if !delete_list {
                add_new(&mut original, key, patch_v);
            }
            continue;
        };
        if !same_go_type(cur, &patch_v) {
            if !delete_list {
                add_new(&mut original, key, patch_v);
            }
            continue;
        }
        match (cur, patch_v) {
            (cur @ Value::Object(_), Value::Object(p)) => {
                let (strategy, _) = patch_meta(field)?;
                if strategy == "replace" {
                    *cur = Value::Object(p);
                } else {
                    let o = take_map(cur);
                    *cur = Value::Object(merge_map(o, p, field)?);
                }
            }
            (cur @ Value::Array(_), Value::Array(p)) => {
                let (strategy, merge_key) = patch_meta(field)?;
                if strategy == "merge" || delete_list {
                    let o = take_array(cur);
                    let items = items_schema(field);
                    *cur = Value::Array(merge_slice(o, p, items, merge_key, delete_list)?);
                } else {
                    *cur = Value::Array(p);
                }
            }
            (_, p) => match remove_directives(p) {
                Some(v) => {
                    original.insert(key, v);
                }
                None => {
                    original.remove(&key);
                }
            },
        }
    }
    Ok(original)
}

/// A value for a key the original lacks (or holds with another type): nulls discarded,
/// maps carrying `$patch` dropped.
fn add_new(original: &mut Map<String, Value>, key: String, mut v: Value) {
    discard_nulls(&mut v);
    match remove_directives(v) {
        Some(v) => {
            original.insert(key, v);
        }
        None => {
            original.remove(&key);
        }
    }
}

fn take_map(v: &mut Value) -> Map<String, Value> {
    match std::mem::take(v) {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn take_array(v: &mut Value) -> Vec<Value> {
    match std::mem::take(v) {
        Value::Array(a) => a,
        _ => Vec::new(),
    }
}

/// Whether two values have the same Go type after decoding (`int64` and `float64` differ).
fn same_go_type(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.is_f64() == y.is_f64(),
        _ => std::mem::discriminant(a) == std::mem::discriminant(b),
    }
}

/// `discardNullValuesFromPatch`.
fn discard_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, v| !v.is_null());
            m.values_mut().for_each(discard_nulls);
        }
        Value::Array(a) => a.iter_mut().for_each(discard_nulls),
        _ => {}
    }
}

/// `removeDirectives`: maps carrying `$patch` vanish (`None` at the top).
fn remove_directives(v: Value) -> Option<Value> {
    match v {
        Value::Object(m) => {
            if m.contains_key(DIRECTIVE) {
                return None;
            }
            Some(Value::Object(
                m.into_iter()
                    .filter_map(|(k, v)| remove_directives(v).map(|v| (k, v)))
                    .collect(),
            ))
        }
        Value::Array(a) => Some(Value::Array(
            a.into_iter().filter_map(remove_directives).collect(),
        )),
        other => Some(other),
    }
}

/// `applyRetainKeysDirective`.
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<()> {
    let Some(retain) = patch.remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let Value::Array(list) = retain else {
        return Err(BAD_RETAIN_KEYS);
    };
    let keep: HashSet<&str> = list.iter().filter_map(Value::as_str).collect();
    for (k, v) in patch.iter() {
        if v.is_null() || k.starts_with(DELETE_PREFIX) || k.starts_with(ORDER_PREFIX) {
            continue;
        }
        if !keep.contains(k.as_str()) {
            return Err(BAD_RETAIN_KEYS);
        }
    }
    original.retain(|k, _| keep.contains(k.as_str()));
    Ok(())
}

/// `extractKey`: the field a `$deleteFromPrimitiveList/…` or `$setElementOrder/…` key names.
fn extract_key(key: &str, prefix: &str) -> Result<String> {
    match key.split_once('/') {
        Some((p, rest)) if p == prefix => Ok(rest.to_string()),
        _ if prefix == DELETE_PREFIX => Err(BAD_PRIMITIVE_LIST),
        _ => Err(BAD_ORDER_LIST),
    }
}

/// `mergePatchIntoOriginal`: lists with a `$setElementOrder` directive, merged and ordered.
fn merge_ordered_lists(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    schema: &Value,
) -> Result<()> {
    let keys: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(ORDER_PREFIX))
        .cloned()
        .collect();
    for key in keys {
        let Some(order) = patch.remove(&key) else {
            continue;
        };
        let Value::Array(order) = order else {
            return Err(bad_arg_type("[]interface {}", &order));
        };
        let field_key = extract_key(&key, ORDER_PREFIX)?;
        let original_list = match original.get(&field_key) {
            None => None,
            Some(Value::Array(a)) => Some(a),
            Some(other) => return Err(bad_arg_type("[]interface {}", other)),
        };
        let patch_list = match patch.get(&field_key) {
            None => None,
            Some(Value::Array(a)) => Some(a),
            Some(other) => return Err(bad_arg_type("[]interface {}", other)),
        };
        let field = member_schema(schema, &field_key);
        let (strategy, merge_key) = patch_meta(field)?;
        validate_order(patch_list.map_or(&[][..], Vec::as_slice), &order, merge_key)?;
        let kind = element_kind(
            original_list.map_or(&[][..], Vec::as_slice),
            patch_list.map_or(&[][..], Vec::as_slice),
        );
        if kind.as_ref().is_ok_and(|k| *k == Kind::Map) {
            for v in &order {
                let Value::Object(m) = v else {
                    return Err(bad_arg_type("map[string]interface {}", v));
                };
                if !m.contains_key(merge_key) {
                    return Err(no_merge_key(m, merge_key));
                }
            }
        }
        let server_index = match (&kind, original_list) {
            (Ok(k), Some(list)) => first_index(list, merge_key, *k),
            _ => HashMap::new(),
        };
        let merged = match (original.remove(&field_key), patch.remove(&field_key)) {
            (Some(Value::Array(o)), None) => o,
            (None, Some(Value::Array(p))) => match remove_directives(Value::Array(p)) {
                Some(Value::Array(p)) => p,
                _ => Vec::new(),
            },
            (Some(Value::Array(o)), Some(Value::Array(p))) => {
                if strategy == "merge" {
                    let items = items_schema(field);
                    merge_slice(o, p, items, merge_key, false)?
                } else {
                    p
                }
            }
            _ => continue,
        };
        let kind = kind?;
        let order_index = first_index(&order, merge_key, kind);
        let (in_order, server_only) = partition(merged, &order_index, merge_key, kind)?;
        let both = normalize_order(
            in_order,
            server_only,
            &order_index,
            &server_index,
            merge_key,
            kind,
        )?;
        original.insert(field_key, Value::Array(both));
    }
    Ok(())
}

/// `validatePatchWithSetOrderList`: the patch list's items appear in the order list, in order.
fn validate_order(patch_list: &[Value], order: &[Value], merge_key: &str) -> Result<()> {
    if order.is_empty() || patch_list.is_empty() {
        return Ok(());
    }
    let non_delete: Vec<&Value> = if merge_key.is_empty() {
        patch_list.iter().collect()
    } else {
        let mut out = Vec::with_capacity(patch_list.len());
        for v in patch_list {
            let Value::Object(m) = v else {
                return Err(bad_arg_type("map[string]interface {}", v));
            };
            if m.get(DIRECTIVE).and_then(Value::as_str) != Some("delete") {
                out.push(v);
            }
        }
        out
    };
    let (mut pi, mut oi) = (0, 0);
    while pi < non_delete.len() && oi < order.len() {
        let item = non_delete[pi];
        if item.as_object().is_some_and(|m| m.contains_key(DIRECTIVE)) {
            pi += 1;
            continue;
        }
        if merge_key_equal(item, &order[oi], merge_key)? {
            pi += 1;
        }
        oi += 1;
    }
    if pi < non_delete.len() && oi >= order.len() {
        return Err(SmpError::Other(format!(
            "the order in patch list:\n{}\n doesn't match {ORDER_PREFIX} list:\n{}",
            go_v(&Value::Array(patch_list.to_vec())),
            go_v(&Value::Array(order.to_vec()))
        )));
    }
    Ok(())
}

fn merge_key_equal(left: &Value, right: &Value, merge_key: &str) -> Result<bool> {
    if merge_key.is_empty() {
        return Ok(left == right);
    }
    let Value::Object(l) = left else {
        return Err(bad_arg_type("map[string]interface {}", left));
    };
    let Value::Object(r) = right else {
        return Err(bad_arg_type("map[string]interface {}", right));
    };
    let lv = l.get(merge_key).ok_or_else(|| no_merge_key(l, merge_key))?;
    let rv = r.get(merge_key).ok_or_else(|| no_merge_key(r, merge_key))?;
    Ok(lv == rv)
}

/// Whether list elements are maps (`sliceElementType`'s kind), with its errors.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Map,
    Scalar,
}

fn element_kind(a: &[Value], b: &[Value]) -> Result<Kind> {
    let mut first: Option<&Value> = None;
    for v in a.iter().chain(b) {
        match first {
            None => {
                if v.is_array() {
                    return Err(SmpError::Unprocessable("lists of lists are not supported"));
                }
                first = Some(v);
            }
            Some(f) => {
                if !same_go_type(f, v) {
                    return Err(SmpError::Other(format!(
                        "list element types are not identical: [{} {}]",
                        go_v(&Value::Array(a.to_vec())),
                        go_v(&Value::Array(b.to_vec()))
                    )));
                }
            }
        }
    }
    match first {
        None => Err(SmpError::Other(
            "no elements in any of the given slices".into(),
        )),
        Some(Value::Object(_)) => Ok(Kind::Map),
        Some(_) => Ok(Kind::Scalar),
    }
}

/// `mergeSlice`.
fn merge_slice(
    original: Vec<Value>,
    patch: Vec<Value>,
    items: &Value,
    merge_key: &str,
    delete_list: bool,
) -> Result<Vec<Value>> {
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    let kind = element_kind(&original, &patch)?;
    let (merged, patch_index, server_index) = if kind == Kind::Scalar {
        if delete_list {
            let gone: HashSet<String> = patch.iter().map(scalar_key).collect();
            return Ok(original
                .into_iter()
                .filter(|v| !gone.contains(&scalar_key(v)))
                .collect());
        }
        let patch_index = first_index(&patch, merge_key, kind);
        let server_index = first_index(&original, merge_key, kind);
        let mut seen = HashSet::with_capacity(original.len() + patch.len());
        let merged: Vec<Value> = original
            .into_iter()
            .chain(patch)
            .filter(|v| seen.insert(scalar_key(v)))
            .collect();
        (merged, patch_index, server_index)
    } else {
        if merge_key.is_empty() {
            return Err(SmpError::Other(
                "cannot merge lists without merge key for struct".into(),
            ));
        }
        let (original, patch) = merge_special_elements(original, patch, merge_key)?;
        let patch_index = first_index(&patch, merge_key, kind);
        let server_index = first_index(&original, merge_key, kind);
        let merged = merge_plain_elements(original, patch, items, merge_key)?;
        (merged, patch_index, server_index)
    };
    let (in_patch, server_only) = partition(merged, &patch_index, merge_key, kind)?;
    normalize_order(
        in_patch,
        server_only,
        &patch_index,
        &server_index,
        merge_key,
        kind,
    )
}

/// `mergeSliceWithSpecialElements`: `$patch: delete|replace|merge` elements of a list of maps.
fn merge_special_elements(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>)> {
    let mut plain = Vec::with_capacity(patch.len());
    let mut replace = false;
    // Merge key values to delete (every matching entry goes, duplicates included).
    let mut deleted: HashSet<String> = HashSet::new();
    for v in patch {
        let Value::Object(m) = &v else {
            plain.push(v);
            continue;
        };
        let Some(directive) = m.get(DIRECTIVE) else {
            plain.push(v);
            continue;
        };
        match directive.as_str() {
            Some("delete") => {
                let Some(key_value) = m.get(merge_key) else {
                    return Err(no_merge_key(m, merge_key));
                };
                deleted.insert(scalar_key(key_value));
            }
            Some("replace") => replace = true,
            Some("merge") => {
                return Err(SmpError::Other(
                    "merging lists cannot yet be specified in the patch".into(),
                ));
            }
            _ => return Err(bad_patch_type(directive, m)),
        }
    }
    if replace {
        return Ok((plain, Vec::new()));
    }
    if !deleted.is_empty() {
        original.retain(|o| {
            o.get(merge_key)
                .is_none_or(|k| !deleted.contains(&scalar_key(k)))
        });
    }
    Ok((original, plain))
}

/// `mergeSliceWithoutSpecialElements`: merge each patch map into the original map with the
/// same merge key value, or append it. Indexed by merge key so large lists stay linear.
fn merge_plain_elements(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    items: &Value,
    merge_key: &str,
) -> Result<Vec<Value>> {
    let mut index: HashMap<String, usize> = HashMap::with_capacity(original.len());
    for (i, o) in original.iter().enumerate() {
        let Value::Object(m) = o else {
            return Err(SmpError::Other(format!("value for key {i} is not a map")));
        };
        if let Some(k) = m.get(merge_key) {
            index.entry(scalar_key(k)).or_insert(i);
        }
    }
    for v in patch {
        let Value::Object(m) = v else {
            return Err(bad_arg_type("map[string]interface {}", &v));
        };
        let Some(key_value) = m.get(merge_key) else {
            return Err(no_merge_key(&m, merge_key));
        };
        let key = scalar_key(key_value);
        if let Some(&i) = index.get(&key) {
            let o = take_map(&mut original[i]);
            original[i] = Value::Object(merge_map(o, m, items)?);
        } else {
            index.insert(key, original.len());
            original.push(Value::Object(m));
        }
    }
    Ok(original)
}

/// The identity of a list element for ordering: its merge key value for maps, itself otherwise
/// (Go `==` on decoded values: `1` and `1.0` differ).
fn order_key(v: &Value, merge_key: &str, kind: Kind) -> String {
    match kind {
        Kind::Map => v.get(merge_key).map_or_else(|| "null".into(), scalar_key),
        Kind::Scalar => scalar_key(v),
    }
}

fn scalar_key(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// `partition…ByPresentInList`: items present in the list indexed by `by`, and the others.
fn partition(
    merged: Vec<Value>,
    by: &HashMap<String, usize>,
    merge_key: &str,
    kind: Kind,
) -> Result<(Vec<Value>, Vec<Value>)> {
    let mut in_by = Vec::with_capacity(merged.len());
    let mut rest = Vec::with_capacity(merged.len());
    for v in merged {
        if kind == Kind::Map {
            let Value::Object(m) = &v else {
                return Err(bad_arg_type("map[string]interface {}", &v));
            };
            if !m.contains_key(merge_key) {
                return Err(no_merge_key(m, merge_key));
            }
        }
        if by.contains_key(&order_key(&v, merge_key, kind)) {
            in_by.push(v);
        } else {
            rest.push(v);
        }
    }
    Ok((in_by, rest))
}

/// `normalizeElementOrder`: patch items in patch order, server-only items in server order,
/// interleaved by server order. Orders are given as first-position indexes.
fn normalize_order(
    patch: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &HashMap<String, usize>,
    server_order: &HashMap<String, usize>,
    merge_key: &str,
    kind: Kind,
) -> Result<Vec<Value>> {
    let patch = sort_by_order(patch, patch_order, merge_key, kind)?;
    let server_only = sort_by_order(server_only, server_order, merge_key, kind)?;
    let pos = |v: &Value| server_order.get(&order_key(v, merge_key, kind)).copied();
    let mut out = Vec::with_capacity(patch.len() + server_only.len());
    let mut left = server_only.into_iter().peekable();
    let mut right = patch.into_iter().peekable();
    while let (Some(l), Some(r)) = (left.peek(), right.peek()) {
        let take_left = matches!((pos(l), pos(r)), (Some(li), Some(ri)) if li < ri);
        if take_left {
            out.extend(left.next());
        } else {
            out.extend(right.next());
        }
    }
    out.extend(left);
    out.extend(right);
    Ok(out)
}

fn first_index(list: &[Value], merge_key: &str, kind: Kind) -> HashMap<String, usize> {
    let mut index = HashMap::with_capacity(list.len());
    for (i, v) in list.iter().enumerate() {
        index.entry(order_key(v, merge_key, kind)).or_insert(i);
    }
    index
}

/// `normalizeSliceOrder`: a stable sort by position in the order (items missing from it go
/// last), `$patch: delete` maps moved last.
fn sort_by_order(
    items: Vec<Value>,
    order: &HashMap<String, usize>,
    merge_key: &str,
    kind: Kind,
) -> Result<Vec<Value>> {
    let mut to_delete = Vec::new();
    let items = if kind == Kind::Map {
        for v in &items {
            let Value::Object(m) = v else {
                return Err(bad_arg_type("map[string]interface {}", v));
            };
            if !m.contains_key(merge_key) {
                return Err(no_merge_key(m, merge_key));
            }
        }
        let (keep, delete): (Vec<Value>, Vec<Value>) = items
            .into_iter()
            .partition(|v| v.get(DIRECTIVE).and_then(Value::as_str) != Some("delete"));
        to_delete = delete;
        keep
    } else {
        items
    };
    let mut keyed: Vec<(usize, Value)> = items
        .into_iter()
        .map(|v| {
            let pos = order
                .get(&order_key(&v, merge_key, kind))
                .copied()
                .unwrap_or(usize::MAX);
            (pos, v)
        })
        .collect();
    keyed.sort_by_key(|(pos, _)| *pos);
    let mut out: Vec<Value> = keyed.into_iter().map(|(_, v)| v).collect();
    out.append(&mut to_delete);
    Ok(out)
}

fn bad_patch_type(directive: &Value, m: &Map<String, Value>) -> SmpError {
    SmpError::Other(format!(
        "unknown patch type: {} in map: {}",
        go_s(directive),
        go_v(&Value::Object(m.clone()))
    ))
}

fn no_merge_key(m: &Map<String, Value>, key: &str) -> SmpError {
    SmpError::Other(format!(
        "map: {} does not contain declared merge key: {key}",
        go_v(&Value::Object(m.clone()))
    ))
}

/// `mergepatch.ErrBadArgType`.
fn bad_arg_type(expected: &str, actual: &Value) -> SmpError {
    let actual = match actual {
        Value::Null => "%!s(<nil>)",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    };
    SmpError::Other(format!("expected a {expected}, but received a {actual}"))
}

/// Go `%s` of a decoded value (strings as they are, others as `%!s(type=value)`).
fn go_s(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "%!s(<nil>)".into(),
        Value::Bool(b) => format!("%!s(bool={b})"),
        Value::Number(n) if n.is_f64() => format!("%!s(float64={})", go_v(v)),
        Value::Number(n) => format!("%!s(int64={n})"),
        other => go_v(other),
    }
}

/// Go `%v` of a decoded value (`map[k:v …]` with sorted keys, `[a b]`, `<nil>`): how upstream
/// quotes patch maps in messages, such as the value of
/// [`crate::json_patch::strict_decoding_error`] for strategic merge patches.
pub fn go_v(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => go_float(f),
            _ => n.to_string(),
        },
        Value::String(s) => s.clone(),
        Value::Array(a) => format!("[{}]", a.iter().map(go_v).collect::<Vec<_>>().join(" ")),
        Value::Object(m) => format!(
            "map[{}]",
            m.iter()
                .map(|(k, v)| format!("{k}:{}", go_v(v)))
                .collect::<Vec<_>>()
                .join(" ")
        ),
    }
}

/// Go's `%T` of a decoded JSON value (`encoding/json` decodes every number as `float64`).
pub fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// Go `%v` of a float64 (`strconv.FormatFloat(f, 'g', -1, 64)`).
fn go_float(f: f64) -> String {
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let e = format!("{f:e}");
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..6).contains(&exp) {
        format!("{f}")
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    }
}
