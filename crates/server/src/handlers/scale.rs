//! The `/scale` subresource (upstream `ScaleREST`): an `autoscaling/v1` Scale
//! read from, and written back to, the paths the CRD names. Writes go through the main update
//! path, so the whole object is validated and `generation` is bumped.

use crd_core::Status;
use serde_json::{Value, json};

use super::create::decode_body;
use super::managed::Ownership;
use super::patch::{apply, patch_kind};
use super::update::write_update;
use super::{Ctx, Reply, get_stored, read_object};
use crate::error::ApiError;
use crate::registry::serving::ScalePaths;
use crate::registry::{Strategy, meta};
use crate::request::negotiate::{BodyFormat, PatchType, decode_document};
use crate::request::route::Verb;
use crate::table::lookup;

/// Answers GET, PUT and PATCH of `/scale`.
pub async fn handle(
    ctx: &Ctx<'_>,
    strategy: &dyn Strategy,
    paths: &ScalePaths,
) -> Result<Reply, ApiError> {
    let info = strategy.info();
    let name = ctx.name();
    let gr = info.group_resource();
    let current = get_stored(ctx, strategy).await?;
    let obj = read_object(strategy, &current).await?;
    if ctx.req.verb == Verb::Get {
        return Ok(Reply::value(200, scale_of(&obj, paths)?));
    }
    // A write starts from the object's Scale; a missing replicas field reads as upstream's
    // sentinel, which the write must replace (`scaleUpdatedObjectInfo`).
    let (mut scale, found) = scale_parts(&obj, paths)?;
    if !found {
        scale["spec"]["replicas"] = Value::from(UNSET_REPLICAS);
    }
    let requested = match ctx.req.verb {
        Verb::Update => decode_body(ctx, strategy)?,
        Verb::Patch => {
            let kind = patch_kind(ctx, strategy)?;
            if kind == PatchType::Apply {
                return apply_scale(ctx, strategy, paths, &current, &obj).await;
            }
            // The Scale kind is typed by no schema here: a strategic merge patch of its scalar
            // fields is a merge.
            apply(
                kind,
                scale.clone(),
                &ctx.body,
                ctx.opts.write.field_validation,
                None,
            )?
            .0
        }
        _ => return Err(Status::method_not_supported(&gr, ctx.req.verb.as_str()).into()),
    };
    let rv = meta::resource_version(&requested);
    if !rv.is_empty() && rv != current.mod_revision.to_string() {
        return Err(Status::conflict_modified(&gr, name).into());
    }
    let replicas = requested.pointer("/spec/replicas").and_then(Value::as_i64);
    let Some(replicas) = replicas
        .filter(|r| *r != UNSET_REPLICAS)
        .or_else(|| found.then(|| scale["spec"]["replicas"].as_i64().unwrap_or(0)))
    else {
        return Err(Status::bad_request(format!(
            "the spec replicas field {:?} cannot be empty",
            paths.spec_replicas
        ))
        .into());
    };
    let mut new = obj.clone();
    set_path(&mut new, &paths.spec_replicas, Value::from(replicas));
    let (out, warnings) = write_update(ctx, strategy, &current, new, Ownership::Track).await?;
    Ok(Reply::value(200, scale_of(&out, paths)?).with_warnings(warnings))
}

/// Server-side apply of a Scale: the configuration's `spec.replicas` is applied to the object's
/// replicas field by the manager, through the `scale` subresource (its managed-fields entry
/// says so), with conflicts against other owners of that field.
async fn apply_scale(
    ctx: &Ctx<'_>,
    strategy: &dyn Strategy,
    paths: &ScalePaths,
    current: &crd_storage::KeyValue,
    obj: &Value,
) -> Result<Reply, ApiError> {
    super::managed::check_patch_options(ctx, true)?;
    let info = strategy.info();
    let config = decode_document(BodyFormat::Yaml, &ctx.body)
        .map_err(|e| Status::bad_request(format!("error decoding patch: {e}")))?;
    let api_version = config
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = config.get("kind").and_then(Value::as_str).unwrap_or("");
    if api_version != "autoscaling/v1" || kind != "Scale" {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        return Err(Status::bad_request(format!(
            "invalid object type: {group}/{version}, Kind={kind}"
        ))
        .into());
    }
    let mut parent = json!({
        "apiVersion": info.api_version(),
        "kind": info.kind,
        "metadata": {"name": ctx.name()},
    });
    if let Some(replicas) = config.pointer("/spec/replicas") {
        set_path(&mut parent, &paths.spec_replicas, replicas.clone());
    }
    let applied = super::managed::apply(ctx, strategy, Some(obj), &parent)?;
    let (out, warnings) = write_update(ctx, strategy, current, applied, Ownership::Applied).await?;
    Ok(Reply::value(200, scale_of(&out, paths)?).with_warnings(warnings))
}

