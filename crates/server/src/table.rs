//! Server-side `meta.k8s.io/v1 Table` rendering for `kubectl get`: column definitions, cells
//! evaluated from column paths in the `JSONPath` of client-go (`crate::jsonpath`), and ages printed
//! as kube-apiserver prints them.
//!
//! Main items: [`TableColumn`], [`render`], [`assemble`] (rows a printer computed whole),
//! [`human_duration`].

use serde_json::{Value, json};

use crate::jsonpath::{JsonPath, go_text};

/// The content type of a Table response.
pub const TABLE_CONTENT_TYPE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

/// The content type of a metadata-only response (`PartialObjectMetadata`).
pub const METADATA_CONTENT_TYPE: &str =
    "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io";

/// The content type of a `PartialObjectMetadataList` response (a list in metadata form).
pub const METADATA_LIST_CONTENT_TYPE: &str =
    "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io";

/// The description kube-apiserver gives the Name column.
pub const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

/// The description kube-apiserver gives the default Age column.
pub const AGE_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// How a column's cell is computed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cell {
    /// A value at a path, typed by the column type; dates become ages.
    Path(String),
    /// A value at a path, printed as is (built-in tables such as the CRD's `CREATED AT`).
    RawPath(String),
}

impl Cell {
    /// The column's path.
    pub fn path(&self) -> &str {
        match self {
            Cell::Path(p) | Cell::RawPath(p) => p,
        }
    }
}

/// One column after the implicit Name column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableColumn {
    /// The header (kubectl upper-cases it).
    pub name: String,
    /// `string`, `integer`, `number`, `boolean` or `date`.
    pub kind: String,
    /// The OpenAPI format, or "".
    pub format: String,
    /// The column description.
    pub description: String,
    /// 0 for default output; higher only with `-o wide`.
    pub priority: i32,
    /// Where the cell comes from.
    pub cell: Cell,
}

impl TableColumn {
    /// The default Age column.
    pub fn age() -> Self {
        TableColumn {
            name: "Age".into(),
            kind: "date".into(),
            format: String::new(),
            description: AGE_DESCRIPTION.into(),
            priority: 0,
            cell: Cell::Path(".metadata.creationTimestamp".into()),
        }
    }
}

/// Whether and how rows carry their object (`includeObject`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IncludeObject {
    /// `PartialObjectMetadata` (the default).
    Metadata,
    /// The full object.
    Object,
    /// No object.
    None,
}

impl IncludeObject {
    /// Parses the query parameter; `Err` carries Kubernetes' 400 message.
    pub fn parse(v: &str) -> Result<Self, String> {
        match v {
            "" | "Metadata" => Ok(IncludeObject::Metadata),
            "Object" => Ok(IncludeObject::Object),
            "None" => Ok(IncludeObject::None),
            other => Err(format!("unrecognized includeObject value: {other:?}")),
        }
    }
}

/// Renders objects as a Table. `list_meta` becomes the Table's `metadata`.
pub fn render(
    columns: &[TableColumn],
    objects: &[Value],
    include: IncludeObject,
    with_headers: bool,
    list_meta: Value,
) -> Value {
    let now = jiff::Timestamp::now();
    // Each path is parsed once per table; one that does not parse leaves its cells empty.
    let paths: Vec<Option<JsonPath>> = columns
        .iter()
        .map(|c| JsonPath::parse(c.cell.path()).ok())
        .collect();
    let rows = objects
        .iter()
        .map(|obj| {
            let mut cells = vec![
                obj.pointer("/metadata/name")
                    .cloned()
                    .unwrap_or_else(|| Value::String(String::new())),
            ];
            cells.extend(
                columns
                    .iter()
                    .zip(&paths)
                    .map(|(c, path)| cell(c, path.as_ref(), obj, now)),
            );
            Row {
                cells,
                conditions: None,
            }
        })
        .collect();
    let mut defs = vec![json!({
        "name": "Name", "type": "string", "format": "name",
        "description": NAME_DESCRIPTION, "priority": 0
    })];
    defs.extend(columns.iter().map(|c| {
        json!({"name": c.name, "type": c.kind, "format": c.format,
               "description": c.description, "priority": c.priority})
    }));
    assemble(&defs, rows, objects, include, with_headers, list_meta)
}

