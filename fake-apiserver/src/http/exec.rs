//! `pods/<name>/exec` over HTTP: the checks, then the WebSocket stream protocols
//! `v5.channel.k8s.io` (preferred: it can close standard input) and `v4.channel.k8s.io`, as
//! the API server and the kubelet serve them to `kubectl exec` and kube-client. Every
//! message is binary, its first byte the channel: 0 standard input, 1 standard output, 2
//! standard error, 3 the result (a `Status` in JSON), 4 terminal resizes (ignored here), and
//! under v5, 255 closing a channel (`[255, 0]`: the input is over).
//!
//! The command runs once its input is complete (at once without `stdin`; under v4, which
//! cannot close the input, with none), through the test's handler
//! ([`FakeApiServer::set_exec_handler`]); its output is sent on the channels the client
//! asked for, then the result, then the socket is closed.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::FromRequestParts;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade, close_code};
use axum::http::{Extensions, HeaderMap, Method, Request};
use axum::response::{IntoResponse, Response};
use informer_core::Status;
use serde_json::Value;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::exec::{ExecOptions, ExecRequest, result_status};
use crate::{FakeApiServer, Target, status};

/// The protocols served, the preferred first.
const PROTOCOLS: [&str; 2] = ["v5.channel.k8s.io", "v4.channel.k8s.io"];

/// The most exec sessions open at once (an upgraded connection no longer counts toward
/// [`HttpConfig::max_connections`](super::HttpConfig::max_connections)); one more is a 429
/// before its upgrade.
pub const MAX_EXEC_SESSIONS: usize = 64;

/// The most standard input a command takes: more fails it.
pub(crate) const MAX_STDIN_BYTES: usize = 16 << 20;

/// The largest message of output sent.
const FRAME_BYTES: usize = 32 << 10;

/// `GET` (or `POST`) `pods/<name>/exec`: checked, then upgraded to a WebSocket; a request
/// that does not ask for one is upstream's 400 `Upgrade request required`.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn exec(
    server: &FakeApiServer,
    limits: (Duration, CancellationToken, Arc<Semaphore>),
    target: &Target,
    name: &str,
    options: ExecOptions,
    method: &Method,
    headers: &HeaderMap,
    extensions: Extensions,
) -> Result<Response, Status> {
    let request = server.check_exec_with(method.as_str(), target, name, &options)?;
    let mut parts = {
        let mut r = Request::new(());
        *r.method_mut() = method.clone();
        *r.headers_mut() = headers.clone();
        *r.extensions_mut() = extensions;
        r.into_parts().0
    };
    let Ok(upgrade) = WebSocketUpgrade::from_request_parts(&mut parts, &()).await else {
        return Err(status::bad_request("Upgrade request required"));
    };
    let upgrade = upgrade.protocols(PROTOCOLS);
    let v5 = match upgrade.selected_protocol().and_then(|p| p.to_str().ok()) {
        Some(p) if p == PROTOCOLS[0] => true,
        Some(_) => false,
        None => {
            return Err(status::bad_request(format!(
                "none of the requested stream protocols is supported (this server speaks {})",
                PROTOCOLS.join(", ")
            )));
        }
    };
    let server = server.clone();
    let (timeout, shutdown, sessions) = limits;
    let Ok(session_permit) = sessions.try_acquire_owned() else {
        return Err(Status::failure(
            429,
            "TooManyRequests",
            format!(
                "too many exec sessions are open ({}, the most this server serves at once); \
                 retry when one ends",
                MAX_EXEC_SESSIONS
            ),
        ));
    };
    Ok(upgrade
        .on_upgrade(move |socket| async move {
            let _session = session_permit;
            // Bounded: a client that never closes its input ends with the timeout, every
            // session with the server.
            tokio::select! {
                _ = tokio::time::timeout(timeout, session(server, socket, request, &options, v5)) => {}
                () = shutdown.cancelled() => {}
            }
        })
        .into_response())
}

/// One exec: the input read, the command run (on a blocking thread: the handler is the
/// test's code), the output and the result sent, the socket closed.
async fn session(
    server: FakeApiServer,
    mut socket: WebSocket,
    mut request: ExecRequest,
    options: &ExecOptions,
    v5: bool,
) {
    let result = 'run: {
        if options.stdin && v5 {
            match read_stdin(&mut socket).await {
                Some(Ok(stdin)) => request.stdin = stdin,
                Some(Err(too_much)) => break 'run too_much,
                // The client went away.
                None => return,
            }
        }
        let command = request.command.clone();
        let ran = tokio::task::spawn_blocking(move || server.run_exec(&request)).await;
        match ran {
            Ok(Ok(output)) => {
                if options.stdout {
                    send_channel(&mut socket, 1, &output.stdout).await;
                }
                if options.stderr {
                    send_channel(&mut socket, 2, &output.stderr).await;
                }
                result_status(&command, output.exit_code)
            }
            Ok(Err(failed)) => status_value(&failed),
            Err(panicked) => status_value(&Status::failure(
                500,
                "InternalError",
                format!("fake-apiserver: the exec handler panicked: {panicked}"),
            )),
        }
    };
    send_status(&mut socket, &result).await;
    // A normal closure (1000), as upstream's server closes: clients take any other code
    // (a close without one is 1005) for an error.
    let close = CloseFrame {
        code: close_code::NORMAL,
        reason: "".into(),
    };
    let _ = socket.send(Message::Close(Some(close))).await;
}

/// Standard input until the client closes it (`[255, 0]`); `None` if the client leaves
/// first, a failure status if it sends more than [`MAX_STDIN_BYTES`].
async fn read_stdin(socket: &mut WebSocket) -> Option<Result<Vec<u8>, Value>> {
    let mut stdin = Vec::new();
    loop {
        match socket.recv().await? {
            Ok(Message::Binary(data)) => match data.first() {
                Some(0) => {
                    stdin.extend_from_slice(&data[1..]);
                    if stdin.len() > MAX_STDIN_BYTES {
                        let too_much = Status::failure(
                            413,
                            "RequestEntityTooLarge",
                            format!(
                                "standard input is over {MAX_STDIN_BYTES} bytes, the most \
                                 this server takes"
                            ),
                        );
                        return Some(Err(status_value(&too_much)));
                    }
                }
                Some(255) if data.get(1) == Some(&0) => return Some(Ok(stdin)),
                // Terminal resizes and other channels' closes.
                _ => {}
            },
            Ok(Message::Close(_)) | Err(_) => return None,
            Ok(_) => {}
        }
    }
}

/// `data` on `channel`, in messages of at most [`FRAME_BYTES`].
async fn send_channel(socket: &mut WebSocket, channel: u8, data: &[u8]) {
    for chunk in data.chunks(FRAME_BYTES) {
        let mut message = Vec::with_capacity(chunk.len() + 1);
        message.push(channel);
        message.extend_from_slice(chunk);
        if socket
            .send(Message::Binary(Bytes::from(message)))
            .await
            .is_err()
        {
            return;
        }
    }
}

/// The result on the error channel (3).
async fn send_status(socket: &mut WebSocket, status: &Value) {
    send_channel(socket, 3, status.to_string().as_bytes()).await;
}

/// A failure as the kubelet writes it on the error channel: a `metav1.Status` without kind.
fn status_value(failed: &Status) -> Value {
    let mut value = serde_json::to_value(failed).unwrap_or_default();
    if let Some(o) = value.as_object_mut() {
        o.insert("metadata".into(), serde_json::json!({}));
        o.remove("kind");
        o.remove("apiVersion");
    }
    value
}
