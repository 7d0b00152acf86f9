//! An object's stored bytes, and where its `resourceVersion` goes in them: a create answers
//! with the bytes it stored plus the revision the engine gave them, instead of serializing the
//! same object a second time (issue 19's create path).
//!
//! The bytes are exactly `serde_json::to_vec` of the object (compact, keys sorted: the map is a
//! `BTreeMap`), and the slot is the position `metadata.resourceVersion` takes in that order, so
//! the spliced answer is byte for byte what encoding the object with its resourceVersion set
//! gives, and what a GET of it returns.

use std::collections::BTreeMap;
use std::io::Write;

use serde_json::Value;
use serde_json::value::RawValue;

/// The key whose position in `metadata` the slot records.
const KEY: &str = "resourceVersion";

/// Where `"resourceVersion":"<rev>"` goes in an object's encoding, with the commas it needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VersionSlot {
    /// Byte offset of the insertion.
    at: usize,
    /// A metadata key precedes the slot: the insertion starts with `,`.
    after_key: bool,
    /// The slot is first in a non-empty metadata: the insertion ends with `,`.
    before_key: bool,
}

impl VersionSlot {
    /// `bytes` (the encoding the slot was found in) with `metadata.resourceVersion` set to
    /// `revision`.
    pub fn splice(self, bytes: &[u8], revision: i64) -> Vec<u8> {
        let mut out = Vec::with_capacity(bytes.len() + 40);
        out.extend_from_slice(&bytes[..self.at]);
        if self.after_key {
            out.push(b',');
        }
        // Writing to a Vec cannot fail.
        let _ = write!(out, r#""{KEY}":"{revision}""#);
        if self.before_key {
            out.push(b',');
        }
        out.extend_from_slice(&bytes[self.at..]);
        out
    }
}

/// `serde_json::to_vec(obj)`, and the [`VersionSlot`] of its `metadata`: `None` when the
/// object has no `metadata` object, or one that already holds a resourceVersion.
pub fn encode_with_version_slot(obj: &Value) -> serde_json::Result<(Vec<u8>, Option<VersionSlot>)> {
    let Some((top, metadata)) = obj.as_object().and_then(|top| {
        let m = top.get("metadata")?.as_object()?;
        (!m.contains_key(KEY)).then_some((top, m))
    }) else {
        let mut out = Vec::with_capacity(512);
        write_value(&mut out, obj)?;
        return Ok((out, None));
    };
    // The compact formatter's output, written key by key so the metadata's keys are visited.
    let mut out = Vec::with_capacity(512);
    let mut slot = None;
    out.push(b'{');
    for (i, (key, value)) in top.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(&mut out, key)?;
        out.push(b':');
        if key != "metadata" {
            write_value(&mut out, value)?;
            continue;
        }
        out.push(b'{');
        for (j, (k, v)) in metadata.iter().enumerate() {
            if slot.is_none() && k.as_str() > KEY {
                slot = Some(VersionSlot {
                    at: out.len(),
                    after_key: j > 0,
                    before_key: j == 0,
                });
            }
            if j > 0 {
                out.push(b',');
            }
            write_str(&mut out, k)?;
            out.push(b':');
            write_value(&mut out, v)?;
        }
        if slot.is_none() {
            slot = Some(VersionSlot {
                at: out.len(),
                after_key: !metadata.is_empty(),
                before_key: false,
            });
        }
        out.push(b'}');
    }
    out.push(b'}');
    Ok((out, slot))
}

