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
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: \"self.nonExistingField > 0\": compilation failed: ERROR: <input>:1:5: undefined field 'nonExistingField'\n | self.nonExistingField > 0\n | ....^",
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
        let got: Vec<String> = check_rules(&schema, &path, &[])
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
    let got: Vec<String> = check_rules(&expensive, &path, &[])
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
    assert_eq!(check_rules(&bounded, &path, &[]).len(), 0);
}

#[test]
fn has_on_self_is_refused_at_crd_write() {
    let path = Path::new("spec")
        .child("validation")
        .child("openAPIV3Schema");
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-validations": [{"rule": "has(self)"}]}}});
    let got: Vec<String> = check_rules(&schema, &path, &[])
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(got.len(), 1);
    assert!(
        got[0].ends_with("compilation failed: ERROR: <input>:1:4: invalid argument to has() macro\n | has(self)\n | ...^"),
        "{got:?}"
    );
}

/// One rule at `spec` against a valid and an invalid `spec`, for features the old engine lacked.
#[test]
fn language_features_kubernetes_enables() {
    let int = json!({"type": "integer"});
    let string = json!({"type": "string"});
    let ios = json!({"x-kubernetes-int-or-string": true});
    let set =
        json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "integer"}});
    let map_list = json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "properties": {"name": {"type": "string"}, "v": {"type": "integer"}}}});
    let strings = json!({"type": "object", "additionalProperties": {"type": "string"}});
    let cases: Vec<(&str, Value, Value, Value)> = vec![
        // The seed's int-or-string rule: type() and type identifiers.
        (
            "type(self.v) == string ? self.v == '100%' : self.v == 1000",
            json!({"v": ios}),
            json!({"v": "100%"}),
            json!({"v": 999}),
        ),
        (
            "type(self.v) == string ? self.v == '100%' : self.v == 1000",
            json!({"v": ios}),
            json!({"v": 1000}),
            json!({"v": "99%"}),
        ),
        // Optional syntax.
        (
            "self.?a.orValue('none') != 'bad'",
            json!({"a": string}),
            json!({}),
            json!({"a": "bad"}),
        ),
        (
            "self.m[?'k'].orValue('') == ''",
            json!({"m": strings}),
            json!({"m": {"j": "x"}}),
            json!({"m": {"k": "x"}}),
        ),
        // Two-variable comprehensions.
        (
            "self.l.all(i, v, v > i)",
            json!({"l": set}),
            json!({"l": [1, 2, 3]}),
            json!({"l": [1, 1]}),
        ),
        (
            "self.m.exists(k, v, k == v)",
            json!({"m": strings}),
            json!({"m": {"a": "a", "b": "c"}}),
            json!({"m": {"a": "b"}}),
        ),
        (
            "self.l.existsOne(i, v, v == 3)",
            json!({"l": set}),
            json!({"l": [1, 3]}),
            json!({"l": [1, 2]}),
        ),
        (
            "self.l.transformList(i, v, v * 2) == [2, 4]",
            json!({"l": {"type": "array", "items": int}}),
            json!({"l": [1, 2]}),
            json!({"l": [2, 1]}),
        ),
        (
            "self.m.transformMap(k, v, v + '!') == {'a': 'x!'}",
            json!({"m": strings}),
            json!({"m": {"a": "x"}}),
            json!({"m": {"a": "y"}}),
        ),
        // Set and map lists compare regardless of order; atomic lists do not.
        (
            "self.a == self.b",
            json!({"a": set, "b": set}),
            json!({"a": [1, 2], "b": [2, 1]}),
            json!({"a": [1, 2], "b": [2, 3]}),
        ),
        (
            "self.a == self.b",
            json!({"a": map_list, "b": map_list}),
            json!({"a": [{"name": "x", "v": 1}, {"name": "y", "v": 2}], "b": [{"name": "y", "v": 2}, {"name": "x", "v": 1}]}),
            json!({"a": [{"name": "x", "v": 1}], "b": [{"name": "x", "v": 2}]}),
        ),
        (
            "self.a != self.b",
            json!({"a": {"type": "array", "items": int}, "b": {"type": "array", "items": int}}),
            json!({"a": [1, 2], "b": [2, 1]}),
            json!({"a": [1, 2], "b": [1, 2]}),
        ),
        // Concatenation: union for sets, merge by key for map lists.
        (
            "self.a + self.b == [1, 2, 3]",
            json!({"a": set, "b": set}),
            json!({"a": [1, 2], "b": [2, 3]}),
            json!({"a": [1, 2], "b": [4]}),
        ),
        (
            "(self.a + self.b).map(e, e.v) == [9, 2, 3]",
            json!({"a": map_list, "b": map_list}),
            json!({"a": [{"name": "x", "v": 1}, {"name": "y", "v": 2}], "b": [{"name": "x", "v": 9}, {"name": "z", "v": 3}]}),
            json!({"a": [{"name": "x", "v": 1}], "b": [{"name": "z", "v": 3}]}),
        ),
        // Formats become timestamps and durations.
        (
            "has(self.expired) && self.created + self.ttl < self.expired",
            json!({"created": {"type": "string", "format": "date-time"}, "ttl": {"type": "string", "format": "duration"}, "expired": {"type": "string", "format": "date-time"}}),
            json!({"created": "2024-01-01T00:00:00Z", "ttl": "1h", "expired": "2024-01-01T02:00:00Z"}),
            json!({"created": "2024-01-01T00:00:00Z", "ttl": "3h", "expired": "2024-01-01T02:00:00Z"}),
        ),
        // Escaped property names.
        (
            "self.__namespace__ > 0 && self.x__dash__prop > 0 && self.redact__underscores__d > 0",
            json!({"namespace": int, "x-prop": int, "redact__d": int}),
            json!({"namespace": 1, "x-prop": 1, "redact__d": 1}),
            json!({"namespace": 1, "x-prop": 0, "redact__d": 1}),
        ),
    ];
    for (rule, props, good, bad) in cases {
        let schema = root(rule, &props);
        assert_eq!(
            errors(&schema, &wrap(&good), None),
            Vec::<String>::new(),
            "{rule} (valid: {good})"
        );
        assert_eq!(
            errors(&schema, &wrap(&bad), None),
            vec![format!(
                "spec: Invalid value: \"object\": failed rule: {rule}"
            )],
            "{rule} (invalid: {bad})"
        );
    }
}

