//! Declarative conversion (`strategy: ConversionRules`) as users meet it: kubectl applies a CRD
//! with rules, writes at v1 and reads at v2 and back; and `crd-apiserver conversion-webhook
//! --crd` (the real binary) serves the same rules to a CRD with `strategy: Webhook`, which must
//! give the same objects as the native rules.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::support::{TestServer, crd_yaml, stdout_lines};

/// The Person CRD: v1 (storage) `firstName`, `timeoutSeconds`, `legacy`; v2 `name.first`,
/// `timeout` (duration), and `legacy` kept in an annotation. `conversion` is the stanza.
fn crd(group: &str, conversion: &str) -> String {
    crd_yaml(
        group,
        "people",
        "singular: person, kind: Person",
        &[("v1", true, V1), ("v2", false, V2)],
        &format!("  conversion:\n{conversion}"),
    )
}

const V1: &str = "type: object
properties:
  spec:
    type: object
    properties:
      firstName: {type: string}
      timeoutSeconds: {type: integer}
      legacy: {type: string}";

const V2: &str = "type: object
properties:
  spec:
    type: object
    properties:
      name:
        type: object
        properties:
          first: {type: string}
      timeout: {type: string, format: duration}";

const RULES: &str = r#"    strategy: ConversionRules
    conversionRules:
    - from: v1
      to: v2
      rules:
      - {fromField: .spec.firstName, toField: .spec.name.first}
      - {fromField: .spec.timeoutSeconds, toField: .spec.timeout, transformation: "duration(string(self) + 's')"}
      - {fromField: .spec.legacy, toField: ".metadata.annotations['v1.example.com/legacy']"}
    - from: v2
      to: v1
      rules:
      - {fromField: .spec.name.first, toField: .spec.firstName}
      - {fromField: .spec.timeout, toField: .spec.timeoutSeconds, transformation: self.getSeconds()}
      - {fromField: ".metadata.annotations['v1.example.com/legacy']", toField: .spec.legacy}
"#;

fn person(group: &str) -> String {
    format!(
        "apiVersion: {group}/v1
kind: Person
metadata: {{name: ada}}
spec: {{firstName: Ada, timeoutSeconds: 5430, legacy: punch cards}}
"
    )
}

fn get_json(server: &TestServer, what: &str) -> Value {
    server.kubectl_json(&["get", what, "-o", "json"])
}

#[test]
fn kubectl_writes_at_v1_and_reads_at_v2_and_back() {
    let server = TestServer::start();
    let group = "rules.example.com";
    server.apply_crd("crd.yaml", &crd(group, RULES), &format!("people.{group}"));
    server.write("ada.yaml", &person(group));
    server.kubectl_ok(&["apply", "-f", "ada.yaml"]);

    let v2 = get_json(&server, &format!("people.v2.{group}/ada"));
    assert_eq!(v2["apiVersion"], format!("{group}/v2"));
    assert_eq!(
        v2["spec"],
        serde_json::json!({"name": {"first": "Ada"}, "timeout": "1h30m30s"})
    );
    assert_eq!(
        v2["metadata"]["annotations"]["v1.example.com/legacy"],
        "punch cards"
    );

    let v1 = get_json(&server, &format!("people.v1.{group}/ada"));
    assert_eq!(
        v1["spec"],
        serde_json::json!({"firstName": "Ada", "timeoutSeconds": 5430, "legacy": "punch cards"})
    );
}

/// The `conversion-webhook` process, killed when dropped.
struct Webhook {
    child: Child,
    url: String,
    ca_bundle: String,
}

impl Webhook {
    fn start(crd_file: &std::path::Path) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_crd-apiserver"))
            .args(["conversion-webhook", "--listen", "127.0.0.1:0", "--crd"])
            .arg(crd_file)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawning conversion-webhook");
        let rx = stdout_lines(&mut child);
        let (mut url, mut ca_bundle) = (None, None);
        while url.is_none() {
            let line = rx
                .recv_timeout(Duration::from_mins(1))
                .expect("conversion-webhook did not start");
            if let Some(b) = line.strip_prefix("caBundle: ") {
                ca_bundle = Some(b.to_string());
            }
            if let Some(u) = line.strip_prefix("listening on ") {
                url = Some(u.to_string());
            }
        }
        Webhook {
            child,
            url: url.expect("url"),
            ca_bundle: ca_bundle.expect("caBundle line before the listening line"),
        }
    }
}

