//! Shard membership over HTTP through kube-client against the fake API server, in real
//! time with short durations (lease 3 s, renewed every 0.5 s, 1 s handovers): replicas in one
//! process each hold a Lease, split the hash space evenly by rank, take over the range of a
//! replica that stops renewing once its lease has not changed for its duration (and delete
//! its Lease), take over at once from one that leaves cleanly, and drive informers whose
//! caches then partition the server's objects. Every test is bounded (120 s); the bounds on
//! how long a takeover took are generous multiples of the durations (a guard against a
//! takeover that waits for the wrong thing, not a benchmark).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use crate::support::{Env, GUARD};
use fake_apiserver::FakeApiServer;
use informer::reflector::ListWatchConfig;
use informer::shard::{ShardRange, ShardSelector};
use informer::{InformerConfig, Object, SharedIndexInformer};
use informer_core::membership::Assignment;
use informer_kube::KubeListerWatcher;
use informer_kube::shard_manager::{GROUP_LABEL, ShardManager, ShardManagerConfig};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::Api;
use serde_json::json;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const NS: &str = "shards";
const LEASE: Duration = Duration::from_secs(3);

fn config(identity: &str) -> ShardManagerConfig {
    let mut config = ShardManagerConfig::new("testgroup", identity);
    config.membership.lease_duration = LEASE;
    config.membership.renew_period = Duration::from_millis(500);
    config.membership.handover = Duration::from_secs(1);
    config
}

