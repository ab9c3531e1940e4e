//! Benchmark: cold sync of 100k realistic pods over HTTP through kube-client into a shared
//! informer, and resident memory per cached pod, with and without a transform that drops
//! `managedFields`.
//!
//! ```text
//! cargo bench -p informer-kube --bench sync_100k
//! INFORMER_KUBE_BENCH_PODS=10000 INFORMER_KUBE_BENCH_RUNS=1 cargo bench -p informer-kube --bench sync_100k
//! ```
//!
//! A harness of its own (`harness = false`), because memory needs separate processes: the
//! binary re-runs itself as a **server** (the HTTP fake API server seeded with the pods, in its
//! own process so that its memory does not count) and once per measured run as a **client**
//! (a fresh process: runtime and kube client built, resident memory read, informer started,
//! time to synced measured, resident memory read again). Memory per pod is
//! (RSS after sync − RSS before) / pods; the peak (VmHWM) is reported too. Each variant runs
//! `INFORMER_KUBE_BENCH_RUNS` times (default 3); the table shows the median run by sync time.
//!
//! The informer uses a paginated list (`limit=500`, first list at `resourceVersion=0`, which
//! the server answers whole, as the API server's watch cache does), then a watch: set
//! explicitly, since the default streams the initial list. Variants: full objects;
//! `managedFields` dropped by the informer's transform (after each page is decoded); dropped by
//! the lister-watcher as each item is decoded; and the latter with a streaming initial list
//! (`sendInitialEvents`, the default).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "benchmark harness")]

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fake_apiserver::FakeApiServer;
use fake_apiserver::http::{FakeHttpServer, HttpConfig};
use fake_apiserver::seed::{SeedConfig, seed};
use informer::reflector::WatchListMode;
use informer::{InformerConfig, SharedIndexInformer};
use informer_kube::{KubeListerWatcher, client_for_informers, drop_managed_fields};
use k8s_openapi::api::core::v1::Pod;
use tokio_util::sync::CancellationToken;

const VARIANTS: &[(&str, &str)] = &[
    ("full", "full pods (with managedFields)"),
    (
        "drop-managed-fields",
        "drop managedFields (InformerConfig::transform, right after each decode)",
    ),
    (
        "watch-list-drop-managed-fields",
        "streaming list + drop managedFields",
    ),
];

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args
        .iter()
        .position(|a| a == "--role")
        .map(|i| args[i + 1].as_str())
    {
        Some("server") => server(env_usize("INFORMER_KUBE_BENCH_PODS", 100_000)),
        Some("client") => {
            let url = value(&args, "--url");
            let variant = value(&args, "--variant");
            client(&url, &variant);
        }
        _ => orchestrate(),
    }
}

fn value(args: &[String], name: &str) -> String {
    let i = args.iter().position(|a| a == name).expect(name);
    args[i + 1].clone()
}

/// Resident and peak memory of this process, in bytes (Linux; 0 elsewhere).
fn memory() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn server(pods: usize) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let engine = FakeApiServer::new();
        let started = Instant::now();
        seed(
            &engine,
            &SeedConfig {
                namespaces: 100,
                pods,
                ..SeedConfig::default()
            },
        )
        .unwrap();
        let seeded_in = started.elapsed();
        let http = FakeHttpServer::start(engine, HttpConfig::default())
            .await
            .unwrap();
        println!("READY {} {:.1}", http.url(), seeded_in.as_secs_f64());
        std::io::stdout().flush().unwrap();
        // Serve until the orchestrator closes our stdin.
        tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            while std::io::stdin().read_line(&mut line).unwrap_or(0) > 0 {
                line.clear();
            }
        })
        .await
        .unwrap();
        http.shutdown().await.unwrap();
    });
}

