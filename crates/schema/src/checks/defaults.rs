//! Defaults in a CRD schema must be valid values of their own schema node
//! (apiextensions `schema/defaulting/validation.go`, crd-semantics §1.8 "Defaults").
//!
//! For each `default` found through `properties` and `items` (never `additionalProperties`,
//! where defaults are forbidden): the default must already be pruned, its embedded resources must
//! coerce and validate, and then it must pass the node's OpenAPI validation. Defaults under an
//! embedded resource's `metadata`, `apiVersion` or `kind` are checked by building the surrounding
//! object and requiring valid metadata. CEL rules are not evaluated here.

use crd_core::{ErrorList, FieldError, Path};
use serde_json::{Map, Value};

use crate::validate::{embedded_coerce_error, embedded_resource_errors, validate_at};

/// The `TypeMeta` of the object built around a metadata default, as upstream builds it.
const SURROUNDING_API_VERSION: &str = "validation/v1";
const SURROUNDING_KIND: &str = "Validation";

/// One step from the nearest embedded resource down to a schema node.
#[derive(Clone)]
enum Step {
    Key(String),
    Index,
}

fn get<'a>(s: &'a Value, key: &str) -> Option<&'a Value> {
    s.as_object().and_then(|m| m.get(key))
}

fn flag(s: &Value, key: &str) -> bool {
    get(s, key).and_then(Value::as_bool).unwrap_or(false)
}

fn is_meta_field(k: &str) -> bool {
    matches!(k, "apiVersion" | "kind" | "metadata")
}

/// Validates every `default` in the CRD schema `schema` found at `path` (for example
/// `spec.validation.openAPIV3Schema`); errors are reported under `<node>.default`.
pub(super) fn validate_defaults(schema: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let walker = Walker { errs: &mut errs };
    walker.walk(&Node {
        schema,
        path: path.clone(),
        steps: Vec::new(),
        inside_meta: false,
        root_schema: schema,
        force_embedded: true,
    });
    errs
}

/// A schema node with its place: path, steps from the nearest resource root, and whether it
/// lies inside that resource's metadata.
struct Node<'a> {
    schema: &'a Value,
    path: Path,
    steps: Vec<Step>,
    inside_meta: bool,
    root_schema: &'a Value,
    /// The CRD's root schema counts as an embedded resource.
    force_embedded: bool,
}

struct Walker<'e> {
    errs: &'e mut ErrorList,
}

impl Walker<'_> {
    fn walk(mut self, node: &Node<'_>) {
        self.visit(node);
    }

    fn visit(&mut self, node: &Node<'_>) {
        let s = node.schema;
        let embedded = node.force_embedded || flag(s, "x-kubernetes-embedded-resource");
        // An embedded resource starts a new surrounding object, outside any metadata.
        let (steps, inside_meta, root_schema) = if embedded {
            (Vec::new(), false, s)
        } else {
            (node.steps.clone(), node.inside_meta, node.root_schema)
        };

        if let Some(default) = get(s, "default").filter(|d| !d.is_null()) {
            let dpath = node.path.child("default");
            if inside_meta {
                self.check_meta_default(s, default, &dpath, &steps, root_schema);
            } else {
                self.check_default(s, default, &dpath, embedded);
            }
        }

        if let Some(items) = get(s, "items").filter(|i| i.is_object()) {
            let mut child_steps = steps.clone();
            child_steps.push(Step::Index);
            self.visit(&Node {
                schema: items,
                path: node.path.child("items"),
                steps: child_steps,
                inside_meta,
                root_schema,
                force_embedded: false,
            });
        }
        if let Some(props) = get(s, "properties").and_then(Value::as_object) {
            let mut names: Vec<&String> = props.keys().collect();
            names.sort();
            for k in names {
                let mut child_steps = steps.clone();
                child_steps.push(Step::Key(k.clone()));
                self.visit(&Node {
                    schema: &props[k],
                    path: node.path.child("properties").key(k),
                    steps: child_steps,
                    inside_meta: inside_meta || (embedded && is_meta_field(k)),
                    root_schema,
                    force_embedded: false,
                });
            }
        }
    }

    /// A default outside resource metadata: pruned, coercible, valid embedded resources, and
    /// valid against its node.
    fn check_default(&mut self, s: &Value, default: &Value, dpath: &Path, embedded: bool) {
        if would_prune(default, Some(s), embedded) {
            self.errs.push(FieldError::invalid(
                dpath,
                default.clone(),
                "must not have unknown fields",
            ));
        }
        if let Some(e) = embedded_coerce_error(s, default, dpath, embedded) {
            self.errs.push(e);
            return;
        }
        let meta_errs = embedded_resource_errors(s, default, dpath, embedded);
        if !meta_errs.is_empty() {
            self.errs.extend(meta_errs);
            return;
        }
        self.errs.extend(validate_at(s, default, dpath));
    }

    /// A default inside an embedded resource's metadata, apiVersion or kind: the object around
    /// it must have valid metadata, then the default must be valid against its node.
    fn check_meta_default(
        &mut self,
        s: &Value,
        default: &Value,
        dpath: &Path,
        steps: &[Step],
        root_schema: &Value,
    ) {
        let obj = surround(default, steps);
        let root = Path::root();
        if let Some(e) = embedded_coerce_error(root_schema, &obj, &root, true) {
            self.errs.push(FieldError::invalid(
                dpath,
                default.clone(),
                format!("must result in valid metadata: {e}"),
            ));
            return;
        }
        let meta_errs = embedded_resource_errors(root_schema, &obj, &root, true);
        if !meta_errs.is_empty() {
            self.errs.push(FieldError::invalid(
                dpath,
                default.clone(),
                format!("must result in valid metadata: {}", meta_errs.aggregate()),
            ));
            return;
        }
        self.errs.extend(validate_at(s, default, dpath));
    }
}

