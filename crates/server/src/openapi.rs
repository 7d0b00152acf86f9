//! OpenAPI v3 publishing: `/openapi/v3` (an index with a content hash per group-version) and one
//! document per group-version, enough for kubectl's field-validation check, patch-type choice
//! and `kubectl explain`. The built-in kinds' documents come from their `crd_builtin` rows and
//! definitions; `/openapi/v2` merges every document.
//!
//! Documents are cached per group-version, as kube-apiserver's OpenAPI v3 service caches them:
//! the built-in ones are built once; after CRD changes only the groups that changed are
//! rebuilt (the registry's change log says which), so a group's document costs the same with
//! one CRD or a thousand, and an unchanged document keeps its bytes and hash (its `ETag`). The
//! index and `/openapi/v2` are derived from the documents on first request.
//!
//! Main types: [`OpenApiCache`], [`Documents`].

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, LazyLock, OnceLock};

use serde_json::{Value, json};
use sha2::{Digest, Sha512};

mod cr_schema;

use crate::registry::Scope;
use crate::registry::serving::{Registry, ServingCrd, group_of_name};

/// One rendered document: its content hash and JSON bytes.
pub type Doc = (Arc<str>, Arc<Vec<u8>>);

/// Rendered documents by path (`api/v1`, `apis/<g>/<v>`), each with its hash, and the single
/// Swagger 2.0 document of `/openapi/v2` for clients that still read it.
pub struct Documents {
    /// Path → (hash, JSON bytes).
    pub docs: BTreeMap<String, Doc>,
    /// The paths of each CRD group's documents.
    crd_paths: HashMap<String, Vec<String>>,
    /// The index document, rendered on first request.
    index: OnceLock<Arc<Vec<u8>>>,
    /// `/openapi/v2` as JSON with its hash, merged on first request.
    v2: OnceLock<(String, Arc<Vec<u8>>)>,
    /// `/openapi/v2` in protobuf, encoded on first request.
    v2_protobuf: OnceLock<Vec<u8>>,
    /// Each document's share of `/openapi/v2` by the document's hash, shared by the sets of
    /// documents that follow this one: after a CRD change only the changed documents are
    /// converted again.
    v2_parts: Arc<std::sync::Mutex<HashMap<Arc<str>, Arc<V2Part>>>>,
    /// What each CRD group version's document was built from, by document path: its v2 share
    /// is built from the same CRDs with their schemas published for v2.
    crd_sources: HashMap<String, CrdSource>,
}

/// A CRD group version's document's inputs.
#[derive(Clone)]
struct CrdSource {
    group: String,
    version: String,
    crds: Arc<Vec<Arc<ServingCrd>>>,
}

/// One OpenAPI v3 document's share of `/openapi/v2`: its paths and definitions, converted to
/// Swagger 2.0 and rendered, by name.
struct V2Part {
    paths: Vec<(String, String)>,
    definitions: Vec<(String, String)>,
}

impl V2Part {
    /// The share of a document, from its v3 bytes or, for a CRD group version, built again
    /// from its CRDs for v2.
    fn of(bytes: &[u8], source: Option<&CrdSource>) -> V2Part {
        let doc = match source {
            Some(s) => crd_document(&s.group, &s.version, &s.crds, cr_schema::Flavor::V2),
            None => match serde_json::from_slice::<Value>(bytes) {
                Ok(doc) => doc,
                Err(_) => {
                    return V2Part {
                        paths: Vec::new(),
                        definitions: Vec::new(),
                    };
                }
            },
        };
        let merged = swagger_v2(std::iter::once(&doc));
        let render = |key: &str| -> Vec<(String, String)> {
            merged
                .get(key)
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.to_string()))
                .collect()
        };
        // Every document carries the metadata definitions alike: the merge adds them once.
        let shared = metadata_definitions();
        let mut definitions = render("definitions");
        definitions.retain(|(name, _)| !shared.contains_key(name));
        V2Part {
            paths: render("paths"),
            definitions,
        }
    }

    /// The metadata definitions ([`metadata_definitions`]) as Swagger 2.0, rendered once.
    fn shared_definitions() -> &'static [(String, String)] {
        static SHARED: std::sync::LazyLock<Vec<(String, String)>> =
            std::sync::LazyLock::new(|| {
                let doc = json!({"components": {"schemas": metadata_definitions()}});
                swagger_v2(std::iter::once(&doc))["definitions"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| (k.clone(), v.to_string()))
                    .collect()
            });
        &SHARED
    }
}

