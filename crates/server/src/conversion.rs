//! Conversion of custom objects between the versions of their CRD (apiextensions-apiserver
//! `pkg/apiserver/conversion`): the `None` strategy changes only `apiVersion`; the `Webhook`
//! strategy sends one ConversionReview per batch and checks the answer as Kubernetes does; the
//! `ConversionRules` strategy (KEP-3945) applies the CRD's compiled rules in process
//! (`crd_cel::conversion`), object by object and in place, with the webhook's checks of the
//! converted objects as far as the rules can reach (same kind, name, namespace and uid, and the
//! original metadata restored, when a rule reaches `metadata` or `kind`; the labels and
//! annotations the rules write checked).
//!
//! Main types: [`Converter`] (built once per CRD revision), [`ConversionOptions`] (server flags),
//! [`ConversionError`].
//!
//! Architecture Invariant: a batch of N objects is at most one webhook call; objects already at
//! the target version are never sent (nor converted by rules).

use crate::metrics::ConversionFailure as Failure;
use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crd_cel::conversion::{MapWrites, MetadataReach, MetadataWrites};
use crd_core::Path;
use crd_core::validation::{
    TOTAL_ANNOTATION_SIZE_LIMIT, is_valid_label_value, validate_annotations, validate_labels,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceConversion;
use serde_json::{Value, json};

use crate::webhook::{ClientConfig, ServiceRef, WebhookClient};

/// Kubernetes' conversion-webhook client timeout.
pub const DEFAULT_WEBHOOK_TIMEOUT: Duration = Duration::from_secs(30);

/// Server-wide settings of conversion webhooks.
#[derive(Clone, Debug)]
pub struct ConversionOptions {
    /// How long one webhook call may take.
    pub webhook_timeout: Duration,
    /// Where a service reference `<namespace>/<name>` is reached, since there is no cluster DNS.
    /// Without an entry, `<name>.<namespace>.svc:<port>` is resolved by the system resolver.
    pub service_addresses: HashMap<String, SocketAddr>,
}

impl Default for ConversionOptions {
    fn default() -> Self {
        ConversionOptions {
            webhook_timeout: DEFAULT_WEBHOOK_TIMEOUT,
            service_addresses: HashMap::new(),
        }
    }
}

/// A failed conversion; the message is Kubernetes' text (`conversion webhook for ... failed: ...`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConversionError(pub String);

impl fmt::Display for ConversionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// How one CRD converts objects.
#[derive(Clone, Debug)]
pub enum Converter {
    /// `strategy: None`.
    None,
    /// `strategy: Webhook`.
    Webhook(Arc<WebhookConverter>),
    /// A webhook whose client could not be built; every conversion fails with this reason.
    Broken(String),
    /// `strategy: ConversionRules`: the CRD's rules, compiled once per CRD revision.
    Rules(Arc<crd_cel::conversion::ConversionRules>),
}

impl Converter {
    /// Builds the converter of a CRD's `spec.conversion`; `raw` is the stored CRD, which holds
    /// the `conversionRules` the typed model does not.
    pub fn build(
        conversion: Option<&CustomResourceConversion>,
        raw: &Value,
        opts: &ConversionOptions,
    ) -> Self {
        match conversion {
            Some(c) if c.strategy == "Webhook" => match WebhookConverter::build(c, opts) {
                Ok(w) => Converter::Webhook(Arc::new(w)),
                Err(e) => Converter::Broken(e),
            },
            Some(c) if c.strategy == crd_cel::conversion::STRATEGY => {
                Converter::Rules(Arc::new(crd_cel::conversion::ConversionRules::compile(raw)))
            }
            _ => Converter::None,
        }
    }

    /// Converts every object to `target` (`<group>/<version>`), in order. Objects already at the
    /// target are returned as they are; the rest go to the webhook in one call.
    pub async fn convert(
        &self,
        mut objects: Vec<Value>,
        target: &str,
        is_list: bool,
    ) -> Result<Vec<Value>, ConversionError> {
        let pending: Vec<usize> = objects
            .iter()
            .enumerate()
            .filter(|(_, o)| api_version(o) != target)
            .map(|(i, _)| i)
            .collect();
        if pending.is_empty() {
            return Ok(objects);
        }
        let webhook = match self {
            Converter::None => None,
            Converter::Rules(rules) => {
                for i in pending {
                    let obj = std::mem::take(&mut objects[i]);
                    objects[i] = convert_by_rules(rules, obj, target, is_list, i)?;
                }
                return Ok(objects);
            }
            Converter::Webhook(w) => Some(w),
            Converter::Broken(e) => {
                return Err(ConversionError(format!(
                    "conversion webhook for {} failed: {e}",
                    gvk(&objects[pending[0]])
                )));
            }
        };
        // Objects with nothing but apiVersion and kind are converted as with None.
        let (to_send, trivial): (Vec<usize>, Vec<usize>) = pending
            .into_iter()
            .partition(|&i| webhook.is_some() && !is_empty_object(&objects[i]));
        for i in trivial {
            set_api_version(&mut objects[i], target);
        }
        if let (Some(w), false) = (webhook, to_send.is_empty()) {
            let originals: Vec<Value> = to_send.iter().map(|&i| objects[i].clone()).collect();
            let converted = w.call(originals, target, is_list).await?;
            for (i, obj) in to_send.into_iter().zip(converted) {
                objects[i] = obj;
            }
        }
        Ok(objects)
    }

    /// Whether objects are converted in process, without awaiting anything (`None` and
    /// `ConversionRules`): such conversions may run on worker threads, one object at a time
    /// ([`Converter::convert_in_process`]).
    pub fn in_process(&self) -> bool {
        matches!(self, Converter::None | Converter::Rules(_))
    }

    /// Converts one object (at `index` of a batch) in process; `None` for a converter that is
    /// not [`Converter::in_process`]. The result is the one [`Converter::convert`] gives.
    pub fn convert_in_process(
        &self,
        mut obj: Value,
        target: &str,
        is_list: bool,
        index: usize,
    ) -> Option<Result<Value, ConversionError>> {
        if api_version(&obj) == target {
            return Some(Ok(obj));
        }
        match self {
            Converter::None => {
                set_api_version(&mut obj, target);
                Some(Ok(obj))
            }
            Converter::Rules(rules) => Some(convert_by_rules(rules, obj, target, is_list, index)),
            Converter::Webhook(_) | Converter::Broken(_) => None,
        }
    }
}

/// Converts one object by rules. Metadata is checked and restored as a webhook's answer is
/// (a rule may change labels and annotations only), as far as the rules can reach it: rules
/// that touch neither `metadata` nor `kind` cannot change the identity or the metadata, and
/// rules inside labels and annotations get the entries they write checked (the rest are the
/// stored object's, validated when it was written); only rules that reach further pay for a
/// copy of the original and the webhook's full checks. The failure message (the object's
/// group, version and kind) is built only on failure: a list pays nothing for it.
fn convert_by_rules(
    rules: &crd_cel::conversion::ConversionRules,
    mut obj: Value,
    target: &str,
    is_list: bool,
    index: usize,
) -> Result<Value, ConversionError> {
    let version = target.rsplit('/').next().unwrap_or(target);
    let source = api_version(&obj).rsplit('/').next().unwrap_or("");
    let reach = rules.metadata_reach(source, version);
    if reach == MetadataReach::Any {
        let original = obj.clone();
        let fail = |e: String| rules_failure(&original, is_list, index, &e);
        let mut out = rules.convert_owned(obj, version).map_err(fail)?;
        set_api_version(&mut out, target);
        validate_converted(&original, &out).map_err(fail)?;
        restore_object_meta(&original, &mut out).map_err(fail)?;
        return Ok(out);
    }
    // The rules reach at most labels and annotations: kind, name, namespace and UID (and
    // `apiVersion`, until set below) are the original's, so the failure can name the object
    // from the partly converted one.
    let none = MetadataWrites::default();
    let writes = rules.metadata_writes(source, version).unwrap_or(&none);
    let checks = [&writes.labels, &writes.annotations].map(|w| WrittenCheck::of(w, writes));
    let originals = [0, 1].map(|i| checks[i].original(&obj, META_MAPS[i]));
    let source = source.to_string();
    if let Err(e) = rules.convert_in_place(&mut obj, &source, version) {
        return Err(rules_failure(&obj, is_list, index, &e));
    }
    for i in 0..META_MAPS.len() {
        if let Err(e) = checks[i].check(&obj, META_MAPS[i], originals[i].as_ref()) {
            return Err(rules_failure(&obj, is_list, index, &e));
        }
    }
    set_api_version(&mut obj, target);
    // What the restore does to metadata the rules left alone: it is an object, and a `null`
    // label or annotation map goes.
    if let Some(m) = obj.as_object_mut()
        && !m.get("metadata").is_some_and(Value::is_object)
    {
        m.insert("metadata".into(), json!({}));
    }
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in META_MAPS {
            if meta.get(field).is_some_and(Value::is_null) {
                meta.remove(field);
            }
        }
    }
    Ok(obj)
}

