//! `crd-apiserver check-upgrade crd-v2.yaml`: what applying a changed CRD would do to the objects
//! already stored, asked of the running server (`POST /debug/upgrade-check`, which pages through
//! storage with the server's own pipeline). Prints a human report, or the structured report with
//! `-o json`; the exit status is 1 when a finding is breaking.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::client::Client;

/// How the report is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    /// Text for people.
    Text,
    /// The server's structured report.
    Json,
}

/// Reads the one CustomResourceDefinition of a YAML or JSON file.
fn read_crd(path: &Path) -> anyhow::Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let docs = crd_server::crd_files::documents(&text)
        .with_context(|| format!("parsing {}", path.display()))?;
    let mut crds = docs.into_iter().filter(|d| {
        d["kind"] == "CustomResourceDefinition"
            && d["apiVersion"]
                .as_str()
                .is_some_and(|v| v.starts_with("apiextensions.k8s.io/"))
    });
    let Some(crd) = crds.next() else {
        bail!("{} holds no CustomResourceDefinition", path.display());
    };
    if crds.next().is_some() {
        bail!(
            "{} holds more than one CustomResourceDefinition; check them one at a time",
            path.display()
        );
    }
    Ok(crd)
}

/// The report for a CRD the server does not serve yet: nothing stored, nothing found.
fn not_served_yet(crd: &Value) -> Value {
    let storage = crd["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|v| v["storage"] == true)
        .and_then(|v| v["name"].as_str())
        .unwrap_or("");
    json!({
        "crd": crd["metadata"]["name"],
        "objects": 0,
        "storageVersion": "",
        "newStorageVersion": storage,
        "storedVersions": {},
        "findings": [],
    })
}

/// Renders a report for people: a line per finding, its examples indented under it.
fn render(report: &Value) -> String {
    let mut out = String::new();
    let crd = report["crd"].as_str().unwrap_or("");
    let objects = report["objects"].as_u64().unwrap_or(0);
    let findings = report["findings"].as_array().cloned().unwrap_or_default();
    let new_storage = report["newStorageVersion"].as_str().unwrap_or("");
    // A CRD the server does not serve yet has no storage version (`not_served_yet`).
    let Some(storage) = report["storageVersion"].as_str().filter(|v| !v.is_empty()) else {
        let _ = writeln!(
            out,
            "{crd}: not served yet (storage version {new_storage}): nothing is stored, so creating it breaks nothing"
        );
        return out;
    };
    let _ = writeln!(
        out,
        "{crd}: checked {objects} stored object(s) (storage version {storage} -> {new_storage})"
    );
    if findings.is_empty() {
        out.push_str("no findings: the change is safe for stored objects\n");
        return out;
    }
    for f in &findings {
        let severity = if f["breaking"] == true {
            "BREAKING"
        } else {
            "NOTE"
        };
        let kind = f["kind"].as_str().unwrap_or("");
        let version = f["version"].as_str().unwrap_or("");
        let at = if version.is_empty() {
            String::new()
        } else {
            format!(" [{version}]")
        };
        let count = f["count"].as_u64().unwrap_or(0);
        let what = match kind {
            "Invalid" | "ConversionFailed" | "RoundTrip" | "DataLoss" => {
                format!("{count} object(s): {}", f["message"].as_str().unwrap_or(""))
            }
            _ => f["message"].as_str().unwrap_or("").to_string(),
        };
        let _ = writeln!(out, "{severity} {kind}{at}: {what}");
        for e in f["examples"].as_array().into_iter().flatten() {
            let _ = writeln!(
                out,
                "    {}: {}",
                e["name"].as_str().unwrap_or(""),
                e["message"].as_str().unwrap_or("")
            );
        }
    }
    out
}

/// Runs the check and prints the report; returns whether any finding is breaking.
pub async fn check(client: &Client, file: &Path, output: Output) -> anyhow::Result<bool> {
    let crd = read_crd(file)?;
    let report = match client.post("/debug/upgrade-check", &crd).await {
        Ok(report) => report,
        // A CRD the server does not serve yet has no stored objects and no clients: creating
        // it breaks nothing (the server's own checks run when it is created).
        Err(e)
            if e.downcast_ref::<crate::client::ApiFailure>()
                .is_some_and(|f| f.code == 404 && f.reason == "NotFound") =>
        {
            not_served_yet(&crd)
        }
        Err(e) => return Err(e.context("asking the server for the upgrade check")),
    };
    match output {
        Output::Json => println!("{}", serde_json::to_string_pretty(&report)?),
        Output::Text => print!("{}", render(&report)),
    }
    Ok(report["findings"]
        .as_array()
        .is_some_and(|fs| fs.iter().any(|f| f["breaking"] == true)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_findings_with_examples_and_the_empty_report() {
        let report = json!({
            "crd": "widgets.example.com", "objects": 3, "storageVersion": "v1",
            "newStorageVersion": "v1",
            "findings": [
                {"kind": "Invalid", "breaking": true, "version": "v1", "field": "f",
                 "message": "spec.replicas: Invalid value: too big", "count": 2,
                 "examples": [{"name": "default/b", "message": "spec.replicas: Invalid value: 15: too big"}]},
                {"kind": "Migration", "breaking": false, "version": "v2", "field": "",
                 "message": "run `crd-apiserver migrate widgets.example.com`", "count": 1}
            ]
        });
        assert_eq!(
            render(&report),
            "widgets.example.com: checked 3 stored object(s) (storage version v1 -> v1)\n\
             BREAKING Invalid [v1]: 2 object(s): spec.replicas: Invalid value: too big\n    \
             default/b: spec.replicas: Invalid value: 15: too big\n\
             NOTE Migration [v2]: run `crd-apiserver migrate widgets.example.com`\n"
        );
        let empty = json!({"crd": "w", "objects": 0, "storageVersion": "v1",
                           "newStorageVersion": "v1", "findings": []});
        assert!(render(&empty).ends_with("no findings: the change is safe for stored objects\n"));
        let new = not_served_yet(&json!({"metadata": {"name": "gadgets.example.com"},
            "spec": {"versions": [{"name": "v1", "storage": false}, {"name": "v2", "storage": true}]}}));
        assert_eq!(new["newStorageVersion"], "v2");
        assert_eq!(
            render(&new),
            "gadgets.example.com: not served yet (storage version v2): nothing is stored, so creating it breaks nothing\n"
        );
    }
}
