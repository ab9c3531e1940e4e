//! `sharded-controller`: one replica of a controller of pods that runs as several replicas,
//! each owning a slice of the pods.
//!
//! Each replica holds a Lease in `--namespace` (labelled with `--group`), sees the live
//! replicas from the group's Leases, and takes an even split of the hash space of pod uids by
//! rank ([`ShardManager`]); its pod informer lists and watches only that slice (server-side
//! when the API server has `ShardedListAndWatch`, filtered after decode otherwise) and its
//! workers reconcile the pods it holds, through a work queue. A replica that stops renewing
//! is dropped after its lease duration and its range taken over; a replica that stops
//! cleanly (SIGTERM) deletes its Lease, keeps working for the handover, then exits.
//!
//! "Reconciling" here is recording that the pod was looked at: a stand-in for real work
//! that lets a test check that every pod is reconciled by exactly one replica. Every event is
//! one JSON line on stdout (logs go to stderr):
//!
//! ```text
//! {"event":"range","identity":"a","rank":0,"count":3,"range":"[0x…, 0x…)","selector":"shardRange(…)","members":["a","b","c"],"handing_over":false,"unix_ms":…}
//! {"event":"status","identity":"a","selector":"…","owned":6712,"digest":"0x…","synced":true,"shard_synced":true,"filtering":"server","dropped":0,"reconciled":7020,"pending":0,"unix_ms":…}
//! {"event":"dumped","identity":"a","path":"…","owned":6712,"reconciled":31,"unix_ms":…}
//! ```
//!
//! `owned` is the number of pods in the cache, `digest` the XOR of the FNV-1a 64 of their
//! `namespace/name` keys (so the digests of disjoint caches XOR to the digest of their
//! union), `shard_synced` whether the cache holds exactly the current selector's pods (its
//! last list was made with it and nothing is queued), `pending` the keys waiting in the work
//! queue. On SIGUSR1 the replica writes
//! `{"identity", "selector", "keys": [[key, uid], …], "reconciled": [[key, uid], …]}` to
//! `--dump` (written whole, then renamed into place) with the pods reconciled since the
//! previous dump, and starts a new window.
//!
//! ```text
//! cargo run -p informer-kube --example sharded-controller -- --kubeconfig ~/.kube/config --identity a
//! ```
//!
//! `tests/it/shard_processes.rs` runs three replicas as processes against the
//! `fake-apiserver` binary over 20,000 churning pods, kills one with SIGKILL, and starts it
//! again.

#[path = "common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::Parser;
use informer::shard::{ShardField, fnv1a_64};
use informer::{InformerConfig, Object, SharedIndexInformer, handler};
use informer_core::membership::Assignment;
use informer_kube::shard_manager::{ShardManager, ShardManagerConfig};
use informer_kube::{KubeListerWatcher, client_for_informers, drop_managed_fields, kube_config};
use informer_workqueue::WorkQueue;
use k8s_openapi::api::core::v1::Pod;
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// One replica of a sharded controller of pods.
#[derive(Debug, Clone, Parser)]
#[command(name = "sharded-controller", about, long_about = None)]
struct Args {
    /// The cluster of this kubeconfig file's current context (default: KUBECONFIG,
    /// ~/.kube/config, or the in-cluster service account).
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// Namespace of the group's Leases.
    #[arg(long, short = 'n', default_value = "default")]
    namespace: String,
    /// The group (a label value).
    #[arg(long, default_value = "sharded-controller")]
    group: String,
    /// This replica's identity, unique in the group (default: $HOSTNAME-<pid>).
    #[arg(long)]
    identity: Option<String>,
    /// Shard by `uid` (even spread) or `namespace` (each namespace on one replica).
    #[arg(long, default_value = "uid", value_parser = parse_field)]
    field: ShardField,
    /// How long the others wait after this replica's Lease last changed (whole seconds).
    #[arg(long, value_parser = common::parse_duration, default_value = "15s")]
    lease_duration: Duration,
    /// How often this replica renews its Lease.
    #[arg(long, value_parser = common::parse_duration, default_value = "5s")]
    renew_period: Duration,
    /// How long a range handed over is kept.
    #[arg(long, value_parser = common::parse_duration, default_value = "10s")]
    handover: Duration,
    /// How often to print a status line.
    #[arg(long, value_parser = common::parse_duration, default_value = "1s")]
    status_interval: Duration,
    /// Where to write the cache's keys on SIGUSR1.
    #[arg(long, value_name = "PATH")]
    dump: Option<PathBuf>,
    /// Reconciling workers.
    #[arg(long, default_value_t = 2)]
    workers: usize,
}

fn parse_field(text: &str) -> Result<ShardField, String> {
    match text {
        "uid" => Ok(ShardField::Uid),
        "namespace" => Ok(ShardField::Namespace),
        other => Err(format!("{other:?}: shard by uid or namespace")),
    }
}

