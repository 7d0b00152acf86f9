//! JSONPath as printer columns use it (client-go's dialect, `crd_server::jsonpath`): a path's
//! results over an object and their printing, the simple lookup of selectable fields and scale
//! paths, a whole Table rendered with a column of every type, and the field-path
//! checks of `x-kubernetes-validations[].fieldPath` and `selectableFields[].jsonPath` against a
//! schema.
//!
//! Input: the path on the first line, then a JSON document (the object, and the schema).
#![no_main]

use crd_server::jsonpath;
use crd_server::table::{self, Cell, IncludeObject, TableColumn};
use libfuzzer_sys::fuzz_target;
use serde_json::json;

fuzz_target!(|data: &[u8]| {
    let (line, rest) = crd_apiserver_fuzz::first_line(data);
    let Ok(path) = std::str::from_utf8(line) else {
        return;
    };
    let obj = crd_apiserver_fuzz::json(rest).unwrap_or_else(|| json!({}));
    let _ = table::lookup(&obj, path);
    if let Ok(p) = jsonpath::JsonPath::parse(path)
        && let Ok(found) = p.find(&obj)
    {
        for v in found {
            let _ = jsonpath::go_text(&v);
        }
    }
    let columns: Vec<TableColumn> = ["string", "integer", "number", "boolean", "date", "other"]
        .iter()
        .enumerate()
        .map(|(i, kind)| TableColumn {
            name: (*kind).to_string(),
            kind: (*kind).to_string(),
            format: String::new(),
            description: String::new(),
            priority: 0,
            cell: if i == 0 {
                Cell::RawPath(path.to_string())
            } else {
                Cell::Path(path.to_string())
            },
        })
        .collect();
    let _ = table::render(
        &columns,
        std::slice::from_ref(&obj),
        IncludeObject::Metadata,
        true,
        json!({}),
    );
    let _ = crd_schema::checks::valid_field_path(path, &obj, true);
    let _ = crd_schema::checks::valid_field_path(path, &obj, false);
});
