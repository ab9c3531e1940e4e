//! Fake API server: server-side sharded list and watch (KEP-5866) through the in-process
//! front end. Lists, continue pages, watches and streaming lists hold exactly the objects
//! whose FNV-1a 64 of `metadata.uid` (or `metadata.namespace`) lies in one of the ranges;
//! `||` joins ranges; lists echo the selector in its canonical form; malformed selectors are
//! a 400; with the feature off the parameter is ignored as by a server without the gate.
//!
//! The expected sets are computed here from the objects' uids with the hash's definition
//! (FNV-1a 64, offset basis 0xcbf29ce484222325, prime 0x100000001b3), not with the
//! server's code.

use std::collections::BTreeSet;

use fake_apiserver::{FakeApiServer, Query, ServerConfig};
use informer_core::shard::{ShardField, ShardRange, ShardSelector};
use informer_core::{ListOptions, ListPageInfo, ListerWatcher, Object, WatchEvent, WatchOptions};
use informer_testing::JsonObject;

use crate::support::{lw, next_event, pod};

/// 64-bit FNV-1a, written out from its definition.
fn fnv(text: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

#[test]
fn the_reference_hash_is_fnv1a_64() {
    // The published FNV-1a 64 test vectors.
    assert_eq!(fnv(""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv("a"), 0xaf63_dc4c_8601_ec8c);
    assert_eq!(fnv("foobar"), 0x8594_4171_f739_67e8);
}

/// 60 pods over three namespaces.
fn seeded() -> FakeApiServer {
    let server = FakeApiServer::new();
    for ns in ["a", "b", "c"] {
        for i in 0..20 {
            server.create("pods", &pod(ns, &format!("p{i}"))).unwrap();
        }
    }
    server
}

/// Every pod's key and uid.
fn all(server: &FakeApiServer) -> Vec<(String, String)> {
    server
        .objects("pods", None)
        .unwrap()
        .iter()
        .map(|o| (o.key().to_owned(), o.uid().to_owned()))
        .collect()
}

fn in_ranges(hash: u64, ranges: &[(u128, u128)]) -> bool {
    ranges
        .iter()
        .any(|(start, end)| *start <= u128::from(hash) && u128::from(hash) < *end)
}

fn keys(items: &[JsonObject]) -> BTreeSet<String> {
    items
        .iter()
        .map(|o| {
            format!(
                "{}/{}",
                o.object_namespace().unwrap(),
                o.object_name().unwrap()
            )
        })
        .collect()
}

async fn list(server: &FakeApiServer, options: ListOptions) -> (Vec<JsonObject>, ListPageInfo) {
    let mut items = Vec::new();
    let info = lw(server, None)
        .list_into(&options, &mut items)
        .await
        .unwrap();
    (items, info)
}

fn sharded(selector: &ShardSelector) -> ListOptions {
    ListOptions {
        shard_selector: Some(selector.clone()),
        ..ListOptions::default()
    }
}

#[tokio::test(start_paused = true)]
async fn lists_hold_the_objects_whose_uid_hash_is_in_range_and_echo_the_selector() {
    let server = seeded();
    let pods = all(&server);
    let mut union = BTreeSet::new();
    let mut total = 0;
    for rank in 0..4 {
        let selector = ShardSelector::even_split(ShardField::Uid, rank, 4).unwrap();
        let range = selector.ranges()[0];
        let (items, info) = list(&server, sharded(&selector)).await;
        let expected: BTreeSet<String> = pods
            .iter()
            .filter(|(_, uid)| in_ranges(fnv(uid), &[(range.start(), range.end())]))
            .map(|(key, _)| key.clone())
            .collect();
        assert_eq!(keys(&items), expected, "rank {rank}");
        assert_eq!(info.shard_info_selector, Some(selector.to_string()));
        total += items.len();
        union.extend(keys(&items));
    }
    // The four slices partition the pods.
    assert_eq!(total, pods.len());
    assert_eq!(union.len(), pods.len());
    // Without a selector: everything, no echo.
    let (items, info) = list(&server, ListOptions::default()).await;
    assert_eq!(items.len(), 60);
    assert_eq!(info.shard_info_selector, None);
}

#[tokio::test(start_paused = true)]
async fn ranges_joined_with_or_select_their_union_and_echo_canonically() {
    let server = seeded();
    let pods = all(&server);
    let target = server.target("pods", None).unwrap();
    // Ranks 0 and 2 of 4, written the way a person might: parentheses, double quotes,
    // spacing; the echo is the canonical form.
    let text = "( shardRange(object.metadata.uid, \"0x0000000000000000\", '0x4000000000000000') ) \
                ||shardRange(object.metadata.uid,'0x8000000000000000','0xc000000000000000')";
    let response = server
        .list(
            &target,
            &Query {
                shard_selector: Some(text.into()),
                ..Query::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        response.shard_info_selector.as_deref(),
        Some(
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x4000000000000000') || \
             shardRange(object.metadata.uid, '0x8000000000000000', '0xc000000000000000')"
        )
    );
    let got: BTreeSet<String> = response.items.iter().map(|o| o.key().to_owned()).collect();
    let ranges = [(0, 1 << 62), (1 << 63, 3 << 62)];
    let expected: BTreeSet<String> = pods
        .iter()
        .filter(|(_, uid)| in_ranges(fnv(uid), &ranges))
        .map(|(key, _)| key.clone())
        .collect();
    assert_eq!(got, expected);
    assert!(!got.is_empty() && got.len() < pods.len());
    // Overlapping ranges select each object once; the whole space selects everything.
    let whole = ShardSelector::new(
        ShardField::Uid,
        [ShardRange::ALL, ShardRange::even_split(0, 2).unwrap()],
    )
    .unwrap();
    let (items, _) = list(&server, sharded(&whole)).await;
    assert_eq!(items.len(), 60);
}

#[tokio::test(start_paused = true)]
async fn namespace_shards_keep_each_namespace_whole() {
    let server = seeded();
    let mut seen = BTreeSet::new();
    for rank in 0..2 {
        let selector = ShardSelector::even_split(ShardField::Namespace, rank, 2).unwrap();
        let range = selector.ranges()[0];
        let (items, info) = list(&server, sharded(&selector)).await;
        assert_eq!(info.shard_info_selector, Some(selector.to_string()));
        let namespaces: BTreeSet<&str> = items
            .iter()
            .map(|o| o.object_namespace().unwrap())
            .collect();
        for ns in ["a", "b", "c"] {
            let mine = in_ranges(fnv(ns), &[(range.start(), range.end())]);
            assert_eq!(namespaces.contains(ns), mine, "namespace {ns}, rank {rank}");
            if mine {
                let whole = items
                    .iter()
                    .filter(|o| o.object_namespace() == Some(ns))
                    .count();
                assert_eq!(whole, 20);
                seen.insert(ns);
            }
        }
    }
    assert_eq!(seen.len(), 3);
    // Cluster-scoped objects hash the empty namespace: all in the slice holding fnv("").
    let nodes = FakeApiServer::new();
    for i in 0..5 {
        nodes
            .create("nodes", &JsonObject::new(None, &format!("n{i}")))
            .unwrap();
    }
    let lw = nodes.lister_watcher::<JsonObject>("nodes", None).unwrap();
    for rank in 0..2 {
        let selector = ShardSelector::even_split(ShardField::Namespace, rank, 2).unwrap();
        let page = lw.list(&sharded(&selector)).await.unwrap();
        let expected = if selector.contains_hash(fnv("")) {
            5
        } else {
            0
        };
        assert_eq!(page.items.len(), expected);
    }
}

#[tokio::test(start_paused = true)]
async fn pages_keep_the_selector_and_leave_out_the_remaining_count() {
    let server = seeded();
    let selector = ShardSelector::even_split(ShardField::Uid, 1, 2).unwrap();
    let (whole, _) = list(&server, sharded(&selector)).await;
    let mut options = ListOptions {
        limit: Some(7),
        ..sharded(&selector)
    };
    let mut paged = Vec::new();
    loop {
        let (items, info) = list(&server, options.clone()).await;
        assert!(items.len() <= 7);
        assert_eq!(info.shard_info_selector, Some(selector.to_string()));
        assert_eq!(info.remaining_item_count, None);
        paged.extend(items);
        match info.continue_token {
            Some(token) => options.continue_token = Some(token),
            None => break,
        }
    }
    assert_eq!(keys(&paged), keys(&whole));
    assert_eq!(paged.len(), whole.len());
}

#[tokio::test(start_paused = true)]
async fn watches_deliver_only_the_events_of_the_shard() {
    let server = seeded();
    let selector = ShardSelector::even_split(ShardField::Uid, 0, 2).unwrap();
    let range = selector.ranges()[0];
    let mine = |uid: &str| in_ranges(fnv(uid), &[(range.start(), range.end())]);
    let from = server.resource_version();
    let mut watch = lw(&server, None)
        .watch(&WatchOptions {
            resource_version: Some(from.to_string()),
            allow_watch_bookmarks: true,
            shard_selector: Some(selector.clone()),
            ..WatchOptions::default()
        })
        .await
        .unwrap();
    // Writes to objects in and out of the shard: creates, updates, deletes.
    let mut expected = Vec::new();
    for i in 0..30 {
        let created = server.create("pods", &pod("d", &format!("w{i}"))).unwrap();
        if mine(created.uid()) {
            expected.push(("ADDED", created.key().to_owned()));
        }
    }
    for (key, uid) in all(&server).into_iter().take(20) {
        let (ns, name) = key.split_once('/').unwrap();
        server
            .patch(
                "pods",
                Some(ns),
                name,
                &serde_json::json!({"metadata": {"labels": {"touched": "yes"}}}),
            )
            .unwrap();
        if mine(&uid) {
            expected.push(("MODIFIED", key.clone()));
        }
        server.delete("pods", Some(ns), name).unwrap();
        if mine(&uid) {
            expected.push(("DELETED", key));
        }
    }
    assert!(
        expected.len() > 10,
        "too few events in the shard: {expected:?}"
    );
    let mut got = Vec::new();
    while got.len() < expected.len() {
        let event = next_event(&mut watch).await;
        let kind = event.type_name();
        let (WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o)) = event
        else {
            panic!("unexpected {kind}");
        };
        assert!(
            mine(o.object_uid().unwrap()),
            "{kind} of an object outside the shard"
        );
        got.push((
            kind,
            format!(
                "{}/{}",
                o.object_namespace().unwrap(),
                o.object_name().unwrap()
            ),
        ));
    }
    assert_eq!(got, expected);
    // Nothing else is pending: a bookmark comes next, no stray object event.
    assert_eq!(server.send_bookmark("pods"), 1);
    let after = next_event(&mut watch).await;
    assert!(matches!(after, WatchEvent::Bookmark(_)), "{after:?}");
}

#[tokio::test(start_paused = true)]
async fn streaming_lists_send_only_the_shard_then_its_changes() {
    let server = seeded();
    let selector = ShardSelector::even_split(ShardField::Uid, 1, 3).unwrap();
    let (listed, _) = list(&server, sharded(&selector)).await;
    let mut watch = lw(&server, None)
        .watch(&WatchOptions {
            send_initial_events: Some(true),
            resource_version_match: Some(informer_core::ResourceVersionMatch::NotOlderThan),
            allow_watch_bookmarks: true,
            shard_selector: Some(selector.clone()),
            ..WatchOptions::default()
        })
        .await
        .unwrap();
    let mut initial = Vec::new();
    loop {
        match next_event(&mut watch).await {
            WatchEvent::Added(o) => initial.push(o),
            WatchEvent::Bookmark(b) if b.initial_events_end => break,
            WatchEvent::Bookmark(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(keys(&initial), keys(&listed));
    // Then only the shard's changes.
    let mut in_shard = None;
    for i in 0..20 {
        let created = server.create("pods", &pod("e", &format!("s{i}"))).unwrap();
        if selector.matches_value(created.uid()) {
            in_shard = Some(created.key().to_owned());
            break;
        }
    }
    let in_shard = in_shard.expect("one of 20 new pods falls in a third of the space");
    match next_event(&mut watch).await {
        WatchEvent::Added(o) => assert_eq!(
            format!(
                "{}/{}",
                o.object_namespace().unwrap(),
                o.object_name().unwrap()
            ),
            in_shard
        ),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn malformed_selectors_are_refused_with_400() {
    let server = seeded();
    let target = server.target("pods", None).unwrap();
    for text in [
        "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
        "shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')",
        "shardRange(object.metadata.uid, '0x8000000000000000', '0x0000000000000000')",
        "shardRange(object.metadata.uid, '0x0000000000000000')",
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') && true",
        "   ",
        "nonsense",
    ] {
        let query = Query {
            shard_selector: Some(text.into()),
            ..Query::default()
        };
        let list = server.list(&target, &query).await.unwrap_err();
        assert_eq!(
            (list.code, list.reason.as_str()),
            (400, "BadRequest"),
            "{text}"
        );
        assert!(
            list.message.starts_with("invalid shardSelector"),
            "{}",
            list.message
        );
        let watch = server.watch(&target, &query).await.unwrap_err();
        assert_eq!(watch.code, 400, "{text}");
    }
    let short = server
        .list(
            &target,
            &Query {
                shard_selector: Some(
                    "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')".into(),
                ),
                ..Query::default()
            },
        )
        .await
        .unwrap_err();
    // The server's reason: short bounds are not padded, it asks for 16 digits.
    assert!(
        short.message.contains("0x0000000000000000"),
        "{}",
        short.message
    );
}

#[tokio::test(start_paused = true)]
async fn without_the_feature_the_selector_is_ignored_like_an_older_server() {
    let server = FakeApiServer::with_config(ServerConfig {
        sharded_list_and_watch: false,
        ..ServerConfig::default()
    });
    for i in 0..10 {
        server.create("pods", &pod("a", &format!("p{i}"))).unwrap();
    }
    assert!(!server.sharded_list_and_watch());
    let selector = ShardSelector::even_split(ShardField::Uid, 0, 4).unwrap();
    let (items, info) = list(&server, sharded(&selector)).await;
    assert_eq!(items.len(), 10);
    assert_eq!(info.shard_info_selector, None);
    // A malformed one is no error either: the parameter means nothing.
    let target = server.target("pods", None).unwrap();
    let query = Query {
        shard_selector: Some("nonsense".into()),
        ..Query::default()
    };
    assert_eq!(server.list(&target, &query).await.unwrap().items.len(), 10);
    // Watches too: every event.
    let mut watch = lw(&server, None)
        .watch(&WatchOptions {
            resource_version: Some(server.resource_version().to_string()),
            shard_selector: Some(selector.clone()),
            ..WatchOptions::default()
        })
        .await
        .unwrap();
    for i in 0..5 {
        server.create("pods", &pod("a", &format!("n{i}"))).unwrap();
    }
    for _ in 0..5 {
        assert!(matches!(next_event(&mut watch).await, WatchEvent::Added(_)));
    }
    // The request log keeps the parameter in its place.
    let last = server.requests().pop().unwrap();
    assert_eq!(
        last.param("shardSelector"),
        Some(selector.to_string().as_str())
    );
    // Switched on at run time: the next list is filtered.
    server.set_sharded_list_and_watch(true);
    let (items, info) = list(&server, sharded(&selector)).await;
    assert!(items.len() < 15);
    assert_eq!(info.shard_info_selector, Some(selector.to_string()));
}
