//! The replica-summary example's controller (`examples/replica-summary/controller.rs`) driven
//! through the socket-free `kube::Client` (`fake_apiserver::http::kube_client`: kube-client
//! over the fake server's HTTP front end, in process) for its informers and its writes, with
//! two workers, in paused (virtual) time, and once more in real time:
//!
//! 1. the first three writes fail (500): each is retried with the rate limiter's backoff, and
//!    once a key's write succeeds its failures are forgotten (its next failure counts from 1);
//! 2. the pods' watch breaks and cannot come back for two attempts (one in real time), and a
//!    ready pod is deleted meanwhile, with the history compacted so that the informer must
//!    relist: the deletion arrives through the relist (a tombstone) and the summary still
//!    converges;
//! 3. a Deployment deleted: reconcile gets its last known state and deletes its summary (which
//!    the fake server's garbage collector has removed already: a 404 is a success).
//!
//! The expected summaries are computed from the server's objects as JSON, following the
//! ownership chain Deployment → ReplicaSet → pod by UID (not the example's one-hop index).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use fake_apiserver::{FakeApiServer, status};
use informer::Lister;
use informer_controller::{Context, ControllerConfig, ControllerHandle};
use informer_kube::KubeInformerFactory;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::replica_summary_controller::{
    MANAGED_BY_LABEL, MANAGER, NAME, Summaries, controller, reconcile,
};

/// The longest a step may wait for the controller (virtual time in the paused test, real
/// time in its twin): only there so that a bug fails the test instead of hanging it.
const STEP_GUARD: Duration = Duration::from_secs(60);

#[tokio::test(start_paused = true)]
async fn summaries_converge_through_write_failures_a_watch_outage_and_a_deletion() {
    let started = std::time::Instant::now();
    scenario(2).await;
    // Virtual time: the whole scenario takes well under a second of real time.
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

/// The same scenario on the real clock (the rate limiter's and the reflector's timers for
/// real), bounded; one failed re-watch instead of two keeps the reflector's backoff (0.8 s,
/// then 1.6 s, jittered) to a few seconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn summaries_converge_in_real_time_too() {
    tokio::time::timeout(Duration::from_secs(60), scenario(1))
        .await
        .expect("the real-time scenario took more than a minute");
}

