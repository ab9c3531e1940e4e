//! The client's side of a shard selector: which decoded objects belong to the shard, and what
//! the server's answers say about who filtered them.

use crate::Object;
use crate::shard::{ShardEcho, ShardSelector};

/// Where a sharded list and watch is filtered, as far as the client can tell.
///
/// A server with `ShardedListAndWatch` filters lists and watches and echoes the selector on
/// every list answer (`metadata.shardInfo.selector`); a server without it ignores the
/// parameter and sends everything. Watch events and streaming lists carry no echo, so an
/// informer that only streams learns the answer from the objects themselves: one outside the
/// shard proves the server did not filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ShardFiltering {
    /// No shard selector: every object is kept.
    #[default]
    Off,
    /// A selector is set and nothing has told yet whether the server applies it: no list
    /// answer since it was set (a streaming list has no list answer), and no object outside
    /// the shard has arrived. The client filters anyway.
    Unconfirmed,
    /// The server applies it: the last list answer echoed it. The client's filter still
    /// runs (one hash per object) and has dropped nothing.
    Server,
    /// The server does not: a list answer came without the echo (or with another selector),
    /// or an object outside the shard arrived. The client drops, after decoding, every object
    /// outside the shard.
    Client,
}

impl ShardFiltering {
    /// A stable lowercase name, for logs, metrics and JSON: `off`, `unconfirmed`, `server`,
    /// `client`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Unconfirmed => "unconfirmed",
            Self::Server => "server",
            Self::Client => "client",
        }
    }
}

impl std::fmt::Display for ShardFiltering {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The shard filter of one list-and-watch loop: the selector, whether the server applies it
/// ([`ShardFiltering`]), and the objects it dropped. Pure bookkeeping, for the driver of a
/// [`reflector::Machine`](crate::reflector::Machine).
///
/// The driver asks [`admit`](Self::admit) about every decoded object (list items, streamed
/// initial events, watch events) and reports every list answer's echo to
/// [`list_answered`](Self::list_answered). Filtering on the client whatever the server does
/// is cheap (one FNV-1a over a uid) and makes the result the same with or without the
/// server's feature; the mode only says who did the work. Since the hashed fields (uid,
/// namespace) never change for an object, the filter never splits an object's history: all
/// of its events are kept or all dropped.
///
/// Every change of mode is reported once by [`take_change`](Self::take_change), for a log
/// line.
///
/// ```
/// use informer_core::shard::{ShardField, ShardFilter, ShardFiltering, ShardSelector};
///
/// let mine = ShardSelector::even_split(ShardField::Namespace, 0, 2)?;
/// let mut filter = ShardFilter::new(Some(mine.clone()));
/// assert_eq!(filter.mode(), ShardFiltering::Unconfirmed);
/// // A list answered without the echo: the server sent everything.
/// filter.list_answered(None);
/// assert_eq!(filter.take_change(), Some(ShardFiltering::Client));
/// assert_eq!(filter.take_change(), None);
/// // The server applied it on the next list.
/// filter.list_answered(Some(&mine.to_string()));
/// assert_eq!(filter.mode(), ShardFiltering::Server);
/// # Ok::<(), informer_core::shard::ShardSelectorError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShardFilter {
    selector: Option<ShardSelector>,
    mode: ShardFiltering,
    dropped: u64,
    unreported: bool,
}

impl ShardFilter {
    /// A filter for `selector` (`None`: keeps everything, mode [`ShardFiltering::Off`]).
    pub fn new(selector: Option<ShardSelector>) -> Self {
        let mut filter = Self::default();
        filter.set_selector(selector);
        filter.unreported = false;
        filter
    }

    /// The selector.
    pub fn selector(&self) -> Option<&ShardSelector> {
        self.selector.as_ref()
    }

    /// Who filters, as far as is known.
    pub fn mode(&self) -> ShardFiltering {
        self.mode
    }

    /// How many objects [`admit`](Self::admit) refused, over the filter's life.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Changes the selector: what the server does with the new one is not known yet
    /// ([`ShardFiltering::Unconfirmed`], or [`ShardFiltering::Off`] for `None`).
    pub fn set_selector(&mut self, selector: Option<ShardSelector>) {
        let mode = if selector.is_some() {
            ShardFiltering::Unconfirmed
        } else {
            ShardFiltering::Off
        };
        self.selector = selector;
        self.set_mode(mode);
    }

    /// A list answer (any page) arrived with this `metadata.shardInfo.selector`; returns the
    /// mode after it. Without a selector, nothing changes.
    pub fn list_answered(&mut self, echo: Option<&str>) -> ShardFiltering {
        let Some(selector) = &self.selector else {
            return self.mode;
        };
        let mode = match selector.check_echo(echo) {
            ShardEcho::Applied => ShardFiltering::Server,
            _ => ShardFiltering::Client,
        };
        self.set_mode(mode);
        self.mode
    }

