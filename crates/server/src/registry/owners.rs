//! Ownership metadata: `metadata.ownerReferences` as typed [`OwnerRef`]s, the two finalizers of
//! garbage collection ([`ORPHAN_FINALIZER`], [`FOREGROUND_FINALIZER`]), and the delete step every
//! kind shares ([`prepare_delete`]): a DELETE's `propagationPolicy` becomes those finalizers
//! (upstream's `deletionFinalizersForGarbageCollection` in the generic registry store), then the
//! strategy decides whether the object goes now or is marked.
//!
//! Architecture Invariant: the delete handler and the garbage collector decide how an object is
//! deleted through [`prepare_delete`] alone, so a DELETE and a cascading deletion treat
//! finalizers, propagation policies and strategies the same way.

use serde_json::Value;

use super::{DeleteOutcome, Strategy, meta};
pub use crate::request::options::PropagationPolicy;

/// The finalizer that makes the garbage collector orphan an object's dependents before it goes.
pub const ORPHAN_FINALIZER: &str = "orphan";

/// The finalizer that makes the garbage collector delete an object's blocking dependents before
/// it goes (foreground deletion).
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

/// What a kind's objects do with their dependents when a DELETE names no policy (upstream's
/// `rest.GarbageCollectionPolicy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GcPolicy {
    /// Dependents are deleted in the background (the default of nearly every kind).
    DeleteDependents,
    /// Dependents are orphaned (legacy defaults of a few built-in versions).
    OrphanDependents,
    /// The kind takes no part in garbage collection: no finalizer is ever added.
    Unsupported,
}

/// One entry of `metadata.ownerReferences`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OwnerRef {
    /// `apiVersion` of the owner.
    pub api_version: String,
    /// `kind` of the owner.
    pub kind: String,
    /// `name` of the owner (in the dependent's namespace when the owner is namespaced).
    pub name: String,
    /// `uid` of the owner: what the reference really points at.
    pub uid: String,
    /// Whether the owner is the managing controller.
    pub controller: bool,
    /// Whether a foreground deletion of the owner waits for this dependent.
    pub block_owner_deletion: bool,
}

impl OwnerRef {
    /// The API group of the owner (the part of `apiVersion` before `/`; "" for core).
    pub fn group(&self) -> &str {
        group_of(&self.api_version)
    }

    fn parse(v: &Value) -> Option<OwnerRef> {
        let s = |f: &str| v.get(f).and_then(Value::as_str).map(String::from);
        let b = |f: &str| v.get(f).and_then(Value::as_bool).unwrap_or(false);
        Some(OwnerRef {
            api_version: s("apiVersion").unwrap_or_default(),
            kind: s("kind").unwrap_or_default(),
            name: s("name").unwrap_or_default(),
            uid: s("uid").filter(|u| !u.is_empty())?,
            controller: b("controller"),
            block_owner_deletion: b("blockOwnerDeletion"),
        })
    }
}

/// The API group of an `apiVersion` ("" for the core group's `v1`).
pub fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// The object's owner references (entries without a `uid` are skipped: they own nothing).
pub fn owner_references(obj: &Value) -> Vec<OwnerRef> {
    // `get` twice, not `pointer`: a pointer is parsed (and its tokens unescaped into new
    // strings) on every call, and the garbage collector reads this on every write it observes.
    obj.get("metadata")
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .map(|refs| refs.iter().filter_map(OwnerRef::parse).collect())
        .unwrap_or_default()
}

/// Removes the owner references to any of `uids`; returns whether any went. The field is removed
/// when no reference is left.
pub fn remove_owner_references(obj: &mut Value, uids: &[&str]) -> bool {
    let m = meta::meta_mut(obj);
    let Some(Value::Array(refs)) = m.get_mut("ownerReferences") else {
        return false;
    };
    let before = refs.len();
    refs.retain(|r| {
        !r.get("uid")
            .and_then(Value::as_str)
            .is_some_and(|u| uids.contains(&u))
    });
    let removed = refs.len() != before;
    if refs.is_empty() {
        m.remove("ownerReferences");
    }
    removed
}

