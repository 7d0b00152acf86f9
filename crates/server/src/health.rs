//! Health endpoints as kube-apiserver's `healthz` package serves them: `/healthz`, `/livez` and
//! `/readyz` run named checks (`ping`, `log`, `etcd`, `informer-sync`, `poststarthook/<name>`,
//! `shutdown`), `?verbose` lists them, `?exclude=<check>` skips some, and `/<endpoint>/<check>`
//! runs one. Failures are answered with 500 and the reason withheld, as upstream (the endpoints
//! are public).
//!
//! [`HealthState`] holds the start-up and shutdown flags the checks read; [`render`] is the pure
//! formatting, tested with literal texts.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crd_storage::Store;

/// How long the `etcd` check waits for the storage engine.
const STORAGE_PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The post-start hooks, in upstream's order of names.
pub const POST_START_HOOKS: &[&str] = &[
    "poststarthook/crd-informer-synced",
    "poststarthook/start-apiextensions-controllers",
];

/// The flags health checks read, set by start-up and shutdown.
#[derive(Debug, Default)]
pub struct HealthState {
    controllers_started: AtomicBool,
    crd_informer_synced: AtomicBool,
    shutting_down: AtomicBool,
    /// True once the server has stopped accepting and drains its requests: watches end then
    /// (upstream's `ShutdownWatchTerminationGracePeriod` of 0) instead of holding shutdown.
    draining: tokio::sync::watch::Sender<bool>,
}

impl HealthState {
    /// Marks the controllers as started (`poststarthook/start-apiextensions-controllers`).
    pub fn set_controllers_started(&self) {
        self.controllers_started.store(true, Ordering::Release);
    }

    /// Marks the CRD informer as synced (`informer-sync`, `poststarthook/crd-informer-synced`).
    pub fn set_crd_informer_synced(&self) {
        self.crd_informer_synced.store(true, Ordering::Release);
    }

    /// Marks graceful shutdown as begun: `/readyz` fails its `shutdown` check from now on.
    pub fn set_shutting_down(&self) {
        self.shutting_down.store(true, Ordering::Release);
    }

    /// Whether graceful shutdown has begun.
    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::Acquire)
    }

    /// Marks the server as draining: it accepts no more connections and ends its watches.
    pub fn set_draining(&self) {
        self.draining.send_replace(true);
    }

    /// Completes once the server drains (see [`HealthState::set_draining`]); `'static`, for
    /// tasks that outlive the request.
    pub fn drained(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut rx = self.draining.subscribe();
        async move {
            let _ = rx.wait_for(|draining| *draining).await;
        }
    }
}

/// One of the three health endpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// `/healthz` (deprecated upstream, same checks as livez).
    Healthz,
    /// `/livez`.
    Livez,
    /// `/readyz`.
    Readyz,
}

impl Endpoint {
    /// The endpoint and the single check asked for, from a path such as `/readyz/etcd`.
    pub fn parse(path: &str) -> Option<(Endpoint, Option<&str>)> {
        let path = path.strip_prefix('/')?;
        let (head, rest) = match path.split_once('/') {
            Some((h, r)) => (h, Some(r).filter(|r| !r.is_empty())),
            None => (path, None),
        };
        let endpoint = match head {
            "healthz" => Endpoint::Healthz,
            "livez" => Endpoint::Livez,
            "readyz" => Endpoint::Readyz,
            _ => return None,
        };
        Some((endpoint, rest))
    }

    /// The name used in `... check passed` / `... check failed`.
    pub fn name(self) -> &'static str {
        match self {
            Endpoint::Healthz => "healthz",
            Endpoint::Livez => "livez",
            Endpoint::Readyz => "readyz",
        }
    }

    /// The endpoint's checks, in upstream's order.
    pub fn checks(self) -> Vec<&'static str> {
        let mut checks = vec!["ping", "log", "etcd"];
        if self == Endpoint::Readyz {
            checks.extend(["etcd-readiness", "informer-sync"]);
        }
        checks.extend(POST_START_HOOKS);
        if self == Endpoint::Readyz {
            checks.push("shutdown");
        }
        checks
    }
}

