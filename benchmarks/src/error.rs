//! The harness's error type.

use crate::procfs::ProcError;

/// Why a benchmark run could not go on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HarnessError {
    /// Starting or talking to a process, or reading and writing a file.
    #[error("{context}")]
    Io {
        /// What was being done.
        context: String,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
    /// A request to the fake API server failed.
    #[error("{context}")]
    Server {
        /// The request.
        context: String,
        /// kube-client's error.
        #[source]
        source: kube_client::Error,
    },
    /// Reading `/proc`.
    #[error(transparent)]
    Proc(#[from] ProcError),
    /// A contender failed, went silent, or answered out of turn.
    #[error("contender {contender}: {message}")]
    Contender {
        /// Which.
        contender: String,
        /// What happened.
        message: String,
    },
    /// A measurement did not happen as planned (a relist that the server never saw, a
    /// lookup that missed objects, a server that never answered).
    #[error("{0}")]
    Check(String),
}

impl HarnessError {
    /// An [`Io`](Self::Io) error: `context` says what was being done.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }

    /// A [`Server`](Self::Server) error: `context` names the request.
    pub fn server(context: impl Into<String>, source: kube_client::Error) -> Self {
        Self::Server {
            context: context.into(),
            source,
        }
    }
}