impl Documents {
    /// `/openapi/v2` as JSON, with its hash (the `ETag`), merged once per set of documents.
    ///
    /// Each document is converted once while its hash is unchanged ([`V2Part`]); the merge is
    /// then a concatenation of rendered parts (a later document's path or definition replaces
    /// an earlier one of the same name, as [`swagger_v2`] merges), and the hash is taken over
    /// the documents' hashes, which determine it.
    pub fn v2(&self) -> &(String, Arc<Vec<u8>>) {
        self.v2.get_or_init(|| {
            let parts: Vec<Arc<V2Part>> = {
                let mut cache = self
                    .v2_parts
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let parts: Vec<Arc<V2Part>> = self
                    .docs
                    .iter()
                    .map(|(path, (h, bytes))| {
                        cache
                            .entry(h.clone())
                            .or_insert_with(|| {
                                Arc::new(V2Part::of(bytes, self.crd_sources.get(path)))
                            })
                            .clone()
                    })
                    .collect();
                let live: std::collections::HashSet<&str> =
                    self.docs.values().map(|(h, _)| &**h).collect();
                cache.retain(|h, _| live.contains(&**h));
                parts
            };
            let mut paths: BTreeMap<&str, &str> = BTreeMap::new();
            let mut definitions: BTreeMap<&str, &str> = V2Part::shared_definitions()
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            for part in &parts {
                for (k, v) in &part.paths {
                    paths.insert(k, v);
                }
                for (k, v) in &part.definitions {
                    definitions.insert(k, v);
                }
            }
            let size: usize = paths
                .iter()
                .chain(definitions.iter())
                .map(|(k, v)| k.len() + v.len() + 4)
                .sum();
            let mut bytes = Vec::with_capacity(size + 256);
            let object = |out: &mut Vec<u8>, entries: &BTreeMap<&str, &str>| {
                out.push(b'{');
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    let _ = serde_json::to_writer(&mut *out, k);
                    out.push(b':');
                    out.extend_from_slice(v.as_bytes());
                }
                out.push(b'}');
            };
            bytes.extend_from_slice(br#"{"definitions":"#);
            object(&mut bytes, &definitions);
            bytes.extend_from_slice(br#","info":"#);
            let _ = serde_json::to_writer(&mut bytes, &v2_info());
            bytes.extend_from_slice(br#","paths":"#);
            object(&mut bytes, &paths);
            bytes.extend_from_slice(br#","swagger":"2.0"}"#);
            let mut hasher = Sha512::new();
            for (h, _) in self.docs.values() {
                hasher.update(h.as_bytes());
            }
            (hex_upper(&hasher.finalize()), Arc::new(bytes))
        })
    }

    /// `/openapi/v2` as gnostic's protobuf `Document`, encoded once per set of documents.
    pub fn v2_protobuf(&self) -> &[u8] {
        self.v2_protobuf.get_or_init(|| {
            serde_json::from_slice::<Value>(&self.v2().1)
                .map(|doc| crate::openapi_pb::encode_document(&doc))
                .unwrap_or_default()
        })
    }

    /// The index document's JSON bytes, rendered once per set of documents.
    pub fn index(&self) -> Arc<Vec<u8>> {
        self.index
            .get_or_init(|| {
                let paths: serde_json::Map<String, Value> = self
                    .docs
                    .iter()
                    .map(|(p, (h, _))| {
                        (
                            p.clone(),
                            json!({"serverRelativeURL": format!("/openapi/v3/{p}?hash={h}")}),
                        )
                    })
                    .collect();
                Arc::new(serde_json::to_vec(&json!({ "paths": paths })).unwrap_or_default())
            })
            .clone()
    }

    /// The built-in documents and every CRD group's.
    fn build(registry: &Registry) -> Documents {
        let mut docs = Documents {
            docs: BUILTIN.clone(),
            crd_paths: HashMap::new(),
            index: OnceLock::new(),
            v2: OnceLock::new(),
            v2_protobuf: OnceLock::new(),
            v2_parts: Arc::default(),
            crd_sources: HashMap::new(),
        };
        if registry.runtime_config().crd_v1beta1 {
            docs.docs.insert(
                "apis/apiextensions.k8s.io/v1beta1".into(),
                APIEXTENSIONS_V1BETA1.clone(),
            );
        }
        let mut groups: Vec<String> = registry.all().iter().map(|crd| crd.group.clone()).collect();
        groups.sort_unstable();
        groups.dedup();
        for group in groups {
            docs.rebuild_group(registry, &group);
        }
        docs
    }

    /// A copy sharing every document, with `groups` rebuilt.
    fn with_groups(&self, registry: &Registry, groups: &[&str]) -> Documents {
        let mut docs = Documents {
            docs: self.docs.clone(),
            crd_paths: self.crd_paths.clone(),
            index: OnceLock::new(),
            v2: OnceLock::new(),
            v2_protobuf: OnceLock::new(),
            v2_parts: self.v2_parts.clone(),
            crd_sources: self.crd_sources.clone(),
        };
        for group in groups {
            docs.rebuild_group(registry, group);
        }
        docs
    }

    /// Replaces one CRD group's documents (its Established CRDs' served versions); a document
    /// whose bytes are unchanged keeps its hash.
    fn rebuild_group(&mut self, registry: &Registry, group: &str) {
        for path in self.crd_paths.remove(group).unwrap_or_default() {
            self.crd_sources.remove(&path);
            // A built-in document a CRD group had replaced comes back.
            match BUILTIN.get(&path) {
                Some(doc) => self.docs.insert(path, doc.clone()),
                None => self.docs.remove(&path),
            };
        }
        let mut by_version: BTreeMap<String, Vec<Arc<ServingCrd>>> = BTreeMap::new();
        for crd in registry.in_group(group) {
            if !crd.established {
                continue;
            }
            for v in crd.versions.iter().filter(|v| v.served) {
                by_version
                    .entry(v.name.clone())
                    .or_default()
                    .push(crd.clone());
            }
        }
        let mut paths = Vec::with_capacity(by_version.len());
        for (version, crds) in by_version {
            let path = format!("apis/{group}/{version}");
            let doc = crd_document(group, &version, &crds, cr_schema::Flavor::V3);
            let bytes = serde_json::to_vec(&doc).unwrap_or_default();
            self.docs
                .insert(path.clone(), (hash(&bytes).into(), Arc::new(bytes)));
            self.crd_sources.insert(
                path.clone(),
                CrdSource {
                    group: group.to_string(),
                    version,
                    crds: Arc::new(crds),
                },
            );
            paths.push(path);
        }
        if !paths.is_empty() {
            self.crd_paths.insert(group.to_string(), paths);
        }
    }
}

/// The built-in kinds' documents, rendered once per process.
static BUILTIN: LazyLock<BTreeMap<String, Doc>> = LazyLock::new(|| {
    let mut raw: BTreeMap<String, Value> = BTreeMap::new();
    raw.insert("api/v1".into(), core_v1());
    raw.insert("apis/apiextensions.k8s.io/v1".into(), apiextensions("v1"));
    raw.insert(
        "apis/storagemigration.k8s.io/v1alpha1".into(),
        storagemigration_v1alpha1(),
    );
    let mut builtin_gvs: BTreeMap<(&str, &str), Vec<&'static crd_builtin::Kind>> = BTreeMap::new();
    for k in crd_builtin::KINDS.iter().filter(|k| !k.group.is_empty()) {
        builtin_gvs.entry((k.group, k.version)).or_default().push(k);
    }
    for ((g, v), kinds) in builtin_gvs {
        let mut paths = serde_json::Map::new();
        let mut schemas = serde_json::Map::new();
        builtin_kinds(&mut paths, &mut schemas, &kinds);
        raw.insert(format!("apis/{g}/{v}"), document(paths, schemas));
    }
    raw.into_iter()
        .map(|(p, doc)| {
            let bytes = serde_json::to_vec(&doc).unwrap_or_default();
            (p, (hash(&bytes).into(), Arc::new(bytes)))
        })
        .collect()
});

/// The `apiextensions.k8s.io/v1beta1` document, published with `--runtime-config`.
static APIEXTENSIONS_V1BETA1: LazyLock<Doc> = LazyLock::new(|| {
    let bytes = serde_json::to_vec(&apiextensions("v1beta1")).unwrap_or_default();
    (hash(&bytes).into(), Arc::new(bytes))
});

/// Documents kept up to date with the CRD registry. An update runs on the blocking pool, one
/// at a time, and rebuilds only the groups changed since the last one; requests for the
/// documents wait for it asynchronously, and nothing else (health checks, resource requests)
/// waits at all.
#[derive(Default)]
pub struct OpenApiCache {
    cached: std::sync::RwLock<Option<(u64, Arc<Documents>)>>,
    rebuilding: tokio::sync::Mutex<()>,
}

impl OpenApiCache {
    fn cached(&self) -> Option<(u64, Arc<Documents>)> {
        self.cached
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The documents for the registry's current state (or a newer one).
    pub async fn get(&self, registry: &Arc<Registry>) -> Arc<Documents> {
        let generation = registry.generation();
        match self.cached() {
            Some((g, docs)) if g >= generation => return docs,
            _ => {}
        }
        let _single_flight = self.rebuilding.lock().await;
        let previous = self.cached();
        if let Some((g, docs)) = &previous
            && *g >= generation
        {
            return docs.clone();
        }
        let registry = registry.clone();
        let (generation, docs) = match tokio::task::spawn_blocking(move || {
            update(&registry, previous.as_ref().map(|(g, d)| (*g, d.as_ref())))
        })
        .await
        {
            Ok((g, d)) => (g, Arc::new(d)),
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        };
        *self
            .cached
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some((generation, docs.clone()));
        docs
    }
}

/// The documents at the registry's current generation, from `previous` (documents at an older
/// generation) when the registry's change log reaches back to it.
fn update(registry: &Registry, previous: Option<(u64, &Documents)>) -> (u64, Documents) {
    if let Some((generation, docs)) = previous
        && let Some((now, names)) = registry.changes_since(generation)
    {
        let mut groups: Vec<&str> = names.iter().map(|n| group_of_name(n)).collect();
        groups.sort_unstable();
        groups.dedup();
        return (now, docs.with_groups(registry, &groups));
    }
    // Read before the build, so that a change during it triggers another update.
    let generation = registry.generation();
    (generation, Documents::build(registry))
}

fn hash(bytes: &[u8]) -> String {
    hex_upper(&Sha512::digest(bytes))
}

/// Upper-case hexadecimal, as kube-apiserver prints content hashes.
pub fn hex_upper(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02X}");
    }
    s
}

/// Rewrites OpenAPI v3 references (`#/components/schemas/X`) as Swagger 2.0 ones
/// (`#/definitions/X`), and kube-openapi's v3 wrapping of a described reference
/// (`allOf: [{$ref}]` beside a description) as the v2 form (`$ref` beside it).
fn v2_refs(v: &mut Value) {
    match v {
        Value::Object(m) => {
            let single_ref = m
                .get("allOf")
                .and_then(Value::as_array)
                .filter(|a| a.len() == 1)
                .and_then(|a| a[0].as_object())
                .filter(|r| r.len() == 1)
                .and_then(|r| r.get("$ref"))
                .cloned();
            if let Some(r) = single_ref {
                m.remove("allOf");
                m.insert("$ref".into(), r);
            }
            if let Some(Value::String(r)) = m.get_mut("$ref")
                && let Some(name) = r.strip_prefix("#/components/schemas/")
            {
                *r = format!("#/definitions/{name}");
            }
            for child in m.values_mut() {
                v2_refs(child);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(v2_refs),
        _ => {}
    }
}

/// One Swagger 2.0 operation from an OpenAPI v3 operation: query parameters carry their type
/// inline, a request body becomes the `body` parameter, responses carry a `schema`.
fn v2_operation(op: &Value) -> Value {
    let mut out = op.clone();
    let Some(m) = out.as_object_mut() else {
        return out;
    };
    let mut params: Vec<Value> = m
        .remove("parameters")
        .and_then(|p| p.as_array().cloned())
        .unwrap_or_default()
        .into_iter()
        .map(|mut p| {
            if let Some(pm) = p.as_object_mut()
                && let Some(Value::Object(schema)) = pm.remove("schema")
            {
                for (k, v) in schema {
                    pm.entry(k).or_insert(v);
                }
            }
            p
        })
        .collect();
    if let Some(body) = m.remove("requestBody") {
        let schema = body
            .pointer("/content")
            .and_then(Value::as_object)
            .and_then(|c| c.values().next())
            .and_then(|c| c.get("schema"))
            .cloned()
            .unwrap_or_else(|| json!({"type": "object"}));
        params.push(json!({"name": "body", "in": "body", "required": true, "schema": schema}));
    }
    if !params.is_empty() {
        m.insert("parameters".into(), Value::Array(params));
    }
    if let Some(Value::Object(responses)) = m.get_mut("responses") {
        for resp in responses.values_mut() {
            let schema = resp
                .pointer("/content")
                .and_then(Value::as_object)
                .and_then(|c| c.values().next())
                .and_then(|c| c.get("schema"))
                .cloned();
            if let Some(r) = resp.as_object_mut() {
                r.remove("content");
                r.entry("description").or_insert_with(|| Value::from("OK"));
                if let Some(schema) = schema {
                    r.insert("schema".into(), schema);
                }
            }
        }
    }
    m.insert(
        "consumes".into(),
        json!(["application/json", "application/yaml"]),
    );
    m.insert(
        "produces".into(),
        json!(["application/json", "application/yaml"]),
    );
    out
}

/// Merges the per-group-version OpenAPI v3 documents into one Swagger 2.0 document.
fn swagger_v2<'a>(docs: impl Iterator<Item = &'a Value>) -> Value {
    let mut definitions = serde_json::Map::new();
    let mut paths = serde_json::Map::new();
    for doc in docs {
        if let Some(schemas) = doc
            .pointer("/components/schemas")
            .and_then(Value::as_object)
        {
            for (k, v) in schemas {
                definitions.insert(k.clone(), v.clone());
            }
        }
        if let Some(ps) = doc.get("paths").and_then(Value::as_object) {
            for (path, item) in ps {
                let mut out = serde_json::Map::new();
                for (method, op) in item.as_object().into_iter().flatten() {
                    if method == "parameters" {
                        out.insert(
                            method.clone(),
                            v2_operation(&json!({"parameters": op}))["parameters"].clone(),
                        );
                    } else {
                        out.insert(method.clone(), v2_operation(op));
                    }
                }
                paths.insert(path.clone(), Value::Object(out));
            }
        }
    }
    let mut doc = json!({
        "swagger": "2.0",
        "info": v2_info(),
        "paths": paths,
        "definitions": definitions,
    });
    v2_refs(&mut doc);
    doc
}

/// The `info` of `/openapi/v2`.
fn v2_info() -> Value {
    json!({"title": "Kubernetes", "version": format!("v1.{}.0", crate::version::KUBE_MINOR)})
}

fn gvk(group: &str, version: &str, kind: &str) -> Value {
    json!({"group": group, "version": version, "kind": kind})
}

fn field_validation_param() -> Value {
    json!({"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": true},
           "description": "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore - Warn - Strict"})
}

fn schema_ref(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

/// Operations for one resource's collection and item paths.
fn resource_paths(
    paths: &mut serde_json::Map<String, Value>,
    base: &str,
    scope: Scope,
    gvk_value: &Value,
    schema_name: &str,
    patch_types: &[&str],
) {
    let (prefix, resource) = base.rsplit_once('/').unwrap_or(("", base));
    let collection = match scope {
        Scope::Namespaced => format!("{prefix}/namespaces/{{namespace}}/{resource}"),
        Scope::Cluster => base.to_string(),
    };
    let item = format!("{collection}/{{name}}");
    let obj = json!({"application/json": {"schema": schema_ref(schema_name)}});
    let op = |action: &str, extra: Value| {
        let mut o = json!({
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": gvk_value,
            "responses": {"200": {"description": "OK", "content": obj}},
            "parameters": [field_validation_param()],
        });
        if let (Some(o), Some(e)) = (o.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                o.insert(k.clone(), v.clone());
            }
        }
        o
    };
    let patch_content: serde_json::Map<String, Value> = patch_types
        .iter()
        .map(|t| ((*t).to_string(), json!({"schema": {"type": "object"}})))
        .collect();
    paths.insert(
        collection,
        json!({
            "get": op("list", json!({})),
            "post": op("post", json!({"requestBody": {"content": obj}})),
            "delete": op("deletecollection", json!({})),
        }),
    );
    paths.insert(
        item,
        json!({
            "get": op("get", json!({})),
            "put": op("put", json!({"requestBody": {"content": obj}})),
            "patch": op("patch", json!({"requestBody": {"content": patch_content}})),
            "delete": op("delete", json!({})),
        }),
    );
}

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";

/// `ObjectMeta` and `ListMeta` with every definition they reach (`ManagedFieldsEntry`,
/// `OwnerReference`, `Time`, ...), documented as upstream's (k8s-openapi's schemas): what every
/// group-version document carries for its objects' and lists' metadata (`kubectl explain
/// <kind>.metadata.labels`).
fn metadata_definitions() -> &'static serde_json::Map<String, Value> {
    static DEFS: std::sync::LazyLock<serde_json::Map<String, Value>> =
        std::sync::LazyLock::new(|| {
            let defs = crd_builtin::schema::definitions();
            [OBJECT_META, LIST_META]
                .iter()
                .flat_map(|d| crd_builtin::schema::reachable(d))
                .filter_map(|name| Some((name.clone(), defs.get(&name)?.clone())))
                .collect()
        });
    &DEFS
}

fn document(
    paths: serde_json::Map<String, Value>,
    mut schemas: serde_json::Map<String, Value>,
) -> Value {
    for (name, def) in metadata_definitions() {
        schemas.entry(name.clone()).or_insert_with(|| def.clone());
    }
    let mut doc =
        json!({"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.32.0"}});
    doc["paths"] = Value::Object(paths);
    doc["components"] = json!({});
    doc["components"]["schemas"] = Value::Object(schemas);
    doc
}

