//! Storage-version migration: `crd-apiserver migrate` under concurrent writes, the
//! StorageVersionMigration API across a restart, `storage-versions`, and the storedVersions
//! safety check.

use std::process::Command;

use serde_json::{Value, json};

use crate::support::{HttpVersion, TestServer};

fn crd(storage: &str) -> String {
    format!(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names: {{plural: crontabs, singular: crontab, kind: CronTab}}
  versions:
  - name: v1beta1
    served: true
    storage: {}
    schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}
  - name: v1
    served: true
    storage: {}
    schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}
",
        storage == "v1beta1",
        storage == "v1"
    )
}

fn apply_crd(s: &TestServer, storage: &str) {
    s.apply_crd("crd.yaml", &crd(storage), "crontabs.stable.example.com");
}

const BASE: &str = "/apis/stable.example.com/v1beta1/namespaces/default/crontabs";

/// Creates `n` objects at v1beta1 with 16 concurrent clients.
async fn create_many(s: &TestServer, n: usize) {
    let client = s.client(HttpVersion::Http2);
    let mut tasks = Vec::new();
    for worker in 0..16 {
        let client = client.clone();
        let url = format!("{}{BASE}", s.url);
        let token = s.token.clone();
        tasks.push(tokio::spawn(async move {
            for i in (worker..n).step_by(16) {
                let body = json!({"apiVersion": "stable.example.com/v1beta1", "kind": "CronTab",
                                  "metadata": {"name": format!("ct-{i:05}")}, "spec": {"n": i}});
                let r = client
                    .post(&url)
                    .bearer_auth(&token)
                    .header("Content-Type", "application/json")
                    .body(body.to_string())
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), 201);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

fn cli(s: &TestServer, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_crd-apiserver"))
        .args(args)
        .arg("--kubeconfig")
        .arg(s.kubeconfig())
        .output()
        .unwrap()
}

fn counts(s: &TestServer) -> Value {
    let raw = s.kubectl_ok(&[
        "get",
        "--raw",
        "/debug/storage-versions/crontabs.stable.example.com",
    ]);
    serde_json::from_str::<Value>(&raw).unwrap()["counts"].clone()
}

fn stored_versions(s: &TestServer) -> String {
    s.kubectl_ok(&[
        "get",
        "crd",
        "crontabs.stable.example.com",
        "-o",
        "jsonpath={.status.storedVersions}",
    ])
}

#[tokio::test]
async fn migrate_under_concurrent_writes_and_the_safety_check() {
    let s = tokio::task::spawn_blocking(|| {
        let s = TestServer::start();
        apply_crd(&s, "v1beta1");
        s
    })
    .await
    .unwrap();
    create_many(&s, 1200).await;
    let s = tokio::task::spawn_blocking(move || {
        apply_crd(&s, "v1");
        assert_eq!(counts(&s), json!({"v1beta1": 1200}));
        assert_eq!(stored_versions(&s), r#"["v1beta1","v1"]"#);

        // storage-versions tells the user what is where.
        let out = cli(&s, &["storage-versions", "crontabs.stable.example.com"]);
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("v1beta1\t1200\t\tyes"), "{text}");
        assert!(text.contains("v1\t0\tyes\tyes"), "{text}");

        // The safety check: v1beta1 cannot leave storedVersions while objects are stored at it.
        let out = s.kubectl(&[
            "patch", "crd", "crontabs.stable.example.com", "--subresource=status", "--type=merge",
            "-p", r#"{"status":{"storedVersions":["v1"]}}"#,
        ]);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("1200 objects are still stored at v1beta1; migrate them first (crd-apiserver migrate crontabs.stable.example.com"),
            "{err}"
        );
        s
    })
    .await
    .unwrap();

    // Migrate while 4 writers keep updating objects through v1beta1.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let client = s.client(HttpVersion::Http2);
    let mut writers = Vec::new();
    for w in 0..4u64 {
        let (client, url, token, stop) =
            (client.clone(), s.url.clone(), s.token.clone(), stop.clone());
        writers.push(tokio::spawn(async move {
            let mut written = Vec::new();
            let mut round = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // Each writer owns the objects i ≡ w (mod 4), so its last write must survive.
                let i = (round * 4 + w) % 1200;
                round += 1;
                let r = client
                    .patch(format!("{url}{BASE}/ct-{i:05}"))
                    .bearer_auth(&token)
                    .header("Content-Type", "application/merge-patch+json")
                    .body(json!({"spec": {"writer": w, "round": round}}).to_string())
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), 200);
                written.push((i, round));
            }
            (w, written)
        }));
    }
    let s = tokio::task::spawn_blocking(move || {
        let out = cli(&s, &["migrate", "crontabs.stable.example.com"]);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stdout}\n{stderr}");
        assert!(
            stderr.contains("migrating 1200 crontabs.stable.example.com objects to v1"),
            "{stderr}"
        );
        assert!(stderr.contains("1200/1200"), "progress bar: {stderr}");
        assert!(
            stdout.contains("status.storedVersions is now [v1]"),
            "{stdout}"
        );
        s
    })
    .await
    .unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut last: std::collections::HashMap<u64, (u64, u64)> = std::collections::HashMap::new();
    for w in writers {
        let (writer, written) = w.await.unwrap();
        for (i, round) in written {
            last.insert(i, (writer, round));
        }
    }
    // Every object is at v1, storedVersions is trimmed, and no concurrent update was lost.
    let s = tokio::task::spawn_blocking(move || {
        assert_eq!(counts(&s), json!({"v1": 1200}));
        assert_eq!(stored_versions(&s), r#"["v1"]"#);
        s
    })
    .await
    .unwrap();
    let all = s.get(BASE).await.json();
    let items = all["items"].as_array().unwrap();
    assert_eq!(items.len(), 1200);
    assert!(!last.is_empty());
    for (i, (writer, round)) in last {
        let obj = &items[usize::try_from(i).unwrap()];
        assert_eq!(obj["spec"]["n"], i);
        assert_eq!(obj["spec"]["writer"], writer, "{obj}");
        assert_eq!(
            obj["spec"]["round"], round,
            "a concurrent update was lost: {obj}"
        );
        assert_eq!(obj["apiVersion"], "stable.example.com/v1beta1");
    }
}

