//! [`FactoryLifecycle`]: starting and stopping the informers of a factory, for code that owns
//! a factory without knowing which kind it is (a controller runtime).

use futures::future::BoxFuture;

use crate::factory::{FactoryShutdownReport, InformerFactory};

/// Starts and stops the informers a factory handed out: what code that *owns* a factory needs
/// of it, whatever the factory (this crate's [`InformerFactory`], `informer-kube`'s
/// `KubeInformerFactory`). A controller given one starts it before it waits for its caches,
/// and shuts it down after its workers have stopped.
pub trait FactoryLifecycle: Send + Sync + 'static {
    /// Starts every informer not started yet (see [`InformerFactory::start`]).
    fn start(&self);

    /// Stops every informer and waits for them (see [`InformerFactory::shutdown`]). The
    /// future owns what it needs: it does not borrow the factory.
    fn shutdown(&self) -> BoxFuture<'static, FactoryShutdownReport>;
}

impl<P: Send + Sync + 'static> FactoryLifecycle for InformerFactory<P> {
    fn start(&self) {
        InformerFactory::start(self);
    }

    fn shutdown(&self) -> BoxFuture<'static, FactoryShutdownReport> {
        let factory = self.clone();
        Box::pin(async move { factory.shutdown().await })
    }
}
