//! Who calls the fake API server: every request is served as one user (there is no
//! authenticator or authorizer), which the reviews report and a CSR records as its
//! requester.

/// The user every request is served as.
pub(crate) const USER: &str = "system:admin";

/// The groups of [`USER`].
pub(crate) const GROUPS: [&str; 2] = ["system:masters", "system:authenticated"];
