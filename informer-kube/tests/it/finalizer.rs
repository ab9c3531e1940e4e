//! `informer_kube::finalizer` in an `informer_controller::Controller` over kube-client and the
//! HTTP fake API server: the finalizer is added before the first apply; a deletion runs the
//! cleanup, then removes the finalizer and the object goes; other finalizers stay; a failing
//! cleanup keeps the object until it succeeds; a deletion made while no controller ran is
//! cleaned up by the next one; a decision on a stale version is refused with 409.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use fake_apiserver::FakeApiServer;
use informer_controller::{Action, Context, Controller, ControllerConfig, ControllerHandle};
use informer_kube::{FinalizerError, FinalizerEvent, finalizer};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::Api;
use kube_client::api::{DeleteParams, PostParams};
use parking_lot::Mutex;
use serde_json::json;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::support::{Env, wait_until};

const FINALIZER: &str = "example.com/cleanup";

/// What the controller's "outside world" holds: one entry per applied config map.
#[derive(Default)]
struct World {
    applied: Mutex<BTreeSet<String>>,
    fail_cleanup: AtomicBool,
}

type Run =
    JoinHandle<Result<informer_controller::ControllerReport, informer_controller::ControllerError>>;

/// Starts a controller of config maps whose reconcile keeps `world` in step through the
/// finalizer.
fn start(env: &Env, world: &Arc<World>) -> (ControllerHandle, CancellationToken, Run) {
    let factory = env.factory();
    let controller = Controller::new(
        factory.informer::<ConfigMap>().unwrap(),
        ControllerConfig::default(),
    )
    .manage_factory(factory);
    let handle = controller.handle();
    let stop = CancellationToken::new();
    let (client, world) = (env.client.clone(), Arc::clone(world));
    let reconcile = move |cm: Arc<ConfigMap>, ctx: Context<()>| {
        let (client, world) = (client.clone(), Arc::clone(&world));
        async move {
            if ctx.deleted() {
                // Gone: its cleanup ran before the finalizer let it go.
                return Ok(Action::Done);
            }
            let namespace = cm.metadata.namespace.clone().unwrap_or_default();
            let key = format!(
                "{namespace}/{}",
                cm.metadata.name.clone().unwrap_or_default()
            );
            let api: Api<ConfigMap> = Api::namespaced(client, &namespace);
            finalizer(&api, FINALIZER, cm, |event| async move {
                match event {
                    FinalizerEvent::Apply(_) => {
                        world.applied.lock().insert(key);
                        Ok(())
                    }
                    FinalizerEvent::Cleanup(_) if world.fail_cleanup.load(Ordering::SeqCst) => {
                        Err(std::io::Error::other("the outside world is unreachable"))
                    }
                    FinalizerEvent::Cleanup(_) => {
                        world.applied.lock().remove(&key);
                        Ok(())
                    }
                }
            })
            .await
            .map(|_| Action::Done)
        }
    };
    let run = tokio::spawn(controller.run(reconcile, (), stop.clone()));
    (handle, stop, run)
}

fn finalizers(engine: &FakeApiServer, name: &str) -> Option<serde_json::Value> {
    engine
        .get("configmaps", Some("prod"), name)
        .ok()
        .map(|o| o.to_value()["metadata"]["finalizers"].clone())
}

fn applied(world: &World, name: &str) -> bool {
    world.applied.lock().contains(&format!("prod/{name}"))
}

/// Cleaned up outside, and gone from the server.
fn cleaned_up(env: &Env, world: &World, name: &str) -> bool {
    !applied(world, name) && finalizers(&env.engine, name).is_none()
}

/// A fresh server with namespace `prod`, and config maps there.
async fn in_prod() -> (Env, Api<ConfigMap>) {
    let env = Env::start().await;
    env.engine
        .create("namespaces", &json!({"metadata": {"name": "prod"}}))
        .unwrap();
    let api = Api::namespaced(env.client.clone(), "prod");
    (env, api)
}