#[test]
fn optional_old_self_runs_on_create() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "n": {"type": "integer", "x-kubernetes-validations": [
            {"rule": "!oldSelf.hasValue() || self >= oldSelf.value()", "optionalOldSelf": true, "message": "must not decrease"},
            {"rule": "oldSelf.hasValue() || self < 100", "optionalOldSelf": true, "message": "starts below 100"}]}}}}});
    let rules = CompiledRules::compile(&schema);
    let at = |n: i64| wrap(&json!({"n": n}));
    let msgs = |(errs, _): (ErrorList, Vec<String>)| -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    };
    assert_eq!(
        msgs(validate(&rules, &at(200), None)),
        vec!["spec.n: Invalid value: \"integer\": starts below 100"]
    );
    assert!(msgs(validate(&rules, &at(5), None)).is_empty());
    assert!(msgs(validate(&rules, &at(200), Some(&at(5)))).is_empty());
    assert_eq!(
        msgs(validate(&rules, &at(4), Some(&at(5)))),
        vec!["spec.n: Invalid value: \"integer\": must not decrease"]
    );
}

#[test]
fn runtime_errors_read_as_upstream() {
    let cases = [
        (
            "self.m['missing'] == 'x'",
            json!({"m": {"type": "object", "additionalProperties": {"type": "string"}}}),
            json!({"m": {}}),
            "spec: Invalid value: \"object\": no such key: missing evaluating rule: self.m['missing'] == 'x'",
        ),
        (
            "self.v == 1",
            json!({"v": {"x-kubernetes-int-or-string": true}}),
            json!({"v": "one"}),
            "",
        ),
        (
            "self.v > 1",
            json!({"v": {"x-kubernetes-int-or-string": true}}),
            json!({"v": "one"}),
            "spec: Invalid value: \"object\": 'no such overload': call arguments did not match a supported operator, function or macro signature for rule: self.v > 1",
        ),
        (
            "1 / self.n == 1",
            json!({"n": {"type": "integer"}}),
            json!({"n": 0}),
            "spec: Invalid value: \"object\": division by zero evaluating rule: 1 / self.n == 1",
        ),
    ];
    for (rule, props, obj, want) in cases {
        let got = errors(&root(rule, &props), &wrap(&obj), None);
        if want.is_empty() {
            // `==` across types is false, not an error.
            assert_eq!(
                got,
                vec![format!(
                    "spec: Invalid value: \"object\": failed rule: {rule}"
                )]
            );
        } else {
            assert_eq!(got, vec![want.to_string()], "{rule}");
        }
    }
}

