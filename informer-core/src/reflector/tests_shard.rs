//! Unit tests of the shard selector rules: every request of a list-and-watch loop (first
//! list, continue pages, watches, streaming lists) carries the selector of
//! [`ListWatchConfig::shard_selector`], and a change at run time abandons whatever was in
//! progress for a relist at once, from the last seen resourceVersion, with the new one.

use std::time::{Duration, Instant};

use super::*;
use crate::shard::{ShardField, ShardSelector};
use crate::{Error, ListOptions, Status, WatchOptions};

/// An object with a uid only (enough for the machine, which never looks at it).
struct Uid(&'static str);

impl crate::Object for Uid {
    fn object_name(&self) -> Option<&str> {
        Some(self.0)
    }
    fn object_namespace(&self) -> Option<&str> {
        None
    }
    fn object_uid(&self) -> Option<&str> {
        Some(self.0)
    }
    fn object_resource_version(&self) -> Option<&str> {
        None
    }
    fn object_labels(&self) -> &std::collections::BTreeMap<String, String> {
        crate::map_or_empty(None)
    }
    fn object_annotations(&self) -> &std::collections::BTreeMap<String, String> {
        crate::map_or_empty(None)
    }
}

fn shard(rank: u64, count: u64) -> ShardSelector {
    ShardSelector::even_split(ShardField::Uid, rank, count).unwrap()
}

fn list(next: Next) -> ListOptions {
    match next {
        Next::List(o) | Next::ListNextPage(o) => o,
        other => panic!("expected a list, got {other:?}"),
    }
}

fn watch(next: Next) -> WatchOptions {
    match next {
        Next::Watch(o) => o,
        other => panic!("expected a watch, got {other:?}"),
    }
}

fn paginated(selector: Option<ShardSelector>) -> ListWatchConfig {
    ListWatchConfig {
        watch_list: WatchListMode::Off,
        shard_selector: selector,
        ..ListWatchConfig::default()
    }
}

#[test]
fn every_request_carries_the_selector() {
    let mine = shard(1, 3);
    let mut m = Machine::new(paginated(Some(mine.clone())));
    let now = Instant::now();
    let first = list(m.start(now, 0.5));
    assert_eq!(first.shard_selector.as_ref(), Some(&mine));
    let page = list(m.list_succeeded("5", Some("token"), now, 0.5));
    assert_eq!(page.continue_token.as_deref(), Some("token"));
    assert_eq!(page.shard_selector.as_ref(), Some(&mine));
    assert_eq!(
        m.list_succeeded("5", None, now, 0.5),
        Next::Replace {
            resource_version: "5".into()
        }
    );
    let w = watch(m.replaced(now, 0.5));
    assert_eq!(w.shard_selector.as_ref(), Some(&mine));
    // A relist after a 410 too.
    m.watch_started(now);
    let gone = Error::api("watching", Status::failure(410, "Expired", "too old"));
    let Next::Wait { delay, .. } = m.watch_failed(&gone, now, 0.5) else {
        panic!("a wait")
    };
    let relist = list(m.wait_elapsed(now + delay, 0.5));
    assert_eq!(relist.shard_selector.as_ref(), Some(&mine));
    // And a streaming list.
    let mut streaming = Machine::new(ListWatchConfig {
        shard_selector: Some(mine.clone()),
        ..ListWatchConfig::default()
    });
    let s = watch(streaming.start(now, 0.5));
    assert_eq!(s.send_initial_events, Some(true));
    assert_eq!(s.shard_selector, Some(mine));
}

#[test]
fn without_a_selector_nothing_is_sent() {
    let mut m = Machine::new(paginated(None));
    let now = Instant::now();
    assert_eq!(list(m.start(now, 0.5)).shard_selector, None);
}

#[test]
fn a_change_while_watching_relists_at_once_from_the_last_resource_version() {
    let mut m = Machine::new(paginated(Some(shard(0, 2))));
    let t0 = Instant::now();
    list(m.start(t0, 0.5));
    m.list_succeeded("10", None, t0, 0.5);
    watch(m.replaced(t0, 0.5));
    m.watch_started(t0);
    let relist = list(m.set_shard_selector(Some(shard(0, 3)), t0 + Duration::from_secs(5), 0.5));
    assert_eq!(relist.shard_selector, Some(shard(0, 3)));
    assert_eq!(relist.resource_version.as_deref(), Some("10"));
    // A relist at a specific resourceVersion: no page size, as any relist.
    assert_eq!(relist.limit, None);
    assert_eq!(m.counters().shard_changes, 1);
    assert_eq!(m.counters().relists, 1);
    assert_eq!(m.config().shard_selector, Some(shard(0, 3)));
    // The rest of the loop keeps the new selector.
    m.list_succeeded("12", None, t0, 0.5);
    let w = watch(m.replaced(t0, 0.5));
    assert_eq!(w.shard_selector, Some(shard(0, 3)));
    assert_eq!(w.resource_version.as_deref(), Some("12"));
}

#[test]
fn a_change_abandons_a_list_in_progress_and_a_backoff() {
    let now = Instant::now();
    // In the middle of a paginated list: the new list starts from scratch.
    let mut m = Machine::new(paginated(Some(shard(0, 2))));
    list(m.start(now, 0.5));
    list(m.list_succeeded("7", Some("more"), now, 0.5));
    let restarted = list(m.set_shard_selector(Some(shard(1, 2)), now, 0.5));
    assert_eq!(restarted.continue_token, None);
    assert_eq!(restarted.shard_selector, Some(shard(1, 2)));
    // Before the first list completed, it is the first list again.
    assert_eq!(restarted.resource_version.as_deref(), Some("0"));
    assert_eq!(m.counters().relists, 0);
    // During a backoff: no wait.
    let failed = Error::api("listing", Status::failure(500, "InternalError", "boom"));
    assert!(matches!(
        m.list_failed(&failed, now, 0.5),
        Next::Wait { .. }
    ));
    let at_once = list(m.set_shard_selector(None, now, 0.5));
    assert_eq!(at_once.shard_selector, None);
    assert_eq!(m.counters().shard_changes, 2);
}

#[test]
fn a_change_with_streaming_lists_streams_again() {
    let mut m = Machine::new(ListWatchConfig {
        shard_selector: Some(shard(0, 2)),
        ..ListWatchConfig::default()
    });
    let now = Instant::now();
    watch(m.start(now, 0.5));
    m.watch_started(now);
    let end = crate::WatchEvent::<Uid>::Bookmark(crate::Bookmark {
        resource_version: "20".into(),
        initial_events_end: true,
    });
    assert!(matches!(
        m.event_received(&end, now, 0.5),
        EventAction::ReplaceBuffered { .. }
    ));
    let again = watch(m.set_shard_selector(Some(shard(1, 2)), now, 0.5));
    assert_eq!(again.send_initial_events, Some(true));
    assert_eq!(again.resource_version.as_deref(), Some("20"));
    assert_eq!(again.shard_selector, Some(shard(1, 2)));
    assert!(!m.in_initial_events());
}