/// The scenario; during the outage the pods' watch cannot come back for `failed_watches`
/// attempts.
async fn scenario(failed_watches: usize) {
    let server = FakeApiServer::new();
    let faults = server.faults();
    seed(&server);
    // The controller's first three writes fail.
    faults.fail_writes("configmaps", 3, status::internal_error("etcd is down"));

    let factory = KubeInformerFactory::new(fake_apiserver::http::kube_client(&server));
    let settings = ControllerConfig {
        name: NAME.into(),
        workers: 2,
        ..ControllerConfig::default()
    };
    let (controller, summaries) = controller(&factory, settings).unwrap();
    let handle = controller.handle();
    // The controller's own cache of its summaries (each step ends when it has caught up).
    let cached = summaries.summaries.clone();
    // Every attempt: the key and how often it had failed before (the rate limiter's count).
    let attempts: Arc<Mutex<Vec<(String, u32)>>> = Arc::default();
    let seen = Arc::clone(&attempts);
    let recording = move |deployment: Arc<Deployment>, ctx: Context<Summaries>| {
        seen.lock().push((ctx.key().to_string(), ctx.retries()));
        reconcile(deployment, ctx)
    };
    let stop = CancellationToken::new();
    let run = tokio::spawn(controller.run(recording, summaries, stop.clone()));

    // 1. Initial sync through three failed writes.
    converge(
        &server,
        &handle,
        &cached,
        "initial sync through failed writes",
    )
    .await;
    faults.assert_all_used();
    let stats = handle.stats();
    assert_eq!(
        (stats.failures, stats.retries, stats.given_up),
        (3, 3, 0),
        "{stats:?}"
    );
    // Each failure was retried: a key that failed k times in a row was attempted again with
    // 1..=k failures behind it, and every failure is one of those.
    let most = most_retries(&attempts.lock());
    assert_eq!(most.values().sum::<u32>(), 3, "{most:?}");
    assert!(most.values().any(|&k| k >= 1), "{most:?}");
    // Success forgot them: the rate limiter holds no failure for any key.
    for key in ["prod/web", "prod/api"] {
        assert_eq!(
            handle.retries(&informer::ObjectKey::from_raw(key)),
            0,
            "{key}"
        );
    }
    assert_eq!(summary(&server, "web"), Some((3, 2)));
    assert_eq!(summary(&server, "api"), Some((2, 1)));

    // The next failure of a key counts from 1 again (the earlier ones were forgotten): a pod
    // of api becomes ready, the write fails once, the retry knows one failure.
    attempts.lock().clear();
    faults.fail_writes("configmaps", 1, status::internal_error("etcd blinked"));
    ready(&server, "api-9f8e-1");
    create_pod(&server, "api-9f8e-1b", "api-9f8e", true);
    converge(&server, &handle, &cached, "one more failed write").await;
    faults.assert_all_used();
    let most = most_retries(&attempts.lock());
    assert_eq!(most.get("prod/api"), Some(&1), "{most:?}");
    assert_eq!(summary(&server, "api"), Some((3, 3)));

    // 2. A watch outage of the pods informer, a ready pod deleted during it, and the history
    // compacted: the informer relists and the deletion arrives as a tombstone.
    tokio::time::timeout(STEP_GUARD, server.wait_for_open_watches("pods", 1))
        .await
        .expect("the pods watch is open");
    let outage = status::internal_error("watch cache not ready");
    faults.fail_watches("pods", failed_watches, outage);
    assert_eq!(faults.break_watches("pods"), 1);
    server.delete("pods", Some("prod"), "web-5d4f-1").unwrap();
    server.compact_all();
    converge(
        &server,
        &handle,
        &cached,
        "a ready pod deleted during a watch outage",
    )
    .await;
    faults.assert_all_used();
    assert_eq!(summary(&server, "web"), Some((2, 1)));

    // 3. A Deployment deleted: its summary goes (no finalizer). The fake server's garbage
    //    collector removes it with the Deployment (the summary names it as owner), as a
    //    cluster's would; the controller's own delete of it then finds it gone.
    let deletions = handle.stats().deletions;
    server.delete("deployments", Some("prod"), "api").unwrap();
    converge(&server, &handle, &cached, "a Deployment deleted").await;
    assert_eq!(summary(&server, "api"), None);
    // The collector removed the summary within the delete, so the server converged before
    // the controller may have seen the Deployment go: wait for its reconcile of the deletion.
    let mut stats = handle.subscribe();
    let reconciled = stats.wait_for(|s| s.deletions > deletions);
    tokio::time::timeout(STEP_GUARD, reconciled)
        .await
        .expect("the controller reconciles the deleted Deployment")
        .expect("the controller runs");

    stop.cancel();
    let report = tokio::time::timeout(STEP_GUARD, run)
        .await
        .expect("the controller stops")
        .unwrap()
        .unwrap();
    assert!(report.abandoned.is_empty(), "{report:?}");
    assert_eq!(report.stats.given_up, 0);
    let informers = report.informers.expect("the controller owns the factory");
    assert!(informers.failures.is_empty(), "{:?}", informers.failures);
    let pods = report
        .informer_stats
        .iter()
        .find(|(name, _)| name.starts_with("pods"))
        .map(|(_, stats)| stats.reflector.clone().unwrap())
        .expect("the pods informer's statistics");
    assert!(pods.counters.relists >= 1, "{:?}", pods.counters);
}

/// For every key, the most failures an attempt had behind it.
fn most_retries(attempts: &[(String, u32)]) -> BTreeMap<String, u32> {
    let mut most = BTreeMap::new();
    for (key, retries) in attempts {
        let entry = most.entry(key.clone()).or_insert(0);
        *entry = (*entry).max(*retries);
    }
    most
}

