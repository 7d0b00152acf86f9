//! `CertificateSigningRequests` (`certificates.k8s.io/v1`), as kube-apiserver's registry and its
//! three certificate admission plugins treat them. No signer runs here (as in envtest: no
//! controller manager); a test or an operator approves through `/approval` and issues through
//! `/status`, as a signer would.
//!
//! - [`prepare_create`][]: the requester's identity is stamped into `spec` (whatever the body
//!   said) and the status is emptied: nobody creates a pre-approved request.
//! - [`prepare_update`][]: each endpoint changes only its part (upstream's three strategies): the
//!   object itself only metadata, `/status` the certificate and conditions other than
//!   `Approved`/`Denied`, `/approval` the conditions; condition times are filled in.
//! - [`validate`][]: `ValidateCertificateSigningRequest{Create,Update,StatusUpdate,ApprovalUpdate}`
//!   with upstream's compatibility allowances for data already stored.
//! - [`signer_check`][]: what the `CertificateApproval`, `CertificateSigning` and
//!   `CertificateSubjectRestriction` plugins ask of a write, for the server to authorize.

use std::collections::BTreeMap;

use base64::Engine;
use crd_core::{ErrorList, FieldError, Path};
use serde_json::{Map, Value, json};
use x509_parser::prelude::FromDer;

/// The signer whose certificates authenticate to kube-apiserver (the subject restriction's).
pub const KUBE_APISERVER_CLIENT: &str = "kubernetes.io/kube-apiserver-client";

/// The `v1beta1`-only signer `v1` refuses on create.
pub const LEGACY_UNKNOWN: &str = "kubernetes.io/legacy-unknown";

/// The key usages upstream knows (`allValidUsages`), sorted as Go's `sets.List` prints them.
const USAGES: &[&str] = &[
    "any",
    "cert sign",
    "client auth",
    "code signing",
    "content commitment",
    "crl sign",
    "data encipherment",
    "decipher only",
    "digital signature",
    "email protection",
    "encipher only",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "key agreement",
    "key encipherment",
    "microsoft sgc",
    "netscape sgc",
    "ocsp signing",
    "s/mime",
    "server auth",
    "signing",
    "timestamping",
];

/// Condition types whose only allowed status is `True`.
const TRUE_ONLY: &[&str] = &["Approved", "Denied", "Failed"];

/// Who sent a create: the identity upstream's `PrepareForCreate` copies into `spec`.
#[derive(Clone, Copy, Debug)]
pub struct Requester<'a> {
    /// The user name.
    pub name: &'a str,
    /// The user's UID.
    pub uid: &'a str,
    /// The user's groups.
    pub groups: &'a [String],
    /// The user's extra attributes.
    pub extra: &'a BTreeMap<String, Vec<String>>,
}

/// The endpoint a write came through: each changes only its own part of the object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// The object itself: metadata only (spec and status are kept).
    Main,
    /// `/status`: the certificate and conditions other than `Approved`/`Denied`.
    Status,
    /// `/approval`: the conditions.
    Approval,
}

/// `PrepareForCreate`: the requester's identity replaces whatever `spec.username`, `uid`,
/// `groups` and `extra` the body held, and the status starts empty.
pub fn prepare_create(obj: &mut Value, requester: &Requester<'_>) {
    let Some(m) = obj.as_object_mut() else {
        return;
    };
    if let Some(spec) = m.entry("spec").or_insert_with(|| json!({})).as_object_mut() {
        for f in ["username", "uid", "groups", "extra"] {
            spec.remove(f);
        }
        if !requester.name.is_empty() {
            spec.insert("username".into(), json!(requester.name));
        }
        if !requester.uid.is_empty() {
            spec.insert("uid".into(), json!(requester.uid));
        }
        if !requester.groups.is_empty() {
            spec.insert("groups".into(), json!(requester.groups));
        }
        if !requester.extra.is_empty() {
            spec.insert("extra".into(), json!(requester.extra));
        }
    }
    m.insert("status".into(), json!({}));
}

