//! The `fake-apiserver` binary: its first line, seeding, kubeconfig, token, admin API and
//! clean shutdown on SIGTERM.
#![cfg(feature = "http")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests: a failed unwrap is a failed test.

mod http_support;

use http_support::{Binary, client};
use serde_json::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seeds_serves_writes_a_kubeconfig_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let bin = Binary::start(&[
        "--seed",
        "pods=12,configmaps=3",
        "--namespaces",
        "3",
        "--churn",
        "5",
        "--bookmark-interval",
        "30",
        "--history-max-events",
        "5000",
        "--kubeconfig-out",
        kubeconfig.to_str().unwrap(),
    ])
    .await;
    assert!(bin.url().starts_with("http://127.0.0.1:"), "{}", bin.ready);
    assert_eq!(bin.ready["token"], Value::Null);
    assert_eq!(bin.ready["kubeconfig"], kubeconfig.to_str().unwrap());
    let text = std::fs::read_to_string(&kubeconfig).unwrap();
    assert!(
        text.contains(&format!("server: \"{}\"", bin.url())),
        "{text}"
    );
    // The JavaScript client refuses a plain-http cluster without this flag.
    assert!(
        text.contains("\n    insecure-skip-tls-verify: true\n"),
        "{text}"
    );
    let pods: Value = client()
        .get(format!("{}/api/v1/namespaces/ns-1/pods", bin.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    // 4 seeded per namespace; churn (5 writes/s) may have deleted some already.
    assert!(!pods["items"].as_array().unwrap().is_empty(), "{pods}");
    assert_eq!(pods["items"][0]["kind"], "Pod");
    let state: Value = client()
        .get(format!("{}/_fake/state", bin.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(state["resourceVersion"].as_u64().unwrap() >= 18);
    // A watch is open while the server stops: the stop still completes.
    let watch = client()
        .get(format!("{}/api/v1/pods?watch=1", bin.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(watch.status(), 200);
    let status = bin.terminate().await;
    assert!(status.success(), "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_loopback_listener_requires_the_printed_token() {
    let bin = Binary::start(&["--listen", "0.0.0.0:0"]).await;
    let token = bin.ready["token"]
        .as_str()
        .expect("a generated token")
        .to_owned();
    let url = format!("{}/api/v1/pods", bin.url());
    let denied = client().get(&url).send().await.unwrap();
    assert_eq!(denied.status(), 401);
    let body: Value = denied.json().await.unwrap();
    assert_eq!(body["reason"], "Unauthorized");
    assert_eq!(
        client()
            .get(&url)
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    assert!(bin.terminate().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_arguments_fail_with_a_message() {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_fake-apiserver"))
        .args(["--seed", "secrets=3"])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("secrets"));
    let help = tokio::process::Command::new(env!("CARGO_BIN_EXE_fake-apiserver"))
        .arg("--help")
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(text.contains("/_fake/faults/fail-lists"), "{text}");
    assert!(text.contains("--kubeconfig-out"));
}
