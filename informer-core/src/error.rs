//! Errors: the API server's `Status`, transport and decode failures, and the classification that
//! the reflector's decisions rely on.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::KeyError;

/// A `Result` whose error defaults to this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The API server's `Status` object (`kind: Status`, `apiVersion: v1`), as sent with error
/// responses and inside watch `ERROR` events.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// `"Success"` or `"Failure"`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub status: String,
    /// A human-readable description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// A machine-readable reason (`NotFound`, `Expired`, `Conflict`, ...).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Extra detail, including the causes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<StatusDetails>,
    /// The HTTP status code (0 when unknown).
    #[serde(default)]
    pub code: u16,
}

/// `Status.details`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusDetails {
    /// The name of the object the status is about.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Its API group.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// Its kind (or resource).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Its UID.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// Individual causes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<StatusCause>,
    /// Seconds the client should wait before retrying (429, some 5xx).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<u32>,
}

/// One entry of `Status.details.causes`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusCause {
    /// Machine-readable cause (`ResourceVersionTooLarge`, `FieldValueInvalid`, ...).
    #[serde(default, rename = "reason", skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Human-readable description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The field the cause is about, if any.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field: String,
}

/// The cause reason the API server attaches to a 504 when asked for a resourceVersion it has not
/// reached yet.
pub const CAUSE_RESOURCE_VERSION_TOO_LARGE: &str = "ResourceVersionTooLarge";

impl Status {
    /// A `Failure` status with the given code, reason and message.
    pub fn failure(code: u16, reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            status: "Failure".into(),
            message: message.into(),
            reason: reason.into(),
            details: None,
            code,
        }
    }

    /// What kind of failure this is. See [`ErrorClass`].
    pub fn class(&self) -> ErrorClass {
        let has_cause = |reason: &str| {
            self.details
                .as_ref()
                .is_some_and(|d| d.causes.iter().any(|c| c.reason == reason))
        };
        // API servers 1.17.0 to 1.18.5 said it only in a cause's message.
        let has_cause_message = |message: &str| {
            self.details
                .as_ref()
                .is_some_and(|d| d.causes.iter().any(|c| c.message == message))
        };
        match (self.code, self.reason.as_str()) {
            (410, _) | (_, "Expired" | "Gone") => ErrorClass::Expired,
            _ if has_cause(CAUSE_RESOURCE_VERSION_TOO_LARGE)
                || has_cause_message("Too large resource version")
                || self.message.contains("Too large resource version") =>
            {
                ErrorClass::ResourceVersionTooLarge
            }
            (429, _) | (_, "TooManyRequests") => ErrorClass::Throttled,
            (404, _) | (_, "NotFound") => ErrorClass::NotFound,
            (409, _) | (_, "Conflict" | "AlreadyExists") => ErrorClass::Conflict,
            (422, _) | (_, "Invalid") => ErrorClass::Invalid,
            (400, _) | (_, "BadRequest") => ErrorClass::BadRequest,
            (401 | 403, _) | (_, "Unauthorized" | "Forbidden") => ErrorClass::Unauthorized,
            (500..=599, _) => ErrorClass::ServerError,
            _ => ErrorClass::Other,
        }
    }

    /// The server's suggested delay before retrying, from `details.retryAfterSeconds`.
    pub fn retry_after(&self) -> Option<Duration> {
        self.details
            .as_ref()
            .and_then(|d| d.retry_after_seconds)
            .map(|s| Duration::from_secs(u64::from(s)))
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {}", self.code, self.reason, self.message)
    }
}

