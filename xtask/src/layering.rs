//! The layering check: every dependency rule ARCHITECTURE.md states about the crates'
//! normal (non-dev) dependency trees, checked with `cargo tree`. Each rule names the
//! invariant it enforces; ARCHITECTURE.md names the rule. It is also a `#[test]`, so plain
//! `cargo test` catches a violation.

use std::env;
use std::process::Command;

/// One rule: in the normal dependency tree of `package` built with `features`, none of
/// `forbidden` appears.
struct Rule {
    /// The invariant, as ARCHITECTURE.md names it.
    invariant: &'static str,
    package: &'static str,
    features: &'static [&'static str],
    forbidden: &'static [&'static str],
}

/// Crates the core must never pull in (IO and async runtimes).
pub(crate) const IO_AND_RUNTIMES: &[&str] =
    &["tokio", "hyper", "reqwest", "axum", "mio", "async-std"];

const ALL: &[&str] = &["--all-features"];
const DEFAULT: &[&str] = &[];
const BARE: &[&str] = &["--no-default-features"];

/// The rules. Keep them in step with ARCHITECTURE.md's "Architecture invariants".
const RULES: &[Rule] = &[
    Rule {
        invariant: "informer-core does no IO and knows no runtime",
        package: "informer-core",
        features: ALL,
        forbidden: IO_AND_RUNTIMES,
    },
    Rule {
        invariant: "informer-core does no IO and knows no runtime",
        package: "informer-core",
        features: DEFAULT,
        forbidden: IO_AND_RUNTIMES,
    },
    Rule {
        invariant: "backends know only informer-core",
        package: "informer-store",
        features: ALL,
        forbidden: &[
            "informer-fifo",
            "informer",
            "informer-kube",
            "informer-workqueue",
            "fake-apiserver",
            "informer-testing",
            "kube-client",
            "tokio",
        ],
    },
    Rule {
        invariant: "backends know only informer-core",
        package: "informer-fifo",
        features: ALL,
        forbidden: &[
            "informer-store",
            "informer",
            "informer-kube",
            "informer-workqueue",
            "fake-apiserver",
            "informer-testing",
            "kube-client",
        ],
    },
    Rule {
        invariant: "informer-workqueue knows nothing of informers",
        package: "informer-workqueue",
        features: ALL,
        forbidden: &[
            "informer-core",
            "informer-store",
            "informer-fifo",
            "informer",
            "informer-kube",
            "fake-apiserver",
            "informer-testing",
        ],
    },
    Rule {
        invariant: "the runtime knows no API client and no server",
        package: "informer",
        features: ALL,
        forbidden: &[
            "informer-kube",
            "kube-client",
            "reqwest",
            "hyper",
            "axum",
            "fake-apiserver",
            "informer-testing",
        ],
    },
    Rule {
        invariant: "the informer runtime knows no controller",
        package: "informer",
        features: ALL,
        forbidden: &["informer-controller", "informer-workqueue"],
    },
    Rule {
        invariant: "the controller runtime knows no API client and no server",
        package: "informer-controller",
        features: ALL,
        forbidden: &[
            "informer-kube",
            "kube-client",
            "reqwest",
            "hyper",
            "axum",
            "fake-apiserver",
            "informer-testing",
        ],
    },
    Rule {
        invariant: "informer-kube needs no work queue and no controller",
        package: "informer-kube",
        features: ALL,
        forbidden: &["informer-workqueue", "informer-controller"],
    },
    Rule {
        invariant: "test tools are light and know no runtime",
        package: "informer-testing",
        features: ALL,
        forbidden: &[
            "informer",
            "informer-store",
            "informer-fifo",
            "informer-kube",
            "fake-apiserver",
            "axum",
            "hyper",
            "reqwest",
            "clap",
            "kube-client",
        ],
    },
    Rule {
        invariant: "the fake API server knows no informer",
        package: "fake-apiserver",
        features: ALL,
        forbidden: &[
            "informer",
            "informer-store",
            "informer-fifo",
            "informer-kube",
            "informer-testing",
            "informer-workqueue",
            "informer-controller",
            "proptest",
        ],
    },
    Rule {
        invariant: "the fake API server needs kube-client only for its kube-client feature",
        package: "fake-apiserver",
        features: DEFAULT,
        forbidden: &["kube-client"],
    },
    Rule {
        invariant: "the fake API server's engine needs no HTTP stack",
        package: "fake-apiserver",
        features: BARE,
        forbidden: &["axum", "hyper", "clap", "prost", "serde-saphyr", "tower"],
    },
    Rule {
        invariant: "metrics cost nothing unless asked for",
        package: "informer",
        features: DEFAULT,
        forbidden: &["prometheus-client"],
    },
    Rule {
        invariant: "metrics cost nothing unless asked for",
        package: "informer-workqueue",
        features: DEFAULT,
        forbidden: &["prometheus-client"],
    },
    Rule {
        invariant: "metrics cost nothing unless asked for",
        package: "informer-controller",
        features: DEFAULT,
        forbidden: &["prometheus-client"],
    },
    Rule {
        invariant: "only the benchmarks depend on kube-runtime",
        package: "informer-kube",
        features: ALL,
        forbidden: &["kube-runtime"],
    },
];

