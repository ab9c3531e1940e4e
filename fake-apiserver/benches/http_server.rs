//! Benchmark of the fake API server's HTTP front end (a small harness: each figure is a
//! wall-clock measurement of a whole scenario, repeated a few times):
//!
//! 1. a full list of 100k realistic pods over HTTP with `limit=500` (reqwest client, pages
//!    decoded up to their metadata), wall time per full list;
//! 2. resident memory of a `fake-apiserver` process holding 100k seeded pods (from
//!    `/proc/<pid>/status`), against the same process with none, and after serving a full list;
//! 3. events per second fanned out to 100 HTTP watchers (each event a ~6 KB pod).
//!
//! `cargo bench -p fake-apiserver --bench http_server`. Without `--bench` (as under
//! `cargo test --all-targets`) it runs a small smoke version. Sizes can be overridden with
//! `HTTP_BENCH_PODS`, `HTTP_BENCH_WATCHERS`, `HTTP_BENCH_EVENTS`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // Benches: a failed unwrap is a failed run.

use std::time::Instant;

use fake_apiserver::FakeApiServer;
use fake_apiserver::http::{FakeHttpServer, HttpConfig};
use fake_apiserver::seed::{self, SeedConfig};
use futures::StreamExt;
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::json;
use tokio::io::AsyncBufReadExt;