/// The outcome of one check in a root health response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The check passed.
    Ok,
    /// The check was excluded with `?exclude=`.
    Excluded,
    /// The check failed, with the reason (logged, never sent).
    Failed(String),
}

/// A health response: status code and plain-text body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// 200 or 500.
    pub code: u16,
    /// The text body.
    pub body: String,
}

/// Formats a root health response as upstream's `handleRootHealth`: `ok` when every check
/// passed (the list with `?verbose`), the list and `<endpoint> check failed` with 500 otherwise.
/// `unmatched` are the `exclude` values that name no check.
pub fn render(
    endpoint: Endpoint,
    outcomes: &[(&str, Outcome)],
    unmatched: &BTreeSet<String>,
    verbose: bool,
) -> Reply {
    use std::fmt::Write;
    let mut list = String::new();
    let mut failed = Vec::new();
    for (name, outcome) in outcomes {
        match outcome {
            Outcome::Ok => {
                let _ = writeln!(list, "[+]{name} ok");
            }
            Outcome::Excluded => {
                let _ = writeln!(list, "[+]{name} excluded: ok");
            }
            Outcome::Failed(reason) => {
                let _ = writeln!(list, "[-]{name} failed: reason withheld");
                failed.push(format!("{name}: {reason}"));
            }
        }
    }
    if !unmatched.is_empty() {
        let quoted: Vec<String> = unmatched.iter().map(|n| format!("{n:?}")).collect();
        let _ = writeln!(
            list,
            "warn: some health checks cannot be excluded: no matches for {}",
            quoted.join(",")
        );
    }
    let name = endpoint.name();
    if !failed.is_empty() {
        tracing::info!(checks = %failed.join("; "), "{name} check failed");
        // http.Error appends a newline.
        return Reply {
            code: 500,
            body: format!("{list}{name} check failed\n"),
        };
    }
    if !verbose {
        return Reply {
            code: 200,
            body: "ok".into(),
        };
    }
    Reply {
        code: 200,
        body: format!("{list}{name} check passed\n"),
    }
}

/// Formats a single-check response (`/readyz/etcd`) as upstream's `adaptCheckToHandler`.
pub fn render_one(result: &Result<(), String>) -> Reply {
    match result {
        Ok(()) => Reply {
            code: 200,
            body: "ok".into(),
        },
        Err(e) => Reply {
            code: 500,
            body: format!("internal server error: {e}\n"),
        },
    }
}

/// Runs one named check.
pub async fn check(name: &str, state: &HealthState, store: &dyn Store) -> Result<(), String> {
    let flag = |b: &AtomicBool, what: &str| {
        if b.load(Ordering::Acquire) {
            Ok(())
        } else {
            Err(what.to_string())
        }
    };
    match name {
        "ping" | "log" => Ok(()),
        "etcd" | "etcd-readiness" => {
            match tokio::time::timeout(STORAGE_PROBE_TIMEOUT, store.current_revision()).await {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(e)) => Err(e.to_string()),
                Err(_) => Err(format!(
                    "storage did not answer within {STORAGE_PROBE_TIMEOUT:?}"
                )),
            }
        }
        "informer-sync" | "poststarthook/crd-informer-synced" => flag(
            &state.crd_informer_synced,
            "1 informers not started yet: [customresourcedefinitions]",
        ),
        "poststarthook/start-apiextensions-controllers" => {
            flag(&state.controllers_started, "not finished")
        }
        "shutdown" => {
            if state.is_shutting_down() {
                Err("process is shutting down".into())
            } else {
                Ok(())
            }
        }
        _ => Err(format!("no such check {name:?}")),
    }
}

