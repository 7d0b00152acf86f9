//! The module layering of `crd-server`, checked: every `crate::<module>` reference in a module's
//! non-test code must point to a lower layer, so the modules form a DAG (ARCHITECTURE.md draws
//! it). A new module must be given a layer here.

use std::path::Path;

/// Layers, lowest first. A module may use modules of strictly lower layers (and its own
/// submodules).
const LAYERS: &[&[&str]] = &[
    &[
        "serviceaccount",
        "crd_files",
        "watch_cache",
        "jsonpath",
        "webhook",
        "config_file",
    ],
    &[
        "error",
        "version",
        "body",
        "table",
        "auth",
        "protobuf",
        "limits",
        "openapi_pb",
        "metrics",
        "health",
        "runtime_config",
    ],
    &[
        "tls",
        "authz",
        "conversion",
        "request",
        "audit",
        "metered_store",
    ],
    &["kubeconfig"],
    &["registry"],
    &[
        "controllers",
        "discovery",
        "openapi",
        "watch_lines",
        "encryption_config",
    ],
    &["admission"],
    &["state"],
    &["handlers"],
    &["http"],
];

fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn modules_form_the_documented_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut violations = Vec::new();
    for file in files {
        let rel = file.strip_prefix(&src).expect("under src");
        let top = rel
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .unwrap_or("")
            .trim_end_matches(".rs")
            .to_string();
        if top == "lib" {
            continue;
        }
        let Some(own) = layer(&top) else {
            violations.push(format!(
                "module `{top}` has no layer in tests/module_graph.rs"
            ));
            continue;
        };
        let text = std::fs::read_to_string(&file).expect("readable source");
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for (i, _) in code.match_indices("crate::") {
            let name: String = code[i + 7..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            if name.is_empty() || name == top {
                continue;
            }
            match layer(&name) {
                Some(l) if l < own => {}
                _ => violations.push(format!(
                    "{}: `{top}` (layer {own}) uses `crate::{name}` (layer {:?})",
                    rel.display(),
                    layer(&name)
                )),
            }
        }
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

/// Generic handlers never decide by which kind they serve: no comparison of a request's group,
/// resource or kind, and no API group named other than `meta.k8s.io` (the options kinds).
#[test]
fn handlers_never_name_a_kind() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/handlers");
    let mut files = Vec::new();
    sources(&dir, &mut files);
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("readable source");
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for (n, line) in code.lines().enumerate() {
            let line = line.trim_start();
            if line.starts_with("//") {
                continue;
            }
            let names_group = line
                .match_indices(".k8s.io\"")
                .any(|(i, _)| !line[..i].ends_with("\"meta"));
            if names_group
                || line.contains("group ==")
                || line.contains("resource ==")
                || line.contains(".kind ==")
            {
                found.push(format!("{}:{}: {line}", file.display(), n + 1));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}
