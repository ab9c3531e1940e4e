//! A sharded controller across processes: the `fake-apiserver` binary with 20,000 pods (fewer
//! under CI, see below) and churn, and three replicas of the `sharded-controller` example
//! (lease 3 s, renewed every 0.5 s, 1 s handovers), each a separate OS process.
//!
//! 1. Steady state: the three take an even split by rank; their caches partition the
//!    server's pods (disjoint, and together the server's: checked key by key from dumps, and
//!    by count and XOR digest from their status lines), each holding only pods whose uid
//!    hashes into its range; every pod written during a window of churn is reconciled by
//!    exactly one replica (the windows are disjoint and cover every such pod).
//! 2. One replica is killed (SIGKILL): the other two drop it no earlier than a lease duration
//!    after its last renewal (read from its Lease) and within the lease duration of the kill
//!    plus scheduling slack, and take its range; one relist later their caches hold it, and they
//!    partition the server's pods again. "One relist" is measured against the start-up (from
//!    the first assignment to three caches holding their thirds, at least one list per
//!    replica): the survivors' relist of the range they take over may take at most three
//!    start-ups plus 5 s (a loaded machine).
//! 3. It starts again: the ranges rebalance to thirds and the caches follow.
//!
//! Both programs are built by cargo from this test (see `leader_processes`). The scenario is
//! bounded (300 s); the bounds on how long the takeover took are generous (scheduling on a
//! loaded machine). Unix only (signals).
//!
//! Size: 20,000 pods by default, as the scale-out issue asks: about 70 s of scenario on two
//! loaded cores (debug build). Under CI (`CI=true` or `1`, as `.ci/run` sets) the default is
//! 4,000 pods, the same scenario and assertions at a fifth of the size (about 25 s);
//! `SHARD_PROCESSES_PODS=N` sets the number either way:
//!
//! ```text
//! SHARD_PROCESSES_PODS=20000 cargo test -p informer-kube --test it -- shard_processes --nocapture
//! ```

#![cfg(unix)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use informer_core::shard::{ShardRange, ShardSelector, fnv1a_64};
use k8s_openapi::api::coordination::v1::Lease;
use kube_client::{Api, Client};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::time::Instant;

use crate::leader_processes::build;

const SCENARIO: Duration = Duration::from_secs(300);
const BUILD: Duration = Duration::from_secs(1800);
/// Pods seeded by default.
const PODS: usize = 20_000;
/// Pods seeded by default under CI.
const PODS_CI: usize = 4_000;
const LEASE: Duration = Duration::from_secs(3);
/// How long a step may take before the test fails as hung (not a timing assertion).
const STEP: Duration = Duration::from_secs(90);

/// A replica process and the JSON lines it printed, with their arrival instants.
struct Replica {
    identity: &'static str,
    child: Child,
    lines: Arc<Mutex<Vec<(Instant, Value)>>>,
    dump: PathBuf,
}

