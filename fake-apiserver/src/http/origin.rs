//! Requests from web pages: a foreign `Origin` (a page's cross-site request: a `text/plain`
//! POST needs no CORS preflight) or a `Host` that does not name the listener (DNS
//! rebinding: a page's own name resolved to 127.0.0.1) get a 403 Status. Without these a
//! page the developer visits could create objects or start churn on a loopback server,
//! which needs no token. kubectl, client-go, kube-client and the Python and JavaScript
//! clients send the kubeconfig server's `host:port` as `Host` and no `Origin`.
//!
//! The own origin is `http://` + the listener's IP, a loopback IP or `localhost` + the
//! listener's port. A `Host` must name the listener's IP, a loopback IP or `localhost`
//! (any port: a proxy on the same machine may pass its own port on, and rebinding needs a
//! name the attacker controls). A listener on every interface (`0.0.0.0`, `::`) that
//! requires a token takes any host (the token, which no web page has, protects it).

use std::net::{IpAddr, SocketAddr};

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::Response;
use informer_core::Status;

use super::response::status_response;

/// Which origins and hosts name this server.
#[derive(Clone, Debug)]
pub(crate) struct SitePolicy {
    addr: SocketAddr,
    /// A listener on every interface that requires a token accepts any host name with its
    /// port (the token, which no web page has, is the protection there).
    any_host: bool,
}

impl SitePolicy {
    pub(crate) fn for_listener(addr: SocketAddr, token_required: bool) -> Self {
        Self {
            addr,
            any_host: addr.ip().is_unspecified() && token_required,
        }
    }

    /// Whether `host` (without a port) names this server: the listener's IP, a loopback IP
    /// or `localhost` (or, see `any_host`, any host).
    fn names_this_server(&self, host: &str) -> bool {
        if self.any_host {
            return true;
        }
        match host.parse::<IpAddr>() {
            Ok(ip) => ip == self.addr.ip() || ip.is_loopback(),
            Err(_) => host.eq_ignore_ascii_case("localhost"),
        }
    }

    /// Whether a `Host` header value names this server. Its port is not compared: DNS
    /// rebinding needs a name the attacker controls, which this refuses whatever the port,
    /// while a proxy on this machine may pass its own `127.0.0.1:<port>` on.
    fn is_own_host(&self, authority: &str) -> bool {
        split_authority(authority).is_some_and(|(host, _)| self.names_this_server(host))
    }

    /// Whether an `Origin` header value is this server's own origin: `http://`, a host
    /// naming it and its port (another port on the same machine is another site). `null`
    /// (sandboxed pages, files) is not.
    fn is_own_origin(&self, origin: &str) -> bool {
        let Some((scheme, authority)) = origin.split_once("://") else {
            return false;
        };
        scheme.eq_ignore_ascii_case("http")
            && split_authority(authority).is_some_and(|(host, port)| {
                port == self.addr.port() && self.names_this_server(host)
            })
    }

    /// Why a request with these headers is refused, if it is.
    pub(crate) fn refuse(&self, origin: Option<&[u8]>, host: Option<&[u8]>) -> Option<Status> {
        if let Some(origin) = origin {
            let text = String::from_utf8_lossy(origin);
            if !self.is_own_origin(&text) {
                return Some(Status::failure(
                    403,
                    "Forbidden",
                    format!(
                        "forbidden: a cross-origin request (Origin {text:?}) is refused: this \
                         server's origin is http://{}, and web pages may not call it",
                        self.addr
                    ),
                ));
            }
        }
        if let Some(host) = host {
            let text = String::from_utf8_lossy(host);
            if !self.is_own_host(&text) {
                return Some(Status::failure(
                    403,
                    "Forbidden",
                    format!(
                        "forbidden: misdirected request: Host {text:?} does not name this server \
                         (listening on {}; use its address or localhost), refused against DNS \
                         rebinding",
                        self.addr
                    ),
                ));
            }
        }
        None
    }
}

