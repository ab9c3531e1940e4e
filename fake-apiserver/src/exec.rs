//! Commands run in containers (`pods/<name>/exec`), as the API server serves them from the
//! kubelet: the options read as `PodExecOptions`, the container chosen as the pod registry's
//! `ExecLocation` chooses it, a pod on no node refused, the container looked up as the kubelet
//! looks it up, and the result reported as the kubelet's `remotecommand` server reports it on
//! the error channel (success, or upstream's `NonZeroExitCode` status with the exit code).
//!
//! There is no container runtime: what a command does is the test's
//! ([`FakeApiServer::set_exec_handler`](crate::FakeApiServer::set_exec_handler)), given the
//! command, the container and everything written to its standard input.

use std::sync::Arc;

use informer_core::Status;
use serde_json::Value;

use crate::status;

/// A command to run, as the test's handler sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecRequest {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub pod: String,
    /// The container the command runs in.
    pub container: String,
    /// The command and its arguments.
    pub command: Vec<String>,
    /// Everything the client wrote to the command's standard input (empty without `stdin`).
    pub stdin: Vec<u8>,
    /// Whether the client asked for a terminal.
    pub tty: bool,
}

/// What a command did: its output and its exit code (0: success).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecOutput {
    /// What it wrote to its standard output.
    pub stdout: Vec<u8>,
    /// What it wrote to its standard error (dropped when the client asked for a terminal, as
    /// the kubelet drops it).
    pub stderr: Vec<u8>,
    /// Its exit code.
    pub exit_code: i32,
}

impl ExecOutput {
    /// A command that printed `stdout` and exited 0.
    pub fn stdout(text: impl Into<Vec<u8>>) -> Self {
        Self {
            stdout: text.into(),
            ..Self::default()
        }
    }
}

/// What runs the commands of every `exec`.
pub(crate) type ExecHandler = Arc<dyn Fn(&ExecRequest) -> ExecOutput + Send + Sync>;

/// `PodExecOptions`: the query of an `exec` request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecOptions {
    /// The container (none: the pod's only one).
    pub container: Option<String>,
    /// The command and its arguments (`command`, repeated).
    pub command: Vec<String>,
    /// Whether the client sends standard input.
    pub stdin: bool,
    /// Whether the client reads standard output.
    pub stdout: bool,
    /// Whether the client reads standard error.
    pub stderr: bool,
    /// Whether the client asked for a terminal.
    pub tty: bool,
}

