//! Type checking an admission policy's expressions against the schema of a kind it matches
//! (apiserver `admission/plugin/policy/validating/typechecking.go`): `object` and `oldObject`
//! typed by the kind's schema (a resource root), `params` by the param kind's schema when it is
//! known, `authorizer` by the authorization library's types, `variables` by the types of the
//! policy's variables (each checked in order, seeing the ones before it). `request` and
//! `namespaceObject` stay `dyn` here (upstream types them precisely). The result only feeds the
//! policy's `status.typeChecking`; it never changes what the policy does.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::checker::types::{ObjectType, Type, schema_type};
use crate::checker::{Compat, Env, check};
use crate::parse::parse;

/// The variables an admission policy's expressions may use.
const POLICY_DYN_VARS: &[&str] = &["request", "namespaceObject"];

/// The types one kind gives a policy's expressions; built once per (policy, kind).
#[derive(Debug)]
pub struct PolicyTypes {
    vars: Vec<(&'static str, Type)>,
}

/// Whether a schema already declares what CEL needs at a resource root (`kind`, `apiVersion`,
/// `metadata.name`, `metadata.generateName` as strings), as kube-openapi's
/// `WithTypeAndObjectMeta` tests before replacing `metadata`.
fn declares_type_and_object_meta(s: &Value) -> bool {
    let ty = |v: Option<&Value>, t: &str| {
        v.and_then(|v| v.get("type"))
            .and_then(Value::as_str)
            .is_some_and(|x| x == t)
    };
    let props = s.get("properties");
    let meta = props.and_then(|p| p.get("metadata"));
    let meta_props = meta.and_then(|m| m.get("properties"));
    ty(props.and_then(|p| p.get("kind")), "string")
        && ty(props.and_then(|p| p.get("apiVersion")), "string")
        && ty(meta, "object")
        && ty(meta_props.and_then(|p| p.get("name")), "string")
        && ty(meta_props.and_then(|p| p.get("generateName")), "string")
}

/// A resource's CEL type (`SchemaDeclType(schema, isResourceRoot=true)`), `dyn` when the schema
/// gives none.
fn resource_type(schema: &Value, name: &str) -> Type {
    let root = !declares_type_and_object_meta(schema);
    schema_type(schema, root, name).unwrap_or(Type::Dyn)
}

fn authz_types() -> [(&'static str, Type); 2] {
    [
        (
            "authorizer",
            Type::Opaque("kubernetes.authorization.Authorizer", Vec::new()),
        ),
        (
            "authorizer.requestResource",
            Type::Opaque("kubernetes.authorization.ResourceCheck", Vec::new()),
        ),
    ]
}

fn check_in(source: &str, vars: &[(&str, Type)]) -> Result<Type, String> {
    let expr = parse(source)?;
    let env = Env {
        dyn_vars: POLICY_DYN_VARS,
        self_schema: &Value::Null,
        resource_root: false,
        old_self: false,
        optional_old_self: false,
        compat: Compat::StoredExpressions,
        typed_vars: vars,
        mutation: false,
    };
    check(&expr, source, &env).map(|c| c.result)
}

impl PolicyTypes {
    /// The types for a kind with schema `object` (the kind's `openAPIV3Schema`-shaped schema),
    /// `params` the param kind's schema (`None` when there is no `paramKind` or its schema is
    /// unknown: `params` is then `dyn`), and the policy's `variables` (name, expression).
    pub fn new(object: &Value, params: Option<&Value>, variables: &[(String, String)]) -> Self {
        let object = resource_type(object, "object");
        let params = params.map_or(Type::Dyn, |p| resource_type(p, "params"));
        let mut vars: Vec<(&'static str, Type)> = vec![
            ("object", object.clone()),
            ("oldObject", object),
            ("params", params),
        ];
        vars.extend(authz_types());
        let mut fields = BTreeMap::new();
        for (name, source) in variables {
            let current = Type::Object(Arc::new(ObjectType {
                name: "kubernetes.variables".into(),
                fields: fields.clone(),
            }));
            let mut scope = vars.clone();
            scope.push(("variables", current));
            let t = check_in(source, &scope).unwrap_or(Type::Dyn);
            fields.insert(name.clone(), (name.clone(), t));
        }
        vars.push((
            "variables",
            Type::Object(Arc::new(ObjectType {
                name: "kubernetes.variables".into(),
                fields,
            })),
        ));
        PolicyTypes { vars }
    }

    /// Type-checks one expression (any result type). `Err` is cel-go's issue list
    /// (`ERROR: <input>:1:8: undefined field 'foo'` with its snippet lines).
    pub fn check(&self, source: &str) -> Result<(), String> {
        check_in(source, &self.vars).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// (object schema, params schema, variables, expression, issues: `None` when it checks).
    type Case<'a> = (
        &'a Value,
        Option<&'a Value>,
        Vec<(String, String)>,
        &'a str,
        Option<&'a str>,
    );

    #[test]
    fn policy_expressions_are_checked_against_the_kind_schema() {
        let foo_string = json!({"type": "object", "properties": {"foo": {"type": "string"}}});
        let foo_int = json!({"type": "object", "properties": {"foo": {"type": "integer"}}});
        let untyped = json!({});
        let bar_string = json!({"type": "object", "properties": {"bar": {"type": "string"}}});
        let no_vars: &[(String, String)] = &[];
        let vars = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter()
                .map(|(n, e)| ((*n).to_string(), (*e).to_string()))
                .collect()
        };
        // (object schema, params schema, variables, expression, issues: None when it checks)
        let cases: Vec<Case<'_>> = vec![
            (
                &foo_string,
                None,
                no_vars.to_vec(),
                "object.foo == 'bar'",
                None,
            ),
            (
                &bar_string,
                None,
                no_vars.to_vec(),
                "object.foo == 'bar'",
                Some(
                    "ERROR: <input>:1:7: undefined field 'foo'\n | object.foo == 'bar'\n | ......^",
                ),
            ),
            (
                &foo_int,
                None,
                no_vars.to_vec(),
                "object.foo == 'bar'",
                Some(
                    "ERROR: <input>:1:12: found no matching overload for '_==_' applied to '(int, string)'\n | object.foo == 'bar'\n | ...........^",
                ),
            ),
            // Resource roots always declare apiVersion, kind and metadata.name.
            (
                &foo_string,
                None,
                no_vars.to_vec(),
                "object.metadata.name != '' && object.kind != ''",
                None,
            ),
            (
                &foo_string,
                None,
                no_vars.to_vec(),
                "object.metadata.labels == null",
                Some(
                    "ERROR: <input>:1:16: undefined field 'labels'\n | object.metadata.labels == null\n | ...............^",
                ),
            ),
            (
                &foo_string,
                Some(&foo_string),
                no_vars.to_vec(),
                "object.foo == params.bar",
                Some(
                    "ERROR: <input>:1:21: undefined field 'bar'\n | object.foo == params.bar\n | ....................^",
                ),
            ),
            // Unknown param schema: params is dyn.
            (
                &foo_string,
                None,
                no_vars.to_vec(),
                "object.foo == params.bar",
                None,
            ),
            (
                &untyped,
                None,
                no_vars.to_vec(),
                "object.anything == 1",
                None,
            ),
            (
                &foo_string,
                None,
                no_vars.to_vec(),
                "authorizer.group('').resource('endpoints').check('create').allowed()",
                None,
            ),
            (
                &foo_string,
                None,
                no_vars.to_vec(),
                "authorizer.requestResource.check('get').allowed()",
                None,
            ),
            (
                &foo_string,
                None,
                no_vars.to_vec(),
                "authorizer.allowed()",
                Some(
                    "ERROR: <input>:1:19: found no matching overload for 'allowed' applied to 'kubernetes.authorization.Authorizer.()'\n | authorizer.allowed()\n | ..................^",
                ),
            ),
            (
                &foo_int,
                None,
                vars(&[("works", "true")]),
                "variables.works",
                None,
            ),
            (
                &foo_int,
                None,
                vars(&[("works", "true")]),
                "variables.nonExisting",
                Some(
                    "ERROR: <input>:1:10: undefined field 'nonExisting'\n | variables.nonExisting\n | .........^",
                ),
            ),
            (
                &foo_int,
                None,
                vars(&[("name", "'something'")]),
                "variables.name == object.foo",
                Some(
                    "ERROR: <input>:1:16: found no matching overload for '_==_' applied to '(string, int)'\n | variables.name == object.foo\n | ...............^",
                ),
            ),
            // A variable sees the ones before it.
            (
                &foo_int,
                None,
                vars(&[("a", "object.foo"), ("b", "variables.a + 1")]),
                "variables.b > 2",
                None,
            ),
            (
                &foo_string,
                None,
                no_vars.to_vec(),
                "object.foo + 114514",
                Some(
                    "ERROR: <input>:1:12: found no matching overload for '_+_' applied to '(string, int)'\n | object.foo + 114514\n | ...........^",
                ),
            ),
        ];
        for (object, params, variables, src, want) in cases {
            let got = PolicyTypes::new(object, params, &variables).check(src);
            assert_eq!(got.err().as_deref(), want, "{src}");
        }
    }

    #[test]
    fn kind_schemas_with_full_object_meta_keep_it() {
        let schema = json!({"type": "object", "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object", "properties": {
                "name": {"type": "string"},
                "generateName": {"type": "string"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            }},
        }});
        let t = PolicyTypes::new(&schema, None, &[]);
        assert_eq!(t.check("object.metadata.labels['a'] == 'b'"), Ok(()));
    }
}