/// Sets `blockOwnerDeletion: false` on every reference that blocks (upstream's
/// `unblockOwnerReferences`, which breaks foreground cycles); returns whether any changed.
pub fn unblock_owner_references(obj: &mut Value) -> bool {
    let m = meta::meta_mut(obj);
    let Some(Value::Array(refs)) = m.get_mut("ownerReferences") else {
        return false;
    };
    let mut changed = false;
    for r in refs.iter_mut() {
        if r.get("blockOwnerDeletion") == Some(&Value::Bool(true)) {
            r["blockOwnerDeletion"] = Value::Bool(false);
            changed = true;
        }
    }
    changed
}

/// Whether the object carries `finalizer`.
pub fn has_finalizer(obj: &Value, finalizer: &str) -> bool {
    meta::finalizers(obj).iter().any(|f| f == finalizer)
}

/// Whether deletion is pending and waits for the garbage collector to delete dependents.
pub fn deleting_dependents(obj: &Value) -> bool {
    meta::is_deleting(obj) && has_finalizer(obj, FOREGROUND_FINALIZER)
}

/// Whether deletion is pending and waits for the garbage collector to orphan dependents.
pub fn orphaning_dependents(obj: &Value) -> bool {
    meta::is_deleting(obj) && has_finalizer(obj, ORPHAN_FINALIZER)
}

/// The finalizers a DELETE with `policy` leaves on `obj`, or `None` when they do not change
/// (upstream's `deletionFinalizersForGarbageCollection`): both GC finalizers are dropped, then
/// `orphan` is added when dependents are to be orphaned and `foregroundDeletion` when they are to
/// be deleted first. Without a policy, a GC finalizer already present decides, then the kind's
/// default.
pub fn deletion_finalizers(
    obj: &Value,
    policy: Option<PropagationPolicy>,
    default: GcPolicy,
) -> Option<Vec<String>> {
    if default == GcPolicy::Unsupported {
        return None;
    }
    let current = meta::finalizers(obj);
    let present = current
        .iter()
        .find(|f| *f == ORPHAN_FINALIZER || *f == FOREGROUND_FINALIZER)
        .map(String::as_str);
    let (orphan, foreground) = match (policy, present) {
        (Some(PropagationPolicy::Orphan), _) | (None, Some(ORPHAN_FINALIZER)) => (true, false),
        (Some(PropagationPolicy::Foreground), _) | (None, Some(_)) => (false, true),
        (Some(PropagationPolicy::Background), _) => (false, false),
        (None, None) => (default == GcPolicy::OrphanDependents, false),
    };
    let mut next: Vec<String> = current
        .iter()
        .filter(|f| *f != ORPHAN_FINALIZER && *f != FOREGROUND_FINALIZER)
        .cloned()
        .collect();
    if orphan {
        next.push(ORPHAN_FINALIZER.into());
    }
    if foreground {
        next.push(FOREGROUND_FINALIZER.into());
    }
    let same = next.len() == current.len() && next.iter().all(|f| current.contains(f));
    (!same).then_some(next)
}