/// The runtime budget: each rule fits the per-call limit, but together they pass the per-object
/// budget, which stops evaluation with upstream's error.
#[test]
fn runtime_cost_budget_stops_evaluation() {
    // Each rule scans 100 strings of 10,000 bytes 8 times: ~800k, under the 1M per-call limit;
    // 20 such rules pass the 10M budget.
    let heavy = ["self.l.all(x, !x.contains('b'))"; 8].join(" && ");
    let rules: Vec<Value> = (0..20).map(|_| json!({"rule": heavy})).collect();
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-validations": rules,
        "properties": {"l": {"type": "array", "items": {"type": "string"}}}}}});
    let long = "a".repeat(10_000);
    let got = errors(&schema, &wrap(&json!({"l": vec![long.clone(); 100]})), None);
    assert_eq!(
        got,
        vec![
            "spec: Invalid value: \"object\": validation failed due to running out of cost budget, no further validation rules will be run"
        ]
    );
    // The same rules on a smaller object pass.
    assert!(errors(&schema, &wrap(&json!({"l": vec![long.clone(); 10]})), None).is_empty());
    // One rule whose evaluation alone passes the per-call limit.
    let rule = "self.l.all(x, self.l.all(y, !y.contains('b')))";
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-validations": [{"rule": rule}],
        "properties": {"l": {"type": "array", "items": {"type": "string"}}}}}});
    let got = errors(&schema, &wrap(&json!({"l": vec![long; 40]})), None);
    assert_eq!(
        got,
        vec![format!(
            "spec: Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {rule}"
        )]
    );
}

