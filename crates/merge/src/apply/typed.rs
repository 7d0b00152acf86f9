//! Typed walks over JSON values (SMD's `typed` package): the field set a value sets, the merge
//! of a configuration into a live object, the comparison of two objects, and the removal of
//! fields an applier gave up.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::fieldset::{FieldSet, Path, PathElement};
use super::schema::{DEDUCED, ListKind, Node, OBJECT_META, Schema, TypeId};
use super::value::equals;

/// A value that does not fit its schema where the engine needs it to (list items without their
/// keys, duplicate keys in an applied configuration).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct TypeError {
    /// Where, as SMD prints paths (`.spec.ports`).
    pub path: String,
    /// What is wrong (`element 0: associative list with keys has an element that omits key
    /// field "port" (and doesn't have default value)`).
    pub message: String,
}

/// Whether a map entry is left out of merges and comparisons: `metadata.managedFields`, which
/// nobody owns and the field manager rewrites.
fn is_managed_fields(map_type: TypeId, key: &str) -> bool {
    map_type == OBJECT_META && key == "managedFields"
}

/// The `metadata` map of an object (empty when absent), or `None` when it is not a map.
fn meta<'m>(
    m: &'m Map<String, Value>,
    empty: &'m Map<String, Value>,
) -> Option<&'m Map<String, Value>> {
    match m.get("metadata") {
        Some(Value::Object(meta)) => Some(meta),
        None => Some(empty),
        Some(_) => None,
    }
}

/// Returns whether two objects are equal but for `metadata.managedFields`.
pub(crate) fn same_object(a: &Value, b: &Value) -> bool {
    let (Value::Object(a), Value::Object(b)) = (a, b) else {
        return equals(a, b);
    };
    let without = |m: &Map<String, Value>, key: &str| m.len() - usize::from(m.contains_key(key));
    if without(a, "metadata") != without(b, "metadata") {
        return false;
    }
    if !a
        .iter()
        .filter(|(k, _)| *k != "metadata")
        .all(|(k, v)| b.get(k).is_some_and(|w| equals(v, w)))
    {
        return false;
    }
    let empty = Map::new();
    match (meta(a, &empty), meta(b, &empty)) {
        (Some(x), Some(y)) => {
            without(x, "managedFields") == without(y, "managedFields")
                && x.iter()
                    .filter(|(k, _)| *k != "managedFields")
                    .all(|(k, v)| y.get(k).is_some_and(|w| equals(v, w)))
        }
        _ => a.get("metadata") == b.get("metadata"),
    }
}

/// How a node is walked.
enum Shape<'a> {
    /// Owned and replaced whole: scalars, atomic maps and lists, empty or mismatched values.
    Leaf,
    /// A granular map: `ty` is the map type (fields looked up in it).
    Map(TypeId),
    /// A granular list.
    List(TypeId, &'a ListKind),
}

fn is_nonempty_object(val: Option<&Value>) -> bool {
    matches!(val, Some(Value::Object(m)) if !m.is_empty())
}

fn is_nonempty_array(val: Option<&Value>) -> bool {
    matches!(val, Some(Value::Array(a)) if !a.is_empty())
}

/// The shape of a node given the values on both sides (either may be absent). Both sides empty
/// or absent make a leaf, which keeps the empty/null distinction (SMD's `emptyPromoteToLeaf`).
fn pair_shape<'a>(
    schema: &'a Schema,
    ty: TypeId,
    lhs: Option<&Value>,
    rhs: Option<&Value>,
) -> Shape<'a> {
    match schema.node(ty) {
        Node::Scalar(_)
        | Node::Map { atomic: true, .. }
        | Node::List {
            kind: ListKind::Atomic,
            ..
        } => Shape::Leaf,
        Node::Deduced => {
            let is_map = |val: Option<&Value>| val.map(Value::is_object);
            match (is_map(lhs), is_map(rhs)) {
                (Some(false), _) | (_, Some(false)) => Shape::Leaf,
                _ if is_nonempty_object(lhs) || is_nonempty_object(rhs) => Shape::Map(DEDUCED),
                _ => Shape::Leaf,
            }
        }
        Node::Map { .. } => {
            if is_nonempty_object(lhs) || is_nonempty_object(rhs) {
                Shape::Map(ty)
            } else {
                Shape::Leaf
            }
        }
        Node::List { elem, kind } => {
            if is_nonempty_array(lhs) || is_nonempty_array(rhs) {
                Shape::List(*elem, kind)
            } else {
                Shape::Leaf
            }
        }
    }
}