/// Prepares `obj` for a DELETE with `policy` and the requested grace period, and says whether
/// it goes now (upstream's `rest.BeforeDelete` and the store's `Delete`):
/// - a graceful deletion already pending (a grace period left) may only be shortened, and
///   otherwise leaves the object as it is, its GC finalizers included;
/// - the GC finalizers the policy asks for are set;
/// - a kind that deletes gracefully ([`Strategy::grace_period`]) starts a deletion of that many
///   seconds when it is more than 0;
/// - otherwise the strategy decides ([`Strategy::before_delete`], or
///   [`Strategy::ready_to_remove`] for an object whose deletion is already pending).
pub fn prepare_delete(
    strategy: &dyn Strategy,
    obj: &mut Value,
    policy: Option<PropagationPolicy>,
    grace_period: Option<i64>,
) -> DeleteOutcome {
    let pending = meta::deletion_grace_period(obj);
    if meta::is_deleting(obj) && pending > 0 && strategy.grace_period(obj, None).is_some() {
        match grace_period {
            Some(p) if p < pending => meta::shorten_grace_period(obj, p),
            _ => return DeleteOutcome::Graceful,
        }
        if meta::deletion_grace_period(obj) > 0 || !meta::finalizers(obj).is_empty() {
            return DeleteOutcome::Graceful;
        }
        return DeleteOutcome::Immediate;
    }
    if let Some(finalizers) = deletion_finalizers(obj, policy, strategy.gc_policy()) {
        meta::set_finalizers(obj, &finalizers);
    }
    if meta::is_deleting(obj) {
        return if strategy.ready_to_remove(obj) {
            DeleteOutcome::Immediate
        } else {
            DeleteOutcome::Graceful
        };
    }
    match strategy.grace_period(obj, grace_period) {
        Some(p) if p > 0 => {
            meta::mark_deleting_gracefully(obj, p);
            DeleteOutcome::Graceful
        }
        _ => strategy.before_delete(obj),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn deletion_finalizers_follow_policy_then_finalizers_then_default() {
        use GcPolicy::{DeleteDependents, OrphanDependents, Unsupported};
        use PropagationPolicy::{Background, Foreground, Orphan};
        // (finalizers before, policy, kind default, finalizers after or null when unchanged)
        let cases = [
            (
                json!([]),
                Some(Foreground),
                DeleteDependents,
                json!(["foregroundDeletion"]),
            ),
            (json!([]), Some(Orphan), DeleteDependents, json!(["orphan"])),
            (json!([]), Some(Background), DeleteDependents, json!(null)),
            (json!([]), None, DeleteDependents, json!(null)),
            (json!([]), None, OrphanDependents, json!(["orphan"])),
            (json!([]), Some(Background), OrphanDependents, json!(null)),
            (
                json!(["a/b"]),
                Some(Foreground),
                DeleteDependents,
                json!(["a/b", "foregroundDeletion"]),
            ),
            (
                json!(["orphan", "a/b"]),
                Some(Foreground),
                DeleteDependents,
                json!(["a/b", "foregroundDeletion"]),
            ),
            (
                json!(["foregroundDeletion"]),
                Some(Orphan),
                DeleteDependents,
                json!(["orphan"]),
            ),
            (
                json!(["foregroundDeletion"]),
                Some(Background),
                DeleteDependents,
                json!([]),
            ),
            (
                json!(["foregroundDeletion"]),
                None,
                OrphanDependents,
                json!(null),
            ),
            (json!(["orphan"]), None, DeleteDependents, json!(null)),
            (
                json!(["orphan"]),
                Some(Orphan),
                DeleteDependents,
                json!(null),
            ),
            (json!([]), Some(Foreground), Unsupported, json!(null)),
        ];
        for (before, policy, default, after) in cases {
            let obj = json!({"metadata": {"finalizers": before}});
            let got = deletion_finalizers(&obj, policy, default);
            let want: Option<Vec<String>> = serde_json::from_value(after.clone()).unwrap();
            assert_eq!(got, want, "{before} {policy:?} {default:?}");
        }
    }

    #[test]
    fn owner_references_parse_remove_and_unblock() {
        let mut obj = json!({"metadata": {"ownerReferences": [
            {"apiVersion": "g.io/v1", "kind": "A", "name": "a", "uid": "u1",
             "controller": true, "blockOwnerDeletion": true},
            {"apiVersion": "v1", "kind": "B", "name": "b", "uid": "u2"},
            {"apiVersion": "v1", "kind": "C", "name": "c"},
        ]}});
        let refs = owner_references(&obj);
        assert_eq!(refs.len(), 2);
        assert_eq!(refs[0].group(), "g.io");
        assert!(refs[0].controller && refs[0].block_owner_deletion);
        assert_eq!(refs[1].group(), "");
        assert!(unblock_owner_references(&mut obj));
        assert_eq!(
            obj["metadata"]["ownerReferences"][0]["blockOwnerDeletion"],
            false
        );
        assert!(!unblock_owner_references(&mut obj));
        assert!(remove_owner_references(&mut obj, &["u1", "x"]));
        assert_eq!(owner_references(&obj).len(), 1);
        assert!(!remove_owner_references(&mut obj, &["u1"]));
        let mut only = json!({"metadata": {"ownerReferences": [{"uid": "u"}]}});
        assert!(remove_owner_references(&mut only, &["u"]));
        assert_eq!(only, json!({"metadata": {}}));
    }
}
