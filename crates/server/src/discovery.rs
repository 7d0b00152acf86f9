//! Discovery documents: legacy (`APIVersions`, `APIGroupList`, `APIGroup`, `APIResourceList`)
//! and aggregated (`apidiscovery.k8s.io/v2`), built from the fixed resources, every row of
//! `crd_builtin::KINDS`, and every Established CRD's served versions.
//!
//! Main items: [`core_versions`], [`core_resources`], [`groups`], [`group`], [`group_version`],
//! [`aggregated`], and [`DiscoveryCache`], which renders the aggregated documents and the legacy
//! group list once per registry generation (a CRD change re-renders only its own group's entry
//! of the aggregated `/apis`), so that a discovery request costs the same with one CRD or a
//! thousand.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use base64::Engine;
use crd_core::version::compare_kube_aware_versions;
use serde_json::{Value, json};
use sha2::{Digest, Sha256, Sha512};

use crate::registry::serving::{Registry, ServingCrd};
use crate::registry::{Scope, reviews};

const CR_VERBS: [&str; 8] = [
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "create",
    "update",
    "watch",
];
const TERMINATING_VERBS: [&str; 5] = ["delete", "deletecollection", "get", "list", "watch"];
const SUB_VERBS: [&str; 3] = ["get", "patch", "update"];

/// One resource as discovery describes it, independent of the document format.
struct Resource {
    name: String,
    singular: String,
    namespaced: bool,
    group: String,
    version: String,
    kind: String,
    verbs: Vec<&'static str>,
    short_names: Vec<String>,
    categories: Vec<String>,
    storage_version_hash: String,
    status: bool,
    scale: bool,
    extra_subresources: Vec<ExtraSubresource>,
}

/// A subresource besides status and scale (`namespaces/finalize`, `serviceaccounts/token`).
struct ExtraSubresource {
    name: &'static str,
    /// The group and kind it answers with, when not the resource's own.
    answers: Option<(&'static str, &'static str)>,
    verbs: Vec<&'static str>,
}

impl Resource {
    fn legacy(&self) -> Vec<Value> {
        let mut main = json!({
            "name": self.name, "singularName": self.singular, "namespaced": self.namespaced,
            "kind": self.kind, "verbs": self.verbs,
        });
        if !self.short_names.is_empty() {
            main["shortNames"] = json!(self.short_names);
        }
        if !self.categories.is_empty() {
            main["categories"] = json!(self.categories);
        }
        if !self.storage_version_hash.is_empty() {
            main["storageVersionHash"] = json!(self.storage_version_hash);
        }
        let mut out = vec![main];
        if self.status {
            out.push(
                json!({"name": format!("{}/status", self.name), "singularName": "",
                "namespaced": self.namespaced, "kind": self.kind, "verbs": SUB_VERBS}),
            );
        }
        if self.scale {
            out.push(
                json!({"name": format!("{}/scale", self.name), "singularName": "",
                "namespaced": self.namespaced, "group": "autoscaling", "version": "v1",
                "kind": "Scale", "verbs": SUB_VERBS}),
            );
        }
        for sub in &self.extra_subresources {
            let mut entry = json!({"name": format!("{}/{}", self.name, sub.name),
                "singularName": "", "namespaced": self.namespaced, "kind": self.kind,
                "verbs": sub.verbs});
            if let Some((group, kind)) = sub.answers {
                // Upstream names the group and version only when they are not the resource's.
                if group != self.group {
                    entry["group"] = json!(group);
                    entry["version"] = json!("v1");
                }
                entry["kind"] = json!(kind);
            }
            out.push(entry);
        }
        out
    }

