//! [`ClientLimits`]: how long a lister-watcher waits for a server and how much it accepts.

use std::time::Duration;

/// How long a [`KubeListerWatcher`](crate::KubeListerWatcher) waits for a server, and how
/// large a value it accepts from one. Every limit ends its request with an
/// [`Error::LimitExceeded`](informer_core::Error::LimitExceeded) that the reflector handles
/// like any failure of its class (a stall is a transport failure: backoff, then the same
/// request again; an oversized frame is a decode failure). The defaults stop servers that
/// stall or flood without ever cutting a healthy request short; the crate documentation
/// has the table of every setting, next to what client-go does.
///
/// ```
/// use std::time::Duration;
/// use informer_kube::ClientLimits;
///
/// let limits = ClientLimits {
///     // Bookmarks arrive about once a minute from an API server with its watch cache:
///     // three minutes of silence means the stream is dead.
///     watch_idle_timeout: Some(Duration::from_secs(180)),
///     ..ClientLimits::default()
/// };
/// assert_eq!(limits.max_frame_bytes, 16 << 20);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClientLimits {
    /// From sending a list or watch request to its response's status line and headers
    /// (connecting, TLS, and the server's time to answer). Default 70 s: the API server
    /// answers a list it cannot finish within its own 60 s request timeout with a 504.
    pub response_timeout: Duration,
    /// The longest silence (no byte) while reading a list body or an error answer. Default
    /// 60 s.
    pub idle_timeout: Duration,
    /// The longest silence on a watch stream, or `None` (the default) for none: an API
    /// server without a watch cache for the resource sends nothing on a quiet watch for its
    /// whole `timeoutSeconds`. The [deadline](Self::watch_deadline_margin) still ends a dead
    /// stream.
    pub watch_idle_timeout: Option<Duration>,
    /// A watch is abandoned this long after the `timeoutSeconds` it asked the server for
    /// (by which time the server should have ended it). Default 30 s. A watch sent without
    /// `timeoutSeconds` gets the API server's longest default, 3,600 s, plus this margin.
    pub watch_deadline_margin: Duration,
    /// The largest watch line (one event), list item or other top-level list member, in
    /// bytes. Default 16 MiB (client-go's limit on one decoded object; an API server stores
    /// objects of at most about 1.5 MiB).
    pub max_frame_bytes: usize,
    /// How much of an error answer's body is read (for its `Status`); the rest is not read.
    /// Default 64 KiB.
    pub max_error_body_bytes: usize,
}

/// The API server's longest watch when the request gives no `timeoutSeconds`: its
/// `--min-request-timeout` (1,800 s) times a random factor below 2.
pub(crate) const UNSPECIFIED_WATCH_TIMEOUT: Duration = Duration::from_secs(3600);

impl Default for ClientLimits {
    fn default() -> Self {
        Self {
            response_timeout: Duration::from_secs(70),
            idle_timeout: Duration::from_secs(60),
            watch_idle_timeout: None,
            watch_deadline_margin: Duration::from_secs(30),
            max_frame_bytes: 16 << 20,
            max_error_body_bytes: 64 << 10,
        }
    }
}

impl ClientLimits {
    /// When a watch that asked for `timeout_seconds` is abandoned, counted from its request.
    pub fn watch_deadline(&self, timeout_seconds: Option<u32>) -> Duration {
        timeout_seconds
            .map_or(UNSPECIFIED_WATCH_TIMEOUT, |s| {
                Duration::from_secs(u64::from(s))
            })
            .saturating_add(self.watch_deadline_margin)
    }
}