/// `TypeMeta`'s and `PartialObjectMetadata`'s field docs, as upstream's CRD OpenAPI builder
/// (`addTypeMetaProperties`) writes them on every kind and list.
const API_VERSION_DOC: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DOC: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
const METADATA_DOC: &str = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// The `metadata` property of a kind (and of a custom resource's embedded resources): the
/// documented `ObjectMeta`.
fn metadata_property() -> Value {
    json!({"allOf": [schema_ref(OBJECT_META)], "description": METADATA_DOC})
}

fn kind_schema(gvk_value: &Value, description: &str, mut schema: Value) -> Value {
    if !schema.is_object() {
        schema = json!({"type": "object"});
    }
    let props = schema
        .as_object_mut()
        .map(|m| m.entry("properties").or_insert_with(|| json!({})))
        .filter(|p| p.is_object());
    if let Some(props) = props {
        props["apiVersion"] = json!({"type": "string", "description": API_VERSION_DOC});
        props["kind"] = json!({"type": "string", "description": KIND_DOC});
        props["metadata"] = metadata_property();
    }
    schema["x-kubernetes-group-version-kind"] = json!([gvk_value]);
    if schema.get("description").is_none() && !description.is_empty() {
        schema["description"] = json!(description);
    }
    schema
}

fn core_v1() -> Value {
    let g = gvk("", "v1", "Namespace");
    let mut paths = serde_json::Map::new();
    resource_paths(
        &mut paths,
        "/api/v1/namespaces",
        Scope::Cluster,
        &g,
        "io.k8s.api.core.v1.Namespace",
        &[
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
            "application/apply-patch+yaml",
        ],
    );
    let mut schemas = serde_json::Map::new();
    schemas.insert(
        "io.k8s.api.core.v1.Namespace".into(),
        kind_schema(
            &g,
            "Namespace provides a scope for Names. Use of multiple namespaces is optional.",
            json!({"type": "object", "properties": {
                "spec": {"type": "object", "properties": {"finalizers": {"type": "array", "items": {"type": "string"}}}},
                "status": {"type": "object", "properties": {"phase": {"type": "string"}}}}}),
        ),
    );
    let core: Vec<&'static crd_builtin::Kind> = crd_builtin::KINDS
        .iter()
        .filter(|k| k.group.is_empty())
        .collect();
    builtin_kinds(&mut paths, &mut schemas, &core);
    document(paths, schemas)
}

