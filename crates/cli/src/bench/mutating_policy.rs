//! The "mutating admission policy" section of `crd-apiserver bench`
//! (`--only-mutating-admission-policy`): creates/s from 64 clients on fresh servers of the same
//! run, without policies and with one `MutatingAdmissionPolicy` matching every create (an
//! apply configuration adding a label and a spec field, merged with the widget's schema).

use std::path::Path;
use std::time::Duration;

use anyhow::bail;
use serde_json::json;

use super::{
    GROUP, Report, Server, create_load, object, percentile, post_all, setup_crd, wait_ready,
};

/// Creates a `MutatingAdmissionPolicy` on widget creates with a binding, and waits until a
/// dry-run create comes back mutated.
async fn bench_mutating_policy(server: &Server) -> anyhow::Result<()> {
    let ar = format!("{}/apis/admissionregistration.k8s.io/v1beta1", server.url);
    post_all(
        server,
        &format!("{ar}/mutatingadmissionpolicies"),
        1,
        |_| {
            json!({"metadata": {"name": "widgets"}, "spec": {
                "matchConstraints": {"resourceRules": [{"operations": ["CREATE"],
                    "apiGroups": [GROUP], "apiVersions": ["*"], "resources": ["widgets"]}]},
                "reinvocationPolicy": "Never",
                "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
                    "expression": "Object{metadata: Object.metadata{labels: {'mutated': 'yes'}}, spec: Object.spec{tier: 'gold'}}"}}]}})
        },
    )
    .await?;
    post_all(
        server,
        &format!("{ar}/mutatingadmissionpolicybindings"),
        1,
        |_| json!({"metadata": {"name": "widgets"}, "spec": {"policyName": "widgets"}}),
    )
    .await?;
    let client = server.client(true)?;
    let url = format!(
        "{}/apis/{GROUP}/v1/namespaces/default/widgets?dryRun=All",
        server.url
    );
    for _ in 0..500 {
        let r = client
            .post(&url)
            .bearer_auth(&server.token)
            .header("Content-Type", "application/json")
            .body(object("probe").to_string())
            .send()
            .await?;
        let body: serde_json::Value = r.json().await?;
        if body["metadata"]["labels"]["mutated"] == "yes" {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    bail!("the mutating admission policy never took effect")
}

/// Runs the section: each configuration twice, in alternating order; the better run counts.
pub(super) async fn mutating_policy_overhead(
    dir: &Path,
    report: &mut Report,
    creates: usize,
) -> anyhow::Result<()> {
    let mut best = [(0.0_f64, Duration::ZERO); 2];
    for round in 0..2 {
        let order: [usize; 2] = if round == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let data = dir.join(format!("mutating-policy-{round}-{i}"));
            let (server, _) = Server::start(&data)?;
            wait_ready(&server).await?;
            let client = server.client(true)?;
            setup_crd(&server, &client).await?;
            if i == 1 {
                bench_mutating_policy(&server).await?;
            }
            let (elapsed, lat) = create_load(&server, 64, creates, "m").await?;
            let rate = creates as f64 / elapsed.as_secs_f64();
            if rate > best[i].0 {
                best[i] = (rate, percentile(&lat, 0.5));
            }
        }
    }
    let ([plain, plain_p50], [mutated, mutated_p50]) = (
        [best[0].0, best[0].1.as_secs_f64()],
        [best[1].0, best[1].1.as_secs_f64()],
    );
    report.row(
        "creates/s, 64 clients: no policy / one MutatingAdmissionPolicy (apply configuration)",
        format!(
            "{plain:.0} / {mutated:.0} (p50 {:.2} / {:.2} ms)",
            plain_p50 * 1000.0,
            mutated_p50 * 1000.0
        ),
        format!(
            "overhead {:.1}%, {:.0} µs of server time per create (64 clients / rate)",
            (plain / mutated - 1.0) * 100.0,
            (1.0 / mutated - 1.0 / plain) * 1e6
        ),
    );
    Ok(())
}
