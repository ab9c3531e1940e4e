//! Shard selectors over HTTP through kube-client: `KubeListerWatcher` sends the
//! `shardSelector` of list and watch options in its canonical form, reports the server's echo
//! (`metadata.shardInfo.selector`) or its absence, and the even split of the hash space
//! partitions real objects by uid, as a server with `ShardedListAndWatch` would.
//!
//! The fake server implements the feature; with it switched off
//! (`ServerConfig::sharded_list_and_watch`), like an API server without the gate, it ignores
//! the parameter (its request log keeps it) and answers without the echo, which is how a
//! client tells that it got everything.

use std::collections::BTreeSet;

use crate::support::{Env, GUARD};
use fake_apiserver::{FakeApiServer, ServerConfig};
use futures::StreamExt;
use informer::{ListOptions, ListerWatcher, Object, WatchEvent, WatchOptions};
use informer_core::shard::{ShardEcho, ShardField, ShardSelector};
use informer_kube::KubeListerWatcher;
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_and_watches_send_the_shard_selector_and_see_it_ignored() {
    tokio::time::timeout(GUARD, shard_selectors_reach_the_server())
        .await
        .expect("the test ran past its bound");
}

async fn shard_selectors_reach_the_server() {
    let env = Env::with_engine(FakeApiServer::with_config(ServerConfig {
        sharded_list_and_watch: false,
        ..ServerConfig::default()
    }))
    .await
    .unwrap();
    for i in 0..30 {
        env.engine
            .create(
                "configmaps",
                &json!({"metadata": {"name": format!("cm-{i}"), "namespace": "shards"}}),
            )
            .unwrap();
    }
    let lw = KubeListerWatcher::<ConfigMap>::namespaced(env.client.clone(), "shards");
    let shards: Vec<ShardSelector> = (0..3)
        .map(|rank| ShardSelector::even_split(ShardField::Uid, rank, 3).unwrap())
        .collect();
    env.engine.clear_requests();

    let mut owned: Vec<BTreeSet<String>> = Vec::new();
    for shard in &shards {
        let mut items = Vec::new();
        let info = lw
            .list_into(
                &ListOptions {
                    shard_selector: Some(shard.clone()),
                    ..ListOptions::default()
                },
                &mut items,
            )
            .await
            .unwrap();
        // No echo: the server ignored the selector and sent every object.
        assert_eq!(info.shard_info_selector, None);
        assert_eq!(
            shard.check_echo(info.shard_info_selector.as_deref()),
            ShardEcho::Ignored
        );
        assert_eq!(items.len(), 30);
        // Filtering on the client, as a fallback, by the same hash the server uses.
        owned.push(
            items
                .iter()
                .filter(|cm| shard.matches(*cm))
                .map(|cm| cm.object_uid().unwrap().to_owned())
                .collect(),
        );
    }
    // The three shards partition the objects: every uid in exactly one.
    let all: BTreeSet<String> = owned.iter().flatten().cloned().collect();
    assert_eq!(all.len(), 30);
    assert_eq!(owned.iter().map(BTreeSet::len).sum::<usize>(), 30);

    let mut watch = lw
        .watch(&WatchOptions {
            resource_version: Some(env.engine.resource_version().to_string()),
            shard_selector: Some(shards[1].clone()),
            ..WatchOptions::default()
        })
        .await
        .unwrap();
    env.engine
        .create(
            "configmaps",
            &json!({"metadata": {"name": "late", "namespace": "shards"}}),
        )
        .unwrap();
    let event = tokio::time::timeout(GUARD, watch.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(matches!(event, WatchEvent::Added(_)), "{event:?}");

    let requests = env.engine.requests();
    let sent: Vec<&str> = requests
        .iter()
        .filter_map(|r| {
            r.query
                .iter()
                .find(|(k, _)| k == "shardSelector")
                .map(|(_, v)| v.as_str())
        })
        .collect();
    let rendered: Vec<String> = shards.iter().map(ToString::to_string).collect();
    assert_eq!(
        sent,
        [
            rendered[0].as_str(),
            &rendered[1],
            &rendered[2],
            &rendered[1]
        ]
    );
    assert_eq!(
        sent[0],
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x5555555555555555')"
    );
    // The request log holds what the server received: it parses back to the selector.
    assert_eq!(ShardSelector::parse(sent[3]).unwrap(), shards[1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_with_the_feature_filters_and_echoes_through_kube_client() {
    tokio::time::timeout(GUARD, filtered_by_the_server())
        .await
        .expect("the test ran past its bound");
}

async fn filtered_by_the_server() {
    let env = Env::start().await;
    for i in 0..30 {
        env.engine
            .create(
                "configmaps",
                &json!({"metadata": {"name": format!("cm-{i}"), "namespace": "shards"}}),
            )
            .unwrap();
    }
    let lw = KubeListerWatcher::<ConfigMap>::namespaced(env.client.clone(), "shards");
    let mut total = 0;
    for rank in 0..3 {
        let shard = ShardSelector::even_split(ShardField::Uid, rank, 3).unwrap();
        let mut items = Vec::new();
        let info = lw
            .list_into(
                &ListOptions {
                    shard_selector: Some(shard.clone()),
                    limit: Some(4),
                    ..ListOptions::default()
                },
                &mut items,
            )
            .await
            .unwrap();
        assert_eq!(
            shard.check_echo(info.shard_info_selector.as_deref()),
            ShardEcho::Applied
        );
        assert!(items.iter().all(|cm| shard.matches(cm)));
        let mut all = items.len();
        let mut token = info.continue_token;
        while let Some(t) = token {
            let mut page = Vec::new();
            let info = lw
                .list_into(
                    &ListOptions {
                        shard_selector: Some(shard.clone()),
                        limit: Some(4),
                        continue_token: Some(t),
                        ..ListOptions::default()
                    },
                    &mut page,
                )
                .await
                .unwrap();
            assert!(page.iter().all(|cm| shard.matches(cm)));
            all += page.len();
            token = info.continue_token;
        }
        total += all;
    }
    assert_eq!(total, 30);
    // A watch of one shard: only its objects' events.
    let shard = ShardSelector::even_split(ShardField::Uid, 0, 2).unwrap();
    let mut watch = lw
        .watch(&WatchOptions {
            resource_version: Some(env.engine.resource_version().to_string()),
            shard_selector: Some(shard.clone()),
            ..WatchOptions::default()
        })
        .await
        .unwrap();
    let mut expected = Vec::new();
    for i in 0..20 {
        let created = env
            .engine
            .create(
                "configmaps",
                &json!({"metadata": {"name": format!("late-{i}"), "namespace": "shards"}}),
            )
            .unwrap();
        if shard.matches_value(created.uid()) {
            expected.push(created.name().to_owned());
        }
    }
    for name in expected {
        let event = tokio::time::timeout(GUARD, watch.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        match event {
            WatchEvent::Added(cm) => assert_eq!(cm.object_name(), Some(name.as_str())),
            other => panic!("unexpected {other:?}"),
        }
    }
}
