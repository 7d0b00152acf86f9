//! What the garbage collector does with one object, once each of its owner references has been
//! classified (upstream's `attemptToDeleteItem` after `classifyReferences`, and
//! `processDeletingDependentsItem`). Pure: the I/O lives in the controller.

use serde_json::Value;

use super::graph::Graph;
use crate::registry::owners::{self, OwnerRef, PropagationPolicy};

/// What an owner reference points at, as far as a dependent is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// The owner exists (and is not waiting for its dependents).
    Solid,
    /// No object with this uid exists where the reference points (not found, another uid at
    /// that name, or a namespaced owner in another namespace).
    Dangling,
    /// The owner exists and is being deleted in the foreground: it waits for its dependents.
    WaitingForDependents,
}

/// The verdict on one object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Nothing to do.
    None,
    /// Remove the owner references to these uids (dangling ones and owners that wait).
    RemoveReferences(Vec<String>),
    /// Delete the object with this propagation policy; first set `blockOwnerDeletion: false` on
    /// its references when `unblock` (to break a foreground cycle).
    Delete {
        /// The propagation policy of the delete.
        policy: PropagationPolicy,
        /// Unblock the object's own owner references first.
        unblock: bool,
    },
}

/// Decides about an object whose references are classified in `classes` (one per reference of
/// `latest`). `dependents` are the uids of the object's own dependents.
pub fn attempt(
    latest: &Value,
    refs: &[OwnerRef],
    classes: &[Owner],
    graph: &Graph,
    dependents: &[String],
) -> Action {
    if refs.is_empty() {
        return Action::None;
    }
    let pick = |want: Owner| {
        refs.iter()
            .zip(classes)
            .filter(move |(_, c)| **c == want)
            .map(|(r, _)| r.uid.clone())
    };
    let solid = pick(Owner::Solid).count();
    let waiting: Vec<String> = pick(Owner::WaitingForDependents).collect();
    if solid > 0 {
        let mut remove: Vec<String> = pick(Owner::Dangling).collect();
        remove.extend(waiting);
        return if remove.is_empty() {
            Action::None
        } else {
            Action::RemoveReferences(remove)
        };
    }
    if !waiting.is_empty() && !dependents.is_empty() {
        // An owner waits and this object has dependents of its own: delete it in the
        // foreground too, unblocking its references when a dependent also waits (a cycle).
        let unblock = dependents
            .iter()
            .any(|d| graph.node(d).is_some_and(|n| n.deleting_dependents));
        return Action::Delete {
            policy: PropagationPolicy::Foreground,
            unblock,
        };
    }
    let policy = if owners::has_finalizer(latest, owners::ORPHAN_FINALIZER) {
        PropagationPolicy::Orphan
    } else if owners::has_finalizer(latest, owners::FOREGROUND_FINALIZER) {
        PropagationPolicy::Foreground
    } else {
        PropagationPolicy::Background
    };
    Action::Delete {
        policy,
        unblock: false,
    }
}
