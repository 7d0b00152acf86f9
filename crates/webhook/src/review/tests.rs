//! Data-driven tests: a literal `ConversionReview` in, a literal `ConversionReview` out.

use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

use super::{ReviewError, handle_review, handle_review_value};

/// A converter whose behaviour is chosen by the object's `spec.action`; it marks every object
/// it converts with `spec.convertedTo` so that passthrough is visible in the expected output.
fn scripted(mut object: Value, desired: &str) -> Result<Value, String> {
    let action = object
        .pointer("/spec/action")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    object["spec"]["convertedTo"] = json!(desired);
    match action.as_str() {
        "" => {}
        "fail" => return Err("hostPort could not be parsed into a separate host and port".into()),
        "relabel" => {
            object["metadata"]["labels"] = json!({"new": "label"});
            object["metadata"]["annotations"]["added"] = json!("yes");
            object["metadata"]["resourceVersion"] = json!("999");
            object["metadata"]["generation"] = json!(7);
            object["metadata"]["finalizers"] = json!(["example.com/f"]);
        }
        "drop-metadata" => {
            object.as_object_mut().map(|o| o.remove("metadata"));
        }
        "minimal-metadata" => object["metadata"] = json!({"name": object["metadata"]["name"]}),
        "rename" => object["metadata"]["name"] = json!("renamed"),
        "renamespace" => object["metadata"]["namespace"] = json!("other"),
        "reuid" => object["metadata"]["uid"] = json!("00000000-0000-0000-0000-000000000000"),
        "rekind" => object["kind"] = json!("CronJob"),
        "drop-kind-and-version" => {
            let o = object.as_object_mut().expect("object");
            o.remove("kind");
            o.remove("apiVersion");
        }
        "wrong-version" => object["apiVersion"] = json!("example.com/v7"),
        "bad-label" => object["metadata"]["labels"] = json!({"n": 1}),
        "bad-metadata" => object["metadata"] = json!("nope"),
        "not-an-object" => return Ok(json!(["not", "an", "object"])),
        "panic" => panic!("converter bug"),
        other => return Err(format!("unknown action {other}")),
    }
    Ok(object)
}

struct Case {
    name: &'static str,
    input: &'static str,
    output: &'static str,
}