/// The message of a failed conversion by rules of `obj` (whose `apiVersion` and kind are the
/// original's).
fn rules_failure(obj: &Value, is_list: bool, index: usize, e: &str) -> ConversionError {
    let at = if is_list {
        format!(" at index {index}")
    } else {
        String::new()
    };
    ConversionError(format!("conversion rules for {} failed{at}: {e}", gvk(obj)))
}

/// How the entries the rules write in one map of `metadata` are checked: with the webhook's
/// checks ([`check_written`]), or, when every key written is valid for the map (decided once per
/// CRD revision), by their values alone. Valid keys leave only the values to fail: an annotation
/// value must be a string (and the map within the total size), a label value a string and a
/// valid label value; only a label value that fails needs the original (an unchanged map is not
/// validated), so the original annotations are never copied.
#[derive(Clone, Copy)]
enum WrittenCheck<'a> {
    /// [`check_written`], against a copy of the original entries.
    Webhook(&'a MapWrites),
    /// These keys, all valid for the map.
    Values(&'a [String]),
}

impl<'a> WrittenCheck<'a> {
    fn of(map: &'a MapWrites, writes: &MetadataWrites) -> Self {
        match map {
            MapWrites::Keys(keys) if !writes.invalid_keys => WrittenCheck::Values(keys),
            _ => WrittenCheck::Webhook(map),
        }
    }

    /// Before the conversion: what the check compares against, when it needs it.
    fn original(self, obj: &Value, field: &str) -> Option<Value> {
        match self {
            WrittenCheck::Webhook(writes) => written_entries(obj, field, writes),
            WrittenCheck::Values(keys) if field == "labels" => {
                Some(Value::Object(entries(meta_map(obj, field), keys)))
            }
            WrittenCheck::Values(_) => None,
        }
    }

    /// After the conversion: [`check_written`]'s result.
    fn check(self, obj: &Value, field: &str, original: Option<&Value>) -> Result<(), String> {
        let keys = match self {
            WrittenCheck::Webhook(writes) => return check_written(obj, field, writes, original),
            WrittenCheck::Values(keys) => keys,
        };
        let map = meta_map(obj, field);
        // A value that is not a string, or not a valid label value, or annotations over the
        // total size: the webhook's check says which, in its words.
        let fails = |v: &Value| match v.as_str() {
            None => true,
            Some(v) => field == "labels" && !is_valid_label_value(v).is_empty(),
        };
        if keys.iter().filter_map(|k| map?.get(k)).any(fails)
            || (field == "annotations" && total_size(map) > TOTAL_ANNOTATION_SIZE_LIMIT)
        {
            return check_written(obj, field, &MapWrites::Keys(keys.to_vec()), original);
        }
        Ok(())
    }
}

/// `metadata.<field>` of `obj`, unless absent or `null`.
fn meta_map<'o>(obj: &'o Value, field: &str) -> Option<&'o Value> {
    obj.get("metadata")
        .and_then(|m| m.get(field))
        .filter(|v| !v.is_null())
}

