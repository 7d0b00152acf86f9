//! Partial decoding of stored objects for a read converted by rules: per CRD revision and pair
//! of versions ([`Plan`]), the fields the read leaves as they are (no rule reads or writes them,
//! the source schema defaults nothing there, the target schema keeps them, pruning and the
//! metadata checks cannot change them) are decoded into small borrowed values kept out of the
//! object's `Value` tree, and written back, in their place, when the converted object is
//! encoded. Everything else takes the full path (decode, defaults, rules, checks, prune,
//! encode) unchanged.
//!
//! Which fields: scalar properties (`string`, `integer`, `number`, `boolean`) the target schema
//! declares through nested `properties`, and `metadata.managedFields`, `creationTimestamp`,
//! `generation` and the other scalar `ObjectMeta` fields no check reads, when the rules reach
//! no further into `metadata` than labels and annotations. Each field is checked again on every
//! object, where the schema cannot tell: a scalar field must hold a string, number or boolean
//! (not `null`, an object or a list), and every `managedFields` entry must have only the keys
//! pruning keeps; a field failing its check is decoded into the `Value` as usual.
//!
//! Architecture Invariant: the bytes [`Plan::encode`] writes are the bytes the full path writes
//! (`serde_json`'s compact encoding of the `Value`)
//! for the same stored object. Anything unexpected (a stored object at another version, a
//! repeated key, a non-object where the plan expects one, invalid JSON) makes [`Plan::decode`]
//! refuse, and the caller takes the full path.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use crd_cel::conversion::{ConversionRules, MetadataReach};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// What a kept field must hold, checked on every object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// A string, number or boolean.
    Scalar,
    /// A list whose object entries have only `ManagedFieldsEntry` keys.
    ManagedFields,
}

/// An object of the plan: the keys kept out (slots) and the objects to look into.
#[derive(Debug, Default, PartialEq)]
struct Node {
    id: usize,
    children: BTreeMap<String, Child>,
}

#[derive(Debug, PartialEq)]
enum Child {
    Slot(Slot),
    Node(Node),
}

/// The fields a read converting stored objects from one version to another leaves alone,
/// decided once from the rules and both versions' schemas.
#[derive(Debug, PartialEq)]
pub struct Plan {
    /// The `apiVersion` of the objects the plan is for (`<group>/<source>`).
    source: String,
    root: Node,
}

/// The scalar `ObjectMeta` fields nothing of a read by rules looks at (the converted object's
/// identity is name, namespace, UID and kind; the read sets `resourceVersion`), when the rules
/// reach no further into `metadata` than labels and annotations.
const META_SCALARS: [&str; 5] = [
    "creationTimestamp",
    "deletionGracePeriodSeconds",
    "deletionTimestamp",
    "generateName",
    "generation",
];

/// Schema keywords a scalar field may have and still be kept out.
const SCALAR_TYPES: [&str; 4] = ["string", "integer", "number", "boolean"];

impl Plan {
    /// The plan of objects stored at `source` read at `target` (version names of `group`), or
    /// `None` when no field can be kept out. `schemas` are the versions' root schemas.
    pub fn build(
        rules: &ConversionRules,
        schemas: &BTreeMap<String, std::sync::Arc<Value>>,
        group: &str,
        source: &str,
        target: &str,
    ) -> Option<Plan> {
        let (from, to) = (schemas.get(source)?, schemas.get(target)?);
        let mut root = Node::default();
        if rules.metadata_reach(source, target) != MetadataReach::Any {
            let meta = META_SCALARS
                .iter()
                .map(|k| (*k, Slot::Scalar))
                .chain([("managedFields", Slot::ManagedFields)]);
            for (k, slot) in meta {
                let path = ["metadata", k];
                if !defaults_at(from, &path) && rules.leaves_alone(source, target, &path) {
                    insert(&mut root, &path, slot);
                }
            }
        }
        let mut leaves = Vec::new();
        scalar_leaves(to, &mut Vec::new(), &mut leaves);
        for path in leaves {
            let path: Vec<&str> = path.iter().map(String::as_str).collect();
            if !defaults_at(from, &path) && rules.leaves_alone(source, target, &path) {
                insert(&mut root, &path, Slot::Scalar);
            }
        }
        if root.children.is_empty() {
            return None;
        }
        number(&mut root, &mut 0);
        Some(Plan {
            source: format!("{group}/{source}"),
            root,
        })
    }

