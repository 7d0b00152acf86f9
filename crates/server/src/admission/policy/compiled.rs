//! A stored admission policy (`ValidatingAdmissionPolicy`, `MutatingAdmissionPolicy`) or
//! binding, compiled once when the informer sees it: match resources with parsed selectors, and
//! every CEL expression compiled (a compilation error is kept and reported when the policy
//! matches, as upstream's `ConfigurationError` is), and what the expressions read of each
//! variable (bound pruned to it, [`crd_cel::Reads`]). Both kinds share every field but
//! `validations`/`auditAnnotations` and `mutations`/`reinvocationPolicy`.

use crd_builtin::admissionpolicy::POLICY_VARIABLES;
use crd_cel::{Expression, Reads};
use crd_core::labels::Selector;
use crd_core::validation::string_list;
use serde_json::Value;

use crate::admission::webhook::matching::Rule;

/// `matchConstraints` of a policy or `matchResources` of a binding.
#[derive(Debug)]
pub struct MatchResources {
    /// `resourceRules`, each with its `resourceNames`.
    pub rules: Vec<(Rule, Vec<String>)>,
    /// `excludeResourceRules`.
    pub exclude: Vec<(Rule, Vec<String>)>,
    /// `namespaceSelector` (an error when it does not parse).
    pub namespace_selector: Result<Selector, String>,
    /// `objectSelector`.
    pub object_selector: Result<Selector, String>,
    /// `matchPolicy: Equivalent` (the default).
    pub equivalent: bool,
}

fn named_rules(v: Option<&Value>) -> Vec<(Rule, Vec<String>)> {
    v.and_then(Value::as_array)
        .map(|rs| {
            rs.iter()
                .map(|r| (Rule::from_json(r), string_list(r.get("resourceNames"))))
                .collect()
        })
        .unwrap_or_default()
}

fn selector(v: Option<&Value>) -> Result<Selector, String> {
    match v.filter(|v| !v.is_null()) {
        None => Ok(Selector::everything()),
        Some(v) => Selector::from_label_selector_json(v).map_err(|e| e.clone()),
    }
}

impl MatchResources {
    /// Whether the namespace selector needs the request's namespace object.
    pub fn selects_namespaces(&self) -> bool {
        self.namespace_selector
            .as_ref()
            .map_or(true, |s| !s.is_empty())
    }

    /// Reads match resources from their JSON.
    pub fn from_json(v: &Value) -> Self {
        MatchResources {
            rules: named_rules(v.get("resourceRules")),
            exclude: named_rules(v.get("excludeResourceRules")),
            namespace_selector: selector(v.get("namespaceSelector")),
            object_selector: selector(v.get("objectSelector")),
            equivalent: v.get("matchPolicy").and_then(Value::as_str) != Some("Exact"),
        }
    }
}

/// One `validations[]` entry.
#[derive(Debug)]
pub struct Validation {
    /// The expression's source (for `failed expression: ...`).
    pub source: String,
    /// The compiled expression.
    pub expression: Result<Expression, String>,
    /// `message`.
    pub message: String,
    /// `messageExpression`, compiled.
    pub message_expression: Option<Result<Expression, String>>,
    /// `reason` ("" for the default, `Invalid`).
    pub reason: String,
}

/// How a mutation's expression is applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchType {
    /// `ApplyConfiguration`: an `Object{...}` merged with server-side apply's merge.
    ApplyConfiguration,
    /// `JSONPatch`: a list of `JSONPatch{...}` operations.
    JsonPatch,
}

/// Whether a mutating policy runs again when a later mutation changed the object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReinvocationPolicy {
    /// `Never` (validating policies have no mutations to rerun).
    Never,
    /// `IfNeeded`.
    IfNeeded,
}

/// One `mutations[]` entry of a mutating policy.
#[derive(Debug)]
pub struct Mutation {
    /// `patchType`.
    pub patch_type: PatchType,
    /// The expression's source (for `expression '...' resulted in error`).
    pub source: String,
    /// The compiled expression.
    pub expression: Result<Expression, String>,
}

