//! The support of the fake API server's tests, declared once for the whole binary:
//! - [`http`]: start the HTTP front end (or the `fake-apiserver` binary), talk to it with
//!   reqwest, read watch streams line by line;
//! - [`kubectl`]: run kubectl against a server, with its own kubeconfig and discovery cache.

#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "http")]
pub mod kubectl;