fn client(url: &str, variant: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let config = kube_client::Config::new(url.parse().unwrap());
        let client = client_for_informers(config).unwrap();
        let mut config = InformerConfig::<Pod> {
            name: "pods".into(),
            ..InformerConfig::default()
        };
        config.list_watch.watch_list = WatchListMode::Off;
        let lister_watcher = KubeListerWatcher::<Pod>::all(client);
        match variant {
            "drop-managed-fields" => config.transform = Some(drop_managed_fields()),
            "watch-list-drop-managed-fields" => {
                config.transform = Some(drop_managed_fields());
                config.list_watch.watch_list = WatchListMode::On;
            }
            _ => {}
        }
        let informer = SharedIndexInformer::new(Arc::new(lister_watcher), config).unwrap();
        let (rss_before, _) = memory();
        let cancel = CancellationToken::new();
        let started = Instant::now();
        let task = informer.spawn(cancel.clone());
        assert!(informer.wait_for_sync().await, "the informer stopped");
        let synced_in = started.elapsed();
        let (rss_after, peak) = memory();
        let cached = informer.stats().cached;
        println!(
            "RESULT {variant} {cached} {:.4} {rss_before} {rss_after} {peak}",
            synced_in.as_secs_f64()
        );
        std::io::stdout().flush().unwrap();
        cancel.cancel();
        task.await.unwrap().unwrap();
    });
}

struct Run {
    cached: usize,
    secs: f64,
    rss_before: u64,
    rss_after: u64,
    peak: u64,
}

fn orchestrate() {
    let pods = env_usize("INFORMER_KUBE_BENCH_PODS", 100_000);
    let runs = env_usize("INFORMER_KUBE_BENCH_RUNS", 3).max(1);
    let exe = std::env::current_exe().unwrap();
    println!("sync_100k: seeding {pods} realistic pods in a separate server process...");
    let mut server = Command::new(&exe)
        .args(["--role", "server"])
        .env("INFORMER_KUBE_BENCH_PODS", pods.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut ready)
        .unwrap();
    let mut words = ready.split_whitespace();
    assert_eq!(words.next(), Some("READY"), "server said {ready:?}");
    let url = words.next().unwrap().to_owned();
    let seeded_in = words.next().unwrap_or("?").to_owned();
    println!("server ready at {url} (seeded in {seeded_in}s)");

    let mut table = Vec::new();
    for (variant, label) in VARIANTS {
        let mut results: Vec<Run> = (0..runs)
            .map(|_| {
                let out = Command::new(&exe)
                    .args(["--role", "client", "--url", &url, "--variant", variant])
                    .stderr(Stdio::inherit())
                    .output()
                    .unwrap();
                assert!(out.status.success(), "client {variant} failed");
                let text = String::from_utf8_lossy(&out.stdout);
                let line = text
                    .lines()
                    .find(|l| l.starts_with("RESULT"))
                    .unwrap_or_else(|| panic!("no result from {variant}: {text}"));
                let f: Vec<&str> = line.split_whitespace().collect();
                Run {
                    cached: f[2].parse().unwrap(),
                    secs: f[3].parse().unwrap(),
                    rss_before: f[4].parse().unwrap(),
                    rss_after: f[5].parse().unwrap(),
                    peak: f[6].parse().unwrap(),
                }
            })
            .collect();
        results.sort_by(|a, b| a.secs.total_cmp(&b.secs));
        let all: Vec<String> = results.iter().map(|r| format!("{:.2}", r.secs)).collect();
        let median = results.swap_remove(results.len() / 2);
        assert_eq!(
            median.cached, pods,
            "{variant} cached {} of {pods}",
            median.cached
        );
        println!("{label}: sync times {} s", all.join(", "));
        table.push((*label, median));
    }
    drop(server.stdin.take());
    let _ = server.wait_timeout_or_kill(Duration::from_secs(30));

    println!();
    println!(
        "| variant ({pods} pods, median of {runs}) | time to synced | pods/s | RSS after sync | RSS per pod | peak RSS |"
    );
    println!("|---|---|---|---|---|---|");
    for (label, r) in &table {
        let grown = r.rss_after.saturating_sub(r.rss_before);
        println!(
            "| {label} | {:.2} s | {:.0} | {:.0} MiB | {:.2} KiB | {:.0} MiB |",
            r.secs,
            r.cached as f64 / r.secs,
            r.rss_after as f64 / 1048576.0,
            grown as f64 / r.cached.max(1) as f64 / 1024.0,
            r.peak as f64 / 1048576.0,
        );
    }
}

trait WaitTimeout {
    fn wait_timeout_or_kill(&mut self, timeout: Duration) -> std::io::Result<()>;
}

impl WaitTimeout for std::process::Child {
    fn wait_timeout_or_kill(&mut self, timeout: Duration) -> std::io::Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            if self.try_wait()?.is_some() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                self.kill()?;
                return self.wait().map(|_| ());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
