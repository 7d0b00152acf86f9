//! A table-driven reader of Kubernetes' protobuf messages into the JSON Go would encode.
//!
//! Each message is a table of its fields: the protobuf field number (from `generated.proto`),
//! the JSON name, the type, and what a zero value means. Go's protobuf encoding writes every
//! non-pointer field, zero or not, and a pointer field only when set; Go's JSON encoding drops
//! a zero value only where the field is `omitempty` and not a pointer ([`Zero::Omit`]). Structs
//! are always written and always encoded, so a message field present on the wire is present in
//! the JSON.
//!
//! Architecture Invariant: a field the tables do not name is accepted only when it carries a
//! zero value (what Go writes for a field the client left unset); anything else is refused
//! with an error naming it, never silently dropped.

use base64::Engine;
use serde_json::{Map, Value};

/// One protobuf message: its Go type name (for errors) and its fields.
pub struct Msg {
    pub name: &'static str,
    pub fields: &'static [Field],
}

/// One field of a message.
pub struct Field {
    pub tag: u32,
    /// The JSON name; empty for a struct embedded inline (its fields join the parent's).
    pub json: &'static str,
    pub ty: Ty,
    pub repeated: bool,
    pub zero: Zero,
}

/// What a zero scalar means in JSON.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Zero {
    /// A non-pointer `omitempty` field: a zero value is left out.
    Omit,
    /// A pointer, or a field without `omitempty`: the value is written even when zero.
    Keep,
}

/// How a field's bytes read.
pub enum Ty {
    String,
    Int32,
    Int64,
    Bool,
    Msg(&'static Msg),
    /// `bytes` (a Go `[]byte`): base64 in JSON.
    Bytes,
    /// `map<string, string>`.
    StringMap,
    /// `map<string, bytes>` (base64 values).
    BytesMap,
    /// `map<string, resource.Quantity>` (a `ResourceList`).
    QuantityMap,
    /// `intstr.IntOrString`: a number or a string.
    IntOrString,
    /// `metav1.Time`: RFC 3339 seconds in UTC, `null` when zero.
    Time,
    /// `resource.Quantity`: its string.
    Quantity,
    /// `metav1.MicroTime`: RFC 3339 with six fraction digits in UTC, `null` when zero.
    MicroTime,
    /// `metav1.FieldsV1`: its one bytes field holds JSON, kept as the JSON value.
    FieldsV1,
    /// A message read for well-formedness and left out (a status, which every kind read here
    /// resets on create and keeps on a main-resource write).
    Ignored,
}

impl Field {
    /// A field written even when zero (a pointer, or no `omitempty`).
    pub const fn keep(tag: u32, json: &'static str, ty: Ty) -> Field {
        Field {
            tag,
            json,
            ty,
            repeated: false,
            zero: Zero::Keep,
        }
    }

    /// A non-pointer `omitempty` field.
    pub const fn omit(tag: u32, json: &'static str, ty: Ty) -> Field {
        Field {
            tag,
            json,
            ty,
            repeated: false,
            zero: Zero::Omit,
        }
    }

    /// A repeated field (a Go slice; left out when empty).
    pub const fn list(tag: u32, json: &'static str, ty: Ty) -> Field {
        Field {
            tag,
            json,
            ty,
            repeated: true,
            zero: Zero::Omit,
        }
    }
}

/// One field as it lies on the wire.
enum Wire<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    Fixed32(u32),
}

/// Reads a base-128 varint.
fn varint(buf: &mut &[u8]) -> Result<u64, String> {
    let mut out = 0u64;
    for shift in (0..64).step_by(7) {
        let (&b, rest) = buf.split_first().ok_or("truncated varint")?;
        *buf = rest;
        out |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(out);
        }
    }
    Err("varint too long".into())
}

/// Splits a message into its fields, in wire order.
fn fields(mut buf: &[u8]) -> Result<Vec<(u32, Wire<'_>)>, String> {
    let mut out = Vec::new();
    while !buf.is_empty() {
        let key = varint(&mut buf)?;
        let tag = u32::try_from(key >> 3).map_err(|_| "field number out of range")?;
        let wire = match key & 7 {
            0 => Wire::Varint(varint(&mut buf)?),
            1 => {
                let (b, rest) = buf.split_at_checked(8).ok_or("truncated fixed64")?;
                buf = rest;
                Wire::Fixed64(u64::from_le_bytes(b.try_into().map_err(|_| "fixed64")?))
            }
            2 => {
                let len = usize::try_from(varint(&mut buf)?).map_err(|_| "length")?;
                let (b, rest) = buf.split_at_checked(len).ok_or("truncated field")?;
                buf = rest;
                Wire::Bytes(b)
            }
            5 => {
                let (b, rest) = buf.split_at_checked(4).ok_or("truncated fixed32")?;
                buf = rest;
                Wire::Fixed32(u32::from_le_bytes(b.try_into().map_err(|_| "fixed32")?))
            }
            w => return Err(format!("unsupported wire type {w}")),
        };
        out.push((tag, wire));
    }
    Ok(out)
}

