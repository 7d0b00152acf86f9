//! Data-driven cases: one per KEP-3945 use case (rules and object in, object out), the CRD-write
//! checks (invalid CRDs → expected causes) and the round-trip check.

use serde_json::{Value, json};

use super::*;

fn yaml(s: &str) -> Value {
    serde_saphyr::from_str(s).unwrap_or_else(|e| panic!("{e}\n{s}"))
}

/// A CRD of group `example.com` with versions v1 (storage) and v2, whose `spec` properties and
/// conversion rules are given in YAML.
fn crd(v1_spec: &str, v2_spec: &str, rules: &str) -> Value {
    let version = |name: &str, spec: &str, storage: bool| {
        json!({"name": name, "served": true, "storage": storage, "schema": {"openAPIV3Schema": {
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": yaml(spec)}}}}})
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"plural": "widgets", "kind": "Widget"},
            "scope": "Namespaced",
            "versions": [version("v1", v1_spec, true), version("v2", v2_spec, false)],
            "conversion": {"strategy": "ConversionRules", "conversionRules": yaml(rules)},
        }
    })
}

fn object(version: &str, rest: &str) -> Value {
    let mut o = json!({"apiVersion": format!("example.com/{version}"), "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"}});
    if let (Some(m), Value::Object(extra)) = (o.as_object_mut(), yaml(rest)) {
        for (k, v) in extra {
            if k == "metadata" {
                m["metadata"]
                    .as_object_mut()
                    .expect("metadata")
                    .extend(v.as_object().cloned().unwrap_or_default());
            } else {
                m.insert(k, v);
            }
        }
    }
    o
}

struct Case {
    name: &'static str,
    v1: &'static str,
    v2: &'static str,
    rules: &'static str,
    /// `(from version, object)` → `(to version, object)`.
    input: (&'static str, &'static str),
    want: (&'static str, &'static str),
}

