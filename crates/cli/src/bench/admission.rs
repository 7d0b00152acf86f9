//! The "admission" section of `crd-apiserver bench` (`--only-admission`): what validating
//! admission adds to a create. Three configurations on fresh servers of the same run, each
//! measured twice in rotating order (the better run counts, so a disturbance of the machine does
//! not decide the comparison):
//! (a) no admission; (b) one do-nothing validating webhook (`crd-webhook`'s `spawn_validating`,
//! in this process, over loopback HTTPS); (c) one `ValidatingAdmissionPolicy` with a param
//! `ConfigMap` (a variable and two validations, all passing for the bench's objects).
//! Each reports creates/s from 64 clients and per-request latency (p50, p99) from one client
//! issuing creates one after another; the added cost per request is the p50 difference from (a).

use std::path::Path;
use std::time::Duration;

use anyhow::bail;
use serde_json::{Value, json};

use super::{
    GROUP, Report, Server, create_load, object, percentile, post_all, setup_crd, wait_ready,
};

/// What validating admission a server runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Config {
    None,
    Webhook,
    Policy,
}

impl Config {
    fn label(self) -> &'static str {
        match self {
            Config::None => "no admission",
            Config::Webhook => "one validating webhook",
            Config::Policy => "one ValidatingAdmissionPolicy with a param ConfigMap",
        }
    }
}

/// One configuration's best figures: creates/s (64 clients), and one client's p50 and p99.
#[derive(Clone, Copy, Default)]
struct Figures {
    rate: f64,
    p50: Duration,
    p99: Duration,
}

/// Sends `probe` (a dry-run create) until the server answers with `status`: admission
/// configuration reaches the dispatcher through informers.
async fn until_status(server: &Server, probe: &Value, status: u16) -> anyhow::Result<()> {
    let client = server.client(true)?;
    let url = format!(
        "{}/apis/{GROUP}/v1/namespaces/default/widgets?dryRun=All",
        server.url
    );
    for _ in 0..1000 {
        let r = client
            .post(&url)
            .bearer_auth(&server.token)
            .header("Content-Type", "application/json")
            .body(probe.to_string())
            .send()
            .await?;
        if r.status().as_u16() == status {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    bail!("admission never took effect")
}

/// (c): a param `ConfigMap`, a `ValidatingAdmissionPolicy` on widget creates reading it (a
/// variable and two validations) and a `Deny` binding; waits until it refuses a widget with too
/// many replicas.
async fn policy(server: &Server) -> anyhow::Result<()> {
    post_all(
        server,
        &format!("{}/api/v1/namespaces/default/configmaps", server.url),
        1,
        |_| json!({"metadata": {"name": "widget-limits"}, "data": {"maxReplicas": "10"}}),
    )
    .await?;
    let ar = format!("{}/apis/admissionregistration.k8s.io/v1", server.url);
    post_all(
        server,
        &format!("{ar}/validatingadmissionpolicies"),
        1,
        |_| {
            json!({"metadata": {"name": "widgets"}, "spec": {
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": {"resourceRules": [{"operations": ["CREATE", "UPDATE"],
                "apiGroups": [GROUP], "apiVersions": ["*"], "resources": ["widgets"]}]},
            "variables": [{"name": "replicas", "expression": "object.spec.replicas"}],
            "validations": [
                {"expression": "variables.replicas <= int(params.data.maxReplicas)",
                 "messageExpression": "'at most ' + params.data.maxReplicas + ' replicas'"},
                {"expression": "object.metadata.name.size() < 64"}]}})
        },
    )
    .await?;
    post_all(
        server,
        &format!("{ar}/validatingadmissionpolicybindings"),
        1,
        |_| {
            json!({"metadata": {"name": "widgets"}, "spec": {"policyName": "widgets",
            "validationActions": ["Deny"],
            "paramRef": {"name": "widget-limits", "namespace": "default",
                         "parameterNotFoundAction": "Deny"}}})
        },
    )
    .await?;
    let mut too_many = object("probe");
    too_many["spec"]["replicas"] = json!(50);
    until_status(server, &too_many, 422).await
}

