//! The compiled form of one version's schema: a tree of the nodes that hold rules (or lead to
//! nodes that do), each rule parsed, checked and lowered once per CRD revision.

use std::collections::BTreeMap;

use kube_cel::cel::common::ast::{Expr, IdedExpr};
use serde_json::Value as Json;

use crate::checker::types::Compat;
use crate::checker::{Env, check};
use crate::eval::{Program, lower};
use crate::parse::{children, parse};

/// A schema node with rules, or on the way to one.
#[derive(Debug, Default)]
pub(crate) struct Node {
    /// The node's schema, for converting values to CEL.
    pub schema: Json,
    /// The node's `type`, printed as the bad value of CEL errors (1.32–1.34).
    pub type_name: String,
    /// Root or `x-kubernetes-embedded-resource`: apiVersion, kind and metadata.name visible.
    pub resource: bool,
    /// The node's rules, in order.
    pub rules: Vec<CompiledRule>,
    /// Properties with rules below them.
    pub properties: BTreeMap<String, Node>,
    /// `items`, when rules sit below it.
    pub items: Option<Box<Node>>,
    /// `additionalProperties`, when rules sit below it.
    pub additional: Option<Box<Node>>,
    /// `x-kubernetes-list-map-keys` of a map list: its items correlate by these keys.
    pub map_keys: Option<Vec<String>>,
}

/// One `x-kubernetes-validations` entry, ready to evaluate.
#[derive(Debug)]
pub(crate) struct CompiledRule {
    /// The rule's source.
    pub source: String,
    /// The lowered rule; `None` when it does not compile (the CRD write refused it).
    pub program: Option<Program>,
    /// `message`, trimmed.
    pub message: Option<String>,
    /// `messageExpression`'s source.
    pub message_expression: Option<String>,
    /// `messageExpression`, lowered.
    pub message_program: Option<Program>,
    /// `reason`.
    pub reason: Option<String>,
    /// `fieldPath`, normalized to a path below the node (`.a['b']` → `a[b]`).
    pub field_path: Option<String>,
    /// `optionalOldSelf`.
    pub optional_old_self: bool,
    /// Whether the rule reads `oldSelf` (a transition rule).
    pub uses_old_self: bool,
}

impl CompiledRule {
    /// Kubernetes' `ruleErrorString`: the message if set, else the rule.
    pub(crate) fn error_string(&self) -> String {
        match &self.message {
            Some(m) if !m.is_empty() => m.clone(),
            _ => self.source.trim().to_string(),
        }
    }

    /// Kubernetes' `ruleMessageOrDefault`.
    pub(crate) fn default_message(&self) -> String {
        match &self.message {
            Some(m) if !m.is_empty() => m.clone(),
            _ => format!("failed rule: {}", self.source.trim()),
        }
    }
}

/// Whether an expression reads `oldSelf`.
pub(crate) fn uses_old_self(e: &IdedExpr) -> bool {
    if matches!(&e.expr, Expr::Ident(n) if n == "oldSelf") {
        return true;
    }
    let mut found = false;
    children(e, &mut |c| found = found || uses_old_self(c));
    found
}

/// Compiles one expression for evaluation at `node`: parse, check (with every library, as
/// Kubernetes evaluates stored rules), lower. `None` when it does not compile.
pub(crate) fn program(
    source: &str,
    node: &Json,
    resource: bool,
    optional_old_self: bool,
) -> Option<Program> {
    let expr = parse(source).ok()?;
    let env = Env {
        dyn_vars: &[],
        self_schema: node,
        resource_root: resource,
        old_self: true,
        optional_old_self,
        compat: Compat::StoredExpressions,
        typed_vars: &[],
        mutation: false,
    };
    let checked = check(&expr, source, &env).ok()?;
    Some(lower(expr, &checked))
}

fn normalize_field_path(fp: &str) -> String {
    let mut out = String::new();
    let mut rest = fp;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&r[..end]);
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix("['") {
            let end = r.find("']").unwrap_or(r.len());
            out.push('[');
            out.push_str(&r[..end].replace("\\'", "'"));
            out.push(']');
            rest = r.get(end + 2..).unwrap_or("");
        } else {
            out.push_str(rest);
            break;
        }
    }
    out
}

fn rule(r: &Json, node: &Json, resource: bool) -> Option<CompiledRule> {
    let source = r.get("rule").and_then(Json::as_str)?.to_string();
    let str_field = |k: &str| r.get(k).and_then(Json::as_str).map(str::to_string);
    let parsed = parse(&source).ok();
    let uses_old = parsed.as_ref().is_some_and(uses_old_self);
    let message_expression = str_field("messageExpression").filter(|m| !m.trim().is_empty());
    let optional_old_self = r.get("optionalOldSelf").and_then(Json::as_bool) == Some(true);
    Some(CompiledRule {
        program: program(&source, node, resource, optional_old_self),
        message: str_field("message").map(|m| m.trim().to_string()),
        message_program: message_expression
            .as_deref()
            .and_then(|m| program(m, node, resource, optional_old_self)),
        message_expression,
        reason: str_field("reason"),
        field_path: str_field("fieldPath")
            .filter(|f| !f.is_empty())
            .map(|f| normalize_field_path(&f)),
        optional_old_self,
        uses_old_self: uses_old,
        source,
    })
}

/// The node's type as upstream prints it.
fn type_name(node: &Json) -> String {
    node.get("type")
        .and_then(Json::as_str)
        .unwrap_or("")
        .to_string()
}

fn is_embedded(node: &Json) -> bool {
    node.get("x-kubernetes-embedded-resource")
        .and_then(Json::as_bool)
        == Some(true)
}

/// Builds the tree for a schema; `None` when no rule sits anywhere in it.
pub(crate) fn tree(node: &Json, resource: bool) -> Option<Node> {
    let m = node.as_object()?;
    let rules: Vec<CompiledRule> = m
        .get("x-kubernetes-validations")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| rule(r, node, resource))
        .collect();
    let properties: BTreeMap<String, Node> = m
        .get("properties")
        .and_then(Json::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| tree(v, is_embedded(v)).map(|n| (k.clone(), n)))
        .collect();
    let items = m
        .get("items")
        .and_then(|i| tree(i, is_embedded(i)))
        .map(Box::new);
    let additional = m
        .get("additionalProperties")
        .filter(|a| a.is_object())
        .and_then(|a| tree(a, is_embedded(a)))
        .map(Box::new);
    if rules.is_empty() && properties.is_empty() && items.is_none() && additional.is_none() {
        return None;
    }
    let map_keys =
        (m.get("x-kubernetes-list-type").and_then(Json::as_str) == Some("map")).then(|| {
            m.get("x-kubernetes-list-map-keys")
                .and_then(Json::as_array)
                .into_iter()
                .flatten()
                .filter_map(Json::as_str)
                .map(str::to_string)
                .collect()
        });
    let mut schema = node.clone();
    if let Some(s) = schema.as_object_mut() {
        s.remove("x-kubernetes-validations");
    }
    Some(Node {
        type_name: type_name(node),
        schema,
        resource,
        rules,
        properties,
        items,
        additional,
        map_keys,
    })
}