/// Serves a health request: the whole endpoint, or one check (`None` when `path` names no
/// check of the endpoint, which is a 404). `excludes` are the `exclude` query values.
pub async fn serve(
    path: &str,
    excludes: &[String],
    verbose: bool,
    state: &HealthState,
    store: &dyn Store,
) -> Option<Reply> {
    let (endpoint, one) = Endpoint::parse(path)?;
    let checks = endpoint.checks();
    if let Some(one) = one {
        if !checks.contains(&one) {
            return None;
        }
        return Some(render_one(&check(one, state, store).await));
    }
    let mut unmatched: BTreeSet<String> = excludes.iter().cloned().collect();
    let mut outcomes = Vec::with_capacity(checks.len());
    for name in checks {
        let outcome = if unmatched.remove(name) {
            Outcome::Excluded
        } else {
            match check(name, state, store).await {
                Ok(()) => Outcome::Ok,
                Err(e) => Outcome::Failed(e),
            }
        };
        outcomes.push((name, outcome));
    }
    Some(render(endpoint, &outcomes, &unmatched, verbose))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcomes(failed: &[&str], excluded: &[&str]) -> Vec<(&'static str, Outcome)> {
        Endpoint::Readyz
            .checks()
            .into_iter()
            .map(|n| {
                let o = if failed.contains(&n) {
                    Outcome::Failed("boom".into())
                } else if excluded.contains(&n) {
                    Outcome::Excluded
                } else {
                    Outcome::Ok
                };
                (n, o)
            })
            .collect()
    }

    #[test]
    fn verbose_success_lists_every_check_then_passed() {
        let r = render(
            Endpoint::Readyz,
            &outcomes(&[], &[]),
            &BTreeSet::new(),
            true,
        );
        assert_eq!(r.code, 200);
        assert_eq!(
            r.body,
            "[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]etcd-readiness ok\n[+]informer-sync ok\n\
             [+]poststarthook/crd-informer-synced ok\n\
             [+]poststarthook/start-apiextensions-controllers ok\n[+]shutdown ok\n\
             readyz check passed\n"
        );
    }

    #[test]
    fn quiet_success_is_ok() {
        let r = render(
            Endpoint::Livez,
            &[("ping", Outcome::Ok)],
            &BTreeSet::new(),
            false,
        );
        assert_eq!(
            r,
            Reply {
                code: 200,
                body: "ok".into()
            }
        );
    }

    #[test]
    fn failure_is_always_verbose_and_withholds_the_reason() {
        let r = render(
            Endpoint::Readyz,
            &outcomes(&["etcd", "shutdown"], &["log"]),
            &BTreeSet::new(),
            false,
        );
        assert_eq!(r.code, 500);
        assert_eq!(
            r.body,
            "[+]ping ok\n[+]log excluded: ok\n[-]etcd failed: reason withheld\n\
             [+]etcd-readiness ok\n[+]informer-sync ok\n\
             [+]poststarthook/crd-informer-synced ok\n\
             [+]poststarthook/start-apiextensions-controllers ok\n\
             [-]shutdown failed: reason withheld\nreadyz check failed\n"
        );
    }

    #[test]
    fn unmatched_excludes_are_warned_about_sorted_and_quoted() {
        let unmatched: BTreeSet<String> = ["zz".to_string(), "x".to_string()].into();
        let r = render(Endpoint::Livez, &[("ping", Outcome::Ok)], &unmatched, true);
        assert_eq!(
            r.body,
            "[+]ping ok\nwarn: some health checks cannot be excluded: no matches for \
             \"x\",\"zz\"\nlivez check passed\n"
        );
    }

    #[test]
    fn paths_name_endpoint_and_check() {
        assert_eq!(
            Endpoint::parse("/readyz/etcd"),
            Some((Endpoint::Readyz, Some("etcd")))
        );
        assert_eq!(
            Endpoint::parse("/livez/poststarthook/crd-informer-synced"),
            Some((Endpoint::Livez, Some("poststarthook/crd-informer-synced")))
        );
        assert_eq!(Endpoint::parse("/healthz"), Some((Endpoint::Healthz, None)));
        assert_eq!(Endpoint::parse("/readyz/"), Some((Endpoint::Readyz, None)));
        assert!(!Endpoint::Livez.checks().contains(&"shutdown"));
    }

    #[test]
    fn single_check_failure_names_the_error() {
        assert_eq!(
            render_one(&Err("process is shutting down".into())),
            Reply {
                code: 500,
                body: "internal server error: process is shutting down\n".into()
            }
        );
    }
}