    /// Decodes a stored object, keeping the plan's fields out of its `Value`; `None` when the
    /// object must take the full path (another version, or anything unexpected).
    pub fn decode<'a>(&'a self, bytes: &'a [u8]) -> Option<Decoded<'a>> {
        let mut slots = Vec::new();
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let value = NodeSeed {
            node: &self.root,
            slots: &mut slots,
        }
        .deserialize(&mut de)
        .ok()?;
        de.end().ok()?;
        (value.get("apiVersion").and_then(Value::as_str) == Some(self.source.as_str()))
            .then_some(Decoded { value, slots })
    }

    /// Encodes the converted object with the fields [`Plan::decode`] kept out put back in their
    /// place (fields whose object the read removed go with it).
    pub fn encode(
        &self,
        value: &Value,
        slots: &[Filled<'_>],
        size_hint: usize,
    ) -> serde_json::Result<Vec<u8>> {
        let mut out = Vec::with_capacity(size_hint);
        write_spliced(&mut out, value, &self.root, slots)?;
        Ok(out)
    }
}

/// A stored object decoded by a [`Plan`]: its `Value` without the kept fields, and those.
pub struct Decoded<'a> {
    /// The object without the kept fields, to go through the read as usual.
    pub value: Value,
    /// The kept fields, for [`Plan::encode`].
    pub slots: Vec<Filled<'a>>,
}

/// One kept field of one object.
pub struct Filled<'a> {
    node: usize,
    key: &'a str,
    held: Held<'a>,
}

/// Paths (property names) of the scalar properties of `schema` reached through `properties`,
/// outside embedded resources and `metadata`.
fn scalar_leaves(schema: &Value, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (k, s) in props {
        if path.is_empty() && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        if s.get("x-kubernetes-embedded-resource") == Some(&Value::Bool(true)) {
            continue;
        }
        path.push(k.clone());
        match s.get("type").and_then(Value::as_str) {
            Some(t) if SCALAR_TYPES.contains(&t) => out.push(path.clone()),
            Some("object") => scalar_leaves(s, path, out),
            _ => {}
        }
        path.pop();
    }
}

/// Whether defaulting with `schema` can set anything at `path` (a `default` on the way there
/// through `properties` or `additionalProperties`).
fn defaults_at(schema: &Value, path: &[&str]) -> bool {
    let mut node = schema;
    for k in path {
        let next = node
            .get("properties")
            .and_then(|p| p.get(*k))
            .or_else(|| node.get("additionalProperties").filter(|a| a.is_object()));
        match next {
            Some(n) => node = n,
            None => return false,
        }
    }
    node.get("default").is_some()
}

fn insert(node: &mut Node, path: &[&str], slot: Slot) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    if rest.is_empty() {
        node.children
            .insert((*first).to_string(), Child::Slot(slot));
        return;
    }
    let child = node
        .children
        .entry((*first).to_string())
        .or_insert_with(|| Child::Node(Node::default()));
    if let Child::Node(n) = child {
        insert(n, rest, slot);
    }
}

fn number(node: &mut Node, next: &mut usize) {
    node.id = *next;
    *next += 1;
    for c in node.children.values_mut() {
        if let Child::Node(n) = c {
            number(n, next);
        }
    }
}

