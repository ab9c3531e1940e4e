//! The set of registrations of one informer: distribution under the distribution lock,
//! per-handler resync bookkeeping, starting delivery loops, removal, and shutdown.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use informer_core::{Indexer, Notification, Object};
use parking_lot::{Mutex, MutexGuard};
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::Instrument;

use crate::config::{Delivery, HandlerOptions};
use crate::incident::IncidentKind;
use crate::listener::{BoxedHandler, Listener, Pushed, Reporter, deliver};
use crate::process::Sink;
use crate::registration::{
    Phase, Registration, RegistrationId, RegistrationShared, RegistrationStatus,
};

/// Handlers may not resync more often than this.
pub(crate) const MINIMUM_RESYNC_PERIOD: Duration = Duration::from_secs(1);

/// Where the informer is in its life.
enum Lifecycle {
    NotStarted,
    Running(tokio::runtime::Handle),
    Stopped,
}

struct ResyncState {
    /// What the handler asked for (after the minimum was applied).
    requested: Duration,
    /// What is in effect (zero: never).
    period: Duration,
    next: Instant,
    /// Due at the last resync check: equal-resourceVersion updates go to it.
    syncing: bool,
}

struct Entry<K> {
    listener: Arc<Listener<K>>,
    resync: ResyncState,
    /// `None` for streams (their consumer pulls).
    delivery: Option<Delivery>,
}

/// A handler registered before start, waiting for its delivery loop.
struct Unstarted<K> {
    listener: Arc<Listener<K>>,
    handler: BoxedHandler<K>,
    delivery: Delivery,
}

/// The state behind the distribution lock.
pub(crate) struct Registry<K> {
    entries: Vec<Entry<K>>,
    unstarted: Vec<Unstarted<K>>,
    lifecycle: Lifecycle,
    resync_check_period: Duration,
    /// Listeners whose bound was hit during the current distribution.
    overflowed: Vec<(Arc<Listener<K>>, usize, usize)>,
}

/// The registrations of one informer.
pub(crate) struct Processor<K> {
    registry: Mutex<Registry<K>>,
    pub(crate) reporter: Arc<Reporter>,
    phase: watch::Receiver<Phase>,
    next_id: AtomicU64,
    default_resync: Duration,
}

/// What [`Processor::register`] is asked to register.
pub(crate) enum NewRegistration<K> {
    Handler(BoxedHandler<K>),
    Stream,
}

/// The distribution lock, held while a batch changes the cache and is distributed.
pub(crate) struct Distribution<'a, K> {
    registry: MutexGuard<'a, Registry<K>>,
}

impl<K: Object> Sink<K> for Distribution<'_, K> {
    fn notify(&mut self, notification: Notification<K>, is_sync: bool) {
        let registry = &mut *self.registry;
        for entry in &registry.entries {
            if is_sync && !entry.resync.syncing {
                continue;
            }
            if let Pushed::Overflowed { limit, dropped } = entry.listener.push(notification.clone())
            {
                registry
                    .overflowed
                    .push((Arc::clone(&entry.listener), limit, dropped));
            }
        }
    }

    fn wants_syncs(&self) -> bool {
        self.registry.entries.iter().any(|e| e.resync.syncing)
    }

    fn listens(&self) -> bool {
        !self.registry.entries.is_empty()
    }
}

impl<K: Object> Processor<K> {
    pub(crate) fn new(
        reporter: Arc<Reporter>,
        phase: watch::Receiver<Phase>,
        default_resync: Option<Duration>,
    ) -> Self {
        let default_resync = default_resync.unwrap_or(Duration::ZERO);
        Self {
            registry: Mutex::new(Registry {
                entries: Vec::new(),
                unstarted: Vec::new(),
                lifecycle: Lifecycle::NotStarted,
                resync_check_period: default_resync,
                overflowed: Vec::new(),
            }),
            reporter,
            phase,
            next_id: AtomicU64::new(1),
            default_resync,
        }
    }

