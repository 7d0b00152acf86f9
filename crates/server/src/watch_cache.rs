//! The server's side of the watch cache (`crd_storage::cache`): which index terms an object
//! has (its labels and `metadata.name`), and the terms a list's selectors imply, so that a
//! label or name selector visits only the matching objects instead of the whole collection.
//!
//! The indexer decodes each written object's metadata once ([`StoredMeta`]); the cache hands
//! that decoding to its watchers with the event, and the garbage collector's informers read
//! their metadata from it instead of parsing the object a second time (issue 19's create path:
//! each parse scans the whole stored object).

use std::sync::Arc;

use crd_core::fields::FieldSelector;
use crd_core::labels::Selector;
use crd_storage::cache::{CacheConfig, CacheObserver, CacheStore, Indexer};
use crd_storage::{Decoded, Store};
use serde::Deserialize;
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

/// The storage root every served key lives under; the cache covers it.
pub const ROOT: &str = "/registry/";

/// The index name of `metadata.name`.
const NAME: &str = "metadata.name";

/// The index name of a label key (`l:` and the key; label keys cannot contain a space, so
/// they never collide with field names).
fn label_index(key: &str) -> String {
    // Built directly: every event's labels pass here, and `format!` costs several times more.
    let mut index = String::with_capacity(key.len() + 2);
    index.push_str("l:");
    index.push_str(key);
    index
}

/// The metadata of a stored object that the watch cache's indexes and the garbage collector
/// read, decoded in one pass over the bytes (everything else is skipped without being built):
/// the indexer decodes it once per written object and the cache's events carry it
/// ([`crd_storage::KeyValue::decoded`]), so the collector does not parse the object again.
#[derive(Clone, Debug, PartialEq)]
#[expect(
    clippy::large_enum_variant,
    reason = "decoded once per written object and held behind an Arc: a box would only add an allocation"
)]
pub enum StoredMeta {
    /// Not JSON, or not an object whose `metadata` is an object or null (never written by this
    /// server): no index terms, and nothing for the collector.
    Invalid,
    /// An object without `metadata`, or with `metadata: null`.
    NoMetadata,
    /// An object's metadata.
    Metadata(MetaFields),
}

/// The fields of [`StoredMeta::Metadata`], each as decoded (`None` when absent or null).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MetaFields {
    name: Option<Value>,
    namespace: Option<Value>,
    uid: Option<Value>,
    labels: Option<Value>,
    owner_references: Option<Value>,
    finalizers: Option<Value>,
    deletion_timestamp: Option<Value>,
    /// The fields given more than once (bits of [`Field`]): a reader of such a field treats
    /// the object as undecodable, as a derived decoder of its own fields would.
    repeated: u8,
}

/// A metadata key this decoding reads; any other is skipped.
#[derive(Clone, Copy, Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum Field {
    Name,
    Namespace,
    Uid,
    Labels,
    OwnerReferences,
    Finalizers,
    DeletionTimestamp,
    #[serde(other)]
    Other,
}

impl Field {
    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// The fields the index reads: a repeat of either leaves the object without terms.
const INDEX_FIELDS: u8 = 1 << (Field::Name as u8) | 1 << (Field::Labels as u8);
/// The fields the collector reads: a repeat of any leaves the object out of its graph.
const GRAPH_FIELDS: u8 = 1 << (Field::Name as u8)
    | 1 << (Field::Namespace as u8)
    | 1 << (Field::Uid as u8)
    | 1 << (Field::OwnerReferences as u8)
    | 1 << (Field::Finalizers as u8)
    | 1 << (Field::DeletionTimestamp as u8);

impl<'de> Deserialize<'de> for MetaFields {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        de.deserialize_map(FieldsVisitor)
    }
}

struct FieldsVisitor;

