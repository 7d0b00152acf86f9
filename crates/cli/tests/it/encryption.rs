//! Encryption at rest through the real binary and kubectl, as a platform team turns it on: an
//! `EncryptionConfiguration` for Secrets, a Secret created with kubectl, the database files
//! holding no plaintext, a restart, a key rotation with every Secret rewritten
//! (`kubectl replace`, upstream's documented procedure), and the old key removed.

use std::path::Path;

use crate::support::TestServer;

const OLD_KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
const NEW_KEY: &str = "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=";

fn config(providers: &str) -> String {
    format!(
        "apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
{providers}"
    )
}

/// Whether any database file (the SQLite file and its WAL) contains `needle`.
fn stored(data: &Path, needle: &str) -> bool {
    std::fs::read_dir(data).unwrap().any(|e| {
        let path = e.unwrap().path();
        path.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("state.db"))
            && std::fs::read(&path)
                .unwrap()
                .windows(needle.len())
                .any(|w| w == needle.as_bytes())
    })
}

fn secret_value(s: &TestServer) -> String {
    s.kubectl_ok(&["get", "secret", "db", "-o", "jsonpath={.data.password}"])
}

#[test]
fn secrets_are_stored_encrypted_and_keys_rotate() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("encryption.yaml");
    let aescbc =
        format!("  - aescbc: {{keys: [{{name: old, secret: {OLD_KEY}}}]}}\n  - identity: {{}}\n");
    std::fs::write(&file, config(&aescbc)).unwrap();
    let flag = ["--encryption-provider-config", file.to_str().unwrap()];
    let s = TestServer::start_with(dir, &flag);
    s.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "db",
        "--from-literal=password=hunter2-hunter2",
    ]);
    s.kubectl_ok(&[
        "create",
        "configmap",
        "plain",
        "--from-literal=colour=ultramarine-blue",
    ]);
    // base64 of the password, as the Secret stores it.
    let encoded = "aHVudGVyMi1odW50ZXIy";
    assert_eq!(secret_value(&s), encoded);
    let data = s.data_dir();
    assert!(
        !stored(&data, encoded),
        "the Secret's data is in the database in the clear"
    );
    assert!(
        stored(&data, "k8s:enc:aescbc:v1:old:"),
        "no encrypted value stored"
    );
    // Other resources are not encrypted.
    assert!(stored(&data, "ultramarine-blue"));

    // A restart reads it back.
    let dir = s.stop();
    let s = TestServer::start_with(dir, &flag);
    assert_eq!(secret_value(&s), encoded);

    // Rotation: the new key first, the old one still read; rewrite every Secret.
    let dir = s.stop();
    let rotated = format!(
        "  - secretbox: {{keys: [{{name: new, secret: {NEW_KEY}}}]}}\n  - aescbc: {{keys: [{{name: old, secret: {OLD_KEY}}}]}}\n"
    );
    std::fs::write(&file, config(&rotated)).unwrap();
    let s = TestServer::start_with(dir, &flag);
    assert_eq!(secret_value(&s), encoded);
    let all = s.kubectl_ok(&["get", "secrets", "-A", "-o", "json"]);
    let path = s.write("secrets.json", &all);
    s.kubectl_ok(&["replace", "-f", path.to_str().unwrap()]);
    assert!(stored(&s.data_dir(), "k8s:enc:secretbox:v1:new:"));

    // The old key gone: the rewritten Secret still reads.
    let dir = s.stop();
    let new_only = format!("  - secretbox: {{keys: [{{name: new, secret: {NEW_KEY}}}]}}\n");
    std::fs::write(&file, config(&new_only)).unwrap();
    let s = TestServer::start_with(dir, &flag);
    assert_eq!(secret_value(&s), encoded);

    // Without any key for it, a Secret cannot be read: an internal error naming the key it was
    // written with, never ciphertext; lists of Secrets fail alike.
    let dir = s.stop();
    let other = "  - aesgcm: {keys: [{name: other, secret: AAECAwQFBgcICQoLDA0ODw==}]}\n";
    std::fs::write(&file, config(other)).unwrap();
    let s = TestServer::start_with(dir, &flag);
    let out = s.kubectl(&["get", "secret", "db"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Error from server (InternalError)")
            && stderr.contains("decrypting stored object /registry/secrets/default/db: no configured encryption key reads it (written with k8s:enc:secretbox:v1:new:)"),
        "{stderr}"
    );
    let out = s.kubectl(&["get", "secrets"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no configured encryption key reads it"));
    // Everything else is served as before.
    assert_eq!(
        s.kubectl_ok(&["get", "configmap", "plain", "-o", "jsonpath={.data.colour}"]),
        "ultramarine-blue"
    );
    s.kubectl_ok(&["create", "configmap", "after", "--from-literal=a=b"]);
    s.kubectl_ok(&["get", "configmap", "after"]);
}

#[test]
fn a_bad_encryption_configuration_stops_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("encryption.yaml");
    std::fs::write(
        &file,
        config("  - aescbc: {keys: [{name: k, secret: c2hvcnQ=}]}\n"),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_crd-apiserver"))
        .args([
            "serve",
            "--ephemeral",
            "--secure-port=0",
            "--encryption-provider-config",
        ])
        .arg(&file)
        .output()
        .expect("running crd-apiserver");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(r#"error while validating encryption config: resources[0].providers[0].aescbc.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 5, expected one of [16 24 32]"#),
        "{stderr}"
    );
}

/// Turning encryption on over existing data, as upstream documents it: with `identity` last the
/// plain Secret still reads and a rewrite encrypts it; without `identity` it cannot be read
/// (a 500 saying why), and everything else is served.
#[test]
fn encryption_is_turned_on_over_existing_secrets() {
    let s = TestServer::start();
    s.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "db",
        "--from-literal=password=hunter2-hunter2",
    ]);
    let encoded = "aHVudGVyMi1odW50ZXIy";
    let dir = s.stop();
    let file = dir.path().join("encryption.yaml");
    let flag = ["--encryption-provider-config", file.to_str().unwrap()];
    // Without identity: the plain Secret is refused.
    std::fs::write(
        &file,
        config(&format!(
            "  - aescbc: {{keys: [{{name: k, secret: {OLD_KEY}}}]}}\n"
        )),
    )
    .unwrap();
    let s = TestServer::start_with(dir, &flag);
    let out = s.kubectl(&["get", "secret", "db"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("decrypting stored object /registry/secrets/default/db: it is stored unencrypted, and no identity provider of the encryption configuration reads unencrypted data"),
        "{stderr}"
    );
    s.kubectl_ok(&["get", "namespaces"]);
    // With identity last: read, then encrypted by a rewrite that changes nothing.
    let dir = s.stop();
    std::fs::write(
        &file,
        config(&format!(
            "  - aescbc: {{keys: [{{name: k, secret: {OLD_KEY}}}]}}\n  - identity: {{}}\n"
        )),
    )
    .unwrap();
    let s = TestServer::start_with(dir, &flag);
    assert_eq!(secret_value(&s), encoded);
    assert!(
        stored(&s.data_dir(), encoded),
        "stored plain before the rewrite"
    );
    let json = s.kubectl_ok(&["get", "secret", "db", "-o", "json"]);
    let path = s.write("db.json", &json);
    s.kubectl_ok(&["replace", "-f", path.to_str().unwrap()]);
    assert_eq!(secret_value(&s), encoded);
    let latest = s.kubectl_ok(&[
        "get",
        "secret",
        "db",
        "-o",
        "jsonpath={.metadata.resourceVersion}",
    ]);
    let before: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_ne!(
        before["metadata"]["resourceVersion"],
        latest.as_str(),
        "the no-op replace was written"
    );
}
