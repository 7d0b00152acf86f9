//! The request filters that run before any handler, in kube-apiserver's order: authentication
//! (bearer token, service-account token, client certificate, anonymous), impersonation
//! (`Impersonate-*` headers, each authorized with the `impersonate` verb), then authorization of
//! the request's attributes as the effective user.
//!
//! Architecture Invariant: every request is authenticated, then impersonation is resolved, then
//! the request is authorized exactly once as the effective user, here, before any handler runs.
//! No route skips it: health and version endpoints are authorized too (RBAC's
//! `system:public-info-viewer` opens them to everyone).

use crd_core::Status;
use http::{HeaderMap, Method, header};

use crate::auth::{ALL_AUTHENTICATED, ALL_UNAUTHENTICATED, ANONYMOUS, User};
use crate::authz::{Attributes, Authorizer};
use crate::request::route::{Route, Verb};
use crate::serviceaccount;
use crate::state::AppState;

/// Authenticates a request to `path` (see [`crate::auth::Authenticator`]); 401 when it cannot
/// be.
pub async fn authenticate(
    state: &AppState,
    headers: &HeaderMap,
    certificate: Option<&crate::auth::ClientCertificate>,
    path: &str,
) -> Result<User, Box<Status>> {
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    state
        .authn
        .authenticate(authorization, certificate, path)
        .await
        .map_err(|_| Box::new(Status::unauthorized()))
}

/// The headers that ask to act as another user.
const IMPERSONATE_USER: &str = "impersonate-user";
const IMPERSONATE_GROUP: &str = "impersonate-group";
const IMPERSONATE_UID: &str = "impersonate-uid";
const IMPERSONATE_EXTRA: &str = "impersonate-extra-";

/// One thing a request asks to impersonate, as upstream's `buildImpersonationRequests` lists
/// them.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Impersonation {
    User(String),
    ServiceAccount { namespace: String, name: String },
    Group(String),
    Uid(String),
    Extra { key: String, value: String },
}

impl Impersonation {
    /// The attributes the requester must be authorized for (verb `impersonate`).
    fn attributes(&self) -> Attributes {
        let (group, resource, namespace, name) = match self {
            Impersonation::User(n) => ("", "users".to_string(), None, n),
            Impersonation::ServiceAccount { namespace, name } => (
                "",
                "serviceaccounts".to_string(),
                Some(namespace.clone()),
                name,
            ),
            Impersonation::Group(n) => ("", "groups".to_string(), None, n),
            Impersonation::Uid(n) => ("authentication.k8s.io", "uids".to_string(), None, n),
            Impersonation::Extra { key, value } => (
                "authentication.k8s.io",
                format!("userextras/{key}"),
                None,
                value,
            ),
        };
        Attributes::Resource {
            verb: "impersonate".into(),
            group: group.into(),
            version: "v1".into(),
            resource,
            namespace,
            name: Some(name.clone()),
        }
    }
}

/// What the `Impersonate-*` headers ask for, in upstream's order (user, groups, extras, uid).
fn impersonations(headers: &HeaderMap) -> Result<Vec<Impersonation>, Box<Status>> {
    let text = |v: &http::HeaderValue| v.to_str().unwrap_or_default().to_string();
    let mut out = Vec::new();
    let user = headers.get(IMPERSONATE_USER).map(text).unwrap_or_default();
    let has_user = !user.is_empty();
    if has_user {
        out.push(match serviceaccount::split_username(&user) {
            Some((ns, name)) => Impersonation::ServiceAccount {
                namespace: ns.into(),
                name: name.into(),
            },
            None => Impersonation::User(user),
        });
    }
    let mut others = false;
    for g in headers.get_all(IMPERSONATE_GROUP) {
        others = true;
        out.push(Impersonation::Group(text(g)));
    }
    let mut extras: Vec<(String, String)> = Vec::new();
    for (name, value) in headers {
        if let Some(key) = name.as_str().strip_prefix(IMPERSONATE_EXTRA) {
            let key = percent_encoding::percent_decode_str(key)
                .decode_utf8_lossy()
                .to_lowercase();
            extras.push((key, text(value)));
        }
    }
    for (key, value) in extras {
        others = true;
        out.push(Impersonation::Extra { key, value });
    }
    if let Some(uid) = headers.get(IMPERSONATE_UID).map(text) {
        others = true;
        out.push(Impersonation::Uid(uid));
    }
    if others && !has_user {
        return Err(Box::new(Status::internal(format!(
            "requested {} without impersonating a user",
            describe(&out)
        ))));
    }
    Ok(out)
}

