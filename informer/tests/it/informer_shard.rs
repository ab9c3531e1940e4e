//! Sharded informers on the in-process fake API server, in virtual time: an informer with a
//! shard selector holds exactly its slice of the hash space whether the server filters
//! (its lists echo `shardInfo`) or not (the informer filters after decode), says which
//! once, and a change of shard at run time relists with the new selector: deletes for the
//! objects no longer owned, adds for the new ones, and for the objects it keeps nothing lost
//! and nothing invented (checked by the convergence checker while writes go on).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use fake_apiserver::{FakeApiServer, ServerConfig, StoredObject};
use informer::reflector::{ListWatchConfig, ShardStats, WatchListMode};
use informer::shard::{ShardField, ShardFiltering, ShardRange, ShardSelector};
use informer::{InformerConfig, QueueChoice, SharedIndexInformer};
use informer_testing::JsonObject;
use informer_testing::convergence::{
    CheckOptions, CheckSummary, Expected, Recording, check_convergence,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::informer_support::*;
use crate::support::{GUARD, set_scoped_subscriber};

fn server(sharding: bool) -> FakeApiServer {
    FakeApiServer::with_config(ServerConfig {
        sharded_list_and_watch: sharding,
        ..ServerConfig::default()
    })
}

fn seed(server: &FakeApiServer, n: usize) {
    for i in 0..n {
        server.create(RESOURCE, &cm(&format!("cm-{i:03}"))).unwrap();
    }
}

fn range(start: u128, end: u128) -> ShardSelector {
    ShardSelector::new(ShardField::Uid, [ShardRange::new(start, end).unwrap()]).unwrap()
}

const Q: u128 = 1 << 62;

/// The server's objects in `selector` (`None`: all).
fn objects_in(server: &FakeApiServer, selector: Option<&ShardSelector>) -> Vec<Arc<StoredObject>> {
    let mut objects = server.objects(RESOURCE, Some(NS)).unwrap();
    objects.retain(|o| selector.is_none_or(|s| s.matches_value(o.uid())));
    objects
}

/// The keys of the server's objects in `selector`.
fn owned(server: &FakeApiServer, selector: Option<&ShardSelector>) -> BTreeSet<String> {
    objects_in(server, selector)
        .iter()
        .map(|o| format!("{NS}/{}", o.name()))
        .collect()
}

fn cached(informer: &SharedIndexInformer<JsonObject>) -> BTreeSet<String> {
    cache_state(informer).into_keys().collect()
}

fn shard_stats(informer: &SharedIndexInformer<JsonObject>) -> ShardStats {
    informer.stats().reflector.unwrap().shard
}

fn config(
    selector: Option<ShardSelector>,
    watch_list: WatchListMode,
) -> InformerConfig<JsonObject> {
    InformerConfig {
        list_watch: ListWatchConfig {
            watch_list,
            shard_selector: selector,
            ..ListWatchConfig::default()
        },
        ..InformerConfig::default()
    }
}

/// Waits (in virtual time) until the informer has caught up with the server: its last
/// resourceVersion is the server's, the queue is empty, every handler has handled its
/// buffer, and the last list was made with the selector in effect.
async fn quiet(server: &FakeApiServer, informer: &SharedIndexInformer<JsonObject>) {
    tokio::time::timeout(GUARD, async {
        loop {
            let stats = informer.stats();
            let caught_up = informer
                .last_synced_resource_version()
                .and_then(|rv| rv.parse::<u64>().ok())
                .is_some_and(|rv| rv >= server.resource_version());
            let shard = &stats.reflector.as_ref().unwrap().shard;
            if caught_up
                && stats.queued == 0
                && shard.listed_selector == shard.selector
                && informer.registrations().iter().all(|r| r.pending() == 0)
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the informer never caught up");
}

#[tokio::test(start_paused = true)]
async fn a_sharded_informer_holds_its_shard_and_tells_who_filtered() {
    let selector = ShardSelector::even_split(ShardField::Uid, 1, 3).unwrap();
    for (sharding, watch_list, mode) in [
        (true, WatchListMode::Off, ShardFiltering::Server),
        // Streaming lists carry no echo, and nothing outside the shard arrives.
        (true, WatchListMode::On, ShardFiltering::Unconfirmed),
        (false, WatchListMode::Off, ShardFiltering::Client),
        // No echo to read, but objects outside the shard arrive: the server sent everything.
        (false, WatchListMode::On, ShardFiltering::Client),
    ] {
        let case = format!("server sharding {sharding}, {watch_list:?}");
        let server = server(sharding);
        seed(&server, 90);
        let informer = informer(&server, config(Some(selector.clone()), watch_list));
        let log = Log::default();
        informer.add_handler(log.handler()).unwrap();
        let running = Running::start(&informer);
        running.synced(&server).await;
        let expected = owned(&server, Some(&selector));
        assert!(!expected.is_empty() && expected.len() < 90, "{case}");
        assert_eq!(cached(&informer), expected, "{case}");
        let stats = shard_stats(&informer);
        assert_eq!(stats.filtering, mode, "{case}");
        assert_eq!(stats.selector.as_ref(), Some(&selector), "{case}");
        assert_eq!(stats.listed_selector.as_ref(), Some(&selector), "{case}");
        assert_eq!(stats.dropped == 0, sharding, "{case}: {stats:?}");
        // Live changes: only the shard's reach the handlers.
        let before = log.len();
        let mut in_shard = 0;
        for i in 0..30 {
            let o = server
                .create(RESOURCE, &cm(&format!("new-{i:02}")))
                .unwrap();
            in_shard += usize::from(selector.matches_value(o.uid()));
        }
        quiet(&server, &informer).await;
        assert_eq!(log.len() - before, in_shard, "{case}");
        assert_eq!(cached(&informer), owned(&server, Some(&selector)), "{case}");
        running.stop().await;
    }
}

#[tokio::test(start_paused = true)]
async fn client_side_filtering_is_said_once() {
    let captured = Arc::new(parking_lot::Mutex::new(Vec::<u8>::new()));
    let writer = Arc::clone(&captured);
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || Sink(Arc::clone(&writer)))
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .finish();
    let _default = set_scoped_subscriber(subscriber);

    let server = server(false);
    seed(&server, 40);
    let selector = ShardSelector::even_split(ShardField::Uid, 0, 2).unwrap();
    let informer = informer(&server, config(Some(selector), WatchListMode::Off));
    let running = Running::start(&informer);
    running.synced(&server).await;
    // Three relists (410 after a compaction), each with a list answered without the echo.
    let lists = || informer.stats().reflector.unwrap().counters.lists;
    for i in 0..3 {
        let before = lists();
        server.create(RESOURCE, &cm(&format!("poke-{i}"))).unwrap();
        server.compact_all();
        running.watching(&server).await;
        assert_eq!(server.faults().expire_watches(RESOURCE), 1);
        tokio::time::timeout(GUARD, async {
            while lists() == before {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("no relist after the 410");
    }
    quiet(&server, &informer).await;
    assert_eq!(lists(), 4);
    running.stop().await;
    let text = String::from_utf8(captured.lock().clone()).unwrap();
    let said = text
        .lines()
        .filter(|l| l.contains("does not apply the shard selector"))
        .count();
    assert_eq!(said, 1, "{text}");
    assert!(text.contains("WARN"), "{text}");
}

/// A `Write` into a shared buffer.
struct Sink(Arc<parking_lot::Mutex<Vec<u8>>>);

impl std::io::Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The convergence checker's verdict on the informer's cache and `recording`'s handler
/// against the server's objects in `selector`.
fn converged(
    server: &FakeApiServer,
    informer: &SharedIndexInformer<JsonObject>,
    selector: &ShardSelector,
    recording: &Recording<JsonObject>,
) -> Result<CheckSummary, String> {
    let live: Vec<JsonObject> = objects_in(server, Some(selector))
        .iter()
        .map(|o| o.decode().unwrap())
        .collect();
    let expected = Expected::from_objects(&live).unwrap();
    let store = informer.lister().list_all();
    check_convergence(&expected, &store, &[recording], &CheckOptions::default())
        .map_err(|report| report.to_string())
}

/// Random writes to the server for `duration` of virtual time, one every 5 ms: updates of
/// existing objects (most), creates and deletes. Returns the deletions' final objects.
async fn churn(server: FakeApiServer, duration: Duration, seed: u64) -> Vec<JsonObject> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut deleted = Vec::new();
    let until = tokio::time::Instant::now() + duration;
    let mut n = 0;
    while tokio::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(5)).await;
        let objects = server.objects(RESOURCE, Some(NS)).unwrap();
        let pick = &objects[rng.random_range(0..objects.len())];
        match rng.random_range(0..10) {
            0 => {
                n += 1;
                server
                    .create(RESOURCE, &cm(&format!("churn-{seed}-{n}")))
                    .unwrap();
            }
            1 if objects.len() > 10 => {
                if let Ok(outcome) = server.delete(RESOURCE, Some(NS), pick.name()) {
                    deleted.push(outcome.object().decode::<JsonObject>().unwrap());
                }
            }
            _ => {
                let patch = serde_json::json!({"metadata": {"labels": {"n": rng.random_range(0..1_000_000u32).to_string()}}});
                server
                    .patch(RESOURCE, Some(NS), pick.name(), &patch)
                    .unwrap();
            }
        }
    }
    deleted
}

#[tokio::test(start_paused = true)]
async fn a_shard_change_moves_objects_and_keeps_every_event_of_the_rest() {
    // [0, 1/2) → [1/4, 3/4): [0, 1/4) is handed away, [1/2, 3/4) taken, [1/4, 1/2) kept.
    let (old, new) = (range(0, 2 * Q), range(Q, 3 * Q));
    let kept = range(Q, 2 * Q);
    for sharding in [true, false] {
        for (queue, watch_list) in [
            ("DeltaFifo", WatchListMode::On),
            ("DeltaFifo", WatchListMode::Off),
            ("InOrderFifo", WatchListMode::On),
        ] {
            let case = format!("server sharding {sharding}, {queue}, {watch_list:?}");
            let server = server(sharding);
            seed(&server, 160);
            let mut cfg = config(Some(old.clone()), watch_list);
            if queue == "InOrderFifo" {
                cfg.queue = QueueChoice::in_order();
            }
            let informer = informer(&server, cfg);
            let recording = Recording::new("h");
            informer.add_handler(recording.handler()).unwrap();
            let log = Log::default();
            informer.add_handler(log.handler()).unwrap();
            let running = Running::start(&informer);
            running.synced(&server).await;
            assert_eq!(cached(&informer), owned(&server, Some(&old)), "{case}");
            let kept_before: BTreeSet<String> = objects_in(&server, Some(&kept))
                .iter()
                .map(|o| o.uid().to_owned())
                .collect();

            // Writes go on while the shard changes.
            let writes = tokio::spawn(churn(server.clone(), Duration::from_secs(3), 11));
            tokio::time::sleep(Duration::from_millis(1500)).await;
            let changes = informer.stats().reflector.unwrap().counters.shard_changes;
            informer.set_shard_selector(Some(new.clone())).unwrap();
            assert_eq!(informer.shard_selector(), Some(new.clone()));
            let deleted = writes.await.unwrap();
            quiet(&server, &informer).await;

            let stats = informer.stats().reflector.unwrap();
            assert_eq!(stats.counters.shard_changes, changes + 1, "{case}");
            assert_eq!(stats.shard.listed_selector.as_ref(), Some(&new), "{case}");
            assert_eq!(cached(&informer), owned(&server, Some(&new)), "{case}");

            // The cache and the handler against the server's objects in the new shard; the
            // objects of [0, 1/4) that still exist count as gone for the handler (each must
            // have been deleted exactly once), the kept ones must never have been deleted or
            // added twice, and no update may go back in time.
            let summary = converged(&server, &informer, &new, &recording)
                .unwrap_or_else(|report| panic!("{case}: {report}"));
            assert!(summary.handlers[0].updates > 0, "{case}: no update seen");

            // Kept objects: one add each (the initial one), no delete unless the server
            // deleted them.
            let seen = log.seen();
            let server_deleted: BTreeSet<String> = deleted
                .iter()
                .map(|o| informer::Object::object_uid(o).unwrap().to_owned())
                .collect();
            for uid in &kept_before {
                let adds = seen
                    .iter()
                    .filter(|s| matches!(s, Seen::Add { uid: u, .. } if u == uid))
                    .count();
                assert_eq!(adds, 1, "{case}: {uid} added {adds} times");
                let deletes = seen
                    .iter()
                    .filter(|s| matches!(s, Seen::Delete { uid: u, .. } if u == uid))
                    .count();
                assert_eq!(
                    deletes,
                    usize::from(server_deleted.contains(uid)),
                    "{case}: {uid} deleted {deletes} times"
                );
            }
            // Objects handed away got a tombstone; the new ones a non-initial add.
            let handed_away = seen
                .iter()
                .filter(|s| {
                    matches!(
                        s,
                        Seen::Delete {
                            tombstone: true,
                            ..
                        }
                    )
                })
                .count();
            assert!(handed_away > 10, "{case}: {handed_away} tombstones");
            running.stop().await;
        }
    }
}

#[tokio::test(start_paused = true)]
async fn setting_the_same_selector_does_nothing_and_none_takes_everything() {
    let server = server(true);
    seed(&server, 50);
    let half = ShardSelector::even_split(ShardField::Uid, 0, 2).unwrap();
    let informer = informer(&server, config(None, WatchListMode::On));
    // Before the start: the config takes it.
    informer.set_shard_selector(Some(half.clone())).unwrap();
    let running = Running::start(&informer);
    running.synced(&server).await;
    assert_eq!(cached(&informer), owned(&server, Some(&half)));
    let lists = informer.stats().reflector.unwrap().counters.lists;
    informer.set_shard_selector(Some(half.clone())).unwrap();
    server.create(RESOURCE, &cm("after")).unwrap();
    quiet(&server, &informer).await;
    let stats = informer.stats().reflector.unwrap();
    assert_eq!(stats.counters.lists, lists);
    assert_eq!(stats.counters.shard_changes, 0);
    // None: the whole resource again.
    informer.set_shard_selector(None).unwrap();
    quiet(&server, &informer).await;
    assert_eq!(cached(&informer), owned(&server, None));
    assert_eq!(shard_stats(&informer).filtering, ShardFiltering::Off);
    running.stop().await;
    // Stopped: refused.
    assert!(informer.set_shard_selector(Some(half)).is_err());
}

/// An informer holding `selector` of 120 objects on a server that filters, running and
/// synced, with the number of lists it made.
async fn synced_on(
    selector: &ShardSelector,
    watch_list: WatchListMode,
) -> (FakeApiServer, SharedIndexInformer<JsonObject>, Running, u64) {
    let server = server(true);
    seed(&server, 120);
    let informer = informer(&server, config(Some(selector.clone()), watch_list));
    let running = Running::start(&informer);
    running.synced(&server).await;
    assert_eq!(cached(&informer), owned(&server, Some(selector)));
    let lists = informer.stats().reflector.unwrap().counters.lists;
    (server, informer, running, lists)
}

/// A handover ending narrows the selector while the list for the range just gained is in
/// progress: that list completes (the gained objects are in the cache when it ends, not a
/// whole list later) and the narrower list follows; two lists in all. The same when a
/// replica leaving grows the selector; a disjoint selector interrupts the list.
#[tokio::test(start_paused = true)]
async fn a_narrowing_waits_for_the_list_in_progress() {
    let (old, grown, new) = (range(0, Q), range(0, 2 * Q), range(Q, 2 * Q));
    let (server, informer, running, lists) = synced_on(&old, WatchListMode::Off).await;
    server
        .faults()
        .delay_lists(RESOURCE, Some(Duration::from_secs(1)));
    // Gains [Q, 2Q) and keeps [0, Q) during the handover...
    informer.set_shard_selector(Some(grown.clone())).unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    // ...which ends while that list is in progress.
    informer.set_shard_selector(Some(new.clone())).unwrap();
    tokio::time::sleep(Duration::from_millis(1200)).await;
    // The grown list has completed (1 s); the narrower one is in progress (until 2 s). A
    // restarted list would have completed at 1.3 s with only [Q, 2Q).
    assert_eq!(cached(&informer), owned(&server, Some(&grown)));
    assert!(!owned(&server, Some(&new)).is_empty() && !owned(&server, Some(&old)).is_empty());
    quiet(&server, &informer).await;
    assert_eq!(cached(&informer), owned(&server, Some(&new)));
    let stats = informer.stats().reflector.unwrap();
    assert_eq!(stats.counters.lists - lists, 2, "{stats:?}");
    assert_eq!(stats.shard.listed_selector.as_ref(), Some(&new));
    // A replica leaving during the list of a range gained grows the selector: that list
    // completes too, and the grown one follows.
    let (gained, all) = (range(Q, 3 * Q), range(0, 4 * Q));
    let lists = informer.stats().reflector.unwrap().counters.lists;
    informer.set_shard_selector(Some(gained.clone())).unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    informer.set_shard_selector(Some(all.clone())).unwrap();
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(cached(&informer), owned(&server, Some(&gained)));
    quiet(&server, &informer).await;
    assert_eq!(cached(&informer), owned(&server, Some(&all)));
    assert_eq!(
        informer.stats().reflector.unwrap().counters.lists - lists,
        2
    );
    // A selector disjoint from the list in progress interrupts it.
    informer.set_shard_selector(Some(new.clone())).unwrap();
    quiet(&server, &informer).await;
    informer.set_shard_selector(Some(grown.clone())).unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let elsewhere = range(2 * Q, 3 * Q);
    informer
        .set_shard_selector(Some(elsewhere.clone()))
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(cached(&informer), owned(&server, Some(&elsewhere)));
    running.stop().await;
}

/// The same with streaming lists: a narrowing while the streaming list of a range just
/// gained is in progress waits for its end bookmark (the gained objects are in the cache
/// when it is replaced, not a whole list later), then the narrower list follows; a selector
/// disjoint from the streaming list in progress interrupts it.
#[tokio::test(start_paused = true)]
async fn a_narrowing_waits_for_the_streaming_list_in_progress() {
    let (old, grown, new) = (range(0, Q), range(0, 2 * Q), range(Q, 2 * Q));
    let (server, informer, running, lists) = synced_on(&old, WatchListMode::On).await;
    // Every watch event, initial ones included, takes `step` of virtual time: a streaming
    // list of `n` objects takes about `n` steps.
    let step = Duration::from_millis(20);
    let (gained, kept) = (
        owned(&server, Some(&grown)).len() as u32,
        owned(&server, Some(&new)).len() as u32,
    );
    server.faults().delay_watch_events(RESOURCE, Some(step));
    informer.set_shard_selector(Some(grown.clone())).unwrap();
    let handover_ends = Duration::from_millis(300);
    tokio::time::sleep(handover_ends).await;
    informer.set_shard_selector(Some(new.clone())).unwrap();
    // Halfway through the narrower list, which follows the grown one. Restarted at the
    // handover's end, the narrower list would have completed long before.
    let halfway = step * (gained + kept / 2) - handover_ends;
    assert!(handover_ends + step * (kept + 2) < halfway + handover_ends);
    tokio::time::sleep(halfway).await;
    assert_eq!(cached(&informer), owned(&server, Some(&grown)));
    server.faults().delay_watch_events(RESOURCE, None);
    quiet(&server, &informer).await;
    assert_eq!(cached(&informer), owned(&server, Some(&new)));
    let stats = informer.stats().reflector.unwrap();
    assert_eq!(stats.counters.lists - lists, 2, "{stats:?}");
    assert_eq!(stats.shard.listed_selector.as_ref(), Some(&new));
    // A selector disjoint from the streaming list in progress interrupts it.
    server.faults().delay_watch_events(RESOURCE, Some(step));
    informer.set_shard_selector(Some(grown.clone())).unwrap();
    tokio::time::sleep(handover_ends).await;
    let elsewhere = range(2 * Q, 3 * Q);
    informer
        .set_shard_selector(Some(elsewhere.clone()))
        .unwrap();
    let elsewhere_len = owned(&server, Some(&elsewhere)).len() as u32;
    tokio::time::sleep(step * (elsewhere_len + 5)).await;
    assert_eq!(cached(&informer), owned(&server, Some(&elsewhere)));
    running.stop().await;
}

/// Selector changes coming faster than a streaming list takes, while writes go on: every
/// overlapping change waits for the list in progress, so lists keep completing, and once the
/// changes stop the cache and a handler converge on the last shard's objects.
#[tokio::test(start_paused = true)]
async fn streaming_lists_complete_under_changes_faster_than_a_list() {
    // Four complete in virtual time (some changes interrupt by the rule: the list in
    // progress would drop cached objects the new selector keeps); when every change
    // interrupted, none did.
    changes_faster_than_a_list(3).await;
}

/// The same in real time on two worker threads (the reflector, the processing loop, the
/// fake server and the writes in parallel), bounded to a minute.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_lists_complete_under_changes_faster_than_a_list_in_real_time() {
    tokio::time::timeout(Duration::from_secs(60), changes_faster_than_a_list(1))
        .await
        .expect("the scenario took over a minute");
}

/// Changes the selector of a streaming, sharded informer every 0.1 s for 3 s over four
/// overlapping selectors while writes go on; requires at least `min_completed` lists to
/// complete meanwhile, then convergence.
async fn changes_faster_than_a_list(min_completed: u64) {
    let server = server(true);
    seed(&server, 120);
    let selectors = [
        range(0, 2 * Q),
        range(Q, 3 * Q),
        range(0, 3 * Q),
        range(Q, 2 * Q),
    ];
    let informer = informer(
        &server,
        config(Some(selectors[0].clone()), WatchListMode::On),
    );
    let recording = Recording::new("h");
    informer.add_handler(recording.handler()).unwrap();
    let running = Running::start(&informer);
    running.synced(&server).await;
    let lists = informer.stats().reflector.unwrap().counters.lists;
    // A streaming list of 60-90 objects takes 0.3-0.5 s (more with the writes' events); the
    // selector changes every 0.1 s.
    server
        .faults()
        .delay_watch_events(RESOURCE, Some(Duration::from_millis(5)));
    let writes = tokio::spawn(churn(server.clone(), Duration::from_secs(3), 7));
    for i in 0..30 {
        informer
            .set_shard_selector(Some(selectors[(i + 1) % selectors.len()].clone()))
            .unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let completed = informer.stats().reflector.unwrap().counters.lists - lists;
    assert!(
        completed >= min_completed,
        "only {completed} lists completed in 3 s"
    );
    writes.await.unwrap();
    server.faults().delay_watch_events(RESOURCE, None);
    // Caught up once the last shard's list is in and the cache and the handler agree with
    // the server's objects of that shard. (Not `quiet`: the informer's resourceVersion may
    // stay behind the server's, the last writes being outside its shard, until the server's
    // next bookmark, which in real time can be a minute away.)
    let last = informer.shard_selector().unwrap();
    let settled = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let stats = informer.stats();
            let shard = &stats.reflector.as_ref().unwrap().shard;
            if stats.queued == 0
                && shard.listed_selector == shard.selector
                && converged(&server, &informer, &last, &recording).is_ok()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    if settled.is_err() {
        let report = converged(&server, &informer, &last, &recording).err();
        panic!("not converged 30 s after the changes: {report:?}");
    }
    assert_eq!(cached(&informer), owned(&server, Some(&last)));
    running.stop().await;
}
