//! The "conversion rules" section of `crd-apiserver bench` (`--only-conversion-rules`): a list
//! of N objects read at another version, converted natively by a CRD's `conversionRules`
//! (`strategy: ConversionRules`) against the same list on a twin CRD whose `strategy: Webhook`
//! points at the `conversion-webhook --crd` engine serving the same rules, in process over
//! loopback HTTPS. Also the engine alone (objects converted per second, no server).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use super::pin::cpu_seconds;
use super::{GROUP, Report, Server, create_crd, ms, post_all, wait_ready};
use crate::conversion_webhook::RulesConverter;

/// A CRD `<plural>.bench.example.com`: v1 (storage) `firstName`, `timeoutSeconds`, `legacy`,
/// `payload`; v2 `name.first`, `timeout` (duration), `payload`; `legacy` kept in an annotation.
fn crd(plural: &str, kind: &str, conversion: &Value) -> Value {
    let v1 = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "firstName": {"type": "string"}, "timeoutSeconds": {"type": "integer"},
        "legacy": {"type": "string"}, "payload": {"type": "string"}}}}});
    let v2 = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "name": {"type": "object", "properties": {"first": {"type": "string"}}},
        "timeout": {"type": "string", "format": "duration"}, "payload": {"type": "string"}}}}});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{GROUP}")},
        "spec": {"group": GROUP, "scope": "Namespaced",
                 "names": {"plural": plural, "kind": kind},
                 "versions": [
                    {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": v1}},
                    {"name": "v2", "served": true, "storage": false, "schema": {"openAPIV3Schema": v2}}],
                 "conversion": conversion}
    })
}

fn rules() -> Value {
    json!({"strategy": "ConversionRules", "conversionRules": [
        {"from": "v1", "to": "v2", "rules": [
            {"fromField": ".spec.firstName", "toField": ".spec.name.first"},
            {"fromField": ".spec.timeoutSeconds", "toField": ".spec.timeout",
             "transformation": "duration(string(self) + 's')"},
            {"fromField": ".spec.legacy", "toField": ".metadata.annotations['v1.bench.example.com/legacy']"}]},
        {"from": "v2", "to": "v1", "rules": [
            {"fromField": ".spec.name.first", "toField": ".spec.firstName"},
            {"fromField": ".spec.timeout", "toField": ".spec.timeoutSeconds",
             "transformation": "self.getSeconds()"},
            {"fromField": ".metadata.annotations['v1.bench.example.com/legacy']", "toField": ".spec.legacy"}]}]})
}

/// An object of about 1 KiB at v1.
fn object(kind: &str, i: usize) -> Value {
    json!({"apiVersion": format!("{GROUP}/v1"), "kind": kind,
           "metadata": {"name": format!("p-{i:07}")},
           "spec": {"firstName": format!("name-{i}"), "timeoutSeconds": i, "legacy": "kept",
                    "payload": "x".repeat(900)}})
}

/// The fastest of `rounds` lists of `plural` at `version`; checks every item is at it.
async fn list_at(
    server: &Server,
    client: &reqwest::Client,
    (plural, version): (&str, &str),
    n: usize,
    rounds: usize,
) -> anyhow::Result<Duration> {
    let url = format!(
        "{}/apis/{GROUP}/{version}/namespaces/default/{plural}?limit={n}",
        server.url
    );
    let field = if version == "v2" { "name" } else { "firstName" };
    let mut best = Duration::MAX;
    for _ in 0..rounds {
        let t = Instant::now();
        let body = client
            .get(&url)
            .bearer_auth(&server.token)
            .send()
            .await?
            .bytes()
            .await?;
        let took = t.elapsed();
        let v: Value = serde_json::from_slice(&body)?;
        let items = v["items"].as_array().context("no items")?;
        if items.len() != n || items.iter().any(|i| i["spec"][field].is_null()) {
            bail!("the list at {version} was not converted: {}", items.len());
        }
        best = best.min(took);
    }
    Ok(best)
}