    /// Takes the distribution lock.
    pub(crate) fn lock(&self) -> Distribution<'_, K> {
        Distribution {
            registry: self.registry.lock(),
        }
    }

    /// Releases the distribution lock, then disconnects and reports the listeners whose bound
    /// was hit while it was held.
    pub(crate) fn unlock(&self, mut distribution: Distribution<'_, K>) {
        let overflowed = std::mem::take(&mut distribution.registry.overflowed);
        if !overflowed.is_empty() {
            distribution.registry.entries.retain(|e| {
                !overflowed
                    .iter()
                    .any(|(l, _, _)| Arc::ptr_eq(l, &e.listener))
            });
        }
        drop(distribution);
        for (listener, limit, dropped) in overflowed {
            self.reporter.report(
                &listener.shared,
                IncidentKind::Overflowed { limit, dropped },
            );
        }
    }

    /// Registers a handler or a stream. The cache's current content is queued for it as
    /// initial-list adds under the distribution lock, so it sees every object exactly once:
    /// either in that replay or as a later notification.
    pub(crate) fn register(
        &self,
        new: NewRegistration<K>,
        options: HandlerOptions,
        indexer: &dyn Indexer<K>,
    ) -> Result<(Registration, Arc<Listener<K>>), RegisterError> {
        let id = RegistrationId(self.next_id.fetch_add(1, Ordering::Relaxed));
        let name = options
            .name
            .clone()
            .unwrap_or_else(|| format!("handler-{}", id.0));
        let shared = Arc::new(RegistrationShared::new(
            id,
            name.clone(),
            self.reporter.informer.clone(),
            self.phase.clone(),
        ));
        let listener = Arc::new(Listener::new(
            Arc::clone(&shared),
            options.buffer_limit.map(|l| l.get()),
        ));
        let mut registry = self.registry.lock();
        if matches!(registry.lifecycle, Lifecycle::Stopped) {
            return Err(RegisterError::Stopped(name));
        }
        let resync = self.resync_for(&mut registry, options.resync_period, &name);
        shared.set_resync_period(resync.period);
        let replayed = indexer.list();
        tracing::debug!(
            informer = %self.reporter.informer,
            handler = %name,
            registration = %id,
            replayed = replayed.len(),
            resync_period = ?resync.period,
            stream = matches!(new, NewRegistration::Stream),
            "handler registered"
        );
        self.reporter.metrics.track_handler(&shared);
        for object in replayed {
            listener.push(Notification::Add {
                object,
                is_in_initial_list: true,
            });
        }
        let delivery = match new {
            NewRegistration::Stream => None,
            NewRegistration::Handler(handler) => {
                let delivery = options.delivery;
                match &registry.lifecycle {
                    Lifecycle::Running(runtime) => {
                        let runtime = runtime.clone();
                        self.spawn(&runtime, Arc::clone(&listener), handler, delivery);
                    }
                    Lifecycle::NotStarted => registry.unstarted.push(Unstarted {
                        listener: Arc::clone(&listener),
                        handler,
                        delivery,
                    }),
                    // Checked above, under the same lock.
                    Lifecycle::Stopped => return Err(RegisterError::Stopped(name)),
                }
                Some(delivery)
            }
        };
        registry.entries.push(Entry {
            listener: Arc::clone(&listener),
            resync,
            delivery,
        });
        drop(registry);
        Ok((Registration { shared }, listener))
    }

    /// client-go's rules for a new handler's resync period (with one difference, see
    /// `SharedIndexInformer`).
    fn resync_for(
        &self,
        registry: &mut Registry<K>,
        asked: Option<Duration>,
        name: &str,
    ) -> ResyncState {
        let mut requested = asked.unwrap_or(self.default_resync);
        if !requested.is_zero() {
            if requested < MINIMUM_RESYNC_PERIOD {
                tracing::warn!(
                    informer = %self.reporter.informer,
                    handler = name,
                    ?requested,
                    "resync period below the minimum; using 1s"
                );
                requested = MINIMUM_RESYNC_PERIOD;
            }
            let check = registry.resync_check_period;
            match registry.lifecycle {
                Lifecycle::NotStarted if check.is_zero() || requested < check => {
                    registry.resync_check_period = requested;
                    for entry in &mut registry.entries {
                        entry.resync.period = effective(entry.resync.requested, requested);
                        entry.listener.shared.set_resync_period(entry.resync.period);
                    }
                }
                Lifecycle::Running(_) if requested < check => {
                    tracing::warn!(
                        informer = %self.reporter.informer,
                        handler = name,
                        ?requested,
                        resync_check_period = ?check,
                        "resync period below the running informer's resync check period; \
                         using the check period"
                    );
                    requested = check;
                }
                _ => {}
            }
        }
        let period = effective(requested, registry.resync_check_period);
        if !requested.is_zero() && period.is_zero() {
            tracing::warn!(
                informer = %self.reporter.informer,
                handler = name,
                "the running informer does not resync; this handler will not be resynced"
            );
        }
        ResyncState {
            requested,
            period,
            next: Instant::now() + period,
            syncing: false,
        }
    }

    /// The period the reflector resyncs at (zero: never).
    pub(crate) fn resync_check_period(&self) -> Duration {
        self.registry.lock().resync_check_period
    }

    /// Called before each resync: marks the handlers whose period is due as syncing and
    /// schedules their next resync. Returns whether any is due.
    pub(crate) fn should_resync(&self) -> bool {
        let now = Instant::now();
        let mut registry = self.registry.lock();
        let mut any = false;
        for entry in &mut registry.entries {
            let r = &mut entry.resync;
            r.syncing = !r.period.is_zero() && now >= r.next;
            if r.syncing {
                any = true;
                r.next = now + r.period;
            }
        }
        any
    }

    /// Starts the delivery loops of handlers registered before start; later handlers are
    /// started on `runtime` as they come. Returns false if already started or stopped.
    pub(crate) fn start(&self, runtime: tokio::runtime::Handle) -> bool {
        let mut registry = self.registry.lock();
        if !matches!(registry.lifecycle, Lifecycle::NotStarted) {
            return false;
        }
        for u in std::mem::take(&mut registry.unstarted) {
            self.spawn(&runtime, u.listener, u.handler, u.delivery);
        }
        registry.lifecycle = Lifecycle::Running(runtime);
        true
    }

    fn spawn(
        &self,
        runtime: &tokio::runtime::Handle,
        listener: Arc<Listener<K>>,
        handler: BoxedHandler<K>,
        delivery: Delivery,
    ) {
        let reporter = Arc::clone(&self.reporter);
        let span = tracing::debug_span!(
            "handler",
            informer = %self.reporter.informer,
            handler = %listener.shared.name
        );
        match delivery {
            Delivery::Task => {
                runtime.spawn(deliver(listener, handler, reporter, true).instrument(span));
            }
            Delivery::Thread => {
                let name = format!("informer-handler-{}", listener.shared.id.0);
                // The closure is rebuilt for the fallback: keep what it needs shareable.
                let slot = Arc::new(Mutex::new(Some((Arc::clone(&listener), handler))));
                let for_thread = Arc::clone(&slot);
                let thread_reporter = Arc::clone(&reporter);
                let thread_span = span.clone();
                let spawned = std::thread::Builder::new().name(name).spawn(move || {
                    if let Some((listener, handler)) = for_thread.lock().take() {
                        let _entered = thread_span.enter();
                        futures::executor::block_on(deliver(
                            listener,
                            handler,
                            thread_reporter,
                            false,
                        ));
                    }
                });
                if let Err(error) = spawned {
                    tracing::error!(
                        informer = %self.reporter.informer,
                        handler = %listener.shared.name,
                        %error,
                        "cannot spawn a handler thread; delivering on a task instead"
                    );
                    if let Some((listener, handler)) = slot.lock().take() {
                        runtime.spawn(deliver(listener, handler, reporter, true).instrument(span));
                    }
                }
            }
        }
    }

    /// Removes a registration; its undelivered notifications are dropped. Returns whether it
    /// was registered.
    pub(crate) fn remove(&self, id: RegistrationId) -> bool {
        let (removed, never_started) = {
            let mut registry = self.registry.lock();
            let before = registry.unstarted.len();
            registry.unstarted.retain(|u| u.listener.shared.id != id);
            let never_started = registry.unstarted.len() != before;
            let position = registry
                .entries
                .iter()
                .position(|e| e.listener.shared.id == id);
            (position.map(|p| registry.entries.remove(p)), never_started)
        };
        match removed {
            Some(entry) => {
                let dropped = entry.listener.close(RegistrationStatus::Removed, true);
                tracing::debug!(
                    informer = %self.reporter.informer,
                    handler = %entry.listener.shared.name,
                    registration = %id,
                    dropped,
                    "handler removed"
                );
                // Streams and handlers registered before start have no delivery loop to
                // signal it.
                if entry.delivery.is_none() || never_started {
                    entry.listener.shared.finished.cancel();
                }
                true
            }
            None => false,
        }
    }

    /// Stops: no new registrations; every buffer is closed; handlers drain what they hold,
    /// for at most `bound`. Returns the handlers still busy then (already reported).
    pub(crate) async fn shutdown(&self, bound: Duration) -> ShutdownReport {
        let (waiting, streams) = {
            let mut registry = self.registry.lock();
            registry.lifecycle = Lifecycle::Stopped;
            let unstarted = std::mem::take(&mut registry.unstarted);
            let mut waiting = Vec::new();
            let mut streams = 0;
            for entry in std::mem::take(&mut registry.entries) {
                entry.listener.close(RegistrationStatus::Stopped, false);
                match entry.delivery {
                    Some(_) => waiting.push(entry.listener),
                    None => streams += 1,
                }
            }
            // Never started: nothing will drain them.
            for u in unstarted {
                u.listener.close(RegistrationStatus::Stopped, true);
                u.listener.shared.finished.cancel();
            }
            (waiting, streams)
        };
        let all = futures::future::join_all(
            waiting
                .iter()
                .map(|l| l.shared.finished.clone().cancelled_owned()),
        );
        let _ = tokio::time::timeout(bound, all).await;
        let mut report = ShutdownReport {
            drained: 0,
            streams,
            stuck: Vec::new(),
        };
        for listener in waiting {
            if listener.shared.finished.is_cancelled() {
                report.drained += 1;
                continue;
            }
            let pending = listener.shared.pending.load(Ordering::Acquire);
            listener.close(RegistrationStatus::Stopped, true);
            self.reporter
                .report(&listener.shared, IncidentKind::StuckAtShutdown { pending });
            report.stuck.push(StuckHandler {
                registration: listener.shared.id,
                name: listener.shared.name.clone(),
                pending,
            });
        }
        report
    }

    /// Closes every buffer at once, dropping what they hold (the informer's run was dropped
    /// without an orderly shutdown).
    pub(crate) fn abandon(&self) {
        let mut registry = self.registry.lock();
        registry.lifecycle = Lifecycle::Stopped;
        for entry in std::mem::take(&mut registry.entries) {
            entry.listener.close(RegistrationStatus::Stopped, true);
        }
        for u in std::mem::take(&mut registry.unstarted) {
            u.listener.close(RegistrationStatus::Stopped, true);
            u.listener.shared.finished.cancel();
        }
    }

    /// How many registrations are active.
    pub(crate) fn len(&self) -> usize {
        self.registry.lock().entries.len()
    }

    /// Handles on the active registrations.
    pub(crate) fn registrations(&self) -> Vec<Registration> {
        self.registry
            .lock()
            .entries
            .iter()
            .map(|e| Registration {
                shared: Arc::clone(&e.listener.shared),
            })
            .collect()
    }
}