/// The patch types a built-in kind's PATCH operations accept (strategic merge included, so
/// that `kubectl apply` sends strategic merge patches).
const BUILTIN_PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

/// Paths and schemas of `crd_builtin` rows: each kind's collection and item operations, and
/// every definition its schema reaches (with `x-kubernetes-group-version-kind` on the kind's).
fn builtin_kinds(
    paths: &mut serde_json::Map<String, Value>,
    schemas: &mut serde_json::Map<String, Value>,
    kinds: &[&'static crd_builtin::Kind],
) {
    let defs = crd_builtin::schema::definitions();
    for k in kinds {
        let base = if k.group.is_empty() {
            format!("/api/{}/{}", k.version, k.plural)
        } else {
            format!("/apis/{}/{}/{}", k.group, k.version, k.plural)
        };
        let g = gvk(k.group, k.version, k.kind);
        resource_paths(paths, &base, k.scope, &g, k.definition, BUILTIN_PATCH_TYPES);
        for name in crd_builtin::schema::reachable(k.definition) {
            if let Some(d) = defs.get(&name) {
                schemas.insert(name, d.clone());
            }
        }
    }
}

fn apiextensions(version: &str) -> Value {
    let g = gvk("apiextensions.k8s.io", version, "CustomResourceDefinition");
    let name = format!(
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.{version}.CustomResourceDefinition"
    );
    let mut paths = serde_json::Map::new();
    resource_paths(
        &mut paths,
        &format!("/apis/apiextensions.k8s.io/{version}/customresourcedefinitions"),
        Scope::Cluster,
        &g,
        &name,
        // Strategic merge patch is deliberately not advertised, so that `kubectl apply` of a
        // CRD sends a JSON merge patch.
        &[
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/apply-patch+yaml",
        ],
    );
    let mut schemas = serde_json::Map::new();
    schemas.insert(
        name,
        kind_schema(
            &g,
            "CustomResourceDefinition represents a resource that should be exposed on the API server.  Its name MUST be in the format <.spec.name>.<.spec.group>.",
            json!({"type": "object", "properties": {"spec": {"type": "object"}, "status": {"type": "object"}}}),
        ),
    );
    document(paths, schemas)
}

fn storagemigration_v1alpha1() -> Value {
    let g = gvk(
        "storagemigration.k8s.io",
        "v1alpha1",
        "StorageVersionMigration",
    );
    let name = "io.k8s.api.storagemigration.v1alpha1.StorageVersionMigration";
    let mut paths = serde_json::Map::new();
    resource_paths(
        &mut paths,
        "/apis/storagemigration.k8s.io/v1alpha1/storageversionmigrations",
        Scope::Cluster,
        &g,
        name,
        &[
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/apply-patch+yaml",
        ],
    );
    let mut schemas = serde_json::Map::new();
    schemas.insert(
        name.into(),
        kind_schema(
            &g,
            "StorageVersionMigration represents a migration of stored data to the latest storage version.",
            json!({"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "resource": {"type": "object", "properties": {
                        "group": {"type": "string"}, "version": {"type": "string"},
                        "resource": {"type": "string"}}},
                    "continueToken": {"type": "string"}}},
                "status": {"type": "object", "properties": {
                    "conditions": {"type": "array", "items": {"type": "object"}},
                    "resourceVersion": {"type": "string"}}}}}),
        ),
    );
    document(paths, schemas)
}

