//! The ownership graph (upstream's `GraphBuilder` and `uidToNode`): every observed object by
//! `uid` ([`Node`]: identity, storage key, owner references, deletion state) and, apart from the
//! nodes, the reverse index owner `uid` → dependent `uid`s. Informer changes go in
//! ([`Graph::upsert`], [`Graph::remove`]); the [`Work`] they call for comes out.
//!
//! The index of dependents is kept from the dependents' own references, whether or not the owner
//! has been observed, so an owner seen late (its informer is behind, or it does not exist) still
//! finds every dependent that names it. An unobserved owner is upstream's "virtual node".
//!
//! Architecture Invariant: the graph is pure (no I/O, no clock): the same changes in give the same
//! work out, so its behaviour is tested with literal objects.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

use crate::registry::meta;
use crate::registry::owners::{self, OwnerRef};

/// What the garbage collector must do about one object (by `uid`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Work {
    /// Check the object (upstream's `attemptToDelete`): delete it when every owner is gone, remove
    /// its dangling references when some remain; for an owner deleting its dependents, wait for
    /// them and then remove `foregroundDeletion`.
    Attempt(String),
    /// Orphan the object's dependents, then remove its `orphan` finalizer (upstream's
    /// `attemptToOrphan`).
    Orphan(String),
}

/// Where an object was seen: its kind's group and kind, and whether the kind is namespaced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kind {
    /// The API group.
    pub group: String,
    /// The kind.
    pub kind: String,
    /// Whether objects of the kind live in namespaces.
    pub namespaced: bool,
}

