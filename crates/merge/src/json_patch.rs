//! JSON Patch (RFC 6902) exactly as kube-apiserver 1.32–1.34 applies it: the request body is
//! decoded and checked the way `handlers/patch.go` does (`applyJSPatch`), and the operations run
//! with the semantics of `gopkg.in/evanphx/json-patch.v4` v4.12.0 `Patch.Apply` with its package
//! defaults as the apiserver arms them (`SupportNegativeIndices = true`,
//! `AccumulatedCopySizeLimit = JSONPatchMaxCopyBytes = 3 MiB`), not RFC-strict behaviour.
//!
//! Also owns what the three patch modules share: [`PatchError`] (a Kubernetes `Status` in
//! miniature), [`FieldValidation`] and a Go `encoding/json`-compatible syntax check, because
//! upstream's decode errors are Go's scanner messages.
//!
//! Differences from RFC 6902 that are pinned (see `tests/patch_json_patch.rs`):
//! - `test` of a missing path (or a `null` member) with value `null` succeeds;
//! - `replace` of a missing object member adds it; `copy` from a missing object member copies
//!   `null`; `move` from a missing member fails only when removing it;
//! - negative array indices count from the end (`-1` is the last element; `add` at `-1`
//!   appends); indices are parsed like Go `strconv.Atoi` (`+1` and `01` are accepted);
//! - a path without a leading `/` addresses the root's members (`a/b` is `/b`);
//! - `replace` of the root (`""`) with an object or array replaces the document, with anything
//!   else it does nothing; `test` of the root compares the whole document;
//! - a missing `value` is `null`;
//! - `test` compares scalars by their JSON text: the stored value as Go encodes it (strings
//!   with `<`, `>`, `&` as `\u003c`…, floats in Go's shortest form) against the value as sent,
//!   so `1.0` does not equal a stored `1` and `"a&b"` does not equal a stored `a&b`;
//! - every failing operation is reported as 422 `Invalid` "the server rejected our request due
//!   to an error in our request" (the library's text is dropped by the apiserver).

use std::fmt::{self, Write as _};

use serde_json::{Map, Value};

/// The most operations one JSON patch may carry (`maxJSONPatchOperations`).
pub const MAX_OPERATIONS: usize = 10_000;

/// The total bytes `copy` operations may add in one patch (`JSONPatchMaxCopyBytes`, 3 MiB).
pub const MAX_COPY_BYTES: usize = 3 * 1024 * 1024;

/// How a patch failed, in the terms of the Kubernetes `Status` the apiserver answers with, so a
/// server maps it 1:1 (`code`, `reason`, `message`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchError {
    /// HTTP status code (400, 413, 422 or 500).
    pub code: u16,
    /// The `Status.reason`; empty for upstream's "unknown" reason (raw errors answered as 500).
    pub reason: &'static str,
    /// The `Status.message`, upstream's text.
    pub message: String,
    /// Whether upstream's `Status` carries `details: {}` (errors built with
    /// `NewGenericServerResponse`), so the server can render it byte-for-byte.
    pub empty_details: bool,
    /// The underlying library error upstream computes but does not send (for logs and tests).
    pub cause: Option<String>,
    /// The single `details.causes` entry of upstream's `Invalid` statuses built from a field
    /// error (`field.Invalid(field.NewPath("patch"), …)`), with empty group, kind and name.
    pub field_cause: Option<Box<FieldCause>>,
}

/// A `StatusCause` of an `Invalid` status: `reason` (`FieldValueInvalid`), `message` and `field`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldCause {
    /// The cause type, e.g. `FieldValueInvalid`.
    pub reason: &'static str,
    /// The field error's body (`Invalid value: "…": detail`).
    pub message: String,
    /// The field path, `patch`.
    pub field: &'static str,
}

impl PatchError {
    /// 400 `BadRequest` with upstream's message (`errors.NewBadRequest`).
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self {
            code: 400,
            reason: "BadRequest",
            message: message.into(),
            empty_details: false,
            cause: None,
            field_cause: None,
        }
    }

    /// 422 `Invalid` without detail (`NewGenericServerResponse(422, …)`), as upstream answers
    /// failing patch operations; the library's text stays in `cause`.
    pub(crate) fn rejected(cause: impl Into<String>) -> Self {
        Self {
            code: 422,
            reason: "Invalid",
            message: "the server rejected our request due to an error in our request".into(),
            empty_details: true,
            cause: Some(cause.into()),
            field_cause: None,
        }
    }

    /// 413 `RequestEntityTooLarge` (`errors.NewRequestEntityTooLargeError`).
    pub(crate) fn too_large(message: &str) -> Self {
        Self {
            code: 413,
            reason: "RequestEntityTooLarge",
            message: format!("Request entity too large: {message}"),
            empty_details: false,
            cause: None,
            field_cause: None,
        }
    }

    /// 422 `Invalid` for a bad value of the field `patch` (`errors.NewInvalid(GroupKind{}, "",
    /// field.ErrorList{field.Invalid(field.NewPath("patch"), value, detail)})`).
    pub(crate) fn invalid_patch(value: &str, detail: &str) -> Self {
        let body = format!("Invalid value: {}: {detail}", go_quote(value));
        Self {
            code: 422,
            reason: "Invalid",
            message: format!(" \"\" is invalid: patch: {body}"),
            empty_details: false,
            cause: None,
            field_cause: Some(Box::new(FieldCause {
                reason: "FieldValueInvalid",
                message: body,
                field: "patch",
            })),
        }
    }

    /// 500 with an empty reason: a plain Go error the apiserver did not wrap.
    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self {
            code: 500,
            reason: "",
            message: message.into(),
            empty_details: false,
            cause: None,
            field_cause: None,
        }
    }
}

