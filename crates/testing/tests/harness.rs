//! The harness as an operator's test uses it: start, CRDs, preloaded objects, users, helpers.

use std::time::Duration;

use crd_apiserver_testing::TestServer;
use crd_apiserver_testing::k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use crd_apiserver_testing::kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, PatchParams, PostParams,
};
use crd_apiserver_testing::kube::runtime::wait::conditions;
use crd_apiserver_testing::kube::{Client, ResourceExt};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(30);

const WIDGETS: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {plural: widgets, singular: widget, kind: Widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
          status: {type: object, properties: {ready: {type: boolean}}}
";

fn widgets(client: Client, ns: &str) -> Api<DynamicObject> {
    let resource = crd_apiserver_testing::kube::discovery::ApiResource {
        group: "example.com".into(),
        version: "v1".into(),
        api_version: "example.com/v1".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
    };
    Api::namespaced_with(client, ns, &resource)
}

#[tokio::test]
async fn the_smallest_use_gives_an_admin_client() {
    let server = TestServer::start().await.unwrap();
    let namespaces: Api<Namespace> = Api::all(server.client());
    let names: Vec<String> = namespaces
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    assert!(names.contains(&"default".to_string()), "{names:?}");
    assert!(server.url().starts_with("https://127.0.0.1:"));
}

#[tokio::test]
async fn crds_are_established_and_objects_preloaded_before_start_returns() {
    let server = TestServer::builder()
        .crd_yaml(WIDGETS)
        .object(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}))
        .object(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": "team-a"}, "data": {"k": "v"}
        }))
        .object(json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w1", "namespace": "team-a"}, "spec": {"size": 3}
        }))
        .start()
        .await
        .unwrap();
    // No waiting: the CRD is served and the objects exist the moment start returns.
    let w1 = widgets(server.client(), "team-a").get("w1").await.unwrap();
    assert_eq!(w1.data["spec"]["size"], 3);
    let cm = Api::<ConfigMap>::namespaced(server.client(), "team-a")
        .get("settings")
        .await
        .unwrap();
    assert_eq!(cm.data.unwrap()["k"], "v");
}

#[tokio::test]
async fn a_bad_crd_file_fails_start() {
    let err = TestServer::builder()
        .crd_yaml("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
        .start()
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "expected kind CustomResourceDefinition, found \"ConfigMap\""
    );
}

#[tokio::test]
async fn a_rejected_crd_fails_start_with_the_servers_message() {
    let err = TestServer::builder()
        .crd_yaml(&WIDGETS.replace("name: widgets.example.com", "name: wrong.example.com"))
        .start()
        .await
        .unwrap_err();
    let chain = format!("{err:#}");
    assert!(
        chain.starts_with("creating CRD wrong.example.com: "),
        "{chain}"
    );
    assert!(
        chain.contains("must be spec.names.plural+\".\"+spec.group"),
        "{chain}"
    );
}

/// Two CRDs of one group with the same kind: the second's names are refused, and `start` says
/// so at once with the condition's reason instead of timing out.
#[tokio::test]
async fn a_crd_whose_names_conflict_fails_start_with_the_reason() {
    let crd = |plural: &str| {
        format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
             metadata: {{name: {plural}.example.com}}\n\
             spec: {{group: example.com, scope: Namespaced, names: {{plural: {plural}, kind: Foo}},\n\
             \x20 versions: [{{name: v1, served: true, storage: true, schema: {{openAPIV3Schema: {{type: object}}}}}}]}}\n"
        )
    };
    let err = TestServer::builder()
        .crd_yaml(&crd("foos"))
        .crd_yaml(&crd("bars"))
        .start()
        .await
        .unwrap_err();
    // The CRDs are created at once: either may be the one refused.
    let chain = format!("{err:#}");
    assert!(
        ["foos", "bars"].iter().any(|p| chain.contains(&format!(
            "CRD {p}.example.com cannot be served: NamesAccepted=False (ListKindConflict): \"FooList\" is already in use"
        ))),
        "{chain}"
    );
}