/// One Table row as a printer computed it: every cell (Name included) and the row's
/// conditions.
pub struct Row {
    /// The cells, one per column definition.
    pub cells: Vec<Value>,
    /// `TableRow.conditions`, when the printer sets any.
    pub conditions: Option<Value>,
}

/// Assembles a Table from column definitions (Name included) and one computed row per object.
pub fn assemble(
    definitions: &[Value],
    rows: Vec<Row>,
    objects: &[Value],
    include: IncludeObject,
    with_headers: bool,
    list_meta: Value,
) -> Value {
    let rows: Vec<Value> = rows
        .into_iter()
        .zip(objects)
        .map(|(r, obj)| {
            let mut row = json!({ "cells": r.cells });
            if let Some(c) = r.conditions {
                row["conditions"] = c;
            }
            match include {
                IncludeObject::Metadata => {
                    row["object"] = partial_object_metadata(obj);
                }
                IncludeObject::Object => row["object"] = obj.clone(),
                IncludeObject::None => {}
            }
            row
        })
        .collect();
    let mut table = json!({ "kind": "Table", "apiVersion": "meta.k8s.io/v1" });
    table["metadata"] = list_meta;
    table["rows"] = Value::Array(rows);
    table["columnDefinitions"] = if with_headers {
        Value::from(definitions.to_vec())
    } else {
        Value::Array(Vec::new())
    };
    table
}

/// `meta.k8s.io/v1 PartialObjectMetadata` of an object.
pub fn partial_object_metadata(obj: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

/// One cell, as upstream's `TableConvertor` computes it: the path's first result, printed by
/// the column's type.
fn cell(col: &TableColumn, path: Option<&JsonPath>, obj: &Value, now: jiff::Timestamp) -> Value {
    let Some(v) = path.and_then(|p| p.first(obj)) else {
        return Value::Null;
    };
    if matches!(col.cell, Cell::RawPath(_)) {
        return v.into_owned();
    }
    let v = v.as_ref();
    match col.kind.as_str() {
        "date" => match v.as_str() {
            Some(s) => match s.parse::<jiff::Timestamp>() {
                Ok(t) => Value::String(human_duration(now.duration_since(t).as_secs())),
                Err(_) => Value::String("<invalid>".into()),
            },
            None => Value::Null,
        },
        "integer" => match v {
            Value::Number(n) => n
                .as_i64()
                .or_else(|| n.as_f64().map(|f| f.trunc() as i64))
                .map_or(Value::Null, Value::from),
            _ => Value::Null,
        },
        "number" => match v {
            Value::Number(n) => n.as_f64().map_or(Value::Null, Value::from),
            _ => Value::Null,
        },
        "boolean" => match v {
            Value::Bool(_) => v.clone(),
            _ => Value::Null,
        },
        // A string column prints whatever it finds, as client-go's `PrintResults` does.
        _ => Value::String(go_text(v)),
    }
}

/// Evaluates a simple path (`.a.b`, `.a[0]`, `{.a.b}`) against an object: the paths of
/// selectable fields and the scale subresource, which upstream reads field by field. Printer
/// columns use the whole `JSONPath` of client-go ([`crate::jsonpath`]).
pub fn lookup<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let path = path.trim().trim_start_matches('{').trim_end_matches('}');
    let mut cur = obj;
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (field, index) = match part.split_once('[') {
            Some((f, rest)) => (f, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (part, None),
        };
        if !field.is_empty() {
            cur = cur.get(field)?;
        }
        if let Some(i) = index {
            cur = cur.get(i)?;
        }
    }
    Some(cur)
}