impl fmt::Display for PatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(cause) = &self.cause {
            write!(f, " ({cause})")?;
        }
        Ok(())
    }
}

impl std::error::Error for PatchError {}

/// The request's `fieldValidation` directive, which changes how upstream decodes patch bodies
/// (`Warn` and `Strict` run a strict decode first, whose errors read "error decoding patch: …").
/// Upstream's default when the parameter is absent is `Warn`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldValidation {
    /// `fieldValidation=Ignore`: only the patch library decodes the body.
    Ignore,
    /// `fieldValidation=Warn` (the default).
    #[default]
    Warn,
    /// `fieldValidation=Strict`.
    Strict,
}

/// The error upstream answers with `fieldValidation=Strict` when decoding found `problems`
/// (the strings the `apply_with` functions return, plus the server's own strict problems with
/// the patched object): 422 `Invalid` on the field `patch`, whose value is the patched object
/// (its compact JSON for JSON and merge patches, Go's `%+v` of the patch map for strategic
/// merge patches).
pub fn strict_decoding_error(problems: &[String], value: &str) -> PatchError {
    PatchError::invalid_patch(
        value,
        &format!("strict decoding error: {}", problems.join(", ")),
    )
}

/// Applies a JSON patch body to `doc` with the default `fieldValidation` (`Warn`), dropping the
/// strict-decoding problems.
pub fn apply(doc: &mut Value, patch: &[u8]) -> Result<(), PatchError> {
    apply_with(doc, patch, FieldValidation::Warn).map(drop)
}

/// Applies a JSON patch body to `doc`, decoding it as upstream does for `validation`. Returns
/// the strict-decoding problems of the body (`json patch unknown field "x"`, `json patch
/// duplicate field "op"`; none with `Ignore`): warnings with `Warn`, an error
/// ([`strict_decoding_error`]) with `Strict`.
/// On error `doc` may be partly patched; callers patch a copy of the stored object.
pub fn apply_with(
    doc: &mut Value,
    patch: &[u8],
    validation: FieldValidation,
) -> Result<Vec<String>, PatchError> {
    let (ops, problems) = decode(patch, validation)?;
    if ops.len() > MAX_OPERATIONS {
        return Err(PatchError::too_large(&format!(
            "The allowed maximum operations in a JSON patch is {MAX_OPERATIONS}, got {}",
            ops.len()
        )));
    }
    // `test` compares against the value's JSON text as sent, so keep it for those operations.
    let has_test = ops
        .iter()
        .any(|op| op.get("op").and_then(Value::as_str) == Some("test"));
    let raw_ops = if has_test {
        let mut i = 0;
        match raw_parse(patch, &mut i) {
            Raw::Arr(items) => items,
            _ => Vec::new(),
        }
    } else {
        Vec::new()
    };
    let mut copied = 0usize;
    for (n, op) in ops.into_iter().enumerate() {
        let raw_value = match raw_ops.get(n) {
            Some(Raw::Obj(fields)) => fields.get("value"),
            _ => None,
        };
        run(doc, op, raw_value, &mut copied).map_err(PatchError::rejected)?;
    }
    Ok(problems)
}