/// Returns the path element of a list item (SMD's `listItemToPathElement`).
pub(crate) fn item_element(
    kind: &ListKind,
    index: usize,
    item: &Value,
) -> Result<PathElement, String> {
    match kind {
        ListKind::Atomic => Ok(PathElement::Index(index as i64)),
        ListKind::Set => match item {
            Value::Object(_) => {
                Err("associative list without keys has an element that's a map type".to_owned())
            }
            Value::Array(_) => {
                Err("associative list without keys has an element that's a list type".to_owned())
            }
            val => Ok(PathElement::Value(val.clone())),
        },
        ListKind::Map(keys) => {
            let Value::Object(m) = item else {
                return Err(
                    "associative list with keys has an element that's not a map type".to_owned(),
                );
            };
            let mut fields = Vec::with_capacity(keys.len());
            for (k, default) in keys {
                match m.get(k).or(default.as_ref()) {
                    Some(val) => fields.push((k.clone(), val.clone())),
                    None => {
                        return Err(format!(
                            "associative list with keys has an element that omits key field {k:?} (and doesn't have default value)"
                        ));
                    }
                }
            }
            Ok(PathElement::Key(fields))
        }
    }
}

/// Indexes a list's items by path element, in order; repeated elements after the first are
/// skipped (or refused when `strict`).
fn index_items<'v>(
    kind: &ListKind,
    items: Option<&'v Value>,
    strict: bool,
) -> Result<(Vec<PathElement>, BTreeMap<PathElement, &'v Value>), Fault> {
    let mut order = Vec::new();
    let mut seen = BTreeMap::new();
    if let Some(Value::Array(items)) = items {
        for (i, item) in items.iter().enumerate() {
            let pe = match item_element(kind, i, item) {
                Ok(pe) => pe,
                Err(e) if strict => return Err(Fault::new(format!("element {i}: {e}"))),
                Err(_) => continue,
            };
            if seen.contains_key(&pe) {
                if strict {
                    return Err(Fault::new(format!("duplicate entries for key {pe}")));
                }
                continue;
            }
            seen.insert(pe.clone(), item);
            order.push(pe);
        }
    }
    Ok((order, seen))
}

/// A type error found below a node; its path is collected while unwinding, so walks do not
/// track paths they will almost never print.
struct Fault {
    reversed_path: Vec<PathElement>,
    message: String,
}

impl Fault {
    fn new(message: String) -> Self {
        Fault {
            reversed_path: Vec::new(),
            message,
        }
    }

    fn at(mut self, pe: &PathElement) -> Self {
        self.reversed_path.push(pe.clone());
        self
    }

    fn into_error(mut self) -> TypeError {
        self.reversed_path.reverse();
        TypeError {
            path: Path(self.reversed_path).to_string(),
            message: self.message,
        }
    }
}

/// What a node contributes to a field set: itself as a whole, or what lies below it.
enum Owned {
    Leaf,
    Below(FieldSet),
}

/// Returns the fields a value sets (SMD's `TypedValue.ToFieldSet`): leaves, every map entry
/// and list item, but not the named fields of structs (they are implied by their children).
pub(crate) fn to_field_set(schema: &Schema, val: &Value) -> Result<FieldSet, TypeError> {
    match owned(schema, schema.root(), val).map_err(Fault::into_error)? {
        Owned::Leaf => Ok(FieldSet::new()),
        Owned::Below(set) => Ok(set),
    }
}