/// The three strategies' `PrepareForUpdate`, with `now` (RFC 3339) for condition times.
pub fn prepare_update(new: &mut Value, old: &Value, endpoint: Endpoint, now: &str) {
    let Some(m) = new.as_object_mut() else {
        return;
    };
    set_or_remove(m, "spec", old.get("spec"));
    match endpoint {
        Endpoint::Main => set_or_remove(m, "status", old.get("status")),
        Endpoint::Status => {
            for t in ["Approved", "Denied"] {
                preserve_condition_instances(new, old, t);
            }
            populate_condition_times(new, old, now);
        }
        Endpoint::Approval => {
            let certificate = old.pointer("/status/certificate").cloned();
            if let Some(status) = status_mut(new) {
                match certificate {
                    Some(c) => status.insert("certificate".into(), c),
                    None => status.remove("certificate"),
                };
            }
            populate_condition_times(new, old, now);
        }
    }
}

fn set_or_remove(m: &mut Map<String, Value>, key: &str, v: Option<&Value>) {
    match v {
        Some(v) => m.insert(key.into(), v.clone()),
        None => m.remove(key),
    };
}

fn status_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    obj.as_object_mut()?
        .entry("status")
        .or_insert_with(|| json!({}))
        .as_object_mut()
}

fn conditions(obj: &Value) -> &[Value] {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// `preserveConditionInstances`: when `/status` keeps the number of conditions of type `t`, they
/// keep their stored values (a change to them is not the status writer's to make).
fn preserve_condition_instances(new: &mut Value, old: &Value, t: &str) {
    let old_of: Vec<Value> = conditions(old)
        .iter()
        .filter(|c| str_at(c, "type") == t)
        .cloned()
        .collect();
    let Some(list) = new
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    let new_indices: Vec<usize> = (0..list.len())
        .filter(|&i| str_at(&list[i], "type") == t)
        .collect();
    if new_indices.len() != old_of.len() {
        return;
    }
    for (i, c) in new_indices.into_iter().zip(old_of) {
        list[i] = c;
    }
}

/// `populateConditionTimestamps`: a condition without `lastUpdateTime` gets `now`; one without
/// `lastTransitionTime` keeps the stored time of the same type and status, or gets `now`.
fn populate_condition_times(new: &mut Value, old: &Value, now: &str) {
    let olds = conditions(old).to_vec();
    let Some(list) = new
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for c in list.iter_mut().filter_map(Value::as_object_mut) {
        if c.get("lastUpdateTime").is_none_or(Value::is_null) {
            c.insert("lastUpdateTime".into(), json!(now));
        }
        if c.get("lastTransitionTime").is_none_or(Value::is_null) {
            let (t, s) = (
                c.get("type").and_then(Value::as_str).unwrap_or(""),
                c.get("status").and_then(Value::as_str).unwrap_or(""),
            );
            let kept = olds.iter().find_map(|o| {
                (str_at(o, "type") == t && str_at(o, "status") == s)
                    .then(|| o.get("lastTransitionTime").filter(|v| !v.is_null()))
                    .flatten()
            });
            c.insert(
                "lastTransitionTime".into(),
                kept.cloned().unwrap_or_else(|| json!(now)),
            );
        }
    }
}

/// `SetDefaults_CertificateSigningRequestCondition`: a condition without a status is `True`.
pub fn apply_defaults(obj: &mut Value) {
    if let Some(list) = obj
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    {
        for c in list.iter_mut().filter_map(Value::as_object_mut) {
            if c.get("status")
                .and_then(Value::as_str)
                .unwrap_or("")
                .is_empty()
            {
                c.insert("status".into(), json!("True"));
            }
        }
    }
}

/// The CONDITION column (`extractCSRStatus`): `Denied`, `Approved` or `Pending`, then
/// `,Failed` and `,Issued` when they apply.
pub fn condition_summary(obj: &Value) -> String {
    let has = |t: &str| conditions(obj).iter().any(|c| str_at(c, "type") == t);
    let mut s = if has("Denied") {
        "Denied".to_string()
    } else if has("Approved") {
        "Approved".to_string()
    } else {
        "Pending".to_string()
    };
    if has("Failed") {
        s.push_str(",Failed");
    }
    if !str_at(obj.get("status").unwrap_or(&Value::Null), "certificate").is_empty() {
        s.push_str(",Issued");
    }
    s
}

/// A `[]byte` field's bytes (JSON carries them in base64; a value that is not is empty).
fn bytes_at(obj: &Value, pointer: &str) -> Vec<u8> {
    obj.pointer(pointer)
        .and_then(Value::as_str)
        .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
        .unwrap_or_default()
}

/// Go's `%#v` of a `[]byte`, which upstream's field errors print for `spec.request`.
fn go_bytes(b: &[u8]) -> String {
    if b.is_empty() {
        return "[]byte(nil)".into();
    }
    let hex: Vec<String> = b.iter().map(|x| format!("0x{x:x}")).collect();
    format!("[]byte{{{}}}", hex.join(", "))
}

/// One PEM block, as Go's `pem.Decode` returns it.
struct Block {
    label: String,
    headers: bool,
    bytes: Vec<u8>,
}

/// Go's `pem.Decode`: the first well-formed block at or after the start (text around blocks is
/// skipped), and what follows it.
fn pem_decode(mut data: &[u8]) -> Option<(Block, &[u8])> {
    const BEGIN: &[u8] = b"-----BEGIN ";
    loop {
        let start = find(data, BEGIN)?;
        let rest = &data[start + BEGIN.len()..];
        let line_end = find(rest, b"\n")?;
        let line = trim_cr(&rest[..line_end]);
        let Some(label) = line.strip_suffix(b"-----") else {
            data = rest;
            continue;
        };
        let label = String::from_utf8_lossy(label).into_owned();
        let body = &rest[line_end + 1..];
        let end_marker = format!("-----END {label}-----");
        let Some(end) = find(body, end_marker.as_bytes()) else {
            data = rest;
            continue;
        };
        let inner = &body[..end];
        let after = &body[end + end_marker.len()..];
        let after = after.strip_prefix(b"\r").unwrap_or(after);
        let after = after.strip_prefix(b"\n").unwrap_or(after);
        // Headers: `Key: value` lines up to a blank line.
        let text = String::from_utf8_lossy(inner);
        let mut lines = text.lines().peekable();
        let mut headers = false;
        if lines.peek().is_some_and(|l| l.contains(':')) {
            headers = true;
            for l in lines.by_ref() {
                if l.trim().is_empty() {
                    break;
                }
            }
        }
        let b64: String = lines
            .flat_map(str::chars)
            .filter(|c| !c.is_whitespace())
            .collect();
        match base64::engine::general_purpose::STANDARD.decode(b64) {
            Ok(bytes) => {
                return Some((
                    Block {
                        label,
                        headers,
                        bytes,
                    },
                    after,
                ));
            }
            Err(_) => data = rest,
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn trim_cr(b: &[u8]) -> &[u8] {
    b.strip_suffix(b"\r").unwrap_or(b)
}

/// `certificates.ParseCSR` and `CheckSignature`, in Go's words where they can be matched.
fn check_request(pem: &[u8]) -> Result<Vec<String>, String> {
    let block = match pem_decode(pem) {
        Some((b, _)) if b.label == "CERTIFICATE REQUEST" => b,
        _ => return Err("PEM block type must be CERTIFICATE REQUEST".into()),
    };
    let (_, csr) =
        x509_parser::certification_request::X509CertificationRequest::from_der(&block.bytes)
            .map_err(|e| format!("x509: malformed certificate request: {e}"))?;
    if csr.verify_signature().is_err() {
        let algorithm = csr
            .certification_request_info
            .subject_pki
            .algorithm
            .algorithm
            .to_id_string();
        return Err(match algorithm.as_str() {
            "1.2.840.113549.1.1.1" => "crypto/rsa: verification error".into(),
            "1.2.840.10045.2.1" => "x509: ECDSA verification failure".into(),
            "1.3.101.112" => "x509: Ed25519 verification failure".into(),
            _ => "x509: cannot verify signature: algorithm unimplemented".into(),
        });
    }
    Ok(csr
        .certification_request_info
        .subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(String::from))
        .collect())
}

/// The subject organizations of a valid request (the subject restriction reads them).
pub fn request_organizations(obj: &Value) -> Result<Vec<String>, String> {
    check_request(&bytes_at(obj, "/spec/request"))
}

/// `validateCertificate`: `status.certificate` holds only `CERTIFICATE` blocks without headers,
/// each a certificate, and at least one.
fn check_certificate(mut pem: &[u8]) -> Result<(), String> {
    if pem.is_empty() {
        return Ok(());
    }
    let mut blocks = 0;
    while let Some((block, rest)) = pem_decode(pem) {
        if block.label != "CERTIFICATE" {
            return Err(format!(
                "only CERTIFICATE PEM blocks are allowed, found {}",
                crd_core::field::go_quote(&block.label)
            ));
        }
        if block.headers {
            return Err("no PEM block headers are permitted".into());
        }
        blocks += 1;
        let mut der = block.bytes.as_slice();
        let mut certs = 0;
        while !der.is_empty() {
            match x509_parser::parse_x509_certificate(der) {
                Ok((rest, _)) => {
                    der = rest;
                    certs += 1;
                }
                Err(e) => return Err(format!("x509: malformed certificate: {e}")),
            }
        }
        if certs == 0 {
            return Err("found CERTIFICATE PEM block containing 0 certificates".into());
        }
        pem = rest;
    }
    if blocks == 0 {
        return Err("must contain at least one CERTIFICATE PEM block".into());
    }
    Ok(())
}

/// Upstream's `certificateValidationOptions`: what an endpoint may change, and what is tolerated
/// because it is already stored. Upstream's flags, one for one.
#[derive(Default)]
#[allow(clippy::struct_excessive_bools)]
struct Options {
    setting_approval: bool,
    setting_certificate: bool,
    both_approved_and_denied: bool,
    legacy_signer: bool,
    duplicate_condition_types: bool,
    empty_condition_type: bool,
    arbitrary_certificate: bool,
    unknown_usages: bool,
    duplicate_usages: bool,
}

fn usages(obj: &Value) -> Vec<&str> {
    obj.pointer("/spec/usages")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|u| u.as_str().unwrap_or("")).collect())
        .unwrap_or_default()
}

fn has_duplicates<'a>(items: impl Iterator<Item = &'a str>) -> bool {
    let mut seen = std::collections::HashSet::new();
    items.into_iter().any(|i| !seen.insert(i))
}

