//! `informer_kube::events::EventRecorder` over kube-client and the HTTP fake API server: an
//! event is created in its object's namespace (`default` for a cluster-scoped one) with what
//! `kubectl` shows; repeats fold into the first one's series; another reason, type or related
//! object is another event; notes are cut; an event the server no longer holds is created anew;
//! failures are typed and the recorder goes on.

use informer_kube::events::{Event, EventRecorder, EventType, MAX_NOTE_BYTES, Reporter};
use k8s_openapi::api::core::v1::{ConfigMap, Event as CoreEvent, Namespace};
use kube_client::Api;
use kube_client::api::PostParams;
use kube_client::core::Resource;
use serde_json::{Value, json};

use crate::support::Env;

fn events(env: &Env, namespace: &str) -> Vec<Value> {
    env.engine
        .objects("events.events.k8s.io", Some(namespace))
        .unwrap()
        .iter()
        .map(|o| o.to_value())
        .collect()
}

fn event(reason: &str) -> Event {
    Event {
        type_: EventType::Normal,
        reason: reason.to_owned(),
        action: "Reconcile".to_owned(),
        note: Some(format!("{reason} it")),
        related: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_are_created_once_and_repeats_fold_into_their_series() {
    let env = Env::start().await;
    for ns in ["prod", "default"] {
        env.engine
            .create("namespaces", &json!({"metadata": {"name": ns}}))
            .unwrap();
    }
    let api: Api<ConfigMap> = Api::namespaced(env.client.clone(), "prod");
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "web"}})).unwrap();
    let cm = api.create(&PostParams::default(), &cm).await.unwrap();
    let reference = cm.object_ref(&());
    let recorder = EventRecorder::new(
        env.client.clone(),
        Reporter {
            controller: "example.com/mirror".into(),
            instance: Some("mirror-0".into()),
        },
    );

    recorder
        .publish(&event("Mirrored"), &reference)
        .await
        .unwrap();
    let created = events(&env, "prod");
    assert_eq!(created.len(), 1, "{created:?}");
    let first = &created[0];
    assert!(
        first["metadata"]["name"]
            .as_str()
            .unwrap()
            .starts_with("web.")
    );
    assert_eq!(first["reason"], "Mirrored");
    assert_eq!(first["action"], "Reconcile");
    assert_eq!(first["type"], "Normal");
    assert_eq!(first["note"], "Mirrored it");
    assert_eq!(first["reportingController"], "example.com/mirror");
    assert_eq!(first["reportingInstance"], "mirror-0");
    assert_eq!(first["regarding"]["kind"], "ConfigMap");
    assert_eq!(first["regarding"]["name"], "web");
    assert_eq!(first["regarding"]["uid"], cm.metadata.uid.clone().unwrap());
    assert!(first["eventTime"].is_string());
    assert!(first.get("series").is_none());

    // Repeats (another note too: not part of what makes an event the same).
    recorder
        .publish(&event("Mirrored"), &reference)
        .await
        .unwrap();
    let mut renoted = event("Mirrored");
    renoted.note = Some("again".into());
    recorder.publish(&renoted, &reference).await.unwrap();
    let folded = events(&env, "prod");
    assert_eq!(folded.len(), 1, "{folded:?}");
    assert_eq!(folded[0]["series"]["count"], 3);
    assert!(folded[0]["series"]["lastObservedTime"].is_string());
    // Tools that read core v1 Events (`kubectl describe`) see the same event, converted.
    let core: Vec<CoreEvent> = Api::namespaced(env.client.clone(), "prod")
        .list(&Default::default())
        .await
        .unwrap()
        .items;
    assert_eq!(core.len(), 1);
    assert_eq!(
        core[0].metadata.name,
        folded[0]["metadata"]["name"].as_str().map(String::from)
    );
    assert_eq!(core[0].message.as_deref(), Some("Mirrored it"));
    assert_eq!(
        core[0].reporting_component.as_deref(),
        Some("example.com/mirror")
    );
    assert_eq!(core[0].involved_object.uid, cm.metadata.uid);
    assert_eq!(core[0].series.as_ref().and_then(|s| s.count), Some(3));

    // Another reason, type or related object: another event.
    recorder
        .publish(&event("Pruned"), &reference)
        .await
        .unwrap();
    let mut warning = event("Mirrored");
    warning.type_ = EventType::Warning;
    recorder.publish(&warning, &reference).await.unwrap();
    let mut related = event("Mirrored");
    related.related = Some(reference.clone());
    recorder.publish(&related, &reference).await.unwrap();
    assert_eq!(events(&env, "prod").len(), 4);

    // A cluster-scoped object's events go to `default`; long notes are cut.
    let namespace: Namespace = Api::all(env.client.clone()).get("prod").await.unwrap();
    let mut long = event("Labelled");
    long.note = Some("x".repeat(3 * MAX_NOTE_BYTES));
    recorder
        .publish(&long, &namespace.object_ref(&()))
        .await
        .unwrap();
    let in_default = events(&env, "default");
    assert_eq!(in_default.len(), 1);
    assert_eq!(
        in_default[0]["note"].as_str().unwrap().len(),
        MAX_NOTE_BYTES
    );

    // The server dropped the event (they expire): the next repeat creates a new one.
    let name = first["metadata"]["name"].as_str().unwrap().to_owned();
    env.engine
        .delete("events.events.k8s.io", Some("prod"), &name)
        .unwrap();
    recorder
        .publish(&event("Mirrored"), &reference)
        .await
        .unwrap();
    let renewed = events(&env, "prod");
    assert_eq!(renewed.len(), 4);
    assert!(
        renewed
            .iter()
            .all(|e| e["metadata"]["name"] != name.as_str())
    );

    // A failure is typed, and the recorder goes on.
    env.engine.faults().fail_writes(
        "events.events.k8s.io",
        1,
        fake_apiserver::status::internal_error("etcd is down"),
    );
    let failed = recorder.publish(&event("Broken"), &reference).await;
    let error = failed.unwrap_err();
    assert_eq!(error.reason, "Broken");
    assert_eq!(error.regarding, "prod/web");
    assert_eq!(error.source.status().map(|s| s.code), Some(500), "{error}");
    recorder
        .publish(&event("Broken"), &reference)
        .await
        .unwrap();
    assert_eq!(events(&env, "prod").len(), 5);
}

/// A server that accepts the connection and never answers: the publish ends with the
/// recorder's own timeout (real time), typed as a response timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_server_is_given_up_after_the_timeout() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((connection, _)) = listener.accept().await {
            held.push(connection);
        }
    });
    let client = crate::support::client(&format!("http://{address}")).unwrap();
    let recorder = EventRecorder::new(client, Reporter::new("example.com/mirror"))
        .with_timeout(std::time::Duration::from_millis(200));
    let reference = k8s_openapi::api::core::v1::ObjectReference {
        kind: Some("ConfigMap".into()),
        namespace: Some("prod".into()),
        name: Some("web".into()),
        ..Default::default()
    };
    let outcome = tokio::time::timeout(
        crate::support::GUARD,
        recorder.publish(&event("Mirrored"), &reference),
    )
    .await
    .expect("bounded by the recorder's timeout");
    let error = outcome.unwrap_err();
    assert!(
        matches!(
            error.source.limit_exceeded(),
            Some(informer_core::Limit::ResponseTimeout(_))
        ),
        "{error:?}"
    );
    silent.abort();
}