/// Namespace `prod`: Deployment web (ReplicaSet web-5d4f: three pods, two ready; an old
/// ReplicaSet web-6c7d: no pods) and api (ReplicaSet api-9f8e: one ready pod, one not), and
/// pods of no Deployment (a bare pod; a pod of a hand-made ReplicaSet).
fn seed(server: &FakeApiServer) {
    server
        .create("namespaces", &json!({"metadata": {"name": "prod"}}))
        .unwrap();
    for (deployment, sets) in [("web", &["5d4f", "6c7d"][..]), ("api", &["9f8e"][..])] {
        let uid = create(server, "deployments", deployment, None, json!({}));
        for hash in sets {
            let owner = ("Deployment", deployment, uid.as_str());
            let labels = json!({ "pod-template-hash": hash });
            create(
                server,
                "replicasets",
                &format!("{deployment}-{hash}"),
                Some(owner),
                labels,
            );
        }
    }
    create_pod(server, "web-5d4f-0", "web-5d4f", true);
    create_pod(server, "web-5d4f-1", "web-5d4f", true);
    create_pod(server, "web-5d4f-2", "web-5d4f", false);
    create_pod(server, "api-9f8e-0", "api-9f8e", true);
    create_pod(server, "api-9f8e-1", "api-9f8e", false);
    create(server, "pods", "bare", None, json!({}));
    let batch = create(server, "replicasets", "batch", None, json!({}));
    create(
        server,
        "pods",
        "batch-x",
        Some(("ReplicaSet", "batch", &batch)),
        json!({}),
    );
}

/// Creates `resource` `name` in `prod` controlled by `owner` (kind, name, uid); its UID.
fn create(
    server: &FakeApiServer,
    resource: &str,
    name: &str,
    owner: Option<(&str, &str, &str)>,
    labels: Value,
) -> String {
    let owners: Vec<Value> = owner
        .into_iter()
        .map(|(kind, name, uid)| {
            json!({"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": uid, "controller": true})
        })
        .collect();
    let object = json!({
        "metadata": {"namespace": "prod", "name": name, "labels": labels, "ownerReferences": owners},
    });
    server.create(resource, &object).unwrap().uid().to_owned()
}

/// A pod of ReplicaSet `set` (named `<deployment>-<hash>`), ready or not.
fn create_pod(server: &FakeApiServer, name: &str, set: &str, is_ready: bool) {
    let rs = server.get("replicasets", Some("prod"), set).unwrap();
    let hash = rs.labels()["pod-template-hash"].clone();
    let owner = ("ReplicaSet", set, rs.uid());
    create(
        server,
        "pods",
        name,
        Some(owner),
        json!({ "pod-template-hash": hash }),
    );
    if is_ready {
        ready(server, name);
    }
}

/// Marks a pod ready.
fn ready(server: &FakeApiServer, pod: &str) {
    let condition = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
    server.patch("pods", Some("prod"), pod, &condition).unwrap();
}

/// The summary of Deployment `deployment` on the server: (pods, ready).
fn summary(server: &FakeApiServer, deployment: &str) -> Option<(usize, usize)> {
    let cm = server
        .get(
            "configmaps",
            Some("prod"),
            &format!("{deployment}-replicas"),
        )
        .ok()?
        .to_value();
    let count = |field: &str| cm["data"][field].as_str()?.parse().ok();
    Some((count("pods")?, count("ready")?))
}

/// The server's objects of `resource` in `prod`, as JSON.
fn objects(server: &FakeApiServer, resource: &str) -> Vec<Value> {
    let objects = server.objects(resource, Some("prod")).unwrap();
    objects.iter().map(|o| o.to_value()).collect()
}

