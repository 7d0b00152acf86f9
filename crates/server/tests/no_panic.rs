//! Randomized robustness checks (a stable-toolchain stand-in for fuzzing): seeded generators
//! throw mutated and random inputs at request decoding, CRD validation, the schema engine, the
//! `JSONPath` evaluator and selector parsing. A panic fails the test; every run uses the same
//! seeds, so a failure reproduces.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

const ROUNDS: usize = 20_000;

fn random_value(rng: &mut StdRng, depth: u32) -> Value {
    match rng.random_range(0..if depth > 4 { 5 } else { 8 }) {
        0 => Value::Null,
        1 => Value::Bool(rng.random()),
        2 => json!(rng.random_range(-1_000_000i64..1_000_000)),
        3 => json!(rng.random::<f64>() * 1e6),
        4 => Value::String(random_string(rng)),
        5 | 6 => {
            let mut m = serde_json::Map::new();
            for _ in 0..rng.random_range(0..5) {
                m.insert(pick_key(rng), random_value(rng, depth + 1));
            }
            Value::Object(m)
        }
        _ => Value::Array(
            (0..rng.random_range(0..4))
                .map(|_| random_value(rng, depth + 1))
                .collect(),
        ),
    }
}

fn random_string(rng: &mut StdRng) -> String {
    const PIECES: &[&str] = &[
        "a", "Z", "0", "-", ".", "/", "*", "\\d", "(", ")", "[", "]", "{", "}", "?", "$", "^", "|",
        " ", "é", "\u{0}", "\n", "\"", "..", "{.", "[?(", "@", "==", ",", "!", "in", "notin",
    ];
    (0..rng.random_range(0..8))
        .map(|_| PIECES[rng.random_range(0..PIECES.len())])
        .collect()
}

fn pick_key(rng: &mut StdRng) -> String {
    const KEYS: &[&str] = &[
        "type",
        "properties",
        "items",
        "additionalProperties",
        "required",
        "enum",
        "default",
        "nullable",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "maxLength",
        "minItems",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-int-or-string",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-list-type",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-map-type",
        "metadata",
        "spec",
        "status",
        "apiVersion",
        "kind",
        "name",
        "a",
        "b",
    ];
    KEYS[rng.random_range(0..KEYS.len())].to_string()
}

/// Replaces a random node of `v` with a random value.
fn mutate(rng: &mut StdRng, v: &mut Value) {
    let descend = rng.random_range(0..4) != 0;
    match v {
        Value::Object(m) if descend && !m.is_empty() => {
            let i = rng.random_range(0..m.len());
            if let Some(child) = m.values_mut().nth(i) {
                mutate(rng, child);
            }
        }
        Value::Array(a) if descend && !a.is_empty() => {
            let i = rng.random_range(0..a.len());
            mutate(rng, &mut a[i]);
        }
        _ => *v = random_value(rng, 2),
    }
}

fn seed_crd() -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {"group": "stable.example.com", "scope": "Namespaced",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "shortNames": ["ct"]},
            "conversion": {"strategy": "None"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object",
                    "properties": {"cronSpec": {"type": "string", "pattern": "^(\\d+|\\*)$"},
                        "replicas": {"type": "integer", "minimum": 1, "default": 1},
                        "list": {"type": "array", "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["name"],
                            "items": {"type": "object", "required": ["name"],
                                "properties": {"name": {"type": "string"}}}}}}}}}}]},
        "status": {"storedVersions": ["v1"]}})
}

#[test]
fn request_decoding_never_panics() {
    use crd_server::request::negotiate::{BodyFormat, decode_document};
    let mut rng = StdRng::seed_from_u64(1);
    for _ in 0..ROUNDS {
        let mut bytes = serde_json::to_vec(&random_value(&mut rng, 0)).unwrap();
        for _ in 0..rng.random_range(0..4) {
            if !bytes.is_empty() {
                let i = rng.random_range(0..bytes.len());
                bytes[i] = rng.random();
            }
        }
        let _ = decode_document(BodyFormat::Json, &bytes);
        let _ = decode_document(BodyFormat::Yaml, &bytes);
    }
}

#[test]
fn crd_validation_and_schema_engine_never_panic() {
    let mut rng = StdRng::seed_from_u64(2);
    let path = crd_core::Path::new("spec")
        .child("validation")
        .child("openAPIV3Schema");
    for _ in 0..ROUNDS {
        let mut crd = seed_crd();
        for _ in 0..rng.random_range(1..4) {
            mutate(&mut rng, &mut crd);
        }
        if let Ok(typed) = serde_json::from_value(crd.clone()) {
            let _ = crd_core::crd::validate_create(&typed);
        }
        let schema = crd
            .pointer("/spec/versions/0/schema/openAPIV3Schema")
            .cloned()
            .unwrap_or(Value::Null);
        let opts = crd_schema::checks::CheckOptions::create();
        let _ = crd_schema::checks::check_schema(&schema, &path, &opts);
        let _ = crd_schema::checks::format_warnings(&schema);
        let mut obj = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
                             "metadata": {"name": "x"}, "spec": random_value(&mut rng, 1)});
        mutate(&mut rng, &mut obj);
        let old = obj.clone();
        let _ = crd_schema::prune::prune(&mut obj, &schema, true);
        crd_schema::prune::prune_nulls(&mut obj, &schema);
        crd_schema::default::apply_defaults(&mut obj, &schema);
        let _ = crd_schema::validate::validate(&schema, &obj);
        let _ = crd_schema::validate::validate_update(&schema, &obj, &old);
    }
}

#[test]
fn jsonpath_and_selectors_never_panic() {
    let mut rng = StdRng::seed_from_u64(3);
    for _ in 0..ROUNDS {
        let obj = random_value(&mut rng, 0);
        let path = random_string(&mut rng);
        let _ = crd_server::table::lookup(&obj, &path);
        let _ = crd_server::table::lookup(&obj, &format!(".{path}"));
        let _ = crd_core::labels::Selector::parse(&random_string(&mut rng));
        let _ = crd_core::fields::FieldSelector::parse(&random_string(&mut rng));
        let _ = crd_core::version::compare_kube_aware_versions(
            &random_string(&mut rng),
            &random_string(&mut rng),
        );
    }
}