/// Decodes the body into operations (JSON `null` and `null` elements included, as Go does)
/// and the strict-decoding problems.
fn decode(
    patch: &[u8],
    validation: FieldValidation,
) -> Result<(Vec<Value>, Vec<String>), PatchError> {
    let strict = validation != FieldValidation::Ignore;
    let prefix = if strict { "error decoding patch: " } else { "" };
    let mode = if strict {
        Strict::JsonPatch
    } else {
        Strict::Off
    };
    let (value, problems) =
        parse(patch, mode).map_err(|e| PatchError::bad_request(format!("{prefix}{e}")))?;
    let problems = problems
        .into_iter()
        .map(|p| format!("json patch {p}"))
        .collect();
    let ops = match value {
        Value::Null => return Ok((Vec::new(), problems)),
        Value::Array(ops) => ops,
        other => {
            let ty = if strict {
                "[]handlers.jsonPatchOp"
            } else {
                "jsonpatch.Patch"
            };
            return Err(PatchError::bad_request(format!(
                "{prefix}json: cannot unmarshal {} into Go value of type {ty}",
                go_kind(&other)
            )));
        }
    };
    // Go keeps decoding after a type error and reports the first one.
    for op in &ops {
        match op {
            Value::Object(fields) if strict => {
                for name in ["op", "path", "from"] {
                    if let Some(v) = fields.get(name).filter(|v| !v.is_null() && !v.is_string()) {
                        return Err(PatchError::bad_request(format!(
                            "{prefix}json: cannot unmarshal {} into Go struct field jsonPatchOp.{name} of type string",
                            go_kind(v)
                        )));
                    }
                }
            }
            Value::Null | Value::Object(_) => {}
            other => {
                let ty = if strict {
                    "handlers.jsonPatchOp"
                } else {
                    "jsonpatch.Operation"
                };
                return Err(PatchError::bad_request(format!(
                    "{prefix}json: cannot unmarshal {} into Go value of type {ty}",
                    go_kind(other)
                )));
            }
        }
    }
    Ok((ops, problems))
}

/// Parses a body as Go's `encoding/json` would accept it, with Go's syntax error text, and
/// the strict-decoding problems `strict` asks for.
pub(crate) fn parse(bytes: &[u8], strict: Strict) -> Result<(Value, Vec<String>), String> {
    let problems = go_scan(bytes, strict)?;
    let value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        // Go replaces invalid UTF-8 with U+FFFD instead of failing.
        Err(_) => {
            serde_json::from_str(&String::from_utf8_lossy(bytes)).map_err(|e| e.to_string())?
        }
    };
    Ok((value, problems))
}

/// The word Go's `UnmarshalTypeError` uses for a JSON value's kind.
pub(crate) fn go_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// One operation, with evanphx's error text on failure.
fn run(
    doc: &mut Value,
    op: Value,
    raw_value: Option<&Raw<'_>>,
    copied: &mut usize,
) -> Result<(), String> {
    let mut fields = match op {
        Value::Object(fields) => fields,
        _ => Map::new(),
    };
    let fields = &mut fields;
    let kind = match fields.get("op") {
        Some(Value::String(s)) => s.clone(),
        _ => "unknown".to_string(),
    };
    match kind.as_str() {
        "add" => {
            let path = field(fields, "path")
                .map_err(|_| "add operation failed to decode path: missing value".to_string())?;
            let Some((con, key)) = find_object(doc, &path) else {
                return Err(format!(
                    "add operation does not apply: doc is missing path: \"{path}\": missing value"
                ));
            };
            add(con, &key, value_of(fields))
                .map_err(|e| format!("error in add for path: '{path}': {e}"))
        }
        "remove" => {
            let path = field(fields, "path")
                .map_err(|_| "remove operation failed to decode path: missing value".to_string())?;
            let Some((con, key)) = find_object(doc, &path) else {
                return Err(format!(
                    "remove operation does not apply: doc is missing path: \"{path}\": missing value"
                ));
            };
            remove(con, &key)
                .map(drop)
                .map_err(|e| format!("error in remove for path: '{path}': {e}"))
        }
        "replace" => {
            let path = field(fields, "path")
                .map_err(|e| format!("replace operation failed to decode path: {e}"))?;
            if path.is_empty() {
                // Upstream wraps a nil error here, which is no error: non-containers are ignored.
                if let Some(v @ (Value::Object(_) | Value::Array(_))) = fields.remove("value") {
                    *doc = v;
                }
                return Ok(());
            }
            let Some((con, key)) = find_object(doc, &path) else {
                return Err(format!(
                    "replace operation does not apply: doc is missing path: {path}: missing value"
                ));
            };
            match con {
                Value::Object(map) => {
                    map.insert(key, value_of(fields));
                    Ok(())
                }
                Value::Array(items) => {
                    let Ok(idx) = index(items.len(), &key, false) else {
                        return Err(format!(
                            "replace operation does not apply: doc is missing key: {path}: missing value"
                        ));
                    };
                    items[idx] = value_of(fields);
                    Ok(())
                }
                _ => Err(format!(
                    "replace operation does not apply: doc is missing path: {path}: missing value"
                )),
            }
        }
        "move" => {
            let from = field(fields, "from")
                .map_err(|e| format!("move operation failed to decode from: {e}"))?;
            let Some((con, key)) = find_object(doc, &from) else {
                return Err(format!(
                    "move operation does not apply: doc is missing from path: {from}: missing value"
                ));
            };
            let val =
                remove(con, &key).map_err(|e| format!("error in move for path: '{key}': {e}"))?;
            let path = field(fields, "path")
                .map_err(|e| format!("move operation failed to decode path: {e}"))?;
            let Some((con, key)) = find_object(doc, &path) else {
                return Err(format!(
                    "move operation does not apply: doc is missing destination path: {path}: missing value"
                ));
            };
            add(con, &key, val).map_err(|e| format!("error in move for path: '{path}': {e}"))
        }
        "test" => {
            let path = field(fields, "path")
                .map_err(|e| format!("test operation failed to decode path: {e}"))?;
            let failed = || format!("testing value {path} failed: test failed");
            let want = fields.get("value");
            let equal = |got: &Value| match (raw_value, want) {
                (Some(raw), _) => go_equal_raw(got, raw),
                (None, Some(w)) => go_equal(got, w),
                (None, None) => false,
            };
            if path.is_empty() {
                return if want.is_some() && equal(doc) {
                    Ok(())
                } else {
                    Err(failed())
                };
            }
            let Some((con, key)) = find_object(doc, &path) else {
                return Err(format!(
                    "test operation does not apply: is missing path: {path}: missing value"
                ));
            };
            let got =
                get(con, &key).map_err(|e| format!("error in test for path: '{path}': {e}"))?;
            match (got.filter(|g| !g.is_null()), want) {
                (None, None | Some(Value::Null)) => Ok(()),
                (Some(g), Some(_)) if equal(g) => Ok(()),
                _ => Err(failed()),
            }
        }
        "copy" => {
            let from = field(fields, "from")
                .map_err(|e| format!("copy operation failed to decode from: {e}"))?;
            let Some((con, key)) = find_object(doc, &from) else {
                return Err(format!(
                    "copy operation does not apply: doc is missing from path: {from}: missing value"
                ));
            };
            let val = get(con, &key)
                .map_err(|e| format!("error in copy for from: '{from}': {e}"))?
                .cloned()
                .unwrap_or(Value::Null);
            let path = field(fields, "path")
                .map_err(|_| "copy operation failed to decode path: missing value".to_string())?;
            let Some((con, key)) = find_object(doc, &path) else {
                return Err(format!(
                    "copy operation does not apply: doc is missing destination path: {path}: missing value"
                ));
            };
            if !val.is_null() {
                *copied += go_encoded_len(&val);
            }
            if *copied > MAX_COPY_BYTES {
                return Err(format!(
                    "Unable to complete the copy, the accumulated size increase of copy is {copied}, exceeding the limit {MAX_COPY_BYTES}"
                ));
            }
            add(con, &key, val).map_err(|e| format!("error while adding value during copy: {e}"))
        }
        other => Err(format!("Unexpected kind: {other}")),
    }
}