#[test]
fn kep_use_cases() {
    let cases = [
        Case {
            name: "rename",
            v1: "{firstName: {type: string}, size: {type: integer}}",
            v2: "{givenName: {type: string}, size: {type: integer}}",
            rules: "[{from: v1, to: v2, rules: [{fromField: .spec.firstName, toField: .spec.givenName}]}]",
            input: ("v1", "spec: {firstName: Ada, size: 3}"),
            want: ("v2", "spec: {givenName: Ada, size: 3}"),
        },
        Case {
            name: "relocate",
            v1: "{firstName: {type: string}}",
            v2: "{name: {type: object, properties: {first: {type: string}}}}",
            rules: "[{from: v1, to: v2, rules: [{fromField: .spec.firstName, toField: .spec.name.first, transformation: self}]}]",
            input: ("v1", "spec: {firstName: Ada}"),
            want: ("v2", "spec: {name: {first: Ada}}"),
        },
        Case {
            name: "relocate back: the emptied parent goes",
            v1: "{firstName: {type: string}}",
            v2: "{name: {type: object, properties: {first: {type: string}}}}",
            rules: "[{from: v2, to: v1, rules: [{fromField: .spec.name.first, toField: .spec.firstName}]}]",
            input: ("v2", "spec: {name: {first: Ada}}"),
            want: ("v1", "spec: {firstName: Ada}"),
        },
        Case {
            name: "split a field into two",
            v1: "{image: {type: string}}",
            v2: "{repository: {type: string}, tag: {type: string}}",
            rules: r#"[{from: v1, to: v2, rules: [
                {fromField: .spec.image, toField: .spec.repository, transformation: "self.split(':')[0]"},
                {fromField: .spec.image, toField: .spec.tag, transformation: "self.split(':')[1]"}]}]"#,
            input: ("v1", "spec: {image: 'nginx:1.25'}"),
            want: ("v2", "spec: {repository: nginx, tag: '1.25'}"),
        },
        Case {
            name: "join two fields into one (a toField below its fromField keeps the rest)",
            v1: "{image: {type: string}}",
            v2: "{repository: {type: string}, tag: {type: string}}",
            rules: r#"[{from: v2, to: v1, rules: [
                {fromField: .spec, toField: .spec.image, transformation: "self.repository + ':' + self.tag"},
                {fromField: .spec.repository}, {fromField: .spec.tag}]}]"#,
            input: ("v2", "spec: {repository: nginx, tag: '1.25'}"),
            want: ("v1", "spec: {image: 'nginx:1.25'}"),
        },
        Case {
            name: "scalar to list",
            v1: "{command: {type: string}}",
            v2: "{commands: {type: array, items: {type: string}}}",
            rules: "[{from: v1, to: v2, rules: [{fromField: .spec.command, toField: .spec.commands, transformation: '[self]'}]}]",
            input: ("v1", "spec: {command: run}"),
            want: ("v2", "spec: {commands: [run]}"),
        },
        Case {
            name: "conditional conversion: applied",
            v1: "{replicas: {type: integer}}",
            v2: "{scale: {type: object, properties: {replicas: {type: integer}}}}",
            rules: "[{from: v1, to: v2, rules: [{fromField: .spec.replicas, toField: .spec.scale.replicas, transformation: 'self > 0 ? optional.of(self) : optional.none()'}]}]",
            input: ("v1", "spec: {replicas: 3}"),
            want: ("v2", "spec: {scale: {replicas: 3}}"),
        },
        Case {
            name: "conditional conversion: not applied",
            v1: "{replicas: {type: integer}}",
            v2: "{scale: {type: object, properties: {replicas: {type: integer}}}}",
            rules: "[{from: v1, to: v2, rules: [{fromField: .spec.replicas, toField: .spec.scale.replicas, transformation: 'self > 0 ? optional.of(self) : optional.none()'}]}]",
            input: ("v1", "spec: {replicas: 0}"),
            want: ("v2", "spec: {}"),
        },
        Case {
            name: "conditional conversion in place: none keeps the value",
            v1: "{mode: {type: string}}",
            v2: "{mode: {type: string}}",
            rules: r#"[{from: v1, to: v2, rules: [{fromField: .spec.mode, toField: .spec.mode, transformation: "self == 'legacy' ? optional.of('Compat') : optional.none()"}]}]"#,
            input: ("v1", "spec: {mode: Fast}"),
            want: ("v2", "spec: {mode: Fast}"),
        },
        Case {
            name: "build a sub-object from several fields",
            v1: "{host: {type: string}, port: {type: integer}, path: {type: string}}",
            v2: "{endpoint: {type: object, properties: {host: {type: string}, port: {type: integer}}}, path: {type: string}}",
            rules: "[{from: v1, to: v2, rules: [{fromField: .spec.host, toField: .spec.endpoint.host}, {fromField: .spec.port, toField: .spec.endpoint.port}]}]",
            input: ("v1", "spec: {host: db, port: 5432, path: /x}"),
            want: ("v2", "spec: {endpoint: {host: db, port: 5432}, path: /x}"),
        },
        Case {
            name: "type change: seconds to a duration string",
            v1: "{timeoutSeconds: {type: integer}}",
            v2: "{timeout: {type: string, format: duration}}",
            rules: "[{from: v1, to: v2, rules: [{fromField: .spec.timeoutSeconds, toField: .spec.timeout, transformation: \"duration(string(self) + 's')\"}]}]",
            input: ("v1", "spec: {timeoutSeconds: 5430}"),
            want: ("v2", "spec: {timeout: 1h30m30s}"),
        },
        Case {
            name: "type change: a duration string to seconds",
            v1: "{timeoutSeconds: {type: integer}}",
            v2: "{timeout: {type: string, format: duration}}",
            rules: "[{from: v2, to: v1, rules: [{fromField: .spec.timeout, toField: .spec.timeoutSeconds, transformation: 'self.getSeconds()'}]}]",
            input: ("v2", "spec: {timeout: 1m30s}"),
            want: ("v1", "spec: {timeoutSeconds: 90}"),
        },
        Case {
            name: "annotation to field",
            v1: "{size: {type: integer}}",
            v2: "{size: {type: integer}, tier: {type: string}}",
            rules: "[{from: v1, to: v2, rules: [{fromField: \".metadata.annotations['example.com/tier']\", toField: .spec.tier}]}]",
            input: (
                "v1",
                "{metadata: {annotations: {example.com/tier: gold, keep: x}}, spec: {size: 1}}",
            ),
            want: (
                "v2",
                "{metadata: {annotations: {keep: x}}, spec: {size: 1, tier: gold}}",
            ),
        },
        Case {
            name: "field to annotation (the emptied annotation map goes)",
            v1: "{size: {type: integer}}",
            v2: "{size: {type: integer}, tier: {type: string}}",
            rules: "[{from: v2, to: v1, rules: [{fromField: .spec.tier, toField: \".metadata.annotations['example.com/tier']\"}]}]",
            input: ("v2", "spec: {size: 1, tier: gold}"),
            want: (
                "v1",
                "{metadata: {annotations: {example.com/tier: gold}}, spec: {size: 1}}",
            ),
        },
        Case {
            name: "deletion",
            v1: "{size: {type: integer}, legacy: {type: string}}",
            v2: "{size: {type: integer}}",
            rules: "[{from: v1, to: v2, rules: [{fromField: .spec.legacy}]}]",
            input: ("v1", "spec: {size: 1, legacy: old}"),
            want: ("v2", "spec: {size: 1}"),
        },
        Case {
            name: "a transform applied to every element of a list",
            v1: "{ports: {type: array, maxItems: 64, items: {type: object, properties: {portNumber: {type: integer}, protocol: {type: string, maxLength: 8}}}}}",
            v2: "{ports: {type: array, items: {type: object, properties: {port: {type: integer}, protocol: {type: string}}}}}",
            rules: "[{from: v1, to: v2, rules: [{fromField: '.spec.ports[*].portNumber', toField: '.spec.ports[*].port'}, {fromField: '.spec.ports[*].protocol', toField: '.spec.ports[*].protocol', transformation: self.lowerAscii()}]}]",
            input: (
                "v1",
                "spec: {ports: [{portNumber: 80, protocol: TCP}, {portNumber: 53, protocol: UDP}]}",
            ),
            want: (
                "v2",
                "spec: {ports: [{port: 80, protocol: tcp}, {port: 53, protocol: udp}]}",
            ),
        },
        Case {
            name: "every element of a list of scalars, into another list: the source list goes",
            v1: "{tags: {type: array, maxItems: 16, items: {type: string, maxLength: 20}}}",
            v2: "{labels: {type: array, maxItems: 16, items: {type: string, maxLength: 20}}}",
            rules: "[{from: v2, to: v1, rules: [{fromField: '.spec.labels[*]', toField: '.spec.tags[*]', transformation: self.lowerAscii()}]}]",
            input: ("v2", "spec: {labels: [FOO, BAR], size: 2}"),
            want: ("v1", "spec: {tags: [foo, bar], size: 2}"),
        },
        Case {
            name: "every element of a list of scalars, the list itself emptied: its parent goes",
            v1: "{sizesKB: {type: array, items: {type: integer}}}",
            v2: "{sizes: {type: object, properties: {mb: {type: array, items: {type: integer}}}}}",
            rules: "[{from: v2, to: v1, rules: [{fromField: '.spec.sizes.mb[*]', toField: '.spec.sizesKB[*]', transformation: self * 1024}]}]",
            input: ("v2", "spec: {sizes: {mb: [1, 2]}}"),
            want: ("v1", "spec: {sizesKB: [1024, 2048]}"),
        },
        Case {
            name: "a whole bounded list mapped (map costs what all does)",
            v1: "{tags: {type: array, maxItems: 10, items: {type: string, maxLength: 20}}}",
            v2: "{tags: {type: array, maxItems: 10, items: {type: string, maxLength: 20}}}",
            rules: r#"[{from: v1, to: v2, rules: [{fromField: .spec.tags, toField: .spec.tags, transformation: "self.map(t, t.upperAscii())"}]}]"#,
            input: ("v1", "spec: {tags: [a, '', b]}"),
            want: ("v2", "spec: {tags: [A, '', B]}"),
        },
        Case {
            name: "no direct pair: through the storage version",
            v1: "{a: {type: string}}",
            v2: "{b: {type: string}}",
            rules: "[{from: v1, to: v2, rules: [{fromField: .spec.a, toField: .spec.b}]}, {from: v2, to: v1, rules: [{fromField: .spec.b, toField: .spec.a}]}]",
            input: ("v2", "spec: {b: x}"),
            want: ("v1", "spec: {a: x}"),
        },
    ];
    for c in cases {
        let crd = crd(c.v1, c.v2, c.rules);
        // The CRD write accepts every case (most give one direction only, for brevity).
        let refused: Vec<String> = check_conversion_rules(&crd)
            .iter()
            .map(ToString::to_string)
            .filter(|e| !e.contains("must be reachable from the storage version"))
            .collect();
        assert_eq!(refused, Vec::<String>::new(), "{}", c.name);
        let rules = ConversionRules::compile(&crd);
        let got = rules
            .convert(&object(c.input.0, c.input.1), c.want.0)
            .unwrap_or_else(|e| panic!("{}: {e}", c.name));
        assert_eq!(got, object(c.want.0, c.want.1), "{}", c.name);
    }
}

