//! POST to a collection (`handlers/create.go` and the generic store's create): decode, admit,
//! record field ownership, mutating admission (namespace lifecycle first, then policies and
//! webhooks), fill system fields, prepare, validate, validating admission (policies, webhooks),
//! store, and answer 201 with the object as stored.

use crd_core::{Status, field::go_quote};
use crd_storage::StorageError;
use rand::Rng;
use serde_json::Value;

use super::managed::{self, Ownership};
use super::{Ctx, Reply, invalid, read_decoded, render_object, storage_encoding, verbatim_answer};
use crate::admission::Operation;
use crate::error::ApiError;
use crate::registry::{Strategy, Subresource, meta};
use crate::request::negotiate::decode_object_noting_duplicates;

/// How many names `generateName` tries before giving up, as upstream.
const GENERATE_NAME_ATTEMPTS: usize = 8;

/// Creates one object.
pub async fn handle(ctx: &Ctx<'_>, strategy: &dyn Strategy) -> Result<Reply, ApiError> {
    let (mut obj, repeats) = decode_body_noting_duplicates(ctx, strategy)?;
    let how = crate::registry::Admission {
        sub: Subresource::Main,
        field_validation: ctx.opts.write.field_validation,
        patch: false,
        patch_value: None,
    };
    let mut warnings = duplicate_fields(ctx, strategy, &obj, how.clone(), repeats)?;
    warnings.extend(strategy.admit(&mut obj, &how)?);
    create_object(ctx, strategy, obj, warnings, Ownership::Track).await
}

/// Strict decoding's duplicate fields in a JSON body (`sigs.k8s.io/json`): warnings under
/// `Warn`; under `Strict` a 400 listing them with the unknown fields, in document order, as
/// upstream's decoder reports them. `repeats`: whether the body repeats a key, when its decoding
/// noted it (`None`: not known, checked here).
pub(super) fn duplicate_fields(
    ctx: &Ctx<'_>,
    strategy: &dyn Strategy,
    obj: &Value,
    how: crate::registry::Admission,
    repeats: Option<bool>,
) -> Result<Vec<String>, ApiError> {
    use crate::request::options::FieldValidation;
    if how.field_validation == FieldValidation::Ignore
        || !matches!(
            crate::request::negotiate::body_format(ctx.headers),
            Ok(crate::request::negotiate::BodyFormat::Json)
        )
    {
        return Ok(Vec::new());
    }
    // Most bodies repeat no field: what the decoding noted (or a cheap check), the full scan
    // (paths, document order) only for a body that has a duplicate.
    if repeats.or_else(|| crd_core::strict::has_duplicates(&ctx.body)) != Some(true) {
        return Ok(Vec::new());
    }
    let Some(scan) = crd_core::strict::scan(&ctx.body) else {
        return Ok(Vec::new());
    };
    if scan.duplicates.is_empty() {
        return Ok(Vec::new());
    }
    if how.field_validation == FieldValidation::Warn {
        return Ok(crd_core::strict::problems(&scan, &[]));
    }
    // The unknown fields the admission step finds, to report them together.
    let mut copy = obj.clone();
    let warn = crate::registry::Admission {
        field_validation: FieldValidation::Warn,
        ..how
    };
    let unknown: Vec<String> = strategy
        .admit(&mut copy, &warn)
        .unwrap_or_default()
        .iter()
        .filter_map(|w| w.strip_prefix("unknown field \"")?.strip_suffix('"'))
        .map(String::from)
        .collect();
    let info = strategy.info();
    Err(Status::bad_request(format!(
        "{kind} in version {v} cannot be handled as a {kind}: strict decoding error: {}",
        crd_core::strict::problems(&scan, &unknown).join(", "),
        kind = info.kind,
        v = go_quote(&info.version),
    ))
    .into())
}

