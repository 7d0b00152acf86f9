//! Resources that are answered, not stored (upstream's `rest.Creater`s without storage): the
//! access reviews of `authorization.k8s.io/v1` (`SelfSubjectAccessReview`, `SubjectAccessReview`,
//! `LocalSubjectAccessReview`, `SelfSubjectRulesReview`), the reviews of
//! `authentication.k8s.io/v1` (`TokenReview`, `SelfSubjectReview`), `TokenRequest`
//! (`serviceaccounts/<name>/token`), and the pods' answers of [`super::pod_actions`]
//! (`pods/<name>/binding`, `pods/<name>/eviction`, and the core `bindings` resource).
//!
//! Each is an [`Answer`]: the create handler decodes the body and hands it over with the
//! requesting user and the authenticator and authorizer; the answer is the response object.
//! [`REVIEWS`] is the table discovery lists; [`ReviewStrategy`] serves one of its rows.
//!
//! Architecture Invariant: an answered review or token request never touches storage except
//! to read (the service account a token is requested for); the pod subresources of
//! [`super::pod_actions`] write only the pod they name (and its disruption budget's status).

use std::sync::Arc;

use crd_core::validation::string_list;
use crd_core::{ErrorList, FieldError, Path, Status};
use crd_storage::Store;
use serde_json::{Value, json};

use super::{Admission, ResourceInfo, Scope, Strategy, Subresource};
use crate::auth::{Authenticator, User};
use crate::authz::{Attributes, Authorizer};
use crate::error::ApiError;
use crate::table::TableColumn;

/// What an answer gets to work with.
pub struct AnswerRequest<'a> {
    /// The user the request acts as.
    pub user: &'a User,
    /// The namespace in the URL.
    pub namespace: Option<&'a str>,
    /// The object name in the URL ("" for collections).
    pub name: &'a str,
    /// The decoded body.
    pub body: Value,
    /// Who may do what (the access reviews ask it).
    pub authorizer: &'a Authorizer,
    /// Who a token is (`TokenReview`, `TokenRequest`).
    pub authn: &'a Authenticator,
    /// The store: read only, except for the subresources of [`super::pod_actions`], which
    /// write the pod they name.
    pub store: &'a Arc<dyn Store>,
    /// The strategy of the resource a subresource belongs to (the pods of `pods/eviction`).
    pub strategy: &'a dyn Strategy,
    /// `?dryRun=All`: answer as if done, write nothing.
    pub dry_run: bool,
}

/// A create that is computed rather than stored.
#[async_trait::async_trait]
pub trait Answer: Send + Sync {
    /// The Kind and `apiVersion` the body must have (and the answer has).
    fn kind(&self) -> (&'static str, &'static str);

    /// Other `apiVersion`s the body may have (upstream's `AcceptsGroupVersion`: an eviction
    /// takes `policy/v1beta1` too).
    fn also_accepts(&self) -> &'static [&'static str] {
        &[]
    }

    /// Computes the response object (returned with 201 Created, as upstream).
    async fn answer(&self, req: AnswerRequest<'_>) -> Result<Value, ApiError>;
}

/// One answered resource, as discovery lists it.
#[derive(Clone, Copy, Debug)]
pub struct Review {
    /// The API group.
    pub group: &'static str,
    /// The resource (plural).
    pub plural: &'static str,
    /// The Kind.
    pub kind: &'static str,
    /// Namespaced or cluster-scoped.
    pub scope: Scope,
    /// The key root of the stored kind the answer acts on (`bindings` bind stored pods); ""
    /// for the reviews, which read no object of their own.
    pub key_root: &'static str,
}

