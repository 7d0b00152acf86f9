//! Upstream's `cel.ValidFieldPath`: a JSON path of field and map accessors checked against a
//! structural schema (`.spec.foo`, `.spec['a.b']`). Used for `x-kubernetes-validations[].fieldPath`
//! and for `selectableFields[].jsonPath`.

use crd_core::field::{ErrorList, FieldError, Path};
use serde_json::Value;

use crate::prune::{additional, properties};

/// Splits a path into `.`, `[`, `]`, single-quoted strings and the text between them, as the Go
/// scanner does.
fn tokens(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        let b = rest.as_bytes();
        let mut end = None;
        for i in 0..b.len() {
            if b[0] == b'\'' {
                if i > 0 && b[i] == b'\'' && b[i - 1] != b'\\' {
                    end = Some(i + 1);
                    break;
                }
                continue;
            }
            if matches!(b[i], b'.' | b'[' | b']') {
                end = Some(if i == 0 { 1 } else { i });
                break;
            }
        }
        let end = end.unwrap_or(b.len());
        out.push(&rest[..end]);
        rest = &rest[end..];
    }
    out
}

fn unescape_single_quote(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            return Err("invalid escape char \\".into());
        };
        out.push(match e {
            'a' => '\u{7}',
            'b' => '\u{8}',
            'f' => '\u{c}',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'v' => '\u{b}',
            '\'' => '\'',
            '\\' => '\\',
            other => return Err(format!("invalid escape char \\{other}")),
        });
    }
    Ok(out)
}

/// Checks `json_path` against `schema` and returns the field path it names and the schema found
/// there (`None` when it lands under `additionalProperties` without a schema).
///
/// Errors are upstream's texts (`does not refer to a valid field`,
/// `array notation is not allowed`, ...), to be wrapped by the caller.
pub fn valid_field_path<'a>(
    json_path: &str,
    schema: &'a Value,
    allow_array_notation: bool,
) -> Result<(Path, Option<&'a Value>), String> {
    let mut path = Path::root();
    let mut current: Option<&'a Value> = Some(schema);
    let toks = tokens(json_path);
    let mut it = toks.into_iter();
    let invalid = || "does not refer to a valid field".to_string();
    while let Some(tok) = it.next() {
        let name = match tok {
            "[" => {
                if !allow_array_notation {
                    return Err("array notation is not allowed".into());
                }
                let Some(tok) = it.next() else {
                    return Err("unexpected end of JSON path".into());
                };
                if tok.len() < 2 || !tok.starts_with('\'') || !tok.ends_with('\'') {
                    return Err(format!("expected single quoted string but got {tok}"));
                }
                let unescaped = unescape_single_quote(&tok[1..tok.len() - 1])
                    .map_err(|e| format!("invalid string literal: {e}"))?;
                let Some(close) = it.next() else {
                    return Err("unexpected end of JSON path".into());
                };
                if close != "]" {
                    // Validate the accessor first, as upstream does, then complain.
                    step(&mut path, &mut current, &unescaped)?;
                    return Err(format!("expected ] but got {close}"));
                }
                unescaped
            }
            "." => {
                let Some(tok) = it.next() else {
                    return Err("unexpected end of JSON path".into());
                };
                tok.to_string()
            }
            other => return Err(format!("expected [ or . but got: {other}")),
        };
        if current.is_none() {
            return Err(invalid());
        }
        step(&mut path, &mut current, &name)?;
    }
    Ok((path, current))
}

fn step(path: &mut Path, current: &mut Option<&Value>, name: &str) -> Result<(), String> {
    let Some(s) = *current else {
        return Err("does not refer to a valid field".into());
    };
    if let Some(props) = properties(s) {
        *path = path.child(name);
        match props.get(name) {
            Some(p) => {
                *current = Some(p);
                Ok(())
            }
            None => Err("does not refer to a valid field".into()),
        }
    } else if additional(s).is_set() {
        *path = path.key(name);
        *current = additional(s).schema();
        Ok(())
    } else {
        Err("does not refer to a valid field".into())
    }
}

/// The most selectable fields a CRD version may declare (`MaxSelectableFields`).
const MAX_SELECTABLE_FIELDS: usize = 8;

/// Upstream's `ValidateCustomResourceSelectableFields`: each `jsonPath` required, a valid
/// field path without array notation, not under `metadata`, naming a string, boolean or
/// integer field, and unique; at most 8 of them. `fields` is the `selectableFields` array,
/// `path` where it is reported.
pub fn check_selectable_fields(fields: &[Value], schema: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut unique = std::collections::BTreeSet::new();
    for (i, f) in fields.iter().enumerate() {
        let fp = path.index(i).child("jsonPath");
        let json_path = f.get("jsonPath").and_then(Value::as_str).unwrap_or("");
        if json_path.is_empty() {
            errs.push(FieldError::required(&fp, ""));
            continue;
        }
        let (found, field_schema) = match valid_field_path(json_path, schema, false) {
            Ok(found) => found,
            Err(e) => {
                errs.push(FieldError::invalid(
                    &fp,
                    json_path,
                    format!("is an invalid path: {e}"),
                ));
                continue;
            }
        };
        let found = found.to_string();
        if found == "metadata" || found.starts_with("metadata.") || found.starts_with("metadata[") {
            errs.push(FieldError::invalid(
                &fp,
                json_path,
                "must not point to fields in metadata",
            ));
        }
        let allowed = field_schema
            .and_then(|s| s.get("type"))
            .and_then(Value::as_str)
            .is_some_and(|t| matches!(t, "string" | "boolean" | "integer"));
        if !allowed {
            errs.push(FieldError::invalid(
                &fp,
                json_path,
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            ));
        }
        if !unique.insert(found) {
            errs.push(FieldError::duplicate(&fp, json_path));
        }
    }
    if unique.len() > MAX_SELECTABLE_FIELDS {
        errs.push(FieldError::too_many(
            path,
            unique.len(),
            MAX_SELECTABLE_FIELDS,
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths() {
        let s = json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "a": {"type": "string"},
            "m": {"type": "object", "additionalProperties": {"type": "object", "properties": {"x": {"type": "integer"}}}}
        }}}});
        let ok = |p: &str, arr: bool| valid_field_path(p, &s, arr).map(|(p, _)| p.to_string());
        assert_eq!(ok(".spec.a", true), Ok("spec.a".to_string()));
        assert_eq!(ok(".spec['a']", true), Ok("spec.a".to_string()));
        assert_eq!(
            ok(".spec.m['k.1'].x", true),
            Ok("spec.m[k.1].x".to_string())
        );
        assert_eq!(
            ok(".spec.b", true),
            Err("does not refer to a valid field".to_string())
        );
        assert_eq!(
            ok(".spec['a']", false),
            Err("array notation is not allowed".to_string())
        );
        assert_eq!(
            ok("spec", true),
            Err("expected [ or . but got: spec".to_string())
        );
        assert_eq!(
            ok(".spec.", true),
            Err("unexpected end of JSON path".to_string())
        );
        assert_eq!(
            ok(".spec[a]", true),
            Err("expected single quoted string but got a".to_string())
        );
        assert_eq!(
            ok(".spec.a.b", true),
            Err("does not refer to a valid field".to_string())
        );
        let (_, found) = valid_field_path(".spec.a", &s, true).unwrap_or((Path::root(), None));
        assert_eq!(found.map(|f| f["type"].clone()), Some(json!("string")));
    }
}