/// Before a conversion, what [`check_written`] compares against: the original entries of
/// `metadata.<field>` the rules write (the whole map for [`MapWrites::Whole`]).
fn written_entries(obj: &Value, field: &str, writes: &MapWrites) -> Option<Value> {
    let map = obj.get("metadata").and_then(|m| m.get(field));
    match writes {
        MapWrites::Nothing => None,
        MapWrites::Whole => map.cloned(),
        MapWrites::Keys(keys) => Some(Value::Object(entries(map, keys))),
    }
}

/// The entries of `map` at `keys` that are set.
fn entries(map: Option<&Value>, keys: &[String]) -> serde_json::Map<String, Value> {
    keys.iter()
        .filter_map(|k| Some((k.clone(), map?.get(k)?.clone())))
        .collect()
}

/// The webhook's checks of a converted `metadata.<field>` ([`check_meta_map`]) on what the
/// rules wrote: entries the rules do not write are the stored object's (strings, validated
/// when it was written), so their checks cannot fail and are skipped, except the annotations'
/// total size, which every entry counts towards.
fn check_written(
    obj: &Value,
    field: &str,
    writes: &MapWrites,
    original: Option<&Value>,
) -> Result<(), String> {
    let map = meta_map(obj, field);
    match writes {
        MapWrites::Nothing => Ok(()),
        MapWrites::Whole => check_meta_map(field, map, original),
        // Over the limit, the map changed (the stored one was valid): all of it is checked.
        MapWrites::Keys(_)
            if field == "annotations" && total_size(map) > TOTAL_ANNOTATION_SIZE_LIMIT =>
        {
            check_meta_map(field, map, None)
        }
        MapWrites::Keys(keys) => {
            let written = Value::Object(entries(map, keys));
            check_meta_map(field, Some(&written), original)
        }
    }
}

/// The size `ValidateAnnotations` limits: keys and values of every entry.
fn total_size(map: Option<&Value>) -> usize {
    map.and_then(Value::as_object).map_or(0, |m| {
        m.iter()
            .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
            .sum()
    })
}

/// The metadata a conversion may change: labels and annotations.
const META_MAPS: [&str; 2] = ["labels", "annotations"];

/// What a converted object must keep of its original (`validateConvertedObject`).
struct Identity {
    kind: String,
    name: String,
    namespace: String,
    uid: String,
}

impl Identity {
    fn of(o: &Value) -> Self {
        Identity {
            kind: kind(o).to_string(),
            name: meta_str(o, "name").to_string(),
            namespace: meta_str(o, "namespace").to_string(),
            uid: meta_str(o, "uid").to_string(),
        }
    }

