//! `crd-apiserver migrate` and `crd-apiserver storage-versions`: storage-version migration from
//! the command line. `migrate` creates a StorageVersionMigration on the running server (so the
//! server's controller does the work through its own pipeline) and draws its progress;
//! `storage-versions` shows how many objects are stored at each version.

use std::io::Write as _;
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::client::Client;

/// What `/debug/storage-versions/<crd>` reports.
struct Counts {
    storage_version: String,
    counts: Vec<(String, u64)>,
}

impl Counts {
    fn total(&self) -> u64 {
        self.counts.iter().map(|(_, n)| n).sum()
    }

    fn at_storage(&self) -> u64 {
        self.counts
            .iter()
            .find(|(v, _)| *v == self.storage_version)
            .map_or(0, |(_, n)| *n)
    }
}

async fn counts(client: &Client, crd: &str) -> anyhow::Result<Counts> {
    let doc = client
        .get(&format!("/debug/storage-versions/{crd}"))
        .await?;
    let counts = doc["counts"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default();
    Ok(Counts {
        storage_version: doc["storageVersion"].as_str().unwrap_or("").to_string(),
        counts,
    })
}

async fn stored_versions(client: &Client, crd: &str) -> anyhow::Result<Vec<String>> {
    let obj = client
        .get(&format!(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd}"
        ))
        .await?;
    Ok(obj["status"]["storedVersions"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default())
}

/// Prints objects per stored version, and whether storedVersions can be trimmed.
pub async fn storage_versions(client: &Client, crd: &str) -> anyhow::Result<()> {
    let c = counts(client, crd).await?;
    let stored = stored_versions(client, crd).await?;
    println!("VERSION\tOBJECTS\tSTORAGE\tIN storedVersions");
    let mut versions: Vec<String> = c.counts.iter().map(|(v, _)| v.clone()).collect();
    for v in &stored {
        if !versions.contains(v) {
            versions.push(v.clone());
        }
    }
    for v in versions {
        let n = c
            .counts
            .iter()
            .find(|(x, _)| *x == v)
            .map_or(0, |(_, n)| *n);
        let storage = if v == c.storage_version { "yes" } else { "" };
        let listed = if stored.contains(&v) { "yes" } else { "" };
        println!("{v}\t{n}\t{storage}\t{listed}");
    }
    let droppable: Vec<&String> = stored
        .iter()
        .filter(|v| **v != c.storage_version && !c.counts.iter().any(|(x, n)| x == *v && *n > 0))
        .collect();
    if !droppable.is_empty() {
        let list: Vec<&str> = droppable.iter().map(|s| s.as_str()).collect();
        println!(
            "no objects are stored at {}: it can leave status.storedVersions",
            list.join(", ")
        );
    }
    Ok(())
}

fn bar(done: u64, total: u64) -> String {
    const WIDTH: u64 = 30;
    let filled = (done * WIDTH).checked_div(total).unwrap_or(WIDTH);
    format!(
        "[{}{}] {done}/{total}",
        "#".repeat(filled as usize),
        "-".repeat((WIDTH - filled) as usize)
    )
}

/// Migrates every object of a CRD to its storage version and trims storedVersions.
pub async fn migrate(client: &Client, crd: &str) -> anyhow::Result<()> {
    let (plural, group) = crd
        .split_once('.')
        .context("a CRD name is <plural>.<group>")?;
    let before = counts(client, crd).await?;
    let total = before.total();
    eprintln!(
        "migrating {total} {crd} objects to {} ({} already there)",
        before.storage_version,
        before.at_storage()
    );
    let svm = client
        .post(
            "/apis/storagemigration.k8s.io/v1alpha1/storageversionmigrations",
            &json!({
                "apiVersion": "storagemigration.k8s.io/v1alpha1",
                "kind": "StorageVersionMigration",
                "metadata": {"generateName": format!("{plural}-")},
                "spec": {"resource": {"group": group, "version": before.storage_version, "resource": plural}},
            }),
        )
        .await?;
    let name = svm["metadata"]["name"].as_str().unwrap_or("").to_string();
    let path = format!("/apis/storagemigration.k8s.io/v1alpha1/storageversionmigrations/{name}");
    let condition = |obj: &Value, kind: &str| -> Option<(String, String)> {
        obj["status"]["conditions"]
            .as_array()?
            .iter()
            .find_map(|c| {
                (c["type"] == kind && c["status"] == "True").then(|| {
                    (
                        kind.to_string(),
                        c["message"].as_str().unwrap_or("").to_string(),
                    )
                })
            })
    };
    let mut stderr = std::io::stderr();
    let outcome = loop {
        let now = counts(client, crd).await?;
        let _ = write!(stderr, "\r{}", bar(now.at_storage(), now.total()));
        let _ = stderr.flush();
        let obj = client.get(&path).await?;
        if let Some(done) = condition(&obj, "Succeeded").or_else(|| condition(&obj, "Failed")) {
            let now = counts(client, crd).await?;
            let _ = writeln!(stderr, "\r{}", bar(now.at_storage(), now.total()));
            break done;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let stored = stored_versions(client, crd).await?;
    match outcome.0.as_str() {
        "Succeeded" => {
            println!("{}", outcome.1);
            println!(
                "storageversionmigration {name}: succeeded; status.storedVersions is now [{}]",
                stored.join(", ")
            );
            Ok(())
        }
        _ => bail!("storageversionmigration {name} failed: {}", outcome.1),
    }
}