/// Runs the section.
pub(super) async fn conversion_rules(
    dir: &Path,
    report: &mut Report,
    n: usize,
) -> anyhow::Result<()> {
    // The engine alone.
    let native = crd("people", "Person", &rules());
    let engine = RulesConverter::new(&native)?;
    let sample: Vec<Value> = (0..n).map(|i| object("Person", i)).collect();
    let t = Instant::now();
    for o in &sample {
        crd_webhook::Converter::convert(&engine, o.clone(), &format!("{GROUP}/v2"))
            .map_err(anyhow::Error::msg)?;
    }
    let engine_took = t.elapsed();
    report.row(
        &format!("conversion rules engine alone, {n} objects v1→v2"),
        ms(engine_took),
        format!(
            "{:.0} objects/s, one thread, no server",
            n as f64 / engine_took.as_secs_f64()
        ),
    );

    let (server, _) = Server::start(&dir.join("conversion-rules"))?;
    wait_ready(&server).await?;
    let client = server.client(true)?;
    let certs = crd_webhook::self_signed(&["127.0.0.1"])?;
    let webhook = crd_webhook::WebhookServer::new(&certs.cert_pem, &certs.key_pem)?
        .bind("127.0.0.1:0".parse()?)
        .spawn(RulesConverter::new(&native)?)
        .await?;
    let hooked = crd(
        "hookedpeople",
        "HookedPerson",
        &json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
            "clientConfig": {"url": webhook.url(), "caBundle": certs.ca_bundle_base64}}}),
    );
    create_crd(&server, &client, &native).await?;
    create_crd(&server, &client, &hooked).await?;
    for (plural, kind) in [("people", "Person"), ("hookedpeople", "HookedPerson")] {
        let url = format!("{}/apis/{GROUP}/v1/namespaces/default/{plural}", server.url);
        post_all(&server, &url, n, move |i| object(kind, i)).await?;
    }
    // Alternate the two so that neither profits from a warmer process; the list at the
    // storage version (no conversion) is the baseline both share.
    // Besides the wall time (best of 6), the CPU time spent per list (mean of 6), by the server
    // and by this process (which runs the webhook): load moves the first, hardly the second.
    let mut best = [Duration::MAX; 4];
    let mut cpu = [(0.0, 0.0); 4];
    let pid = server.child.id().to_string();
    for _ in 0..3 {
        for (i, what) in [
            ("people", "v1"),
            ("people", "v2"),
            ("hookedpeople", "v1"),
            ("hookedpeople", "v2"),
        ]
        .into_iter()
        .enumerate()
        {
            let before = (cpu_seconds(&pid), cpu_seconds("self"));
            best[i] = best[i].min(list_at(&server, &client, what, n, 2).await?);
            cpu[i].0 += (cpu_seconds(&pid) - before.0) / 6.0;
            cpu[i].1 += (cpu_seconds("self") - before.1) / 6.0;
        }
    }
    let [rules_v1, by_rules, hooked_v1, by_webhook] = best;
    report.row(
        &format!("list of {n} objects read at v2: conversion rules / webhook with the same rules"),
        format!("{} / {}", ms(by_rules), ms(by_webhook)),
        format!(
            "{:.1}x end to end; the same list at the storage version (no conversion): {} / {}",
            by_webhook.as_secs_f64() / by_rules.as_secs_f64(),
            ms(rules_v1),
            ms(hooked_v1)
        ),
    );
    let (rules_cost, webhook_cost) = (
        by_rules.saturating_sub(rules_v1),
        by_webhook.saturating_sub(hooked_v1),
    );
    report.row(
        &format!("conversion time in that list ({n} objects): conversion rules / webhook"),
        format!("{} / {}", ms(rules_cost), ms(webhook_cost)),
        format!(
            "rules {:.1}x faster (target ≥ 10x); list at v2 minus list at v1; webhook in process over loopback HTTPS",
            webhook_cost.as_secs_f64() / rules_cost.as_secs_f64().max(1e-6)
        ),
    );
    let per_object = |seconds: f64| seconds * 1e6 / n as f64;
    let rules_cpu = per_object(cpu[1].0 - cpu[0].0);
    let (webhook_server, webhook_self) = (
        per_object(cpu[3].0 - cpu[2].0),
        per_object(cpu[3].1 - cpu[2].1),
    );
    report.row(
        "CPU per object converted: conversion rules / webhook (server + webhook process)",
        format!(
            "{rules_cpu:.2} µs / {:.2} µs ({webhook_server:.2} + {webhook_self:.2})",
            webhook_server + webhook_self
        ),
        format!(
            "rules {:.1}x less CPU ({:.1}x counting only the server's); list at v2 minus list at v1, mean of 6, /proc/<pid>/stat (10 ms ticks)",
            (webhook_server + webhook_self) / rules_cpu.max(1e-9),
            webhook_server / rules_cpu.max(1e-9)
        ),
    );
    webhook.shutdown().await;
    Ok(())
}
