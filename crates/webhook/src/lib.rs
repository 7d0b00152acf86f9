//! Write one function, get a complete Kubernetes webhook: CRD conversion or admission.
//!
//! kube-apiserver (and compatible servers) convert custom resources between versions by
//! sending (POST) a `ConversionReview` to a webhook over HTTPS. This crate implements everything
//! around the actual conversion:
//!
//! - [`review`]: parsing `apiextensions.k8s.io/v1` and `v1beta1` reviews, calling your
//!   [`Converter`] once per object (skipping objects already at the desired version),
//!   and enforcing the rules the API server checks on the response (apiVersion set,
//!   kind/name/namespace/uid unchanged, only labels and annotations may change in metadata).
//! - [`admission`]: validating and mutating admission webhooks in one function each
//!   ([`Validator`], [`Mutator`]: the JSON Patch is computed for you), served by
//!   [`WebhookServer::spawn_validating`] and [`WebhookServer::spawn_mutating`].
//! - [`server`]: an HTTPS server (HTTP/1.1 and HTTP/2) that serves the review endpoint.
//! - [`self_signed`] (feature `self-signed`, on by default): an in-memory CA and serving
//!   certificate plus the `caBundle` string a CRD needs.
//! - `testing` (feature `testing`): a webhook that misbehaves on purpose, to test API servers.
//!
//! ```no_run
//! use crd_webhook::{self_signed, WebhookServer};
//! use serde_json::Value;
//!
//! fn convert(mut object: Value, desired_api_version: &str) -> Result<Value, String> {
//!     // Move fields around here; apiVersion and metadata are taken care of.
//!     let _ = (&mut object, desired_api_version);
//!     Ok(object)
//! }
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let certs = self_signed(&["127.0.0.1", "localhost"])?;
//! println!("caBundle: {}", certs.ca_bundle_base64);
//! WebhookServer::new(&certs.cert_pem, &certs.key_pem)?
//!     .bind("127.0.0.1:8443".parse()?)
//!     .serve(convert, async { let _ = tokio::signal::ctrl_c().await; })
//!     .await?;
//! # Ok(())
//! # }
//! ```

pub mod admission;
pub mod review;
pub mod server;

#[cfg(feature = "self-signed")]
mod certs;

#[cfg(feature = "testing")]
pub mod testing;

pub use admission::{Denial, Mutator, Validator, handle_admission_review};
pub use review::{Converter, ReviewError, handle_review, handle_review_value};
pub use server::{ServerError, WebhookHandle, WebhookServer};

#[cfg(feature = "self-signed")]
pub use certs::{GenerateError, Generated, self_signed};