/// The object a metadata default ends up in: wrapped along `steps`, with upstream's `TypeMeta`.
fn surround(default: &Value, steps: &[Step]) -> Value {
    let mut v = default.clone();
    for step in steps.iter().rev() {
        v = match step {
            Step::Key(k) => {
                let mut m = Map::new();
                m.insert(k.clone(), v);
                Value::Object(m)
            }
            Step::Index => Value::Array(vec![v]),
        }
    }
    if let Value::Object(m) = &mut v {
        m.entry("kind")
            .or_insert_with(|| Value::from(SURROUNDING_KIND));
        m.entry("apiVersion")
            .or_insert_with(|| Value::from(SURROUNDING_API_VERSION));
    }
    v
}

/// Whether pruning `x` with `s` would remove anything (the pruning algorithm, read-only).
/// `embedded` marks `s` as a resource root whose apiVersion, kind and metadata are kept.
fn would_prune(x: &Value, s: Option<&Value>, embedded: bool) -> bool {
    if let Some(s) = s
        && flag(s, "x-kubernetes-preserve-unknown-fields")
    {
        return would_prune_preserving(x, s, embedded);
    }
    match x {
        Value::Object(m) => {
            let Some(s) = s else {
                return !m.is_empty();
            };
            let emb = embedded || flag(s, "x-kubernetes-embedded-resource");
            m.iter().any(|(k, v)| {
                if emb && is_meta_field(k) {
                    return false;
                }
                if let Some(p) = get(s, "properties").and_then(|p| get(p, k)) {
                    would_prune(v, Some(p), false)
                } else if let Some(ap) = get(s, "additionalProperties") {
                    would_prune(v, Some(ap).filter(|a| a.is_object()), false)
                } else {
                    true
                }
            })
        }
        Value::Array(items) => {
            let item_schema = s.and_then(|s| get(s, "items")).filter(|i| i.is_object());
            items.iter().any(|v| would_prune(v, item_schema, false))
        }
        _ => false,
    }
}

