//! The garbage collector through the real kubectl: `kubectl delete --cascade=background`,
//! `foreground` and `orphan` on an owner custom object whose dependents are custom objects of a
//! second CRD, dangling owner references, and a cluster-scoped owner of namespaced dependents.
//! Every absence asserted follows an observation that the collector acted.

use serde_json::{Value, json};

use crate::support::{TestServer, crd_json, eventually};

const GROUP: &str = "gc.example.com";

fn server() -> TestServer {
    let s = TestServer::start();
    for (plural, kind, scope) in [
        ("parents", "Parent", "Namespaced"),
        ("children", "Child", "Namespaced"),
        ("clusterowners", "ClusterOwner", "Cluster"),
    ] {
        s.apply_crd(
            &format!("{plural}.json"),
            &crd_json(GROUP, plural, kind, scope).to_string(),
            &format!("{plural}.{GROUP}"),
        );
    }
    s
}

/// Creates an object from JSON with kubectl; returns its uid.
fn create(s: &TestServer, obj: &Value) -> String {
    let file = format!(
        "{}-{}.json",
        obj["kind"].as_str().unwrap_or("o"),
        obj["metadata"]["name"].as_str().unwrap_or("o")
    );
    s.write(&file, &obj.to_string());
    // The uid comes from the create's answer: the collector may delete the object at once.
    let out = s.kubectl_ok(&["create", "-f", &file, "-o", "json"]);
    let v: Value = serde_json::from_str(&out).expect("JSON");
    v["metadata"]["uid"].as_str().expect("uid").to_string()
}

fn parent(name: &str) -> Value {
    json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Parent",
           "metadata": {"name": name, "namespace": "default"}})
}

fn owner_ref(kind: &str, name: &str, uid: &str, block: bool) -> Value {
    json!({"apiVersion": format!("{GROUP}/v1"), "kind": kind, "name": name, "uid": uid,
           "blockOwnerDeletion": block})
}

fn child(name: &str, namespace: &str, owners: &[Value]) -> Value {
    json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Child",
           "metadata": {"name": name, "namespace": namespace, "ownerReferences": owners}})
}

/// The object as JSON, or `None` when kubectl finds none.
fn get(s: &TestServer, resource: &str, name: &str, namespace: &str) -> Option<Value> {
    let out = s.kubectl(&["get", resource, name, "-n", namespace, "-o", "json"]);
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("NotFound") || err.contains("not found"),
            "{err}"
        );
        return None;
    }
    Some(serde_json::from_slice(&out.stdout).expect("JSON"))
}

