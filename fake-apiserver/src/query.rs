//! The query of a list or watch request, as parsed values, with the API server's validation.

use std::fmt::Write as _;

use informer_core::{ListOptions, Status, WatchOptions};

use super::status;

/// The query parameters of a list or watch request, parsed but not yet interpreted.
///
/// Front ends build one from the URL's query pairs ([`Query::from_pairs`], HTTP) or from the
/// client's options (`From<&ListOptions>`, `From<&WatchOptions>`, in-process), then hand it to
/// [`FakeApiServer::list`](super::FakeApiServer::list) or
/// [`FakeApiServer::watch`](super::FakeApiServer::watch). Values stay strings where the server
/// itself validates them (`resourceVersionMatch`), so invalid requests can be represented and
/// answered with the server's 422.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    /// `watch`.
    pub watch: bool,
    /// `resourceVersion` (`None` when absent or empty).
    pub resource_version: Option<String>,
    /// `resourceVersionMatch` as sent.
    pub resource_version_match: Option<String>,
    /// `limit` (values ≤ 0 mean no limit).
    pub limit: Option<i64>,
    /// `continue`.
    pub continue_token: Option<String>,
    /// `labelSelector`.
    pub label_selector: Option<String>,
    /// `fieldSelector`.
    pub field_selector: Option<String>,
    /// `timeoutSeconds`.
    pub timeout_seconds: Option<i64>,
    /// `allowWatchBookmarks`.
    pub allow_watch_bookmarks: bool,
    /// `sendInitialEvents`.
    pub send_initial_events: Option<bool>,
    /// `shardSelector` as sent (`None` when absent or empty); parsed by the server, which
    /// ignores it when [`ServerConfig::sharded_list_and_watch`](crate::ServerConfig::sharded_list_and_watch)
    /// is off.
    pub shard_selector: Option<String>,
    /// Parameters the server does not interpret, kept for the request log.
    pub extra: Vec<(String, String)>,
}

impl Query {
    /// Parses URL query pairs (already percent-decoded). Malformed numbers or booleans are a
    /// 400 BadRequest, as on the real server.
    pub fn from_pairs<K: AsRef<str>, V: AsRef<str>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Self, Status> {
        let mut q = Self::default();
        for (k, v) in pairs {
            let (k, v) = (k.as_ref(), v.as_ref());
            let text = || Some(v.to_owned()).filter(|s| !s.is_empty());
            match k {
                "watch" => q.watch = parse_bool(k, v)?,
                "resourceVersion" => q.resource_version = text(),
                "resourceVersionMatch" => q.resource_version_match = text(),
                "limit" => q.limit = parse_int(k, v)?,
                "continue" => q.continue_token = text(),
                "labelSelector" => q.label_selector = text(),
                "fieldSelector" => q.field_selector = text(),
                "timeoutSeconds" => q.timeout_seconds = parse_int(k, v)?,
                "allowWatchBookmarks" => q.allow_watch_bookmarks = parse_bool(k, v)?,
                "sendInitialEvents" => q.send_initial_events = Some(parse_bool(k, v)?),
                "shardSelector" => q.shard_selector = text(),
                _ => q.extra.push((k.to_owned(), v.to_owned())),
            }
        }
        Ok(q)
    }

    /// The query pairs in a stable order: the order informer-core's
    /// [`ListOptions::query_pairs`] and [`WatchOptions::query_pairs`] use, then unknown
    /// parameters as received. The request log records requests in this form, so a request
    /// looks the same whichever front end received it.
    pub fn to_pairs(&self) -> Vec<(String, String)> {
        let mut q: Vec<(String, String)> = Vec::new();
        let mut push = |k: &str, v: Option<String>| {
            if let Some(v) = v {
                q.push((k.to_owned(), v));
            }
        };
        if self.watch {
            push("watch", Some("1".into()));
        }
        push("labelSelector", self.label_selector.clone());
        push("fieldSelector", self.field_selector.clone());
        if !self.watch {
            push("limit", self.limit.map(|l| l.to_string()));
            push("continue", self.continue_token.clone());
        }
        push("resourceVersion", self.resource_version.clone());
        push("resourceVersionMatch", self.resource_version_match.clone());
        if self.allow_watch_bookmarks {
            push("allowWatchBookmarks", Some("true".into()));
        }
        push(
            "sendInitialEvents",
            self.send_initial_events.map(|b| b.to_string()),
        );
        if self.watch {
            push("limit", self.limit.map(|l| l.to_string()));
            push("continue", self.continue_token.clone());
        }
        push(
            "timeoutSeconds",
            self.timeout_seconds.map(|t| t.to_string()),
        );
        push("shardSelector", self.shard_selector.clone());
        q.extend(self.extra.iter().cloned());
        q
    }

