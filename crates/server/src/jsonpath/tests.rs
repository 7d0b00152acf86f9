//! Cases after client-go's `jsonpath_test.go` and the printer columns CRDs ship with.

use serde_json::{Value, json};

use super::*;

fn object() -> Value {
    json!({
        "metadata": {
            "name": "g1",
            "annotations": {"example.com/x": "annval", "plain": "p"},
            "labels": {"a": "1"}
        },
        "spec": {
            "replicas": 3,
            "ratio": 0.5,
            "big": 1_234_567.5,
            "enabled": true,
            "nothing": null,
            "ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}, {"port": 8080}]
        },
        "status": {
            "conditions": [
                {"type": "Ready", "status": "True", "reason": "Up"},
                {"type": "Synced", "status": "False"},
                {"type": "Other", "status": "X", "reason": "Why"}
            ]
        }
    })
}

/// Every result of `path` over `obj`, or the error.
fn results(obj: &Value, path: &str) -> Result<Vec<Value>, String> {
    JsonPath::parse(path)?
        .find(obj)
        .map(|found| found.into_iter().map(Cow::into_owned).collect())
}

/// Every result of `path` over the test object, or the error.
fn all(path: &str) -> Result<Vec<Value>, String> {
    results(&object(), path)
}

#[test]
fn paths_give_upstreams_results() {
    let cases: &[(&str, Value)] = &[
        (".metadata.name", json!(["g1"])),
        ("$.metadata.name", json!(["g1"])),
        (".status.conditions[0].status", json!(["True"])),
        (".status.conditions[-1].type", json!(["Other"])),
        (".status.conditions[0:2].type", json!(["Ready", "Synced"])),
        (".status.conditions[1:].type", json!(["Synced", "Other"])),
        (".status.conditions[::2].type", json!(["Ready", "Other"])),
        (".status.conditions[-2:].type", json!(["Synced", "Other"])),
        (
            ".status.conditions[*].type",
            json!(["Ready", "Synced", "Other"]),
        ),
        (
            ".status.conditions[]",
            json!([{"type": "Ready", "status": "True", "reason": "Up"}]),
        ),
        (
            r#".status.conditions[?(@.type=="Ready")].status"#,
            json!(["True"]),
        ),
        (
            r#".status.conditions[?(@.type == "Synced")].status"#,
            json!(["False"]),
        ),
        (
            ".status.conditions[?(@.type=='Other')].reason",
            json!(["Why"]),
        ),
        (
            r#".status.conditions[?(@.status!="True")].type"#,
            json!(["Synced", "Other"]),
        ),
        // Elements without the compared field are skipped.
        (
            r#".status.conditions[?(@.reason=="Why")].type"#,
            json!(["Other"]),
        ),
        (
            ".status.conditions[?(@.reason)].type",
            json!(["Ready", "Other"]),
        ),
        (".spec.ports[?(@.port>100)].port", json!([443, 8080])),
        (".spec.ports[?(@.port<=443)].port", json!([80, 443])),
        (".spec.ports[0,2].port", json!([80, 8080])),
        (
            ".spec.ports[*]['port','name']",
            json!([80, 443, 8080, "http", "https"]),
        ),
        (r".metadata.annotations.example\.com/x", json!(["annval"])),
        (
            r".metadata.annotations['example\.com/x']",
            json!(["annval"]),
        ),
        (".metadata.annotations['plain']", json!(["p"])),
        // A dict key is re-read as a path: its dots split it, as upstream's do.
        (".metadata.annotations['example.com/x']", json!([])),
        (".metadata.labels.*", json!(["1"])),
        ("..port", json!([80, 443, 8080])),
        ("..reason", json!(["Up", "Why"])),
        (".spec.missing", json!([])),
        (".spec.missing.deeper", json!([])),
        (".spec.nothing", json!([null])),
        (".spec.nothing.deeper", json!([])),
        (".spec.ports.port", json!([])),
        (".", json!([])),
        // From client-go's jsonpath_test.go.
        ("...port", json!([80, 443, 8080])),
        (".spec.ports[?(@..port==443)].name", json!(["https"])),
        (
            ".spec.ports[*]['name', 'port']",
            json!(["http", "https", 80, 443, 8080]),
        ),
        (".a..", json!([])),
    ];
    for (path, want) in cases {
        let got = all(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(Value::Array(got), *want, "{path}");
    }
}

#[test]
fn failures_are_upstreams_errors() {
    let cases: &[(&str, &str)] = &[
        (
            ".status.conditions[3].type",
            "array index out of bounds: index 3, length 3",
        ),
        (
            ".status.conditions[-4].type",
            "array index out of bounds: index -1, length 3",
        ),
        (
            ".status.conditions[2:1]",
            "starting index 2 is greater than ending index 1",
        ),
        (".status.conditions[0:2:0]", "step must be > 0"),
        (".metadata.name[0]", "string is not array or slice"),
        (
            ".metadata[0]",
            "map[string]interface {} is not array or slice",
        ),
        (".status.conditions[x]", "invalid array index x"),
        (".status.conditions[0", "unterminated array"),
        (
            ".status.conditions[?(@.type=='Ready'",
            "unterminated filter",
        ),
        (".a\n", "unclosed action"),
        (
            "{.metadata.name}",
            "unrecognized character in action: U+007B '{'",
        ),
        (".a....b", "invalid multiple recursive descent"),
        ("....port", "invalid multiple recursive descent"),
        (
            ".spec.ports[0]*",
            "unrecognized character in action: U+002A '*'",
        ),
        ("range", "unrecognized identifier range"),
        (
            ".spec.ports[?(@.port=='80')].name",
            "incompatible types for comparison",
        ),
        (
            ".spec.ports[?(@.port==80.0)].name",
            "incompatible types for comparison",
        ),
        (
            ".spec.ports[?(@.port=80)].name",
            "unrecognized filter operator =",
        ),
        (
            ".metadata.labels[?(@.a)]",
            "is not array or slice and cannot be filtered",
        ),
        (
            ".status.conditions[*][?(@.x)]",
            "is not array or slice and cannot be filtered",
        ),
        (".x{", "unrecognized character in action: U+007B '{'"),
    ];
    for (path, want) in cases {
        match all(path) {
            Ok(v) => panic!("{path}: got {v:?}, want an error containing {want:?}"),
            Err(e) => assert!(e.contains(want), "{path}: {e:?} does not contain {want:?}"),
        }
    }
}

#[test]
fn the_first_result_is_the_cell() {
    let obj = object();
    let first = |p: &str| JsonPath::parse(p).unwrap().first(&obj).map(Cow::into_owned);
    assert_eq!(first(".status.conditions[*].type"), Some(json!("Ready")));
    assert_eq!(first(".status.conditions[5].type"), None);
    assert_eq!(first(".nope"), None);
}

#[test]
fn string_cells_print_as_gos_fprint() {
    let cases = [
        (json!("s"), "s"),
        (json!(true), "true"),
        (json!(3), "3"),
        (json!(-7), "-7"),
        (
            json!(18_446_744_073_709_551_615_u64),
            "1.8446744073709552e+19",
        ),
        (json!(0.5), "0.5"),
        (json!(3.0), "3"),
        (json!(123_456.0), "123456"),
        (json!(1_234_567.5), "1.2345675e+06"),
        (json!(1e21), "1e+21"),
        (json!(0.0001), "0.0001"),
        (json!(0.00001), "1e-05"),
        (json!(-2.5e-7), "-2.5e-07"),
        (json!(null), "<no value>"),
        (json!([1, "a", null, [true]]), "[1 a <nil> [true]]"),
        (json!({"b": {"c": 1.5}, "a": "x"}), "map[a:x b:map[c:1.5]]"),
    ];
    for (v, want) in cases {
        assert_eq!(go_text(&v), want, "{v}");
    }
}

#[test]
fn literals_and_quotes() {
    let obj = json!({"items": [{"a": "x\"y", "b": true}, {"a": "z", "b": false}]});
    let find = |p: &str| results(&obj, p).unwrap();
    assert_eq!(find(r#".items[?(@.a=="x\"y")].b"#), vec![json!(true)]);
    assert_eq!(find(".items[?(@.b==false)].a"), vec![json!("z")]);
    assert_eq!(find(r#""text""#), vec![json!("text")]);

    // client-go's cases over a bare array: a filter on the element itself, a union of indexes.
    let numbers = json!([2, 6, 3, 7, 4]);
    let over = |p: &str| results(&numbers, p).unwrap();
    assert_eq!(over("[?(@<5)]"), vec![json!(2), json!(3), json!(4)]);
    assert_eq!(over("[1,3,4]"), vec![json!(6), json!(7), json!(4)]);
}

#[test]
fn nesting_and_result_counts_are_bounded() {
    let deep = format!(".a{}{}", "[?(@.a".repeat(100), ")]".repeat(100));
    assert_eq!(JsonPath::parse(&deep).unwrap_err(), "unterminated filter");
    assert_eq!(
        JsonPath::parse_nested(".a", MAX_NESTING + 1).unwrap_err(),
        "jsonpath nesting too deep"
    );
    // Recursive descent over recursive descent multiplies the values found.
    let mut obj = json!(1);
    for _ in 0..16 {
        obj = json!({"a": [obj.clone(), obj]});
    }
    let path = JsonPath::parse("..a..a..a..a").unwrap();
    assert!(path.find(&obj).unwrap_err().starts_with("more than"));
}
