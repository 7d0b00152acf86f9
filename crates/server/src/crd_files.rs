//! CustomResourceDefinitions read from YAML files: one text (several `---` documents) or every
//! `*.yaml`/`*.yml`/`*.json` file directly in a directory, in file-name order, as `config/crd`
//! directories are laid out (kustomize's own `kustomization.yaml` files are skipped). Shared by
//! `serve --crd-dir` and the test harness. Pure apart from reading files.

use std::path::Path;

use anyhow::Context;
use serde_json::Value;

/// Every CRD document in `yaml`; empty documents are skipped, a document of another kind is an
/// error (so a typo never silently drops a CRD).
pub fn documents(yaml: &str) -> anyhow::Result<Vec<Value>> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(yaml).context("parsing YAML")?;
    docs.into_iter()
        .filter(|d| !d.is_null())
        .map(|doc| {
            let kind = doc.get("kind").and_then(Value::as_str).unwrap_or_default();
            anyhow::ensure!(
                kind == "CustomResourceDefinition",
                "expected kind CustomResourceDefinition, found {kind:?}"
            );
            Ok(doc)
        })
        .collect()
}

/// Every CRD document in the `*.yaml`, `*.yml` and `*.json` files directly in `dir`
/// (subdirectories are not searched, as envtest's `CRDDirectoryPaths`), files in name order;
/// errors name the file (`<file>: <why>`). `kustomization.yaml` files, kustomize's and never a
/// CRD, are skipped.
pub fn in_dir(dir: &Path) -> anyhow::Result<Vec<Value>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            let kustomization = p
                .file_stem()
                .is_some_and(|s| s.eq_ignore_ascii_case("kustomization"));
            p.is_file()
                && !kustomization
                && p.extension().is_some_and(|e| {
                    ["yaml", "yml", "json"]
                        .iter()
                        .any(|x| e.eq_ignore_ascii_case(x))
                })
        })
        .collect();
    files.sort();
    let mut crds = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("reading {}", file.display()))?;
        let docs = documents(&text).map_err(|e| anyhow::anyhow!("{}: {e:#}", file.display()))?;
        crds.extend(docs);
    }
    Ok(crds)
}
