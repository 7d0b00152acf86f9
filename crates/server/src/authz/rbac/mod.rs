//! The RBAC authorizer (`--authorization-mode=RBAC`), as kube-apiserver's
//! `plugin/pkg/auth/authorizer/rbac` with `pkg/registry/rbac/validation`'s rule resolver: the
//! rules that apply to a user in a namespace are those of the `ClusterRoles` bound by
//! `ClusterRoleBindings` naming the user, one of its groups or (for
//! `system:serviceaccount:<ns>:<name>`) its service account, then those of the Roles and
//! `ClusterRoles` bound by `RoleBindings` in the namespace.
//!
//! The objects are held in memory ([`Policy`]), fed by a controller's informers
//! (`controllers::rbac`), with bindings indexed by subject so a decision costs what the user's
//! own bindings cost, not what the store holds.
//!
//! Main items: [`RbacAuthorizer`] (decisions, `rules_for`, role-reference lookups), [`rules`]
//! (pure rule matching and coverage), [`bootstrap`] (the default `ClusterRoles` and bindings),
//! [`escalation`] (refusing grants of permissions the writer lacks).
//!
//! Architecture Invariant: until the informers have synced, RBAC has no opinion (the union
//! authorizer denies everyone but `system:masters`), so no request is allowed from a partial
//! view of the policy.

pub mod aggregation;
pub mod bootstrap;
pub mod escalation;
pub mod rules;

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use serde_json::Value;

use self::rules::{PolicyRule, Request};
use super::{Attributes, Decision};
use crate::auth::User;

/// The RBAC API group.
pub const GROUP: &str = "rbac.authorization.k8s.io";

/// The four RBAC object kinds the policy holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RbacKind {
    /// `Role`.
    Role,
    /// `ClusterRole`.
    ClusterRole,
    /// `RoleBinding`.
    RoleBinding,
    /// `ClusterRoleBinding`.
    ClusterRoleBinding,
}

impl RbacKind {
    /// Every kind, in the order the controller follows them.
    pub const ALL: [RbacKind; 4] = [
        RbacKind::ClusterRole,
        RbacKind::Role,
        RbacKind::ClusterRoleBinding,
        RbacKind::RoleBinding,
    ];

    /// The resource (plural).
    pub fn resource(self) -> &'static str {
        match self {
            RbacKind::Role => "roles",
            RbacKind::ClusterRole => "clusterroles",
            RbacKind::RoleBinding => "rolebindings",
            RbacKind::ClusterRoleBinding => "clusterrolebindings",
        }
    }

    /// kube-apiserver's etcd key root.
    pub fn key_root(self) -> &'static str {
        match self {
            RbacKind::Role => "/registry/roles",
            RbacKind::ClusterRole => "/registry/clusterroles",
            RbacKind::RoleBinding => "/registry/rolebindings",
            RbacKind::ClusterRoleBinding => "/registry/clusterrolebindings",
        }
    }

    /// The kind of a resource name.
    pub fn from_resource(resource: &str) -> Option<Self> {
        RbacKind::ALL.into_iter().find(|k| k.resource() == resource)
    }
}

/// A binding's subject.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Subject {
    /// `User`, `Group` or `ServiceAccount` (anything else never applies).
    pub kind: String,
    /// The name.
    pub name: String,
    /// The service account's namespace ("" for the binding's).
    pub namespace: String,
}

/// A `RoleBinding` or `ClusterRoleBinding` as the authorizer needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    /// The binding's name.
    pub name: String,
    /// The binding's namespace ("" for a `ClusterRoleBinding`).
    pub namespace: String,
    /// `roleRef.kind`.
    pub role_kind: String,
    /// `roleRef.name`.
    pub role_name: String,
    /// `subjects`.
    pub subjects: Vec<Subject>,
}

fn text<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