struct Sizes {
    pods: usize,
    watchers: usize,
    events: usize,
    rounds: usize,
}

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let sizes = if full {
        Sizes {
            pods: env_or("HTTP_BENCH_PODS", 100_000),
            watchers: env_or("HTTP_BENCH_WATCHERS", 100),
            events: env_or("HTTP_BENCH_EVENTS", 2_000),
            rounds: 3,
        }
    } else {
        Sizes {
            pods: env_or("HTTP_BENCH_PODS", 2_000),
            watchers: env_or("HTTP_BENCH_WATCHERS", 10),
            events: env_or("HTTP_BENCH_EVENTS", 100),
            rounds: 1,
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    println!(
        "http_server bench ({} mode): {} pods, {} watchers, {} events",
        if full { "full" } else { "smoke" },
        sizes.pods,
        sizes.watchers,
        sizes.events
    );
    rt.block_on(list_over_http(&sizes));
    rt.block_on(server_memory(&sizes));
    rt.block_on(fan_out(&sizes));
}

fn seeded(pods: usize) -> FakeApiServer {
    let server = FakeApiServer::new();
    seed::seed(
        &server,
        &SeedConfig {
            namespaces: 100,
            pods,
            configmaps: 0,
            seed: 1,
        },
    )
    .unwrap();
    server
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

#[derive(Deserialize)]
struct Page {
    metadata: PageMeta,
    items: Vec<IgnoredAny>,
}

#[derive(Deserialize)]
struct PageMeta {
    #[serde(default)]
    r#continue: Option<String>,
}

/// Lists every pod with `limit=500`, following continue tokens; returns (items, bytes, pages).
async fn paged_list(client: &reqwest::Client, base: &str) -> (usize, usize, usize) {
    let (mut items, mut bytes, mut pages) = (0, 0, 0);
    let mut token: Option<String> = None;
    loop {
        let mut req = client
            .get(format!("{base}/api/v1/pods"))
            .query(&[("limit", "500")]);
        if let Some(t) = &token {
            req = req.query(&[("continue", t.as_str())]);
        }
        let body = req.send().await.unwrap().bytes().await.unwrap();
        let page: Page = serde_json::from_slice(&body).unwrap();
        items += page.items.len();
        bytes += body.len();
        pages += 1;
        match page.metadata.r#continue.filter(|c| !c.is_empty()) {
            Some(t) => token = Some(t),
            None => return (items, bytes, pages),
        }
    }
}

async fn list_over_http(sizes: &Sizes) {
    let started = Instant::now();
    let server = seeded(sizes.pods);
    let json_bytes: usize = server
        .objects("pods", None)
        .unwrap()
        .iter()
        .map(|o| o.bytes().len())
        .sum();
    println!(
        "seeded {} pods in {:.2?} ({:.0} bytes of JSON per pod)",
        sizes.pods,
        started.elapsed(),
        json_bytes as f64 / sizes.pods as f64
    );
    let http = FakeHttpServer::start(server, HttpConfig::default())
        .await
        .unwrap();
    let client = client();
    let mut times = Vec::new();
    for round in 0..sizes.rounds {
        let t = Instant::now();
        let (items, bytes, pages) = paged_list(&client, &http.url()).await;
        let elapsed = t.elapsed();
        assert_eq!(items, sizes.pods);
        println!(
            "  full list round {}: {items} pods in {pages} pages, {:.1} MB, {elapsed:.2?} ({:.0} pods/s, {:.0} MB/s)",
            round + 1,
            bytes as f64 / 1e6,
            items as f64 / elapsed.as_secs_f64(),
            bytes as f64 / 1e6 / elapsed.as_secs_f64()
        );
        times.push(elapsed);
    }
    times.sort();
    println!(
        "list {} pods over HTTP, limit=500: best {:.2?}, median {:.2?}",
        sizes.pods,
        times[0],
        times[times.len() / 2]
    );
    http.shutdown().await.unwrap();
}

/// `VmRSS` and `VmHWM` of a process, in bytes.
fn rss(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

struct Child {
    child: tokio::process::Child,
    url: String,
}

async fn spawn_server(pods: usize) -> Child {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_fake-apiserver"))
        .args(["--seed", &format!("pods={pods}"), "--namespaces", "100"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next_line().await.unwrap().expect("a first line");
    let ready: serde_json::Value = serde_json::from_str(&first).unwrap();
    Child {
        child,
        url: ready["url"].as_str().unwrap().to_owned(),
    }
}

async fn server_memory(sizes: &Sizes) {
    let mb = |b: u64| b as f64 / (1024.0 * 1024.0);
    let empty = spawn_server(0).await;
    let (empty_rss, _) = rss(empty.child.id().unwrap());
    drop(empty);
    let t = Instant::now();
    let full = spawn_server(sizes.pods).await;
    let startup = t.elapsed();
    let pid = full.child.id().unwrap();
    let (seeded_rss, seeded_hwm) = rss(pid);
    let (items, _, _) = paged_list(&client(), &full.url).await;
    assert_eq!(items, sizes.pods);
    let (after_rss, after_hwm) = rss(pid);
    println!(
        "fake-apiserver RSS: {:.1} MiB empty; {:.1} MiB holding {} pods (peak {:.1} MiB while seeding, ready in {startup:.2?}), {:.0} bytes per pod",
        mb(empty_rss),
        mb(seeded_rss),
        sizes.pods,
        mb(seeded_hwm),
        seeded_rss.saturating_sub(empty_rss) as f64 / sizes.pods as f64
    );
    println!(
        "  after serving a full paged list: {:.1} MiB (peak {:.1} MiB)",
        mb(after_rss),
        mb(after_hwm)
    );
}

async fn fan_out(sizes: &Sizes) {
    let pods = sizes.pods.min(1_000);
    let server = seeded(pods);
    let http = FakeHttpServer::start(server.clone(), HttpConfig::default())
        .await
        .unwrap();
    let targets: Vec<(String, String)> = server
        .objects("pods", None)
        .unwrap()
        .iter()
        .map(|o| (o.namespace().unwrap().to_owned(), o.name().to_owned()))
        .collect();
    let rv = server.resource_version();
    let client = client();
    let (done_tx, mut done_rx) = tokio::sync::mpsc::channel::<(usize, usize)>(sizes.watchers);
    for _ in 0..sizes.watchers {
        let resp = client
            .get(format!(
                "{}/api/v1/pods?watch=1&resourceVersion={rv}",
                http.url()
            ))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let done = done_tx.clone();
        let want = sizes.events;
        tokio::spawn(async move {
            let mut stream = resp.bytes_stream();
            let (mut lines, mut bytes) = (0, 0);
            while lines < want {
                let Some(Ok(chunk)) = stream.next().await else {
                    break;
                };
                bytes += chunk.len();
                lines += chunk.iter().filter(|b| **b == b'\n').count();
            }
            let _ = done.send((lines, bytes)).await;
        });
    }
    drop(done_tx);
    server.wait_for_open_watches("pods", sizes.watchers).await;
    let t = Instant::now();
    for i in 0..sizes.events {
        let (ns, name) = &targets[i % targets.len()];
        server
            .patch(
                "pods",
                Some(ns),
                name,
                &json!({"metadata": {"labels": {"bench-generation": i.to_string()}}}),
            )
            .unwrap();
    }
    let written = t.elapsed();
    let (mut total_lines, mut total_bytes, mut finished) = (0usize, 0usize, 0usize);
    while let Some((lines, bytes)) = done_rx.recv().await {
        total_lines += lines;
        total_bytes += bytes;
        finished += 1;
    }
    let elapsed = t.elapsed();
    assert_eq!(finished, sizes.watchers);
    assert_eq!(
        total_lines,
        sizes.events * sizes.watchers,
        "every watcher gets every event"
    );
    println!(
        "fan-out: {} events (~{:.1} KB each) to {} HTTP watchers in {elapsed:.2?} (writes took {written:.2?}): {:.0} events/s delivered in all, {:.0} events/s per watcher, {:.0} MB/s",
        sizes.events,
        total_bytes as f64 / total_lines.max(1) as f64 / 1e3,
        sizes.watchers,
        total_lines as f64 / elapsed.as_secs_f64(),
        sizes.events as f64 / elapsed.as_secs_f64(),
        total_bytes as f64 / 1e6 / elapsed.as_secs_f64()
    );
    http.shutdown().await.unwrap();
}