/// A coarse classification of failures, the only thing retry and relist decisions look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorClass {
    /// 410 Gone / `Expired`: the resourceVersion or continue token is older than the server's
    /// history. The client must relist.
    Expired,
    /// 504 with cause `ResourceVersionTooLarge`: the server has not reached the requested
    /// resourceVersion. The next list must be a consistent read (`resourceVersion=""`).
    ResourceVersionTooLarge,
    /// 429 Too Many Requests: back off (honouring Retry-After) and retry the same request.
    Throttled,
    /// 404.
    NotFound,
    /// 409 Conflict or AlreadyExists.
    Conflict,
    /// 422 Invalid: the request itself is wrong; retrying it unchanged will not help.
    Invalid,
    /// 400 Bad Request.
    BadRequest,
    /// 401 or 403.
    Unauthorized,
    /// Any other 5xx.
    ServerError,
    /// The connection failed or broke (refused, reset, timed out, TLS).
    Transport,
    /// A response or watch line could not be decoded.
    Decode,
    /// An object without a usable key (no name).
    InvalidObject,
    /// Anything else.
    Other,
}

/// An error from talking to the API server (or a fake of it).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server answered with a failure `Status` (an HTTP error, or a watch `ERROR` event).
    #[error("API error while {context}: {status}")]
    Api {
        /// What was being done, for example `listing pods in namespace "a"`.
        context: String,
        /// The server's answer.
        status: Status,
        /// The `Retry-After` header, when the server sent one (it wins over the body's hint).
        retry_after: Option<Duration>,
    },
    /// The connection failed.
    #[error("transport error while {context}")]
    Transport {
        /// What was being done.
        context: String,
        /// The underlying failure.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A response body or a watch line could not be decoded.
    #[error("cannot decode {context}: {line_excerpt:?}")]
    Decode {
        /// What was being decoded (for example `watch event from /api/v1/pods`).
        context: String,
        /// The start of the offending input, at most a few hundred bytes.
        line_excerpt: String,
        /// The decoder's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A watch delivered an event type this client does not know.
    #[error("unknown watch event type {event_type:?} while {context}")]
    UnknownEventType {
        /// What was being done.
        context: String,
        /// The `type` field received.
        event_type: String,
    },
    /// An object could not be keyed (usually: it has no name).
    #[error("invalid object while {context}")]
    InvalidObject {
        /// What was being done.
        context: String,
        /// Why the object has no key.
        #[source]
        source: KeyError,
    },
    /// The queue refused what the reflector gave it (a custom queue may refuse a list).
    #[error("the queue refused {context}")]
    Queue {
        /// What was refused.
        context: String,
        /// The queue's error.
        #[source]
        source: crate::QueueError,
    },
    /// The server's answer broke a limit the client keeps to protect itself: a request that
    /// stalls, a watch line or a list larger than allowed, a list that never ends. The request
    /// was abandoned; its [`class`](Error::class) decides what follows, as for any failure.
    #[error("{limit} while {context}")]
    LimitExceeded {
        /// What was being done.
        context: String,
        /// Which limit, with its value.
        limit: Limit,
    },
}

/// A limit on what a client accepts from a server, as reported by
/// [`Error::LimitExceeded`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Limit {
    /// No response (status and headers) within this long of sending the request.
    ResponseTimeout(Duration),
    /// No byte of the response body for this long.
    IdleTimeout(Duration),
    /// A watch still open this long after it started: the `timeoutSeconds` it asked the
    /// server for, plus a margin. The server should have ended it; the stream is dead.
    WatchDeadline(Duration),
    /// One watch line, list item or list metadata larger than this many bytes.
    FrameBytes(u64),
    /// The pages of one list together larger than this many bytes.
    ListBytes(u64),
    /// One list of more pages than this.
    ListPages(u32),
    /// The server sent a continue token it had already sent during the same list: the list
    /// would never end.
    RepeatedContinueToken,
}

impl Limit {
    /// Whether the limit is on time (the server stalled), rather than on size.
    pub fn is_timeout(&self) -> bool {
        matches!(
            self,
            Self::ResponseTimeout(_) | Self::IdleTimeout(_) | Self::WatchDeadline(_)
        )
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ResponseTimeout(d) => write!(f, "no response within {d:?}"),
            Self::IdleTimeout(d) => write!(f, "no data for {d:?}"),
            Self::WatchDeadline(d) => write!(f, "watch still open at its deadline of {d:?}"),
            Self::FrameBytes(n) => write!(f, "a single frame larger than {n} bytes"),
            Self::ListBytes(n) => write!(f, "a list larger than {n} bytes"),
            Self::ListPages(n) => write!(f, "a list of more than {n} pages"),
            Self::RepeatedContinueToken => f.write_str("a continue token repeated within one list"),
        }
    }
}

