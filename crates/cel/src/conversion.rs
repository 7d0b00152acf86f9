//! Declarative CRD conversion (`spec.conversion.strategy: ConversionRules`, KEP-3945): the
//! `conversionRules` of a CRD read from its raw JSON, compiled once per CRD revision, applied to
//! objects, and checked when the CRD is written.
//!
//! The API is the KEP's: `conversionRules: [{from, to, rules: [{fromField, toField,
//! transformation}]}]`. `fromField` and `toField` are paths from the object's root (`.spec.a`,
//! `.metadata.annotations['example.com/k']`, `.spec.items[*].name` for every element of a
//! list); `transformation` is a CEL expression over `self` (the value at `fromField`, typed by
//! the `from` version's schema), `self` when absent. Conversion of one object for one
//! `(from, to)` pair:
//! 1. fields without a rule are kept (the object is converted in place, not copied);
//! 2. every `fromField` is removed from the copy (parents left empty by the removal go too,
//!    except top-level fields), unless the rule's `toField` lies at or below it;
//! 3. every rule whose `fromField` is set in the original writes its transformation's result at
//!    `toField`: `null` or `optional.none()` writes nothing (conditional conversion), a rule
//!    without `toField` deletes. Lossy conversions keep what the target cannot hold in an
//!    annotation (a `toField` under `.metadata.annotations`) and read it back in the other
//!    direction, as the API conventions ask of conversion webhooks.
//!
//! Versions without a direct pair are converted through the shortest chain of pairs (the CRD
//! write requires every served version to be reachable from the storage version and back).
//!
//! Main items: [`ConversionRules`] (compile, [`ConversionRules::convert`],
//! [`ConversionRules::metadata_reach`]),
//! [`check_conversion_rules`] (the CRD-write checks), [`round_trip_losses`] (the round-trip
//! check over a sample of each version's schema).
//!
//! Architecture Invariant: a transformation the CRD write accepted always compiles for
//! conversion (the write checks in the new-expressions environment, conversion compiles in the
//! stored-expressions superset), and every evaluation runs under the per-call cost limit.

use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::sync::Arc;

use crd_core::{ErrorList, FieldError, Path};
use kube_cel::cel::Value as Cel;
use kube_cel::cel::objects::{Key, OptionalValue};
use serde_json::{Map, Value, json};

use crate::checker::types::{Compat, Type, is_embedded};
use crate::checker::{Env, check};
use crate::cost;
use crate::eval::{EvalError, Program, lower, run, to_cel};
use crate::parse::parse;
use crate::validator::PER_CALL_LIMIT;

/// The strategy name of declarative conversion in `spec.conversion.strategy`.
pub const STRATEGY: &str = "ConversionRules";

/// One step of a field path.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    /// A property (or a map key).
    Field(String),
    /// Every element of a list (`[*]`).
    Each,
}

/// Parses `.a.b['c.d'][*].e`. `Err` describes the first bad character.
fn parse_path(raw: &str) -> Result<Vec<Step>, String> {
    let mut steps = Vec::new();
    let mut rest = raw.trim();
    if rest.is_empty() {
        return Err("must be a path from the object's root, such as .spec.field".into());
    }
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("[*]") {
            steps.push(Step::Each);
            rest = r;
        } else if let Some(r) = rest.strip_prefix("['") {
            let end = r
                .find("']")
                .ok_or_else(|| "unterminated ['...'] key".to_string())?;
            if end == 0 {
                return Err("empty ['...'] key".into());
            }
            steps.push(Step::Field(r[..end].to_string()));
            rest = &r[end + 2..];
        } else if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            if end == 0 {
                return Err("empty field name".into());
            }
            steps.push(Step::Field(r[..end].to_string()));
            rest = &r[end..];
        } else {
            return Err(format!(
                "unexpected {:?}: steps are .name, ['key'] or [*]",
                rest.chars().next().unwrap_or(' ')
            ));
        }
    }
    if !matches!(steps.first(), Some(Step::Field(_))) {
        return Err("must start with a field".into());
    }
    Ok(steps)
}

/// The schema `metadata` has for conversion rules: labels and annotations are string maps.
fn metadata_schema() -> Value {
    let strings = json!({"type": "object", "additionalProperties": {"type": "string"}});
    json!({"type": "object", "properties": {"labels": strings, "annotations": strings}})
}

/// The schema node at `steps` below the version's root schema; `None` when the path leaves it.
fn node_at(root: &Value, steps: &[Step]) -> Option<Value> {
    let mut node = root.clone();
    for (i, step) in steps.iter().enumerate() {
        node = match step {
            Step::Field(name) if i == 0 && name == "metadata" => metadata_schema(),
            Step::Field(name) => {
                if let Some(p) = node.get("properties").and_then(|p| p.get(name)) {
                    p.clone()
                } else if let Some(ap) = node.get("additionalProperties").filter(|a| a.is_object())
                {
                    ap.clone()
                } else if node
                    .get("x-kubernetes-preserve-unknown-fields")
                    .and_then(Value::as_bool)
                    == Some(true)
                {
                    json!({"x-kubernetes-preserve-unknown-fields": true})
                } else {
                    return None;
                }
            }
            Step::Each => node.get("items")?.clone(),
        };
    }
    Some(node)
}

