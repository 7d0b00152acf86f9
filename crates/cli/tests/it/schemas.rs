//! Structural schemas through kubectl: CRD-time schema checks, validation messages, pruning and
//! `fieldValidation`, preserve-unknown-fields, int-or-string, embedded resources, defaulting on
//! write and on read, and nullable.

use serde_json::Value;

use crate::support::{TestServer, crd_yaml, eventually};

fn crd(schema: &str) -> String {
    crd_yaml(
        "stable.example.com",
        "crontabs",
        "singular: crontab, kind: CronTab, shortNames: [ct]",
        &[("v1", true, schema)],
        "",
    )
}

fn with_crd(schema: &str) -> TestServer {
    let s = TestServer::start();
    s.apply_crd("crd.yaml", &crd(schema), "crontabs.stable.example.com");
    s
}

fn stderr_of(s: &TestServer, args: &[&str]) -> String {
    let out = s.kubectl(args);
    assert!(!out.status.success(), "kubectl {args:?} should fail");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

const SEED_VALIDATION: &str = r"type: object
properties:
  spec:
    type: object
    properties:
      cronSpec:
        type: string
        pattern: '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'
      image:
        type: string
      replicas:
        type: integer
        minimum: 1
        maximum: 10";

#[test]
fn crd_schemas_must_be_structural() {
    let s = TestServer::start();
    let cases = [
        (
            "type: object\nproperties:\n  spec:\n    type: object\n    uniqueItems: true",
            "spec.validation.openAPIV3Schema.properties[spec].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ),
        (
            "type: object\nproperties:\n  spec:\n    properties:\n      a: {type: string}",
            "spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields",
        ),
        (
            "type: object\nproperties:\n  spec:\n    type: object\n    properties:\n      a: {type: string}\n    additionalProperties: {type: string}",
            "spec.validation.openAPIV3Schema.properties[spec].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive",
        ),
        (
            "type: object\nproperties:\n  metadata:\n    type: object\n    properties:\n      labels: {type: object}",
            "spec.validation.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
        ),
        (
            "type: object\nproperties:\n  spec:\n    type: object\n    properties:\n      replicas: {type: integer, default: \"three\"}",
            "spec.validation.openAPIV3Schema.properties[spec].properties[replicas].default: Invalid value: \"string\":  in body must be of type integer: \"string\"",
        ),
        (
            "type: string",
            "spec.validation.openAPIV3Schema.type: Invalid value: \"string\": must be object at the root",
        ),
    ];
    for (schema, want) in cases {
        s.write("crd.yaml", &crd(schema));
        let err = stderr_of(&s, &["apply", "-f", "crd.yaml"]);
        assert!(err.contains(want), "schema {schema:?}:\n{err}");
        // kubectl renders the 422 as `The <Kind> "<name>" is invalid: <causes>`.
        assert!(
            err.contains("The CustomResourceDefinition \"crontabs.stable.example.com\" is invalid"),
            "{err}"
        );
    }
    // An unknown format is accepted with a warning.
    s.write(
        "crd.yaml",
        &crd("type: object\nproperties:\n  spec:\n    type: string\n    format: colour"),
    );
    let out = s.kubectl(&["apply", "-f", "crd.yaml"]);
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Warning: unrecognized format \"colour\"")
    );
}