/// A compiled policy.
// The `uses_*` flags are independent facts about the expressions, not states.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug)]
pub struct Policy {
    /// `metadata.name`.
    pub name: String,
    /// `failurePolicy: Ignore`.
    pub fail_open: bool,
    /// `paramKind` (`apiVersion`, `kind`).
    pub param_kind: Option<(String, String)>,
    /// `matchConstraints`.
    pub constraints: MatchResources,
    /// `matchConditions` (name, source, expression).
    pub match_conditions: Vec<(String, String, Result<Expression, String>)>,
    /// `variables` (name, expression), in order.
    pub variables: Vec<(String, Result<Expression, String>)>,
    /// `validations`.
    pub validations: Vec<Validation>,
    /// `auditAnnotations` (key, valueExpression).
    pub audit_annotations: Vec<(String, Result<Expression, String>)>,
    /// `mutations` (mutating policies).
    pub mutations: Vec<Mutation>,
    /// `reinvocationPolicy` (mutating policies).
    pub reinvocation: ReinvocationPolicy,
    /// Whether an expression may read `namespaceObject` (else the namespace is read only for
    /// a namespace selector).
    pub uses_namespace_object: bool,
    /// Whether an expression may read `request` (else it is not built).
    pub uses_request: bool,
    /// Whether an expression may call `authorizer` (else it is bound to null).
    pub uses_authorizer: bool,
    /// What the expressions read of `object` (bound pruned to it).
    pub reads_object: Reads,
    /// What they read of `oldObject`.
    pub reads_old_object: Reads,
    /// What they read of `params`.
    pub reads_params: Reads,
    /// What they read of `request`.
    pub reads_request: Reads,
    /// What they read of `namespaceObject`.
    pub reads_namespace: Reads,
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn named(
    items: &[Value],
    name_key: &str,
    expr_key: &str,
    compile: fn(&str, &'static [&'static str]) -> Result<Expression, String>,
) -> Vec<(String, Result<Expression, String>)> {
    items
        .iter()
        .map(|c| {
            (
                s(c, name_key).to_string(),
                compile(s(c, expr_key), POLICY_VARIABLES),
            )
        })
        .collect()
}

impl Policy {
    /// Every compiled expression.
    fn expressions(&self) -> Vec<&Expression> {
        let mut out: Vec<&Expression> = Vec::new();
        out.extend(
            self.match_conditions
                .iter()
                .filter_map(|(_, _, e)| e.as_ref().ok()),
        );
        for named in [&self.variables, &self.audit_annotations] {
            out.extend(named.iter().filter_map(|(_, e)| e.as_ref().ok()));
        }
        for v in &self.validations {
            out.extend(v.expression.as_ref().ok());
            out.extend(v.message_expression.as_ref().and_then(|m| m.as_ref().ok()));
        }
        out.extend(
            self.mutations
                .iter()
                .filter_map(|m| m.expression.as_ref().ok()),
        );
        out
    }

    /// What the expressions read of `var`.
    fn reads(&self, var: &str) -> Reads {
        let mut out = Reads::default();
        for e in self.expressions() {
            out.add(&e.reads(var));
        }
        out
    }

    /// Compiles a stored policy.
    pub fn build(obj: &Value) -> Policy {
        let mut p = Self::compile(obj);
        p.reads_object = p.reads("object");
        p.reads_old_object = p.reads("oldObject");
        p.reads_params = p.reads("params");
        p.reads_request = p.reads("request");
        p.reads_namespace = p.reads("namespaceObject");
        p
    }

