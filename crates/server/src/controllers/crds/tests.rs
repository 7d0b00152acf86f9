//! The CRD controller against the real SQLite engine: start-up with many CRDs (one list, every
//! CRD served and established), name conflicts resolved when the holder goes, and the cleanup
//! finalizer.

use std::time::Duration;

use bytes::Bytes;
use serde_json::json;

use super::*;
use crate::controllers::testing::Recording;

fn crd(plural: &str, group: &str, kind: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}"), "uid": format!("uid-{plural}")},
        "spec": {"group": group, "scope": "Namespaced",
            "names": {"plural": plural, "singular": plural.trim_end_matches('s'), "kind": kind,
                      "listKind": format!("{kind}List")},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]},
        "status": {"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": ["v1"]},
    })
}

struct Fixture {
    _dir: tempfile::TempDir,
    recording: Arc<Recording>,
    store: Arc<dyn Store>,
    registry: Arc<Registry>,
    shutdown: watch::Sender<bool>,
}

impl Fixture {
    fn new() -> Self {
        let (dir, recording, store) = Recording::open();
        Fixture {
            _dir: dir,
            store,
            recording,
            registry: Arc::new(Registry::default()),
            shutdown: watch::Sender::new(false),
        }
    }

    async fn create(&self, obj: &Value) {
        self.store
            .create(&crd_key(meta::name(obj)), Bytes::from(obj.to_string()))
            .await
            .unwrap();
    }

    async fn get(&self, name: &str) -> Option<Value> {
        get_json(self.store.as_ref(), &crd_key(name))
            .await
            .unwrap()
            .map(|(v, _)| v)
    }

    /// Starts the controller and waits until it has synced.
    async fn start(&self) -> tokio::task::JoinHandle<anyhow::Result<()>> {
        let controller = CrdController::new(self.store.clone(), self.registry.clone());
        let mut synced = controller.synced();
        let running = tokio::spawn(controller.run(self.shutdown.subscribe()));
        tokio::time::timeout(Duration::from_secs(30), synced.wait_for(|s| *s))
            .await
            .expect("synced within 30s")
            .unwrap();
        running
    }

