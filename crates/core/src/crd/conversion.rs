//! `spec.conversion` checks (`validateCustomResourceConversion`) and the webhook URL and service
//! rules of apiserver's `pkg/util/webhook/validation.go`.
//!
//! Upstream validates the internal type, so paths name `webhookClientConfig` and
//! `conversionReviewVersions` directly under `spec.conversion`.
//!
//! `ConversionRules` (KEP-3945, declarative conversion) is accepted as a third strategy; its
//! `conversionRules` are not in the typed model and are checked on the raw CRD by
//! `crd_cel::conversion::check_conversion_rules`.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceConversion, ServiceReference,
};
use serde_json::Value;

use crate::field::{ErrorList, FieldError, Path};
use crate::validation::{is_dns1035_label, is_dns1123_subdomain};

/// The strategies `spec.conversion.strategy` may name (upstream's two, then KEP-3945's).
pub const STRATEGIES: [&str; 3] = ["None", "Webhook", "ConversionRules"];

/// ConversionReview versions this server can send.
pub const SUPPORTED_REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];

pub(super) fn validate(
    conversion: Option<&CustomResourceConversion>,
    preserve_unknown_fields: bool,
    require_recognized: bool,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(c) = conversion else {
        return errs;
    };
    let client_config = c.webhook.as_ref().and_then(|w| w.client_config.as_ref());
    let review_versions: &[String] = c
        .webhook
        .as_ref()
        .map_or(&[], |w| w.conversion_review_versions.as_slice());
    let cc_path = path.child("webhookClientConfig");
    if c.strategy == "Webhook" {
        match client_config {
            None => errs.push(FieldError::required(
                &cc_path,
                "required when strategy is set to Webhook",
            )),
            Some(cc) => match (&cc.url, &cc.service) {
                (Some(_), Some(_)) | (None, None) => errs.push(FieldError::required(
                    &cc_path,
                    "exactly one of url or service is required",
                )),
                (Some(url), None) => errs.extend(validate_webhook_url(&cc_path.child("url"), url)),
                (None, Some(svc)) => {
                    errs.extend(validate_webhook_service(&cc_path.child("service"), svc));
                }
            },
        }
        errs.extend(validate_review_versions(
            review_versions,
            require_recognized,
            &path.child("conversionReviewVersions"),
        ));
    } else {
        if client_config.is_some() {
            errs.push(FieldError::forbidden(
                &cc_path,
                "should not be set when strategy is not set to Webhook",
            ));
        }
        if !review_versions.is_empty() {
            errs.push(FieldError::forbidden(
                &path.child("conversionReviewVersions"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
    }
    let strategy_path = path.child("strategy");
    match c.strategy.as_str() {
        "" => errs.push(FieldError::required(&strategy_path, "")),
        s if STRATEGIES.contains(&s) => {}
        other => errs.push(FieldError::not_supported(
            &strategy_path,
            other,
            &STRATEGIES,
        )),
    }
    if preserve_unknown_fields && c.strategy != "None" {
        errs.push(FieldError::invalid(
            &strategy_path,
            c.strategy.clone(),
            "must be None if spec.preserveUnknownFields is true",
        ));
    }
    errs
}

fn validate_review_versions(
    versions: &[String],
    require_recognized: bool,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    if versions.is_empty() {
        errs.push(FieldError::required(path, ""));
        return errs;
    }
    let mut seen = std::collections::HashSet::new();
    let mut recognized = false;
    for (i, v) in versions.iter().enumerate() {
        if !seen.insert(v.as_str()) {
            errs.push(FieldError::invalid(
                &path.index(i),
                v.clone(),
                "duplicate version",
            ));
            continue;
        }
        for m in is_dns1035_label(v) {
            errs.push(FieldError::invalid(&path.index(i), v.clone(), m));
        }
        recognized |= SUPPORTED_REVIEW_VERSIONS.contains(&v.as_str());
    }
    if require_recognized && !recognized {
        errs.push(FieldError::invalid(
            path,
            Value::from(versions.to_vec()),
            format!(
                "must include at least one of {}",
                SUPPORTED_REVIEW_VERSIONS.join(", ")
            ),
        ));
    }
    errs
}

/// `ValidateWebhookURL` with `forceHttps`.
pub fn validate_webhook_url(path: &Path, raw: &str) -> ErrorList {
    const FORM: &str = "; desired format: https://host[/path]";
    let mut errs = ErrorList::new();
    let u = match url::Url::parse(raw) {
        Ok(u) => u,
        Err(url::ParseError::EmptyHost) => {
            errs.push(FieldError::invalid(
                path,
                "",
                format!("host must be specified{FORM}"),
            ));
            return errs;
        }
        Err(e) => {
            errs.push(FieldError::required(
                path,
                format!("url must be a valid URL: parse {raw:?}: {e}{FORM}"),
            ));
            return errs;
        }
    };
    if u.scheme() != "https" {
        errs.push(FieldError::invalid(
            path,
            u.scheme(),
            format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    if u.host_str().unwrap_or("").is_empty() {
        errs.push(FieldError::invalid(
            path,
            "",
            format!("host must be specified{FORM}"),
        ));
    }
    if !u.username().is_empty() || u.password().is_some() {
        let user = match u.password() {
            Some(p) => format!("{}:{p}", u.username()),
            None => u.username().to_string(),
        };
        errs.push(FieldError::invalid(
            path,
            user,
            "user information is not permitted in the URL",
        ));
    }
    if let Some(f) = u.fragment().filter(|f| !f.is_empty()) {
        errs.push(FieldError::invalid(
            path,
            f,
            "fragments are not permitted in the URL",
        ));
    }
    if let Some(q) = u.query().filter(|q| !q.is_empty()) {
        errs.push(FieldError::invalid(
            path,
            q,
            "query parameters are not permitted in the URL",
        ));
    }
    errs
}

/// `ValidateWebhookService` on a CRD's service reference.
fn validate_webhook_service(path: &Path, svc: &ServiceReference) -> ErrorList {
    validate_webhook_service_parts(
        path,
        &svc.name,
        &svc.namespace,
        svc.path.as_deref(),
        svc.port.unwrap_or(443),
    )
}

/// `ValidateWebhookService`: a service reference's name, namespace, port and path, shared by
/// conversion and admission webhooks.
pub fn validate_webhook_service_parts(
    path: &Path,
    name: &str,
    namespace: &str,
    url_path: Option<&str>,
    port: i32,
) -> ErrorList {
    let mut errs = ErrorList::new();
    if name.is_empty() {
        errs.push(FieldError::required(
            &path.child("name"),
            "service name is required",
        ));
    }
    if namespace.is_empty() {
        errs.push(FieldError::required(
            &path.child("namespace"),
            "service namespace is required",
        ));
    }
    if !(1..=65535).contains(&port) {
        errs.push(FieldError::invalid(
            &path.child("port"),
            port,
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    let Some(url_path) = url_path else {
        return errs;
    };
    if url_path.is_empty() || url_path == "/" {
        return errs;
    }
    let pp = path.child("path");
    if url_path == "//" {
        errs.push(FieldError::invalid(
            &pp,
            url_path,
            "segment[0] may not be empty",
        ));
        return errs;
    }
    if !url_path.starts_with('/') {
        errs.push(FieldError::invalid(&pp, url_path, "must start with a '/'"));
    }
    let mut rest = url_path.strip_prefix('/').unwrap_or(url_path);
    rest = rest.strip_suffix('/').unwrap_or(rest);
    for (i, step) in rest.split('/').enumerate() {
        if step.is_empty() {
            errs.push(FieldError::invalid(
                &pp,
                url_path,
                format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for m in is_dns1123_subdomain(step) {
            errs.push(FieldError::invalid(
                &pp,
                url_path,
                format!("segment[{i}]: {m}"),
            ));
        }
    }
    errs
}