/// A field v2 does not have round-trips through an annotation, as the API conventions ask of
/// conversion webhooks.
#[test]
fn lossy_conversion_round_trips_through_an_annotation() {
    let crd = crd(
        "{size: {type: integer}, legacy: {type: string}}",
        "{size: {type: integer}}",
        r"
- {from: v1, to: v2, rules: [{fromField: .spec.legacy, toField: '.metadata.annotations[''v1.example.com/legacy'']'}]}
- {from: v2, to: v1, rules: [{fromField: '.metadata.annotations[''v1.example.com/legacy'']', toField: .spec.legacy}]}",
    );
    let rules = ConversionRules::compile(&crd);
    let v1 = object("v1", "spec: {size: 1, legacy: old}");
    let v2 = rules.convert(&v1, "v2").unwrap();
    assert_eq!(
        v2,
        object(
            "v2",
            "{metadata: {annotations: {v1.example.com/legacy: old}}, spec: {size: 1}}"
        )
    );
    assert_eq!(rules.convert(&v2, "v1").unwrap(), v1);
    assert_eq!(round_trip_losses(&crd, &prune_spec), Vec::<String>::new());
}

/// The server's pruning, as far as these tests' schemas go: `spec` keeps only the fields its
/// schema names.
fn prune_spec(obj: &mut Value, schema: &Value) {
    let known = schema.pointer("/properties/spec/properties");
    if let (Some(spec), Some(known)) = (
        obj.get_mut("spec").and_then(Value::as_object_mut),
        known.and_then(Value::as_object),
    ) {
        spec.retain(|k, _| known.contains_key(k));
    }
}