    /// `validateConvertedObject`'s checks and texts.
    fn check(&self, converted: &Value) -> Result<(), String> {
        if self.kind != kind(converted) {
            return Err(format!(
                "must have the same kind: {} != {}",
                self.kind,
                kind(converted)
            ));
        }
        for (key, what, before) in [
            ("name", "name", &self.name),
            ("namespace", "namespace", &self.namespace),
            ("uid", "UID", &self.uid),
        ] {
            let after = meta_str(converted, key);
            if before != after {
                return Err(format!("must have the same {what}: {before} != {after}"));
            }
        }
        Ok(())
    }
}

fn api_version(o: &Value) -> &str {
    o.get("apiVersion").and_then(Value::as_str).unwrap_or("")
}

fn kind(o: &Value) -> &str {
    o.get("kind").and_then(Value::as_str).unwrap_or("")
}

fn set_api_version(o: &mut Value, target: &str) {
    let Some(m) = o.as_object_mut() else {
        return;
    };
    // In place when set (every stored object): no copy of the key.
    match m.get_mut("apiVersion") {
        Some(v) => *v = Value::from(target),
        None => {
            m.insert("apiVersion".into(), Value::from(target));
        }
    }
}

fn is_empty_object(o: &Value) -> bool {
    o.as_object()
        .is_some_and(|m| m.keys().all(|k| k == "apiVersion" || k == "kind"))
}

/// Go's `GroupVersionKind.String()`: `stable.example.com/v1, Kind=CronTab`.
fn gvk(o: &Value) -> String {
    format!("{}, Kind={}", api_version(o), kind(o))
}

/// A configured conversion webhook.
pub struct WebhookConverter {
    client: WebhookClient,
    review_version: Option<&'static str>,
}

impl fmt::Debug for WebhookConverter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookConverter")
            .field("url", &self.client.url())
            .field("review_version", &self.review_version)
            .finish_non_exhaustive()
    }
}

impl WebhookConverter {
    fn build(c: &CustomResourceConversion, opts: &ConversionOptions) -> Result<Self, String> {
        let webhook = c.webhook.as_ref().ok_or("no webhook configuration")?;
        let cc = webhook
            .client_config
            .as_ref()
            .ok_or("no webhook client configuration")?;
        let review_version =
            webhook
                .conversion_review_versions
                .iter()
                .find_map(|v| match v.as_str() {
                    "v1" => Some("v1"),
                    "v1beta1" => Some("v1beta1"),
                    _ => None,
                });
        let config = ClientConfig {
            url: cc.url.as_deref(),
            service: cc.service.as_ref().map(|s| ServiceRef {
                namespace: &s.namespace,
                name: &s.name,
                path: s.path.as_deref(),
                port: s.port.unwrap_or(443),
            }),
            ca_bundle: cc.ca_bundle.as_ref().map_or(&[][..], |b| b.0.as_slice()),
            ..ClientConfig::default()
        };
        let client =
            WebhookClient::build(&config, &opts.service_addresses, opts.webhook_timeout, "")?;
        Ok(WebhookConverter {
            client,
            review_version,
        })
    }

    /// One webhook call, recorded in `apiserver_conversion_webhook_request_total` and
    /// `apiserver_conversion_webhook_duration_seconds` with upstream's failure types.
    async fn call(
        &self,
        originals: Vec<Value>,
        target: &str,
        is_list: bool,
    ) -> Result<Vec<Value>, ConversionError> {
        let started = std::time::Instant::now();
        let result = self.call_unmetered(originals, target, is_list).await;
        let failure = result.as_ref().err().map(|(f, _)| *f);
        crate::metrics::conversion_webhook(failure, started.elapsed());
        result.map_err(|(_, e)| e)
    }

