//! The harness's figures (BENCHMARKS.md, "Test harness"): start to a usable client with 5 CRDs,
//! the same with a validating webhook registered, a suite of 100 tests each with its own server,
//! and memory per running server.
//!
//! `cargo run -p crd-apiserver-testing --example startup` measures the test profile, which is
//! what an operator's `cargo test` gets; add `--release` for the optimised figures.

use std::time::{Duration, Instant};

use crd_apiserver_testing::TestServer;
use crd_apiserver_testing::k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use crd_apiserver_testing::k8s_openapi::api::core::v1::ConfigMap;
use crd_apiserver_testing::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use crd_apiserver_testing::kube::api::{Api, ListParams, PostParams};
use crd_apiserver_testing::webhook::Denial;

/// Five small CRDs like an operator's `config/crd`.
fn crds() -> String {
    use std::fmt::Write as _;
    (0..5).fold(String::new(), |mut out, i| {
            let _ = write!(
                out,
                "---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: kind{i}s.bench.example.com}}
spec:
  group: bench.example.com
  names: {{plural: kind{i}s, singular: kind{i}, kind: Kind{i}}}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {{status: {{}}}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {{type: object, properties: {{replicas: {{type: integer}}, image: {{type: string}}}}}}
          status: {{type: object, x-kubernetes-preserve-unknown-fields: true}}
"
            );
            out
        })
}

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let yaml = crds();
    // Warm-up: the first start pays for lazily built process-wide state.
    drop(TestServer::builder().crd_yaml(&yaml).start().await?);

    for (label, with_crds) in [("no CRDs", false), ("5 CRDs", true)] {
        let mut times = Vec::new();
        for _ in 0..20 {
            let began = Instant::now();
            let builder = TestServer::builder();
            let builder = if with_crds {
                builder.crd_yaml(&yaml)
            } else {
                builder
            };
            let server = builder.start().await?;
            // Usable: a first request through the returned client has answered.
            Api::<CustomResourceDefinition>::all(server.client())
                .list(&ListParams::default())
                .await?;
            times.push(began.elapsed());
            drop(server);
        }
        times.sort();
        println!(
            "start to usable client, {label}: median {:.1} ms, p90 {:.1} ms, max {:.1} ms (20 runs)",
            ms(percentile(&times, 50)),
            ms(percentile(&times, 90)),
            ms(times[times.len() - 1]),
        );
    }

    // With a validating webhook served in the process and registered (a CA generated, the
    // webhook server started, the configuration created and seen in force).
    let mut times = Vec::new();
    for _ in 0..20 {
        let began = Instant::now();
        let server = TestServer::builder()
            .crd_yaml(&yaml)
            .validating_webhook(webhook_configuration()?, allow)
            .start()
            .await?;
        Api::<ConfigMap>::namespaced(server.client(), "default")
            .list(&ListParams::default())
            .await?;
        times.push(began.elapsed());
        drop(server);
    }
    times.sort();
    println!(
        "start to usable client, 5 CRDs and a validating webhook: median {:.1} ms, p90 {:.1} ms, max {:.1} ms (20 runs)",
        ms(percentile(&times, 50)),
        ms(percentile(&times, 90)),
        ms(times[times.len() - 1]),
    );

    // A suite: 100 tests, each starting its own server with the CRDs, writing and reading an
    // object, and dropping the server (stop and data dir removal included).
    let began = Instant::now();
    for i in 0..100 {
        let server = TestServer::builder().crd_yaml(&yaml).start().await?;
        let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(format!("test-{i}"));
        api.create(&PostParams::default(), &cm).await?;
        api.get(&format!("test-{i}")).await?;
    }
    let total = began.elapsed();
    println!(
        "100 sequential tests, own server each (5 CRDs, one write and read): {:.2} s total, {:.1} ms per test",
        total.as_secs_f64(),
        ms(total) / 100.0
    );

    // Memory: servers running at once in this process, each with the CRDs and a client.
    let before = rss_kib();
    let mut running = Vec::new();
    for _ in 0..20 {
        let server = TestServer::builder().crd_yaml(&yaml).start().await?;
        Api::<ConfigMap>::namespaced(server.client(), "default")
            .list(&ListParams::default())
            .await?;
        running.push(server);
    }
    let after = rss_kib();
    println!(
        "memory per running server (20 at once, RSS growth / 20): {:.1} MiB",
        (after.saturating_sub(before)) as f64 / 20.0 / 1024.0
    );
    drop(running);
    Ok(())
}

/// A webhook on `ConfigMap` creates, as an operator ships it.
fn webhook_configuration() -> anyhow::Result<ValidatingWebhookConfiguration> {
    Ok(serde_json::from_value(serde_json::json!({
        "metadata": {"name": "allow.bench.example.com"},
        "webhooks": [{
            "name": "allow.bench.example.com",
            "clientConfig": {},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                "resources": ["configmaps"]}],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        }],
    }))?)
}

#[allow(clippy::unnecessary_wraps)] // The `Validator` signature.
fn allow(_: &serde_json::Value) -> Result<Vec<String>, Denial> {
    Ok(Vec::new())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