impl Drop for Webhook {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn conversion_webhook_command_gives_the_same_objects_as_native_rules() {
    let server = TestServer::start();
    let native = "rules.example.com";
    let hooked = "hooked.example.com";
    let rules_file = server.write("rules-crd.yaml", &crd(native, RULES));
    let webhook = Webhook::start(&rules_file);
    let stanza = format!(
        "    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig:
        url: {}
        caBundle: {}
",
        webhook.url, webhook.ca_bundle
    );
    server.apply_crd(
        "rules-crd.yaml",
        &crd(native, RULES),
        &format!("people.{native}"),
    );
    server.apply_crd(
        "hooked-crd.yaml",
        &crd(hooked, &stanza),
        &format!("people.{hooked}"),
    );
    for group in [native, hooked] {
        server.write("p.yaml", &person(group));
        server.kubectl_ok(&["apply", "-f", "p.yaml"]);
    }
    for version in ["v2", "v1"] {
        let a = get_json(&server, &format!("people.{version}.{native}/ada"));
        let b = get_json(&server, &format!("people.{version}.{hooked}/ada"));
        assert_eq!(a["spec"], b["spec"], "{version}");
        // kubectl's last-applied annotation names each CRD's own group; the rest must match.
        let kept = |o: &Value| {
            let mut a = o["metadata"]["annotations"].clone();
            if let Some(m) = a.as_object_mut() {
                m.remove("kubectl.kubernetes.io/last-applied-configuration");
            }
            a
        };
        assert_eq!(kept(&a), kept(&b), "{version}");
    }
    // A v2 write goes through the webhook to storage and back the same way.
    for group in [native, hooked] {
        server.write(
            "g.yaml",
            &format!(
                "apiVersion: {group}/v2\nkind: Person\nmetadata: {{name: grace}}\nspec: {{name: {{first: Grace}}, timeout: 2m}}\n"
            ),
        );
        server.kubectl_ok(&["apply", "-f", "g.yaml"]);
    }
    let a = get_json(&server, &format!("people.v1.{native}/grace"));
    let b = get_json(&server, &format!("people.v1.{hooked}/grace"));
    assert_eq!(
        a["spec"],
        serde_json::json!({"firstName": "Grace", "timeoutSeconds": 120})
    );
    assert_eq!(a["spec"], b["spec"]);
}

/// A page of more than `PIPELINED_CHUNK` (512) objects is converted chunk by chunk while it is
/// sent; kubectl reading 600 people at v2 in one page (`--chunk-size=600`) must get the same
/// objects as in the default 500-object pages (converted whole) and as each one read alone.
#[test]
fn kubectl_reads_a_page_converted_while_it_is_sent() {
    let server = TestServer::start();
    let group = "rules.example.com";
    server.apply_crd("crd.yaml", &crd(group, RULES), &format!("people.{group}"));
    let n = 600;
    let items: Vec<Value> = (0..n)
        .map(|i| {
            serde_json::json!({
                "apiVersion": format!("{group}/v1"), "kind": "Person",
                "metadata": {"name": format!("p-{i:04}")},
                "spec": {"firstName": format!("name-{i}"), "timeoutSeconds": i * 61,
                         "legacy": format!("legacy-{i}")}})
        })
        .collect();
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
    server.write("people.json", &list.to_string());
    server.kubectl_ok(&["create", "-f", "people.json"]);

    let what = format!("people.v2.{group}");
    let one_page = server.kubectl_json(&["get", &what, "--chunk-size=600", "-o", "json"]);
    let pages = server.kubectl_json(&["get", &what, "-o", "json"]);
    let one_page = one_page["items"].as_array().expect("items");
    assert_eq!(one_page.len(), n);
    assert_eq!(one_page, pages["items"].as_array().expect("items"));
    for (i, item) in one_page.iter().enumerate() {
        assert_eq!(item["apiVersion"], format!("{group}/v2"));
        assert_eq!(item["metadata"]["name"], format!("p-{i:04}"));
        assert_eq!(item["spec"]["name"]["first"], format!("name-{i}"), "{i}");
        assert_eq!(
            item["metadata"]["annotations"]["v1.example.com/legacy"],
            format!("legacy-{i}")
        );
    }
    // Spot checks against single reads, which convert one object at a time.
    for i in [0, 511, 512, 599] {
        let alone = get_json(&server, &format!("{what}/p-{i:04}"));
        assert_eq!(one_page[i], alone, "{i}");
    }
    assert_eq!(one_page[61]["spec"]["timeout"], "1h2m1s");
}
