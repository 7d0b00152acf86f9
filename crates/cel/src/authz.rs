//! The Kubernetes authorizer library at run time (apiserver `pkg/cel/library/authz.go`, with
//! `AuthzSelectors`): the `authorizer` variable of admission expressions, its builder chain
//! (`group(g).resource(r).subresource(s).namespace(ns).name(n)`, `fieldSelector`,
//! `labelSelector`, `path(p)`, `serviceAccount(ns, name)`), `check(verb)` and the decision's
//! `allowed()`, `reason()`, `errored()`, `error()`, plus `authorizer.requestResource` (the
//! request's own resource). The checks themselves are answered by the caller's [`Authorize`]:
//! this crate does no authorization and no IO.
//!
//! The type checker declares the same functions (`checker/decls.rs`, `k8s_authz`); lowering
//! rewrites `authorizer.requestResource` to a call of [`REQUEST_RESOURCE`].

use std::fmt;
use std::sync::Arc;

use kube_cel::cel::objects::Opaque;
use kube_cel::cel::{Context, ExecutionError, FunctionContext, ResolveResult, Value};

/// cel-go's cost of one `check` call (apiserver `library/cost.go`: "allow for only two
/// authorization checks per expression").
pub(crate) const CHECK_COST: u64 = 350_000;

/// The internal function `authorizer.requestResource` is lowered to.
pub(crate) const REQUEST_RESOURCE: &str = "@authzRequestResource";

/// One authorization question an expression asks (`authorizer.AttributesRecord`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuthzCheck {
    /// `serviceAccount(namespace, name)`: ask for that account instead of the request's user.
    pub service_account: Option<(String, String)>,
    /// `path(p)`: a non-resource check; `None` for resource checks.
    pub path: Option<String>,
    /// The API group (`group(g)`).
    pub group: String,
    /// The resource (`resource(r)`).
    pub resource: String,
    /// `subresource(s)`.
    pub subresource: String,
    /// `namespace(ns)`.
    pub namespace: String,
    /// `name(n)`.
    pub name: String,
    /// `fieldSelector(s)` (unparsed).
    pub field_selector: String,
    /// `labelSelector(s)` (unparsed).
    pub label_selector: String,
    /// The verb `check` was called with.
    pub verb: String,
}

/// The answer to an [`AuthzCheck`] (`decisionVal`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuthzDecision {
    /// `allowed()`: the authorizer allowed the request.
    pub allowed: bool,
    /// `reason()`.
    pub reason: String,
    /// `error()` (`errored()` is whether there is one).
    pub error: Option<String>,
}

/// Answers the checks of an expression's `authorizer`, for the user of the request being
/// admitted (the server binds its authorizer and the request's user).
pub trait Authorize: Send + Sync {
    /// Decides one check.
    fn authorize(&self, check: &AuthzCheck) -> AuthzDecision;
}

/// The value of the `authorizer` variable: who answers, and the request's own resource for
/// `authorizer.requestResource`.
#[derive(Clone)]
pub struct Authorizer {
    answer: Arc<dyn Authorize>,
    request: Option<AuthzCheck>,
}

impl fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Authorizer")
            .field("request", &self.request)
            .finish_non_exhaustive()
    }
}

impl Authorizer {
    /// An authorizer answered by `answer`; `request` is the request's resource (group,
    /// resource, subresource, namespace, name) that `authorizer.requestResource` starts from.
    pub fn new(answer: Arc<dyn Authorize>, request: Option<AuthzCheck>) -> Self {
        Authorizer { answer, request }
    }

    pub(crate) fn value(&self) -> Value {
        Value::Opaque(Arc::new(AuthzValue {
            answer: self.answer.clone(),
            request: self.request.clone().map(Arc::new),
            check: AuthzCheck::default(),
            stage: Stage::Authorizer,
        }))
    }
}

/// Where a value is in the builder chain; each stage is one of upstream's CEL types.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Stage {
    Authorizer,
    Path,
    Group,
    Resource,
    Decision(AuthzDecision),
}

impl Stage {
    fn type_name(&self) -> &'static str {
        match self {
            Stage::Authorizer => "kubernetes.authorization.Authorizer",
            Stage::Path => "kubernetes.authorization.PathCheck",
            Stage::Group => "kubernetes.authorization.GroupCheck",
            Stage::Resource => "kubernetes.authorization.ResourceCheck",
            Stage::Decision(_) => "kubernetes.authorization.Decision",
        }
    }
}