/// The pruning of a node with `x-kubernetes-preserve-unknown-fields`: unknown keys stay, known
/// ones are pruned by their schemas.
fn would_prune_preserving(x: &Value, s: &Value, embedded: bool) -> bool {
    match x {
        Value::Object(m) => {
            let emb = embedded || flag(s, "x-kubernetes-embedded-resource");
            m.iter().any(|(k, v)| {
                if emb && is_meta_field(k) {
                    return false;
                }
                if let Some(p) = get(s, "properties").and_then(|p| get(p, k)) {
                    would_prune(v, Some(p), false)
                } else if let Some(ap) = get(s, "additionalProperties") {
                    would_prune(v, Some(ap).filter(|a| a.is_object()), false)
                } else {
                    false
                }
            })
        }
        Value::Array(items) => match get(s, "items").filter(|i| i.is_object()) {
            Some(item_schema) => items
                .iter()
                .any(|v| would_prune_preserving(v, item_schema, false)),
            None => false,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(schema: &Value) -> Vec<String> {
        let path = Path::new("spec")
            .child("validation")
            .child("openAPIV3Schema");
        validate_defaults(schema, &path)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn spec(props: &Value) -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": props}}})
    }

    const P: &str = "spec.validation.openAPIV3Schema.properties[spec]";

    #[test]
    fn defaults_table() {
        let cases: Vec<(Value, Vec<String>)> = vec![
            (
                spec(&json!({"replicas": {"type": "integer", "maximum": 10, "default": 5}})),
                vec![],
            ),
            (
                spec(&json!({"replicas": {"type": "integer", "maximum": 10, "default": 11}})),
                vec![format!(
                    "{P}.properties[replicas].default: Invalid value: 11:  in body should be less than or equal to 10"
                )],
            ),
            (
                spec(&json!({"replicas": {"type": "integer", "default": "x"}})),
                vec![format!(
                    r#"{P}.properties[replicas].default: Invalid value: "string":  in body must be of type integer: "string""#
                )],
            ),
            (
                spec(&json!({"email": {"type": "string", "format": "email", "default": "abc"}})),
                vec![format!(
                    r#"{P}.properties[email].default: Invalid value: "abc":  in body must be of type email: "abc""#
                )],
            ),
            (
                spec(&json!({"color": {"type": "string", "enum": ["red"], "default": "blue"}})),
                vec![format!(
                    r#"{P}.properties[color].default: Unsupported value: "blue": supported values: "red""#
                )],
            ),
            (
                json!({"type": "object", "properties": {"spec": {
                    "type": "object",
                    "properties": {"a": {"type": "integer", "maximum": 1}},
                    "required": ["b"],
                    "default": {"a": 5},
                }}}),
                vec![
                    format!(
                        "{P}.default.a: Invalid value: 5: a in body should be less than or equal to 1"
                    ),
                    format!("{P}.default.b: Required value"),
                ],
            ),
            (
                json!({"type": "object", "properties": {"spec": {
                    "type": "object",
                    "properties": {"a": {"type": "integer"}},
                    "default": {"a": 1, "b": 2},
                }}}),
                vec![format!(
                    r#"{P}.default: Invalid value: {{"a":1,"b":2}}: must not have unknown fields"#
                )],
            ),
            (
                json!({"type": "object", "properties": {"spec": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": true,
                    "default": {"a": 1, "b": {"c": 2}},
                }}}),
                vec![],
            ),
            (
                spec(
                    &json!({"list": {"type": "array", "items": {"type": "string", "default": 5}}}),
                ),
                vec![format!(
                    r#"{P}.properties[list].items.default: Invalid value: "integer":  in body must be of type string: "integer""#
                )],
            ),
            // Go's Path.Child("[1]") prints `default.[1]`.
            (
                spec(
                    &json!({"list": {"type": "array", "items": {"type": "string"}, "default": ["a", 1]}}),
                ),
                vec![format!(
                    r#"{P}.properties[list].default.[1]: Invalid value: "integer": [1] in body must be of type string: "integer""#
                )],
            ),
            // additionalProperties are not walked (defaults are forbidden there anyway).
            (
                spec(
                    &json!({"m": {"type": "object", "additionalProperties": {"type": "string", "default": 5}}}),
                ),
                vec![],
            ),
            // a null default counts as no default
            (
                spec(&json!({"n": {"type": "integer", "default": null}})),
                vec![],
            ),
        ];
        for (schema, want) in cases {
            assert_eq!(run(&schema), want, "{schema}");
        }
    }

    #[test]
    fn embedded_resource_defaults() {
        let template = |extra: Value| {
            let mut t = json!({
                "type": "object",
                "x-kubernetes-embedded-resource": true,
                "x-kubernetes-preserve-unknown-fields": true,
            });
            for (k, v) in extra.as_object().cloned().unwrap_or_default() {
                t[k] = v;
            }
            spec(&json!({"template": t}))
        };
        assert_eq!(
            run(&template(json!({"default": {"kind": "Pod"}}))),
            [format!(
                "{P}.properties[template].default.apiVersion: Required value"
            )]
        );
        assert!(
            run(&template(
                json!({"default": {"apiVersion": "v1", "kind": "Pod"}})
            ))
            .is_empty()
        );
        assert_eq!(
            run(&template(
                json!({"default": {"apiVersion": 1, "kind": "Pod"}})
            )),
            [format!(
                "{P}.properties[template].default.apiVersion: Invalid value: 1: must be a string"
            )]
        );
        let name_default = |name: &str| {
            template(
                json!({"properties": {"metadata": {"type": "object", "properties": {
                    "name": {"type": "string", "default": name},
                }}}}),
            )
        };
        assert_eq!(
            run(&name_default("a/b")),
            [format!(
                r#"{P}.properties[template].properties[metadata].properties[name].default: Invalid value: "a/b": must result in valid metadata: metadata.name: Invalid value: "a/b": may not contain '/'"#
            )]
        );
        assert!(run(&name_default("ok")).is_empty());
        let kind_default =
            template(json!({"properties": {"kind": {"type": "string", "default": ""}}}));
        assert_eq!(
            run(&kind_default),
            [format!(
                r#"{P}.properties[template].properties[kind].default: Invalid value: "": must result in valid metadata: kind: Invalid value: "": must not be empty"#
            )]
        );
    }

    #[test]
    fn prune_check() {
        let s = json!({"type": "object", "properties": {"a": {"type": "object"}}});
        assert!(would_prune(&json!({"a": {"x": 1}}), Some(&s), false));
        assert!(!would_prune(&json!({"a": {}}), Some(&s), false));
        let ap_true = json!({"type": "object", "additionalProperties": true});
        assert!(!would_prune(&json!({"k": 1}), Some(&ap_true), false));
        assert!(would_prune(&json!({"k": {"x": 1}}), Some(&ap_true), false));
        assert!(!would_prune(
            &json!({"apiVersion": "v1", "kind": "K", "metadata": {}}),
            Some(&json!({"type": "object"})),
            true
        ));
    }
}
