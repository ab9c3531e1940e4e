//! Unit tests of every reflector rule, without a clock or a server.

use std::time::{Duration, Instant};

use super::*;
use crate::{
    Bookmark, Error, ErrorClass, KeyError, ListOptions, ResourceVersionMatch, Status, StatusCause,
    StatusDetails, WatchEvent, WatchOptions,
};

/// A minimal object: name and resourceVersion.
struct Obj {
    name: &'static str,
    rv: &'static str,
}

impl crate::Object for Obj {
    fn object_name(&self) -> Option<&str> {
        Some(self.name)
    }
    fn object_namespace(&self) -> Option<&str> {
        None
    }
    fn object_uid(&self) -> Option<&str> {
        None
    }
    fn object_resource_version(&self) -> Option<&str> {
        crate::non_empty(Some(self.rv))
    }
    fn object_labels(&self) -> &std::collections::BTreeMap<String, String> {
        crate::map_or_empty(None)
    }
    fn object_annotations(&self) -> &std::collections::BTreeMap<String, String> {
        crate::map_or_empty(None)
    }
}

fn added(rv: &'static str) -> WatchEvent<Obj> {
    WatchEvent::Added(Obj { name: "a", rv })
}

fn modified(rv: &'static str) -> WatchEvent<Obj> {
    WatchEvent::Modified(Obj { name: "a", rv })
}

fn bookmark(rv: &str) -> WatchEvent<Obj> {
    WatchEvent::Bookmark(Bookmark {
        resource_version: rv.into(),
        initial_events_end: false,
    })
}

fn end_bookmark(rv: &str) -> WatchEvent<Obj> {
    WatchEvent::Bookmark(Bookmark {
        resource_version: rv.into(),
        initial_events_end: true,
    })
}

fn api(code: u16, reason: &str) -> Error {
    Error::api("test", Status::failure(code, reason, "test failure"))
}

fn expired() -> Error {
    api(410, "Expired")
}

fn too_large() -> Error {
    let mut status = Status::failure(504, "Timeout", "Too large resource version");
    status.details = Some(StatusDetails {
        causes: vec![StatusCause {
            reason: crate::CAUSE_RESOURCE_VERSION_TOO_LARGE.into(),
            ..StatusCause::default()
        }],
        ..StatusDetails::default()
    });
    Error::api("test", status)
}

fn throttled(retry_after: Option<u64>) -> Error {
    Error::Api {
        context: "test".into(),
        status: Status::failure(429, "TooManyRequests", "slow down"),
        retry_after: retry_after.map(Duration::from_secs),
    }
}

fn transport() -> Error {
    Error::transport("test", "connection refused")
}

fn decode() -> Error {
    let source = serde_json::from_str::<serde_json::Value>("{").unwrap_err();
    Error::decode("watch event", b"{garbage", source)
}