    fn aggregated(&self) -> Value {
        let kind = json!({"group": self.group, "version": self.version, "kind": self.kind});
        let mut subs = Vec::new();
        if self.status {
            subs.push(json!({"subresource": "status", "responseKind": kind, "verbs": SUB_VERBS}));
        }
        if self.scale {
            subs.push(json!({"subresource": "scale",
                "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                "verbs": SUB_VERBS}));
        }
        for sub in &self.extra_subresources {
            let response = match sub.answers {
                Some((group, kind)) => json!({"group": group, "version": "v1", "kind": kind}),
                None => kind.clone(),
            };
            subs.push(json!({"subresource": sub.name, "responseKind": response,
                "verbs": sub.verbs}));
        }
        let mut r = json!({
            "resource": self.name, "responseKind": kind,
            "scope": if self.namespaced { "Namespaced" } else { "Cluster" },
            "singularResource": self.singular, "verbs": self.verbs,
        });
        if !self.short_names.is_empty() {
            r["shortNames"] = json!(self.short_names);
        }
        if !self.categories.is_empty() {
            r["categories"] = json!(self.categories);
        }
        if !subs.is_empty() {
            r["subresources"] = Value::from(subs);
        }
        r
    }
}

/// `base64(sha256("<group>/<version>/<kind>")[:8])`, as kube-apiserver computes it.
pub fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    let digest = Sha256::digest(format!("{group}/{version}/{kind}").as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

fn namespaces_resource() -> Resource {
    Resource {
        name: "namespaces".into(),
        singular: "namespace".into(),
        namespaced: false,
        group: String::new(),
        version: "v1".into(),
        kind: "Namespace".into(),
        verbs: vec![
            "create", "delete", "get", "list", "patch", "update", "watch",
        ],
        short_names: vec!["ns".into()],
        categories: Vec::new(),
        storage_version_hash: storage_version_hash("", "v1", "Namespace"),
        status: true,
        scale: false,
        extra_subresources: vec![ExtraSubresource {
            name: "finalize",
            answers: None,
            verbs: vec!["update"],
        }],
    }
}

fn crd_resource(version: &str) -> Resource {
    Resource {
        name: "customresourcedefinitions".into(),
        singular: "customresourcedefinition".into(),
        namespaced: false,
        group: "apiextensions.k8s.io".into(),
        version: version.into(),
        kind: "CustomResourceDefinition".into(),
        // The generic installer sorts verbs (`sort.Strings(apiResource.Verbs)`), as the
        // built-in kinds' list is.
        verbs: crd_builtin::VERBS.to_vec(),
        short_names: vec!["crd".into(), "crds".into()],
        categories: vec!["api-extensions".into()],
        storage_version_hash: storage_version_hash(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
        ),
        status: true,
        scale: false,
        extra_subresources: Vec::new(),
    }
}

fn cr_resource(crd: &ServingCrd, version: &str) -> Resource {
    let storage_served = crd.versions.iter().any(|v| v.storage && v.served);
    let v = crd.served_version(version);
    Resource {
        name: crd.plural.clone(),
        singular: crd.singular.clone(),
        namespaced: crd.scope == Scope::Namespaced,
        group: crd.group.clone(),
        version: version.to_string(),
        kind: crd.kind.clone(),
        verbs: if crd.terminating {
            TERMINATING_VERBS.to_vec()
        } else {
            CR_VERBS.to_vec()
        },
        short_names: crd.short_names.clone(),
        categories: crd.categories.clone(),
        storage_version_hash: if storage_served {
            storage_version_hash(&crd.group, &crd.storage_version, &crd.spec_kind)
        } else {
            String::new()
        },
        status: v.is_some_and(|v| v.status_subresource),
        scale: v.is_some_and(|v| v.scale.is_some()),
        extra_subresources: Vec::new(),
    }
}

fn svm_resource() -> Resource {
    Resource {
        name: "storageversionmigrations".into(),
        singular: "storageversionmigration".into(),
        namespaced: false,
        group: "storagemigration.k8s.io".into(),
        version: "v1alpha1".into(),
        kind: "StorageVersionMigration".into(),
        // The generic installer sorts verbs (`sort.Strings(apiResource.Verbs)`), as the
        // built-in kinds' list is.
        verbs: crd_builtin::VERBS.to_vec(),
        short_names: Vec::new(),
        categories: Vec::new(),
        storage_version_hash: storage_version_hash(
            "storagemigration.k8s.io",
            "v1alpha1",
            "StorageVersionMigration",
        ),
        status: true,
        scale: false,
        extra_subresources: Vec::new(),
    }
}

/// A `crd_builtin` row as discovery describes it. A kind stored as another (events.k8s.io
/// Events) reports that kind's storage version hash, as upstream does.
fn builtin_resource(k: &crd_builtin::Kind) -> Resource {
    let (hash_group, hash_kind) = match k.stored_as {
        Some(plural) => crd_builtin::KINDS
            .iter()
            .find(|o| o.stored_as.is_none() && o.plural == plural && o.key_root == k.key_root)
            .map_or((k.group, k.kind), |o| (o.group, o.kind)),
        None => (k.group, k.kind),
    };
    Resource {
        name: k.plural.into(),
        singular: k.singular.into(),
        namespaced: k.namespaced(),
        group: k.group.into(),
        version: k.version.into(),
        kind: k.kind.into(),
        verbs: k.verbs.to_vec(),
        short_names: k.short_names.iter().map(|s| (*s).to_string()).collect(),
        categories: k.categories.iter().map(|s| (*s).to_string()).collect(),
        storage_version_hash: storage_version_hash(hash_group, k.version, hash_kind),
        status: k.status,
        scale: k.scale.is_some(),
        extra_subresources: reviews::SUBRESOURCES
            .iter()
            .filter(|(g, p, _)| *g == k.group && *p == k.plural)
            .filter_map(|(g, p, sub)| {
                let (kind, api_version) = reviews::subresource_answer(g, p, sub)?.kind();
                // A core kind (`Binding`) has no group: `("", kind)`.
                let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
                Some(ExtraSubresource {
                    name: sub,
                    answers: Some((group, kind)),
                    verbs: vec!["create"],
                })
            })
            .chain(k.extra_subresources.iter().map(|sub| ExtraSubresource {
                name: sub,
                answers: None,
                verbs: SUB_VERBS.to_vec(),
            }))
            .collect(),
    }
}

/// An answered resource (reviews): `create` only, not stored, so no storage version hash.
fn review_resource(r: &reviews::Review) -> Resource {
    Resource {
        name: r.plural.into(),
        singular: r.kind.to_lowercase(),
        namespaced: r.scope == Scope::Namespaced,
        group: r.group.into(),
        version: "v1".into(),
        kind: r.kind.into(),
        verbs: vec!["create"],
        short_names: Vec::new(),
        categories: Vec::new(),
        storage_version_hash: String::new(),
        status: false,
        scale: false,
        extra_subresources: Vec::new(),
    }
}

/// Legacy resource entries (subresources included) sorted by name, as kube-apiserver lists
/// its built-in resources.
fn sorted_legacy(rs: &[Resource]) -> Vec<Value> {
    let mut out: Vec<Value> = rs.iter().flat_map(Resource::legacy).collect();
    out.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    out
}

/// kube-aggregator's priority of a built-in group (`apiVersionPriorities`): `/apis` lists
/// groups by descending priority, then by name.
fn group_priority(group: &str) -> u32 {
    match group {
        // The aggregator's own group, first in `/apis`.
        "apiregistration.k8s.io" => 18000,
        "authentication.k8s.io" => 17700,
        "authorization.k8s.io" => 17600,
        "apps" => 17800,
        "events.k8s.io" => 17750,
        "autoscaling" => 17500,
        "batch" => 17400,
        "certificates.k8s.io" => 17300,
        "networking.k8s.io" => 17200,
        "policy" => 17100,
        "rbac.authorization.k8s.io" => 17000,
        "storage.k8s.io" => 16800,
        "admissionregistration.k8s.io" | "apiextensions.k8s.io" => 16700,
        "scheduling.k8s.io" => 16600,
        "coordination.k8s.io" => 16500,
        "node.k8s.io" => 16300,
        "discovery.k8s.io" => 16200,
        _ => 1000,
    }
}

/// The built-in group versions served (core `v1` first), each with kube-aggregator's
/// `(groupPriorityMinimum, versionPriority)` for its local `APIService`: upstream's table for
/// the groups, and for versions 15 for `v1` (1 for core), 30 for `autoscaling/v2`, 12 for a beta
/// and 9 for an alpha.
pub fn local_group_versions(registry: &Registry) -> Vec<(String, String, u32, u32)> {
    let mut out = vec![(String::new(), "v1".to_string(), 18000, 1)];
    for (group, versions) in builtin_served(registry) {
        for (version, _) in versions {
            let version_priority = match version {
                "v2" => 30,
                v if v.contains("beta") => 12,
                v if v.contains("alpha") => 9,
                _ => 15,
            };
            out.push((
                group.to_string(),
                version.to_string(),
                group_priority(group),
                version_priority,
            ));
        }
    }
    out
}

/// The core/v1 resources: namespaces, every core row of `crd_builtin` and the core answered
/// resources (`bindings`), by name.
fn core_list() -> Vec<Resource> {
    let mut rs = vec![namespaces_resource()];
    rs.extend(
        crd_builtin::KINDS
            .iter()
            .filter(|k| k.group.is_empty())
            .map(builtin_resource),
    );
    rs.extend(
        reviews::REVIEWS
            .iter()
            .filter(|r| r.group.is_empty())
            .map(review_resource),
    );
    rs.sort_by(|a, b| a.name.cmp(&b.name));
    rs
}

/// A built-in group: its name and its versions (highest priority first), each with its
/// resources by name.
type BuiltinGroup = (&'static str, Vec<(&'static str, Vec<Resource>)>);

/// The built-in groups besides core, in `/apis` order; a group served at several versions
/// (`admissionregistration.k8s.io` v1 and v1beta1) lists them highest priority first.
fn builtin() -> Vec<BuiltinGroup> {
    let mut groups: Vec<BuiltinGroup> = vec![
        (
            "apiextensions.k8s.io",
            vec![("v1", vec![crd_resource("v1")])],
        ),
        (
            "storagemigration.k8s.io",
            vec![("v1alpha1", vec![svm_resource()])],
        ),
    ];
    let rows = crd_builtin::KINDS
        .iter()
        .filter(|k| !k.group.is_empty())
        .map(|k| (k.group, k.version, builtin_resource(k)))
        .chain(
            reviews::REVIEWS
                .iter()
                .filter(|r| !r.group.is_empty())
                .map(|r| (r.group, "v1", review_resource(r))),
        );
    for (group, version, r) in rows {
        let at = groups
            .iter()
            .position(|(g, _)| *g == group)
            .unwrap_or_else(|| {
                groups.push((group, Vec::new()));
                groups.len() - 1
            });
        let versions = &mut groups[at].1;
        match versions.iter_mut().find(|(v, _)| *v == version) {
            Some((_, rs)) => rs.push(r),
            None => versions.push((version, vec![r])),
        }
    }
    for (_, vs) in &mut groups {
        vs.sort_by(|a, b| compare_kube_aware_versions(b.0, a.0));
        for (_, rs) in vs {
            rs.sort_by(|a, b| a.name.cmp(&b.name));
        }
    }
    groups.sort_by(|a, b| {
        group_priority(b.0)
            .cmp(&group_priority(a.0))
            .then(a.0.cmp(b.0))
    });
    groups
}

/// [`builtin`] with the versions `--runtime-config` enabled (`apiextensions.k8s.io/v1beta1`,
/// after v1).
fn builtin_served(registry: &Registry) -> Vec<BuiltinGroup> {
    let mut groups = builtin();
    if registry.runtime_config().crd_v1beta1
        && let Some((_, vs)) = groups
            .iter_mut()
            .find(|(g, _)| *g == "apiextensions.k8s.io")
    {
        vs.push(("v1beta1", vec![crd_resource("v1beta1")]));
    }
    groups
}

fn version_names(vs: &[(&str, Vec<Resource>)]) -> Vec<String> {
    vs.iter().map(|(v, _)| (*v).to_string()).collect()
}

/// The served groups of `crds`: group → versions (highest priority first) → resources.
fn crd_groups(crds: Vec<Arc<ServingCrd>>) -> BTreeMap<String, Vec<(String, Vec<Resource>)>> {
    let mut groups: BTreeMap<String, BTreeMap<String, Vec<Resource>>> = BTreeMap::new();
    for crd in crds {
        if !crd.established {
            continue;
        }
        for v in crd.versions.iter().filter(|v| v.served) {
            groups
                .entry(crd.group.clone())
                .or_default()
                .entry(v.name.clone())
                .or_default()
                .push(cr_resource(&crd, &v.name));
        }
    }
    groups
        .into_iter()
        .map(|(g, versions)| {
            let mut vs: Vec<(String, Vec<Resource>)> = versions.into_iter().collect();
            vs.sort_by(|a, b| compare_kube_aware_versions(&b.0, &a.0));
            for (_, rs) in &mut vs {
                rs.sort_by(|a, b| a.name.cmp(&b.name));
            }
            (g, vs)
        })
        .collect()
}

/// `GET /api` (legacy).
pub fn core_versions(server_address: &str) -> Value {
    json!({"kind": "APIVersions", "versions": ["v1"],
           "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]})
}

/// `GET /api/v1`.
pub fn core_resources() -> Value {
    let resources = sorted_legacy(&core_list());
    json!({"kind": "APIResourceList", "groupVersion": "v1", "resources": resources})
}

fn group_json(name: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    json!({"name": name, "versions": vs, "preferredVersion": vs.first().cloned().unwrap_or(Value::Null)})
}

/// `GET /apis` (legacy): built-in groups first, then CRD groups ordered as kube-aggregator
/// orders them (by their smallest `<version>.<group>` APIService name).
pub fn groups(registry: &Registry) -> Value {
    let mut out: Vec<Value> = builtin_served(registry)
        .iter()
        .map(|(g, vs)| group_json(g, &version_names(vs)))
        .collect();
    let crd = crd_groups(registry.all());
    let mut entries: Vec<(String, &String, Vec<String>)> = crd
        .iter()
        .map(|(g, vs)| {
            let names: Vec<String> = vs.iter().map(|(v, _)| v.clone()).collect();
            let min = names
                .iter()
                .map(|v| format!("{v}.{g}"))
                .min()
                .unwrap_or_default();
            (min, g, names)
        })
        .collect();
    entries.sort();
    out.extend(entries.into_iter().map(|(_, g, vs)| group_json(g, &vs)));
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": out})
}

/// `GET /apis/<group>`, or `None` when the group is not served.
pub fn group(registry: &Registry, name: &str) -> Option<Value> {
    if let Some((_, vs)) = builtin_served(registry)
        .into_iter()
        .find(|(g, _)| *g == name)
    {
        let mut g = group_json(name, &version_names(&vs));
        g["kind"] = json!("APIGroup");
        g["apiVersion"] = json!("v1");
        return Some(g);
    }
    // Only the group's own CRDs: O(size of the group), however many CRDs there are.
    let groups = crd_groups(registry.in_group(name));
    let vs = groups.get(name)?;
    let names: Vec<String> = vs.iter().map(|(v, _)| v.clone()).collect();
    let mut g = group_json(name, &names);
    g["kind"] = json!("APIGroup");
    g["apiVersion"] = json!("v1");
    Some(g)
}

/// `GET /apis/<group>/<version>`, or `None` when not served.
pub fn group_version(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let resources: Vec<Value> = if let Some((_, rs)) = builtin_served(registry)
        .into_iter()
        .filter(|(g, _)| *g == group)
        .flat_map(|(_, vs)| vs)
        .find(|(v, _)| *v == version)
    {
        sorted_legacy(&rs)
    } else {
        let groups = crd_groups(registry.in_group(group));
        let (_, rs) = groups.get(group)?.iter().find(|(v, _)| v == version)?;
        rs.iter().flat_map(Resource::legacy).collect()
    };
    Some(json!({"kind": "APIResourceList", "apiVersion": "v1",
                "groupVersion": format!("{group}/{version}"), "resources": resources}))
}

/// The aggregated discovery document of `/api` (core) or `/apis` (everything else).
pub fn aggregated(registry: &Registry, core: bool) -> Value {
    let items: Vec<Value> = if core {
        vec![
            json!({"metadata": {"name": ""}, "versions": [aggregated_version("v1", &core_list())]}),
        ]
    } else {
        let mut items: Vec<Value> = builtin_served(registry)
            .iter()
            .map(|(g, vs)| group_discovery(g, vs))
            .collect();
        for (g, vs) in crd_groups(registry.all()) {
            items.push(group_discovery(&g, &vs));
        }
        items
    };
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
           "metadata": {}, "items": items})
}

/// A discovery document rendered to bytes, with its `ETag` (quoted, as sent).
pub struct Rendered {
    /// The quoted entity tag: kube-apiserver's upper-case hexadecimal SHA-512, here of the
    /// document's parts (each part hashed once when rendered), so a request never hashes the
    /// whole document.
    pub etag: String,
    /// The JSON bytes.
    pub bytes: bytes::Bytes,
}

/// The aggregated `/apis` document at one registry generation, with the rendered entry of every
/// CRD group, so that the next generation re-renders only the groups that changed.
struct AggregatedApis {
    generation: u64,
    /// CRD group → (SHA-512 of its entry, its `APIGroupDiscovery` JSON).
    groups: BTreeMap<String, ([u8; 64], Vec<u8>)>,
    doc: Arc<Rendered>,
}

/// Discovery documents cached per registry generation (as kube-apiserver's aggregated
/// discovery manager keeps its serialized document and `ETag` until a group changes): the
/// aggregated `/api` (fixed, rendered once), the aggregated `/apis` (updated per changed group
/// from [`Registry::changes_since`]) and the legacy `/apis` group list.
#[derive(Default)]
pub struct DiscoveryCache {
    core: OnceLock<Arc<Rendered>>,
    /// The built-in groups' entries of `/apis`, rendered once: (SHA-512 over them, their JSON).
    builtin: OnceLock<([u8; 64], Vec<u8>)>,
    apis: Mutex<Option<AggregatedApis>>,
    legacy: Mutex<Option<(u64, bytes::Bytes)>>,
}

impl DiscoveryCache {
    /// The aggregated discovery document of `/api` (`core`) or `/apis`, at the registry's
    /// current generation or a newer one.
    pub fn aggregated(&self, registry: &Registry, core: bool) -> Arc<Rendered> {
        if core {
            return self
                .core
                .get_or_init(|| {
                    let bytes = serde_json::to_vec(&aggregated(registry, true)).unwrap_or_default();
                    let etag = quoted_hash(&Sha512::digest(&bytes));
                    Arc::new(Rendered {
                        etag,
                        bytes: bytes.into(),
                    })
                })
                .clone();
        }
        let mut cached = self.apis.lock().unwrap_or_else(PoisonError::into_inner);
        let generation = registry.generation();
        if let Some(c) = cached.as_ref()
            && c.generation >= generation
        {
            return c.doc.clone();
        }
        // The groups to render again: those changed since the cached generation, or every
        // group when nothing is cached or the change log no longer reaches back.
        let previous = cached
            .take()
            .and_then(|c| Some((registry.changes_since(c.generation)?, c.groups)));
        let (generation, mut groups, mut changed) = if let Some(((now, names), groups)) = previous {
            let changed: Vec<String> = names
                .iter()
                .map(|n| crate::registry::serving::group_of_name(n).to_string())
                .collect();
            (now, groups, changed)
        } else {
            let all: Vec<String> = registry.all().iter().map(|c| c.group.clone()).collect();
            (generation, BTreeMap::new(), all)
        };
        changed.sort_unstable();
        changed.dedup();
        for group in changed {
            match crd_groups(registry.in_group(&group)).get(&group) {
                Some(versions) => {
                    let bytes =
                        serde_json::to_vec(&group_discovery(&group, versions)).unwrap_or_default();
                    groups.insert(group, (Sha512::digest(&bytes).into(), bytes));
                }
                None => {
                    groups.remove(&group);
                }
            }
        }
        let doc = Arc::new(self.assemble_apis(registry, &groups));
        *cached = Some(AggregatedApis {
            generation,
            groups,
            doc: doc.clone(),
        });
        doc
    }

    /// The aggregated `/apis` document from the built-in groups' entries and `groups`, in the
    /// order [`aggregated`] gives them.
    /// The built-in groups are those served under the server's runtime config, fixed for its
    /// lifetime, so they are rendered once.
    fn assemble_apis(
        &self,
        registry: &Registry,
        groups: &BTreeMap<String, ([u8; 64], Vec<u8>)>,
    ) -> Rendered {
        let (builtin_hash, builtin) = self.builtin.get_or_init(|| {
            let items: Vec<Vec<u8>> = builtin_served(registry)
                .iter()
                .map(|(g, vs)| serde_json::to_vec(&group_discovery(g, vs)).unwrap_or_default())
                .collect();
            let bytes = items.join(&b","[..]);
            (Sha512::digest(&bytes).into(), bytes)
        });
        let len = builtin.len() + groups.values().map(|(_, b)| b.len() + 1).sum::<usize>();
        let mut bytes = Vec::with_capacity(len + 128);
        bytes.extend_from_slice(
            br#"{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":["#,
        );
        bytes.extend_from_slice(builtin);
        let mut hasher = Sha512::new();
        hasher.update(builtin_hash);
        for (hash, item) in groups.values() {
            if !bytes.ends_with(b"[") {
                bytes.push(b',');
            }
            bytes.extend_from_slice(item);
            hasher.update(hash);
        }
        bytes.extend_from_slice(b"]}");
        Rendered {
            etag: quoted_hash(&hasher.finalize()),
            bytes: bytes.into(),
        }
    }

    /// The legacy `/apis` group list ([`groups`]) as JSON, rendered once per registry
    /// generation.
    pub fn legacy_groups(&self, registry: &Registry) -> bytes::Bytes {
        let mut cached = self.legacy.lock().unwrap_or_else(PoisonError::into_inner);
        let generation = registry.generation();
        if let Some((g, bytes)) = cached.as_ref()
            && *g >= generation
        {
            return bytes.clone();
        }
        let bytes: bytes::Bytes = serde_json::to_vec(&groups(registry))
            .unwrap_or_default()
            .into();
        *cached = Some((generation, bytes.clone()));
        bytes
    }
}

/// A digest as a quoted upper-case hexadecimal `ETag`.
fn quoted_hash(digest: &impl std::fmt::UpperHex) -> String {
    format!("\"{digest:X}\"")
}

/// One `APIGroupDiscovery` entry of the aggregated document.
fn group_discovery<V: AsRef<str>>(group: &str, versions: &[(V, Vec<Resource>)]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|(v, rs)| aggregated_version(v.as_ref(), rs))
        .collect();
    json!({"metadata": {"name": group}, "versions": versions})
}

fn aggregated_version(v: &str, rs: &[Resource]) -> Value {
    json!({"version": v, "resources": rs.iter().map(Resource::aggregated).collect::<Vec<_>>(),
           "freshness": "Current"})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_version_hash_matches_kubernetes() {
        // kube-apiserver publishes this hash for core/v1 namespaces.
        assert_eq!(storage_version_hash("", "v1", "Namespace"), "Q3oi5N2YM8M=");
    }

    #[test]
    fn builtin_kinds_are_discovered_from_their_rows() {
        let core = core_resources();
        let names: Vec<&str> = core["resources"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r["name"].as_str())
            .collect();
        for want in [
            "configmaps",
            "events",
            "namespaces",
            "pods",
            "pods/status",
            "secrets",
        ] {
            assert!(names.contains(&want), "{want} in {names:?}");
        }
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
        let cm = core["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "configmaps")
            .unwrap();
        assert_eq!(cm["shortNames"], json!(["cm"]));
        assert_eq!(cm["kind"], "ConfigMap");
        let registry = Registry::new(crate::conversion::ConversionOptions::default());
        let apps = group_version(&registry, "apps", "v1").unwrap();
        let deploy_scale = apps["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "deployments/scale")
            .unwrap();
        assert_eq!(deploy_scale["kind"], "Scale");
        let groups: Vec<String> = groups(&registry)["groups"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|g| g["name"].as_str().map(String::from))
            .collect();
        assert_eq!(
            groups,
            [
                "apiregistration.k8s.io",
                "apps",
                "events.k8s.io",
                "authentication.k8s.io",
                "authorization.k8s.io",
                "autoscaling",
                "batch",
                "certificates.k8s.io",
                "networking.k8s.io",
                "policy",
                "rbac.authorization.k8s.io",
                "storage.k8s.io",
                "admissionregistration.k8s.io",
                "apiextensions.k8s.io",
                "scheduling.k8s.io",
                "coordination.k8s.io",
                "node.k8s.io",
                "discovery.k8s.io",
                "storagemigration.k8s.io"
            ]
        );
        // Both Event resources report core events' storage version hash.
        let ev = group_version(&registry, "events.k8s.io", "v1").unwrap();
        assert_eq!(
            ev["resources"][0]["storageVersionHash"],
            json!(storage_version_hash("", "v1", "Event"))
        );
    }

    fn stored_crd(name: &str, rv: &str, established: bool, served: bool) -> Value {
        let (plural, group) = name.split_once('.').unwrap();
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name, "uid": format!("uid-{name}"), "resourceVersion": rv},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": plural, "kind": "Thing"},
                     "versions": [{"name": "v1", "served": served, "storage": true,
                        "schema": {"openAPIV3Schema": {"type": "object"}}}]},
            "status": {"conditions": [{"type": "Established",
                                       "status": if established { "True" } else { "False" }}]}
        })
    }