/// Every answered top-level resource (all at version `v1`, verb `create` only).
pub static REVIEWS: &[Review] = &[
    Review {
        group: "",
        plural: "bindings",
        kind: "Binding",
        scope: Scope::Namespaced,
        key_root: "/registry/pods",
    },
    Review {
        group: "authentication.k8s.io",
        plural: "selfsubjectreviews",
        kind: "SelfSubjectReview",
        scope: Scope::Cluster,
        key_root: "",
    },
    Review {
        group: "authentication.k8s.io",
        plural: "tokenreviews",
        kind: "TokenReview",
        scope: Scope::Cluster,
        key_root: "",
    },
    Review {
        group: "authorization.k8s.io",
        plural: "localsubjectaccessreviews",
        kind: "LocalSubjectAccessReview",
        scope: Scope::Namespaced,
        key_root: "",
    },
    Review {
        group: "authorization.k8s.io",
        plural: "selfsubjectaccessreviews",
        kind: "SelfSubjectAccessReview",
        scope: Scope::Cluster,
        key_root: "",
    },
    Review {
        group: "authorization.k8s.io",
        plural: "selfsubjectrulesreviews",
        kind: "SelfSubjectRulesReview",
        scope: Scope::Cluster,
        key_root: "",
    },
    Review {
        group: "authorization.k8s.io",
        plural: "subjectaccessreviews",
        kind: "SubjectAccessReview",
        scope: Scope::Cluster,
        key_root: "",
    },
];

/// Subresources answered on stored kinds: `(group, plural, subresource)`.
pub static SUBRESOURCES: &[(&str, &str, &str)] = &[
    ("", "serviceaccounts", "token"),
    ("", "pods", "binding"),
    ("", "pods", "eviction"),
];

/// The answer for a subresource of a stored kind, if it has one.
pub fn subresource_answer(group: &str, plural: &str, sub: &str) -> Option<&'static dyn Answer> {
    Some(match (group, plural, sub) {
        ("", "serviceaccounts", "token") => &TokenRequest,
        ("", "pods", "binding") => &super::pod_actions::Binding,
        ("", "pods", "eviction") => &super::pod_actions::Eviction,
        _ => return None,
    })
}

/// The strategy of one [`REVIEWS`] row: create only, answered by its [`Answer`].
pub struct ReviewStrategy {
    info: ResourceInfo,
    answer: &'static dyn Answer,
}

impl ReviewStrategy {
    /// One strategy per row of [`REVIEWS`].
    pub fn all() -> impl Iterator<Item = ReviewStrategy> {
        REVIEWS.iter().map(|r| ReviewStrategy {
            info: ResourceInfo {
                group: r.group.into(),
                version: "v1".into(),
                resource: r.plural.into(),
                singular: r.kind.to_lowercase(),
                kind: r.kind.into(),
                list_kind: format!("{}List", r.kind),
                scope: r.scope,
                key_root: r.key_root.into(),
                status_subresource: false,
            },
            answer: answer_of(r.kind),
        })
    }
}

fn answer_of(kind: &str) -> &'static dyn Answer {
    match kind {
        "Binding" => &super::pod_actions::LegacyBinding,
        "SelfSubjectReview" => &SelfSubjectReview,
        "TokenReview" => &TokenReview,
        "SelfSubjectRulesReview" => &SelfSubjectRulesReview,
        "SubjectAccessReview" => &AccessReview::Subject,
        "LocalSubjectAccessReview" => &AccessReview::Local,
        _ => &AccessReview::SelfSubject,
    }
}

#[async_trait::async_trait]
impl Strategy for ReviewStrategy {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }
    fn admit(&self, _obj: &mut Value, _how: &Admission) -> Result<Vec<String>, ApiError> {
        Ok(Vec::new())
    }
    fn prepare_create(&self, _obj: &mut Value, _user: &crate::auth::User) {}
    fn validate_create(&self, _obj: &Value) -> ErrorList {
        ErrorList::new()
    }
    fn prepare_update(&self, _new: &mut Value, _old: &Value, _sub: Subresource) {}
    fn validate_update(&self, _new: &Value, _old: &Value, _sub: Subresource) -> ErrorList {
        ErrorList::new()
    }
    fn table_columns(&self) -> Vec<TableColumn> {
        Vec::new()
    }
    fn answerer(&self, sub: Option<&str>) -> Option<&dyn Answer> {
        sub.is_none().then_some(self.answer)
    }
}

