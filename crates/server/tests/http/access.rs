//! Authentication and access over HTTP: anonymous requests and bad tokens, impersonation and its
//! refusal, the access reviews (`kubectl auth can-i`, `auth whoami`), and service-account tokens
//! from `TokenRequest` through to their revocation.

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{HttpVersion, TestServer};

const ADMIN: &str = "admin-token-0123456789";
const JANE: &str = "jane-token-0123456789";

/// A server whose token file has the admin and jane, with an ABAC policy that lets jane read
/// configmaps in namespace `a` only, and lets everyone read `/version`.
async fn server() -> TestServer {
    TestServer::start_with(|c| {
        std::fs::create_dir_all(&c.data_dir).unwrap();
        std::fs::write(
            c.data_dir.join("tokens.csv"),
            format!("{ADMIN},admin,admin,\"system:masters\"\n{JANE},jane,u-jane,\"devs\"\n"),
        )
        .unwrap();
        let policy = c.data_dir.join("policy.jsonl");
        let line = |spec: Value| {
            json!({"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy",
                "spec": spec})
            .to_string()
        };
        std::fs::write(
            &policy,
            [
                line(
                    json!({"user": "jane", "namespace": "a", "resource": "configmaps",
                    "apiGroup": "", "readonly": true}),
                ),
                line(
                    json!({"group": "system:authenticated", "apiGroup": "authorization.k8s.io",
                    "resource": "*", "namespace": "*"}),
                ),
                line(
                    json!({"group": "system:authenticated", "apiGroup": "authentication.k8s.io",
                    "resource": "*", "namespace": "*"}),
                ),
                line(json!({"group": "system:unauthenticated", "nonResourcePath": "/version"})),
            ]
            .join("\n"),
        )
        .unwrap();
        c.authorization.policy_file = Some(policy);
        c.authorization.modes = vec!["ABAC".into()];
    })
    .await
}

async fn call(
    s: &TestServer,
    token: Option<&str>,
    headers: &[(&str, &str)],
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = s
        .client(HttpVersion::Http2)
        .request(method, format!("{}{path}", s.url))
        .header("Content-Type", "application/json");
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    if let Some(b) = body {
        req = req.body(b.to_string());
    }
    let r = req.send().await.unwrap();
    let code = r.status().as_u16();
    let text = r.text().await.unwrap();
    (
        code,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn ssar(verb: &str, resource: &str, namespace: &str) -> Value {
    json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": verb, "resource": resource,
            "namespace": namespace}}})
}

const SSAR: &str = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
const SSR: &str = "/apis/authentication.k8s.io/v1/selfsubjectreviews";

