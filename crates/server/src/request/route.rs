//! URL grammar: turns method, path and query into a typed [`Route`] before any work is done.
//! It performs no lookups; whether a group or resource exists is decided by the handlers.
//!
//! Main types: [`Route`], [`ResourceRequest`], [`Verb`], [`Query`].

use std::collections::HashMap;

use http::Method;

/// What a request asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// `/healthz`, `/livez`, `/readyz` (and their `/…/<check>` forms).
    Health,
    /// `/version`.
    Version,
    /// `/metrics`: the Prometheus metrics.
    Metrics,
    /// `/api`: the core group's versions.
    CoreVersions,
    /// `/api/v1`: the core group's resources.
    CoreResources,
    /// `/apis`: every group.
    Groups,
    /// `/apis/<group>`.
    Group(String),
    /// `/apis/<group>/<version>`.
    GroupVersion(String, String),
    /// `/openapi/v2`: the Swagger 2.0 document.
    OpenApiV2,
    /// `/openapi/v3`: the index of per-group-version documents.
    OpenApiIndex,
    /// `/openapi/v3/<api/v1 | apis/<g>/<v>>`.
    OpenApiDocument(String),
    /// `/debug/storage/<key>`: the raw stored value of one key, for inspecting stored versions.
    DebugStorage(String),
    /// `/debug/storage-versions/<crd>`: how many objects are stored at each version.
    DebugStorageVersions(String),
    /// `/debug/upgrade-check`: POST a proposed CRD, get what it would do to stored objects.
    DebugUpgradeCheck,
    /// `/.well-known/openid-configuration`: OIDC discovery for service-account tokens.
    OpenIdConfiguration,
    /// `/openid/v1/jwks`: the keys that verify service-account tokens.
    OpenIdKeys,
    /// A resource endpoint.
    Resource(ResourceRequest),
    /// A resource path with a method its shape has no verb for (`POST` to an object, `PUT` to a
    /// collection, `OPTIONS`): 405 for built-in kinds, as go-restful routes them.
    WrongMethod(WrongMethod),
    /// Anything else.
    Unknown,
}

/// What [`Route::WrongMethod`] addressed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WrongMethod {
    /// The API group ("" for core).
    pub group: String,
    /// The version.
    pub version: String,
    /// The resource (plural).
    pub resource: String,
    /// Whether the path names an object.
    pub named: bool,
}

/// The verb of a resource request, as kube-apiserver's RequestInfo names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    /// GET of one object.
    Get,
    /// GET of a collection.
    List,
    /// GET with `watch=true`, or under `/watch/`.
    Watch,
    /// POST to a collection.
    Create,
    /// PUT of one object.
    Update,
    /// PATCH of one object.
    Patch,
    /// DELETE of one object.
    Delete,
    /// DELETE of a collection.
    DeleteCollection,
}

impl Verb {
    /// The lowercase verb name used in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
        }
    }
}

/// Which endpoint of a resource a request addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subresource {
    /// The object itself.
    Main,
    /// `/status`: only status changes.
    Status,
    /// `/scale`: an `autoscaling/v1` Scale view of the replica count.
    Scale,
    /// `/finalize`: a namespace's `spec.finalizers` (how a stuck namespace is released).
    Finalize,
    /// `/approval`: a `CertificateSigningRequest`'s approval conditions.
    Approval,
    /// Any other subresource name (served by no kind yet: 404).
    Other,
}

impl Subresource {
    /// The endpoint's name as admission attributes and managed-field entries give it (`""` for
    /// the object itself and for subresources no kind serves).
    pub fn name(self) -> &'static str {
        match self {
            Subresource::Status => "status",
            Subresource::Scale => "scale",
            Subresource::Finalize => "finalize",
            Subresource::Approval => "approval",
            Subresource::Main | Subresource::Other => "",
        }
    }
}

/// A request for a resource: `/api/v1/...` or `/apis/<group>/<version>/...`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceRequest {
    /// The API group; empty for the core group.
    pub group: String,
    /// The API version.
    pub version: String,
    /// The namespace from the path, if any.
    pub namespace: Option<String>,
    /// The plural resource name from the path.
    pub resource: String,
    /// The object name, if any.
    pub name: Option<String>,
    /// The subresource (`status`, `scale`, ...), if any.
    pub subresource: Option<String>,
    /// What to do.
    pub verb: Verb,
}