const CASES: &[Case] = &[
    Case {
        name: "v1 success, in order, object already at the desired version passed through",
        input: r#"{
          "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
          "request": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "desiredAPIVersion": "example.com/v1",
            "objects": [
              {"kind": "CronTab", "apiVersion": "example.com/v1beta1",
               "metadata": {"creationTimestamp": "2019-09-04T14:03:02Z", "name": "local-crontab",
                            "namespace": "default", "resourceVersion": "143",
                            "uid": "3415a7fc-162b-4300-b5da-fd6083580d66"},
               "spec": {"hostPort": "localhost:1234"}},
              {"kind": "CronTab", "apiVersion": "example.com/v1",
               "metadata": {"name": "already-v1", "namespace": "default"},
               "spec": {"host": "a", "port": "1"}},
              {"kind": "CronTab", "apiVersion": "example.com/v1beta1",
               "metadata": {"name": "remote-crontab", "resourceVersion": "12893",
                            "uid": "359a83ec-b575-460d-b553-d859cedde8a0"},
               "spec": {"hostPort": "example.com:2345"}}
            ]
          },
          "response": {"uid": "", "convertedObjects": null, "result": {"metadata": {}}}
        }"#,
        output: r#"{
          "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
          "response": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "result": {"status": "Success"},
            "convertedObjects": [
              {"kind": "CronTab", "apiVersion": "example.com/v1",
               "metadata": {"creationTimestamp": "2019-09-04T14:03:02Z", "name": "local-crontab",
                            "namespace": "default", "resourceVersion": "143",
                            "uid": "3415a7fc-162b-4300-b5da-fd6083580d66"},
               "spec": {"hostPort": "localhost:1234", "convertedTo": "example.com/v1"}},
              {"kind": "CronTab", "apiVersion": "example.com/v1",
               "metadata": {"name": "already-v1", "namespace": "default"},
               "spec": {"host": "a", "port": "1"}},
              {"kind": "CronTab", "apiVersion": "example.com/v1",
               "metadata": {"name": "remote-crontab", "resourceVersion": "12893",
                            "uid": "359a83ec-b575-460d-b553-d859cedde8a0"},
               "spec": {"hostPort": "example.com:2345", "convertedTo": "example.com/v1"}}
            ]
          }
        }"#,
    },
    Case {
        name: "v1beta1 success answered as v1beta1",
        input: r#"{
          "apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "ConversionReview",
          "request": {
            "uid": "u-1", "desiredAPIVersion": "example.com/v1beta1",
            "objects": [
              {"kind": "CronTab", "apiVersion": "example.com/v1",
               "metadata": {"name": "a", "namespace": "ns"}, "spec": {}}
            ]
          }
        }"#,
        output: r#"{
          "apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "ConversionReview",
          "response": {
            "uid": "u-1", "result": {"status": "Success"},
            "convertedObjects": [
              {"kind": "CronTab", "apiVersion": "example.com/v1beta1",
               "metadata": {"name": "a", "namespace": "ns"},
               "spec": {"convertedTo": "example.com/v1beta1"}}
            ]
          }
        }"#,
    },
    Case {
        name: "empty and null object lists succeed with no objects",
        input: r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                   "request": {"uid": "u", "desiredAPIVersion": "example.com/v1", "objects": null}}"#,
        output: r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                    "response": {"uid": "u", "result": {"status": "Success"}, "convertedObjects": []}}"#,
    },
    Case {
        name: "all objects at the desired version: converter never called",
        input: r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                   "request": {"uid": "u", "desiredAPIVersion": "example.com/v1", "objects": [
                     {"kind": "CronTab", "apiVersion": "example.com/v1",
                      "metadata": {"name": "a"}, "spec": {"action": "fail"}}]}}"#,
        output: r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                    "response": {"uid": "u", "result": {"status": "Success"}, "convertedObjects": [
                     {"kind": "CronTab", "apiVersion": "example.com/v1",
                      "metadata": {"name": "a"}, "spec": {"action": "fail"}}]}}"#,
    },
    Case {
        name: "converter error fails the whole review, without convertedObjects (v1beta1)",
        input: r#"{"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "ConversionReview",
                   "request": {"uid": "u-2", "desiredAPIVersion": "example.com/v1", "objects": [
                     {"kind": "CronTab", "apiVersion": "example.com/v1beta1", "metadata": {"name": "ok"}, "spec": {}},
                     {"kind": "CronTab", "apiVersion": "example.com/v1beta1", "metadata": {"name": "bad"},
                      "spec": {"action": "fail"}}]}}"#,
        output: r#"{"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "ConversionReview",
                    "response": {"uid": "u-2", "result": {"status": "Failed",
                      "message": "hostPort could not be parsed into a separate host and port"}}}"#,
    },
    Case {
        name: "labels and annotations from the converter kept, other metadata restored",
        input: r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                   "request": {"uid": "u", "desiredAPIVersion": "example.com/v1", "objects": [
                     {"kind": "CronTab", "apiVersion": "example.com/v1beta1",
                      "metadata": {"name": "a", "namespace": "ns", "uid": "x", "resourceVersion": "5",
                                   "generation": 1, "labels": {"old": "label"},
                                   "annotations": {"kept": "a"}},
                      "spec": {"action": "relabel"}}]}}"#,
        output: r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                    "response": {"uid": "u", "result": {"status": "Success"}, "convertedObjects": [
                     {"kind": "CronTab", "apiVersion": "example.com/v1",
                      "metadata": {"name": "a", "namespace": "ns", "uid": "x", "resourceVersion": "5",
                                   "generation": 1, "labels": {"new": "label"},
                                   "annotations": {"kept": "a", "added": "yes"}},
                      "spec": {"action": "relabel", "convertedTo": "example.com/v1"}}]}}"#,
    },
    Case {
        name: "converter dropping metadata: input metadata kept whole",
        input: r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                   "request": {"uid": "u", "desiredAPIVersion": "example.com/v1", "objects": [
                     {"kind": "CronTab", "apiVersion": "example.com/v1beta1",
                      "metadata": {"name": "a", "labels": {"l": "v"}}, "spec": {"action": "drop-metadata"}}]}}"#,
        output: r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                    "response": {"uid": "u", "result": {"status": "Success"}, "convertedObjects": [
                     {"kind": "CronTab", "apiVersion": "example.com/v1",
                      "metadata": {"name": "a", "labels": {"l": "v"}},
                      "spec": {"action": "drop-metadata", "convertedTo": "example.com/v1"}}]}}"#,
    },
    Case {
        name: "converter metadata without labels/annotations removes them (as kube-apiserver)",
        input: r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                   "request": {"uid": "u", "desiredAPIVersion": "example.com/v1", "objects": [
                     {"kind": "CronTab", "apiVersion": "example.com/v1beta1",
                      "metadata": {"name": "a", "namespace": "n", "labels": {"l": "v"},
                                   "annotations": {"a": "b"}},
                      "spec": {"action": "minimal-metadata"}}]}}"#,
        output: r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                    "response": {"uid": "u", "result": {"status": "Success"}, "convertedObjects": [
                     {"kind": "CronTab", "apiVersion": "example.com/v1",
                      "metadata": {"name": "a", "namespace": "n"},
                      "spec": {"action": "minimal-metadata", "convertedTo": "example.com/v1"}}]}}"#,
    },
    Case {
        name: "apiVersion forced to desiredAPIVersion; missing kind restored",
        input: r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                   "request": {"uid": "u", "desiredAPIVersion": "example.com/v1", "objects": [
                     {"kind": "CronTab", "apiVersion": "example.com/v1beta1", "metadata": {"name": "a"},
                      "spec": {"action": "wrong-version"}},
                     {"kind": "CronTab", "apiVersion": "example.com/v1beta1", "metadata": {"name": "b"},
                      "spec": {"action": "drop-kind-and-version"}}]}}"#,
        output: r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                    "response": {"uid": "u", "result": {"status": "Success"}, "convertedObjects": [
                     {"kind": "CronTab", "apiVersion": "example.com/v1", "metadata": {"name": "a"},
                      "spec": {"action": "wrong-version", "convertedTo": "example.com/v1"}},
                     {"kind": "CronTab", "apiVersion": "example.com/v1", "metadata": {"name": "b"},
                      "spec": {"action": "drop-kind-and-version", "convertedTo": "example.com/v1"}}]}}"#,
    },
    Case {
        name: "changed name fails, naming the object",
        input: r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                   "request": {"uid": "u", "desiredAPIVersion": "example.com/v1", "objects": [
                     {"kind": "CronTab", "apiVersion": "example.com/v1beta1",
                      "metadata": {"name": "a", "namespace": "ns"}, "spec": {"action": "rename"}}]}}"#,
        output: r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                    "response": {"uid": "u", "result": {"status": "Failed",
                     "message": "converter changed metadata.name of object at index 0 (CronTab ns/a) from \"a\" to \"renamed\"; metadata.name must not change"}}}"#,
    },
    Case {
        name: "changed namespace fails",
        input: r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                   "request": {"uid": "u", "desiredAPIVersion": "example.com/v1", "objects": [
                     {"kind": "CronTab", "apiVersion": "example.com/v1", "metadata": {"name": "skipped"}},
                     {"kind": "CronTab", "apiVersion": "example.com/v1beta1",
                      "metadata": {"name": "a", "namespace": "ns"}, "spec": {"action": "renamespace"}}]}}"#,
        output: r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                    "response": {"uid": "u", "result": {"status": "Failed",
                     "message": "converter changed metadata.namespace of object at index 1 (CronTab ns/a) from \"ns\" to \"other\"; metadata.namespace must not change"}}}"#,
    },
    Case {
        name: "changed uid fails",
        input: r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                   "request": {"uid": "u", "desiredAPIVersion": "example.com/v1", "objects": [
                     {"kind": "CronTab", "apiVersion": "example.com/v1beta1",
                      "metadata": {"name": "a", "uid": "x"}, "spec": {"action": "reuid"}}]}}"#,
        output: r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                    "response": {"uid": "u", "result": {"status": "Failed",
                     "message": "converter changed metadata.uid of object at index 0 (CronTab a) from \"x\" to \"00000000-0000-0000-0000-000000000000\"; metadata.uid must not change"}}}"#,
    },
    Case {
        name: "changed kind fails",
        input: r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                   "request": {"uid": "u", "desiredAPIVersion": "example.com/v1", "objects": [
                     {"kind": "CronTab", "apiVersion": "example.com/v1beta1",
                      "metadata": {"name": "a"}, "spec": {"action": "rekind"}}]}}"#,
        output: r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                    "response": {"uid": "u", "result": {"status": "Failed",
                     "message": "converter changed kind of object at index 0 (CronTab a) from \"CronTab\" to \"CronJob\"; kind must not change"}}}"#,
    },
    Case {
        name: "non-string label fails",
        input: r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                   "request": {"uid": "u", "desiredAPIVersion": "example.com/v1", "objects": [
                     {"kind": "CronTab", "apiVersion": "example.com/v1beta1",
                      "metadata": {"name": "a"}, "spec": {"action": "bad-label"}}]}}"#,
        output: r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                    "response": {"uid": "u", "result": {"status": "Failed",
                     "message": "converter returned metadata.labels[\"n\"] for object at index 0 (CronTab a) that is a number, but it must be a string"}}}"#,
    },
    Case {
        name: "non-object metadata fails",
        input: r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                   "request": {"uid": "u", "desiredAPIVersion": "example.com/v1", "objects": [
                     {"kind": "CronTab", "apiVersion": "example.com/v1beta1",
                      "metadata": {"name": "a"}, "spec": {"action": "bad-metadata"}}]}}"#,
        output: r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                    "response": {"uid": "u", "result": {"status": "Failed",
                     "message": "converter returned metadata for object at index 0 (CronTab a) that is a string, not a JSON object"}}}"#,
    },
    Case {
        name: "converter returning a non-object fails",
        input: r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                   "request": {"uid": "u", "desiredAPIVersion": "example.com/v1", "objects": [
                     {"kind": "CronTab", "apiVersion": "example.com/v1beta1",
                      "metadata": {"name": "a"}, "spec": {"action": "not-an-object"}}]}}"#,
        output: r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                    "response": {"uid": "u", "result": {"status": "Failed",
                     "message": "converter returned an array for object at index 0 (CronTab a), not a JSON object"}}}"#,
    },
    Case {
        name: "converter panic becomes a failed review",
        input: r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                   "request": {"uid": "u", "desiredAPIVersion": "example.com/v1", "objects": [
                     {"kind": "CronTab", "apiVersion": "example.com/v1beta1",
                      "metadata": {"name": "a", "namespace": "n"}, "spec": {"action": "panic"}}]}}"#,
        output: r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                    "response": {"uid": "u", "result": {"status": "Failed",
                     "message": "converter panicked on object at index 0 (CronTab n/a): converter bug"}}}"#,
    },
    Case {
        name: "an object that is not a JSON object fails the review",
        input: r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                   "request": {"uid": "u", "desiredAPIVersion": "example.com/v1", "objects": [42]}}"#,
        output: r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                    "response": {"uid": "u", "result": {"status": "Failed",
                     "message": "object at index 0 is a number, not a JSON object"}}}"#,
    },
];