fn crd_errors(schema: &Value) -> Vec<String> {
    let path = Path::new("spec")
        .child("validation")
        .child("openAPIV3Schema");
    check_rules(schema, &path, &[])
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// The seed's "Resource use by validation functions" examples.
#[test]
fn the_seeds_cost_examples() {
    let tail = "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";
    let rule_at = |foo: Value| json!({"type": "object", "properties": {"foo": foo}});
    // Unbounded list of unbounded strings: over the per-rule limit, and so over the total.
    let unbounded = rule_at(json!({"type": "array", "items": {"type": "string"},
        "x-kubernetes-validations": [{"rule": "self.all(x, x.contains('a string'))"}]}));
    assert_eq!(
        crd_errors(&unbounded),
        vec![
            format!("spec.validation.openAPIV3Schema.properties[foo].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x {tail}"),
            "spec.validation.openAPIV3Schema.properties[foo].x-kubernetes-validations[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema".to_string(),
            format!("spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x {tail}"),
        ]
    );
    // Limits make it affordable, whether the rule sits on the list or on its items.
    let bounded = rule_at(
        json!({"type": "array", "maxItems": 25, "items": {"type": "string", "maxLength": 10},
        "x-kubernetes-validations": [{"rule": "self.all(x, x.contains('a string'))"}]}),
    );
    assert_eq!(crd_errors(&bounded), Vec::<String>::new());
    let on_items = rule_at(
        json!({"type": "array", "maxItems": 25, "items": {"type": "string", "maxLength": 10,
        "x-kubernetes-validations": [{"rule": "self.contains('a string')"}]}}),
    );
    assert_eq!(crd_errors(&on_items), Vec::<String>::new());
    // A flat list of integers is fine; the same rule on a nested list is not.
    let flat = json!({"type": "object", "properties": {"foo": {"type": "array", "items": {"type": "integer"}}},
        "x-kubernetes-validations": [{"rule": "self.foo.all(x, x == 5)"}]});
    assert_eq!(crd_errors(&flat), Vec::<String>::new());
    let nested = rule_at(
        json!({"type": "array", "items": {"type": "array", "items": {"type": "integer"},
        "x-kubernetes-validations": [{"rule": "self.all(x, x == 5)"}]}}),
    );
    let got = crd_errors(&nested);
    assert!(
        got.first().is_some_and(|e| e.starts_with("spec.validation.openAPIV3Schema.properties[foo].items.x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x")),
        "{got:?}"
    );
}

/// `all` and `exists` ignore an element's error when another element decides the result (cel-go
/// keeps the error in the accumulator), in either order; an undecided error is raised.
#[test]
fn all_and_exists_absorb_errors_an_element_decides() {
    let props = json!({"l": {"type": "array", "maxItems": 5, "items": {"type": "string", "maxLength": 10}}});
    let cases: Vec<(&str, Value, Option<&str>)> = vec![
        ("self.l.exists(s, int(s) > 5)", json!(["abc", "10"]), None),
        ("self.l.exists(s, int(s) > 5)", json!(["10", "abc"]), None),
        ("self.l.all(s, int(s) > 0)", json!(["abc", "0"]), Some("")),
        ("self.l.all(s, int(s) > 0)", json!(["0", "abc"]), Some("")),
        (
            "self.l.all(s, int(s) > 0)",
            json!(["abc", "5"]),
            Some("err"),
        ),
        (
            "self.l.all(s, int(s) > 0)",
            json!(["5", "abc"]),
            Some("err"),
        ),
        (
            "self.l.exists(s, int(s) > 5)",
            json!(["abc", "1"]),
            Some("err"),
        ),
        ("self.l.all(s, int(s) > 0)", json!(["1", "2"]), None),
        ("self.l.exists(s, int(s) > 5)", json!(["1", "2"]), Some("")),
        // A failed conversion in cel-go's words.
        (
            "self.l.all(s, int(s) > 0)",
            json!(["abc"]),
            Some("type conversion error from 'string' to 'int'"),
        ),
        // Nested: the inner macro's error is held by the outer one too.
        (
            "self.l.all(s, [s].exists(t, int(t) > 0))",
            json!(["abc", "0"]),
            Some(""),
        ),
    ];
    for (rule, list, want) in cases {
        let got = errors(&root(rule, &props), &wrap(&json!({"l": list})), None);
        let prefix = "spec: Invalid value: \"object\": ";
        match want {
            None => assert_eq!(got, Vec::<String>::new(), "{rule} {list}"),
            Some("") => assert_eq!(
                got,
                vec![format!("{prefix}failed rule: {rule}")],
                "{rule} {list}"
            ),
            Some("err") => assert!(
                got.len() == 1
                    && got[0].starts_with(prefix)
                    && got[0].ends_with(&format!(" evaluating rule: {rule}"))
                    && !got[0].contains("failed rule"),
                "{rule} {list}: {got:?}"
            ),
            Some(message) => assert_eq!(
                got,
                vec![format!("{prefix}{message} evaluating rule: {rule}")],
                "{rule} {list}"
            ),
        }
    }
}

/// Map keys are sized 0, as upstream's schema types size them: string functions of a key
/// (Gateway API's `self.all(key, key.matches(...))` on annotations, Istio's
/// `self.all(key, !key.contains('*'))` on match labels) are affordable on any map; the same
/// functions of an unbounded value are not.
#[test]
fn map_keys_cost_nothing_per_byte() {
    let map = |extra: Value, rule: &str| {
        let mut m = json!({"type": "object", "additionalProperties": {"type": "string", "maxLength": 4096},
            "x-kubernetes-validations": [{"rule": rule}]});
        if let (Some(m), Some(extra)) = (m.as_object_mut(), extra.as_object()) {
            m.extend(extra.clone());
        }
        json!({"type": "object", "properties": {"m": m}})
    };
    for (extra, rule) in [
        (
            json!({"maxProperties": 1}),
            "self.all(k, k.startsWith('x'))",
        ),
        (
            json!({"maxProperties": 8}),
            "self.all(key, key.matches('^[a-z]+$'))",
        ),
        (
            json!({"maxProperties": 8}),
            "self.all(key, key.split('/')[0].size() < 253)",
        ),
        (
            json!({"maxProperties": 4096}),
            "self.all(key, !key.contains('*'))",
        ),
        (json!({}), "self.all(k, k.lowerAscii() == k)"),
    ] {
        assert_eq!(
            crd_errors(&map(extra, rule)),
            Vec::<String>::new(),
            "{rule}"
        );
    }
    let unbounded_values = json!({"type": "object", "properties": {"m": {"type": "object",
        "additionalProperties": {"type": "string"},
        "x-kubernetes-validations": [{"rule": "self.all(k, self[k].contains('*'))"}]}}});
    assert!(
        crd_errors(&unbounded_values)
            .first()
            .is_some_and(|e| e.contains("estimated rule cost exceeds budget")),
        "{:?}",
        crd_errors(&unbounded_values)
    );
}

/// `map` and `filter` build their result by list concatenation, which cel-go costs at 1 (the
/// estimate and the runtime alike): over a bounded list they are as affordable as `all`.
#[test]
fn list_concatenation_costs_one() {
    let tags = |rule: &str| {
        json!({"type": "object", "properties": {"tags": {"type": "array", "maxItems": 10,
            "items": {"type": "string", "maxLength": 20},
            "x-kubernetes-validations": [{"rule": rule}]}}})
    };
    for rule in [
        "self.map(t, t).size() >= 0",
        "self.filter(t, t != '').size() >= 0",
        "self.map(t, t.upperAscii()).all(t, t.size() < 100)",
        "(self + self + self).size() <= 30",
    ] {
        assert_eq!(crd_errors(&tags(rule)), Vec::<String>::new(), "{rule}");
    }
    // Unbounded, the same rule is still refused: the per-element work is what costs.
    let unbounded = json!({"type": "object", "properties": {"tags": {"type": "array",
        "items": {"type": "string"},
        "x-kubernetes-validations": [{"rule": "self.map(t, t.upperAscii()).size() >= 0"}]}}});
    assert!(
        crd_errors(&unbounded)
            .first()
            .is_some_and(|e| e.contains("estimated rule cost exceeds budget")),
        "{:?}",
        crd_errors(&unbounded)
    );
    // At runtime, concatenating long lists costs 1 per `+`: 100 concatenations of a
    // 100,000-element list stay far under the per-call limit (1,000,000).
    let rule = format!("({}).size() > 0", vec!["self.l"; 100].join(" + "));
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-validations": [{"rule": rule}],
        "properties": {"l": {"type": "array", "maxItems": 100_000, "items": {"type": "integer"}}}}}});
    assert!(crd_errors(&schema).is_empty(), "{:?}", crd_errors(&schema));
    assert_eq!(
        errors(&schema, &wrap(&json!({"l": vec![1; 100_000]})), None),
        Vec::<String>::new()
    );
}