async fn create(api: &Api<ConfigMap>, name: &str, other_finalizers: &[&str]) {
    let mut cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": name},
        "data": {"a": "1"},
    }))
    .unwrap();
    if !other_finalizers.is_empty() {
        cm.metadata.finalizers = Some(other_finalizers.iter().map(|f| (*f).to_owned()).collect());
    }
    api.create(&PostParams::default(), &cm).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cleanups_run_before_objects_go_even_across_controller_restarts() {
    let (env, api) = in_prod().await;
    let world = Arc::new(World::default());
    let describe = || format!("world {:?}", world.applied.lock());
    create(&api, "a", &[]).await;
    create(&api, "b", &["other.io/keep"]).await;
    let (handle, stop, run) = start(&env, &world);

    // The finalizer first, then the apply.
    wait_until(
        "a and b applied",
        None,
        || applied(&world, "a") && applied(&world, "b"),
        describe,
    )
    .await;
    assert_eq!(finalizers(&env.engine, "a"), Some(json!([FINALIZER])));
    assert_eq!(
        finalizers(&env.engine, "b"),
        Some(json!(["other.io/keep", FINALIZER]))
    );

    // Deleted: cleaned up, then released; b stays for the other finalizer.
    api.delete("a", &DeleteParams::default()).await.unwrap();
    api.delete("b", &DeleteParams::default()).await.unwrap();
    wait_until(
        "a gone, b released",
        None,
        || {
            cleaned_up(&env, &world, "a")
                && !applied(&world, "b")
                && finalizers(&env.engine, "b") == Some(json!(["other.io/keep"]))
        },
        describe,
    )
    .await;

    // A failing cleanup keeps the object (and the finalizer) until it succeeds.
    create(&api, "c", &[]).await;
    wait_until("c applied", None, || applied(&world, "c"), describe).await;
    world.fail_cleanup.store(true, Ordering::SeqCst);
    let failures = handle.stats().failures;
    api.delete("c", &DeleteParams::default()).await.unwrap();
    wait_until(
        "c's cleanup failed twice",
        None,
        || handle.stats().failures >= failures + 2,
        describe,
    )
    .await;
    assert_eq!(finalizers(&env.engine, "c"), Some(json!([FINALIZER])));
    assert!(applied(&world, "c"));
    world.fail_cleanup.store(false, Ordering::SeqCst);
    wait_until(
        "c cleaned up and gone",
        None,
        || cleaned_up(&env, &world, "c"),
        describe,
    )
    .await;

    // Deleted while no controller runs: the next one cleans up.
    create(&api, "d", &[]).await;
    wait_until("d applied", None, || applied(&world, "d"), describe).await;
    stop.cancel();
    run.await.unwrap().unwrap();
    api.delete("d", &DeleteParams::default()).await.unwrap();
    let held = env.engine.get("configmaps", Some("prod"), "d").unwrap();
    assert!(held.to_value()["metadata"]["deletionTimestamp"].is_string());
    let (_, stop, run) = start(&env, &world);
    wait_until(
        "d cleaned up by the next controller",
        None,
        || cleaned_up(&env, &world, "d"),
        describe,
    )
    .await;
    stop.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_on_a_stale_version_is_refused_with_a_conflict() {
    let (env, api) = in_prod().await;
    create(&api, "e", &[]).await;
    let stale = Arc::new(api.get("e").await.unwrap());
    env.engine
        .patch(
            "configmaps",
            Some("prod"),
            "e",
            &json!({"data": {"a": "2"}}),
        )
        .unwrap();
    let ran = AtomicBool::new(false);
    let outcome = finalizer(&api, FINALIZER, stale, |_| async {
        ran.store(true, Ordering::SeqCst);
        Ok::<_, std::io::Error>(())
    })
    .await;
    match outcome {
        Err(FinalizerError::Patch { action, source, .. }) => {
            assert_eq!(action, "add");
            assert_eq!(source.status().map(|s| s.code), Some(409), "{source}");
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert!(!ran.load(Ordering::SeqCst));
    assert_eq!(finalizers(&env.engine, "e"), Some(serde_json::Value::Null));
    // A name the API server would refuse is refused before any request.
    let fresh = Arc::new(api.get("e").await.unwrap());
    let invalid = finalizer(&api, "cleanup", fresh, |_| async {
        Ok::<_, std::io::Error>(())
    })
    .await;
    assert!(
        matches!(invalid, Err(FinalizerError::InvalidFinalizer { .. })),
        "{invalid:?}"
    );
}

/// With a controller that skips updates whose generation did not change, the finalizer's own
/// update is skipped: the apply runs in the call that added the finalizer, and the deletion
/// (which moves a positive generation) still reaches the cleanup.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generation_filter_still_applies_and_cleans_up() {
    use informer_controller::generation_changed;
    use k8s_openapi::api::apps::v1::Deployment;

    let (env, _) = in_prod().await;
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), "prod");
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
        },
    }))
    .unwrap();
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap();
    let world = Arc::new(World::default());
    let factory = env.factory();
    let controller = Controller::new(
        factory.informer::<Deployment>().unwrap(),
        ControllerConfig::default(),
    )
    .reconcile_updates_if(generation_changed)
    .manage_factory(factory);
    let handle = controller.handle();
    let stop = CancellationToken::new();
    let (client, seen) = (env.client.clone(), Arc::clone(&world));
    let reconcile = move |d: Arc<Deployment>, ctx: Context<()>| {
        let (client, world) = (client.clone(), Arc::clone(&seen));
        async move {
            if ctx.deleted() {
                return Ok(Action::Done);
            }
            let api: Api<Deployment> = Api::namespaced(client, "prod");
            finalizer(&api, FINALIZER, d, |event| async move {
                let mut applied = world.applied.lock();
                match event {
                    FinalizerEvent::Apply(_) => applied.insert("prod/web".to_owned()),
                    FinalizerEvent::Cleanup(_) => applied.remove("prod/web"),
                };
                Ok::<_, std::io::Error>(())
            })
            .await
            .map(|_| Action::Done)
        }
    };
    let run = tokio::spawn(controller.run(reconcile, (), stop.clone()));
    let describe = || format!("world {:?}, {:?}", world.applied.lock(), handle.stats());
    let generation = || {
        env.engine
            .get("deployments", Some("prod"), "web")
            .ok()
            .map(|o| o.to_value()["metadata"]["generation"].clone())
    };
    wait_until(
        "applied once the finalizer is on, its update filtered",
        None,
        || applied(&world, "web") && handle.stats().filtered >= 1,
        describe,
    )
    .await;
    assert_eq!(generation(), Some(json!(1)));
    deployments
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    wait_until(
        "cleaned up and gone",
        None,
        || !applied(&world, "web") && generation().is_none(),
        describe,
    )
    .await;
    stop.cancel();
    run.await.unwrap().unwrap();
}