/// The replicas a Scale built from an object without its replicas field carries into a write
/// (upstream's `invalidSpecReplicas`, the smallest int32).
const UNSET_REPLICAS: i64 = -2_147_483_648;

/// Builds the `autoscaling/v1` Scale of an object; reading one whose replicas field is missing
/// is upstream's internal error.
pub fn scale_of(obj: &Value, paths: &ScalePaths) -> Result<Value, ApiError> {
    match scale_parts(obj, paths)? {
        (scale, true) => Ok(scale),
        (_, false) => Err(Status::internal(format!(
            "the spec replicas field {:?} does not exist",
            paths.spec_replicas
        ))
        .into()),
    }
}

/// The Scale of an object (replicas 0 when its field is missing) and whether the field exists
/// (upstream's `scaleFromCustomResource`).
fn scale_parts(obj: &Value, paths: &ScalePaths) -> Result<(Value, bool), ApiError> {
    let (spec, found) = match lookup(obj, &paths.spec_replicas) {
        None => (0, false),
        Some(v) => (as_int(v, &paths.spec_replicas)?, true),
    };
    let status = match lookup(obj, &paths.status_replicas) {
        None => 0,
        Some(v) => as_int(v, &paths.status_replicas)?,
    };
    let mut status_obj = json!({ "replicas": status });
    // A CRD's path holds the selector's string form; a built-in kind's holds a LabelSelector
    // object, whose string form the Scale shows.
    let selector = match paths.label_selector.as_deref().and_then(|p| lookup(obj, p)) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(v @ Value::Object(_)) => crd_core::labels::Selector::from_label_selector_json(v)
            .ok()
            .map(|s| s.to_string()),
        _ => None,
    };
    if let Some(sel) = selector {
        status_obj["selector"] = Value::from(sel);
    }
    let m = obj.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let mut metadata = serde_json::Map::new();
    for k in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = m.get(k) {
            metadata.insert(k.into(), v.clone());
        }
    }
    let scale = json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": { "replicas": spec },
        "status": status_obj,
    });
    Ok((scale, found))
}

fn as_int(v: &Value, path: &str) -> Result<i64, ApiError> {
    if let Some(i) = v.as_i64() {
        return Ok(i);
    }
    let shown = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    Err(Status::internal(format!(
        "{path} accessor error: {shown} is of the type {}, expected int64",
        crd_merge::strategic::go_type(v)
    ))
    .into())
}

/// Sets a value at a simple `.a.b.c` path, creating intermediate objects.
pub fn set_path(obj: &mut Value, path: &str, value: Value) {
    let parts: Vec<&str> = path.split('.').filter(|p| !p.is_empty()).collect();
    let Some((last, parents)) = parts.split_last() else {
        return;
    };
    let mut cur = obj;
    for p in parents {
        if !cur.get(*p).is_some_and(Value::is_object) {
            if let Some(m) = cur.as_object_mut() {
                m.insert((*p).to_string(), json!({}));
            } else {
                return;
            }
        }
        let Some(next) = cur.get_mut(*p) else {
            return;
        };
        cur = next;
    }
    if let Some(m) = cur.as_object_mut() {
        m.insert((*last).to_string(), value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths() -> ScalePaths {
        ScalePaths {
            spec_replicas: ".spec.replicas".into(),
            status_replicas: ".status.replicas".into(),
            label_selector: Some(".status.labelSelector".into()),
        }
    }

    #[test]
    fn scale_from_object() {
        let obj = json!({"metadata": {"name": "a", "namespace": "n", "uid": "u", "resourceVersion": "7", "generation": 2},
                         "spec": {"replicas": 3}, "status": {"replicas": 2, "labelSelector": "app=x"}});
        assert_eq!(
            scale_of(&obj, &paths()).unwrap(),
            json!({"kind": "Scale", "apiVersion": "autoscaling/v1",
                   "metadata": {"name": "a", "namespace": "n", "uid": "u", "resourceVersion": "7"},
                   "spec": {"replicas": 3}, "status": {"replicas": 2, "selector": "app=x"}})
        );
        let missing = scale_of(&json!({"spec": {}}), &paths())
            .unwrap_err()
            .to_status()
            .unwrap();
        assert_eq!(missing.code, 500);
        assert_eq!(
            missing.message,
            "Internal error occurred: the spec replicas field \".spec.replicas\" does not exist"
        );
        let wrong = scale_of(&json!({"spec": {"replicas": "foo"}}), &paths())
            .unwrap_err()
            .to_status()
            .unwrap();
        assert_eq!(
            wrong.message,
            "Internal error occurred: .spec.replicas accessor error: foo is of the type string, expected int64"
        );
    }

    #[test]
    fn set_path_creates_parents() {
        let mut obj = json!({"spec": {"x": 1}});
        set_path(&mut obj, ".spec.scale.replicas", Value::from(5));
        assert_eq!(obj, json!({"spec": {"x": 1, "scale": {"replicas": 5}}}));
    }
}