/// One compiled rule.
#[derive(Debug)]
struct Rule {
    from: Vec<Step>,
    to: Option<Vec<Step>>,
    /// The `from` node's schema, for converting the value to CEL.
    from_schema: Value,
    /// `None` for the identity (`self` or no transformation): the value is copied as JSON.
    program: Option<Program>,
    source: String,
    /// Whether the values at `from` may be moved out of the object instead of copied: the
    /// conversion removes `from` anyway (`to` is not at or below it) and no other rule of the
    /// pair reads a path at, above or below it.
    take: bool,
}

/// The compiled rules of one `(from, to)` pair.
#[derive(Debug)]
struct Pair {
    from: String,
    to: String,
    rules: Vec<Rule>,
    /// The widest [`MetadataReach`] of the rules' paths.
    reach: MetadataReach,
}

/// A CRD's `conversionRules`, compiled once per CRD revision.
#[derive(Debug, Default)]
pub struct ConversionRules {
    group: String,
    pairs: Vec<Pair>,
    /// The route between every two versions the pairs connect, found once here rather than by
    /// a search per converted object.
    routes: Vec<Route>,
}

/// How one version converts to another: the chain of pairs, and what it can write of
/// `metadata` (the widest of its pairs).
#[derive(Debug)]
struct Route {
    from: String,
    to: String,
    steps: Vec<usize>,
    reach: MetadataReach,
    writes: MetadataWrites,
}

/// The route from a version to itself: nothing to apply, nothing written.
static SAME_VERSION: Route = Route {
    from: String::new(),
    to: String::new(),
    steps: Vec::new(),
    reach: MetadataReach::Nothing,
    writes: MetadataWrites {
        labels: MapWrites::Nothing,
        annotations: MapWrites::Nothing,
        invalid_keys: false,
    },
};

/// What a conversion's rules write in `metadata.labels` and `metadata.annotations`, decided
/// once per CRD revision from the `toField`s: a caller checks those entries of a converted
/// object (the others are the stored object's, validated when it was written).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MetadataWrites {
    /// What the rules write in `metadata.labels`.
    pub labels: MapWrites,
    /// What the rules write in `metadata.annotations`.
    pub annotations: MapWrites,
    /// Whether a key of [`MapWrites::Keys`] is not a valid key of its map (`ValidateLabels`'
    /// and `ValidateAnnotations`' key checks). The keys are the rules' own, so this is decided
    /// once per CRD revision: with valid keys, a caller checks only the values written.
    pub invalid_keys: bool,
}

/// What the rules write in one string map of `metadata`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum MapWrites {
    /// No entry (removals only, which cannot make the map invalid).
    #[default]
    Nothing,
    /// These keys only, sorted.
    Keys(Vec<String>),
    /// The map as a whole (a `toField` naming the map itself).
    Whole,
}

impl MapWrites {
    /// The writes of one `toField` into this map (`rest`: the steps below the map; none for
    /// the map itself).
    fn of(rest: &[Step]) -> Self {
        match rest {
            [Step::Field(key)] => MapWrites::Keys(vec![key.clone()]),
            _ => MapWrites::Whole,
        }
    }

    /// The writes of both `self` and `other`.
    fn union(self, other: &MapWrites) -> Self {
        match (self, other) {
            (MapWrites::Whole, _) | (_, MapWrites::Whole) => MapWrites::Whole,
            (MapWrites::Nothing, o) => o.clone(),
            (s, MapWrites::Nothing) => s,
            (MapWrites::Keys(mut a), MapWrites::Keys(b)) => {
                a.extend(b.iter().cloned());
                a.sort_unstable();
                a.dedup();
                MapWrites::Keys(a)
            }
        }
    }
}

impl MetadataWrites {
    /// What one pair's rules write.
    fn of(rules: &[Rule]) -> Self {
        let mut out = MetadataWrites {
            invalid_keys: rules
                .iter()
                .filter_map(|r| r.to.as_deref())
                .any(invalid_key),
            ..MetadataWrites::default()
        };
        for to in rules.iter().filter_map(|r| r.to.as_deref()) {
            if let [Step::Field(top), Step::Field(map), rest @ ..] = to
                && top == "metadata"
            {
                let writes = MapWrites::of(rest);
                match map.as_str() {
                    "labels" => out.labels = std::mem::take(&mut out.labels).union(&writes),
                    "annotations" => {
                        out.annotations = std::mem::take(&mut out.annotations).union(&writes);
                    }
                    _ => {}
                }
            }
        }
        out
    }

    fn union(self, other: &MetadataWrites) -> Self {
        MetadataWrites {
            labels: self.labels.union(&other.labels),
            annotations: self.annotations.union(&other.annotations),
            invalid_keys: self.invalid_keys || other.invalid_keys,
        }
    }
}

/// Whether a `toField` writes one entry of `metadata.labels` or `metadata.annotations` under a
/// key that map does not allow (the key checks of `ValidateLabels` and `ValidateAnnotations`,
/// on the key alone: an empty value is valid in both maps).
fn invalid_key(to: &[Step]) -> bool {
    let [Step::Field(top), Step::Field(map), Step::Field(key)] = to else {
        return false;
    };
    if top != "metadata" {
        return false;
    }
    let entry = json!({ key.as_str(): "" });
    let path = Path::new("metadata").child(map);
    match map.as_str() {
        "labels" => !crd_core::validation::validate_labels(Some(&entry), &path).is_empty(),
        "annotations" => {
            !crd_core::validation::validate_annotations(Some(&entry), &path).is_empty()
        }
        _ => false,
    }
}

