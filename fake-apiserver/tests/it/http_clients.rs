//! The official Python (`kubernetes` on PyPI) and JavaScript (`@kubernetes/client-node` on
//! npm) clients against the `fake-apiserver` binary, end to end: each test starts the binary
//! with seeded pods, runs the client's script from `tests/clients/<language>/` with the
//! binary's kubeconfig, and requires it to exit 0 (the scripts list with paging and label
//! selectors, create, read, replace, hit 409 and 404, watch, delete; see their headers).
//!
//! The clients' environments are set up by these tests, under `<target dir>/test-clients/`:
//! a virtualenv made with `python3 -m venv` and the pinned `requirements.txt` installed with
//! pip (skipped when the pinned version is already there), and an `npm ci` of the pinned
//! `package-lock.json` (skipped when that lock file was installed already). Without python3,
//! node or npm, or when the package registry cannot be reached, the tests print a notice and
//! pass, except under `CI=true`, where they fail.
//!
//! The JavaScript client is pinned to the newest 1.x: 2.x needs Node 22.19 or later (through
//! undici 8), and the project's machines have Node 20.
#![cfg(all(feature = "http", unix))]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use tokio::process::Command;

use crate::support::http::{Binary, client};
use crate::support::{find_program, unavailable};

/// Seeded pods, spread over [`NAMESPACES`] namespaces.
const PODS: usize = 300;
const NAMESPACES: usize = 3;
/// The longest a client script may run.
const SCRIPT_GUARD: Duration = Duration::from_secs(180);
/// The longest an environment setup (venv, pip, npm) may take.
const SETUP_GUARD: Duration = Duration::from_secs(600);
/// Variables that would send the clients' requests through a proxy (package installs keep
/// them; the client scripts talk to loopback directly).
const PROXY_VARS: [&str; 8] = [
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client() {
    let test = "python_client";
    let Some(python) = python_env(test).await else {
        return;
    };
    let script = clients_dir().join("python/client_test.py");
    let mut cmd = Command::new(&python);
    cmd.arg(&script).env("PYTHONUNBUFFERED", "1");
    run_against_binary(test, cmd).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn javascript_client() {
    let test = "javascript_client";
    let Some((node, dir)) = js_env(test).await else {
        return;
    };
    let mut cmd = Command::new(node);
    cmd.arg(dir.join("client_test.mjs"));
    run_against_binary(test, cmd).await;
}

/// Starts the seeded binary, runs `cmd KUBECONFIG --pods N --namespaces K`, requires exit 0,
/// then checks in the server's request log that the client really paged and watched.
async fn run_against_binary(test: &str, mut cmd: Command) {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let pods = format!("pods={PODS}");
    let namespaces = NAMESPACES.to_string();
    let bin = Binary::start(&[
        "--seed",
        &pods,
        "--namespaces",
        &namespaces,
        "--kubeconfig-out",
        kubeconfig.to_str().unwrap(),
    ])
    .await;
    cmd.arg(&kubeconfig)
        .args(["--pods", &PODS.to_string(), "--namespaces", &namespaces])
        .env_remove("KUBECONFIG");
    for var in PROXY_VARS {
        cmd.env_remove(var);
    }
    let out = run(&mut cmd, SCRIPT_GUARD, test).await;
    assert!(
        out.status.success(),
        "{test}: the client script failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("client checks passed"),
        "{test}: the script exited 0 without finishing its checks:\n{stdout}"
    );
    let log: Value = client()
        .get(format!("{}/_fake/requests", bin.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let requests = log["requests"].as_array().unwrap();
    let has = |method: &str, path: &str, param: &str| {
        requests.iter().any(|r| {
            r["method"] == method
                && r["path"] == path
                && r["query"]
                    .as_array()
                    .is_some_and(|q| q.iter().any(|p| p[0] == param))
        })
    };
    assert!(
        has("GET", "/api/v1/pods", "continue"),
        "{test}: no paged pod list in {log}"
    );
    assert!(
        has("GET", "/api/v1/pods", "labelSelector"),
        "{test}: no label selector in {log}"
    );
    assert!(
        has("GET", "/api/v1/namespaces/ns-0/configmaps", "watch")
            && has(
                "GET",
                "/api/v1/namespaces/ns-0/configmaps",
                "resourceVersion"
            ),
        "{test}: no configmap watch from a resourceVersion in {log}"
    );
    for method in ["POST", "PUT", "DELETE"] {
        assert!(
            requests.iter().any(|r| r["method"] == method),
            "{test}: no {method} in {log}"
        );
    }
    assert!(bin.terminate().await.success());
}

/// `tests/clients/` of this crate.
fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

/// `<target dir>/test-clients/`: the test executable is `<target>/<profile>/deps/<name>`.
fn work_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let target = exe
        .ancestors()
        .nth(3)
        .unwrap_or_else(|| panic!("{} is not in <target>/<profile>/deps", exe.display()));
    let dir = target.join("test-clients");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// An exclusive lock on `<work dir>/<name>.lock`, held while the returned file lives, so that
/// test processes running at once do not set up the same environment together.
fn lock(name: &str) -> File {
    let file = File::create(work_dir().join(format!("{name}.lock"))).unwrap();
    file.lock().unwrap();
    file
}

/// Runs a command to its end, with its stdout and stderr captured, failing the test if it
/// cannot start or runs past `guard`.
async fn run(cmd: &mut Command, guard: Duration, test: &str) -> Output {
    cmd.stdin(Stdio::null()).kill_on_drop(true);
    let shown = format!("{cmd:?}");
    tokio::time::timeout(guard, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("{test}: {shown} ran longer than {guard:?}"))
        .unwrap_or_else(|e| panic!("{test}: cannot run {shown}: {e}"))
}

fn describe(out: &Output) -> String {
    format!(
        "{}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The version `requirements.txt` pins for `package` (`package==X`).
fn pinned(requirements: &str, package: &str) -> String {
    requirements
        .lines()
        .find_map(|l| l.trim().strip_prefix(package)?.trim().strip_prefix("=="))
        .map(|v| v.trim().to_owned())
        .unwrap_or_else(|| panic!("requirements.txt pins no {package}==<version>"))
}

/// The version of `kubernetes` installed in the venv whose interpreter is `python`.
async fn installed_kubernetes(python: &Path, test: &str) -> Option<String> {
    if !python.is_file() {
        return None;
    }
    let out = run(
        Command::new(python).args([
            "-c",
            "import importlib.metadata as m; print(m.version('kubernetes'))",
        ]),
        SETUP_GUARD,
        test,
    )
    .await;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The venv's interpreter with the pinned client installed (made or updated as needed).
async fn python_env(test: &str) -> Option<PathBuf> {
    let Some(python3) = find_program("python3") else {
        return unavailable(test, "python3 not found on PATH");
    };
    let requirements = clients_dir().join("python/requirements.txt");
    let pin = pinned(
        &std::fs::read_to_string(&requirements).unwrap(),
        "kubernetes",
    );
    let _lock = lock("python");
    let venv = work_dir().join("venv");
    let python = venv.join("bin/python");
    if installed_kubernetes(&python, test).await.as_deref() == Some(pin.as_str()) {
        return Some(python);
    }
    if !python.is_file() {
        let out = run(
            Command::new(&python3)
                .args(["-m", "venv", "--clear"])
                .arg(&venv),
            SETUP_GUARD,
            test,
        )
        .await;
        if !out.status.success() {
            return unavailable(
                test,
                &format!("`python3 -m venv` failed: {}", describe(&out)),
            );
        }
    }
    let out = run(
        Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "--no-input",
                "--quiet",
                "-r",
            ])
            .arg(&requirements),
        SETUP_GUARD,
        test,
    )
    .await;
    if !out.status.success() {
        return unavailable(
            test,
            &format!(
                "pip could not install {} (is PyPI reachable?): {}",
                requirements.display(),
                describe(&out)
            ),
        );
    }
    let installed = installed_kubernetes(&python, test).await;
    assert_eq!(
        installed.as_deref(),
        Some(pin.as_str()),
        "{test}: pip installed another kubernetes version than requirements.txt pins"
    );
    Some(python)
}

/// node, and a directory holding the client script with the pinned packages installed in
/// its `node_modules` (`npm ci` when the lock file changed since the last install).
async fn js_env(test: &str) -> Option<(PathBuf, PathBuf)> {
    let (Some(node), Some(npm)) = (find_program("node"), find_program("npm")) else {
        return unavailable(test, "node or npm not found on PATH");
    };
    let source = clients_dir().join("js");
    let _lock = lock("js");
    let dir = work_dir().join("js");
    std::fs::create_dir_all(&dir).unwrap();
    for file in ["package.json", "package-lock.json", "client_test.mjs"] {
        std::fs::copy(source.join(file), dir.join(file)).unwrap();
    }
    let lock_file = std::fs::read(dir.join("package-lock.json")).unwrap();
    // Inside node_modules, which `npm ci` removes first: it exists only after a full install.
    let stamp = dir.join("node_modules/.installed-package-lock.json");
    if std::fs::read(&stamp).is_ok_and(|s| s == lock_file) {
        return Some((node, dir));
    }
    let out = run(
        Command::new(&npm)
            .args([
                "ci",
                "--no-audit",
                "--no-fund",
                "--no-update-notifier",
                "--loglevel=error",
            ])
            .current_dir(&dir)
            .env_remove("NODE_OPTIONS"),
        SETUP_GUARD,
        test,
    )
    .await;
    if !out.status.success() {
        return unavailable(
            test,
            &format!(
                "`npm ci` failed (is the npm registry reachable?): {}",
                describe(&out)
            ),
        );
    }
    std::fs::write(&stamp, &lock_file).unwrap();
    Some((node, dir))
}
