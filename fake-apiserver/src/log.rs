//! The request log: every request the server received, in Kubernetes URL form.

use std::fmt;

use super::query::encode_pairs;

/// One request as the server received it: method, URL path and query pairs.
///
/// Both front ends record requests identically (query pairs in the stable order of
/// [`Query::to_pairs`](super::Query::to_pairs)), so a test asserts on what a client asked for
/// without caring which front end served it:
///
/// ```
/// # use fake_apiserver::RequestRecord;
/// let r = RequestRecord::new("GET", "/api/v1/namespaces/a/pods", [("limit", "500"), ("resourceVersion", "0")]);
/// assert_eq!(r.to_string(), "GET /api/v1/namespaces/a/pods?limit=500&resourceVersion=0");
/// assert_eq!(r.param("resourceVersion"), Some("0"));
/// assert!(!r.is_watch());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRecord {
    /// HTTP method (`GET`, `POST`, `PUT`, `PATCH`, `DELETE`).
    pub method: String,
    /// URL path, for example `/api/v1/namespaces/a/pods`.
    pub path: String,
    /// Query pairs, percent-decoded.
    pub query: Vec<(String, String)>,
}

impl RequestRecord {
    /// A record.
    pub fn new<K: Into<String>, V: Into<String>>(
        method: &str,
        path: impl Into<String>,
        query: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        Self {
            method: method.to_owned(),
            path: path.into(),
            query: query
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// The value of the first query parameter called `name`.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether this is a watch request (`watch=1` or `watch=true`).
    pub fn is_watch(&self) -> bool {
        matches!(self.param("watch"), Some("1" | "true"))
    }

    /// Whether this is a list request (a GET of a collection that is not a watch). The path
    /// must name a collection; `is_list` cannot tell a GET of one object from a list, so it
    /// answers for GETs whose query has list parameters or whose path ends with the given
    /// plural.
    pub fn is_list_of(&self, plural: &str) -> bool {
        self.method == "GET" && !self.is_watch() && self.path.ends_with(&format!("/{plural}"))
    }

    /// Whether this is a watch of the given plural resource.
    pub fn is_watch_of(&self, plural: &str) -> bool {
        self.method == "GET" && self.is_watch() && self.path.ends_with(&format!("/{plural}"))
    }

    /// `path?query` with values percent-encoded.
    pub fn url(&self) -> String {
        if self.query.is_empty() {
            self.path.clone()
        } else {
            format!("{}?{}", self.path, encode_pairs(&self.query))
        }
    }
}

impl fmt::Display for RequestRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.method, self.url())
    }
}