/// Whether one path is at or below the other.
fn overlaps(a: &[Step], b: &[Step]) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// The raw `spec.conversion.conversionRules` entries.
fn raw_pairs(crd: &Value) -> &[Value] {
    crd.pointer("/spec/conversion/conversionRules")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Each version's root schema by name.
fn version_schemas(crd: &Value) -> HashMap<String, Value> {
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| {
            let name = v.get("name")?.as_str()?.to_string();
            let schema = v
                .pointer("/schema/openAPIV3Schema")
                .cloned()
                .unwrap_or_else(
                    || json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
                );
            Some((name, schema))
        })
        .collect()
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The transformation's source, `None` for the identity.
fn transformation(rule: &Value) -> Option<&str> {
    rule.get("transformation")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|t| !t.is_empty() && *t != "self")
}

impl ConversionRules {
    /// Compiles the rules of a CRD (raw JSON). Rules that do not compile are skipped (the CRD
    /// write refused them).
    pub fn compile(crd: &Value) -> Self {
        let schemas = version_schemas(crd);
        let group = crd
            .pointer("/spec/group")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let mut pairs = Vec::new();
        for p in raw_pairs(crd) {
            let (from, to) = (str_of(p, "from"), str_of(p, "to"));
            let Some(from_root) = schemas.get(from) else {
                continue;
            };
            let rules: Vec<Rule> = p
                .get("rules")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|r| {
                    let from_steps = parse_path(str_of(r, "fromField")).ok()?;
                    let to_steps = match r.get("toField").and_then(Value::as_str) {
                        Some(t) if !t.trim().is_empty() => Some(parse_path(t).ok()?),
                        _ => None,
                    };
                    let from_schema = node_at(from_root, &from_steps)?;
                    let program = match transformation(r) {
                        None => None,
                        Some(src) => Some(
                            compile_program(src, &from_schema, Compat::StoredExpressions)
                                .ok()?
                                .0,
                        ),
                    };
                    Some(Rule {
                        from: from_steps,
                        to: to_steps,
                        from_schema,
                        program,
                        source: transformation(r).unwrap_or("self").to_string(),
                        take: false,
                    })
                })
                .collect();
            let mut rules = rules;
            for i in 0..rules.len() {
                let r = &rules[i];
                let removed = r.to.as_ref().is_some_and(|to| !to.starts_with(&r.from));
                let shared = rules
                    .iter()
                    .enumerate()
                    .any(|(j, o)| j != i && overlaps(&o.from, &r.from));
                rules[i].take = removed && !shared;
            }
            let reach = rules
                .iter()
                .flat_map(|r| std::iter::once(&r.from).chain(r.to.as_ref()))
                .map(|p| path_reach(p))
                .max()
                .unwrap_or(MetadataReach::Nothing);
            pairs.push(Pair {
                from: from.to_string(),
                to: to.to_string(),
                rules,
                reach,
            });
        }
        let routes = routes(&pairs);
        ConversionRules {
            group,
            pairs,
            routes,
        }
    }

    /// The route converting `from` to `to` (the shortest chain; empty when equal).
    fn route(&self, from: &str, to: &str) -> Option<&Route> {
        if from == to {
            return Some(&SAME_VERSION);
        }
        self.routes.iter().find(|r| r.from == from && r.to == to)
    }

    /// Converts one object to `target` (a version name). The object's own `apiVersion` names
    /// the source version. `Err` is the reason, prefixed by the failing field.
    pub fn convert(&self, obj: &Value, target: &str) -> Result<Value, String> {
        self.convert_owned(obj.clone(), target)
    }

    /// [`ConversionRules::convert`] of an object the caller gives up: the object is converted
    /// in place (fields without a rule are moved, never copied), so a list pays for the values
    /// its rules read, not for a copy of every object.
    pub fn convert_owned(&self, mut obj: Value, target: &str) -> Result<Value, String> {
        let source = str_of(&obj, "apiVersion")
            .rsplit('/')
            .next()
            .unwrap_or("")
            .to_string();
        self.convert_in_place(&mut obj, &source, target)?;
        if let Some(m) = obj.as_object_mut() {
            m.insert(
                "apiVersion".into(),
                Value::String(format!("{}/{target}", self.group)),
            );
        }
        Ok(obj)
    }

    /// Applies the rules converting `source` to `target` (version names) to `obj` in place,
    /// leaving `apiVersion` to the caller, who knows it already: what a list pays per object.
    /// On `Err` the object is partly converted (its `apiVersion` and what the rules cannot
    /// reach are unchanged, so the caller can still name it in the message).
    pub fn convert_in_place(
        &self,
        obj: &mut Value,
        source: &str,
        target: &str,
    ) -> Result<(), String> {
        let route = self
            .route(source, target)
            .ok_or_else(|| format!("no conversion rules from {source} to {target}"))?;
        for &i in &route.steps {
            apply_pair(&self.pairs[i], obj)?;
        }
        Ok(())
    }

    /// What the rules converting `from` to `to` can write under `metadata` (through every pair
    /// of the chain): what a caller must check and restore of an object's metadata afterwards.
    pub fn metadata_reach(&self, from: &str, to: &str) -> MetadataReach {
        self.route(from, to).map_or(MetadataReach::Any, |r| r.reach)
    }

    /// What the rules converting `from` to `to` write in labels and annotations (through every
    /// pair of the chain); `None` when there is no such conversion.
    pub fn metadata_writes(&self, from: &str, to: &str) -> Option<&MetadataWrites> {
        self.route(from, to).map(|r| &r.writes)
    }
}

