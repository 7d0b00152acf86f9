//! Field paths and sets of them (SMD's `fieldpath` package), and their `fieldsV1` encoding.
//!
//! A [`FieldSet`] is a trie: at each node, `members` are the path elements owned as a whole and
//! `children` the path elements descended into. Both are kept sorted in SMD's path-element order
//! (field names, then keys, then values, then indexes), so unions, intersections and differences
//! are linear merges.

use std::cmp::Ordering;
use std::fmt;

use serde_json::{Map, Value};

use super::value::{compare, write_value};

/// One step of a field path: how to select a child of a map or a list.
#[derive(Clone, Debug)]
pub enum PathElement {
    /// A field of a map or struct, by name (`f:name`, printed `.name`).
    Field(String),
    /// An item of a list of type map, by its key fields sorted by name (`k:{...}`, printed
    /// `[name="a"]`).
    Key(Vec<(String, Value)>),
    /// An item of a list of type set, by value (`v:"x"`, printed `[="x"]`).
    Value(Value),
    /// An item of a non-associative list, by index (`i:0`, printed `[0]`).
    Index(i64),
}

impl PathElement {
    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }

    /// Returns the element as the `fieldsV1` key SMD writes (`f:spec`, `k:{"name":"a"}`).
    pub fn to_fields_v1_key(&self) -> String {
        match self {
            // The most frequent element: built directly, without the formatting machinery
            // (a create writes one key per field it sets).
            PathElement::Field(name) => {
                let mut s = String::with_capacity(name.len() + 2);
                s.push_str("f:");
                s.push_str(name);
                s
            }
            PathElement::Key(fields) => {
                // Key fields are sorted by name, so the object's text is in SMD's order
                // whichever map representation serde_json uses.
                let mut s = String::from("k:{");
                for (i, (k, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        s.push(',');
                    }
                    s.push_str(&Value::String(k.clone()).to_string());
                    s.push(':');
                    s.push_str(&canonical_json(v));
                }
                s.push('}');
                s
            }
            PathElement::Value(v) => format!("v:{}", canonical_json(v)),
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    /// Parses a `fieldsV1` key. `Ok(None)` is an unknown element type, which SMD skips.
    pub fn from_fields_v1_key(key: &str) -> Result<Option<PathElement>, String> {
        let b = key.as_bytes();
        if b.len() < 2 {
            return Err("key must be 2 characters long:".to_owned());
        }
        if b[1] != b':' {
            return Err(format!("missing colon: {key}"));
        }
        let rest = &key[2..];
        match b[0] {
            b'f' => Ok(Some(PathElement::Field(rest.to_owned()))),
            b'v' => serde_json::from_str::<Value>(rest)
                .map(|v| Some(PathElement::Value(v)))
                .map_err(|e| e.to_string()),
            b'k' => {
                let v: Value = serde_json::from_str(rest).map_err(|e| e.to_string())?;
                let Value::Object(m) = v else {
                    return Err(format!("expected object for key path element: {rest}"));
                };
                let mut fields: Vec<(String, Value)> = m.into_iter().collect();
                fields.sort_by(|a, b| a.0.cmp(&b.0));
                Ok(Some(PathElement::Key(fields)))
            }
            b'i' => rest
                .parse::<i64>()
                .map(|i| Some(PathElement::Index(i)))
                .map_err(|_| format!("strconv.Atoi: parsing {rest:?}: invalid syntax")),
            _ => Ok(None),
        }
    }
}

/// JSON text of a value with object keys sorted (Go's encoder sorts map keys).
pub(crate) fn canonical_json(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let mut s = String::from("{");
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                s.push_str(&Value::String((*k).clone()).to_string());
                s.push(':');
                s.push_str(&canonical_json(&m[k.as_str()]));
            }
            s.push('}');
            s
        }
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(canonical_json).collect();
            format!("[{}]", parts.join(","))
        }
        other => other.to_string(),
    }
}

impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.cmp(b),
            (PathElement::Key(a), PathElement::Key(b)) => {
                for ((an, av), (bn, bv)) in a.iter().zip(b) {
                    let c = an.cmp(bn).then_with(|| compare(av, bv));
                    if c != Ordering::Equal {
                        return c;
                    }
                }
                a.len().cmp(&b.len())
            }
            (PathElement::Value(a), PathElement::Value(b)) => compare(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

impl fmt::Display for PathElement {
    /// Writes the element as SMD's `PathElement.String` does.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        match self {
            PathElement::Field(name) => {
                s.push('.');
                s.push_str(name);
            }
            PathElement::Key(fields) => {
                s.push('[');
                for (i, (k, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        s.push(',');
                    }
                    s.push_str(k);
                    s.push('=');
                    write_value(&mut s, v);
                }
                s.push(']');
            }
            PathElement::Value(v) => {
                s.push_str("[=");
                write_value(&mut s, v);
                s.push(']');
            }
            PathElement::Index(i) => {
                s.push('[');
                s.push_str(&i.to_string());
                s.push(']');
            }
        }
        f.write_str(&s)
    }
}

/// A field path: the elements from the object's root to a field.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Path(pub Vec<PathElement>);

impl fmt::Display for Path {
    /// Writes the path as SMD prints it: `.spec.containers[name="nginx"].image`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for pe in &self.0 {
            write!(f, "{pe}")?;
        }
        Ok(())
    }
}

/// A set of field paths, as SMD's `fieldpath.Set`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSet {
    members: Vec<PathElement>,
    children: Vec<(PathElement, FieldSet)>,
}

/// An error decoding a `fieldsV1` document.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FieldsV1Error(pub String);