#[test]
fn review_cases() {
    for case in CASES {
        let input: Value = serde_json::from_str(case.input)
            .unwrap_or_else(|e| panic!("{}: input is not JSON: {e}", case.name));
        let expected: Value = serde_json::from_str(case.output)
            .unwrap_or_else(|e| panic!("{}: output is not JSON: {e}", case.name));
        let got = handle_review_value(input, &scripted)
            .unwrap_or_else(|e| panic!("{}: unexpected error {e}", case.name));
        assert_eq!(
            got,
            expected,
            "{}\n got: {}",
            case.name,
            serde_json::to_string_pretty(&got).unwrap_or_default()
        );

        // The byte-level entry point gives the same answer.
        let bytes = handle_review(case.input.as_bytes(), &scripted).expect("bytes");
        let reparsed: Value = serde_json::from_slice(&bytes).expect("response is JSON");
        assert_eq!(reparsed, expected, "{} (bytes)", case.name);
    }
}

#[test]
fn passthrough_does_not_call_the_converter() {
    let calls = AtomicUsize::new(0);
    let counting = |object: Value, _desired: &str| {
        calls.fetch_add(1, Ordering::SeqCst);
        Ok(object)
    };
    let review = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "request": {"uid": "u", "desiredAPIVersion": "example.com/v1", "objects": [
            {"kind": "CronTab", "apiVersion": "example.com/v1", "metadata": {"name": "a"}},
            {"kind": "CronTab", "apiVersion": "example.com/v1beta1", "metadata": {"name": "b"}},
            {"kind": "CronTab", "apiVersion": "example.com/v1", "metadata": {"name": "c"}},
        ]}
    });
    let out = handle_review_value(review, &counting).expect("review");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        out["response"]["convertedObjects"].as_array().map(Vec::len),
        Some(3)
    );
}