#[tokio::test]
async fn anonymous_requests_bad_tokens_and_impersonation() {
    let s = server().await;
    // No credentials: the anonymous user, judged by the authorizer.
    let (code, body) = call(&s, None, &[], Method::GET, "/version", None).await;
    assert_eq!(code, 200, "{body}");
    let (code, body) = call(&s, None, &[], Method::GET, "/api/v1/namespaces", None).await;
    assert_eq!(code, 403);
    assert_eq!(
        body["message"],
        "namespaces is forbidden: User \"system:anonymous\" cannot list resource \"namespaces\" in API group \"\" at the cluster scope: No policy matched."
    );
    // A token nobody knows is a 401, never anonymous.
    let (code, body) = call(&s, Some("nope"), &[], Method::GET, "/version", None).await;
    assert_eq!((code, body["reason"].as_str()), (401, Some("Unauthorized")));

    // The admin acts as jane: jane's permissions, jane's identity.
    let as_jane = [("Impersonate-User", "jane"), ("Impersonate-Group", "devs")];
    let (code, body) = call(
        &s,
        Some(ADMIN),
        &as_jane,
        Method::GET,
        "/api/v1/namespaces/b/configmaps",
        None,
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(
        body["message"],
        "configmaps is forbidden: User \"jane\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"b\": No policy matched."
    );
    let (code, _) = call(
        &s,
        Some(ADMIN),
        &as_jane,
        Method::GET,
        "/api/v1/namespaces/a/configmaps",
        None,
    )
    .await;
    assert_eq!(code, 200);
    let (code, body) = call(
        &s,
        Some(ADMIN),
        &as_jane,
        Method::POST,
        SSR,
        Some(json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        body["status"]["userInfo"],
        json!({"username": "jane", "groups": ["devs", "system:authenticated"]})
    );

    // jane may not impersonate: upstream's 403.
    let (code, body) = call(
        &s,
        Some(JANE),
        &[("Impersonate-User", "admin")],
        Method::GET,
        "/version",
        None,
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(
        body["message"],
        "users \"admin\" is forbidden: User \"jane\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope: No policy matched."
    );
    let (code, body) = call(
        &s,
        Some(JANE),
        &[("Impersonate-User", "system:serviceaccount:a:robot")],
        Method::GET,
        "/version",
        None,
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(
        body["message"],
        "serviceaccounts \"robot\" is forbidden: User \"jane\" cannot impersonate resource \"serviceaccounts\" in API group \"\" in the namespace \"a\": No policy matched."
    );
    // Groups without a user: refused before anything is authorized.
    let (code, _) = call(
        &s,
        Some(ADMIN),
        &[("Impersonate-Group", "devs")],
        Method::GET,
        "/version",
        None,
    )
    .await;
    assert_eq!(code, 500);
}

#[tokio::test]
async fn access_reviews_answer_for_self_and_others() {
    let s = server().await;
    let post = |token: &'static str, path: &'static str, body: Value| {
        let s = &s;
        async move { call(s, Some(token), &[], Method::POST, path, Some(body)).await }
    };
    let (code, body) = post(JANE, SSAR, ssar("list", "configmaps", "a")).await;
    assert_eq!(
        (code, &body["status"]),
        (201, &json!({"allowed": true})),
        "{body}"
    );
    assert_eq!(body["kind"], "SelfSubjectAccessReview");
    let (_, body) = post(JANE, SSAR, ssar("create", "configmaps", "a")).await;
    assert_eq!(body["status"]["allowed"], false);
    let (_, body) = post(ADMIN, SSAR, ssar("create", "configmaps", "a")).await;
    assert_eq!(body["status"]["allowed"], true);

    // SubjectAccessReview: the admin asks about jane.
    let sar = |verb: &str, ns: &str| {
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": "jane", "groups": ["devs"],
                "resourceAttributes": {"verb": verb, "resource": "configmaps", "namespace": ns}}})
    };
    let path = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
    let (_, body) = post(ADMIN, path, sar("get", "a")).await;
    assert_eq!(body["status"]["allowed"], true);
    let (_, body) = post(ADMIN, path, sar("get", "b")).await;
    assert_eq!(body["status"]["allowed"], false);
    // Neither user nor groups; neither kind of attributes: upstream's 422.
    let (code, body) = post(
        ADMIN,
        path,
        json!({"apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview", "spec": {}}),
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        body["message"],
        "SubjectAccessReview.authorization.k8s.io \"\" is invalid: [spec.resourceAttributes: Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified, spec.user: Invalid value: \"\": at least one of user or group must be specified]"
    );
    // Local reviews must name their own namespace.
    let local = "/apis/authorization.k8s.io/v1/namespaces/a/localsubjectaccessreviews";
    let mut l = sar("get", "b");
    l["kind"] = json!("LocalSubjectAccessReview");
    let (code, body) = post(ADMIN, local, l).await;
    assert_eq!(code, 422, "{body}");
    assert!(body["message"].as_str().unwrap().contains(
        "spec.resourceAttributes.namespace: Invalid value: \"b\": must match metadata.namespace"
    ));

    // Rules review: jane's ABAC lines that apply in `a`.
    let (_, body) = post(
        JANE,
        "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
            "spec": {"namespace": "a"}}),
    )
    .await;
    assert!(body["status"]["resourceRules"].as_array().unwrap().contains(
        &json!({"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["configmaps"]})
    ), "{body}");
    // Rules are per namespace: a review without one is refused, as upstream's REST does.
    let (code, body) = post(
        JANE,
        "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
            "spec": {}}),
    )
    .await;
    assert_eq!(
        (code, &body["reason"], &body["message"]),
        (400, &json!("BadRequest"), &json!("no namespace on request")),
        "{body}"
    );
    // Reviews are create-only.
    let (code, _) = call(&s, Some(ADMIN), &[], Method::GET, SSAR, None).await;
    assert_eq!(code, 405);
    // Discovery lists them with the create verb.
    let (_, d) = call(
        &s,
        Some(ADMIN),
        &[],
        Method::GET,
        "/apis/authorization.k8s.io/v1",
        None,
    )
    .await;
    let names: Vec<&str> = d["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "localsubjectaccessreviews",
            "selfsubjectaccessreviews",
            "selfsubjectrulesreviews",
            "subjectaccessreviews"
        ]
    );
}