/// The [`VersionSlot`] of stored bytes whose `metadata` object opens at `open` (its `{`), found
/// by reading the metadata's keys without decoding their values: a GET answers with the stored
/// bytes and its resourceVersion spliced where encoding the decoded object would put it. `None`
/// when there is no object at `open`, a key needs unescaping, or the metadata already holds a
/// resourceVersion (the caller then decodes).
pub fn version_slot_at(bytes: &[u8], open: usize) -> Option<VersionSlot> {
    let rest = bytes.get(open..)?;
    if rest.first() != Some(&b'{') {
        return None;
    }
    let mut de = serde_json::Deserializer::from_slice(rest);
    let metadata: BTreeMap<&str, &RawValue> = serde::Deserialize::deserialize(&mut de).ok()?;
    if metadata.contains_key(KEY) {
        return None;
    }
    let base = bytes.as_ptr() as usize;
    Some(match metadata.range(..KEY).next_back() {
        // After the value of the last key before it (the stored keys are sorted).
        Some((_, value)) => VersionSlot {
            at: value.get().as_ptr() as usize - base + value.get().len(),
            after_key: true,
            before_key: false,
        },
        None => VersionSlot {
            at: open + 1,
            after_key: false,
            before_key: !metadata.is_empty(),
        },
    })
}

/// `serde_json::to_writer(out, value)`'s bytes, with strings that need no escape copied in one
/// piece: `serde_json` looks each byte of a string up in its escape table as it writes it, which
/// for a create's long strings (a payload, a certificate, a script in a `ConfigMap`) was most of
/// the cost of encoding the object for storage, and 9% of a converted list's CPU.
pub fn write_value(out: &mut Vec<u8>, value: &Value) -> serde_json::Result<()> {
    match value {
        Value::String(s) => write_str(out, s)?,
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, item)?;
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, k)?;
                out.push(b':');
                write_value(out, v)?;
            }
            out.push(b'}');
        }
        // Null, booleans and numbers: serde_json's own formatting.
        scalar => serde_json::to_writer(&mut *out, scalar)?,
    }
    Ok(())
}

/// A JSON string as `serde_json` writes it: copied whole when no byte needs an escape (control
/// characters, `"` and `\` are the only ones `serde_json` escapes), else `serde_json`'s escaping.
fn write_str(out: &mut Vec<u8>, s: &str) -> serde_json::Result<()> {
    if needs_escape(s.as_bytes()) {
        return serde_json::to_writer(&mut *out, s);
    }
    out.reserve(s.len() + 2);
    out.push(b'"');
    out.extend_from_slice(s.as_bytes());
    out.push(b'"');
    Ok(())
}