#[tokio::test]
async fn client_as_is_authorized_as_that_user() {
    let server = TestServer::builder()
        .object(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "team-a-view", "namespace": "default"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "team-a"}]
        }))
        .start()
        .await
        .unwrap();
    let as_jane = Api::<ConfigMap>::namespaced(server.client_as("jane", &["team-a"]), "default");
    as_jane.list(&ListParams::default()).await.unwrap();
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("x".into());
    let err = as_jane
        .create(&PostParams::default(), &cm)
        .await
        .unwrap_err();
    let crd_apiserver_testing::kube::Error::Api(status) = err else {
        panic!("{err}")
    };
    assert_eq!(status.code, 403);
    assert_eq!(
        status.message,
        "configmaps is forbidden: User \"jane\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"default\""
    );
    // Another user, outside the group, may not even list.
    let as_bob = Api::<ConfigMap>::namespaced(server.client_as("bob", &[]), "default");
    assert!(as_bob.list(&ListParams::default()).await.is_err());
}

#[tokio::test]
async fn client_as_service_account_uses_a_real_token() {
    let server = TestServer::start().await.unwrap();
    let client = server
        .client_as_service_account("default", "robot")
        .await
        .unwrap();
    let err = Api::<ConfigMap>::namespaced(client, "default")
        .list(&ListParams::default())
        .await
        .unwrap_err();
    let crd_apiserver_testing::kube::Error::Api(status) = err else {
        panic!("{err}")
    };
    assert_eq!(
        status.message,
        "configmaps is forbidden: User \"system:serviceaccount:default:robot\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""
    );
}

#[tokio::test]
async fn wait_for_sees_a_later_change_and_times_out_with_the_last_object() {
    let server = TestServer::builder()
        .crd_yaml(WIDGETS)
        .start()
        .await
        .unwrap();
    let api = widgets(server.client(), "default");
    let w: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}
    }))
    .unwrap();
    api.create(&PostParams::default(), &w).await.unwrap();
    let ready = |o: Option<&DynamicObject>| o.is_some_and(|o| o.data["status"]["ready"] == true);
    let waiting = server.wait_for(&api, "w", ready, TIMEOUT);
    let patch = crd_apiserver_testing::kube::api::Patch::Merge(json!({"status": {"ready": true}}));
    let (found, patched) = tokio::join!(waiting, async {
        api.patch_status("w", &PatchParams::default(), &patch).await
    });
    patched.unwrap();
    assert_eq!(found.unwrap().unwrap().data["status"]["ready"], true);

    let never = |o: Option<&DynamicObject>| o.is_some_and(|o| o.data["spec"]["size"] == 9);
    let err = server
        .wait_for(&api, "w", never, Duration::from_millis(200))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("w: condition not met within 200ms; last seen: {"),
        "{err}"
    );
    assert!(err.contains("\"ready\": true"), "{err}");
}

#[tokio::test]
async fn wait_for_deletion_returns_none() {
    let server = TestServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("gone".into());
    let cm = api.create(&PostParams::default(), &cm).await.unwrap();
    let uid = cm.uid().unwrap();
    api.delete("gone", &DeleteParams::default()).await.unwrap();
    let found = server
        .wait_for(&api, "gone", conditions::is_deleted(&uid), TIMEOUT)
        .await
        .unwrap();
    assert!(found.is_none());
}

