//! The supervisor: runs every controller in one [`JoinSet`] and restarts, with exponential
//! backoff, a controller that panics, fails or returns before shutdown, logging why. A
//! controller is a factory of futures, called afresh for every start, so a restarted controller
//! begins from a new list of the world rather than from the state its failure left behind.
//!
//! Architecture Invariant: no controller task is spawned outside the supervisor (their own short
//! work, such as a CRD's cleanup, lives in a `JoinSet` the controller owns); a controller that
//! stops before shutdown is logged and restarted, never silently gone.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::{Id, JoinError, JoinSet};
use tokio::time::Instant;

/// One run of a controller: ends with `Ok(())` at shutdown, or with why it stopped.
pub type ControllerFuture = Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send>>;

type Factory = Arc<dyn Fn(watch::Receiver<bool>) -> ControllerFuture + Send + Sync>;

/// The first wait before a restart.
pub const INITIAL_BACKOFF: Duration = Duration::from_millis(200);

/// The longest wait before a restart.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// A controller that ran this long before stopping restarts after [`INITIAL_BACKOFF`] again.
const STABLE: Duration = Duration::from_mins(1);

/// How long controllers get to finish after shutdown before they are aborted.
const GRACE: Duration = Duration::from_secs(5);

struct Spec {
    name: &'static str,
    factory: Factory,
    backoff: Duration,
    started: Instant,
}

/// Runs controllers and restarts the ones that stop. See the module documentation.
pub struct Supervisor {
    tasks: JoinSet<anyhow::Result<()>>,
    specs: HashMap<Id, Spec>,
    shutdown: watch::Receiver<bool>,
    initial_backoff: Duration,
    max_backoff: Duration,
}

impl std::fmt::Debug for Supervisor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<_> = self.specs.values().map(|s| s.name).collect();
        f.debug_struct("Supervisor")
            .field("controllers", &names)
            .finish_non_exhaustive()
    }
}

impl Supervisor {
    /// A supervisor whose controllers stop when `shutdown` turns true.
    pub fn new(shutdown: watch::Receiver<bool>) -> Self {
        Supervisor {
            tasks: JoinSet::new(),
            specs: HashMap::new(),
            shutdown,
            initial_backoff: INITIAL_BACKOFF,
            max_backoff: MAX_BACKOFF,
        }
    }

    /// Sets the restart backoff (for tests).
    #[must_use]
    pub fn backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.initial_backoff = initial;
        self.max_backoff = max.max(initial);
        self
    }

    /// Starts a controller now: `factory` is called with the shutdown receiver for the first run
    /// and for every restart.
    pub fn spawn<F, Fut>(&mut self, name: &'static str, factory: F)
    where
        F: Fn(watch::Receiver<bool>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
    {
        let factory: Factory = Arc::new(move |shutdown| Box::pin(factory(shutdown)));
        let spec = Spec {
            name,
            factory,
            backoff: self.initial_backoff,
            started: Instant::now(),
        };
        self.start(spec, Duration::ZERO);
    }

    fn start(&mut self, mut spec: Spec, delay: Duration) {
        let factory = spec.factory.clone();
        let mut shutdown = self.shutdown.clone();
        let handle = self.tasks.spawn(async move {
            if !delay.is_zero()
                && super::informer::until_shutdown(&mut shutdown, tokio::time::sleep(delay))
                    .await
                    .is_none()
            {
                return Ok(());
            }
            factory(shutdown).await
        });
        spec.started = Instant::now() + delay;
        self.specs.insert(handle.id(), spec);
    }

    fn shutting_down(&self) -> bool {
        *self.shutdown.borrow()
    }

    /// Supervises until shutdown, then waits (a few seconds at most) for the controllers to end.
    pub async fn run(mut self) {
        let mut shutdown = self.shutdown.clone();
        while !self.shutting_down() {
            tokio::select! {
                Some(joined) = self.tasks.join_next_with_id() => self.restart(joined),
                changed = shutdown.changed() => if changed.is_err() { break },
                else => return,
            }
        }
        let drain = async { while self.tasks.join_next().await.is_some() {} };
        if tokio::time::timeout(GRACE, drain).await.is_err() {
            tracing::warn!("controllers still running after shutdown; aborting them");
            self.tasks.abort_all();
        }
    }

    fn restart(&mut self, joined: Result<(Id, anyhow::Result<()>), JoinError>) {
        let (id, why) = match joined {
            Ok((id, Ok(()))) => (id, "returned".to_string()),
            Ok((id, Err(e))) => (id, format!("failed: {e:#}")),
            Err(e) => (e.id(), describe_join_error(e)),
        };
        let Some(mut spec) = self.specs.remove(&id) else {
            return;
        };
        if self.shutting_down() {
            return;
        }
        if spec.started.elapsed() >= STABLE {
            spec.backoff = self.initial_backoff;
        }
        let delay = spec.backoff;
        spec.backoff = (spec.backoff * 2).min(self.max_backoff);
        tracing::error!(
            controller = spec.name,
            restart_in = ?delay,
            "controller {why}; restarting"
        );
        self.start(spec, delay);
    }
}

fn describe_join_error(e: JoinError) -> String {
    if e.is_cancelled() {
        return "was cancelled".into();
    }
    let payload = e.into_panic();
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string payload".into());
    format!("panicked: {message}")
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn restarts_after_panic_failure_and_return_until_shutdown() {
        let (tx, rx) = watch::channel(false);
        let runs = Arc::new(AtomicUsize::new(0));
        let mut supervisor =
            Supervisor::new(rx).backoff(Duration::from_millis(1), Duration::from_millis(4));
        let counter = runs.clone();
        supervisor.spawn("flaky", move |mut shutdown| {
            let run = counter.fetch_add(1, Ordering::SeqCst);
            async move {
                match run {
                    0 => panic!("first run panics"),
                    1 => anyhow::bail!("second run fails"),
                    2 => Ok(()),
                    _ => {
                        let _ = shutdown.wait_for(|s| *s).await;
                        Ok(())
                    }
                }
            }
        });
        let steady = Arc::new(AtomicUsize::new(0));
        let counter = steady.clone();
        supervisor.spawn("steady", move |mut shutdown| {
            counter.fetch_add(1, Ordering::SeqCst);
            async move {
                let _ = shutdown.wait_for(|s| *s).await;
                Ok(())
            }
        });
        let supervising = tokio::spawn(supervisor.run());
        let deadline = Instant::now() + Duration::from_secs(10);
        while runs.load(Ordering::SeqCst) < 4 {
            assert!(Instant::now() < deadline, "restarted three times");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tx.send_replace(true);
        tokio::time::timeout(Duration::from_secs(10), supervising)
            .await
            .expect("supervisor ends after shutdown")
            .unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 4);
        assert_eq!(steady.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn panic_messages_are_described() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let e = tokio::spawn(async { panic!("boom {}", 1) })
                .await
                .unwrap_err();
            assert_eq!(describe_join_error(e), "panicked: boom 1");
            let e = tokio::spawn(async { std::panic::panic_any(7_u8) })
                .await
                .unwrap_err();
            assert_eq!(describe_join_error(e), "panicked: a non-string payload");
        });
    }
}
