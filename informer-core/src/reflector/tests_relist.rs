//! Unit tests of the list and throttling rules changed for hostile servers and relists:
//! `Retry-After` clamped into the backoff's range with its growth kept, and relists at a
//! specific resourceVersion sent without a page size (client-go's choice).

use std::time::{Duration, Instant};

use super::*;
use crate::{Error, ListOptions, ResourceVersionMatch, Status};

fn throttled(retry_after: Duration) -> Error {
    Error::Api {
        context: "test".into(),
        status: Status::failure(429, "TooManyRequests", "slow down"),
        retry_after: Some(retry_after),
    }
}

fn expired() -> Error {
    Error::api("test", Status::failure(410, "Expired", "too old"))
}

fn list(next: Next) -> ListOptions {
    match next {
        Next::List(o) => o,
        other => panic!("expected a list, got {other:?}"),
    }
}

fn wait(next: Next) -> (Duration, Then) {
    match next {
        Next::Wait { delay, then } => (delay, then),
        other => panic!("expected a wait, got {other:?}"),
    }
}

/// The default configuration with a list then a watch (the default streams the initial
/// list instead); these rules are about lists.
fn list_watch() -> ListWatchConfig {
    ListWatchConfig {
        watch_list: WatchListMode::Off,
        ..ListWatchConfig::default()
    }
}

/// A synced machine watching from `rv`, whose first list the server answered in one page.
fn synced(config: ListWatchConfig, rv: &str, now: Instant) -> Machine {
    let mut m = Machine::new(config);
    list(m.start(now, 0.5));
    m.list_succeeded(rv, None, now, 0.5);
    m.replaced(now, 0.5);
    m.watch_started(now);
    m
}

#[test]
fn retry_after_zero_on_every_list_backs_off_from_the_floor_and_grows() {
    let mut m = Machine::new(list_watch());
    let mut now = Instant::now();
    list(m.start(now, 0.5));
    let mut delays = Vec::new();
    for _ in 0..10 {
        let (delay, then) = wait(m.list_failed(&throttled(Duration::ZERO), now, 0.5));
        assert_eq!(then, Then::List);
        delays.push(delay);
        now += delay;
        list(m.wait_elapsed(now, 0.5));
    }
    // Sample 0.5 under full jitter: half the base, never below the 800 ms floor.
    let expected: Vec<Duration> = [
        800, 800, 1600, 3200, 6400, 12800, 15000, 15000, 15000, 15000,
    ]
    .into_iter()
    .map(Duration::from_millis)
    .collect();
    assert_eq!(delays, expected);
    // Requests in the first minute: a bound, not a spin (the issue saw 41,285).
    let mut elapsed = Duration::ZERO;
    let requests_in_a_minute = delays
        .iter()
        .take_while(|d| {
            elapsed += **d;
            elapsed <= Duration::from_secs(60)
        })
        .count()
        + 1;
    assert!(requests_in_a_minute <= 10, "{requests_in_a_minute}");
}

#[test]
fn retry_after_on_watches_is_clamped_to_the_cap_and_floor() {
    let now = Instant::now();
    let mut m = synced(list_watch(), "10", now);
    m.watch_ended(now + Duration::from_secs(400), 0.5);
    // A day's Retry-After on the watch request: the 30 s cap, then a re-watch.
    let (delay, then) =
        wait(m.watch_start_failed(&throttled(Duration::from_secs(100_000)), now, 0.0));
    assert_eq!((delay, then), (Duration::from_secs(30), Then::Rewatch));
    m.wait_elapsed(now, 0.5);
    // Zero: the floor.
    let (delay, _) = wait(m.watch_start_failed(&throttled(Duration::ZERO), now, 0.0));
    assert_eq!(delay, Duration::from_millis(800));
    m.wait_elapsed(now, 0.5);
    // A hint inside the range that is longer than the backoff's own delay: honoured.
    let (delay, _) = wait(m.watch_start_failed(&throttled(Duration::from_secs(5)), now, 0.0));
    assert_eq!(delay, Duration::from_secs(5));
    assert_eq!(m.counters().relists, 0);
}

#[test]
fn relists_at_a_specific_resource_version_ask_for_no_page_size() {
    let now = Instant::now();
    let mut m = synced(list_watch(), "10", now);
    let (_, then) = wait(m.watch_failed(&expired(), now, 0.5));
    assert_eq!(then, Then::Relist);
    let relist = list(m.wait_elapsed(now, 0.5));
    assert_eq!(relist.resource_version.as_deref(), Some("10"));
    assert_eq!(relist.limit, None);
    assert_eq!(relist.resource_version_match, None);
    // The relist fails with 410: the consistent read that follows is paginated again.
    let consistent = list(m.list_failed(&expired(), now, 0.5));
    assert_eq!(consistent.resource_version, None);
    assert_eq!(consistent.limit, Some(500));
}

#[test]
fn a_server_that_paged_the_first_list_gets_paginated_relists() {
    let now = Instant::now();
    let mut m = Machine::new(list_watch());
    let first = list(m.start(now, 0.5));
    assert_eq!(first.resource_version.as_deref(), Some("0"));
    assert_eq!(first.limit, Some(500));
    // The server honours paging for resourceVersion=0: it has no watch cache.
    assert!(matches!(
        m.list_succeeded("10", Some("tok"), now, 0.5),
        Next::ListNextPage(_)
    ));
    m.list_succeeded("10", None, now, 0.5);
    m.replaced(now, 0.5);
    m.watch_started(now);
    wait(m.watch_failed(&expired(), now, 0.5));
    let relist = list(m.wait_elapsed(now, 0.5));
    assert_eq!(relist.resource_version.as_deref(), Some("10"));
    assert_eq!(relist.limit, Some(500));
    assert_eq!(
        relist.resource_version_match,
        Some(ResourceVersionMatch::NotOlderThan)
    );
}
