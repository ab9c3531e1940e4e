//! Reflector tests against a scripted ListerWatcher: exact requests, queue operations and
//! virtual-time arithmetic for every rule.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use informer::reflector::{
    BackoffConfig, FailureContext, Jitter, Reflector, ReflectorConfig, RestartReason, Stage, Then,
    WatchListMode,
};
use informer_core::{
    Error, ErrorClass, ListOptions, ResourceVersionMatch, Status, WatchEvent, WatchOptions,
};
use informer_testing::JsonObject;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::reflector_support::*;
use crate::support::{list_watch_config, millis, secs};

/// Failures seen by the watch-error handler: (stage, class, then, delay).
type Seen = Arc<Mutex<Vec<(Stage, ErrorClass, Option<Then>, Duration, String)>>>;

fn recording_handler(config: &mut ReflectorConfig<JsonObject>) -> Seen {
    let seen: Seen = Arc::default();
    let sink = Arc::clone(&seen);
    config.watch_error_handler = Some(Arc::new(move |error: &Error, cx: &FailureContext<'_>| {
        assert_eq!(cx.reflector, "test");
        sink.lock().push((
            cx.stage,
            error.class(),
            cx.then,
            cx.delay,
            error.to_string(),
        ));
    }));
    seen
}

/// Runs the reflector for `duration` of virtual time, then cancels it and waits for `run` to
/// return.
async fn run_for(reflector: &Arc<Reflector<JsonObject>>, duration: Duration) {
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let reflector = Arc::clone(reflector);
        let cancel = cancel.clone();
        async move { reflector.run(cancel).await }
    });
    tokio::time::sleep(duration).await;
    cancel.cancel();
    task.await.unwrap();
    assert!(!reflector.is_running());
}

fn reflector(
    lw: &Arc<ScriptedListerWatcher>,
    queue: &Arc<RecordingQueue>,
    config: ReflectorConfig<JsonObject>,
) -> Arc<Reflector<JsonObject>> {
    Arc::new(Reflector::new(lw.clone(), queue.clone(), None, config))
}

fn list_req(rv: Option<&str>, limit: Option<u32>) -> Request {
    Request::List(ListOptions {
        resource_version: rv.map(str::to_owned),
        resource_version_match: match rv {
            Some(rv) if rv != "0" && limit.is_some() => Some(ResourceVersionMatch::NotOlderThan),
            _ => None,
        },
        limit,
        ..ListOptions::default()
    })
}

fn page_req(token: &str) -> Request {
    Request::List(ListOptions {
        continue_token: Some(token.into()),
        limit: Some(500),
        ..ListOptions::default()
    })
}

fn watch_rv(request: &Request) -> Option<String> {
    match request {
        Request::Watch(w) => w.resource_version.clone(),
        Request::List(_) => panic!("expected a watch, got {request:?}"),
    }
}

fn is_watch(request: &Request) -> bool {
    matches!(request, Request::Watch(w) if w.send_initial_events.is_none())
}

fn replace(keys: &[&str], rv: &str) -> Op {
    Op::Replace(keys.iter().map(|k| (*k).to_owned()).collect(), rv.into())
}

#[tokio::test(start_paused = true)]
async fn lists_pages_then_watches_and_applies_events() {
    let lw = ScriptedListerWatcher::new(vec![
        Answer::List(Ok(page(vec![obj("a", "5")], "10", Some("t1")))),
        Answer::List(Ok(page(vec![obj("b", "7")], "10", None))),
        Answer::Watch(Ok(vec![
            Step::added(obj("c", "11")),
            Step::modified(obj("a", "12")),
            Step::event(bookmark("13")),
            Step::deleted(obj("b", "14")),
            Step::Sleep(secs(300)),
        ])),
        Answer::Watch(Ok(vec![Step::Hang])),
    ]);
    let queue = RecordingQueue::new();
    let r = reflector(&lw, &queue, list_watch_config());
    assert_eq!(r.last_synced_resource_version(), None);
    run_for(&r, secs(1000)).await;

    let requests = lw.requests();
    assert_eq!(requests[0], list_req(Some("0"), Some(500)));
    assert_eq!(requests[1], page_req("t1"));
    let Request::Watch(first_watch) = &requests[2] else {
        panic!("expected a watch")
    };
    assert_eq!(first_watch.resource_version.as_deref(), Some("10"));
    assert!(first_watch.allow_watch_bookmarks);
    let timeout = first_watch.timeout_seconds.unwrap();
    assert!((300..600).contains(&timeout), "{timeout}");
    // Normal end after 300 s: re-watch at once from the last event's resourceVersion.
    assert_eq!(watch_rv(&requests[3]).as_deref(), Some("14"));
    assert_eq!(lw.log()[3].at, secs(300));
    assert_eq!(requests.len(), 4);

    assert_eq!(
        queue.ops(),
        vec![
            replace(&["ns/a@5", "ns/b@7"], "10"),
            Op::Add("ns/c".into(), "11".into()),
            Op::Update("ns/a".into(), "12".into()),
            Op::Delete("ns/b".into(), "14".into()),
        ]
    );
    assert_eq!(r.last_synced_resource_version().as_deref(), Some("14"));
    let stats = r.stats();
    assert!(stats.has_synced);
    assert_eq!(stats.counters.lists, 1);
    assert_eq!(stats.counters.list_requests, 2);
    assert_eq!(stats.counters.watch_starts, 2);
    assert_eq!(stats.counters.events, 4);
    assert_eq!(stats.counters.watch_restarts.get(RestartReason::Ended), 1);
    assert_eq!(stats.counters.relists, 0);
    assert_eq!(stats.errors, 0);
}