/// Whether any byte is one `serde_json` escapes. Branch-free within each chunk, so the compiler
/// vectorizes it.
fn needs_escape(bytes: &[u8]) -> bool {
    bytes.chunks(32).any(|chunk| {
        let hits = chunk.iter().fold(0_u8, |hits, &b| {
            hits | u8::from(b < 0x20) | u8::from(b == b'"') | u8::from(b == b'\\')
        });
        hits != 0
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Objects in, and the bytes `serde_json` gives for them with and without a
    /// resourceVersion: the slot's bytes must be the same.
    #[test]
    fn the_encoding_and_the_spliced_answer_are_serde_jsons_bytes() {
        let cases = [
            // The slot in the middle, first, last, alone; escapes and unicode in keys/values.
            json!({"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a", "namespace": "n", "uid": "u"}, "spec": {"x": [1, 2.5, null, true]}}),
            json!({"apiVersion": "g/v1", "kind": "K", "metadata": {"uid": "u", "zz": {"a": 1}}}),
            json!({"apiVersion": "g/v1", "kind": "K", "metadata": {"annotations": {"a\"b": "c\\d\n"}, "name": "é"}}),
            json!({"metadata": {}}),
            json!({"a": 1, "metadata": {"resourceVersionX": "1", "resourceVersio": "2"}, "z": {}}),
            json!({"metadata": {"managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {}}}], "name": "b"}, "status": {"q": "\u{1}"}}),
        ];
        for obj in cases {
            let (bytes, slot) = encode_with_version_slot(&obj).unwrap();
            assert_eq!(bytes, serde_json::to_vec(&obj).unwrap(), "{obj}");
            // Read back from the bytes alone, the slot is the same.
            let open = metadata_open(&bytes);
            assert_eq!(version_slot_at(&bytes, open), slot, "{obj}");
            let mut with = obj.clone();
            with["metadata"][KEY] = json!("42");
            assert_eq!(
                String::from_utf8(slot.expect("a slot").splice(&bytes, 42)).unwrap(),
                serde_json::to_string(&with).unwrap(),
                "{obj}"
            );
        }
    }

    /// Where `"metadata":{` opens in a test object's bytes.
    fn metadata_open(bytes: &[u8]) -> usize {
        let key = br#""metadata":{"#;
        bytes
            .windows(key.len())
            .position(|w| w == key)
            .expect("metadata")
            + key.len()
            - 1
    }

    /// Stored bytes whose slot cannot be read without decoding: the caller decodes.
    #[test]
    fn a_slot_is_read_only_from_plain_metadata() {
        let cases: [&[u8]; 5] = [
            br#"{"metadata":{"resourceVersion":"1","uid":"u"}}"#,
            br#"{"metadata":{"na\u006de":"a"}}"#,
            br#"{"metadata":["name"]}"#,
            br#"{"metadata":{"name":"a""#,
            br#"{"metadata":"#,
        ];
        for bytes in cases {
            let open = bytes.len().min(12);
            assert_eq!(
                version_slot_at(bytes, open),
                None,
                "{}",
                String::from_utf8_lossy(bytes)
            );
        }
    }

    /// Strings with every byte `serde_json` escapes (and some it does not) at each position of a
    /// chunk, as values, keys and metadata fields: the encoding is `serde_json`'s, byte for byte.
    #[test]
    fn strings_are_encoded_as_serde_json_encodes_them() {
        let specials = [
            "\u{0}", "\u{1f}", "\n", "\t", "\"", "\\", "/", "\u{7f}", "é", "€", "😀", " ", "~",
        ];
        let mut strings = vec![String::new(), "x".repeat(900)];
        for special in specials {
            for len in [0, 1, 15, 31, 32, 33, 63, 64, 65, 100] {
                for at in [0, len / 2, len] {
                    let mut s = "a".repeat(len);
                    s.insert_str(at, special);
                    strings.push(s);
                }
            }
        }
        for s in &strings {
            let obj = json!({
                "apiVersion": "g/v1",
                s.clone(): [s, {s.clone(): s}],
                "metadata": {"name": s, s.clone(): s, "labels": {s.clone(): s}},
                "spec": {"payload": s, "n": [1, -2, 2.5, 1e300, u64::MAX, i64::MIN, null, true, false]},
            });
            let (bytes, slot) = encode_with_version_slot(&obj).unwrap();
            assert_eq!(bytes, serde_json::to_vec(&obj).unwrap(), "{s:?}");
            assert!(slot.is_some(), "{s:?}");
            // A metadata key that needs unescaping is not read without decoding.
            let read = version_slot_at(&bytes, metadata_open(&bytes));
            let expected = if needs_escape(s.as_bytes()) {
                None
            } else {
                slot
            };
            assert_eq!(read, expected, "{s:?}");
            let (bytes, slot) = encode_with_version_slot(&json!([s, {"k": s}])).unwrap();
            assert_eq!(bytes, serde_json::to_vec(&json!([s, {"k": s}])).unwrap());
            assert_eq!(slot, None);
        }
    }

    #[test]
    fn objects_without_a_slot_are_still_encoded() {
        for obj in [
            json!({"metadata": {"resourceVersion": "1", "name": "a"}}),
            json!({"metadata": "x"}),
            json!({"spec": {}}),
            json!([1, 2]),
        ] {
            let (bytes, slot) = encode_with_version_slot(&obj).unwrap();
            assert_eq!(bytes, serde_json::to_vec(&obj).unwrap(), "{obj}");
            assert_eq!(slot, None, "{obj}");
        }
    }
}
