//! The layering check: `informer-core` must not depend (normal dependencies, any feature) on an
//! IO or async-runtime crate. It is also a `#[test]`, so plain `cargo test` catches a violation.

use std::env;
use std::process::Command;

/// Crates the core must never pull in.
pub(crate) const FORBIDDEN: &[&str] = &["tokio", "hyper", "reqwest", "axum", "mio", "async-std"];

/// Feature sets of informer-core to check (the default, and everything on).
const FEATURE_SETS: &[&[&str]] = &[&[], &["--all-features"]];

/// Checks every feature set; the error names each forbidden crate found.
pub(crate) fn check() -> Result<(), String> {
    let mut found = Vec::new();
    for features in FEATURE_SETS {
        let tree = core_tree(features)?;
        for name in forbidden_in(&tree) {
            found.push(format!("{name} (features: {features:?})"));
        }
    }
    if found.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "informer-core depends on IO/runtime crates: {}",
            found.join(", ")
        ))
    }
}

/// The package names in informer-core's normal dependency tree.
fn core_tree(features: &[&str]) -> Result<String, String> {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(&cargo)
        .args([
            "tree",
            "-p",
            "informer-core",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .args(["--format", "{p}"])
        .args(features)
        .output()
        .map_err(|e| format!("cannot run cargo tree: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo tree failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The forbidden crates named in a `cargo tree --prefix none` listing.
fn forbidden_in(tree: &str) -> Vec<&'static str> {
    FORBIDDEN
        .iter()
        .copied()
        .filter(|bad| {
            tree.lines()
                .any(|line| line.split_whitespace().next() == Some(*bad))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn informer_core_has_no_io_or_runtime_dependencies() {
        check().unwrap();
    }

    #[test]
    fn the_check_can_fail() {
        let tree = "informer-core v0.1.0\nserde v1.0.0\ntokio v1.47.0\ntokio-util v0.7.0\n";
        assert_eq!(forbidden_in(tree), vec!["tokio"]);
        assert!(forbidden_in("informer-core v0.1.0\ntokio-macros v2\n").is_empty());
    }
}