/// A manager running on its own task.
struct Replica {
    manager: ShardManager,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl Replica {
    fn start(env: &Env, identity: &str) -> Self {
        let manager = ShardManager::new(env.client.clone(), NS, config(identity)).unwrap();
        let stop = CancellationToken::new();
        let task = tokio::spawn({
            let (manager, stop) = (manager.clone(), stop.clone());
            async move { manager.run(stop).await.unwrap() }
        });
        Self {
            manager,
            stop,
            task,
        }
    }

    fn assignment(&self) -> Option<Assignment> {
        self.manager.assignment()
    }

    /// A crash: the task is gone, no Lease is deleted.
    fn kill(self) {
        self.task.abort();
    }

    /// A clean leave: the Lease is deleted, then the handover passes.
    async fn leave(self) {
        self.stop.cancel();
        tokio::time::timeout(GUARD, self.task)
            .await
            .expect("run did not return after its stop")
            .unwrap();
    }
}

/// Waits until every replica's assignment has `count` members and no handover, and the
/// ranges partition the space; returns when it happened.
async fn settled(replicas: &[&Replica], count: u64) -> Instant {
    tokio::time::timeout(GUARD, async {
        loop {
            let assignments: Vec<Assignment> =
                replicas.iter().filter_map(|r| r.assignment()).collect();
            if assignments.len() == replicas.len()
                && assignments
                    .iter()
                    .all(|a| a.count == count && !a.handing_over())
            {
                let mut ranks: Vec<u64> = assignments.iter().map(|a| a.rank).collect();
                ranks.sort_unstable();
                assert_eq!(ranks, (0..count).collect::<Vec<_>>(), "{assignments:?}");
                for a in &assignments {
                    assert_eq!(a.range, ShardRange::even_split(a.rank, a.count).unwrap());
                }
                return Instant::now();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the replicas never settled")
}

async fn leases(env: &Env) -> BTreeSet<String> {
    let api: Api<Lease> = Api::namespaced(env.client.clone(), NS);
    let params =
        kube_client::api::ListParams::default().labels(&format!("{GROUP_LABEL}=testgroup"));
    api.list(&params)
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|l| l.metadata.name)
        .collect()
}

async fn env() -> Env {
    let env = Env::with_engine(FakeApiServer::new()).await.unwrap();
    env.engine
        .create("namespaces", &fake_apiserver::seed::namespace(NS))
        .unwrap();
    env
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_split_the_space_and_take_over_from_a_crashed_or_leaving_one() {
    tokio::time::timeout(Duration::from_secs(120), async {
        let env = env().await;
        let a = Replica::start(&env, "a");
        let b = Replica::start(&env, "b");
        let c = Replica::start(&env, "c");
        settled(&[&a, &b, &c], 3).await;
        assert_eq!(a.assignment().unwrap().members, ["a", "b", "c"]);
        assert_eq!(
            leases(&env).await,
            ["testgroup-a", "testgroup-b", "testgroup-c"]
                .map(str::to_owned)
                .into()
        );

        // b crashes: a and c take its range once its lease has not changed for 3 s, and
        // delete its Lease.
        let crashed = Instant::now();
        b.kill();
        let took = settled(&[&a, &c], 2).await - crashed;
        assert!(
            took >= LEASE - Duration::from_millis(600) && took < LEASE * 3,
            "the takeover took {took:?}"
        );
        tokio::time::timeout(GUARD, async {
            while leases(&env).await.contains("testgroup-b") {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await
        .expect("b's expired lease was never deleted");
        // The deleting replica counts the deletion once its request returns, which can be
        // after the list above no longer shows the Lease.
        let collected = || a.manager.stats().leases_collected + c.manager.stats().leases_collected;
        tokio::time::timeout(GUARD, async {
            while collected() == 0 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("neither a nor c counted the deletion of b's lease");
        assert_eq!(collected(), 1);

        // c leaves cleanly: a takes over well before a lease duration.
        let left = Instant::now();
        let leaving = tokio::spawn(c.leave());
        let took = settled(&[&a], 1).await - left;
        assert!(
            took < LEASE,
            "the takeover after a clean leave took {took:?}"
        );
        assert_eq!(a.assignment().unwrap().range, ShardRange::ALL);
        leaving.await.unwrap();
        assert!(a.manager.stats().renewals > 5);
        a.leave().await;
        assert!(leases(&env).await.is_empty());
    })
    .await
    .expect("the test ran past its bound");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn driven_informers_partition_the_objects_and_rebalance_when_a_replica_joins() {
    tokio::time::timeout(Duration::from_secs(120), async {
        let env = env().await;
        for i in 0..120 {
            env.engine
                .create(
                    "configmaps",
                    &json!({"metadata": {"name": format!("cm-{i:03}"), "namespace": NS}}),
                )
                .unwrap();
        }
        let informer = |name: &str| {
            SharedIndexInformer::new(
                Arc::new(KubeListerWatcher::<ConfigMap>::namespaced(
                    env.client.clone(),
                    NS,
                )),
                InformerConfig {
                    name: name.into(),
                    list_watch: ListWatchConfig::default(),
                    ..InformerConfig::default()
                },
            )
            .unwrap()
        };
        let stop_informers = CancellationToken::new();
        let mut replicas = Vec::new();
        let mut informers = Vec::new();
        for identity in ["a", "b"] {
            let replica = Replica::start(&env, identity);
            let informer = informer(identity);
            replica.manager.drive(&informer);
            replica.manager.wait_for_assignment().await;
            informer.spawn(stop_informers.clone());
            replicas.push(replica);
            informers.push(informer);
        }
        let all: BTreeSet<String> = env
            .engine
            .objects("configmaps", Some(NS))
            .unwrap()
            .iter()
            .map(|o| o.key().to_owned())
            .collect();
        let partitioned = |informers: &[SharedIndexInformer<ConfigMap>]| {
            let caches: Vec<BTreeSet<String>> = informers
                .iter()
                .map(|i| {
                    i.lister()
                        .list_all()
                        .iter()
                        .map(|cm| format!("{NS}/{}", cm.object_name().unwrap()))
                        .collect()
                })
                .collect();
            let total: usize = caches.iter().map(BTreeSet::len).sum();
            let union: BTreeSet<String> = caches.into_iter().flatten().collect();
            total == all.len() && union == all
        };
        let wait_partitioned = |informers: Vec<SharedIndexInformer<ConfigMap>>| async move {
            tokio::time::timeout(GUARD, async {
                while !partitioned(&informers) {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            })
            .await
            .expect("the caches never partitioned the objects");
        };
        settled(&replicas.iter().collect::<Vec<_>>(), 2).await;
        wait_partitioned(informers.clone()).await;
        for (replica, informer) in replicas.iter().zip(&informers) {
            let mine: ShardSelector = replica.assignment().unwrap().selector;
            assert_eq!(informer.shard_selector(), Some(mine.clone()));
            assert!(
                informer
                    .lister()
                    .list_all()
                    .iter()
                    .all(|cm| mine.matches(cm.as_ref()))
            );
        }

        // A third replica joins: the ranges rebalance and the caches follow.
        let c = Replica::start(&env, "c");
        let third = informer("c");
        c.manager.drive(&third);
        c.manager.wait_for_assignment().await;
        third.spawn(stop_informers.clone());
        replicas.push(c);
        informers.push(third);
        settled(&replicas.iter().collect::<Vec<_>>(), 3).await;
        wait_partitioned(informers.clone()).await;
        for replica in replicas {
            replica.leave().await;
        }
        stop_informers.cancel();
    })
    .await
    .expect("the test ran past its bound");
}

/// The first assignment waits for the replica's own Lease: while the Lease cannot be created
/// (the server fails the first three writes to Leases, one per renewal), the replica has no
/// assignment; once it has one, its Lease is there to read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_assignment_waits_for_the_replicas_own_lease() {
    tokio::time::timeout(Duration::from_secs(120), async {
        let env = env().await;
        env.engine.faults().fail_writes(
            "leases",
            3,
            fake_apiserver::status::internal_error("etcd is down"),
        );
        let a = Replica::start(&env, "a");
        let assignment = tokio::time::timeout(GUARD, a.manager.wait_for_assignment())
            .await
            .expect("no assignment once the Lease could be written");
        let api: Api<Lease> = Api::namespaced(env.client.clone(), NS);
        assert!(
            api.get_opt(a.manager.lease_name()).await.unwrap().is_some(),
            "assigned before its Lease existed"
        );
        assert!(
            env.engine.faults().pending().is_empty(),
            "every failure was met"
        );
        assert!(a.manager.stats().failures >= 3, "{:?}", a.manager.stats());
        assert_eq!((assignment.rank, assignment.count), (0, 1));
        a.leave().await;
    })
    .await
    .expect("the test ran past its bound");
}

/// A stop that cuts a renewal short after the server applied it leaves the replica with an
/// older resourceVersion than its Lease's: the guarded delete conflicts, and the replica reads
/// its Lease again and deletes it (here the Lease is changed behind its back just after a
/// renewal, then it leaves at once, before its next renewal would read it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leave_deletes_the_lease_even_when_a_renewal_it_missed_changed_it() {
    tokio::time::timeout(Duration::from_secs(120), async {
        let env = env().await;
        let a = Replica::start(&env, "a");
        settled(&[&a], 1).await;
        let api: Api<Lease> = Api::namespaced(env.client.clone(), NS);
        let name = a.manager.lease_name().to_owned();
        let version = |lease: &Lease| lease.metadata.resource_version.clone();
        // The first assignment waits for the replica's Lease: it is there.
        let seen = version(&api.get(&name).await.unwrap());
        // Just after a renewal: the next one is half a second away.
        let mut lease = tokio::time::timeout(GUARD, async {
            loop {
                let lease = api.get(&name).await.unwrap();
                if version(&lease) != seen {
                    return lease;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect("the lease was never renewed");
        let spec = lease.spec.as_mut().unwrap();
        assert_eq!(spec.holder_identity.as_deref(), Some("a"));
        spec.renew_time = None;
        api.replace(&name, &Default::default(), &lease)
            .await
            .unwrap();
        let manager = a.manager.clone();
        a.leave().await;
        assert!(leases(&env).await.is_empty());
        let stats = manager.stats();
        assert_eq!(stats.failures, 0, "{:?}", stats.last_error);
    })
    .await
    .expect("the test ran past its bound");
}
