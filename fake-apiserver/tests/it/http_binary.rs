//! The `fake-apiserver` binary: its first line, seeding, kubeconfig, token, admin API and
//! clean shutdown on SIGTERM and SIGINT, also under churn it cannot keep up with and with
//! clients that stopped reading or sending.
#![cfg(feature = "http")]

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::support::GUARD;
use crate::support::http::{Binary, client, stalled_watch};

/// How long the binary may take to exit after SIGTERM or SIGINT: it stops within a second
/// by design (0.8 s for churn and server, 0.2 s for the runtime); the rest is slack for a
/// loaded machine.
const STOP_BOUND: Duration = Duration::from_secs(3);

/// Flags that keep a churning binary's memory small: a short history window.
const SMALL_HISTORY: &[&str] = &[
    "--history-max-events",
    "1000",
    "--history-max-bytes",
    "16777216",
];

async fn json_of(response: reqwest::Response) -> Value {
    assert!(response.status().is_success(), "{response:?}");
    response.json().await.unwrap()
}

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
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&kubeconfig).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the kubeconfig is readable by others");
    }
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn churn_beyond_the_store_skips_writes_and_stops_at_once() {
    let bin = Binary::start(SMALL_HISTORY).await;
    let url = bin.url().to_owned();
    let started = client()
        .post(format!("{url}/_fake/churn"))
        .json(&json!({"ratePerSecond": 1e9, "resources": ["configmaps"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(started.status(), 200);
    // The server keeps answering, and the churn soon skips what it cannot write.
    let deadline = tokio::time::Instant::now() + GUARD;
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let running = json_of(
            tokio::time::timeout(GUARD, client().get(format!("{url}/_fake/churn")).send())
                .await
                .expect("the server stopped answering under churn")
                .unwrap(),
        )
        .await;
        assert_eq!(running["running"], true, "{running}");
        if running["skipped"].as_u64().unwrap() > 0 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no write skipped: {running}"
        );
    }
    let stopped = json_of(
        tokio::time::timeout(
            Duration::from_secs(10),
            client().delete(format!("{url}/_fake/churn")).send(),
        )
        .await
        .expect("DELETE /_fake/churn hung")
        .unwrap(),
    )
    .await;
    assert_eq!(stopped["running"], false, "{stopped}");
    assert!(stopped["creates"].as_u64().unwrap() > 0, "{stopped}");
    // Stopped, not orphaned: nothing writes any more.
    let rv = |state: Value| state["resourceVersion"].as_u64().unwrap();
    let state = || async {
        json_of(
            client()
                .get(format!("{url}/_fake/state"))
                .send()
                .await
                .unwrap(),
        )
        .await
    };
    let before = rv(state().await);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(rv(state().await), before);
    let (status, took) = bin.stop_with("TERM", STOP_BOUND).await;
    eprintln!("stopped {took:?} after SIGTERM");
    assert!(status.success(), "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_and_sigint_stop_it_under_heavy_churn_with_stalled_clients() {
    for signal in ["TERM", "INT"] {
        let mut args = vec!["--seed", "pods=200", "--churn", "1000000000"];
        args.extend_from_slice(SMALL_HISTORY);
        let bin = Binary::start(&args).await;
        let address = bin.ready["address"].as_str().unwrap().to_owned();
        // An open watch read by a live client.
        let watch = client()
            .get(format!("{}/api/v1/pods?watch=1", bin.url()))
            .send()
            .await
            .unwrap();
        assert_eq!(watch.status(), 200);
        // A watch whose reader stopped reading, a request head half sent, a connection that
        // sent nothing.
        let _stalled = stalled_watch(address.parse().unwrap()).await;
        let mut half = TcpStream::connect(&address).await.unwrap();
        half.write_all(b"GET /api/v1/pods HTTP/1.1\r\nHo")
            .await
            .unwrap();
        let _silent = TcpStream::connect(&address).await.unwrap();
        // Churn in full swing.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let (status, took) = bin.stop_with(signal, STOP_BOUND).await;
        eprintln!("stopped {took:?} after SIG{signal}");
        assert!(status.success(), "SIG{signal}: {status}");
        drop(watch);
    }
}
