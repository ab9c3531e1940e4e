//! The server's side of `pods/<name>/log` ([`crate::logs`]): writing a container's output,
//! reading it as a request asks, and following it.

use std::time::SystemTime;

use futures::Stream;
use informer_core::Status;
use serde_json::Value;
use tokio::sync::watch;

use crate::logs::{
    LogStream, PodLogOptions, PodLogs, check_container_state, container_ended, container_of,
    limited,
};
use crate::store::Store;
use crate::{FakeApiServer, Target};

/// A pod's identity and the container a log request is for, checked.
struct Source {
    uid: String,
    container: String,
}

impl FakeApiServer {
    /// Appends `text` to what `container` of pod `namespace`/`pod` printed on `stream`, as if
    /// the container wrote it now: line by line, each with the server's current time (a text
    /// that does not end in a newline leaves its last line open for the next append). The log
    /// belongs to this pod (a pod created again under its name starts with none) and keeps
    /// its last [`MAX_CONTAINER_LOG_BYTES`](crate::MAX_CONTAINER_LOG_BYTES). A 404 if the pod is not stored, a 400 if it has
    /// no such container. What `pods/<name>/log` answers also depends on the pod, as on a
    /// cluster: a node in `spec.nodeName`, and a container status a kubelet would report
    /// (running, or terminated with a container ID).
    ///
    /// ```
    /// use fake_apiserver::{FakeApiServer, LogStream, PodLogOptions};
    /// use serde_json::json;
    ///
    /// let server = FakeApiServer::new();
    /// server.create("namespaces", &json!({"metadata": {"name": "a"}})).unwrap();
    /// server
    ///     .create("pods", &json!({
    ///         "metadata": {"name": "web", "namespace": "a"},
    ///         "spec": {"nodeName": "node-1", "containers": [{"name": "web", "image": "nginx"}]},
    ///         "status": {"containerStatuses": [{"name": "web", "state": {"running": {}}}]},
    ///     }))
    ///     .unwrap();
    /// server.append_pod_log("a", "web", "web", LogStream::Stdout, "ready\nserving\n").unwrap();
    /// let options = PodLogOptions { tail_lines: Some(1), ..PodLogOptions::default() };
    /// assert_eq!(server.pod_log("a", "web", &options).unwrap(), "serving\n");
    /// ```
    pub fn append_pod_log(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
        stream: LogStream,
        text: &str,
    ) -> Result<(), Status> {
        self.with_container_log(namespace, pod, container, |logs, store, res, log| {
            let live = || {
                store
                    .snapshot(res, &crate::store::Filter::default())
                    .iter()
                    .map(|p| p.uid().to_owned())
                    .collect()
            };
            logs.append(&log.uid, &log.container, stream, text, store.now(), live);
        })
    }

    /// Runs `f` on the logs with the store, the pods' index and the container's log named
    /// (the pod must be stored, 404, and have the container, 400).
    fn with_container_log(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
        f: impl FnOnce(&mut PodLogs, &Store, usize, &Source),
    ) -> Result<(), Status> {
        let target = self.target("pods", Some(namespace))?;
        let store = self.shared.store.lock();
        let value = store.get(target.index(), Some(namespace), pod)?.to_value();
        let container = container_of(&value, pod, Some(container))?;
        let uid = value
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let source = Source { uid, container };
        f(
            &mut self.shared.pod_logs.lock(),
            &store,
            target.index(),
            &source,
        );
        Ok(())
    }

    /// The container restarted: its log so far becomes the previous run's (what
    /// `previous=true` reads, once the pod's status reports a terminated last state with a
    /// container ID), and the new run's log starts empty. Errors as
    /// [`append_pod_log`](Self::append_pod_log)'s.
    pub fn restart_pod_log(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
    ) -> Result<(), Status> {
        self.with_container_log(namespace, pod, container, |logs, _, _, log| {
            logs.restart(&log.uid, &log.container);
        })
    }

    /// `GET pods/<name>/log` (without `follow`): what pod `namespace`/`name` logged, as
    /// `options` ask, as the API server answers it from the kubelet. Errors: a 422 for
    /// options `ValidatePodLogOptions` refuses, a 404 for a pod not stored, a 400 for a
    /// container the pod does not have (or none named, of several), and the kubelet's 400s
    /// for a container with no log to read (`container "web" in pod "p" is waiting to start:
    /// ContainerCreating`, ...). A pod on no node answers an empty log, as upstream's does.
    /// Recorded in the request log.
    pub fn pod_log(
        &self,
        namespace: &str,
        name: &str,
        options: &PodLogOptions,
    ) -> Result<String, Status> {
        let target = self.target("pods", Some(namespace))?;
        self.pod_log_at(&target, name, options)
    }

    /// [`pod_log`](Self::pod_log) through a resolved target (only pods: 404 otherwise).
    pub fn pod_log_at(
        &self,
        target: &Target,
        name: &str,
        options: &PodLogOptions,
    ) -> Result<String, Status> {
        let Some((source, now)) = self.log_source(target, name, options)? else {
            return Ok(String::new());
        };
        let logs = self.shared.pod_logs.lock();
        let (text, _) = logs.read(&source.uid, &source.container, options, now, false);
        Ok(limited(text, options.limit_bytes))
    }