#[tokio::test(start_paused = true)]
async fn expired_watch_relists_at_last_rv_after_backoff() {
    let lw = ScriptedListerWatcher::new(vec![
        Answer::List(Ok(page(vec![obj("a", "5")], "10", None))),
        Answer::Watch(Ok(vec![
            Step::modified(obj("a", "11")),
            Step::Sleep(secs(30)),
            Step::event(WatchEvent::Error(Status::failure(
                410, "Expired", "too old",
            ))),
        ])),
        Answer::List(Ok(page(vec![obj("a", "20")], "25", None))),
        Answer::Watch(Ok(vec![Step::Hang])),
    ]);
    let queue = RecordingQueue::new();
    let mut config = list_watch_config();
    let seen = recording_handler(&mut config);
    let r = reflector(&lw, &queue, config);
    run_for(&r, secs(100)).await;

    let log = lw.log();
    assert_eq!(log[2].request, list_req(Some("11"), None));
    // The relist waits the first backoff delay: in [0, 800 ms] after the ERROR event at 30 s.
    let gap = log[2].at - secs(30);
    assert!(gap <= millis(800), "{gap:?}");
    assert_eq!(watch_rv(&log[3].request).as_deref(), Some("25"));
    let seen = seen.lock();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].0, Stage::Watch);
    assert_eq!(seen[0].1, ErrorClass::Expired);
    assert_eq!(seen[0].2, Some(Then::Relist));
    // The reported delay is the one waited (tokio's timer rounds up to the millisecond).
    assert!(
        seen[0].3 <= gap && gap - seen[0].3 < millis(1),
        "{:?} vs {gap:?}",
        seen[0].3
    );
    assert_eq!(queue.ops().last().unwrap(), &replace(&["ns/a@20"], "25"),);
    let stats = r.stats();
    assert_eq!(stats.counters.relists, 1);
    assert_eq!(stats.counters.watch_restarts.get(RestartReason::Expired), 1);
    assert_eq!(
        stats.last_error.as_ref().unwrap().class,
        ErrorClass::Expired
    );
}

#[tokio::test(start_paused = true)]
async fn http_410_on_watch_start_relists() {
    let lw = ScriptedListerWatcher::new(vec![
        Answer::List(Ok(page(vec![], "10", None))),
        Answer::Watch(Err(api_error(410, "Gone"))),
        Answer::List(Ok(page(vec![], "30", None))),
        Answer::Watch(Ok(vec![Step::Hang])),
    ]);
    let queue = RecordingQueue::new();
    let r = reflector(&lw, &queue, list_watch_config());
    run_for(&r, secs(10)).await;
    let requests = lw.requests();
    assert_eq!(requests[2], list_req(Some("10"), None));
    assert_eq!(watch_rv(&requests[3]).as_deref(), Some("30"));
}

#[tokio::test(start_paused = true)]
async fn throttled_watch_waits_retry_after_without_relisting() {
    let lw = ScriptedListerWatcher::new(vec![
        Answer::List(Ok(page(vec![], "10", None))),
        Answer::Watch(Err(throttled(secs(7)))),
        Answer::Watch(Err(refused())),
        Answer::Watch(Ok(vec![Step::Hang])),
    ]);
    let queue = RecordingQueue::new();
    let mut config = list_watch_config();
    let seen = recording_handler(&mut config);
    let r = reflector(&lw, &queue, config);
    run_for(&r, secs(60)).await;
    let log = lw.log();
    assert_eq!(log.len(), 4);
    assert!(log[1..].iter().all(|l| is_watch(&l.request)));
    assert!(
        log[1..]
            .iter()
            .all(|l| watch_rv(&l.request).as_deref() == Some("10"))
    );
    // Exactly the Retry-After.
    assert_eq!(log[2].at - log[1].at, secs(7));
    // Then the second backoff step: base 1.6 s, full jitter.
    assert!(log[3].at - log[2].at <= millis(1600));
    let seen = seen.lock();
    assert_eq!(
        seen.iter().map(|s| (s.0, s.1, s.2)).collect::<Vec<_>>(),
        vec![
            (
                Stage::WatchStart,
                ErrorClass::Throttled,
                Some(Then::Rewatch)
            ),
            (
                Stage::WatchStart,
                ErrorClass::Transport,
                Some(Then::Rewatch)
            ),
        ]
    );
    assert_eq!(seen[0].3, secs(7));
    assert_eq!(r.stats().counters.relists, 0);
    assert_eq!(queue.ops().len(), 1);
}

