//! Leader election across processes: the `fake-apiserver` binary and two candidates running
//! the `leader-elected` example (lease 3 s, renew deadline 2 s, retry period 0.5 s, zombie
//! writes on). Exactly one leads and writes the fence; SIGSTOP freezes it; the other takes
//! over once the lease has not changed for its duration, and writes; SIGCONT wakes the old
//! leader, which reports that it lost leadership and whose writes are all refused by the
//! fence. The fence's history (the counters and identities of every successful write, and
//! the server's request log) shows the two leaders' writes never interleave.
//!
//! Both programs are built by cargo from this test (`cargo build`, a no-op when they are up
//! to date; cargo does not hold its build lock while tests run). The scenario is bounded
//! (60 s); the build has its own, generous bound. Unix only (signals).
//!
//! The build is the README's test command's own (`cargo test --workspace --all-features
//! --no-run`, see [`build`]), so under it cargo finds both programs up to date.

#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::{Api, Client};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::time::Instant;

const SCENARIO: Duration = Duration::from_secs(60);
const BUILD: Duration = Duration::from_secs(1800);
const NS: &str = "default";

/// The executable of a program of the workspace (a binary or an example, by target name),
/// built by cargo as the README's test command builds it (also used by `shard_processes`).
///
/// One `cargo test --workspace --all-features --no-run` serves every caller: it resolves
/// features as the README's test command does, so it finds everything up to date after a
/// `cargo test` (about a second), where a narrower `cargo build` resolves the dependencies'
/// features differently and compiles dozens of crates again, in place of the test build's
/// (and the next `cargo test` compiles them back). Run from a narrower `cargo test`, it
/// builds the workspace's tests once. Under `cargo xtask ci` nothing is built here: xtask's
/// own build (`cargo build --tests` with these programs, the same features) hands over its
/// messages.
pub(crate) fn build(name: &str) -> PathBuf {
    static BUILT: std::sync::OnceLock<Vec<(String, PathBuf)>> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(build_workspace)
        .iter()
        .find(|(target, _)| target == name)
        .map(|(_, exe)| exe.clone())
        .unwrap_or_else(|| panic!("cargo built no executable {name}"))
}

/// Runs the build and returns every program it built, by target name. Under `cargo xtask
/// ci`, which has just run that very build, its messages are read from the file named by
/// `INFORMER_WORKSPACE_BUILD` instead (cargo would only say the same, after waiting for its
/// build lock, which the doc-tests running beside these tests hold).
fn build_workspace() -> Vec<(String, PathBuf)> {
    let stdout = match std::env::var_os("INFORMER_WORKSPACE_BUILD") {
        Some(messages) => std::fs::read(&messages)
            .unwrap_or_else(|e| panic!("read {}: {e}", Path::new(&messages).display())),
        None => run_workspace_build(),
    };
    String::from_utf8_lossy(&stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        // Programs, not the test harnesses built from them.
        .filter(|m| m["reason"] == "compiler-artifact" && m["profile"]["test"] == false)
        .filter_map(|m| {
            let exe = m["executable"].as_str()?;
            Some((m["target"]["name"].as_str()?.to_owned(), PathBuf::from(exe)))
        })
        .collect()
}

/// `cargo test --workspace --all-features --no-run`'s JSON messages.
fn run_workspace_build() -> Vec<u8> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = std::process::Command::new(cargo);
    // Without the variables cargo sets for this test (build scripts that watch them, such as
    // ring's, would otherwise rebuild, here and again in the next `cargo test`).
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if name.starts_with("CARGO_PKG_")
            || [
                "CARGO_MANIFEST_DIR",
                "CARGO_MANIFEST_PATH",
                "CARGO_CRATE_NAME",
                "CARGO_BIN_NAME",
                "CARGO_PRIMARY_PACKAGE",
                "CARGO_TARGET_TMPDIR",
                "CARGO_RUSTC_CURRENT_DIR",
                "OUT_DIR",
            ]
            .contains(&name.as_ref())
        {
            command.env_remove(name.as_ref());
        }
    }
    let output = command
        .args(["test", "--workspace", "--all-features", "--no-run"])
        .arg("--message-format=json-render-diagnostics")
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .stderr(Stdio::inherit())
        .output()
        .expect("run cargo test --no-run");
    assert!(output.status.success(), "cargo test --no-run failed");
    output.stdout
}

/// A candidate process and the JSON lines it printed, with their arrival instants.
struct Candidate {
    identity: &'static str,
    child: Child,
    lines: Arc<Mutex<Vec<(Instant, Value)>>>,
    reader: tokio::task::JoinHandle<()>,
}