/// Creates an admitted object: field ownership, mutating admission, system fields,
/// preparation, validation, validating admission and storage. Shared by POST and by
/// server-side apply of a missing object.
pub async fn create_object(
    ctx: &Ctx<'_>,
    strategy: &dyn Strategy,
    mut obj: Value,
    mut warnings: Vec<String>,
    ownership: Ownership,
) -> Result<Reply, ApiError> {
    let info = strategy.info();
    if !meta::resource_version(&obj).is_empty() {
        return Err(Status::failure(
            500,
            "",
            "resourceVersion should not be set on objects to be created",
        )
        .into());
    }
    set_namespace(ctx, strategy, &mut obj)?;
    strategy.authorize_write(&ctx.state.authorizer, ctx.user, &obj, None)?;
    // The request's manager owns what the client sent (decoded and defaulted), as upstream's
    // create handler records it (`FieldManager.UpdateNoErrors`) before mutating admission and
    // `rest.BeforeCreate`: nobody owns what admission plugins, the system fields or the kind's
    // `PrepareForCreate` set (a Job's generated selector and template labels, a reset status).
    if ownership == Ownership::Track {
        managed::track_update(ctx, strategy, None, &mut obj);
    }
    let admission = &ctx.state.admission;
    admission.admit_create(strategy, &obj).await?;
    // The attributes are built only for plugins that read them (most servers configure none),
    // and the plugins' futures are boxed: the create's future holds only a pointer for them.
    if admission.mutates()
        && Box::pin(admission.mutate(
            &ctx.admission_attributes(strategy, Operation::Create, &obj),
            Some(&mut obj),
            None,
            strategy.apply_schema(),
            &ctx.admission,
        ))
        .await?
    {
        warnings.extend(strategy.admit(&mut obj, &super::readmission(ctx))?);
    }
    wipe_and_fill_system_fields(&mut obj);
    let generate = meta::name(&obj).is_empty() && !meta::meta_str(&obj, "generateName").is_empty();
    strategy.prepare_create(&mut obj, ctx.user);
    let name = if generate {
        generated_name(&obj)
    } else {
        meta::name(&obj).to_string()
    };
    if generate {
        meta::meta_mut(&mut obj).insert("name".into(), Value::String(name.clone()));
    }
    let mut errors = strategy.validate_create(&obj);
    errors.extend(managed::validation_errors(&obj));
    if !errors.is_empty() {
        return Err(invalid(strategy, &name, &errors));
    }
    warnings.extend(crd_core::validation::finalizer_warnings(&obj, None));
    warnings.extend(strategy.write_warnings(&obj, None));
    strategy.check_create_allowed(&name)?;
    if let Some(p) = strategy.write_permission(Subresource::Main, &obj, None) {
        p.check(&ctx.state.authorizer, ctx.user).await?;
    }
    if admission.validates() {
        let attrs = ctx.admission_attributes(strategy, Operation::Create, &obj);
        Box::pin(admission.validate(&attrs, Some(&obj), None, &ctx.admission)).await?;
    }
    let mut attempt = 0;
    let stored = loop {
        let current = meta::name(&obj).to_string();
        let key = info.key(Some(meta::namespace(&obj)), &current);
        // Only a generated name may be tried again; otherwise the object is not needed after.
        let input = if generate {
            obj.clone()
        } else {
            std::mem::take(&mut obj)
        };
        let encoded = storage_encoding(ctx, strategy, input).await?;
        if ctx.dry_run() {
            if ctx.store().get(&key).await.ok().flatten().is_some() {
                return Err(Status::already_exists(&info.group_resource(), &current).into());
            }
            let out = Box::pin(super::preview(strategy, &key, encoded.bytes, 0)).await?;
            return Ok(
                Reply::value(201, render_object(ctx, strategy, out)?).with_warnings(warnings)
            );
        }
        let object = &encoded.object;
        match ctx
            .store()
            .create_decoded(&key, encoded.bytes.clone(), &|| {
                crate::watch_cache::decoding_of(object)
            })
            .await
        {
            Ok(rev) => break (encoded, rev),
            Err(StorageError::AlreadyExists { existing, .. }) => {
                if generate && attempt + 1 < GENERATE_NAME_ATTEMPTS {
                    attempt += 1;
                    let fresh = generated_name(&obj);
                    meta::meta_mut(&mut obj).insert("name".into(), Value::String(fresh));
                    continue;
                }
                if generate {
                    return Err(
                        Status::generate_name_conflict(&info.group_resource(), &current).into(),
                    );
                }
                let mut status = Status::already_exists(&info.group_resource(), &current);
                if let Ok(existing) = serde_json::from_slice::<Value>(&existing.value)
                    && meta::is_deleting(&existing)
                {
                    status.message = format!("object is being deleted: {}", status.message);
                }
                return Err(status.into());
            }
            Err(e) => return Err(ApiError::storage(&info.group_resource(), &current, e)),
        }
    };
    let (encoded, revision) = stored;
    if let Some(answer) = verbatim_answer(ctx, strategy, &encoded, revision) {
        return Ok(Reply::raw_json(201, answer).with_warnings(warnings));
    }
    let out = Box::pin(read_decoded(
        strategy,
        vec![(encoded.object, revision)],
        false,
    ))
    .await?
    .pop()
    .ok_or_else(|| ApiError::from(Status::internal("conversion returned no object")))?;
    Ok(Reply::value(201, render_object(ctx, strategy, out)?).with_warnings(warnings))
}