/// One observed object.
#[derive(Clone, Debug)]
pub struct Node {
    /// `metadata.uid`.
    pub uid: String,
    /// Its kind.
    pub kind: Kind,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace` ("" when cluster-scoped).
    pub namespace: String,
    /// The storage key.
    pub key: String,
    /// Its owner references, as last observed.
    pub owners: Vec<OwnerRef>,
    /// `deletionTimestamp` is set.
    pub being_deleted: bool,
    /// Being deleted with the `foregroundDeletion` finalizer: waits for its dependents.
    pub deleting_dependents: bool,
    /// Being deleted with the `orphan` finalizer.
    pub orphaning: bool,
}

impl Node {
    /// Whether `r` (a reference some dependent holds to this node's uid) names this node by its
    /// coordinates (group, kind and name; the version may differ).
    pub fn matches(&self, r: &OwnerRef) -> bool {
        r.kind == self.kind.kind && r.group() == self.kind.group && r.name == self.name
    }

    /// Whether this node can own an object in `namespace`: cluster-scoped owners own objects
    /// anywhere, namespaced owners only objects of their own namespace.
    pub fn can_own_in(&self, namespace: &str) -> bool {
        !self.kind.namespaced || self.namespace == namespace
    }
}

/// The graph. See the module documentation.
#[derive(Debug, Default)]
pub struct Graph {
    nodes: HashMap<String, Node>,
    dependents: HashMap<String, BTreeSet<String>>,
}

impl Graph {
    /// The observed object with this uid.
    pub fn node(&self, uid: &str) -> Option<&Node> {
        self.nodes.get(uid)
    }

    /// The uids of the objects that name `uid` as an owner.
    pub fn dependents(&self, uid: &str) -> Vec<String> {
        self.dependents
            .get(uid)
            .map(|d| d.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The dependents a foreground deletion of `uid` waits for: those whose reference to it has
    /// `blockOwnerDeletion: true`.
    pub fn blocking_dependents(&self, uid: &str) -> Vec<String> {
        self.dependents(uid)
            .into_iter()
            .filter(|d| {
                self.nodes.get(d).is_some_and(|n| {
                    n.owners
                        .iter()
                        .any(|r| r.uid == uid && r.block_owner_deletion)
                })
            })
            .collect()
    }

    /// How many objects are observed.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether nothing is observed.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The uids of the observed objects whose keys start with `prefix`.
    pub fn uids_under(&self, prefix: &str) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|(_, n)| n.key.starts_with(prefix))
            .map(|(u, _)| u.clone())
            .collect()
    }

    /// An object of `kind` at `key` was added or changed (`old` is the previous object, if the
    /// informer had one). Returns the work it calls for (upstream's `processGraphChanges` for add
    /// and update events, with `processTransitions`).
    pub fn upsert(
        &mut self,
        kind: &Kind,
        key: &str,
        old: Option<&Value>,
        new: &Value,
    ) -> Vec<Work> {
        let uid = meta::uid(new).to_string();
        if uid.is_empty() {
            return Vec::new();
        }
        let mut work = Vec::new();
        let refs = owners::owner_references(new);
        let node = Node {
            uid: uid.clone(),
            kind: kind.clone(),
            name: meta::name(new).to_string(),
            namespace: meta::namespace(new).to_string(),
            key: key.to_string(),
            owners: refs.clone(),
            being_deleted: meta::is_deleting(new),
            deleting_dependents: owners::deleting_dependents(new),
            orphaning: owners::orphaning_dependents(new),
        };
        let previous = self.nodes.insert(uid.clone(), node);
        let before = previous.as_ref().map_or(&[][..], |n| n.owners.as_slice());
        let (added, removed, unblocked) = diff_references(before, &refs);
        // An owner waiting for its dependents may no longer have to wait for this one.
        for r in removed.iter().chain(&unblocked) {
            if self
                .nodes
                .get(&r.uid)
                .is_some_and(|o| o.deleting_dependents)
            {
                work.push(Work::Attempt(r.uid.clone()));
            }
        }
        for r in &removed {
            if !refs.iter().any(|x| x.uid == r.uid)
                && let Some(deps) = self.dependents.get_mut(&r.uid)
            {
                deps.remove(&uid);
                if deps.is_empty() {
                    self.dependents.remove(&r.uid);
                }
            }
        }
        let mut verify_self = false;
        for r in &added {
            self.dependents
                .entry(r.uid.clone())
                .or_default()
                .insert(uid.clone());
            // An owner not (yet) observed, or observed with other coordinates or in another
            // namespace, is verified by a live read when this object is attempted.
            let node = &self.nodes[&uid];
            match self.nodes.get(&r.uid) {
                Some(owner) if owner.matches(r) && owner.can_own_in(&node.namespace) => {}
                _ => verify_self = true,
            }
        }
        if previous.is_none() {
            // A newly observed owner: dependents that named it with other coordinates or from
            // another namespace are verified (the bad child, then good parent, order).
            let node = &self.nodes[&uid];
            for dep in self.dependents(&uid) {
                let wrong = self.nodes.get(&dep).is_some_and(|d| {
                    !node.can_own_in(&d.namespace)
                        || d.owners.iter().any(|r| r.uid == uid && !node.matches(r))
                });
                if wrong {
                    work.push(Work::Attempt(dep));
                }
            }
        }
        if verify_self {
            work.push(Work::Attempt(uid.clone()));
        }
        // Transitions into waiting for the garbage collector.
        let was = |f: fn(&Value) -> bool| old.is_some_and(f);
        if owners::orphaning_dependents(new) && !was(owners::orphaning_dependents) {
            work.push(Work::Orphan(uid));
        } else if owners::deleting_dependents(new) && !was(owners::deleting_dependents) {
            work.extend(self.dependents(&uid).into_iter().map(Work::Attempt));
            work.push(Work::Attempt(uid));
        }
        work
    }

    /// The object with this uid is gone (deleted, or its resource is no longer served). Returns
    /// the work it calls for: its dependents are attempted (their owner may be gone), and so are
    /// its owners that wait for their dependents.
    pub fn remove(&mut self, uid: &str) -> Vec<Work> {
        let Some(node) = self.nodes.remove(uid) else {
            return Vec::new();
        };
        let mut work: Vec<Work> = self
            .dependents(uid)
            .into_iter()
            .map(Work::Attempt)
            .collect();
        for r in &node.owners {
            if let Some(deps) = self.dependents.get_mut(&r.uid) {
                deps.remove(uid);
                if deps.is_empty() {
                    self.dependents.remove(&r.uid);
                }
            }
            if self
                .nodes
                .get(&r.uid)
                .is_some_and(|o| o.deleting_dependents)
            {
                work.push(Work::Attempt(r.uid.clone()));
            }
        }
        work
    }
}

/// The references in `new` but not `old` (by uid), those in `old` but not `new`, and those whose
/// `blockOwnerDeletion` went from true to false.
fn diff_references(
    old: &[OwnerRef],
    new: &[OwnerRef],
) -> (Vec<OwnerRef>, Vec<OwnerRef>, Vec<OwnerRef>) {
    let added = new
        .iter()
        .filter(|r| !old.iter().any(|o| o.uid == r.uid))
        .cloned()
        .collect();
    let removed = old
        .iter()
        .filter(|o| !new.iter().any(|r| r.uid == o.uid))
        .cloned()
        .collect();
    let unblocked = new
        .iter()
        .filter(|r| {
            !r.block_owner_deletion && old.iter().any(|o| o.uid == r.uid && o.block_owner_deletion)
        })
        .cloned()
        .collect();
    (added, removed, unblocked)
}
