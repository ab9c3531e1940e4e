//! The fake API server: its process, and what the harness asks of it through the REST API and
//! the `/_fake/` admin API (seeding, compaction, dropped watches, the request log).

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use http::header::CONTENT_TYPE;
use k8s_openapi::api::core::v1::Pod;
use kube_client::api::ListParams;
use kube_client::{Api, Client};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::HarnessError;

/// A `fake-apiserver` process, killed when dropped.
#[derive(Debug)]
pub struct ServerProcess {
    child: Child,
    url: String,
}

impl ServerProcess {
    /// Starts `exe` on a free loopback port, with periodic bookmarks off (a bookmark would
    /// move a watcher's resourceVersion past the compaction that forces relists), and waits
    /// for the line telling where it listens.
    pub fn spawn(exe: &Path) -> Result<Self, HarnessError> {
        let mut child = Command::new(exe)
            .args(["--listen", "127.0.0.1:0", "--bookmark-interval", "1000000"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| HarnessError::io(format!("starting {}", exe.display()), e))?;
        let Some(stdout) = child.stdout.take() else {
            return Err(HarnessError::Check(
                "the server's stdout is not piped".into(),
            ));
        };
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .map_err(|e| HarnessError::io("reading the server's first line", e))?;
        #[derive(Deserialize)]
        struct Ready {
            url: String,
        }
        let ready: Ready = serde_json::from_str(&line).map_err(|e| {
            let _ = child.kill();
            HarnessError::Check(format!("the server said {line:?}: {e}"))
        })?;
        Ok(Self {
            child,
            url: ready.url,
        })
    }

    /// Where it listens (`http://127.0.0.1:port`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One request from the server's log.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RecordedRequest {
    /// `GET`, `PATCH`, …
    pub method: String,
    /// The path.
    pub path: String,
    /// Query pairs.
    #[serde(default)]
    pub query: Vec<(String, String)>,
}

impl RecordedRequest {
    fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// A list request (`GET` without `watch`).
    pub fn is_list(&self) -> bool {
        self.method == "GET" && !matches!(self.param("watch"), Some("1" | "true"))
    }

    /// A streaming list (a watch with `sendInitialEvents=true`).
    pub fn is_streaming_list(&self) -> bool {
        self.method == "GET"
            && matches!(self.param("watch"), Some("1" | "true"))
            && self.param("sendInitialEvents") == Some("true")
    }
}

/// The harness's client of the fake API server.
#[derive(Clone)]
pub struct Admin {
    client: Client,
}

impl Admin {
    /// A client for the server at `url` (no read timeout: seeding 100k pods takes a while).
    pub fn new(url: &str) -> Result<Self, HarnessError> {
        let uri = url
            .parse()
            .map_err(|e| HarnessError::Check(format!("invalid server URL {url:?}: {e}")))?;
        let mut config = kube_client::Config::new(uri);
        config.read_timeout = None;
        let client = informer_kube::client_for_informers(config)
            .map_err(|e| HarnessError::Check(format!("building a client for {url}: {e}")))?;
        Ok(Self { client })
    }

    /// The client (for writers).
    pub fn client(&self) -> &Client {
        &self.client
    }

    async fn call(
        &self,
        method: http::Method,
        path: &str,
        body: Value,
    ) -> Result<Value, HarnessError> {
        let context = format!("{method} {path}");
        let request = http::Request::builder()
            .method(method)
            .uri(path)
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_string().into_bytes())
            .map_err(|e| HarnessError::Check(format!("building {context}: {e}")))?;
        let text = self
            .client
            .request_text(request)
            .await
            .map_err(|e| HarnessError::server(context.clone(), e))?;
        serde_json::from_str(&text)
            .map_err(|e| HarnessError::Check(format!("{context} answered {text:?}: {e}")))
    }

    /// Seeds `pods` realistic pods (with managedFields) over `namespaces` namespaces.
    pub async fn seed(&self, namespaces: usize, pods: usize) -> Result<Value, HarnessError> {
        self.call(
            http::Method::POST,
            "/_fake/seed",
            json!({"namespaces": namespaces, "pods": pods}),
        )
        .await
    }

    /// Sets the periodic bookmark interval.
    pub async fn set_bookmark_interval(&self, seconds: f64) -> Result<(), HarnessError> {
        self.call(
            http::Method::PUT,
            "/_fake/bookmark-interval",
            json!({"seconds": seconds}),
        )
        .await
        .map(drop)
    }