#[test]
fn the_seeds_validation_example() {
    let s = with_crd(SEED_VALIDATION);
    s.write(
        "ct.yaml",
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: my-new-cron-object\nspec:\n  cronSpec: \"* * * *\"\n  image: my-awesome-cron-image\n  replicas: 15\n",
    );
    let err = stderr_of(&s, &["apply", "-f", "ct.yaml"]);
    assert!(
        err.contains("The CronTab \"my-new-cron-object\" is invalid:"),
        "{err}"
    );
    assert!(
        err.contains(r#"spec.cronSpec: Invalid value: "* * * *": spec.cronSpec in body should match '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'"#),
        "{err}"
    );
    assert!(
        err.contains("spec.replicas: Invalid value: 15: spec.replicas in body should be less than or equal to 10"),
        "{err}"
    );
    s.write(
        "ct.yaml",
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: my-new-cron-object\nspec:\n  cronSpec: \"* * * * */5\"\n  image: my-awesome-cron-image\n  replicas: 5\n",
    );
    s.kubectl_ok(&["apply", "-f", "ct.yaml"]);
}

#[test]
fn pruning_and_field_validation() {
    let s = with_crd(
        "type: object\nproperties:\n  spec:\n    type: object\n    properties:\n      cronSpec: {type: string}\n      image: {type: string}\n      replicas: {type: integer}\n  free:\n    type: object\n    x-kubernetes-preserve-unknown-fields: true\n    properties:\n      typed:\n        type: object\n        properties:\n          a: {type: string}",
    );
    let obj = "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: my-new-cron-object\nspec:\n  cronSpec: '* * * * */5'\n  image: my-awesome-cron-image\n  someRandomField: 42\nfree:\n  anything: [1, 2]\n  typed: {a: x, b: y}\n";
    s.write("ct.yaml", obj);
    // kubectl's default (Strict) is refused by the server with the strict decoding error.
    let err = stderr_of(&s, &["create", "-f", "ct.yaml"]);
    assert!(
        err.contains("CronTab in version \"v1\" cannot be handled as a CronTab: strict decoding error: unknown field \"free.typed.b\", unknown field \"spec.someRandomField\""),
        "{err}"
    );
    // Warn: stored pruned, with a warning per field.
    let out = s.kubectl(&["create", "-f", "ct.yaml", "--validate=warn"]);
    assert!(out.status.success());
    let warn = String::from_utf8_lossy(&out.stderr);
    assert!(
        warn.contains("Warning: unknown field \"spec.someRandomField\""),
        "{warn}"
    );
    let got: Value = s.kubectl_json(&["get", "ct", "my-new-cron-object", "-o", "json"]);
    assert!(got["spec"].get("someRandomField").is_none(), "{got}");
    assert_eq!(
        got["free"]["anything"],
        serde_json::json!([1, 2]),
        "preserved: {got}"
    );
    assert_eq!(
        got["free"]["typed"],
        serde_json::json!({"a": "x"}),
        "pruned under preserve: {got}"
    );
    // Ignore (--validate=false): silently pruned.
    s.kubectl_ok(&["delete", "ct", "my-new-cron-object"]);
    let out = s.kubectl(&["create", "-f", "ct.yaml", "--validate=false"]);
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("unknown field"));
    // kubectl patch sends no fieldValidation: the server default (Warn) applies.
    let out = s.kubectl(&[
        "patch",
        "ct",
        "my-new-cron-object",
        "--type=merge",
        "-p",
        r#"{"spec":{"bogus":1}}"#,
    ]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Warning: unknown field \"spec.bogus\""));
    // A Strict patch with an unknown field is 422, with upstream's odd empty kind and name.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let r = rt.block_on(s.call(
        reqwest::Method::PATCH,
        "/apis/stable.example.com/v1/namespaces/default/crontabs/my-new-cron-object?fieldValidation=Strict",
        "application/merge-patch+json",
        Some(r#"{"spec":{"bogus":1}}"#.into()),
    ));
    let (code, body) = (r.status, r.json());
    assert_eq!(code, 422, "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.starts_with(" \"\" is invalid: patch: Invalid value: \"{"),
        "{message}"
    );
    assert!(
        message.ends_with("\": strict decoding error: unknown field \"spec.bogus\""),
        "{message}"
    );
}

#[test]
fn int_or_string_embedded_resources_defaults_and_nullable() {
    let s = with_crd(
        "type: object\nproperties:\n  spec:\n    type: object\n    properties:\n      port:\n        x-kubernetes-int-or-string: true\n      other:\n        x-kubernetes-int-or-string: true\n        anyOf: [{type: integer}, {type: string}]\n      template:\n        type: object\n        x-kubernetes-embedded-resource: true\n        x-kubernetes-preserve-unknown-fields: true\n      replicas:\n        type: integer\n        default: 1\n      foo:\n        type: string\n        nullable: false\n        default: default\n      bar:\n        type: string\n        nullable: true\n      baz:\n        type: string",
    );
    s.write(
        "ct.yaml",
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: a\nspec:\n  port: 8080\n  other: http\n  template:\n    apiVersion: v1\n    kind: Pod\n    metadata: {name: p, junk: 1}\n    spec: {containers: []}\n  foo: null\n  bar: null\n  baz: null\n",
    );
    // `kubectl create` sends the nulls as written (client-side apply would drop them).
    s.kubectl_ok(&["create", "-f", "ct.yaml", "--validate=false"]);
    let got: Value = s.kubectl_json(&["get", "ct", "a", "-o", "json"]);
    let spec = &got["spec"];
    assert_eq!(spec["port"], 8080);
    assert_eq!(spec["other"], "http");
    assert_eq!(spec["replicas"], 1, "defaulted: {spec}");
    assert_eq!(spec["foo"], "default", "{spec}");
    assert!(
        spec["bar"].is_null() && spec.get("bar").is_some(),
        "nullable kept: {spec}"
    );
    assert!(
        spec.get("baz").is_none(),
        "non-nullable null pruned: {spec}"
    );
    assert!(spec["template"]["metadata"].get("junk").is_none(), "{spec}");
    assert_eq!(
        spec["template"]["spec"],
        serde_json::json!({"containers": []})
    );

    // int-or-string refuses other types; an embedded resource needs apiVersion and kind.
    s.write(
        "bad.yaml",
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: b\nspec:\n  port: 1.5\n  template:\n    metadata: {name: p}\n",
    );
    let err = stderr_of(&s, &["apply", "-f", "bad.yaml"]);
    assert!(err.contains("spec.port: Invalid value: \"number\": spec.port in body must be of type integer,string: \"number\""), "{err}");
    assert!(
        err.contains("spec.template.apiVersion: Required value"),
        "{err}"
    );
    assert!(err.contains("spec.template.kind: Required value"), "{err}");
}

