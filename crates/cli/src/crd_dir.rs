//! `serve --crd-dir`: every CustomResourceDefinition in a directory's `*.yaml`/`*.yml` files,
//! created through the API once the server is up and waited for until Established, before the
//! server announces itself (so a test process that waits for the kubeconfig sees them).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::Value;

use crate::client::Client;

/// How long a CRD may take to become Established.
const ESTABLISH_TIMEOUT: Duration = Duration::from_secs(30);

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/// Reads every CRD document in `dir` (files in name order, `---`-separated documents, empty
/// ones skipped); another kind is an error.
pub fn read(dir: &Path) -> anyhow::Result<Vec<Value>> {
    crd_server::crd_files::in_dir(dir).with_context(|| format!("--crd-dir {}", dir.display()))
}

/// Creates `crds` (each through the API version it is written at, `v1` or `v1beta1`), then
/// waits until each is Established; a CRD whose names are not accepted (a conflict with
/// another CRD) fails at once with the condition's message.
pub async fn install(client: &Client, crds: &[Value]) -> anyhow::Result<()> {
    for crd in crds {
        let api_version = crd["apiVersion"]
            .as_str()
            .filter(|v| v.starts_with("apiextensions.k8s.io/"))
            .unwrap_or("apiextensions.k8s.io/v1");
        client
            .post(
                &format!("/apis/{api_version}/customresourcedefinitions"),
                crd,
            )
            .await
            .with_context(|| format!("creating CRD {}", name(crd)))?;
    }
    let deadline = Instant::now() + ESTABLISH_TIMEOUT;
    for crd in crds {
        let path = format!("{CRDS}/{}", name(crd));
        loop {
            let current = client.get(&path).await?;
            let condition = |kind: &str| {
                current["status"]["conditions"]
                    .as_array()
                    .and_then(|cs| cs.iter().find(|c| c["type"] == kind))
                    .cloned()
            };
            if condition("Established").is_some_and(|c| c["status"] == "True") {
                break;
            }
            if let Some(c) = condition("NamesAccepted").filter(|c| c["status"] == "False") {
                anyhow::bail!(
                    "CRD {} cannot be served: NamesAccepted=False ({}): {}",
                    name(crd),
                    c["reason"].as_str().unwrap_or_default(),
                    c["message"].as_str().unwrap_or_default()
                );
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "CRD {} was not Established within {ESTABLISH_TIMEOUT:?}",
                name(crd)
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    Ok(())
}

fn name(crd: &Value) -> &str {
    crd["metadata"]["name"].as_str().unwrap_or_default()
}