impl<'de> Visitor<'de> for FieldsVisitor {
    type Value = MetaFields;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("object metadata")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MetaFields, A::Error> {
        let mut m = MetaFields::default();
        let mut seen = 0u8;
        while let Some(field) = map.next_key::<Field>()? {
            let slot = match field {
                Field::Name => &mut m.name,
                Field::Namespace => &mut m.namespace,
                Field::Uid => &mut m.uid,
                Field::Labels => &mut m.labels,
                Field::OwnerReferences => &mut m.owner_references,
                Field::Finalizers => &mut m.finalizers,
                Field::DeletionTimestamp => &mut m.deletion_timestamp,
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            // A repeated field keeps its last value, but readers of it ignore the object.
            if seen & field.bit() != 0 {
                m.repeated |= field.bit();
            }
            seen |= field.bit();
            *slot = map.next_value::<Option<Value>>()?;
        }
        Ok(m)
    }
}

#[derive(Deserialize)]
struct Top {
    #[serde(default)]
    metadata: Option<MetaFields>,
}

impl StoredMeta {
    /// Decodes a stored object's bytes.
    pub fn decode(bytes: &[u8]) -> Self {
        match serde_json::from_slice::<Top>(bytes) {
            Ok(Top {
                metadata: Some(fields),
            }) => StoredMeta::Metadata(fields),
            Ok(Top { metadata: None }) => StoredMeta::NoMetadata,
            Err(_) => StoredMeta::Invalid,
        }
    }

    /// What [`StoredMeta::decode`] reads from the bytes `obj` encodes to, taken from the
    /// object itself (cloning seven fields instead of parsing the whole object); `None` when
    /// `obj` is not an object whose metadata is an object or null (the bytes are decoded then).
    pub fn of_object(obj: &Value) -> Option<Self> {
        let metadata = match obj.as_object()?.get("metadata") {
            None | Some(Value::Null) => return Some(StoredMeta::NoMetadata),
            Some(Value::Object(m)) => m,
            Some(_) => return None,
        };
        let field = |name: &str| metadata.get(name).filter(|v| !v.is_null()).cloned();
        Some(StoredMeta::Metadata(MetaFields {
            name: field("name"),
            namespace: field("namespace"),
            uid: field("uid"),
            labels: field("labels"),
            owner_references: field("ownerReferences"),
            finalizers: field("finalizers"),
            deletion_timestamp: field("deletionTimestamp"),
            repeated: 0,
        }))
    }

    /// The index terms: `metadata.name` and every label, none at all when either is not a
    /// string (labels: an object of strings) or is repeated. A value that is not an object has
    /// no terms: lists with terms then skip it, which is right, as no selector could match it.
    pub fn index_terms(&self, out: &mut Vec<(String, String)>) {
        let StoredMeta::Metadata(m) = self else {
            return;
        };
        if m.repeated & INDEX_FIELDS != 0 {
            return;
        }
        let name = match &m.name {
            None => None,
            Some(Value::String(name)) => Some(name),
            Some(_) => return,
        };
        let labels = match &m.labels {
            None => None,
            Some(Value::Object(labels)) if labels.values().all(Value::is_string) => Some(labels),
            Some(_) => return,
        };
        if let Some(name) = name {
            out.push((NAME.to_string(), name.clone()));
        }
        for (k, v) in labels.into_iter().flatten() {
            out.push((label_index(k), v.as_str().unwrap_or_default().to_string()));
        }
    }

    /// The object as the garbage collector's graph reads it: `{"metadata": {...}}` with only
    /// `name`, `namespace`, `uid`, `ownerReferences`, `finalizers` and `deletionTimestamp`
    /// (those present and not null); `None` without metadata or when one of them is repeated.
    pub fn graph_object(&self) -> Option<Value> {
        let StoredMeta::Metadata(m) = self else {
            return None;
        };
        if m.repeated & GRAPH_FIELDS != 0 {
            return None;
        }
        let mut meta = serde_json::Map::new();
        for (field, value) in [
            ("deletionTimestamp", &m.deletion_timestamp),
            ("finalizers", &m.finalizers),
            ("name", &m.name),
            ("namespace", &m.namespace),
            ("ownerReferences", &m.owner_references),
            ("uid", &m.uid),
        ] {
            if let Some(value) = value {
                meta.insert(field.to_owned(), value.clone());
            }
        }
        let mut obj = serde_json::Map::new();
        obj.insert("metadata".to_owned(), Value::Object(meta));
        Some(Value::Object(obj))
    }

