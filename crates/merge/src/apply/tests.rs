//! Data-driven tests: SMD's merge scenarios (leaf, set, associative list, nested, multiple
//! appliers, atomic, deduced), the `fieldsV1` encoding, and the field manager as kube-apiserver
//! runs it (managed-fields entries, conflicts, reset, caps).

use serde_json::{Value, json};

use super::manager::apply_sets;
use super::typed;
use super::*;

/// Parses an indented YAML literal; blank is the empty object.
fn y(s: &str) -> Value {
    let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return json!({});
    }
    let indent = lines
        .iter()
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut text = String::new();
    for l in &lines {
        text.push_str(&l[indent..]);
        text.push('\n');
    }
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("bad YAML {text}: {e}"))
}

enum Op {
    Apply(&'static str, &'static str, &'static str),
    ForceApply(&'static str, &'static str, &'static str),
    Conflicts(
        &'static str,
        &'static str,
        &'static str,
        &'static [(&'static str, &'static str)],
    ),
    Update(&'static str, &'static str, &'static str),
}

struct Case {
    name: &'static str,
    schema: &'static str,
    ops: &'static [Op],
    object: &'static str,
    /// Manager name → fieldsV1 JSON.
    managed: &'static [(&'static str, &'static str)],
}

const LEAF: &str = r"
  type: object
  properties:
    numeric: {type: integer}
    string: {type: string}
    bool: {type: boolean}
";

const SET: &str = r"
  type: object
  properties:
    list:
      type: array
      x-kubernetes-list-type: set
      items: {type: string}
";

const ASSOC: &str = r"
  type: object
  properties:
    list:
      type: array
      x-kubernetes-list-type: map
      x-kubernetes-list-map-keys: [name]
      items:
        type: object
        properties:
          name: {type: string}
          value: {type: integer}
";

const NESTED: &str = r"
  type: object
  properties:
    listOfLists:
      type: array
      x-kubernetes-list-type: map
      x-kubernetes-list-map-keys: [name]
      items:
        type: object
        properties:
          name: {type: string}
          value:
            type: array
            x-kubernetes-list-type: set
            items: {type: string}
";

const STRUCT: &str = r"
  type: object
  properties:
    struct:
      type: object
      properties:
        name: {type: string}
        scalarField: {type: string}
        complexField:
          type: object
          properties:
            name: {type: string}
";

const ATOMIC: &str = r"
  type: object
  properties:
    atomicList:
      type: array
      items: {type: string}
    atomicMap:
      type: object
      x-kubernetes-map-type: atomic
      properties:
        a: {type: string}
        b: {type: string}
    granularMap:
      type: object
      additionalProperties: {type: string}
";

const PRESERVE: &str = r"
  type: object
  properties:
    spec:
      type: object
      x-kubernetes-preserve-unknown-fields: true
      properties:
        known: {type: string}
";

const MULTIKEY: &str = r"
  type: object
  properties:
    ports:
      type: array
      x-kubernetes-list-type: map
      x-kubernetes-list-map-keys: [port, protocol]
      items:
        type: object
        properties:
          port: {type: integer}
          protocol: {type: string, default: TCP}
          name: {type: string}
";

const PATCH_STRATEGY: &str = r"
  type: object
  properties:
    containers:
      type: array
      x-kubernetes-patch-strategy: merge
      x-kubernetes-patch-merge-key: name
      items:
        type: object
        properties:
          name: {type: string}
          image: {type: string}
          args: {type: array, items: {type: string}}
    finalizers:
      type: array
      x-kubernetes-patch-strategy: merge
      items: {type: string}
";

#[allow(clippy::too_many_lines)]
fn cases() -> Vec<Case> {
    use Op::{Apply, Conflicts, ForceApply, Update};
    vec![
        // ---- leaf_test.go ----
        Case {
            name: "leaf/apply_twice",
            schema: LEAF,
            ops: &[
                Apply("default", "v1", "numeric: 1\nstring: string"),
                Apply("default", "v1", "numeric: 2\nstring: string\nbool: false"),
            ],
            object: "numeric: 2\nstring: string\nbool: false",
            managed: &[("default", r#"{"f:bool":{},"f:numeric":{},"f:string":{}}"#)],
        },
        Case {
            name: "leaf/apply_update_apply_no_conflict",
            schema: LEAF,
            ops: &[
                Apply("default", "v1", "numeric: 1\nstring: string"),
                Update("controller", "v1", "numeric: 1\nstring: string\nbool: true"),
                Apply("default", "v1", "numeric: 2\nstring: string"),
            ],
            object: "numeric: 2\nstring: string\nbool: true",
            managed: &[
                ("default", r#"{"f:numeric":{},"f:string":{}}"#),
                ("controller", r#"{"f:bool":{}}"#),
            ],
        },
        Case {
            name: "leaf/apply_update_apply_with_conflict_then_force",
            schema: LEAF,
            ops: &[
                Apply("default", "v1", "numeric: 1\nstring: string"),
                Update(
                    "controller",
                    "v1",
                    "numeric: 1\nstring: controller string\nbool: true",
                ),
                Conflicts(
                    "default",
                    "v1",
                    "numeric: 2\nstring: user string",
                    &[("controller", ".string")],
                ),
                ForceApply("default", "v1", "numeric: 2\nstring: user string"),
            ],
            object: "numeric: 2\nstring: user string\nbool: true",
            managed: &[
                ("default", r#"{"f:numeric":{},"f:string":{}}"#),
                ("controller", r#"{"f:bool":{}}"#),
            ],
        },
        Case {
            name: "leaf/apply_twice_remove",
            schema: LEAF,
            ops: &[
                Apply("default", "v1", "numeric: 1\nstring: string\nbool: false"),
                Apply("default", "v1", "string: new string"),
            ],
            object: "string: new string",
            managed: &[("default", r#"{"f:string":{}}"#)],
        },
        Case {
            name: "leaf/update_apply_omits",
            schema: LEAF,
            ops: &[
                Apply("default", "v1", "numeric: 2"),
                Update("controller", "v1", "numeric: 1"),
                Apply("default", "v1", ""),
            ],
            object: "numeric: 1",
            managed: &[("controller", r#"{"f:numeric":{}}"#)],
        },
        Case {
            name: "leaf/update_remove_empty_set",
            schema: LEAF,
            ops: &[
                Apply("default", "v1", "string: string"),
                Update("controller", "v1", "string: new string"),
            ],
            object: "string: new string",
            managed: &[("controller", r#"{"f:string":{}}"#)],
        },
        Case {
            name: "leaf/apply_remove_empty_set",
            schema: LEAF,
            ops: &[
                Apply("default", "v1", "string: string"),
                Apply("default", "v1", ""),
            ],
            object: "",
            managed: &[],
        },
        Case {
            name: "leaf/apply_twice_different_versions",
            schema: LEAF,
            ops: &[
                Apply("default", "v1", "numeric: 1\nstring: string"),
                Apply("default", "v2", "numeric: 2\nstring: string\nbool: false"),
            ],
            object: "numeric: 2\nstring: string\nbool: false",
            managed: &[("default", r#"{"f:bool":{},"f:numeric":{},"f:string":{}}"#)],
        },
        Case {
            name: "leaf/same_value_shared_no_conflict",
            schema: LEAF,
            ops: &[
                Update("controller", "v1", "numeric: 1\nstring: a"),
                Apply("default", "v1", "string: a"),
            ],
            object: "numeric: 1\nstring: a",
            managed: &[
                ("default", r#"{"f:string":{}}"#),
                ("controller", r#"{"f:numeric":{},"f:string":{}}"#),
            ],
        },
        Case {
            name: "leaf/update_removes_field_from_applier",
            schema: LEAF,
            ops: &[
                Apply("default", "v1", "numeric: 1\nstring: a"),
                Update("controller", "v1", "numeric: 1"),
            ],
            object: "numeric: 1",
            managed: &[("default", r#"{"f:numeric":{}}"#)],
        },
        // ---- set_test.go ----
        Case {
            name: "set/apply_twice",
            schema: SET,
            ops: &[
                Apply("default", "v1", "list: [a, c]"),
                Apply("default", "v1", "list: [a, b, c, d]"),
            ],
            object: "list: [a, b, c, d]",
            managed: &[(
                "default",
                r#"{"f:list":{"v:\"a\"":{},"v:\"b\"":{},"v:\"c\"":{},"v:\"d\"":{}}}"#,
            )],
        },
        Case {
            name: "set/apply_update_apply_no_overlap",
            schema: SET,
            ops: &[
                Apply("default", "v1", "list: [a, c]"),
                Update("controller", "v1", "list: [a, b, c, d]"),
                Apply("default", "v1", "list: [a, aprime, c, cprime]"),
            ],
            // SMD's merge.go order; upstream's own test compares ignoring set order.
            object: "list: [a, b, aprime, c, d, cprime]",
            managed: &[
                (
                    "default",
                    r#"{"f:list":{"v:\"a\"":{},"v:\"aprime\"":{},"v:\"c\"":{},"v:\"cprime\"":{}}}"#,
                ),
                ("controller", r#"{"f:list":{"v:\"b\"":{},"v:\"d\"":{}}}"#),
            ],
        },
        Case {
            name: "set/apply_update_apply_with_overlap",
            schema: SET,
            ops: &[
                Apply("default", "v1", "list: [a, c]"),
                Update("controller", "v1", "list: [a, b, c, d]"),
                Apply("default", "v1", "list: [a, b, c]"),
            ],
            object: "list: [a, b, c, d]",
            managed: &[
                (
                    "default",
                    r#"{"f:list":{"v:\"a\"":{},"v:\"b\"":{},"v:\"c\"":{}}}"#,
                ),
                ("controller", r#"{"f:list":{"v:\"b\"":{},"v:\"d\"":{}}}"#),
            ],
        },
        Case {
            name: "set/apply_twice_reorder",
            schema: SET,
            ops: &[
                Apply("default", "v1", "list: [a, b, c, d]"),
                Apply("default", "v1", "list: [a, d, c, b]"),
            ],
            object: "list: [a, d, c, b]",
            managed: &[(
                "default",
                r#"{"f:list":{"v:\"a\"":{},"v:\"b\"":{},"v:\"c\"":{},"v:\"d\"":{}}}"#,
            )],
        },
        Case {
            name: "set/apply_update_apply_reorder",
            schema: SET,
            ops: &[
                Apply("default", "v1", "list: [a, b, c, d]"),
                Update("controller", "v1", "list: [a, d, c, b]"),
                Apply("default", "v1", "list: [a, b, c, d]"),
            ],
            object: "list: [a, b, c, d]",
            managed: &[(
                "default",
                r#"{"f:list":{"v:\"a\"":{},"v:\"b\"":{},"v:\"c\"":{},"v:\"d\"":{}}}"#,
            )],
        },
        Case {
            name: "set/apply_twice_remove",
            schema: SET,
            ops: &[
                Apply("default", "v1", "list: [a, b, c, d]"),
                Apply("default", "v1", "list: [a, c]"),
            ],
            object: "list: [a, c]",
            managed: &[("default", r#"{"f:list":{"v:\"a\"":{},"v:\"c\"":{}}}"#)],
        },
        Case {
            name: "set/interleaved_order",
            schema: SET,
            ops: &[
                Update("controller", "v1", "list: [x, a, w, b]"),
                Apply("default", "v1", "list: [b, z, a]"),
            ],
            object: "list: [x, w, b, z, a]",
            managed: &[
                (
                    "default",
                    r#"{"f:list":{"v:\"a\"":{},"v:\"b\"":{},"v:\"z\"":{}}}"#,
                ),
                (
                    "controller",
                    r#"{"f:list":{".":{},"v:\"a\"":{},"v:\"b\"":{},"v:\"w\"":{},"v:\"x\"":{}}}"#,
                ),
            ],
        },
        // ---- multiple_appliers_test.go: associative lists ----
        Case {
            name: "multiple_appliers/remove_one",
            schema: ASSOC,
            ops: &[
                Apply("apply-one", "v1", "list:\n- name: a\n- name: b"),
                Apply("apply-two", "v2", "list:\n- name: c"),
                Apply("apply-one", "v3", "list:\n- name: a"),
            ],
            object: "list:\n- name: a\n- name: c",
            managed: &[
                (
                    "apply-one",
                    r#"{"f:list":{"k:{\"name\":\"a\"}":{".":{},"f:name":{}}}}"#,
                ),
                (
                    "apply-two",
                    r#"{"f:list":{"k:{\"name\":\"c\"}":{".":{},"f:name":{}}}}"#,
                ),
            ],
        },
        Case {
            name: "multiple_appliers/same_value_no_conflict",
            schema: ASSOC,
            ops: &[
                Apply("apply-one", "v1", "list:\n- name: a\n  value: 0"),
                Apply("apply-two", "v2", "list:\n- name: a\n  value: 0"),
            ],
            object: "list:\n- name: a\n  value: 0",
            managed: &[
                (
                    "apply-one",
                    r#"{"f:list":{"k:{\"name\":\"a\"}":{".":{},"f:name":{},"f:value":{}}}}"#,
                ),
                (
                    "apply-two",
                    r#"{"f:list":{"k:{\"name\":\"a\"}":{".":{},"f:name":{},"f:value":{}}}}"#,
                ),
            ],
        },
        Case {
            name: "multiple_appliers/change_value_yes_conflict",
            schema: ASSOC,
            ops: &[
                Apply("apply-one", "v1", "list:\n- name: a\n  value: 0"),
                Conflicts(
                    "apply-two",
                    "v2",
                    "list:\n- name: a\n  value: 1",
                    &[("apply-one", r#".list[name="a"].value"#)],
                ),
            ],
            object: "list:\n- name: a\n  value: 0",
            managed: &[(
                "apply-one",
                r#"{"f:list":{"k:{\"name\":\"a\"}":{".":{},"f:name":{},"f:value":{}}}}"#,
            )],
        },
        Case {
            name: "multiple_appliers/remove_one_keep_one",
            schema: ASSOC,
            ops: &[
                Apply("apply-one", "v1", "list:\n- name: a\n- name: b\n- name: c"),
                Apply("apply-two", "v2", "list:\n- name: c\n- name: d"),
                Apply("apply-one", "v3", "list:\n- name: a"),
            ],
            object: "list:\n- name: a\n- name: c\n- name: d",
            managed: &[
                (
                    "apply-one",
                    r#"{"f:list":{"k:{\"name\":\"a\"}":{".":{},"f:name":{}}}}"#,
                ),
                (
                    "apply-two",
                    r#"{"f:list":{"k:{\"name\":\"c\"}":{".":{},"f:name":{}},"k:{\"name\":\"d\"}":{".":{},"f:name":{}}}}"#,
                ),
            ],
        },
        Case {
            name: "multiple_appliers/force_takes_ownership",
            schema: ASSOC,
            ops: &[
                Apply("apply-one", "v1", "list:\n- name: a\n  value: 0"),
                ForceApply("apply-two", "v1", "list:\n- name: a\n  value: 1"),
            ],
            object: "list:\n- name: a\n  value: 1",
            managed: &[
                (
                    "apply-one",
                    r#"{"f:list":{"k:{\"name\":\"a\"}":{".":{},"f:name":{}}}}"#,
                ),
                (
                    "apply-two",
                    r#"{"f:list":{"k:{\"name\":\"a\"}":{".":{},"f:name":{},"f:value":{}}}}"#,
                ),
            ],
        },
        // ---- multiple_appliers_test.go: field unsetting ----
        Case {
            name: "field_unsetting/unset_scalar_sole_owner",
            schema: STRUCT,
            ops: &[
                Apply("apply-one", "v1", "struct:\n  name: a\n  scalarField: a"),
                Apply("apply-one", "v2", "struct:\n  name: a"),
            ],
            object: "struct:\n  name: a",
            managed: &[("apply-one", r#"{"f:struct":{"f:name":{}}}"#)],
        },
        Case {
            name: "field_unsetting/unset_scalar_shared_with_applier",
            schema: STRUCT,
            ops: &[
                Apply("apply-one", "v1", "struct:\n  name: a\n  scalarField: a"),
                Apply("apply-two", "v2", "struct:\n  scalarField: a"),
                Apply("apply-one", "v3", "struct:\n  name: a"),
            ],
            object: "struct:\n  name: a\n  scalarField: a",
            managed: &[
                ("apply-one", r#"{"f:struct":{"f:name":{}}}"#),
                ("apply-two", r#"{"f:struct":{"f:scalarField":{}}}"#),
            ],
        },
        Case {
            name: "field_unsetting/unset_scalar_shared_with_updater",
            schema: STRUCT,
            ops: &[
                Update("updater", "v1", "struct:\n  name: a\n  scalarField: a"),
                Apply("applier", "v2", "struct:\n  name: a\n  scalarField: a"),
                Apply("applier", "v3", "struct:\n  name: a"),
            ],
            object: "struct:\n  name: a\n  scalarField: a",
            managed: &[
                (
                    "updater",
                    r#"{"f:struct":{".":{},"f:name":{},"f:scalarField":{}}}"#,
                ),
                ("applier", r#"{"f:struct":{"f:name":{}}}"#),
            ],
        },
        Case {
            name: "field_unsetting/updater_claims_field",
            schema: STRUCT,
            ops: &[
                Apply("applier", "v1", "struct:\n  name: a\n  scalarField: a"),
                Update("updater", "v2", "struct:\n  name: a\n  scalarField: b"),
            ],
            object: "struct:\n  name: a\n  scalarField: b",
            managed: &[
                ("updater", r#"{"f:struct":{"f:scalarField":{}}}"#),
                ("applier", r#"{"f:struct":{"f:name":{}}}"#),
            ],
        },
        Case {
            name: "field_unsetting/unset_complex_sole_owner",
            schema: STRUCT,
            ops: &[
                Apply(
                    "apply-one",
                    "v1",
                    "struct:\n  name: a\n  complexField:\n    name: b",
                ),
                Apply("apply-one", "v2", "struct:\n  name: a"),
            ],
            object: "struct:\n  name: a",
            managed: &[("apply-one", r#"{"f:struct":{"f:name":{}}}"#)],
        },
        Case {
            name: "field_unsetting/unset_complex_shared_with_applier",
            schema: STRUCT,
            ops: &[
                Apply(
                    "apply-one",
                    "v1",
                    "struct:\n  name: a\n  complexField:\n    name: b",
                ),
                Apply("apply-two", "v2", "struct:\n  complexField:\n    name: b"),
                Apply("apply-one", "v3", "struct:\n  name: a"),
            ],
            object: "struct:\n  name: a\n  complexField:\n    name: b",
            managed: &[
                ("apply-one", r#"{"f:struct":{"f:name":{}}}"#),
                (
                    "apply-two",
                    r#"{"f:struct":{"f:complexField":{"f:name":{}}}}"#,
                ),
            ],
        },
        Case {
            name: "field_unsetting/sole_owner_drops_whole_struct",
            schema: STRUCT,
            ops: &[
                Apply(
                    "apply-one",
                    "v1",
                    "struct:\n  name: a\n  complexField:\n    name: b",
                ),
                Apply("apply-one", "v1", ""),
            ],
            object: "",
            managed: &[],
        },
        // ---- multiple_appliers_test.go: nested types ----
        Case {
            name: "nested/remove_one_keep_one_with_two_sub_items",
            schema: NESTED,
            ops: &[
                Apply(
                    "apply-one",
                    "v1",
                    "listOfLists:\n- name: a\n- name: b\n  value: [c]",
                ),
                Apply("apply-two", "v2", "listOfLists:\n- name: b\n  value: [d]"),
                Apply("apply-one", "v3", "listOfLists:\n- name: a"),
            ],
            object: "listOfLists:\n- name: a\n- name: b\n  value: [d]",
            managed: &[
                (
                    "apply-one",
                    r#"{"f:listOfLists":{"k:{\"name\":\"a\"}":{".":{},"f:name":{}}}}"#,
                ),
                (
                    "apply-two",
                    r#"{"f:listOfLists":{"k:{\"name\":\"b\"}":{".":{},"f:name":{},"f:value":{"v:\"d\"":{}}}}}"#,
                ),
            ],
        },
        Case {
            name: "nested/remove_one_keep_one_with_dangling_subitem",
            schema: NESTED,
            ops: &[
                Apply(
                    "apply-one",
                    "v1",
                    "listOfLists:\n- name: a\n- name: b\n  value: [c]",
                ),
                Apply("apply-two", "v2", "listOfLists:\n- name: b\n  value: [d]"),
                Update(
                    "controller",
                    "v2",
                    "listOfLists:\n- name: a\n- name: b\n  value: [c, d, e]",
                ),
                Apply("apply-one", "v3", "listOfLists:\n- name: a"),
            ],
            object: "listOfLists:\n- name: a\n- name: b\n  value: [d, e]",
            managed: &[
                (
                    "apply-one",
                    r#"{"f:listOfLists":{"k:{\"name\":\"a\"}":{".":{},"f:name":{}}}}"#,
                ),
                (
                    "apply-two",
                    r#"{"f:listOfLists":{"k:{\"name\":\"b\"}":{".":{},"f:name":{},"f:value":{"v:\"d\"":{}}}}}"#,
                ),
                (
                    "controller",
                    r#"{"f:listOfLists":{"k:{\"name\":\"b\"}":{"f:value":{"v:\"e\"":{}}}}}"#,
                ),
            ],
        },
        Case {
            name: "nested/remove_one_with_dangling_subitem_keep_one",
            schema: NESTED,
            ops: &[
                Apply(
                    "apply-one",
                    "v1",
                    "listOfLists:\n- name: a\n- name: b\n  value: [c]",
                ),
                Apply("apply-two", "v2", "listOfLists:\n- name: a\n  value: [b]"),
                Update(
                    "controller",
                    "v2",
                    "listOfLists:\n- name: a\n  value: [b]\n- name: b\n  value: [c, d]",
                ),
                Apply("apply-one", "v3", "listOfLists:\n- name: a"),
            ],
            object: "listOfLists:\n- name: a\n  value: [b]",
            managed: &[
                (
                    "apply-one",
                    r#"{"f:listOfLists":{"k:{\"name\":\"a\"}":{".":{},"f:name":{}}}}"#,
                ),
                (
                    "apply-two",
                    r#"{"f:listOfLists":{"k:{\"name\":\"a\"}":{".":{},"f:name":{},"f:value":{"v:\"b\"":{}}}}}"#,
                ),
            ],
        },
        // ---- atomic lists and maps ----
        Case {
            name: "atomic/list_owned_whole_conflict",
            schema: ATOMIC,
            ops: &[
                Apply("one", "v1", "atomicList: [a, b]"),
                Conflicts("two", "v1", "atomicList: [a, c]", &[("one", ".atomicList")]),
                ForceApply("two", "v1", "atomicList: [c]"),
            ],
            object: "atomicList: [c]",
            managed: &[("two", r#"{"f:atomicList":{}}"#)],
        },
        Case {
            name: "atomic/list_same_value_shared",
            schema: ATOMIC,
            ops: &[
                Apply("one", "v1", "atomicList: [a, b]"),
                Apply("two", "v1", "atomicList: [a, b]"),
            ],
            object: "atomicList: [a, b]",
            managed: &[
                ("one", r#"{"f:atomicList":{}}"#),
                ("two", r#"{"f:atomicList":{}}"#),
            ],
        },
        Case {
            name: "atomic/map_replaced_whole",
            schema: ATOMIC,
            ops: &[
                Apply("one", "v1", "atomicMap: {a: x, b: y}"),
                Apply("one", "v1", "atomicMap: {a: z}"),
            ],
            object: "atomicMap: {a: z}",
            managed: &[("one", r#"{"f:atomicMap":{}}"#)],
        },
        Case {
            name: "atomic/granular_map_entries",
            schema: ATOMIC,
            ops: &[
                Apply("one", "v1", "granularMap: {a: x}"),
                Apply("two", "v1", "granularMap: {b: y}"),
                Apply("one", "v1", "granularMap: {c: z}"),
            ],
            object: "granularMap: {b: y, c: z}",
            managed: &[
                ("one", r#"{"f:granularMap":{"f:c":{}}}"#),
                ("two", r#"{"f:granularMap":{"f:b":{}}}"#),
            ],
        },
        Case {
            name: "atomic/update_of_atomic_list_owns_it",
            schema: ATOMIC,
            ops: &[
                Apply("one", "v1", "atomicList: [a]"),
                Update("ctl", "v1", "atomicList: [a, b]"),
            ],
            object: "atomicList: [a, b]",
            managed: &[("ctl", r#"{"f:atomicList":{}}"#)],
        },
        // ---- deduced (x-kubernetes-preserve-unknown-fields) ----
        Case {
            name: "deduced/maps_granular_lists_atomic",
            schema: PRESERVE,
            ops: &[
                Apply(
                    "one",
                    "v1",
                    "spec:\n  known: k\n  extra:\n    a: 1\n  list: [1, 2]",
                ),
                Apply("two", "v1", "spec:\n  extra:\n    b: 2"),
            ],
            object: "spec:\n  known: k\n  extra: {a: 1, b: 2}\n  list: [1, 2]",
            managed: &[
                (
                    "one",
                    r#"{"f:spec":{"f:extra":{".":{},"f:a":{}},"f:known":{},"f:list":{}}}"#,
                ),
                ("two", r#"{"f:spec":{"f:extra":{".":{},"f:b":{}}}}"#),
            ],
        },
        Case {
            name: "deduced/type_change_is_a_leaf_change",
            schema: PRESERVE,
            ops: &[
                Apply("one", "v1", "spec:\n  extra:\n    a: 1"),
                Conflicts("two", "v1", "spec:\n  extra: 5", &[("one", ".spec.extra")]),
                ForceApply("two", "v1", "spec:\n  extra: 5"),
            ],
            object: "spec:\n  extra: 5",
            managed: &[("two", r#"{"f:spec":{"f:extra":{}}}"#)],
        },
        // ---- multiple keys and key defaults (key_test.go) ----
        Case {
            name: "keys/multiple_keys_with_default",
            schema: MULTIKEY,
            ops: &[
                Apply(
                    "one",
                    "v1",
                    "ports:\n- port: 80\n  name: http\n- port: 53\n  protocol: UDP",
                ),
                Apply(
                    "two",
                    "v1",
                    "ports:\n- port: 53\n  protocol: TCP\n  name: dns",
                ),
            ],
            object: "ports:\n- port: 80\n  name: http\n- port: 53\n  protocol: UDP\n- port: 53\n  protocol: TCP\n  name: dns",
            managed: &[
                (
                    "one",
                    r#"{"f:ports":{"k:{\"port\":53,\"protocol\":\"UDP\"}":{".":{},"f:port":{},"f:protocol":{}},"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{}}}}"#,
                ),
                (
                    "two",
                    r#"{"f:ports":{"k:{\"port\":53,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{},"f:protocol":{}}}}"#,
                ),
            ],
        },
        Case {
            name: "keys/conflict_path_prints_keys",
            schema: MULTIKEY,
            ops: &[
                Apply("one", "v1", "ports:\n- port: 80\n  name: http"),
                Conflicts(
                    "two",
                    "v1",
                    "ports:\n- port: 80\n  name: web",
                    &[("one", r#".ports[port=80,protocol="TCP"].name"#)],
                ),
            ],
            object: "ports:\n- port: 80\n  name: http",
            managed: &[(
                "one",
                r#"{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{}}}}"#,
            )],
        },
        // ---- built-in patch strategies ----
        Case {
            name: "patch_strategy/merge_key_is_list_map",
            schema: PATCH_STRATEGY,
            ops: &[
                Apply(
                    "one",
                    "v1",
                    "containers:\n- name: a\n  image: x\n  args: [p]",
                ),
                Apply("two", "v1", "containers:\n- name: b\n  image: y"),
                Conflicts(
                    "two",
                    "v1",
                    "containers:\n- name: a\n  image: z",
                    &[("one", r#".containers[name="a"].image"#)],
                ),
            ],
            object: "containers:\n- name: a\n  image: x\n  args: [p]\n- name: b\n  image: y",
            managed: &[
                (
                    "one",
                    r#"{"f:containers":{"k:{\"name\":\"a\"}":{".":{},"f:args":{},"f:image":{},"f:name":{}}}}"#,
                ),
                (
                    "two",
                    r#"{"f:containers":{"k:{\"name\":\"b\"}":{".":{},"f:image":{},"f:name":{}}}}"#,
                ),
            ],
        },
        Case {
            name: "patch_strategy/merge_scalars_are_a_set",
            schema: PATCH_STRATEGY,
            ops: &[
                Apply("one", "v1", "finalizers: [a]"),
                Apply("two", "v1", "finalizers: [b]"),
            ],
            object: "finalizers: [a, b]",
            managed: &[
                ("one", r#"{"f:finalizers":{"v:\"a\"":{}}}"#),
                ("two", r#"{"f:finalizers":{"v:\"b\"":{}}}"#),
            ],
        },
        // ---- empty, null and absent ----
        Case {
            name: "empty/applied_empty_list_is_kept_but_not_owned",
            schema: SET,
            ops: &[Apply("one", "v1", "list: []")],
            object: "list: []",
            managed: &[],
        },
        Case {
            name: "empty/applied_empty_map_keeps_live_entries",
            schema: ATOMIC,
            ops: &[
                Update("ctl", "v1", "granularMap: {a: x}"),
                Apply("one", "v1", "granularMap: {}"),
            ],
            object: "granularMap: {a: x}",
            managed: &[("ctl", r#"{"f:granularMap":{".":{},"f:a":{}}}"#)],
        },
        Case {
            name: "null/applied_null_scalar_is_owned",
            schema: LEAF,
            ops: &[Apply("one", "v1", "string: null")],
            object: "string: null",
            managed: &[("one", r#"{"f:string":{}}"#)],
        },
        // ---- more ownership transfers ----
        Case {
            name: "set/drop_whole_list_other_owns_item",
            schema: SET,
            ops: &[
                Apply("one", "v1", "list: [a, b]"),
                Apply("two", "v1", "list: [b]"),
                Apply("one", "v1", ""),
            ],
            object: "list: [b]",
            managed: &[("two", r#"{"f:list":{"v:\"b\"":{}}}"#)],
        },
        Case {
            name: "atomic/updater_takes_atomic_map_from_applier",
            schema: ATOMIC,
            ops: &[
                Apply("one", "v1", "atomicMap: {a: x}"),
                Update("ctl", "v1", "atomicMap: {a: z}"),
            ],
            object: "atomicMap: {a: z}",
            managed: &[("ctl", r#"{"f:atomicMap":{}}"#)],
        },
        Case {
            name: "nested/inner_set_items_per_applier",
            schema: NESTED,
            ops: &[
                Apply("one", "v1", "listOfLists:\n- name: a\n  value: [x]"),
                Apply("two", "v1", "listOfLists:\n- name: a\n  value: [z]"),
            ],
            object: "listOfLists:\n- name: a\n  value: [x, z]",
            managed: &[
                (
                    "one",
                    r#"{"f:listOfLists":{"k:{\"name\":\"a\"}":{".":{},"f:name":{},"f:value":{"v:\"x\"":{}}}}}"#,
                ),
                (
                    "two",
                    r#"{"f:listOfLists":{"k:{\"name\":\"a\"}":{".":{},"f:name":{},"f:value":{"v:\"z\"":{}}}}}"#,
                ),
            ],
        },
        Case {
            name: "deduced/lists_are_atomic",
            schema: PRESERVE,
            ops: &[
                Apply("one", "v1", "spec:\n  list: [1, 2]"),
                Conflicts(
                    "two",
                    "v1",
                    "spec:\n  list: [1, 2, 3]",
                    &[("one", ".spec.list")],
                ),
            ],
            object: "spec:\n  list: [1, 2]",
            managed: &[("one", r#"{"f:spec":{"f:list":{}}}"#)],
        },
        Case {
            name: "leaf/force_takes_from_updater_and_applier",
            schema: LEAF,
            ops: &[
                Update("ctl", "v1", "numeric: 1"),
                Apply("one", "v1", "numeric: 1"),
                Conflicts(
                    "two",
                    "v1",
                    "numeric: 2",
                    &[("ctl", ".numeric"), ("one", ".numeric")],
                ),
                ForceApply("two", "v1", "numeric: 2"),
            ],
            object: "numeric: 2",
            managed: &[("two", r#"{"f:numeric":{}}"#)],
        },
        Case {
            name: "struct/update_removing_subtree_drops_it_from_applier",
            schema: STRUCT,
            ops: &[
                Apply(
                    "one",
                    "v1",
                    "struct:\n  name: a\n  complexField:\n    name: b",
                ),
                Update("ctl", "v1", "struct:\n  name: a"),
            ],
            object: "struct:\n  name: a",
            managed: &[("one", r#"{"f:struct":{"f:name":{}}}"#)],
        },
        // ---- a granular map or struct emptied by others stays owned as the field alone ----
        // (no atomic-to-granular expansion on later writes: structured-merge-diff#192)
        Case {
            name: "update/emptied_granular_map_is_not_regained",
            schema: ATOMIC,
            ops: &[
                Update("csa", "v1", "granularMap: {a: '1', b: '2'}"),
                Update("b", "v1", "granularMap: {a: '9', b: '9'}"),
                Update("c", "v1", "granularMap: {a: '9', b: '9'}\natomicList: [x]"),
            ],
            object: "granularMap: {a: '9', b: '9'}\natomicList: [x]",
            managed: &[
                ("csa", r#"{"f:granularMap":{}}"#),
                ("b", r#"{"f:granularMap":{"f:a":{},"f:b":{}}}"#),
                ("c", r#"{"f:atomicList":{}}"#),
            ],
        },
        Case {
            name: "update/emptied_struct_is_not_regained",
            schema: STRUCT,
            ops: &[
                Update("one", "v1", "struct: {name: a}"),
                Update("two", "v1", "struct: {name: b}"),
                Update("three", "v1", "struct: {name: b, scalarField: x}"),
                Apply("four", "v1", "struct: {complexField: {name: c}}"),
            ],
            object: "struct: {name: b, scalarField: x, complexField: {name: c}}",
            managed: &[
                ("one", r#"{"f:struct":{}}"#),
                ("two", r#"{"f:struct":{"f:name":{}}}"#),
                ("three", r#"{"f:struct":{"f:scalarField":{}}}"#),
                ("four", r#"{"f:struct":{"f:complexField":{"f:name":{}}}}"#),
            ],
        },
        // ---- metadata typed as ObjectMeta ----
        Case {
            name: "metadata/labels_granular_finalizers_set",
            schema: LEAF,
            ops: &[
                Apply(
                    "one",
                    "v1",
                    "metadata:\n  labels: {a: '1'}\n  finalizers: [x]",
                ),
                Apply(
                    "two",
                    "v1",
                    "metadata:\n  labels: {b: '2'}\n  finalizers: [f]",
                ),
                Apply("one", "v1", "metadata:\n  labels: {c: '3'}"),
            ],
            object: "metadata:\n  labels: {b: '2', c: '3'}\n  finalizers: [f]",
            managed: &[
                ("one", r#"{"f:metadata":{"f:labels":{"f:c":{}}}}"#),
                (
                    "two",
                    r#"{"f:metadata":{"f:finalizers":{"v:\"f\"":{}},"f:labels":{"f:b":{}}}}"#,
                ),
            ],
        },
        Case {
            name: "metadata/owner_references_keyed_by_uid",
            schema: LEAF,
            ops: &[
                Apply(
                    "one",
                    "v1",
                    "metadata:\n  ownerReferences:\n  - {uid: u1, name: a, kind: K, apiVersion: v1}",
                ),
                Apply(
                    "two",
                    "v1",
                    "metadata:\n  ownerReferences:\n  - {uid: u2, name: b, kind: K, apiVersion: v1}",
                ),
            ],
            object: "metadata:\n  ownerReferences:\n  - {uid: u1, name: a, kind: K, apiVersion: v1}\n  - {uid: u2, name: b, kind: K, apiVersion: v1}",
            managed: &[
                (
                    "one",
                    r#"{"f:metadata":{"f:ownerReferences":{"k:{\"uid\":\"u1\"}":{".":{},"f:apiVersion":{},"f:kind":{},"f:name":{},"f:uid":{}}}}}"#,
                ),
                (
                    "two",
                    r#"{"f:metadata":{"f:ownerReferences":{"k:{\"uid\":\"u2\"}":{".":{},"f:apiVersion":{},"f:kind":{},"f:name":{},"f:uid":{}}}}}"#,
                ),
            ],
        },
    ]
}

#[allow(clippy::many_single_char_names)]
fn run_case(c: &Case) {
    let schema = Schema::from_json_schema(&y(c.schema));
    let mut live = json!({});
    let mut managed = ManagedFields::default();
    for (i, op) in c.ops.iter().enumerate() {
        let (mgr, ver, obj, force, want) = match op {
            Op::Apply(m, v, o) => (*m, *v, *o, false, None),
            Op::ForceApply(m, v, o) => (*m, *v, *o, true, None),
            Op::Conflicts(m, v, o, w) => (*m, *v, *o, false, Some(*w)),
            Op::Update(m, v, o) => {
                let new = y(o);
                let id = ManagerId::new(m, Operation::Update, v, "");
                FieldManager::new(&schema, v, "").record_update(
                    &live,
                    &new,
                    &mut managed,
                    id,
                    "2024-01-01T00:00:00Z",
                );
                live = new;
                continue;
            }
        };
        let config = y(obj);
        let merged = typed::merge(&schema, &live, &config).expect("merge");
        let set = typed::to_field_set(&schema, &config).expect("field set");
        let id = ManagerId::new(mgr, Operation::Apply, ver, "");
        let mut next = managed.clone();
        match (
            apply_sets(
                &schema, &live, merged, set, &mut next, &id, ver, force, None,
            ),
            want,
        ) {
            (Ok(out), None) => {
                managed = next;
                if let Some(out) = out {
                    live = out;
                }
            }
            (Err(conflicts), Some(want)) => {
                let got: Vec<(String, String)> = conflicts
                    .0
                    .iter()
                    .map(|c| (c.manager.manager.clone(), c.path.to_string()))
                    .collect();
                let want: Vec<(String, String)> = want
                    .iter()
                    .map(|(m, p)| ((*m).to_owned(), (*p).to_owned()))
                    .collect();
                assert_eq!(got, want, "{}: op {i} conflicts", c.name);
            }
            (Ok(_), Some(want)) => panic!("{}: op {i}: expected conflicts {want:?}", c.name),
            (Err(e), None) => panic!("{}: op {i}: unexpected {e}", c.name),
        }
    }
    assert_eq!(live, y(c.object), "{}: object", c.name);
    let mut got: Vec<(String, FieldSet)> = managed
        .entries
        .iter()
        .map(|(id, e)| (id.manager.clone(), e.set().clone()))
        .collect();
    got.sort_by(|a, b| a.0.cmp(&b.0));
    let mut want: Vec<(String, FieldSet)> = c
        .managed
        .iter()
        .map(|(m, f)| {
            let v: Value = serde_json::from_str(f).expect("fieldsV1 JSON");
            (
                (*m).to_owned(),
                FieldSet::from_fields_v1(&v).expect("fieldsV1"),
            )
        })
        .collect();
    want.sort_by(|a, b| a.0.cmp(&b.0));
    let show = |l: &[(String, FieldSet)]| {
        l.iter()
            .map(|(m, s)| format!("{m}: {}", s.to_fields_v1_string()))
            .collect::<Vec<_>>()
    };
    assert_eq!(show(&got), show(&want), "{}: managed fields", c.name);
}

#[test]
fn merge_scenarios() {
    let cases = cases();
    assert!(cases.len() >= 40, "{} scenarios", cases.len());
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|c| {
            std::panic::catch_unwind(|| run_case(c)).err().map(|e| {
                e.downcast_ref::<String>()
                    .cloned()
                    .unwrap_or_else(|| c.name.to_owned())
            })
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

// ---- fieldsV1 ----

#[test]
fn fields_v1_round_trips() {
    // (input as a client may send it, SMD's exact serialization)
    let cases = [
        (r#"{"f:a":{}}"#, r#"{"f:a":{}}"#),
        (
            r#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:replicas":{}}}"#,
            r#"{"f:metadata":{"f:labels":{"f:app":{},".":{}}},"f:spec":{"f:replicas":{}}}"#,
        ),
        (
            r#"{"f:list":{"v:\"x\"":{},"k:{\"name\":\"a\"}":{".":{},"f:name":{}},"f:z":{},"i:3":{}}}"#,
            r#"{"f:list":{"f:z":{},"k:{\"name\":\"a\"}":{"f:name":{},".":{}},"v:\"x\"":{},"i:3":{}}}"#,
        ),
        (
            r#"{"f:ports":{"k:{\"protocol\":\"TCP\",\"port\":80}":{}}}"#,
            r#"{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{}}}"#,
        ),
        (
            r#"{"f:s":{"v:1":{},"v:\"1\"":{},"v:true":{},"v:null":{}}}"#,
            r#"{"f:s":{"v:1":{},"v:\"1\"":{},"v:true":{},"v:null":{}}}"#,
        ),
        // Unknown path-element types are dropped, as SMD drops them.
        (r#"{"f:a":{},"x:b":{}}"#, r#"{"f:a":{}}"#),
        (r"{}", r"{}"),
    ];
    for (input, want) in cases {
        let v: Value = serde_json::from_str(input).expect("json");
        let set = FieldSet::from_fields_v1(&v).expect(input);
        assert_eq!(set.to_fields_v1_string(), want, "{input}");
        let again = FieldSet::from_fields_v1(&set.to_fields_v1()).expect("re-decode");
        assert_eq!(again, set, "{input}");
        let text: Value = serde_json::from_str(&set.to_fields_v1_string()).expect("json");
        assert_eq!(
            FieldSet::from_fields_v1(&text).expect("text"),
            set,
            "{input}"
        );
    }
}

#[test]
fn fields_v1_paths_print_as_smd() {
    let v: Value = serde_json::from_str(
        r#"{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{"f:image":{}}},"f:list":{"v:\"x\"":{}},"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{}}},"f:atomic":{"i:0":{}}}}"#,
    )
    .expect("json");
    let set = FieldSet::from_fields_v1(&v).expect("decode");
    let paths: Vec<String> = set.paths().iter().map(ToString::to_string).collect();
    assert_eq!(
        paths,
        [
            ".metadata.labels.app",
            ".spec.atomic[0]",
            ".spec.containers[name=\"nginx\"].image",
            ".spec.list[=\"x\"]",
            ".spec.ports[port=80,protocol=\"TCP\"]",
        ]
    );
    assert_eq!(set.len(), 5);
}

#[test]
fn fields_v1_errors() {
    for (input, want) in [
        (
            r#"{"ab":{}}"#,
            "parsing key as path element: missing colon: ab",
        ),
        (
            r#"{"f:a":{"q":{}}}"#,
            "parsing key as path element: key must be 2 characters long:",
        ),
        (
            r#"{"i:x":{}}"#,
            "parsing key as path element: strconv.Atoi: parsing \"x\": invalid syntax",
        ),
        (r#"{"f:a":5}"#, "ReadMapCB: expect { or n, but found 5"),
        ("[]", "ReadMapCB: expect { or n, but found ["),
    ] {
        let v: Value = serde_json::from_str(input).expect("json");
        assert_eq!(
            FieldSet::from_fields_v1(&v).expect_err(input).to_string(),
            want,
            "{input}"
        );
    }
}

#[test]
fn set_operations() {
    let d =
        |s: &str| FieldSet::from_fields_v1(&serde_json::from_str(s).expect("json")).expect("set");
    let a = d(r#"{"f:a":{},"f:b":{"f:c":{},"f:d":{}}}"#);
    let b = d(r#"{"f:b":{".":{},"f:c":{}},"f:e":{}}"#);
    assert_eq!(
        a.union(&b),
        d(r#"{"f:a":{},"f:b":{".":{},"f:c":{},"f:d":{}},"f:e":{}}"#)
    );
    assert_eq!(a.intersection(&b), d(r#"{"f:b":{"f:c":{}}}"#));
    assert_eq!(a.difference(&b), d(r#"{"f:a":{},"f:b":{"f:d":{}}}"#));
    assert_eq!(a.recursive_difference(&b), d(r#"{"f:a":{}}"#));
    assert!(a.difference(&a).is_empty());
}

// ---- managedFields entries ----

#[test]
fn managed_fields_decode_errors() {
    for (input, want) in [
        (
            r#"[{"manager":"m","operation":"Patch","apiVersion":"v1","fieldsType":"FieldsV1"}]"#,
            "operation must be `Apply` or `Update`",
        ),
        (
            r#"[{"manager":"m","operation":"Apply","fieldsType":"FieldsV1"}]"#,
            "apiVersion must not be empty",
        ),
        (
            r#"[{"manager":"m","operation":"Update","apiVersion":"v1"}]"#,
            "missing fieldsType in managed fields entry 0",
        ),
        (
            r#"[{"manager":"m","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1"},{"manager":"n","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV2"}]"#,
            r#"invalid fieldsType "FieldsV2" in managed fields entry 1"#,
        ),
        (r"[{}]", "operation must be `Apply` or `Update`"),
    ] {
        let v: Value = serde_json::from_str(input).expect("json");
        assert_eq!(
            ManagedFields::decode(Some(&v))
                .expect_err(input)
                .to_string(),
            want,
            "{input}"
        );
    }
    let bad: Value = serde_json::from_str(
        r#"[{"manager":"m","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"nope":{}}}]"#,
    )
    .expect("json");
    let err = ManagedFields::decode(Some(&bad))
        .expect_err("bad fieldsV1")
        .to_string();
    assert!(
        err.starts_with("error decoding versioned set from {m Update v1 nil FieldsV1"),
        "{err}"
    );
    assert!(
        err.ends_with("error decoding set: parsing key as path element: missing colon: nope"),
        "{err}"
    );
}

#[test]
fn managed_fields_validation() {
    let long = "x".repeat(129);
    let v = json!([
        {"manager": "ok", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1"},
        {"manager": long, "operation": "Bad", "fieldsType": "FieldsV2", "subresource": "s".repeat(257)},
        {"manager": "tab\there", "operation": "Apply"},
    ]);
    let got: Vec<(String, ViolationKind)> = validate_managed_fields(&v)
        .into_iter()
        .map(|v| (v.field, v.kind))
        .collect();
    assert_eq!(
        got,
        [
            (
                "metadata.managedFields[1].operation".to_owned(),
                ViolationKind::Invalid("must be `Apply` or `Update`".to_owned())
            ),
            (
                "metadata.managedFields[1].fieldsType".to_owned(),
                ViolationKind::Invalid("must be `FieldsV1`".to_owned())
            ),
            (
                "metadata.managedFields[1].manager".to_owned(),
                ViolationKind::TooLong(128)
            ),
            (
                "metadata.managedFields[1].subresource".to_owned(),
                ViolationKind::TooLong(256)
            ),
            (
                "metadata.managedFields[2].manager".to_owned(),
                ViolationKind::Invalid("invalid character U+0009 (at position 3)".to_owned())
            ),
        ]
    );
}

#[test]
fn managed_fields_encode_order_and_reset() {
    let v = json!([
        {"manager": "b", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1", "time": "2024-01-01T00:00:02Z", "fieldsV1": {"f:b": {}}},
        {"manager": "a", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1", "time": "2024-01-01T01:00:00+01:00", "fieldsV1": {"f:a": {}}},
        {"manager": "z", "operation": "Apply", "apiVersion": "v2", "fieldsType": "FieldsV1", "time": "2024-01-01T00:00:05Z", "fieldsV1": {"f:z": {}}},
        {"manager": "s", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1", "subresource": "status", "fieldsV1": {"f:status": {}}},
    ]);
    let m = ManagedFields::decode(Some(&v)).expect("decode");
    let out = m.encode().expect("entries");
    let order: Vec<(&str, Option<&str>)> = out
        .as_array()
        .expect("list")
        .iter()
        .map(|e| {
            (
                e["manager"].as_str().unwrap_or(""),
                e.get("time").and_then(Value::as_str),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            ("z", Some("2024-01-01T00:00:05Z")),
            ("s", None),
            ("a", Some("2024-01-01T00:00:00Z")),
            ("b", Some("2024-01-01T00:00:02Z")),
        ]
    );
    assert_eq!(out[1]["subresource"], "status");
    // Entries re-encode from their sets unless their fieldsV1 is already canonical.
    let odd = json!([
        {"manager": "m", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:a": {}, "x:b": {}, "f:l": {"k:{\"b\":1,\"a\":2}": {}}, "f:n": null}},
    ]);
    let out = ManagedFields::decode(Some(&odd))
        .expect("decode")
        .encode()
        .expect("entries");
    assert_eq!(
        out[0]["fieldsV1"],
        json!({"f:a": {}, "f:l": {"k:{\"a\":2,\"b\":1}": {}}, "f:n": {}})
    );
    assert_eq!(ManagedFields::default().encode(), None);
    assert!(is_reset(Some(&json!([]))));
    assert!(is_reset(Some(&json!([{}]))));
    assert!(!is_reset(Some(&json!([{"manager": "m"}]))));
    assert!(!is_reset(None));
    assert!(!is_reset(Some(&json!(null))));
}

// ---- the field manager, as kube-apiserver runs it ----

const CRONTAB: &str = r"
  type: object
  properties:
    spec:
      type: object
      properties:
        cronSpec: {type: string}
        image: {type: string}
        replicas: {type: integer}
        ports:
          type: array
          x-kubernetes-list-type: map
          x-kubernetes-list-map-keys: [name]
          items:
            type: object
            properties:
              name: {type: string}
              port: {type: integer}
    status:
      type: object
      properties:
        phase: {type: string}
";

const GV: &str = "stable.example.com/v1";
const T1: &str = "2024-05-01T10:00:00Z";
const T2: &str = "2024-05-01T11:00:00Z";
const T3: &str = "2024-05-01T12:00:00Z";

fn crontab(spec: &str) -> Value {
    let mut obj = y(&format!(
        "apiVersion: {GV}\nkind: CronTab\nmetadata:\n  name: c\n  namespace: default\n  uid: u\n  labels: {{app: a}}\nspec:\n{}",
        spec.lines()
            .fold(String::new(), |acc, l| acc + "  " + l + "\n")
    ));
    if spec.trim().is_empty() {
        obj.as_object_mut().expect("object").remove("spec");
    }
    obj
}

fn entries(obj: &Value) -> Vec<(String, String, String, Option<String>, String)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .map(|l| {
            l.iter()
                .map(|e| {
                    let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
                    (
                        s("manager"),
                        s("operation"),
                        s("subresource"),
                        e.get("time").and_then(Value::as_str).map(str::to_owned),
                        FieldSet::from_fields_v1(&e["fieldsV1"])
                            .expect("fieldsV1")
                            .to_fields_v1_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn e(
    m: &str,
    op: &str,
    sub: &str,
    t: Option<&str>,
    f: &str,
) -> (String, String, String, Option<String>, String) {
    (
        m.to_owned(),
        op.to_owned(),
        sub.to_owned(),
        t.map(str::to_owned),
        f.to_owned(),
    )
}

#[test]
fn field_manager_create_then_apply_conflict_force_noop() {
    let schema = Schema::from_json_schema(&y(CRONTAB));
    let fm = FieldManager::new(&schema, GV, "CronTab");

    let mut created = crontab("cronSpec: '* * * * */5'\nimage: img");
    fm.update(None, &mut created, "kubectl-client-side-apply", T1);
    assert_eq!(
        entries(&created),
        [e(
            "kubectl-client-side-apply",
            "Update",
            "",
            Some(T1),
            r#"{"f:metadata":{"f:labels":{"f:app":{},".":{}}},"f:spec":{"f:cronSpec":{},"f:image":{},".":{}}}"#
        )]
    );
    assert_eq!(created["metadata"]["managedFields"][0]["apiVersion"], GV);
    assert_eq!(
        created["metadata"]["managedFields"][0]["fieldsType"],
        "FieldsV1"
    );

    let config = crontab("cronSpec: '* * * * */10'");
    let err = fm
        .apply(Some(&created), &config, "kubectl", false, T2)
        .expect_err("conflict");
    let ApplyError::Conflicts(c) = err else {
        panic!("{err}")
    };
    assert_eq!(
        c.to_string(),
        r#"Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using stable.example.com/v1: .spec.cronSpec"#
    );
    assert_eq!(
        c.causes(),
        [(
            ".spec.cronSpec".to_owned(),
            r#"conflict with "kubectl-client-side-apply" using stable.example.com/v1"#.to_owned()
        )]
    );

    let forced = fm
        .apply(Some(&created), &config, "kubectl", true, T2)
        .expect("force");
    assert_eq!(forced["spec"]["cronSpec"], "* * * * */10");
    assert_eq!(forced["spec"]["image"], "img");
    assert_eq!(
        entries(&forced),
        [
            e(
                "kubectl",
                "Apply",
                "",
                Some(T2),
                r#"{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:cronSpec":{}}}"#
            ),
            e(
                "kubectl-client-side-apply",
                "Update",
                "",
                Some(T1),
                r#"{"f:metadata":{"f:labels":{"f:app":{},".":{}}},"f:spec":{"f:image":{},".":{}}}"#
            ),
        ]
    );

    // The same apply again changes nothing: the object and the applier's time stay.
    let again = fm
        .apply(Some(&forced), &config, "kubectl", false, T3)
        .expect("no-op");
    assert_eq!(again, forced);
}

#[test]
fn field_manager_multiple_conflicts_message() {
    let schema = Schema::from_json_schema(&y(CRONTAB));
    let fm = FieldManager::new(&schema, GV, "CronTab");
    let mut obj = crontab("cronSpec: a\nimage: b");
    fm.update(None, &mut obj, "m1", T1);
    let mut obj2 = crontab("cronSpec: a\nimage: b\nreplicas: 1");
    fm.update(Some(&obj), &mut obj2, "m2", T2);
    let config = crontab("cronSpec: x\nimage: yy\nreplicas: 2");
    let err = fm
        .apply(Some(&obj2), &config, "kubectl", false, T3)
        .expect_err("conflicts");
    let ApplyError::Conflicts(c) = err else {
        panic!("{err}")
    };
    assert_eq!(
        c.to_string(),
        "Apply failed with 3 conflicts: conflicts with \"m1\" using stable.example.com/v1:\n- .spec.cronSpec\n- .spec.image\nconflicts with \"m2\" using stable.example.com/v1:\n- .spec.replicas"
    );
    assert_eq!(c.causes().len(), 3);
    assert_eq!(
        c.causes()[2].1,
        r#"conflict with "m2" using stable.example.com/v1"#
    );
}

#[test]
fn field_manager_apply_create_and_remove_owned_fields() {
    let schema = Schema::from_json_schema(&y(CRONTAB));
    let fm = FieldManager::new(&schema, GV, "CronTab");
    let config =
        crontab("cronSpec: a\nports:\n- name: http\n  port: 80\n- name: https\n  port: 443");
    let created = fm
        .apply(None, &config, "kubectl", false, T1)
        .expect("create");
    assert_eq!(
        entries(&created),
        [e(
            "kubectl",
            "Apply",
            "",
            Some(T1),
            r#"{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:cronSpec":{},"f:ports":{"k:{\"name\":\"http\"}":{"f:name":{},"f:port":{},".":{}},"k:{\"name\":\"https\"}":{"f:name":{},"f:port":{},".":{}}}}}"#
        )]
    );
    // An Update by a controller adds a field; the next apply drops a port and cronSpec.
    let mut updated = created.clone();
    updated["spec"]["replicas"] = json!(3);
    fm.update(Some(&created), &mut updated, "controller", T2);
    let config = crontab("ports:\n- name: http\n  port: 80");
    let out = fm
        .apply(Some(&updated), &config, "kubectl", false, T3)
        .expect("apply");
    assert_eq!(
        out["spec"],
        json!({"replicas": 3, "ports": [{"name": "http", "port": 80}]})
    );
    assert_eq!(
        entries(&out),
        [
            e(
                "kubectl",
                "Apply",
                "",
                Some(T3),
                r#"{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:ports":{"k:{\"name\":\"http\"}":{"f:name":{},"f:port":{},".":{}}}}}"#
            ),
            e(
                "controller",
                "Update",
                "",
                Some(T2),
                r#"{"f:spec":{"f:replicas":{}}}"#
            ),
        ]
    );
}

#[test]
fn field_manager_update_same_manager_merges_and_noop_keeps_time() {
    let schema = Schema::from_json_schema(&y(CRONTAB));
    let fm = FieldManager::new(&schema, GV, "CronTab");
    let mut a = crontab("image: a");
    fm.update(None, &mut a, "m", T1);
    let mut b = a.clone();
    b["spec"]["replicas"] = json!(1);
    fm.update(Some(&a), &mut b, "m", T2);
    assert_eq!(
        entries(&b),
        [e(
            "m",
            "Update",
            "",
            Some(T2),
            r#"{"f:metadata":{"f:labels":{"f:app":{},".":{}}},"f:spec":{"f:image":{},"f:replicas":{},".":{}}}"#
        )]
    );
    let mut c = b.clone();
    fm.update(Some(&b), &mut c, "m", T3);
    assert_eq!(
        entries(&c),
        entries(&b),
        "a no-op update keeps the entry and its time"
    );
    // Another apiVersion is another Update entry.
    let fm2 = FieldManager::new(&schema, "stable.example.com/v2", "CronTab");
    let mut d = c.clone();
    d["spec"]["image"] = json!("b");
    fm2.update(Some(&c), &mut d, "m", T3);
    let got = entries(&d);
    assert_eq!(got.len(), 2);
    assert_eq!(
        d["metadata"]["managedFields"][1]["apiVersion"],
        "stable.example.com/v2"
    );
    assert_eq!(got[1].4, r#"{"f:spec":{"f:image":{}}}"#);
}

#[test]
fn field_manager_request_managed_fields_reset_and_replace() {
    let schema = Schema::from_json_schema(&y(CRONTAB));
    let fm = FieldManager::new(&schema, GV, "CronTab");
    let mut live = crontab("image: a");
    fm.update(None, &mut live, "creator", T1);
    for reset in [json!([{}]), json!([])] {
        let mut new = live.clone();
        new["metadata"]["managedFields"] = reset.clone();
        fm.update(Some(&live), &mut new, "m", T2);
        assert!(
            new["metadata"].get("managedFields").is_none(),
            "{reset}: nothing changed, no entries"
        );
        let mut new = live.clone();
        new["metadata"]["managedFields"] = reset.clone();
        new["spec"]["replicas"] = json!(2);
        fm.update(Some(&live), &mut new, "m", T2);
        assert_eq!(
            entries(&new),
            [e(
                "m",
                "Update",
                "",
                Some(T2),
                r#"{"f:spec":{"f:replicas":{}}}"#
            )],
            "{reset}"
        );
    }
    // Managed fields the client rewrites replace the tracked ones.
    let mut new = live.clone();
    new["metadata"]["managedFields"] = json!([{
        "manager": "someone", "operation": "Apply", "apiVersion": GV, "fieldsType": "FieldsV1",
        "time": T1, "fieldsV1": {"f:spec": {"f:image": {}}}
    }]);
    fm.update(Some(&live), &mut new, "m", T2);
    assert_eq!(
        entries(&new),
        [e(
            "someone",
            "Apply",
            "",
            Some(T1),
            r#"{"f:spec":{"f:image":{}}}"#
        )]
    );
    // Undecodable ones fall back to the live object's.
    let mut new = live.clone();
    new["metadata"]["managedFields"] = json!([{"manager": "x", "operation": "Nope"}]);
    fm.update(Some(&live), &mut new, "m", T2);
    assert_eq!(entries(&new), entries(&live));
}

#[test]
fn field_manager_subresource_entries_and_reset_fields() {
    let schema = Schema::from_json_schema(&y(CRONTAB));
    let main_reset = FieldSet::from_field_paths(&[&["status"]]);
    let status_reset = FieldSet::from_field_paths(&[&["spec"]]);
    let fm = FieldManager::new(&schema, GV, "CronTab").with_reset_fields(&main_reset);
    let status = FieldManager::new(&schema, GV, "CronTab")
        .with_subresource("status")
        .with_reset_fields(&status_reset);
    let mut live = crontab("image: a");
    live["status"] = json!({"phase": "x"});
    fm.update(None, &mut live, "creator", T1);
    assert_eq!(
        entries(&live)[0].4,
        r#"{"f:metadata":{"f:labels":{"f:app":{},".":{}}},"f:spec":{"f:image":{},".":{}}}"#
    );

    let mut new = live.clone();
    new["status"]["phase"] = json!("Running");
    new["metadata"]["managedFields"] = json!([{}]);
    status.update(Some(&live), &mut new, "ctl", T2);
    let got = entries(&new);
    assert_eq!(
        got.len(),
        2,
        "a subresource ignores the request's managed fields"
    );
    assert_eq!(
        got[1],
        e(
            "ctl",
            "Update",
            "status",
            Some(T2),
            r#"{"f:status":{"f:phase":{}}}"#
        )
    );

    // Apply through the status subresource conflicts with its owner, named with the subresource.
    let mut cfg = crontab("");
    cfg["status"] = json!({"phase": "Done"});
    let err = status
        .apply(Some(&new), &cfg, "other", false, T3)
        .expect_err("conflict");
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "ctl" with subresource "status" using stable.example.com/v1: .status.phase"#
    );
}

#[test]
fn field_manager_before_first_apply_and_bad_requests() {
    let schema = Schema::from_json_schema(&y(CRONTAB));
    let fm = FieldManager::new(&schema, GV, "CronTab");
    let live = crontab("image: a\nreplicas: 1");
    let err = fm
        .apply(Some(&live), &crontab("image: b"), "kubectl", false, T2)
        .expect_err("conflict");
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "before-first-apply" using stable.example.com/v1: .spec.image"#
    );
    let out = fm
        .apply(Some(&live), &crontab("image: a"), "kubectl", false, T2)
        .expect("shared");
    let got = entries(&out);
    assert_eq!(got[0].0, "kubectl");
    assert_eq!(
        got[1],
        e(
            "before-first-apply",
            "Update",
            "",
            Some(T2),
            r#"{"f:metadata":{"f:labels":{"f:app":{},".":{}}},"f:spec":{"f:image":{},"f:replicas":{},".":{}}}"#
        )
    );

    let mut wrong = crontab("image: a");
    wrong["apiVersion"] = json!("stable.example.com/v2");
    assert_eq!(
        fm.apply(None, &wrong, "kubectl", false, T1)
            .expect_err("kind")
            .to_string(),
        "invalid object type: stable.example.com/v2, Kind=CronTab"
    );
    let mut with_mf = crontab("image: a");
    with_mf["metadata"]["managedFields"] = json!([]);
    assert!(matches!(
        fm.apply(None, &with_mf, "kubectl", false, T1),
        Err(ApplyError::BadRequest(m)) if m == "metadata.managedFields must be nil"
    ));
    let dup = crontab("ports:\n- name: a\n- name: a");
    assert_eq!(
        fm.apply(None, &dup, "kubectl", false, T1)
            .expect_err("dup")
            .to_string(),
        r#"failed to create typed patch object (default/c; stable.example.com/v1, Kind=CronTab): .spec.ports: duplicate entries for key [name="a"]"#
    );
    let nokey = crontab("ports:\n- port: 1");
    assert_eq!(
        fm.apply(None, &nokey, "kubectl", false, T1)
            .expect_err("key")
            .to_string(),
        r#"failed to create typed patch object (default/c; stable.example.com/v1, Kind=CronTab): .spec.ports: element 0: associative list with keys has an element that omits key field "name" (and doesn't have default value)"#
    );
    // A field the schema does not declare refuses the whole configuration (SMD's typed
    // conversion, whose walk of a struct stops at the first such field).
    let undeclared = crontab("image: a\nbogus: 1");
    assert_eq!(
        fm.apply(None, &undeclared, "kubectl", false, T1)
            .expect_err("undeclared")
            .to_string(),
        "failed to create typed patch object (default/c; stable.example.com/v1, Kind=CronTab): .spec.bogus: field not declared in schema"
    );
    let mut two = crontab("bogus: 1");
    two["extra"] = json!(true);
    assert_eq!(
        fm.apply(None, &two, "kubectl", false, T1)
            .expect_err("undeclared")
            .to_string(),
        "failed to create typed patch object (default/c; stable.example.com/v1, Kind=CronTab): .extra: field not declared in schema"
    );
}

#[test]
fn field_manager_caps_update_managers() {
    let schema = Schema::from_json_schema(&y(CRONTAB));
    let fm = FieldManager::new(&schema, GV, "CronTab").with_max_update_managers(3);
    let mut obj = crontab("replicas: 0");
    fm.update(None, &mut obj, "m0", "2024-05-01T10:00:00Z");
    for i in 1..=4 {
        let mut next = obj.clone();
        next["metadata"]["labels"][format!("l{i}")] = json!("x");
        fm.update(
            Some(&obj),
            &mut next,
            &format!("m{i}"),
            &format!("2024-05-01T10:00:0{i}Z"),
        );
        obj = next;
    }
    let got: Vec<(String, Option<String>)> =
        entries(&obj).into_iter().map(|e| (e.0, e.3)).collect();
    assert_eq!(
        got,
        [
            (
                "ancient-changes".to_owned(),
                Some("2024-05-01T10:00:02Z".to_owned())
            ),
            ("m3".to_owned(), Some("2024-05-01T10:00:03Z".to_owned())),
            ("m4".to_owned(), Some("2024-05-01T10:00:04Z".to_owned())),
        ]
    );
    assert!(entries(&obj)[0].4.contains("f:l1") && entries(&obj)[0].4.contains("f:l2"));
}

#[test]
fn schema_typing_embedded_and_int_or_string() {
    let schema = Schema::from_json_schema(&y(r"
      type: object
      properties:
        spec:
          type: object
          properties:
            template:
              type: object
              x-kubernetes-embedded-resource: true
              x-kubernetes-preserve-unknown-fields: true
            port:
              x-kubernetes-int-or-string: true
    "));
    let config = y(r"
      spec:
        template:
          metadata:
            labels: {a: b}
            finalizers: [f]
          data: {k: v}
        port: http
    ");
    let set = typed::to_field_set(&schema, &config).expect("set");
    assert_eq!(
        set.to_fields_v1_string(),
        r#"{"f:spec":{"f:port":{},"f:template":{"f:data":{"f:k":{},".":{}},"f:metadata":{"f:finalizers":{"v:\"f\"":{}},"f:labels":{"f:a":{}}}}}}"#
    );
}

#[test]
fn field_manager_upgrades_from_client_side_apply() {
    let schema = Schema::from_json_schema(&y(CRONTAB));
    let fm = FieldManager::new(&schema, GV, "CronTab");
    let last = json!({"apiVersion": GV, "kind": "CronTab", "metadata": {"name": "c", "namespace": "default", "labels": {"app": "a"}}, "spec": {"cronSpec": "x", "image": "a"}});
    let mut live = crontab("cronSpec: x\nimage: a");
    live["metadata"]["annotations"] = json!({LAST_APPLIED_ANNOTATION: format!("{}\n", serde_json::to_string(&last).unwrap_or_default())});
    fm.update(None, &mut live, "kubectl-client-side-apply", T1);

    let config = crontab("cronSpec: 'y<z'\nimage: a");
    // Another manager than kubectl gets the conflict.
    let err = fm
        .apply(Some(&live), &config, "other", false, T2)
        .expect_err("conflict");
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using stable.example.com/v1: .spec.cronSpec"#
    );
    // kubectl takes over the fields its last-applied configuration set, and keeps the
    // annotation in sync with what it applies.
    let out = fm
        .apply(Some(&live), &config, "kubectl", false, T2)
        .expect("upgrade");
    assert_eq!(out["spec"]["cronSpec"], "y<z");
    assert_eq!(
        out["metadata"]["annotations"][LAST_APPLIED_ANNOTATION],
        "{\"apiVersion\":\"stable.example.com/v1\",\"kind\":\"CronTab\",\"metadata\":{\"labels\":{\"app\":\"a\"},\"name\":\"c\",\"namespace\":\"default\",\"uid\":\"u\"},\"spec\":{\"cronSpec\":\"y\\u003cz\",\"image\":\"a\"}}\n"
    );
    let got = entries(&out);
    assert_eq!(got[0].0, "kubectl");
    assert_eq!(got[1].0, "kubectl-client-side-apply");
    assert_eq!(
        got[1].4,
        r#"{"f:metadata":{"f:annotations":{"f:kubectl.kubernetes.io/last-applied-configuration":{},".":{}},"f:labels":{"f:app":{},".":{}}},"f:spec":{"f:image":{},".":{}}}"#
    );

    // A field changed since the last client-side apply stays a conflict.
    let mut drifted = live.clone();
    drifted["spec"]["cronSpec"] = json!("drift");
    fm.update(Some(&live), &mut drifted, "kubectl-client-side-apply", T2);
    let err = fm
        .apply(Some(&drifted), &config, "kubectl", false, T3)
        .expect_err("drift");
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using stable.example.com/v1: .spec.cronSpec"#
    );
}

#[test]
fn field_manager_reconciles_schema_changes() {
    let granular = Schema::from_json_schema(&y(r"
      type: object
      properties:
        spec:
          type: object
          properties:
            list: {type: array, x-kubernetes-list-type: set, items: {type: string}}
    "));
    let atomic = Schema::from_json_schema(&y(r"
      type: object
      properties:
        spec:
          type: object
          properties:
            list: {type: array, items: {type: string}}
    "));
    let cfg = |items: &str| {
        let mut c = crontab("");
        c["spec"] = json!({"list": serde_json::from_str::<Value>(items).unwrap_or_default()});
        c
    };
    let list_fields = |obj: &Value, m: &str| {
        entries(obj)
            .into_iter()
            .find(|e| e.0 == m)
            .map(|e| e.4)
            .unwrap_or_default()
    };

    // Granular, then atomic: the owner of items owns the list.
    let fm = FieldManager::new(&granular, GV, "CronTab");
    let obj = fm
        .apply(None, &cfg(r#"["a","b"]"#), "one", false, T1)
        .expect("apply");
    let fm = FieldManager::new(&atomic, GV, "CronTab");
    let err = fm
        .apply(Some(&obj), &cfg(r#"["c"]"#), "two", false, T2)
        .expect_err("conflict");
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "one": .spec.list"#
    );

    // Atomic, then granular: the owner of the list keeps the list alone, none of its items
    // (SMD's `TestAtomicToGranularSchemaChanges` since structured-merge-diff#192).
    let obj = fm
        .apply(None, &cfg(r#"["a","b"]"#), "one", false, T1)
        .expect("apply");
    assert_eq!(
        list_fields(&obj, "one"),
        r#"{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:list":{}}}"#
    );
    let fm = FieldManager::new(&granular, GV, "CronTab");
    let out = fm
        .apply(Some(&obj), &cfg(r#"["c"]"#), "two", false, T2)
        .expect("apply");
    assert_eq!(out["spec"]["list"], json!(["a", "b", "c"]));
    assert_eq!(
        list_fields(&out, "one"),
        r#"{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:list":{}}}"#
    );
    assert_eq!(
        list_fields(&out, "two"),
        r#"{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:list":{"v:\"c\"":{}}}}"#
    );
}

#[test]
fn field_manager_update_with_managed_fields_sent_back() {
    let schema = Schema::from_json_schema(&y(CRONTAB));
    let fm = FieldManager::new(&schema, GV, "CronTab");
    let mut live = crontab("image: a\nreplicas: 1");
    fm.update(None, &mut live, "m1", T1);
    // A controller sends the object back with its managed fields and drops a field.
    let mut new = live.clone();
    new["spec"]
        .as_object_mut()
        .expect("spec")
        .remove("replicas");
    new["spec"]["cronSpec"] = json!("x");
    fm.update(Some(&live), &mut new, "m2", T2);
    assert_eq!(
        entries(&new),
        [
            e(
                "m1",
                "Update",
                "",
                Some(T1),
                r#"{"f:metadata":{"f:labels":{"f:app":{},".":{}}},"f:spec":{"f:image":{},".":{}}}"#
            ),
            e(
                "m2",
                "Update",
                "",
                Some(T2),
                r#"{"f:spec":{"f:cronSpec":{}}}"#
            ),
        ]
    );
    // Unchanged entries keep their encoding.
    let mut again = new.clone();
    fm.update(Some(&new), &mut again, "m3", T3);
    assert_eq!(
        again["metadata"]["managedFields"],
        new["metadata"]["managedFields"]
    );
}

/// A create's field set, built directly (`typed::added`), is the comparison against an empty
/// object's added set, byte for byte in `fieldsV1`: for every schema shape above, with empty
/// maps and lists, duplicate and keyless list items, values of the wrong type, preserved
/// unknown fields and a request's own `managedFields`.
#[test]
fn a_creates_added_fields_are_the_comparison_against_an_empty_object() {
    let objects = [
        "",
        "numeric: 1\nstring: s\nbool: true",
        "list: [a, b, a]",
        "list: []",
        "list: {}",
        "list: [{name: a, value: 1}, {name: a, value: 2}, {value: 3}, {name: b}]",
        "listOfLists: [{name: a, value: [x, y, x]}, {name: b, value: []}, {name: c}]",
        "struct: {name: n, scalarField: s, complexField: {name: c}}",
        "struct: {}",
        "struct: 3",
        "atomicList: [a, b]\natomicMap: {a: x}\ngranularMap: {k: v, l: w}",
        "granularMap: {}",
        "spec: {known: k, unknown: {deep: {er: 1}, list: [1, 2]}, empty: {}}",
        "ports: [{port: 80, protocol: TCP, name: h}, {port: 80, protocol: UDP}, {port: 81}]",
        "containers: [{name: a, image: i, args: [x]}, {name: b}]\nfinalizers: [f, g, f]",
        "spec: {cronSpec: c, image: i, replicas: 2, ports: [{name: p, port: 1}]}\nstatus: {phase: P}",
        "apiVersion: v\nkind: K\nmetadata: {name: n, labels: {a: b}, annotations: {c: d}, \
         finalizers: [x], ownerReferences: [{uid: u, name: o}], \
         managedFields: [{manager: m, operation: Update}]}",
        "metadata: {}",
        "metadata: 3",
        "anything: [1, {a: b}]\nnothing: null",
    ];
    for schema_text in [
        LEAF,
        SET,
        ASSOC,
        NESTED,
        STRUCT,
        ATOMIC,
        PRESERVE,
        MULTIKEY,
        PATCH_STRATEGY,
        CRONTAB,
    ] {
        let schema = Schema::from_json_schema(&y(schema_text));
        for text in objects {
            let obj = y(text);
            let direct = typed::added(&schema, &obj);
            let compared = typed::compare(&schema, &json!({}), &obj).added;
            assert_eq!(
                direct.to_fields_v1_string(),
                compared.to_fields_v1_string(),
                "{text} under {schema_text}"
            );
        }
    }
}