#[tokio::test]
async fn service_account_tokens_authenticate_until_the_account_goes() {
    let s = server().await;
    let sa_path = "/api/v1/namespaces/default/serviceaccounts";
    let (code, _) = call(
        &s,
        Some(ADMIN),
        &[],
        Method::POST,
        sa_path,
        Some(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}})),
    )
    .await;
    assert_eq!(code, 201);
    let token_request = |secs: i64| {
        json!({"apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest", "spec": {"expirationSeconds": secs}})
    };
    let token_path = format!("{sa_path}/robot/token");
    let (code, body) = call(
        &s,
        Some(ADMIN),
        &[],
        Method::POST,
        &token_path,
        Some(token_request(599)),
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        body["message"],
        "TokenRequest.authentication.k8s.io \"robot\" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"
    );
    let (code, body) = call(
        &s,
        Some(ADMIN),
        &[],
        Method::POST,
        &format!("{sa_path}/ghost/token"),
        Some(token_request(600)),
    )
    .await;
    assert_eq!(
        (code, body["message"].as_str()),
        (404, Some("serviceaccounts \"ghost\" not found"))
    );
    let (code, body) = call(
        &s,
        Some(ADMIN),
        &[],
        Method::POST,
        &token_path,
        Some(token_request(600)),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["kind"], "TokenRequest");
    let token = body["status"]["token"].as_str().unwrap().to_string();
    assert!(body["status"]["expirationTimestamp"].is_string());

    let (code, me) = call(
        &s,
        Some(&token),
        &[],
        Method::POST,
        SSR,
        Some(json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})),
    )
    .await;
    assert_eq!(code, 201, "{me}");
    let info = &me["status"]["userInfo"];
    assert_eq!(info["username"], "system:serviceaccount:default:robot");
    assert_eq!(
        info["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ])
    );
    assert!(
        info["extra"]["authentication.kubernetes.io/credential-id"][0]
            .as_str()
            .unwrap()
            .starts_with("JTI=")
    );

    let token_review = |review: Value| {
        call(
            &s,
            Some(ADMIN),
            &[],
            Method::POST,
            "/apis/authentication.k8s.io/v1/tokenreviews",
            Some(review),
        )
    };
    // TokenReview says the same.
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
        "spec": {"token": token}});
    let (_, body) = token_review(review.clone()).await;
    assert_eq!(body["status"]["authenticated"], true, "{body}");
    assert_eq!(
        body["status"]["user"]["username"],
        "system:serviceaccount:default:robot"
    );

    // A token-file token carries no audience: it passes a review only for the requested
    // audiences that are API audiences, and the review names those (`WrapAudienceAgnosticToken`).
    for (audiences, want) in [
        (json!(["foo"]), None),
        (
            json!(["foo", "https://kubernetes.default.svc.cluster.local"]),
            Some(json!(["https://kubernetes.default.svc.cluster.local"])),
        ),
    ] {
        let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
            "spec": {"token": ADMIN, "audiences": audiences}});
        let (_, body) = token_review(review).await;
        match want {
            None => assert_eq!(
                (&body["status"]["authenticated"], &body["status"]["error"]),
                (&Value::Null, &json!("invalid bearer token")),
                "{body}"
            ),
            Some(accepted) => {
                assert_eq!(body["status"]["authenticated"], true, "{body}");
                assert_eq!(body["status"]["audiences"], accepted, "{body}");
            }
        }
    }

    // OIDC discovery documents.
    let (_, doc) = call(
        &s,
        Some(ADMIN),
        &[],
        Method::GET,
        "/.well-known/openid-configuration",
        None,
    )
    .await;
    assert_eq!(
        doc["issuer"],
        "https://kubernetes.default.svc.cluster.local"
    );
    let (_, keys) = call(&s, Some(ADMIN), &[], Method::GET, "/openid/v1/jwks", None).await;
    assert_eq!(keys["keys"][0]["alg"], "ES256");

    // Deleting the account revokes its tokens.
    let (code, _) = call(
        &s,
        Some(ADMIN),
        &[],
        Method::DELETE,
        &format!("{sa_path}/robot"),
        None,
    )
    .await;
    assert_eq!(code, 200);
    let (code, _) = call(&s, Some(&token), &[], Method::GET, "/version", None).await;
    assert_eq!(code, 401);
    let (_, body) = token_review(review).await;
    assert_eq!(body["status"]["authenticated"], Value::Null, "{body}");
    assert_eq!(
        body["status"]["error"],
        "[invalid bearer token, service account token has been invalidated]"
    );
    // A token nobody issued is refused by every bearer-token authenticator alike.
    let (_, body) = token_review(json!({"apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview", "spec": {"token": "not-a-token"}}))
    .await;
    assert_eq!(body["status"]["error"], "invalid bearer token", "{body}");
}

