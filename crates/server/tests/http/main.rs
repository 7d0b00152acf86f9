//! HTTP behaviour of the server as a library: `crd_server::run` in the test process over a
//! SQLite store, driven by an HTTPS client over HTTP/1.1 and HTTP/2. Tests that need the binary
//! (flags, signals, restarts) or kubectl live in `crates/cli/tests/it`.

mod access;
mod admission;
mod admission_policy;
mod api;
mod apiservices;
mod certificates;
mod compression;
mod conversion_rules;
mod crd_scale;
mod create_answer;
mod discovery_cache;
mod gc;
mod hostile;
mod list_stream;
mod managed_fields_apply;
mod mutating_policy;
mod namespace_lifecycle;
mod observability;
mod oidc;
mod pod_subresources;
mod rbac;
mod request_timeout;
mod support;
mod upgrade_check;
mod v1beta1;
mod watch;
mod watch_cache;
mod webhook_auth;