/// (b): a do-nothing validating webhook on widget creates, served from this process; waits until
/// the server calls it. Returns the webhook's handle (dropping it stops the webhook).
async fn webhook(server: &Server) -> anyhow::Result<crd_webhook::WebhookHandle> {
    let certs = crd_webhook::self_signed(&["127.0.0.1"])?;
    let handle = crd_webhook::WebhookServer::new(&certs.cert_pem, &certs.key_pem)?
        .bind("127.0.0.1:0".parse()?)
        .spawn_validating(|_: &Value| Ok(Vec::new()))
        .await?;
    let ca = certs.ca_bundle_base64.clone();
    let url = handle.url();
    post_all(
        server,
        &format!(
            "{}/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
            server.url
        ),
        1,
        move |_| {
            json!({"metadata": {"name": "widgets"}, "webhooks": [{
            "name": "widgets.bench.example.com",
            "clientConfig": {"url": url, "caBundle": ca},
            "rules": [{"operations": ["CREATE"], "apiGroups": [GROUP], "apiVersions": ["*"],
                       "resources": ["widgets"]}],
            "sideEffects": "None", "admissionReviewVersions": ["v1"], "failurePolicy": "Fail"}]})
        },
    )
    .await?;
    // A dry-run create with side effects `None` is sent to the webhook; wait for the first call.
    let client = server.client(true)?;
    let probe_url = format!(
        "{}/apis/{GROUP}/v1/namespaces/default/widgets?dryRun=All",
        server.url
    );
    for _ in 0..1000 {
        client
            .post(&probe_url)
            .bearer_auth(&server.token)
            .header("Content-Type", "application/json")
            .body(object("probe").to_string())
            .send()
            .await?;
        if handle.requests() > 0 {
            return Ok(handle);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    bail!("the webhook was never called")
}

/// One configuration on a fresh server: creates/s from 64 clients, then `creates / 10`
/// sequential creates from one client for per-request latency.
async fn measure(dir: &Path, config: Config, creates: usize) -> anyhow::Result<Figures> {
    let (server, _) = Server::start(dir)?;
    wait_ready(&server).await?;
    let client = server.client(true)?;
    setup_crd(&server, &client).await?;
    let _webhook = match config {
        Config::None => None,
        Config::Webhook => Some(webhook(&server).await?),
        Config::Policy => {
            policy(&server).await?;
            None
        }
    };
    let (elapsed, _) = create_load(&server, 64, creates, "v").await?;
    let (_, lat) = create_load(&server, 1, (creates / 10).max(100), "s").await?;
    Ok(Figures {
        rate: creates as f64 / elapsed.as_secs_f64(),
        p50: percentile(&lat, 0.5),
        p99: percentile(&lat, 0.99),
    })
}

fn us(d: Duration) -> String {
    format!("{:.0} µs", d.as_secs_f64() * 1e6)
}

/// The "admission" section (see the module documentation).
pub(super) async fn admission_overhead(
    dir: &Path,
    report: &mut Report,
    creates: usize,
) -> anyhow::Result<()> {
    let configs = [Config::None, Config::Webhook, Config::Policy];
    let mut best = [Figures::default(); 3];
    for round in 0..2 {
        for k in 0..3 {
            let i = (k + round) % 3;
            let data = dir.join(format!("admission-{round}-{i}"));
            let f = measure(&data, configs[i], creates).await?;
            let b = &mut best[i];
            if f.rate > b.rate {
                b.rate = f.rate;
            }
            if b.p50.is_zero() || f.p50 < b.p50 {
                (b.p50, b.p99) = (f.p50, f.p99);
            }
        }
    }
    let base = best[0];
    for (config, f) in configs.iter().zip(best) {
        let added = f.p50.saturating_sub(base.p50);
        let note = match config {
            Config::None => "baseline".to_string(),
            Config::Webhook => format!(
                "added p50 {}, {:.0} µs of server time per create (64 clients / rate); target < 1 ms p50 added",
                us(added),
                (1.0 / f.rate - 1.0 / base.rate) * 1e6
            ),
            Config::Policy => format!(
                "added p50 {}, {:.0} µs of server time per create (64 clients / rate); target < 50 µs",
                us(added),
                (1.0 / f.rate - 1.0 / base.rate) * 1e6
            ),
        };
        report.row(
            &format!("creates, {}", config.label()),
            format!(
                "{:.0}/s (64 clients); one client p50 {} p99 {}",
                f.rate,
                us(f.p50),
                us(f.p99)
            ),
            note,
        );
    }
    Ok(())
}