/// What a conversion's rules can change of an object's identity and metadata, decided once per
/// CRD revision from the rules' paths (the CRD write refuses paths outside the schemas, and
/// `metadata` holds only `labels` and `annotations` for rules).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum MetadataReach {
    /// No rule reads or writes `metadata`, `kind` or `apiVersion`: the converted object's
    /// metadata is the original's.
    Nothing,
    /// Rules read or write only inside `metadata.labels` and `metadata.annotations`.
    LabelsAndAnnotations,
    /// A rule reads or writes `metadata` as a whole, `kind` or `apiVersion`: the converted
    /// object needs every check a webhook's answer gets.
    Any,
}

/// The reach of one rule path.
fn path_reach(steps: &[Step]) -> MetadataReach {
    match steps {
        [Step::Field(top), ..] if top == "kind" || top == "apiVersion" => MetadataReach::Any,
        [Step::Field(top), Step::Field(map), ..]
            if top == "metadata" && (map == "labels" || map == "annotations") =>
        {
            MetadataReach::LabelsAndAnnotations
        }
        [Step::Field(top), ..] if top == "metadata" => MetadataReach::Any,
        _ => MetadataReach::Nothing,
    }
}

/// The route between every two distinct versions the pairs name, where there is one.
fn routes(pairs: &[Pair]) -> Vec<Route> {
    let mut names: Vec<&str> = pairs
        .iter()
        .flat_map(|p| [p.from.as_str(), p.to.as_str()])
        .collect();
    names.sort_unstable();
    names.dedup();
    let mut out = Vec::new();
    for &from in &names {
        for &to in names.iter().filter(|&&t| t != from) {
            let Some(steps) = chain(
                pairs.iter().map(|p| (p.from.as_str(), p.to.as_str())),
                from,
                to,
            ) else {
                continue;
            };
            let reach = steps
                .iter()
                .map(|&i| pairs[i].reach)
                .max()
                .unwrap_or(MetadataReach::Nothing);
            let writes = steps.iter().fold(MetadataWrites::default(), |w, &i| {
                w.union(&MetadataWrites::of(&pairs[i].rules))
            });
            out.push(Route {
                from: from.to_string(),
                to: to.to_string(),
                steps,
                reach,
                writes,
            });
        }
    }
    out
}

/// Breadth-first search over `(from, to)` edges.
fn chain<'a>(
    edges: impl Iterator<Item = (&'a str, &'a str)>,
    from: &str,
    to: &str,
) -> Option<Vec<usize>> {
    if from == to {
        return Some(Vec::new());
    }
    let edges: Vec<(&str, &str)> = edges.collect();
    // A direct pair is the shortest chain (the first such edge, as the search finds it).
    if let Some(i) = edges.iter().position(|&(a, b)| a == from && b == to) {
        return Some(vec![i]);
    }
    let mut prev: HashMap<&str, (usize, &str)> = HashMap::new();
    let mut queue = VecDeque::from([from]);
    while let Some(v) = queue.pop_front() {
        for (i, (a, b)) in edges.iter().enumerate() {
            if *a == v && *b != from && !prev.contains_key(b) {
                prev.insert(b, (i, v));
                if *b == to {
                    let mut out = vec![i];
                    let mut at = v;
                    while at != from {
                        let (j, p) = prev[at];
                        out.push(j);
                        at = p;
                    }
                    out.reverse();
                    return Some(out);
                }
                queue.push_back(b);
            }
        }
    }
    None
}

/// Parses, type-checks and lowers a transformation with `self` typed by `node`; returns the
/// program, the checked result type and the estimated cost.
fn compile_program(
    source: &str,
    node: &Value,
    compat: Compat,
) -> Result<(Program, Type, u64), String> {
    let expr = parse(source)?;
    let env = Env {
        dyn_vars: &[],
        self_schema: node,
        resource_root: is_embedded(node),
        old_self: false,
        optional_old_self: false,
        compat,
        typed_vars: &[],
        mutation: false,
    };
    let checked = check(&expr, source, &env)?;
    let estimate = cost::estimate_conversion(&expr, &checked);
    let result = checked.result.clone();
    Ok((lower(expr, &checked), result, estimate))
}