fn invalid_object() -> Error {
    Error::InvalidObject {
        context: "test".into(),
        source: KeyError::MissingName { namespace: None },
    }
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A machine and a virtual clock.
struct Rig {
    m: Machine,
    t0: Instant,
    now: Instant,
}

impl Rig {
    fn new(config: ListWatchConfig) -> Self {
        let t0 = Instant::now();
        Self {
            m: Machine::new(config),
            t0,
            now: t0,
        }
    }

    fn default() -> Self {
        Self::new(list_watch_config())
    }

    fn streaming() -> Self {
        Self::new(ListWatchConfig {
            watch_list: WatchListMode::On,
            ..list_watch_config()
        })
    }

    fn advance(&mut self, d: Duration) {
        self.now += d;
    }

    fn start(&mut self) -> Next {
        self.m.start(self.now, 0.5)
    }

    /// start → single page at `rv` → replaced. Returns the watch options (not started yet).
    fn listed(&mut self, rv: &str) -> WatchOptions {
        assert!(matches!(self.start(), Next::List(_)));
        let replace = self.m.list_succeeded(rv, None, self.now, 0.5);
        assert_eq!(
            replace,
            Next::Replace {
                resource_version: rv.into()
            }
        );
        let Next::Watch(w) = self.m.replaced(self.now, 0.5) else {
            panic!("expected a watch")
        };
        w
    }

    /// [`Rig::listed`], then the watch started.
    fn synced_at(&mut self, rv: &str) -> WatchOptions {
        let w = self.listed(rv);
        assert_eq!(self.m.watch_started(self.now), None);
        w
    }

    fn event(&mut self, event: &WatchEvent<Obj>) -> EventAction {
        self.m.event_received(event, self.now, 0.5)
    }
}

fn list(next: Next) -> ListOptions {
    match next {
        Next::List(o) => o,
        other => panic!("expected a new list, got {other:?}"),
    }
}

fn page(next: Next) -> ListOptions {
    match next {
        Next::ListNextPage(o) => o,
        other => panic!("expected a next page, got {other:?}"),
    }
}

fn watch(next: Next) -> WatchOptions {
    match next {
        Next::Watch(o) => o,
        other => panic!("expected a watch, got {other:?}"),
    }
}

fn wait(next: Next) -> (Duration, Then) {
    match next {
        Next::Wait { delay, then } => (delay, then),
        other => panic!("expected a wait, got {other:?}"),
    }
}

// ---- lists ----

#[test]
fn first_list_is_rv_zero_paginated_by_500() {
    let mut r = Rig::default();
    let first = list(r.start());
    assert_eq!(
        first,
        ListOptions {
            resource_version: Some("0".into()),
            limit: Some(500),
            ..ListOptions::default()
        }
    );
    assert_eq!(r.m.last_synced_resource_version(), None);
    assert!(!r.m.has_synced());
}

#[test]
fn continue_pages_drop_resource_version_and_match() {
    let mut r = Rig::new(ListWatchConfig {
        label_selector: Some("app=web".into()),
        field_selector: Some("metadata.namespace=prod".into()),
        ..list_watch_config()
    });
    let first = list(r.start());
    assert_eq!(first.label_selector.as_deref(), Some("app=web"));
    let second = page(r.m.list_succeeded("100", Some("tok1"), r.now, 0.5));
    assert_eq!(
        second,
        ListOptions {
            continue_token: Some("tok1".into()),
            limit: Some(500),
            label_selector: Some("app=web".into()),
            field_selector: Some("metadata.namespace=prod".into()),
            ..ListOptions::default()
        }
    );
    let third = page(r.m.list_succeeded("100", Some("tok2"), r.now, 0.5));
    assert_eq!(third.continue_token.as_deref(), Some("tok2"));
    // An empty token ends the list like a missing one.
    assert_eq!(
        r.m.list_succeeded("100", Some(""), r.now, 0.5),
        Next::Replace {
            resource_version: "100".into()
        }
    );
    assert_eq!(r.m.counters().list_requests, 3);
}

#[test]
fn relist_uses_last_seen_rv_not_older_than() {
    let mut r = Rig::default();
    r.synced_at("10");
    assert_eq!(r.event(&modified("12")), EventAction::Apply);
    assert_eq!(r.event(&bookmark("15")), EventAction::Skip);
    assert_eq!(r.m.last_synced_resource_version(), Some("15"));
    let (_, then) = wait(r.m.watch_failed(&expired(), r.now, 0.5));
    assert_eq!(then, Then::Relist);
    let relist = list(r.m.wait_elapsed(r.now, 0.5));
    // Not paginated at a specific resourceVersion (client-go's page size 0): a bare
    // resourceVersion without a limit already means "not older than".
    assert_eq!(
        relist,
        ListOptions {
            resource_version: Some("15".into()),
            ..ListOptions::default()
        }
    );
    assert_eq!(r.m.counters().relists, 1);
}

#[test]
fn unpaginated_relist_sends_no_match() {
    let mut r = Rig::new(ListWatchConfig {
        page_size: None,
        ..list_watch_config()
    });
    let first = list(r.start());
    assert_eq!(first.limit, None);
    r.m.list_succeeded("10", None, r.now, 0.5);
    r.m.replaced(r.now, 0.5);
    r.m.watch_started(r.now);
    r.m.watch_failed(&expired(), r.now, 0.5);
    let relist = list(r.m.wait_elapsed(r.now, 0.5));
    assert_eq!(relist.resource_version.as_deref(), Some("10"));
    assert_eq!(relist.resource_version_match, None);
    // Page size zero means the same.
    let mut z = Rig::new(ListWatchConfig {
        page_size: Some(0),
        ..list_watch_config()
    });
    assert_eq!(list(z.start()).limit, None);
}

#[test]
fn expired_list_retries_at_once_as_consistent_read() {
    let mut r = Rig::default();
    r.start();
    let retry = list(r.m.list_failed(&expired(), r.now, 0.5));
    assert_eq!(
        retry,
        ListOptions {
            limit: Some(500),
            ..ListOptions::default()
        }
    );
    // The consistent retry failing the same way backs off, and stays consistent.
    let (delay, then) = wait(r.m.list_failed(&expired(), r.now, 0.5));
    assert_eq!((delay, then), (ms(400), Then::List));
    let again = list(r.m.wait_elapsed(r.now, 0.5));
    assert_eq!(again.resource_version, None);
    // Success clears the flag: later lists use the last seen resourceVersion again.
    r.m.list_succeeded("50", None, r.now, 0.5);
    r.m.replaced(r.now, 0.5);
    r.m.watch_started(r.now);
    r.m.watch_failed(&expired(), r.now, 0.5);
    let relist = list(r.m.wait_elapsed(r.now, 0.5));
    assert_eq!(relist.resource_version.as_deref(), Some("50"));
    assert_eq!(r.m.counters().list_failures, 2);
}

#[test]
fn too_large_rv_makes_next_list_consistent() {
    let mut r = Rig::default();
    r.synced_at("10");
    r.m.watch_failed(&expired(), r.now, 0.5);
    let relist = list(r.m.wait_elapsed(r.now, 0.5));
    assert_eq!(relist.resource_version.as_deref(), Some("10"));
    let consistent = list(r.m.list_failed(&too_large(), r.now, 0.5));
    assert_eq!(consistent.resource_version, None);
    assert_eq!(consistent.resource_version_match, None);
    assert_eq!(consistent.limit, Some(500));
}

#[test]
fn too_large_on_watch_relists_consistently() {
    let mut r = Rig::default();
    r.listed("10");
    let (_, then) = wait(r.m.watch_start_failed(&too_large(), r.now, 0.5));
    assert_eq!(then, Then::Relist);
    let relist = list(r.m.wait_elapsed(r.now, 0.5));
    assert_eq!(relist.resource_version, None);
}

#[test]
fn expired_continue_restarts_as_one_full_list_at_original_rv() {
    let mut r = Rig::default();
    r.synced_at("10");
    r.m.watch_failed(&expired(), r.now, 0.5);
    let first = list(r.m.wait_elapsed(r.now, 0.5));
    page(r.m.list_succeeded("20", Some("tok"), r.now, 0.5));
    let full = list(r.m.list_failed(&expired(), r.now, 0.5));
    assert_eq!(
        full,
        ListOptions {
            limit: None,
            continue_token: None,
            ..first.clone()
        }
    );
    assert_eq!(full.resource_version.as_deref(), Some("10"));
    assert_eq!(
        r.m.list_succeeded("25", None, r.now, 0.5),
        Next::Replace {
            resource_version: "25".into()
        }
    );
}

#[test]
fn expired_full_list_fallback_then_goes_consistent() {
    let mut r = Rig::default();
    let first = list(r.start());
    assert_eq!(first.resource_version.as_deref(), Some("0"));
    page(r.m.list_succeeded("20", Some("tok"), r.now, 0.5));
    let full = list(r.m.list_failed(&expired(), r.now, 0.5));
    assert_eq!(full.resource_version.as_deref(), Some("0"));
    assert_eq!(full.limit, None);
    // The full list failing with 410 as well: consistent read, at once.
    let consistent = list(r.m.list_failed(&expired(), r.now, 0.5));
    assert_eq!(consistent.resource_version, None);
    assert_eq!(consistent.limit, Some(500));
}

#[test]
fn other_list_failures_back_off_and_retry_from_the_first_page() {
    let mut r = Rig::default();
    let first = list(r.start());
    page(r.m.list_succeeded("20", Some("tok"), r.now, 0.5));
    let (delay, then) = wait(r.m.list_failed(&api(500, "InternalError"), r.now, 0.0));
    assert_eq!((delay, then), (Duration::ZERO, Then::List));
    assert_eq!(list(r.m.wait_elapsed(r.now, 0.5)), first);
    // 429 on a list honours Retry-After.
    let (delay, _) = wait(r.m.list_failed(&throttled(Some(7)), r.now, 0.5));
    assert_eq!(delay, secs(7));
}

// ---- watches ----

#[test]
fn watch_from_list_rv_with_bookmarks_and_random_timeout() {
    let mut r = Rig::default();
    let w = r.synced_at("10");
    assert_eq!(
        w,
        WatchOptions {
            resource_version: Some("10".into()),
            allow_watch_bookmarks: true,
            timeout_seconds: Some(450),
            ..WatchOptions::default()
        }
    );
    assert!(r.m.has_synced());
    assert_eq!(r.m.last_synced_resource_version(), Some("10"));
    // The timeout spans [300, 600).
    let mut m = Machine::new(list_watch_config());
    for (random, expected) in [(0.0, 300), (0.999_999, 599), (1.0, 599), (-3.0, 300)] {
        m.start(r.now, 0.0);
        m.list_succeeded("1", None, r.now, 0.0);
        let w = watch(m.replaced(r.now, random));
        assert_eq!(w.timeout_seconds, Some(expected), "random {random}");
    }
    let mut no_timeout = Machine::new(ListWatchConfig {
        min_watch_timeout: Duration::ZERO,
        ..list_watch_config()
    });
    no_timeout.start(r.now, 0.0);
    no_timeout.list_succeeded("1", None, r.now, 0.0);
    assert_eq!(watch(no_timeout.replaced(r.now, 0.3)).timeout_seconds, None);
}

#[test]
fn every_event_advances_the_rv_bookmarks_included() {
    let mut r = Rig::default();
    r.synced_at("10");
    assert_eq!(r.event(&added("11")), EventAction::Apply);
    assert_eq!(r.m.last_synced_resource_version(), Some("11"));
    assert_eq!(
        r.event(&WatchEvent::Deleted(Obj {
            name: "a",
            rv: "12"
        })),
        EventAction::Apply
    );
    assert_eq!(r.m.last_synced_resource_version(), Some("12"));
    assert_eq!(r.event(&bookmark("20")), EventAction::Skip);
    assert_eq!(r.m.last_synced_resource_version(), Some("20"));
    // Events without a resourceVersion do not move it.
    assert_eq!(r.event(&added("")), EventAction::Apply);
    assert_eq!(r.event(&bookmark("")), EventAction::Skip);
    assert_eq!(r.m.last_synced_resource_version(), Some("20"));
    // A stray end bookmark outside a streaming list is a plain bookmark.
    assert_eq!(r.event(&end_bookmark("21")), EventAction::Skip);
    assert_eq!(r.m.counters().events, 6);
}

#[test]
fn normal_end_rewatches_from_last_rv_without_relist() {
    let mut r = Rig::default();
    r.synced_at("10");
    r.event(&modified("13"));
    r.advance(secs(300));
    let w = watch(r.m.watch_ended(r.now, 0.0));
    assert_eq!(w.resource_version.as_deref(), Some("13"));
    assert_eq!(w.timeout_seconds, Some(300));
    assert_eq!(r.m.counters().watch_restarts.get(RestartReason::Ended), 1);
    assert_eq!(r.m.counters().relists, 0);
    // A quiet watch that lasted long enough is healthy too.
    r.m.watch_started(r.now);
    r.advance(MIN_HEALTHY_WATCH);
    watch(r.m.watch_ended(r.now, 0.0));
    // So is a short one that delivered something.
    r.m.watch_started(r.now);
    r.event(&bookmark("14"));
    watch(r.m.watch_ended(r.now, 0.0));
}

#[test]
fn short_empty_watch_is_a_failure() {
    let mut r = Rig::default();
    r.synced_at("10");
    r.advance(ms(999));
    let (delay, then) = wait(r.m.watch_ended(r.now, 0.5));
    assert_eq!((delay, then), (ms(400), Then::Rewatch));
    assert_eq!(
        r.m.counters().watch_restarts.get(RestartReason::TooShort),
        1
    );
    let w = watch(r.m.wait_elapsed(r.now, 0.5));
    assert_eq!(w.resource_version.as_deref(), Some("10"));
}

#[test]
fn gone_as_error_event_or_http_answer_relists() {
    for as_event in [true, false] {
        let mut r = Rig::default();
        r.synced_at("10");
        r.event(&modified("11"));
        let next = if as_event {
            match r.event(&WatchEvent::Error(Status::failure(410, "Gone", "too old"))) {
                EventAction::Stop(next) => next,
                other => panic!("expected stop, got {other:?}"),
            }
        } else {
            // The watch ends normally; the server answers the next watch request with 410.
            r.advance(secs(400));
            let w = watch(r.m.watch_ended(r.now, 0.5));
            assert_eq!(w.resource_version.as_deref(), Some("11"));
            r.m.watch_start_failed(&expired(), r.now, 0.5)
        };
        let (_, then) = wait(next);
        assert_eq!(then, Then::Relist);
        let relist = list(r.m.wait_elapsed(r.now, 0.5));
        assert_eq!(relist.resource_version.as_deref(), Some("11"));
        assert!(r.m.counters().watch_restarts.get(RestartReason::Expired) >= 1);
    }
}

#[test]
fn throttle_and_transport_rewatch_without_relisting() {
    let mut r = Rig::default();
    r.synced_at("10");
    r.event(&modified("11"));
    r.m.watch_ended(r.now + secs(400), 0.5);
    // 429 with Retry-After on the watch request: exactly that delay.
    let (delay, then) = wait(r.m.watch_start_failed(&throttled(Some(5)), r.now, 0.5));
    assert_eq!((delay, then), (secs(5), Then::Rewatch));
    let w = watch(r.m.wait_elapsed(r.now, 0.5));
    assert_eq!(w.resource_version.as_deref(), Some("11"));
    // 429 without Retry-After: the backoff (second failure: base 1.6 s, sample 0.5).
    let (delay, _) = wait(r.m.watch_start_failed(&throttled(None), r.now, 0.5));
    assert_eq!(delay, ms(800));
    watch(r.m.wait_elapsed(r.now, 0.5));
    let (delay, then) = wait(r.m.watch_start_failed(&transport(), r.now, 0.5));
    assert_eq!((delay, then), (ms(1600), Then::Rewatch));
    watch(r.m.wait_elapsed(r.now, 0.5));
    // A 500 on the watch request re-watches too.
    let (_, then) = wait(r.m.watch_start_failed(&api(503, "ServiceUnavailable"), r.now, 0.5));
    assert_eq!(then, Then::Rewatch);
    let c = r.m.counters();
    assert_eq!(c.relists, 0);
    assert_eq!(c.list_requests, 1);
    assert_eq!(c.watch_restarts.get(RestartReason::Throttled), 2);
    assert_eq!(c.watch_restarts.get(RestartReason::Transport), 1);
    assert_eq!(c.watch_restarts.get(RestartReason::ServerError), 1);
}

/// Issue 10 (item 6) changed this rule: an undecodable line or an unusable object in a watch
/// relists (as client-go does) instead of re-watching from the same resourceVersion, which
/// met the same bad event again until it left history.
#[test]
fn decode_and_invalid_object_errors_in_a_watch_relist() {
    let mut r = Rig::default();
    r.synced_at("10");
    r.event(&modified("11"));
    let (_, then) = wait(r.m.watch_failed(&decode(), r.now, 0.5));
    assert_eq!(then, Then::Relist);
    let relist = list(r.m.wait_elapsed(r.now, 0.5));
    assert_eq!(relist.resource_version.as_deref(), Some("11"));
    r.m.list_succeeded("12", None, r.now, 0.5);
    watch(r.m.replaced(r.now, 0.5));
    r.m.watch_started(r.now);
    let (_, then) = wait(r.m.watch_failed(&invalid_object(), r.now, 0.5));
    assert_eq!(then, Then::Relist);
    let relist = list(r.m.wait_elapsed(r.now, 0.5));
    assert_eq!(relist.resource_version.as_deref(), Some("12"));
    r.m.list_succeeded("13", None, r.now, 0.5);
    watch(r.m.replaced(r.now, 0.5));
    let unknown_type = Error::UnknownEventType {
        context: "watch".into(),
        event_type: "WHATEVER".into(),
    };
    r.m.watch_started(r.now);
    let (_, then) = wait(r.m.watch_failed(&unknown_type, r.now, 0.5));
    assert_eq!(then, Then::Relist);
    let c = r.m.counters();
    assert_eq!(c.watch_restarts.get(RestartReason::Decode), 2);
    assert_eq!(c.watch_restarts.get(RestartReason::InvalidObject), 1);
    assert_eq!(c.relists, 3);
}

/// An `ERROR` event other than 429 relists, a 500 included (client-go: an internal error is
/// retried only with `MaxInternalErrorRetryDuration`, off by default); 429 re-watches.
#[test]
fn error_events_relist_unless_throttled() {
    let mut r = Rig::default();
    r.synced_at("10");
    r.event(&modified("11"));
    let status = Status::failure(500, "StoreReadError", "corrupt object has been deleted");
    let EventAction::Stop(next) = r.event(&WatchEvent::Error(status)) else {
        panic!("an ERROR event stops the watch")
    };
    assert_eq!(wait(next).1, Then::Relist);
    assert_eq!(
        r.m.counters()
            .watch_restarts
            .get(RestartReason::ServerError),
        1
    );
    let relist = list(r.m.wait_elapsed(r.now, 0.5));
    assert_eq!(relist.resource_version.as_deref(), Some("11"));
    r.m.list_succeeded("12", None, r.now, 0.5);
    watch(r.m.replaced(r.now, 0.5));
    r.m.watch_started(r.now);
    let status = Status::failure(429, "TooManyRequests", "slow down");
    let EventAction::Stop(next) = r.event(&WatchEvent::Error(status)) else {
        panic!("an ERROR event stops the watch")
    };
    assert_eq!(wait(next).1, Then::Rewatch);
}

#[test]
fn other_api_errors_on_watch_relist() {
    let mut r = Rig::default();
    r.listed("10");
    let (_, then) = wait(r.m.watch_start_failed(&api(403, "Forbidden"), r.now, 0.5));
    assert_eq!(then, Then::Relist);
    assert_eq!(
        r.m.counters().watch_restarts.get(RestartReason::OtherError),
        1
    );
    assert_eq!(r.m.counters().relists, 1);
}

// ---- backoff through the machine ----

#[test]
fn backoff_grows_with_failures_and_resets_after_two_calm_minutes() {
    let mut r = Rig::default();
    r.listed("10");
    let mut delays = Vec::new();
    for _ in 0..8 {
        let (delay, _) = wait(r.m.watch_start_failed(&transport(), r.now, 0.999_999_999));
        delays.push(delay);
        r.advance(delay);
        watch(r.m.wait_elapsed(r.now, 0.5));
    }
    let bounds: Vec<_> = (0..8)
        .map(|n| BackoffConfig::default().delay_bounds(n))
        .collect();
    for (delay, (low, high)) in delays.iter().zip(&bounds) {
        assert!(
            *low <= *delay && *delay <= *high,
            "{delay:?} not in [{low:?}, {high:?}]"
        );
        assert!(
            *high - *delay < ms(1),
            "sample ~1 gives ~the base: {delay:?} vs {high:?}"
        );
    }
    assert_eq!(bounds[6].1, secs(30));
    // Two minutes of healthy watching: the next failure starts from 800 ms again.
    r.m.watch_started(r.now);
    r.advance(secs(120));
    r.event(&modified("11"));
    let (delay, _) = wait(r.m.watch_failed(&transport(), r.now, 0.5));
    assert_eq!(delay, ms(400));
}

// ---- streaming initial list ----

#[test]
fn streaming_list_request_and_atomic_replace() {
    let mut r = Rig::streaming();
    let w = watch(r.start());
    assert_eq!(
        w,
        WatchOptions {
            resource_version: None,
            resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
            allow_watch_bookmarks: true,
            send_initial_events: Some(true),
            timeout_seconds: Some(450),
            ..WatchOptions::default()
        }
    );
    let deadline = r.m.watch_started(r.now);
    assert_eq!(deadline, Some(r.t0 + secs(60)));
    assert!(r.m.in_initial_events());
    assert_eq!(r.event(&added("5")), EventAction::Buffer);
    assert_eq!(r.event(&added("7")), EventAction::Buffer);
    assert_eq!(r.event(&bookmark("8")), EventAction::Skip);
    // Nothing is committed before the end bookmark.
    assert_eq!(r.m.last_synced_resource_version(), None);
    assert!(!r.m.has_synced());
    assert_eq!(
        r.event(&end_bookmark("9")),
        EventAction::ReplaceBuffered {
            resource_version: "9".into()
        }
    );
    assert!(r.m.has_synced());
    assert!(!r.m.in_initial_events());
    assert_eq!(r.m.last_synced_resource_version(), Some("9"));
    // The same stream continues as a normal watch.
    assert_eq!(r.event(&modified("10")), EventAction::Apply);
    assert_eq!(r.m.last_synced_resource_version(), Some("10"));
    r.advance(secs(400));
    let w = watch(r.m.watch_ended(r.now, 0.5));
    assert_eq!(w.resource_version.as_deref(), Some("10"));
    assert_eq!(w.send_initial_events, None);
    // A later relist streams again from the last seen resourceVersion.
    r.m.watch_started(r.now);
    let (_, then) = wait(r.m.watch_failed(&expired(), r.now, 0.5));
    assert_eq!(then, Then::Relist);
    let w = watch(r.m.wait_elapsed(r.now, 0.5));
    assert_eq!(w.send_initial_events, Some(true));
    assert_eq!(w.resource_version.as_deref(), Some("10"));
    assert_eq!(r.m.counters().lists, 1);
    assert_eq!(r.m.counters().list_requests, 0);
}

#[test]
fn streaming_refused_falls_back_to_list_for_this_round() {
    let mut r = Rig::streaming();
    watch(r.start());
    let first = list(r.m.watch_start_failed(&api(422, "Invalid"), r.now, 0.5));
    assert_eq!(first.resource_version.as_deref(), Some("0"));
    assert_eq!(first.limit, Some(500));
    assert_eq!(r.m.counters().streaming_fallbacks, 1);
    r.m.list_succeeded("10", None, r.now, 0.5);
    r.m.replaced(r.now, 0.5);
    r.m.watch_started(r.now);
    // The next relist tries streaming again.
    r.m.watch_failed(&expired(), r.now, 0.5);
    let w = watch(r.m.wait_elapsed(r.now, 0.5));
    assert_eq!(w.send_initial_events, Some(true));
    assert!(r.m.streaming());
}

/// Issue 10 (defect 3) changed this rule: the deadline is an idle limit moved on by every
/// object, and a fallback lasts one round (it used to switch streaming off for good).
#[test]
fn streaming_without_progress_falls_back_for_one_round() {
    let mut r = Rig::streaming();
    watch(r.start());
    let first_deadline = r.m.watch_started(r.now).unwrap();
    assert_eq!(first_deadline, r.now + secs(60));
    // Each object moves the deadline on.
    r.advance(secs(50));
    assert_eq!(r.event(&added("5")), EventAction::Buffer);
    let deadline = r.m.initial_events_deadline().unwrap();
    assert_eq!(deadline, r.now + secs(60));
    // A plain bookmark is not progress.
    r.advance(secs(30));
    assert_eq!(r.event(&bookmark("6")), EventAction::Skip);
    assert_eq!(r.m.initial_events_deadline(), Some(deadline));
    r.now = deadline;
    let first = list(r.m.initial_events_timed_out(r.now, 0.5));
    assert_eq!(first.resource_version.as_deref(), Some("0"));
    assert!(r.m.streaming());
    let c = r.m.counters();
    assert_eq!(c.streaming_fallbacks, 1);
    assert_eq!(c.watch_restarts.get(RestartReason::InitialEventsTimeout), 1);
    r.m.list_succeeded("10", None, r.now, 0.5);
    let w = watch(r.m.replaced(r.now, 0.5));
    assert_eq!(w.send_initial_events, None);
    assert!(!r.m.last_list_streamed());
    r.m.watch_started(r.now);
    // The next relist streams again.
    r.m.watch_failed(&expired(), r.now, 0.5);
    let w = watch(r.m.wait_elapsed(r.now, 0.5));
    assert_eq!(w.send_initial_events, Some(true));
    assert_eq!(w.resource_version.as_deref(), Some("10"));
    // A timeout report out of place is not obeyed as such.
    assert!(!r.m.in_initial_events());
}

#[test]
fn a_refused_replace_relists_after_backoff_and_undoes_the_streamed_count() {
    // A paginated list.
    let mut r = Rig::default();
    assert!(matches!(r.start(), Next::List(_)));
    r.m.list_succeeded("10", None, r.now, 0.5);
    let (delay, then) = wait(r.m.replace_failed(r.now, 0.5));
    assert_eq!((delay, then), (ms(400), Then::Relist));
    assert!(!r.m.has_synced());
    assert_eq!(r.m.counters().lists, 0);
    assert!(matches!(r.m.wait_elapsed(r.now, 0.5), Next::List(_)));
    // A streamed list: the end bookmark counted it; the refusal takes it back.
    let mut r = Rig::streaming();
    watch(r.start());
    r.m.watch_started(r.now);
    r.event(&added("5"));
    let action = r.event(&end_bookmark("7"));
    assert!(matches!(action, EventAction::ReplaceBuffered { .. }));
    assert!(r.m.has_synced());
    let (_, then) = wait(r.m.replace_failed(r.now, 0.5));
    assert_eq!(then, Then::Relist);
    assert!(!r.m.has_synced());
    assert_eq!(r.m.counters().lists, 0);
    let w = watch(r.m.wait_elapsed(r.now, 0.5));
    assert_eq!(w.send_initial_events, Some(true));
}

#[test]
fn streaming_retriable_failures_stream_again() {
    let mut r = Rig::streaming();
    watch(r.start());
    let (delay, then) = wait(r.m.watch_start_failed(&throttled(Some(3)), r.now, 0.5));
    assert_eq!((delay, then), (secs(3), Then::Relist));
    watch(r.m.wait_elapsed(r.now, 0.5));
    let (_, then) = wait(r.m.watch_start_failed(&transport(), r.now, 0.5));
    assert_eq!(then, Then::Relist);
    watch(r.m.wait_elapsed(r.now, 0.5));
    r.m.watch_started(r.now);
    r.event(&added("3"));
    // Undecodable line during the initial events: stream again, nothing committed.
    let (_, then) = wait(r.m.watch_failed(&decode(), r.now, 0.5));
    assert_eq!(then, Then::Relist);
    let w = watch(r.m.wait_elapsed(r.now, 0.5));
    assert_eq!(w.send_initial_events, Some(true));
    // A stream ending before its end bookmark: the same.
    r.m.watch_started(r.now);
    let (_, then) = wait(r.m.watch_ended(r.now + secs(5), 0.5));
    assert_eq!(then, Then::Relist);
    assert_eq!(
        r.m.counters()
            .watch_restarts
            .get(RestartReason::InitialEventsIncomplete),
        1
    );
    assert_eq!(r.m.counters().list_requests, 0);
}

#[test]
fn streaming_expired_retries_at_once_without_rv() {
    let mut r = Rig::streaming();
    watch(r.start());
    r.m.watch_started(r.now);
    r.m.event_received(&end_bookmark("9"), r.now, 0.5);
    r.m.watch_failed(&expired(), r.now, 0.5);
    let w = watch(r.m.wait_elapsed(r.now, 0.5));
    assert_eq!(w.resource_version.as_deref(), Some("9"));
    // The streaming relist itself is told 410: at once, without a resourceVersion.
    let w = watch(r.m.watch_start_failed(&expired(), r.now, 0.5));
    assert_eq!(w.resource_version, None);
    assert_eq!(w.send_initial_events, Some(true));
    // Again: now it backs off.
    let (_, then) = wait(r.m.watch_start_failed(&too_large(), r.now, 0.5));
    assert_eq!(then, Then::Relist);
    // Streaming succeeds: the flag clears.
    watch(r.m.wait_elapsed(r.now, 0.5));
    r.m.watch_started(r.now);
    r.m.event_received(&end_bookmark("30"), r.now, 0.5);
    r.m.watch_failed(&expired(), r.now, 0.5);
    assert_eq!(
        watch(r.m.wait_elapsed(r.now, 0.5))
            .resource_version
            .as_deref(),
        Some("30")
    );
}

#[test]
fn streaming_error_event_during_initial_events_falls_back() {
    let mut r = Rig::streaming();
    watch(r.start());
    r.m.watch_started(r.now);
    let action = r.event(&WatchEvent::Error(Status::failure(
        500,
        "InternalError",
        "boom",
    )));
    let EventAction::Stop(next) = action else {
        panic!("expected stop")
    };
    assert_eq!(list(next).resource_version.as_deref(), Some("0"));
}

// ---- robustness ----

#[test]
fn out_of_order_reports_restart_instead_of_panicking() {
    let mut r = Rig::default();
    // Nothing started yet: every report answers with a fresh list.
    assert!(matches!(
        r.m.list_succeeded("1", None, r.now, 0.5),
        Next::List(_)
    ));
    assert!(matches!(
        r.m.list_failed(&expired(), r.now, 0.5),
        Next::List(_)
    ));
    assert!(matches!(r.m.replaced(r.now, 0.5), Next::List(_)));
    assert!(matches!(
        r.m.watch_start_failed(&transport(), r.now, 0.5),
        Next::List(_)
    ));
    assert!(matches!(
        r.m.watch_failed(&transport(), r.now, 0.5),
        Next::List(_)
    ));
    assert!(matches!(r.m.watch_ended(r.now, 0.5), Next::List(_)));
    assert!(matches!(r.m.wait_elapsed(r.now, 0.5), Next::List(_)));
    assert!(matches!(
        r.m.initial_events_timed_out(r.now, 0.5),
        Next::List(_)
    ));
    assert!(matches!(
        r.event(&added("1")),
        EventAction::Stop(Next::List(_))
    ));
}

#[test]
fn restart_of_a_synced_machine_relists_from_last_rv() {
    let mut r = Rig::default();
    r.synced_at("10");
    r.event(&modified("12"));
    let relist = list(r.start());
    assert_eq!(relist.resource_version.as_deref(), Some("12"));
    assert_eq!(r.m.counters().relists, 1);
}

#[test]
fn restart_reasons_cover_every_class() {
    let classes = [
        (ErrorClass::Expired, RestartReason::Expired),
        (
            ErrorClass::ResourceVersionTooLarge,
            RestartReason::ResourceVersionTooLarge,
        ),
        (ErrorClass::Throttled, RestartReason::Throttled),
        (ErrorClass::Transport, RestartReason::Transport),
        (ErrorClass::ServerError, RestartReason::ServerError),
        (ErrorClass::Decode, RestartReason::Decode),
        (ErrorClass::InvalidObject, RestartReason::InvalidObject),
        (ErrorClass::NotFound, RestartReason::OtherError),
        (ErrorClass::Unauthorized, RestartReason::OtherError),
    ];
    for (class, reason) in classes {
        assert_eq!(RestartReason::of(class), reason);
    }
    let names: std::collections::HashSet<_> =
        RestartReason::ALL.iter().map(|r| r.as_str()).collect();
    assert_eq!(names.len(), RestartReason::ALL.len());
    let mut counts = RestartCounts::default();
    counts.bump(RestartReason::Decode);
    counts.bump(RestartReason::Decode);
    counts.bump(RestartReason::Ended);
    assert_eq!(counts.total(), 3);
    assert_eq!(counts.iter().filter(|(_, n)| *n > 0).count(), 2);
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    /// One outcome the driver might report, whatever the state.
    #[derive(Debug, Clone)]
    enum Input {
        Page(bool),
        ListFailed(u8),
        Replaced,
        Started,
        StartFailed(u8),
        Event(u8),
        Failed(u8),
        Ended(u64),
        Timeout,
        Elapsed,
    }

    fn error(n: u8) -> Error {
        match n % 6 {
            0 => expired(),
            1 => too_large(),
            2 => throttled(Some(u64::from(n))),
            3 => transport(),
            4 => decode(),
            _ => api(403, "Forbidden"),
        }
    }

    fn input() -> impl Strategy<Value = Input> {
        prop_oneof![
            any::<bool>().prop_map(Input::Page),
            any::<u8>().prop_map(Input::ListFailed),
            Just(Input::Replaced),
            Just(Input::Started),
            any::<u8>().prop_map(Input::StartFailed),
            any::<u8>().prop_map(Input::Event),
            any::<u8>().prop_map(Input::Failed),
            (0u64..5000).prop_map(Input::Ended),
            Just(Input::Timeout),
            Just(Input::Elapsed),
        ]
    }

    proptest! {
        /// Whatever the driver reports, in whatever order: no panic, waits stay within the
        /// backoff cap (or the server's Retry-After), list and watch options stay valid
        /// for the API server.
        #[test]
        fn any_sequence_gives_valid_requests(
            inputs in proptest::collection::vec(input(), 1..80),
            randoms in proptest::collection::vec(0.0f64..1.0, 80),
            streaming in any::<bool>(),
        ) {
            let config = ListWatchConfig {
                watch_list: if streaming { WatchListMode::On } else { WatchListMode::Off },
                ..list_watch_config()
            };
            let mut m = Machine::new(config);
            let mut now = Instant::now();
            let mut rv = 100u64;
            let mut next = m.start(now, 0.5);
            for (i, input) in inputs.iter().enumerate() {
                let random = randoms[i % randoms.len()];
                now += ms(10);
                match &next {
                    Next::List(o) | Next::ListNextPage(o) => {
                        prop_assert!(o.resource_version_match.is_none() || o.resource_version.is_some());
                        prop_assert!(o.continue_token.is_none() || o.resource_version.is_none());
                        prop_assert!(o.resource_version_match != Some(ResourceVersionMatch::Exact));
                    }
                    Next::Watch(o) => {
                        prop_assert!(o.allow_watch_bookmarks);
                        let t = o.timeout_seconds.unwrap_or(0);
                        prop_assert!((300..600).contains(&t));
                        prop_assert_eq!(
                            o.send_initial_events == Some(true),
                            o.resource_version_match == Some(ResourceVersionMatch::NotOlderThan)
                        );
                    }
                    Next::Wait { delay, .. } => {
                        prop_assert!(*delay <= secs(255), "{:?}", delay);
                    }
                    Next::Replace { .. } => {}
                }
                rv += 1;
                let rv_text = rv.to_string();
                next = match input {
                    Input::Page(more) => m.list_succeeded(&rv_text, more.then_some("tok"), now, random),
                    Input::ListFailed(n) => m.list_failed(&error(*n), now, random),
                    Input::Replaced => m.replaced(now, random),
                    Input::Started => { m.watch_started(now); next }
                    Input::StartFailed(n) => m.watch_start_failed(&error(*n), now, random),
                    Input::Event(n) => {
                        let event = match n % 4 {
                            0 => WatchEvent::Added(Obj { name: "a", rv: "7" }),
                            1 => WatchEvent::Bookmark(Bookmark { resource_version: rv_text.clone(), initial_events_end: n % 8 == 1 }),
                            2 => WatchEvent::Error(Status::failure(410, "Expired", "")),
                            _ => WatchEvent::Modified(Obj { name: "a", rv: "8" }),
                        };
                        match m.event_received(&event, now, random) {
                            EventAction::Stop(n) => n,
                            _ => next,
                        }
                    }
                    Input::Failed(n) => m.watch_failed(&error(*n), now, random),
                    Input::Ended(after) => m.watch_ended(now + ms(*after), random),
                    Input::Timeout => m.initial_events_timed_out(now, random),
                    Input::Elapsed => m.wait_elapsed(now, random),
                };
            }
        }
    }
}

// ---- watches from "0": a snapshot first, in no resourceVersion order ----

/// A list that reports resourceVersion "0" (an empty fake server that was never written; real
/// servers never do) leads to a watch from "0", which starts with the current state as
/// synthetic ADDED events in key order, not resourceVersion order.
fn snapshot_watch() -> Rig {
    let mut r = Rig::default();
    let w = r.synced_at("0");
    assert_eq!(w.resource_version.as_deref(), Some("0"));
    // The snapshot: b@13 then c@11 (key order), then a live change at 14.
    assert_eq!(r.event(&added("13")), EventAction::Apply);
    assert_eq!(r.event(&added("11")), EventAction::Apply);
    assert_eq!(r.event(&modified("14")), EventAction::Apply);
    r
}

#[test]
fn snapshot_events_are_not_resume_points() {
    let mut r = snapshot_watch();
    // Resuming from 11 would replay 12 and 13 (older states after newer ones); from 14, miss
    // anything of the snapshot sent after it. Neither is taken.
    assert_eq!(r.m.last_synced_resource_version(), Some("0"));
    // A failure relists (a new watch from "0" would miss the deletions since).
    r.advance(secs(5));
    let (_, then) = wait(r.m.watch_failed(&transport(), r.now, 0.5));
    assert_eq!(then, Then::Relist);
    let relist = list(r.m.wait_elapsed(r.now, 0.5));
    assert_eq!(relist.resource_version.as_deref(), Some("0"));
    assert_eq!(r.m.counters().relists, 1);
}

#[test]
fn a_snapshot_watch_ending_or_erroring_relists() {
    let mut r = snapshot_watch();
    r.advance(secs(300));
    list(r.m.watch_ended(r.now, 0.5));
    let mut r = snapshot_watch();
    let status = Status::failure(500, "InternalError", "reset");
    let EventAction::Stop(next) = r.event(&WatchEvent::Error(status)) else {
        panic!("an ERROR event stops the watch")
    };
    assert_eq!(wait(next).1, Then::Relist);
}

#[test]
fn a_bookmark_gives_a_snapshot_watch_its_resume_point() {
    let mut r = snapshot_watch();
    assert_eq!(r.event(&bookmark("14")), EventAction::Skip);
    assert_eq!(r.m.last_synced_resource_version(), Some("14"));
    // From now on events are live changes, in order.
    assert_eq!(r.event(&modified("15")), EventAction::Apply);
    assert_eq!(r.m.last_synced_resource_version(), Some("15"));
    r.advance(secs(5));
    let (_, then) = wait(r.m.watch_failed(&transport(), r.now, 0.5));
    assert_eq!(then, Then::Rewatch);
    let w = watch(r.m.wait_elapsed(r.now, 0.5));
    assert_eq!(w.resource_version.as_deref(), Some("15"));
}

#[test]
fn a_snapshot_watch_that_delivered_nothing_is_retried_as_it_was() {
    let mut r = Rig::default();
    r.synced_at("0");
    r.advance(secs(5));
    let (_, then) = wait(r.m.watch_failed(&transport(), r.now, 0.5));
    assert_eq!(then, Then::Rewatch);
    let w = watch(r.m.wait_elapsed(r.now, 0.5));
    assert_eq!(w.resource_version.as_deref(), Some("0"));
    r.m.watch_started(r.now);
    let status = Status::failure(429, "TooManyRequests", "slow down");
    let EventAction::Stop(next) = r.event(&WatchEvent::Error(status)) else {
        panic!("an ERROR event stops the watch")
    };
    assert_eq!(wait(next).1, Then::Rewatch);
}

#[test]
fn live_events_after_the_end_bookmark_of_a_streaming_list_are_resume_points() {
    let mut r = Rig::streaming();
    let w = watch(r.start());
    assert_eq!(w.send_initial_events, Some(true));
    r.m.watch_started(r.now);
    assert_eq!(r.event(&added("3")), EventAction::Buffer);
    // An empty server's snapshot ends at "0"; the same stream then carries live changes.
    assert!(matches!(
        r.event(&end_bookmark("0")),
        EventAction::ReplaceBuffered { .. }
    ));
    assert_eq!(r.event(&added("1")), EventAction::Apply);
    assert_eq!(r.m.last_synced_resource_version(), Some("1"));
}

/// The default configuration with a paginated list (most rules here are about list+watch;
/// the default streams first since issue 10).
fn list_watch_config() -> ListWatchConfig {
    ListWatchConfig {
        watch_list: WatchListMode::Off,
        ..ListWatchConfig::default()
    }
}

#[test]
fn the_default_streams_first_as_client_go_does() {
    // The default, `Auto`, is the runtime's to settle by its store; a bare machine streams.
    assert_eq!(ListWatchConfig::default().watch_list, WatchListMode::Auto);
    for mode in [WatchListMode::Auto, WatchListMode::On] {
        let config = ListWatchConfig {
            watch_list: mode,
            ..ListWatchConfig::default()
        };
        let mut m = Machine::new(config);
        let Next::Watch(w) = m.start(Instant::now(), 0.5) else {
            panic!("{mode:?}: expected a streaming watch")
        };
        assert_eq!(w.send_initial_events, Some(true));
        assert!(m.streaming());
    }
    let mut m = Machine::new(list_watch_config());
    assert!(matches!(m.start(Instant::now(), 0.5), Next::List(_)));
    assert!(!m.streaming());
}