/// The requests as upstream prints them: Go's `%v` of its `[]v1.ObjectReference` (the fields
/// kind, namespace, name, uid, apiVersion, resourceVersion and fieldPath, space-separated).
fn describe(requests: &[Impersonation]) -> String {
    const V1: &str = "authentication.k8s.io/v1";
    let parts: Vec<String> = requests
        .iter()
        .map(|r| {
            let (kind, namespace, name, api_version, field_path) = match r {
                Impersonation::Group(g) => ("Group", "", g.as_str(), "", ""),
                Impersonation::Extra { key, value } => {
                    ("UserExtra", "", value.as_str(), V1, key.as_str())
                }
                Impersonation::Uid(u) => ("UID", "", u.as_str(), V1, ""),
                Impersonation::User(u) => ("User", "", u.as_str(), "", ""),
                Impersonation::ServiceAccount { namespace, name } => {
                    ("ServiceAccount", namespace.as_str(), name.as_str(), "", "")
                }
            };
            format!("{{{kind} {namespace} {name}  {api_version}  {field_path}}}")
        })
        .collect();
    format!("[{}]", parts.join(" "))
}

/// Resolves the `Impersonate-*` headers: each requested identity must be allowed by the
/// `impersonate` verb for the requester (403 with upstream's text otherwise). Returns the
/// effective user: the requester when nothing is impersonated.
pub async fn impersonate(
    state: &AppState,
    requester: User,
    headers: &HeaderMap,
) -> Result<User, Box<Status>> {
    let requests = impersonations(headers)?;
    if requests.is_empty() {
        return Ok(requester);
    }
    let groups_specified = headers.contains_key(IMPERSONATE_GROUP);
    let mut user = User::default();
    for r in &requests {
        let attrs = r.attributes();
        // Upstream answers 403 here also when the authorizer failed.
        let decision = state.authorizer.authorize(&requester, &attrs).await;
        if !decision.allowed {
            return Err(Box::new(Authorizer::denial_with_reason(
                &requester,
                &attrs,
                &decision.reason,
            )));
        }
        match r {
            Impersonation::User(name) => user.name.clone_from(name),
            Impersonation::ServiceAccount { namespace, name } => {
                user.name = serviceaccount::username(namespace, name);
                if !groups_specified {
                    user.groups = serviceaccount::groups(namespace);
                }
            }
            Impersonation::Group(g) => user.groups.push(g.clone()),
            Impersonation::Uid(u) => user.uid.clone_from(u),
            Impersonation::Extra { key, value } => {
                user.extra
                    .entry(key.clone())
                    .or_default()
                    .push(value.clone());
            }
        }
    }
    let has = |g: &str| user.groups.iter().any(|x| x == g);
    if user.name == ANONYMOUS {
        if !has(ALL_UNAUTHENTICATED) {
            user.groups.push(ALL_UNAUTHENTICATED.into());
        }
    } else if !has(ALL_AUTHENTICATED) && !has(ALL_UNAUTHENTICATED) {
        user.groups.push(ALL_AUTHENTICATED.into());
    }
    Ok(user)
}

/// Authorizes the effective user's request; a denial carries Kubernetes' 403, or a 500 when an
/// authorizer failed and none allowed (upstream's `WithAuthorization`).
pub async fn authorize(
    state: &AppState,
    user: &User,
    method: &Method,
    path: &str,
    query: Option<&str>,
    route: &Route,
) -> Authorized {
    let attrs = attributes(method, path, query, route);
    let decision = state.authorizer.authorize(user, &attrs).await;
    let denial = (!decision.allowed).then(|| {
        Box::new(if decision.error.is_empty() {
            Authorizer::denial_with_reason(user, &attrs, &decision.reason)
        } else {
            Status::internal(&decision.error)
        })
    });
    Authorized {
        reason: decision.reason,
        denial,
    }
}

/// The outcome of [`authorize`]: the authorizer's reason (for the audit log) and, when the
/// request is denied, its 403.
pub struct Authorized {
    /// Why the authorizer decided as it did (may be empty).
    pub reason: String,
    /// The 403 to answer with, when denied.
    pub denial: Option<Box<Status>>,
}

/// The authorizer's view of a request, as upstream's `RequestInfoFactory` builds it: a
/// namespace's own path is in that namespace (so a `RoleBinding` there may grant reading it),
/// and a list or watch whose field selector requires one `metadata.name` names that object
/// (so `resourceNames` rules cover single-object informers and `kubectl get -w NAME`).
pub fn attributes(method: &Method, path: &str, query: Option<&str>, route: &Route) -> Attributes {
    match route {
        Route::Resource(r) => {
            let mut namespace = r.namespace.clone();
            let mut name = r.name.clone();
            if r.resource == "namespaces" && namespace.is_none() {
                namespace.clone_from(&name);
            }
            if name.is_none() && matches!(r.verb, Verb::List | Verb::Watch) {
                name = query.and_then(selected_name);
            }
            Attributes::Resource {
                verb: r.verb.as_str().to_string(),
                group: r.group.clone(),
                version: r.version.clone(),
                resource: match &r.subresource {
                    Some(sub) => format!("{}/{sub}", r.resource),
                    None => r.resource.clone(),
                },
                namespace,
                name,
            }
        }
        _ => Attributes::NonResource {
            verb: method.as_str().to_ascii_lowercase(),
            path: path.to_string(),
        },
    }
}