/// Issue 10 (item 6) changed the rule: an undecodable line relists from the last good
/// resourceVersion (it used to re-watch from it, meeting the same bad event again until it
/// left history), as client-go does.
#[tokio::test(start_paused = true)]
async fn garbage_in_the_stream_is_reported_and_relisted_from_last_good_rv() {
    let garbage = || {
        Error::decode(
            "watch event from pods",
            b"{nope",
            "key must be a string at line 1",
        )
    };
    let nameless = JsonObject::default().with_resource_version("13");
    let lw = ScriptedListerWatcher::new(vec![
        Answer::List(Ok(page(vec![], "10", None))),
        Answer::Watch(Ok(vec![
            Step::added(obj("a", "11")),
            Step::Sleep(secs(2)),
            Step::error(garbage()),
            Step::added(obj("never-applied", "99")),
        ])),
        Answer::List(Ok(page(vec![obj("a", "11")], "11", None))),
        Answer::Watch(Ok(vec![
            Step::modified(obj("a", "12")),
            Step::Sleep(secs(2)),
            Step::added(nameless),
        ])),
        Answer::Watch(Ok(vec![
            Step::Sleep(secs(2)),
            Step::error(Error::UnknownEventType {
                context: "watching pods".into(),
                event_type: "SURPRISE".into(),
            }),
        ])),
        Answer::List(Ok(page(vec![obj("a", "12")], "13", None))),
        Answer::Watch(Ok(vec![Step::added(obj("b", "14")), Step::Hang])),
    ]);
    let queue = RecordingQueue::new();
    let mut config = list_watch_config();
    let seen = recording_handler(&mut config);
    let r = reflector(&lw, &queue, config);
    run_for(&r, secs(120)).await;
    let requests = lw.requests();
    assert_eq!(
        requests,
        vec![
            list_req(Some("0"), Some(500)),
            requests[1].clone(),
            // Relists at a specific resourceVersion ask for no page size (the first list
            // came back in one page).
            list_req(Some("11"), None),
            requests[3].clone(),
            requests[4].clone(),
            list_req(Some("13"), None),
            requests[6].clone(),
        ]
    );
    // The nameless object is skipped, its resourceVersion (13) counting as seen; its watch
    // then ends normally and the next one starts from 13.
    let rvs: Vec<_> = [1, 3, 4, 6]
        .iter()
        .map(|i| watch_rv(&requests[*i]))
        .collect();
    assert_eq!(
        rvs,
        vec![
            Some("10".into()),
            Some("11".into()),
            Some("13".into()),
            Some("13".into())
        ]
    );
    assert_eq!(
        queue.ops(),
        vec![
            replace(&[], "10"),
            Op::Add("ns/a".into(), "11".into()),
            replace(&["ns/a@11"], "11"),
            Op::Update("ns/a".into(), "12".into()),
            replace(&["ns/a@12"], "13"),
            Op::Add("ns/b".into(), "14".into()),
        ]
    );
    let seen = seen.lock();
    let classes: Vec<_> = seen.iter().map(|s| (s.0, s.1, s.2)).collect();
    assert_eq!(
        classes,
        vec![
            (Stage::Watch, ErrorClass::Decode, Some(Then::Relist)),
            (Stage::Watch, ErrorClass::InvalidObject, None),
            (Stage::Watch, ErrorClass::Decode, Some(Then::Relist)),
        ]
    );
    assert!(seen[1].4.contains("ADDED event"), "{}", seen[1].4);
    let stats = r.stats();
    assert_eq!(stats.counters.watch_restarts.get(RestartReason::Decode), 2);
    assert_eq!(
        stats
            .counters
            .watch_restarts
            .get(RestartReason::InvalidObject),
        0
    );
    assert_eq!(stats.counters.watch_restarts.get(RestartReason::Ended), 1);
    assert_eq!(stats.counters.relists, 2);
    assert_eq!(stats.errors, 3);
}