#[derive(Clone)]
struct AuthzValue {
    answer: Arc<dyn Authorize>,
    request: Option<Arc<AuthzCheck>>,
    check: AuthzCheck,
    stage: Stage,
}

impl fmt::Debug for AuthzValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(self.stage.type_name())
            .field("check", &self.check)
            .finish_non_exhaustive()
    }
}

impl PartialEq for AuthzValue {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.answer, &other.answer)
            && self.check == other.check
            && self.stage == other.stage
    }
}

impl Eq for AuthzValue {}

impl Opaque for AuthzValue {
    fn runtime_type_name(&self) -> &str {
        self.stage.type_name()
    }
}

impl AuthzValue {
    fn next(&self, stage: Stage, edit: impl FnOnce(&mut AuthzCheck)) -> Value {
        let mut v = self.clone();
        v.stage = stage;
        edit(&mut v.check);
        Value::Opaque(Arc::new(v))
    }
}

/// The receiver of a member call, at one of the `stages`.
fn receiver(ftx: &FunctionContext, stages: &[&str]) -> Result<AuthzValue, ExecutionError> {
    match &ftx.this {
        Some(Value::Opaque(o)) => match o.downcast_ref::<AuthzValue>() {
            Some(v) if stages.contains(&v.stage.type_name()) => Ok(v.clone()),
            _ => Err(ExecutionError::NoSuchOverload),
        },
        _ => Err(ExecutionError::NoSuchOverload),
    }
}

fn string_arg(ftx: &FunctionContext, i: usize) -> Result<String, ExecutionError> {
    let e = ftx
        .args
        .get(i)
        .ok_or(ExecutionError::MissingArgumentOrTarget)?;
    match ftx.ptx.resolve(e)? {
        Value::String(s) => Ok(s.to_string()),
        _ => Err(ExecutionError::NoSuchOverload),
    }
}

const AUTHORIZER: &str = "kubernetes.authorization.Authorizer";
const PATH: &str = "kubernetes.authorization.PathCheck";
const GROUP: &str = "kubernetes.authorization.GroupCheck";
const RESOURCE: &str = "kubernetes.authorization.ResourceCheck";
const DECISION: &str = "kubernetes.authorization.Decision";

/// `ValidateServiceAccountName` / `ValidateNamespaceName`: DNS-1123 subdomain and label.
fn valid_subdomain(s: &str) -> bool {
    crd_core::validation::is_dns1123_subdomain(s).is_empty()
}

fn valid_label(s: &str) -> bool {
    crd_core::validation::is_dns1123_label(s).is_empty()
}

/// Sets one field of a resource check (`subresource`, `namespace`, ...).
type Setter = fn(&mut AuthzCheck, String);
/// Reads one accessor of a decision (`allowed`, `reason`, ...).
type Read = fn(&AuthzDecision) -> Value;