/// Decodes the request body into an object (JSON, YAML, or protobuf where the kind decodes it).
pub fn decode_body(ctx: &Ctx<'_>, strategy: &dyn Strategy) -> Result<Value, ApiError> {
    decode_body_noting_duplicates(ctx, strategy).map(|(obj, _)| obj)
}

/// [`decode_body`], and whether a JSON body repeats a key (`None` for other formats), for
/// [`duplicate_fields`].
pub fn decode_body_noting_duplicates(
    ctx: &Ctx<'_>,
    strategy: &dyn Strategy,
) -> Result<(Value, Option<bool>), ApiError> {
    let info = strategy.info();
    let (obj, repeats) =
        decode_object_noting_duplicates(ctx.headers, &ctx.body, &info.kind, &info.version, &|b| {
            strategy.decode_protobuf_for(b, ctx.sub)
        })?;
    if let Some(m) = obj.get("metadata")
        && !m.is_object()
        && !m.is_null()
    {
        {
            return Err(Status::bad_request(format!(
                "{kind} in version {v} cannot be handled as a {kind}: json: cannot unmarshal {t} into Go struct field .metadata of type v1.ObjectMeta",
                kind = info.kind,
                v = go_quote(&info.version),
                t = json_type(m)
            ))
            .into());
        }
    }
    Ok((obj, repeats))
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Null => "null",
    }
}

/// Sets or checks `metadata.namespace` against the URL.
fn set_namespace(ctx: &Ctx<'_>, strategy: &dyn Strategy, obj: &mut Value) -> Result<(), ApiError> {
    let m = meta::meta_mut(obj);
    if strategy.info().namespaced() {
        let url_ns = ctx.namespace().unwrap_or("");
        match m.get("namespace").and_then(Value::as_str) {
            None | Some("") => {
                m.insert("namespace".into(), Value::String(url_ns.to_string()));
            }
            Some(ns) if ns != url_ns => {
                return Err(Status::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                )
                .into());
            }
            Some(_) => {}
        }
    } else {
        m.remove("namespace");
    }
    Ok(())
}

/// Clears fields clients may not set and sets uid and creationTimestamp (`rest.BeforeCreate`).
fn wipe_and_fill_system_fields(obj: &mut Value) {
    let m = meta::meta_mut(obj);
    for f in [
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
    ] {
        m.remove(f);
    }
    m.insert(
        "uid".into(),
        // A v4 UUID from the thread's CSPRNG: `Uuid::new_v4` asks the kernel for every one
        // (a `getrandom` call per create).
        Value::String(
            uuid::Builder::from_random_bytes(rand::random())
                .into_uuid()
                .to_string(),
        ),
    );
    m.insert(
        "creationTimestamp".into(),
        Value::String(meta::now_rfc3339()),
    );
}

/// `generateName` plus five random characters from Kubernetes' alphabet.
fn generated_name(obj: &Value) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let base: String = meta::meta_str(obj, "generateName")
        .chars()
        .take(58)
        .collect();
    let mut rng = rand::rng();
    let suffix: String = (0..5)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect();
    format!("{base}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn generated_names_use_prefix_and_alphabet() {
        let obj = json!({"metadata": {"generateName": "a".repeat(70)}});
        let n = generated_name(&obj);
        assert_eq!(n.len(), 63);
        assert!(
            n[58..]
                .chars()
                .all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c))
        );
    }
}