/// Each rule fits the per-rule limit; together they pass the per-schema total.
#[test]
fn the_total_of_a_schema_is_limited() {
    let tail = "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";
    let props: serde_json::Map<String, Value> = (0..14)
        .map(|i| {
            (
                format!("l{i:02}"),
                json!({"type": "array", "maxItems": 1000, "items": {"type": "string", "maxLength": 20000},
                   "x-kubernetes-validations": [{"rule": "self.all(x, x.contains('a'))"}]}),
            )
        })
        .collect();
    let schema = json!({"type": "object", "properties": props});
    let got = crd_errors(&schema);
    assert_eq!(got.len(), 5, "{got:?}");
    assert!(got[..4].iter().all(|e| e.ends_with("].x-kubernetes-validations[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema")), "{got:?}");
    assert!(
        got[4].starts_with("spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of 1.1")
            && got[4].ends_with(tail),
        "{got:?}"
    );
    // Twelve of them fit.
    let mut fewer = schema.clone();
    if let Some(p) = fewer
        .pointer_mut("/properties")
        .and_then(Value::as_object_mut)
    {
        p.remove("l12");
        p.remove("l13");
    }
    assert_eq!(crd_errors(&fewer), Vec::<String>::new());
}

/// cel-go's parser limits (found by the `cel` fuzz target's inputs: a 20,000-term `1+1+...+1`
/// overflowed the stack of the thread checking it, aborting the server). Each case runs on a
/// thread with the 2 MiB stack of a tokio worker, through the CRD-write checks and an admission
/// expression. `None`: the rule compiles.
#[test]
fn parser_limits_bound_expression_depth_and_size() {
    let chain = |n: usize, op: &str, term: &str| vec![term; n].join(op);
    let recursion = "ERROR: <input>:-1:0: expression recursion limit exceeded: 250";
    let cases: Vec<(String, Option<String>)> = vec![
        (chain(20_000, "+", "1") + " > 0", Some(recursion.into())),
        (chain(300, "+", "1") + " > 0", Some(recursion.into())),
        (chain(200, "+", "1") + " > 0", None),
        (format!("self{} == 1", ".a".repeat(300)), Some(recursion.into())),
        (format!("{}1{} == [1]", "[".repeat(3000), "]".repeat(3000)), Some(recursion.into())),
        (chain(300, " == ", "true"), Some(recursion.into())),
        (chain(300, " ? true : ", "false"), Some(recursion.into())),
        // Logical chains are balanced trees: no depth to speak of.
        (chain(5_000, " && ", "true"), None),
        // Operators of sibling clauses do not add up.
        (chain(150, " && ", "{'a': 1}.a == 1"), None),
        (format!("[{}].size() > 0", chain(150, ", ", "1 + 1")), None),
        // Operators inside string literals and comments are text.
        (format!("'{}' != '' // {}", "+".repeat(1_000), "+".repeat(1_000)), None),
        (format!("r\"{}\" != '' && 1.5e+3 > 0.5", "+.".repeat(1_000)), None),
        // Error recovery underflowed cel 0.13's recursion counter (a panic in debug builds).
        (
            "se?pfkkkkkkkkkkkkkkkkkkkkkkk[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[kkkk[kkk1,2,sse?lf.health.sk;kkkkkkkk.\u{0}\u{0}\u{0}kkkkkkkkkkkkkkokkkkkkkkkkkkkkkkkkkk[[[[[;[0[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[se?lf.health.sk;kkkkkkkkk[[[[[[[[kkkkkkkse[kkkkkokkkkkkkkkkkkkkkkkkkk[}}".into(),
            Some("ERROR: <input>:-1:0: Syntax error: the expression could not be parsed".into()),
        ),
        (
            format!("'{}' == ''", "a".repeat(99_999)),
            Some("ERROR: <input>:-1:0: expression code point size exceeds limit: size: 100007, limit 100000".into()),
        ),
    ];
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            for (rule, want) in cases {
                let short: String = rule.chars().take(40).collect();
                let schema =
                    json!({"type": "object", "x-kubernetes-validations": [{"rule": rule}]});
                let got: Vec<String> = crd_errors(&schema)
                    .iter()
                    .map(|e| {
                        e.chars()
                            .rev()
                            .take(200)
                            .collect::<Vec<_>>()
                            .into_iter()
                            .rev()
                            .collect()
                    })
                    .collect();
                match &want {
                    Some(w) => assert!(
                        got.len() == 1 && got[0].contains(&format!("compilation failed: {w}")),
                        "{short}: want {w}, got {got:?}"
                    ),
                    None => assert!(got.is_empty(), "{short}: {got:?}"),
                }
                let expr = Expression::compile_bool(&rule, &["object"]);
                match &want {
                    Some(w) => assert_eq!(expr.err().as_deref(), Some(w.as_str()), "{short}"),
                    None => assert!(expr.is_ok(), "{short}"),
                }
            }
        })
        .expect("thread")
        .join()
        .expect("no case overflows the stack");
}

