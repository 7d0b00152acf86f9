//! The server's side of the watch cache (`crd_storage::cache`): which index terms an object
//! has (its labels and `metadata.name`), and the terms a list's selectors imply, so that a
//! label or name selector visits only the matching objects instead of the whole collection.

use std::collections::BTreeMap;
use std::sync::Arc;

use crd_core::fields::FieldSelector;
use crd_core::labels::Selector;
use crd_storage::Store;
use crd_storage::cache::{CacheConfig, CacheObserver, CacheStore, Indexer};
use serde::Deserialize;

/// The storage root every served key lives under; the cache covers it.
pub const ROOT: &str = "/registry/";

/// The index name of `metadata.name`.
const NAME: &str = "metadata.name";

/// The index name of a label key (`l:` and the key; label keys cannot contain a space, so
/// they never collide with field names).
fn label_index(key: &str) -> String {
    // Built directly: every event's labels pass here, and `format!` costs several times more.
    let mut index = String::with_capacity(key.len() + 2);
    index.push_str("l:");
    index.push_str(key);
    index
}

#[derive(Deserialize)]
struct Object<'a> {
    #[serde(borrow, default)]
    metadata: Metadata<'a>,
}

#[derive(Deserialize, Default)]
struct Metadata<'a> {
    #[serde(borrow, default)]
    name: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    labels: Option<BTreeMap<std::borrow::Cow<'a, str>, std::borrow::Cow<'a, str>>>,
}

/// Indexes stored objects by `metadata.name` and by every label (an index per label key).
pub struct ObjectIndexer;

impl Indexer for ObjectIndexer {
    fn terms(&self, _key: &str, value: &[u8], out: &mut Vec<(String, String)>) {
        // A value that is not an object (never written by this server) has no terms: lists
        // with terms then skip it, which is right, as no selector could match it either.
        let Ok(obj) = serde_json::from_slice::<Object<'_>>(value) else {
            return;
        };
        if let Some(name) = obj.metadata.name {
            out.push((NAME.to_string(), name.into_owned()));
        }
        for (k, v) in obj.metadata.labels.into_iter().flatten() {
            out.push((label_index(&k), v.into_owned()));
        }
    }
}

/// The index terms every object a list with these selectors returns must have: each label the
/// selector requires exactly (`=`, `==`, one-value `in`) and an exact `metadata.name`.
pub fn index_terms(labels: &Selector, fields: &FieldSelector) -> Vec<(String, String)> {
    let mut terms = Vec::new();
    for r in labels.requirements() {
        if let Some(v) = labels.requires_exact_match(r.key()) {
            let term = (label_index(r.key()), v.to_string());
            if !terms.contains(&term) {
                terms.push(term);
            }
        }
    }
    if let Some(name) = fields.exact_match(NAME) {
        terms.push((NAME.to_string(), name.to_string()));
    }
    terms
}

/// Wraps `store` in a watch cache of [`ROOT`] indexed by [`ObjectIndexer`], reporting to
/// `observer` (the server's metrics).
pub fn wrap(store: Arc<dyn Store>, observer: Option<Arc<dyn CacheObserver>>) -> Arc<dyn Store> {
    let mut config = CacheConfig::new(ROOT, Some(Arc::new(ObjectIndexer)));
    config.observer = observer;
    CacheStore::new(store, config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(n: &str, v: &str) -> (String, String) {
        (n.to_string(), v.to_string())
    }

    #[test]
    fn objects_are_indexed_by_name_and_labels() {
        let cases: &[(&str, &[(&str, &str)])] = &[
            (
                r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"labels":{"app":"web","tier":""},"name":"a","namespace":"ns"},"data":{"x":"y"}}"#,
                &[("metadata.name", "a"), ("l:app", "web"), ("l:tier", "")],
            ),
            (r#"{"metadata":{"name":"b"}}"#, &[("metadata.name", "b")]),
            (r#"{"metadata":{"generateName":"x-"}}"#, &[]),
            (r#"{"kind":"X"}"#, &[]),
            (r"not json", &[]),
            (
                r#"{"metadata":{"name":"a\"b","labels":{"k\u0041":"v"}}}"#,
                &[("metadata.name", "a\"b"), ("l:kA", "v")],
            ),
        ];
        for (json, want) in cases {
            let mut out = Vec::new();
            ObjectIndexer.terms("/registry/x", json.as_bytes(), &mut out);
            let want: Vec<_> = want.iter().map(|(n, v)| t(n, v)).collect();
            assert_eq!(out, want, "{json}");
        }
    }

    /// (label selector, field selector, expected terms)
    type Case<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);

    #[test]
    fn selectors_imply_only_exact_terms() {
        let cases: &[Case<'_>] = &[
            ("app=web", "", &[("l:app", "web")]),
            (
                "app==web,tier in (front)",
                "",
                &[("l:app", "web"), ("l:tier", "front")],
            ),
            ("app!=web", "", &[]),
            ("app in (a,b)", "", &[]),
            ("app", "", &[]),
            ("!app", "", &[]),
            ("", "metadata.name=x", &[("metadata.name", "x")]),
            ("", "metadata.name!=x", &[]),
            (
                "app=web",
                "metadata.namespace=ns,metadata.name=x",
                &[("l:app", "web"), ("metadata.name", "x")],
            ),
        ];
        for (labels, fields, want) in cases {
            let labels = Selector::parse(labels).expect("labels");
            let fields = FieldSelector::parse(fields).expect("fields");
            let want: Vec<_> = want.iter().map(|(n, v)| t(n, v)).collect();
            assert_eq!(index_terms(&labels, &fields), want, "{labels} {fields}");
        }
    }
}
