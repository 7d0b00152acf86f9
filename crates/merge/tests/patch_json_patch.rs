//! JSON patch as kube-apiserver applies it: a table of (document, patch, result or error),
//! pinning every place where evanphx/json-patch v4 as armed by the apiserver differs from
//! RFC 6902, and upstream's decode and size errors.

use crd_merge::json_patch::{self, FieldValidation, MAX_COPY_BYTES, PatchError};
use serde_json::{Value, json};

/// What a case expects: the patched document, a 422 whose library text is the given cause,
/// or an error with this code and message.
enum Want {
    Doc(&'static str),
    Rejected(&'static str),
    Error(u16, &'static str),
}
use Want::{Doc, Error, Rejected};

const DOC: &str = r#"{"metadata":{"name":"x","finalizers":["a"],"annotations":{},"gone":null},"spec":{"list":[1,2,3],"m":{"k":"v"},"f":2.0}}"#;

#[rustfmt::skip]
const CASES: &[(&str, &str, &str, Want)] = &[
    // `test` of a missing path with value null succeeds (kube-runtime's finalizer helper).
    ("finalizer helper on an object without finalizers", r#"{"metadata":{"name":"x"}}"#,
     r#"[{"op":"test","path":"/metadata/finalizers","value":null},{"op":"add","path":"/metadata/finalizers","value":["x"]}]"#,
     Doc(r#"{"metadata":{"name":"x","finalizers":["x"]}}"#)),
    ("finalizer helper fails once finalizers exist", DOC,
     r#"[{"op":"test","path":"/metadata/finalizers","value":null},{"op":"add","path":"/metadata/finalizers","value":["x"]}]"#,
     Rejected("testing value /metadata/finalizers failed: test failed")),
    ("test null against a null member", DOC, r#"[{"op":"test","path":"/metadata/gone","value":null}]"#, Doc(DOC)),
    ("test without value against a missing member", DOC, r#"[{"op":"test","path":"/metadata/nope"}]"#, Doc(DOC)),
    ("test a missing member against a value", DOC, r#"[{"op":"test","path":"/metadata/nope","value":"x"}]"#,
     Rejected("testing value /metadata/nope failed: test failed")),
    ("test under a missing parent", DOC, r#"[{"op":"test","path":"/a/b","value":null}]"#,
     Rejected("test operation does not apply: is missing path: /a/b: missing value")),
    ("test compares objects by members", DOC, r#"[{"op":"test","path":"/spec/m","value":{"k":"v"}}]"#, Doc(DOC)),
    ("test 1 is not 1.0", DOC, r#"[{"op":"test","path":"/spec/list/0","value":1.0}]"#,
     Rejected("testing value /spec/list/0 failed: test failed")),
    ("test a stored 2.0 (encoded 2) against 2", DOC, r#"[{"op":"test","path":"/spec/f","value":2}]"#, Doc(DOC)),
    ("test with a negative index", DOC, r#"[{"op":"test","path":"/spec/list/-1","value":3}]"#, Doc(DOC)),
    // Scalars compare as text: the stored value as Go encodes it, the patch value as sent.
    ("test a string with & as sent", r#"{"a":"x&y"}"#, r#"[{"op":"test","path":"/a","value":"x&y"}]"#,
     Rejected("testing value /a failed: test failed")),
    ("test a string with & escaped as Go does", r#"{"a":"x&y"}"#, r#"[{"op":"test","path":"/a","value":"x\u0026y"}]"#,
     Doc(r#"{"a":"x&y"}"#)),
    ("test a stored 2.0 against 2.0", DOC, r#"[{"op":"test","path":"/spec/f","value":2.0}]"#,
     Rejected("testing value /spec/f failed: test failed")),
    ("test a large float in exponent form", r#"{"f":1e21}"#, r#"[{"op":"test","path":"/f","value":1e+21}]"#,
     Doc(r#"{"f":1e21}"#)),
    ("test an object with a null member", r#"{"m":{"a":null,"b":[1,{"c":"d"}]}}"#,
     r#"[{"op":"test","path":"/m","value":{"b":[1,{"c":"d"}],"a":null}}]"#, Doc(r#"{"m":{"a":null,"b":[1,{"c":"d"}]}}"#)),
    ("test an object against null", r#"{"m":{}}"#, r#"[{"op":"test","path":"/m","value":null}]"#,
     Rejected("testing value /m failed: test failed")),
    ("test with duplicate value members takes the last", r#"{"a":1}"#, r#"[{"op":"test","path":"/a","value":2,"value":1}]"#,
     Doc(r#"{"a":1}"#)),
    ("test of the whole document", r#"{"a":1}"#, r#"[{"op":"test","path":"","value":{"a":1}}]"#, Doc(r#"{"a":1}"#)),
    ("add with -", DOC, r#"[{"op":"add","path":"/spec/list/-","value":9}]"#,
     Doc(r#"{"metadata":{"name":"x","finalizers":["a"],"annotations":{},"gone":null},"spec":{"list":[1,2,3,9],"m":{"k":"v"},"f":2.0}}"#)),
    ("add at -1 appends", r#"{"l":[1,2,3]}"#, r#"[{"op":"add","path":"/l/-1","value":9}]"#, Doc(r#"{"l":[1,2,3,9]}"#)),
    ("add at -4 of three inserts first", r#"{"l":[1,2,3]}"#, r#"[{"op":"add","path":"/l/-4","value":9}]"#, Doc(r#"{"l":[9,1,2,3]}"#)),
    ("add at -5 of three", r#"{"l":[1,2,3]}"#, r#"[{"op":"add","path":"/l/-5","value":9}]"#,
     Rejected("error in add for path: '/l/-5': Unable to access invalid index: -5: invalid index referenced")),
    ("add at the length appends", r#"{"l":[1,2,3]}"#, r#"[{"op":"add","path":"/l/3","value":9}]"#, Doc(r#"{"l":[1,2,3,9]}"#)),
    ("add past the length", r#"{"l":[1,2,3]}"#, r#"[{"op":"add","path":"/l/4","value":9}]"#,
     Rejected("error in add for path: '/l/4': Unable to access invalid index: 4: invalid index referenced")),
    ("add at 01 (Atoi accepts leading zeros)", r#"{"l":[1,2,3]}"#, r#"[{"op":"add","path":"/l/01","value":9}]"#, Doc(r#"{"l":[1,9,2,3]}"#)),
    ("add at +1 (Atoi accepts a sign)", r#"{"l":[1,2,3]}"#, r#"[{"op":"add","path":"/l/+1","value":9}]"#, Doc(r#"{"l":[1,9,2,3]}"#)),
    ("add at a non-index", r#"{"l":[1]}"#, r#"[{"op":"add","path":"/l/x","value":9}]"#,
     Rejected(r#"error in add for path: '/l/x': value was not a proper array index: 'x': strconv.Atoi: parsing "x": invalid syntax"#)),
    ("add without value adds null", "{}", r#"[{"op":"add","path":"/a"}]"#, Doc(r#"{"a":null}"#)),
    ("add under a scalar", DOC, r#"[{"op":"add","path":"/metadata/name/x","value":1}]"#,
     Rejected(r#"add operation does not apply: doc is missing path: "/metadata/name/x": missing value"#)),
    ("add under a null member", DOC, r#"[{"op":"add","path":"/metadata/gone/x","value":1}]"#,
     Rejected(r#"add operation does not apply: doc is missing path: "/metadata/gone/x": missing value"#)),
    ("add with ~1 and ~0", r#"{"a":{}}"#, r#"[{"op":"add","path":"/a/b~1c~0d","value":1}]"#, Doc(r#"{"a":{"b/c~d":1}}"#)),
    ("~01 unescapes to ~1", r#"{"a":{}}"#, r#"[{"op":"add","path":"/a/~01","value":1}]"#, Doc(r#"{"a":{"~1":1}}"#)),
    ("a path without leading slash addresses the root", r#"{"a":{}}"#, r#"[{"op":"add","path":"x/b","value":1}]"#, Doc(r#"{"a":{},"b":1}"#)),
    ("a path without any slash is missing", "{}", r#"[{"op":"add","path":"b","value":1}]"#,
     Rejected(r#"add operation does not apply: doc is missing path: "b": missing value"#)),
    ("add without path", "{}", r#"[{"op":"add","value":1}]"#, Rejected("add operation failed to decode path: missing value")),
    ("remove -1 removes the last", r#"{"l":[1,2,3]}"#, r#"[{"op":"remove","path":"/l/-1"}]"#, Doc(r#"{"l":[1,2]}"#)),
    ("remove past the end", r#"{"l":[1,2,3]}"#, r#"[{"op":"remove","path":"/l/3"}]"#,
     Rejected("error in remove for path: '/l/3': Unable to access invalid index: 3: invalid index referenced")),
    ("remove a missing member", DOC, r#"[{"op":"remove","path":"/spec/nope"}]"#,
     Rejected("error in remove for path: '/spec/nope': Unable to remove nonexistent key: nope: missing value")),
    ("remove under a missing parent", DOC, r#"[{"op":"remove","path":"/a/b"}]"#,
     Rejected(r#"remove operation does not apply: doc is missing path: "/a/b": missing value"#)),
    ("replace a missing member adds it", r#"{"a":{}}"#, r#"[{"op":"replace","path":"/a/b","value":1}]"#, Doc(r#"{"a":{"b":1}}"#)),
    ("replace at -1", r#"{"l":[1,2,3]}"#, r#"[{"op":"replace","path":"/l/-1","value":9}]"#, Doc(r#"{"l":[1,2,9]}"#)),
    ("replace past the end", r#"{"l":[1,2,3]}"#, r#"[{"op":"replace","path":"/l/5","value":9}]"#,
     Rejected("replace operation does not apply: doc is missing key: /l/5: missing value")),
    ("replace under a missing parent", "{}", r#"[{"op":"replace","path":"/a/b","value":9}]"#,
     Rejected("replace operation does not apply: doc is missing path: /a/b: missing value")),
    ("replace the root with an object", r#"{"a":1}"#, r#"[{"op":"replace","path":"","value":{"b":2}}]"#, Doc(r#"{"b":2}"#)),
    ("replace the root with a scalar does nothing", r#"{"a":1}"#, r#"[{"op":"replace","path":"","value":5}]"#, Doc(r#"{"a":1}"#)),
    ("replace with a non-string path", "{}", r#"[{"op":"replace","path":5,"value":9}]"#, Error(400,
     "error decoding patch: json: cannot unmarshal number into Go struct field jsonPatchOp.path of type string")),
    ("move", r#"{"a":{"k":"v"}}"#, r#"[{"op":"move","from":"/a/k","path":"/b"}]"#, Doc(r#"{"a":{},"b":"v"}"#)),
    ("move from a missing member", r#"{"a":{}}"#, r#"[{"op":"move","from":"/a/nope","path":"/b"}]"#,
     Rejected("error in move for path: 'nope': Unable to remove nonexistent key: nope: missing value")),
    ("move into its own child", r#"{"a":{"k":"v"}}"#, r#"[{"op":"move","from":"/a","path":"/a/x"}]"#,
     Rejected("move operation does not apply: doc is missing destination path: /a/x: missing value")),
    ("move without from", "{}", r#"[{"op":"move","path":"/b"}]"#,
     Rejected("move operation failed to decode from: operation, missing from field: missing value")),
    ("move within an array with negative indices", r#"{"l":[1,2,3]}"#, r#"[{"op":"move","from":"/l/-1","path":"/l/0"}]"#, Doc(r#"{"l":[3,1,2]}"#)),
    ("copy", r#"{"a":{"k":"v"}}"#, r#"[{"op":"copy","from":"/a","path":"/b"}]"#, Doc(r#"{"a":{"k":"v"},"b":{"k":"v"}}"#)),
    ("copy from a missing member copies null", r#"{"a":{}}"#, r#"[{"op":"copy","from":"/a/nope","path":"/b"}]"#, Doc(r#"{"a":{},"b":null}"#)),
    ("copy from past the end", r#"{"l":[1]}"#, r#"[{"op":"copy","from":"/l/1","path":"/b"}]"#,
     Rejected("error in copy for from: '/l/1': Unable to access invalid index: 1: invalid index referenced")),
    ("unknown op", "{}", r#"[{"op":"frob","path":"/a"}]"#, Rejected("Unexpected kind: frob")),
    ("missing op", "{}", r#"[{"path":"/a"}]"#, Rejected("Unexpected kind: unknown")),
    ("null operation", "{}", "[null]", Rejected("Unexpected kind: unknown")),
    ("null body is no operation", r#"{"a":1}"#, "null", Doc(r#"{"a":1}"#)),
    ("empty list", r#"{"a":1}"#, "[]", Doc(r#"{"a":1}"#)),
    ("truncated body", "{}", r#"[{"op":"add""#, Error(400, "error decoding patch: unexpected end of JSON input")),
    ("empty body", "{}", "", Error(400, "error decoding patch: unexpected end of JSON input")),
    ("object body", "{}", r#"{"op":"add"}"#,
     Error(400, "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp")),
    ("string element", "{}", r#"["add"]"#,
     Error(400, "error decoding patch: json: cannot unmarshal string into Go value of type handlers.jsonPatchOp")),
    ("numeric op", "{}", r#"[{"op":1}]"#,
     Error(400, "error decoding patch: json: cannot unmarshal number into Go struct field jsonPatchOp.op of type string")),
    ("missing value", "{}", r#"[{"op":}]"#, Error(400, "error decoding patch: invalid character '}' looking for beginning of value")),
    ("trailing comma", "{}", "[1,]", Error(400, "error decoding patch: invalid character ']' looking for beginning of value")),
    ("trailing data", "{}", "[] x", Error(400, "error decoding patch: invalid character 'x' after top-level value")),
    ("bad literal", "{}", "[tru]", Error(400, "error decoding patch: invalid character ']' in literal true (expecting 'e')")),
    ("single quotes", "{}", "['a']", Error(400, r"error decoding patch: invalid character '\'' looking for beginning of value")),
    ("bad object key", "{}", "[{op:1}]", Error(400, "error decoding patch: invalid character 'o' looking for beginning of object key string")),
    ("missing colon", "{}", r#"[{"op" 1}]"#, Error(400, "error decoding patch: invalid character '1' after object key")),
    ("missing comma in object", "{}", r#"[{"op":1 "a":2}]"#, Error(400, "error decoding patch: invalid character '\"' after object key:value pair")),
    ("missing comma in array", "{}", "[1 2]", Error(400, "error decoding patch: invalid character '2' after array element")),
    ("leading zero", "{}", "[01]", Error(400, "error decoding patch: invalid character '1' after array element")),
    ("bad escape", "{}", r#"["\x"]"#, Error(400, "error decoding patch: invalid character 'x' in string escape code")),
    ("control character in string", "{}", "[\"a\tb\"]", Error(400, r"error decoding patch: invalid character '\t' in string literal")),
];

fn run(
    doc: &str,
    patch: &str,
    validation: FieldValidation,
) -> (Value, Result<Vec<String>, PatchError>) {
    let mut doc: Value = serde_json::from_str(doc).expect("test document");
    let res = json_patch::apply_with(&mut doc, patch.as_bytes(), validation);
    (doc, res)
}

#[test]
fn json_patch_table() {
    let mut failures = Vec::new();
    for (name, doc, patch, want) in CASES {
        let (got, res) = run(doc, patch, FieldValidation::Warn);
        let ok = match (want, &res) {
            (Doc(want), Ok(_)) => got == serde_json::from_str::<Value>(want).expect("want"),
            (Rejected(cause), Err(e)) => {
                e.code == 422
                    && e.reason == "Invalid"
                    && e.message == "the server rejected our request due to an error in our request"
                    && e.empty_details
                    && e.cause.as_deref() == Some(*cause)
            }
            (Error(code, message), Err(e)) => e.code == *code && e.message == *message,
            _ => false,
        };
        if !ok {
            failures.push(format!("{name}: got {res:?} / {got}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failing:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn ignore_validation_reports_library_types_without_prefix() {
    let cases = [
        (
            r#"{"op":"add"}"#,
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch",
        ),
        (
            r#"["add"]"#,
            "json: cannot unmarshal string into Go value of type jsonpatch.Operation",
        ),
        ("[", "unexpected end of JSON input"),
    ];
    for (patch, message) in cases {
        let (_, res) = run("{}", patch, FieldValidation::Ignore);
        let e = res.expect_err(patch);
        assert_eq!(
            (e.code, e.reason, e.message.as_str()),
            (400, "BadRequest", message)
        );
    }
    // Without the strict pass, a numeric op is just an unknown kind.
    let (_, res) = run("{}", r#"[{"op":1}]"#, FieldValidation::Ignore);
    assert_eq!(
        res.expect_err("op").cause.as_deref(),
        Some("Unexpected kind: unknown")
    );
}

#[test]
fn operation_count_limit() {
    let ops = vec![json!({"op": "test", "path": "/a", "value": 1}); 10_001];
    let (_, res) = run(
        r#"{"a":1}"#,
        &serde_json::to_string(&ops).expect("ops"),
        FieldValidation::Warn,
    );
    let e = res.expect_err("too many");
    assert_eq!((e.code, e.reason), (413, "RequestEntityTooLarge"));
    assert_eq!(
        e.message,
        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
    );
    let ops = vec![json!({"op": "test", "path": "/a", "value": 1}); 10_000];
    let (_, res) = run(
        r#"{"a":1}"#,
        &serde_json::to_string(&ops).expect("ops"),
        FieldValidation::Warn,
    );
    assert!(res.is_ok());
}

#[test]
fn copy_size_accumulates_over_the_patch() {
    let big = "x".repeat(1_600_000);
    let doc = json!({ "big": big }).to_string();
    let one = r#"[{"op":"copy","from":"/big","path":"/c1"}]"#;
    assert!(run(&doc, one, FieldValidation::Warn).1.is_ok());
    let two =
        r#"[{"op":"copy","from":"/big","path":"/c1"},{"op":"copy","from":"/big","path":"/c2"}]"#;
    let e = run(&doc, two, FieldValidation::Warn).1.expect_err("limit");
    assert_eq!(e.code, 422);
    assert_eq!(
        e.cause.as_deref(),
        Some(
            format!(
                "Unable to complete the copy, the accumulated size increase of copy is 3200004, exceeding the limit {MAX_COPY_BYTES}"
            )
            .as_str()
        )
    );
}

#[test]
fn large_arrays_stay_fast() {
    let doc = json!({ "l": (0..50_000).collect::<Vec<_>>() }).to_string();
    let ops: Vec<Value> = (0..10_000)
        .map(|i| json!({"op": "replace", "path": format!("/l/{}", i * 5), "value": -1}))
        .collect();
    let (got, res) = run(
        &doc,
        &serde_json::to_string(&ops).expect("ops"),
        FieldValidation::Warn,
    );
    assert!(res.is_ok());
    assert_eq!(got["l"][5], json!(-1));
}

#[test]
fn strict_decoding_problems() {
    let patch = r#"[{"op":"add","path":"/a","value":{"x":1,"x":2},"op":"add","Path":"/b","extra":{"y":1,"y":2}},{"op":"test","path":"/zz","foo":1,"foo":2}]"#;
    let (got, res) = run("{}", patch, FieldValidation::Warn);
    assert_eq!(got, json!({"a": {"x": 2}}));
    assert_eq!(
        res.expect("patched"),
        [
            r#"json patch duplicate field "x""#,
            r#"json patch duplicate field "op""#,
            r#"json patch unknown field "Path""#,
            r#"json patch unknown field "extra""#,
            r#"json patch unknown field "foo""#,
        ]
    );
    let (_, res) = run("{}", patch, FieldValidation::Ignore);
    assert_eq!(res.expect("patched"), Vec::<String>::new());

    let e = json_patch::strict_decoding_error(
        &[r#"json patch unknown field "foo""#.to_string()],
        r#"{"a":"b"}"#,
    );
    assert_eq!((e.code, e.reason), (422, "Invalid"));
    assert_eq!(
        e.message,
        r#" "" is invalid: patch: Invalid value: "{\"a\":\"b\"}": strict decoding error: json patch unknown field "foo""#
    );
    let cause = e.field_cause.expect("cause");
    assert_eq!((cause.reason, cause.field), ("FieldValueInvalid", "patch"));
}

#[test]
fn go_json_matches_go_encoding() {
    let v: Value =
        serde_json::from_str(r#"{"b":[1,2.5,1e21,1e-7,2.0],"a":"x<y>&z\u2028","c":null}"#)
            .expect("v");
    assert_eq!(
        json_patch::go_json(&v),
        r#"{"a":"x\u003cy\u003e\u0026z\u2028","b":[1,2.5,1e+21,1e-7,2],"c":null}"#
    );
}