fn names(s: &TestServer, resource: &str, namespace: &str) -> Vec<String> {
    s.kubectl_ok(&["get", resource, "-n", namespace, "-o", "name"])
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn gc_cascade_background_deletes_dependents_after_the_owner() {
    let s = server();
    let uid = create(&s, &parent("p"));
    let other = create(&s, &parent("q"));
    for name in ["c0", "c1", "c2"] {
        create(
            &s,
            &child(name, "default", &[owner_ref("Parent", "p", &uid, false)]),
        );
    }
    create(
        &s,
        &child(
            "kept",
            "default",
            &[owner_ref("Parent", "q", &other, false)],
        ),
    );
    assert_eq!(names(&s, "children", "default").len(), 4);
    s.kubectl_ok(&["delete", "parents", "p", "--cascade=background"]);
    eventually("the dependents of p are deleted", || {
        names(&s, "children", "default") == ["child.gc.example.com/kept"]
    });
    assert!(get(&s, "parents", "q", "default").is_some());
}

#[test]
fn gc_cascade_foreground_deletes_dependents_before_the_owner() {
    let s = server();
    let uid = create(&s, &parent("p"));
    let mut held = child("held", "default", &[owner_ref("Parent", "p", &uid, true)]);
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    create(&s, &held);
    create(
        &s,
        &child(
            "blocking",
            "default",
            &[owner_ref("Parent", "p", &uid, true)],
        ),
    );
    create(
        &s,
        &child("free", "default", &[owner_ref("Parent", "p", &uid, false)]),
    );
    s.kubectl_ok(&[
        "delete",
        "parents",
        "p",
        "--cascade=foreground",
        "--wait=false",
    ]);
    // The owner waits with the foregroundDeletion finalizer while the collector deletes the
    // dependents; the one a finalizer holds keeps it waiting.
    eventually(
        "the owner waits and its free dependents are deleted",
        || {
            let owner = get(&s, "parents", "p", "default");
            let waiting = owner.is_some_and(|o| {
                o["metadata"]["finalizers"] == json!(["foregroundDeletion"])
                    && o["metadata"]["deletionTimestamp"].is_string()
            });
            waiting && names(&s, "children", "default") == ["child.gc.example.com/held"]
        },
    );
    let held = get(&s, "children", "held", "default").expect("held by its finalizer");
    assert!(held["metadata"]["deletionTimestamp"].is_string(), "{held}");
    assert!(get(&s, "parents", "p", "default").is_some());
    s.kubectl_ok(&[
        "patch",
        "children",
        "held",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    eventually("the owner goes after its last blocking dependent", || {
        get(&s, "parents", "p", "default").is_none()
    });
    assert!(names(&s, "children", "default").is_empty());
}

#[test]
fn gc_cascade_orphan_keeps_dependents_without_the_reference() {
    let s = server();
    let uid = create(&s, &parent("p"));
    let other = create(&s, &parent("q"));
    create(
        &s,
        &child("c0", "default", &[owner_ref("Parent", "p", &uid, true)]),
    );
    create(
        &s,
        &child(
            "c1",
            "default",
            &[
                owner_ref("Parent", "p", &uid, false),
                owner_ref("Parent", "q", &other, false),
            ],
        ),
    );
    // kubectl waits until the owner is gone: the collector must orphan and release it.
    s.kubectl_ok(&[
        "delete",
        "parents",
        "p",
        "--cascade=orphan",
        "--timeout=60s",
    ]);
    assert!(get(&s, "parents", "p", "default").is_none());
    let c0 = get(&s, "children", "c0", "default").expect("orphaned, not deleted");
    assert!(c0["metadata"].get("ownerReferences").is_none(), "{c0}");
    let c1 = get(&s, "children", "c1", "default").expect("orphaned, not deleted");
    assert_eq!(
        c1["metadata"]["ownerReferences"][0]["uid"],
        json!(other),
        "{c1}"
    );
    assert_eq!(
        c1["metadata"]["ownerReferences"].as_array().map(Vec::len),
        Some(1)
    );
}

#[test]
fn gc_dangling_references_are_removed_or_the_dependent_deleted() {
    let s = server();
    let uid = create(&s, &parent("p"));
    create(
        &s,
        &child(
            "partly",
            "default",
            &[
                owner_ref("Parent", "p", &uid, false),
                owner_ref(
                    "Parent",
                    "gone",
                    "00000000-0000-0000-0000-000000000001",
                    false,
                ),
            ],
        ),
    );
    eventually("the dangling reference is removed", || {
        get(&s, "children", "partly", "default").is_some_and(|o| {
            o["metadata"]["ownerReferences"]
                .as_array()
                .is_some_and(|r| r.len() == 1 && r[0]["uid"] == json!(uid))
        })
    });
    create(
        &s,
        &child(
            "wholly",
            "default",
            &[owner_ref(
                "Parent",
                "gone",
                "00000000-0000-0000-0000-000000000001",
                false,
            )],
        ),
    );
    eventually("a dependent whose every owner is absent is deleted", || {
        get(&s, "children", "wholly", "default").is_none()
    });
    // A namespaced owner does not own objects in other namespaces.
    s.kubectl_ok(&["create", "namespace", "elsewhere"]);
    create(
        &s,
        &child(
            "stray",
            "elsewhere",
            &[owner_ref("Parent", "p", &uid, false)],
        ),
    );
    eventually(
        "a reference to a namespaced owner in another namespace is dangling",
        || get(&s, "children", "stray", "elsewhere").is_none(),
    );
    assert!(get(&s, "children", "partly", "default").is_some());
}

#[test]
fn gc_cluster_scoped_owner_of_namespaced_dependents() {
    let s = server();
    let uid = create(
        &s,
        &json!({"apiVersion": format!("{GROUP}/v1"), "kind": "ClusterOwner",
                "metadata": {"name": "k"}}),
    );
    for ns in ["team-a", "team-b"] {
        s.kubectl_ok(&["create", "namespace", ns]);
        create(
            &s,
            &child("c", ns, &[owner_ref("ClusterOwner", "k", &uid, false)]),
        );
    }
    s.kubectl_ok(&["delete", "clusterowners", "k"]);
    eventually("dependents in every namespace are deleted", || {
        names(&s, "children", "team-a").is_empty() && names(&s, "children", "team-b").is_empty()
    });
}
