//! Escalation prevention on RBAC writes (`pkg/registry/rbac/{role,clusterrole,rolebinding,
//! clusterrolebinding}/policybased` and `validation.ConfirmNoEscalation`): a user may write a
//! Role or `ClusterRole` only with every permission it grants (or the `escalate` verb on it),
//! and a binding only with every permission of the role it binds (or the `bind` verb on that
//! role). Members of `system:masters` are exempt; updates that only touch what the garbage
//! collector changes (owner references, finalizers) are exempt.

use std::collections::BTreeSet;

use crd_core::{GroupResource, Status};
use serde_json::Value;

use super::rules::{PolicyRule, compact, covers, go_quote_list};
use super::{GROUP, RbacKind, aggregate};
use crate::auth::User;
use crate::authz::{Attributes, Authorizer, PRIVILEGED_GROUP};

/// The write being checked.
#[derive(Clone, Copy, Debug)]
pub struct Write<'a> {
    /// Which RBAC kind.
    pub kind: RbacKind,
    /// The request's namespace ("" for cluster-scoped kinds).
    pub namespace: &'a str,
    /// The object's name.
    pub name: &'a str,
}

/// Everything the object says minus what only the garbage collector and the server change.
fn without_gc_fields(obj: &Value) -> Value {
    let mut o = obj.clone();
    if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in [
            "ownerReferences",
            "finalizers",
            "managedFields",
            "resourceVersion",
            "generation",
        ] {
            m.remove(k);
        }
    }
    o
}

fn allowed(
    authorizer: &Authorizer,
    user: &User,
    verb: &str,
    resource: &str,
    ns: &str,
    name: &str,
) -> bool {
    authorizer
        .authorize_blocking(
            user,
            &Attributes::Resource {
                verb: verb.into(),
                group: GROUP.into(),
                version: String::new(),
                resource: resource.into(),
                namespace: (!ns.is_empty()).then(|| ns.to_string()),
                name: Some(name.to_string()),
            },
        )
        .allowed
}

/// `ConfirmNoEscalation`: `Err(message)` when the user's rules in `namespace` do not cover
/// `rules`.
pub fn confirm_no_escalation(
    authorizer: &Authorizer,
    user: &User,
    namespace: &str,
    rules: &[PolicyRule],
) -> Result<(), String> {
    let (owner, errors) = authorizer.resolver().read(|p| p.rules_for(user, namespace));
    let (ok, missing) = covers(&owner, rules);
    if ok {
        return Ok(());
    }
    let described: BTreeSet<String> = compact(&missing)
        .iter()
        .map(PolicyRule::compact_string)
        .collect();
    let mut msg = format!(
        "user {} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        crd_core::field::go_quote(&user.name),
        go_quote_list(&user.groups),
        described.into_iter().collect::<Vec<_>>().join("\n")
    );
    if !errors.is_empty() {
        msg = format!("{msg}; resolution errors: [{}]", aggregate(&errors));
    }
    Err(msg)
}

fn full_authority() -> Vec<PolicyRule> {
    vec![
        PolicyRule::resource(&["*"], &["*"], &["*"]),
        PolicyRule::non_resource(&["*"], &["*"]),
    ]
}

fn has_aggregation(obj: Option<&Value>) -> bool {
    obj.and_then(|o| o.get("aggregationRule"))
        .is_some_and(|a| !a.is_null())
}

/// Checks a create (`old` is `None`) or update of an RBAC object by `user`; the 403 is
/// upstream's.
pub fn guard(
    authorizer: &Authorizer,
    user: &User,
    write: Write<'_>,
    new: &Value,
    old: Option<&Value>,
) -> Result<(), Box<Status>> {
    if user.groups.iter().any(|g| g == PRIVILEGED_GROUP) {
        return Ok(());
    }
    if let Some(old) = old
        && without_gc_fields(old) == without_gc_fields(new)
    {
        return Ok(());
    }
    let gr = GroupResource::new(GROUP, write.kind.resource());
    let forbidden = |msg: &str| Box::new(Status::forbidden(&gr, write.name, msg));
    match write.kind {
        RbacKind::Role | RbacKind::ClusterRole => {
            if allowed(
                authorizer,
                user,
                "escalate",
                write.kind.resource(),
                write.namespace,
                write.name,
            ) {
                return Ok(());
            }
            confirm_no_escalation(
                authorizer,
                user,
                write.namespace,
                &PolicyRule::list_from(new),
            )
            .map_err(|m| forbidden(&m))?;
            if write.kind == RbacKind::ClusterRole
                && (has_aggregation(Some(new)) || has_aggregation(old))
                && confirm_no_escalation(authorizer, user, write.namespace, &full_authority())
                    .is_err()
            {
                return Err(forbidden(
                    "must have cluster-admin privileges to use the aggregationRule",
                ));
            }
            Ok(())
        }
        RbacKind::RoleBinding | RbacKind::ClusterRoleBinding => {
            let text = |p: &str| new.pointer(p).and_then(Value::as_str).unwrap_or("");
            let (role_kind, role_name) = (text("/roleRef/kind"), text("/roleRef/name"));
            let role_resource = match role_kind {
                "Role" => Some("roles"),
                "ClusterRole" => Some("clusterroles"),
                _ => None,
            };
            if let Some(resource) = role_resource
                && text("/roleRef/apiGroup") == GROUP
                && allowed(
                    authorizer,
                    user,
                    "bind",
                    resource,
                    write.namespace,
                    role_name,
                )
            {
                return Ok(());
            }
            // A missing role is the registry's NotFound, as upstream's resolver reads roles
            // through their storage here (not the lister the authorizer's reasons name).
            let rules = authorizer
                .resolver()
                .read(|p| p.role_reference_rules(role_kind, role_name, write.namespace))
                .map_err(|e| match role_resource {
                    Some(resource) => Box::new(Status::not_found(
                        &GroupResource::new(GROUP, resource),
                        role_name,
                    )),
                    None => forbidden(&e),
                })?;
            confirm_no_escalation(authorizer, user, write.namespace, &rules)
                .map_err(|m| forbidden(&m))
        }
    }
}