#[tokio::test(start_paused = true)]
async fn nameless_list_items_are_reported_and_skipped() {
    let lw = ScriptedListerWatcher::new(vec![
        Answer::List(Ok(page(
            vec![
                obj("a", "5"),
                JsonObject::default().with_resource_version("6"),
            ],
            "10",
            None,
        ))),
        Answer::Watch(Ok(vec![Step::Hang])),
    ]);
    let queue = RecordingQueue::new();
    let mut config = list_watch_config();
    let seen = recording_handler(&mut config);
    let r = reflector(&lw, &queue, config);
    run_for(&r, secs(5)).await;
    assert_eq!(queue.ops(), vec![replace(&["ns/a@5"], "10")]);
    let seen = seen.lock();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        (seen[0].0, seen[0].1, seen[0].2),
        (Stage::ListItem, ErrorClass::InvalidObject, None)
    );
}

#[tokio::test(start_paused = true)]
async fn expired_continue_restarts_as_one_full_list_at_original_rv() {
    let lw = ScriptedListerWatcher::new(vec![
        Answer::List(Ok(page(vec![obj("a", "5")], "10", Some("t1")))),
        Answer::List(Err(api_error(410, "Expired"))),
        Answer::List(Ok(page(vec![obj("a", "5"), obj("b", "8")], "12", None))),
        Answer::Watch(Ok(vec![Step::Hang])),
    ]);
    let queue = RecordingQueue::new();
    let r = reflector(&lw, &queue, list_watch_config());
    run_for(&r, secs(5)).await;
    let requests = lw.requests();
    assert_eq!(requests[0], list_req(Some("0"), Some(500)));
    assert_eq!(requests[1], page_req("t1"));
    assert_eq!(requests[2], list_req(Some("0"), None));
    assert_eq!(watch_rv(&requests[3]).as_deref(), Some("12"));
    // The first page's items were discarded: one replace with the full list.
    assert_eq!(queue.ops(), vec![replace(&["ns/a@5", "ns/b@8"], "12")]);
    // No backoff: all at time zero.
    assert!(lw.log().iter().all(|l| l.at == Duration::ZERO));
}

#[tokio::test(start_paused = true)]
async fn too_large_rv_on_list_retries_as_consistent_read() {
    let mut too_large = Status::failure(
        504,
        "Timeout",
        "Too large resource version: 99, current: 10",
    );
    too_large.details = Some(informer_core::StatusDetails {
        causes: vec![informer_core::StatusCause {
            reason: informer_core::CAUSE_RESOURCE_VERSION_TOO_LARGE.into(),
            ..Default::default()
        }],
        ..Default::default()
    });
    let lw = ScriptedListerWatcher::new(vec![
        Answer::List(Ok(page(vec![], "10", None))),
        Answer::Watch(Ok(vec![
            Step::event(bookmark("99")),
            Step::event(WatchEvent::Error(Status::failure(
                410, "Expired", "too old",
            ))),
        ])),
        Answer::List(Err(Error::api("listing", too_large))),
        Answer::List(Ok(page(vec![], "12", None))),
        Answer::Watch(Ok(vec![Step::Hang])),
    ]);
    let queue = RecordingQueue::new();
    let r = reflector(&lw, &queue, list_watch_config());
    run_for(&r, secs(5)).await;
    let requests = lw.requests();
    assert_eq!(requests[2], list_req(Some("99"), None));
    assert_eq!(requests[3], list_req(None, Some(500)));
    assert_eq!(watch_rv(&requests[4]).as_deref(), Some("12"));
}

#[tokio::test(start_paused = true)]
async fn failed_lists_back_off_within_bounds_then_reset_after_two_healthy_minutes() {
    let mut answers = vec![];
    for _ in 0..7 {
        answers.push(Answer::List(Err(api_error(500, "InternalError"))));
    }
    answers.push(Answer::List(Ok(page(vec![], "10", None))));
    // A healthy watch for three minutes, then a refused re-watch.
    answers.push(Answer::Watch(Ok(vec![Step::Sleep(secs(180))])));
    answers.push(Answer::Watch(Err(refused())));
    answers.push(Answer::Watch(Ok(vec![Step::Hang])));
    let lw = ScriptedListerWatcher::new(answers);
    let queue = RecordingQueue::new();
    let r = reflector(&lw, &queue, list_watch_config());
    run_for(&r, secs(600)).await;
    let log = lw.log();
    let bounds = BackoffConfig::default();
    for n in 0..7 {
        let gap = log[n + 1].at - log[n].at;
        let (low, high) = bounds.delay_bounds(n as u32);
        assert!(
            low <= gap && gap <= high,
            "attempt {n}: {gap:?} not in [{low:?}, {high:?}]"
        );
        assert_eq!(log[n + 1].request, list_req(Some("0"), Some(500)));
    }
    assert_eq!(bounds.delay_bounds(6).1, secs(30));
    // After 3 healthy minutes the failure is the first of a new sequence: at most 800 ms.
    let gap = log[10].at - log[9].at;
    assert!(gap <= millis(800), "{gap:?}");
    assert_eq!(r.stats().counters.list_failures, 7);
}

