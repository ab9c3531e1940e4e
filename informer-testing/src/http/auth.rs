//! Who may call the server: open on loopback, a bearer token elsewhere (or when one is set).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::Response;
use informer_core::Status;
use rand::Rng;

use super::response::status_response;

/// The authentication rule the server enforces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum AuthPolicy {
    /// Every request is served (a loopback listener without a configured token).
    Open,
    /// Requests need `Authorization: Bearer <token>`.
    Bearer(Arc<str>),
}

impl AuthPolicy {
    /// The rule for a listener on `listen`: a configured (non-empty) token is always required;
    /// without one, a loopback listener is open and any other gets a token from `generate`.
    pub(crate) fn for_listener(
        listen: &SocketAddr,
        token: Option<&str>,
        generate: impl FnOnce() -> String,
    ) -> Self {
        match token.filter(|t| !t.is_empty()) {
            Some(t) => Self::Bearer(t.into()),
            None if listen.ip().is_loopback() => Self::Open,
            None => Self::Bearer(generate().into()),
        }
    }

    /// The token clients must send, if any.
    pub(crate) fn token(&self) -> Option<&str> {
        match self {
            Self::Open => None,
            Self::Bearer(t) => Some(t),
        }
    }

    /// Whether a request with this `Authorization` header value may pass.
    pub(crate) fn allows(&self, authorization: Option<&[u8]>) -> bool {
        match self {
            Self::Open => true,
            Self::Bearer(token) => authorization
                .and_then(|h| h.strip_prefix(b"Bearer "))
                .is_some_and(|given| constant_time_eq(given.trim_ascii(), token.as_bytes())),
        }
    }
}

/// A random token: 32 lowercase hex digits.
pub(crate) fn generate_token() -> String {
    format!("{:032x}", rand::rng().random::<u128>())
}

/// Compares without an early exit on the first differing byte.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The 401 every unauthenticated request gets.
pub(crate) fn unauthorized() -> Status {
    Status::failure(401, "Unauthorized", "Unauthorized")
}

/// Middleware enforcing the policy on every route.
pub(crate) async fn require_auth(
    State(policy): State<AuthPolicy>,
    request: Request,
    next: Next,
) -> Response {
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .map(|v| v.as_bytes());
    if policy.allows(given) {
        next.run(request).await
    } else {
        status_response(&unauthorized())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn loopback_without_token_is_open() {
        let p = AuthPolicy::for_listener(&addr("127.0.0.1:0"), None, || unreachable!());
        assert_eq!(p, AuthPolicy::Open);
        assert!(p.allows(None));
        let p = AuthPolicy::for_listener(&addr("[::1]:80"), Some(""), || unreachable!());
        assert_eq!(p, AuthPolicy::Open);
    }

    #[test]
    fn non_loopback_without_token_generates_one() {
        let p = AuthPolicy::for_listener(&addr("0.0.0.0:8080"), None, || "gen".into());
        assert_eq!(p.token(), Some("gen"));
        assert!(!p.allows(None));
        assert!(!p.allows(Some(b"Bearer nope")));
        assert!(!p.allows(Some(b"Basic gen")));
        assert!(p.allows(Some(b"Bearer gen")));
        let p = AuthPolicy::for_listener(&addr("192.168.1.5:1"), None, generate_token);
        assert_eq!(p.token().map(str::len), Some(32));
    }

    #[test]
    fn a_configured_token_is_required_even_on_loopback() {
        let p = AuthPolicy::for_listener(&addr("127.0.0.1:0"), Some("s3cret"), || unreachable!());
        assert!(!p.allows(None));
        assert!(p.allows(Some(b"Bearer s3cret")));
        assert!(!p.allows(Some(b"Bearer s3cre")));
    }

    #[test]
    fn unauthorized_is_a_401_status() {
        let s = unauthorized();
        assert_eq!(s.code, 401);
        assert_eq!(s.reason, "Unauthorized");
    }
}