impl FieldSet {
    /// Returns the empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Returns whether the set holds no path (children with empty sets do not count).
    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.iter().all(|(_, c)| c.is_empty())
    }

    /// Builds a set from members and children gathered in any order (sorted here, equal
    /// children merged, empty children dropped).
    pub(crate) fn from_parts(
        mut members: Vec<PathElement>,
        mut children: Vec<(PathElement, FieldSet)>,
    ) -> FieldSet {
        if !members.is_sorted() {
            members.sort();
        }
        members.dedup();
        if !children.is_sorted_by(|a, b| a.0 <= b.0) {
            children.sort_by(|a, b| a.0.cmp(&b.0));
        }
        if children.windows(2).any(|w| w[0].0 == w[1].0) {
            let mut merged: Vec<(PathElement, FieldSet)> = Vec::with_capacity(children.len());
            for (pe, c) in children {
                match merged.last_mut() {
                    Some(last) if last.0 == pe => last.1 = last.1.union(&c),
                    _ => merged.push((pe, c)),
                }
            }
            children = merged;
        }
        children.retain(|(_, c)| !c.is_empty());
        FieldSet { members, children }
    }

    /// Returns the members at this level, sorted.
    pub(crate) fn members(&self) -> &[PathElement] {
        &self.members
    }

    /// Returns the children at this level, sorted by path element.
    pub(crate) fn children(&self) -> &[(PathElement, FieldSet)] {
        &self.children
    }

    /// Returns whether `pe` is a member at this level.
    pub(crate) fn has_member(&self, pe: &PathElement) -> bool {
        self.members.binary_search(pe).is_ok()
    }

    /// Returns the subset under `pe` at this level, if any.
    pub(crate) fn child(&self, pe: &PathElement) -> Option<&FieldSet> {
        self.children
            .binary_search_by(|(c, _)| c.cmp(pe))
            .ok()
            .map(|i| &self.children[i].1)
    }

    /// Returns the path elements at this level, members and children, sorted and unique.
    pub(crate) fn member_and_child_elements(&self) -> Vec<&PathElement> {
        let mut out: Vec<&PathElement> =
            Vec::with_capacity(self.members.len() + self.children.len());
        let (mut i, mut j) = (0, 0);
        while i < self.members.len() || j < self.children.len() {
            match (self.members.get(i), self.children.get(j)) {
                (Some(m), Some((c, _))) => match m.cmp(c) {
                    Ordering::Less => {
                        out.push(m);
                        i += 1;
                    }
                    Ordering::Greater => {
                        out.push(c);
                        j += 1;
                    }
                    Ordering::Equal => {
                        out.push(m);
                        i += 1;
                        j += 1;
                    }
                },
                (Some(m), None) => {
                    out.push(m);
                    i += 1;
                }
                (None, Some((c, _))) => {
                    out.push(c);
                    j += 1;
                }
                (None, None) => break,
            }
        }
        out
    }

    /// Adds `pe` as a member at this level.
    pub(crate) fn insert_member(&mut self, pe: PathElement) {
        if let Err(i) = self.members.binary_search(&pe) {
            self.members.insert(i, pe);
        }
    }

    /// Returns the subset under `pe`, creating it when missing.
    pub(crate) fn child_mut(&mut self, pe: PathElement) -> &mut FieldSet {
        let i = match self.children.binary_search_by(|(c, _)| c.cmp(&pe)) {
            Ok(i) => i,
            Err(i) => {
                self.children.insert(i, (pe, FieldSet::default()));
                i
            }
        };
        &mut self.children[i].1
    }

    /// Returns the set of the given field-name paths (`&[&["status"], &["metadata", "labels"]]`),
    /// the form strategies' reset fields take.
    pub fn from_field_paths(paths: &[&[&str]]) -> FieldSet {
        let mut set = FieldSet::new();
        for path in paths {
            let pes: Vec<PathElement> = path
                .iter()
                .map(|f| PathElement::Field((*f).to_owned()))
                .collect();
            set.insert(&pes);
        }
        set
    }

    /// Adds a path. The empty path is ignored (the root is never a member).
    pub fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => self.insert_member(last.clone()),
            [first, rest @ ..] => self.child_mut(first.clone()).insert(rest),
        }
    }

    /// Returns whether the path is a member.
    pub fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.has_member(last),
            [first, rest @ ..] => self.child(first).is_some_and(|c| c.has(rest)),
        }
    }

    /// Returns the paths in either set.
    #[must_use]
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        FieldSet {
            members: merge_sorted(&self.members, &other.members),
            children: merge_children(&self.children, &other.children, |a, b| Some(a.union(b))),
        }
    }

    /// Returns the paths in both sets.
    #[must_use]
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let members = self
            .members
            .iter()
            .filter(|m| other.has_member(m))
            .cloned()
            .collect();
        let mut children = Vec::new();
        for (pe, c) in &self.children {
            if let Some(oc) = other.child(pe) {
                let i = c.intersection(oc);
                if !i.is_empty() {
                    children.push((pe.clone(), i));
                }
            }
        }
        FieldSet { members, children }
    }

    /// Returns the paths in `self` that are not in `other` (exact paths, as SMD's
    /// `Set.Difference`).
    #[must_use]
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let members = self
            .members
            .iter()
            .filter(|m| !other.has_member(m))
            .cloned()
            .collect();
        let mut children = Vec::new();
        for (pe, c) in &self.children {
            let d = match other.child(pe) {
                Some(oc) => c.difference(oc),
                None => c.clone(),
            };
            if !d.is_empty() {
                children.push((pe.clone(), d));
            }
        }
        FieldSet { members, children }
    }

    /// Removes the paths of `other` from `self` (an in-place [`FieldSet::difference`]); returns
    /// whether anything was removed.
    pub(crate) fn difference_in_place(&mut self, other: &FieldSet) -> bool {
        let before = (self.members.len(), self.children.len());
        let mut changed = false;
        if !other.members.is_empty() {
            self.members.retain(|m| !other.has_member(m));
        }
        if !other.children.is_empty() {
            self.children.retain_mut(|(pe, c)| {
                if let Some(oc) = other.child(pe) {
                    changed |= c.difference_in_place(oc);
                }
                !c.is_empty()
            });
        }
        changed || before != (self.members.len(), self.children.len())
    }

    /// Returns whether every path of `self` is in `other`.
    pub(crate) fn is_subset_of(&self, other: &FieldSet) -> bool {
        self.members.iter().all(|m| other.has_member(m))
            && self.children.iter().all(|(pe, c)| match other.child(pe) {
                Some(oc) => c.is_subset_of(oc),
                None => c.is_empty(),
            })
    }

    /// Returns the paths in `self` that neither are in `other` nor lie under a member of
    /// `other` (SMD's `Set.RecursiveDifference`).
    #[must_use]
    pub fn recursive_difference(&self, other: &FieldSet) -> FieldSet {
        let members = self
            .members
            .iter()
            .filter(|m| !other.has_member(m))
            .cloned()
            .collect();
        let mut children = Vec::new();
        for (pe, c) in &self.children {
            if other.has_member(pe) {
                continue;
            }
            let d = match other.child(pe) {
                Some(oc) => c.recursive_difference(oc),
                None => c.clone(),
            };
            if !d.is_empty() {
                children.push((pe.clone(), d));
            }
        }
        FieldSet { members, children }
    }

    /// Returns every path, members of a node before the paths below it (SMD's `Set.Iterate`).
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        let mut prefix = Vec::new();
        self.collect_paths(&mut prefix, &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<Path>) {
        for m in &self.members {
            let mut p = prefix.clone();
            p.push(m.clone());
            out.push(Path(p));
        }
        for (pe, c) in &self.children {
            prefix.push(pe.clone());
            c.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    /// Returns the number of paths.
    pub fn len(&self) -> usize {
        self.members.len() + self.children.iter().map(|(_, c)| c.len()).sum::<usize>()
    }

    /// Returns the set as the `fieldsV1` JSON object. Keys are inserted in byte order, which is
    /// the order kube-apiserver writes for custom resources (their managed fields are
    /// unstructured maps, encoded with sorted keys).
    pub fn to_fields_v1(&self) -> Value {
        let mut entries: Vec<(String, Value)> = Vec::new();
        self.for_each_entry(|key, val| entries.push((key, val)));
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        Value::Object(entries.into_iter().collect())
    }

    fn for_each_entry(&self, mut f: impl FnMut(String, Value)) {
        let (mut mi, mut ci) = (0, 0);
        while mi < self.members.len() || ci < self.children.len() {
            let m = self.members.get(mi);
            let c = self.children.get(ci);
            match (m, c) {
                (Some(m), Some((cpe, cset))) => match m.cmp(cpe) {
                    Ordering::Less => {
                        f(m.to_fields_v1_key(), Value::Object(Map::new()));
                        mi += 1;
                    }
                    Ordering::Greater => {
                        f(cpe.to_fields_v1_key(), cset.node_value(false));
                        ci += 1;
                    }
                    Ordering::Equal => {
                        f(cpe.to_fields_v1_key(), cset.node_value(true));
                        mi += 1;
                        ci += 1;
                    }
                },
                (Some(m), None) => {
                    f(m.to_fields_v1_key(), Value::Object(Map::new()));
                    mi += 1;
                }
                (None, Some((cpe, cset))) => {
                    f(cpe.to_fields_v1_key(), cset.node_value(false));
                    ci += 1;
                }
                (None, None) => break,
            }
        }
    }

    fn node_value(&self, include_self: bool) -> Value {
        let mut entries: Vec<(String, Value)> = Vec::new();
        self.for_each_entry(|key, val| entries.push((key, val)));
        if include_self && !entries.is_empty() {
            entries.push((".".to_owned(), Value::Object(Map::new())));
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        Value::Object(entries.into_iter().collect())
    }

    /// Returns the set as SMD's `Set.ToJSON` writes it, byte for byte: entries in path-element
    /// order and `"."` after a node's children.
    pub fn to_fields_v1_string(&self) -> String {
        let mut out = String::from("{");
        self.write_contents(false, &mut out);
        out.push('}');
        out
    }

    fn write_contents(&self, include_self: bool, out: &mut String) {
        let mut first = true;
        let mut sep = |out: &mut String| {
            if !std::mem::take(&mut first) {
                out.push(',');
            }
        };
        let (mut mi, mut ci) = (0, 0);
        loop {
            let m = self.members.get(mi);
            let c = self.children.get(ci);
            let (pe, set, is_self) = match (m, c) {
                (Some(m), Some((cpe, cset))) => match m.cmp(cpe) {
                    Ordering::Less => {
                        mi += 1;
                        (m, None, false)
                    }
                    Ordering::Greater => {
                        ci += 1;
                        (cpe, Some(cset), false)
                    }
                    Ordering::Equal => {
                        mi += 1;
                        ci += 1;
                        (cpe, Some(cset), true)
                    }
                },
                (Some(m), None) => {
                    mi += 1;
                    (m, None, false)
                }
                (None, Some((cpe, cset))) => {
                    ci += 1;
                    (cpe, Some(cset), false)
                }
                (None, None) => break,
            };
            sep(out);
            out.push_str(&Value::String(pe.to_fields_v1_key()).to_string());
            out.push(':');
            out.push('{');
            if let Some(set) = set {
                set.write_contents(is_self, out);
            }
            out.push('}');
        }
        if include_self && !first {
            out.push_str(",\".\":{}");
        }
    }

    /// Decodes a `fieldsV1` JSON object (SMD's `Set.FromJSON`). Unknown path-element types are
    /// skipped, as SMD does.
    pub fn from_fields_v1(v: &Value) -> Result<FieldSet, FieldsV1Error> {
        Self::from_fields_v1_canonical(v, false).map(|(set, _)| set)
    }

    /// Decodes a `fieldsV1` object, and tells whether [`FieldSet::to_fields_v1`] would give it
    /// back unchanged (no unknown or non-canonical keys, no null or lone `"."` nodes).
    /// The check costs a re-encoding of list keys, so it runs only when `check` is set.
    pub(crate) fn from_fields_v1_canonical(
        v: &Value,
        check: bool,
    ) -> Result<(FieldSet, bool), FieldsV1Error> {
        let mut canonical = check;
        match v {
            Value::Object(m) => {
                let set = read_node(m, &mut canonical)?.0.unwrap_or_default();
                Ok((set, canonical))
            }
            Value::Null => Ok((FieldSet::default(), false)),
            other => Err(FieldsV1Error(format!(
                "ReadMapCB: expect {{ or n, but found {}",
                other.to_string().chars().next().unwrap_or(' ')
            ))),
        }
    }
}

/// Reads one `fieldsV1` node: its children (if any) and whether it is itself a member.
fn read_node(
    m: &Map<String, Value>,
    canonical: &mut bool,
) -> Result<(Option<FieldSet>, bool), FieldsV1Error> {
    let mut members = Vec::new();
    let mut children = Vec::new();
    let mut any = false;
    let mut is_member = false;
    for (key, val) in m {
        if key == "." {
            is_member = true;
            continue;
        }
        let pe = match PathElement::from_fields_v1_key(key) {
            Ok(Some(pe)) => pe,
            Ok(None) => {
                *canonical = false;
                continue;
            }
            Err(e) => return Err(FieldsV1Error(format!("parsing key as path element: {e}"))),
        };
        if *canonical && !matches!(pe, PathElement::Field(_)) && pe.to_fields_v1_key() != *key {
            *canonical = false;
        }
        let (grand, child_is_member) = match val {
            Value::Object(cm) => read_node(cm, canonical)?,
            Value::Null => {
                *canonical = false;
                (None, true)
            }
            other => {
                return Err(FieldsV1Error(format!(
                    "ReadMapCB: expect {{ or n, but found {}",
                    other.to_string().chars().next().unwrap_or(' ')
                )));
            }
        };
        any = true;
        match (child_is_member, grand) {
            (true, Some(g)) => {
                members.push(pe.clone());
                children.push((pe, g));
            }
            (true, None) => members.push(pe),
            (false, Some(g)) => children.push((pe, g)),
            (false, None) => {}
        }
    }
    if !any {
        if is_member {
            // `{".": {}}` alone encodes back as `{}`.
            *canonical = false;
        }
        return Ok((None, true));
    }
    Ok((Some(FieldSet::from_parts(members, children)), is_member))
}

fn merge_sorted(a: &[PathElement], b: &[PathElement]) -> Vec<PathElement> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            Ordering::Less => {
                out.push(a[i].clone());
                i += 1;
            }
            Ordering::Greater => {
                out.push(b[j].clone());
                j += 1;
            }
            Ordering::Equal => {
                out.push(a[i].clone());
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

fn merge_children(
    a: &[(PathElement, FieldSet)],
    b: &[(PathElement, FieldSet)],
    both: impl Fn(&FieldSet, &FieldSet) -> Option<FieldSet>,
) -> Vec<(PathElement, FieldSet)> {
    let mut out = Vec::with_capacity(a.len().max(b.len()));
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j].0) {
            Ordering::Less => {
                out.push(a[i].clone());
                i += 1;
            }
            Ordering::Greater => {
                out.push(b[j].clone());
                j += 1;
            }
            Ordering::Equal => {
                if let Some(s) = both(&a[i].1, &b[j].1) {
                    out.push((a[i].0.clone(), s));
                }
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

impl fmt::Display for FieldSet {
    /// Writes the paths one per line, as SMD's `Set.String` does.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for p in self.paths() {
            writeln!(f, "{p}")?;
        }
        Ok(())
    }
}
