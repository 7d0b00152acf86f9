//! CEL validation rules through kubectl: the seed's replicas example, messages, transition
//! rules, ratcheting warnings, and rules refused when the CRD is written.

use crate::support::{TestServer, crd_yaml, eventually, widgets_yaml};

/// The schema of `crontabs.stable.example.com` ([`crd`]).
const SCHEMA: &str = "type: object
properties:
  spec:
    type: object
    x-kubernetes-validations:
    - rule: self.minReplicas <= self.replicas
      message: replicas should be greater than or equal to minReplicas.
    - rule: self.replicas <= self.maxReplicas
      message: replicas should be smaller than or equal to maxReplicas.
    properties:
      minReplicas: {type: integer}
      replicas: {type: integer}
      maxReplicas: {type: integer}
      mode:
        type: string
        x-kubernetes-validations:
        - rule: self == oldSelf
          message: Value is immutable
      size:
        type: integer
        x-kubernetes-validations:
        - rule: self < 10
    required: [minReplicas, replicas, maxReplicas]
";

/// The CronTab CRD the rules tests start from.
fn crd() -> String {
    crd_yaml(
        "stable.example.com",
        "crontabs",
        "singular: crontab, kind: CronTab",
        &[("v1", true, SCHEMA)],
        "",
    )
}

fn object(replicas: i64, mode: &str, size: i64) -> String {
    format!(
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: my-new-cron-object\nspec:\n  minReplicas: 0\n  replicas: {replicas}\n  maxReplicas: 10\n  mode: {mode}\n  size: {size}\n"
    )
}