/// A JSON value borrowed from the stored bytes where it can be (strings without escapes).
/// Numbers and strings are decoded as `serde_json::Value` decodes them, objects as its map
/// (sorted keys, the last of repeated keys), so that encoding one writes what encoding the
/// `Value` would.
#[derive(Debug)]
enum Held<'a> {
    Null,
    Bool(bool),
    Number(Number),
    Str(Cow<'a, str>),
    Array(Vec<Held<'a>>),
    Object(Vec<(Cow<'a, str>, Held<'a>)>),
}

impl Held<'_> {
    /// Whether a field holding this may be kept out under `slot`.
    fn fits(&self, slot: Slot) -> bool {
        match (slot, self) {
            (Slot::Scalar, Held::Bool(_) | Held::Number(_) | Held::Str(_)) => true,
            (Slot::ManagedFields, Held::Array(items)) => items.iter().all(|item| match item {
                Held::Object(entry) => entry
                    .iter()
                    .all(|(k, _)| crd_schema::prune::MANAGED_FIELDS_FIELDS.contains(&k.as_ref())),
                _ => true,
            }),
            _ => false,
        }
    }

    fn into_value(self) -> Value {
        match self {
            Held::Null => Value::Null,
            Held::Bool(b) => Value::Bool(b),
            Held::Number(n) => Value::Number(n),
            Held::Str(s) => Value::String(s.into_owned()),
            Held::Array(items) => Value::Array(items.into_iter().map(Held::into_value).collect()),
            Held::Object(entries) => Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.into_owned(), v.into_value()))
                    .collect::<Map<_, _>>(),
            ),
        }
    }
}

/// Writes a string as `serde_json` encodes it. A `borrowed` string (taken from the stored bytes
/// as is) had no escape there, so it holds no quote, backslash or control character
/// (`serde_json` refuses raw control characters in strings) and needs none now.
fn write_str(out: &mut Vec<u8>, s: &str, borrowed: bool) -> serde_json::Result<()> {
    if !borrowed {
        return serde_json::to_writer(&mut *out, s);
    }
    out.reserve(s.len() + 2);
    out.push(b'"');
    out.extend_from_slice(s.as_bytes());
    out.push(b'"');
    Ok(())
}

/// Writes a held value as `serde_json` encodes the `Value` it stands for (compact).
fn write_held(out: &mut Vec<u8>, held: &Held<'_>) -> serde_json::Result<()> {
    match held {
        Held::Null => out.extend_from_slice(b"null"),
        Held::Bool(true) => out.extend_from_slice(b"true"),
        Held::Bool(false) => out.extend_from_slice(b"false"),
        Held::Number(n) => serde_json::to_writer(&mut *out, n)?,
        Held::Str(v) => write_str(out, v, matches!(v, Cow::Borrowed(_)))?,
        Held::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_held(out, item)?;
            }
            out.push(b']');
        }
        Held::Object(entries) => {
            out.push(b'{');
            for (i, (k, v)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, k, matches!(k, Cow::Borrowed(_)))?;
                out.push(b':');
                write_held(out, v)?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

impl<'de> de::Deserialize<'de> for Held<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(HeldVisitor)
    }
}

struct HeldVisitor;