/// An operation's `path` or `from` (evanphx `Operation.Path`/`From`).
fn field(fields: &Map<String, Value>, name: &str) -> Result<String, String> {
    match fields.get(name) {
        None | Some(Value::Null) if name == "path" => {
            Err("operation missing path field: missing value".into())
        }
        None | Some(Value::Null) => Err("operation, missing from field: missing value".into()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!(
            "json: cannot unmarshal {} into Go value of type string",
            go_kind(other)
        )),
    }
}

/// An operation's `value`; a missing one is `null` (a nil node in Go).
fn value_of(fields: &mut Map<String, Value>) -> Value {
    fields.remove("value").unwrap_or(Value::Null)
}

/// RFC 6901 unescaping as evanphx does it (`~1` then `~0`, in one pass).
fn decode_key(part: &str) -> String {
    if !part.contains('~') {
        return part.to_string();
    }
    let mut out = String::with_capacity(part.len());
    let mut chars = part.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.peek() {
                Some('1') => {
                    out.push('/');
                    chars.next();
                    continue;
                }
                Some('0') => {
                    out.push('~');
                    chars.next();
                    continue;
                }
                _ => {}
            }
        }
        out.push(c);
    }
    out
}

/// evanphx `findObject`: the container holding the path's last token, and that token.
fn find_object<'a>(doc: &'a mut Value, path: &str) -> Option<(&'a mut Value, String)> {
    let mut split = path.split('/');
    let first_and_rest = path.contains('/');
    if !first_and_rest {
        return None;
    }
    split.next();
    let parts: Vec<&str> = split.collect();
    let (last, inner) = parts.split_last()?;
    let mut cur = doc;
    if !matches!(cur, Value::Object(_) | Value::Array(_)) {
        return None;
    }
    for part in inner {
        let key = decode_key(part);
        let next = match cur {
            Value::Object(map) => map.get_mut(&key)?,
            Value::Array(items) => {
                let idx = index(items.len(), &key, false).ok()?;
                &mut items[idx]
            }
            _ => return None,
        };
        if !matches!(next, Value::Object(_) | Value::Array(_)) {
            return None;
        }
        cur = next;
    }
    Some((cur, decode_key(last)))
}

