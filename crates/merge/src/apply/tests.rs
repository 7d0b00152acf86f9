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
    let indent = lines.iter().map(|l| l.len() - l.trim_start().len()).min().unwrap_or(0);
    let text: String = lines.iter().map(|l| format!("{}\n", &l[indent..])).collect();
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("bad YAML {text}: {e}"))
}

enum Op {
    Apply(&'static str, &'static str, &'static str),
    ForceApply(&'static str, &'static str, &'static str),
    Conflicts(&'static str, &'static str, &'static str, &'static [(&'static str, &'static str)]),
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
                Update("controller", "v1", "numeric: 1\nstring: controller string\nbool: true"),
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
            ops: &[Apply("default", "v1", "string: string"), Update("controller", "v1", "string: new string")],
            object: "string: new string",
            managed: &[("controller", r#"{"f:string":{}}"#)],
        },
        Case {
            name: "leaf/apply_remove_empty_set",
            schema: LEAF,
            ops: &[Apply("default", "v1", "string: string"), Apply("default", "v1", "")],
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
            managed: &[("default", r#"{"f:list":{"v:\"a\"":{},"v:\"b\"":{},"v:\"c\"":{},"v:\"d\"":{}}}"#)],
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
                ("default", r#"{"f:list":{"v:\"a\"":{},"v:\"aprime\"":{},"v:\"c\"":{},"v:\"cprime\"":{}}}"#),
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
                ("default", r#"{"f:list":{"v:\"a\"":{},"v:\"b\"":{},"v:\"c\"":{}}}"#),
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
            managed: &[("default", r#"{"f:list":{"v:\"a\"":{},"v:\"b\"":{},"v:\"c\"":{},"v:\"d\"":{}}}"#)],
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
            managed: &[("default", r#"{"f:list":{"v:\"a\"":{},"v:\"b\"":{},"v:\"c\"":{},"v:\"d\"":{}}}"#)],
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
                ("default", r#"{"f:list":{"v:\"a\"":{},"v:\"b\"":{},"v:\"z\"":{}}}"#),
                ("controller", r#"{"f:list":{".":{},"v:\"a\"":{},"v:\"b\"":{},"v:\"w\"":{},"v:\"x\"":{}}}"#),
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
                ("apply-one", r#"{"f:list":{"k:{\"name\":\"a\"}":{".":{},"f:name":{}}}}"#),
                ("apply-two", r#"{"f:list":{"k:{\"name\":\"c\"}":{".":{},"f:name":{}}}}"#),
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
                ("apply-one", r#"{"f:list":{"k:{\"name\":\"a\"}":{".":{},"f:name":{},"f:value":{}}}}"#),
                ("apply-two", r#"{"f:list":{"k:{\"name\":\"a\"}":{".":{},"f:name":{},"f:value":{}}}}"#),
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
                ("apply-one", r#"{"f:list":{"k:{\"name\":\"a\"}":{".":{},"f:name":{}}}}"#),
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
                ("apply-one", r#"{"f:list":{"k:{\"name\":\"a\"}":{".":{},"f:name":{}}}}"#),
                ("apply-two", r#"{"f:list":{"k:{\"name\":\"a\"}":{".":{},"f:name":{},"f:value":{}}}}"#),
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
                ("updater", r#"{"f:struct":{".":{},"f:name":{},"f:scalarField":{}}}"#),
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
                Apply("apply-one", "v1", "struct:\n  name: a\n  complexField:\n    name: b"),
                Apply("apply-one", "v2", "struct:\n  name: a"),
            ],
            object: "struct:\n  name: a",
            managed: &[("apply-one", r#"{"f:struct":{"f:name":{}}}"#)],
        },
        Case {
            name: "field_unsetting/unset_complex_shared_with_applier",
            schema: STRUCT,
            ops: &[
                Apply("apply-one", "v1", "struct:\n  name: a\n  complexField:\n    name: b"),
                Apply("apply-two", "v2", "struct:\n  complexField:\n    name: b"),
                Apply("apply-one", "v3", "struct:\n  name: a"),
            ],
            object: "struct:\n  name: a\n  complexField:\n    name: b",
            managed: &[
                ("apply-one", r#"{"f:struct":{"f:name":{}}}"#),
                ("apply-two", r#"{"f:struct":{"f:complexField":{"f:name":{}}}}"#),
            ],
        },
        Case {
            name: "field_unsetting/sole_owner_drops_whole_struct",
            schema: STRUCT,
            ops: &[
                Apply("apply-one", "v1", "struct:\n  name: a\n  complexField:\n    name: b"),
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
                Apply("apply-one", "v1", "listOfLists:\n- name: a\n- name: b\n  value: [c]"),
                Apply("apply-two", "v2", "listOfLists:\n- name: b\n  value: [d]"),
                Apply("apply-one", "v3", "listOfLists:\n- name: a"),
            ],
            object: "listOfLists:\n- name: a\n- name: b\n  value: [d]",
            managed: &[
                ("apply-one", r#"{"f:listOfLists":{"k:{\"name\":\"a\"}":{".":{},"f:name":{}}}}"#),
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
                Apply("apply-one", "v1", "listOfLists:\n- name: a\n- name: b\n  value: [c]"),
                Apply("apply-two", "v2", "listOfLists:\n- name: b\n  value: [d]"),
                Update("controller", "v2", "listOfLists:\n- name: a\n- name: b\n  value: [c, d, e]"),
                Apply("apply-one", "v3", "listOfLists:\n- name: a"),
            ],
            object: "listOfLists:\n- name: a\n- name: b\n  value: [d, e]",
            managed: &[
                ("apply-one", r#"{"f:listOfLists":{"k:{\"name\":\"a\"}":{".":{},"f:name":{}}}}"#),
                (
                    "apply-two",
                    r#"{"f:listOfLists":{"k:{\"name\":\"b\"}":{".":{},"f:name":{},"f:value":{"v:\"d\"":{}}}}}"#,
                ),
                ("controller", r#"{"f:listOfLists":{"k:{\"name\":\"b\"}":{"f:value":{"v:\"e\"":{}}}}}"#),
            ],
        },
        Case {
            name: "nested/remove_one_with_dangling_subitem_keep_one",
            schema: NESTED,
            ops: &[
                Apply("apply-one", "v1", "listOfLists:\n- name: a\n- name: b\n  value: [c]"),
                Apply("apply-two", "v2", "listOfLists:\n- name: a\n  value: [b]"),
                Update("controller", "v2", "listOfLists:\n- name: a\n  value: [b]\n- name: b\n  value: [c, d]"),
                Apply("apply-one", "v3", "listOfLists:\n- name: a"),
            ],
            object: "listOfLists:\n- name: a\n  value: [b]",
            managed: &[
                ("apply-one", r#"{"f:listOfLists":{"k:{\"name\":\"a\"}":{".":{},"f:name":{}}}}"#),
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
            ops: &[Apply("one", "v1", "atomicList: [a, b]"), Apply("two", "v1", "atomicList: [a, b]")],
            object: "atomicList: [a, b]",
            managed: &[("one", r#"{"f:atomicList":{}}"#), ("two", r#"{"f:atomicList":{}}"#)],
        },
        Case {
            name: "atomic/map_replaced_whole",
            schema: ATOMIC,
            ops: &[Apply("one", "v1", "atomicMap: {a: x, b: y}"), Apply("one", "v1", "atomicMap: {a: z}")],
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
            ops: &[Apply("one", "v1", "atomicList: [a]"), Update("ctl", "v1", "atomicList: [a, b]")],
            object: "atomicList: [a, b]",
            managed: &[("ctl", r#"{"f:atomicList":{}}"#)],
        },
        // ---- deduced (x-kubernetes-preserve-unknown-fields) ----
        Case {
            name: "deduced/maps_granular_lists_atomic",
            schema: PRESERVE,
            ops: &[
                Apply("one", "v1", "spec:\n  known: k\n  extra:\n    a: 1\n  list: [1, 2]"),
                Apply("two", "v1", "spec:\n  extra:\n    b: 2"),
            ],
            object: "spec:\n  known: k\n  extra: {a: 1, b: 2}\n  list: [1, 2]",
            managed: &[
                ("one", r#"{"f:spec":{"f:extra":{".":{},"f:a":{}},"f:known":{},"f:list":{}}}"#),
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
                Apply("one", "v1", "ports:\n- port: 80\n  name: http\n- port: 53\n  protocol: UDP"),
                Apply("two", "v1", "ports:\n- port: 53\n  protocol: TCP\n  name: dns"),
            ],
            object: "ports:\n- port: 80\n  name: http\n- port: 53\n  protocol: UDP\n- port: 53\n  protocol: TCP\n  name: dns",
            managed: &[
                (
                    "one",
                    r#"{"f:ports":{"k:{\"port\":53,\"protocol\":\"UDP\"}":{".":{},"f:port":{},"f:protocol":{}},"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{}}}}"#,
                ),
                ("two", r#"{"f:ports":{"k:{\"port\":53,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{},"f:protocol":{}}}}"#),
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
            managed: &[("one", r#"{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{}}}}"#)],
        },
        // ---- built-in patch strategies ----
        Case {
            name: "patch_strategy/merge_key_is_list_map",
            schema: PATCH_STRATEGY,
            ops: &[
                Apply("one", "v1", "containers:\n- name: a\n  image: x\n  args: [p]"),
                Apply("two", "v1", "containers:\n- name: b\n  image: y"),
                Conflicts("two", "v1", "containers:\n- name: a\n  image: z", &[("one", r#".containers[name="a"].image"#)]),
            ],
            object: "containers:\n- name: a\n  image: x\n  args: [p]\n- name: b\n  image: y",
            managed: &[
                ("one", r#"{"f:containers":{"k:{\"name\":\"a\"}":{".":{},"f:args":{},"f:image":{},"f:name":{}}}}"#),
                ("two", r#"{"f:containers":{"k:{\"name\":\"b\"}":{".":{},"f:image":{},"f:name":{}}}}"#),
            ],
        },
        Case {
            name: "patch_strategy/merge_scalars_are_a_set",
            schema: PATCH_STRATEGY,
            ops: &[Apply("one", "v1", "finalizers: [a]"), Apply("two", "v1", "finalizers: [b]")],
            object: "finalizers: [a, b]",
            managed: &[
                ("one", r#"{"f:finalizers":{"v:\"a\"":{}}}"#),
                ("two", r#"{"f:finalizers":{"v:\"b\"":{}}}"#),
            ],
        },
        // ---- metadata typed as ObjectMeta ----
        Case {
            name: "metadata/labels_granular_finalizers_set",
            schema: LEAF,
            ops: &[
                Apply("one", "v1", "metadata:\n  labels: {a: '1'}\n  finalizers: [x]"),
                Apply("two", "v1", "metadata:\n  labels: {b: '2'}\n  finalizers: [f]"),
                Apply("one", "v1", "metadata:\n  labels: {c: '3'}"),
            ],
            object: "metadata:\n  labels: {b: '2', c: '3'}\n  finalizers: [f]",
            managed: &[
                ("one", r#"{"f:metadata":{"f:labels":{"f:c":{}}}}"#),
                ("two", r#"{"f:metadata":{"f:finalizers":{"v:\"f\"":{}},"f:labels":{"f:b":{}}}}"#),
            ],
        },
        Case {
            name: "metadata/owner_references_keyed_by_uid",
            schema: LEAF,
            ops: &[
                Apply("one", "v1", "metadata:\n  ownerReferences:\n  - {uid: u1, name: a, kind: K, apiVersion: v1}"),
                Apply("two", "v1", "metadata:\n  ownerReferences:\n  - {uid: u2, name: b, kind: K, apiVersion: v1}"),
            ],
            object: "metadata:\n  ownerReferences:\n  - {uid: u1, name: a, kind: K, apiVersion: v1}\n  - {uid: u2, name: b, kind: K, apiVersion: v1}",
            managed: &[
                ("one", r#"{"f:metadata":{"f:ownerReferences":{"k:{\"uid\":\"u1\"}":{".":{},"f:apiVersion":{},"f:kind":{},"f:name":{},"f:uid":{}}}}}"#),
                ("two", r#"{"f:metadata":{"f:ownerReferences":{"k:{\"uid\":\"u2\"}":{".":{},"f:apiVersion":{},"f:kind":{},"f:name":{},"f:uid":{}}}}}"#),
            ],
        },
    ]
}

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
                FieldManager::new(&schema, v, "")
                    .record_update(&live, &new, &mut managed, id, "2024-01-01T00:00:00Z");
                live = new;
                continue;
            }
        };
        let config = y(obj);
        let merged = typed::merge(&schema, &live, &config).expect("merge");
        let set = typed::to_field_set(&schema, &config).expect("field set");
        let id = ManagerId::new(mgr, Operation::Apply, ver, "");
        let mut next = managed.clone();
        match (apply_sets(&schema, &live, merged, set, &mut next, &id, ver, force, None), want) {
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
                let want: Vec<(String, String)> =
                    want.iter().map(|(m, p)| ((*m).to_owned(), (*p).to_owned())).collect();
                assert_eq!(got, want, "{}: op {i} conflicts", c.name);
            }
            (Ok(_), Some(want)) => panic!("{}: op {i}: expected conflicts {want:?}", c.name),
            (Err(e), None) => panic!("{}: op {i}: unexpected {e}", c.name),
        }
    }
    assert_eq!(live, y(c.object), "{}: object", c.name);
    let mut got: Vec<(String, FieldSet)> =
        managed.entries.iter().map(|(id, e)| (id.manager.clone(), e.set.clone())).collect();
    got.sort_by(|a, b| a.0.cmp(&b.0));
    let mut want: Vec<(String, FieldSet)> = c
        .managed
        .iter()
        .map(|(m, f)| {
            let v: Value = serde_json::from_str(f).expect("fieldsV1 JSON");
            ((*m).to_owned(), FieldSet::from_fields_v1(&v).expect("fieldsV1"))
        })
        .collect();
    want.sort_by(|a, b| a.0.cmp(&b.0));
    let show = |l: &[(String, FieldSet)]| {
        l.iter().map(|(m, s)| format!("{m}: {}", s.to_fields_v1_string())).collect::<Vec<_>>()
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
                e.downcast_ref::<String>().cloned().unwrap_or_else(|| c.name.to_owned())
            })
        })
        .collect();
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n\n"));
}