/// The response skeleton every review returns: the request's kind and spec, a null
/// creationTimestamp, and `status`.
fn respond(kind: &str, api_version: &str, body: &Value, status: Value) -> Value {
    let mut metadata = body
        .get("metadata")
        .cloned()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    metadata["creationTimestamp"] = Value::Null;
    let mut out = json!({"kind": kind, "apiVersion": api_version, "metadata": metadata});
    if let Some(spec) = body.get("spec") {
        out["spec"] = spec.clone();
    }
    out["status"] = status;
    out
}

/// The Invalid error of an answered kind (`api_version` is `<group>/v1`).
fn invalid((kind, api_version): (&str, &str), name: &str, errors: &ErrorList) -> ApiError {
    let group = api_version.split('/').next().unwrap_or("");
    Status::invalid(&crd_core::GroupResource::new(group, kind), name, errors).into()
}

/// `authentication.k8s.io/v1` `SelfSubjectReview`: who am I (`kubectl auth whoami`).
struct SelfSubjectReview;

#[async_trait::async_trait]
impl Answer for SelfSubjectReview {
    fn kind(&self) -> (&'static str, &'static str) {
        ("SelfSubjectReview", "authentication.k8s.io/v1")
    }
    async fn answer(&self, req: AnswerRequest<'_>) -> Result<Value, ApiError> {
        let (kind, av) = self.kind();
        Ok(respond(
            kind,
            av,
            &req.body,
            json!({"userInfo": req.user.to_json()}),
        ))
    }
}

/// `authentication.k8s.io/v1` `TokenReview`: is this token valid, and whose is it.
struct TokenReview;

#[async_trait::async_trait]
impl Answer for TokenReview {
    fn kind(&self) -> (&'static str, &'static str) {
        ("TokenReview", "authentication.k8s.io/v1")
    }
    async fn answer(&self, req: AnswerRequest<'_>) -> Result<Value, ApiError> {
        let (kind, av) = self.kind();
        let token = req
            .body
            .pointer("/spec/token")
            .and_then(Value::as_str)
            .unwrap_or("");
        if token.is_empty() {
            let mut errs = ErrorList::new();
            errs.push(FieldError::required(&Path::new("spec").child("token"), ""));
            return Err(invalid(self.kind(), "", &errs));
        }
        let audiences = string_list(req.body.pointer("/spec/audiences"));
        let status = match req.authn.review_token(token, &audiences).await {
            Ok((user, accepted)) => {
                let mut s = json!({"authenticated": true, "user": user.to_json()});
                if !accepted.is_empty() {
                    s["audiences"] = json!(accepted);
                }
                s
            }
            Err(error) => json!({"user": {}, "error": error}),
        };
        Ok(respond(kind, av, &req.body, status))
    }
}

/// The access reviews: the requesting user (self), any user (`SubjectAccessReview`), or any user
/// in one namespace (`LocalSubjectAccessReview`).
enum AccessReview {
    SelfSubject,
    Subject,
    Local,
}

#[async_trait::async_trait]
impl Answer for AccessReview {
    fn kind(&self) -> (&'static str, &'static str) {
        let kind = match self {
            AccessReview::SelfSubject => "SelfSubjectAccessReview",
            AccessReview::Subject => "SubjectAccessReview",
            AccessReview::Local => "LocalSubjectAccessReview",
        };
        (kind, "authorization.k8s.io/v1")
    }

    async fn answer(&self, req: AnswerRequest<'_>) -> Result<Value, ApiError> {
        let (kind, av) = self.kind();
        let spec = req.body.get("spec").cloned().unwrap_or_else(|| json!({}));
        let errors = self.validate(&req.body, &spec, req.namespace);
        if !errors.is_empty() {
            return Err(invalid(self.kind(), "", &errors));
        }
        let subject = match self {
            AccessReview::SelfSubject => req.user.clone(),
            AccessReview::Subject | AccessReview::Local => subject_of(&spec),
        };
        let attrs = attributes_of(&spec);
        let decision = req.authorizer.authorize(&subject, &attrs).await;
        let mut status = json!({"allowed": decision.allowed});
        if decision.denied {
            status["denied"] = Value::Bool(true);
        }
        if !decision.reason.is_empty() {
            status["reason"] = Value::String(decision.reason);
        }
        if !decision.error.is_empty() {
            status["evaluationError"] = Value::String(decision.error);
        }
        Ok(respond(kind, av, &req.body, status))
    }
}

