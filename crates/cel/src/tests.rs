//! Data-driven CEL cases: the seed's rule table (each rule against a valid and an invalid
//! object), transition rules, messages, reasons, and the CRD-write checks.

use serde_json::{Value, json};

use super::*;

fn errors(schema: &Value, obj: &Value, old: Option<&Value>) -> Vec<String> {
    let rules = CompiledRules::compile(schema);
    let (errs, _) = validate(&rules, obj, old);
    errs.iter().map(ToString::to_string).collect()
}

fn root(rule: &str, props: &Value) -> Value {
    json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-validations": [{"rule": rule}], "properties": props}}})
}

fn wrap(spec: &Value) -> Value {
    json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "c"}, "spec": spec})
}

#[test]
fn the_seeds_rule_table() {
    let int = json!({"type": "integer"});
    let string = json!({"type": "string"});
    let map_of_strings = json!({"type": "object", "additionalProperties": {"type": "string"}});
    let list_of_strings = json!({"type": "array", "items": {"type": "string"}});
    let list_map = json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "value": {"type": "string"}, "key": {"type": "string"}, "foo": {"type": "integer"}}}});
    let cases: Vec<(&str, Value, Value, Value)> = vec![
        (
            "self.minReplicas <= self.replicas && self.replicas <= self.maxReplicas",
            json!({"minReplicas": int, "replicas": int, "maxReplicas": int}),
            json!({"minReplicas": 1, "replicas": 2, "maxReplicas": 3}),
            json!({"minReplicas": 0, "replicas": 20, "maxReplicas": 10}),
        ),
        (
            "'Available' in self.stateCounts",
            json!({"stateCounts": {"type": "object", "additionalProperties": {"type": "integer"}}}),
            json!({"stateCounts": {"Available": 1}}),
            json!({"stateCounts": {"Other": 1}}),
        ),
        (
            "(size(self.list1) == 0) != (size(self.list2) == 0)",
            json!({"list1": list_of_strings, "list2": list_of_strings}),
            json!({"list1": ["a"], "list2": []}),
            json!({"list1": ["a"], "list2": ["b"]}),
        ),
        (
            "!('MY_KEY' in self.map1) || self['MY_KEY'].matches('^[a-zA-Z]*$')"
                .replace("self['MY_KEY']", "self.map1['MY_KEY']")
                .leak(),
            json!({"map1": map_of_strings}),
            json!({"map1": {"MY_KEY": "abc"}}),
            json!({"map1": {"MY_KEY": "a1"}}),
        ),
        (
            "self.envars.filter(e, e.name == 'MY_ENV').all(e, e.value.matches('^[a-zA-Z]*$'))",
            json!({"envars": list_map}),
            json!({"envars": [{"name": "MY_ENV", "value": "abc"}]}),
            json!({"envars": [{"name": "MY_ENV", "value": "a-1"}]}),
        ),
        (
            "self.health.startsWith('ok')",
            json!({"health": string}),
            json!({"health": "ok now"}),
            json!({"health": "bad"}),
        ),
        (
            "self.widgets.exists(w, w.key == 'x' && w.foo < 10)",
            json!({"widgets": list_map}),
            json!({"widgets": [{"name": "a", "key": "x", "foo": 3}]}),
            json!({"widgets": [{"name": "a", "key": "x", "foo": 30}]}),
        ),
        (
            "self.set1.all(e, !(e in self.set2))",
            json!({"set1": list_of_strings, "set2": list_of_strings}),
            json!({"set1": ["a"], "set2": ["b"]}),
            json!({"set1": ["a"], "set2": ["a"]}),
        ),
        (
            "size(self.names) == size(self.details) && self.names.all(n, n in self.details)",
            json!({"names": list_of_strings, "details": map_of_strings}),
            json!({"names": ["a"], "details": {"a": "x"}}),
            json!({"names": ["a"], "details": {"b": "x"}}),
        ),
        (
            "size(self.clusters.filter(c, c.name == self.primary)) == 1",
            json!({"clusters": list_map, "primary": string}),
            json!({"clusters": [{"name": "a"}], "primary": "a"}),
            json!({"clusters": [{"name": "a"}], "primary": "b"}),
        ),
    ];
    for (rule, props, good, bad) in cases {
        let schema = root(rule, &props);
        assert_eq!(
            errors(&schema, &wrap(&good), None),
            Vec::<String>::new(),
            "{rule} (valid)"
        );
        let got = errors(&schema, &wrap(&bad), None);
        assert_eq!(
            got,
            vec![format!(
                "spec: Invalid value: \"object\": failed rule: {rule}"
            )],
            "{rule} (invalid)"
        );
    }
}

