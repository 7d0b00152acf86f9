//! `--max-requests-inflight` and `--max-mutating-requests-inflight`, as kube-apiserver's
//! max-in-flight filter: requests beyond the limit are refused with 429 at once rather than
//! queued, so a burst cannot exhaust memory. Long-running requests (watches) are not counted.
//! And `--request-timeout`, the longest a request that is not long-running may take.

use std::sync::Arc;
use std::time::Duration;

use http::Method;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Limits on requests in flight; 0 means no limit, as upstream.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Non-mutating requests (GET, HEAD, OPTIONS) at once.
    pub max_requests_inflight: usize,
    /// Mutating requests (POST, PUT, PATCH, DELETE) at once.
    pub max_mutating_requests_inflight: usize,
    /// Open client connections at once.
    pub max_connections: usize,
    /// `--max-object-size`: the largest stored object, in bytes (etcd's default request limit,
    /// so tests that pass here do not fail on a cluster); 0 means the engine's own limit.
    pub max_object_size: usize,
    /// `--request-timeout`: how long a request that is not long-running may take before it is
    /// answered 504, and the most a `timeout` query parameter may ask for.
    pub request_timeout: Duration,
}

/// kube-apiserver's default `--request-timeout` (1m0s).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_mins(1);

/// etcd's default `--max-request-bytes` (1.5 MiB).
pub const DEFAULT_MAX_OBJECT_SIZE: usize = 1_572_864;

impl Default for Limits {
    /// kube-apiserver's defaults (400 and 200, a 60 s request timeout), and 10,000 connections.
    fn default() -> Self {
        Limits {
            max_requests_inflight: 400,
            max_mutating_requests_inflight: 200,
            max_connections: 10_000,
            max_object_size: DEFAULT_MAX_OBJECT_SIZE,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
        }
    }
}

/// The semaphores behind [`Limits`].
pub struct InFlight {
    read: Option<Arc<Semaphore>>,
    mutating: Option<Arc<Semaphore>>,
    max_object_size: usize,
    request_timeout: Duration,
}

impl InFlight {
    /// Semaphores for the limits.
    pub fn new(limits: &Limits) -> Self {
        let sem = |n: usize| (n > 0).then(|| Arc::new(Semaphore::new(n)));
        InFlight {
            read: sem(limits.max_requests_inflight),
            mutating: sem(limits.max_mutating_requests_inflight),
            max_object_size: limits.max_object_size,
            request_timeout: limits.request_timeout,
        }
    }

    /// `--request-timeout`.
    pub fn request_timeout(&self) -> Duration {
        self.request_timeout
    }

    /// The largest object a write may store (0: no limit of the server's own).
    pub fn max_object_size(&self) -> usize {
        self.max_object_size
    }

    /// A slot for a request, or `None` when the limit is reached. Unlimited kinds get
    /// `Some(None)`.
    pub fn try_acquire(&self, method: &Method) -> Option<Option<OwnedSemaphorePermit>> {
        let sem = if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
            &self.read
        } else {
            &self.mutating
        };
        match sem {
            None => Some(None),
            Some(s) => s.clone().try_acquire_owned().ok().map(Some),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_refuse_past_the_bound_and_release() {
        let f = InFlight::new(&Limits {
            max_requests_inflight: 1,
            max_mutating_requests_inflight: 0,
            max_connections: 1,
            max_object_size: 0,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
        });
        let first = f.try_acquire(&Method::GET).expect("first read fits");
        assert!(
            f.try_acquire(&Method::GET).is_none(),
            "second read is refused"
        );
        for _ in 0..3 {
            assert!(
                f.try_acquire(&Method::POST).is_some(),
                "mutating is unlimited"
            );
        }
        drop(first);
        assert!(f.try_acquire(&Method::GET).is_some(), "slot released");
    }
}