impl Replica {
    fn start(exe: &Path, kubeconfig: &Path, dir: &Path, identity: &'static str) -> Self {
        let dump = dir.join(format!("{identity}.json"));
        let mut child = Command::new(exe)
            .args(["--kubeconfig", kubeconfig.to_str().unwrap()])
            .args(["--namespace", "default", "--group", "procs"])
            .args(["--identity", identity])
            .args(["--lease-duration", "3s", "--renew-period", "500ms"])
            .args(["--handover", "1s", "--status-interval", "200ms"])
            .args(["--dump", dump.to_str().unwrap()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("start sharded-controller");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        let sink = Arc::clone(&lines);
        tokio::spawn(async move {
            while let Ok(Some(line)) = stdout.next_line().await {
                let value: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not a JSON line: {line:?}: {e}"));
                sink.lock().unwrap().push((Instant::now(), value));
            }
        });
        Self {
            identity,
            child,
            lines,
            dump,
        }
    }

    /// The last line of `kind`, with its arrival.
    fn last(&self, kind: &str) -> Option<(Instant, Value)> {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .rev()
            .find(|(_, v)| v["event"] == kind)
            .cloned()
    }

    /// Lines of `kind` that arrived after `since`.
    fn since(&self, kind: &str, since: Instant) -> Vec<(Instant, Value)> {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .filter(|(at, v)| v["event"] == kind && *at >= since)
            .cloned()
            .collect()
    }

    fn signal(&self, signal: &str) {
        let pid = self.child.id().expect("running").to_string();
        let status = std::process::Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal} {pid}");
    }

    /// Asks for a dump and reads it: (key → uid of the cache, key → uid reconciled since
    /// the previous dump, the selector).
    async fn dump(&self) -> Dump {
        let asked = Instant::now();
        self.signal("USR1");
        wait(&format!("{} to dump", self.identity), || {
            !self.since("dumped", asked).is_empty()
        })
        .await;
        let body: Value =
            serde_json::from_str(&std::fs::read_to_string(&self.dump).unwrap()).unwrap();
        let pairs = |v: &Value| -> BTreeMap<String, String> {
            v.as_array()
                .unwrap()
                .iter()
                .map(|p| {
                    (
                        p[0].as_str().unwrap().to_owned(),
                        p[1].as_str().unwrap().to_owned(),
                    )
                })
                .collect()
        };
        Dump {
            keys: pairs(&body["keys"]),
            reconciled: pairs(&body["reconciled"]),
            selector: ShardSelector::parse(body["selector"].as_str().unwrap()).unwrap(),
        }
    }

    /// SIGTERM: it leaves the group, works through the handover, and exits 0.
    async fn terminate(mut self) {
        self.signal("TERM");
        let status = tokio::time::timeout(Duration::from_secs(20), self.child.wait())
            .await
            .expect("a replica did not stop on SIGTERM")
            .unwrap();
        assert!(status.success(), "{}: {status}", self.identity);
    }
}

struct Dump {
    keys: BTreeMap<String, String>,
    reconciled: BTreeMap<String, String>,
    selector: ShardSelector,
}

/// How many pods to seed: `SHARD_PROCESSES_PODS`, else [`PODS_CI`] under CI, else [`PODS`].
fn pod_count() -> usize {
    if let Some(n) = std::env::var("SHARD_PROCESSES_PODS")
        .ok()
        .and_then(|v| v.trim().parse().ok())
    {
        return n;
    }
    let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    if ci { PODS_CI } else { PODS }
}

async fn wait(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + STEP;
    while !condition() {
        assert!(Instant::now() < deadline, "waited {STEP:?} for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The server's pods: key → (uid, resourceVersion). Read as plain JSON (the server writes
/// its stored bytes; a metadata-only answer would make it build 20,000 JSON values, busy
/// enough to delay the replicas' lease renewals), only the metadata decoded.
async fn server_pods(client: &Client) -> BTreeMap<String, (String, u64)> {
    #[derive(serde::Deserialize)]
    struct List {
        items: Vec<Item>,
    }
    #[derive(serde::Deserialize)]
    struct Item {
        metadata: Meta,
    }
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Meta {
        name: String,
        namespace: String,
        uid: String,
        resource_version: String,
    }
    let text = client
        .request_text(http::Request::get("/api/v1/pods").body(Vec::new()).unwrap())
        .await
        .unwrap();
    let list: List = serde_json::from_str(&text).unwrap();
    list.items
        .into_iter()
        .map(|p| {
            let m = p.metadata;
            (
                format!("{}/{}", m.namespace, m.name),
                (m.uid, m.resource_version.parse().unwrap()),
            )
        })
        .collect()
}

fn digest<'a>(keys: impl IntoIterator<Item = &'a String>) -> u64 {
    keys.into_iter()
        .fold(0, |acc, key| acc ^ fnv1a_64(key.as_bytes()))
}

async fn admin(client: &Client, request: http::Request<Vec<u8>>) -> Value {
    let text = client.request_text(request).await.unwrap();
    serde_json::from_str(&text).unwrap()
}

async fn start_churn(client: &Client) {
    let namespaces: Vec<String> = (0..10).map(|i| format!("ns-{i}")).collect();
    let body =
        json!({"ratePerSecond": 40, "resources": ["pods"], "namespaces": namespaces, "seed": 7});
    admin(
        client,
        http::Request::post("/_fake/churn")
            .header("Content-Type", "application/json")
            .body(body.to_string().into_bytes())
            .unwrap(),
    )
    .await;
}

async fn stop_churn(client: &Client) {
    admin(
        client,
        http::Request::delete("/_fake/churn")
            .body(Vec::new())
            .unwrap(),
    )
    .await;
}

async fn server_rv(client: &Client) -> u64 {
    let state = admin(
        client,
        http::Request::get("/_fake/state").body(Vec::new()).unwrap(),
    )
    .await;
    state["resourceVersion"].as_u64().unwrap()
}

/// Waits until the replicas' last range lines say `count` members and no handover, their
/// last status lines (after that) say their caches hold exactly that selector with nothing
/// pending, and, when `server` is given, their counts and digests add up to it. Returns the
/// instant it held.
async fn steady(
    replicas: &[&Replica],
    count: u64,
    server: Option<&BTreeMap<String, (String, u64)>>,
) -> Instant {
    let total = server.map(|s| (s.len() as u64, digest(s.keys())));
    wait(&format!("{count} replicas in steady state"), || {
        let mut owned = 0;
        let mut xor = 0;
        for r in replicas {
            let Some((range_at, range)) = r.last("range") else {
                return false;
            };
            let Some((status_at, status)) = r.last("status") else {
                return false;
            };
            if range["count"] != count
                || range["handing_over"] != false
                || status_at < range_at
                || status["shard_synced"] != true
                || status["selector"] != range["selector"]
                || status["pending"] != 0
            {
                return false;
            }
            owned += status["owned"].as_u64().unwrap();
            xor ^= u64::from_str_radix(
                status["digest"].as_str().unwrap().trim_start_matches("0x"),
                16,
            )
            .unwrap();
        }
        total.is_none_or(|t| t == (owned, xor))
    })
    .await;
    Instant::now()
}

/// The dumps partition the server's pods: disjoint caches, their union the server's keys,
/// each pod in the cache of the replica whose range holds its uid's hash.
fn assert_partition(dumps: &[(&str, Dump)], server: &BTreeMap<String, (String, u64)>) {
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    for (who, dump) in dumps {
        for (key, uid) in &dump.keys {
            if let Some(other) = seen.insert(key, who) {
                panic!("{key} is cached by {other} and {who}");
            }
            assert!(
                dump.selector.matches_value(uid),
                "{who} caches {key} outside its shard"
            );
            assert_eq!(server.get(key).map(|(u, _)| u), Some(uid), "{who}: {key}");
        }
    }
    let cached: BTreeSet<&str> = seen.keys().copied().collect();
    let all: BTreeSet<&str> = server.keys().map(String::as_str).collect();
    assert_eq!(cached.len(), all.len());
    assert!(cached == all, "the caches are not the server's pods");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_share_churning_pods_survive_a_kill_and_rebalance() {
    let (server_exe, replica_exe) = tokio::time::timeout(
        BUILD,
        tokio::task::spawn_blocking(|| (build("fake-apiserver"), build("sharded-controller"))),
    )
    .await
    .expect("building took too long")
    .unwrap();

    let pods = pod_count();
    assert!(pods >= 300, "too few pods for the scenario: {pods}");
    let started = Instant::now();
    tokio::time::timeout(SCENARIO, scenario(&server_exe, &replica_exe, pods))
        .await
        .expect("the scenario ran past its bound");
    eprintln!(
        "shard_processes: the scenario over {pods} pods took {:?}",
        started.elapsed()
    );
}

/// When `r` printed its first range line (its first assignment).
fn first_range(r: &Replica) -> Option<Instant> {
    r.lines
        .lock()
        .unwrap()
        .iter()
        .find(|(_, v)| v["event"] == "range")
        .map(|(at, _)| *at)
}

async fn scenario(server_exe: &Path, replica_exe: &Path, seeded: usize) {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let mut server = Command::new(server_exe)
        .args(["--kubeconfig-out", kubeconfig.to_str().unwrap()])
        .args(["--seed", &format!("pods={seeded}"), "--namespaces", "10"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("start fake-apiserver");
    let mut server_out = BufReader::new(server.stdout.take().unwrap()).lines();
    let ready: Value = serde_json::from_str(&server_out.next_line().await.unwrap().unwrap())
        .expect("the first line is JSON");
    let url = ready["url"].as_str().unwrap().to_owned();
    let client = Client::try_from(kube_client::Config::new(url.parse().unwrap())).unwrap();

    let a = Replica::start(replica_exe, &kubeconfig, dir.path(), "a");
    let b = Replica::start(replica_exe, &kubeconfig, dir.path(), "b");
    let c = Replica::start(replica_exe, &kubeconfig, dir.path(), "c");
    start_churn(&client).await;

    // 1. Steady state under churn: thirds, each holding its selector.
    let settled = steady(&[&a, &b, &c], 3, None).await;
    // The start-up: from the first assignment to three caches holding their thirds (at least
    // one list of its shard per replica, three at once, the server churning).
    let start_up = [&a, &b, &c]
        .iter()
        .filter_map(|r| first_range(r))
        .min()
        .map(|first| settled - first)
        .expect("every replica printed a range line");
    for r in [&a, &b, &c] {
        let (_, range) = r.last("range").unwrap();
        let rank = range["rank"].as_u64().unwrap();
        assert_eq!(range["members"], json!(["a", "b", "c"]));
        assert_eq!(
            range["range"],
            ShardRange::even_split(rank, 3).unwrap().to_string()
        );
    }
    // A window of churn: every pod written in it is reconciled by exactly one replica.
    for r in [&a, &b, &c] {
        r.dump().await;
    }
    let window_start = server_rv(&client).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop_churn(&client).await;
    let pods = server_pods(&client).await;
    assert!(pods.len() > seeded / 2, "{} pods", pods.len());
    steady(&[&a, &b, &c], 3, Some(&pods)).await;
    let dumps = vec![
        ("a", a.dump().await),
        ("b", b.dump().await),
        ("c", c.dump().await),
    ];
    assert_partition(&dumps, &pods);
    let mut reconciled_by: BTreeMap<&str, &str> = BTreeMap::new();
    for (who, dump) in &dumps {
        for (key, uid) in &dump.reconciled {
            assert!(
                dump.selector.matches_value(uid),
                "{who} reconciled {key} outside its shard"
            );
            if let Some(other) = reconciled_by.insert(key, who) {
                panic!("{key} reconciled by {other} and {who} in one window");
            }
        }
    }
    let written: Vec<&String> = pods
        .iter()
        .filter(|(_, (_, rv))| *rv > window_start)
        .map(|(key, _)| key)
        .collect();
    assert!(!written.is_empty(), "no pod was written in the window");
    for key in &written {
        assert!(
            reconciled_by.contains_key(key.as_str()),
            "{key} was written but reconciled by none"
        );
    }
    eprintln!(
        "shard_processes: {} pods, {} written in the window, each reconciled by one replica",
        pods.len(),
        written.len()
    );

    // 2. Kill b (under churn): a and c take its range.
    start_churn(&client).await;
    let killed = Instant::now();
    let killed_wall = SystemTime::now();
    let mut b = b;
    b.signal("KILL");
    let _ = b.child.wait().await;
    // b's last renewal (its Lease's renewTime, stamped by b's clock, this machine's): the
    // survivors saw it no earlier, so they may drop b no earlier than a lease duration after.
    let leases: Api<Lease> = Api::namespaced(client.clone(), "default");
    let renewed = leases
        .get("procs-b")
        .await
        .unwrap()
        .spec
        .and_then(|spec| spec.renew_time)
        .expect("b's Lease has a renewTime");
    let renewal_age = killed_wall
        .duration_since(SystemTime::from(renewed.0))
        .unwrap_or_default();
    let mut detected = Vec::new();
    for r in [&a, &c] {
        wait(&format!("{} to drop b", r.identity), || {
            r.since("range", killed)
                .iter()
                .any(|(_, v)| v["count"] == 2)
        })
        .await;
        let (at, _) = r
            .since("range", killed)
            .into_iter()
            .find(|(_, v)| v["count"] == 2)
            .unwrap();
        detected.push(at - killed);
    }
    // Not before a lease duration from b's last renewal (100 ms for the clocks' rounding);
    // 3 s of slack after it for a loaded machine.
    let earliest = LEASE
        .saturating_sub(renewal_age)
        .saturating_sub(Duration::from_millis(100));
    for took in &detected {
        assert!(
            *took >= earliest && *took <= LEASE + Duration::from_secs(3),
            "a survivor dropped b after {took:?} (b last renewed {renewal_age:?} before the \
             kill)"
        );
    }
    // Owned again once each survivor's cache holds a selector covering its new range (the
    // range joined with what it hands over, or the range alone), and together they cover
    // the space.
    let covered_at = |r: &Replica| -> Option<(Instant, ShardSelector)> {
        let (first, range) = r
            .since("range", killed)
            .into_iter()
            .find(|(_, v)| v["count"] == 2)?;
        let wanted = ShardRange::even_split(range["rank"].as_u64()?, 2).ok()?;
        r.since("status", first)
            .into_iter()
            .find_map(|(at, status)| {
                let selector = ShardSelector::parse(status["selector"].as_str()?).ok()?;
                let covers = [wanted.start(), wanted.end() - 1]
                    .iter()
                    .all(|h| u64::try_from(*h).is_ok_and(|h| selector.contains_hash(h)));
                (status["shard_synced"] == true && covers).then_some((at, selector))
            })
    };
    wait("the survivors' caches to hold b's range", || {
        covered_at(&a).is_some() && covered_at(&c).is_some()
    })
    .await;
    let (at_a, sel_a) = covered_at(&a).unwrap();
    let (at_c, sel_c) = covered_at(&c).unwrap();
    for hash in [0u64, 1 << 62, (1 << 63) - 1, 1 << 63, 3 << 62, u64::MAX] {
        assert!(
            sel_a.contains_hash(hash) || sel_c.contains_hash(hash),
            "{hash:#x} owned by neither survivor"
        );
    }
    let owned_again = at_a.max(at_c) - killed;
    let detected_max = detected.iter().max().copied().unwrap_or_default();
    let relist = owned_again.saturating_sub(detected_max);
    eprintln!(
        "shard_processes: b's range owned again {owned_again:?} after the kill (b last renewed \
         {renewal_age:?} before it; dropped after {detected_max:?}, then one relist of \
         {relist:?}; the start-up took {start_up:?})"
    );
    // Owned by none for at most the lease duration (checked above) plus one relist.
    let relist_bound = start_up * 3 + Duration::from_secs(5);
    assert!(
        relist <= relist_bound,
        "the survivors took {relist:?} to relist b's range (bound {relist_bound:?}: three \
         start-ups of {start_up:?} and 5 s)"
    );
    stop_churn(&client).await;
    let pods = server_pods(&client).await;
    steady(&[&a, &c], 2, Some(&pods)).await;
    assert_partition(&[("a", a.dump().await), ("c", c.dump().await)], &pods);

    // 3. b again: thirds again.
    let b = Replica::start(replica_exe, &kubeconfig, dir.path(), "b");
    steady(&[&a, &b, &c], 3, Some(&pods)).await;
    let dumps = vec![
        ("a", a.dump().await),
        ("b", b.dump().await),
        ("c", c.dump().await),
    ];
    assert_partition(&dumps, &pods);
    for (who, dump) in &dumps {
        assert_eq!(dump.selector.ranges().len(), 1, "{who} still handing over");
    }

    for r in [a, b, c] {
        r.terminate().await;
    }
    server.kill().await.unwrap();
}