#[test]
fn messages_reasons_field_paths_and_the_root() {
    let schema = json!({"type": "object", "x-kubernetes-validations": [
            {"rule": "self.metadata.name.startsWith('c')", "message": "name must start with c"}],
        "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.replicas <= self.maxReplicas", "message": "replicas should be smaller than or equal to maxReplicas."},
                {"rule": "self.replicas >= 1", "messageExpression": "'replicas is ' + string(self.replicas)", "reason": "FieldValueForbidden", "fieldPath": ".replicas"}],
            "properties": {"replicas": {"type": "integer"}, "maxReplicas": {"type": "integer"}}}}});
    let obj = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "x"},
                     "spec": {"replicas": 0, "maxReplicas": -1}});
    let got = errors(&schema, &obj, None);
    assert!(
        got.contains(&"<nil>: Invalid value: \"object\": name must start with c".to_string()),
        "{got:?}"
    );
    assert!(got.contains(&"spec: Invalid value: \"object\": replicas should be smaller than or equal to maxReplicas.".to_string()), "{got:?}");
    assert!(
        got.contains(&"spec.replicas: Forbidden: replicas is 0".to_string()),
        "{got:?}"
    );
}

#[test]
fn transition_rules_run_only_on_update_and_unchanged_failures_ratchet() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "mode": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "Value is immutable"}]},
        "size": {"type": "integer", "x-kubernetes-validations": [{"rule": "self < 10"}]}}}}});
    let created = wrap(&json!({"mode": "a", "size": 20}));
    let rules = CompiledRules::compile(&schema);
    // Create: the transition rule is skipped; the plain rule fails.
    let (errs, _) = validate(&rules, &created, None);
    assert_eq!(
        errs.iter().map(ToString::to_string).collect::<Vec<_>>(),
        vec!["spec.size: Invalid value: \"integer\": failed rule: self < 10"]
    );
    // Update that changes mode: immutable; size unchanged → ratcheted to a warning.
    let updated = wrap(&json!({"mode": "b", "size": 20}));
    let (errs, warnings) = validate(&rules, &updated, Some(&created));
    assert_eq!(
        errs.iter().map(ToString::to_string).collect::<Vec<_>>(),
        vec!["spec.mode: Invalid value: \"string\": Value is immutable"]
    );
    assert_eq!(
        warnings,
        vec!["spec.size: Invalid value: \"integer\": failed rule: self < 10"]
    );
}

#[test]
fn crd_write_checks() {
    let path = Path::new("spec")
        .child("validation")
        .child("openAPIV3Schema");
    let cases: Vec<(Value, &str)> = vec![
        (
            root(
                "self.nonExistingField > 0",
                &json!({"a": {"type": "integer"}}),
            ),
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: \"self.nonExistingField > 0\": compilation failed: ERROR: <input>:1:1: undefined field 'nonExistingField'",
        ),
        (
            root("self.a >", &json!({"a": {"type": "integer"}})),
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: \"self.a >\": compilation failed:",
        ),
        (
            root("   ", &json!({})),
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Required value: rule is not specified",
        ),
        (
            json!({"type": "object", "properties": {"list": {"type": "array", "items": {"type": "string",
            "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}}}),
            "spec.validation.openAPIV3Schema.properties[list].items.x-kubernetes-validations[0].rule: Invalid value: \"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion of the schema within spec.validation.openAPIV3Schema.properties[list]",
        ),
        (
            json!({"type": "object", "x-kubernetes-validations": [{"rule": "true", "reason": "Bogus"}]}),
            "spec.validation.openAPIV3Schema.x-kubernetes-validations[0].reason: Unsupported value: \"Bogus\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\"",
        ),
        (
            json!({"type": "object", "x-kubernetes-validations": [{"rule": "true", "optionalOldSelf": true}]}),
            "spec.validation.openAPIV3Schema.x-kubernetes-validations[0].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule",
        ),
    ];
    for (schema, want) in cases {
        let got: Vec<String> = check_rules(&schema, &path)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert!(
            got.iter().any(|g| g.starts_with(want)),
            "want {want}\ngot {got:?}"
        );
    }
    // The seed's cost example: an unbounded list of unbounded strings with a nested all().
    let expensive = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "foo": {"type": "array", "items": {"type": "string"},
                "x-kubernetes-validations": [{"rule": "self.all(x, x.matches('^[a-z]*$') && self.all(y, y.size() < 100))"}]}}}}});
    let got: Vec<String> = check_rules(&expensive, &path)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(
        got.iter()
            .any(|g| g.contains("estimated rule cost exceeds budget by factor of")),
        "{got:?}"
    );
    let bounded = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "foo": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 10},
                "x-kubernetes-validations": [{"rule": "self.all(x, x.matches('^[a-z]*$') && self.all(y, y.size() < 100))"}]}}}}});
    assert_eq!(check_rules(&bounded, &path).len(), 0);
}

#[test]
fn has_on_self_is_refused_at_crd_write() {
    let path = Path::new("spec")
        .child("validation")
        .child("openAPIV3Schema");
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-validations": [{"rule": "has(self)"}]}}});
    let got: Vec<String> = check_rules(&schema, &path)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(got.len(), 1);
    assert!(
        got[0].contains("compilation failed: ERROR: <input>:1:5: invalid argument to has() macro"),
        "{got:?}"
    );
}