impl Candidate {
    fn start(exe: &Path, kubeconfig: &Path, identity: &'static str) -> Self {
        let mut child = Command::new(exe)
            .args(["--kubeconfig", kubeconfig.to_str().unwrap()])
            .args([
                "--namespace",
                NS,
                "--lease",
                "singleton",
                "--fence",
                "fence",
            ])
            .args(["--identity", identity])
            .args(["--lease-duration", "3s", "--renew-deadline", "2s"])
            .args(["--retry-period", "500ms", "--zombie-writes"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("start leader-elected");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        let sink = Arc::clone(&lines);
        let reader = tokio::spawn(async move {
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
            reader,
        }
    }

    /// SIGTERM, then waits for the exit and the end of its output.
    async fn terminate(&mut self) {
        self.signal("TERM");
        let status = tokio::time::timeout(Duration::from_secs(10), self.child.wait())
            .await
            .expect("a candidate did not stop on SIGTERM")
            .unwrap();
        assert!(status.success(), "{}: {status}", self.identity);
        tokio::time::timeout(Duration::from_secs(10), &mut self.reader)
            .await
            .expect("its output did not end")
            .unwrap();
    }

    fn events(&self, kind: &str) -> Vec<Value> {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, v)| v["event"] == kind)
            .map(|(_, v)| v.clone())
            .collect()
    }

    fn arrived(&self, kind: &str) -> Option<Instant> {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .find(|(_, v)| v["event"] == kind)
            .map(|(at, _)| *at)
    }

    async fn wait_for(&self, kind: &str, within: Duration) -> Value {
        let deadline = Instant::now() + within;
        loop {
            if let Some(v) = self.events(kind).into_iter().next() {
                return v;
            }
            assert!(
                Instant::now() < deadline,
                "{} printed no {kind:?} within {within:?}: {:?}",
                self.identity,
                self.lines.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn signal(&self, signal: &str) {
        let pid = self.child.id().expect("running").to_string();
        let status = std::process::Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal} {pid}");
    }
}

fn unix_ms(v: &Value) -> u64 {
    v["unix_ms"].as_u64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_leader_is_replaced_and_fenced_off() {
    let (server_exe, candidate_exe) = tokio::time::timeout(
        BUILD,
        tokio::task::spawn_blocking(|| (build("fake-apiserver"), build("leader-elected"))),
    )
    .await
    .expect("building took too long")
    .unwrap();

    tokio::time::timeout(SCENARIO, scenario(&server_exe, &candidate_exe))
        .await
        .expect("the scenario ran past its bound");
}

async fn scenario(server_exe: &Path, candidate_exe: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let mut server = Command::new(server_exe)
        .args(["--kubeconfig-out", kubeconfig.to_str().unwrap()])
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

    let a = Candidate::start(candidate_exe, &kubeconfig, "a");
    let b = Candidate::start(candidate_exe, &kubeconfig, "b");

    // Exactly one leads, and writes.
    let deadline = Instant::now() + Duration::from_secs(20);
    let (leader, follower) = loop {
        match (a.arrived("acquired"), b.arrived("acquired")) {
            (Some(_), None) => break (&a, &b),
            (None, Some(_)) => break (&b, &a),
            (Some(_), Some(_)) => panic!("both acquired"),
            (None, None) => {}
        }
        assert!(Instant::now() < deadline, "nobody acquired the lease");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(follower.events("acquired").is_empty());
    assert!(
        leader.events("wrote").len() >= 3,
        "{:?}",
        leader.events("wrote")
    );

    // Freeze the leader.
    let stopped = Instant::now();
    leader.signal("STOP");
    let acquired = follower.wait_for("acquired", Duration::from_secs(15)).await;
    let took = follower.arrived("acquired").unwrap() - stopped;
    // A full lease duration (3 s) after the follower last saw a renewal, itself at most one
    // retry period (0.5 s) before the freeze.
    assert!(
        took >= Duration::from_millis(2400) && took <= Duration::from_secs(8),
        "the follower took over {took:?} after the freeze"
    );
    follower.wait_for("wrote", Duration::from_secs(5)).await;

    // Wake the old leader: it must report the loss, and the fence must refuse its writes.
    leader.signal("CONT");
    let lost = leader.wait_for("lost", Duration::from_secs(10)).await;
    assert_eq!(lost["reason"], "renew deadline exceeded", "{lost}");
    let refused = leader
        .wait_for("write-refused", Duration::from_secs(10))
        .await;
    assert!(unix_ms(&refused) >= unix_ms(&acquired));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(follower.events("lost").is_empty());
    assert!(
        leader.events("acquired").len() == 1,
        "the old leader led again"
    );
    let (leader_id, follower_id) = (leader.identity, follower.identity);
    let (mut a, mut b) = (a, b);
    a.terminate().await;
    b.terminate().await;
    let (leader, follower) = if leader_id == a.identity {
        (&a, &b)
    } else {
        (&b, &a)
    };
    assert_eq!(follower.identity, follower_id);

    // The fence's history, as the server kept it (a watch replaying every change of the
    // fence): after its creation (counter 0), each write is one step after the previous
    // one, first all the old leader's, then all the new leader's, never interleaved.
    let fence_api = Api::<ConfigMap>::namespaced(client.clone(), NS);
    let final_rv = fence_api
        .get("fence")
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let history = fence_history(&fence_api, &final_rv).await;
    let counters: Vec<u64> = history.iter().map(|(c, _, _)| *c).collect();
    let expected: Vec<u64> = (0..history.len() as u64).collect();
    assert_eq!(counters, expected, "gaps or duplicates: {history:?}");
    let holders: Vec<&str> = history[1..].iter().map(|(_, h, _)| h.as_str()).collect();
    let switch = holders
        .iter()
        .position(|h| *h == follower.identity)
        .expect("the new leader wrote");
    assert!(switch > 0, "the old leader never wrote: {holders:?}");
    assert!(holders[..switch].iter().all(|h| *h == leader.identity));
    assert!(
        holders[switch..].iter().all(|h| *h == follower.identity),
        "interleaved writes: {holders:?}"
    );
    // Every write a candidate reported is in it, at the resourceVersion it reported. (The
    // history may hold more: a write whose answer the old leader lost to the freeze is
    // reported as failed, and its retry refused.)
    for c in [leader, follower] {
        for w in c.events("wrote") {
            let entry = (
                w["counter"].as_u64().unwrap(),
                c.identity.to_owned(),
                w["resourceVersion"].as_str().unwrap().to_owned(),
            );
            assert!(history.contains(&entry), "{entry:?} not in {history:?}");
        }
    }
    // The old leader's refused write came after the new leader's first write.
    let first_new = history
        .iter()
        .find(|(_, h, _)| h == follower.identity)
        .unwrap();
    assert!(refused["counter"].as_u64().unwrap() <= first_new.0);

    // The server's request log: every PUT of the fence was reported (written, refused or
    // failed), except at most one sent as the follower was terminated; and every write
    // answered (written or refused) was a PUT. A write reported as failed may not have
    // reached the server at all: its time limit (what is left of the term) can run out
    // before the request is sent, as happens on a loaded machine.
    let log = client
        .request_text(
            http::Request::get("/_fake/requests")
                .body(Vec::new())
                .unwrap(),
        )
        .await
        .unwrap();
    let log: Value = serde_json::from_str(&log).unwrap();
    let fence_puts = log["requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| {
            r["method"] == "PUT" && r["path"] == "/api/v1/namespaces/default/configmaps/fence"
        })
        .count();
    let count = |events: &[&str]| -> usize {
        [leader, follower]
            .iter()
            .map(|c| events.iter().map(|e| c.events(e).len()).sum::<usize>())
            .sum()
    };
    let answered = count(&["wrote", "write-refused"]);
    let reported = answered + count(&["write-failed"]);
    assert!(
        answered <= fence_puts && fence_puts <= reported + 1,
        "{fence_puts} PUTs, {answered} answered, {reported} reported"
    );
    server.kill().await.unwrap();
}

/// Every state of the fence since its creation, in the server's order, up to `last_rv`:
/// (counter, holder, resourceVersion).
async fn fence_history(api: &Api<ConfigMap>, last_rv: &str) -> Vec<(u64, String, String)> {
    use futures::{StreamExt, TryStreamExt};
    use kube_client::api::{WatchEvent, WatchParams};
    let params = WatchParams::default()
        .fields("metadata.name=fence")
        .timeout(30);
    let mut stream = api.watch(&params, "1").await.unwrap().boxed();
    let mut history = Vec::new();
    while let Some(event) = stream.try_next().await.unwrap() {
        let cm = match event {
            WatchEvent::Added(cm) | WatchEvent::Modified(cm) => cm,
            other => panic!("unexpected event in the fence's history: {other:?}"),
        };
        let rv = cm.metadata.resource_version.clone().unwrap();
        let data = cm.data.unwrap_or_default();
        history.push((
            data["counter"].parse().unwrap(),
            data.get("holder").cloned().unwrap_or_default(),
            rv.clone(),
        ));
        if rv == last_rv {
            return history;
        }
    }
    panic!("the history ended before {last_rv}: {history:?}");
}