impl AccessReview {
    /// Upstream's `ValidateSubjectAccessReview` and its self and local variants.
    fn validate(&self, body: &Value, spec: &Value, namespace: Option<&str>) -> ErrorList {
        let mut errs = ErrorList::new();
        let sp = Path::new("spec");
        let res = spec.get("resourceAttributes").filter(|v| !v.is_null());
        let non = spec.get("nonResourceAttributes").filter(|v| !v.is_null());
        if res.is_some() && non.is_some() {
            errs.push(FieldError::invalid(
                &sp.child("nonResourceAttributes"),
                non.cloned().unwrap_or_default(),
                "cannot be specified in combination with resourceAttributes",
            ));
        }
        if res.is_none() && non.is_none() {
            errs.push(FieldError::invalid(
                &sp.child("resourceAttributes"),
                // Go prints a nil pointer as the string "null".
                "null",
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            ));
        }
        if !matches!(self, AccessReview::SelfSubject) {
            let user = spec.get("user").and_then(Value::as_str).unwrap_or("");
            let groups = spec
                .get("groups")
                .and_then(Value::as_array)
                .is_some_and(|g| !g.is_empty());
            if user.is_empty() && !groups {
                errs.push(FieldError::invalid(
                    &sp.child("user"),
                    user,
                    "at least one of user or group must be specified",
                ));
            }
        }
        if let AccessReview::Local = self {
            let ns = namespace.unwrap_or("");
            let res_ns = res
                .and_then(|r| r.get("namespace"))
                .and_then(Value::as_str)
                .unwrap_or("");
            if res.is_some() && res_ns != ns {
                errs.push(FieldError::invalid(
                    &sp.child("resourceAttributes").child("namespace"),
                    res_ns,
                    "must match metadata.namespace",
                ));
            }
            if let Some(n) = non {
                errs.push(FieldError::invalid(
                    &sp.child("nonResourceAttributes"),
                    n.clone(),
                    "disallowed on this kind of request",
                ));
            }
        } else {
            let meta = body.get("metadata").and_then(Value::as_object);
            let nonempty = meta.is_some_and(|m| {
                m.iter()
                    .any(|(k, v)| k != "managedFields" && k != "creationTimestamp" && !v.is_null())
            });
            if nonempty {
                errs.push(FieldError::invalid(
                    &Path::new("metadata"),
                    body.get("metadata").cloned().unwrap_or_default(),
                    "must be empty",
                ));
            }
        }
        errs
    }
}

/// The user a `SubjectAccessReview` asks about.
fn subject_of(spec: &Value) -> User {
    User {
        name: spec
            .get("user")
            .and_then(Value::as_str)
            .unwrap_or("")
            .into(),
        uid: spec.get("uid").and_then(Value::as_str).unwrap_or("").into(),
        groups: string_list(spec.get("groups")),
        extra: spec
            .get("extra")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), string_list(Some(v))))
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// The authorizer attributes a review's spec describes.
fn attributes_of(spec: &Value) -> Attributes {
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    if let Some(r) = spec.get("resourceAttributes").filter(|v| v.is_object()) {
        let sub = s(r, "subresource");
        let resource = if sub.is_empty() {
            s(r, "resource")
        } else {
            format!("{}/{sub}", s(r, "resource"))
        };
        let ns = s(r, "namespace");
        let name = s(r, "name");
        Attributes::Resource {
            verb: s(r, "verb"),
            group: s(r, "group"),
            version: s(r, "version"),
            resource,
            namespace: (!ns.is_empty()).then_some(ns),
            name: (!name.is_empty()).then_some(name),
        }
    } else {
        let n = spec
            .get("nonResourceAttributes")
            .cloned()
            .unwrap_or_default();
        Attributes::NonResource {
            verb: s(&n, "verb"),
            path: s(&n, "path"),
        }
    }
}