/// What can stop the program.
#[derive(Debug, thiserror::Error)]
enum AppError {
    #[error("cannot set up the Kubernetes client")]
    Client(#[source] Box<informer_kube::KubeError>),
    #[error("cannot join the shard group")]
    Shards(#[source] informer_kube::shard_manager::ShardManagerError),
    #[error("cannot build the pod informer")]
    Informer(#[source] informer::InformerError),
}

#[tokio::main]
async fn main() -> ExitCode {
    common::init_logging("warn");
    match run(Args::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => common::failed("sharded-controller", &error),
    }
}

/// One JSON line on stdout.
fn emit(event: &str, identity: &str, mut fields: Value) {
    let unix_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    if let Value::Object(map) = &mut fields {
        map.insert("event".into(), json!(event));
        map.insert("identity".into(), json!(identity));
        map.insert("unix_ms".into(), json!(unix_ms));
    }
    println!("{fields}");
}

async fn run(args: Args) -> Result<(), AppError> {
    let client = client(&args).await?;
    let identity = args.identity.clone().unwrap_or_else(|| {
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "replica".into());
        format!("{host}-{}", std::process::id())
    });
    let mut config = ShardManagerConfig::new(&args.group, &identity);
    config.membership.field = args.field;
    config.membership.lease_duration = args.lease_duration;
    config.membership.renew_period = args.renew_period;
    config.membership.handover = args.handover;
    let manager =
        ShardManager::new(client.clone(), &args.namespace, config).map_err(AppError::Shards)?;
    let pods = SharedIndexInformer::new(
        Arc::new(KubeListerWatcher::<Pod>::all(client)),
        InformerConfig {
            name: "pods".into(),
            transform: Some(drop_managed_fields::<Pod>()),
            ..InformerConfig::default()
        },
    )
    .map_err(AppError::Informer)?;
    manager.drive(&pods);

    let queue: WorkQueue<String> = WorkQueue::new();
    let on_change = queue.clone();
    let on_delete = queue.clone();
    pods.add_handler(
        handler()
            .on_change(move |pod: &Arc<Pod>| {
                if let Ok(key) = informer::key_of(pod.as_ref()) {
                    on_change.add(key.to_string());
                }
            })
            .on_delete(move |gone| {
                if let Ok(key) = gone.key() {
                    on_delete.add(key.to_string());
                }
            }),
    )
    .map_err(AppError::Informer)?;

    // Membership first: the informer starts once it knows its shard.
    let leave = CancellationToken::new();
    let membership = tokio::spawn({
        let (manager, leave) = (manager.clone(), leave.clone());
        async move { manager.run(leave).await }
    });
    let first = manager.wait_for_assignment().await;
    announce(&identity, &first);
    let stop = CancellationToken::new();
    let informer_task = pods.spawn(stop.clone());

    let reconciled = Arc::new(Mutex::new(Reconciled::default()));
    let workers: Vec<_> = (0..args.workers.max(1))
        .map(|_| {
            let (queue, pods, reconciled) = (queue.clone(), pods.clone(), Arc::clone(&reconciled));
            tokio::spawn(async move {
                while let Some(key) = queue.get().await {
                    if let Some(pod) = pods.lister().get_by_key(&key) {
                        let uid = pod.object_uid().unwrap_or_default().to_owned();
                        reconciled.lock().record(key.clone(), uid);
                    }
                    queue.done(&key);
                }
            })
        })
        .collect();

    let reporter = tokio::spawn(report(
        identity.clone(),
        manager.clone(),
        pods.clone(),
        queue.clone(),
        Arc::clone(&reconciled),
        args.status_interval,
        args.dump.clone(),
        stop.clone(),
    ));

    wait_for_signal().await;
    // Leave the group first (the others take over at once), keep working through the
    // handover, then stop.
    leave.cancel();
    match membership.await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => eprintln!("sharded-controller: leaving the group: {error}"),
        Err(error) => eprintln!("sharded-controller: the membership task: {error}"),
    }
    stop.cancel();
    queue.shut_down();
    for worker in workers {
        let _ = worker.await;
    }
    let _ = reporter.await;
    let _ = informer_task.await;
    Ok(())
}

async fn client(args: &Args) -> Result<kube_client::Client, AppError> {
    let config = kube_config(args.kubeconfig.as_deref())
        .await
        .map_err(|e| AppError::Client(Box::new(e)))?;
    client_for_informers(config).map_err(|e| AppError::Client(Box::new(e)))
}

fn announce(identity: &str, assignment: &Assignment) {
    emit(
        "range",
        identity,
        json!({
            "rank": assignment.rank,
            "count": assignment.count,
            "range": assignment.range.to_string(),
            "selector": assignment.selector.to_string(),
            "members": assignment.members,
            "handing_over": assignment.handing_over(),
        }),
    );
}

/// The pods reconciled since the last dump, and in all.
#[derive(Default)]
struct Reconciled {
    window: BTreeMap<String, String>,
    total: u64,
}

impl Reconciled {
    fn record(&mut self, key: String, uid: String) {
        self.window.insert(key, uid);
        self.total += 1;
    }
}

/// Prints a range line on every new assignment and a status line every `interval`; dumps
/// on SIGUSR1; until `stop`.
#[allow(
    clippy::too_many_arguments,
    reason = "an example's reporting task, each argument one thing it reports on"
)]
async fn report(
    identity: String,
    manager: ShardManager,
    pods: SharedIndexInformer<Pod>,
    queue: WorkQueue<String>,
    reconciled: Arc<Mutex<Reconciled>>,
    interval: Duration,
    dump: Option<PathBuf>,
    stop: CancellationToken,
) {
    let mut assignments = manager.subscribe();
    assignments.borrow_and_update();
    let mut tick = tokio::time::interval(interval);
    let mut dumps = dump_signals();
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            changed = assignments.changed() => {
                if changed.is_err() {
                    return;
                }
                if let Some(a) = assignments.borrow_and_update().clone() {
                    announce(&identity, &a);
                }
            }
            _ = tick.tick() => status(&identity, &manager, &pods, &queue, &reconciled),
            Some(()) = next_dump(&mut dumps) => {
                if let Some(path) = &dump {
                    write_dump(&identity, &manager, &pods, &reconciled, path);
                }
            }
        }
    }
}

