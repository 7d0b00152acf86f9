//! Label and field selectors: parsing `labelSelector` and `fieldSelector` query values,
//! matching, `LabelSelector` objects, and the canonical form: a selector that parses prints a
//! string that parses back to the same selector (clients resend what the server prints).
//!
//! Input: the label selector on the first line, the field selector on the second, then a JSON
//! document used as a `LabelSelector` object and as a label set.
#![no_main]

use std::collections::BTreeMap;

use crd_core::fields::FieldSelector;
use crd_core::labels::Selector;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let (label_line, rest) = crd_apiserver_fuzz::first_line(data);
    let (field_line, rest) = crd_apiserver_fuzz::first_line(rest);
    let doc = crd_apiserver_fuzz::json(rest).unwrap_or(Value::Null);
    let labels: BTreeMap<String, String> = doc
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();

    if let Ok(s) = std::str::from_utf8(label_line)
        && let Ok(sel) = Selector::parse(s)
    {
        let printed = sel.to_string();
        let again = Selector::parse(&printed)
            .unwrap_or_else(|e| panic!("{s:?} printed as {printed:?}, which fails: {e}"));
        assert_eq!(again.to_string(), printed, "{s:?}");
        assert_eq!(again.matches(&labels), sel.matches(&labels), "{s:?}");
        let _ = sel.matches_json(Some(&doc));
        for key in labels.keys() {
            let _ = sel.requires_exact_match(key);
        }
    }
    if let Ok(s) = std::str::from_utf8(field_line)
        && let Ok(sel) = FieldSelector::parse(s)
    {
        let printed = sel.to_string();
        let again = FieldSelector::parse(&printed)
            .unwrap_or_else(|e| panic!("{s:?} printed as {printed:?}, which fails: {e}"));
        // Upstream sorts terms by their raw text, and printing turns `==` into `=`, so the
        // order may change on a reparse (as upstream's); the terms may not.
        let terms = |f: &FieldSelector| {
            let mut t: Vec<String> = f.requirements.iter().map(ToString::to_string).collect();
            t.sort();
            t
        };
        assert_eq!(terms(&again), terms(&sel), "{s:?}");
        let get = |f: &str| labels.get(f).cloned();
        assert_eq!(again.matches(get), sel.matches(get), "{s:?}");
        for f in sel.fields().collect::<Vec<_>>() {
            let _ = sel.exact_match(f);
        }
    }
    if let Ok(sel) = Selector::from_label_selector_json(&doc) {
        let printed = sel.to_string();
        let again = Selector::parse(&printed)
            .unwrap_or_else(|e| panic!("{doc} printed as {printed:?}, which fails: {e}"));
        // A `LabelSelector`'s repeated values print as given (`in (b,b)`, as upstream's
        // `Requirement.String`), and the string parser keeps a set (`in (b)`, as upstream's):
        // the reparse matches the same labels, and from there printing is a fixed point. A null
        // `LabelSelector` selects nothing and prints as the empty string, which selects
        // everything (upstream's `labels.Nothing()` and `Everything()` print alike), so it is
        // checked for itself.
        if sel == Selector::nothing() {
            assert!(printed.is_empty() && !sel.matches(&labels), "{doc}");
        } else {
            assert_eq!(again.matches(&labels), sel.matches(&labels), "{doc}");
        }
        let reprinted = again.to_string();
        let third = Selector::parse(&reprinted)
            .unwrap_or_else(|e| panic!("{doc} reprinted as {reprinted:?}, which fails: {e}"));
        assert_eq!(third.to_string(), reprinted, "{doc}");
    }
});
