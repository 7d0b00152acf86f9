//! CRD naming: which names a CRD may have accepted (upstream's naming controller,
//! `calculateNamesAndConditions`, plus the establishing controller), as the pure function
//! [`desired_status`], and the [`NameIndex`] of the names every CRD holds, so that a conflict
//! check costs a few hash lookups instead of a scan of every CRD.
//!
//! Architecture Invariant: reconciling one CRD's names is O(its own names), whatever the number
//! of CRDs; only a release of names (a deletion, a rename) revisits the CRDs of one group.

use std::collections::{BTreeSet, HashMap};

use crd_storage::Revision;
use serde_json::{Value, json};

use crate::registry::{conditions, meta};

/// The names one CRD holds, as recorded in the index.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Held {
    group: String,
    revision: Option<Revision>,
    resources: BTreeSet<String>,
    kinds: BTreeSet<String>,
}

/// The accepted names of every CRD, by group: who holds each resource name (plural, singular,
/// short names) and each kind (kind, listKind).
#[derive(Debug, Default)]
pub struct NameIndex {
    held: HashMap<String, Held>,
    /// group → resource name → CRDs holding it.
    resources: HashMap<String, HashMap<String, BTreeSet<String>>>,
    /// group → kind → CRDs holding it.
    kinds: HashMap<String, HashMap<String, BTreeSet<String>>>,
    /// group → CRDs of the group.
    groups: HashMap<String, BTreeSet<String>>,
}

/// What [`NameIndex::update`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Update {
    /// The object is older than what the index holds for the CRD; nothing changed.
    Stale,
    /// The CRD's entry was replaced; `released` when it gave up a name another CRD may want.
    Applied {
        /// Whether a name the CRD held is no longer held.
        released: bool,
    },
}

fn accepted_names(crd: &Value) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut resources = BTreeSet::new();
    let mut kinds = BTreeSet::new();
    let Some(a) = crd.pointer("/status/acceptedNames") else {
        return (resources, kinds);
    };
    let non_empty = |f: &str| {
        a.get(f)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(String::from)
    };
    resources.extend(["plural", "singular"].into_iter().filter_map(non_empty));
    resources.extend(
        a.get("shortNames")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(String::from),
    );
    kinds.extend(["kind", "listKind"].into_iter().filter_map(non_empty));
    (resources, kinds)
}

fn group_of(crd: &Value) -> &str {
    crd.pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn holders<'a>(
    map: &'a HashMap<String, HashMap<String, BTreeSet<String>>>,
    group: &str,
    name: &str,
) -> impl Iterator<Item = &'a String> {
    map.get(group)
        .and_then(|g| g.get(name))
        .into_iter()
        .flatten()
}

fn unlink(
    map: &mut HashMap<String, HashMap<String, BTreeSet<String>>>,
    group: &str,
    names: &BTreeSet<String>,
    crd: &str,
) {
    let Some(g) = map.get_mut(group) else { return };
    for name in names {
        if let Some(set) = g.get_mut(name) {
            set.remove(crd);
            if set.is_empty() {
                g.remove(name);
            }
        }
    }
    if g.is_empty() {
        map.remove(group);
    }
}

fn link(
    map: &mut HashMap<String, HashMap<String, BTreeSet<String>>>,
    group: &str,
    names: &BTreeSet<String>,
    crd: &str,
) {
    let g = map.entry(group.to_string()).or_default();
    for name in names {
        g.entry(name.clone()).or_default().insert(crd.to_string());
    }
}

impl NameIndex {
    /// Records the accepted names of a stored CRD (its `metadata.resourceVersion`, when set, must
    /// not be older than the one recorded, or the object is ignored as stale).
    pub fn update(&mut self, crd: &Value) -> Update {
        let name = meta::name(crd).to_string();
        let revision = meta::resource_version(crd).parse::<Revision>().ok();
        if let (
            Some(new),
            Some(Held {
                revision: Some(old),
                ..
            }),
        ) = (revision, self.held.get(&name))
            && new < *old
        {
            return Update::Stale;
        }
        let (resources, kinds) = accepted_names(crd);
        let entry = Held {
            group: group_of(crd).to_string(),
            revision,
            resources,
            kinds,
        };
        let old = self.remove(&name);
        let released = old.is_some_and(|old| {
            old.group != entry.group
                || !old.resources.is_subset(&entry.resources)
                || !old.kinds.is_subset(&entry.kinds)
        });
        link(&mut self.resources, &entry.group, &entry.resources, &name);
        link(&mut self.kinds, &entry.group, &entry.kinds, &name);
        self.groups
            .entry(entry.group.clone())
            .or_default()
            .insert(name.clone());
        self.held.insert(name, entry);
        Update::Applied { released }
    }