/// An array index as evanphx reads it: Go `strconv.Atoi`, negative indices from the end.
/// `insert` allows one past the end (and counts negatives against the grown array).
fn index(len: usize, key: &str, insert: bool) -> Result<usize, String> {
    let idx = atoi(key)?;
    let size = if insert { len + 1 } else { len } as i64;
    let invalid = || format!("Unable to access invalid index: {idx}: invalid index referenced");
    if idx >= size || idx < -size {
        return Err(invalid());
    }
    Ok(if idx < 0 { idx + size } else { idx } as usize)
}

/// Go `strconv.Atoi` with its error text.
fn atoi(s: &str) -> Result<i64, String> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "strconv.Atoi: parsing {}: invalid syntax",
            go_quote(s)
        ));
    }
    s.parse::<i64>()
        .map_err(|_| format!("strconv.Atoi: parsing {}: value out of range", go_quote(s)))
}

/// Go `strconv.Quote` for the strings that appear in error texts.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn get<'a>(con: &'a Value, key: &str) -> Result<Option<&'a Value>, String> {
    match con {
        Value::Object(map) => Ok(map.get(key)),
        Value::Array(items) => index(items.len(), key, false).map(|i| Some(&items[i])),
        _ => Ok(None),
    }
}

fn add(con: &mut Value, key: &str, val: Value) -> Result<(), String> {
    match con {
        Value::Object(map) => {
            map.insert(key.to_string(), val);
            Ok(())
        }
        Value::Array(items) => {
            if key == "-" {
                items.push(val);
                return Ok(());
            }
            let idx = index(items.len(), key, true).map_err(|e| {
                if e.starts_with("strconv") {
                    format!("value was not a proper array index: '{key}': {e}")
                } else {
                    e
                }
            })?;
            items.insert(idx, val);
            Ok(())
        }
        _ => Err("invalid state detected".into()),
    }
}

fn remove(con: &mut Value, key: &str) -> Result<Value, String> {
    match con {
        Value::Object(map) => map
            .remove(key)
            .ok_or_else(|| format!("Unable to remove nonexistent key: {key}: missing value")),
        Value::Array(items) => {
            let idx = index(items.len(), key, false)?;
            Ok(items.remove(idx))
        }
        _ => Err("invalid state detected".into()),
    }
}

/// evanphx `lazyNode.equal`: objects by members, arrays by position, scalars by encoding
/// (so `1` and `1.0` differ, while a stored float `2.0`, which Go encodes as `2`, equals `2`).
fn go_equal(doc: &Value, patch: &Value) -> bool {
    match (doc, patch) {
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(k, v)| b.get(k).is_some_and(|w| go_equal(v, w)))
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(v, w)| go_equal(v, w))
        }
        (Value::Number(a), Value::Number(b)) => {
            if a.is_f64() && !b.is_f64() {
                a.as_f64()
                    .is_some_and(|f| f.fract() == 0.0 && b.as_f64() == Some(f))
            } else {
                a == b
            }
        }
        (a, b) => a == b,
    }
}