/// `com.example.stable` for `stable.example.com`, as kube-openapi names CRD schemas.
fn reversed_group(group: &str) -> String {
    group.split('.').rev().collect::<Vec<_>>().join(".")
}

/// One CRD group version's document, its kinds' schemas published for `flavor`.
fn crd_document(
    group: &str,
    version: &str,
    crds: &[Arc<ServingCrd>],
    flavor: cr_schema::Flavor,
) -> Value {
    let mut paths = serde_json::Map::new();
    let mut schemas = serde_json::Map::new();
    for crd in crds {
        let Some(v) = crd.served_version(version) else {
            continue;
        };
        let g = gvk(group, version, &crd.kind);
        let schema_name = format!("{}.{version}.{}", reversed_group(group), crd.kind);
        resource_paths(
            &mut paths,
            &format!("/apis/{group}/{version}/{}", crd.plural),
            crd.scope,
            &g,
            &schema_name,
            &[
                "application/json-patch+json",
                "application/merge-patch+json",
                "application/apply-patch+yaml",
            ],
        );
        let list_name = format!("{schema_name}List");
        let list_ref = json!({"application/json": {"schema": schema_ref(&list_name)}});
        let collection = match crd.scope {
            Scope::Namespaced => {
                // Lists across namespaces: the resource's path without a namespace.
                let all = format!("/apis/{group}/{version}/{}", crd.plural);
                paths.insert(
                    all,
                    json!({"get": {
                        "x-kubernetes-action": "list",
                        "x-kubernetes-group-version-kind": g,
                        "responses": {"200": {"description": "OK", "content": list_ref}},
                    }}),
                );
                format!(
                    "/apis/{group}/{version}/namespaces/{{namespace}}/{}",
                    crd.plural
                )
            }
            Scope::Cluster => format!("/apis/{group}/{version}/{}", crd.plural),
        };
        if let Some(list) = paths.get_mut(&collection) {
            list["get"]["responses"]["200"]["content"] = list_ref;
        }
        schemas.insert(list_name, list_schema(group, version, crd, &schema_name));
        let kind =
            match cr_schema::kind_body(v.schema.as_deref(), crd.preserve_unknown_fields, flavor) {
                Some(body) => kind_schema(&g, "", body),
                None => json!({"type": "object", "x-kubernetes-group-version-kind": [g]}),
            };
        schemas.insert(schema_name, kind);
    }
    document(paths, schemas)
}