    async fn call_unmetered(
        &self,
        originals: Vec<Value>,
        target: &str,
        is_list: bool,
    ) -> Result<Vec<Value>, (Failure, ConversionError)> {
        let for_gvk = gvk(&originals[0]);
        let fail = |e: &dyn fmt::Display| {
            ConversionError(format!("conversion webhook for {for_gvk} failed: {e}"))
        };
        let Some(review_version) = self.review_version else {
            return Err((
                Failure::CallFailure,
                fail(&"no supported conversion review versions"),
            ));
        };
        let uid = uuid::Uuid::new_v4().to_string();
        let review_api_version = format!("apiextensions.k8s.io/{review_version}");
        let body = json!({
            "kind": "ConversionReview",
            "apiVersion": review_api_version,
            "request": {"uid": uid, "desiredAPIVersion": target, "objects": originals},
            "response": {"uid": "", "convertedObjects": null, "result": {"metadata": {}}},
        });
        let (status, text) = self
            .client
            .post_json(body.to_string().into_bytes())
            .await
            .map_err(|e| {
                (
                    Failure::CallFailure,
                    fail(&e.describe(
                        self.client.url(),
                        "context deadline exceeded (Client.Timeout exceeded while awaiting headers)",
                    )),
                )
            })?;
        if !(200..300).contains(&status) {
            return Err((
                Failure::CallFailure,
                fail(&format!(
                    "the server responded with status code {}: {}",
                    status,
                    String::from_utf8_lossy(&text).trim()
                )),
            ));
        }
        let malformed = |e: &dyn fmt::Display| (Failure::MalformedResponse, fail(e));
        let review: Value = serde_json::from_slice(&text).map_err(|e| malformed(&e))?;
        let converted =
            objects_from_review(&review, review_version, &uid).map_err(|e| malformed(&e))?;
        if converted.len() != originals.len() {
            return Err((
                Failure::PartialResponse,
                ConversionError(format!(
                    "conversion webhook for {for_gvk} returned {} objects, expected {}",
                    converted.len(),
                    originals.len()
                )),
            ));
        }
        let mut out = Vec::with_capacity(converted.len());
        for (i, (original, mut obj)) in originals.iter().zip(converted).enumerate() {
            let invalid = |e: String| {
                let e = if is_list {
                    ConversionError(format!(
                        "conversion webhook for {for_gvk} returned invalid converted object at index {i}: {e}"
                    ))
                } else {
                    ConversionError(format!(
                        "conversion webhook for {for_gvk} returned invalid object at index {i}: {e}"
                    ))
                };
                (Failure::InvalidConvertedObject, e)
            };
            if api_version(&obj) != target {
                return Err(invalid(format!(
                    "invalid groupVersion (expected {target}, received {})",
                    api_version(&obj)
                )));
            }
            if kind(&obj) != kind(original) {
                return Err(invalid(format!(
                    "invalid kind (expected {}, received {})",
                    kind(original),
                    kind(&obj)
                )));
            }
            validate_converted(original, &obj).map_err(invalid)?;
            restore_object_meta(original, &mut obj).map_err(|e| {
                let e = if is_list {
                    ConversionError(format!(
                        "conversion webhook for {for_gvk} returned invalid metadata in object at index {i}: {e}"
                    ))
                } else {
                    ConversionError(format!(
                        "conversion webhook for {for_gvk} returned invalid metadata: {e}"
                    ))
                };
                (Failure::InvalidConvertedObject, e)
            })?;
            out.push(obj);
        }
        Ok(out)
    }
}

