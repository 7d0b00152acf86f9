//! `CertificateSigningRequests` over HTTP: the requester is stamped into `spec`, `/approval`
//! needs `approve` on the signer and `/status` `sign` to issue, each endpoint changes only its
//! part, and the subject restriction keeps `system:masters` away from the API server's client
//! signer; with upstream's codes and messages.

use base64::Engine;
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{HttpVersion, TestServer, as_token, column_names, eventually};

const ADMIN: &str = "admin-token-0123456789";
const JANE: &str = "jane-token-0123456789";
const CSRS: &str = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1";

async fn server() -> TestServer {
    TestServer::start_with_tokens(&format!(
        "{ADMIN},admin,admin,\"system:masters\"\n{JANE},jane,jane-uid,\"dev\"\n"
    ))
    .await
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn request_pem(orgs: &[&str]) -> String {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["svc.example.com".into()]).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "client");
    for o in orgs {
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, *o);
    }
    params.serialize_request(&key).unwrap().pem().unwrap()
}

fn certificate_pem() -> String {
    let key = rcgen::KeyPair::generate().unwrap();
    rcgen::CertificateParams::new(vec!["svc.example.com".into()])
        .unwrap()
        .self_signed(&key)
        .unwrap()
        .pem()
}

fn csr(name: &str, signer: &str, request: &str) -> Value {
    json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {"request": b64(request), "signerName": signer, "usages": ["client auth"],
                 "username": "mallory", "groups": ["system:masters"]},
        "status": {"conditions": [{"type": "Approved", "status": "True"}]}})
}

/// Grants jane `rules` through a `ClusterRole` and binding named `name` (as the admin), and waits
/// until the authorizer allows her `probe` (`resourceAttributes`).
async fn grant(s: &TestServer, name: &str, rules: Value, probe: Value) {
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": name}, "rules": rules});
    let (code, body) = as_token(
        s,
        Method::POST,
        &format!("{RBAC}/clusterroles"),
        ADMIN,
        Some(role),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "User", "name": "jane", "apiGroup": "rbac.authorization.k8s.io"}]});
    let (code, body) = as_token(
        s,
        Method::POST,
        &format!("{RBAC}/clusterrolebindings"),
        ADMIN,
        Some(binding),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": probe}});
    eventually(&format!("jane is granted {name}"), || async {
        let (_, r) = as_token(
            s,
            Method::POST,
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            JANE,
            Some(review.clone()),
        )
        .await;
        r["status"]["allowed"] == json!(true)
    })
    .await;
}