impl Binding {
    /// Reads a binding object.
    pub fn from_json(obj: &Value) -> Self {
        let subjects = obj
            .get("subjects")
            .and_then(Value::as_array)
            .map(|subs| {
                subs.iter()
                    .map(|s| Subject {
                        kind: text(s, "/kind").to_string(),
                        name: text(s, "/name").to_string(),
                        namespace: text(s, "/namespace").to_string(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        Binding {
            name: text(obj, "/metadata/name").to_string(),
            namespace: text(obj, "/metadata/namespace").to_string(),
            role_kind: text(obj, "/roleRef/kind").to_string(),
            role_name: text(obj, "/roleRef/name").to_string(),
            subjects,
        }
    }
}

/// The index key of a subject: who a binding names.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum SubjectKey {
    User(String),
    Group(String),
    /// (namespace, name).
    ServiceAccount(String, String),
}

impl SubjectKey {
    /// The key of a subject of a binding in `namespace` ("" for cluster bindings: a service
    /// account without a namespace then names nobody).
    fn of(s: &Subject, namespace: &str) -> Option<Self> {
        match s.kind.as_str() {
            "User" => Some(SubjectKey::User(s.name.clone())),
            "Group" => Some(SubjectKey::Group(s.name.clone())),
            "ServiceAccount" => {
                let ns = if s.namespace.is_empty() {
                    namespace
                } else {
                    &s.namespace
                };
                (!ns.is_empty()).then(|| SubjectKey::ServiceAccount(ns.to_string(), s.name.clone()))
            }
            _ => None,
        }
    }

    /// Every key a user is named by: its name, its groups, its service account.
    fn of_user(user: &User) -> Vec<Self> {
        let mut keys = vec![SubjectKey::User(user.name.clone())];
        keys.extend(user.groups.iter().map(|g| SubjectKey::Group(g.clone())));
        if let Some((ns, name)) = service_account_of(&user.name) {
            keys.push(SubjectKey::ServiceAccount(ns.to_string(), name.to_string()));
        }
        keys
    }
}

/// `system:serviceaccount:<namespace>:<name>` → (namespace, name).
pub fn service_account_of(user: &str) -> Option<(&str, &str)> {
    let rest = user.strip_prefix("system:serviceaccount:")?;
    let (ns, name) = rest.split_once(':')?;
    (!ns.is_empty() && !name.is_empty() && !name.contains(':')).then_some((ns, name))
}

/// `appliesToUser`: whether a subject of a binding in `namespace` names the user.
pub fn applies_to(user: &User, s: &Subject, namespace: &str) -> bool {
    match s.kind.as_str() {
        "User" => user.name == s.name,
        "Group" => user.groups.contains(&s.name),
        "ServiceAccount" => {
            let ns = if s.namespace.is_empty() {
                namespace
            } else {
                &s.namespace
            };
            !ns.is_empty() && service_account_of(&user.name) == Some((ns, s.name.as_str()))
        }
        _ => false,
    }
}

/// Where a rule came from, as upstream's describers print it
/// (`ClusterRoleBinding "x" of ClusterRole "y" to User "z"`).
#[derive(Clone, Copy, Debug)]
pub struct Source<'a> {
    /// The binding.
    pub binding: &'a Binding,
    /// The subject that named the user.
    pub subject: &'a Subject,
}

impl fmt::Display for Source<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let q = crd_core::field::go_quote;
        let b = self.binding;
        let subject = if self.subject.kind == "ServiceAccount" {
            let ns = if self.subject.namespace.is_empty() {
                &b.namespace
            } else {
                &self.subject.namespace
            };
            format!(
                "{} {}",
                self.subject.kind,
                q(&format!("{}/{ns}", self.subject.name))
            )
        } else {
            format!("{} {}", self.subject.kind, q(&self.subject.name))
        };
        if b.namespace.is_empty() {
            write!(
                f,
                "ClusterRoleBinding {} of {} {} to {subject}",
                q(&b.name),
                b.role_kind,
                q(&b.role_name)
            )
        } else {
            write!(
                f,
                "RoleBinding {} of {} {} to {subject}",
                q(&format!("{}/{}", b.name, b.namespace)),
                b.role_kind,
                q(&b.role_name)
            )
        }
    }
}

/// The RBAC objects in memory, with bindings indexed by subject.
#[derive(Debug, Default)]
pub struct Policy {
    roles: HashMap<(String, String), Arc<Vec<PolicyRule>>>,
    cluster_roles: HashMap<String, Arc<Vec<PolicyRule>>>,
    cluster_role_bindings: HashMap<String, Arc<Binding>>,
    role_bindings: HashMap<(String, String), Arc<Binding>>,
    /// Subject → names of the `ClusterRoleBindings` naming it.
    cluster_by_subject: HashMap<SubjectKey, BTreeSet<String>>,
    /// (namespace, subject) → names of the `RoleBindings` there naming it.
    namespaced_by_subject: HashMap<(String, SubjectKey), BTreeSet<String>>,
}

fn ns_name(obj: &Value) -> (String, String) {
    (
        text(obj, "/metadata/namespace").to_string(),
        text(obj, "/metadata/name").to_string(),
    )
}

impl Policy {
    /// Adds or replaces an object of `kind`.
    pub fn upsert(&mut self, kind: RbacKind, obj: &Value) {
        let (ns, name) = ns_name(obj);
        match kind {
            RbacKind::Role => {
                self.roles
                    .insert((ns, name), Arc::new(PolicyRule::list_from(obj)));
            }
            RbacKind::ClusterRole => {
                self.cluster_roles
                    .insert(name, Arc::new(PolicyRule::list_from(obj)));
            }
            RbacKind::RoleBinding | RbacKind::ClusterRoleBinding => {
                self.remove(kind, &ns, &name);
                let mut b = Binding::from_json(obj);
                if kind == RbacKind::ClusterRoleBinding {
                    b.namespace.clear();
                }
                for s in &b.subjects {
                    let Some(key) = SubjectKey::of(s, &b.namespace) else {
                        continue;
                    };
                    if kind == RbacKind::ClusterRoleBinding {
                        self.cluster_by_subject
                            .entry(key)
                            .or_default()
                            .insert(name.clone());
                    } else {
                        self.namespaced_by_subject
                            .entry((ns.clone(), key))
                            .or_default()
                            .insert(name.clone());
                    }
                }
                if kind == RbacKind::ClusterRoleBinding {
                    self.cluster_role_bindings.insert(name, Arc::new(b));
                } else {
                    self.role_bindings.insert((ns, name), Arc::new(b));
                }
            }
        }
    }