#[test]
fn defaults_apply_on_read_without_being_written_back() {
    let s = with_crd(
        "type: object\nproperties:\n  spec:\n    type: object\n    properties:\n      image: {type: string}",
    );
    s.write("ct.yaml", "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: old\nspec:\n  image: x\n");
    s.kubectl_ok(&["apply", "-f", "ct.yaml"]);
    // Add a default afterwards: reads show it, storage does not get it.
    s.write(
        "crd.yaml",
        &crd("type: object\nproperties:\n  spec:\n    type: object\n    properties:\n      image: {type: string}\n      replicas: {type: integer, default: 3}"),
    );
    s.kubectl_ok(&["apply", "-f", "crd.yaml"]);
    eventually("reads show the new default", || {
        s.kubectl_ok(&["get", "ct", "old", "-o", "jsonpath={.spec.replicas}"]) == "3"
    });
    let raw = s.kubectl_ok(&[
        "get",
        "--raw",
        "/debug/storage/registry/stable.example.com/crontabs/default/old",
    ]);
    let stored: Value = serde_json::from_str(&raw).unwrap();
    assert!(
        stored["value"]["spec"].get("replicas").is_none(),
        "{stored}"
    );
}

#[test]
fn list_types_and_metadata_rules() {
    let s = with_crd(
        "type: object\nproperties:\n  spec:\n    type: object\n    properties:\n      tags:\n        type: array\n        x-kubernetes-list-type: set\n        items: {type: string}\n      ports:\n        type: array\n        x-kubernetes-list-type: map\n        x-kubernetes-list-map-keys: [name]\n        items:\n          type: object\n          required: [name]\n          properties:\n            name: {type: string}\n            port: {type: integer}\n      labels:\n        type: object\n        x-kubernetes-map-type: atomic\n        additionalProperties: {type: string}",
    );
    s.write(
        "ct.yaml",
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: l\nspec:\n  tags: [a, b, a]\n  ports:\n  - {name: http, port: 80}\n  - {name: http, port: 8080}\n",
    );
    let err = stderr_of(&s, &["apply", "-f", "ct.yaml"]);
    assert!(
        err.contains("spec.tags[2]: Duplicate value: \"a\""),
        "{err}"
    );
    assert!(
        err.contains("spec.ports[1]: Duplicate value: map[string]interface {}{\"name\":\"http\"}")
            || err.contains("spec.ports[1]: Duplicate value: {\"name\":\"http\"}"),
        "{err}"
    );
    // Labels and annotations follow Kubernetes' syntax and size rules.
    s.write(
        "ct.yaml",
        &format!(
            "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: m\n  labels: {{\"bad label\": x}}\n  annotations: {{big: {}}}\n",
            "x".repeat(262_145)
        ),
    );
    let err = stderr_of(&s, &["create", "-f", "ct.yaml"]);
    assert!(err.contains("metadata.labels: Invalid value: \"bad label\": name part must consist of alphanumeric characters"), "{err}");
    assert!(
        err.contains("metadata.annotations: Too long: may not be more than 262144 bytes"),
        "{err}"
    );
}

/// `kubectl explain` on a custom resource documents its metadata as upstream's (the group's
/// OpenAPI v3 document carries `ObjectMeta` and what it reaches), and its own fields by type.
#[test]
fn explain_documents_custom_resource_metadata() {
    let s = with_crd(SEED_VALIDATION);
    let out = s.kubectl_ok(&["explain", "crontab.metadata.labels"]);
    assert!(out.contains("KIND:       CronTab"), "{out}");
    assert!(
        out.contains("Map of string keys and values that can be used to organize and categorize"),
        "{out}"
    );
    let out = s.kubectl_ok(&["explain", "crontab.metadata.ownerReferences.controller"]);
    assert!(
        out.contains("If true, this reference points to the managing controller."),
        "{out}"
    );
    let out = s.kubectl_ok(&["explain", "crontab.spec.replicas"]);
    assert!(out.contains("FIELD: replicas <integer>"), "{out}");
}