/// How many bytes of an undecodable input an error keeps.
pub const EXCERPT_LIMIT: usize = 256;

/// The longest prefix of `text` of at most `max` bytes that ends on a character boundary.
///
/// ```
/// use informer_core::cut_at_char_boundary;
///
/// assert_eq!(cut_at_char_boundary("héllo", 2), "h");
/// assert_eq!(cut_at_char_boundary("héllo", 3), "hé");
/// assert_eq!(cut_at_char_boundary("hi", 10), "hi");
/// ```
pub fn cut_at_char_boundary(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

impl Error {
    /// An API error from a `Status`.
    pub fn api(context: impl Into<String>, status: Status) -> Self {
        Self::Api {
            context: context.into(),
            status,
            retry_after: None,
        }
    }

    /// A decode error keeping at most [`EXCERPT_LIMIT`] bytes of `input` (cut at a char boundary).
    pub fn decode(
        context: impl Into<String>,
        input: &[u8],
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        let text = String::from_utf8_lossy(input);
        Self::Decode {
            context: context.into(),
            line_excerpt: cut_at_char_boundary(&text, EXCERPT_LIMIT).to_owned(),
            source: source.into(),
        }
    }

    /// A transport error.
    pub fn transport(
        context: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Self::Transport {
            context: context.into(),
            source: source.into(),
        }
    }

    /// The classification retry and relist decisions use.
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::Api { status, .. } => status.class(),
            Self::Transport { .. } => ErrorClass::Transport,
            Self::Decode { .. } | Self::UnknownEventType { .. } => ErrorClass::Decode,
            Self::InvalidObject { .. } => ErrorClass::InvalidObject,
            Self::Queue { .. } => ErrorClass::Other,
            // A stalled request is a broken connection; an oversized frame cannot be decoded;
            // a list over its caps is neither: retried after a backoff like any other failure.
            Self::LimitExceeded { limit, .. } if limit.is_timeout() => ErrorClass::Transport,
            Self::LimitExceeded {
                limit: Limit::FrameBytes(_),
                ..
            } => ErrorClass::Decode,
            Self::LimitExceeded { .. } => ErrorClass::Other,
        }
    }

    /// A limit error.
    pub fn limit(context: impl Into<String>, limit: Limit) -> Self {
        Self::LimitExceeded {
            context: context.into(),
            limit,
        }
    }

    /// The limit this error reports, if it is [`Error::LimitExceeded`].
    pub fn limit_exceeded(&self) -> Option<Limit> {
        match self {
            Self::LimitExceeded { limit, .. } => Some(*limit),
            _ => None,
        }
    }

    /// The `Status` the server sent, if this is an API error.
    pub fn status(&self) -> Option<&Status> {
        match self {
            Self::Api { status, .. } => Some(status),
            _ => None,
        }
    }

    /// The delay the server asked for: the `Retry-After` header, else the body's
    /// `details.retryAfterSeconds`.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Api {
                retry_after: Some(d),
                ..
            } => Some(*d),
            Self::Api { status, .. } => status.retry_after(),
            _ => None,
        }
    }

    /// Whether the client must relist (410 Gone / Expired).
    pub fn is_expired(&self) -> bool {
        self.class() == ErrorClass::Expired
    }
}

/// Displays an error followed by its sources, joined with `": "` (for logs and reports).
///
/// ```
/// use informer_core::{Error, ErrorChain, KeyError};
///
/// let err = Error::InvalidObject {
///     context: "listing pods".into(),
///     source: KeyError::MissingName { namespace: None },
/// };
/// assert_eq!(
///     ErrorChain(&err).to_string(),
///     "invalid object while listing pods: object has no metadata.name (namespace None)"
/// );
/// ```
#[derive(Clone, Copy)]
pub struct ErrorChain<'a>(pub &'a (dyn std::error::Error + 'static));

impl fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(cause) = source {
            write!(f, ": {cause}")?;
            source = cause.source();
        }
        Ok(())
    }
}

