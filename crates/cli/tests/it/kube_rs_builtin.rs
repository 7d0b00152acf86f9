//! kube-rs on the built-in kinds, as a typical operator uses them in its first minute: a
//! `Controller` that `owns()` `ConfigMaps`, a `Recorder` publishing Events, Lease-based leader
//! election between two contenders, and Secrets read back.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Event as CoreEvent, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use serde_json::json;

use crate::support::TestServer;

const WAIT: Duration = Duration::from_secs(20);

async fn client(server: &TestServer) -> kube::Client {
    let kubeconfig = Kubeconfig::read_from(server.kubeconfig()).expect("kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kubeconfig is usable");
    kube::Client::try_from(config).expect("client builds")
}

/// Polls `check` until it returns `Some`, failing after [`WAIT`].
async fn poll<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn deployment(name: &str) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }))
    .expect("a valid Deployment")
}

/// The reconciler: every Deployment owns a `ConfigMap` `<name>-config`, written by server-side
/// apply with an owner reference.
async fn reconcile(d: Arc<Deployment>, api: Arc<Api<ConfigMap>>) -> Result<Action, kube::Error> {
    let owner = d
        .controller_owner_ref(&())
        .expect("a stored Deployment has a uid");
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some(format!("{}-config", d.name_any())),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("replicas".to_string(), "1".to_string())])),
        ..ConfigMap::default()
    };
    api.patch(
        &format!("{}-config", d.name_any()),
        &PatchParams::apply("deploy-operator").force(),
        &Patch::Apply(&cm),
    )
    .await?;
    Ok(Action::await_change())
}

#[tokio::test]
async fn a_controller_owns_config_maps() {
    let server = TestServer::start();
    let client = client(&server).await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let controller = Controller::new(deployments.clone(), watcher::Config::default())
        .owns(config_maps.clone(), watcher::Config::default())
        .run(
            reconcile,
            |_, _, _| Action::requeue(Duration::from_secs(1)),
            Arc::new(config_maps.clone()),
        )
        .for_each(|_| async {});
    let handle = tokio::spawn(controller);

    deployments
        .create(&PostParams::default(), &deployment("web"))
        .await
        .expect("created");
    let cm = poll("the owned ConfigMap", || async {
        config_maps.get_opt("web-config").await.ok().flatten()
    })
    .await;
    let owners = cm.metadata.owner_references.unwrap_or_default();
    assert_eq!(owners.len(), 1);
    assert_eq!(owners[0].kind, "Deployment");
    assert_eq!(owners[0].controller, Some(true));

    // The controller watches what it owns: a deleted ConfigMap is reconciled back.
    let old_uid = cm.metadata.uid.clone();
    config_maps
        .delete("web-config", &DeleteParams::default())
        .await
        .expect("deleted");
    poll("the ConfigMap recreated by the owns() watch", || async {
        config_maps
            .get_opt("web-config")
            .await
            .ok()
            .flatten()
            .filter(|c| c.metadata.uid != old_uid)
    })
    .await;
    handle.abort();
}

#[tokio::test]
async fn a_recorder_publishes_events_and_secrets_read_back() {
    let server = TestServer::start();
    let client = client(&server).await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let secret: Secret = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "creds"},
        "stringData": {"password": "hunter2"},
    }))
    .expect("a valid Secret");
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .expect("created");
    let read = secrets.get("creds").await.expect("read");
    assert_eq!(read.type_.as_deref(), Some("Opaque"));
    let data = read.data.clone().expect("stringData is merged into data");
    assert_eq!(data["password"].0, b"hunter2");
    assert!(read.string_data.is_none());

    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "creds-operator".into(),
            instance: Some("pod-1".into()),
        },
    );
    let reference = read.object_ref(&());
    recorder
        .publish(
            &Event {
                type_: EventType::Normal,
                reason: "Rotated".into(),
                note: Some("password rotated".into()),
                action: "Rotate".into(),
                secondary: None,
            },
            &reference,
        )
        .await
        .expect("published through events.k8s.io/v1");
    // The same event as a core/v1 Event, found by the involved object's name.
    let core: Api<CoreEvent> = Api::namespaced(client, "default");
    let events = core
        .list(&ListParams::default().fields("involvedObject.name=creds"))
        .await
        .expect("listed");
    assert_eq!(events.items.len(), 1, "{:?}", events.items);
    let e = &events.items[0];
    assert_eq!(e.reason.as_deref(), Some("Rotated"));
    assert_eq!(e.message.as_deref(), Some("password rotated"));
    assert_eq!(e.involved_object.kind.as_deref(), Some("Secret"));
    assert_eq!(e.reporting_component.as_deref(), Some("creds-operator"));
}

/// Tries to take or renew the lease for `me`: a compare-and-swap on the lease's
/// resourceVersion, as client-go's leader election does. Returns whether `me` holds it.
async fn try_acquire(leases: &Api<Lease>, me: &str, duration_secs: i32) -> bool {
    let now = Timestamp::now();
    let Some(current) = leases.get_opt("leader").await.expect("read the lease") else {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some("leader".into()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(me.into()),
                lease_duration_seconds: Some(duration_secs),
                acquire_time: Some(MicroTime(now)),
                renew_time: Some(MicroTime(now)),
                ..LeaseSpec::default()
            }),
        };
        return leases.create(&PostParams::default(), &lease).await.is_ok();
    };
    let spec = current.spec.clone().unwrap_or_default();
    let held_by_other = spec.holder_identity.as_deref().is_some_and(|h| h != me);
    let expires = spec.renew_time.map_or(now, |t| t.0)
        + std::time::Duration::from_secs(
            u64::try_from(spec.lease_duration_seconds.unwrap_or(0)).unwrap_or(0),
        );
    if held_by_other && expires > now {
        return false;
    }
    let mut next = current.clone();
    let s = next.spec.get_or_insert_with(LeaseSpec::default);
    if held_by_other || s.holder_identity.is_none() {
        s.acquire_time = Some(MicroTime(now));
        s.lease_transitions = Some(s.lease_transitions.unwrap_or(0) + 1);
    }
    s.holder_identity = Some(me.into());
    s.renew_time = Some(MicroTime(now));
    s.lease_duration_seconds = Some(duration_secs);
    leases
        .replace("leader", &PostParams::default(), &next)
        .await
        .is_ok()
}

#[tokio::test]
async fn lease_leader_election_fails_over() {
    let server = TestServer::start();
    let leases: Api<Lease> = Api::namespaced(client(&server).await, "default");
    assert!(try_acquire(&leases, "a", 1).await, "a wins the empty lease");
    assert!(try_acquire(&leases, "a", 1).await, "a renews");
    assert!(
        !try_acquire(&leases, "b", 1).await,
        "b is refused while a renews"
    );
    // a stops renewing: b takes over once the lease expires.
    poll("b takes over", || async {
        try_acquire(&leases, "b", 1).await.then_some(())
    })
    .await;
    let lease = leases.get("leader").await.expect("read");
    let spec = lease.spec.expect("spec");
    assert_eq!(spec.holder_identity.as_deref(), Some("b"));
    assert_eq!(spec.lease_transitions, Some(1));
    assert!(!try_acquire(&leases, "a", 1).await, "a is refused now");
}
