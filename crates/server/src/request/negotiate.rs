//! Content negotiation: which representation the client accepts (`Accept`), and how to decode
//! the request body (`Content-Type`).
//!
//! Main types: [`Output`], [`BodyFormat`], [`PatchType`].

use crd_core::Status;
use http::HeaderMap;
use serde_json::Value;

use crate::error::ApiError;

/// The representation a response is rendered in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// `application/json`.
    Json,
    /// `application/yaml`.
    Yaml,
    /// `meta.k8s.io/v1 Table` (`as=Table`).
    Table,
    /// `meta.k8s.io/v1 PartialObjectMetadata(List)` (`as=PartialObjectMetadata[List]`).
    PartialObjectMetadata,
    /// `apidiscovery.k8s.io/v2 APIGroupDiscoveryList`, for `/api` and `/apis` only.
    AggregatedDiscovery,
}

/// One media range of an `Accept` header.
#[derive(Debug, Default)]
struct MediaRange {
    mime: String,
    params: Vec<(String, String)>,
}

impl MediaRange {
    fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

fn parse_media_ranges(header: &str) -> Vec<MediaRange> {
    header
        .split(',')
        .filter_map(|part| {
            let mut pieces = part.split(';');
            let mime = pieces.next()?.trim().to_ascii_lowercase();
            if mime.is_empty() {
                return None;
            }
            let params = pieces
                .filter_map(|p| {
                    let (k, v) = p.split_once('=')?;
                    Some((
                        k.trim().to_ascii_lowercase(),
                        v.trim().trim_matches('"').to_string(),
                    ))
                })
                .collect();
            Some(MediaRange { mime, params })
        })
        .collect()
}

/// Chooses the response representation from the `Accept` header. `allow_discovery` enables the
/// aggregated discovery type (only `/api` and `/apis` offer it).
pub fn choose_output(headers: &HeaderMap, allow_discovery: bool) -> Result<Output, ApiError> {
    let Some(accept) = headers
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
    else {
        return Ok(Output::Json);
    };
    if accept.trim().is_empty() {
        return Ok(Output::Json);
    }
    for range in parse_media_ranges(accept) {
        let json_like = matches!(
            range.mime.as_str(),
            "application/json" | "*/*" | "application/*"
        );
        if range.mime == "application/yaml" && range.param("as").is_none() {
            return Ok(Output::Yaml);
        }
        if !json_like {
            continue;
        }
        match range.param("as") {
            None => return Ok(Output::Json),
            Some("Table")
                if range.param("g") == Some("meta.k8s.io")
                    && matches!(range.param("v"), Some("v1" | "v1beta1")) =>
            {
                return Ok(Output::Table);
            }
            Some("PartialObjectMetadata" | "PartialObjectMetadataList")
                if range.param("g") == Some("meta.k8s.io") =>
            {
                return Ok(Output::PartialObjectMetadata);
            }
            Some("APIGroupDiscoveryList")
                if allow_discovery
                    && range.param("g") == Some("apidiscovery.k8s.io")
                    && range.param("v") == Some("v2") =>
            {
                return Ok(Output::AggregatedDiscovery);
            }
            Some(_) => {}
        }
    }
    Err(Status::not_acceptable(&["application/json", "application/yaml"]).into())
}

/// How a request body is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyFormat {
    /// JSON (also the default when no Content-Type is given).
    Json,
    /// YAML.
    Yaml,
    /// Kubernetes protobuf (`application/vnd.kubernetes.protobuf`).
    Protobuf,
}

/// The media type of a request, without parameters.
pub fn content_type(headers: &HeaderMap) -> String {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default()
}

/// The body format of a create or update request.
pub fn body_format(headers: &HeaderMap) -> Result<BodyFormat, ApiError> {
    match content_type(headers).as_str() {
        "" | "application/json" => Ok(BodyFormat::Json),
        "application/yaml" => Ok(BodyFormat::Yaml),
        "application/vnd.kubernetes.protobuf" => Ok(BodyFormat::Protobuf),
        _ => Err(Status::unsupported_media_type(&[
            "application/json",
            "application/yaml",
            "application/vnd.kubernetes.protobuf",
        ])
        .into()),
    }
}

/// The kind of a PATCH body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchType {
    /// RFC 6902 JSON patch.
    Json,
    /// RFC 7386 JSON merge patch.
    Merge,
    /// Strategic merge patch (built-in types only).
    StrategicMerge,
    /// Server-side apply.
    Apply,
}

impl PatchType {
    /// The media type that selects this patch type.
    pub fn media_type(self) -> &'static str {
        match self {
            PatchType::Json => "application/json-patch+json",
            PatchType::Merge => "application/merge-patch+json",
            PatchType::StrategicMerge => "application/strategic-merge-patch+json",
            PatchType::Apply => "application/apply-patch+yaml",
        }
    }
}

