//! The shutdown order (no more keys, reconciles in flight finish while the informers still
//! run, the queue and the handlers go, the managed factory stops last), a stop before the
//! sync, and unusable settings.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use fake_apiserver::status;
use informer::ObjectKey;
use informer_controller::{Action, Context, Controller, ControllerConfig, ControllerError};
use informer_testing::JsonObject;
use tokio_util::sync::CancellationToken;

use crate::support::{Env, Failed, wait_until};

#[tokio::test(start_paused = true)]
async fn reconciles_in_flight_finish_before_the_informers_stop_and_queued_keys_are_left() {
    let env = Env::new();
    for name in ["a", "b", "c"] {
        env.create("deployments", name);
    }
    let deployments = env.informer("deployments");
    // One worker; every reconcile takes 5 s and checks, at its end, that the informer it
    // reads still runs.
    let informer_ran = Arc::new(AtomicBool::new(true));
    let checked = Arc::clone(&informer_ran);
    let watched = deployments.clone();
    let reconcile = move |_: Arc<JsonObject>, _: Context<()>| {
        let checked = Arc::clone(&checked);
        let watched = watched.clone();
        async move {
            tokio::time::sleep(Duration::from_secs(5)).await;
            if watched.is_stopped() {
                checked.store(false, Ordering::SeqCst);
            }
            Ok::<_, Failed>(Action::Done)
        }
    };
    let controller = Controller::new(deployments.clone(), ControllerConfig::default())
        .manage_factory(env.factory.clone());
    let handle = controller.handle();
    let stop = CancellationToken::new();
    let run = tokio::spawn(controller.run(reconcile, (), stop.clone()));
    wait_until(&handle, "a reconcile in flight", || {
        !handle.in_flight().is_empty()
    })
    .await;
    stop.cancel();
    let report = run.await.unwrap().unwrap();
    // The reconcile in flight finished; the two keys queued behind it were not started.
    assert_eq!(report.stats.successes, 1);
    assert!(report.abandoned.is_empty());
    assert_eq!(report.queued, 2);
    assert!(
        informer_ran.load(Ordering::SeqCst),
        "the informer stopped under a reconcile"
    );
    // Then the handler left and the managed factory stopped.
    assert!(deployments.registrations().is_empty());
    assert!(deployments.is_stopped());
    let informers = report.informers.unwrap();
    assert_eq!(informers.informers.len(), 1);
    assert!(informers.failures.is_empty());
    // A stopped controller takes no more keys.
    handle.enqueue(ObjectKey::new(Some("prod"), "new").unwrap());
    assert_eq!(handle.queued(), 2);
}

#[tokio::test(start_paused = true)]
async fn stopping_before_the_sync_is_a_clean_shutdown() {
    let env = Env::new();
    env.create("deployments", "web");
    let faults = env.server.faults();
    faults.fail_lists("*", 1_000_000, status::internal_error("down"));
    faults.fail_watches("*", 1_000_000, status::internal_error("down"));
    let controller = Controller::new(env.informer("deployments"), ControllerConfig::default())
        .manage_factory(env.factory.clone());
    let stop = CancellationToken::new();
    let reconcile = |_: Arc<JsonObject>, _: Context<()>| async { Ok::<_, Failed>(Action::Done) };
    let run = tokio::spawn(controller.run(reconcile, (), stop.clone()));
    tokio::time::timeout(
        crate::support::GUARD,
        env.server.wait_for_request(|r| r.is_list_of("deployments")),
    )
    .await
    .unwrap();
    stop.cancel();
    let report = run.await.unwrap().unwrap();
    assert_eq!(report.stats.reconciles, 0);
    assert!(report.informers.unwrap().failures.is_empty());
    assert_eq!(report.informer_stats.len(), 1);
    assert!(!report.informer_stats[0].1.has_synced);
}

#[tokio::test(start_paused = true)]
async fn a_controller_without_workers_is_refused_and_stops_its_factory() {
    let env = Env::new();
    let deployments = env.informer("deployments");
    let config = ControllerConfig {
        workers: 0,
        name: "idle".into(),
        ..ControllerConfig::default()
    };
    let controller =
        Controller::new(deployments.clone(), config).manage_factory(env.factory.clone());
    let reconcile = |_: Arc<JsonObject>, _: Context<()>| async { Ok::<_, Failed>(Action::Done) };
    let error = controller
        .run(reconcile, (), CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ControllerError::Config { controller, .. } if controller == "idle"),
        "{error:?}"
    );
    assert!(error.to_string().contains("at least one worker"), "{error}");
    assert!(deployments.registrations().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_stopped_informer_refuses_the_handler() {
    let env = Env::new();
    let deployments = env.informer("deployments");
    env.factory.start();
    env.factory.shutdown().await;
    let controller = Controller::new(deployments, ControllerConfig::default());
    let reconcile = |_: Arc<JsonObject>, _: Context<()>| async { Ok::<_, Failed>(Action::Done) };
    let error = controller
        .run(reconcile, (), CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ControllerError::Handler { informer, .. } if informer == "deployments"),
        "{error:?}"
    );
}
