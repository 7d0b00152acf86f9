//! Webhooks in the test process: the builder's admission and conversion webhooks, each served by
//! a `crd-webhook` server on a free loopback port of the test server's runtime, with one
//! in-memory CA per test server. Registration fills in what a production manifest cannot know
//! (`clientConfig.url` and `caBundle`), and [`effective`] waits until the server's admission
//! chain calls the new configurations, so `start` returns with the webhooks in force.
//!
//! Admission configurations are followed by the server through one informer per kind, in
//! order, so a sentinel configuration created after the test's own and then seen in force
//! proves that the earlier ones are in force too (as `rbac_barrier` does for RBAC). The
//! sentinel's webhook fails every call (it points at a path the webhook server does not serve)
//! and sorts first by name, so its error is the one a probe request gets once it is followed.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use crd_webhook::{Converter, Generated, Mutator, Validator, WebhookHandle, WebhookServer};
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceConversion, CustomResourceDefinition, WebhookConversion,
};
use kube::api::{Api, DeleteParams, PostParams};
use kube::{Client, Resource};
use serde_json::{Value, json};

/// What answers one registration's reviews.
pub(crate) enum Function {
    /// A validating admission function.
    Validating(Arc<dyn Validator>),
    /// A mutating admission function.
    Mutating(Arc<dyn Mutator>),
    /// A conversion function.
    Conversion(Arc<dyn Converter>),
}

/// Where a registration's webhook goes once its server listens.
pub(crate) enum Target {
    /// A `ValidatingWebhookConfiguration` to create.
    Validating(Box<ValidatingWebhookConfiguration>),
    /// A `MutatingWebhookConfiguration` to create.
    Mutating(Box<MutatingWebhookConfiguration>),
    /// The CRD (by name) whose `spec.conversion` calls the webhook.
    Conversion(String),
}

/// One webhook the builder was given: its function and where it is registered.
pub(crate) struct Registration {
    pub(crate) function: Function,
    pub(crate) target: Target,
}

impl Registration {
    /// The configuration's name, or the CRD's: how [`crate::TestServer::webhook`] finds it.
    pub(crate) fn name(&self) -> String {
        match &self.target {
            Target::Validating(c) => c.metadata.name.clone().unwrap_or_default(),
            Target::Mutating(c) => c.metadata.name.clone().unwrap_or_default(),
            Target::Conversion(crd) => crd.clone(),
        }
    }
}

/// A registration whose server listens, with the `clientConfig` that reaches it.
pub(crate) struct Served {
    pub(crate) name: String,
    pub(crate) target: Target,
    pub(crate) handle: WebhookHandle,
    pub(crate) client_config: WebhookClientConfig,
}

/// The sentinel configurations' name: digits sort before letters, so it comes first.
const SENTINEL: &str = "0-crd-apiserver-testing-sentinel";
/// The sentinels' webhook names (three segments or more, as webhook names need); they differ
/// so that the validating probe never mistakes the mutating sentinel's failure for its own.
const MUTATING_SENTINEL: &str = "mutating.sentinel.crd-apiserver-testing.io";
/// See [`MUTATING_SENTINEL`].
const VALIDATING_SENTINEL: &str = "validating.sentinel.crd-apiserver-testing.io";
/// The label that marks a probe request; only the sentinel's `objectSelector` asks for it.
const PROBE_LABEL: &str = "crd-apiserver-testing.io/probe";
/// A path no webhook server of the harness serves: calls to it fail (404).
const NOWHERE: &str = "/crd-apiserver-testing-nowhere";

/// Starts one `crd-webhook` server per registration on `runtime` (the test server's own, so
/// a test that blocks its thread, running kubectl say, never starves a webhook), on a free
/// port of 127.0.0.1 with a certificate from `certs`.
pub(crate) async fn serve(
    registrations: Vec<Registration>,
    certs: &Generated,
    runtime: &tokio::runtime::Handle,
) -> anyhow::Result<Vec<Served>> {
    let mut started = Vec::new();
    for registration in registrations {
        let name = registration.name();
        let server = WebhookServer::new(&certs.cert_pem, &certs.key_pem)?
            .bind(([127, 0, 0, 1], 0).into())
            .shutdown_timeout(Duration::from_millis(100));
        let spawning = match registration.function {
            Function::Validating(f) => {
                let validate = move |request: &Value| f.validate(request);
                runtime.spawn(server.spawn_validating(validate))
            }
            Function::Mutating(f) => {
                let mutate = move |object: Value, request: &Value| f.mutate(object, request);
                runtime.spawn(server.spawn_mutating(mutate))
            }
            Function::Conversion(f) => {
                let convert = move |object: Value, version: &str| f.convert(object, version);
                runtime.spawn(server.spawn(convert))
            }
        };
        let handle = spawning
            .await
            .context("the server runtime stopped")?
            .with_context(|| format!("starting the webhook server of {name}"))?;
        let client_config = WebhookClientConfig {
            url: Some(handle.url()),
            ca_bundle: Some(ByteString(certs.ca_cert_pem.clone().into_bytes())),
            service: None,
        };
        started.push(Served {
            name,
            target: registration.target,
            handle,
            client_config,
        });
    }
    Ok(started)
}

