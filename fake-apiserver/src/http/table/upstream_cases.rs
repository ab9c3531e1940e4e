//! The built-in printers checked against the cases of upstream's printer tests
//! (`pkg/printers/internalversion/printers_test.go`), each object written as its v1 JSON.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::row_for;

/// A fixed "now" for the cases, and a timestamp `secs` seconds before it.
fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

fn ago(secs: u64) -> String {
    crate::object::rfc3339(now() - Duration::from_secs(secs))
}

#[test]
fn a_pod_in_a_case() {
    let pod = json!({"metadata": {"name": "p", "creationTimestamp": ago(10)},
        "spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Pending"}});
    let (names, cells) = row_for("", "pods", &pod, now());
    assert_eq!(names[..5], ["Name", "Ready", "Status", "Restarts", "Age"]);
    assert_eq!(
        cells[..5],
        [
            json!("p"),
            json!("0/1"),
            json!("Pending"),
            json!("0"),
            json!("10s")
        ]
    );
    let _: Value = pod;
}
