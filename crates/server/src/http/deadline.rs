//! The request deadline, as kube-apiserver's `WithRequestDeadline` and
//! `WithTimeoutForNonLongRunningRequests` filters set it: a request that is not long-running
//! gets `--request-timeout` (60 s by default), or less when its `timeout` query parameter
//! (kubectl's `--request-timeout`) asks for less; past it, the client gets a 504 `Timeout`
//! instead of waiting on a storage engine that does not answer.
//!
//! Architecture Invariant: every request that is not long-running is answered within its
//! deadline; the response's head is what the deadline bounds (a streamed body, once begun, is
//! not cut).

use std::time::Duration;

use crd_core::Status;

use crate::request::route::{Query, Route, Verb};

/// The message upstream's timeout filter answers with.
pub const TIMEOUT_MESSAGE: &str = "request did not complete within the allotted timeout";

/// The subresources kube-apiserver's `BasicLongRunningRequestCheck` counts as long-running.
const LONG_RUNNING_SUBRESOURCES: &[&str] = &["attach", "exec", "proxy", "log", "portforward"];

/// How long the request may take: `None` for a long-running one (watches, and the streaming
/// subresources), else `--request-timeout` or the shorter positive `timeout` it asks for. A
/// `timeout` Go cannot parse is upstream's 400 (long-running requests do not read it).
pub fn of(
    route: &Route,
    query: &Query,
    maximum: Duration,
) -> Result<Option<Duration>, Box<Status>> {
    if long_running(route) {
        return Ok(None);
    }
    let asked = match query.get("timeout").filter(|t| !t.is_empty()) {
        None => None,
        Some(text) => Some(crd_core::time::parse_go_duration(text).map_err(|e| {
            Status::bad_request(format!(
                "invalid timeout specified in the request URL - {e}"
            ))
        })?),
    };
    let timeout = match asked {
        // Positive and below the maximum (0 or a negative one means "no timeout of mine").
        Some(nanos) if nanos > 0 && u128::try_from(nanos).ok() < Some(maximum.as_nanos()) => {
            Duration::from_nanos(nanos.unsigned_abs())
        }
        _ => maximum,
    };
    Ok(Some(timeout))
}

/// The 504 a request past its deadline gets.
pub fn timed_out() -> Status {
    Status::timeout(TIMEOUT_MESSAGE)
}

/// Watches and the streaming subresources.
fn long_running(route: &Route) -> bool {
    match route {
        Route::Resource(r) => {
            r.verb == Verb::Watch
                || r.subresource
                    .as_deref()
                    .is_some_and(|s| LONG_RUNNING_SUBRESOURCES.contains(&s))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::route;

    const MAX: Duration = Duration::from_mins(1);

    /// The deadline a request gets, or the refusal's code and message.
    type Verdict = Result<Option<Duration>, String>;

    fn deadline(method: &http::Method, uri: &str) -> Verdict {
        let (path, raw) = uri.split_once('?').unwrap_or((uri, ""));
        let query = Query::parse(Some(raw));
        let route = route::parse(method, path, &query);
        of(&route, &query, MAX).map_err(|s| format!("{} {}", s.code, s.message))
    }

    /// Request in, deadline or upstream's 400 out (cases of `TestParseTimeout` and
    /// `TestWithRequestDeadline` in kube-apiserver's filters).
    #[test]
    fn deadlines_follow_the_timeout_parameter_and_the_maximum() {
        let get = http::Method::GET;
        let post = http::Method::POST;
        let secs = |s| Ok(Some(Duration::from_secs(s)));
        let cases: &[(&http::Method, &str, Verdict)] = &[
            (&get, "/api/v1/namespaces/default/configmaps", secs(60)),
            (&get, "/api/v1/namespaces/default/configmaps?timeout=5s", secs(5)),
            (&post, "/api/v1/namespaces/default/configmaps?timeout=1m30s", secs(60)),
            (&get, "/api/v1/namespaces?timeout=0s", secs(60)),
            (&get, "/api/v1/namespaces?timeout=-5s", secs(60)),
            (&get, "/api/v1/namespaces?timeout=", secs(60)),
            (&get, "/version?timeout=2s", secs(2)),
            (
                &get,
                "/api/v1/namespaces?timeout=250ms",
                Ok(Some(Duration::from_millis(250))),
            ),
            (&get, "/api/v1/namespaces?watch=true&timeout=5s", Ok(None)),
            (&get, "/api/v1/watch/namespaces", Ok(None)),
            (&get, "/api/v1/namespaces/default/pods/p/log", Ok(None)),
            (&post, "/api/v1/namespaces/default/pods/p/exec", Ok(None)),
            (
                &get,
                "/api/v1/namespaces?timeout=foo",
                Err(r#"400 invalid timeout specified in the request URL - time: invalid duration "foo""#
                    .into()),
            ),
            (
                &get,
                "/api/v1/namespaces?timeout=5",
                Err(r#"400 invalid timeout specified in the request URL - time: missing unit in duration "5""#
                    .into()),
            ),
            (
                &get,
                "/api/v1/namespaces?timeout=1d",
                Err(r#"400 invalid timeout specified in the request URL - time: unknown unit "d" in duration "1d""#
                    .into()),
            ),
            // A long-running request does not read it, as upstream's filter lets it pass first.
            (&get, "/api/v1/namespaces?watch=1&timeout=1d", Ok(None)),
        ];
        for (method, uri, want) in cases {
            assert_eq!(&deadline(method, uri), want, "{method} {uri}");
        }
    }
}