    /// Compacts the history of every resource up to the current resourceVersion.
    pub async fn compact(&self) -> Result<u64, HarnessError> {
        let answer = self
            .call(http::Method::POST, "/_fake/compact", json!({}))
            .await?;
        Ok(answer["compactedTo"].as_u64().unwrap_or(0))
    }

    /// Ends every open watch of `resource`; how many there were.
    pub async fn drop_watches(&self, resource: &str) -> Result<u64, HarnessError> {
        let answer = self
            .call(
                http::Method::POST,
                "/_fake/faults/drop-watches",
                json!({"resource": resource}),
            )
            .await?;
        Ok(answer["watches"].as_u64().unwrap_or(0))
    }

    /// The request log, emptied.
    pub async fn take_requests(&self) -> Result<Vec<RecordedRequest>, HarnessError> {
        #[derive(Deserialize)]
        struct Log {
            requests: Vec<RecordedRequest>,
        }
        let answer = self
            .call(http::Method::GET, "/_fake/requests?clear=true", Value::Null)
            .await?;
        let log: Log = serde_json::from_value(answer)
            .map_err(|e| HarnessError::Check(format!("the request log: {e}")))?;
        Ok(log.requests)
    }

    /// Creates a config map (a write to another resource, moving the resourceVersion).
    pub async fn create_config_map(&self, namespace: &str, name: &str) -> Result<(), HarnessError> {
        self.call(
            http::Method::POST,
            &format!("/api/v1/namespaces/{namespace}/configmaps"),
            json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": namespace},
                "data": {"purpose": "moves the resourceVersion before a compaction"},
            }),
        )
        .await
        .map(drop)
    }

    /// Lists every pod the two ways contenders do (one `resourceVersion=0` answer, and
    /// consistent pages of 500) and drops the bodies. Run once before the first contender,
    /// so that it meets a server that has served a full list before, as the later ones do
    /// (without this the first contender's cold sync also paid for the server's first
    /// 100k-pod answer: 18 s against 10 s for the same contender run again).
    pub async fn warm_lists(&self) -> Result<(), HarnessError> {
        #[derive(Deserialize)]
        struct Page {
            #[serde(default)]
            metadata: PageMeta,
        }
        #[derive(Deserialize, Default)]
        struct PageMeta {
            #[serde(default, rename = "continue")]
            continue_token: Option<String>,
        }
        let pods = kube_client::core::Request::new("/api/v1/pods");
        let client = &self.client;
        let get = |params: &ListParams| {
            let request = pods.list(params);
            async move {
                let request = request.map_err(|e| {
                    HarnessError::Check(format!("building a pod list request: {e}"))
                })?;
                client
                    .request_text(request)
                    .await
                    .map_err(|e| HarnessError::server("a warm-up pod list", e))
            }
        };
        let mut params = ListParams::default().limit(500);
        drop(
            get(&ListParams {
                resource_version: Some("0".to_owned()),
                ..params.clone()
            })
            .await?,
        );
        loop {
            let page: Page = serde_json::from_str(&get(&params).await?)
                .map_err(|e| HarnessError::Check(format!("a warm-up list page: {e}")))?;
            match page.metadata.continue_token.filter(|c| !c.is_empty()) {
                Some(token) => params.continue_token = Some(token),
                None => return Ok(()),
            }
        }
    }

    /// `(namespace, name)` of every pod, sorted.
    pub async fn pod_keys(&self) -> Result<Vec<(String, String)>, HarnessError> {
        let api = Api::<Pod>::all(self.client.clone());
        let mut params = ListParams::default().limit(500);
        let mut keys = Vec::new();
        loop {
            let page = api
                .list_metadata(&params)
                .await
                .map_err(|e| HarnessError::server("listing pod names", e))?;
            keys.extend(
                page.items
                    .into_iter()
                    .filter_map(|p| Some((p.metadata.namespace?, p.metadata.name?))),
            );
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(token) => params.continue_token = Some(token),
                None => break,
            }
        }
        keys.sort();
        Ok(keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_requests_tell_lists_from_watches() {
        let r = |query: &[(&str, &str)]| RecordedRequest {
            method: "GET".into(),
            path: "/api/v1/pods".into(),
            query: query
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        };
        assert!(r(&[("limit", "500")]).is_list());
        assert!(!r(&[("watch", "1")]).is_list());
        assert!(r(&[("watch", "true"), ("sendInitialEvents", "true")]).is_streaming_list());
        assert!(!r(&[("watch", "1")]).is_streaming_list());
        let patch = RecordedRequest {
            method: "PATCH".into(),
            ..r(&[])
        };
        assert!(!patch.is_list());
    }
}