    /// The decoding an event carries, or the bytes decoded when it carries none (the watch
    /// cache off, or an event that did not come through it).
    pub fn of(kv: &crd_storage::KeyValue) -> std::borrow::Cow<'_, StoredMeta> {
        Self::carried_or_decoded(&kv.decoded, &kv.value)
    }

    /// The decoding `decoded` carries, or `bytes` decoded when it carries none.
    fn carried_or_decoded<'a>(
        decoded: &'a Decoded,
        bytes: &[u8],
    ) -> std::borrow::Cow<'a, StoredMeta> {
        match decoded.get::<StoredMeta>() {
            Some(m) => std::borrow::Cow::Borrowed(m),
            None => std::borrow::Cow::Owned(StoredMeta::decode(bytes)),
        }
    }
}

/// The decoding [`ObjectIndexer`] makes of the bytes `obj` encodes to, taken from the object,
/// for [`crd_storage::Store::create_decoded`]: the writer holds the object it encoded, so the
/// cache's feed need not parse the stored bytes again (that parse was about 5% of a create's
/// instructions).
pub fn decoding_of(obj: &Value) -> Decoded {
    StoredMeta::of_object(obj).map_or_else(Decoded::default, |m| Decoded::new(Arc::new(m)))
}

/// Indexes stored objects by `metadata.name` and by every label (an index per label key).
pub struct ObjectIndexer;

impl Indexer for ObjectIndexer {
    fn decode(&self, _key: &str, value: &[u8]) -> Decoded {
        Decoded::new(Arc::new(StoredMeta::decode(value)))
    }

    fn terms(&self, _key: &str, value: &[u8], decoded: &Decoded, out: &mut Vec<(String, String)>) {
        StoredMeta::carried_or_decoded(decoded, value).index_terms(out);
    }
}

/// The index terms every object a list with these selectors returns must have: each label the
/// selector requires exactly (`=`, `==`, one-value `in`) and an exact `metadata.name`.
pub fn index_terms(labels: &Selector, fields: &FieldSelector) -> Vec<(String, String)> {
    let mut terms = Vec::new();
    for r in labels.requirements() {
        if let Some(v) = labels.requires_exact_match(r.key()) {
            let term = (label_index(r.key()), v.to_string());
            if !terms.contains(&term) {
                terms.push(term);
            }
        }
    }
    if let Some(name) = fields.exact_match(NAME) {
        terms.push((NAME.to_string(), name.to_string()));
    }
    terms
}