/// A JSON value as sent, its scalars kept as their text: what evanphx compares `test` values
/// against (`lazyNode.equal` compares scalars by their compact bytes).
enum Raw<'a> {
    Obj(std::collections::BTreeMap<String, Raw<'a>>),
    Arr(Vec<Raw<'a>>),
    Scalar(&'a [u8]),
}

/// Parses already-validated JSON (depth bounded by the earlier full parse) into [`Raw`];
/// duplicate members keep the last, as Go maps do.
fn raw_parse<'a>(data: &'a [u8], i: &mut usize) -> Raw<'a> {
    let skip_ws = |i: &mut usize| {
        while data
            .get(*i)
            .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        {
            *i += 1;
        }
    };
    skip_ws(i);
    match data.get(*i) {
        Some(b'{') => {
            *i += 1;
            let mut map = std::collections::BTreeMap::new();
            loop {
                skip_ws(i);
                match data.get(*i) {
                    Some(b'"') => {
                        let start = *i;
                        *i = scan_string(data, *i).unwrap_or(data.len());
                        let key = key_text(&data[start..*i]);
                        skip_ws(i);
                        *i += 1; // ':'
                        let v = raw_parse(data, i);
                        map.insert(key, v);
                    }
                    Some(b',') => *i += 1,
                    _ => {
                        *i += 1; // '}'
                        return Raw::Obj(map);
                    }
                }
            }
        }
        Some(b'[') => {
            *i += 1;
            let mut items = Vec::new();
            loop {
                skip_ws(i);
                match data.get(*i) {
                    Some(b']') | None => {
                        *i += 1;
                        return Raw::Arr(items);
                    }
                    Some(b',') => *i += 1,
                    Some(_) => items.push(raw_parse(data, i)),
                }
            }
        }
        Some(b'"') => {
            let start = *i;
            *i = scan_string(data, *i).unwrap_or(data.len());
            Raw::Scalar(&data[start..*i])
        }
        Some(_) => {
            let start = *i;
            while data
                .get(*i)
                .is_some_and(|b| !matches!(b, b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r'))
            {
                *i += 1;
            }
            Raw::Scalar(&data[start..*i])
        }
        None => Raw::Scalar(b""),
    }
}

/// evanphx `lazyNode.equal` of a stored value (as Go encodes it) and a patch value (as sent):
/// objects by members, arrays by position, scalars by their bytes. So `1` and `1.0` differ, a
/// stored `2.0` (encoded `2`) equals `2`, and a stored string with `<`, `>` or `&` (encoded as
/// `\u003c`…) equals only a value sent with the same escapes.
fn go_equal_raw(doc: &Value, raw: &Raw<'_>) -> bool {
    match (doc, raw) {
        (Value::Object(a), Raw::Obj(b)) => {
            a.len() == b.len()
                && a.iter().all(|(k, v)| {
                    b.get(k).is_some_and(|w| match (v, w) {
                        (Value::Null, Raw::Scalar(s)) => *s == b"null",
                        (Value::Null, _) => false,
                        (_, Raw::Scalar(s)) if *s == b"null" => false,
                        _ => go_equal_raw(v, w),
                    })
                })
        }
        (Value::Array(a), Raw::Arr(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(v, w)| go_equal_raw(v, w))
        }
        (Value::Object(_) | Value::Array(_), _) => false,
        (scalar, Raw::Scalar(s)) => go_encode_scalar(scalar).as_bytes() == *s,
        _ => false,
    }
}

/// Go `json.Marshal` of a value (compact, keys sorted, `<`, `>`, `&` escaped, Go float format):
/// the text upstream puts in messages that quote a patched object, such as
/// [`strict_decoding_error`]'s value for JSON and merge patches.
pub fn go_json(v: &Value) -> String {
    let mut out = String::new();
    write_go_json(v, &mut out);
    out
}

fn write_go_json(v: &Value, out: &mut String) {
    match v {
        Value::Array(items) => {
            out.push('[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                write_go_json(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (n, (k, item)) in map.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                out.push_str(&go_encode_scalar(&Value::String(k.clone())));
                out.push(':');
                write_go_json(item, out);
            }
            out.push('}');
        }
        scalar => out.push_str(&go_encode_scalar(scalar)),
    }
}

/// Go `encoding/json`'s text for a scalar (HTML-safe string escapes, Go float format).
fn go_encode_scalar(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => go_json_float(f),
            _ => n.to_string(),
        },
        Value::String(s) => {
            let mut out = String::with_capacity(s.len() + 2);
            out.push('"');
            for c in s.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    '\u{8}' => out.push_str("\\b"),
                    '\u{c}' => out.push_str("\\f"),
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
            out
        }
        Value::Array(_) | Value::Object(_) => String::new(),
    }
}

/// Go `encoding/json`'s float64 text: shortest decimal, exponent form outside [1e-6, 1e21).
fn go_json_float(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let e = format!("{f:e}");
        let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        if exp < 0 {
            format!("{mantissa}e-{}", -exp)
        } else {
            format!("{mantissa}e+{exp:02}")
        }
    } else {
        format!("{f}")
    }
}

/// The length of Go's `json.Marshal` of a value (compact, `<`, `>`, `&`, U+2028 and U+2029
/// escaped), without building it: the size a `copy` adds in evanphx's accounting.
fn go_encoded_len(v: &Value) -> usize {
    match v {
        Value::Null => 4,
        Value::Bool(b) => {
            if *b {
                4
            } else {
                5
            }
        }
        Value::Number(_) => go_encode_scalar(v).len(),
        Value::String(s) => go_string_len(s),
        Value::Array(items) => {
            2 + items.iter().map(go_encoded_len).sum::<usize>() + items.len().saturating_sub(1)
        }
        Value::Object(map) => {
            2 + map
                .iter()
                .map(|(k, v)| go_string_len(k) + 1 + go_encoded_len(v))
                .sum::<usize>()
                + map.len().saturating_sub(1)
        }
    }
}

fn go_string_len(s: &str) -> usize {
    2 + s
        .chars()
        .map(|c| match c {
            '"' | '\\' | '\n' | '\r' | '\t' => 2,
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => 6,
            c if (c as u32) < 0x20 => 6,
            c => c.len_utf8(),
        })
        .sum::<usize>()
}

/// Which strict-decoding problems a scan collects, as `sigs.k8s.io/json` `UnmarshalStrict`
/// reports them for upstream's decode targets.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Strict {
    /// No strict decode (`fieldValidation=Ignore`).
    Off,
    /// A JSON patch into `[]jsonPatchOp`: unknown and duplicate op fields, duplicates in values.
    JsonPatch,
    /// A map (`map[string]interface{}`): duplicate fields anywhere.
    Map,
}

