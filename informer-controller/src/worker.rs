//! The workers: take a key, find its object (live, deleted, or a stand-in), reconcile it
//! (panics caught, time bounded, in a span), apply the outcome to the queue (forget, requeue
//! after a delay, rate-limited retry up to the cap, give up), mark the key done.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use informer::{Object, ObjectKey};
use informer_core::ErrorChain;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::action::{Action, OnError, ReconcileError};
use crate::context::{Context, ObjectState};
use crate::metrics::Outcome;
use crate::state::Shared;
use crate::stats::ControllerStats;

/// What every worker of one run shares: the state, your data, and your functions.
pub(crate) struct Workers<K, C, F, P> {
    pub(crate) shared: Arc<Shared<K>>,
    pub(crate) data: Arc<C>,
    pub(crate) reconcile: F,
    pub(crate) policy: P,
    pub(crate) max_retries: Option<u32>,
    pub(crate) reconcile_timeout: Option<Duration>,
}

impl<K, C, F, Fut, E, P> Workers<K, C, F, P>
where
    K: Object,
    C: Send + Sync + 'static,
    F: Fn(Arc<K>, Context<C>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, E>> + Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
    P: Fn(&Arc<K>, &ReconcileError<E>, &Context<C>) -> OnError + Send + Sync + 'static,
{
    /// One worker: takes keys until `stop` fires (or the queue shuts down), one at a time.
    /// A key handed out as `stop` fires is put back unreconciled (done without work).
    pub(crate) async fn work(self: Arc<Self>, worker: usize, stop: CancellationToken) {
        let queue = &self.shared.common.queue;
        loop {
            let key = tokio::select! {
                biased;
                () = stop.cancelled() => break,
                key = queue.get() => key,
            };
            let Some(key) = key else { break };
            if stop.is_cancelled() {
                queue.done(&key);
                break;
            }
            self.shared
                .common
                .in_flight
                .lock()
                .insert(worker, key.clone());
            let tally = self.process(&key, worker).await;
            self.shared.common.in_flight.lock().remove(&worker);
            queue.done(&key);
            // Counted last: whoever wakes on the counts sees the key done (and queued again,
            // if an event came meanwhile).
            self.shared.common.count(|s| tally.add_to(s));
        }
    }

    /// The object to reconcile for `key` and where it comes from; `None`: nothing to do.
    ///
    /// A recorded deletion whose key now holds another object (another UID: deleted and
    /// re-created) is reconciled first, and the key queued again for the new object (it is
    /// being processed, so the queue marks it dirty and hands it out again after `done`).
    fn resolve(&self, key: &ObjectKey) -> Option<(Arc<K>, ObjectState)> {
        let live = self.shared.primary.get_by_key(key.as_str());
        let gone = self.shared.deleted.lock().get(key);
        match (live, gone) {
            (Some(live), Some((gone, tombstone))) => {
                if live.object_uid() == gone.object_uid() {
                    self.shared.deleted.lock().remove_if_same(key, &gone);
                    Some((live, ObjectState::Live))
                } else {
                    self.shared.common.queue.add(key.clone());
                    Some((gone, ObjectState::Deleted { tombstone }))
                }
            }
            (Some(live), None) => Some((live, ObjectState::Live)),
            (None, Some((gone, tombstone))) => Some((gone, ObjectState::Deleted { tombstone })),
            (None, None) => self
                .shared
                .stub
                .as_ref()
                .map(|stub| (Arc::new(stub(key)), ObjectState::Missing)),
        }
    }

    /// Reconciles `key` once and decides what happens to it next.
    async fn process(&self, key: &ObjectKey, worker: usize) -> Tally {
        let common = &self.shared.common;
        let Some((object, state)) = self.resolve(key) else {
            tracing::debug!(controller = %common.name, object = %key, "no object to reconcile (never seen, or forgotten); skipped");
            common.queue.forget(key);
            return Tally::Skipped;
        };
        let ctx = Context {
            data: Arc::clone(&self.data),
            key: key.clone(),
            state,
            retries: common.queue.num_requeues(key),
            controller: Arc::clone(&common.name),
        };
        let deleted = ctx.deleted();
        let span = tracing::info_span!(
            "reconcile",
            controller = %common.name,
            object = %key,
            worker,
            retries = ctx.retries,
            deleted,
        );
        let started = Instant::now();
        common.recorder.started();
        common.count(|s| s.started += 1);
        let result = self
            .attempt(Arc::clone(&object), ctx.clone())
            .instrument(span.clone())
            .await;
        let took = started.elapsed();
        let _entered = span.enter();
        match result {
            Ok(action) => {
                common.queue.forget(key);
                if deleted {
                    self.shared.deleted.lock().remove_if_same(key, &object);
                }
                let outcome = match action {
                    Action::Done => Outcome::Success,
                    Action::RequeueAfter(delay) => {
                        common.queue.add_after(key.clone(), delay);
                        Outcome::RequeueAfter
                    }
                };
                common.recorder.finished(outcome, took);
                tracing::debug!(?action, ?took, "reconciled");
                Tally::Succeeded {
                    deleted,
                    requeue_after: outcome == Outcome::RequeueAfter,
                }
            }
            Err(error) => {
                common.recorder.finished(Outcome::Error, took);
                let (panicked, timed_out) = match &error {
                    ReconcileError::Panicked { .. } => (true, false),
                    ReconcileError::TimedOut { .. } => (false, true),
                    _ => (false, false),
                };
                if panicked {
                    common.recorder.panicked();
                }
                if timed_out {
                    common.recorder.timed_out();
                }
                let retried = self.after_failure(key, &object, &error, &ctx);
                Tally::Failed {
                    deleted,
                    panicked,
                    timed_out,
                    retried,
                }
            }
        }
    }

    /// Runs the reconcile function, catching its panics and bounding its time.
    async fn attempt(&self, object: Arc<K>, ctx: Context<C>) -> Result<Action, ReconcileError<E>> {
        let reconcile = AssertUnwindSafe((self.reconcile)(object, ctx)).catch_unwind();
        let caught = match self.reconcile_timeout {
            None => reconcile.await,
            Some(after) => match tokio::time::timeout(after, reconcile).await {
                Ok(caught) => caught,
                Err(_) => return Err(ReconcileError::TimedOut { after }),
            },
        };
        match caught {
            Ok(Ok(action)) => Ok(action),
            Ok(Err(error)) => Err(ReconcileError::Reconcile(error)),
            Err(panic) => Err(ReconcileError::Panicked {
                message: panic_message(panic.as_ref()),
            }),
        }
    }

    /// Asks the error policy (a panicking policy counts as [`OnError::Retry`]) and applies
    /// its answer; returns whether the key will be retried.
    fn after_failure(
        &self,
        key: &ObjectKey,
        object: &Arc<K>,
        error: &ReconcileError<E>,
        ctx: &Context<C>,
    ) -> bool {
        let common = &self.shared.common;
        let decision =
            std::panic::catch_unwind(AssertUnwindSafe(|| (self.policy)(object, error, ctx)))
                .unwrap_or_else(|panic| {
                    tracing::error!(
                        panic = panic_message(panic.as_ref()),
                        "the error policy panicked; retrying"
                    );
                    OnError::Retry
                });
        let failures = ctx.retries.saturating_add(1);
        let give_up = match decision {
            OnError::Retry => self.max_retries.is_some_and(|max| failures > max),
            OnError::RetryAfter(_) => false,
            OnError::GiveUp => true,
        };
        if give_up {
            tracing::error!(error = %ErrorChain(error), failures, ?decision, "reconcile failed; giving up until the next event");
            common.queue.forget(key);
            if ctx.deleted() {
                self.shared.deleted.lock().remove_if_same(key, object);
            }
            common.recorder.terminal();
            return false;
        }
        match decision {
            OnError::RetryAfter(delay) => {
                tracing::warn!(error = %ErrorChain(error), failures, ?delay, "reconcile failed; retrying after the policy's delay");
                common.queue.add_after(key.clone(), delay);
            }
            _ => {
                tracing::warn!(error = %ErrorChain(error), failures, "reconcile failed; retrying after the rate limiter's delay");
                common.queue.add_rate_limited(key.clone());
            }
        }
        true
    }
}

/// What one turn of a worker adds to the counts.
enum Tally {
    /// No object to reconcile.
    Skipped,
    /// The reconcile succeeded.
    Succeeded { deleted: bool, requeue_after: bool },
    /// The reconcile failed; the key is retried or given up.
    Failed {
        deleted: bool,
        panicked: bool,
        timed_out: bool,
        retried: bool,
    },
}

impl Tally {
    fn add_to(self, s: &mut ControllerStats) {
        match self {
            Self::Skipped => s.skipped += 1,
            Self::Succeeded {
                deleted,
                requeue_after,
            } => {
                s.reconciles += 1;
                s.successes += 1;
                s.requeues_after += u64::from(requeue_after);
                s.deletions += u64::from(deleted);
            }
            Self::Failed {
                deleted,
                panicked,
                timed_out,
                retried,
            } => {
                s.reconciles += 1;
                s.failures += 1;
                s.panics += u64::from(panicked);
                s.timeouts += u64::from(timed_out);
                s.deletions += u64::from(deleted);
                if retried {
                    s.retries += 1;
                } else {
                    s.given_up += 1;
                }
            }
        }
    }
}

/// The text of a panic's payload.
fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_owned()
    }
}