/// Whether a field the tables do not name holds only what Go writes for an unset field: a zero
/// number, an empty string or message, or a message of such fields.
fn is_zero(wire: &Wire<'_>) -> bool {
    match wire {
        Wire::Varint(v) | Wire::Fixed64(v) => *v == 0,
        Wire::Fixed32(v) => *v == 0,
        Wire::Bytes(b) => {
            b.is_empty() || fields(b).is_ok_and(|f| f.iter().all(|(_, w)| is_zero(w)))
        }
    }
}

/// Decodes `buf` as `msg` into a JSON object.
pub fn decode(msg: &Msg, buf: &[u8]) -> Result<Map<String, Value>, String> {
    let mut out = Map::new();
    for (tag, wire) in fields(buf)? {
        let Some(field) = msg.fields.iter().find(|f| f.tag == tag) else {
            if is_zero(&wire) {
                continue;
            }
            return Err(format!(
                "protobuf field {tag} of {} is not read by this server (send the object as JSON or YAML)",
                msg.name
            ));
        };
        if matches!(field.ty, Ty::Ignored) {
            continue;
        }
        let value = value(field, &wire, msg)?;
        if field.json.is_empty() {
            if let Value::Object(inline) = value {
                out.extend(inline);
            }
            continue;
        }
        if field.repeated || matches!(field.ty, Ty::StringMap | Ty::BytesMap | Ty::QuantityMap) {
            merge_collection(&mut out, field, value);
            continue;
        }
        if field.zero == Zero::Omit && is_zero_json(&value) {
            out.remove(field.json);
            continue;
        }
        out.insert(field.json.to_string(), value);
    }
    Ok(out)
}

/// Appends a repeated field's element, or a map field's entry.
fn merge_collection(out: &mut Map<String, Value>, field: &Field, value: Value) {
    let slot = out.entry(field.json.to_string());
    match value {
        Value::Object(entry) if !field.repeated => {
            if let Value::Object(m) = slot.or_insert_with(|| Value::Object(Map::new())) {
                m.extend(entry);
            }
        }
        v => {
            if let Value::Array(a) = slot.or_insert_with(|| Value::Array(Vec::new())) {
                a.push(v);
            }
        }
    }
}

fn is_zero_json(v: &Value) -> bool {
    match v {
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_i64() == Some(0),
        Value::Bool(b) => !b,
        _ => false,
    }
}

/// One field's value as JSON (a map field's value is its one entry as an object).
fn value(field: &Field, wire: &Wire<'_>, parent: &Msg) -> Result<Value, String> {
    let wrong = || {
        format!(
            "protobuf field {} of {} has the wrong wire type",
            field.tag, parent.name
        )
    };
    let bytes = || match wire {
        Wire::Bytes(b) => Ok(*b),
        _ => Err(wrong()),
    };
    let int = || match wire {
        Wire::Varint(v) => Ok(*v),
        _ => Err(wrong()),
    };
    Ok(match &field.ty {
        Ty::String => Value::String(utf8(bytes()?)?),
        Ty::Bytes => Value::String(base64::engine::general_purpose::STANDARD.encode(bytes()?)),
        // Go writes an int32 as its 64-bit two's complement varint.
        Ty::Int32 => Value::from(int()? as i64 as i32),
        Ty::Int64 => Value::from(int()? as i64),
        Ty::Bool => Value::Bool(int()? != 0),
        Ty::Msg(m) => Value::Object(decode(m, bytes()?)?),
        Ty::Ignored => Value::Null,
        Ty::Quantity => quantity(bytes()?)?,
        Ty::FieldsV1 => {
            let mut raw = Value::Null;
            for (tag, w) in fields(bytes()?)? {
                if let (1, Wire::Bytes(b)) = (tag, w) {
                    raw = serde_json::from_slice(b)
                        .map_err(|e| format!("fieldsV1 of {} is not JSON: {e}", parent.name))?;
                }
            }
            raw
        }
        Ty::StringMap | Ty::BytesMap | Ty::QuantityMap => {
            let mut key = String::new();
            let mut val = Value::String(String::new());
            for (tag, w) in fields(bytes()?)? {
                let Wire::Bytes(b) = w else {
                    return Err(wrong());
                };
                match (tag, &field.ty) {
                    (1, _) => key = utf8(b)?,
                    (2, Ty::StringMap) => val = Value::String(utf8(b)?),
                    (2, Ty::BytesMap) => {
                        val = Value::String(base64::engine::general_purpose::STANDARD.encode(b));
                    }
                    (2, _) => val = quantity(b)?,
                    _ => {}
                }
            }
            let mut entry = Map::new();
            entry.insert(key, val);
            Value::Object(entry)
        }
        Ty::IntOrString => {
            let (mut kind, mut int_val, mut str_val) = (0, 0i32, String::new());
            for (tag, w) in fields(bytes()?)? {
                match (tag, w) {
                    (1, Wire::Varint(v)) => kind = v,
                    (2, Wire::Varint(v)) => int_val = v as i64 as i32,
                    (3, Wire::Bytes(b)) => str_val = utf8(b)?,
                    _ => return Err(wrong()),
                }
            }
            if kind == 1 {
                Value::String(str_val)
            } else {
                Value::from(int_val)
            }
        }
        Ty::Time | Ty::MicroTime => {
            let (mut seconds, mut nanos) = (0i64, 0i64);
            for (tag, w) in fields(bytes()?)? {
                match (tag, w) {
                    (1, Wire::Varint(v)) => seconds = v as i64,
                    (2, Wire::Varint(v)) => nanos = v as i64,
                    _ => return Err(wrong()),
                }
            }
            if seconds == 0 && nanos == 0 {
                Value::Null
            } else if matches!(field.ty, Ty::MicroTime) {
                let nanos = i32::try_from(nanos).map_err(|e| e.to_string())?;
                let t = jiff::Timestamp::new(seconds, nanos).map_err(|e| e.to_string())?;
                Value::String(t.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string())
            } else {
                let t = jiff::Timestamp::from_second(seconds).map_err(|e| e.to_string())?;
                Value::String(crd_core::time::rfc3339_seconds(t))
            }
        }
    })
}

