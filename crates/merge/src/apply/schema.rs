//! Schemas as the apply engine sees them: a `JSONSchemaProps` document (a CRD's
//! `openAPIV3Schema`, or a built-in kind given in the same form) compiled into SMD types.
//!
//! The rules follow kube-openapi's `schemaconv` as kube-apiserver uses it for custom resources:
//! - an object with `properties` is a struct; with `additionalProperties` a map; both are
//!   granular unless `x-kubernetes-map-type: atomic`;
//! - an array is atomic unless `x-kubernetes-list-type` is `set` or `map` (keyed by
//!   `x-kubernetes-list-map-keys`, a key's `default` standing in when an item omits it); without a
//!   list type, `x-kubernetes-patch-strategy: merge` makes a map keyed by
//!   `x-kubernetes-patch-merge-key`, or a set when there is no merge key (built-in kinds);
//! - `x-kubernetes-int-or-string` and the scalar types are scalars;
//! - `x-kubernetes-preserve-unknown-fields` makes unknown parts *deduced*: objects are granular
//!   maps, lists atomic, everything else scalar;
//! - `x-kubernetes-embedded-resource` objects get `apiVersion`, `kind` and (unless declared) an
//!   ObjectMeta `metadata`, as the root does.
//!
//! `metadata` at the root is always typed as ObjectMeta is upstream: `labels` and `annotations`
//! granular maps, `finalizers` a set, `ownerReferences` a map keyed by `uid`, `managedFields`
//! atomic.

use std::collections::HashMap;

use serde_json::Value;

/// An index into a schema's type arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TypeId(u32);

pub(crate) const SCALAR: TypeId = TypeId(0);
pub(crate) const DEDUCED: TypeId = TypeId(1);
pub(crate) const OBJECT_META: TypeId = TypeId(2);

/// One SMD type.
#[derive(Debug)]
pub(crate) enum Node {
    /// A leaf of one scalar type (`Untyped`: any scalar, or a value whose type is unknown).
    Scalar(ScalarType),
    /// SMD's deduced type: maps granular (of deduced), lists atomic, scalars.
    Deduced,
    /// A struct (`fields`) and/or map (`elem`).
    Map {
        fields: HashMap<String, TypeId>,
        elem: Option<TypeId>,
        atomic: bool,
    },
    /// A list.
    List { elem: TypeId, kind: ListKind },
}

/// The scalar types of SMD's schema, which a configuration's values must have (`schemaconv`:
/// `string`, `integer`/`number`, `boolean`; `x-kubernetes-int-or-string` and built-in
/// quantities are untyped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ScalarType {
    /// Any scalar.
    Untyped,
    /// A string.
    String,
    /// An integer or a float.
    Numeric,
    /// A boolean.
    Boolean,
}

/// How a list's items are identified.
#[derive(Debug)]
pub(crate) enum ListKind {
    /// The list is owned and replaced whole.
    Atomic,
    /// Items are scalars identified by value.
    Set,
    /// Items are objects identified by these key fields (with their schema defaults).
    Map(Vec<(String, Option<Value>)>),
}

/// A compiled schema for one kind at one version. Build it once per CRD version (or built-in
/// kind) and reuse it for every request.
#[derive(Debug)]
pub struct Schema {
    nodes: Vec<Node>,
    root: TypeId,
}

impl Schema {
    /// Compiles a `JSONSchemaProps` document (the JSON of a CRD version's `openAPIV3Schema`). The
    /// root always has `apiVersion`, `kind` and an ObjectMeta `metadata`.
    pub fn from_json_schema(props: &Value) -> Schema {
        let mut s = Schema::base();
        let root = s.compile(props);
        s.root = s.as_resource(root, true);
        s
    }

    /// Returns the schema of an object whose schema is unknown: everything deduced except
    /// `metadata`.
    pub fn deduced() -> Schema {
        let mut s = Schema::base();
        s.root = s.as_resource(DEDUCED, true);
        s
    }

    fn base() -> Schema {
        let mut s = Schema {
            nodes: vec![Node::Scalar(ScalarType::Untyped), Node::Deduced],
            root: DEDUCED,
        };
        let meta = s.object_meta();
        debug_assert_eq!(meta, OBJECT_META);
        s
    }

    pub(crate) fn root(&self) -> TypeId {
        self.root
    }

    pub(crate) fn node(&self, t: TypeId) -> &Node {
        &self.nodes[t.0 as usize]
    }

    fn push(&mut self, n: Node) -> TypeId {
        self.nodes.push(n);
        TypeId((self.nodes.len() - 1) as u32)
    }

    /// Returns the type of `key` in map type `t`, and whether it is a declared (named) field.
    pub(crate) fn field(&self, t: TypeId, key: &str) -> (TypeId, bool) {
        match self.node(t) {
            Node::Map { fields, elem, .. } => match fields.get(key) {
                Some(ft) => (*ft, true),
                None => (elem.unwrap_or(DEDUCED), false),
            },
            _ => (DEDUCED, false),
        }
    }