fn options(new: &Value, old: Option<&Value>, endpoint: Endpoint) -> Options {
    let Some(old) = old else {
        return Options::default();
    };
    let types = || conditions(old).iter().map(|c| str_at(c, "type"));
    let has = |t: &str| types().any(|x| x == t);
    let same_certificate = new.pointer("/status/certificate") == old.pointer("/status/certificate");
    Options {
        setting_approval: endpoint == Endpoint::Approval,
        setting_certificate: endpoint == Endpoint::Status,
        both_approved_and_denied: has("Approved") && has("Denied"),
        legacy_signer: old.pointer("/spec/signerName").and_then(Value::as_str)
            == Some(LEGACY_UNKNOWN),
        duplicate_condition_types: has_duplicates(types()),
        empty_condition_type: types().any(str::is_empty),
        arbitrary_certificate: same_certificate
            || check_certificate(&bytes_at(old, "/status/certificate")).is_err(),
        unknown_usages: usages(old).iter().any(|u| !USAGES.contains(u)),
        duplicate_usages: has_duplicates(usages(old).into_iter()),
    }
}

/// Validates a create (`old` is `None`) or an update through `endpoint`, beyond `ObjectMeta`,
/// with upstream's paths and messages.
pub fn validate(obj: &Value, old: Option<&Value>, endpoint: Endpoint, errs: &mut ErrorList) {
    let opts = options(obj, old, endpoint);
    let spec = Path::new("spec");
    let request = bytes_at(obj, "/spec/request");
    if let Err(e) = check_request(&request) {
        errs.push(FieldError::invalid_printed(
            &spec.child("request"),
            &go_bytes(&request),
            &e,
        ));
    }
    let us = usages(obj);
    if us.is_empty() {
        errs.push(FieldError::required(&spec.child("usages"), ""));
    }
    if !opts.unknown_usages {
        for (i, u) in us.iter().enumerate() {
            if !USAGES.contains(u) {
                errs.push(FieldError::not_supported(
                    &spec.child("usages").index(i),
                    *u,
                    USAGES,
                ));
            }
        }
    }
    if !opts.duplicate_usages {
        let mut seen = std::collections::HashSet::new();
        for (i, u) in us.iter().enumerate() {
            if !seen.insert(*u) {
                errs.push(FieldError::duplicate(&spec.child("usages").index(i), *u));
            }
        }
    }
    let signer = obj
        .pointer("/spec/signerName")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !opts.legacy_signer && signer == LEGACY_UNKNOWN {
        errs.push(FieldError::invalid(
            &spec.child("signerName"),
            signer,
            "the legacy signerName is not allowed via this API version",
        ));
    } else {
        validate_signer_name(&spec.child("signerName"), signer, errs);
    }
    if let Some(s) = obj
        .pointer("/spec/expirationSeconds")
        .and_then(Value::as_i64)
        .filter(|s| *s < 600)
    {
        errs.push(FieldError::invalid(
            &spec.child("expirationSeconds"),
            s,
            "may not specify a duration less than 600 seconds (10 minutes)",
        ));
    }
    validate_conditions(obj, &opts, errs);
    if !opts.arbitrary_certificate
        && let Err(e) = check_certificate(&bytes_at(obj, "/status/certificate"))
    {
        errs.push(FieldError::invalid(
            &Path::new("status").child("certificate"),
            "<certificate data>",
            e,
        ));
    }
    if let Some(old) = old {
        validate_update(obj, old, &opts, errs);
    }
}