/// Wraps `store` in a watch cache of [`ROOT`] indexed by [`ObjectIndexer`], reporting to
/// `observer` (the server's metrics).
pub fn wrap(store: Arc<dyn Store>, observer: Option<Arc<dyn CacheObserver>>) -> Arc<dyn Store> {
    let mut config = CacheConfig::new(ROOT, Some(Arc::new(ObjectIndexer)));
    config.observer = observer;
    CacheStore::new(store, config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(n: &str, v: &str) -> (String, String) {
        (n.to_string(), v.to_string())
    }

    #[test]
    fn objects_are_indexed_by_name_and_labels() {
        let cases: &[(&str, &[(&str, &str)])] = &[
            (
                r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"labels":{"app":"web","tier":""},"name":"a","namespace":"ns"},"data":{"x":"y"}}"#,
                &[("metadata.name", "a"), ("l:app", "web"), ("l:tier", "")],
            ),
            (r#"{"metadata":{"name":"b"}}"#, &[("metadata.name", "b")]),
            (r#"{"metadata":{"generateName":"x-"}}"#, &[]),
            (r#"{"kind":"X"}"#, &[]),
            (r"not json", &[]),
            (
                r#"{"metadata":{"name":"a\"b","labels":{"k\u0041":"v"}}}"#,
                &[("metadata.name", "a\"b"), ("l:kA", "v")],
            ),
        ];
        for (json, want) in cases {
            let mut out = Vec::new();
            let decoded = ObjectIndexer.decode("/registry/x", json.as_bytes());
            ObjectIndexer.terms("/registry/x", json.as_bytes(), &decoded, &mut out);
            let want: Vec<_> = want.iter().map(|(n, v)| t(n, v)).collect();
            assert_eq!(out, want, "{json}");
        }
    }

    /// The indexer's decoding before [`StoredMeta`] (its own pass over the bytes).
    fn index_terms_before(value: &[u8]) -> Vec<(String, String)> {
        use std::borrow::Cow;
        use std::collections::BTreeMap;
        #[derive(Deserialize)]
        struct Object<'a> {
            #[serde(borrow, default)]
            metadata: Metadata<'a>,
        }
        #[derive(Deserialize, Default)]
        struct Metadata<'a> {
            #[serde(borrow, default)]
            name: Option<Cow<'a, str>>,
            #[serde(borrow, default)]
            labels: Option<BTreeMap<Cow<'a, str>, Cow<'a, str>>>,
        }
        let mut out = Vec::new();
        let Ok(obj) = serde_json::from_slice::<Object<'_>>(value) else {
            return out;
        };
        if let Some(name) = obj.metadata.name {
            out.push((NAME.to_string(), name.into_owned()));
        }
        for (k, v) in obj.metadata.labels.into_iter().flatten() {
            out.push((label_index(&k), v.into_owned()));
        }
        out
    }

    /// The garbage collector's decoding before [`StoredMeta`] (its own pass over the bytes).
    fn graph_object_before(value: &[u8]) -> Option<Value> {
        #[derive(Deserialize)]
        struct GraphObject {
            #[serde(default)]
            metadata: Option<GraphMetadata>,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct GraphMetadata {
            #[serde(default)]
            uid: Option<Value>,
            #[serde(default)]
            name: Option<Value>,
            #[serde(default)]
            namespace: Option<Value>,
            #[serde(default)]
            owner_references: Option<Value>,
            #[serde(default)]
            deletion_timestamp: Option<Value>,
            #[serde(default)]
            finalizers: Option<Value>,
        }
        let m = serde_json::from_slice::<GraphObject>(value)
            .ok()?
            .metadata?;
        let mut meta = serde_json::Map::new();
        for (field, value) in [
            ("deletionTimestamp", m.deletion_timestamp),
            ("finalizers", m.finalizers),
            ("name", m.name),
            ("namespace", m.namespace),
            ("ownerReferences", m.owner_references),
            ("uid", m.uid),
        ] {
            if let Some(value) = value {
                meta.insert(field.to_owned(), value);
            }
        }
        Some(serde_json::json!({ "metadata": meta }))
    }

    /// The decoding taken from a written object is what decoding the bytes it encodes to
    /// gives; where it declines (metadata that is not an object), the bytes decode as invalid.
    #[test]
    fn the_decoding_of_an_object_is_the_decoding_of_its_bytes() {
        let cases = [
            r#"{"apiVersion":"g.io/v1","kind":"W","metadata":{"creationTimestamp":"2026-01-01T00:00:00Z","labels":{"app":"bench","tier":""},"managedFields":[{"manager":"m"}],"name":"w-1","namespace":"ns","uid":"u1"},"spec":{"replicas":3}}"#,
            r#"{"metadata":{"name":"c","namespace":"ns","uid":"u","ownerReferences":[{"apiVersion":"v1","kind":"P","name":"p","uid":"p1","controller":true,"weight":1.5}],"finalizers":["f","g"],"deletionTimestamp":"2026-01-01T00:00:00Z"}}"#,
            r#"{"kind":"X"}"#,
            r#"{"metadata":null}"#,
            r#"{"metadata":{}}"#,
            r#"{"metadata":{"name":"a","labels":null,"uid":null,"finalizers":null}}"#,
            r#"{"metadata":{"name":5,"labels":{"k":1},"namespace":["ns"]}}"#,
            r#"{"metadata":"nope"}"#,
            r#"{"metadata":[{"name":"a"}]}"#,
            r#"[{"metadata":{"name":"a"}}]"#,
            r#""text""#,
        ];
        for json in cases {
            let obj: Value = serde_json::from_str(json).expect(json);
            let bytes = serde_json::to_vec(&obj).expect("encode");
            let decoded = StoredMeta::decode(&bytes);
            match StoredMeta::of_object(&obj) {
                Some(taken) => assert_eq!(taken, decoded, "{json}"),
                None => assert!(
                    decoded == StoredMeta::Invalid || !obj.is_object(),
                    "{json}: declined, but its bytes decode to {decoded:?}"
                ),
            }
            let carried = decoding_of(&obj);
            let mut terms = Vec::new();
            ObjectIndexer.terms("/registry/x", &bytes, &carried, &mut terms);
            let mut parsed = Vec::new();
            decoded.index_terms(&mut parsed);
            assert_eq!(terms, parsed, "{json}: index terms");
        }
    }

    /// One decoding for the index and the collector gives what each decoded on its own, for
    /// the objects this server stores and for odd ones it never writes.
    #[test]
    fn the_shared_metadata_gives_what_each_reader_decoded_before() {
        let cases = [
            // As stored: compact, keys sorted, managed fields and a large spec skipped.
            r#"{"apiVersion":"g.io/v1","kind":"W","metadata":{"creationTimestamp":"2026-01-01T00:00:00Z","labels":{"app":"bench","tier":""},"managedFields":[{"apiVersion":"g.io/v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:app":{}}}},"manager":"m","operation":"Update","time":"2026-01-01T00:00:00Z"}],"name":"w-1","namespace":"ns","uid":"u1"},"spec":{"payload":"xxxxxxxx","replicas":3}}"#,
            r#"{"metadata":{"name":"c","namespace":"ns","uid":"u","ownerReferences":[{"apiVersion":"v1","kind":"P","name":"p","uid":"p1","controller":true}],"finalizers":["f","g"],"deletionTimestamp":"2026-01-01T00:00:00Z","deletionGracePeriodSeconds":0}}"#,
            // Missing, null, empty or non-object metadata.
            r#"{"kind":"X"}"#,
            r#"{"metadata":null}"#,
            r#"{"metadata":{}}"#,
            r#"{"metadata":"nope"}"#,
            r#"{"metadata":5}"#,
            // Null, empty and odd fields.
            r#"{"metadata":{"name":"a","labels":null}}"#,
            r#"{"metadata":{"name":null,"labels":{}}}"#,
            r#"{"metadata":{"name":"a","labels":{"k":null}}}"#,
            r#"{"metadata":{"name":"a","labels":{"k":1}}}"#,
            r#"{"metadata":{"name":"a","labels":["k"]}}"#,
            r#"{"metadata":{"name":"a","labels":"k=v"}}"#,
            r#"{"metadata":{"name":5,"uid":"u","labels":{"k":"v"}}}"#,
            r#"{"metadata":{"name":"b","uid":"u2","deletionTimestamp":null,"finalizers":null}}"#,
            r#"{"metadata":{"generateName":"x-","uid":7,"namespace":["ns"]}}"#,
            // Repeated keys: in metadata (fields read by one reader, the other, both, neither)
            // and at the top.
            r#"{"metadata":{"name":"a","name":"b","uid":"u"}}"#,
            r#"{"metadata":{"name":"a","labels":{"k":"v"},"labels":{"k":"w"},"uid":"u"}}"#,
            r#"{"metadata":{"name":"a","uid":"u","uid":"v","labels":{"k":"v"}}}"#,
            r#"{"metadata":{"name":"a","finalizers":[],"finalizers":null,"labels":{"k":"v"}}}"#,
            r#"{"metadata":{"name":"a","resourceVersion":"1","resourceVersion":"2","uid":"u"}}"#,
            r#"{"metadata":{"name":"a","labels":{"k":"v","k":"w"}}}"#,
            r#"{"metadata":{"name":"a"},"metadata":{"name":"b"}}"#,
            r#"{"kind":"X","kind":"Y","metadata":{"name":"a","uid":"u"}}"#,
            // Escapes in keys and values.
            r#"{"metadata":{"name":"a"b","labels":{"kA":"v
"},"uid":"u"}}"#,
            // Not an object, not JSON, or not only JSON.
            r#"[{"name":"a","labels":{"k":"v"}}]"#,
            "[]",
            "null",
            r#""metadata""#,
            "not json",
            r#"{"metadata":{"name":"a"}"#,
            r#"{"metadata":{"name":"a"}} x"#,
            "",
        ];
        for json in cases {
            let bytes = json.as_bytes();
            let shared = StoredMeta::decode(bytes);
            let mut terms = Vec::new();
            shared.index_terms(&mut terms);
            assert_eq!(terms, index_terms_before(bytes), "index terms of {json}");
            assert_eq!(
                shared.graph_object(),
                graph_object_before(bytes),
                "graph object of {json}"
            );
            // Through the indexer, and from an event that carries the decoding or none.
            let decoded = ObjectIndexer.decode("/registry/x", bytes);
            let mut through = Vec::new();
            ObjectIndexer.terms("/registry/x", bytes, &decoded, &mut through);
            assert_eq!(through, terms, "{json}");
            let mut none = Vec::new();
            ObjectIndexer.terms("/registry/x", bytes, &Decoded::default(), &mut none);
            assert_eq!(none, terms, "{json}");
            let mut kv = crd_storage::KeyValue {
                key: "/registry/x".into(),
                value: bytes::Bytes::copy_from_slice(bytes),
                create_revision: 1,
                mod_revision: 1,
                decoded: Decoded::default(),
            };
            assert_eq!(*StoredMeta::of(&kv), shared, "{json}");
            kv.decoded = decoded;
            assert!(
                matches!(StoredMeta::of(&kv), std::borrow::Cow::Borrowed(m) if *m == shared),
                "{json}: the event's decoding is used"
            );
        }
    }

    /// Where the two readers' own decoders accepted a `metadata` array (serde's derived structs
    /// read a sequence as the fields in order), the shared decoding reads nothing: stored
    /// metadata is always an object (validated on every write).
    #[test]
    fn metadata_that_is_an_array_decodes_to_nothing() {
        for json in [r#"{"metadata":["a"]}"#, r#"{"metadata":[]}"#] {
            let shared = StoredMeta::decode(json.as_bytes());
            assert_eq!(shared, StoredMeta::Invalid, "{json}");
            let mut terms = Vec::new();
            shared.index_terms(&mut terms);
            assert_eq!(terms, Vec::new(), "{json}");
            assert_eq!(shared.graph_object(), None, "{json}");
        }
    }

    /// (label selector, field selector, expected terms)
    type Case<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);

    #[test]
    fn selectors_imply_only_exact_terms() {
        let cases: &[Case<'_>] = &[
            ("app=web", "", &[("l:app", "web")]),
            (
                "app==web,tier in (front)",
                "",
                &[("l:app", "web"), ("l:tier", "front")],
            ),
            ("app!=web", "", &[]),
            ("app in (a,b)", "", &[]),
            ("app", "", &[]),
            ("!app", "", &[]),
            ("", "metadata.name=x", &[("metadata.name", "x")]),
            ("", "metadata.name!=x", &[]),
            (
                "app=web",
                "metadata.namespace=ns,metadata.name=x",
                &[("l:app", "web"), ("metadata.name", "x")],
            ),
        ];
        for (labels, fields, want) in cases {
            let labels = Selector::parse(labels).expect("labels");
            let fields = FieldSelector::parse(fields).expect("fields");
            let want: Vec<_> = want.iter().map(|(n, v)| t(n, v)).collect();
            assert_eq!(index_terms(&labels, &fields), want, "{labels} {fields}");
        }
    }
}
