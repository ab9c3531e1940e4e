//! `informer-demo`: a shared informer on pods with two handlers and a namespace index, fed by
//! the embedded fake API server over HTTP (seeded pods, steady churn) or by a real cluster.
//!
//! ```text
//! cargo run --release -p informer-kube --example informer-demo -- --duration 20s
//! cargo run --release -p informer-kube --example informer-demo -- --kubeconfig ~/.kube/config
//! cargo run --release -p informer-kube --example informer-demo -- --help
//! ```
//!
//! The program logic lives in `app.rs`, which `tests/it/demo.rs` runs in process.

mod app;

use std::process::ExitCode;

// The programs' shared set-up (`examples/common/mod.rs`), which `app.rs` includes.
use app::common;

#[tokio::main]
async fn main() -> ExitCode {
    common::init_logging("warn");
    // Ctrl-C stops the run (the program logic itself never listens for signals).
    let stop = tokio_util::sync::CancellationToken::new();
    let on_ctrl_c = stop.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_ctrl_c.cancel();
        }
    });
    match app::run(std::env::args_os(), stop).await {
        Ok(_) => ExitCode::SUCCESS,
        Err(error) => common::failed("informer-demo", &error),
    }
}
