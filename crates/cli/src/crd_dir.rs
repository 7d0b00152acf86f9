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

/// Creates `crds`, then waits until each is Established.
pub async fn install(client: &Client, crds: &[Value]) -> anyhow::Result<()> {
    for crd in crds {
        client
            .post(CRDS, crd)
            .await
            .with_context(|| format!("creating CRD {}", name(crd)))?;
    }
    let deadline = Instant::now() + ESTABLISH_TIMEOUT;
    for crd in crds {
        let path = format!("{CRDS}/{}", name(crd));
        loop {
            let current = client.get(&path).await?;
            let established = current["status"]["conditions"].as_array().is_some_and(|c| {
                c.iter()
                    .any(|c| c["type"] == "Established" && c["status"] == "True")
            });
            if established {
                break;
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