#[tokio::test(start_paused = true)]
async fn client_go_jitter_and_exact_delays_without_jitter() {
    let lw = ScriptedListerWatcher::new(vec![
        Answer::List(Err(refused())),
        Answer::List(Err(refused())),
        Answer::List(Err(refused())),
        Answer::List(Ok(page(vec![], "10", None))),
        Answer::Watch(Ok(vec![Step::Hang])),
    ]);
    let queue = RecordingQueue::new();
    let config = ReflectorConfig {
        list_watch: informer::reflector::ListWatchConfig {
            backoff: BackoffConfig {
                jitter: Jitter::None,
                ..BackoffConfig::default()
            },
            ..list_watch_config().list_watch
        },
        ..list_watch_config()
    };
    let r = reflector(&lw, &queue, config);
    run_for(&r, secs(60)).await;
    let at: Vec<_> = lw.log().iter().map(|l| l.at).collect();
    assert_eq!(
        at[..4],
        [Duration::ZERO, millis(800), millis(2400), millis(5600)]
    );
}

#[tokio::test(start_paused = true)]
async fn short_empty_watch_backs_off() {
    let lw = ScriptedListerWatcher::new(vec![
        Answer::List(Ok(page(vec![], "10", None))),
        Answer::Watch(Ok(vec![])),
        Answer::Watch(Ok(vec![
            Step::Sleep(millis(500)),
            Step::event(bookmark("11")),
        ])),
        Answer::Watch(Ok(vec![Step::Hang])),
    ]);
    let queue = RecordingQueue::new();
    let config = ReflectorConfig {
        list_watch: informer::reflector::ListWatchConfig {
            backoff: BackoffConfig {
                jitter: Jitter::None,
                ..BackoffConfig::default()
            },
            ..list_watch_config().list_watch
        },
        ..list_watch_config()
    };
    let r = reflector(&lw, &queue, config);
    run_for(&r, secs(60)).await;
    let log = lw.log();
    // Empty and instant: a failure, 800 ms. Short but with an event: healthy, at once.
    assert_eq!(log[2].at, millis(800));
    assert_eq!(log[3].at, millis(1300));
    assert_eq!(watch_rv(&log[3].request).as_deref(), Some("11"));
    assert_eq!(
        r.stats()
            .counters
            .watch_restarts
            .get(RestartReason::TooShort),
        1
    );
}

#[tokio::test(start_paused = true)]
async fn streaming_list_replaces_atomically_and_continues_as_a_watch() {
    let lw = ScriptedListerWatcher::new(vec![
        Answer::Watch(Ok(vec![
            Step::added(obj("a", "5")),
            Step::added(obj("b", "6")),
            Step::added(obj("c", "7")),
            Step::deleted(obj("c", "7")),
            Step::event(bookmark("8")),
            Step::event(end_bookmark("9")),
            Step::modified(obj("a", "10")),
            Step::Sleep(secs(400)),
        ])),
        Answer::Watch(Ok(vec![Step::Hang])),
    ]);
    let queue = RecordingQueue::new();
    let config = ReflectorConfig {
        list_watch: informer::reflector::ListWatchConfig {
            watch_list: WatchListMode::On,
            ..list_watch_config().list_watch
        },
        ..list_watch_config()
    };
    let r = reflector(&lw, &queue, config);
    run_for(&r, secs(500)).await;
    let requests = lw.requests();
    let Request::Watch(stream) = &requests[0] else {
        panic!()
    };
    assert_eq!(
        stream,
        &WatchOptions {
            resource_version: None,
            resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
            allow_watch_bookmarks: true,
            send_initial_events: Some(true),
            timeout_seconds: stream.timeout_seconds,
            ..WatchOptions::default()
        }
    );
    assert_eq!(watch_rv(&requests[1]).as_deref(), Some("10"));
    assert!(is_watch(&requests[1]));
    assert_eq!(
        queue.ops(),
        vec![
            replace(&["ns/a@5", "ns/b@6"], "9"),
            Op::Update("ns/a".into(), "10".into()),
        ]
    );
    assert_eq!(r.stats().counters.lists, 1);
    assert_eq!(r.stats().counters.list_requests, 0);
}

