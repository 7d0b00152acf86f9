use std::time::Duration;

use bytes::Bytes;
use crd_storage::sqlite::SqliteStore;
use serde_json::json;

use super::*;

fn kind(k: &str, namespaced: bool) -> Kind {
    Kind {
        group: "g.io".into(),
        kind: k.into(),
        namespaced,
    }
}

fn obj(v: &Value) -> Value {
    v.clone()
}

fn names(work: &[Work]) -> Vec<String> {
    let mut out: Vec<String> = work
        .iter()
        .map(|w| match w {
            Work::Attempt(u) => format!("attempt {u}"),
            Work::Orphan(u) => format!("orphan {u}"),
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

fn owned(uid: &str, name: &str, owners: &Value) -> Value {
    json!({"apiVersion": "g.io/v1", "kind": "Child",
           "metadata": {"name": name, "namespace": "ns", "uid": uid, "ownerReferences": owners}})
}

fn parent(uid: &str, name: &str, meta_extra: &Value) -> Value {
    let mut o = json!({"apiVersion": "g.io/v1", "kind": "Parent",
                       "metadata": {"name": name, "namespace": "ns", "uid": uid}});
    if let (Some(m), Some(extra)) = (o["metadata"].as_object_mut(), meta_extra.as_object()) {
        m.extend(extra.clone());
    }
    o
}

/// A graph case: its name, steps of (operation, object), the work after the last step.
type Case = (&'static str, Vec<(&'static str, Value)>, Vec<&'static str>);

/// Graph steps: (operation, object) in, the work the step calls for out.
#[test]
fn graph_turns_changes_into_work() {
    let p_ref = json!([{"apiVersion": "g.io/v1", "kind": "Parent", "name": "p", "uid": "p1",
                        "blockOwnerDeletion": true}]);
    let deleting = json!({"deletionTimestamp": "2025-01-01T00:00:00Z"});
    let fg =
        json!({"deletionTimestamp": "2025-01-01T00:00:00Z", "finalizers": ["foregroundDeletion"]});
    let orphan = json!({"deletionTimestamp": "2025-01-01T00:00:00Z", "finalizers": ["orphan"]});
    let other_ns_parent = json!({"apiVersion": "g.io/v1", "kind": "Parent",
        "metadata": {"name": "p", "namespace": "elsewhere", "uid": "p1"}});
    // (name, steps: (op, object), work after the last step)
    let cases: Vec<Case> = vec![
        (
            "a dependent of an observed owner needs nothing",
            vec![
                ("parent", parent("p1", "p", &json!({}))),
                ("child", owned("c1", "c", &p_ref)),
            ],
            vec![],
        ),
        (
            "a dependent of an owner not yet seen is verified",
            vec![("child", owned("c1", "c", &p_ref))],
            vec!["attempt c1"],
        ),
        (
            "an owner's deletion attempts its dependents",
            vec![
                ("parent", parent("p1", "p", &json!({}))),
                ("child", owned("c1", "c", &p_ref)),
                ("child", owned("c2", "d", &p_ref)),
                ("delete", parent("p1", "p", &json!({}))),
            ],
            vec!["attempt c1", "attempt c2"],
        ),
        (
            "a graceful deletion without GC finalizers does nothing yet",
            vec![
                ("parent", parent("p1", "p", &json!({}))),
                ("child", owned("c1", "c", &p_ref)),
                ("parent", parent("p1", "p", &deleting)),
            ],
            vec![],
        ),
        (
            "foreground: dependents and the owner are attempted",
            vec![
                ("parent", parent("p1", "p", &json!({}))),
                ("child", owned("c1", "c", &p_ref)),
                ("parent", parent("p1", "p", &fg)),
            ],
            vec!["attempt c1", "attempt p1"],
        ),
        (
            "a blocking dependent's deletion attempts the waiting owner",
            vec![
                ("parent", parent("p1", "p", &fg)),
                ("child", owned("c1", "c", &p_ref)),
                ("delete", owned("c1", "c", &p_ref)),
            ],
            vec!["attempt p1"],
        ),
        (
            "removing the reference attempts the waiting owner",
            vec![
                ("parent", parent("p1", "p", &fg)),
                ("child", owned("c1", "c", &p_ref)),
                ("child", owned("c1", "c", &json!([]))),
            ],
            vec!["attempt p1"],
        ),
        (
            "orphan: the owner is orphaned",
            vec![
                ("parent", parent("p1", "p", &json!({}))),
                ("child", owned("c1", "c", &p_ref)),
                ("parent", parent("p1", "p", &orphan)),
            ],
            vec!["orphan p1"],
        ),
        (
            "a namespaced owner in another namespace is verified",
            vec![
                ("parent", other_ns_parent.clone()),
                ("child", owned("c1", "c", &p_ref)),
            ],
            vec!["attempt c1"],
        ),
        (
            "an owner seen after its dependent, in another namespace, verifies the dependent",
            vec![
                ("child", owned("c1", "c", &p_ref)),
                ("parent", other_ns_parent),
            ],
            vec!["attempt c1"],
        ),
        (
            "a reference with other coordinates is verified",
            vec![
                ("parent", parent("p1", "q", &json!({}))),
                ("child", owned("c1", "c", &p_ref)),
            ],
            vec!["attempt c1"],
        ),
    ];
    for (name, steps, want) in cases {
        let mut graph = Graph::default();
        let mut last = Vec::new();
        let mut seen: HashMap<String, Value> = HashMap::new();
        for (op, o) in &steps {
            let key = format!("/registry/g.io/{}/{}", meta::uid(o), meta::name(o));
            last = if *op == "delete" {
                graph.remove(meta::uid(o))
            } else {
                let k = kind(if *op == "parent" { "Parent" } else { "Child" }, true);
                let old = seen.insert(key.clone(), obj(o));
                graph.upsert(&k, &key, old.as_ref(), o)
            };
        }
        assert_eq!(names(&last), want, "{name}");
    }
}

#[test]
fn graph_tracks_dependents_and_blocking_ones() {
    let mut graph = Graph::default();
    let refs = |block: bool| {
        json!([{"apiVersion": "g.io/v1", "kind": "Parent", "name": "p", "uid": "p1",
                "blockOwnerDeletion": block}])
    };
    graph.upsert(
        &kind("Parent", true),
        "/p",
        None,
        &parent("p1", "p", &json!({})),
    );
    graph.upsert(
        &kind("Child", true),
        "/c1",
        None,
        &owned("c1", "c1", &refs(true)),
    );
    graph.upsert(
        &kind("Child", true),
        "/c2",
        None,
        &owned("c2", "c2", &refs(false)),
    );
    assert_eq!(graph.dependents("p1"), ["c1", "c2"]);
    assert_eq!(graph.blocking_dependents("p1"), ["c1"]);
    // The owner's removal leaves the index, which follows the dependents' own references.
    graph.remove("p1");
    assert_eq!(graph.dependents("p1"), ["c1", "c2"]);
    graph.upsert(
        &kind("Child", true),
        "/c1",
        None,
        &owned("c1", "c1", &json!([])),
    );
    graph.remove("c2");
    assert!(graph.dependents("p1").is_empty());
    assert_eq!(graph.len(), 1);
}

/// Decisions: the object and its classified references in, the action out.
#[test]
fn decisions_follow_upstream_classification() {
    use Owner::{Dangling, Solid, WaitingForDependents as Waiting};
    let two = json!([{"apiVersion": "g.io/v1", "kind": "Parent", "name": "a", "uid": "a"},
                     {"apiVersion": "g.io/v1", "kind": "Parent", "name": "b", "uid": "b"}]);
    let fin = |f: &str| {
        let mut o = owned("c", "c", &two);
        o["metadata"]["finalizers"] = json!([f]);
        o
    };
    let background = Action::Delete {
        policy: PropagationPolicy::Background,
        unblock: false,
    };
    // (object, classes, has dependents, a dependent is itself deleting dependents, action)
    let cases = vec![
        (
            owned("c", "c", &two),
            vec![Solid, Solid],
            false,
            false,
            Action::None,
        ),
        (
            owned("c", "c", &two),
            vec![Solid, Dangling],
            false,
            false,
            Action::RemoveReferences(vec!["b".into()]),
        ),
        (
            owned("c", "c", &two),
            vec![Waiting, Solid],
            false,
            false,
            Action::RemoveReferences(vec!["a".into()]),
        ),
        (
            owned("c", "c", &two),
            vec![Dangling, Dangling],
            false,
            false,
            background.clone(),
        ),
        (
            owned("c", "c", &two),
            vec![Dangling, Waiting],
            false,
            false,
            background.clone(),
        ),
        (
            owned("c", "c", &two),
            vec![Waiting, Dangling],
            true,
            false,
            Action::Delete {
                policy: PropagationPolicy::Foreground,
                unblock: false,
            },
        ),
        (
            owned("c", "c", &two),
            vec![Waiting, Waiting],
            true,
            true,
            Action::Delete {
                policy: PropagationPolicy::Foreground,
                unblock: true,
            },
        ),
        (
            fin("orphan"),
            vec![Dangling, Dangling],
            false,
            false,
            Action::Delete {
                policy: PropagationPolicy::Orphan,
                unblock: false,
            },
        ),
        (
            fin("foregroundDeletion"),
            vec![Dangling, Dangling],
            false,
            false,
            Action::Delete {
                policy: PropagationPolicy::Foreground,
                unblock: false,
            },
        ),
        (
            owned("c", "c", &json!([])),
            vec![],
            false,
            false,
            Action::None,
        ),
    ];
    for (i, (o, classes, has_deps, dep_deleting, want)) in cases.into_iter().enumerate() {
        let mut graph = Graph::default();
        let mut deps = Vec::new();
        if has_deps {
            let r = json!([{"apiVersion": "g.io/v1", "kind": "Child", "name": "c", "uid": "c"}]);
            let mut d = owned("d", "d", &r);
            if dep_deleting {
                d["metadata"]["deletionTimestamp"] = json!("2025-01-01T00:00:00Z");
                d["metadata"]["finalizers"] = json!(["foregroundDeletion"]);
            }
            graph.upsert(&kind("Child", true), "/d", None, &d);
            deps.push("d".to_string());
        }
        let refs = owners::owner_references(&o);
        let got = decide::attempt(&o, &refs, &classes, &graph, &deps);
        assert_eq!(got, want, "case {i}");
    }
}

// The collector on a real store.

struct World {
    store: Arc<dyn Store>,
    shutdown: watch::Sender<bool>,
    _dir: tempfile::TempDir,
}

fn crd(plural: &str, kind: &str, scope: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.g.io"), "uid": format!("crd-{plural}")},
        "spec": {"group": "g.io", "scope": scope,
            "names": {"plural": plural, "kind": kind},
            "versions": [{"name": "v1", "served": true, "storage": true}]},
        "status": {"acceptedNames": {"plural": plural, "kind": kind},
            "conditions": [{"type": "Established", "status": "True"},
                           {"type": "NamesAccepted", "status": "True"}]},
    })
}

impl World {
    fn start() -> World {
        Self::start_with(Arc::new(Registry::default()))
    }

    fn start_with(registry: Arc<Registry>) -> World {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = SqliteStore::open(dir.path()).unwrap();
        registry
            .apply_stored(&crd("parents", "Parent", "Namespaced"))
            .unwrap();
        registry
            .apply_stored(&crd("children", "Child", "Namespaced"))
            .unwrap();
        registry
            .apply_stored(&crd("clusters", "Cluster", "Cluster"))
            .unwrap();
        let (shutdown, rx) = watch::channel(false);
        let gc = GarbageCollector::new(store.clone(), registry, Vec::new(), watch::channel(true).1);
        tokio::spawn(gc.run(rx));
        World {
            store,
            shutdown,
            _dir: dir,
        }
    }

    async fn put(&self, key: &str, o: &Value) {
        self.store
            .create(key, Bytes::from(o.to_string()))
            .await
            .unwrap();
    }

    async fn get(&self, key: &str) -> Option<Value> {
        get_json(self.store.as_ref(), key)
            .await
            .unwrap()
            .map(|(o, _)| o)
    }

    async fn until(&self, what: &str, mut check: impl AsyncFnMut(&World) -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while !check(self).await {
            assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Drop for World {
    fn drop(&mut self) {
        self.shutdown.send_replace(true);
    }
}

const P: &str = "/registry/g.io/parents/ns/p";

fn child_ref(block: bool) -> Value {
    json!([{"apiVersion": "g.io/v1", "kind": "Parent", "name": "p", "uid": "p1",
            "blockOwnerDeletion": block}])
}

fn child_key(i: usize) -> String {
    format!("/registry/g.io/children/ns/c{i}")
}

#[tokio::test]
async fn background_deletes_dependents_after_the_owner() {
    let w = World::start();
    w.put(P, &parent("p1", "p", &json!({}))).await;
    for i in 0..3 {
        w.put(
            &child_key(i),
            &owned(&format!("c{i}"), &format!("c{i}"), &child_ref(false)),
        )
        .await;
    }
    // An unrelated object and one owned by a live owner stay.
    w.put(
        "/registry/g.io/children/ns/free",
        &owned("f", "free", &json!([])),
    )
    .await;
    w.store.delete(P, None).await.unwrap();
    w.until("dependents deleted", async |w| {
        w.store.count("/registry/g.io/children/ns/c").await.unwrap() == 0
    })
    .await;
    assert!(w.get("/registry/g.io/children/ns/free").await.is_some());
}

#[tokio::test]
async fn dangling_references_are_removed_when_another_owner_remains() {
    let w = World::start();
    w.put(P, &parent("p1", "p", &json!({}))).await;
    let refs = json!([
        {"apiVersion": "g.io/v1", "kind": "Parent", "name": "p", "uid": "p1"},
        {"apiVersion": "g.io/v1", "kind": "Parent", "name": "gone", "uid": "gone1"},
        {"apiVersion": "g.io/v1", "kind": "Parent", "name": "p", "uid": "wrong-uid"},
    ]);
    w.put(&child_key(0), &owned("c0", "c0", &refs)).await;
    w.until("dangling references removed", async |w| {
        w.get(&child_key(0)).await.is_some_and(|o| {
            o["metadata"]["ownerReferences"]
                .as_array()
                .is_some_and(|r| r.len() == 1 && r[0]["uid"] == "p1")
        })
    })
    .await;
    // Only dangling references: the object goes.
    let refs = json!([{"apiVersion": "g.io/v1", "kind": "Parent", "name": "gone", "uid": "gone1"}]);
    w.put(&child_key(1), &owned("c1", "c1", &refs)).await;
    w.until("the orphaned object deleted", async |w| {
        w.get(&child_key(1)).await.is_none()
    })
    .await;
}

#[tokio::test]
async fn foreground_waits_for_blocking_dependents_then_releases_the_owner() {
    let w = World::start();
    w.put(&child_key(0), &owned("c0", "c0", &child_ref(true)))
        .await;
    let mut held = owned("c1", "c1", &child_ref(true));
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    w.put(&child_key(1), &held).await;
    w.put(&child_key(2), &owned("c2", "c2", &child_ref(false)))
        .await;
    w.put(
        P,
        &parent(
            "p1",
            "p",
            &json!({"deletionTimestamp": "2025-01-01T00:00:00Z", "finalizers": ["foregroundDeletion"]}),
        ),
    )
    .await;
    w.until("free dependents deleted, the held one marked", async |w| {
        w.get(&child_key(0)).await.is_none()
            && w.get(&child_key(2)).await.is_none()
            && w.get(&child_key(1))
                .await
                .is_some_and(|o| meta::is_deleting(&o))
    })
    .await;
    let owner = w
        .get(P)
        .await
        .expect("the owner waits for its blocking dependent");
    assert_eq!(
        owner["metadata"]["finalizers"],
        json!(["foregroundDeletion"])
    );
    // The held dependent's finalizer goes; the API server removes it; the owner follows.
    w.store.delete(&child_key(1), None).await.unwrap();
    w.until("owner released", async |w| w.get(P).await.is_none())
        .await;
}

#[tokio::test]
async fn orphan_removes_references_then_the_finalizer() {
    let w = World::start();
    let mut keep = parent("p1", "p", &json!({}));
    keep["metadata"]["finalizers"] = json!(["example.com/keep"]);
    w.put(P, &keep).await;
    let refs = json!([
        {"apiVersion": "g.io/v1", "kind": "Parent", "name": "p", "uid": "p1"},
        {"apiVersion": "g.io/v1", "kind": "Cluster", "name": "k", "uid": "k1"},
    ]);
    w.put(
        "/registry/g.io/clusters/k",
        &json!({"metadata": {"name": "k", "uid": "k1"}}),
    )
    .await;
    w.put(&child_key(0), &owned("c0", "c0", &child_ref(true)))
        .await;
    w.put(&child_key(1), &owned("c1", "c1", &refs)).await;
    let (mut o, kv) = get_json(w.store.as_ref(), P).await.unwrap().unwrap();
    o["metadata"]["deletionTimestamp"] = json!("2025-01-01T00:00:00Z");
    o["metadata"]["finalizers"] = json!(["example.com/keep", "orphan"]);
    w.store
        .update(P, Bytes::from(o.to_string()), kv.mod_revision)
        .await
        .unwrap();
    w.until("orphan finalizer removed", async |w| {
        w.get(P)
            .await
            .is_some_and(|o| o["metadata"]["finalizers"] == json!(["example.com/keep"]))
    })
    .await;
    let c0 = w.get(&child_key(0)).await.unwrap();
    assert!(c0["metadata"].get("ownerReferences").is_none(), "{c0}");
    let c1 = w.get(&child_key(1)).await.unwrap();
    assert_eq!(c1["metadata"]["ownerReferences"][0]["uid"], "k1");
}

#[tokio::test]
async fn cluster_scoped_owners_own_everywhere_namespaced_ones_only_at_home() {
    let w = World::start();
    w.put(
        "/registry/g.io/clusters/k",
        &json!({"metadata": {"name": "k", "uid": "k1"}}),
    )
    .await;
    let k_ref = json!([{"apiVersion": "g.io/v1", "kind": "Cluster", "name": "k", "uid": "k1"}]);
    for ns in ["a", "b"] {
        let mut o = owned(&format!("c-{ns}"), "c", &k_ref);
        o["metadata"]["namespace"] = json!(ns);
        w.put(&format!("/registry/g.io/children/{ns}/c"), &o).await;
    }
    // A dependent in another namespace than its namespaced owner: the reference is dangling.
    w.put(P, &parent("p1", "p", &json!({}))).await;
    let mut stray = owned("s1", "s", &child_ref(false));
    stray["metadata"]["namespace"] = json!("other");
    w.put("/registry/g.io/children/other/s", &stray).await;
    w.until("the cross-namespace dependent deleted", async |w| {
        w.get("/registry/g.io/children/other/s").await.is_none()
    })
    .await;
    assert!(w.get("/registry/g.io/children/a/c").await.is_some());
    w.store
        .delete("/registry/g.io/clusters/k", None)
        .await
        .unwrap();
    w.until(
        "namespaced dependents of the cluster-scoped owner deleted",
        async |w| {
            w.store.count("/registry/g.io/children/a/").await.unwrap() == 0
                && w.store.count("/registry/g.io/children/b/").await.unwrap() == 0
        },
    )
    .await;
    assert!(w.get(P).await.is_some());
}

#[tokio::test]
async fn foreground_cascades_through_dependents_that_own_others() {
    let w = World::start();
    // p1 ← c0 ← c1 (both blocking): c1 goes, then c0, then p1.
    w.put(&child_key(0), &owned("c0", "c0", &child_ref(true)))
        .await;
    let c0_ref = json!([{"apiVersion": "g.io/v1", "kind": "Child", "name": "c0", "uid": "c0",
                         "blockOwnerDeletion": true}]);
    w.put(&child_key(1), &owned("c1", "c1", &c0_ref)).await;
    w.put(
        P,
        &parent(
            "p1",
            "p",
            &json!({"deletionTimestamp": "2025-01-01T00:00:00Z", "finalizers": ["foregroundDeletion"]}),
        ),
    )
    .await;
    w.until("the whole chain is gone", async |w| {
        w.get(P).await.is_none() && w.store.count("/registry/g.io/children/").await.unwrap() == 0
    })
    .await;
}

#[tokio::test]
async fn resources_of_crds_created_later_are_followed() {
    let registry = Arc::new(Registry::default());
    let w = World::start_with(registry.clone());
    // The collector runs (it deletes an orphan of a CRD known at start) before the CRD comes.
    w.put(&child_key(0), &owned("c0", "c0", &child_ref(false)))
        .await;
    w.until("the collector runs", async |w| {
        w.get(&child_key(0)).await.is_none()
    })
    .await;
    let late = crd("lates", "Late", "Namespaced");
    registry.apply_stored(&late).unwrap();
    w.put(
        "/registry/g.io/lates/ns/l",
        &json!({"metadata": {"name": "l", "namespace": "ns",
        "uid": "l1", "ownerReferences": [{"apiVersion": "g.io/v1", "kind": "Parent",
        "name": "p", "uid": "p1"}]}}),
    )
    .await;
    w.until("the late CRD's orphan deleted", async |w| {
        w.get("/registry/g.io/lates/ns/l").await.is_none()
    })
    .await;
}

#[test]
fn informers_cache_only_the_metadata_the_graph_reads() {
    let stored = json!({"apiVersion": "g.io/v1", "kind": "Child", "spec": {"big": "x"},
        "metadata": {"name": "c", "namespace": "ns", "uid": "u", "labels": {"a": "b"},
            "ownerReferences": [{"uid": "p"}], "finalizers": ["f"],
            "deletionTimestamp": "2025-01-01T00:00:00Z", "managedFields": [{}]}});
    let kv = crd_storage::KeyValue {
        key: "/k".into(),
        value: Bytes::from(stored.to_string()),
        create_revision: 1,
        mod_revision: 1,
        decoded: crd_storage::Decoded::default(),
    };
    assert_eq!(
        decode_metadata(&kv),
        Some(
            json!({"metadata": {"name": "c", "namespace": "ns", "uid": "u",
            "ownerReferences": [{"uid": "p"}], "finalizers": ["f"],
            "deletionTimestamp": "2025-01-01T00:00:00Z"}})
        )
    );
}

/// The collector's informers keep only the graph's metadata fields of each stored object.
#[test]
fn decode_metadata_keeps_only_the_fields_the_graph_reads() {
    let cases: &[(&str, Option<serde_json::Value>)] = &[
        (
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","uid":"u1","resourceVersion":"5","labels":{"x":"y"},"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"o","uid":"u0"}],"finalizers":["f"],"deletionTimestamp":"2026-01-01T00:00:00Z","managedFields":[{"manager":"m"}]},"data":{"k":"v"}}"#,
            Some(
                serde_json::json!({"metadata": {"name": "a", "namespace": "ns", "uid": "u1",
                "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u0"}],
                "finalizers": ["f"], "deletionTimestamp": "2026-01-01T00:00:00Z"}}),
            ),
        ),
        (
            r#"{"metadata":{"name":"b","uid":"u2","deletionTimestamp":null}}"#,
            Some(serde_json::json!({"metadata": {"name": "b", "uid": "u2"}})),
        ),
        (r#"{"kind":"X"}"#, None),
        (r#"{"metadata":"nope"}"#, None),
        ("not json", None),
    ];
    for (stored, want) in cases {
        let kv = crd_storage::KeyValue {
            key: "/registry/configmaps/ns/a".into(),
            value: bytes::Bytes::from(stored.as_bytes().to_vec()),
            create_revision: 1,
            mod_revision: 1,
            decoded: crd_storage::Decoded::default(),
        };
        assert_eq!(&super::decode_metadata(&kv), want, "{stored}");
    }
}