impl ResourceRequest {
    /// The endpoint addressed.
    pub fn endpoint(&self) -> Subresource {
        match self.subresource.as_deref() {
            None => Subresource::Main,
            Some("status") => Subresource::Status,
            Some("scale") => Subresource::Scale,
            Some("finalize") => Subresource::Finalize,
            Some("approval") => Subresource::Approval,
            Some(_) => Subresource::Other,
        }
    }
}

/// Decoded query parameters (the last value wins, as Go's `url.Values.Get` reads the first;
/// clients never repeat these parameters).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Query(HashMap<String, String>);

impl Query {
    /// Parses a raw query string.
    pub fn parse(raw: Option<&str>) -> Self {
        let mut map = HashMap::new();
        if let Some(raw) = raw {
            for (k, v) in form_urlencoded::parse(raw.as_bytes()) {
                map.entry(k.into_owned()).or_insert_with(|| v.into_owned());
            }
        }
        Query(map)
    }

    /// A parameter's value.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// A parameter's value, or "" when absent.
    pub fn str(&self, key: &str) -> &str {
        self.get(key).unwrap_or("")
    }

    /// A boolean parameter, parsed as Go's `strconv.ParseBool` (Python clients send `True`).
    pub fn bool(&self, key: &str) -> bool {
        matches!(
            self.get(key),
            Some("1" | "t" | "T" | "true" | "TRUE" | "True")
        )
    }
}

/// Parses a request into a route.
pub fn parse(method: &Method, path: &str, query: &Query) -> Route {
    let segments: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8_lossy()
                .into_owned()
        })
        .collect();
    let segs: Vec<&str> = segments.iter().map(String::as_str).collect();
    match segs.as_slice() {
        ["healthz" | "livez" | "readyz", ..] => Route::Health,
        ["version"] => Route::Version,
        ["metrics"] => Route::Metrics,
        ["api"] => Route::CoreVersions,
        ["api", "v1"] => Route::CoreResources,
        ["apis"] => Route::Groups,
        ["apis", g] => Route::Group((*g).to_string()),
        ["apis", g, v] => Route::GroupVersion((*g).to_string(), (*v).to_string()),
        ["openapi", "v2"] => Route::OpenApiV2,
        [".well-known", "openid-configuration"] => Route::OpenIdConfiguration,
        ["openid", "v1", "jwks"] => Route::OpenIdKeys,
        ["openapi", "v3"] => Route::OpenApiIndex,
        ["debug", "upgrade-check"] => Route::DebugUpgradeCheck,
        ["debug", "storage-versions", crd] => Route::DebugStorageVersions((*crd).to_string()),
        ["debug", "storage", key @ ..] if !key.is_empty() => {
            Route::DebugStorage(format!("/{}", key.join("/")))
        }
        ["openapi", "v3", rest @ ..] => Route::OpenApiDocument(rest.join("/")),
        ["api", "v1", rest @ ..] => resource_route(method, "", "v1", rest, query),
        ["apis", g, v, rest @ ..] => resource_route(method, g, v, rest, query),
        _ => Route::Unknown,
    }
}