/// A custom resource's `<Kind>List`, as kube-apiserver's CRD OpenAPI builder writes it.
fn list_schema(group: &str, version: &str, crd: &ServingCrd, item: &str) -> Value {
    json!({
        "description": format!("{} is a list of {}", crd.list_kind, crd.kind),
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"type": "string", "description": API_VERSION_DOC},
            "items": {
                "type": "array",
                "description": format!("List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md", crd.plural),
                "items": schema_ref(item),
            },
            "kind": {"type": "string", "description": KIND_DOC},
            "metadata": {
                "allOf": [schema_ref(LIST_META)],
                "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
            },
        },
        "x-kubernetes-group-version-kind": [gvk(group, version, &crd.list_kind)],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaced_paths_have_gvk_and_field_validation() {
        let mut paths = serde_json::Map::new();
        let g = gvk("stable.example.com", "v1", "CronTab");
        resource_paths(
            &mut paths,
            "/apis/stable.example.com/v1/crontabs",
            Scope::Namespaced,
            &g,
            "x",
            &["application/merge-patch+json"],
        );
        let item = &paths["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}"];
        assert_eq!(item["patch"]["x-kubernetes-group-version-kind"], g);
        assert_eq!(item["patch"]["parameters"][0]["name"], "fieldValidation");
        assert!(
            item["patch"]["requestBody"]["content"]
                .get("application/strategic-merge-patch+json")
                .is_none()
        );
        assert!(paths.contains_key("/apis/stable.example.com/v1/namespaces/{namespace}/crontabs"));
    }

    #[test]
    fn builtin_kinds_are_published_with_their_definitions() {
        let registry = Registry::new(crate::conversion::ConversionOptions::default());
        let docs = Documents::build(&registry);
        let doc = |p: &str| -> Value {
            serde_json::from_slice(
                docs.docs
                    .get(p)
                    .unwrap_or_else(|| panic!("{p}"))
                    .1
                    .as_slice(),
            )
            .unwrap()
        };
        let core = doc("api/v1");
        let cm = &core["components"]["schemas"]["io.k8s.api.core.v1.ConfigMap"];
        assert_eq!(
            cm["x-kubernetes-group-version-kind"][0],
            json!({"group": "", "version": "v1", "kind": "ConfigMap"})
        );
        assert!(cm["properties"]["data"]["description"].is_string());
        assert!(
            core["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"].is_object()
        );
        assert!(core["components"]["schemas"]["io.k8s.api.core.v1.Namespace"].is_object());
        let apps = doc("apis/apps/v1");
        assert!(apps["components"]["schemas"]["io.k8s.api.core.v1.PodSpec"].is_object());
        assert!(
            apps["components"]["schemas"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]
                ["properties"]["labels"]["description"]
                .is_string()
        );
        for p in [
            "apis/events.k8s.io/v1",
            "apis/coordination.k8s.io/v1",
            "apis/batch/v1",
        ] {
            assert!(docs.docs.contains_key(p), "{p}");
        }
    }

    #[test]
    fn hash_changes_with_content() {
        assert_ne!(hash(b"a"), hash(b"b"));
        assert_eq!(hash(b"a").len(), 128);
    }

    fn stored_crd(name: &str, rv: &str, description: &str) -> Value {
        let (plural, group) = name.split_once('.').unwrap();
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name, "uid": format!("uid-{name}"), "resourceVersion": rv},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": plural, "kind": "Thing"},
                     "versions": [{"name": "v1", "served": true, "storage": true,
                        "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                            "spec": {"type": "object", "description": description}}}}}]},
            "status": {"conditions": [{"type": "Established", "status": "True"}]}
        })
    }

    /// `/openapi/v2` merged from per-document parts is the document [`swagger_v2`] merges from
    /// every document, after each change, and its hash changes exactly when it does.
    /// A custom resource's document carries upstream's documented metadata, its `<Kind>List`
    /// and the list across namespaces.
    #[test]
    fn crd_documents_carry_metadata_lists_and_the_all_namespaces_path() {
        let registry = Registry::default();
        registry
            .apply_stored(&stored_crd("things.a.io", "1", "a thing"))
            .unwrap();
        let (_, docs) = update(&registry, None);
        let doc: Value = serde_json::from_slice(&docs.docs["apis/a.io/v1"].1).unwrap();
        let schemas = &doc["components"]["schemas"];
        for (definition, field) in [
            (OBJECT_META, "labels"),
            (OBJECT_META, "ownerReferences"),
            (LIST_META, "continue"),
            (
                "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference",
                "controller",
            ),
        ] {
            assert!(
                schemas[definition]["properties"][field]["description"].is_string(),
                "{definition}.{field}"
            );
        }
        let list = &schemas["io.a.v1.ThingList"];
        // The kind and its list document apiVersion and kind alike, with upstream's full texts.
        let kind = &schemas["io.a.v1.Thing"];
        for field in ["apiVersion", "kind"] {
            assert_eq!(
                kind["properties"][field]["description"],
                list["properties"][field]["description"]
            );
        }
        assert!(
            kind["properties"]["metadata"]["description"]
                .as_str()
                .unwrap()
                .ends_with("api-conventions.md#metadata")
        );
        assert_eq!(list["description"], "ThingList is a list of Thing");
        assert_eq!(
            list["x-kubernetes-group-version-kind"],
            json!([{"group": "a.io", "version": "v1", "kind": "ThingList"}])
        );
        assert_eq!(
            list["properties"]["items"]["items"],
            json!({"$ref": "#/components/schemas/io.a.v1.Thing"})
        );
        let list_ref = json!({"$ref": "#/components/schemas/io.a.v1.ThingList"});
        for path in [
            "/apis/a.io/v1/things",
            "/apis/a.io/v1/namespaces/{namespace}/things",
        ] {
            let get = &doc["paths"][path]["get"];
            assert_eq!(get["x-kubernetes-action"], "list", "{path}");
            assert_eq!(
                get["responses"]["200"]["content"]["application/json"]["schema"], list_ref,
                "{path}"
            );
        }
        // Every reference resolves inside the document.
        let mut refs = Vec::new();
        collect_refs(&doc, &mut refs);
        for r in refs {
            let name = r.strip_prefix("#/components/schemas/").unwrap();
            assert!(schemas.get(name).is_some(), "dangling {r}");
        }
    }

    fn collect_refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some(r) = m.get("$ref").and_then(Value::as_str) {
                    out.push(r.to_string());
                }
                m.values().for_each(|x| collect_refs(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| collect_refs(x, out)),
            _ => {}
        }
    }

    #[test]
    fn v2_from_parts_matches_the_whole_merge_through_changes() {
        let registry = Registry::default();
        let whole = |docs: &Documents| -> Value {
            let parsed: Vec<Value> = docs
                .docs
                .values()
                .map(|(_, b)| serde_json::from_slice(b).unwrap())
                .collect();
            swagger_v2(parsed.iter())
        };
        let mut current: Option<(u64, Arc<Documents>)> = None;
        let mut last: Option<(String, Value)> = None;
        let steps: &[(&str, &str, &str)] = &[
            ("things.a.io", "1", "first"),
            ("things.b.io", "2", "first"),
            ("things.a.io", "3", "second"),
            ("others.a.io", "4", "first"),
            ("things.b.io", "5", "first"),
        ];
        for (name, rv, description) in steps {
            registry
                .apply_stored(&stored_crd(name, rv, description))
                .unwrap();
            let (generation, docs) =
                update(&registry, current.as_ref().map(|(g, d)| (*g, d.as_ref())));
            let docs = Arc::new(docs);
            let (hash, bytes) = docs.v2();
            let got: Value = serde_json::from_slice(bytes).unwrap();
            assert_eq!(got, whole(&docs), "after {name} {rv}");
            assert!(
                got["paths"]
                    .as_object()
                    .unwrap()
                    .contains_key("/apis/a.io/v1/namespaces/{namespace}/things")
            );
            if let Some((last_hash, last_doc)) = &last {
                assert_eq!(last_hash == hash, *last_doc == got, "after {name} {rv}");
            }
            last = Some((hash.clone(), got));
            current = Some((generation, docs));
        }
    }
}