fn utf8(b: &[u8]) -> Result<String, String> {
    String::from_utf8(b.to_vec()).map_err(|_| "a protobuf string is not UTF-8".to_string())
}

/// `resource.Quantity`'s one field, its string.
fn quantity(b: &[u8]) -> Result<Value, String> {
    let mut s = String::new();
    for (tag, w) in fields(b)? {
        if let (1, Wire::Bytes(v)) = (tag, w) {
            s = utf8(v)?;
        }
    }
    Ok(Value::String(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    static INNER: Msg = Msg {
        name: "t.Inner",
        fields: &[Field::keep(1, "count", Ty::Int32)],
    };
    static OUTER: Msg = Msg {
        name: "t.Outer",
        fields: &[
            Field::omit(1, "name", Ty::String),
            Field::keep(2, "replicas", Ty::Int32),
            Field::omit(3, "paused", Ty::Bool),
            Field::keep(4, "inner", Ty::Msg(&INNER)),
            Field::list(5, "args", Ty::String),
            Field::omit(6, "labels", Ty::StringMap),
            Field::keep(7, "port", Ty::IntOrString),
            Field::keep(8, "at", Ty::Time),
        ],
    };

    /// Hand-encoded messages in, Go's JSON out: zero `omitempty` scalars go, zero pointers and
    /// structs stay, lists and maps gather their elements, an unknown zero field is skipped and
    /// an unknown set field refused.
    #[test]
    fn messages_read_as_go_encodes_them() {
        let cases: &[(&[u8], Result<Value, &str>)] = &[
            (
                // name "", replicas 0, paused false, inner {}, args a b, labels {k: v}
                b"\x0a\x00\x10\x00\x18\x00\x22\x00\x2a\x01a\x2a\x01b\x32\x06\x0a\x01k\x12\x01v",
                Ok(
                    serde_json::json!({"replicas": 0, "inner": {}, "args": ["a", "b"], "labels": {"k": "v"}}),
                ),
            ),
            (
                // port: {type 1, strVal "http"}; at: zero time
                b"\x3a\x08\x08\x01\x1a\x04http\x42\x00",
                Ok(serde_json::json!({"port": "http", "at": null})),
            ),
            (
                // replicas -1 as Go writes it; port {intVal 80}
                b"\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x3a\x02\x10\x50",
                Ok(serde_json::json!({"replicas": -1, "port": 80})),
            ),
            (
                // unknown field 9 holding a zero message, then unknown field 10 = 0
                b"\x4a\x02\x08\x00\x50\x00\x0a\x01x",
                Ok(serde_json::json!({"name": "x"})),
            ),
            (
                b"\x50\x05",
                Err(
                    "protobuf field 10 of t.Outer is not read by this server (send the object as JSON or YAML)",
                ),
            ),
            (b"\x0a\x05ab", Err("truncated field")),
        ];
        for (bytes, want) in cases {
            let got = decode(&OUTER, bytes).map(Value::Object);
            assert_eq!(got, want.clone().map_err(String::from), "{bytes:?}");
        }
    }
}