    /// Forgets a CRD; returns its group when it was known.
    pub fn forget(&mut self, name: &str) -> Option<String> {
        self.remove(name).map(|h| h.group)
    }

    fn remove(&mut self, name: &str) -> Option<Held> {
        let held = self.held.remove(name)?;
        unlink(&mut self.resources, &held.group, &held.resources, name);
        unlink(&mut self.kinds, &held.group, &held.kinds, name);
        if let Some(members) = self.groups.get_mut(&held.group) {
            members.remove(name);
            if members.is_empty() {
                self.groups.remove(&held.group);
            }
        }
        Some(held)
    }

    /// The names of the CRDs of `group`, in name order.
    pub fn group_members(&self, group: &str) -> impl Iterator<Item = &String> {
        self.groups.get(group).into_iter().flatten()
    }

    /// The names taken in `group` by CRDs other than `except`.
    pub fn taken<'a>(&'a self, group: &'a str, except: &'a str) -> Taken<'a> {
        Taken {
            index: self,
            group,
            except,
        }
    }

    /// How many CRDs the index knows.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// Whether the index knows no CRD.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }
}

/// The names other CRDs of a group hold: what [`desired_status`] may not accept.
#[derive(Clone, Copy, Debug)]
pub struct Taken<'a> {
    index: &'a NameIndex,
    group: &'a str,
    except: &'a str,
}

impl Taken<'_> {
    /// Whether another CRD of the group holds this plural, singular or short name.
    pub fn resource(&self, name: &str) -> bool {
        holders(&self.index.resources, self.group, name).any(|c| c != self.except)
    }

    /// Whether another CRD of the group holds this kind or list kind.
    pub fn kind(&self, name: &str) -> bool {
        holders(&self.index.kinds, self.group, name).any(|c| c != self.except)
    }
}

