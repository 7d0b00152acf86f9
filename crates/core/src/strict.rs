//! Strict decoding of JSON bodies, as `sigs.k8s.io/json`'s `UnmarshalStrict` reports it: the
//! paths of duplicate fields (`metadata.name`, `spec.containers[0].image`), and the document
//! order of every field path, so duplicate and unknown fields can be reported together in the
//! order a decoder meets them.

use std::collections::HashMap;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// What a scan of a JSON document found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct FieldScan {
    /// Every field path, with the position at which it first appeared.
    pub order: HashMap<String, usize>,
    /// Duplicate fields: the position of the repeat and the path.
    pub duplicates: Vec<(usize, String)>,
}

/// Scans a JSON document; `None` when it is not valid JSON (the decoder reports that).
pub fn scan(bytes: &[u8]) -> Option<FieldScan> {
    let mut scan = FieldScan::default();
    let mut counter = 0usize;
    let mut de = serde_json::Deserializer::from_slice(bytes);
    Node {
        path: String::new(),
        scan: &mut scan,
        counter: &mut counter,
    }
    .deserialize(&mut de)
    .ok()?;
    Some(scan)
}

/// Whether a JSON document repeats a field in any object: `Some(false)` for the common body
/// without duplicates, `None` when it is not valid JSON. Cheaper than [`scan`] (no paths, no
/// order map, keys borrowed from the body), so a create checks with it first and scans only a
/// body that has a duplicate.
pub fn has_duplicates(bytes: &[u8]) -> Option<bool> {
    let mut found = false;
    let mut de = serde_json::Deserializer::from_slice(bytes);
    Dup { found: &mut found }.deserialize(&mut de).ok()?;
    Some(found)
}

/// `serde_json::from_slice::<Value>(bytes)` and, from the same pass, whether an object in it
/// repeats a key ([`has_duplicates`]'s answer for valid JSON): a JSON body is decoded anyway,
/// and noting the repeats while its objects are built (a repeated key replaces the value
/// before it, as in `serde_json`) saves a second pass over every create's and update's body.
pub fn from_slice_noting_duplicates(bytes: &[u8]) -> serde_json::Result<(Value, bool)> {
    let mut found = false;
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = Build { found: &mut found }.deserialize(&mut de)?;
    de.end()?;
    Ok((value, found))
}

/// The value builder of [`from_slice_noting_duplicates`]: `serde_json`'s own `Value` visitor
/// (without its `arbitrary_precision` and `raw_value` features, which this workspace does not
/// enable), noting a repeated key.
struct Build<'a> {
    found: &'a mut bool,
}

impl<'de> DeserializeSeed<'de> for Build<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Value, D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Build<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(item) = seq.next_element_seed(Build {
            found: &mut *self.found,
        })? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut values = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(Build {
                found: &mut *self.found,
            })?;
            if values.insert(key, value).is_some() {
                *self.found = true;
            }
        }
        Ok(Value::Object(values))
    }
}

/// The visitor methods of a scan that looks only at objects and arrays: every scalar is a leaf
/// with nothing to check.
macro_rules! scalars_are_leaves {
    () => {
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON value")
        }
        fn visit_bool<E>(self, _: bool) -> Result<(), E> {
            Ok(())
        }
        fn visit_i64<E>(self, _: i64) -> Result<(), E> {
            Ok(())
        }
        fn visit_u64<E>(self, _: u64) -> Result<(), E> {
            Ok(())
        }
        fn visit_f64<E>(self, _: f64) -> Result<(), E> {
            Ok(())
        }
        fn visit_str<E>(self, _: &str) -> Result<(), E> {
            Ok(())
        }
        fn visit_unit<E>(self) -> Result<(), E> {
            Ok(())
        }
    };
}

/// The visitor of [`has_duplicates`].
struct Dup<'a> {
    found: &'a mut bool,
}

impl<'de> DeserializeSeed<'de> for Dup<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Dup<'_> {
    type Value = ();

    scalars_are_leaves!();

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq
            .next_element_seed(Dup {
                found: &mut *self.found,
            })?
            .is_some()
        {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // Objects in bodies are small: a linear search over the keys so far beats hashing.
        let mut keys: Vec<Key<'de>> = Vec::new();
        while let Some(key) = map.next_key::<Key<'de>>()? {
            if keys.contains(&key) {
                *self.found = true;
            } else {
                keys.push(key);
            }
            map.next_value_seed(Dup {
                found: &mut *self.found,
            })?;
        }
        Ok(())
    }
}

/// An object key of [`has_duplicates`], borrowed from the body unless it holds an escape.
/// (serde's own `Cow<str>` always allocates.)
#[derive(PartialEq, Eq)]
struct Key<'de>(std::borrow::Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Owned(v.to_owned())))
            }
        }
        de.deserialize_str(KeyVisitor)
    }
}

