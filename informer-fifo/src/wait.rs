//! What both FIFOs share: waiting for work without spinning, and `has_synced` bookkeeping.

use std::pin::pin;

use informer_core::{ProcessError, QueueError};
use parking_lot::Mutex;
use tokio::sync::Notify;

/// The hasher of the FIFOs' key maps: foldhash, randomly seeded per map. Keys come from the API
/// server (object names chosen by cluster users), so collisions cannot be chosen offline against
/// a fixed seed; SipHash made hashing the largest cost of a push+pop.
pub(crate) type RandomState = foldhash::fast::RandomState;

/// State that counts the pops currently parked on the queue's [`Notify`].
///
/// Writers notify only when the count is non-zero, so a producer feeding a busy consumer pays
/// no wake-up cost.
pub(crate) trait Parked {
    /// The number of parked pops.
    fn parked(&mut self) -> &mut usize;
}

/// Waits until `attempt` returns `Some`, parking on `notify` in between.
///
/// `attempt` runs under the state lock. The waiter registers with `notify` *before* it looks at
/// the state, and a writer changes the state before it notifies, so no wake-up is lost. Dropping
/// the returned future at its await point changes nothing but the parked count, which a guard
/// restores: the wait is cancel-safe.
pub(crate) async fn wait_until<S, T>(
    state: &Mutex<S>,
    notify: &Notify,
    mut attempt: impl FnMut(&mut S) -> Option<T> + Send,
) -> T
where
    S: Parked + Send,
{
    // Fast path: no registration with `notify` when there is something to take.
    if let Some(taken) = attempt(&mut state.lock()) {
        return taken;
    }
    loop {
        let mut notified = pin!(notify.notified());
        notified.as_mut().enable();
        {
            let mut st = state.lock();
            if let Some(taken) = attempt(&mut st) {
                return taken;
            }
            *st.parked() += 1;
        }
        let _parked = ParkedGuard(state);
        notified.await;
    }
}

/// Decrements the parked count when a waiter wakes up or is cancelled.
struct ParkedGuard<'a, S: Parked>(&'a Mutex<S>);

impl<S: Parked> Drop for ParkedGuard<'_, S> {
    fn drop(&mut self) {
        let mut st = self.0.lock();
        let parked = st.parked();
        *parked = parked.saturating_sub(1);
    }
}

/// The `has_synced` bookkeeping both FIFOs share.
///
/// The queue is *populated* by its first write: the first `replace` marks every entry it queued
/// as part of the initial population, any other write first means there is no initial
/// population. It has synced once populated with no initial entry left queued or being
/// processed.
#[derive(Debug, Default)]
pub(crate) struct Population {
    populated: bool,
    outstanding: usize,
}

impl Population {
    /// Records a write other than `replace`.
    pub(crate) fn on_write(&mut self) {
        self.populated = true;
    }

    /// Whether this is the first write (then the caller marks its entries as initial and calls
    /// [`Population::start`]).
    pub(crate) fn is_first_write(&self) -> bool {
        !self.populated
    }

    /// Records the first `replace`, which queued `initial_entries` entries.
    pub(crate) fn start(&mut self, initial_entries: usize) {
        self.populated = true;
        self.outstanding = initial_entries;
    }

    /// Records that an initial entry has been processed (or dropped).
    pub(crate) fn processed_initial(&mut self) {
        self.outstanding = self.outstanding.saturating_sub(1);
    }

    /// Whether the initial population has been completely processed.
    pub(crate) fn synced(&self) -> bool {
        self.populated && self.outstanding == 0
    }
}

/// What became of a batch after its process function ran.
pub(crate) enum Outcome {
    /// Processed, or dropped on the process function's request: it is gone.
    Done,
    /// Put it back.
    Requeue,
}

/// Splits a process function's verdict into what to do with the batch and what `pop` returns.
///
/// Unknown future [`ProcessError`] variants drop the batch, like [`ProcessError::Drop`].
pub(crate) fn verdict(result: Result<(), ProcessError>) -> (Outcome, Result<(), QueueError>) {
    match result {
        Ok(()) => (Outcome::Done, Ok(())),
        Err(err @ ProcessError::Requeue(_)) => (Outcome::Requeue, Err(QueueError::Process(err))),
        Err(err) => (Outcome::Done, Err(QueueError::Process(err))),
    }
}