    fn compile(obj: &Value) -> Policy {
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        let param_kind = spec
            .get("paramKind")
            .filter(|p| p.is_object())
            .map(|p| (s(p, "apiVersion").to_string(), s(p, "kind").to_string()));
        Policy {
            uses_namespace_object: spec.to_string().contains("namespaceObject"),
            uses_request: spec.to_string().contains("request"),
            uses_authorizer: spec.to_string().contains("authorizer"),
            name: obj
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            fail_open: s(spec, "failurePolicy") == "Ignore",
            param_kind,
            constraints: MatchResources::from_json(
                spec.get("matchConstraints").unwrap_or(&Value::Null),
            ),
            match_conditions: list(spec, "matchConditions")
                .iter()
                .map(|c| {
                    let source = s(c, "expression");
                    (
                        s(c, "name").to_string(),
                        source.to_string(),
                        Expression::compile_bool(source, POLICY_VARIABLES),
                    )
                })
                .collect(),
            variables: named(
                list(spec, "variables"),
                "name",
                "expression",
                Expression::compile_value,
            ),
            validations: list(spec, "validations")
                .iter()
                .map(|v| {
                    let source = s(v, "expression").trim().to_string();
                    let me = s(v, "messageExpression");
                    Validation {
                        expression: Expression::compile_bool(&source, POLICY_VARIABLES),
                        source,
                        message: s(v, "message").to_string(),
                        message_expression: (!me.is_empty())
                            .then(|| Expression::compile_message(me, POLICY_VARIABLES)),
                        reason: s(v, "reason").to_string(),
                    }
                })
                .collect(),
            audit_annotations: named(
                list(spec, "auditAnnotations"),
                "key",
                "valueExpression",
                Expression::compile_value,
            ),
            mutations: list(spec, "mutations").iter().map(mutation).collect(),
            reinvocation: if s(spec, "reinvocationPolicy") == "IfNeeded" {
                ReinvocationPolicy::IfNeeded
            } else {
                ReinvocationPolicy::Never
            },
            reads_object: Reads::whole(),
            reads_old_object: Reads::whole(),
            reads_params: Reads::whole(),
            reads_request: Reads::whole(),
            reads_namespace: Reads::whole(),
        }
    }
}

fn mutation(m: &Value) -> Mutation {
    let (patch_type, member, compile): (_, _, fn(&str, &'static [&'static str]) -> _) =
        if s(m, "patchType") == "JSONPatch" {
            (
                PatchType::JsonPatch,
                "jsonPatch",
                Expression::compile_json_patch,
            )
        } else {
            (
                PatchType::ApplyConfiguration,
                "applyConfiguration",
                Expression::compile_apply_configuration,
            )
        };
    let source = m.get(member).map_or("", |b| s(b, "expression")).to_string();
    Mutation {
        patch_type,
        expression: compile(&source, POLICY_VARIABLES).map_err(|e| crd_cel_error(&e)),
        source,
    }
}

/// Upstream's compilation error text: the return-type errors as they are, others after
/// `compilation failed: `.
fn crd_cel_error(e: &str) -> String {
    if [
        crd_cel::mutation::NOT_OBJECT,
        crd_cel::mutation::NOT_JSON_PATCH,
    ]
    .contains(&e)
    {
        e.to_string()
    } else {
        format!("compilation failed: {e}")
    }
}

/// `paramRef` of a binding.
#[derive(Debug)]
pub struct ParamRef {
    /// `name` ("" when a selector is used).
    pub name: String,
    /// `namespace` ("": the request's namespace for namespaced param kinds).
    pub namespace: String,
    /// `selector`.
    pub selector: Option<Result<Selector, String>>,
    /// `parameterNotFoundAction: Deny`.
    pub deny_when_missing: bool,
}

/// A compiled binding.
#[derive(Debug)]
pub struct Binding {
    /// `metadata.name`.
    pub name: String,
    /// `spec.policyName`.
    pub policy_name: String,
    /// `spec.paramRef`.
    pub param_ref: Option<ParamRef>,
    /// `spec.matchResources`.
    pub match_resources: Option<MatchResources>,
    /// `spec.validationActions`.
    pub actions: Vec<String>,
}

impl Binding {
    /// Reads a stored binding.
    pub fn build(obj: &Value) -> Binding {
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        Binding {
            name: obj
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            policy_name: s(spec, "policyName").to_string(),
            param_ref: spec
                .get("paramRef")
                .filter(|p| p.is_object())
                .map(|p| ParamRef {
                    name: s(p, "name").to_string(),
                    namespace: s(p, "namespace").to_string(),
                    selector: p
                        .get("selector")
                        .filter(|v| !v.is_null())
                        .map(|v| selector(Some(v))),
                    deny_when_missing: s(p, "parameterNotFoundAction") != "Allow",
                }),
            match_resources: spec
                .get("matchResources")
                .filter(|m| m.is_object())
                .map(MatchResources::from_json),
            actions: list(spec, "validationActions")
                .iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect(),
        }
    }
}