/// How many `CronTab` objects the stopped server's database holds at `version`, read from the file.
async fn stored_at(db: &std::path::Path, version: &str) -> usize {
    use crd_storage::Store as _;
    let store = crd_storage::sqlite::SqliteStore::open(db).expect("open the stopped server's db");
    let list = store
        .list(crd_storage::ListRequest {
            prefix: "/registry/stable.example.com/crontabs/".into(),
            ..crd_storage::ListRequest::default()
        })
        .await
        .expect("list");
    list.items
        .iter()
        .filter(|kv| {
            serde_json::from_slice::<Value>(&kv.value).expect("stored JSON")["apiVersion"]
                == format!("stable.example.com/{version}")
        })
        .count()
}

#[test]
fn a_migration_resumes_after_a_restart() {
    let s = TestServer::start();
    apply_crd(&s, "v1beta1");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(create_many(&s, 2000));
    apply_crd(&s, "v1");
    s.write(
        "svm.yaml",
        "apiVersion: storagemigration.k8s.io/v1alpha1\nkind: StorageVersionMigration\nmetadata:\n  name: crontabs-to-v1\nspec:\n  resource:\n    group: stable.example.com\n    version: v1\n    resource: crontabs\n",
    );
    s.kubectl_ok(&["create", "-f", "svm.yaml"]);
    // Stop the server at once, mid-migration, and start it again on the same data.
    let dir = s.stop();
    // The stop came before the migration finished: objects remain at v1beta1, so the success
    // below is the restarted server's work, not something that was already done.
    let left = rt.block_on(stored_at(&dir.path().join("data/state.db"), "v1beta1"));
    assert!(
        left > 0,
        "the migration finished before the stop; nothing was resumed"
    );
    let s = TestServer::start_in(dir);
    s.kubectl_ok(&[
        "wait",
        "--for=condition=Succeeded",
        "storageversionmigration/crontabs-to-v1",
        "--timeout=60s",
    ]);
    assert_eq!(counts(&s), json!({"v1": 2000}));
    assert_eq!(stored_versions(&s), r#"["v1"]"#);
}

#[test]
fn forcing_stored_versions_removal() {
    let s = TestServer::start();
    apply_crd(&s, "v1beta1");
    s.write(
        "ct.yaml",
        "apiVersion: stable.example.com/v1beta1\nkind: CronTab\nmetadata:\n  name: old\n",
    );
    s.kubectl_ok(&["apply", "-f", "ct.yaml"]);
    apply_crd(&s, "v1");
    s.kubectl_ok(&[
        "patch", "crd", "crontabs.stable.example.com", "--subresource=status", "--type=merge", "-p",
        r#"{"metadata":{"annotations":{"crd-apiserver.dev/force-stored-versions":"true"}},"status":{"storedVersions":["v1"]}}"#,
    ]);
    assert_eq!(stored_versions(&s), r#"["v1"]"#);
}