#[tokio::test]
async fn events_for_matches_the_involved_object() {
    let server = TestServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("watched".into());
    let cm = api.create(&PostParams::default(), &cm).await.unwrap();
    let mut other = ConfigMap::default();
    other.metadata.name = Some("other".into());
    let other = api.create(&PostParams::default(), &other).await.unwrap();
    let events: Api<crd_apiserver_testing::k8s_openapi::api::core::v1::Event> =
        Api::namespaced(server.client(), "default");
    for (name, target, reason) in [
        ("e1", &cm, "Synced"),
        ("e2", &other, "Other"),
        ("e3", &cm, "Updated"),
    ] {
        let event = json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name},
            "involvedObject": {
                "apiVersion": "v1", "kind": "ConfigMap", "namespace": "default",
                "name": target.name_any(), "uid": target.uid()
            },
            "reason": reason, "message": "m", "type": "Normal",
            "firstTimestamp": format!("2026-01-01T00:00:0{}Z", &name[1..]),
        });
        events
            .create(
                &PostParams::default(),
                &serde_json::from_value(event).unwrap(),
            )
            .await
            .unwrap();
    }
    let reasons: Vec<String> = server
        .events_for(&cm)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|e| e.reason)
        .collect();
    assert_eq!(reasons, ["Synced", "Updated"]);
}

#[tokio::test]
async fn the_kubeconfig_serves_kubectl() {
    let server = TestServer::builder()
        .crd_yaml(WIDGETS)
        .start()
        .await
        .unwrap();
    let out = std::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(server.kubeconfig_path())
        .args(["get", "crds", "-o", "name"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "customresourcedefinition.apiextensions.k8s.io/widgets.example.com\n"
    );
}

#[tokio::test]
async fn dropping_the_server_removes_its_data_dir() {
    let server = TestServer::start().await.unwrap();
    let dir = server.data_dir().to_path_buf();
    assert!(dir.join("kubeconfig").exists());
    drop(server);
    assert!(!dir.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_servers_are_isolated() {
    let servers = futures::future::try_join_all((0..4).map(|_| TestServer::start()))
        .await
        .unwrap();
    let mut urls: Vec<String> = servers.iter().map(TestServer::url).collect();
    urls.sort();
    urls.dedup();
    assert_eq!(urls.len(), 4, "every server has its own port");
    // Each writes the same name with its own value, concurrently.
    futures::future::try_join_all(servers.iter().enumerate().map(|(i, s)| async move {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some("shared-name".into());
        cm.data = Some([("owner".to_string(), i.to_string())].into());
        Api::<ConfigMap>::namespaced(s.client(), "default")
            .create(&PostParams::default(), &cm)
            .await
    }))
    .await
    .unwrap();
    for (i, s) in servers.iter().enumerate() {
        let items = Api::<ConfigMap>::namespaced(s.client(), "default")
            .list(&ListParams::default())
            .await
            .unwrap()
            .items;
        let mine: Vec<_> = items
            .iter()
            .filter(|c| c.name_any() == "shared-name")
            .collect();
        assert_eq!(mine.len(), 1);
        assert_eq!(mine[0].data.as_ref().unwrap()["owner"], i.to_string());
    }
}

#[tokio::test]
async fn flags_configure_the_server() {
    let server = TestServer::builder()
        .flag("--anonymous-auth", "false")
        .flag("--authorization-mode", "AlwaysAllow")
        .start()
        .await
        .unwrap();
    // AlwaysAllow: any authenticated user may write.
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("by-bob".into());
    Api::<ConfigMap>::namespaced(server.client_as("bob", &[]), "default")
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
    // No anonymous requests: without credentials, 401.
    let mut config = server.config().clone();
    config.auth_info = crd_apiserver_testing::kube::config::AuthInfo::default();
    let anonymous = Client::try_from(config).unwrap();
    let err = Api::<ConfigMap>::namespaced(anonymous, "default")
        .list(&ListParams::default())
        .await
        .unwrap_err();
    let crd_apiserver_testing::kube::Error::Api(status) = err else {
        panic!("{err}")
    };
    assert_eq!(status.code, 401);

    let err = TestServer::builder()
        .flag("--secure-port", "1")
        .start()
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "--secure-port is not a flag the harness sets; use Builder::configure for it"
    );
}
