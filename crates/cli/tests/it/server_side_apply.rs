//! Server-side apply through the real kubectl: `apply --server-side`, conflicts and
//! `--force-conflicts`, `--field-manager`, the upgrade from client-side apply, `diff
//! --server-side`, managed fields in `get -o yaml --show-managed-fields`, status applies, and the
//! Status errors of bad applies.

use serde_json::{Value, json};

use crate::support::{HttpVersion, TestServer, crontab_crd, my_crontab};

const CRD: &str = "crontabs.stable.example.com";
const OBJ: &str = "/apis/stable.example.com/v1/namespaces/default/crontabs";

fn get_json(s: &TestServer, args: &[&str]) -> Value {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "json", "--show-managed-fields"]);
    s.kubectl_json(&all)
}

fn managers(obj: &Value) -> Vec<(String, String)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| {
                    (
                        e["manager"].as_str().unwrap_or("").to_string(),
                        e["operation"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn apply_conflicts_force_and_field_managers_through_kubectl() {
    let s = TestServer::start();
    s.write("crd.yaml", &crontab_crd());
    let out = s.kubectl_ok(&["apply", "--server-side", "-f", "crd.yaml"]);
    assert_eq!(
        out.trim(),
        format!("customresourcedefinition.apiextensions.k8s.io/{CRD} serverside-applied")
    );
    s.kubectl_ok(&[
        "wait",
        "--for",
        "condition=established",
        &format!("crd/{CRD}"),
        "--timeout=30s",
    ]);

    s.write("ct.yaml", &my_crontab());
    let out = s.kubectl_ok(&["apply", "--server-side", "-f", "ct.yaml"]);
    assert_eq!(
        out.trim(),
        "crontab.stable.example.com/my-new-cron-object serverside-applied"
    );
    let obj = get_json(&s, &["ct", "my-new-cron-object"]);
    assert_eq!(
        managers(&obj),
        vec![("kubectl".to_string(), "Apply".to_string())]
    );
    let entry = &obj["metadata"]["managedFields"][0];
    assert_eq!(entry["fieldsType"], "FieldsV1");
    assert_eq!(entry["apiVersion"], "stable.example.com/v1");
    assert_eq!(
        entry["fieldsV1"],
        json!({"f:spec": {"f:cronSpec": {}, "f:image": {}}})
    );
    // Without --show-managed-fields kubectl hides them.
    let plain = s.kubectl_ok(&["get", "ct", "my-new-cron-object", "-o", "yaml"]);
    assert!(!plain.contains("managedFields"), "{plain}");

    // Another manager changes a field the applier owns; the next apply conflicts.
    s.kubectl_ok(&[
        "patch",
        "ct",
        "my-new-cron-object",
        "--type=merge",
        "-p",
        r#"{"spec":{"cronSpec":"*/2 * * * *"}}"#,
    ]);
    let out = s.kubectl(&["apply", "--server-side", "-f", "ct.yaml"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with(
            "error: Apply failed with 1 conflict: conflict with \"kubectl-patch\" using stable.example.com/v1: .spec.cronSpec"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("--force-conflicts"), "{stderr}");

    // Forcing moves ownership to the applier.
    s.kubectl_ok(&[
        "apply",
        "--server-side",
        "--force-conflicts",
        "-f",
        "ct.yaml",
    ]);
    let obj = get_json(&s, &["ct", "my-new-cron-object"]);
    assert_eq!(obj["spec"]["cronSpec"], "* * * * */5");
    let patcher = obj["metadata"]["managedFields"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["manager"] == "kubectl-patch"))
        .map(|e| e["fieldsV1"].to_string())
        .unwrap_or_default();
    assert!(
        !patcher.contains("f:cronSpec"),
        "ownership moved: {patcher}"
    );

    // A second applier with its own manager shares a field when the values agree, and owns
    // what only it sets.
    s.write(
        "ct-other.yaml",
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: my-new-cron-object\nspec:\n  image: my-awesome-cron-image\n  replicas: 2\n",
    );
    s.kubectl_ok(&[
        "apply",
        "--server-side",
        "--field-manager=team-b",
        "-f",
        "ct-other.yaml",
    ]);
    let obj = get_json(&s, &["ct", "my-new-cron-object"]);
    assert_eq!(obj["spec"]["replicas"], 2);
    let ms = managers(&obj);
    assert!(
        ms.contains(&("team-b".to_string(), "Apply".to_string())),
        "{ms:?}"
    );
    assert!(
        ms.contains(&("kubectl".to_string(), "Apply".to_string())),
        "{ms:?}"
    );

    // The first applier drops `image`: team-b still owns it, so it stays.
    s.write(
        "ct-less.yaml",
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: my-new-cron-object\nspec:\n  cronSpec: '* * * * */5'\n",
    );
    s.kubectl_ok(&["apply", "--server-side", "-f", "ct-less.yaml"]);
    let obj = get_json(&s, &["ct", "my-new-cron-object"]);
    assert_eq!(obj["spec"]["image"], "my-awesome-cron-image");
    // team-b drops `replicas`, which only it owned: the field is removed.
    s.write(
        "ct-other.yaml",
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: my-new-cron-object\nspec:\n  image: my-awesome-cron-image\n",
    );
    s.kubectl_ok(&[
        "apply",
        "--server-side",
        "--field-manager=team-b",
        "-f",
        "ct-other.yaml",
    ]);
    let obj = get_json(&s, &["ct", "my-new-cron-object"]);
    assert!(obj["spec"].get("replicas").is_none(), "{}", obj["spec"]);

    // diff --server-side: no difference against what was applied.
    let out = s.kubectl(&[
        "diff",
        "--server-side",
        "--field-manager=team-b",
        "-f",
        "ct-other.yaml",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // ... and a difference (exit 1) for a changed value.
    s.write(
        "ct-changed.yaml",
        &my_crontab().replace("my-awesome-cron-image", "other-image"),
    );
    let out = s.kubectl(&[
        "diff",
        "--server-side",
        "--force-conflicts",
        "-f",
        "ct-changed.yaml",
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("+  image: other-image"));
    // The dry run stored nothing.
    let obj = get_json(&s, &["ct", "my-new-cron-object"]);
    assert_eq!(obj["spec"]["image"], "my-awesome-cron-image");
}

#[test]
fn client_side_apply_upgrades_to_server_side_apply() {
    let s = TestServer::start();
    s.apply_crd("crd.yaml", &crontab_crd(), CRD);
    s.write("ct.yaml", &my_crontab());
    // Client-side apply first: kubectl's last-applied annotation and an Update entry.
    s.kubectl_ok(&["apply", "-f", "ct.yaml"]);
    let obj = get_json(&s, &["ct", "my-new-cron-object"]);
    assert_eq!(
        managers(&obj),
        vec![(
            "kubectl-client-side-apply".to_string(),
            "Update".to_string()
        )]
    );
    // The same manifest server-side: kubectl takes over what its client-side apply set, with no
    // conflict, and the annotation is kept in sync.
    let out = s.kubectl_ok(&["apply", "--server-side", "-f", "ct.yaml"]);
    assert!(out.contains("serverside-applied"), "{out}");
    let obj = get_json(&s, &["ct", "my-new-cron-object"]);
    assert!(
        managers(&obj).contains(&("kubectl".to_string(), "Apply".to_string())),
        "{:?}",
        managers(&obj)
    );
    // A changed value through client-side apply again still works.
    s.write(
        "ct.yaml",
        &my_crontab().replace("* * * * */5", "*/10 * * * *"),
    );
    let out = s.kubectl_ok(&["apply", "-f", "ct.yaml"]);
    assert!(out.contains("configured"), "{out}");
    let obj = get_json(&s, &["ct", "my-new-cron-object"]);
    assert_eq!(obj["spec"]["cronSpec"], "*/10 * * * *");
}

#[tokio::test]
async fn apply_errors_are_kubernetes_statuses() {
    let s = TestServer::start();
    s.apply_crd("crd.yaml", &crontab_crd(), CRD);
    let client = s.client(HttpVersion::Http2);
    let apply = |name: &str, query: &str, body: String| {
        client
            .patch(format!("{}{OBJ}/{name}{query}", s.url))
            .bearer_auth(&s.token)
            .header("Content-Type", "application/apply-patch+yaml")
            .body(body)
            .send()
    };
    let good = "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: a\nspec:\n  image: x\n";

    // fieldManager is required.
    let r = apply("a", "", good.to_string()).await.unwrap();
    assert_eq!(r.status(), 422);
    let st: Value = r.json().await.unwrap();
    assert_eq!(
        st["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
    // A name that differs from the URL.
    let r = apply("b", "?fieldManager=m", good.to_string())
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let st: Value = r.json().await.unwrap();
    assert_eq!(
        st["message"],
        "the name of the object (a) does not match the name on the URL (b)"
    );
    // No apiVersion/kind.
    let r = apply("a", "?fieldManager=m", "metadata:\n  name: a\n".to_string())
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let st: Value = r.json().await.unwrap();
    assert_eq!(st["reason"], "BadRequest", "{st}");
    // Invalid YAML.
    let r = apply("a", "?fieldManager=m", "spec: [unclosed".to_string())
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    // Managed fields in an apply configuration.
    let r = apply(
        "a",
        "?fieldManager=m",
        good.replace(
            "  name: a\n",
            "  name: a\n  managedFields:\n  - manager: x\n    operation: Apply\n",
        ),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 400);
    let st: Value = r.json().await.unwrap();
    assert_eq!(st["message"], "metadata.managedFields must be nil");
    // An apply to the status of a missing object is 404; nothing was created by any of these.
    let r = client
        .patch(format!("{}{OBJ}/ghost/status?fieldManager=m", s.url))
        .bearer_auth(&s.token)
        .header("Content-Type", "application/apply-patch+yaml")
        .body(good.replace("name: a", "name: ghost"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let r = client
        .get(format!("{}{OBJ}/ghost", s.url))
        .bearer_auth(&s.token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);

    // Dry run creates nothing; a real apply creates (201), a second updates (200).
    let r = apply("a", "?fieldManager=m&dryRun=All", good.to_string())
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let r = client
        .get(format!("{}{OBJ}/a", s.url))
        .bearer_auth(&s.token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let r = apply("a", "?fieldManager=m", good.to_string())
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let r = apply(
        "a",
        "?fieldManager=m",
        good.replace("image: x", "image: x2"),
    )
    .await
    .unwrap();
    let code = r.status();
    assert_eq!(code, 200, "{}", r.text().await.unwrap());

    // A conflict carries FieldManagerConflict causes.
    let r = apply(
        "a",
        "?fieldManager=other",
        good.replace("image: x", "image: z"),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 409);
    let st: Value = r.json().await.unwrap();
    assert_eq!(st["reason"], "Conflict");
    assert_eq!(
        st["message"],
        "Apply failed with 1 conflict: conflict with \"m\": .spec.image"
    );
    assert_eq!(
        st["details"]["causes"],
        json!([{"reason": "FieldManagerConflict", "message": "conflict with \"m\"", "field": ".spec.image"}])
    );
    // force is only for applies.
    let r = client
        .patch(format!("{}{OBJ}/a?force=true", s.url))
        .bearer_auth(&s.token)
        .header("Content-Type", "application/merge-patch+json")
        .body(r#"{"spec":{"image":"q"}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    let st: Value = r.json().await.unwrap();
    assert_eq!(
        st["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
    );
}