fn owned(schema: &Schema, ty: TypeId, val: &Value) -> Result<Owned, Fault> {
    let shape = match (schema.node(ty), val) {
        (Node::Deduced, Value::Object(_)) => Shape::Map(DEDUCED),
        (
            Node::Scalar(_)
            | Node::Deduced
            | Node::Map { atomic: true, .. }
            | Node::List {
                kind: ListKind::Atomic,
                ..
            },
            _,
        ) => return Ok(Owned::Leaf),
        (Node::Map { .. }, Value::Object(_)) => Shape::Map(ty),
        (Node::List { elem, kind }, Value::Array(_)) => Shape::List(*elem, kind),
        _ => return Ok(Owned::Below(FieldSet::new())),
    };
    let mut members = Vec::new();
    let mut children = Vec::new();
    match (shape, val) {
        (Shape::Map(mt), Value::Object(m)) => {
            for (k, cv) in m {
                let (ct, named) = schema.field(mt, k);
                let pe = PathElement::Field(k.clone());
                match owned(schema, ct, cv).map_err(|f| f.at(&pe))? {
                    Owned::Leaf => members.push(pe),
                    Owned::Below(below) => {
                        if !named {
                            members.push(pe.clone());
                        }
                        if !below.is_empty() {
                            children.push((pe, below));
                        }
                    }
                }
            }
        }
        (Shape::List(et, kind), Value::Array(items)) => {
            let mut seen = std::collections::BTreeSet::new();
            for (i, item) in items.iter().enumerate() {
                let pe = item_element(kind, i, item)
                    .map_err(|e| Fault::new(format!("element {i}: {e}")))?;
                if !seen.insert(pe.clone()) {
                    return Err(Fault::new(format!("duplicate entries for key {pe}")));
                }
                if let Owned::Below(below) = owned(schema, et, item).map_err(|f| f.at(&pe))?
                    && !below.is_empty()
                {
                    children.push((pe.clone(), below));
                }
                members.push(pe);
            }
        }
        _ => {}
    }
    let set = FieldSet::from_parts(members, children);
    Ok(Owned::Below(set))
}

/// Merges an applied configuration into a live object (SMD's `TypedValue.Merge`): the
/// configuration wins at every leaf; granular maps merge by key and granular lists by item, in
/// SMD's order (shared items in the configuration's order, live-only items where they were).
pub(crate) fn merge(schema: &Schema, live: &Value, config: &Value) -> Result<Value, TypeError> {
    let out =
        merge_node(schema, schema.root(), Some(live), Some(config)).map_err(Fault::into_error)?;
    Ok(out.unwrap_or_else(|| Value::Object(Map::new())))
}

fn merge_node(
    schema: &Schema,
    ty: TypeId,
    lhs: Option<&Value>,
    rhs: Option<&Value>,
) -> Result<Option<Value>, Fault> {
    match (lhs, rhs) {
        // Nothing applied here: the live value stays as it is.
        (_, None) => return Ok(lhs.cloned()),
        // Applied as it is (the configuration was checked by `to_field_set`).
        (Some(l), Some(r)) if equals(l, r) => {
            return Ok(Some(if r.is_object() || r.is_array() {
                l.clone()
            } else {
                r.clone()
            }));
        }
        _ => {}
    }
    match pair_shape(schema, ty, lhs, rhs) {
        Shape::Leaf => Ok(rhs.or(lhs).cloned()),
        Shape::Map(mt) => {
            let lo = lhs.and_then(Value::as_object);
            let ro = rhs.and_then(Value::as_object);
            let mut out = Map::new();
            if let Some(lo) = lo {
                for (k, lv) in lo {
                    if is_managed_fields(mt, k) {
                        continue;
                    }
                    let rv = ro.and_then(|ro| ro.get(k));
                    let (ct, _) = schema.field(mt, k);
                    let merged = merge_node(schema, ct, Some(lv), rv)
                        .map_err(|f| f.at(&PathElement::Field(k.clone())))?;
                    if let Some(m) = merged {
                        out.insert(k.clone(), m);
                    }
                }
            }
            if let Some(ro) = ro {
                for (k, rv) in ro {
                    if lo.is_some_and(|lo| lo.contains_key(k)) || is_managed_fields(mt, k) {
                        continue;
                    }
                    let (ct, _) = schema.field(mt, k);
                    let merged = merge_node(schema, ct, None, Some(rv))
                        .map_err(|f| f.at(&PathElement::Field(k.clone())))?;
                    if let Some(m) = merged {
                        out.insert(k.clone(), m);
                    }
                }
            }
            Ok(if out.is_empty() {
                None
            } else {
                Some(Value::Object(out))
            })
        }
        Shape::List(et, kind) => {
            let (r_order, r_items) = index_items(kind, rhs, true)?;
            let (l_order, l_items) = index_items(kind, lhs, false)?;
            let mut out = Vec::with_capacity(l_order.len().max(r_order.len()));
            let mut shared = r_order.iter().filter(|pe| l_items.contains_key(pe));
            let mut next_shared = shared.next();
            let (mut li, mut ri) = (0, 0);
            let mut push = |pe: &PathElement, lc, rc| {
                merge_node(schema, et, lc, rc)
                    .map_err(|f| f.at(pe))
                    .map(|m| {
                        if let Some(m) = m {
                            out.push(m);
                        }
                    })
            };
            while li < l_order.len() || ri < r_order.len() {
                if li < l_order.len() && ri < r_order.len() {
                    let pe = &l_order[li];
                    if *pe == r_order[ri] {
                        push(pe, l_items.get(pe).copied(), r_items.get(pe).copied())?;
                        li += 1;
                        ri += 1;
                        next_shared = shared.next();
                        continue;
                    }
                    if r_items.contains_key(pe) && next_shared.is_some_and(|n| n != pe) {
                        li += 1;
                        continue;
                    }
                }
                if li < l_order.len() {
                    let pe = &l_order[li];
                    if !r_items.contains_key(pe) {
                        push(pe, l_items.get(pe).copied(), None)?;
                        li += 1;
                        continue;
                    }
                }
                if ri < r_order.len() {
                    let pe = &r_order[ri];
                    push(pe, l_items.get(pe).copied(), r_items.get(pe).copied())?;
                    ri += 1;
                    if next_shared.is_some_and(|n| n == pe) {
                        next_shared = shared.next();
                    }
                }
            }
            Ok(if out.is_empty() {
                None
            } else {
                Some(Value::Array(out))
            })
        }
    }
}