#[tokio::test(start_paused = true)]
async fn streaming_ignored_falls_back_to_list_after_timeout() {
    let lw = ScriptedListerWatcher::new(vec![
        // An old server: plain ADDED events and no end bookmark.
        Answer::Watch(Ok(vec![Step::added(obj("a", "5")), Step::Hang])),
        Answer::List(Ok(page(vec![obj("a", "5")], "10", None))),
        Answer::Watch(Ok(vec![Step::event(WatchEvent::Error(Status::failure(
            410, "Expired", "",
        )))])),
        // The relist streams again (a fallback lasts one round) and meets the same server.
        Answer::Watch(Ok(vec![Step::added(obj("a", "5")), Step::Hang])),
        Answer::List(Ok(page(vec![obj("a", "5")], "11", None))),
        Answer::Watch(Ok(vec![Step::Hang])),
    ]);
    let queue = RecordingQueue::new();
    let config = ReflectorConfig {
        list_watch: informer::reflector::ListWatchConfig {
            watch_list: WatchListMode::On,
            initial_events_timeout: secs(20),
            ..list_watch_config().list_watch
        },
        ..list_watch_config()
    };
    let r = reflector(&lw, &queue, config);
    run_for(&r, secs(100)).await;
    let log = lw.log();
    assert_eq!(log[1].at, secs(20));
    assert_eq!(log[1].request, list_req(Some("0"), Some(500)));
    // Issue 10 (defect 3) changed the rule: a fallback no longer switches streaming off for
    // good, so the relist after 410 streams first, then falls back after the idle limit
    // to a list, unpaginated at its resourceVersion.
    assert!(
        matches!(&log[3].request, Request::Watch(w) if w.send_initial_events == Some(true)
            && w.resource_version.as_deref() == Some("10")),
        "{log:?}"
    );
    assert_eq!(log[4].at - log[3].at, secs(20));
    assert_eq!(log[4].request, list_req(Some("10"), None));
    assert_eq!(queue.ops()[0], replace(&["ns/a@5"], "10"));
    let stats = r.stats();
    assert!(!stats.streaming);
    assert_eq!(stats.counters.streaming_fallbacks, 2);
    assert_eq!(
        stats
            .counters
            .watch_restarts
            .get(RestartReason::InitialEventsTimeout),
        2
    );
}

#[tokio::test(start_paused = true)]
async fn streaming_refused_falls_back_to_list_at_once() {
    let lw = ScriptedListerWatcher::new(vec![
        Answer::Watch(Err(api_error(422, "Invalid"))),
        Answer::List(Ok(page(vec![obj("a", "5")], "10", None))),
        Answer::Watch(Ok(vec![Step::event(WatchEvent::Error(Status::failure(
            410, "Expired", "",
        )))])),
        // The relist after 410 streams first again.
        Answer::Watch(Err(api_error(422, "Invalid"))),
        Answer::List(Ok(page(vec![obj("a", "5")], "11", None))),
        Answer::Watch(Ok(vec![Step::Hang])),
    ]);
    let queue = RecordingQueue::new();
    let mut config = ReflectorConfig {
        list_watch: informer::reflector::ListWatchConfig {
            watch_list: WatchListMode::On,
            ..list_watch_config().list_watch
        },
        ..list_watch_config()
    };
    let seen = recording_handler(&mut config);
    let r = reflector(&lw, &queue, config);
    run_for(&r, secs(10)).await;
    let log = lw.log();
    assert_eq!(log[1].at, Duration::ZERO);
    assert_eq!(log[1].request, list_req(Some("0"), Some(500)));
    let seen = seen.lock();
    assert_eq!(
        (seen[0].0, seen[0].2),
        (Stage::StreamingList, Some(Then::List))
    );
    // An error is not a reason to give streaming up: the relist streamed first.
    assert!(
        matches!(&log[3].request, Request::Watch(w) if w.send_initial_events == Some(true)),
        "{log:?}"
    );
    // Issue 10 changed `stats().streaming` to mean "the last list was streamed".
    assert!(!r.stats().streaming);
}

