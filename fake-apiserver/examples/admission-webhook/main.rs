//! Testing an admission webhook written with kube-rs against the fake API server.
//!
//! The fake server calls the webhooks its stored configurations name, over HTTPS, as a cluster
//! does. This example serves a webhook with kube-core's admission types (a certificate made for
//! the run with rcgen), registers it, and shows a pod it mutated and one it refused:
//!
//! ```text
//! cargo run -p fake-apiserver --example admission-webhook
//! ```

mod app;

#[tokio::main]
async fn main() -> Result<(), app::Failure> {
    let server = fake_apiserver::FakeApiServer::new();
    server
        .create("namespaces", &fake_apiserver::seed::namespace("demo"))
        .map_err(|s| s.to_string())?;
    let http = fake_apiserver::http::FakeHttpServer::start(
        server,
        fake_apiserver::http::HttpConfig::default(),
    )
    .await?;
    let outcome = app::run(&http).await?;
    println!("pod web was created with labels {:?}", outcome.labels);
    println!("pod sneaky was refused: {}", outcome.refusal);
    http.shutdown().await?;
    Ok(())
}
