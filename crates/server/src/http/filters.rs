//! The request filters that run before any handler, in kube-apiserver's order: authentication
//! (bearer token, then client certificate), then authorization of the request's attributes.
//!
//! Architecture Invariant: every request except the public health and version endpoints is
//! authenticated and then authorized exactly once, here, before any handler runs.

use crd_core::Status;
use http::{Method, header};

use crate::auth::User;
use crate::authz::{Attributes, Authorizer};
use crate::request::route::Route;
use crate::state::AppState;

/// Authenticates a request: a bearer token wins over a client certificate, as in kube-apiserver's
/// union authenticator (tokens are checked first). Authenticated users gain
/// `system:authenticated`.
pub fn authenticate(
    state: &AppState,
    headers: &http::HeaderMap,
    cert_user: Option<&User>,
) -> Result<User, Box<Status>> {
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let user = state
        .auth
        .authenticate(authorization)
        .or(cert_user)
        .ok_or_else(|| Box::new(Status::unauthorized()))?;
    let mut user = user.clone();
    user.groups.push("system:authenticated".into());
    Ok(user)
}

/// The identity of a request to a public endpoint (health, version) that was not
/// authenticated, as kube-apiserver's anonymous authenticator names it.
pub fn anonymous() -> User {
    User {
        name: "system:anonymous".into(),
        uid: String::new(),
        groups: vec!["system:unauthenticated".into()],
    }
}

/// Authorizes an authenticated user's request, with Kubernetes' 403 on denial.
pub fn authorize(
    state: &AppState,
    user: &User,
    method: &Method,
    path: &str,
    route: &Route,
) -> Result<(), Box<Status>> {
    let attrs = attributes(method, path, route);
    if state.authorizer.allowed(user, &attrs) {
        Ok(())
    } else {
        Err(Box::new(Authorizer::denial(user, &attrs)))
    }
}

/// The authorizer's view of a request.
pub fn attributes(method: &Method, path: &str, route: &Route) -> Attributes {
    match route {
        Route::Resource(r) => Attributes::Resource {
            verb: r.verb.as_str().to_string(),
            group: r.group.clone(),
            resource: match &r.subresource {
                Some(sub) => format!("{}/{sub}", r.resource),
                None => r.resource.clone(),
            },
            namespace: r.namespace.clone(),
            name: r.name.clone(),
        },
        _ => Attributes::NonResource {
            verb: method.as_str().to_ascii_lowercase(),
            path: path.to_string(),
        },
    }
}