#[test]
fn round_trip_check_names_lost_fields() {
    let cases: [(&str, &str, &str, Vec<&str>); 4] = [
        (
            "{size: {type: integer}, legacy: {type: string}}",
            "{size: {type: integer}}",
            "[{from: v1, to: v2, rules: [{fromField: .spec.legacy}]}, {from: v2, to: v1, rules: []}]",
            vec!["conversion from v1 to v2 and back loses spec.legacy"],
        ),
        (
            "{timeoutSeconds: {type: integer}}",
            "{timeout: {type: string, format: duration}}",
            r#"
- {from: v1, to: v2, rules: [{fromField: .spec.timeoutSeconds, toField: .spec.timeout, transformation: "duration(string(self) + 's')"}]}
- {from: v2, to: v1, rules: [{fromField: .spec.timeout, toField: .spec.timeoutSeconds, transformation: self.getSeconds()}]}"#,
            vec![],
        ),
        (
            "{image: {type: string}}",
            "{repository: {type: string}, tag: {type: string}}",
            r#"
- {from: v1, to: v2, rules: [{fromField: .spec.image, toField: .spec.repository, transformation: "self.split(':')[0]"}, {fromField: .spec.image, toField: .spec.tag, transformation: "self.split(':')[1]"}]}
- {from: v2, to: v1, rules: [{fromField: .spec, toField: .spec.image, transformation: "self.repository + ':' + self.tag"}, {fromField: .spec.repository}, {fromField: .spec.tag}]}"#,
            vec![
                "conversion of a sample v1 object to v2 failed: .spec.image: transformation \"self.split(':')[1]\" failed: index out of bounds: 1",
            ],
        ),
        (
            // A field only v2 has, without a rule: copied to v1, whose schema prunes it.
            "{size: {type: integer}}",
            "{size: {type: integer}, nickname: {type: string}}",
            "[{from: v1, to: v2, rules: []}, {from: v2, to: v1, rules: []}]",
            vec!["conversion from v2 to v1 and back loses spec.nickname"],
        ),
    ];
    for (v1, v2, rules, want) in cases {
        assert_eq!(
            round_trip_losses(&crd(v1, v2, rules), &prune_spec),
            want,
            "{rules}"
        );
    }
    // Without pruning (a CRD that preserves unknown fields) the copied field survives.
    let preserved = crd(
        "{size: {type: integer}}",
        "{size: {type: integer}, nickname: {type: string}}",
        "[{from: v1, to: v2, rules: []}, {from: v2, to: v1, rules: []}]",
    );
    assert_eq!(
        round_trip_losses(&preserved, &|_, _| {}),
        Vec::<String>::new()
    );
}