fn validate_conditions(obj: &Value, opts: &Options, errs: &mut ErrorList) {
    let path = Path::new("status").child("conditions");
    let mut seen = std::collections::HashSet::new();
    let (mut approved, mut denied) = (false, false);
    for (i, c) in conditions(obj).iter().enumerate() {
        let at = path.index(i);
        let t = str_at(c, "type");
        if !opts.empty_condition_type && t.is_empty() {
            errs.push(FieldError::required(&at.child("type"), ""));
        }
        let status = str_at(c, "status");
        let allowed: &[&str] = if TRUE_ONLY.contains(&t) {
            &["True"]
        } else {
            &["False", "True", "Unknown"]
        };
        if status.is_empty() {
            errs.push(FieldError::required(&at.child("status"), ""));
        } else if !allowed.contains(&status) {
            errs.push(FieldError::not_supported(
                &at.child("status"),
                status,
                allowed,
            ));
        }
        if !opts.both_approved_and_denied {
            let exclusive = match t {
                "Approved" => {
                    approved = true;
                    denied
                }
                "Denied" => {
                    denied = true;
                    approved
                }
                _ => false,
            };
            if exclusive {
                errs.push(FieldError::invalid(
                    &at.child("type"),
                    t,
                    "Approved and Denied conditions are mutually exclusive",
                ));
            }
        }
        if !opts.duplicate_condition_types && !seen.insert(t) {
            errs.push(FieldError::duplicate(&at.child("type"), t));
        }
    }
}