/// A kind's protobuf decoder: `None` when the kind takes no protobuf.
pub type ProtobufDecoder<'a> = &'a dyn Fn(&[u8]) -> Option<Result<Value, String>>;

/// Decodes a create or update body into an object: JSON, YAML, or protobuf through the kind's
/// decoder. Errors carry the message kube-apiserver uses for the kind (`<Kind> in version "v1"
/// cannot be handled as a <Kind>: ...`).
pub fn decode_object(
    headers: &HeaderMap,
    body: &[u8],
    kind: &str,
    version: &str,
    protobuf: ProtobufDecoder<'_>,
) -> Result<Value, ApiError> {
    decode_object_noting_duplicates(headers, body, kind, version, protobuf).map(|(obj, _)| obj)
}

/// [`decode_object`], and for a JSON body whether an object in it repeats a key (`None` for
/// other formats), noted while decoding: strict field validation then needs no second pass
/// over every create's and update's body to know there is nothing to report.
pub fn decode_object_noting_duplicates(
    headers: &HeaderMap,
    body: &[u8],
    kind: &str,
    version: &str,
    protobuf: ProtobufDecoder<'_>,
) -> Result<(Value, Option<bool>), ApiError> {
    let cannot = |e: &dyn std::fmt::Display| -> ApiError {
        Status::bad_request(format!(
            "{kind} in version {v} cannot be handled as a {kind}: {e}",
            v = crd_core::field::go_quote(version)
        ))
        .into()
    };
    let (obj, repeats) = match body_format(headers)? {
        BodyFormat::Json => {
            let (obj, repeats) =
                crd_core::strict::from_slice_noting_duplicates(body).map_err(|e| {
                    // Upstream finds the kind first: a body that is not JSON is reported by
                    // Go's scanner, before any kind is known (`transformDecodeError`).
                    match crd_core::go_json::syntax_error(body) {
                        Some(syntax) => Status::bad_request(format!(
                            "the object provided is unrecognized (must be of type {kind}): couldn't get version/kind; json parse error: {syntax} ({})",
                            crd_core::go_json::summarize(body)
                        ))
                        .into(),
                        None => cannot(&e),
                    }
                })?;
            (obj, Some(repeats))
        }
        BodyFormat::Protobuf => match protobuf(body) {
            Some(decoded) => (decoded.map_err(|e| cannot(&e))?, None),
            None => {
                return Err(Status::unsupported_media_type(&[
                    "application/json",
                    "application/yaml",
                ])
                .into());
            }
        },
        format @ BodyFormat::Yaml => (decode_document(format, body).map_err(|e| cannot(&e))?, None),
    };
    if !obj.is_object() {
        return Err(cannot(&"the body must be a JSON object"));
    }
    Ok((obj, repeats))
}

/// Reads the patch type from the Content-Type.
pub fn patch_type(headers: &HeaderMap) -> Option<PatchType> {
    match content_type(headers).as_str() {
        "application/json-patch+json" => Some(PatchType::Json),
        "application/merge-patch+json" => Some(PatchType::Merge),
        "application/strategic-merge-patch+json" => Some(PatchType::StrategicMerge),
        "application/apply-patch+yaml" => Some(PatchType::Apply),
        _ => None,
    }
}

/// Decodes a JSON or YAML document into a value. Errors are returned as plain text for the
/// caller to wrap in the message Kubernetes uses for the resource.
pub fn decode_document(format: BodyFormat, body: &[u8]) -> Result<Value, String> {
    match format {
        BodyFormat::Json => serde_json::from_slice(body).map_err(|e| e.to_string()),
        BodyFormat::Yaml => {
            let text = std::str::from_utf8(body).map_err(|e| e.to_string())?;
            serde_saphyr::from_str::<Value>(text).map_err(|e| e.to_string())
        }
        BodyFormat::Protobuf => Err("protobuf is not supported for this resource".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(http::header::ACCEPT, v.parse().unwrap());
        h
    }

    #[test]
    fn chooses_like_kubectl_expects() {
        let table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(choose_output(&accept(table), false).unwrap(), Output::Table);
        let agg = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(
            choose_output(&accept(agg), true).unwrap(),
            Output::AggregatedDiscovery
        );
        assert_eq!(choose_output(&accept(agg), false).unwrap(), Output::Json);
        assert_eq!(
            choose_output(
                &accept("application/vnd.kubernetes.protobuf,application/json"),
                false
            )
            .unwrap(),
            Output::Json
        );
        assert_eq!(
            choose_output(&accept("application/yaml"), false).unwrap(),
            Output::Yaml
        );
        assert_eq!(
            choose_output(&accept("application/json, */*"), false).unwrap(),
            Output::Json
        );
        assert!(choose_output(&accept("application/vnd.kubernetes.protobuf"), false).is_err());
        assert_eq!(
            choose_output(&HeaderMap::new(), false).unwrap(),
            Output::Json
        );
    }
}