    /// The query string (`a=b&c=d`, values percent-encoded), empty when there are no pairs.
    pub fn to_query_string(&self) -> String {
        encode_pairs(&self.to_pairs())
    }

    /// The effective page size.
    pub(crate) fn page_size(&self) -> Option<usize> {
        self.limit
            .filter(|l| *l > 0)
            .map(|l| usize::try_from(l).unwrap_or(usize::MAX))
    }

    /// The API server's validation of list options (422 Invalid), with the WatchList feature
    /// enabled. `watch_list_supported = false` models an old server that does not know
    /// `sendInitialEvents` (it ignores the parameter on watches).
    pub(crate) fn validate(&self, watch_list_supported: bool) -> Result<(), Status> {
        const FORBIDDEN: &str = "FieldValueForbidden";
        const NOT_SUPPORTED: &str = "FieldValueNotSupported";
        let mut errs: Vec<(String, &str, String)> = Vec::new();
        let rvm = "resourceVersionMatch".to_owned();
        let matched = self.resource_version_match.as_deref();
        if self.watch {
            if !watch_list_supported {
                return Ok(());
            }
            if self.send_initial_events.is_some() && matched != Some("NotOlderThan") {
                errs.push((
                    rvm.clone(),
                    FORBIDDEN,
                    "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
                        .into(),
                ));
            }
            if let Some(m) = matched {
                if self.send_initial_events.is_none() {
                    errs.push((
                        rvm.clone(),
                        FORBIDDEN,
                        "resourceVersionMatch is forbidden for watch unless sendInitialEvents is \
                         provided"
                            .into(),
                    ));
                }
                if m != "NotOlderThan" {
                    errs.push((
                        rvm.clone(),
                        NOT_SUPPORTED,
                        format!("{m:?}: supported values: \"NotOlderThan\""),
                    ));
                }
                if self.continue_token.is_some() {
                    errs.push((
                        rvm,
                        FORBIDDEN,
                        "resourceVersionMatch is forbidden when continue is provided".into(),
                    ));
                }
            }
        } else {
            if let Some(m) = matched {
                if self.resource_version.is_none() {
                    errs.push((
                        rvm.clone(),
                        FORBIDDEN,
                        "resourceVersionMatch is forbidden unless resourceVersion is provided"
                            .into(),
                    ));
                }
                if self.continue_token.is_some() {
                    errs.push((
                        rvm.clone(),
                        FORBIDDEN,
                        "resourceVersionMatch is forbidden when continue is provided".into(),
                    ));
                }
                if m != "Exact" && m != "NotOlderThan" {
                    errs.push((
                        rvm.clone(),
                        NOT_SUPPORTED,
                        format!("{m:?}: supported values: \"Exact\", \"NotOlderThan\", \"\""),
                    ));
                }
                if m == "Exact" && self.resource_version.as_deref() == Some("0") {
                    errs.push((
                        rvm,
                        FORBIDDEN,
                        "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""
                            .into(),
                    ));
                }
            }
            if self.send_initial_events.is_some() {
                errs.push((
                    "sendInitialEvents".into(),
                    FORBIDDEN,
                    "sendInitialEvents is forbidden for list".into(),
                ));
            }
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(status::invalid("ListOptions", "meta.k8s.io", "", &errs))
        }
    }
}

impl From<&ListOptions> for Query {
    fn from(o: &ListOptions) -> Self {
        Self {
            watch: false,
            resource_version: o.resource_version.clone().filter(|s| !s.is_empty()),
            resource_version_match: o.resource_version_match.map(|m| m.as_str().to_owned()),
            limit: o.limit.map(i64::from),
            continue_token: o.continue_token.clone().filter(|s| !s.is_empty()),
            label_selector: o.label_selector.clone().filter(|s| !s.is_empty()),
            field_selector: o.field_selector.clone().filter(|s| !s.is_empty()),
            timeout_seconds: o.timeout_seconds.map(i64::from),
            shard_selector: o.shard_selector.as_ref().map(ToString::to_string),
            ..Self::default()
        }
    }
}

