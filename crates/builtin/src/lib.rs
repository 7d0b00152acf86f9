//! The built-in kinds (ConfigMap, Secret, Deployment, Lease, ...) as data, so the server drives
//! them from one table on the same machinery as custom resources.
//!
//! Architecture Invariant: this crate does no IO and knows no HTTP, async runtime or storage.
