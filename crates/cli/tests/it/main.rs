//! Integration tests: the real `crd-apiserver` binary driven by kubectl and by an HTTP client
//! over HTTP/1.1 and HTTP/2, on 127.0.0.1 with a free port.

mod access;
mod access_rbac;
mod admission;
mod admission_policy;
mod auth_kubectl;
mod auth_webhooks;
mod builtin;
mod builtin_each_kind;
mod cel;
mod certificates;
mod conversion;
mod conversion_rules;
mod encryption;
mod ephemeral;
#[cfg(feature = "etcd")]
mod etcd;
mod gc;
mod http_api;
mod kube_rs;
mod kube_rs_builtin;
mod migration;
mod mutating_policy;
mod observability;
mod oidc;
mod python_client;
mod reliability;
mod schemas;
mod server_side_apply;
mod serving;
mod support;
mod upgrade_check;
mod v1beta1;
mod versions;
mod walkthrough;
mod webhook_library;
