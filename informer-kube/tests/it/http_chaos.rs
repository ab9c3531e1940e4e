//! The chaos convergence check in real time over HTTP: the scenarios of the `informer` crate's
//! chaos test (`informer/tests/it/chaos.rs`; this binary's `main.rs` includes its engine,
//! `chaos_support`, by path), with the informer reaching the fake API server's HTTP front end
//! through kube-client and `KubeListerWatcher`, on a multi-thread runtime, every duration of
//! the plan divided by 100 (resync periods stay at least 1 s; a `Retry-After` is 1 s). Faults
//! are staged on the server's engine, so they reach the wire as a real server sends them:
//! broken watch bodies, `ERROR` events, raw lines, HTTP errors with `Retry-After`, 410 on
//! continue tokens.
//!
//! Every check of the chaos test runs, except the resync cadence window (virtual time only):
//! convergence of the cache and every handler (content included), deletions, the transform on
//! every path, the moment of sync, handlers registered from another thread while events flow,
//! bounded streams, the request guard.
//!
//! By default (CI) it runs seeds 0..3. `CHAOS_SEEDS=a..b` selects seeds; `CHAOS_HTTP_MINUTES=m`
//! runs seeds one after another (from `CHAOS_HTTP_START`, default 0; `CHAOS_THREADS` at a
//! time, default 2) until `m` minutes have passed: what `cargo xtask soak --http --minutes m`
//! does. A failing seed prints its plan, schedule, report and `CHAOS-FAILED-SEED: n`; real
//! time makes the interleaving differ from run to run, so a rerun of the seed may pass.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::chaos_support::plan::{Clock, Plan, store_from_env};
use crate::chaos_support::{
    Connection, RESOURCE, SeedStats, Transport, quiet_deliberate_panics, run_plan,
};
use crate::support::Env;
use fake_apiserver::FakeApiServer;
use informer_kube::KubeListerWatcher;
use informer_testing::JsonObject;
use parking_lot::Mutex;

/// Seeds of the default (CI) run.
const DEFAULT_SEEDS: std::ops::Range<u64> = 0..3;

/// How much faster than the virtual plan the HTTP seeds run.
const SCALE: u32 = 100;

/// The HTTP front end of the seed's server, and a kube client for it.
struct Http;

#[async_trait::async_trait]
impl Transport for Http {
    async fn connect(
        &self,
        server: &FakeApiServer,
        namespace: Option<&str>,
    ) -> Result<Connection, String> {
        let env = Env::with_engine(server.clone()).await?;
        let path = match namespace {
            Some(ns) => format!("/api/v1/namespaces/{ns}/{RESOURCE}"),
            None => format!("/api/v1/{RESOURCE}"),
        };
        let lw = KubeListerWatcher::<JsonObject>::from_url(
            env.client.clone(),
            path,
            namespace.map(str::to_owned),
            false,
        );
        Ok(Connection {
            lister_watcher: Arc::new(lw),
            keep_alive: Box::new(env),
        })
    }
}

/// What the passing seeds did.
#[derive(Default)]
struct Totals {
    seeds: u64,
    writes: u64,
    faults: u64,
    notifications: u64,
    resyncs: u64,
    deletes: u64,
    tombstones: u64,
    relists: u64,
    watch_starts: u64,
    requests: u64,
    registrations: u64,
    overflows: u64,
    contents: u64,
}

impl Totals {
    fn add(&mut self, s: &SeedStats) {
        self.seeds += 1;
        self.writes += s.writes;
        self.faults += s.faults;
        for h in &s.check.handlers {
            self.notifications += h.notifications as u64;
            self.resyncs += h.resyncs as u64;
            self.deletes += h.deletes as u64;
            self.tombstones += h.tombstones as u64;
        }
        if let Some(r) = &s.reflector {
            self.relists += r.counters.relists;
            self.watch_starts += r.counters.watch_starts;
        }
        self.requests += s.requests.total;
        self.registrations += s.registrations;
        self.overflows += s.overflows;
        self.contents += s.check.contents_checked as u64;
    }
}