#[test]
fn invalid_rules_are_refused_with_causes() {
    let both = "[{from: v2, to: v1, rules: []}]";
    let cases: Vec<(&str, &str, String, Vec<&str>)> = vec![
        (
            "{a: {type: string}}",
            "{b: {type: string}}",
            format!("[{{from: v1, to: v2, rules: [{{fromField: .spec.nope, toField: .spec.b}}]}}, {}", &both[1..both.len() - 1]) + "]",
            vec!["spec.conversion.conversionRules[0].rules[0].fromField: Invalid value: \".spec.nope\": no such field in the schema of version v1"],
        ),
        (
            "{a: {type: string}}",
            "{b: {type: string}}",
            "[{from: v1, to: v2, rules: [{fromField: .spec.a, toField: .spec.c}]}, {from: v2, to: v1, rules: []}]".into(),
            vec!["spec.conversion.conversionRules[0].rules[0].toField: Invalid value: \".spec.c\": no such field in the schema of version v2"],
        ),
        (
            "{a: {type: string}}",
            "{b: {type: integer}}",
            "[{from: v1, to: v2, rules: [{fromField: .spec.a, toField: .spec.b, transformation: 'self + 1'}]}, {from: v2, to: v1, rules: []}]".into(),
            vec!["spec.conversion.conversionRules[0].rules[0].transformation: Invalid value: \"self + 1\": compilation failed: ERROR: <input>:1:6: found no matching overload for '_+_' applied to '(string, int)'\n | self + 1\n | .....^"],
        ),
        (
            "{a: {type: string}}",
            "{b: {type: integer}}",
            "[{from: v1, to: v2, rules: [{fromField: .spec.a, toField: .spec.b, transformation: self.lowerAscii()}]}, {from: v2, to: v1, rules: []}]".into(),
            vec!["spec.conversion.conversionRules[0].rules[0].transformation: Invalid value: \"self.lowerAscii()\": compilation failed: transformation evaluates to string, but toField .spec.b has type integer in version v2"],
        ),
        (
            "{a: {type: string}}",
            "{b: {type: integer}}",
            "[{from: v1, to: v2, rules: [{fromField: .spec.a, toField: .spec.b}]}, {from: v2, to: v1, rules: []}]".into(),
            vec!["spec.conversion.conversionRules[0].rules[0].toField: Invalid value: \".spec.b\": has type integer in version v2, but fromField has type string in version v1; add a transformation"],
        ),
        (
            "{a: {type: string}}",
            "{a: {type: string}}",
            "[{from: v1, to: v2, rules: []}]".into(),
            vec!["spec.conversion.conversionRules: Required value: no conversion from v2 to v1: every served version must be reachable from the storage version v1 and back"],
        ),
        (
            "{a: {type: string}}",
            "{a: {type: string}}",
            "[{from: v1, to: v3, rules: []}, {from: v2, to: v1, rules: []}, {from: v2, to: v1, rules: []}]".into(),
            vec![
                "spec.conversion.conversionRules[0].to: Unsupported value: \"v3\": supported values: \"v1\", \"v2\"",
                "spec.conversion.conversionRules[2]: Duplicate value: \"{from: v2, to: v1}\"",
                "spec.conversion.conversionRules: Required value: no conversion from v1 to v2: every served version must be reachable from the storage version v1 and back",
            ],
        ),
        (
            "{xs: {type: array, items: {type: object, properties: {s: {type: array, items: {type: string}}}}}}",
            "{xs: {type: array, items: {type: object, properties: {s: {type: array, items: {type: string}}}}}}",
            "[{from: v1, to: v2, rules: [{fromField: '.spec.xs[*].s', toField: '.spec.xs[*].s', transformation: \"self.map(a, self.exists(b, b == a) ? a : '')\"}]}, {from: v2, to: v1, rules: []}]".into(),
            vec![
                "spec.conversion.conversionRules[0].rules[0].transformation: Forbidden: estimated transformation cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)",
                "spec.conversion.conversionRules: Forbidden: estimated transformation cost total for all conversion rules exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)",
            ],
        ),
        (
            "{a: {type: string}}",
            "{a: {type: string}}",
            "[{from: v1, to: v2, rules: [{fromField: 'spec.a'}]}, {from: v2, to: v1, rules: []}]".into(),
            vec!["spec.conversion.conversionRules[0].rules[0].fromField: Invalid value: \"spec.a\": unexpected 's': steps are .name, ['key'] or [*]"],
        ),
    ];
    for (v1, v2, rules, want) in cases {
        let got: Vec<String> = check_conversion_rules(&crd(v1, v2, &rules))
            .iter()
            .map(ToString::to_string)
            .collect();
        let (got_first, want_first) =
            (got.first().cloned(), want.first().map(|s| (*s).to_string()));
        assert_eq!(got_first, want_first, "{rules}");
        assert_eq!(got, want, "{rules}");
    }
}

