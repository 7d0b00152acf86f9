//! An example operator: each `Page` (demo.example.com/v1) becomes a `ConfigMap` it owns holding
//! its content, written by server-side apply; the Page's status (also server-side apply) says
//! which `ConfigMap` and whether it is ready; an Event records each reconcile; a finalizer
//! archives a deleted Page's content into the `page-archive` `ConfigMap` before it goes.
//!
//! Several instances elect one leader through a Lease ([`leader`]); only the leader reconciles.
//! A validating admission webhook ([`webhook::validate_page`]) refuses Pages with scripts.
//!
//! Its tests (`tests/operator.rs`) use only `crd-apiserver-testing`.

pub mod leader;
pub mod webhook;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ApiResource, Patch, PatchParams};
use kube::core::object::Object;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::finalizer::{Event as Finalizer, finalizer};
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The CRD, as `kubectl apply -f examples/operator/crd.yaml` installs it.
pub const CRD_YAML: &str = include_str!("../crd.yaml");

/// The finalizer that archives a Page's content before it is deleted.
pub const FINALIZER: &str = "pages.demo.example.com/archive";

/// The field manager of every write (and the Events' reporting controller).
pub const MANAGER: &str = "page-operator";

/// `Page.spec`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct PageSpec {
    /// What the `ConfigMap` serves as `index.html`.
    pub content: String,
}

/// `Page.status`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PageStatus {
    /// The owned `ConfigMap` holds the current content.
    pub ready: bool,
    /// The owned `ConfigMap`'s name.
    pub config_map: String,
    /// The generation last reconciled.
    pub observed_generation: Option<i64>,
}

/// A Page: a typed object without a derive macro (`kube::core::object::Object`).
pub type Page = Object<PageSpec, PageStatus>;

/// The Page resource (the dynamic type of [`Page`]).
pub fn page_resource() -> ApiResource {
    ApiResource {
        group: "demo.example.com".into(),
        version: "v1".into(),
        api_version: "demo.example.com/v1".into(),
        kind: "Page".into(),
        plural: "pages".into(),
    }
}

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An API call failed.
    #[error(transparent)]
    Kube(#[from] kube::Error),
    /// The finalizer helper failed.
    #[error(transparent)]
    Finalizer(#[from] Box<kube::runtime::finalizer::Error<Error>>),
}

/// What every reconcile shares.
pub struct Context {
    client: Client,
    recorder: Recorder,
}

/// Runs the operator as the candidate `identity` for the Lease `default/page-operator`:
/// reconciles only while it leads. Never returns.
pub async fn run_elected(client: Client, identity: &str, lease: Duration) {
    let elector = leader::Elector::new(client.clone(), "default", MANAGER, identity, lease);
    elector.run(move || run(client.clone())).await;
}

/// Runs the operator until the returned future is dropped.
pub async fn run(client: Client) {
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: MANAGER.into(),
            instance: None,
        },
    );
    let pages: Api<Page> = Api::all_with(client.clone(), &page_resource());
    Controller::new_with(pages, watcher::Config::default(), page_resource())
        .owns_with(
            Api::<ConfigMap>::all(client.clone()),
            (),
            watcher::Config::default(),
        )
        .run(
            reconcile,
            error_policy,
            Arc::new(Context { client, recorder }),
        )
        .for_each(|_| async {})
        .await;
}

async fn reconcile(page: Arc<Page>, ctx: Arc<Context>) -> Result<Action, Error> {
    let ns = page.namespace().unwrap_or_default();
    let pages: Api<Page> = Api::namespaced_with(ctx.client.clone(), &ns, &page_resource());
    finalizer(&pages, FINALIZER, page, |event| async {
        match event {
            Finalizer::Apply(page) => apply(&page, &ctx).await,
            Finalizer::Cleanup(page) => archive(&page, &ctx).await,
        }
    })
    .await
    .map_err(|e| Error::Finalizer(Box::new(e)))
}

/// The owned `ConfigMap` and the status, both by server-side apply; an Event says so.
async fn apply(page: &Page, ctx: &Context) -> Result<Action, Error> {
    let ns = page.namespace().unwrap_or_default();
    let name = format!("page-{}", page.name_any());
    let owner = page.controller_owner_ref(&page_resource());
    let cm = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "ownerReferences": [owner]},
        "data": {"index.html": page.spec.content},
    });
    let ssa = PatchParams::apply(MANAGER).force();
    Api::<ConfigMap>::namespaced(ctx.client.clone(), &ns)
        .patch(&name, &ssa, &Patch::Apply(cm))
        .await?;
    let status = json!({
        "apiVersion": "demo.example.com/v1", "kind": "Page",
        "status": {"ready": true, "configMap": name, "observedGeneration": page.metadata.generation},
    });
    Api::<Page>::namespaced_with(ctx.client.clone(), &ns, &page_resource())
        .patch_status(&page.name_any(), &ssa, &Patch::Apply(status))
        .await?;
    ctx.recorder
        .publish(
            &Event {
                type_: EventType::Normal,
                reason: "Reconciled".into(),
                note: Some(format!("ConfigMap {name} serves the content")),
                action: "Apply".into(),
                secondary: None,
            },
            &page.object_ref(&page_resource()),
        )
        .await?;
    Ok(Action::await_change())
}

/// The finalizer's work: the content goes into `page-archive` under the Page's name.
async fn archive(page: &Page, ctx: &Context) -> Result<Action, Error> {
    let ns = page.namespace().unwrap_or_default();
    let archive = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "page-archive"},
        "data": {page.name_any(): page.spec.content},
    });
    // Each Page's entry is its own field manager's, so archiving one never drops another.
    let manager = format!("{MANAGER}-archive-{}", page.name_any());
    Api::<ConfigMap>::namespaced(ctx.client.clone(), &ns)
        .patch(
            "page-archive",
            &PatchParams::apply(&manager).force(),
            &Patch::Apply(archive),
        )
        .await?;
    Ok(Action::await_change())
}

fn error_policy(_: Arc<Page>, _: &Error, _: Arc<Context>) -> Action {
    Action::requeue(Duration::from_millis(200))
}