/// The UID of an object's controller, if any.
fn controller_uid(object: &Value) -> Option<&str> {
    object["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|o| o["controller"] == true)?["uid"]
        .as_str()
}

/// What the summaries should be, from the server's objects: Deployment name → (pods, ready),
/// following controller references by UID.
fn expected(server: &FakeApiServer) -> BTreeMap<String, (usize, usize)> {
    let (sets, pods) = (objects(server, "replicasets"), objects(server, "pods"));
    let mut expected = BTreeMap::new();
    for deployment in objects(server, "deployments") {
        let uid = deployment["metadata"]["uid"].as_str().unwrap();
        let set_uids: Vec<&str> = sets
            .iter()
            .filter(|s| controller_uid(s) == Some(uid))
            .filter_map(|s| s["metadata"]["uid"].as_str())
            .collect();
        let owned: Vec<&Value> = pods
            .iter()
            .filter(|p| controller_uid(p).is_some_and(|u| set_uids.contains(&u)))
            .collect();
        let is_ready = |p: &&&Value| {
            p["status"]["conditions"].as_array().is_some_and(|c| {
                c.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            })
        };
        let name = deployment["metadata"]["name"].as_str().unwrap().to_owned();
        expected.insert(name, (owned.len(), owned.iter().filter(is_ready).count()));
    }
    expected
}

/// The summaries on the server (the ConfigMaps labelled as this controller's), as JSON.
fn summaries(server: &FakeApiServer) -> Vec<Value> {
    let mut configmaps = objects(server, "configmaps");
    configmaps.retain(|cm| cm["metadata"]["labels"][MANAGED_BY_LABEL] == MANAGER);
    configmaps
}

/// What the summaries on the server say: Deployment name → (pods, ready).
fn actual(server: &FakeApiServer) -> BTreeMap<String, (usize, usize)> {
    summaries(server)
        .iter()
        .filter_map(|cm| {
            let name = cm["metadata"]["name"].as_str()?.strip_suffix("-replicas")?;
            let count = |field: &str| cm["data"][field].as_str()?.parse().ok();
            Some((name.to_owned(), (count("pods")?, count("ready")?)))
        })
        .collect()
}

/// Waits until the summaries are what the server's objects say they should be, re-checking
/// after every reconcile (at most [`STEP_GUARD`] without one), then until every reconcile
/// started has finished (the server shows a write before its reconcile returns, and the key
/// is forgotten and counted after that), then until the controller's cache of summaries
/// (`cached`) has seen the last write: otherwise the next step's first reconcile could replace
/// a summary at a resourceVersion already gone and fail with a conflict the step does not
/// expect (a controller retries such a conflict; a step that counts failures would miscount).
async fn converge(
    server: &FakeApiServer,
    handle: &ControllerHandle,
    cached: &Lister<ConfigMap>,
    step: &str,
) {
    let mut stats = handle.subscribe();
    loop {
        let (want, have) = (expected(server), actual(server));
        if want == have {
            let idle = stats.wait_for(|s| s.started == s.reconciles);
            match tokio::time::timeout(STEP_GUARD, idle).await {
                Ok(Ok(_)) => {}
                _ => panic!("{step}: reconciles still running after {STEP_GUARD:?}"),
            }
            let caught_up = async {
                while versions(cached) != server_versions(server) {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            };
            tokio::time::timeout(STEP_GUARD, caught_up)
                .await
                .unwrap_or_else(|_| panic!("{step}: the summaries' cache lags the server"));
            return;
        }
        match tokio::time::timeout(STEP_GUARD, stats.changed()).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => panic!("{step}: the controller stopped; want {want:?}, have {have:?}"),
            Err(_) => panic!(
                "{step}: no reconcile for {STEP_GUARD:?}; want {want:?}, have {have:?}, stats {:?}, \
                 pending faults {:?}",
                handle.stats(),
                server.faults().pending()
            ),
        }
    }
}

/// The summaries in the controller's cache: name → resourceVersion.
fn versions(cached: &Lister<ConfigMap>) -> BTreeMap<String, String> {
    let summaries = cached.list_all();
    let version = |cm: &ConfigMap| {
        let meta = &cm.metadata;
        Some((meta.name.clone()?, meta.resource_version.clone()?))
    };
    summaries.iter().filter_map(|cm| version(cm)).collect()
}

/// The summaries on the server: name → resourceVersion.
fn server_versions(server: &FakeApiServer) -> BTreeMap<String, String> {
    summaries(server)
        .iter()
        .filter_map(|cm| {
            let meta = &cm["metadata"];
            Some((
                meta["name"].as_str()?.to_owned(),
                meta["resourceVersion"].as_str()?.to_owned(),
            ))
        })
        .collect()
}