#[test]
fn rules_belong_to_their_strategy() {
    let mut with_webhook = crd("{a: {type: string}}", "{a: {type: string}}", "[]");
    with_webhook["spec"]["conversion"]["strategy"] = json!("None");
    let mut without_rules = crd("{a: {type: string}}", "{a: {type: string}}", "[]");
    without_rules["spec"]["conversion"]
        .as_object_mut()
        .unwrap()
        .remove("conversionRules");
    let got = |c: &Value| -> Vec<String> {
        check_conversion_rules(c)
            .iter()
            .map(ToString::to_string)
            .collect()
    };
    assert_eq!(
        got(&with_webhook),
        [
            "spec.conversion.conversionRules: Forbidden: should not be set when strategy is not set to ConversionRules"
        ]
    );
    assert_eq!(
        got(&without_rules),
        [
            "spec.conversion.conversionRules: Required value: required when strategy is set to ConversionRules"
        ]
    );
}

#[test]
fn runtime_failures_name_the_field() {
    let rules = ConversionRules::compile(&crd(
        "{image: {type: string}}",
        "{tag: {type: string}}",
        r#"[{from: v1, to: v2, rules: [{fromField: .spec.image, toField: .spec.tag, transformation: "self.split(':')[1]"}]}]"#,
    ));
    assert_eq!(
        rules.convert(&object("v1", "spec: {image: nginx}"), "v2"),
        Err(
            ".spec.image: transformation \"self.split(':')[1]\" failed: index out of bounds: 1"
                .into()
        )
    );
    assert_eq!(
        rules.convert(&object("v2", "spec: {tag: x}"), "v1"),
        Err("no conversion rules from v2 to v1".into())
    );
}

#[test]
fn go_duration_texts() {
    for (nanos, want) in [
        (0, "0s"),
        (1_500_000_000, "1.5s"),
        (90_000_000_000, "1m30s"),
        (3_600_000_000_000, "1h0m0s"),
        (500_000_000, "500ms"),
        (-2_000_000_000, "-2s"),
    ] {
        assert_eq!(crd_core::time::format_go_duration(nanos), want);
    }
}

/// The rules of [`crd`] with a third served version `v3` (without a schema) to chain through.
fn with_v3(v1: &str, v2: &str, rules: &str) -> ConversionRules {
    let mut crd = crd(v1, v2, rules);
    crd["spec"]["versions"]
        .as_array_mut()
        .expect("versions")
        .push(json!({"name": "v3", "served": true, "storage": false}));
    ConversionRules::compile(&crd)
}