/// What the objects of a value are checked for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// The top-level JSON patch list: its elements are operations.
    PatchList,
    /// A JSON patch operation (a struct with `op`, `path`, `from`, `value`).
    Op,
    /// Decoded into `interface{}`: duplicate keys are reported.
    Free,
    /// Skipped by the decoder (unknown struct fields' values) or not checked.
    Skip,
}

struct Frame {
    array: bool,
    mode: Mode,
    keys: std::collections::HashSet<String>,
}

/// Collected strict-decoding problems: deduplicated, at most 100 (as upstream).
struct Problems(Vec<String>);

impl Problems {
    fn push(&mut self, p: String) {
        if self.0.len() < 100 && !self.0.contains(&p) {
            self.0.push(p);
        }
    }
}

/// The member key a scanned string token holds.
fn key_text(raw: &[u8]) -> String {
    let inner = &raw[1..raw.len() - 1];
    if inner.contains(&b'\\') {
        serde_json::from_slice::<String>(raw)
            .unwrap_or_else(|_| String::from_utf8_lossy(inner).into_owned())
    } else {
        String::from_utf8_lossy(inner).into_owned()
    }
}

/// Records a member key of the innermost object; returns the mode of its value.
fn on_key(frame: &mut Frame, key: String, problems: &mut Problems) -> Mode {
    match frame.mode {
        Mode::Free => {
            if frame.keys.contains(&key) {
                problems.push(format!("duplicate field {}", go_quote(&key)));
            } else {
                frame.keys.insert(key);
            }
            Mode::Free
        }
        Mode::Op => {
            if matches!(key.as_str(), "op" | "path" | "from" | "value") {
                if frame.keys.contains(&key) {
                    problems.push(format!("duplicate field {}", go_quote(&key)));
                } else {
                    frame.keys.insert(key);
                }
                Mode::Free
            } else {
                problems.push(format!("unknown field {}", go_quote(&key)));
                Mode::Skip
            }
        }
        Mode::PatchList | Mode::Skip => Mode::Skip,
    }
}

/// Go `encoding/json`'s syntax check (`checkValid`), with its error messages, collecting the
/// strict-decoding problems `strict` asks for on the way.
pub(crate) fn go_scan(data: &[u8], strict: Strict) -> Result<Vec<String>, String> {
    let mut stack: Vec<Frame> = Vec::new();
    let mut problems = Problems(Vec::new());
    let mut i = 0usize;
    let n = data.len();
    let err = |c: u8, ctx: &str| format!("invalid character {} {ctx}", quote_char(c));
    let eof = || "unexpected end of JSON input".to_string();
    let skip_ws = |i: &mut usize| {
        while *i < n && matches!(data[*i], b' ' | b'\t' | b'\n' | b'\r') {
            *i += 1;
        }
    };
    let mut mode = match strict {
        Strict::Off => Mode::Skip,
        Strict::JsonPatch => Mode::PatchList,
        Strict::Map => Mode::Free,
    };
    // Expecting a value whose objects are checked as `mode`.
    'value: loop {
        skip_ws(&mut i);
        let Some(&c) = data.get(i) else {
            return Err(eof());
        };
        match c {
            b'{' => {
                i += 1;
                skip_ws(&mut i);
                match data.get(i) {
                    None => return Err(eof()),
                    Some(b'}') => i += 1,
                    Some(b'"') => {
                        let start = i;
                        i = scan_string(data, i)?;
                        let mut frame = Frame {
                            array: false,
                            mode: if mode == Mode::PatchList {
                                Mode::Skip
                            } else {
                                mode
                            },
                            keys: std::collections::HashSet::new(),
                        };
                        mode = on_key(&mut frame, key_text(&data[start..i]), &mut problems);
                        stack.push(frame);
                        skip_ws(&mut i);
                        match data.get(i) {
                            None => return Err(eof()),
                            Some(b':') => {
                                i += 1;
                                continue 'value;
                            }
                            Some(&c) => return Err(err(c, "after object key")),
                        }
                    }
                    Some(&c) => return Err(err(c, "looking for beginning of object key string")),
                }
            }
            b'[' => {
                i += 1;
                skip_ws(&mut i);
                match data.get(i) {
                    None => return Err(eof()),
                    Some(b']') => i += 1,
                    Some(_) => {
                        stack.push(Frame {
                            array: true,
                            mode,
                            keys: std::collections::HashSet::new(),
                        });
                        mode = element_mode(mode);
                        continue 'value;
                    }
                }
            }
            b'"' => i = scan_string(data, i)?,
            b'-' | b'0'..=b'9' => i = scan_number(data, i)?,
            b't' => i = scan_literal(data, i, b"true")?,
            b'f' => i = scan_literal(data, i, b"false")?,
            b'n' => i = scan_literal(data, i, b"null")?,
            c => return Err(err(c, "looking for beginning of value")),
        }
        // After a value.
        loop {
            skip_ws(&mut i);
            let Some(top) = stack.last_mut() else {
                return match data.get(i) {
                    None => Ok(problems.0),
                    Some(&c) => Err(err(c, "after top-level value")),
                };
            };
            let Some(&c) = data.get(i) else {
                return Err(eof());
            };
            match (top.array, c) {
                (false, b',') => {
                    i += 1;
                    skip_ws(&mut i);
                    match data.get(i) {
                        None => return Err(eof()),
                        Some(b'"') => {
                            let start = i;
                            i = scan_string(data, i)?;
                            mode = on_key(top, key_text(&data[start..i]), &mut problems);
                            skip_ws(&mut i);
                            match data.get(i) {
                                None => return Err(eof()),
                                Some(b':') => {
                                    i += 1;
                                    continue 'value;
                                }
                                Some(&c) => return Err(err(c, "after object key")),
                            }
                        }
                        Some(&c) => {
                            return Err(err(c, "looking for beginning of object key string"));
                        }
                    }
                }
                (false, b'}') | (true, b']') => {
                    i += 1;
                    stack.pop();
                }
                (false, c) => return Err(err(c, "after object key:value pair")),
                (true, b',') => {
                    i += 1;
                    mode = element_mode(top.mode);
                    continue 'value;
                }
                (true, c) => return Err(err(c, "after array element")),
            }
        }
    }
}