    /// `GET pods/<name>/log?follow=true`: the log as [`pod_log_at`](Self::pod_log_at)
    /// answers it, then each line as it is written, until the container's run is over (its
    /// status no longer `running`), the pod is deleted, `limitBytes` are sent, or the
    /// stream is dropped. A line is sent once it is finished. Checked and recorded as
    /// `pod_log_at`.
    pub fn follow_pod_log_at(
        &self,
        target: &Target,
        name: &str,
        options: &PodLogOptions,
    ) -> Result<impl Stream<Item = String> + Send + 'static, Status> {
        let found = self.log_source(target, name, options)?;
        let follower = found.map(|(source, now)| {
            let store = self.shared.store.lock();
            let pods = store.changes(target.index());
            drop(store);
            let logs = self.shared.pod_logs.lock();
            let (first, seen) = logs.read(&source.uid, &source.container, options, now, true);
            Follower {
                server: self.clone(),
                res: target.index(),
                namespace: target.namespace().map(str::to_owned),
                name: name.to_owned(),
                source,
                options: options.clone(),
                seen,
                left: options
                    .limit_bytes
                    .and_then(|l| usize::try_from(l).ok())
                    .unwrap_or(usize::MAX),
                logs: logs.subscribe(),
                pods,
                pending: Some(first),
                // The previous run is over: its log is sent, then the follow ends.
                done: options.previous,
            }
        });
        Ok(futures::stream::unfold(follower, |f| async move {
            let mut f = f?;
            let chunk = f.next_chunk().await?;
            Some((chunk, Some(f)))
        }))
    }

    /// The pod and container a log request reads, with the time it reads at, checked as the
    /// registry and the kubelet check them; `None` for a pod on no node (an empty log).
    fn log_source(
        &self,
        target: &Target,
        name: &str,
        options: &PodLogOptions,
    ) -> Result<Option<(Source, SystemTime)>, Status> {
        self.subresource_request("GET", target, name, "log", target.resource().is_pods())?;
        options.validate(name)?;
        let (pod, container, on_node) =
            self.pod_and_container(target, name, options.container.as_deref())?;
        if !on_node {
            return Ok(None);
        }
        check_container_state(&pod, name, &container, options.previous)?;
        let uid = pod
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let now = self.shared.store.lock().now();
        Ok(Some((Source { uid, container }, now)))
    }

    /// The stored pod `name` (404), the container a request for it names (or its only one;
    /// 400 otherwise, as the registry's `validateContainer`), and whether the pod is on a
    /// node.
    pub(crate) fn pod_and_container(
        &self,
        target: &Target,
        name: &str,
        asked: Option<&str>,
    ) -> Result<(Value, String, bool), Status> {
        let pod = self
            .shared
            .store
            .lock()
            .get(target.index(), target.namespace(), name)?
            .to_value();
        let container = container_of(&pod, name, asked)?;
        let on_node = pod
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .is_some_and(|n| !n.is_empty());
        Ok((pod, container, on_node))
    }
}

/// A follower of one container's log.
struct Follower {
    server: FakeApiServer,
    res: usize,
    namespace: Option<String>,
    name: String,
    source: Source,
    options: PodLogOptions,
    /// Lines of the current run read so far.
    seen: u64,
    /// Bytes `limitBytes` still allows.
    left: usize,
    logs: watch::Receiver<u64>,
    pods: watch::Receiver<u64>,
    /// What to send first (the log so far).
    pending: Option<String>,
    done: bool,
}

impl Follower {
    /// The next piece of the log to send; `None` once the follow is over.
    async fn next_chunk(&mut self) -> Option<String> {
        loop {
            if let Some(text) = self.pending.take().filter(|t| !t.is_empty()) {
                return Some(self.spend(text));
            }
            if self.done || self.left == 0 {
                return None;
            }
            // Marked seen before reading, so that a write after the read wakes the wait.
            self.logs.borrow_and_update();
            self.pods.borrow_and_update();
            let (ended, now) = {
                let store = self.server.shared.store.lock();
                let pod = store
                    .get(self.res, self.namespace.as_deref(), &self.name)
                    .ok()
                    .map(|p| p.to_value());
                let same = pod.as_ref().filter(|p| {
                    p.pointer("/metadata/uid").and_then(Value::as_str)
                        == Some(self.source.uid.as_str())
                });
                let ended = same.is_none_or(|p| container_ended(p, &self.source.container));
                (ended, store.now())
            };
            let (text, seen) = self.server.shared.pod_logs.lock().read_from(
                &self.source.uid,
                &self.source.container,
                &self.options,
                self.seen,
                now,
            );
            self.seen = seen;
            // What the run wrote before it ended is sent, then the follow ends.
            self.done = ended;
            if !text.is_empty() {
                self.pending = Some(text);
                continue;
            }
            if self.done {
                return None;
            }
            let woken = tokio::select! {
                changed = self.logs.changed() => changed,
                changed = self.pods.changed() => changed,
            };
            // A sender gone: the server is gone.
            woken.ok()?;
        }
    }

    /// `text` within what `limitBytes` still allows.
    fn spend(&mut self, text: String) -> String {
        let text = limited(text, i64::try_from(self.left).ok());
        self.left -= text.len();
        text
    }
}