/// The difference between two objects (SMD's `Comparison`).
#[derive(Debug, Default)]
pub(crate) struct Comparison {
    pub added: FieldSet,
    pub modified: FieldSet,
    pub removed: FieldSet,
}

/// Compares two objects (SMD's `TypedValue.Compare`): leaves added, removed or changed, and
/// every map, list or struct added or removed as a whole.
pub(crate) fn compare(schema: &Schema, old: &Value, new: &Value) -> Comparison {
    let mut cmp = Comparison::default();
    compare_children(schema, schema.root(), Some(old), Some(new), &mut cmp);
    cmp
}

/// Returns what a create adds: `compare(schema, &{}, new).added` built in one walk of `new`,
/// without the comparison's bookkeeping for modified and removed fields (a create's field
/// manager calls it on every POST).
pub(crate) fn added(schema: &Schema, new: &Value) -> FieldSet {
    added_below(schema, schema.root(), new)
}

/// The added fields below `val` of type `ty` (`compare_children` with nothing on the left).
fn added_below(schema: &Schema, ty: TypeId, val: &Value) -> FieldSet {
    let mut members = Vec::new();
    let mut children = Vec::new();
    match pair_shape(schema, ty, None, Some(val)) {
        Shape::Leaf => {}
        Shape::Map(mt) => {
            if let Some(o) = val.as_object() {
                members.reserve(o.len());
                for (k, v) in o {
                    if is_managed_fields(mt, k) {
                        continue;
                    }
                    let (ct, _) = schema.field(mt, k);
                    added_child(
                        schema,
                        ct,
                        PathElement::Field(k.clone()),
                        v,
                        &mut members,
                        &mut children,
                    );
                }
            }
        }
        Shape::List(et, kind) => {
            let Ok((order, items)) = index_items(kind, Some(val), false) else {
                return FieldSet::new();
            };
            for pe in order {
                if let Some(item) = items.get(&pe).copied() {
                    added_child(schema, et, pe, item, &mut members, &mut children);
                }
            }
        }
    }
    FieldSet::from_parts(members, children)
}