/// `host` and port of `host[:port]` or `[v6][:port]` (port 80 when absent); `None` when
/// malformed.
fn split_authority(authority: &str) -> Option<(&str, u16)> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (v6, after) = rest.split_once(']')?;
        match after {
            "" => (v6, None),
            _ => (v6, Some(after.strip_prefix(':')?)),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') => (h, Some(p)),
            Some(_) => return None,
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return None;
    }
    let port = match port {
        Some(p) => p.parse().ok()?,
        None => 80,
    };
    Some((host, port))
}

/// Middleware enforcing the policy on every route (before authentication).
pub(crate) async fn require_same_site(
    State(policy): State<SitePolicy>,
    request: Request,
    next: Next,
) -> Response {
    let origin = request.headers().get(header::ORIGIN).map(|v| v.as_bytes());
    let host = request
        .headers()
        .get(header::HOST)
        .map(|v| v.as_bytes())
        .or_else(|| request.uri().authority().map(|a| a.as_str().as_bytes()));
    match policy.refuse(origin, host) {
        Some(status) => status_response(&status),
        None => next.run(request).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(addr: &str, token: bool) -> SitePolicy {
        SitePolicy::for_listener(addr.parse().unwrap(), token)
    }

    #[test]
    fn hosts_naming_a_loopback_listener() {
        let p = policy("127.0.0.1:8080", false);
        for ok in [
            "127.0.0.1:8080",
            "localhost:8080",
            "LocalHost:8080",
            "[::1]:8080",
            "localhost",
            // A proxy on this machine passing its own address on.
            "127.0.0.1:9999",
        ] {
            assert!(p.is_own_host(ok), "{ok}");
        }
        for bad in [
            "evil.example:8080",
            "evil.example",
            "127.0.0.1:",
            "127.0.0.1:x",
            "",
            ":8080",
            "[::1",
            "::1:8080",
            "localhost.evil.example:8080",
            "192.168.1.5:8080",
        ] {
            assert!(!p.is_own_host(bad), "{bad}");
        }
    }

    #[test]
    fn any_host_only_on_every_interface_with_a_token() {
        assert!(policy("0.0.0.0:8080", true).is_own_host("my-laptop.lan:8080"));
        assert!(!policy("0.0.0.0:8080", false).is_own_host("my-laptop.lan:8080"));
        assert!(policy("0.0.0.0:8080", false).is_own_host("localhost:8080"));
        assert!(policy("[::]:8080", true).is_own_host("[fd00::1]:8080"));
        assert!(!policy("127.0.0.1:8080", true).is_own_host("my-laptop.lan:8080"));
        let p = policy("192.168.1.5:8080", true);
        assert!(p.is_own_host("192.168.1.5:8080"));
        assert!(!p.is_own_host("192.168.1.6:8080"));
        assert!(!p.is_own_host("my-laptop.lan:8080"));
    }

    #[test]
    fn origins() {
        let p = policy("127.0.0.1:8080", false);
        assert!(p.is_own_origin("http://127.0.0.1:8080"));
        assert!(p.is_own_origin("http://localhost:8080"));
        assert!(p.is_own_origin("HTTP://[::1]:8080"));
        for bad in [
            "null",
            "https://127.0.0.1:8080",
            "http://evil.example",
            "http://evil.example:8080",
            "http://127.0.0.1:9",
            "http://localhost",
        ] {
            assert!(!p.is_own_origin(bad), "{bad}");
        }
        let s = p
            .refuse(Some(b"http://evil.example"), Some(b"127.0.0.1:8080"))
            .unwrap();
        assert_eq!((s.code, s.reason.as_str()), (403, "Forbidden"));
        assert!(s.message.contains("cross-origin"), "{}", s.message);
        let s = p.refuse(None, Some(b"evil.example:8080")).unwrap();
        assert!(s.message.contains("DNS rebinding"), "{}", s.message);
        assert!(p.refuse(None, None).is_none());
        assert!(
            p.refuse(Some(b"http://localhost:8080"), Some(b"localhost:8080"))
                .is_none()
        );
    }
}