/// Applies one pair's rules to `obj` in place. Every rule reads the object as it was before the
/// pair (the values at its `fromField` are taken first), then `fromField`s are removed and the
/// results written, rule by rule.
fn apply_pair(pair: &Pair, obj: &mut Value) -> Result<(), String> {
    let mut inputs: Vec<Vec<(Vec<usize>, Value)>> = Vec::with_capacity(pair.rules.len());
    for r in &pair.rules {
        let mut values = Vec::new();
        if r.to.is_some() {
            // A value removed below anyway, and read by no other rule, is moved, not copied
            // (the `null` left behind goes with the removal).
            for_each_value(obj, &r.from, &mut Vec::new(), &mut |indices, v| {
                let v = if r.take { v.take() } else { v.clone() };
                values.push((indices.to_vec(), v));
            });
        }
        inputs.push(values);
    }
    for r in &pair.rules {
        // A toField at or below its fromField (an in-place transformation, or a field built
        // from its parent object) keeps the rest of the fromField.
        let within = r.to.as_ref().is_some_and(|to| to.starts_with(&r.from));
        if !within {
            remove_at(obj, &r.from, true);
        }
    }
    for (r, values) in pair.rules.iter().zip(inputs) {
        let Some(to) = &r.to else {
            continue;
        };
        for (indices, v) in values {
            match transform(r, v) {
                Ok(Some(value)) => set_at(obj, to, &indices, value),
                Ok(None) => {}
                Err(e) => return Err(format!("{}: {e}", display_path(&r.from))),
            }
        }
    }
    Ok(())
}

/// Runs a rule's transformation on one value; `None` writes nothing.
fn transform(rule: &Rule, v: Value) -> Result<Option<Value>, String> {
    let Some(program) = &rule.program else {
        return Ok(Some(v));
    };
    let input = to_cel(&v, &rule.from_schema, is_embedded(&rule.from_schema));
    match run(program, &[("self", input)], PER_CALL_LIMIT).0 {
        Ok(out) => Ok(from_cel(&out)),
        Err(EvalError::CostLimit) => Err(crate::eval::COST_LIMIT_EXCEEDED.to_string()),
        Err(EvalError::Runtime(e)) => Err(format!("transformation {:?} failed: {e}", rule.source)),
    }
}

/// The path as written (`.spec.a[*].b`).
fn display_path(steps: &[Step]) -> String {
    let mut out = String::new();
    for s in steps {
        match s {
            Step::Field(f) if f.contains(['.', '/', '[', ']']) => {
                let _ = write!(out, "['{f}']");
            }
            Step::Field(f) => {
                out.push('.');
                out.push_str(f);
            }
            Step::Each => out.push_str("[*]"),
        }
    }
    out
}

/// Calls `f` with every value at `steps` (and the list indices `[*]` stood for); `null` counts
/// as absent. `f` copies the value, or moves it out (leaving `null`) when it goes anyway.
fn for_each_value(
    v: &mut Value,
    steps: &[Step],
    indices: &mut Vec<usize>,
    f: &mut dyn FnMut(&[usize], &mut Value),
) {
    let Some((first, rest)) = steps.split_first() else {
        if !v.is_null() {
            f(indices, v);
        }
        return;
    };
    match first {
        Step::Field(name) => {
            if let Some(c) = v.get_mut(name) {
                for_each_value(c, rest, indices, f);
            }
        }
        Step::Each => {
            if let Some(items) = v.as_array_mut() {
                for (i, item) in items.iter_mut().enumerate() {
                    indices.push(i);
                    for_each_value(item, rest, indices, f);
                    indices.pop();
                }
            }
        }
    }
}

/// Removes the value at `steps`; parents left empty go too, except top-level fields.
fn remove_at(v: &mut Value, steps: &[Step], top: bool) -> bool {
    let Some((first, rest)) = steps.split_first() else {
        return false;
    };
    match first {
        Step::Field(name) => {
            let Some(m) = v.as_object_mut() else {
                return false;
            };
            if rest.is_empty() {
                return m.remove(name).is_some();
            }
            let Some(child) = m.get_mut(name) else {
                return false;
            };
            let removed = remove_at(child, rest, false);
            let emptied = child.as_object().is_some_and(Map::is_empty)
                || child.as_array().is_some_and(Vec::is_empty);
            if removed && !top && emptied {
                m.remove(name);
            }
            if removed && top && name == "metadata" {
                // An annotation map left empty goes too.
                if let Some(meta) = m.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.retain(|_, v| !v.as_object().is_some_and(Map::is_empty));
                }
            }
            removed
        }
        Step::Each => {
            let Some(items) = v.as_array_mut() else {
                return false;
            };
            if rest.is_empty() {
                // `[*]` at the end names every element: they all go (their list with them).
                let any = !items.is_empty();
                items.clear();
                return any;
            }
            let mut any = false;
            for item in items {
                any |= remove_at(item, rest, false);
            }
            any
        }
    }
}

/// Writes `value` at `steps`, creating objects on the way; `[*]` steps take the next index.
fn set_at(v: &mut Value, steps: &[Step], indices: &[usize], value: Value) {
    let Some((first, rest)) = steps.split_first() else {
        *v = value;
        return;
    };
    match first {
        Step::Field(name) => {
            if !v.is_object() {
                *v = Value::Object(Map::new());
            }
            if let Some(m) = v.as_object_mut() {
                // The key is copied only when it is new (`entry` takes an owned key).
                if !m.contains_key(name) {
                    m.insert(name.clone(), Value::Null);
                }
                if let Some(child) = m.get_mut(name) {
                    set_at(child, rest, indices, value);
                }
            }
        }
        Step::Each => {
            let Some((&i, more)) = indices.split_first() else {
                return;
            };
            if !v.is_array() {
                *v = Value::Array(Vec::new());
            }
            if let Some(items) = v.as_array_mut() {
                while items.len() <= i {
                    items.push(Value::Object(Map::new()));
                }
                set_at(&mut items[i], rest, more, value);
            }
        }
    }
}