/// The status a CRD should have: accepted names and the NamesAccepted and Established
/// conditions (upstream `calculateNamesAndConditions` plus the establishing controller).
pub fn desired_status(crd: &Value, taken: &Taken<'_>) -> Value {
    let mut out = crd.clone();
    let requested = crd
        .pointer("/spec/names")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let old = crd
        .pointer("/status/acceptedNames")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut accepted = old.clone();
    let mut reason = "NoConflicts";
    let mut message = String::from("no conflicts found");
    let s = |v: &Value, f: &str| v.get(f).and_then(Value::as_str).unwrap_or("").to_string();
    let mut check = |field: &str, is_taken: &dyn Fn(&str) -> bool, why: &'static str| {
        let want = s(&requested, field);
        if is_taken(&want) && want != s(&old, field) {
            reason = why;
            message = format!("\"{want}\" is already in use");
        } else if !want.is_empty() {
            accepted[field] = Value::String(want);
        }
    };
    let resource = |n: &str| taken.resource(n);
    let kind = |n: &str| taken.kind(n);
    check("plural", &resource, "PluralConflict");
    check("singular", &resource, "SingularConflict");
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let old_short = strings(old.get("shortNames"));
    let want_short = strings(requested.get("shortNames"));
    let short_conflicts: Vec<String> = want_short
        .iter()
        .filter(|n| taken.resource(n) && !old_short.contains(n))
        .map(|n| format!("\"{n}\" is already in use"))
        .collect();
    if short_conflicts.is_empty() {
        if want_short.is_empty() {
            if let Some(m) = accepted.as_object_mut() {
                m.remove("shortNames");
            }
        } else {
            accepted["shortNames"] = json!(want_short);
        }
    } else {
        reason = "ShortNamesConflict";
        message = if short_conflicts.len() == 1 {
            short_conflicts[0].clone()
        } else {
            format!("[{}]", short_conflicts.join(", "))
        };
    }
    let mut check_kind = |field: &str, why: &'static str| {
        let want = s(&requested, field);
        if kind(&want) && want != s(&old, field) {
            reason = why;
            message = format!("\"{want}\" is already in use");
        } else if !want.is_empty() {
            accepted[field] = Value::String(want);
        }
    };
    check_kind("kind", "KindConflict");
    check_kind("listKind", "ListKindConflict");
    match requested.get("categories") {
        Some(c) if c.as_array().is_some_and(|a| !a.is_empty()) => {
            accepted["categories"] = c.clone();
        }
        _ => {
            if let Some(m) = accepted.as_object_mut() {
                m.remove("categories");
            }
        }
    }
    if !out.get("status").is_some_and(Value::is_object) {
        out["status"] = json!({});
    }
    out["status"]["acceptedNames"] = accepted;
    let names_ok = reason == "NoConflicts";
    conditions::set(
        &mut out,
        "NamesAccepted",
        if names_ok { "True" } else { "False" },
        reason,
        &message,
    );
    if conditions::get(&out, "Established") != Some("True") {
        if names_ok {
            conditions::set(
                &mut out,
                "Established",
                "True",
                "InitialNamesAccepted",
                "the initial names have been accepted",
            );
        } else {
            conditions::set(
                &mut out,
                "Established",
                "False",
                "NotAccepted",
                "not all names are accepted",
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(name: &str, plural: &str, kind: &str, short: &[&str], accepted: Option<Value>) -> Value {
        let mut c = json!({"metadata": {"name": format!("{plural}.g.io")}, "spec": {"group": "g.io",
            "names": {"plural": plural, "singular": name, "kind": kind, "listKind": format!("{kind}List"), "shortNames": short}}});
        if let Some(a) = accepted {
            c["status"] = json!({"acceptedNames": a});
        }
        c
    }

    fn condition(obj: &Value, kind: &str) -> Value {
        obj["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == kind)
            .cloned()
            .unwrap_or(Value::Null)
    }

    #[test]
    fn accepts_names_without_conflicts() {
        let c = crd("crontab", "crontabs", "CronTab", &["ct"], None);
        let index = NameIndex::default();
        let out = desired_status(&c, &index.taken("g.io", "crontabs.g.io"));
        assert_eq!(out["status"]["acceptedNames"]["plural"], "crontabs");
        assert_eq!(out["status"]["acceptedNames"]["shortNames"], json!(["ct"]));
        assert_eq!(conditions::get(&out, "NamesAccepted"), Some("True"));
        assert_eq!(conditions::get(&out, "Established"), Some("True"));
    }

    #[test]
    fn conflicting_names_are_not_accepted() {
        let other = crd(
            "other",
            "others",
            "Other",
            &["ct"],
            Some(
                json!({"plural": "others", "singular": "other", "kind": "Other", "listKind": "OtherCollection", "shortNames": ["ct"]}),
            ),
        );
        // Only the kind conflicts: upstream reports the last conflicting name, so keep listKind free.
        let c = crd("crontab", "crontabs", "Other", &["ct"], None);
        let mut index = NameIndex::default();
        index.update(&other);
        let out = desired_status(&c, &index.taken("g.io", "crontabs.g.io"));
        assert_eq!(conditions::get(&out, "NamesAccepted"), Some("False"));
        let cond = condition(&out, "NamesAccepted");
        assert_eq!(cond["reason"], "KindConflict");
        assert_eq!(cond["message"], "\"Other\" is already in use");
        assert_eq!(conditions::get(&out, "Established"), Some("False"));
        assert!(out["status"]["acceptedNames"].get("shortNames").is_none());
    }

    /// Each case: the accepted names other CRDs of `g.io` hold, the requested names, and the
    /// NamesAccepted reason and message expected.
    #[test]
    fn conflict_reasons() {
        let cases = [
            (
                json!({"plural": "crontabs"}),
                "PluralConflict",
                "\"crontabs\" is already in use",
            ),
            (
                json!({"plural": "x", "singular": "crontab"}),
                "SingularConflict",
                "\"crontab\" is already in use",
            ),
            (
                json!({"plural": "x", "shortNames": ["ct"]}),
                "ShortNamesConflict",
                "\"ct\" is already in use",
            ),
            (
                json!({"plural": "x", "shortNames": ["ct", "cr"]}),
                "ShortNamesConflict",
                "[\"ct\" is already in use, \"cr\" is already in use]",
            ),
            (
                json!({"plural": "crontab"}),
                "SingularConflict",
                "\"crontab\" is already in use",
            ),
            (
                json!({"plural": "x", "kind": "CronTabList"}),
                "ListKindConflict",
                "\"CronTabList\" is already in use",
            ),
            (
                json!({"plural": "x", "kind": "Other"}),
                "NoConflicts",
                "no conflicts found",
            ),
        ];
        for (held, reason, message) in cases {
            let other = json!({"metadata": {"name": "other.g.io"}, "spec": {"group": "g.io"},
                "status": {"acceptedNames": held.clone()}});
            let mut index = NameIndex::default();
            index.update(&other);
            // The same names in another group never conflict.
            index.update(
                &json!({"metadata": {"name": "x.h.io"}, "spec": {"group": "h.io"},
                "status": {"acceptedNames": {"plural": "crontabs", "kind": "CronTab"}}}),
            );
            let c = crd("crontab", "crontabs", "CronTab", &["ct", "cr"], None);
            let out = desired_status(&c, &index.taken("g.io", "crontabs.g.io"));
            let cond = condition(&out, "NamesAccepted");
            assert_eq!(
                (cond["reason"].as_str(), cond["message"].as_str()),
                (Some(reason), Some(message)),
                "{held}"
            );
        }
    }

    #[test]
    fn own_names_never_conflict_and_kept_names_stay() {
        let accepted = json!({"plural": "crontabs", "singular": "crontab", "kind": "CronTab",
            "listKind": "CronTabList", "shortNames": ["ct"]});
        let c = crd(
            "crontab",
            "crontabs",
            "CronTab",
            &["ct"],
            Some(accepted.clone()),
        );
        let mut index = NameIndex::default();
        index.update(&c);
        let out = desired_status(&c, &index.taken("g.io", "crontabs.g.io"));
        assert_eq!(conditions::get(&out, "NamesAccepted"), Some("True"));
        // Another CRD holding the same names (a transient double hold) does not take away names
        // this CRD already accepted.
        let mut twin = c.clone();
        twin["metadata"]["name"] = json!("twin.g.io");
        index.update(&twin);
        let out = desired_status(&c, &index.taken("g.io", "crontabs.g.io"));
        assert_eq!(conditions::get(&out, "NamesAccepted"), Some("True"));
        assert_eq!(out["status"]["acceptedNames"], accepted);
    }

    #[test]
    fn index_updates_release_and_ignore_stale_objects() {
        let mut index = NameIndex::default();
        let names = |plural: &str, rv: &str| {
            json!({"metadata": {"name": "a.g.io", "resourceVersion": rv}, "spec": {"group": "g.io"},
                "status": {"acceptedNames": {"plural": plural, "kind": "A"}}})
        };
        assert_eq!(
            index.update(&names("as", "5")),
            Update::Applied { released: false }
        );
        assert!(index.taken("g.io", "b.g.io").resource("as"));
        assert!(index.taken("g.io", "b.g.io").kind("A"));
        assert!(!index.taken("g.io", "a.g.io").resource("as"));
        assert_eq!(index.update(&names("bs", "4")), Update::Stale);
        assert!(index.taken("g.io", "b.g.io").resource("as"));
        assert_eq!(
            index.update(&names("bs", "6")),
            Update::Applied { released: true }
        );
        assert!(!index.taken("g.io", "b.g.io").resource("as"));
        assert!(index.taken("g.io", "b.g.io").resource("bs"));
        assert_eq!(
            index.update(&names("bs", "7")),
            Update::Applied { released: false }
        );
        assert_eq!(
            index.group_members("g.io").collect::<Vec<_>>(),
            vec!["a.g.io"]
        );
        assert_eq!(index.forget("a.g.io").as_deref(), Some("g.io"));
        assert!(index.is_empty());
        assert!(!index.taken("g.io", "b.g.io").resource("bs"));
        assert_eq!(index.group_members("g.io").count(), 0);
        // After a deletion, a recreated CRD starts over (any revision is accepted).
        assert_eq!(
            index.update(&names("cs", "1")),
            Update::Applied { released: false }
        );
        assert_eq!(index.len(), 1);
    }
}