    /// Waits until `check` holds for the stored CRD (or its absence).
    async fn eventually(&self, name: &str, check: impl Fn(Option<&Value>) -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let obj = self.get(name).await;
            if check(obj.as_ref()) {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{name}: condition not reached: {obj:?}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

fn reason(obj: &Value, kind: &str) -> String {
    obj["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == kind)
        .map(|c| {
            format!(
                "{}/{}",
                c["status"].as_str().unwrap_or(""),
                c["reason"].as_str().unwrap_or("")
            )
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn start_up_serves_and_establishes_every_crd_before_synced() {
    let f = Fixture::new();
    let n = 40;
    for i in 0..n {
        f.create(&crd(
            &format!("things{i:02}s"),
            "g.io",
            &format!("Thing{i:02}"),
        ))
        .await;
    }
    // Two CRDs of another group want the same kind (and list kind): the first (by name) wins;
    // upstream reports the last conflicting name.
    f.create(&crd("alphas", "h.io", "Same")).await;
    f.create(&crd("betas", "h.io", "Same")).await;
    let running = f.start().await;
    // O(N): one list request for all CRDs (one page), none per CRD.
    assert_eq!(f.recording.lists_under(CRD_KEY_ROOT), 1);
    // Synced means reconciled and served: no waiting needed.
    assert_eq!(f.registry.all().len(), n + 2);
    for i in 0..n {
        let name = format!("things{i:02}s.g.io");
        let obj = f.get(&name).await.unwrap();
        assert_eq!(
            reason(&obj, "Established"),
            "True/InitialNamesAccepted",
            "{name}"
        );
        assert_eq!(
            obj["status"]["acceptedNames"]["kind"],
            format!("Thing{i:02}")
        );
        let serving = f.registry.get(&name).unwrap();
        assert!(serving.established && serving.names_accepted, "{name}");
    }
    let alphas = f.get("alphas.h.io").await.unwrap();
    assert_eq!(reason(&alphas, "NamesAccepted"), "True/NoConflicts");
    let betas = f.get("betas.h.io").await.unwrap();
    assert_eq!(reason(&betas, "NamesAccepted"), "False/ListKindConflict");
    assert_eq!(reason(&betas, "Established"), "False/NotAccepted");
    assert!(!f.registry.get("betas.h.io").unwrap().serving());

    // The holder goes: the conflict is gone and the other CRD is accepted.
    f.store.delete(&crd_key("alphas.h.io"), None).await.unwrap();
    f.eventually("betas.h.io", |o| {
        o.is_some_and(|o| reason(o, "Established") == "True/InitialNamesAccepted")
    })
    .await;
    assert!(f.registry.get("alphas.h.io").is_none());

    f.shutdown.send_replace(true);
    tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .expect("stops at shutdown")
        .unwrap()
        .unwrap();
}

/// Regression: a client that read Established=True from storage got `404 page not found`
/// because the registry learned the CRD only after the status write returned.
#[tokio::test]
async fn a_crd_is_served_before_established_is_stored() {
    let f = Fixture::new();
    let _running = f.start().await;
    let registry = f.registry.clone();
    let early = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = early.clone();
    *f.recording.before_update.lock().unwrap() = Some(Box::new(move |key, value| {
        let obj: Value = serde_json::from_slice(value).unwrap();
        if key.starts_with(CRD_KEY_ROOT)
            && conditions::get(&obj, "Established") == Some("True")
            && registry.strategy("g.io", "widgets", "v1").is_none()
        {
            seen.lock().unwrap().push(key.to_string());
        }
    }));
    f.create(&crd("widgets", "g.io", "Widget")).await;
    f.eventually("widgets.g.io", |o| {
        o.is_some_and(|o| reason(o, "Established") == "True/InitialNamesAccepted")
    })
    .await;
    assert!(f.registry.strategy("g.io", "widgets", "v1").is_some());
    assert_eq!(*early.lock().unwrap(), Vec::<String>::new());
    f.shutdown.send_replace(true);
}

#[tokio::test]
async fn start_up_respects_names_accepted_by_later_crds() {
    // `a` sorts first but `b` already holds the kind: `a` must not take it.
    let f = Fixture::new();
    f.create(&crd("as", "g.io", "Same")).await;
    let mut b = crd("bs", "g.io", "Same");
    b["status"]["acceptedNames"] =
        json!({"plural": "bs", "singular": "b", "kind": "Same", "listKind": "SameList"});
    f.create(&b).await;
    let _running = f.start().await;
    let a = f.get("as.g.io").await.unwrap();
    assert_eq!(reason(&a, "NamesAccepted"), "False/ListKindConflict");
    let b = f.get("bs.g.io").await.unwrap();
    assert_eq!(reason(&b, "NamesAccepted"), "True/NoConflicts");
    f.shutdown.send_replace(true);
}

#[tokio::test]
async fn cleanup_finalizer_deletes_objects_then_the_crd() {
    let f = Fixture::new();
    f.create(&crd("crontabs", "g.io", "CronTab")).await;
    let _running = f.start().await;
    for i in 0..3 {
        f.store
            .create(
                &format!("/registry/g.io/crontabs/default/c{i}"),
                Bytes::from(
                    json!({"apiVersion": "g.io/v1", "kind": "CronTab",
                    "metadata": {"name": format!("c{i}"), "namespace": "default"}})
                    .to_string(),
                ),
            )
            .await
            .unwrap();
    }
    // Delete as the handler does: finalizer and deletionTimestamp.
    guaranteed_update(
        f.store.as_ref(),
        &crd_key("crontabs.g.io"),
        |obj| {
            meta::set_finalizers(obj, &[CLEANUP_FINALIZER.to_string()]);
            meta::meta_mut(obj).insert("deletionTimestamp".into(), json!(meta::now_rfc3339()));
            true
        },
        |_| false,
    )
    .await
    .unwrap();
    f.eventually("crontabs.g.io", |o| o.is_none()).await;
    assert_eq!(f.store.count("/registry/g.io/crontabs/").await.unwrap(), 0);
    f.shutdown.send_replace(true);
}

#[tokio::test]
async fn start_up_without_crds_syncs() {
    let f = Fixture::new();
    let _running = f.start().await;
    assert!(f.registry.all().is_empty());
    // Later CRDs are served and established.
    f.create(&crd("crontabs", "g.io", "CronTab")).await;
    f.eventually("crontabs.g.io", |o| {
        o.is_some_and(|o| reason(o, "Established") == "True/InitialNamesAccepted")
    })
    .await;
    assert!(f.registry.get("crontabs.g.io").is_some());
    f.shutdown.send_replace(true);
}

#[tokio::test]
async fn a_restarted_controller_forgets_crds_deleted_meanwhile() {
    let f = Fixture::new();
    f.create(&crd("crontabs", "g.io", "CronTab")).await;
    f.create(&crd("others", "g.io", "Other")).await;
    let first = f.start().await;
    f.shutdown.send_replace(true);
    first.await.unwrap().unwrap();
    f.store.delete(&crd_key("others.g.io"), None).await.unwrap();
    f.shutdown.send_replace(false);
    let _second = f.start().await;
    let names: Vec<String> = f.registry.all().iter().map(|c| c.name.clone()).collect();
    assert_eq!(names, vec!["crontabs.g.io"]);
    f.shutdown.send_replace(true);
}

/// Regression (seen as a flaky two-server etcd test): when another server sharing the store had
/// already written the status this server wanted to write, the controller restored its registry
/// from its informer cache, which did not have that write yet: the resource it had just served
/// was withdrawn (404) until the event arrived. It now serves what is stored.
#[tokio::test]
async fn a_status_another_server_wrote_first_keeps_the_resource_served() {
    let f = Fixture::new();
    let obj = crd("widgets", "g.io", "Widget");
    f.create(&obj).await;
    let (stop, shutdown) = watch::channel(false);
    let mut informer = Informer::json(f.store.clone(), crd_prefix(), shutdown.clone());
    let mut run = Run::new(
        f.store.clone(),
        f.registry.clone(),
        informer.cache(),
        shutdown,
    );
    // The cache holds the CRD without a status.
    while let Notification::Changed(change) = informer.next().await.expect("informer") {
        run.observe(change);
    }
    // "Server A" writes the status this server's controller would write; this server's
    // informer is not polled again, so its cache does not see it.
    let key = crd_key("widgets.g.io");
    let desired = desired_status(&obj, &run.names.taken("g.io", "widgets.g.io"));
    assert_eq!(reason(&desired, "Established"), "True/InitialNamesAccepted");
    let (_, kv) = get_json(f.store.as_ref(), &key).await.unwrap().unwrap();
    f.store
        .update(&key, Bytes::from(desired.to_string()), kv.mod_revision)
        .await
        .unwrap();
    run.reconcile(&key).await;
    let serving = f
        .registry
        .get("widgets.g.io")
        .expect("still in the registry");
    assert!(serving.established && serving.serving(), "withdrawn");
    drop(stop);
}
