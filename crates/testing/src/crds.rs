//! Reading CustomResourceDefinitions from YAML: one string (several documents allowed) or every
//! `*.yaml`/`*.yml` file of a directory, the way `config/crd` directories are laid out.

use std::path::Path;

use anyhow::Context;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;

/// Parses every CustomResourceDefinition in `yaml` (documents separated by `---`). Empty
/// documents are skipped; a document of another kind is an error, so a typo never silently
/// drops a CRD.
pub fn crds_from_yaml(yaml: &str) -> anyhow::Result<Vec<CustomResourceDefinition>> {
    decode(crd_server::crd_files::documents(yaml)?)
}

/// Reads every CRD from the `*.yaml` and `*.yml` files directly in `dir`, in file-name order
/// (subdirectories are not searched, as in envtest's `CRDDirectoryPaths`).
pub fn crds_from_dir(dir: impl AsRef<Path>) -> anyhow::Result<Vec<CustomResourceDefinition>> {
    decode(crd_server::crd_files::in_dir(dir.as_ref())?)
}

fn decode(docs: Vec<Value>) -> anyhow::Result<Vec<CustomResourceDefinition>> {
    docs.into_iter()
        .map(|doc| serde_json::from_value(doc).context("decoding a CustomResourceDefinition"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = "---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {plural: widgets, singular: widget, kind: Widget}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
---
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  names: {plural: gadgets, kind: Gadget}
  scope: Cluster
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
";

    #[test]
    fn several_documents_and_empty_ones() {
        let crds = crds_from_yaml(TWO).unwrap();
        let names: Vec<_> = crds
            .iter()
            .map(|c| c.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(names, ["widgets.example.com", "gadgets.example.com"]);
        assert_eq!(crds[1].spec.scope, "Cluster");
    }

    #[test]
    fn another_kind_is_an_error() {
        let err =
            crds_from_yaml("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "expected kind CustomResourceDefinition, found \"ConfigMap\""
        );
    }

    #[test]
    fn a_directory_reads_yaml_and_yml_only() {
        let dir = tempfile::tempdir().unwrap();
        let (first, second) = TWO.split_at(TWO.find("---\n---").unwrap());
        std::fs::write(dir.path().join("b.yml"), second).unwrap();
        std::fs::write(dir.path().join("a.yaml"), first).unwrap();
        std::fs::write(dir.path().join("kustomization.txt"), "not yaml: [").unwrap();
        let crds = crds_from_dir(dir.path()).unwrap();
        let names: Vec<_> = crds
            .iter()
            .map(|c| c.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(names, ["widgets.example.com", "gadgets.example.com"]);
    }
}