/// Points each CRD named by a conversion registration at its webhook (`strategy: Webhook`,
/// keeping `conversionReviewVersions` when the CRD lists them, else `v1`), before the CRDs are
/// created: Established then means the conversion is in force. A name that is none of the
/// CRDs is an error.
pub(crate) fn set_conversions(
    served: &[Served],
    crds: &mut [CustomResourceDefinition],
) -> anyhow::Result<()> {
    for s in served {
        let Target::Conversion(name) = &s.target else {
            continue;
        };
        let crd = crds
            .iter_mut()
            .find(|c| c.metadata.name.as_deref() == Some(name.as_str()))
            .with_context(|| {
                format!(
                    "conversion_webhook({name:?}): no CRD of that name was given to the builder"
                )
            })?;
        let versions = crd
            .spec
            .conversion
            .as_ref()
            .and_then(|c| c.webhook.as_ref())
            .map(|w| w.conversion_review_versions.clone())
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| vec!["v1".to_string()]);
        crd.spec.conversion = Some(CustomResourceConversion {
            strategy: "Webhook".into(),
            webhook: Some(WebhookConversion {
                client_config: Some(
                    serde_json::from_value(serde_json::to_value(&s.client_config)?)
                        .context("the conversion clientConfig")?,
                ),
                conversion_review_versions: versions,
            }),
        });
    }
    Ok(())
}

/// Creates the admission configurations, every webhook's `clientConfig` replaced by the one
/// that reaches the test's function (a production manifest's `service` reference included),
/// then waits until the server calls them.
pub(crate) async fn register(
    client: &Client,
    served: &mut [Served],
    timeout: Duration,
) -> anyhow::Result<()> {
    let (mut validating, mut mutating) = (false, false);
    for s in served.iter_mut() {
        match &mut s.target {
            Target::Validating(config) => {
                for hook in config.webhooks.iter_mut().flatten() {
                    hook.client_config = s.client_config.clone();
                }
                create(client, config.as_ref())
                    .await
                    .with_context(|| format!("registering the validating webhook {}", s.name))?;
                validating = true;
            }
            Target::Mutating(config) => {
                for hook in config.webhooks.iter_mut().flatten() {
                    hook.client_config = s.client_config.clone();
                }
                create(client, config.as_ref())
                    .await
                    .with_context(|| format!("registering the mutating webhook {}", s.name))?;
                mutating = true;
            }
            Target::Conversion(_) => {}
        }
    }
    let Some(first) = served.first() else {
        return Ok(());
    };
    let mut nowhere = first.client_config.clone();
    nowhere.url = Some(format!("https://{}{NOWHERE}", first.handle.local_addr()));
    // Mutating first: its sentinel fails before any other webhook is called. The validating
    // probe then waits until the mutating sentinel is gone too.
    if mutating {
        effective::<MutatingWebhookConfiguration>(client, MUTATING_SENTINEL, &nowhere, timeout)
            .await?;
    }
    if validating {
        effective::<ValidatingWebhookConfiguration>(client, VALIDATING_SENTINEL, &nowhere, timeout)
            .await?;
    }
    Ok(())
}

async fn create<K>(client: &Client, object: &K) -> anyhow::Result<K>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::ClusterResourceScope>,
    K: Clone + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
{
    Ok(Api::<K>::all(client.clone())
        .create(&PostParams::default(), object)
        .await?)
}

/// Creates a sentinel configuration of kind `K` calling `nowhere`, probes until a dry-run
/// create of a labelled `ConfigMap` fails on the sentinel, then deletes the sentinel.
async fn effective<K>(
    client: &Client,
    hook: &str,
    nowhere: &WebhookClientConfig,
    timeout: Duration,
) -> anyhow::Result<()>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::ClusterResourceScope>,
    K: Clone + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
{
    let kind = K::kind(&());
    let sentinel: K = serde_json::from_value(json!({
        "metadata": {"name": SENTINEL},
        "webhooks": [{
            "name": hook,
            "clientConfig": nowhere,
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                "resources": ["configmaps"]}],
            "objectSelector": {"matchLabels": {PROBE_LABEL: "true"}},
            "failurePolicy": "Fail",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "timeoutSeconds": 5,
        }],
    }))?;
    let api: Api<K> = Api::all(client.clone());
    api.create(&PostParams::default(), &sentinel)
        .await
        .with_context(|| format!("creating the sentinel {kind}"))?;
    let probe: ConfigMap = serde_json::from_value(json!({
        "metadata": {"generateName": "probe-", "labels": {PROBE_LABEL: "true"}},
    }))?;
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let wanted = format!("failed calling webhook \"{hook}\"");
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let last = match configmaps.create(&dry_run, &probe).await {
            Err(kube::Error::Api(status)) if status.message.contains(&wanted) => break,
            Err(e) => e.to_string(),
            Ok(_) => "the probe was admitted".to_string(),
        };
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the {kind}s were not in force within {timeout:?} (last probe: {last})"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    api.delete(SENTINEL, &DeleteParams::default())
        .await
        .with_context(|| format!("deleting the sentinel {kind}"))?;
    Ok(())
}