/// The mode of an array's elements.
fn element_mode(array: Mode) -> Mode {
    match array {
        Mode::PatchList => Mode::Op,
        Mode::Op => Mode::Skip,
        other => other,
    }
}

/// Go's `quoteChar` for scanner messages.
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => "'\\''".into(),
        b'"' => "'\"'".into(),
        c => {
            let q = go_quote(&char::from(c).to_string());
            format!("'{}'", &q[1..q.len() - 1])
        }
    }
}

fn scan_string(data: &[u8], start: usize) -> Result<usize, String> {
    let mut i = start + 1;
    loop {
        let Some(&c) = data.get(i) else {
            return Err("unexpected end of JSON input".into());
        };
        match c {
            b'"' => return Ok(i + 1),
            b'\\' => {
                i += 1;
                let Some(&e) = data.get(i) else {
                    return Err("unexpected end of JSON input".into());
                };
                match e {
                    b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => i += 1,
                    b'u' => {
                        i += 1;
                        for _ in 0..4 {
                            let Some(&h) = data.get(i) else {
                                return Err("unexpected end of JSON input".into());
                            };
                            if !h.is_ascii_hexdigit() {
                                return Err(format!(
                                    "invalid character {} in \\u hexadecimal character escape",
                                    quote_char(h)
                                ));
                            }
                            i += 1;
                        }
                    }
                    e => {
                        return Err(format!(
                            "invalid character {} in string escape code",
                            quote_char(e)
                        ));
                    }
                }
            }
            c if c < 0x20 => {
                return Err(format!(
                    "invalid character {} in string literal",
                    quote_char(c)
                ));
            }
            _ => i += 1,
        }
    }
}

fn scan_number(data: &[u8], start: usize) -> Result<usize, String> {
    let mut i = start;
    let eof = || "unexpected end of JSON input".to_string();
    if data[i] == b'-' {
        i += 1;
        match data.get(i) {
            None => return Err(eof()),
            Some(b'0'..=b'9') => {}
            Some(&c) => {
                return Err(format!(
                    "invalid character {} in numeric literal",
                    quote_char(c)
                ));
            }
        }
    }
    if data[i] == b'0' {
        i += 1;
    } else {
        while data.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
    }
    if data.get(i) == Some(&b'.') {
        i += 1;
        match data.get(i) {
            None => return Err(eof()),
            Some(b'0'..=b'9') => {}
            Some(&c) => {
                return Err(format!(
                    "invalid character {} after decimal point in numeric literal",
                    quote_char(c)
                ));
            }
        }
        while data.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
    }
    if matches!(data.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(data.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        match data.get(i) {
            None => return Err(eof()),
            Some(b'0'..=b'9') => {}
            Some(&c) => {
                return Err(format!(
                    "invalid character {} in exponent of numeric literal",
                    quote_char(c)
                ));
            }
        }
        while data.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
    }
    Ok(i)
}

fn scan_literal(data: &[u8], start: usize, word: &[u8]) -> Result<usize, String> {
    let name = std::str::from_utf8(word).unwrap_or_default();
    for (k, &want) in word.iter().enumerate().skip(1) {
        match data.get(start + k) {
            None => return Err("unexpected end of JSON input".into()),
            Some(&c) if c == want => {}
            Some(&c) => {
                return Err(format!(
                    "invalid character {} in literal {name} (expecting {})",
                    quote_char(c),
                    quote_char(want)
                ));
            }
        }
    }
    Ok(start + word.len())
}