fn status(
    identity: &str,
    manager: &ShardManager,
    pods: &SharedIndexInformer<Pod>,
    queue: &WorkQueue<String>,
    reconciled: &Mutex<Reconciled>,
) {
    let stats = pods.stats();
    let shard = stats
        .reflector
        .as_ref()
        .map(|r| r.shard.clone())
        .unwrap_or_default();
    let selector = manager.assignment().map(|a| a.selector);
    let keys = pods.lister().list_keys();
    let digest = keys
        .iter()
        .fold(0u64, |acc, key| acc ^ fnv1a_64(key.as_str().as_bytes()));
    emit(
        "status",
        identity,
        json!({
            "selector": selector.as_ref().map(ToString::to_string),
            "owned": keys.len(),
            "digest": format!("{digest:#018x}"),
            "synced": stats.has_synced,
            "shard_synced": stats.has_synced
                && stats.queued == 0
                && selector.is_some()
                && shard.listed_selector == selector,
            "filtering": shard.filtering.as_str(),
            "dropped": shard.dropped,
            "reconciled": reconciled.lock().total,
            "pending": queue.len(),
        }),
    );
}

fn write_dump(
    identity: &str,
    manager: &ShardManager,
    pods: &SharedIndexInformer<Pod>,
    reconciled: &Mutex<Reconciled>,
    path: &std::path::Path,
) {
    let keys: Vec<(String, String)> = pods
        .lister()
        .list_all()
        .iter()
        .filter_map(|pod| {
            let key = informer::key_of(pod.as_ref()).ok()?.to_string();
            Some((key, pod.object_uid().unwrap_or_default().to_owned()))
        })
        .collect();
    let window = std::mem::take(&mut reconciled.lock().window);
    let body = json!({
        "identity": identity,
        "selector": manager.assignment().map(|a| a.selector.to_string()),
        "keys": keys,
        "reconciled": window.iter().collect::<Vec<_>>(),
    });
    let partial = path.with_extension("partial");
    let written =
        std::fs::write(&partial, body.to_string()).and_then(|()| std::fs::rename(&partial, path));
    match written {
        Ok(()) => emit(
            "dumped",
            identity,
            json!({"path": path.display().to_string(), "owned": keys.len(), "reconciled": window.len()}),
        ),
        Err(error) => eprintln!("sharded-controller: writing {}: {error}", path.display()),
    }
}

#[cfg(unix)]
type Dumps = Option<tokio::signal::unix::Signal>;
#[cfg(not(unix))]
type Dumps = ();

#[cfg(unix)]
fn dump_signals() -> Dumps {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::user_defined1()).ok()
}

#[cfg(not(unix))]
fn dump_signals() -> Dumps {}

#[cfg(unix)]
async fn next_dump(signals: &mut Dumps) -> Option<()> {
    match signals {
        Some(s) => s.recv().await,
        None => std::future::pending().await,
    }
}

#[cfg(not(unix))]
async fn next_dump(_: &mut Dumps) -> Option<()> {
    std::future::pending().await
}

#[cfg(unix)]
async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

#[cfg(not(unix))]
async fn wait_for_signal() {
    let _ = tokio::signal::ctrl_c().await;
}