    fn object_meta(&mut self) -> TypeId {
        let meta = self.push(Node::Scalar(ScalarType::Untyped));
        let string_map = self.push(Node::Map {
            fields: HashMap::new(),
            elem: Some(SCALAR),
            atomic: false,
        });
        let finalizers = self.push(Node::List {
            elem: SCALAR,
            kind: ListKind::Set,
        });
        let owner_ref_fields = [
            "apiVersion",
            "kind",
            "name",
            "uid",
            "controller",
            "blockOwnerDeletion",
        ]
        .into_iter()
        .map(|f| (f.to_owned(), SCALAR))
        .collect();
        let owner_ref = self.push(Node::Map {
            fields: owner_ref_fields,
            elem: None,
            atomic: false,
        });
        let owner_refs = self.push(Node::List {
            elem: owner_ref,
            kind: ListKind::Map(vec![("uid".to_owned(), None)]),
        });
        let managed = self.push(Node::List {
            elem: DEDUCED,
            kind: ListKind::Atomic,
        });
        let mut fields: HashMap<String, TypeId> = [
            "name",
            "generateName",
            "namespace",
            "selfLink",
            "uid",
            "resourceVersion",
            "generation",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
        ]
        .into_iter()
        .map(|f| (f.to_owned(), SCALAR))
        .collect();
        fields.insert("labels".to_owned(), string_map);
        fields.insert("annotations".to_owned(), string_map);
        fields.insert("finalizers".to_owned(), finalizers);
        fields.insert("ownerReferences".to_owned(), owner_refs);
        fields.insert("managedFields".to_owned(), managed);
        self.nodes[meta.0 as usize] = Node::Map {
            fields,
            elem: None,
            atomic: false,
        };
        meta
    }

    /// Makes `t` a resource: a struct with `apiVersion`, `kind` and ObjectMeta `metadata`. The
    /// root's `metadata` is always ObjectMeta; an embedded resource keeps a `metadata` its schema
    /// declares, as apiextensions' OpenAPI builder does.
    fn as_resource(&mut self, t: TypeId, root: bool) -> TypeId {
        let (mut fields, elem, atomic) = match self.node(t) {
            Node::Map {
                fields,
                elem,
                atomic,
            } => (fields.clone(), *elem, *atomic),
            _ => (HashMap::new(), Some(DEDUCED), false),
        };
        fields.entry("apiVersion".to_owned()).or_insert(SCALAR);
        fields.entry("kind".to_owned()).or_insert(SCALAR);
        if root {
            fields.insert("metadata".to_owned(), OBJECT_META);
        } else {
            fields.entry("metadata".to_owned()).or_insert(OBJECT_META);
        }
        self.push(Node::Map {
            fields,
            elem,
            atomic,
        })
    }

    fn compile(&mut self, p: &Value) -> TypeId {
        let Some(o) = p.as_object() else {
            return DEDUCED;
        };
        let flag = |k: &str| o.get(k).and_then(Value::as_bool).unwrap_or(false);
        let ty = o.get("type").and_then(Value::as_str).unwrap_or("");
        let compiled = if flag("x-kubernetes-int-or-string") {
            SCALAR
        } else {
            match ty {
                "object" => self.compile_object(o, flag("x-kubernetes-preserve-unknown-fields")),
                "array" => self.compile_array(o),
                "string" => self.push(Node::Scalar(ScalarType::String)),
                "integer" | "number" => self.push(Node::Scalar(ScalarType::Numeric)),
                "boolean" => self.push(Node::Scalar(ScalarType::Boolean)),
                _ if o.contains_key("properties") || o.contains_key("additionalProperties") => {
                    self.compile_object(o, flag("x-kubernetes-preserve-unknown-fields"))
                }
                _ if o.contains_key("items") => self.compile_array(o),
                _ => DEDUCED,
            }
        };
        if flag("x-kubernetes-embedded-resource") {
            self.as_resource(compiled, false)
        } else {
            compiled
        }
    }

    fn compile_object(&mut self, o: &serde_json::Map<String, Value>, preserve: bool) -> TypeId {
        let mut fields = HashMap::new();
        if let Some(Value::Object(props)) = o.get("properties") {
            for (name, sub) in props {
                let t = self.compile(sub);
                fields.insert(name.clone(), t);
            }
        }
        let elem = match o.get("additionalProperties") {
            Some(Value::Object(sub)) if !sub.is_empty() => {
                Some(self.compile(&Value::Object(sub.clone())))
            }
            Some(Value::Object(_) | Value::Bool(true)) => Some(DEDUCED),
            _ if preserve => Some(DEDUCED),
            _ => None,
        };
        if fields.is_empty() && elem.is_none() {
            // An object without properties keeps nothing after pruning; deduce what is there.
            return DEDUCED;
        }
        let atomic = o.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic");
        self.push(Node::Map {
            fields,
            elem,
            atomic,
        })
    }

    fn compile_array(&mut self, o: &serde_json::Map<String, Value>) -> TypeId {
        let items = match o.get("items") {
            Some(Value::Array(all)) => all.first(),
            other => other,
        };
        let elem = items.map_or(DEDUCED, |i| self.compile(i));
        let str_ext = |k: &str| o.get(k).and_then(Value::as_str);
        let key_default = |k: &str| -> Option<Value> {
            items?.get("properties")?.get(k)?.get("default").cloned()
        };
        let kind = match str_ext("x-kubernetes-list-type") {
            Some("set") => ListKind::Set,
            Some("map") => {
                let keys = o
                    .get("x-kubernetes-list-map-keys")
                    .and_then(Value::as_array)
                    .map(|ks| {
                        ks.iter()
                            .filter_map(Value::as_str)
                            .map(|k| (k.to_owned(), key_default(k)))
                            .collect::<Vec<_>>()
                    })
                    .unwrap_or_default();
                let mut keys = keys;
                keys.sort_by(|a, b| a.0.cmp(&b.0));
                ListKind::Map(keys)
            }
            Some(_) => ListKind::Atomic,
            None => match str_ext("x-kubernetes-patch-strategy") {
                Some(ps) if ps.split(',').any(|s| s == "merge") => {
                    match str_ext("x-kubernetes-patch-merge-key") {
                        Some(key) => ListKind::Map(vec![(key.to_owned(), key_default(key))]),
                        None => ListKind::Set,
                    }
                }
                _ => ListKind::Atomic,
            },
        };
        self.push(Node::List { elem, kind })
    }
}
