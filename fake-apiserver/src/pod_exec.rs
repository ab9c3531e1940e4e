//! The server's side of `pods/<name>/exec` ([`crate::exec`]): the test's handler, and the
//! checks a request passes before its stream opens.

use std::sync::Arc;

use informer_core::Status;

use crate::exec::{ExecOptions, ExecOutput, ExecRequest, check_running};
use crate::{FakeApiServer, Target, status};

impl FakeApiServer {
    /// Sets what commands run in containers do (`kubectl exec`, kube-client's `exec`): the
    /// handler gets each command with its pod, container and standard input, and answers its
    /// output and exit code. It replaces the handler set before. Without one, an `exec` that
    /// passes the checks fails with a 500 saying so.
    ///
    /// ```
    /// use fake_apiserver::{ExecOptions, ExecOutput, FakeApiServer};
    /// use serde_json::json;
    ///
    /// let server = FakeApiServer::new();
    /// server.create("namespaces", &json!({"metadata": {"name": "a"}})).unwrap();
    /// server
    ///     .create("pods", &json!({
    ///         "metadata": {"name": "db", "namespace": "a"},
    ///         "spec": {"nodeName": "node-1", "containers": [{"name": "db", "image": "postgres"}]},
    ///         "status": {"containerStatuses": [{"name": "db", "state": {"running": {}}}]},
    ///     }))
    ///     .unwrap();
    /// server.set_exec_handler(|request| match request.command.as_slice() {
    ///     [cmd, ..] if cmd == "pg_isready" => ExecOutput::stdout("accepting connections\n"),
    ///     _ => ExecOutput { exit_code: 127, ..ExecOutput::default() },
    /// });
    /// let options = ExecOptions {
    ///     command: vec!["pg_isready".into()],
    ///     stdout: true,
    ///     ..ExecOptions::default()
    /// };
    /// let output = server.exec("a", "db", &options, b"").unwrap();
    /// assert_eq!(output.stdout, b"accepting connections\n");
    /// ```
    pub fn set_exec_handler(
        &self,
        handler: impl Fn(&ExecRequest) -> ExecOutput + Send + Sync + 'static,
    ) {
        *self.shared.exec_handler.lock() = Some(Arc::new(handler));
    }

    /// Runs a command in a container of pod `namespace`/`name` as `POST pods/<name>/exec`
    /// does, without the stream: checked as [`check_exec_at`](Self::check_exec_at), then
    /// the handler's answer.
    pub fn exec(
        &self,
        namespace: &str,
        name: &str,
        options: &ExecOptions,
        stdin: &[u8],
    ) -> Result<ExecOutput, Status> {
        let target = self.target("pods", Some(namespace))?;
        let request = self.check_exec_at(&target, name, options)?;
        self.run_exec(&ExecRequest {
            stdin: stdin.to_vec(),
            ..request
        })
    }

    /// The checks of an `exec` request before its stream opens, as the registry and the
    /// kubelet make them: a command and at least one stream asked for (400), the pod stored
    /// (404), the container chosen as for logs (400), the pod on a node (`pod web does not
    /// have a host assigned`, 400), the container running (`container not found ("web")`,
    /// 400). Answers the request the handler will get (its standard input still empty).
    /// Recorded in the request log (as a `POST`).
    pub fn check_exec_at(
        &self,
        target: &Target,
        name: &str,
        options: &ExecOptions,
    ) -> Result<ExecRequest, Status> {
        self.check_exec_with("POST", target, name, options)
    }

    /// [`check_exec_at`](Self::check_exec_at), recorded with the request's own method
    /// (WebSocket clients send a `GET`).
    pub(crate) fn check_exec_with(
        &self,
        method: &str,
        target: &Target,
        name: &str,
        options: &ExecOptions,
    ) -> Result<ExecRequest, Status> {
        self.subresource_request(method, target, name, "exec", target.resource().is_pods())?;
        let (pod, container, on_node) =
            self.pod_and_container(target, name, options.container.as_deref())?;
        if !on_node {
            return Err(status::bad_request(format!(
                "pod {name} does not have a host assigned"
            )));
        }
        options.check()?;
        check_running(&pod, &container)?;
        Ok(ExecRequest {
            namespace: target.namespace().unwrap_or_default().to_owned(),
            pod: name.to_owned(),
            container,
            command: options.command.clone(),
            stdin: Vec::new(),
            tty: options.tty,
        })
    }

    /// What the handler answers for `request` (a 500 if no handler is set). Standard error is
    /// dropped under a terminal, as the kubelet drops it.
    pub fn run_exec(&self, request: &ExecRequest) -> Result<ExecOutput, Status> {
        let handler = self.shared.exec_handler.lock().clone();
        let Some(handler) = handler else {
            return Err(Status::failure(
                500,
                "InternalError",
                format!(
                    "fake-apiserver: no exec handler is set (FakeApiServer::set_exec_handler), \
                     so [{}] cannot run in container {:?} of pod {:?}",
                    request.command.join(" "),
                    request.container,
                    request.pod
                ),
            ));
        };
        let mut output = handler(request);
        if request.tty {
            output.stderr.clear();
        }
        Ok(output)
    }
}
