//! The integration tests of `fake-apiserver`, in one test binary (`cargo test -p
//! fake-apiserver --test it`): every integration-test binary links the dependencies (axum,
//! hyper, reqwest, kube-client, k8s-openapi, k8s-pb, ...) again, so the crate has one, with a
//! module per suite. Test names carry their module path: `fake_watch::...`,
//! `kubectl_cli::...`; filter on it, e.g. `cargo test -p fake-apiserver --test it -- http_`.
//!
//! The `fake_*` modules drive the engine in process (the request layer and the in-process
//! `ListerWatcher`); the `http_*` modules and `kubectl_cli` need the feature `http` and talk
//! to the HTTP front end or to the `fake-apiserver` binary; `http_in_process` needs the feature
//! `kube-client` and calls the front end without a socket. [`support`] holds what they share.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod support;

// The admission webhook example's logic, run by `http_webhooks`.
#[cfg(feature = "http")]
#[path = "../../examples/admission-webhook/app.rs"]
mod admission_webhook_example;

mod fake_faults;
mod fake_gc;
mod fake_limits;
mod fake_list;
mod fake_namespaces;
mod fake_seed;
mod fake_shard;
mod fake_versions;
mod fake_watch;
mod fake_write_faults;
mod fake_writes;
mod http_admin;
mod http_admission_policies;
mod http_apply;
mod http_autoscaler_versions;
mod http_binary;
mod http_bindings;
mod http_builtin_types;
mod http_clients;
mod http_crd_deletion;
mod http_crd_versions;
mod http_csrs;
mod http_discovery;
mod http_event_views;
mod http_eviction;
mod http_in_process;
mod http_kube_client;
mod http_limits;
mod http_list;
mod http_pod_admission;
mod http_pod_exec;
mod http_pod_logs;
mod http_protobuf;
mod http_reviews;
mod http_selectable_fields;
mod http_services;
mod http_shard;
mod http_tokens;
mod http_watch;
mod http_webhooks;
mod http_writes;
mod kubectl_cli;