#[test]
fn metadata_reach_follows_the_rules_paths() {
    let v1 = "{a: {type: string}, n: {type: integer}, meta: {type: object, properties: {name: {type: string}}}}";
    let v2 = "{b: {type: string}}";
    let cases = [
        (
            "[{from: v1, to: v2, rules: [{fromField: .spec.a, toField: .spec.b}]}]",
            MetadataReach::Nothing,
        ),
        (
            "[{from: v1, to: v2, rules: [{fromField: .spec.a, toField: '.metadata.annotations[''x'']'}]}]",
            MetadataReach::LabelsAndAnnotations,
        ),
        (
            "[{from: v1, to: v2, rules: [{fromField: '.metadata.labels[''x'']', toField: .spec.b}]}]",
            MetadataReach::LabelsAndAnnotations,
        ),
        (
            "[{from: v1, to: v2, rules: [{fromField: .spec.meta, toField: .metadata}]}]",
            MetadataReach::Any,
        ),
        (
            "[{from: v1, to: v2, rules: [{fromField: .spec.a, toField: .kind}]}]",
            MetadataReach::Any,
        ),
        // Through a chain, the widest pair counts.
        (
            "[{from: v1, to: v3, rules: [{fromField: .spec.a, toField: '.metadata.labels[''x'']'}]}, {from: v3, to: v2, rules: []}]",
            MetadataReach::LabelsAndAnnotations,
        ),
    ];
    for (rules, want) in cases {
        let compiled = with_v3(v1, v2, rules);
        assert_eq!(compiled.metadata_reach("v1", "v2"), want, "{rules}");
        assert_eq!(
            compiled.metadata_reach("v2", "v1"),
            MetadataReach::Any,
            "no chain: {rules}"
        );
    }
}

#[test]
fn values_are_read_before_any_rule_removes_them() {
    // Two rules read one field (a split); the removal of the field by the first does not hide
    // it from the second, and the owned conversion equals the borrowed one.
    let rules = ConversionRules::compile(&crd(
        "{image: {type: string}}",
        "{name: {type: string}, tag: {type: string}}",
        r#"[{from: v1, to: v2, rules: [
            {fromField: .spec.image, toField: .spec.name, transformation: "self.split(':')[0]"},
            {fromField: .spec.image, toField: .spec.tag, transformation: "self.split(':')[1]"}]}]"#,
    ));
    let v1 = object("v1", "spec: {image: 'nginx:1.27'}");
    let want = object("v2", "spec: {name: nginx, tag: '1.27'}");
    assert_eq!(rules.convert(&v1, "v2").unwrap(), want);
    assert_eq!(rules.convert_owned(v1, "v2").unwrap(), want);
}