impl ExecOptions {
    /// The options of a request's query. Flags are on when `1` or `true` (the kubelet reads
    /// `1`; clients send either).
    pub fn from_query<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut o = Self::default();
        let on = |v: &str| matches!(v, "1" | "true" | "True" | "TRUE" | "t" | "T");
        for (key, value) in pairs {
            match key {
                "container" => o.container = Some(value.to_owned()).filter(|c| !c.is_empty()),
                "command" => o.command.push(value.to_owned()),
                "stdin" => o.stdin = on(value),
                "stdout" => o.stdout = on(value),
                "stderr" => o.stderr = on(value),
                "tty" => o.tty = on(value),
                _ => {}
            }
        }
        o
    }

    /// The options as the `PodExecOptions` object admission shows (Go's JSON: false flags
    /// and an empty container left out).
    #[cfg(feature = "http")]
    pub(crate) fn to_value(&self) -> Value {
        let mut o = serde_json::json!({"kind": "PodExecOptions", "apiVersion": "v1"});
        for (field, on) in [
            ("stdin", self.stdin),
            ("stdout", self.stdout),
            ("stderr", self.stderr),
            ("tty", self.tty),
        ] {
            if on {
                o[field] = Value::Bool(true);
            }
        }
        if let Some(container) = &self.container {
            o["container"] = Value::from(container.as_str());
        }
        o["command"] = Value::from(self.command.clone());
        o
    }

    /// The options a `PodExecOptions` object says (what a mutating webhook left).
    #[cfg(feature = "http")]
    pub(crate) fn from_value(v: &Value) -> Self {
        let flag = |field: &str| v.get(field).and_then(Value::as_bool).unwrap_or(false);
        Self {
            container: v
                .get("container")
                .and_then(Value::as_str)
                .filter(|c| !c.is_empty())
                .map(str::to_owned),
            command: v
                .get("command")
                .and_then(Value::as_array)
                .map(|c| {
                    c.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
            stdin: flag("stdin"),
            stdout: flag("stdout"),
            stderr: flag("stderr"),
            tty: flag("tty"),
        }
    }

    /// What the kubelet checks of the options (`you must specify at least 1 of stdin, stdout,
    /// stderr`), and that there is a command; a 400 otherwise.
    pub(crate) fn check(&self) -> Result<(), Status> {
        if self.command.is_empty() {
            return Err(status::bad_request(
                "you must specify at least one command for the container",
            ));
        }
        if !self.stdin && !self.stdout && !self.stderr {
            return Err(status::bad_request(
                "you must specify at least 1 of stdin, stdout, stderr",
            ));
        }
        Ok(())
    }
}

/// The kubelet's check that the container runs (it execs in a running container only): a
/// 400 `container not found ("web")` otherwise.
pub(crate) fn check_running(pod: &Value, container: &str) -> Result<(), Status> {
    if crate::logs::container_ended(pod, container) {
        return Err(status::bad_request(format!(
            "container not found ({container:?})"
        )));
    }
    Ok(())
}

/// What the error channel says when the command has run: the kubelet's `metav1.Status` (no
/// kind or apiVersion), success or `NonZeroExitCode` with the code as its cause, the command
/// in its message as the container runtime words it.
#[cfg(feature = "http")]
pub(crate) fn result_status(command: &[String], exit_code: i32) -> Value {
    if exit_code == 0 {
        return serde_json::json!({"metadata": {}, "status": "Success"});
    }
    serde_json::json!({
        "metadata": {},
        "status": "Failure",
        "message": format!(
            "command terminated with non-zero exit code: error executing command [{}], exit \
             code {exit_code}",
            command.join(" ")
        ),
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": exit_code.to_string()}]},
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn options_and_results_as_the_kubelet_has_them() {
        let o = ExecOptions::from_query([
            ("command", "sh"),
            ("command", "-c"),
            ("command", "exit 3"),
            ("stdout", "1"),
            ("stderr", "true"),
            ("container", "web"),
        ]);
        assert_eq!(o.command, ["sh", "-c", "exit 3"]);
        assert!(o.stdout && o.stderr && !o.stdin && !o.tty);
        assert!(o.check().is_ok());
        let none = ExecOptions::from_query([("command", "ls")]);
        assert_eq!(
            none.check().unwrap_err().message,
            "you must specify at least 1 of stdin, stdout, stderr"
        );
        #[cfg(feature = "http")]
        {
            assert_eq!(
                result_status(&o.command, 0),
                json!({"metadata": {}, "status": "Success"})
            );
            let failed = result_status(&o.command, 3);
            assert_eq!(failed["reason"], "NonZeroExitCode");
            assert_eq!(
                failed["message"],
                "command terminated with non-zero exit code: error executing command [sh -c \
                 exit 3], exit code 3"
            );
            assert_eq!(
                failed["details"]["causes"],
                json!([{"reason": "ExitCode", "message": "3"}])
            );
        }
        let pod = json!({"status": {"containerStatuses": [
            {"name": "web", "state": {"running": {}}},
            {"name": "side", "state": {"waiting": {"reason": "ContainerCreating"}}}]}});
        assert!(check_running(&pod, "web").is_ok());
        assert_eq!(
            check_running(&pod, "side").unwrap_err().message,
            "container not found (\"side\")"
        );
    }
}