/// apimachinery's `duration.HumanDuration` for a number of seconds (one implementation, shared
/// with the built-in kinds' printers).
pub use crd_builtin::printers::human_duration;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_durations_match_apimachinery() {
        let cases = [
            (-5, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (119, "119s"),
            (120, "2m"),
            (125, "2m5s"),
            (600, "10m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 60, "3h1m"),
            (8 * 3600, "8h"),
            (48 * 3600, "2d"),
            (50 * 3600, "2d2h"),
            (8 * 24 * 3600, "8d"),
            (2 * 365 * 24 * 3600, "2y"),
            (2 * 365 * 24 * 3600 + 24 * 3600, "2y1d"),
            (9 * 365 * 24 * 3600, "9y"),
        ];
        for (s, want) in cases {
            assert_eq!(human_duration(s), want, "{s}");
        }
    }

    #[test]
    fn cells_follow_column_types() {
        let obj = json!({"metadata":{"name":"a","creationTimestamp":"bad"},
                         "spec":{"r":3.7,"s":"x","b":true,"n":5,"o":{"k":1}}});
        let col = |kind: &str, path: &str| TableColumn {
            name: "c".into(),
            kind: kind.into(),
            format: String::new(),
            description: String::new(),
            priority: 0,
            cell: Cell::Path(path.into()),
        };
        let now = jiff::Timestamp::now();
        let cell = |c: TableColumn| {
            let path = JsonPath::parse(c.cell.path()).ok();
            cell(&c, path.as_ref(), &obj, now)
        };
        assert_eq!(cell(col("integer", ".spec.r")), json!(3));
        assert_eq!(cell(col("integer", ".spec.s")), Value::Null);
        assert_eq!(cell(col("number", ".spec.n")), json!(5.0));
        assert_eq!(cell(col("boolean", ".spec.b")), json!(true));
        assert_eq!(cell(col("string", ".spec.n")), json!("5"));
        assert_eq!(cell(col("string", ".spec.r")), json!("3.7"));
        // Go's `fmt.Fprint` of a map, as client-go prints a non-scalar result.
        assert_eq!(cell(col("string", ".spec.o")), json!("map[k:1]"));
        assert_eq!(cell(col("string", ".spec.missing")), Value::Null);
        assert_eq!(
            cell(col("date", ".metadata.creationTimestamp")),
            json!("<invalid>")
        );
    }

    /// Regression: columns beyond `.a.b` and `.a[N]` (filters, wildcards, slices, negative
    /// indexes, escaped dots) were empty; kube-apiserver shows the path's first result.
    #[test]
    fn columns_evaluate_client_go_jsonpath() {
        let obj = json!({
            "metadata": {"name": "g1", "annotations": {"example.com/x": "annval"}},
            "status": {"conditions": [
                {"type": "Ready", "status": "True"},
                {"type": "Other", "status": "X"}
            ]}
        });
        let paths = [
            r#".status.conditions[?(@.type=="Ready")].status"#,
            ".status.conditions[*].type",
            ".status.conditions[0:2].type",
            ".status.conditions[-1].type",
            r".metadata.annotations.example\.com/x",
            ".status.conditions[0].status",
            ".status.conditions[?(@.type==\"Gone\")].status",
            ".status.conditions[bad",
        ];
        let columns: Vec<TableColumn> = paths
            .iter()
            .map(|p| TableColumn {
                name: "c".into(),
                kind: "string".into(),
                format: String::new(),
                description: String::new(),
                priority: 0,
                cell: Cell::Path((*p).into()),
            })
            .collect();
        let table = render(&columns, &[obj], IncludeObject::None, true, json!({}));
        assert_eq!(
            table["rows"][0]["cells"],
            json!([
                "g1", "True", "Ready", "Ready", "Other", "annval", "True", null, null
            ])
        );
    }
}