#[test]
fn metadata_writes_name_the_entries_the_rules_write() {
    let v1 = "{a: {type: string}, b: {type: string}, m: {type: object, additionalProperties: {type: string}}}";
    let v2 = "{c: {type: string}}";
    let keys = |k: &[&str]| MapWrites::Keys(k.iter().map(|s| (*s).to_string()).collect());
    let cases = [
        (
            "[{from: v1, to: v2, rules: [{fromField: .spec.a, toField: .spec.c}]}]",
            MapWrites::Nothing,
            MapWrites::Nothing,
            false,
        ),
        (
            // A key read (and removed) is not written.
            "[{from: v1, to: v2, rules: [{fromField: '.metadata.annotations[''x'']', toField: .spec.c}]}]",
            MapWrites::Nothing,
            MapWrites::Nothing,
            false,
        ),
        (
            "[{from: v1, to: v2, rules: [
               {fromField: .spec.b, toField: '.metadata.annotations[''z'']'},
               {fromField: .spec.a, toField: '.metadata.annotations[''example.com/a'']'},
               {fromField: .spec.a, toField: '.metadata.labels[''a'']'}]}]",
            keys(&["a"]),
            keys(&["example.com/a", "z"]),
            false,
        ),
        // Keys their map does not allow (decided once; the caller then checks as a webhook's
        // answer is checked): a label key with a space, an annotation key that is not a
        // qualified name, a label key of a valid prefix but too long a name (beside an
        // annotation key valid once lowercased, as annotation keys are checked).
        (
            "[{from: v1, to: v2, rules: [{fromField: .spec.a, toField: '.metadata.labels[''a b'']'}]}]",
            keys(&["a b"]),
            MapWrites::Nothing,
            true,
        ),
        (
            "[{from: v1, to: v2, rules: [{fromField: .spec.a, toField: '.metadata.annotations[''-bad-'']'}]}]",
            MapWrites::Nothing,
            keys(&["-bad-"]),
            true,
        ),
        (
            "[{from: v1, to: v2, rules: [
               {fromField: .spec.a, toField: '.metadata.annotations[''Example.COM/Upper'']'},
               {fromField: .spec.b, toField: '.metadata.labels[''example.com/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'']'}]}]",
            keys(&["example.com/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"]),
            keys(&["Example.COM/Upper"]),
            true,
        ),
        (
            "[{from: v1, to: v2, rules: [{fromField: .spec.a, toField: '.metadata.annotations[''Example.COM/Upper'']'}]}]",
            MapWrites::Nothing,
            keys(&["Example.COM/Upper"]),
            false,
        ),
        (
            "[{from: v1, to: v2, rules: [{fromField: .spec.m, toField: .metadata.labels}]}]",
            MapWrites::Whole,
            MapWrites::Nothing,
            false,
        ),
        // Through a chain, the writes of every pair.
        (
            "[{from: v1, to: v3, rules: [{fromField: .spec.a, toField: '.metadata.labels[''x'']'}]},
              {from: v3, to: v2, rules: [{fromField: .spec.b, toField: '.metadata.labels[''y'']'},
                                         {fromField: .spec.m, toField: .metadata.annotations}]}]",
            keys(&["x", "y"]),
            MapWrites::Whole,
            false,
        ),
        (
            "[{from: v1, to: v3, rules: [{fromField: .spec.a, toField: '.metadata.labels[''x'']'}]},
              {from: v3, to: v2, rules: [{fromField: .spec.b, toField: '.metadata.labels[''y!'']'}]}]",
            keys(&["x", "y!"]),
            MapWrites::Nothing,
            true,
        ),
    ];
    for (rules, labels, annotations, invalid_keys) in cases {
        let compiled = with_v3(v1, v2, rules);
        assert_eq!(
            compiled.metadata_writes("v1", "v2"),
            Some(&MetadataWrites {
                labels,
                annotations,
                invalid_keys
            }),
            "{rules}"
        );
        assert_eq!(
            compiled.metadata_writes("v2", "v1"),
            None,
            "no chain: {rules}"
        );
        assert_eq!(
            compiled.metadata_writes("v1", "v1"),
            Some(&MetadataWrites::default()),
            "same version: {rules}"
        );
    }
}

#[test]
fn values_moved_out_are_the_values_copied() {
    // Rules whose fromFields overlap read copies; a rule alone on its fromField moves the value
    // out. Either way every rule reads the object as it was before the pair.
    let v1 =
        "{a: {type: string}, o: {type: object, properties: {x: {type: string}, y: {type: string}}},
               items: {type: array, items: {type: object, properties: {n: {type: string}}}}}";
    let v2 = "{b: {type: string}, c: {type: string}, p: {type: object, properties: {x: {type: string}, y: {type: string}}},
               names: {type: array, items: {type: object, properties: {m: {type: string}}}}}";
    let cases = [
        (
            // The parent and one of its fields: both read the original.
            "[{from: v1, to: v2, rules: [{fromField: .spec.o.x, toField: .spec.c},
                                         {fromField: .spec.o, toField: .spec.p}]}]",
            "spec: {o: {x: '1', y: '2'}}",
            "spec: {c: '1', p: {x: '1', y: '2'}}",
        ),
        (
            // Alone on their fields: moved (lists element by element), parents left empty go.
            "[{from: v1, to: v2, rules: [{fromField: .spec.a, toField: .spec.b, transformation: 'self + \"!\"'},
                                         {fromField: '.spec.items[*].n', toField: '.spec.names[*].m'}]}]",
            "spec: {a: x, items: [{n: one}, {n: two}]}",
            "spec: {b: x!, items: [{}, {}], names: [{m: one}, {m: two}]}",
        ),
    ];
    for (rules, input, want) in cases {
        let compiled = ConversionRules::compile(&crd(v1, v2, rules));
        let got = compiled.convert(&object("v1", input), "v2");
        assert_eq!(got, Ok(object("v2", want)), "{rules}");
    }
}
