//! Strict decoding of JSON bodies, as `sigs.k8s.io/json`'s `UnmarshalStrict` reports it: the
//! paths of duplicate fields (`metadata.name`, `spec.containers[0].image`), and the document
//! order of every field path, so duplicate and unknown fields can be reported together in the
//! order a decoder meets them.

use std::collections::HashMap;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

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
