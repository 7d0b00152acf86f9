//! The Kubernetes version this server reports, at the bottom of the module graph because
//! `/version`, the OpenAPI documents and discovery all name it.

use serde_json::Value;

/// The Kubernetes minor version reported by `/version`; kubectl picks its own behaviour from it.
pub const KUBE_MINOR: &str = "32";

/// The `/version` document.
pub fn version_info() -> Value {
    serde_json::json!({
        "major": "1",
        "minor": KUBE_MINOR,
        "emulationMajor": "1",
        "emulationMinor": KUBE_MINOR,
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": "31",
        "gitVersion": format!("v1.{KUBE_MINOR}.0+crd-apiserver-{}", env!("CARGO_PKG_VERSION")),
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "rust",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, if cfg!(target_arch = "x86_64") { "amd64" } else { std::env::consts::ARCH }),
    })
}