#[tokio::test(start_paused = true)]
async fn relist_shares_unchanged_objects_with_the_store() {
    let stored_a = Arc::new(obj("a", "5"));
    let stored_b = Arc::new(obj("b", "6"));
    let known = Arc::new(Known(BTreeMap::from([
        ("ns/a".to_owned(), Arc::clone(&stored_a)),
        ("ns/b".to_owned(), Arc::clone(&stored_b)),
    ])));
    let lw = ScriptedListerWatcher::new(vec![
        Answer::List(Ok(page(vec![obj("a", "5")], "10", Some("t")))),
        Answer::List(Ok(page(vec![obj("b", "9"), obj("c", "8")], "10", None))),
        Answer::Watch(Ok(vec![Step::Hang])),
    ]);
    let queue = RecordingQueue::new();
    let transformed = Arc::new(Mutex::new(Vec::new()));
    let config = ReflectorConfig {
        transform: Some(Arc::new({
            let transformed = Arc::clone(&transformed);
            move |o: JsonObject| {
                transformed.lock().push(o.metadata.name.clone().unwrap());
                o.with_label("transformed", "yes")
            }
        })),
        ..list_watch_config()
    };
    let r = Arc::new(Reflector::new(
        lw.clone(),
        queue.clone(),
        Some(known),
        config,
    ));
    run_for(&r, secs(5)).await;
    let replaced = queue.replaced();
    let objects = &replaced[0];
    assert_eq!(objects.len(), 3);
    // Same resourceVersion: the stored allocation itself, never transformed again.
    assert!(Arc::ptr_eq(&objects[0], &stored_a));
    // Changed or new: a fresh, transformed object.
    assert!(!Arc::ptr_eq(&objects[1], &stored_b));
    assert_eq!(
        objects[1]
            .metadata
            .labels
            .get("transformed")
            .map(String::as_str),
        Some("yes")
    );
    assert_eq!(*transformed.lock(), vec!["b".to_owned(), "c".to_owned()]);
}

#[tokio::test(start_paused = true)]
async fn streaming_list_shares_unchanged_objects_too() {
    let stored_a = Arc::new(obj("a", "5"));
    let known = Arc::new(Known(BTreeMap::from([(
        "ns/a".to_owned(),
        Arc::clone(&stored_a),
    )])));
    let lw = ScriptedListerWatcher::new(vec![Answer::Watch(Ok(vec![
        Step::added(obj("a", "5")),
        Step::added(obj("b", "6")),
        Step::event(end_bookmark("9")),
        Step::Hang,
    ]))]);
    let queue = RecordingQueue::new();
    let config = ReflectorConfig {
        list_watch: informer::reflector::ListWatchConfig {
            watch_list: WatchListMode::On,
            ..list_watch_config().list_watch
        },
        ..list_watch_config()
    };
    let r = Arc::new(Reflector::new(
        lw.clone(),
        queue.clone(),
        Some(known),
        config,
    ));
    run_for(&r, secs(5)).await;
    let replaced = queue.replaced();
    let shared = replaced[0]
        .iter()
        .filter(|o| Arc::ptr_eq(o, &stored_a))
        .count();
    assert_eq!(shared, 1);
    assert_eq!(replaced[0].len(), 2);
}

#[tokio::test(start_paused = true)]
async fn resync_every_period_after_first_sync_never_asking_the_server() {
    let lw = ScriptedListerWatcher::new(vec![
        Answer::List(Err(refused())),
        Answer::List(Ok(page(vec![obj("a", "5")], "10", None))),
        Answer::Watch(Ok(vec![Step::Hang])),
    ]);
    let queue = RecordingQueue::new();
    let skip_next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let config = ReflectorConfig {
        list_watch: informer::reflector::ListWatchConfig {
            backoff: BackoffConfig {
                jitter: Jitter::None,
                ..BackoffConfig::default()
            },
            ..list_watch_config().list_watch
        },
        resync_period: Some(secs(30)),
        should_resync: Some(Arc::new({
            let calls = Arc::clone(&skip_next);
            // Skip the third resync.
            move || calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) != 2
        })),
        ..list_watch_config()
    };
    let r = reflector(&lw, &queue, config);
    run_for(&r, secs(130)).await;
    let resyncs: Vec<_> = queue
        .timed_ops()
        .into_iter()
        .filter(|(_, op)| *op == Op::Resync)
        .map(|(at, _)| at)
        .collect();
    // First sync at 0.8 s (after one failed list), then every 30 s but the skipped one.
    assert_eq!(
        resyncs,
        vec![millis(30_800), millis(60_800), millis(120_800)]
    );
    assert_eq!(r.stats().resyncs, 3);
    assert_eq!(lw.requests().len(), 3);
}