impl From<&WatchOptions> for Query {
    fn from(o: &WatchOptions) -> Self {
        Self {
            watch: true,
            resource_version: o.resource_version.clone().filter(|s| !s.is_empty()),
            resource_version_match: o.resource_version_match.map(|m| m.as_str().to_owned()),
            label_selector: o.label_selector.clone().filter(|s| !s.is_empty()),
            field_selector: o.field_selector.clone().filter(|s| !s.is_empty()),
            timeout_seconds: o.timeout_seconds.map(i64::from),
            allow_watch_bookmarks: o.allow_watch_bookmarks,
            send_initial_events: o.send_initial_events,
            shard_selector: o.shard_selector.as_ref().map(ToString::to_string),
            ..Self::default()
        }
    }
}

fn parse_bool(name: &str, value: &str) -> Result<bool, Status> {
    match value {
        "1" | "true" | "True" | "TRUE" | "t" | "T" => Ok(true),
        "0" | "false" | "False" | "FALSE" | "f" | "F" | "" => Ok(false),
        _ => Err(status::bad_request(format!(
            "invalid value {value:?} for query parameter {name}: not a boolean"
        ))),
    }
}

fn parse_int(name: &str, value: &str) -> Result<Option<i64>, Status> {
    if value.is_empty() {
        return Ok(None);
    }
    value.parse::<i64>().map(Some).map_err(|e| {
        status::bad_request(format!(
            "invalid value {value:?} for query parameter {name}: {e}"
        ))
    })
}

/// Encodes query pairs as `k=v&k=v`, percent-encoding everything but unreserved characters.
pub(crate) fn encode_pairs(pairs: &[(String, String)]) -> String {
    let mut out = String::new();
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        encode_component(&mut out, k);
        out.push('=');
        encode_component(&mut out, v);
    }
    out
}

fn encode_component(out: &mut String, s: &str) {
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use informer_core::ResourceVersionMatch;

    #[test]
    fn pairs_match_informer_core_order() {
        let lo = ListOptions {
            limit: Some(500),
            resource_version: Some("0".into()),
            label_selector: Some("a=b".into()),
            ..ListOptions::default()
        };
        let want: Vec<(String, String)> = lo
            .query_pairs()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        assert_eq!(Query::from(&lo).to_pairs(), want);
        let wo = WatchOptions {
            resource_version: Some("7".into()),
            resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
            send_initial_events: Some(true),
            allow_watch_bookmarks: true,
            timeout_seconds: Some(300),
            ..WatchOptions::default()
        };
        let want: Vec<(String, String)> = wo
            .query_pairs()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        assert_eq!(Query::from(&wo).to_pairs(), want);
        let parsed = Query::from_pairs(want.iter().map(|(k, v)| (k.as_str(), v.as_str()))).unwrap();
        assert_eq!(parsed, Query::from(&wo));
    }

    #[test]
    fn shard_selectors_keep_informer_core_order() {
        let selector = informer_core::shard::ShardSelector::even_split(
            informer_core::shard::ShardField::Uid,
            0,
            2,
        )
        .unwrap();
        let lo = ListOptions {
            limit: Some(500),
            shard_selector: Some(selector.clone()),
            ..ListOptions::default()
        };
        let want: Vec<(String, String)> = lo
            .query_pairs()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        assert_eq!(Query::from(&lo).to_pairs(), want);
        let wo = WatchOptions {
            resource_version: Some("3".into()),
            timeout_seconds: Some(300),
            shard_selector: Some(selector),
            ..WatchOptions::default()
        };
        let want: Vec<(String, String)> = wo
            .query_pairs()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        assert_eq!(Query::from(&wo).to_pairs(), want);
        let parsed = Query::from_pairs(want.iter().map(|(k, v)| (k.as_str(), v.as_str()))).unwrap();
        assert_eq!(parsed, Query::from(&wo));
        // Unknown parameters still come after it.
        let q = Query::from_pairs([("foo", "1"), ("shardSelector", "x")]).unwrap();
        assert_eq!(q.to_query_string(), "shardSelector=x&foo=1");
    }

    #[test]
    fn bad_numbers_are_bad_requests() {
        let err = Query::from_pairs([("limit", "ten")]).unwrap_err();
        assert_eq!(err.code, 400);
        assert!(Query::from_pairs([("watch", "maybe")]).is_err());
    }

    #[test]
    fn encodes_selectors() {
        let q = Query {
            label_selector: Some("a in (x,y)".into()),
            ..Query::default()
        };
        assert_eq!(q.to_query_string(), "labelSelector=a%20in%20%28x%2Cy%29");
    }
}
