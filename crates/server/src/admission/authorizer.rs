//! The `authorizer` variable of admission expressions (policy validations, variables, match
//! conditions; webhook `matchConditions`): the server's own [`crate::authz::Authorizer`] asked
//! for the requesting user (or `serviceAccount(ns, name)`), as upstream binds
//! `library.NewAuthorizerVal(userInfo, authorizer)` in `plugin/cel`.
//!
//! Main types: [`SharedAuthorizer`] (the server's authorizer, set once at start-up) and
//! [`RequestAuthorizer`] (one request's user, answering `crd_cel`'s checks).

use std::sync::{Arc, OnceLock};

use crate::auth::User;
use crate::authz;

use super::Attributes;

/// The server's authorizer, shared by the admission plugins; set once by `run` after the
/// `--authorization-mode` union is built. Until then (and in tests that never set it) every
/// check is allowed, as `AppState`'s default authorizer allows everything.
#[derive(Default)]
pub struct SharedAuthorizer(OnceLock<Arc<authz::Authorizer>>);

impl SharedAuthorizer {
    /// Sets the authorizer (a second call is ignored: the union does not change at run time).
    pub fn set(&self, authorizer: authz::Authorizer) {
        let _ = self.0.set(Arc::new(authorizer));
    }

    fn get(&self) -> Arc<authz::Authorizer> {
        self.0
            .get_or_init(|| Arc::new(authz::Authorizer::allow_all()))
            .clone()
    }

    /// The `authorizer` value for one request: its user, and its resource for
    /// `authorizer.requestResource`.
    pub fn for_request(&self, attrs: &Attributes<'_>) -> crd_cel::Authorizer {
        let request = crd_cel::AuthzCheck {
            group: attrs.request.group.clone(),
            resource: attrs.request.resource.clone(),
            subresource: attrs.subresource.to_string(),
            namespace: attrs.namespace.clone(),
            name: attrs.name.clone(),
            ..crd_cel::AuthzCheck::default()
        };
        crd_cel::Authorizer::new(
            Arc::new(RequestAuthorizer {
                authorizer: self.get(),
                user: attrs.user.clone(),
            }),
            Some(request),
        )
    }
}

/// Answers an expression's checks for one user.
pub struct RequestAuthorizer {
    authorizer: Arc<authz::Authorizer>,
    user: User,
}

/// `serviceaccount.ServiceAccountInfo.UserInfo()`: the account's user name and its two groups.
fn service_account_user(namespace: &str, name: &str) -> User {
    User {
        name: format!("system:serviceaccount:{namespace}:{name}"),
        uid: String::new(),
        groups: vec![
            "system:serviceaccounts".into(),
            format!("system:serviceaccounts:{namespace}"),
        ],
        extra: std::collections::BTreeMap::default(),
    }
}

/// The authorizer's attributes of a check (`AttributesRecord`: a resource check carries
/// `resource/subresource`, the namespace and name when given).
fn attributes(check: &crd_cel::AuthzCheck) -> authz::Attributes {
    if let Some(path) = &check.path {
        return authz::Attributes::NonResource {
            verb: check.verb.clone(),
            path: path.clone(),
        };
    }
    let non_empty = |s: &str| (!s.is_empty()).then(|| s.to_string());
    authz::Attributes::Resource {
        verb: check.verb.clone(),
        group: check.group.clone(),
        // Upstream's CEL authorizer asks for every version.
        version: "*".into(),
        resource: if check.subresource.is_empty() {
            check.resource.clone()
        } else {
            format!("{}/{}", check.resource, check.subresource)
        },
        namespace: non_empty(&check.namespace),
        name: non_empty(&check.name),
    }
}

impl crd_cel::Authorize for RequestAuthorizer {
    fn authorize(&self, check: &crd_cel::AuthzCheck) -> crd_cel::AuthzDecision {
        let sa;
        let user = match &check.service_account {
            Some((ns, name)) => {
                sa = service_account_user(ns, name);
                &sa
            }
            None => &self.user,
        };
        let d = self.authorizer.authorize_blocking(user, &attributes(check));
        crd_cel::AuthzDecision {
            allowed: d.allowed,
            reason: d.reason,
            error: (!d.error.is_empty()).then_some(d.error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_become_authorizer_attributes() {
        // (check, attributes)
        let cases = [
            (
                crd_cel::AuthzCheck {
                    group: "apps".into(),
                    resource: "deployments".into(),
                    subresource: "scale".into(),
                    namespace: "prod".into(),
                    name: "web".into(),
                    verb: "update".into(),
                    ..crd_cel::AuthzCheck::default()
                },
                authz::Attributes::Resource {
                    verb: "update".into(),
                    group: "apps".into(),
                    version: "*".into(),
                    resource: "deployments/scale".into(),
                    namespace: Some("prod".into()),
                    name: Some("web".into()),
                },
            ),
            (
                crd_cel::AuthzCheck {
                    resource: "nodes".into(),
                    verb: "list".into(),
                    ..crd_cel::AuthzCheck::default()
                },
                authz::Attributes::Resource {
                    verb: "list".into(),
                    group: String::new(),
                    version: "*".into(),
                    resource: "nodes".into(),
                    namespace: None,
                    name: None,
                },
            ),
            (
                crd_cel::AuthzCheck {
                    path: Some("/healthz".into()),
                    verb: "get".into(),
                    ..crd_cel::AuthzCheck::default()
                },
                authz::Attributes::NonResource {
                    verb: "get".into(),
                    path: "/healthz".into(),
                },
            ),
        ];
        for (check, want) in cases {
            assert_eq!(attributes(&check), want, "{check:?}");
        }
        let sa = service_account_user("ci", "builder");
        assert_eq!(sa.name, "system:serviceaccount:ci:builder");
        assert_eq!(
            sa.groups,
            ["system:serviceaccounts", "system:serviceaccounts:ci"]
        );
    }
}