/// `getConvertedObjectsFromResponse`.
fn objects_from_review(review: &Value, version: &str, uid: &str) -> Result<Vec<Value>, String> {
    let response = review.get("response").filter(|r| r.is_object());
    if version == "v1" {
        let got_api = review
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let got_kind = review.get("kind").and_then(Value::as_str).unwrap_or("");
        if got_api != "apiextensions.k8s.io/v1" || got_kind != "ConversionReview" {
            return Err(format!(
                "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {got_api}, Kind={got_kind}"
            ));
        }
        let response = response.ok_or("no response provided")?;
        let got_uid = response.get("uid").and_then(Value::as_str).unwrap_or("");
        if got_uid != uid {
            return Err(format!("expected response.uid={uid:?}, got {got_uid:?}"));
        }
    }
    let response = response.ok_or("no response provided")?;
    let result = response.get("result").unwrap_or(&Value::Null);
    let status = result.get("status").and_then(Value::as_str).unwrap_or("");
    if status != "Success" {
        let message = result.get("message").and_then(Value::as_str).unwrap_or("");
        if !message.is_empty() {
            return Err(message.to_string());
        }
        return Err(format!(
            "response.result.status was '{status}', not 'Success'"
        ));
    }
    Ok(response
        .get("convertedObjects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default())
}

fn meta_str<'a>(o: &'a Value, key: &str) -> &'a str {
    o.get("metadata")
        .and_then(|m| m.get(key))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `validateConvertedObject`.
fn validate_converted(original: &Value, converted: &Value) -> Result<(), String> {
    Identity::of(original).check(converted)
}

/// `restoreObjectMeta`: the original metadata wins, except labels and annotations, which the
/// webhook may change (and which must then be valid).
fn restore_object_meta(original: &Value, converted: &mut Value) -> Result<(), String> {
    let mut meta = original
        .get("metadata")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let new_meta = converted.get("metadata").cloned().unwrap_or(Value::Null);
    for field in META_MAPS {
        let value = new_meta.get(field).filter(|v| !v.is_null()).cloned();
        let before = original.get("metadata").and_then(|m| m.get(field));
        check_meta_map(field, value.as_ref(), before)?;
        if let Some(m) = meta.as_object_mut() {
            match value {
                Some(v) => m.insert(field.into(), v),
                None => m.remove(field),
            };
        }
    }
    if let Some(m) = converted.as_object_mut() {
        m.insert("metadata".into(), meta);
    }
    Ok(())
}

/// The checks of a converted `metadata.labels` or `metadata.annotations` (`value`, absent when
/// `null`) against the original's (`original`): string values, and valid when changed.
fn check_meta_map(
    field: &str,
    value: Option<&Value>,
    original: Option<&Value>,
) -> Result<(), String> {
    if let Some(map) = value.and_then(Value::as_object) {
        for (k, v) in map {
            if !v.is_string() {
                return Err(format!(
                    "metadata.{field}[{k}] must be a string, but is {} in converted object",
                    go_type(v)
                ));
            }
        }
    }
    if value != original {
        let errs = if field == "labels" {
            validate_labels(value, &Path::new("metadata").child("labels"))
        } else {
            validate_annotations(value, &Path::new("metadata").child("annotation"))
        };
        if !errs.is_empty() {
            return Err(errs.aggregate());
        }
    }
    Ok(())
}

fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn review_response_rules() {
        let uid = "u1";
        let cases: Vec<(Value, &str, Result<usize, &str>)> = vec![
            (
                json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                       "response": {"uid": "u1", "result": {"status": "Success"}, "convertedObjects": [{}, {}]}}),
                "v1",
                Ok(2),
            ),
            (
                json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                       "response": {"uid": "other", "result": {"status": "Success"}}}),
                "v1",
                Err("expected response.uid=\"u1\", got \"other\""),
            ),
            (
                // v1beta1 reviews are not checked for uid or kind, for compatibility.
                json!({"response": {"uid": "other", "result": {"status": "Success"}, "convertedObjects": [{}]}}),
                "v1beta1",
                Ok(1),
            ),
            (
                json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                       "response": {"uid": "u1", "result": {"status": "Failed", "message": "hostPort could not be parsed into a separate host and port"}}}),
                "v1",
                Err("hostPort could not be parsed into a separate host and port"),
            ),
            (
                json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                       "response": {"uid": "u1", "result": {"status": "Failed"}}}),
                "v1",
                Err("response.result.status was 'Failed', not 'Success'"),
            ),
            (
                json!({"apiVersion": "v1", "kind": "Status"}),
                "v1",
                Err(
                    "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got v1, Kind=Status",
                ),
            ),
            (
                json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"}),
                "v1",
                Err("no response provided"),
            ),
        ];
        for (review, version, want) in cases {
            let got = objects_from_review(&review, version, uid).map(|v| v.len());
            assert_eq!(got, want.map_err(String::from), "{review}");
        }
    }

    #[test]
    fn metadata_is_restored_except_labels_and_annotations() {
        let original = json!({"apiVersion": "g/v1beta1", "kind": "K", "metadata": {"name": "a", "namespace": "n", "uid": "1", "generation": 3, "labels": {"x": "1"}}});
        let mut converted = json!({"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a", "namespace": "n", "uid": "1", "generation": 9, "finalizers": ["f"], "annotations": {"y": "2"}}, "spec": {}});
        validate_converted(&original, &converted).unwrap();
        restore_object_meta(&original, &mut converted).unwrap();
        assert_eq!(
            converted,
            json!({"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a", "namespace": "n", "uid": "1", "generation": 3, "annotations": {"y": "2"}}, "spec": {}})
        );
        let renamed = json!({"kind": "K", "metadata": {"name": "b", "namespace": "n", "uid": "1"}});
        assert_eq!(
            validate_converted(&original, &renamed),
            Err("must have the same name: a != b".into())
        );
        let mut bad_label = json!({"kind": "K", "metadata": {"labels": {"x": 1}}});
        assert_eq!(
            restore_object_meta(&original, &mut bad_label),
            Err("metadata.labels[x] must be a string, but is int64 in converted object".into())
        );
    }

    /// A CRD of group `example.com`, v1 (storage) and v2, with `spec` properties and rules.
    fn rules_of(
        v1_spec: &Value,
        v2_spec: &Value,
        rules: &Value,
    ) -> crd_cel::conversion::ConversionRules {
        let version = |name: &str, spec: &Value| {
            json!({"name": name, "served": true, "storage": name == "v1", "schema": {"openAPIV3Schema": {
                "type": "object", "properties": {"spec": {"type": "object", "properties": spec}}}}})
        };
        crd_cel::conversion::ConversionRules::compile(&json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "widgets", "kind": "Widget"},
                     "versions": [version("v1", v1_spec), version("v2", v2_spec)],
                     "conversion": {"strategy": "ConversionRules", "conversionRules": rules}}
        }))
    }

    /// What every conversion by rules must equal: the webhook's checks of the converted object
    /// against a copy of the original (`validateConvertedObject`, `restoreObjectMeta`).
    fn with_webhook_checks(
        rules: &crd_cel::conversion::ConversionRules,
        original: &Value,
    ) -> Result<Value, String> {
        let mut out = rules.convert(original, "v2")?;
        validate_converted(original, &out)?;
        restore_object_meta(original, &mut out)?;
        Ok(out)
    }

    #[test]
    fn rules_keep_the_webhook_checks_of_identity_and_metadata() {
        let v1 = json!({"a": {"type": "string"}, "n": {"type": "integer"},
                        "meta": {"type": "object", "properties": {"name": {"type": "string"}}}});
        let v2 = json!({"b": {"type": "string"}});
        let rule = |from: &str, to: &str| json!([{"from": "v1", "to": "v2", "rules": [{"fromField": from, "toField": to}]}]);
        let obj = |spec: Value, meta: Value| {
            let mut m = json!({"name": "w", "namespace": "default", "uid": "u-1", "generation": 2});
            m.as_object_mut()
                .unwrap()
                .extend(meta.as_object().cloned().unwrap_or_default());
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": m, "spec": spec})
        };
        let cases: Vec<(&str, Value, Value, Result<Value, &str>)> = vec![
            (
                // No rule reaches metadata: it is the original's, null maps removed.
                "nothing",
                rule(".spec.a", ".spec.b"),
                obj(
                    json!({"a": "x"}),
                    json!({"labels": null, "annotations": {"k": "v"}}),
                ),
                Ok(json!({"apiVersion": "example.com/v2", "kind": "Widget",
                          "metadata": {"name": "w", "namespace": "default", "uid": "u-1", "generation": 2, "annotations": {"k": "v"}},
                          "spec": {"b": "x"}})),
            ),
            (
                "an annotation",
                rule(".spec.a", ".metadata.annotations['example.com/a']"),
                obj(json!({"a": "x"}), json!({"labels": {"app": "w"}})),
                Ok(json!({"apiVersion": "example.com/v2", "kind": "Widget",
                          "metadata": {"name": "w", "namespace": "default", "uid": "u-1", "generation": 2,
                                       "labels": {"app": "w"}, "annotations": {"example.com/a": "x"}},
                          "spec": {}})),
            ),
            (
                "an invalid label value",
                rule(".spec.a", ".metadata.labels['app']"),
                obj(json!({"a": "not a label!"}), json!({})),
                Err(
                    "metadata.labels: Invalid value: \"not a label!\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
                ),
            ),
            (
                "a number in an annotation",
                rule(".spec.n", ".metadata.annotations['n']"),
                obj(json!({"n": 3}), json!({})),
                Err("metadata.annotations[n] must be a string, but is int64 in converted object"),
            ),
            (
                "a rule that writes the whole metadata cannot rename",
                rule(".spec.meta", ".metadata"),
                obj(json!({"meta": {"name": "other"}}), json!({})),
                Err("must have the same name: w != other"),
            ),
            (
                "a rule that writes the kind",
                rule(".spec.a", ".kind"),
                obj(json!({"a": "Other"}), json!({})),
                Err("must have the same kind: Widget != Other"),
            ),
        ];
        for (name, raw, original, want) in cases {
            let rules = rules_of(&v1, &v2, &raw);
            let checked = with_webhook_checks(&rules, &original);
            let got = convert_by_rules(&rules, original, "example.com/v2", true, 4);
            let prefix = "conversion rules for example.com/v1, Kind=Widget failed at index 4: ";
            match &want {
                Ok(w) => assert_eq!(got.as_ref().ok(), Some(w), "{name}: {got:?}"),
                Err(e) => assert_eq!(got, Err(ConversionError(format!("{prefix}{e}"))), "{name}"),
            }
            // The fast paths give what the webhook's checks give.
            assert_eq!(
                got.map_err(|e| e.0.trim_start_matches(prefix).to_string()),
                checked.map(|mut o| {
                    set_api_version(&mut o, "example.com/v2");
                    o
                }),
                "{name}"
            );
        }
    }

    #[test]
    fn checks_of_the_written_entries_equal_the_webhook_checks() {
        let v1 = json!({"a": {"type": "string"}, "big": {"type": "string"}, "n": {"type": "integer"},
                        "m": {"type": "object", "additionalProperties": {"type": "string"}}});
        let v2 = json!({"b": {"type": "string"}});
        let rule = |from: &str, to: &str| json!([{"from": "v1", "to": "v2", "rules": [{"fromField": from, "toField": to}]}]);
        let annotate = |key: &str| rule(".spec.a", &format!(".metadata.annotations['{key}']"));
        let obj = |spec: Value, meta: Value| {
            let mut m = json!({"name": "w", "namespace": "default", "uid": "u-1"});
            m.as_object_mut()
                .unwrap()
                .extend(meta.as_object().cloned().unwrap_or_default());
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": m, "spec": spec})
        };
        let near_limit =
            json!({"annotations": {"k": "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT - 10)}});
        let failing = json!([{"from": "v1", "to": "v2", "rules": [{"fromField": ".spec.a",
            "toField": ".metadata.annotations['a']", "transformation": "string(int(self))"}]}]);
        // (case, rules, original, converts)
        let cases: Vec<(&str, Value, Value, bool)> = vec![
            (
                "an invalid annotation key",
                annotate("-bad-"),
                obj(json!({"a": "x"}), json!({})),
                false,
            ),
            (
                "a written annotation beside stored ones",
                annotate("example.com/a"),
                obj(
                    json!({"a": "x"}),
                    json!({"annotations": {"k": "v"}, "labels": {"l": "1"}}),
                ),
                true,
            ),
            (
                "annotations over the total size once written",
                annotate("example.com/a"),
                obj(json!({"a": "0123456789"}), near_limit.clone()),
                false,
            ),
            (
                "an invalid key and the total size",
                annotate("-bad-"),
                obj(json!({"a": "0123456789"}), near_limit),
                false,
            ),
            (
                "the labels written whole",
                rule(".spec.m", ".metadata.labels"),
                obj(json!({"m": {"app": "w"}}), json!({"labels": {"old": "1"}})),
                true,
            ),
            (
                "the labels written whole, one invalid",
                rule(".spec.m", ".metadata.labels"),
                obj(json!({"m": {"app": "not valid!"}}), json!({})),
                false,
            ),
            (
                "a label read and removed",
                rule(".metadata.labels['l']", ".spec.b"),
                obj(json!({}), json!({"labels": {"l": "1", "k": "2"}})),
                true,
            ),
            // Labels by key: with valid keys only the values are checked, a value left as it
            // was stored is not validated (as the webhook's check of an unchanged map), and a
            // key the map does not allow gets the webhook's checks.
            (
                "a label written by key",
                rule(".spec.a", ".metadata.labels['example.com/a']"),
                obj(json!({"a": "x"}), json!({"labels": {"k": "v"}})),
                true,
            ),
            (
                "an invalid label value written as it was stored",
                rule(".spec.a", ".metadata.labels['app']"),
                obj(
                    json!({"a": "not valid!"}),
                    json!({"labels": {"app": "not valid!"}}),
                ),
                true,
            ),
            (
                "an invalid label value written over a valid one",
                rule(".spec.a", ".metadata.labels['app']"),
                obj(json!({"a": "not valid!"}), json!({"labels": {"app": "ok"}})),
                false,
            ),
            (
                "a number in a label",
                rule(".spec.n", ".metadata.labels['n']"),
                obj(json!({"n": 3}), json!({})),
                false,
            ),
            (
                "a label key the map does not allow",
                rule(".spec.a", ".metadata.labels['a b']"),
                obj(json!({"a": "x"}), json!({})),
                false,
            ),
            (
                "a number in an annotation beside stored ones",
                rule(".spec.n", ".metadata.annotations['example.com/n']"),
                obj(json!({"n": 3}), json!({"annotations": {"k": "v"}})),
                false,
            ),
            (
                "a failing transformation names the original version and kind",
                failing,
                obj(json!({"a": "x"}), json!({})),
                false,
            ),
        ];
        let prefix = "conversion rules for example.com/v1, Kind=Widget failed at index 4: ";
        for (name, raw, original, converts) in cases {
            let rules = rules_of(&v1, &v2, &raw);
            let checked = with_webhook_checks(&rules, &original);
            let got = convert_by_rules(&rules, original, "example.com/v2", true, 4);
            assert_eq!(got.is_ok(), converts, "{name}: {got:?}");
            if let Err(e) = &got {
                assert!(e.0.starts_with(prefix), "{name}: {e}");
            }
            assert_eq!(
                got.map_err(|e| e.0.trim_start_matches(prefix).to_string()),
                checked.map(|mut o| {
                    set_api_version(&mut o, "example.com/v2");
                    o
                }),
                "{name}"
            );
        }
    }

    #[tokio::test]
    async fn none_strategy_and_passthrough() {
        let c = Converter::None;
        let objs = vec![
            json!({"apiVersion": "g/v1", "kind": "K", "spec": {"a": 1}}),
            json!({"apiVersion": "g/v1beta1", "kind": "K", "spec": {"a": 2}}),
        ];
        let out = c.convert(objs, "g/v1beta1", true).await.unwrap();
        assert_eq!(
            out,
            vec![
                json!({"apiVersion": "g/v1beta1", "kind": "K", "spec": {"a": 1}}),
                json!({"apiVersion": "g/v1beta1", "kind": "K", "spec": {"a": 2}}),
            ]
        );
        let broken = Converter::Broken("invalid caBundle".into());
        let same = broken
            .convert(
                vec![json!({"apiVersion": "g/v1", "kind": "K"})],
                "g/v1",
                false,
            )
            .await;
        assert!(same.is_ok(), "objects at the target need no webhook");
        let err = broken
            .convert(
                vec![json!({"apiVersion": "g/v1", "kind": "K"})],
                "g/v2",
                false,
            )
            .await
            .unwrap_err();
        assert_eq!(
            err.0,
            "conversion webhook for g/v1, Kind=K failed: invalid caBundle"
        );
    }
}