/// `authorization.k8s.io/v1` `SelfSubjectRulesReview`: what may I do in a namespace
/// (`kubectl auth can-i --list`).
struct SelfSubjectRulesReview;

#[async_trait::async_trait]
impl Answer for SelfSubjectRulesReview {
    fn kind(&self) -> (&'static str, &'static str) {
        ("SelfSubjectRulesReview", "authorization.k8s.io/v1")
    }
    async fn answer(&self, req: AnswerRequest<'_>) -> Result<Value, ApiError> {
        let (kind, av) = self.kind();
        let ns = req
            .body
            .pointer("/spec/namespace")
            .and_then(Value::as_str)
            .unwrap_or("");
        if ns.is_empty() {
            return Err(Status::bad_request("no namespace on request").into());
        }
        let rules = req.authorizer.rules_for(req.user, ns);
        let list = |rs: &[crate::authz::rbac::rules::PolicyRule]| -> Vec<Value> {
            rs.iter()
                .map(crate::authz::rbac::rules::PolicyRule::to_json)
                .collect()
        };
        let mut status = json!({
            "resourceRules": list(&rules.resource_rules),
            "nonResourceRules": list(&rules.non_resource_rules),
            "incomplete": rules.incomplete,
        });
        if !rules.evaluation_error.is_empty() {
            status["evaluationError"] = Value::String(rules.evaluation_error);
        }
        Ok(respond(kind, av, &req.body, status))
    }
}

/// `authentication.k8s.io/v1` `TokenRequest` on `serviceaccounts/<name>/token`: a signed token
/// bound to the service account's uid (`kubectl create token`).
struct TokenRequest;

/// Upstream's default and minimum `expirationSeconds`.
const DEFAULT_EXPIRATION: i64 = 3600;
const MIN_EXPIRATION: i64 = 600;

#[async_trait::async_trait]
impl Answer for TokenRequest {
    fn kind(&self) -> (&'static str, &'static str) {
        ("TokenRequest", "authentication.k8s.io/v1")
    }

