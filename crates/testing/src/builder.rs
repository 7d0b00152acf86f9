//! [`Builder`]: what a test server starts with (CRDs, preloaded objects, admission and conversion
//! webhooks served in the test process, server settings), the counterpart of envtest's
//! `Environment` and `WebhookInstallOptions`.

use std::path::Path;
use std::sync::Arc;

use crd_webhook::{Converter, Mutator, Validator};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;

use crate::TestServer;
use crate::crds::{crds_from_dir, crds_from_yaml};
use crate::webhooks::{Function, Registration, Target};

/// A change to the server's configuration, applied before it starts.
pub(crate) type Configure = Box<dyn FnOnce(&mut crd_server::ServerConfig) + Send>;

/// Collects what a [`TestServer`] starts with; [`Builder::start`] starts it.
///
/// Mistakes found while collecting (a CRD file that does not parse, an object that does not
/// serialize) are reported by [`Builder::start`], so that the chain stays free of `?`.
#[must_use = "a builder does nothing until `.start().await`"]
#[derive(Default)]
pub struct Builder {
    pub(crate) crds: Vec<CustomResourceDefinition>,
    pub(crate) objects: Vec<Value>,
    pub(crate) configure: Vec<Configure>,
    pub(crate) webhooks: Vec<Registration>,
    pub(crate) errors: Vec<anyhow::Error>,
    /// etcd endpoints chosen by [`Builder::etcd`], overriding `CRD_APISERVER_ETCD`.
    #[cfg(feature = "etcd")]
    pub(crate) etcd: Option<Vec<String>>,
}

impl std::fmt::Debug for Builder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder")
            .field("crds", &self.crds.len())
            .field("objects", &self.objects.len())
            .field("configure", &self.configure.len())
            .field("webhooks", &self.webhooks.len())
            .field("errors", &self.errors)
            .finish_non_exhaustive()
    }
}

impl Builder {
    /// Installs `crd` before [`Builder::start`] returns, and waits until it is Established:
    /// with kube-rs, `.crd(MyKind::crd())` from `#[derive(CustomResource)]`.
    pub fn crd(mut self, crd: CustomResourceDefinition) -> Self {
        self.crds.push(crd);
        self
    }

    /// Installs every CRD in `yaml` (several documents allowed), as [`Builder::crd`].
    pub fn crd_yaml(mut self, yaml: &str) -> Self {
        match crds_from_yaml(yaml) {
            Ok(crds) => self.crds.extend(crds),
            Err(e) => self.errors.push(e),
        }
        self
    }

    /// Installs every CRD in the `*.yaml` and `*.yml` files of `dir` (for example
    /// `config/crd/bases`), as [`Builder::crd`].
    pub fn crds_from_dir(mut self, dir: impl AsRef<Path>) -> Self {
        match crds_from_dir(dir) {
            Ok(crds) => self.crds.extend(crds),
            Err(e) => self.errors.push(e),
        }
        self
    }

    /// Creates `object` once the CRDs are Established, in the order given: a
    /// `serde_json::Value`, a `kube::api::DynamicObject` or any typed k8s-openapi object
    /// (`Namespace`, `ConfigMap`, `Role`, `RoleBinding`, a custom resource...). It needs `apiVersion`
    /// and `kind`; namespaced objects without a namespace go to `default`.
    pub fn object(mut self, object: impl serde::Serialize) -> Self {
        match serde_json::to_value(object) {
            Ok(v) => self.objects.push(v),
            Err(e) => self.errors.push(e.into()),
        }
        self
    }

    /// Serves `validator` as the validating admission webhook of `configuration`, in the test
    /// process: an HTTPS server on a free loopback port with a generated CA. Every webhook of
    /// the configuration gets that server's `clientConfig` (`url` and `caBundle`, replacing a
    /// production manifest's `service`), so the configuration an operator ships and the
    /// function its webhook binary serves (a `crd_webhook::Validator`) are tested as they are.
    /// [`Builder::start`] returns once the server calls the webhook.
    ///
    /// Preloaded objects ([`Builder::object`]) are created before admission webhooks are
    /// registered: they are the state a webhook finds, never refused by it.
    pub fn validating_webhook(
        mut self,
        configuration: ValidatingWebhookConfiguration,
        validator: impl Validator + 'static,
    ) -> Self {
        if let Err(e) = named(configuration.metadata.name.as_deref(), "validating_webhook") {
            self.errors.push(e);
            return self;
        }
        self.webhooks.push(Registration {
            function: Function::Validating(Arc::new(validator)),
            target: Target::Validating(Box::new(configuration)),
        });
        self
    }