struct Node<'a> {
    path: String,
    scan: &'a mut FieldScan,
    counter: &'a mut usize,
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = ();

    scalars_are_leaves!();

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0usize;
        loop {
            let child = Node {
                path: format!("{}[{i}]", self.path),
                scan: &mut *self.scan,
                counter: &mut *self.counter,
            };
            if seq.next_element_seed(child)?.is_none() {
                return Ok(());
            }
            i += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = if self.path.is_empty() {
                key.clone()
            } else {
                format!("{}.{key}", self.path)
            };
            *self.counter += 1;
            let at = *self.counter;
            if seen.insert(key) {
                self.scan.order.entry(path.clone()).or_insert(at);
                map.next_value_seed(Node {
                    path,
                    scan: &mut *self.scan,
                    counter: &mut *self.counter,
                })?;
            } else {
                self.scan.duplicates.push((at, path));
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// Upstream's strict-decoding problems for a body: duplicate fields and unknown fields (paths
/// a decode dropped), in document order: `duplicate field "a"`, `unknown field "b"`.
pub fn problems(scan: &FieldScan, unknown: &[String]) -> Vec<String> {
    let mut all: Vec<(usize, String)> = scan
        .duplicates
        .iter()
        .map(|(at, p)| {
            (
                *at,
                format!("duplicate field {}", crate::field::go_quote(p)),
            )
        })
        .collect();
    all.extend(unknown.iter().map(|p| {
        (
            scan.order.get(p).copied().unwrap_or(usize::MAX),
            format!("unknown field {}", crate::field::go_quote(p)),
        )
    }));
    all.sort_by_key(|(at, _)| *at);
    all.into_iter().map(|(_, p)| p).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn has_duplicates_agrees_with_the_scan() {
        let cases: &[(&str, Option<bool>)] = &[
            (r#"{"a":1,"b":{"c":[{"d":1},{"d":2}]}}"#, Some(false)),
            (r#"{"a":1,"a":2}"#, Some(true)),
            (r#"{"a":{"b":1,"b":1}}"#, Some(true)),
            (r#"{"a":[{"x":1,"y":2,"x":3}]}"#, Some(true)),
            // The same key in sibling objects or list items is no duplicate.
            (
                r#"{"a":{"k":1},"b":{"k":1},"l":[{"k":1},{"k":1}]}"#,
                Some(false),
            ),
            // Escaped keys are compared decoded, as the scan compares them.
            (r#"{"a":1,"\u0061":2}"#, Some(true)),
            (r#"{"a\"b":1,"a\"b":2}"#, Some(true)),
            (r#"[1,"x",null,true,{"k":{}}]"#, Some(false)),
            ("{not json", None),
            // What follows the document is not looked at, as by the scan.
            (r#"{"a":1}} trailing"#, Some(false)),
        ];
        for (body, want) in cases {
            assert_eq!(has_duplicates(body.as_bytes()), *want, "{body}");
            if let Some(want) = want {
                let scan = super::scan(body.as_bytes()).expect("valid JSON");
                assert_eq!(!scan.duplicates.is_empty(), *want, "{body}");
            }
        }
    }

    /// One pass gives `serde_json`'s value and [`has_duplicates`]'s answer, or `serde_json`'s error.
    #[test]
    fn decoding_notes_duplicates_as_the_separate_check_finds_them() {
        let cases = [
            r#"{"a":1,"b":{"c":[{"d":1},{"d":2}]}}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"a":{"b":1,"b":{"x":[1,2]}}}"#,
            r#"{"a":[{"x":1,"y":2,"x":3}]}"#,
            r#"{"a":{"k":1},"b":{"k":1},"l":[{"k":1},{"k":1}]}"#,
            r#"{"a":1,"\u0061":2}"#,
            r#"{"a\"b":1,"a\"b":2}"#,
            r#"[1,"x",null,true,{"k":{}}]"#,
            r#"{"n":[0,-1,18446744073709551615,-9223372036854775808,1.5,-0.0,1e308,1e-320,12345678901234567890123]}"#,
            r#"{"s":["","é€😀","\ud83d\ude00","a\nb\t\"\\/"],"e":{},"l":[],"z":null}"#,
            "  {\"a\" : [ 1 , { } ] }  ",
            "3",
            r#""str""#,
            "null",
            "{not json",
            r#"{"a":1}} trailing"#,
            r#"{"a":1,}"#,
            "",
            r#"{"a":"\ud800"}"#,
        ];
        for body in cases {
            let ours = from_slice_noting_duplicates(body.as_bytes());
            match serde_json::from_slice::<Value>(body.as_bytes()) {
                Ok(want) => {
                    let (value, found) = ours.expect(body);
                    assert_eq!(value, want, "{body}");
                    assert_eq!(Some(found), has_duplicates(body.as_bytes()), "{body}");
                }
                Err(e) => assert_eq!(ours.expect_err(body).to_string(), e.to_string(), "{body}"),
            }
        }
    }

    #[test]
    fn duplicates_and_unknowns_in_document_order() {
        // The case of upstream's field-validation integration test, shortened.
        let body = br#"{"metadata":{"name":"a","name":"b","unknownMeta":1},
            "spec":{"unknown1":1,"paused":true,"paused":false,
              "template":{"spec":{"containers":[{"name":"c","unknownNested":1,"imagePullPolicy":"A","imagePullPolicy":"B"}]}}}}"#;
        let scan = super::scan(body).expect("valid JSON");
        let unknown = vec![
            "spec.template.spec.containers[0].unknownNested".to_string(),
            "metadata.unknownMeta".to_string(),
            "spec.unknown1".to_string(),
        ];
        assert_eq!(
            problems(&scan, &unknown).join(", "),
            r#"duplicate field "metadata.name", unknown field "metadata.unknownMeta", unknown field "spec.unknown1", duplicate field "spec.paused", unknown field "spec.template.spec.containers[0].unknownNested", duplicate field "spec.template.spec.containers[0].imagePullPolicy""#
        );
        assert!(super::scan(b"{not json").is_none());
        assert_eq!(has_duplicates(body), Some(true));
        assert!(
            super::scan(br#"{"a":1}"#)
                .expect("valid")
                .duplicates
                .is_empty()
        );
    }
}
