//! Lease-based leader election (coordination.k8s.io/v1), as client-go's leaderelection does it:
//! a `Lease` names its holder and when it last renewed; another instance takes it over once
//! `leaseDurationSeconds` have passed without a renewal. Every write carries the
//! `resourceVersion` it read, so two candidates never both win (the loser gets 409).

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};
use kube::{Client, ResourceExt};

/// One candidate for a lease.
#[derive(Clone, Debug)]
pub struct Elector {
    leases: Api<Lease>,
    name: String,
    identity: String,
    duration: Duration,
}

impl Elector {
    /// A candidate `identity` for the Lease `namespace/name`, held for `duration` per renewal.
    pub fn new(
        client: Client,
        namespace: &str,
        name: &str,
        identity: &str,
        duration: Duration,
    ) -> Self {
        Elector {
            leases: Api::namespaced(client, namespace),
            name: name.into(),
            identity: identity.into(),
            duration,
        }
    }

    /// Acquires, renews or takes over an expired lease; `Ok(false)` when another holder has it
    /// (or won the race for it).
    pub async fn try_acquire_or_renew(&self) -> Result<bool, kube::Error> {
        let now = MicroTime(Timestamp::now());
        let seconds = i32::try_from(self.duration.as_secs().max(1)).unwrap_or(i32::MAX);
        let Some(mut lease) = self.leases.get_opt(&self.name).await? else {
            let mut lease = Lease::default();
            lease.metadata.name = Some(self.name.clone());
            lease.spec = Some(LeaseSpec {
                holder_identity: Some(self.identity.clone()),
                lease_duration_seconds: Some(seconds),
                acquire_time: Some(now.clone()),
                renew_time: Some(now),
                lease_transitions: Some(0),
                ..LeaseSpec::default()
            });
            return lost_race(self.leases.create(&PostParams::default(), &lease).await);
        };
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        let mine = spec.holder_identity.as_deref() == Some(self.identity.as_str());
        if !mine {
            let held_for = Duration::from_secs(
                u64::try_from(spec.lease_duration_seconds.unwrap_or(seconds)).unwrap_or(0),
            );
            let expired = spec.renew_time.as_ref().is_none_or(|t| {
                now.0 > t.0 && now.0.duration_since(t.0).unsigned_abs() >= held_for
            });
            if spec.holder_identity.is_some() && !expired {
                return Ok(false);
            }
            spec.holder_identity = Some(self.identity.clone());
            spec.acquire_time = Some(now.clone());
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
        }
        spec.lease_duration_seconds = Some(seconds);
        spec.renew_time = Some(now);
        let name = lease.name_any();
        lost_race(
            self.leases
                .replace(&name, &PostParams::default(), &lease)
                .await,
        )
    }

    /// Runs `work` while this candidate leads, trying every third of the lease duration; stops
    /// it (drops the task) as soon as a renewal fails. Never returns.
    pub async fn run<F, Fut>(self, work: F)
    where
        F: Fn() -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        // Dropping `run` (its task aborted) stops the work too.
        let mut running: Option<AbortOnDrop> = None;
        let mut tick = tokio::time::interval(self.duration / 3);
        loop {
            tick.tick().await;
            let leading = self.try_acquire_or_renew().await.unwrap_or(false);
            match (&running, leading) {
                (None, true) => running = Some(AbortOnDrop(tokio::spawn(work()))),
                (Some(_), false) => running = None,
                _ => {}
            }
        }
    }
}

/// The leader's work, stopped when leadership (or the elector) goes.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A conflict (another candidate wrote first) is a lost election, not an error.
fn lost_race(result: Result<Lease, kube::Error>) -> Result<bool, kube::Error> {
    match result {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
        Err(e) => Err(e),
    }
}