    /// Serves `mutator` as the mutating admission webhook of `configuration`, as
    /// [`Builder::validating_webhook`] does for validating ones: the function returns the
    /// object it wants stored (a `crd_webhook::Mutator`) and the JSON Patch is computed.
    pub fn mutating_webhook(
        mut self,
        configuration: MutatingWebhookConfiguration,
        mutator: impl Mutator + 'static,
    ) -> Self {
        if let Err(e) = named(configuration.metadata.name.as_deref(), "mutating_webhook") {
            self.errors.push(e);
            return self;
        }
        self.webhooks.push(Registration {
            function: Function::Mutating(Arc::new(mutator)),
            target: Target::Mutating(Box::new(configuration)),
        });
        self
    }

    /// Serves `converter` (a `crd_webhook::Converter`: `fn(object, desired_api_version)`) as
    /// the conversion webhook of the CRD named `crd`, which must be one of the builder's CRDs:
    /// its `spec.conversion` becomes `strategy: Webhook` with the webhook's `clientConfig`
    /// (keeping the CRD's `conversionReviewVersions`, else `v1`) before it is created, so
    /// the conversion is in force once the CRD is Established.
    pub fn conversion_webhook(mut self, crd: &str, converter: impl Converter + 'static) -> Self {
        self.webhooks.push(Registration {
            function: Function::Conversion(Arc::new(converter)),
            target: Target::Conversion(crd.to_string()),
        });
        self
    }

    /// Adjusts the server's configuration before it starts: the same settings as the flags of
    /// `crd-apiserver serve` (authorization modes, anonymous auth, token file, limits, audit).
    /// The bind address, data dir and TLS are the harness's and are best left alone.
    pub fn configure(
        mut self,
        configure: impl FnOnce(&mut crd_server::ServerConfig) + Send + 'static,
    ) -> Self {
        self.configure.push(Box::new(configure));
        self
    }

    /// A `crd-apiserver serve` flag by its name: `--authorization-mode`,
    /// `--authorization-policy-file`, `--anonymous-auth`, `--token-auth-file`, `--client-ca-file`,
    /// `--api-audiences`, `--service-account-issuer`, `--service-account-key-file`,
    /// `--max-requests-inflight`, `--max-mutating-requests-inflight`, `--max-object-size`,
    /// `--request-timeout`, `--audit-policy-file`, `--authentication-config`,
    /// `--encryption-provider-config`, `--runtime-config`, `--authorization-webhook-config-file`,
    /// `--authorization-webhook-version`, `--authorization-config`,
    /// `--authentication-token-webhook-config-file`, `--authentication-token-webhook-version`.
    /// Another name or a bad value makes
    /// [`Builder::start`] fail.
    pub fn flag(mut self, name: &str, value: &str) -> Self {
        // Checked now, on a scratch configuration, so that the error is reported by `start`.
        let mut scratch = crate::server::default_config(Path::new("."));
        if let Err(e) = crate::flags::apply(&mut scratch, name, value) {
            self.errors.push(e);
            return self;
        }
        let (name, value) = (name.to_string(), value.to_string());
        self.configure(move |c| {
            let _ = crate::flags::apply(c, &name, &value);
        })
    }

    /// `--authorization-mode`: the ordered authorizers (`AlwaysAllow`, `AlwaysDeny`, `ABAC`,
    /// `Webhook`, `RBAC`; default `RBAC`, as `serve`).
    pub fn authorization_modes(self, modes: &[&str]) -> Self {
        let modes: Vec<String> = modes.iter().map(|m| (*m).to_string()).collect();
        self.configure(move |c| {
            c.authorization.modes = modes;
            c.authorization.flags_set = true;
        })
    }

    /// `--anonymous-auth`: whether requests without credentials act as `system:anonymous`
    /// (default true, as `serve`).
    pub fn anonymous_auth(self, enabled: bool) -> Self {
        self.configure(move |c| c.anonymous_auth = enabled)
    }

    /// Stores in etcd at `endpoints` (`http://127.0.0.1:2379`) instead of the embedded store,
    /// under a key prefix of this server's own, whatever `CRD_APISERVER_ETCD` says.
    #[cfg(feature = "etcd")]
    pub fn etcd(mut self, endpoints: &[&str]) -> Self {
        self.etcd = Some(endpoints.iter().map(|e| (*e).to_string()).collect());
        self
    }

    /// Starts the server, installs the CRDs and waits until they are Established, then creates
    /// the objects. The first error (a bad CRD file, a rejected object, a server that fails to
    /// start) is returned and nothing is left running.
    pub async fn start(self) -> anyhow::Result<TestServer> {
        TestServer::launch(self).await
    }
}

/// A webhook configuration needs a name: it is how [`TestServer::webhook`] finds its server.
fn named(name: Option<&str>, method: &str) -> anyhow::Result<()> {
    anyhow::ensure!(
        name.is_some_and(|n| !n.is_empty()),
        "{method}: the configuration needs metadata.name"
    );
    Ok(())
}
