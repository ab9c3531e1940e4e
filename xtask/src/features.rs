//! The feature check: every library crate linted on its own, with the features a user who
//! depends on it gets (its defaults), and without its default features where it has some.
//!
//! Clippy's CI step builds the workspace with `--all-features`, which turns on every optional
//! feature of every crate at once: an item or an import put behind the wrong `#[cfg(feature)]`
//! passes it and still breaks the crate as users build it (it happened: a `cfg` meant for one
//! `use` line applied to the next one, and informer-kube without `compact` did not compile).
//! Each package is checked alone (`-p`), so no other member of the workspace adds features.

use crate::cargo;

/// `(package, extra cargo arguments)`: each library crate with its default features, and the
/// two crates whose default features can be turned off also without them.
const CHECKS: &[(&str, &[&str])] = &[
    ("informer-core", &[]),
    ("informer-store", &[]),
    ("informer-fifo", &[]),
    ("informer", &[]),
    ("informer-workqueue", &[]),
    ("informer-controller", &[]),
    ("informer-kube", &[]),
    ("informer-kube", &["--no-default-features"]),
    ("informer-testing", &[]),
    ("fake-apiserver", &[]),
    ("fake-apiserver", &["--no-default-features"]),
];

/// Runs `cargo clippy -p <package> --lib <extra> -- -D warnings` for every entry of
/// [`CHECKS`], stopping at the first failure.
pub(crate) fn check() -> Result<(), String> {
    for (package, extra) in CHECKS {
        let mut args = vec!["clippy", "--quiet", "-p", package, "--lib"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "-D", "warnings"]);
        cargo(&args).map_err(|e| format!("{package} {}: {e}", extra.join(" ")))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every library crate of the workspace is in the list (a new crate must be added), and
    /// nothing else is.
    #[test]
    fn every_library_crate_is_checked() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("xtask lives in the workspace root");
        let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
        let members: Vec<&str> = manifest
            .split("members = [")
            .nth(1)
            .and_then(|rest| rest.split(']').next())
            .unwrap()
            .split(',')
            .map(|m| m.trim().trim_matches('"'))
            .filter(|m| !m.is_empty())
            .collect();
        let libraries: std::collections::BTreeSet<&str> = members
            .into_iter()
            .filter(|m| root.join(m).join("src/lib.rs").exists())
            .filter(|m| *m != "benchmarks")
            .collect();
        let checked: std::collections::BTreeSet<&str> = CHECKS.iter().map(|(p, _)| *p).collect();
        assert_eq!(checked, libraries);
    }
}