fn seeds_from_env() -> Option<Vec<u64>> {
    let text = std::env::var("CHAOS_SEEDS").ok()?;
    let text = text.trim();
    let (a, b) = text.split_once("..")?;
    let a: u64 = a.trim().parse().ok()?;
    let b: u64 = b.trim_start_matches('=').trim().parse().ok()?;
    Some(if text.contains("..=") {
        (a..=b).collect()
    } else {
        (a..b).collect()
    })
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

#[test]
fn http_chaos() {
    quiet_deliberate_panics();
    let minutes = env_u64("CHAOS_HTTP_MINUTES");
    let threads = env_u64("CHAOS_THREADS").unwrap_or(2).max(1);
    let seeds: Arc<Mutex<Box<dyn Iterator<Item = u64> + Send>>> =
        Arc::new(Mutex::new(match (minutes, seeds_from_env()) {
            (_, Some(list)) => Box::new(list.into_iter()),
            (Some(_), None) => Box::new(env_u64("CHAOS_HTTP_START").unwrap_or(0)..),
            (None, None) => Box::new(DEFAULT_SEEDS),
        }));
    let deadline = minutes.map(|m| Instant::now() + Duration::from_secs(m * 60));
    let started = Instant::now();
    let totals = Arc::new(Mutex::new(Totals::default()));
    let failures: Arc<Mutex<Vec<(u64, String)>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let run = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (seeds, totals, failures, stop, run) = (
                Arc::clone(&seeds),
                Arc::clone(&totals),
                Arc::clone(&failures),
                Arc::clone(&stop),
                Arc::clone(&run),
            );
            std::thread::spawn(move || {
                loop {
                    if stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| Instant::now() >= d)
                    {
                        return;
                    }
                    let Some(seed) = seeds.lock().next() else {
                        return;
                    };
                    let plan = Plan::with_clock(seed, Clock::RealTime { scale: SCALE })
                        .with_store(store_from_env());
                    let seed_started = Instant::now();
                    let outcome = run_plan(plan, &Http);
                    run.fetch_add(1, Ordering::Relaxed);
                    match &outcome.result {
                        Ok(stats) => {
                            println!(
                                "http chaos seed {seed}: ok in {:.1}s ({} writes, {} faults, {} \
                                 requests)",
                                seed_started.elapsed().as_secs_f64(),
                                stats.writes,
                                stats.faults,
                                stats.requests.total
                            );
                            totals.lock().add(stats);
                        }
                        Err(failure) => {
                            eprintln!("http chaos seed {seed} FAILED");
                            eprintln!("plan: {}", outcome.plan);
                            eprintln!("schedule (last steps):");
                            let skip = outcome.schedule.len().saturating_sub(40);
                            for line in &outcome.schedule[skip..] {
                                eprintln!("  {line}");
                            }
                            eprintln!("{failure}");
                            eprintln!(
                                "rerun: CHAOS_SEEDS={seed}..={seed} cargo test --release -p \
                                 informer-kube --test it -- http_chaos::http_chaos --exact \
                                 --nocapture"
                            );
                            println!("CHAOS-FAILED-SEED: {seed}");
                            let first = failure
                                .to_string()
                                .lines()
                                .next()
                                .unwrap_or_default()
                                .to_owned();
                            failures.lock().push((seed, first));
                        }
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("a chaos worker");
    }
    let t = totals.lock();
    let failures = failures.lock();
    println!(
        "http chaos: {} seed(s) in {:.1}s over HTTP through kube-client: {} passed, {} diverged",
        run.load(Ordering::Relaxed),
        started.elapsed().as_secs_f64(),
        t.seeds,
        failures.len()
    );
    println!(
        "  {} writes, {} faults; handlers heard {} notifications ({} resyncs, {} deletes, {} \
         tombstones), {} contents compared; {} relists, {} watch starts, {} requests; {} \
         handlers registered from another thread, {} bounded streams overflowed",
        t.writes,
        t.faults,
        t.notifications,
        t.resyncs,
        t.deletes,
        t.tombstones,
        t.contents,
        t.relists,
        t.watch_starts,
        t.requests,
        t.registrations,
        t.overflows
    );
    assert!(
        failures.is_empty(),
        "{} HTTP chaos seed(s) failed: {:?}",
        failures.len(),
        *failures
    );
    assert!(t.seeds > 0, "no seed ran");
}