#[tokio::test(start_paused = true)]
async fn cancel_returns_and_a_new_run_relists_from_last_rv() {
    let lw = ScriptedListerWatcher::new(vec![
        Answer::List(Ok(page(vec![], "10", None))),
        Answer::Watch(Ok(vec![Step::modified(obj("a", "12")), Step::Hang])),
        Answer::List(Ok(page(vec![], "15", None))),
        Answer::Watch(Ok(vec![Step::Hang])),
    ]);
    let queue = RecordingQueue::new();
    let r = reflector(&lw, &queue, list_watch_config());
    run_for(&r, secs(5)).await;
    assert_eq!(r.last_synced_resource_version().as_deref(), Some("12"));
    // A second concurrent run only waits for its own token.
    let cancel = CancellationToken::new();
    let first = tokio::spawn({
        let r = Arc::clone(&r);
        let cancel = cancel.clone();
        async move { r.run(cancel).await }
    });
    tokio::time::sleep(secs(1)).await;
    assert!(r.is_running());
    let other = CancellationToken::new();
    other.cancel();
    r.run(other).await;
    tokio::time::sleep(secs(1)).await;
    cancel.cancel();
    first.await.unwrap();
    let requests = lw.requests();
    assert_eq!(requests[2], list_req(Some("12"), None));
    assert_eq!(requests.len(), 4);
    assert_eq!(r.stats().counters.relists, 1);
}

#[tokio::test(start_paused = true)]
async fn closed_queue_stops_the_reflector() {
    let lw = ScriptedListerWatcher::new(vec![
        Answer::List(Ok(page(vec![], "10", None))),
        Answer::Watch(Ok(vec![
            Step::Sleep(secs(1)),
            Step::added(obj("a", "11")),
            Step::Hang,
        ])),
    ]);
    let queue = RecordingQueue::new();
    let r = reflector(&lw, &queue, list_watch_config());
    let task = tokio::spawn({
        let r = Arc::clone(&r);
        async move { r.run(CancellationToken::new()).await }
    });
    tokio::time::sleep(millis(500)).await;
    informer_core::Queue::close(&*queue);
    // Returns by itself, without cancellation.
    task.await.unwrap();
    assert_eq!(queue.ops(), vec![replace(&[], "10")]);
}

#[tokio::test(start_paused = true)]
async fn a_panicking_error_handler_does_not_stop_the_reflector() {
    let lw = ScriptedListerWatcher::new(vec![
        Answer::List(Err(refused())),
        Answer::List(Ok(page(vec![], "10", None))),
        Answer::Watch(Ok(vec![Step::Hang])),
    ]);
    let queue = RecordingQueue::new();
    let config = ReflectorConfig {
        watch_error_handler: Some(Arc::new(|_: &Error, _: &FailureContext<'_>| {
            panic!("handler bug")
        })),
        ..list_watch_config()
    };
    let r = reflector(&lw, &queue, config);
    run_for(&r, secs(5)).await;
    assert!(r.has_synced());
}

#[tokio::test(start_paused = true)]
async fn selectors_go_on_every_request() {
    let lw = ScriptedListerWatcher::new(vec![
        Answer::List(Ok(page(vec![], "10", Some("t")))),
        Answer::List(Ok(page(vec![], "10", None))),
        Answer::Watch(Ok(vec![Step::Hang])),
    ]);
    let queue = RecordingQueue::new();
    let config = ReflectorConfig {
        list_watch: informer::reflector::ListWatchConfig {
            label_selector: Some("app=web".into()),
            field_selector: Some("metadata.name=x".into()),
            page_size: Some(2),
            ..list_watch_config().list_watch
        },
        ..list_watch_config()
    };
    let r = reflector(&lw, &queue, config);
    run_for(&r, secs(5)).await;
    for request in lw.requests() {
        let (label, field) = match &request {
            Request::List(l) => {
                assert_eq!(l.limit, Some(2));
                (l.label_selector.clone(), l.field_selector.clone())
            }
            Request::Watch(w) => (w.label_selector.clone(), w.field_selector.clone()),
        };
        assert_eq!(label.as_deref(), Some("app=web"));
        assert_eq!(field.as_deref(), Some("metadata.name=x"));
    }
}

#[tokio::test(start_paused = true)]
async fn same_seed_same_requests() {
    async fn timeline(seed: u64) -> Vec<Logged> {
        let lw = ScriptedListerWatcher::new(vec![
            Answer::List(Err(refused())),
            Answer::List(Err(refused())),
            Answer::List(Ok(page(vec![], "10", None))),
            Answer::Watch(Err(refused())),
            Answer::Watch(Ok(vec![Step::Hang])),
        ]);
        let queue = RecordingQueue::new();
        let r = reflector(
            &lw,
            &queue,
            ReflectorConfig {
                seed: Some(seed),
                ..list_watch_config()
            },
        );
        run_for(&r, secs(60)).await;
        lw.log()
    }
    let a = timeline(1).await;
    let b = timeline(1).await;
    let c = timeline(2).await;
    let key = |log: &[Logged]| -> Vec<(Duration, Request)> {
        log.iter().map(|l| (l.at, l.request.clone())).collect()
    };
    assert_eq!(key(&a), key(&b));
    assert_ne!(key(&a), key(&c));
}