/// A CEL result as JSON; `None` for `null` and `optional.none()`.
fn from_cel(v: &Cel) -> Option<Value> {
    Some(match v {
        Cel::Bool(b) => Value::Bool(*b),
        Cel::Int(i) => Value::from(*i),
        Cel::UInt(u) => Value::from(*u),
        Cel::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
        Cel::String(s) => Value::String(s.to_string()),
        Cel::Bytes(b) => {
            use base64::Engine;
            Value::String(base64::engine::general_purpose::STANDARD.encode(b.as_slice()))
        }
        Cel::Duration(d) => Value::String(crd_core::time::format_go_duration(
            d.num_nanoseconds().unwrap_or(i64::MAX),
        )),
        Cel::Timestamp(t) => Value::String(t.to_rfc3339().replace("+00:00", "Z")),
        Cel::List(l) => Value::Array(l.iter().filter_map(from_cel).collect()),
        Cel::Map(m) => Value::Object(
            m.map
                .iter()
                .filter_map(|(k, v)| {
                    let key = match k {
                        Key::String(s) => s.to_string(),
                        Key::Int(i) => i.to_string(),
                        Key::Uint(u) => u.to_string(),
                        Key::Bool(b) => b.to_string(),
                    };
                    Some((key, from_cel(v)?))
                })
                .collect(),
        ),
        Cel::Opaque(o) => {
            return o
                .downcast_ref::<OptionalValue>()
                .and_then(|opt| opt.value().and_then(from_cel));
        }
        // `null`, functions and types write nothing.
        _ => return None,
    })
}

/// Whether a transformation's result type can be written where `node` is declared.
fn assignable(result: &Type, node: &Value) -> bool {
    if node
        .get("x-kubernetes-int-or-string")
        .and_then(Value::as_bool)
        == Some(true)
    {
        return matches!(result, Type::Int | Type::String | Type::Dyn | Type::Null);
    }
    if node
        .get("x-kubernetes-preserve-unknown-fields")
        .and_then(Value::as_bool)
        == Some(true)
        && node.get("type").is_none()
    {
        return true;
    }
    let ty = node.get("type").and_then(Value::as_str).unwrap_or("");
    match result {
        Type::Dyn | Type::Null | Type::Error => true,
        Type::Optional(inner) => assignable(inner, node),
        Type::Bool => ty == "boolean",
        Type::Int | Type::Uint => ty == "integer" || ty == "number",
        Type::Double => ty == "number",
        Type::String | Type::Duration | Type::Timestamp | Type::Bytes => ty == "string",
        Type::List(item) => ty == "array" && node.get("items").is_none_or(|i| assignable(item, i)),
        Type::Map(..) | Type::Object(_) => ty == "object",
        _ => false,
    }
}

fn schema_type_name(node: &Value) -> String {
    let ty = node.get("type").and_then(Value::as_str).unwrap_or("any");
    match node.get("format").and_then(Value::as_str) {
        Some(f) if ty == "string" => format!("string (format {f})"),
        _ => ty.to_string(),
    }
}

/// The checks run when a CRD is written: `conversionRules` only with `strategy:
/// ConversionRules`, and then required; the shape of each
/// entry, versions that exist, paths in the schemas of their versions, transformations that
/// compile (the checker's messages) to a type the target field holds, cost limits, and every
/// served version reachable from the storage version and back.
pub fn check_conversion_rules(crd: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let base = Path::new("spec")
        .child("conversion")
        .child("conversionRules");
    if crd
        .pointer("/spec/conversion/strategy")
        .and_then(Value::as_str)
        != Some(STRATEGY)
    {
        if crd
            .pointer("/spec/conversion/conversionRules")
            .is_some_and(|r| !r.is_null())
        {
            errs.push(FieldError::forbidden(
                &base,
                "should not be set when strategy is not set to ConversionRules",
            ));
        }
        return errs;
    }
    let schemas = version_schemas(crd);
    let raw = match crd.pointer("/spec/conversion/conversionRules") {
        None | Some(Value::Null) => {
            errs.push(FieldError::required(
                &base,
                "required when strategy is set to ConversionRules",
            ));
            return errs;
        }
        Some(Value::Array(a)) => a,
        Some(other) => {
            errs.push(FieldError::type_invalid(
                &base,
                other.clone(),
                "must be a list of {from, to, rules}",
            ));
            return errs;
        }
    };
    let mut known: Vec<&str> = schemas.keys().map(String::as_str).collect();
    known.sort_unstable();
    let mut seen = std::collections::HashSet::new();
    let mut total: u64 = 0;
    for (i, p) in raw.iter().enumerate() {
        let pp = base.index(i);
        let (from, to) = (str_of(p, "from"), str_of(p, "to"));
        let mut ok = true;
        for (key, v) in [("from", from), ("to", to)] {
            if v.is_empty() {
                errs.push(FieldError::required(&pp.child(key), ""));
                ok = false;
            } else if !schemas.contains_key(v) {
                errs.push(FieldError::not_supported(&pp.child(key), v, &known));
                ok = false;
            }
        }
        if ok && from == to {
            errs.push(FieldError::invalid(
                &pp.child("to"),
                to,
                "must differ from from",
            ));
            ok = false;
        }
        if ok && !seen.insert((from, to)) {
            errs.push(FieldError::duplicate(
                &pp,
                format!("{{from: {from}, to: {to}}}"),
            ));
        }
        if !ok {
            continue;
        }
        let rules = p
            .get("rules")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        for (j, r) in rules.iter().enumerate() {
            total = total.saturating_add(check_rule(
                r,
                &pp.child("rules").index(j),
                (from, &schemas[from]),
                (to, &schemas[to]),
                &mut errs,
            ));
        }
    }
    if total > cost::CRD_LIMIT {
        errs.push(FieldError::forbidden(
            &base,
            cost::error_message(
                "estimated transformation cost total for all conversion rules",
                total,
                cost::CRD_LIMIT,
            ),
        ));
    }
    check_directions(crd, raw, &base, &mut errs);
    errs
}