    async fn answer(&self, req: AnswerRequest<'_>) -> Result<Value, ApiError> {
        let (kind, av) = self.kind();
        let Some(sa_tokens) = req.authn.service_accounts.as_ref() else {
            return Err(ApiError::NoRoute);
        };
        let ns = req.namespace.unwrap_or("default");
        let gr = crd_core::GroupResource::new("", "serviceaccounts");
        let key = format!("/registry/serviceaccounts/{ns}/{}", req.name);
        let kv = req
            .store
            .get(&key)
            .await
            .map_err(|e| ApiError::storage(&gr, req.name, e))?
            .ok_or_else(|| ApiError::from(Status::not_found(&gr, req.name)))?;
        let sa: Value = serde_json::from_slice(&kv.value).map_err(Status::internal)?;
        let uid = sa
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let mut body = req.body;
        let spec = body.get("spec").cloned().unwrap_or_else(|| json!({}));
        let expiration = spec
            .get("expirationSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(DEFAULT_EXPIRATION);
        let mut errs = ErrorList::new();
        let path = Path::new("spec").child("expirationSeconds");
        if expiration < MIN_EXPIRATION {
            errs.push(FieldError::invalid(
                &path,
                expiration,
                "may not specify a duration less than 10 minutes",
            ));
        } else if expiration > 1 << 32 {
            errs.push(FieldError::invalid(
                &path,
                expiration,
                "may not specify a duration larger than 2^32 seconds",
            ));
        }
        let bound = spec.get("boundObjectRef").filter(|v| v.is_object());
        let bound = match bound {
            Some(b) => Some(bound_object(b, ns, req.name, req.store).await?),
            None => None,
        };
        if !errs.is_empty() {
            return Err(invalid(self.kind(), req.name, &errs));
        }
        let mut audiences = string_list(spec.get("audiences"));
        if audiences.is_empty() {
            audiences.clone_from(&sa_tokens.audiences);
        }
        let now = jiff::Timestamp::now();
        let token = sa_tokens
            .issuer
            .issue(
                ns,
                req.name,
                &uid,
                audiences.clone(),
                now.as_second(),
                expiration,
                bound.as_ref(),
            )
            .map_err(Status::internal)?;
        let expires =
            jiff::Timestamp::from_second(now.as_second() + expiration).map_err(Status::internal)?;
        body["spec"]["audiences"] = json!(audiences);
        body["spec"]["expirationSeconds"] = json!(expiration);
        if body["spec"].get("boundObjectRef").is_none() {
            body["spec"]["boundObjectRef"] = Value::Null;
        }
        let mut out = respond(
            kind,
            av,
            &body,
            json!({"token": token, "expirationTimestamp": expires.to_string()}),
        );
        out["metadata"] = json!({"name": req.name, "namespace": ns,
            "creationTimestamp": crate::registry::meta::now_rfc3339()});
        Ok(out)
    }
}

/// The object a token is bound to: it must exist (a Pod or Secret in the namespace, or a
/// Node), and a Pod must run as the service account `sa` (else anyone allowed to request
/// tokens for `sa` could mint one that claims another account's pod). A pod's node, when it
/// exists, goes into the token too (upstream's `ServiceAccountTokenPodNodeInfo`).
async fn bound_object(
    b: &Value,
    ns: &str,
    sa: &str,
    store: &Arc<dyn Store>,
) -> Result<crate::serviceaccount::BoundObject, ApiError> {
    let kind = b.get("kind").and_then(Value::as_str).unwrap_or("");
    let name = b.get("name").and_then(Value::as_str).unwrap_or("");
    let api_version = b.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let (key, plural) = match (group, kind) {
        ("", "Pod") => (format!("/registry/pods/{ns}/{name}"), "pods"),
        ("", "Secret") => (format!("/registry/secrets/{ns}/{name}"), "secrets"),
        ("", "Node") => (format!("/registry/minions/{name}"), "nodes"),
        _ => {
            // `schema.GroupVersionKind.String()`.
            return Err(Status::bad_request(format!(
                "cannot bind token to object of type {group}/{version}, Kind={kind}"
            ))
            .into());
        }
    };
    let gr = crd_core::GroupResource::new("", plural);
    let kv = store
        .get(&key)
        .await
        .map_err(|e| ApiError::storage(&gr, name, e))?
        .ok_or_else(|| ApiError::from(Status::not_found(&gr, name)))?;
    let obj: Value = serde_json::from_slice(&kv.value).map_err(Status::internal)?;
    if kind == "Pod" {
        // Upstream's ServiceAccount admission gives every pod a `serviceAccountName`
        // (`default` when none is named); pods stored here without one run as `default`.
        let runs_as = obj
            .pointer("/spec/serviceAccountName")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .unwrap_or("default");
        if runs_as != sa {
            // Upstream's text names only the requested account, not the pod's.
            return Err(Status::bad_request(format!(
                "cannot bind token for serviceaccount {} to pod running with different serviceaccount name.",
                crd_core::field::go_quote(sa)
            ))
            .into());
        }
    }
    let uid = obj
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("");
    let want = b.get("uid").and_then(Value::as_str).unwrap_or("");
    if !want.is_empty() && want != uid {
        return Err(Status::conflict(
            &gr,
            name,
            &format!(
                "the UID in the bound object reference ({want}) does not match the UID in record. The object might have been deleted and then recreated"
            ),
        )
        .into());
    }
    let node = match obj.pointer("/spec/nodeName").and_then(Value::as_str) {
        // A missing node is no error: the node is information in the token, not a binding.
        Some(node) if kind == "Pod" && !node.is_empty() => store
            .get(&format!("/registry/minions/{node}"))
            .await
            .ok()
            .flatten()
            .and_then(|kv| serde_json::from_slice::<Value>(&kv.value).ok())
            .map(|n| {
                let uid = n.pointer("/metadata/uid").and_then(Value::as_str);
                (node.to_string(), uid.unwrap_or("").to_string())
            }),
        _ => None,
    };
    Ok(crate::serviceaccount::BoundObject {
        kind: kind.into(),
        name: name.into(),
        uid: uid.into(),
        node,
    })
}