fn resource_route(
    method: &Method,
    group: &str,
    version: &str,
    rest: &[&str],
    query: &Query,
) -> Route {
    let (watch_path, rest) = match rest {
        ["watch", tail @ ..] => (true, tail),
        _ => (false, rest),
    };
    // `namespaces/<name>/status` and `/finalize` are subresources of a namespace, not a
    // resource in it (upstream's `namespaceSubresources`).
    let (namespace, parts) = match rest {
        ["namespaces", _, "status" | "finalize"] => (None, rest),
        ["namespaces", ns, tail @ ..] if !tail.is_empty() => (Some((*ns).to_string()), tail),
        _ => (None, rest),
    };
    let (resource, name, subresource) = match parts {
        [r] => (*r, None, None),
        [r, n] => (*r, Some((*n).to_string()), None),
        [r, n, s] => (*r, Some((*n).to_string()), Some((*s).to_string())),
        _ => return Route::Unknown,
    };
    let watch = watch_path || query.bool("watch");
    let verb = match (method.as_str(), name.is_some()) {
        ("GET" | "HEAD", _) if watch => Verb::Watch,
        ("GET" | "HEAD", true) => Verb::Get,
        ("GET" | "HEAD", false) => Verb::List,
        ("POST", false) => Verb::Create,
        // A subresource that creates (`serviceaccounts/<name>/token`).
        ("POST", true) if subresource.is_some() => Verb::Create,
        ("PUT", true) => Verb::Update,
        ("PATCH", true) => Verb::Patch,
        ("DELETE", true) => Verb::Delete,
        ("DELETE", false) => Verb::DeleteCollection,
        _ => {
            return Route::WrongMethod(WrongMethod {
                group: group.to_string(),
                version: version.to_string(),
                resource: resource.to_string(),
                named: name.is_some(),
            });
        }
    };
    Route::Resource(ResourceRequest {
        group: group.to_string(),
        version: version.to_string(),
        namespace,
        resource: resource.to_string(),
        name,
        subresource,
        verb,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(method: &Method, path: &str, q: &str) -> ResourceRequest {
        match parse(method, path, &Query::parse(Some(q))) {
            Route::Resource(r) => r,
            other => panic!("{path}: {other:?}"),
        }
    }

    #[test]
    fn parses_static_routes() {
        let q = Query::default();
        assert_eq!(parse(&Method::GET, "/version/", &q), Route::Version);
        assert_eq!(parse(&Method::GET, "/apis", &q), Route::Groups);
        assert_eq!(
            parse(&Method::GET, "/apis/a.io/", &q),
            Route::Group("a.io".into())
        );
        assert_eq!(parse(&Method::GET, "/api/v1", &q), Route::CoreResources);
        assert_eq!(
            parse(&Method::GET, "/openapi/v3/apis/a.io/v1", &q),
            Route::OpenApiDocument("apis/a.io/v1".into())
        );
        assert_eq!(parse(&Method::GET, "/nope", &q), Route::Unknown);
    }

    #[test]
    fn parses_resource_routes() {
        let r = res(&Method::GET, "/apis/g.io/v1/namespaces/ns/crontabs", "");
        assert_eq!(
            (r.namespace.as_deref(), r.resource.as_str(), r.verb),
            (Some("ns"), "crontabs", Verb::List)
        );
        let r = res(&Method::GET, "/apis/g.io/v1/crontabs", "watch=True");
        assert_eq!((r.namespace, r.verb), (None, Verb::Watch));
        let r = res(
            &Method::GET,
            "/apis/g.io/v1/watch/namespaces/ns/crontabs/x",
            "",
        );
        assert_eq!((r.name.as_deref(), r.verb), (Some("x"), Verb::Watch));
        let r = res(
            &Method::PUT,
            "/apis/g.io/v1/namespaces/ns/crontabs/x/status",
            "",
        );
        assert_eq!(
            (r.subresource.as_deref(), r.verb),
            (Some("status"), Verb::Update)
        );
        for sub in ["status", "finalize"] {
            let r = res(
                &Method::PUT,
                &format!("/api/v1/namespaces/team-a/{sub}"),
                "",
            );
            assert_eq!(
                (
                    r.resource.as_str(),
                    r.name.as_deref(),
                    r.subresource.as_deref(),
                    r.namespace.as_deref(),
                    r.verb
                ),
                ("namespaces", Some("team-a"), Some(sub), None, Verb::Update)
            );
        }
        let r = res(&Method::GET, "/api/v1/namespaces/team-a/pods", "");
        assert_eq!(
            (r.resource.as_str(), r.namespace.as_deref()),
            ("pods", Some("team-a"))
        );
        let r = res(&Method::DELETE, "/api/v1/namespaces/team-a", "");
        assert_eq!(
            (
                r.group.as_str(),
                r.resource.as_str(),
                r.name.as_deref(),
                r.verb
            ),
            ("", "namespaces", Some("team-a"), Verb::Delete)
        );
        let r = res(&Method::POST, "/api/v1/namespaces", "");
        assert_eq!((r.resource.as_str(), r.verb), ("namespaces", Verb::Create));
        let r = res(&Method::DELETE, "/apis/g.io/v1/namespaces/ns/crontabs", "");
        assert_eq!(r.verb, Verb::DeleteCollection);
    }
}
