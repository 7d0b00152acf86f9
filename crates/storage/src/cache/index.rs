//! The watch cache's secondary indexes: for each index name (for example a label key, or
//! `metadata.name`) and value, the sorted set of keys whose object has it. The terms of an
//! object come from the [`Indexer`](super::Indexer) the cache was built with; this crate never
//! looks inside values.
//!
//! Pure and synchronous; tested with literal terms.

use std::collections::{BTreeSet, HashMap};
use std::ops::Bound;
use std::sync::Arc;

/// One index entry an object has: (index name, value).
pub type Term = (String, String);

/// Keys by (index name, value).
#[derive(Debug, Default)]
pub struct Indexes {
    by_name: HashMap<String, HashMap<String, BTreeSet<Arc<str>>>>,
}

impl Indexes {
    /// Records that `key` has every term in `terms`.
    pub fn insert(&mut self, key: &Arc<str>, terms: &[Term]) {
        for (name, value) in terms {
            let values = match self.by_name.get_mut(name.as_str()) {
                Some(v) => v,
                None => self.by_name.entry(name.clone()).or_default(),
            };
            match values.get_mut(value.as_str()) {
                Some(keys) => {
                    keys.insert(key.clone());
                }
                None => {
                    values.insert(value.clone(), BTreeSet::from([key.clone()]));
                }
            }
        }
    }

    /// Forgets that `key` has the terms in `terms`; empty sets are dropped so memory returns.
    pub fn remove(&mut self, key: &str, terms: &[Term]) {
        for (name, value) in terms {
            let Some(values) = self.by_name.get_mut(name.as_str()) else {
                continue;
            };
            if let Some(keys) = values.get_mut(value.as_str()) {
                keys.remove(key);
                if keys.is_empty() {
                    values.remove(value.as_str());
                }
            }
            if values.is_empty() {
                self.by_name.remove(name.as_str());
            }
        }
    }

    /// The keys under `prefix` after `start_after` that have every term of `terms` (at least
    /// one), in key order: at most `limit` of them (`None`: all), and how many more there are.
    pub fn select(
        &self,
        terms: &[Term],
        prefix: &str,
        start_after: Option<&str>,
        limit: Option<usize>,
    ) -> (Vec<Arc<str>>, u64) {
        let mut sets = Vec::with_capacity(terms.len());
        for (name, value) in terms {
            match self
                .by_name
                .get(name.as_str())
                .and_then(|values| values.get(value.as_str()))
            {
                Some(keys) => sets.push(keys),
                None => return (Vec::new(), 0),
            }
        }
        sets.sort_by_key(|s| s.len());
        let Some((smallest, others)) = sets.split_first() else {
            return (Vec::new(), 0);
        };
        let lower = match start_after {
            Some(after) if after >= prefix => Bound::Excluded(after),
            _ => Bound::Included(prefix),
        };
        let matching = smallest
            .range::<str, _>((lower, Bound::Unbounded))
            .take_while(|k| k.starts_with(prefix))
            .filter(|k| others.iter().all(|s| s.contains(k.as_ref())));
        let limit = limit.filter(|&l| l > 0).unwrap_or(usize::MAX);
        let mut keys = Vec::new();
        let mut remaining = 0u64;
        for k in matching {
            if keys.len() < limit {
                keys.push(k.clone());
            } else {
                remaining += 1;
            }
        }
        (keys, remaining)
    }

    /// How many (index name, value) sets exist (for tests and memory accounting).
    pub fn sets(&self) -> usize {
        self.by_name.values().map(HashMap::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(name: &str, value: &str) -> Term {
        (name.to_string(), value.to_string())
    }

    fn build(objects: &[(&str, &[(&str, &str)])]) -> Indexes {
        let mut ix = Indexes::default();
        for (key, terms) in objects {
            let terms: Vec<Term> = terms.iter().map(|(n, v)| t(n, v)).collect();
            ix.insert(&Arc::from(*key), &terms);
        }
        ix
    }

    /// (terms, prefix, `start_after`, limit, expected keys, expected remaining)
    type Case<'a> = (
        &'a [(&'a str, &'a str)],
        &'a str,
        Option<&'a str>,
        Option<usize>,
        &'a [&'a str],
        u64,
    );

    #[test]
    fn select_intersects_terms_in_key_order_with_paging() {
        let ix = build(&[
            ("/r/ns1/a", &[("l:app", "web"), ("l:tier", "front")]),
            ("/r/ns1/b", &[("l:app", "web")]),
            ("/r/ns1/c", &[("l:app", "db"), ("l:tier", "front")]),
            ("/r/ns2/d", &[("l:app", "web"), ("l:tier", "front")]),
            ("/r/ns2/e", &[("l:app", "web")]),
        ]);
        // (terms, prefix, start_after, limit) -> (keys, remaining)
        let cases: &[Case<'_>] = &[
            (
                &[("l:app", "web")],
                "/r/",
                None,
                None,
                &["/r/ns1/a", "/r/ns1/b", "/r/ns2/d", "/r/ns2/e"],
                0,
            ),
            (
                &[("l:app", "web")],
                "/r/ns1/",
                None,
                None,
                &["/r/ns1/a", "/r/ns1/b"],
                0,
            ),
            (
                &[("l:app", "web"), ("l:tier", "front")],
                "/r/",
                None,
                None,
                &["/r/ns1/a", "/r/ns2/d"],
                0,
            ),
            (
                &[("l:app", "web")],
                "/r/",
                None,
                Some(2),
                &["/r/ns1/a", "/r/ns1/b"],
                2,
            ),
            (
                &[("l:app", "web")],
                "/r/",
                Some("/r/ns1/b"),
                Some(1),
                &["/r/ns2/d"],
                1,
            ),
            (&[("l:app", "none")], "/r/", None, None, &[], 0),
            (&[("l:absent", "x")], "/r/", None, None, &[], 0),
            (&[], "/r/", None, None, &[], 0),
        ];
        for (terms, prefix, after, limit, want, remaining) in cases {
            let terms: Vec<Term> = terms.iter().map(|(n, v)| t(n, v)).collect();
            let (keys, rest) = ix.select(&terms, prefix, *after, *limit);
            let keys: Vec<&str> = keys.iter().map(AsRef::as_ref).collect();
            assert_eq!(keys, *want, "{terms:?} under {prefix} after {after:?}");
            assert_eq!(rest, *remaining, "{terms:?} remaining");
        }
    }

    #[test]
    fn removing_the_last_key_drops_the_set() {
        let mut ix = build(&[("/r/a", &[("l:app", "web")]), ("/r/b", &[("l:app", "web")])]);
        assert_eq!(ix.sets(), 1);
        ix.remove("/r/a", &[t("l:app", "web")]);
        assert_eq!(
            ix.select(&[t("l:app", "web")], "/r/", None, None).0.len(),
            1
        );
        ix.remove("/r/b", &[t("l:app", "web")]);
        assert_eq!(ix.sets(), 0);
        assert!(ix.by_name.is_empty(), "memory returns");
    }
}