/// One added child (`compare_child` with nothing on the left): a leaf is a member; a map or list
/// is a member as a whole and a child with what lies below it.
fn added_child(
    schema: &Schema,
    ty: TypeId,
    pe: PathElement,
    val: &Value,
    members: &mut Vec<PathElement>,
    children: &mut Vec<(PathElement, FieldSet)>,
) {
    if let Shape::Leaf = pair_shape(schema, ty, None, Some(val)) {
        members.push(pe);
        return;
    }
    let below = added_below(schema, ty, val);
    if !below.is_empty() {
        children.push((pe.clone(), below));
    }
    members.push(pe);
}

fn compare_children(
    schema: &Schema,
    ty: TypeId,
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    cmp: &mut Comparison,
) {
    let mut level = Level::default();
    match pair_shape(schema, ty, lhs, rhs) {
        Shape::Leaf => {}
        Shape::Map(mt) => {
            let lo = lhs.and_then(Value::as_object);
            let ro = rhs.and_then(Value::as_object);
            if let Some(lo) = lo {
                for (k, lv) in lo {
                    let rv = ro.and_then(|ro| ro.get(k));
                    if is_managed_fields(mt, k) || rv.is_some_and(|rv| equals(lv, rv)) {
                        continue;
                    }
                    let (ct, _) = schema.field(mt, k);
                    compare_child(
                        schema,
                        ct,
                        PathElement::Field(k.clone()),
                        Some(lv),
                        rv,
                        &mut level,
                    );
                }
            }
            if let Some(ro) = ro {
                for (k, rv) in ro {
                    if lo.is_some_and(|lo| lo.contains_key(k)) || is_managed_fields(mt, k) {
                        continue;
                    }
                    let (ct, _) = schema.field(mt, k);
                    compare_child(
                        schema,
                        ct,
                        PathElement::Field(k.clone()),
                        None,
                        Some(rv),
                        &mut level,
                    );
                }
            }
        }
        Shape::List(et, kind) => {
            let Ok((l_order, l_items)) = index_items(kind, lhs, false) else {
                return;
            };
            let Ok((r_order, r_items)) = index_items(kind, rhs, false) else {
                return;
            };
            for pe in &l_order {
                let rv = r_items.get(pe).copied();
                compare_child(
                    schema,
                    et,
                    pe.clone(),
                    l_items.get(pe).copied(),
                    rv,
                    &mut level,
                );
            }
            for pe in r_order {
                if l_items.contains_key(&pe) {
                    continue;
                }
                let rv = r_items.get(&pe).copied();
                compare_child(schema, et, pe, None, rv, &mut level);
            }
        }
    }
    level.finish_into(cmp);
}

/// One level of a comparison being built: members and children gathered in walk order, sorted
/// once at the end (a list's items do not come in path-element order).
#[derive(Default)]
struct Level {
    added: (Vec<PathElement>, Vec<(PathElement, FieldSet)>),
    modified: (Vec<PathElement>, Vec<(PathElement, FieldSet)>),
    removed: (Vec<PathElement>, Vec<(PathElement, FieldSet)>),
}

impl Level {
    fn finish_into(self, cmp: &mut Comparison) {
        let build =
            |(m, c): (Vec<PathElement>, Vec<(PathElement, FieldSet)>)| FieldSet::from_parts(m, c);
        cmp.added = cmp.added.union(&build(self.added));
        cmp.modified = cmp.modified.union(&build(self.modified));
        cmp.removed = cmp.removed.union(&build(self.removed));
    }
}

fn push_child(list: &mut Vec<(PathElement, FieldSet)>, pe: &PathElement, set: FieldSet) {
    if !set.is_empty() {
        list.push((pe.clone(), set));
    }
}