/// client-go's `determineResyncPeriod`: a handler cannot resync more often than the informer
/// checks, and not at all if the informer never resyncs.
fn effective(requested: Duration, check: Duration) -> Duration {
    if requested.is_zero() || check.is_zero() {
        Duration::ZERO
    } else {
        requested.max(check)
    }
}

/// Why a registration was refused.
#[derive(Debug)]
pub(crate) enum RegisterError {
    /// The informer has stopped; carries the handler's name.
    Stopped(String),
}

/// What shutdown found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShutdownReport {
    /// Handlers that delivered everything they held.
    pub drained: usize,
    /// Streams closed (they yield what they hold, then end).
    pub streams: usize,
    /// Handlers still busy when shutdown's bound ran out; they were abandoned.
    pub stuck: Vec<StuckHandler>,
}

/// A handler abandoned at shutdown.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StuckHandler {
    /// Its registration.
    pub registration: RegistrationId,
    /// Its name.
    pub name: String,
    /// Notifications it had not handled.
    pub pending: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effective_period_follows_client_go() {
        let s = Duration::from_secs;
        assert_eq!(effective(s(0), s(10)), s(0));
        assert_eq!(effective(s(30), s(0)), s(0));
        assert_eq!(effective(s(5), s(10)), s(10));
        assert_eq!(effective(s(30), s(10)), s(30));
    }
}