/// The name a `fieldSelector` requires exactly (`RequiresExactMatch("metadata.name")`), when it
/// is a valid path segment.
fn selected_name(query: &str) -> Option<String> {
    let (_, raw) = form_urlencoded::parse(query.as_bytes()).find(|(k, _)| k == "fieldSelector")?;
    let selector = crd_core::fields::FieldSelector::parse(&raw).ok()?;
    let name = selector.exact_match("metadata.name")?;
    let valid = !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '%']);
    valid.then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_as_upstreams_request_info() {
        let route = |verb: Verb, resource: &str, namespace: Option<&str>, name: Option<&str>| {
            Route::Resource(crate::request::route::ResourceRequest {
                group: String::new(),
                version: "v1".into(),
                namespace: namespace.map(String::from),
                resource: resource.into(),
                name: name.map(String::from),
                subresource: None,
                verb,
            })
        };
        let cases = [
            // A namespace's own path is in that namespace.
            (
                route(Verb::Get, "namespaces", None, Some("team-a")),
                None,
                Some("team-a"),
                Some("team-a"),
            ),
            (
                route(Verb::List, "namespaces", None, None),
                None,
                None,
                None,
            ),
            // An exact `metadata.name` selector names the object of a list or watch.
            (
                route(Verb::Watch, "configmaps", Some("ns"), None),
                Some("watch=1&fieldSelector=metadata.name%3Dallowed"),
                Some("ns"),
                Some("allowed"),
            ),
            (
                route(Verb::List, "configmaps", Some("ns"), None),
                Some("fieldSelector=metadata.name%3D%3Da,metadata.namespace%3Dns"),
                Some("ns"),
                Some("a"),
            ),
            (
                route(Verb::List, "configmaps", Some("ns"), None),
                Some("fieldSelector=metadata.name!%3Da"),
                Some("ns"),
                None,
            ),
            (
                route(Verb::DeleteCollection, "configmaps", Some("ns"), None),
                Some("fieldSelector=metadata.name%3Da"),
                Some("ns"),
                None,
            ),
        ];
        for (route, query, namespace, name) in cases {
            let Attributes::Resource {
                namespace: got_ns,
                name: got_name,
                ..
            } = attributes(&Method::GET, "/", query, &route)
            else {
                panic!("resource attributes");
            };
            assert_eq!(
                (got_ns.as_deref(), got_name.as_deref()),
                (namespace, name),
                "{query:?}"
            );
        }
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    #[test]
    fn impersonation_requests_as_upstream_builds_them() {
        type Case = (
            Vec<(&'static str, &'static str)>,
            Result<Vec<Impersonation>, ()>,
        );
        let cases: Vec<Case> = vec![
            (vec![], Ok(vec![])),
            (
                vec![("Impersonate-User", "jane"), ("Impersonate-Group", "devs")],
                Ok(vec![
                    Impersonation::User("jane".into()),
                    Impersonation::Group("devs".into()),
                ]),
            ),
            (
                vec![("Impersonate-User", "system:serviceaccount:ns:sa")],
                Ok(vec![Impersonation::ServiceAccount {
                    namespace: "ns".into(),
                    name: "sa".into(),
                }]),
            ),
            (
                vec![
                    ("Impersonate-User", "jane"),
                    ("Impersonate-Extra-Scopes%2Fone", "view"),
                    ("Impersonate-Uid", "1234"),
                ],
                Ok(vec![
                    Impersonation::User("jane".into()),
                    Impersonation::Extra {
                        key: "scopes/one".into(),
                        value: "view".into(),
                    },
                    Impersonation::Uid("1234".into()),
                ]),
            ),
            // Groups, extras or a uid without a user: refused.
            (vec![("Impersonate-Group", "devs")], Err(())),
            (vec![("Impersonate-Uid", "1")], Err(())),
        ];
        // Upstream's message, Go's `%v` of its object references.
        let err = impersonations(&headers(&[
            ("Impersonate-Group", "devs"),
            ("Impersonate-Extra-Scopes", "view"),
            ("Impersonate-Uid", "7"),
        ]))
        .expect_err("no user");
        assert_eq!(
            err.message,
            "Internal error occurred: requested [{Group  devs    } {UserExtra  view  authentication.k8s.io/v1  scopes} {UID  7  authentication.k8s.io/v1  }] without impersonating a user"
        );
        for (h, want) in cases {
            let got = impersonations(&headers(&h)).map_err(|_| ());
            assert_eq!(got, want, "{h:?}");
        }
    }

    #[test]
    fn impersonation_attributes_name_upstream_resources() {
        let a = Impersonation::Extra {
            key: "scopes".into(),
            value: "v".into(),
        }
        .attributes();
        assert_eq!(
            a,
            Attributes::Resource {
                verb: "impersonate".into(),
                group: "authentication.k8s.io".into(),
                version: "v1".into(),
                resource: "userextras/scopes".into(),
                namespace: None,
                name: Some("v".into()),
            }
        );
    }
}