impl<'de> Visitor<'de> for HeldVisitor {
    type Value = Held<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Held<'de>, E> {
        Ok(Held::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Held<'de>, E> {
        Ok(Held::Number(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Held<'de>, E> {
        Ok(Held::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Held<'de>, E> {
        // As `serde_json::Value`: a float JSON cannot hold is `null`.
        Ok(Number::from_f64(v).map_or(Held::Null, Held::Number))
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Held<'de>, E> {
        Ok(Held::Str(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Held<'de>, E> {
        Ok(Held::Str(Cow::Owned(v.to_string())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Held<'de>, E> {
        Ok(Held::Str(Cow::Owned(v)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Held<'de>, E> {
        Ok(Held::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Held<'de>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(4));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Held::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Held<'de>, A::Error> {
        let mut entries: Vec<(Cow<'de, str>, Held<'de>)> = Vec::with_capacity(8);
        let mut sorted = true;
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let value = map.next_value()?;
            sorted &= entries.last().is_none_or(|(last, _)| *last < key);
            entries.push((key, value));
        }
        if !sorted {
            // A map's order, and its last value of a repeated key.
            entries.reverse();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            entries.dedup_by(|later, first| later.0 == first.0);
        }
        Ok(Held::Object(entries))
    }
}

/// A map key, borrowed when it has no escapes.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_string()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}

/// Decodes the object at one plan node: its slots into `slots`, the rest into a `Value`.
struct NodeSeed<'p, 's> {
    node: &'p Node,
    slots: &'s mut Vec<Filled<'p>>,
}

impl<'p> DeserializeSeed<'p> for NodeSeed<'p, '_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'p>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'p> Visitor<'p> for NodeSeed<'p, '_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'p>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match self.node.children.get_key_value(key.as_str()) {
                Some((name, Child::Slot(slot))) => {
                    let held: Held<'p> = map.next_value()?;
                    let id = self.node.id;
                    if out.contains_key(&key)
                        || self.slots.iter().any(|s| s.node == id && s.key == name)
                    {
                        return Err(de::Error::custom("a repeated key"));
                    }
                    if held.fits(*slot) {
                        self.slots.push(Filled {
                            node: id,
                            key: name,
                            held,
                        });
                    } else {
                        out.insert(key, held.into_value());
                    }
                }
                Some((_, Child::Node(child))) => {
                    if out.contains_key(&key) {
                        return Err(de::Error::custom("a repeated key"));
                    }
                    let value = map.next_value_seed(NodeSeed {
                        node: child,
                        slots: &mut *self.slots,
                    })?;
                    out.insert(key, value);
                }
                None => {
                    let value: Value = map.next_value()?;
                    out.insert(key, value);
                }
            }
        }
        Ok(Value::Object(out))
    }
}

/// Writes a converted object (compact, as `serde_json` writes its `Value`) with the kept fields
/// of `node` and below put back in key order.
fn write_spliced(
    out: &mut Vec<u8>,
    value: &Value,
    node: &Node,
    slots: &[Filled<'_>],
) -> serde_json::Result<()> {
    let Value::Object(map) = value else {
        return serde_json::to_writer(&mut *out, value);
    };
    let mut own: Vec<(&str, &Held)> = slots
        .iter()
        .filter(|f| f.node == node.id && !map.contains_key(f.key))
        .map(|f| (f.key, &f.held))
        .collect();
    own.sort_unstable_by_key(|(k, _)| *k);
    let mut own = own.into_iter().peekable();
    let mut first = true;
    let mut sep = |out: &mut Vec<u8>| {
        if !std::mem::take(&mut first) {
            out.push(b',');
        }
    };
    out.push(b'{');
    for (k, v) in map {
        while let Some((sk, sv)) = own.next_if(|(sk, _)| *sk < k.as_str()) {
            sep(out);
            serde_json::to_writer(&mut *out, sk)?;
            out.push(b':');
            write_held(out, sv)?;
        }
        sep(out);
        serde_json::to_writer(&mut *out, k)?;
        out.push(b':');
        match node.children.get(k.as_str()) {
            Some(Child::Node(child)) => write_spliced(out, v, child, slots)?,
            _ => serde_json::to_writer(&mut *out, v)?,
        }
    }
    for (sk, sv) in own {
        sep(out);
        serde_json::to_writer(&mut *out, sk)?;
        out.push(b':');
        write_held(out, sv)?;
    }
    out.push(b'}');
    Ok(())
}

/// The kept fields' dotted paths (`spec.payload`), for tests.
#[cfg(test)]
pub(crate) fn kept_paths(plan: &Plan) -> Vec<String> {
    fn walk(node: &Node, prefix: &str, out: &mut Vec<String>) {
        for (k, c) in &node.children {
            let path = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            match c {
                Child::Slot(_) => out.push(path),
                Child::Node(n) => walk(n, &path, out),
            }
        }
    }
    let mut out = Vec::new();
    walk(&plan.root, "", &mut out);
    out
}