#[tokio::test]
async fn tokens_bind_only_to_pods_of_their_account_and_review_their_audiences() {
    let s = server().await;
    let admin = |method: Method, path: String, body: Option<Value>| {
        let s = &s;
        async move { call(s, Some(ADMIN), &[], method, &path, body).await }
    };
    let sa_path = "/api/v1/namespaces/default/serviceaccounts";
    for name in ["robot", "other"] {
        let (code, body) = admin(
            Method::POST,
            sa_path.into(),
            Some(json!({"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": name}})),
        )
        .await;
        assert_eq!(code, 201, "{body}");
    }
    let (code, node) = admin(
        Method::POST,
        "/api/v1/nodes".into(),
        Some(json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})),
    )
    .await;
    assert_eq!(code, 201, "{node}");
    let node_uid = node["metadata"]["uid"].as_str().unwrap().to_string();
    let (code, pod) = admin(
        Method::POST,
        "/api/v1/namespaces/default/pods".into(),
        Some(
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
            "spec": {"serviceAccountName": "robot", "nodeName": "n1",
                     "containers": [{"name": "c", "image": "nginx"}]}}),
        ),
    )
    .await;
    assert_eq!(code, 201, "{pod}");
    let bound_to_web = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "web"}}});

    // A pod running as robot cannot carry a token of other (upstream's 400, naming only the
    // requested account).
    let (code, body) = admin(
        Method::POST,
        format!("{sa_path}/other/token"),
        Some(bound_to_web.clone()),
    )
    .await;
    assert_eq!(code, 400, "{body}");
    assert_eq!(body["reason"], "BadRequest");
    assert_eq!(
        body["message"],
        "cannot bind token for serviceaccount \"other\" to pod running with different serviceaccount name."
    );
    // Its own account's token binds, and authenticates with the pod in its extra.
    let (code, body) = admin(
        Method::POST,
        format!("{sa_path}/robot/token"),
        Some(bound_to_web),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let bound = body["status"]["token"].as_str().unwrap().to_string();
    let review = |token: &str, audiences: Option<Value>| {
        let mut spec = json!({"token": token});
        if let Some(a) = audiences {
            spec["audiences"] = a;
        }
        admin(
            Method::POST,
            "/apis/authentication.k8s.io/v1/tokenreviews".into(),
            Some(
                json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                "spec": spec}),
            ),
        )
    };
    let (_, body) = review(&bound, None).await;
    assert_eq!(body["status"]["authenticated"], true, "{body}");
    assert_eq!(
        body["status"]["user"]["extra"]["authentication.kubernetes.io/pod-name"],
        json!(["web"])
    );
    // The pod's node is named too (`ServiceAccountTokenPodNodeInfo`).
    assert_eq!(
        body["status"]["user"]["extra"]["authentication.kubernetes.io/node-name"],
        json!(["n1"])
    );
    assert_eq!(
        body["status"]["user"]["extra"]["authentication.kubernetes.io/node-uid"],
        json!([node_uid])
    );
    // A review naming no audiences checks the API audiences, and says so.
    assert_eq!(
        body["status"]["audiences"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );

    // A review for audiences the token is not for: upstream's aggregate of the loopback
    // authenticator's refusal and the service-account authenticator's audience error.
    let (_, body) = review(&bound, Some(json!(["foo"]))).await;
    assert_eq!(body["status"]["authenticated"], Value::Null, "{body}");
    assert_eq!(
        body["status"]["error"],
        "[invalid bearer token, token audiences [\"https://kubernetes.default.svc.cluster.local\"] is invalid for the target audiences [\"foo\"]]"
    );
    // A token for other audiences, reviewed for the API audiences (none requested).
    let (code, body) = admin(
        Method::POST,
        format!("{sa_path}/robot/token"),
        Some(
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"audiences": ["vault", "db"]}}),
        ),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let vault = body["status"]["token"].as_str().unwrap().to_string();
    let (_, body) = review(&vault, None).await;
    assert_eq!(
        body["status"]["error"],
        "[invalid bearer token, token audiences [\"vault\" \"db\"] is invalid for the target audiences [\"https://kubernetes.default.svc.cluster.local\"]]"
    );
    // It is not a credential for this server either.
    let (code, _) = call(&s, Some(&vault), &[], Method::GET, "/version", None).await;
    assert_eq!(code, 401);
    // Reviewed for one of its audiences, it authenticates for that one.
    let (_, body) = review(&vault, Some(json!(["db", "other"]))).await;
    assert_eq!(body["status"]["authenticated"], true, "{body}");
    assert_eq!(body["status"]["audiences"], json!(["db"]));

    // A token bound to a node authenticates while the node exists.
    let (code, body) = admin(
        Method::POST,
        format!("{sa_path}/robot/token"),
        Some(
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"boundObjectRef": {"apiVersion": "v1", "kind": "Node", "name": "n1"}}}),
        ),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let node_bound = body["status"]["token"].as_str().unwrap().to_string();
    let (_, body) = review(&node_bound, None).await;
    assert_eq!(body["status"]["authenticated"], true, "{body}");
    assert_eq!(
        body["status"]["user"]["extra"]["authentication.kubernetes.io/node-name"],
        json!(["n1"])
    );
    let (code, _) = admin(Method::DELETE, "/api/v1/nodes/n1".into(), None).await;
    assert_eq!(code, 200);
    let (code, _) = call(&s, Some(&node_bound), &[], Method::GET, "/version", None).await;
    assert_eq!(code, 401);
    // The pod's token does not depend on its node: still authenticated (this server's
    // policy then forbids the path).
    let (code, body) = call(&s, Some(&bound), &[], Method::GET, "/version", None).await;
    assert_eq!(code, 403, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("system:serviceaccount:default:robot"),
        "{body}"
    );
    // Only pods, secrets and nodes take tokens.
    let (code, body) = admin(
        Method::POST,
        format!("{sa_path}/robot/token"),
        Some(
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"boundObjectRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}}}),
        ),
    )
    .await;
    assert_eq!(code, 400, "{body}");
    assert_eq!(
        body["message"],
        "cannot bind token to object of type apps/v1, Kind=Deployment"
    );
}