fn compare_child(
    schema: &Schema,
    ty: TypeId,
    pe: PathElement,
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    level: &mut Level,
) {
    if let (Some(l), Some(r)) = (lhs, rhs)
        && equals(l, r)
    {
        return;
    }
    if let Shape::Leaf = pair_shape(schema, ty, lhs, rhs) {
        match (lhs, rhs) {
            (None, Some(_)) => level.added.0.push(pe),
            (Some(_), None) => level.removed.0.push(pe),
            (Some(a), Some(b)) if !equals(a, b) => {
                // A deduced map that became a scalar (or the reverse) also loses (or gains)
                // its entries, as SMD walks the map side of mismatched atoms.
                if matches!(schema.node(ty), Node::Deduced) && a.is_object() != b.is_object() {
                    let mut sub = Comparison::default();
                    let (la, rb) = (a.is_object().then_some(a), b.is_object().then_some(b));
                    compare_children(schema, DEDUCED, la, rb, &mut sub);
                    push_child(&mut level.added.1, &pe, sub.added);
                    push_child(&mut level.removed.1, &pe, sub.removed);
                }
                level.modified.0.push(pe);
            }
            _ => {}
        }
        return;
    }
    let mut sub = Comparison::default();
    compare_children(schema, ty, lhs, rhs, &mut sub);
    if lhs.is_none() {
        level.added.0.push(pe.clone());
    }
    if rhs.is_none() {
        level.removed.0.push(pe.clone());
    }
    push_child(&mut level.added.1, &pe, sub.added);
    push_child(&mut level.modified.1, &pe, sub.modified);
    push_child(&mut level.removed.1, &pe, sub.removed);
}

/// Removes from `merged` what the applier owned last time and no manager owns now (SMD's
/// `Updater.prune` with `addBackOwnedItems` and `addBackDanglingItems`, which come down to:
/// a field, map entry or list item goes when it is in `last` and not in `owned`, a struct field
/// counting as in a set when the set has paths below it).
///
/// A granular map or list emptied this way becomes `null`, or goes when it was itself in `last`,
/// as SMD's removal walker leaves it.
pub(crate) fn prune(schema: &Schema, merged: &mut Value, last: &FieldSet, owned: &[&FieldSet]) {
    prune_node(schema, schema.root(), merged, last, owned);
}

/// Whether any of `sets` holds `pe` (a struct field also when a set has paths below it).
fn in_any(sets: &[&FieldSet], pe: &PathElement, named: bool) -> bool {
    sets.iter().any(|s| in_set(Some(s), pe, named))
}

fn children_of<'a>(sets: &[&'a FieldSet], pe: &PathElement) -> Vec<&'a FieldSet> {
    sets.iter().filter_map(|s| s.child(pe)).collect()
}

fn in_set(set: Option<&FieldSet>, pe: &PathElement, named: bool) -> bool {
    set.is_some_and(|set| {
        set.has_member(pe) || (named && set.child(pe).is_some_and(|cmp| !cmp.is_empty()))
    })
}

fn is_nonempty_container(val: &Value) -> bool {
    match val {
        Value::Object(m) => !m.is_empty(),
        Value::Array(a) => !a.is_empty(),
        _ => false,
    }
}

fn prune_node(schema: &Schema, ty: TypeId, val: &mut Value, last: &FieldSet, owned: &[&FieldSet]) {
    let shape = match schema.node(ty) {
        Node::Deduced if val.is_object() => Shape::Map(DEDUCED),
        Node::Map { atomic: false, .. } if val.is_object() => Shape::Map(ty),
        Node::List { elem, kind } if val.is_array() && !matches!(kind, ListKind::Atomic) => {
            Shape::List(*elem, kind)
        }
        _ => return,
    };
    match shape {
        Shape::Map(mt) => {
            let Value::Object(m) = val else { return };
            for pe in last.member_and_child_elements() {
                let PathElement::Field(k) = pe else { continue };
                let Some(child) = m.get_mut(k) else { continue };
                let (ct, named) = schema.field(mt, k);
                let in_last = in_set(Some(last), pe, named);
                let in_owned = in_any(owned, pe, named);
                if in_last && !in_owned {
                    m.remove(k);
                    continue;
                }
                if let Some(lc) = last.child(pe) {
                    let was = is_nonempty_container(child);
                    prune_node(schema, ct, child, lc, &children_of(owned, pe));
                    if was && !is_nonempty_container(child) {
                        if in_last {
                            m.remove(k);
                        } else {
                            *child = Value::Null;
                        }
                    }
                }
            }
        }
        Shape::List(et, kind) => {
            let Value::Array(items) = val else { return };
            let mut index: BTreeMap<PathElement, usize> = BTreeMap::new();
            for (i, item) in items.iter().enumerate() {
                if let Ok(pe) = item_element(kind, i, item) {
                    index.entry(pe).or_insert(i);
                }
            }
            let mut drop = vec![false; items.len()];
            for pe in last.member_and_child_elements() {
                let Some(&i) = index.get(pe) else { continue };
                let in_last = in_set(Some(last), pe, false);
                let in_owned = in_any(owned, pe, false);
                if in_last && !in_owned {
                    drop[i] = true;
                    continue;
                }
                if let Some(lc) = last.child(pe) {
                    let item = &mut items[i];
                    let was = is_nonempty_container(item);
                    prune_node(schema, et, item, lc, &children_of(owned, pe));
                    if was && !is_nonempty_container(item) {
                        if in_last {
                            drop[i] = true;
                        } else {
                            *item = Value::Null;
                        }
                    }
                }
            }
            let mut i = 0;
            items.retain(|_| {
                let keep = !drop[i];
                i += 1;
                keep
            });
        }
        Shape::Leaf => {}
    }
}