/// Checks one rule; returns its estimated cost.
fn check_rule(
    r: &Value,
    p: &Path,
    (from, from_root): (&str, &Value),
    (to, to_root): (&str, &Value),
    errs: &mut ErrorList,
) -> u64 {
    let from_raw = str_of(r, "fromField");
    let from_steps = match parse_path(from_raw) {
        Ok(s) => s,
        Err(e) => {
            let fp = p.child("fromField");
            if from_raw.is_empty() {
                errs.push(FieldError::required(&fp, ""));
            } else {
                errs.push(FieldError::invalid(&fp, from_raw, e));
            }
            return 0;
        }
    };
    let Some(from_node) = node_at(from_root, &from_steps) else {
        errs.push(FieldError::invalid(
            &p.child("fromField"),
            from_raw,
            format!("no such field in the schema of version {from}"),
        ));
        return 0;
    };
    let to_raw = r.get("toField").and_then(Value::as_str).unwrap_or("");
    let to_node = if to_raw.trim().is_empty() {
        None
    } else {
        let tp = p.child("toField");
        match parse_path(to_raw) {
            Err(e) => {
                errs.push(FieldError::invalid(&tp, to_raw, e));
                return 0;
            }
            Ok(steps) => {
                let each = |s: &[Step]| s.iter().filter(|x| **x == Step::Each).count();
                if each(&steps) != each(&from_steps) {
                    errs.push(FieldError::invalid(
                        &tp,
                        to_raw,
                        "must have as many [*] steps as fromField",
                    ));
                    return 0;
                }
                let Some(n) = node_at(to_root, &steps) else {
                    errs.push(FieldError::invalid(
                        &tp,
                        to_raw,
                        format!("no such field in the schema of version {to}"),
                    ));
                    return 0;
                };
                Some(n)
            }
        }
    };
    let cardinality = cardinality(from_root, &from_steps);
    let Some(src) = transformation(r) else {
        if let Some(to_node) = &to_node
            && !same_type(&from_node, to_node)
        {
            errs.push(FieldError::invalid(
                &p.child("toField"),
                to_raw,
                format!(
                    "has type {} in version {to}, but fromField has type {} in version {from}; add a transformation",
                    schema_type_name(to_node),
                    schema_type_name(&from_node)
                ),
            ));
        }
        return 0;
    };
    let tp = p.child("transformation");
    match compile_program(src, &from_node, Compat::NewExpressions) {
        Err(e) => {
            errs.push(FieldError::invalid(
                &tp,
                src,
                format!("compilation failed: {e}"),
            ));
            0
        }
        Ok((_, result, estimate)) => {
            if let Some(to_node) = &to_node
                && !assignable(&result, to_node)
            {
                errs.push(FieldError::invalid(
                    &tp,
                    src,
                    format!(
                        "compilation failed: transformation evaluates to {}, but toField {to_raw} has type {} in version {to}",
                        result.name(),
                        schema_type_name(to_node)
                    ),
                ));
            }
            let c = estimate.saturating_mul(cardinality);
            if c > cost::RULE_LIMIT {
                errs.push(FieldError::forbidden(
                    &tp,
                    cost::error_message("estimated transformation cost", c, cost::RULE_LIMIT),
                ));
            }
            c
        }
    }
}

/// How many values a path can denote (the product of the sizes of the lists `[*]` crosses).
fn cardinality(root: &Value, steps: &[Step]) -> u64 {
    let mut n: u64 = 1;
    for (i, s) in steps.iter().enumerate() {
        if *s == Step::Each
            && let Some(list) = node_at(root, &steps[..i])
        {
            n = n.saturating_mul(cost::schema_size(&list).max(1));
        }
    }
    n
}

fn same_type(a: &Value, b: &Value) -> bool {
    let t = |v: &Value| {
        (
            v.get("type").and_then(Value::as_str).map(str::to_string),
            v.get("x-kubernetes-int-or-string").and_then(Value::as_bool),
        )
    };
    let (ta, tb) = (t(a), t(b));
    ta.0.is_none() || tb.0.is_none() || ta == tb
}