    /// Removes an object of `kind`.
    pub fn remove(&mut self, kind: RbacKind, namespace: &str, name: &str) {
        let key = (namespace.to_string(), name.to_string());
        match kind {
            RbacKind::Role => {
                self.roles.remove(&key);
            }
            RbacKind::ClusterRole => {
                self.cluster_roles.remove(name);
            }
            RbacKind::ClusterRoleBinding => {
                if let Some(b) = self.cluster_role_bindings.remove(name) {
                    for s in &b.subjects {
                        if let Some(k) = SubjectKey::of(s, "")
                            && let Some(set) = self.cluster_by_subject.get_mut(&k)
                        {
                            set.remove(name);
                            if set.is_empty() {
                                self.cluster_by_subject.remove(&k);
                            }
                        }
                    }
                }
            }
            RbacKind::RoleBinding => {
                if let Some(b) = self.role_bindings.remove(&key) {
                    for s in &b.subjects {
                        if let Some(k) = SubjectKey::of(s, namespace) {
                            let k = (namespace.to_string(), k);
                            if let Some(set) = self.namespaced_by_subject.get_mut(&k) {
                                set.remove(name);
                                if set.is_empty() {
                                    self.namespaced_by_subject.remove(&k);
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// `GetRoleReferenceRules`: the rules of a binding's role, or the lister's not-found text.
    pub fn role_reference_rules(
        &self,
        role_kind: &str,
        role_name: &str,
        namespace: &str,
    ) -> Result<Arc<Vec<PolicyRule>>, String> {
        let q = crd_core::field::go_quote;
        match role_kind {
            "Role" => self
                .roles
                .get(&(namespace.to_string(), role_name.to_string()))
                .cloned()
                .ok_or_else(|| format!("role.{GROUP} {} not found", q(role_name))),
            "ClusterRole" => self
                .cluster_roles
                .get(role_name)
                .cloned()
                .ok_or_else(|| format!("clusterrole.{GROUP} {} not found", q(role_name))),
            other => Err(format!("unsupported role reference kind: {}", q(other))),
        }
    }

    /// The bindings naming the user (cluster bindings, then those in `namespace`), each with
    /// its first subject that applies, in name order.
    fn bindings_for<'a>(&'a self, user: &User, namespace: &str) -> Vec<Source<'a>> {
        let keys = SubjectKey::of_user(user);
        let mut out = Vec::new();
        let mut names: BTreeSet<&String> = BTreeSet::new();
        for k in &keys {
            if let Some(set) = self.cluster_by_subject.get(k) {
                names.extend(set);
            }
        }
        for n in names {
            if let Some(b) = self.cluster_role_bindings.get(n)
                && let Some(s) = b.subjects.iter().find(|s| applies_to(user, s, ""))
            {
                out.push(Source {
                    binding: b,
                    subject: s,
                });
            }
        }
        if !namespace.is_empty() {
            let mut names: BTreeSet<&String> = BTreeSet::new();
            for k in keys {
                if let Some(set) = self.namespaced_by_subject.get(&(namespace.to_string(), k)) {
                    names.extend(set);
                }
            }
            for n in names {
                if let Some(b) = self.role_bindings.get(&(namespace.to_string(), n.clone()))
                    && let Some(s) = b.subjects.iter().find(|s| applies_to(user, s, namespace))
                {
                    out.push(Source {
                        binding: b,
                        subject: s,
                    });
                }
            }
        }
        out
    }

    /// `VisitRulesFor`: calls `visit` with each rule that applies to the user in `namespace`
    /// (and its source), or with each resolution error; stops when `visit` returns false.
    pub fn visit_rules_for(
        &self,
        user: &User,
        namespace: &str,
        mut visit: impl FnMut(Option<Source<'_>>, Option<&PolicyRule>, Option<String>) -> bool,
    ) {
        for src in self.bindings_for(user, namespace) {
            let b = src.binding;
            match self.role_reference_rules(&b.role_kind, &b.role_name, &b.namespace) {
                Err(e) => {
                    if !visit(None, None, Some(e)) {
                        return;
                    }
                }
                Ok(rules) => {
                    for r in rules.iter() {
                        if !visit(Some(src), Some(r), None) {
                            return;
                        }
                    }
                }
            }
        }
    }

    /// `RulesFor`: every rule that applies to the user in `namespace`, and the resolution
    /// errors met.
    pub fn rules_for(&self, user: &User, namespace: &str) -> (Vec<PolicyRule>, Vec<String>) {
        let (mut rules, mut errors) = (Vec::new(), Vec::new());
        self.visit_rules_for(user, namespace, |_, r, e| {
            if let Some(r) = r {
                rules.push(r.clone());
            }
            if let Some(e) = e {
                errors.push(e);
            }
            true
        });
        (rules, errors)
    }

    /// The decision for a request, with upstream's reasons: `RBAC: allowed by <source>` or,
    /// when denied after resolution errors, `RBAC: <errors>`.
    pub fn authorize(&self, user: &User, attrs: &Attributes) -> Decision {
        let req = attrs.rule_request();
        let mut reason = None;
        let mut errors = Vec::new();
        self.visit_rules_for(user, attrs.namespace(), |src, rule, err| {
            if let (Some(src), Some(rule)) = (src, rule)
                && rules::rule_allows(&req, rule)
            {
                reason = Some(format!("RBAC: allowed by {src}"));
                return false;
            }
            if let Some(e) = err {
                errors.push(e);
            }
            true
        });
        match reason {
            Some(r) => Decision::allow(r),
            None if errors.is_empty() => Decision::deny(""),
            None => Decision::deny(format!("RBAC: {}", aggregate(&errors))),
        }
    }

    /// How many objects of each kind are held (roles, cluster roles, role bindings, cluster
    /// role bindings).
    pub fn len(&self) -> [usize; 4] {
        [
            self.roles.len(),
            self.cluster_roles.len(),
            self.role_bindings.len(),
            self.cluster_role_bindings.len(),
        ]
    }
}

/// `utilerrors.NewAggregate(...).Error()`: one message as is, several as `[a, b]`.
pub fn aggregate(errors: &[String]) -> String {
    let mut seen = BTreeSet::new();
    let unique: Vec<&String> = errors.iter().filter(|e| seen.insert(*e)).collect();
    match unique.as_slice() {
        [one] => (*one).clone(),
        many => format!(
            "[{}]",
            many.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The RBAC authorizer: the [`Policy`] behind a lock, and whether its informers have synced.
#[derive(Debug, Default)]
pub struct RbacAuthorizer {
    policy: RwLock<Policy>,
    synced: AtomicBool,
}

impl RbacAuthorizer {
    /// An empty, unsynced authorizer.
    pub fn new() -> Arc<Self> {
        Arc::new(RbacAuthorizer::default())
    }

    /// Reads the policy.
    pub fn read<R>(&self, f: impl FnOnce(&Policy) -> R) -> R {
        let guard = self
            .policy
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&guard)
    }

    /// Changes the policy (the controller's informers call this).
    pub fn write<R>(&self, f: impl FnOnce(&mut Policy) -> R) -> R {
        let mut guard = self
            .policy
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut guard)
    }

    /// Empties the policy and marks it incomplete (a restarted controller lists again).
    pub fn reset(&self) {
        self.synced.store(false, Ordering::Release);
        self.write(|p| *p = Policy::default());
    }

    /// Marks the policy complete: every informer has delivered its first list.
    pub fn set_synced(&self) {
        self.synced.store(true, Ordering::Release);
    }

    /// Whether the policy is complete.
    pub fn has_synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }

    /// The decision for a request (no opinion before sync).
    pub fn authorize(&self, user: &User, attrs: &Attributes) -> Decision {
        if !self.has_synced() {
            return Decision::deny("");
        }
        self.read(|p| p.authorize(user, attrs))
    }
}

impl Attributes {
    /// The request as rule matching sees it (resource and subresource split).
    pub fn rule_request(&self) -> Request<'_> {
        match self {
            Attributes::Resource {
                verb,
                group,
                resource,
                name,
                ..
            } => {
                let (resource, subresource) =
                    resource.split_once('/').unwrap_or((resource.as_str(), ""));
                Request::Resource {
                    verb,
                    group,
                    resource,
                    subresource,
                    name: name.as_deref().unwrap_or(""),
                }
            }
            Attributes::NonResource { verb, path } => Request::NonResource { verb, path },
        }
    }
}

#[cfg(test)]
mod tests;