/// A path as a chain of borrowed elements, built only when a reconciliation needs it.
struct Chain<'a> {
    pe: &'a PathElement,
    parent: Option<&'a Chain<'a>>,
}

impl Chain<'_> {
    fn to_path(chain: Option<&Chain<'_>>) -> Vec<PathElement> {
        let mut out = Vec::new();
        let mut at = chain;
        while let Some(c) = at {
            out.push(c.pe.clone());
            at = c.parent;
        }
        out.reverse();
        out
    }
}

/// Adapts a manager's field set to schema changes since it was recorded (SMD's
/// `ReconcileFieldSetWithSchema`): a map or list now atomic is owned whole instead of by parts.
/// Returns `None` when nothing changes. Deduced parts are left alone, as upstream leaves them.
///
/// The reverse change (atomic to granular) is not reconciled, as SMD no longer does
/// (kubernetes-sigs/structured-merge-diff#192): a field owned whole whose type is now granular
/// stays owned as the field alone, none of its parts. A member with no children cannot be told
/// apart from a granular map or list whose parts all went to other managers (`f:data: {}` after
/// another manager took every key), and expanding it would hand those parts back on the next
/// write by anyone.
pub(crate) fn reconcile(schema: &Schema, set: &FieldSet) -> Option<FieldSet> {
    let mut remove = FieldSet::new();
    let mut add = FieldSet::new();
    reconcile_node(
        schema,
        schema.root(),
        Some(set),
        false,
        None,
        &mut remove,
        &mut add,
    );
    if remove.is_empty() && add.is_empty() {
        return None;
    }
    Some(set.recursive_difference(&remove).union(&add))
}

fn reconcile_node(
    schema: &Schema,
    ty: TypeId,
    node: Option<&FieldSet>,
    is_atomic: bool,
    chain: Option<&Chain<'_>>,
    remove: &mut FieldSet,
    add: &mut FieldSet,
) {
    let collapse = |remove: &mut FieldSet, add: &mut FieldSet| {
        let path = Chain::to_path(chain);
        remove.insert(&path);
        add.insert(&path);
    };
    match schema.node(ty) {
        Node::Scalar(_) | Node::Deduced => {}
        Node::List {
            kind: ListKind::Atomic,
            ..
        } => {
            if !is_atomic && chain.is_some() {
                collapse(remove, add);
            }
        }
        Node::Map { atomic: true, .. } => {
            if !is_atomic && chain.is_some() && node.is_some_and(|n| !n.is_empty()) {
                collapse(remove, add);
            }
        }
        granular => {
            let Some(node) = node else { return };
            let child_type = |pe: &PathElement| match (granular, pe) {
                (Node::List { elem, .. }, _) => Some(*elem),
                (Node::Map { .. }, PathElement::Field(name)) => Some(schema.field(ty, name).0),
                _ => None,
            };
            for (pe, child) in node.children() {
                if let Some(ct) = child_type(pe)
                    && !node.has_member(pe)
                {
                    let link = Chain { pe, parent: chain };
                    reconcile_node(schema, ct, Some(child), false, Some(&link), remove, add);
                }
            }
            for pe in node.members() {
                if let Some(ct) = child_type(pe) {
                    let child = node.child(pe).filter(|c| !c.is_empty());
                    let link = Chain { pe, parent: chain };
                    let atomic = child.is_none();
                    reconcile_node(schema, ct, child, atomic, Some(&link), remove, add);
                }
            }
        }
    }
}