/// Defaults are checked against the rules over them when the CRD is written: at the default's
/// own node, and inside an object default through its children's rules.
#[test]
fn defaults_that_fail_their_rules_are_refused_at_crd_write() {
    let path = Path::new("spec")
        .child("validation")
        .child("openAPIV3Schema");
    let schema = |spec: Value| json!({"type": "object", "properties": {"spec": spec}});
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (
            schema(
                json!({"type": "object", "properties": {"mode": {"type": "string", "default": "b",
                "x-kubernetes-validations": [{"rule": "self == 'a'"}]}}}),
            ),
            vec![
                "spec.validation.openAPIV3Schema.properties[spec].properties[mode].default: Invalid value: \"string\": failed rule: self == 'a'",
            ],
        ),
        (
            schema(json!({"type": "object", "default": {"size": 11},
                "properties": {"size": {"type": "integer",
                    "x-kubernetes-validations": [{"rule": "self <= 10", "message": "too big"}]}}})),
            vec![
                "spec.validation.openAPIV3Schema.properties[spec].default.size: Invalid value: \"integer\": too big",
            ],
        ),
        (
            schema(
                json!({"type": "object", "properties": {"mode": {"type": "string", "default": "a",
                "x-kubernetes-validations": [{"rule": "self == 'a'"}]}}}),
            ),
            vec![],
        ),
    ];
    for (schema, want) in cases {
        let got: Vec<String> = crate::check_default_rules(&schema, &path)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(got, want, "{schema}");
    }
}

