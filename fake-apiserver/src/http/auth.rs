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

    /// Whether a request with this `Authorization` header value may pass: `Bearer`, in any
    /// case (auth schemes are case-insensitive, RFC 7235), then the token, compared in
    /// constant time.
    pub(crate) fn allows(&self, authorization: Option<&[u8]>) -> bool {
        match self {
            Self::Open => true,
            Self::Bearer(token) => authorization
                .and_then(bearer_credentials)
                .is_some_and(|given| constant_time_eq(given, token.as_bytes())),
        }
    }
}

/// The credentials of a `Bearer` authorization (`<scheme> 1*SP <token>`, the scheme in any
/// case), trimmed.
fn bearer_credentials(authorization: &[u8]) -> Option<&[u8]> {
    let split = authorization.iter().position(|b| *b == b' ')?;
    let (scheme, rest) = authorization.split_at(split);
    scheme
        .eq_ignore_ascii_case(b"bearer")
        .then(|| rest.trim_ascii())
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
    fn the_scheme_is_case_insensitive() {
        let p = AuthPolicy::for_listener(&addr("127.0.0.1:0"), Some("s3cret"), || unreachable!());
        for ok in [
            &b"Bearer s3cret"[..],
            b"bearer s3cret",
            b"BEARER s3cret",
            b"bEaReR   s3cret ",
        ] {
            assert!(p.allows(Some(ok)), "{}", String::from_utf8_lossy(ok));
        }
        for bad in [
            &b"Bearers3cret"[..],
            b"Bearer",
            b"Bearer ",
            b"Basic s3cret",
            b"bearer s3cre",
            b"bearer s3cret2",
            b"xbearer s3cret",
        ] {
            assert!(!p.allows(Some(bad)), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn unauthorized_is_a_401_status() {
        let s = unauthorized();
        assert_eq!(s.code, 401);
        assert_eq!(s.reason, "Unauthorized");
    }
}