#[tokio::test]
async fn a_request_is_stamped_then_approved_and_issued_by_those_allowed() {
    let s = server().await;
    grant(
        &s,
        "csr-user",
        json!([{"apiGroups": ["certificates.k8s.io"],
            "resources": ["certificatesigningrequests", "certificatesigningrequests/approval",
                          "certificatesigningrequests/status"],
            "verbs": ["create", "get", "list", "update", "patch"]}]),
        json!({"group": "certificates.k8s.io", "resource": "certificatesigningrequests",
            "verb": "create"}),
    )
    .await;

    // Created by jane, whatever the body claims: her identity, an empty status.
    let (code, created) = as_token(
        &s,
        Method::POST,
        CSRS,
        JANE,
        Some(csr("c1", "example.com/signer", &request_pem(&["dev"]))),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["spec"]["username"], "jane");
    assert_eq!(created["spec"]["uid"], "jane-uid");
    assert_eq!(
        created["spec"]["groups"],
        json!(["dev", "system:authenticated"])
    );
    assert_eq!(created["status"], json!({}));

    // Approving needs `approve` on the signer, which jane does not have yet.
    let mut approve = created.clone();
    approve["status"]["conditions"] = json!([{"type": "Approved", "status": "True",
        "reason": "Test", "message": "approved by the test"}]);
    let url = format!("{CSRS}/c1/approval");
    let (code, body) = as_token(&s, Method::PUT, &url, JANE, Some(approve.clone())).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "certificatesigningrequests.certificates.k8s.io \"c1\" is forbidden: user not permitted to approve requests with signerName \"example.com/signer\""
    );
    assert_eq!(body["reason"], "Forbidden");

    // A grant on the signer's domain wildcard is enough.
    grant(
        &s,
        "csr-approver",
        json!([{"apiGroups": ["certificates.k8s.io"], "resources": ["signers"],
            "resourceNames": ["example.com/*"], "verbs": ["approve"]}]),
        json!({"group": "certificates.k8s.io", "resource": "signers", "verb": "approve",
            "name": "example.com/*"}),
    )
    .await;
    let (code, approved) = as_token(&s, Method::PUT, &url, JANE, Some(approve)).await;
    assert_eq!(code, 200, "{approved}");
    let condition = &approved["status"]["conditions"][0];
    assert_eq!(condition["type"], "Approved");
    assert_eq!(condition["reason"], "Test");
    assert!(condition["lastUpdateTime"].is_string(), "{condition}");
    assert!(condition["lastTransitionTime"].is_string(), "{condition}");
    assert_eq!(approved["spec"]["username"], "jane");

    // The object itself changes neither spec nor status.
    let mut edit = approved.clone();
    edit["metadata"]["labels"] = json!({"team": "a"});
    edit["spec"]["signerName"] = json!("other.io/signer");
    edit["status"] = json!({});
    let (code, edited) = as_token(&s, Method::PUT, &format!("{CSRS}/c1"), JANE, Some(edit)).await;
    assert_eq!(code, 200, "{edited}");
    assert_eq!(edited["metadata"]["labels"], json!({"team": "a"}));
    assert_eq!(edited["spec"], approved["spec"]);
    assert_eq!(edited["status"], approved["status"]);

    // Issuing needs `sign`: refused for jane, done by the admin.
    let mut issue = edited.clone();
    issue["status"]["certificate"] = json!(b64(&certificate_pem()));
    let status_url = format!("{CSRS}/c1/status");
    let (code, body) = as_token(&s, Method::PUT, &status_url, JANE, Some(issue.clone())).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "certificatesigningrequests.certificates.k8s.io \"c1\" is forbidden: user not permitted to sign requests with signerName \"example.com/signer\""
    );
    let (code, issued) = as_token(&s, Method::PUT, &status_url, ADMIN, Some(issue)).await;
    assert_eq!(code, 200, "{issued}");
    assert!(issued["status"]["certificate"].is_string());
    assert_eq!(
        issued["status"]["conditions"],
        edited["status"]["conditions"]
    );

    // Once issued, the certificate stays.
    let mut reissue = issued.clone();
    reissue["status"]["certificate"] = json!(b64(&certificate_pem()));
    let (code, body) = as_token(&s, Method::PUT, &status_url, ADMIN, Some(reissue)).await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["message"],
        "CertificateSigningRequest.certificates.k8s.io \"c1\" is invalid: status.certificate: Forbidden: updates may not modify existing certificate content"
    );

    // The table's CONDITION column, and the signer as a field selector.
    let table = s
        .api(HttpVersion::Http2)
        .get_as(CSRS, "application/json;as=Table;v=v1;g=meta.k8s.io")
        .await
        .json();
    let columns = column_names(&table);
    assert_eq!(
        columns,
        [
            "Name",
            "Age",
            "SignerName",
            "Requestor",
            "RequestedDuration",
            "Condition"
        ]
    );
    let cells = &table["rows"][0]["cells"];
    assert_eq!(cells[2], "example.com/signer");
    assert_eq!(cells[3], "jane");
    assert_eq!(cells[4], "<none>");
    assert_eq!(cells[5], "Approved,Issued");
    for (selector, want) in [
        ("spec.signerName=example.com/signer", 1),
        ("spec.signerName=kubernetes.io/kubelet-serving", 0),
    ] {
        let list = s
            .api(HttpVersion::Http2)
            .get(&format!("{CSRS}?fieldSelector={selector}"))
            .await
            .json();
        assert_eq!(list["items"].as_array().unwrap().len(), want, "{selector}");
    }
}

#[tokio::test]
async fn bad_requests_and_the_subject_restriction_are_refused() {
    let s = server().await;
    let api = s.api(HttpVersion::Http2);

    let r = api
        .post(CSRS, csr("bad", "example.com/signer", "not a request"))
        .await;
    assert_eq!(r.status.as_u16(), 422, "{}", r.text);
    let message = r.json()["message"].as_str().unwrap().to_string();
    assert!(
        message.starts_with(
            "CertificateSigningRequest.certificates.k8s.io \"bad\" is invalid: spec.request: Invalid value: []byte{0x6e, 0x6f, 0x74,"
        ),
        "{message}"
    );
    assert!(
        message.ends_with("}: PEM block type must be CERTIFICATE REQUEST"),
        "{message}"
    );

    let mut no_usages = csr("nousage", "example.com", &request_pem(&[]));
    no_usages["spec"]["usages"] = json!([]);
    let r = api.post(CSRS, no_usages).await;
    assert_eq!(r.status.as_u16(), 422, "{}", r.text);
    assert_eq!(
        r.causes(),
        [
            "spec.usages: Required value",
            "spec.signerName: Invalid value: \"example.com\": must be a fully qualified domain and path of the form 'example.com/signer-name'",
        ]
    );

    let masters = csr(
        "masters",
        "kubernetes.io/kube-apiserver-client",
        &request_pem(&["system:masters"]),
    );
    let r = api.post(CSRS, masters).await;
    assert_eq!(r.status.as_u16(), 403, "{}", r.text);
    assert_eq!(
        r.json()["message"],
        "certificatesigningrequests.certificates.k8s.io \"masters\" is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed"
    );
    let ok = csr(
        "client",
        "kubernetes.io/kube-apiserver-client",
        &request_pem(&["dev"]),
    );
    assert_eq!(api.post(CSRS, ok).await.status.as_u16(), 201);

    // Approval is a subresource of this kind only; the discovery document lists it.
    let r = api.get("/api/v1/namespaces/default/approval").await;
    assert_eq!(r.status.as_u16(), 404, "{}", r.text);
    let doc = api.get("/apis/certificates.k8s.io/v1").await.json();
    let names: Vec<&str> = doc["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "certificatesigningrequests",
            "certificatesigningrequests/approval",
            "certificatesigningrequests/status"
        ]
    );
}