/// Registers the library's functions in the evaluation context.
pub(crate) fn register(ctx: &mut Context<'static>) {
    ctx.add_function("path", |ftx: &FunctionContext| -> ResolveResult {
        let v = receiver(ftx, &[AUTHORIZER])?;
        let path = string_arg(ftx, 0)?;
        if path.trim().is_empty() {
            return Err(ftx.error("path must not be empty"));
        }
        Ok(v.next(Stage::Path, |c| c.path = Some(path)))
    });
    ctx.add_function("group", |ftx: &FunctionContext| -> ResolveResult {
        let v = receiver(ftx, &[AUTHORIZER])?;
        let group = string_arg(ftx, 0)?;
        Ok(v.next(Stage::Group, |c| c.group = group))
    });
    ctx.add_function("serviceAccount", |ftx: &FunctionContext| -> ResolveResult {
        let v = receiver(ftx, &[AUTHORIZER])?;
        let (namespace, name) = (string_arg(ftx, 0)?, string_arg(ftx, 1)?);
        if !valid_subdomain(&name) {
            return Err(ftx.error("Invalid service account name"));
        }
        if !valid_label(&namespace) {
            return Err(ftx.error("Invalid service account namespace"));
        }
        Ok(v.next(Stage::Authorizer, |c| {
            *c = AuthzCheck {
                service_account: Some((namespace, name)),
                ..AuthzCheck::default()
            };
        }))
    });
    ctx.add_function("resource", |ftx: &FunctionContext| -> ResolveResult {
        let v = receiver(ftx, &[GROUP])?;
        let resource = string_arg(ftx, 0)?;
        if resource.trim().is_empty() {
            return Err(ftx.error("resource must not be empty"));
        }
        Ok(v.next(Stage::Resource, |c| c.resource = resource))
    });
    let setters: [(&str, Setter); 5] = [
        ("subresource", |c, s| c.subresource = s),
        ("namespace", |c, s| c.namespace = s),
        ("name", |c, s| c.name = s),
        ("fieldSelector", |c, s| c.field_selector = s),
        ("labelSelector", |c, s| c.label_selector = s),
    ];
    for (name, set) in setters {
        ctx.add_function(name, move |ftx: &FunctionContext| -> ResolveResult {
            let v = receiver(ftx, &[RESOURCE])?;
            let s = string_arg(ftx, 0)?;
            Ok(v.next(Stage::Resource, |c| set(c, s)))
        });
    }
    ctx.add_function("check", |ftx: &FunctionContext| -> ResolveResult {
        let v = receiver(ftx, &[PATH, RESOURCE])?;
        let mut check = v.check.clone();
        check.verb = string_arg(ftx, 0)?;
        let decision = v.answer.authorize(&check);
        Ok(v.next(Stage::Decision(decision), |c| *c = check))
    });
    let readers: [(&str, Read); 4] = [
        ("allowed", |d| Value::Bool(d.allowed)),
        ("reason", |d| Value::String(Arc::new(d.reason.clone()))),
        ("errored", |d| Value::Bool(d.error.is_some())),
        ("error", |d| {
            Value::String(Arc::new(d.error.clone().unwrap_or_default()))
        }),
    ];
    for (name, read) in readers {
        ctx.add_function(name, move |ftx: &FunctionContext| -> ResolveResult {
            let v = receiver(ftx, &[DECISION])?;
            match &v.stage {
                Stage::Decision(d) => Ok(read(d)),
                _ => Err(ExecutionError::NoSuchOverload),
            }
        });
    }
    ctx.add_function(REQUEST_RESOURCE, |ftx: &FunctionContext| -> ResolveResult {
        let e = ftx
            .args
            .first()
            .ok_or(ExecutionError::MissingArgumentOrTarget)?;
        let Value::Opaque(o) = ftx.ptx.resolve(e)? else {
            return Err(ExecutionError::NoSuchKey(Arc::new(
                "requestResource".into(),
            )));
        };
        let Some(v) = o
            .downcast_ref::<AuthzValue>()
            .filter(|v| v.stage == Stage::Authorizer)
        else {
            return Err(ExecutionError::NoSuchKey(Arc::new(
                "requestResource".into(),
            )));
        };
        let Some(request) = v.request.clone() else {
            return Err(ExecutionError::NoSuchKey(Arc::new(
                "requestResource".into(),
            )));
        };
        Ok(v.next(Stage::Resource, |c| {
            *c = AuthzCheck {
                service_account: c.service_account.take(),
                ..(*request).clone()
            };
        }))
    });
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use serde_json::{Value as Json, json};

    use super::*;
    use crate::{Bindings, Expression, ExpressionError};

    /// Allows `get` on anything in group "" and `get` on `/healthz`; records every check.
    #[derive(Default)]
    struct Fake {
        seen: Mutex<Vec<AuthzCheck>>,
    }

    impl Authorize for Fake {
        fn authorize(&self, check: &AuthzCheck) -> AuthzDecision {
            self.seen.lock().unwrap().push(check.clone());
            let allowed = check.verb == "get"
                && (check.path.as_deref() == Some("/healthz")
                    || (check.path.is_none() && check.group.is_empty()));
            AuthzDecision {
                allowed,
                reason: if allowed { "ok".into() } else { "nope".into() },
                error: None,
            }
        }
    }

    fn check(group: &str, resource: &str, verb: &str) -> AuthzCheck {
        AuthzCheck {
            group: group.into(),
            resource: resource.into(),
            verb: verb.into(),
            ..AuthzCheck::default()
        }
    }

    #[test]
    fn builder_chain_checks_and_decisions() {
        let request = AuthzCheck {
            group: "apps".into(),
            resource: "deployments".into(),
            subresource: "scale".into(),
            namespace: "prod".into(),
            name: "web".into(),
            ..AuthzCheck::default()
        };
        // (expression, result, the check the authorizer saw last)
        let cases: Vec<(&str, Result<Json, ExpressionError>, Option<AuthzCheck>)> = vec![
            (
                "authorizer.group('').resource('pods').check('get').allowed()",
                Ok(json!(true)),
                Some(check("", "pods", "get")),
            ),
            (
                "authorizer.group('apps').resource('deployments').check('get').allowed()",
                Ok(json!(false)),
                Some(check("apps", "deployments", "get")),
            ),
            (
                "authorizer.group('').resource('pods').check('delete').reason()",
                Ok(json!("nope")),
                Some(check("", "pods", "delete")),
            ),
            (
                "authorizer.group('').resource('pods').check('get').errored()",
                Ok(json!(false)),
                Some(check("", "pods", "get")),
            ),
            (
                "authorizer.group('').resource('pods').check('get').error()",
                Ok(json!("")),
                Some(check("", "pods", "get")),
            ),
            (
                "authorizer.group('').resource('pods').subresource('log').namespace('ns').name('p').fieldSelector('spec.nodeName=n').labelSelector('a=b').check('get').allowed()",
                Ok(json!(true)),
                Some(AuthzCheck {
                    subresource: "log".into(),
                    namespace: "ns".into(),
                    name: "p".into(),
                    field_selector: "spec.nodeName=n".into(),
                    label_selector: "a=b".into(),
                    ..check("", "pods", "get")
                }),
            ),
            (
                "authorizer.path('/healthz').check('get').allowed()",
                Ok(json!(true)),
                Some(AuthzCheck {
                    path: Some("/healthz".into()),
                    verb: "get".into(),
                    ..AuthzCheck::default()
                }),
            ),
            (
                "authorizer.serviceAccount('default', 'builder').group('').resource('pods').check('list').allowed()",
                Ok(json!(false)),
                Some(AuthzCheck {
                    service_account: Some(("default".into(), "builder".into())),
                    ..check("", "pods", "list")
                }),
            ),
            (
                "authorizer.requestResource.check('update').allowed()",
                Ok(json!(false)),
                Some(AuthzCheck {
                    verb: "update".into(),
                    ..request.clone()
                }),
            ),
            (
                "authorizer.requestResource.name('other').check('get').reason()",
                Ok(json!("nope")),
                Some(AuthzCheck {
                    name: "other".into(),
                    verb: "get".into(),
                    ..request.clone()
                }),
            ),
            (
                "authorizer.path(' ').check('get').allowed()",
                Err(ExpressionError::Runtime("path must not be empty".into())),
                None,
            ),
            (
                "authorizer.group('').resource('').check('get').allowed()",
                Err(ExpressionError::Runtime(
                    "resource must not be empty".into(),
                )),
                None,
            ),
            (
                "authorizer.serviceAccount('default', 'Bad_Name').group('').resource('pods').check('get').allowed()",
                Err(ExpressionError::Runtime(
                    "Invalid service account name".into(),
                )),
                None,
            ),
            (
                "authorizer.serviceAccount('Bad.NS', 'sa').group('').resource('pods').check('get').allowed()",
                Err(ExpressionError::Runtime(
                    "Invalid service account namespace".into(),
                )),
                None,
            ),
            // Two checks fit the per-call limit; a third does not (350000 each).
            (
                "authorizer.group('').resource('a').check('get').allowed() && authorizer.group('').resource('b').check('get').allowed()",
                Ok(json!(true)),
                Some(check("", "b", "get")),
            ),
            (
                "authorizer.group('').resource('a').check('get').allowed() && authorizer.group('').resource('b').check('get').allowed() && authorizer.group('').resource('c').check('get').allowed()",
                Err(ExpressionError::CostLimit),
                Some(check("", "c", "get")),
            ),
        ];
        for (src, want, seen) in cases {
            let fake = Arc::new(Fake::default());
            let mut b = Bindings::new(&[]);
            b.set_authorizer(
                "authorizer",
                &Authorizer::new(fake.clone(), Some(request.clone())),
            );
            let e = Expression::compile_value(src, &["authorizer"])
                .unwrap_or_else(|e| panic!("{src}: {e}"));
            assert_eq!(e.eval_with(&b, 1_000_000), want, "{src}");
            assert_eq!(fake.seen.lock().unwrap().last(), seen.as_ref(), "{src}");
        }
    }

    #[test]
    fn a_null_authorizer_fails_like_a_missing_one() {
        let e = Expression::compile_bool(
            "authorizer.group('').resource('pods').check('get').allowed()",
            &["authorizer"],
        )
        .unwrap();
        let got = e.eval_bool(&[("authorizer", &Json::Null)], 1_000_000);
        assert_eq!(
            got,
            Err(ExpressionError::Runtime("no such overload".into()))
        );
    }
}
