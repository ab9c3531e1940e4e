//! Caps on one list, against servers whose lists never end.

use std::collections::HashSet;
use std::hash::{BuildHasher, RandomState};

use crate::Limit;

/// Caps on one list (all its pages together). A list over a cap fails with
/// [`Error::LimitExceeded`](crate::Error::LimitExceeded) and is retried after a backoff, like
/// any failed list.
///
/// The defaults are far above what any real cluster needs, and only stop a server that
/// would otherwise exhaust memory (a continue token on every page, forever):
///
/// ```
/// use informer_core::reflector::ListLimits;
///
/// let limits = ListLimits::default();
/// assert_eq!(limits.max_pages, 10_000); // 5 million objects at 500 per page
/// assert_eq!(limits.max_bytes, 4 << 30);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ListLimits {
    /// The most pages one list may have. Default 10,000: five million objects at the
    /// default page size (raise it if you lower the page size a lot).
    pub max_pages: u32,
    /// The most response bytes one list may take, all pages together, counted as they
    /// arrive (by backends that see bytes; informer-kube does). Default 4 GiB: etcd's
    /// default quota is 2 GiB for every object of every kind, stored more compactly than
    /// the JSON a list sends.
    pub max_bytes: u64,
}

impl Default for ListLimits {
    fn default() -> Self {
        Self {
            max_pages: 10_000,
            max_bytes: 4 << 30,
        }
    }
}

/// One list's running account against its [`ListLimits`]: pages, bytes, and the continue
/// tokens seen (as 64-bit fingerprints, so that a server sending huge tokens cannot make the
/// account itself large). Pure: fed what arrives, it answers whether the list may go on.
///
/// ```
/// use informer_core::Limit;
/// use informer_core::reflector::{ListBudget, ListLimits};
///
/// let mut budget = ListBudget::new(ListLimits { max_pages: 10, max_bytes: 1000 });
/// assert_eq!(budget.page(Some("a")), Ok(()));
/// assert_eq!(budget.page(Some("b")), Ok(()));
/// // The server sends a token again: the list would never end.
/// assert_eq!(budget.page(Some("a")), Err(Limit::RepeatedContinueToken));
/// budget.restart();
/// assert_eq!(budget.received(600), Ok(()));
/// assert_eq!(budget.received(600), Err(Limit::ListBytes(1000)));
/// ```
#[derive(Debug, Clone)]
pub struct ListBudget {
    limits: ListLimits,
    pages: u32,
    bytes: u64,
    tokens: HashSet<u64>,
    hasher: RandomState,
}

impl ListBudget {
    /// An account for a list that has received nothing yet.
    pub fn new(limits: ListLimits) -> Self {
        Self {
            limits,
            pages: 0,
            bytes: 0,
            tokens: HashSet::new(),
            hasher: RandomState::new(),
        }
    }

    /// The limits.
    pub fn limits(&self) -> &ListLimits {
        &self.limits
    }

    /// Starts the account of a new list (after a failure, or for the next relist).
    pub fn restart(&mut self) {
        self.pages = 0;
        self.bytes = 0;
        self.tokens.clear();
        self.tokens.shrink_to(64);
    }

    /// `bytes` more of a response arrived.
    pub fn received(&mut self, bytes: u64) -> Result<(), Limit> {
        self.bytes = self.bytes.saturating_add(bytes);
        if self.bytes > self.limits.max_bytes {
            return Err(Limit::ListBytes(self.limits.max_bytes));
        }
        Ok(())
    }

    /// A page is complete; `continue_token` asks for another (`None` or empty: the list is
    /// complete).
    pub fn page(&mut self, continue_token: Option<&str>) -> Result<(), Limit> {
        self.pages = self.pages.saturating_add(1);
        let Some(token) = continue_token.filter(|t| !t.is_empty()) else {
            return Ok(());
        };
        if self.pages >= self.limits.max_pages {
            return Err(Limit::ListPages(self.limits.max_pages));
        }
        if !self.tokens.insert(self.hasher.hash_one(token)) {
            return Err(Limit::RepeatedContinueToken);
        }
        Ok(())
    }

    /// Pages received so far in this list.
    pub fn pages(&self) -> u32 {
        self.pages
    }

    /// Bytes received so far in this list.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_of_exactly_max_pages_completes() {
        let mut budget = ListBudget::new(ListLimits {
            max_pages: 3,
            max_bytes: u64::MAX,
        });
        assert_eq!(budget.page(Some("1")), Ok(()));
        assert_eq!(budget.page(Some("2")), Ok(()));
        assert_eq!(budget.page(None), Ok(()));
        budget.restart();
        assert_eq!(budget.page(Some("1")), Ok(()));
        assert_eq!(budget.page(Some("2")), Ok(()));
        assert_eq!(budget.page(Some("3")), Err(Limit::ListPages(3)));
        assert_eq!(budget.pages(), 3);
    }

    #[test]
    fn tokens_repeat_only_within_one_list() {
        let mut budget = ListBudget::new(ListLimits::default());
        assert_eq!(budget.page(Some("t")), Ok(()));
        assert_eq!(budget.page(Some("t")), Err(Limit::RepeatedContinueToken));
        budget.restart();
        assert_eq!(budget.page(Some("t")), Ok(()));
        // An empty token ends the list like a missing one.
        assert_eq!(budget.page(Some("")), Ok(()));
        assert_eq!(budget.page(Some("")), Ok(()));
    }

    #[test]
    fn bytes_add_up_over_pages_and_saturate() {
        let mut budget = ListBudget::new(ListLimits {
            max_pages: 10,
            max_bytes: 100,
        });
        assert_eq!(budget.received(60), Ok(()));
        assert_eq!(budget.page(Some("a")), Ok(()));
        assert_eq!(budget.received(40), Ok(()));
        assert_eq!(budget.received(1), Err(Limit::ListBytes(100)));
        assert_eq!(budget.received(u64::MAX), Err(Limit::ListBytes(100)));
        assert_eq!(budget.bytes(), u64::MAX);
        budget.restart();
        assert_eq!(budget.bytes(), 0);
    }
}