#[test]
fn cel_rules_through_kubectl() {
    let s = TestServer::start();
    s.apply_crd("crd.yaml", &crd(), "crontabs.stable.example.com");

    // The seed's example: replicas above maxReplicas.
    s.write("ct.yaml", &object(20, "a", 1));
    let out = s.kubectl(&["apply", "-f", "ct.yaml"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("The CronTab \"my-new-cron-object\" is invalid: spec: Invalid value: \"object\": replicas should be smaller than or equal to maxReplicas."), "{err}");

    // A valid object; then a transition rule forbids changing `mode`.
    s.write("ct.yaml", &object(5, "a", 1));
    s.kubectl_ok(&["apply", "-f", "ct.yaml"]);
    s.write("ct.yaml", &object(5, "b", 1));
    let out = s.kubectl(&["apply", "-f", "ct.yaml"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("spec.mode: Invalid value: \"string\": Value is immutable"),
        "{err}"
    );

    // Ratcheting: `size` stored before the rule tightened does not block other changes while it
    // stays unchanged; kubectl prints the ratcheted failure as a warning.
    s.write(
        "crd.yaml",
        &crd().replace("rule: self < 10", "rule: self < 1"),
    );
    s.kubectl_ok(&["apply", "-f", "crd.yaml"]);
    // The tightened rule is served once a new object with size 1 is refused (a server-side dry
    // run stores nothing).
    s.write(
        "probe.yaml",
        &object(5, "a", 1).replace("my-new-cron-object", "probe"),
    );
    eventually("the tightened rule is served", || {
        let out = s.kubectl(&["create", "-f", "probe.yaml", "--dry-run=server"]);
        !out.status.success()
            && String::from_utf8_lossy(&out.stderr).contains("failed rule: self < 1")
    });
    s.write("ct.yaml", &object(6, "a", 1));
    let out = s.kubectl(&["apply", "-f", "ct.yaml"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("Warning: spec.size: Invalid value: \"integer\": failed rule: self < 1"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Rules that cannot work are refused when the CRD is written.
    s.write(
        "bad.yaml",
        &crd().replace(
            "rule: self.minReplicas <= self.replicas",
            "rule: self.nonExistingField > 0",
        ),
    );
    let out = s.kubectl(&["apply", "-f", "bad.yaml"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: \"self.nonExistingField > 0\": compilation failed: ERROR: <input>:1:5: undefined field 'nonExistingField'\n | self.nonExistingField > 0\n | ....^"),
        "{err}"
    );
}

/// `widgets.example.com` with one rule at `spec` over `props` (YAML of `spec`'s properties,
/// indented six spaces).
fn crd_with(rule_at_spec: &str, props: &str) -> String {
    let schema = format!(
        "type: object
properties:
  spec:
    type: object
    x-kubernetes-validations:
    - rule: {rule_at_spec:?}
    properties:
{props}"
    );
    widgets_yaml(&schema)
}

/// The seed's three compilation errors and its cost rejection, as kubectl prints them.
#[test]
fn the_seeds_crd_errors_through_kubectl() {
    let s = TestServer::start();
    let at = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule";
    let cases = [
        (
            "self.replicas == true",
            "      replicas: {type: integer}",
            format!(
                "{at}: Invalid value: \"self.replicas == true\": compilation failed: ERROR: <input>:1:15: found no matching overload for '_==_' applied to '(int, bool)'\n | self.replicas == true\n | ..............^"
            ),
        ),
        (
            "self.nonExistingField > 0",
            "      replicas: {type: integer}",
            format!(
                "{at}: Invalid value: \"self.nonExistingField > 0\": compilation failed: ERROR: <input>:1:5: undefined field 'nonExistingField'\n | self.nonExistingField > 0\n | ....^"
            ),
        ),
        (
            "has(self)",
            "      replicas: {type: integer}",
            format!(
                "{at}: Invalid value: \"has(self)\": compilation failed: ERROR: <input>:1:4: invalid argument to has() macro\n | has(self)\n | ...^"
            ),
        ),
        (
            "self.foo.all(x, x.contains('a string'))",
            "      foo: {type: array, items: {type: string}}",
            format!(
                "{at}: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
            ),
        ),
        (
            "cel.bind(x, self.replicas, x > 0)",
            "      replicas: {type: integer}",
            format!(
                "{at}: Invalid value: \"cel.bind(x, self.replicas, x > 0)\": compilation failed: ERROR: <input>:1:"
            ),
        ),
    ];
    for (rule, props, want) in cases {
        s.write("crd.yaml", &crd_with(rule, props));
        let out = s.kubectl(&["apply", "-f", "crd.yaml"]);
        assert!(!out.status.success(), "{rule} was accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&want), "{rule}\nwant: {want}\ngot: {err}");
    }
    // With limits the seed's expensive rule is accepted.
    s.write(
        "crd.yaml",
        &crd_with(
            "self.foo.all(x, x.contains('a string'))",
            "      foo: {type: array, maxItems: 25, items: {type: string, maxLength: 10}}",
        ),
    );
    s.kubectl_ok(&["apply", "-f", "crd.yaml"]);
}

/// Optional syntax, `type()`, two-variable comprehensions, set-list equality and the runtime
/// budget, on objects written through kubectl.
#[test]
fn kubernetes_cel_features_through_kubectl() {
    let s = TestServer::start();
    let props = "      port: {x-kubernetes-int-or-string: true}
      a: {type: array, maxItems: 10, x-kubernetes-list-type: set, items: {type: integer}}
      b: {type: array, maxItems: 10, x-kubernetes-list-type: set, items: {type: integer}}
      m: {type: object, maxProperties: 10, additionalProperties: {type: string, maxLength: 10}}
      l:
        type: array
        items: {type: string}
        x-kubernetes-validations:
        - rule: \"self.all(x, !x.contains('b')) && self.all(x, !x.contains('b')) && self.all(x, !x.contains('b')) && self.all(x, !x.contains('b')) && self.all(x, !x.contains('b')) && self.all(x, !x.contains('b')) && self.all(x, !x.contains('b')) && self.all(x, !x.contains('b'))\"";
    let rule = "(type(self.port) == string ? self.port == 'http' : self.port == 80) && (!self.?m.hasValue() || self.m.all(k, v, k != v)) && self.a == self.b";
    let mut crd = crd_with(rule, props);
    // The expensive list rule needs bounds to be accepted at all.
    crd = crd.replace(
        "                items: {type: string}\n",
        "                maxItems: 100\n                items: {type: string, maxLength: 3000}\n",
    );
    s.apply_crd("crd.yaml", &crd, "widgets.example.com");
    let widget = |name: &str, spec: &str| {
        format!(
            "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: {name}\nspec: {spec}\n"
        )
    };
    s.write(
        "ok.yaml",
        &widget("ok", "{port: http, a: [1, 2], b: [2, 1], m: {x: z}}"),
    );
    s.kubectl_ok(&["apply", "-f", "ok.yaml"]);
    s.write("ok2.yaml", &widget("ok2", "{port: 80, a: [], b: []}"));
    s.kubectl_ok(&["apply", "-f", "ok2.yaml"]);
    for spec in [
        "{port: 81, a: [], b: []}",
        "{port: http, a: [1], b: [2]}",
        "{port: http, a: [], b: [], m: {x: x}}",
    ] {
        s.write("bad.yaml", &widget("bad", spec));
        let out = s.kubectl(&["apply", "-f", "bad.yaml"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!(
                "The Widget \"bad\" is invalid: spec: Invalid value: \"object\": failed rule: {rule}"
            )),
            "{spec}: {err}"
        );
    }
    // 100 strings of 2,900 bytes: each of the 8 scans charges ~300 per item; the rule's cost
    // (~240k) fits the per-call limit and the budget.
    let long = "a".repeat(2_900);
    let items: Vec<String> = (0..100).map(|_| format!("\"{long}\"")).collect();
    s.write(
        "big.yaml",
        &widget(
            "big",
            &format!("{{port: 80, a: [], b: [], l: [{}]}}", items.join(", ")),
        ),
    );
    // `create`: `apply` would store the whole object again in an annotation (256 KiB limit).
    s.kubectl_ok(&["create", "-f", "big.yaml"]);
}

/// Rules real projects' CRDs carry (Gateway API, Istio): a rule over an unbounded map's keys is
/// within the cost budget (keys are estimated as upstream estimates them), and `all()` decides
/// on a false element even when another element's evaluation fails (`x.a` of an item without
/// `a`), whatever their order, as cel-go's comprehension does.
#[test]
fn rules_of_real_projects_crds_through_kubectl() {
    let s = TestServer::start();
    let schema = "type: object
properties:
  spec:
    type: object
    x-kubernetes-validations:
    - rule: \"self.labels.all(k, k.startsWith('a'))\"
      message: label keys start with a
    - rule: \"self.items.all(x, x.a > 0)\"
      message: every a is positive
    properties:
      labels: {type: object, additionalProperties: {type: string}}
      items:
        type: array
        maxItems: 10
        items: {type: object, properties: {a: {type: integer}}}
";
    s.apply_crd("crd.yaml", &widgets_yaml(schema), "widgets.example.com");
    let widget = |labels: &str, items: &str| {
        format!(
            "apiVersion: example.com/v1\nkind: Widget\nmetadata: {{name: w}}\nspec:\n  labels: {labels}\n  items: {items}\n"
        )
    };
    for items in ["[{}, {a: -1}]", "[{a: -1}, {}]"] {
        s.write("w.yaml", &widget("{ab: x}", items));
        let out = s.kubectl(&["apply", "-f", "w.yaml"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(
                "The Widget \"w\" is invalid: spec: Invalid value: \"object\": every a is positive"
            ),
            "{items}: {err}"
        );
    }
    s.write("w.yaml", &widget("{ab: x, bc: z}", "[{a: 1}]"));
    let out = s.kubectl(&["apply", "-f", "w.yaml"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("spec: Invalid value: \"object\": label keys start with a"),
        "{err}"
    );
    s.write("w.yaml", &widget("{ab: x}", "[{a: 1}]"));
    assert_eq!(
        s.kubectl_ok(&["apply", "-f", "w.yaml"]).trim(),
        "widget.example.com/w created"
    );
}
