//! Where admission webhooks configured by `clientConfig.service` are called. A real API
//! server dials `https://<name>.<namespace>.svc:<port><path>` through the cluster's network;
//! this one has none, so a test names the address each service's port is reached at (its
//! webhook server, on loopback). The TLS server name stays `<name>.<namespace>.svc`, as
//! upstream verifies it, so the webhook's certificate must name the service, as on a
//! cluster.

use crate::FakeApiServer;

impl FakeApiServer {
    /// Routes calls to port `port` of service `namespace`/`name` (a webhook's
    /// `clientConfig.service`) to `address` (`host:port`, e.g. the test's webhook server on
    /// `127.0.0.1:9443`), replacing an earlier route. Unrouted services are not reachable:
    /// the call fails and the webhook's `failurePolicy` decides.
    ///
    /// ```
    /// use fake_apiserver::FakeApiServer;
    ///
    /// let server = FakeApiServer::new();
    /// server.route_service("system", "webhook-service", 443, "127.0.0.1:9443");
    /// assert_eq!(
    ///     server.service_route("system", "webhook-service", 443).as_deref(),
    ///     Some("127.0.0.1:9443")
    /// );
    /// assert_eq!(server.service_route("system", "webhook-service", 8443), None);
    /// ```
    pub fn route_service(
        &self,
        namespace: &str,
        name: &str,
        port: u16,
        address: impl Into<String>,
    ) {
        self.shared.service_routes.lock().insert(
            (namespace.to_owned(), name.to_owned(), port),
            address.into(),
        );
    }

    /// The address port `port` of service `namespace`/`name` is routed to, if any.
    pub fn service_route(&self, namespace: &str, name: &str, port: u16) -> Option<String> {
        self.shared
            .service_routes
            .lock()
            .get(&(namespace.to_owned(), name.to_owned(), port))
            .cloned()
    }
}