/// Libraries that must never choose a Kubernetes version for k8s-openapi (in their normal
/// tree, under any feature): only binaries, examples and dev-dependencies do.
const VERSIONLESS_LIBRARIES: &[&str] = &[
    "informer-core",
    "informer-store",
    "informer-fifo",
    "informer",
    "informer-controller",
    "informer-kube",
    "informer-testing",
    "fake-apiserver",
];

/// Checks every rule; the error names each violation with its invariant.
pub(crate) fn check() -> Result<(), String> {
    let mut found = Vec::new();
    for rule in RULES {
        let tree = tree(rule.package, rule.features, "normal")?;
        for name in forbidden_in(&tree, rule.forbidden, rule.package) {
            found.push(format!(
                "{} ({:?}) depends on {name}: breaks \"{}\"",
                rule.package, rule.features, rule.invariant
            ));
        }
    }
    for package in VERSIONLESS_LIBRARIES {
        let tree = tree(package, ALL, "normal,features")?;
        for feature in version_features(&tree) {
            found.push(format!(
                "{package} enables k8s-openapi's version feature {feature}: breaks \
                 \"libraries never choose a Kubernetes version\""
            ));
        }
    }
    if found.is_empty() {
        Ok(())
    } else {
        Err(format!("layering violations:\n  {}", found.join("\n  ")))
    }
}

/// `cargo tree -p package -e edges --prefix none` with `features`.
fn tree(package: &str, features: &[&str], edges: &str) -> Result<String, String> {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(&cargo)
        .args(["tree", "-p", package, "-e", edges, "--prefix", "none"])
        .args(features)
        .output()
        .map_err(|e| format!("cannot run cargo tree: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo tree -p {package} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The forbidden crates named in a `cargo tree --prefix none` listing (the root package
/// itself is not a dependency of its own).
fn forbidden_in(tree: &str, forbidden: &[&'static str], root: &str) -> Vec<&'static str> {
    forbidden
        .iter()
        .copied()
        .filter(|bad| *bad != root)
        .filter(|bad| {
            tree.lines()
                .any(|line| line.split_whitespace().next() == Some(*bad))
        })
        .collect()
}

/// k8s-openapi's version features (`latest`, `v1_NN`) enabled in a `-e features` listing.
fn version_features(tree: &str) -> Vec<String> {
    let mut found: Vec<String> = tree
        .lines()
        .filter_map(|line| line.trim().strip_prefix("k8s-openapi feature \""))
        .filter_map(|rest| rest.split('"').next())
        .filter(|feature| *feature == "latest" || feature.starts_with("v1_"))
        .map(str::to_owned)
        .collect();
    found.sort();
    found.dedup();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_layering_rule_holds() {
        check().unwrap();
    }

    #[test]
    fn the_checks_can_fail() {
        let tree = "informer-core v0.1.0\nserde v1.0.0\ntokio v1.47.0\ntokio-util v0.7.0\n";
        assert_eq!(
            forbidden_in(tree, IO_AND_RUNTIMES, "informer-core"),
            vec!["tokio"]
        );
        assert!(
            forbidden_in(
                "informer-core v0.1.0\ntokio-macros v2\n",
                IO_AND_RUNTIMES,
                "informer-core"
            )
            .is_empty()
        );
        let features = "informer-kube v0.1.0\nk8s-openapi feature \"std\"\nk8s-openapi feature \"latest\"\nk8s-openapi feature \"v1_37\"\n";
        assert_eq!(version_features(features), vec!["latest", "v1_37"]);
        assert!(version_features("k8s-openapi feature \"std\"\n").is_empty());
    }
}