/// Every served version must be reachable from the storage version and back.
fn check_directions(crd: &Value, raw: &[Value], base: &Path, errs: &mut ErrorList) {
    let versions: Vec<(&str, bool, bool)> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|v| {
            (
                str_of(v, "name"),
                v.get("served").and_then(Value::as_bool) == Some(true),
                v.get("storage").and_then(Value::as_bool) == Some(true),
            )
        })
        .collect();
    let Some(storage) = versions.iter().find(|v| v.2).map(|v| v.0) else {
        return;
    };
    let edges = || raw.iter().map(|p| (str_of(p, "from"), str_of(p, "to")));
    for (name, served, _) in &versions {
        if !served || *name == storage {
            continue;
        }
        for (a, b) in [(storage, *name), (*name, storage)] {
            if chain(edges(), a, b).is_none() {
                errs.push(FieldError::required(
                    base,
                    format!(
                        "no conversion from {a} to {b}: every served version must be reachable from the storage version {storage} and back"
                    ),
                ));
            }
        }
    }
}

/// A sample object of a schema: one value for every declared field (enums take their first
/// value, formats a valid value, lists one item, maps one key).
fn sample(node: &Value) -> Value {
    if let Some(first) = node
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    if node
        .get("x-kubernetes-int-or-string")
        .and_then(Value::as_bool)
        == Some(true)
    {
        return json!(7);
    }
    match node.get("type").and_then(Value::as_str).unwrap_or("") {
        "object" => {
            let mut m = Map::new();
            if let Some(props) = node.get("properties").and_then(Value::as_object) {
                for (k, v) in props {
                    if matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                        continue;
                    }
                    m.insert(k.clone(), sample(v));
                }
            } else if let Some(ap) = node.get("additionalProperties").filter(|a| a.is_object()) {
                m.insert("key".into(), sample(ap));
            }
            Value::Object(m)
        }
        "array" => json!([sample(node.get("items").unwrap_or(&Value::Null))]),
        "integer" => json!(90),
        "number" => json!(1.5),
        "boolean" => json!(true),
        "string" => match node.get("format").and_then(Value::as_str).unwrap_or("") {
            "duration" => json!("1m30s"),
            "date-time" => json!("2024-01-02T03:04:05Z"),
            "date" => json!("2024-01-02"),
            "byte" => json!("c2FtcGxl"),
            _ => json!("sample"),
        },
        _ => json!("sample"),
    }
}

/// Leaf paths where two values differ (`spec.a`, `spec.items[0].b`).
fn differences(before: &Value, after: &Value, path: &str, out: &mut Vec<String>) {
    match (before, after) {
        (Value::Object(old), Value::Object(new)) => {
            let mut keys: Vec<&String> = old.keys().chain(new.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let child = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                differences(
                    old.get(key).unwrap_or(&Value::Null),
                    new.get(key).unwrap_or(&Value::Null),
                    &child,
                    out,
                );
            }
        }
        (Value::Array(old), Value::Array(new)) if old.len() == new.len() => {
            for (i, (was, now)) in old.iter().zip(new).enumerate() {
                differences(was, now, &format!("{path}[{i}]"), out);
            }
        }
        _ if before != after => out.push(path.to_string()),
        _ => {}
    }
}

/// The round-trip check run when a CRD is written: a sample of each served version's schema
/// converted to every other served version and back must be unchanged. Returns one text per
/// loss or failure, naming the fields (`conversion from v1 to v2 and back loses spec.x`).
/// `prune(object, schema)` is what the server does to a converted object with the schema of the
/// version it was converted to (pruning, unless the CRD preserves unknown fields): a field the
/// rules copy into a version whose schema lacks it is lost there, and is reported.
pub fn round_trip_losses(crd: &Value, prune: &dyn Fn(&mut Value, &Value)) -> Vec<String> {
    let rules = ConversionRules::compile(crd);
    let schemas = version_schemas(crd);
    let mut names: Vec<&str> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v.get("served").and_then(Value::as_bool) == Some(true))
        .map(|v| str_of(v, "name"))
        .collect();
    names.dedup();
    let mut out = Vec::new();
    for from in &names {
        let Some(schema) = schemas.get(*from) else {
            continue;
        };
        let mut obj = sample(schema);
        if let Some(m) = obj.as_object_mut() {
            m.insert(
                "apiVersion".into(),
                json!(format!("{}/{from}", rules.group)),
            );
            m.insert("kind".into(), json!("Sample"));
            m.insert("metadata".into(), json!({"name": "sample"}));
        }
        for to in &names {
            if to == from {
                continue;
            }
            let there = match rules.convert(&obj, to) {
                Ok(mut v) => {
                    if let Some(schema) = schemas.get(*to) {
                        prune(&mut v, schema);
                    }
                    v
                }
                Err(e) => {
                    out.push(format!(
                        "conversion of a sample {from} object to {to} failed: {e}"
                    ));
                    continue;
                }
            };
            let back = match rules.convert(&there, from) {
                Ok(mut v) => {
                    prune(&mut v, schema);
                    v
                }
                Err(e) => {
                    out.push(format!(
                        "conversion of a sample {from} object to {to} and back failed: {e}"
                    ));
                    continue;
                }
            };
            let mut lost = Vec::new();
            differences(&obj, &back, "", &mut lost);
            if !lost.is_empty() {
                out.push(format!(
                    "conversion from {from} to {to} and back loses {}",
                    lost.join(", ")
                ));
            }
        }
    }
    out
}

/// The rules of a CRD, shared: what the server keeps per CRD revision.
pub type SharedConversionRules = Arc<ConversionRules>;

#[cfg(test)]
mod tests;