    /// A CRD and what happens to it: stored with (resourceVersion, established, served), or
    /// removed (`None`).
    type Step<'a> = (&'a str, Option<(&'a str, bool, bool)>);

    /// The cached aggregated `/apis` is the document [`aggregated`] renders, through every
    /// kind of change (added, changed, unserved, removed, a second CRD in a group), and its
    /// `ETag` changes exactly when the document does.
    #[test]
    fn the_cached_aggregated_document_follows_every_registry_change() {
        let registry = Registry::default();
        let cache = DiscoveryCache::default();
        // (CRD, resourceVersion, established, served; `None` removes it)
        let steps: &[Step<'_>] = &[
            ("things.a.io", Some(("1", true, true))),
            ("others.b.io", Some(("2", true, true))),
            ("things.a.io", Some(("3", true, false))),
            ("more.a.io", Some(("4", true, true))),
            ("things.a.io", Some(("5", true, true))),
            ("others.b.io", None),
            ("pending.c.io", Some(("6", false, true))),
        ];
        let mut last = cache.aggregated(&registry, false);
        let want: Value = aggregated(&registry, false);
        assert_eq!(serde_json::from_slice::<Value>(&last.bytes).unwrap(), want);
        for (name, step) in steps {
            match step {
                Some((rv, established, served)) => registry
                    .apply_stored(&stored_crd(name, rv, *established, *served))
                    .unwrap(),
                None => registry.remove(name),
            }
            let got = cache.aggregated(&registry, false);
            let want = aggregated(&registry, false);
            assert_eq!(
                serde_json::from_slice::<Value>(&got.bytes).unwrap(),
                want,
                "after {name} {step:?}"
            );
            let same = serde_json::from_slice::<Value>(&last.bytes).unwrap() == want;
            assert_eq!(got.etag == last.etag, same, "after {name} {step:?}");
            // Unchanged registry: the same rendering, not a new one.
            assert!(Arc::ptr_eq(&got, &cache.aggregated(&registry, false)));
            last = got;
        }
        let doc = serde_json::from_slice::<Value>(&last.bytes).unwrap();
        let crd_groups: Vec<&str> = doc["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|i| i["metadata"]["name"].as_str())
            .filter(|n| !n.ends_with("k8s.io") && n.contains('.'))
            .collect();
        assert_eq!(crd_groups, ["a.io"]);
        let core = cache.aggregated(&registry, true);
        assert_eq!(
            serde_json::from_slice::<Value>(&core.bytes).unwrap(),
            aggregated(&registry, true)
        );
        assert_eq!(
            serde_json::from_slice::<Value>(&cache.legacy_groups(&registry)).unwrap(),
            groups(&registry)
        );
    }
}