fn validate_update(new: &Value, old: &Value, opts: &Options, errs: &mut ErrorList) {
    let path = Path::new("status").child("conditions");
    let of = |obj: &Value, t: &str| -> Vec<Value> {
        conditions(obj)
            .iter()
            .filter(|c| str_at(c, "type") == t)
            .cloned()
            .collect()
    };
    for t in TRUE_ONLY {
        if of(new, t).len() < of(old, t).len() {
            errs.push(FieldError::forbidden(
                &path,
                format!("updates may not remove a condition of type \"{t}\""),
            ));
        }
    }
    if !opts.setting_approval {
        for t in ["Approved", "Denied"] {
            let (o, n) = (of(old, t), of(new, t));
            if n.len() > o.len() {
                errs.push(FieldError::forbidden(
                    &path,
                    format!("updates may not add a condition of type \"{t}\""),
                ));
            } else if n.len() == o.len() && n != o {
                errs.push(FieldError::forbidden(
                    &path,
                    format!("updates may not modify a condition of type \"{t}\""),
                ));
            }
        }
    }
    let (nc, oc) = (
        bytes_at(new, "/status/certificate"),
        bytes_at(old, "/status/certificate"),
    );
    if nc != oc {
        if !opts.setting_certificate {
            errs.push(FieldError::forbidden(
                &Path::new("status").child("certificate"),
                "updates may not set certificate content",
            ));
        } else if !oc.is_empty() {
            errs.push(FieldError::forbidden(
                &Path::new("status").child("certificate"),
                "updates may not modify existing certificate content",
            ));
        }
    }
}