#[test]
fn malformed_reviews_are_client_errors() {
    let cases: &[(&str, &str)] = &[
        ("not json", "request body is not valid JSON"),
        ("[]", "ConversionReview must be a JSON object"),
        (
            r#"{"apiVersion": "apiextensions.k8s.io/v2", "kind": "ConversionReview", "request": {}}"#,
            r#"unsupported ConversionReview apiVersion "apiextensions.k8s.io/v2""#,
        ),
        (
            r#"{"kind": "ConversionReview", "request": {}}"#,
            r#"unsupported ConversionReview apiVersion """#,
        ),
        (
            r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "AdmissionReview"}"#,
            r#"expected kind "ConversionReview", got "AdmissionReview""#,
        ),
        (
            r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"}"#,
            "ConversionReview has no request",
        ),
        (
            r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": []}"#,
            "ConversionReview has no request",
        ),
        (
            r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                "request": {"desiredAPIVersion": "example.com/v1", "objects": []}}"#,
            "invalid ConversionReview request: request.uid must be a string",
        ),
        (
            r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                "request": {"uid": "u", "desiredAPIVersion": "", "objects": []}}"#,
            "invalid ConversionReview request: request.desiredAPIVersion must be a non-empty string",
        ),
        (
            r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                "request": {"uid": "u", "desiredAPIVersion": "example.com/v1", "objects": {}}}"#,
            "invalid ConversionReview request: request.objects must be an array",
        ),
    ];
    for (body, message) in cases {
        let err = handle_review(body.as_bytes(), &scripted).expect_err(body);
        assert!(err.is_client_error(), "{body}: {err}");
        assert!(
            err.to_string().starts_with(message),
            "{body}: got {err}, want prefix {message}"
        );
    }
    assert!(matches!(
        handle_review(b"{}", &scripted),
        Err(ReviewError::UnsupportedApiVersion(_))
    ));
}