    /// Whether `object` belongs to the shard (always, without a selector). An object outside
    /// it is counted, and shows that the server did not filter: the mode becomes
    /// [`ShardFiltering::Client`].
    pub fn admit<K: Object + ?Sized>(&mut self, object: &K) -> bool {
        match &self.selector {
            None => true,
            Some(selector) if selector.matches(object) => true,
            Some(_) => {
                self.dropped += 1;
                self.set_mode(ShardFiltering::Client);
                false
            }
        }
    }

    /// The mode, once after each change (for a log line saying who filters); `None` when it
    /// has not changed since the last call. A new filter has nothing to report.
    pub fn take_change(&mut self) -> Option<ShardFiltering> {
        std::mem::take(&mut self.unreported).then_some(self.mode)
    }

    fn set_mode(&mut self, mode: ShardFiltering) {
        if self.mode != mode {
            self.mode = mode;
            self.unreported = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::shard::ShardField;

    /// An object with a namespace and a uid.
    struct Meta {
        namespace: &'static str,
        uid: &'static str,
    }

    impl Object for Meta {
        fn object_name(&self) -> Option<&str> {
            Some("x")
        }
        fn object_namespace(&self) -> Option<&str> {
            Some(self.namespace)
        }
        fn object_uid(&self) -> Option<&str> {
            Some(self.uid)
        }
        fn object_resource_version(&self) -> Option<&str> {
            None
        }
        fn object_labels(&self) -> &BTreeMap<String, String> {
            crate::map_or_empty(None)
        }
        fn object_annotations(&self) -> &BTreeMap<String, String> {
            crate::map_or_empty(None)
        }
    }

    fn half(rank: u64) -> ShardSelector {
        ShardSelector::even_split(ShardField::Uid, rank, 2).unwrap()
    }

    /// FNV-1a 64 of "test-uid-123" is 0xd0ba679834556c0b: the upper half.
    const UPPER: Meta = Meta {
        namespace: "a",
        uid: "test-uid-123",
    };

    #[test]
    fn without_a_selector_everything_passes_and_nothing_is_reported() {
        let mut filter = ShardFilter::new(None);
        assert_eq!(filter.mode(), ShardFiltering::Off);
        assert!(filter.admit(&UPPER));
        assert_eq!(filter.list_answered(None), ShardFiltering::Off);
        assert_eq!(filter.take_change(), None);
        assert_eq!(filter.dropped(), 0);
    }

    #[test]
    fn objects_outside_the_shard_are_dropped_and_prove_the_server_did_not_filter() {
        let mut filter = ShardFilter::new(Some(half(0)));
        assert_eq!(filter.mode(), ShardFiltering::Unconfirmed);
        assert_eq!(filter.take_change(), None);
        assert!(!filter.admit(&UPPER));
        assert_eq!(filter.dropped(), 1);
        assert_eq!(filter.take_change(), Some(ShardFiltering::Client));
        assert!(!filter.admit(&UPPER));
        // Said once.
        assert_eq!(filter.take_change(), None);
        assert_eq!(filter.dropped(), 2);
        let mut upper = ShardFilter::new(Some(half(1)));
        assert!(upper.admit(&UPPER));
        assert_eq!(upper.mode(), ShardFiltering::Unconfirmed);
    }

    #[test]
    fn list_echoes_tell_who_filters() {
        let mine = half(1);
        let mut filter = ShardFilter::new(Some(mine.clone()));
        assert_eq!(
            filter.list_answered(Some(&mine.to_string())),
            ShardFiltering::Server
        );
        assert_eq!(filter.take_change(), Some(ShardFiltering::Server));
        // Every page echoes it: nothing new to say.
        filter.list_answered(Some(&mine.to_string()));
        assert_eq!(filter.take_change(), None);
        // A server restarted without the feature.
        assert_eq!(filter.list_answered(None), ShardFiltering::Client);
        // Another selector echoed: not ours, so the client's filter is what counts.
        filter.list_answered(Some(&mine.to_string()));
        assert_eq!(
            filter.list_answered(Some(&half(0).to_string())),
            ShardFiltering::Client
        );
        assert_eq!(
            filter.list_answered(Some("garbage")),
            ShardFiltering::Client
        );
    }

    #[test]
    fn a_new_selector_is_unconfirmed_again() {
        let mut filter = ShardFilter::new(Some(half(0)));
        filter.list_answered(None);
        filter.take_change();
        filter.set_selector(Some(half(1)));
        assert_eq!(filter.take_change(), Some(ShardFiltering::Unconfirmed));
        assert_eq!(filter.selector(), Some(&half(1)));
        filter.set_selector(None);
        assert_eq!(filter.take_change(), Some(ShardFiltering::Off));
        assert!(filter.admit(&UPPER));
        let namespaces = ShardSelector::even_split(ShardField::Namespace, 0, 1).unwrap();
        filter.set_selector(Some(namespaces));
        assert!(filter.admit(&UPPER));
        assert_eq!(ShardFiltering::Client.to_string(), "client");
    }
}