/// `ValidateSignerName`: `<domain>/<path>`, the domain of at least two DNS labels, the path of
/// DNS subdomains, within upstream's lengths.
pub fn validate_signer_name(path: &Path, signer: &str, errs: &mut ErrorList) {
    use crd_core::validation::{is_dns1123_label, is_dns1123_subdomain};
    if signer.is_empty() {
        errs.push(FieldError::required(path, ""));
        return;
    }
    let segments: Vec<&str> = signer.split('/').collect();
    let [domain, name] = segments[..] else {
        errs.push(FieldError::invalid(
            path,
            signer,
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        ));
        return;
    };
    if domain.len() > 253 {
        errs.push(FieldError::too_long(path, 253));
    }
    first_bad_label(path, domain, is_dns1123_label, errs);
    if !domain.contains('.') {
        errs.push(FieldError::invalid(
            path,
            domain,
            "should be a domain with at least two segments separated by dots",
        ));
    }
    first_bad_label(path, name, is_dns1123_subdomain, errs);
    let max = 253 + (253 + 63 + 1) + 1;
    if signer.len() > max {
        errs.push(FieldError::too_long(path, max));
    }
}

/// The problems of the first of `segment`'s dot-separated labels that `check` refuses, each as
/// `validating label "<label>": <problem>` (upstream stops at the first bad label: the rest
/// would repeat it).
fn first_bad_label(
    path: &Path,
    segment: &str,
    check: fn(&str) -> Vec<String>,
    errs: &mut ErrorList,
) {
    if let Some((label, problems)) = segment
        .split('.')
        .map(|l| (l, check(l)))
        .find(|(_, p)| !p.is_empty())
    {
        for p in problems {
            errs.push(FieldError::invalid(
                path,
                segment,
                format!("validating label \"{label}\": {p}"),
            ));
        }
    }
}

/// What a write must be authorized for beyond its verb, by upstream's certificate admission
/// plugins: approving through `/approval` needs `approve`, changing the certificate through
/// `/status` needs `sign`, on `signers` named for the request's signer (or its domain's `/*`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignerCheck {
    /// `approve` or `sign`.
    pub verb: &'static str,
    /// The request's `spec.signerName`.
    pub signer: String,
}

impl SignerCheck {
    /// The names the check asks for, in upstream's order: the signer, then its domain's
    /// wildcard.
    pub fn names(&self) -> [String; 2] {
        let domain = self.signer.split('/').next().unwrap_or("");
        [self.signer.clone(), format!("{domain}/*")]
    }

    /// The refusal when neither name is allowed.
    pub fn refusal(&self) -> String {
        format!(
            "user not permitted to {} requests with signerName \"{}\"",
            self.verb, self.signer
        )
    }
}

/// The signer permission a write through `endpoint` needs (`None` when it needs none).
pub fn signer_check(new: &Value, old: &Value, endpoint: Endpoint) -> Option<SignerCheck> {
    let signer = || {
        new.pointer("/spec/signerName")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    match endpoint {
        Endpoint::Approval => Some(SignerCheck {
            verb: "approve",
            signer: signer(),
        }),
        Endpoint::Status
            if new.pointer("/status/certificate") != old.pointer("/status/certificate") =>
        {
            Some(SignerCheck {
                verb: "sign",
                signer: signer(),
            })
        }
        _ => None,
    }
}

/// `CertificateSubjectRestriction`: a request to the API server's client signer may not ask for
/// `system:masters`. Returns the refusal.
pub fn subject_restriction(obj: &Value) -> Option<String> {
    if obj.pointer("/spec/signerName").and_then(Value::as_str) != Some(KUBE_APISERVER_CLIENT) {
        return None;
    }
    match request_organizations(obj) {
        Err(e) => Some(format!("failed to parse CSR: {e}")),
        Ok(orgs) if orgs.iter().any(|o| o == "system:masters") => Some(format!(
            "use of {KUBE_APISERVER_CLIENT} signer with system:masters group is not allowed"
        )),
        Ok(_) => None,
    }
}

#[cfg(test)]
mod tests;