/// `&&` and `||` report the left operand's error when neither operand decides, as cel-go does,
/// and `size()` of a missing field says which key is missing (both found by a probe with the
/// Gateway API's `size(self.certificateRefs) > 0 || size(self.options) > 0`).
#[test]
fn logic_operators_and_size_report_the_first_error() {
    let list =
        json!({"type": "array", "maxItems": 5, "items": {"type": "string", "maxLength": 10}});
    let props = json!({"l": list, "m": list, "s": {"type": "string", "maxLength": 10}});
    let prefix = "spec: Invalid value: \"object\": ";
    let cases: Vec<(&str, Value, Option<&str>)> = vec![
        ("size(self.l) > 0", json!({}), Some("no such key: l")),
        (
            "size(self.l) > 0 || size(self.m) > 0",
            json!({}),
            Some("no such key: l"),
        ),
        (
            "self.l.size() > 0 || self.m.size() > 0",
            json!({}),
            Some("no such key: l"),
        ),
        (
            "self.l.size() > 0 && self.m.size() > 0",
            json!({}),
            Some("no such key: l"),
        ),
        (
            "size(self.l) > 0 || size(self.m) > 0",
            json!({"m": ["x"]}),
            None,
        ),
        ("size(self.l) > 0 || true", json!({}), None),
        ("true || size(self.l) > 0", json!({}), None),
        ("size(self.l) > 0 && false", json!({}), Some("")),
        ("false && size(self.l) > 0", json!({}), Some("")),
        (
            "size(self.l) > 0 && true",
            json!({}),
            Some("no such key: l"),
        ),
        (
            "self.s.size() == 5 && size(self.s) == 5",
            json!({"s": "héllo"}),
            None,
        ),
        (
            "size(self.l) == 2 && self.l.size() == 2",
            json!({"l": ["a", "b"]}),
            None,
        ),
    ];
    for (rule, spec, want) in cases {
        let got = errors(&root(rule, &props), &wrap(&spec), None);
        let want: Vec<String> = match want {
            None => Vec::new(),
            Some("") => vec![format!("{prefix}failed rule: {rule}")],
            Some(m) => vec![format!("{prefix}{m} evaluating rule: {rule}")],
        };
        assert_eq!(got, want, "{rule} {spec}");
    }
}
