//! List and watch options, with the query parameters they map to.

use std::fmt;

use crate::shard::ShardSelector;

/// `resourceVersionMatch`: how the server interprets a list's `resourceVersion`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResourceVersionMatch {
    /// Any state at least as new as the given resourceVersion.
    NotOlderThan,
    /// Exactly the state at the given resourceVersion (must still be in history).
    Exact,
}

impl ResourceVersionMatch {
    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotOlderThan => "NotOlderThan",
            Self::Exact => "Exact",
        }
    }

    /// Parses the wire value.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "NotOlderThan" => Some(Self::NotOlderThan),
            "Exact" => Some(Self::Exact),
            _ => None,
        }
    }
}

impl fmt::Display for ResourceVersionMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Options for one list request (one page).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// `resourceVersion`: `None` = most recent (consistent read), `"0"` = any, `N` = not older than
    /// N (exactly N when `limit` is set or with `Exact`).
    pub resource_version: Option<String>,
    /// `resourceVersionMatch`.
    pub resource_version_match: Option<ResourceVersionMatch>,
    /// `limit`: page size. `None` lists everything at once.
    pub limit: Option<u32>,
    /// `continue`: the token from the previous page.
    pub continue_token: Option<String>,
    /// `labelSelector`.
    pub label_selector: Option<String>,
    /// `fieldSelector`.
    pub field_selector: Option<String>,
    /// `timeoutSeconds`.
    pub timeout_seconds: Option<u32>,
    /// `shardSelector`: only the objects of this shard (KEP-5866, Kubernetes 1.36 alpha behind
    /// the `ShardedListAndWatch` gate). A server without the feature ignores it and answers
    /// with every object; a list answered with the selector applied echoes it
    /// ([`ListPageInfo::shard_info_selector`](crate::ListPageInfo::shard_info_selector),
    /// [`ShardSelector::check_echo`]).
    pub shard_selector: Option<ShardSelector>,
}

/// Options for one watch request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WatchOptions {
    /// `resourceVersion`: `None` = start from the current state (synthetic `ADDED` for every
    /// object, then changes), `"0"` = the same from any state, `N` = changes after N.
    pub resource_version: Option<String>,
    /// `resourceVersionMatch` (only `NotOlderThan`, and only with `send_initial_events`).
    pub resource_version_match: Option<ResourceVersionMatch>,
    /// `labelSelector`.
    pub label_selector: Option<String>,
    /// `fieldSelector`.
    pub field_selector: Option<String>,
    /// `timeoutSeconds`: the server ends the watch normally after this long.
    pub timeout_seconds: Option<u32>,
    /// `allowWatchBookmarks`.
    pub allow_watch_bookmarks: bool,
    /// `sendInitialEvents`: stream the current state first, ended by a bookmark annotated
    /// `k8s.io/initial-events-end`.
    pub send_initial_events: Option<bool>,
    /// `shardSelector`: only the events of objects of this shard (see
    /// [`ListOptions::shard_selector`]). A server without the feature ignores it.
    pub shard_selector: Option<ShardSelector>,
}

impl ListOptions {
    /// The query parameters of this request, in a stable order.
    pub fn query_pairs(&self) -> Vec<(&'static str, String)> {
        let mut q = Vec::new();
        push(&mut q, "labelSelector", self.label_selector.as_deref());
        push(&mut q, "fieldSelector", self.field_selector.as_deref());
        if let Some(limit) = self.limit {
            q.push(("limit", limit.to_string()));
        }
        push(&mut q, "continue", self.continue_token.as_deref());
        push(&mut q, "resourceVersion", self.resource_version.as_deref());
        if let Some(m) = self.resource_version_match {
            q.push(("resourceVersionMatch", m.as_str().to_owned()));
        }
        if let Some(t) = self.timeout_seconds {
            q.push(("timeoutSeconds", t.to_string()));
        }
        push_shard(&mut q, self.shard_selector.as_ref());
        q
    }
}

impl WatchOptions {
    /// The query parameters of this request (including `watch=1`), in a stable order.
    pub fn query_pairs(&self) -> Vec<(&'static str, String)> {
        let mut q = vec![("watch", "1".to_owned())];
        push(&mut q, "labelSelector", self.label_selector.as_deref());
        push(&mut q, "fieldSelector", self.field_selector.as_deref());
        push(&mut q, "resourceVersion", self.resource_version.as_deref());
        if let Some(m) = self.resource_version_match {
            q.push(("resourceVersionMatch", m.as_str().to_owned()));
        }
        if self.allow_watch_bookmarks {
            q.push(("allowWatchBookmarks", "true".to_owned()));
        }
        if let Some(s) = self.send_initial_events {
            q.push(("sendInitialEvents", s.to_string()));
        }
        if let Some(t) = self.timeout_seconds {
            q.push(("timeoutSeconds", t.to_string()));
        }
        push_shard(&mut q, self.shard_selector.as_ref());
        q
    }
}

/// `shardSelector` goes last: parameters a server may not know come after the ones it does
/// (the fake server's request log keeps unknown parameters last too).
fn push_shard(q: &mut Vec<(&'static str, String)>, selector: Option<&ShardSelector>) {
    if let Some(selector) = selector {
        q.push(("shardSelector", selector.to_string()));
    }
}

fn push(q: &mut Vec<(&'static str, String)>, name: &'static str, value: Option<&str>) {
    if let Some(v) = value {
        q.push((name, v.to_owned()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_query_has_the_reflector_parameters() {
        let opts = WatchOptions {
            resource_version: Some("42".into()),
            allow_watch_bookmarks: true,
            timeout_seconds: Some(321),
            ..WatchOptions::default()
        };
        assert_eq!(
            opts.query_pairs(),
            vec![
                ("watch", "1".to_owned()),
                ("resourceVersion", "42".to_owned()),
                ("allowWatchBookmarks", "true".to_owned()),
                ("timeoutSeconds", "321".to_owned()),
            ]
        );
    }

    #[test]
    fn list_query_omits_unset_fields() {
        let opts = ListOptions {
            limit: Some(500),
            resource_version: Some("0".into()),
            ..ListOptions::default()
        };
        assert_eq!(
            opts.query_pairs(),
            vec![
                ("limit", "500".to_owned()),
                ("resourceVersion", "0".to_owned())
            ]
        );
        assert_eq!(
            ResourceVersionMatch::parse("Exact"),
            Some(ResourceVersionMatch::Exact)
        );
        assert_eq!(ResourceVersionMatch::parse("exact"), None);
    }

    #[test]
    fn shard_selectors_go_last_in_their_canonical_form() {
        let selector = ShardSelector::even_split(crate::shard::ShardField::Uid, 1, 4).unwrap();
        let text = "shardRange(object.metadata.uid, '0x4000000000000000', '0x8000000000000000')";
        let list = ListOptions {
            limit: Some(500),
            label_selector: Some("app=web".into()),
            shard_selector: Some(selector.clone()),
            ..ListOptions::default()
        };
        assert_eq!(
            list.query_pairs(),
            vec![
                ("labelSelector", "app=web".to_owned()),
                ("limit", "500".to_owned()),
                ("shardSelector", text.to_owned()),
            ]
        );
        let watch = WatchOptions {
            resource_version: Some("7".into()),
            timeout_seconds: Some(300),
            shard_selector: Some(selector),
            ..WatchOptions::default()
        };
        assert_eq!(
            watch.query_pairs().last(),
            Some(&("shardSelector", text.to_owned()))
        );
        assert_eq!(
            watch.query_pairs()[watch.query_pairs().len() - 2],
            ("timeoutSeconds", "300".to_owned())
        );
    }
}
