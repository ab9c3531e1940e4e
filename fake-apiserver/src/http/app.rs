//! What every handler of the HTTP front end shares: the engine, the shutdown signal, the
//! churn the admin API started. A leaf: the router builds it, the handlers read it.

use std::sync::Arc;

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::FakeApiServer;
use crate::seed::Churn;

/// State shared by every handler.
#[derive(Clone)]
pub(crate) struct App {
    pub server: FakeApiServer,
    pub shutdown: CancellationToken,
    pub churn: Arc<Mutex<Option<Churn>>>,
    /// `host:port` for `/api`'s `serverAddressByClientCIDRs`.
    pub server_address: String,
    /// [`HttpConfig::exec_timeout`](super::HttpConfig::exec_timeout).
    pub exec_timeout: std::time::Duration,
    /// Exec sessions open at once (upgraded connections leave the connection cap):
    /// [`MAX_EXEC_SESSIONS`](super::MAX_EXEC_SESSIONS).
    pub exec_sessions: Arc<tokio::sync::Semaphore>,
}