impl fmt::Debug for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status_json(json: &str) -> Status {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn classifies_the_statuses_the_reflector_cares_about() {
        let expired = status_json(
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                "message":"too old resource version: 1 (5)","reason":"Expired","code":410}"#,
        );
        assert_eq!(expired.class(), ErrorClass::Expired);
        let gone = status_json(r#"{"status":"Failure","reason":"Gone","code":0}"#);
        assert_eq!(gone.class(), ErrorClass::Expired);
        let too_large = status_json(
            r#"{"status":"Failure","message":"Timeout: Too large resource version: 9, current: 5",
                "reason":"Timeout","code":504,
                "details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}],
                           "retryAfterSeconds":1}}"#,
        );
        assert_eq!(too_large.class(), ErrorClass::ResourceVersionTooLarge);
        assert_eq!(too_large.retry_after(), Some(Duration::from_secs(1)));
        let plain_timeout = Status::failure(504, "Timeout", "request timed out");
        assert_eq!(plain_timeout.class(), ErrorClass::ServerError);
        assert_eq!(
            Status::failure(429, "TooManyRequests", "slow down").class(),
            ErrorClass::Throttled
        );
        assert_eq!(
            Status::failure(404, "NotFound", "").class(),
            ErrorClass::NotFound
        );
        assert_eq!(
            Status::failure(409, "AlreadyExists", "").class(),
            ErrorClass::Conflict
        );
        assert_eq!(
            Status::failure(422, "Invalid", "").class(),
            ErrorClass::Invalid
        );
        assert_eq!(
            Status::failure(500, "InternalError", "").class(),
            ErrorClass::ServerError
        );
    }

    #[test]
    fn retry_after_header_wins_over_body() {
        let mut status = Status::failure(429, "TooManyRequests", "slow down");
        status.details = Some(StatusDetails {
            retry_after_seconds: Some(7),
            ..StatusDetails::default()
        });
        let err = Error::Api {
            context: "watching pods".into(),
            status: status.clone(),
            retry_after: Some(Duration::from_secs(2)),
        };
        assert_eq!(err.retry_after(), Some(Duration::from_secs(2)));
        assert_eq!(
            Error::api("x", status).retry_after(),
            Some(Duration::from_secs(7))
        );
    }

    #[test]
    fn limits_are_classified_by_what_follows() {
        let stalled = Error::limit("listing pods", Limit::IdleTimeout(Duration::from_secs(60)));
        assert_eq!(stalled.class(), ErrorClass::Transport);
        assert_eq!(stalled.to_string(), "no data for 60s while listing pods");
        assert_eq!(
            stalled.limit_exceeded(),
            Some(Limit::IdleTimeout(Duration::from_secs(60)))
        );
        let frame = Error::limit("watching pods", Limit::FrameBytes(16 << 20));
        assert_eq!(frame.class(), ErrorClass::Decode);
        let endless = Error::limit("listing pods", Limit::RepeatedContinueToken);
        assert_eq!(endless.class(), ErrorClass::Other);
        assert_eq!(
            Error::limit("x", Limit::ListPages(3)).class(),
            ErrorClass::Other
        );
        assert!(Limit::WatchDeadline(Duration::from_secs(1)).is_timeout());
        assert!(!Limit::ListBytes(1).is_timeout());
        assert_eq!(api_error().limit_exceeded(), None);
    }

    fn api_error() -> Error {
        Error::api("x", Status::failure(500, "InternalError", "x"))
    }

    #[test]
    fn decode_errors_keep_a_bounded_excerpt() {
        let line = "é".repeat(300);
        let source = serde_json::from_str::<serde_json::Value>("{").unwrap_err();
        let err = Error::decode("watch event", line.as_bytes(), source);
        match &err {
            Error::Decode { line_excerpt, .. } => assert!(line_excerpt.len() <= EXCERPT_LIMIT),
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(err.class(), ErrorClass::Decode);
        assert!(err.to_string().contains("watch event"));
    }
}
