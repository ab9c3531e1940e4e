//! The built-in printers checked against the cases of upstream's printer tests
//! (`pkg/printers/internalversion/printers_test.go`), each object written as its v1 JSON.
//!
//! Upstream's cases call the printers with and without `-o wide`; the server always prints
//! the wide form, so every expected row here is the wide one: where upstream only shows the
//! narrow cells, the priority-1 cells follow, worked out from `printers.go`, and a narrow
//! case and a wide case of the same object make one case.

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

/// A timestamp `secs` seconds after `now()` (upstream's `time.Now().Add(1.9e9)`, a clock
/// slightly ahead, is `ahead(1)`: still `0s`).
fn ahead(secs: u64) -> String {
    crate::object::rfc3339(now() + Duration::from_secs(secs))
}

/// A `MicroTime` `secs` seconds before `now()`, in its wire form (six fractional digits).
fn micro_ago(secs: u64) -> String {
    ago(secs).replace('Z', ".000000Z")
}

const MINUTE: u64 = 60;
const DAY: u64 = 86_400;
const TEN_YEARS: u64 = 10 * 365 * DAY;

/// Checks each case's row (every column, the wide form) against the cells upstream expects.
fn check(group: &str, plural: &str, cases: &[(Value, Value)]) {
    for (i, (object, want)) in cases.iter().enumerate() {
        let (_, cells) = row_for(group, plural, object, now());
        assert_eq!(Value::Array(cells), *want, "{group}/{plural} case {i}");
    }
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
}

// --- events (TestPrintEvent) ---------------------------------------------------------------

#[test]
fn events_print_last_seen_source_first_seen_and_count() {
    let object = json!({"kind": "Deployment", "name": "Deployment Name",
        "fieldPath": "spec.containers{foo}"});
    let source = json!({"component": "kubelet", "host": "Node1"});
    let wide = |last: &str, first: &str, count: i64, name: &str| {
        json!([
            last,
            "Warning",
            "Event Reason",
            "deployment/Deployment Name",
            "spec.containers{foo}",
            "kubelet, Node1",
            "Message Data",
            first,
            count,
            name
        ])
    };
    check(
        "",
        "events",
        &[
            (
                json!({"metadata": {"name": "event1"}, "source": {"component": "kubelet"},
                    "involvedObject": {"kind": "Pod", "name": "Pod Name",
                        "fieldPath": "spec.containers{foo}"},
                    "reason": "Event Reason", "message": "Message Data",
                    "firstTimestamp": ago(3 * DAY), "lastTimestamp": ago(2 * DAY),
                    "count": 6, "type": "Normal"}),
                json!([
                    "2d",
                    "Normal",
                    "Event Reason",
                    "pod/Pod Name",
                    "spec.containers{foo}",
                    "kubelet",
                    "Message Data",
                    "3d",
                    6,
                    "event1"
                ]),
            ),
            (
                json!({"metadata": {"name": "event2"}, "source": source, "involvedObject": object,
                    "reason": "Event Reason", "message": "Message Data",
                    "firstTimestamp": ago(3 * DAY), "lastTimestamp": ago(2 * DAY),
                    "count": 6, "type": "Warning"}),
                wide("2d", "3d", 6, "event2"),
            ),
            (
                json!({"metadata": {"name": "event3"}, "source": source, "involvedObject": object,
                    "reason": "Event Reason", "message": "Message Data",
                    "eventTime": micro_ago(3 * DAY), "lastTimestamp": ago(3 * DAY),
                    "count": 1, "type": "Warning"}),
                wide("3d", "3d", 1, "event3"),
            ),
            (
                json!({"metadata": {"name": "event4"}, "source": source, "involvedObject": object,
                    "reason": "Event Reason", "message": "Message Data",
                    "eventTime": micro_ago(3 * DAY), "firstTimestamp": ago(3 * DAY),
                    "count": 1, "type": "Warning"}),
                wide("3d", "3d", 1, "event4"),
            ),
            (
                json!({"metadata": {"name": "event5"}, "source": source, "involvedObject": object,
                    "reason": "Event Reason", "message": "Message Data",
                    "eventTime": micro_ago(3 * DAY), "count": 1, "type": "Warning"}),
                wide("3d", "3d", 1, "event5"),
            ),
            (
                json!({"metadata": {"name": "event6"}, "source": source, "involvedObject": object,
                    "series": {"count": 2, "lastObservedTime": micro_ago(2 * DAY)},
                    "reason": "Event Reason", "message": "Message Data",
                    "eventTime": micro_ago(3 * DAY), "type": "Warning"}),
                wide("2d", "3d", 2, "event6"),
            ),
            (
                json!({"metadata": {"name": "event7"}, "source": source, "involvedObject": object,
                    "reason": "Event Reason", "message": "Message Data",
                    "eventTime": micro_ago(3 * DAY), "type": "Warning"}),
                wide("3d", "3d", 1, "event7"),
            ),
            (
                // No source: the reporting controller and instance stand in.
                json!({"metadata": {"name": "event2"}, "reportingComponent": "kubelet",
                    "reportingInstance": "test", "involvedObject": object,
                    "reason": "Event Reason", "message": "Message Data",
                    "firstTimestamp": ago(3 * DAY), "lastTimestamp": ago(2 * DAY),
                    "count": 6, "type": "Warning"}),
                json!([
                    "2d",
                    "Warning",
                    "Event Reason",
                    "deployment/Deployment Name",
                    "spec.containers{foo}",
                    "kubelet, test",
                    "Message Data",
                    "3d",
                    6,
                    "event2"
                ]),
            ),
        ],
    );
}

// --- namespaces, secrets, service accounts, config maps ------------------------------------

#[test]
fn namespaces_print_phase_and_age() {
    check(
        "",
        "namespaces",
        &[
            (
                json!({"metadata": {"name": "namespace1", "creationTimestamp": ahead(1)},
                    "status": {"phase": "FooStatus"}}),
                json!(["namespace1", "FooStatus", "0s"]),
            ),
            (
                json!({"metadata": {"name": "namespace2"}}),
                json!(["namespace2", "", "<unknown>"]),
            ),
        ],
    );
}

#[test]
fn secrets_print_type_and_data_count() {
    let meta = json!({"name": "secret1", "creationTimestamp": ahead(1)});
    check(
        "",
        "secrets",
        &[
            (
                json!({"metadata": meta, "type": "kubernetes.io/service-account-token",
                    "data": {"token": "c2VjcmV0IGRhdGE="}}),
                json!(["secret1", "kubernetes.io/service-account-token", 1, "0s"]),
            ),
            (
                json!({"metadata": meta, "type": "kubernetes.io/service-account-token"}),
                json!(["secret1", "kubernetes.io/service-account-token", 0, "0s"]),
            ),
        ],
    );
}

#[test]
fn service_accounts_print_secret_count() {
    let meta = json!({"name": "sa1", "creationTimestamp": ahead(1)});
    check(
        "",
        "serviceaccounts",
        &[
            (
                json!({"metadata": meta, "secrets": []}),
                json!(["sa1", 0, "0s"]),
            ),
            (
                json!({"metadata": meta, "secrets": [{"name": "Secret1"}, {"name": "Secret2"}]}),
                json!(["sa1", 2, "0s"]),
            ),
        ],
    );
}

#[test]
fn config_maps_count_data_and_binary_data() {
    let meta = |name: &str| json!({"name": name, "creationTimestamp": ahead(1)});
    check(
        "",
        "configmaps",
        &[
            (
                json!({"metadata": meta("configmap1")}),
                json!(["configmap1", 0, "0s"]),
            ),
            (
                json!({"metadata": meta("configmap2"), "data": {"foo": "bar"}}),
                json!(["configmap2", 1, "0s"]),
            ),
            (
                json!({"metadata": meta("configmap3"), "data": {"foo": "bar"},
                    "binaryData": {"bin": "YmluYXJ5IGRhdGE="}}),
                json!(["configmap3", 2, "0s"]),
            ),
        ],
    );
}

// --- nodes (TestPrintNodeStatus, ...Role, ...OSImage, ...KernelVersion, ...) ----------------

/// A node row: upstream's narrow cells, then the wide ones (`<none>` addresses, `<unknown>`
/// system info) for a node without them.
fn node_row(name: &str, status: &str, roles: &str) -> Value {
    json!([
        name,
        status,
        roles,
        "<unknown>",
        "",
        "<none>",
        "<none>",
        "<unknown>",
        "<unknown>",
        "<unknown>"
    ])
}

#[test]
fn nodes_print_ready_condition_and_cordon() {
    let node = |name: &str, unschedulable: bool, conditions: Value| {
        json!({"metadata": {"name": name}, "spec": {"unschedulable": unschedulable},
            "status": {"conditions": conditions}})
    };
    let ready = json!([{"type": "Ready", "status": "True"}]);
    let not_ready = json!([{"type": "Ready", "status": "False"}]);
    let invalid = json!([{"type": "InvalidValue", "status": "True"}]);
    check(
        "",
        "nodes",
        &[
            (
                node("foo1", false, ready.clone()),
                node_row("foo1", "Ready", "<none>"),
            ),
            (
                node("foo2", true, ready),
                node_row("foo2", "Ready,SchedulingDisabled", "<none>"),
            ),
            (
                node(
                    "foo3",
                    false,
                    json!([{"type": "Ready", "status": "True"}, {"type": "Ready", "status": "True"}]),
                ),
                node_row("foo3", "Ready", "<none>"),
            ),
            (
                node("foo4", false, not_ready.clone()),
                node_row("foo4", "NotReady", "<none>"),
            ),
            (
                node("foo5", true, not_ready),
                node_row("foo5", "NotReady,SchedulingDisabled", "<none>"),
            ),
            (
                node("foo6", false, invalid.clone()),
                node_row("foo6", "Unknown", "<none>"),
            ),
            (
                node("foo7", false, json!([{}])),
                node_row("foo7", "Unknown", "<none>"),
            ),
            (
                node("foo8", true, invalid),
                node_row("foo8", "Unknown,SchedulingDisabled", "<none>"),
            ),
            (
                node("foo9", true, json!([{}])),
                node_row("foo9", "Unknown,SchedulingDisabled", "<none>"),
            ),
        ],
    );
}

#[test]
fn nodes_print_roles_from_both_role_labels() {
    check(
        "",
        "nodes",
        &[
            (
                json!({"metadata": {"name": "foo9"}}),
                node_row("foo9", "Unknown", "<none>"),
            ),
            (
                json!({"metadata": {"name": "foo10", "labels": {
                    "node-role.kubernetes.io/master": "",
                    "node-role.kubernetes.io/control-plane": "",
                    "node-role.kubernetes.io/proxy": "",
                    "kubernetes.io/role": "node"}}}),
                node_row("foo10", "Unknown", "control-plane,master,node,proxy"),
            ),
            (
                json!({"metadata": {"name": "foo11", "labels": {"kubernetes.io/role": "node"}}}),
                node_row("foo11", "Unknown", "node"),
            ),
        ],
    );
}

/// A node with `info` as its `nodeInfo` and one external address, and its row.
fn node_with_info(
    name: &str,
    info: Value,
    os: &str,
    kernel: &str,
    runtime: &str,
) -> (Value, Value) {
    (
        json!({"metadata": {"name": name}, "status": {"nodeInfo": info,
            "addresses": [{"type": "ExternalIP", "address": "1.1.1.1"}]}}),
        json!([
            name,
            "Unknown",
            "<none>",
            "<unknown>",
            "",
            "<none>",
            "1.1.1.1",
            os,
            kernel,
            runtime
        ]),
    )
}

#[test]
fn nodes_print_os_image_or_unknown() {
    check(
        "",
        "nodes",
        &[
            node_with_info(
                "foo1",
                json!({"osImage": "fake-os-image"}),
                "fake-os-image",
                "<unknown>",
                "<unknown>",
            ),
            node_with_info(
                "foo2",
                json!({"kernelVersion": "fake-kernel-version"}),
                "<unknown>",
                "fake-kernel-version",
                "<unknown>",
            ),
        ],
    );
}

#[test]
fn nodes_print_kernel_version_or_unknown() {
    check(
        "",
        "nodes",
        &[
            node_with_info(
                "foo1",
                json!({"kernelVersion": "fake-kernel-version"}),
                "<unknown>",
                "fake-kernel-version",
                "<unknown>",
            ),
            node_with_info(
                "foo2",
                json!({"osImage": "fake-os-image"}),
                "fake-os-image",
                "<unknown>",
                "<unknown>",
            ),
        ],
    );
}

#[test]
fn nodes_print_container_runtime_version_or_unknown() {
    check(
        "",
        "nodes",
        &[
            node_with_info(
                "foo1",
                json!({"containerRuntimeVersion": "foo://1.2.3"}),
                "<unknown>",
                "<unknown>",
                "foo://1.2.3",
            ),
            node_with_info("foo2", json!({}), "<unknown>", "<unknown>", "<unknown>"),
        ],
    );
}

#[test]
fn nodes_print_their_names_as_given() {
    check(
        "",
        "nodes",
        &[
            (
                json!({"metadata": {"name": "127.0.0.1"}, "status": {}}),
                node_row("127.0.0.1", "Unknown", "<none>"),
            ),
            (
                json!({"metadata": {"name": ""}, "status": {}}),
                node_row("", "Unknown", "<none>"),
            ),
        ],
    );
}

/// A node with `addresses` and its row, the internal and external IPs as given.
fn node_with_addresses(
    name: &str,
    addresses: Value,
    internal: &str,
    external: &str,
) -> (Value, Value) {
    (
        json!({"metadata": {"name": name}, "status": {"addresses": addresses}}),
        json!([
            name,
            "Unknown",
            "<none>",
            "<unknown>",
            "",
            internal,
            external,
            "<unknown>",
            "<unknown>",
            "<unknown>"
        ]),
    )
}

#[test]
fn nodes_print_the_first_external_ip() {
    check(
        "",
        "nodes",
        &[
            node_with_addresses(
                "foo1",
                json!([{"type": "ExternalIP", "address": "1.1.1.1"}]),
                "<none>",
                "1.1.1.1",
            ),
            node_with_addresses(
                "foo2",
                json!([{"type": "InternalIP", "address": "1.1.1.1"}]),
                "1.1.1.1",
                "<none>",
            ),
            node_with_addresses(
                "foo3",
                json!([{"type": "ExternalIP", "address": "2.2.2.2"},
                    {"type": "InternalIP", "address": "3.3.3.3"},
                    {"type": "ExternalIP", "address": "4.4.4.4"}]),
                "3.3.3.3",
                "2.2.2.2",
            ),
        ],
    );
}

#[test]
fn nodes_print_the_first_internal_ip() {
    check(
        "",
        "nodes",
        &[
            node_with_addresses(
                "foo1",
                json!([{"type": "InternalIP", "address": "1.1.1.1"}]),
                "1.1.1.1",
                "<none>",
            ),
            node_with_addresses(
                "foo2",
                json!([{"type": "ExternalIP", "address": "1.1.1.1"}]),
                "<none>",
                "1.1.1.1",
            ),
            node_with_addresses(
                "foo3",
                json!([{"type": "InternalIP", "address": "2.2.2.2"},
                    {"type": "ExternalIP", "address": "3.3.3.3"},
                    {"type": "InternalIP", "address": "4.4.4.4"}]),
                "2.2.2.2",
                "3.3.3.3",
            ),
        ],
    );
}

// --- ingresses and ingress classes ---------------------------------------------------------

#[test]
fn ingresses_print_class_hosts_address_and_ports() {
    check(
        "networking.k8s.io",
        "ingresses",
        &[(
            json!({"metadata": {"name": "test1", "creationTimestamp": ago(TEN_YEARS)},
                "spec": {"ingressClassName": "foo", "defaultBackend": {"service": {
                    "name": "default-backend",
                    "port": {"name": "default-backend", "number": 80}}}},
                "status": {"loadBalancer": {"ingress": [
                    {"ip": "2.3.4.5", "hostname": "localhost.localdomain"}]}}}),
            json!(["test1", "foo", "*", "2.3.4.5", "80", "10y"]),
        )],
    );
}

#[test]
fn ingress_classes_print_controller_and_parameters() {
    let meta =
        |name: &str, years: u64| json!({"name": name, "creationTimestamp": ago(years * 365 * DAY)});
    check(
        "networking.k8s.io",
        "ingressclasses",
        &[
            (
                json!({"metadata": meta("test1", 10), "spec": {
                    "controller": "example.com/controller",
                    "parameters": {"kind": "customgroup", "name": "example"}}}),
                json!([
                    "test1",
                    "example.com/controller",
                    "customgroup/example",
                    "10y"
                ]),
            ),
            (
                json!({"metadata": meta("test1", 10), "spec": {
                    "controller": "example.com/controller",
                    "parameters": {"apiGroup": "example.com", "kind": "customgroup",
                        "name": "example"}}}),
                json!([
                    "test1",
                    "example.com/controller",
                    "customgroup.example.com/example",
                    "10y"
                ]),
            ),
            (
                json!({"metadata": meta("test2", 11),
                    "spec": {"controller": "example.com/controller2"}}),
                json!(["test2", "example.com/controller2", "<none>", "11y"]),
            ),
        ],
    );
}

// --- services (TestPrintServiceLoadBalancer, TestPrintService) ------------------------------

#[test]
fn load_balancer_services_print_ingress_addresses_or_pending() {
    let service = |name: &str, ip: &str, ports: Value, ingress: Value, selector: Value| {
        json!({"metadata": {"name": name},
            "spec": {"clusterIPs": [ip], "type": "LoadBalancer", "ports": ports,
                "selector": selector},
            "status": {"loadBalancer": {"ingress": ingress}}})
    };
    let three_ports = json!([{"port": 80, "protocol": "TCP"}, {"port": 8090, "protocol": "UDP"},
        {"port": 8000, "protocol": "TCP"}]);
    let three_ingresses = json!([{"ip": "2.3.4.5"}, {"ip": "3.4.5.6"},
        {"ip": "5.6.7.8", "hostname": "host5678"}]);
    check(
        "",
        "services",
        &[
            (
                service(
                    "service1",
                    "1.2.3.4",
                    json!([{"port": 80, "protocol": "TCP"}]),
                    json!([{"ip": "2.3.4.5"}, {"ip": "3.4.5.6"}]),
                    Value::Null,
                ),
                json!([
                    "service1",
                    "LoadBalancer",
                    "1.2.3.4",
                    "2.3.4.5,3.4.5.6",
                    "80/TCP",
                    "<unknown>",
                    "<none>"
                ]),
            ),
            (
                service(
                    "service2",
                    "1.3.4.5",
                    json!([{"port": 80, "protocol": "TCP"}, {"port": 8090, "protocol": "UDP"},
                        {"port": 8000, "protocol": "TCP"}, {"port": 7777, "protocol": "SCTP"}]),
                    Value::Null,
                    Value::Null,
                ),
                json!([
                    "service2",
                    "LoadBalancer",
                    "1.3.4.5",
                    "<pending>",
                    "80/TCP,8090/UDP,8000/TCP,7777/SCTP",
                    "<unknown>",
                    "<none>"
                ]),
            ),
            (
                service(
                    "service3",
                    "1.4.5.6",
                    three_ports.clone(),
                    json!([{"ip": "2.3.4.5"}]),
                    Value::Null,
                ),
                json!([
                    "service3",
                    "LoadBalancer",
                    "1.4.5.6",
                    "2.3.4.5",
                    "80/TCP,8090/UDP,8000/TCP",
                    "<unknown>",
                    "<none>"
                ]),
            ),
            (
                // Upstream's narrow case clips the addresses to 16 characters
                // ("2.3.4.5,3.4.5..."); the wide form never does.
                service(
                    "service4",
                    "1.5.6.7",
                    three_ports.clone(),
                    three_ingresses.clone(),
                    Value::Null,
                ),
                json!([
                    "service4",
                    "LoadBalancer",
                    "1.5.6.7",
                    "2.3.4.5,3.4.5.6,5.6.7.8",
                    "80/TCP,8090/UDP,8000/TCP",
                    "<unknown>",
                    "<none>"
                ]),
            ),
            (
                service(
                    "service4",
                    "1.5.6.7",
                    three_ports,
                    three_ingresses,
                    json!({"foo": "bar"}),
                ),
                json!([
                    "service4",
                    "LoadBalancer",
                    "1.5.6.7",
                    "2.3.4.5,3.4.5.6,5.6.7.8",
                    "80/TCP,8090/UDP,8000/TCP",
                    "<unknown>",
                    "foo=bar"
                ]),
            ),
        ],
    );
}

#[test]
fn services_print_type_cluster_ip_external_ip_and_ports() {
    let service = |name: &str, spec: Value, status: Value| json!({"metadata": {"name": name}, "spec": spec, "status": status});
    let lb = |ips: Value| {
        json!({"type": "LoadBalancer", "ports": [{"protocol": "tcp", "port": 8888}],
            "clusterIPs": ["10.9.8.7"], "externalIPs": ips})
    };
    check(
        "",
        "services",
        &[
            (
                // Upstream's narrow and wide cases of this service: the selector is only
                // in the wide form.
                service(
                    "test1",
                    json!({"type": "ClusterIP", "ports": [{"protocol": "tcp", "port": 2233}],
                        "clusterIPs": ["10.9.8.7"], "selector": {"foo": "bar"}}),
                    json!({}),
                ),
                json!([
                    "test1",
                    "ClusterIP",
                    "10.9.8.7",
                    "<none>",
                    "2233/tcp",
                    "<unknown>",
                    "foo=bar"
                ]),
            ),
            (
                service(
                    "test2",
                    json!({"type": "NodePort",
                        "ports": [{"protocol": "tcp", "port": 8888, "nodePort": 9999}],
                        "clusterIPs": ["10.9.8.7"]}),
                    json!({}),
                ),
                json!([
                    "test2",
                    "NodePort",
                    "10.9.8.7",
                    "<none>",
                    "8888:9999/tcp",
                    "<unknown>",
                    "<none>"
                ]),
            ),
            (
                service("test3", lb(Value::Null), json!({})),
                json!([
                    "test3",
                    "LoadBalancer",
                    "10.9.8.7",
                    "<pending>",
                    "8888/tcp",
                    "<unknown>",
                    "<none>"
                ]),
            ),
            (
                service("test4", lb(json!(["80.11.12.10"])), json!({})),
                json!([
                    "test4",
                    "LoadBalancer",
                    "10.9.8.7",
                    "80.11.12.10",
                    "8888/tcp",
                    "<unknown>",
                    "<none>"
                ]),
            ),
            (
                service(
                    "test5",
                    lb(json!(["80.11.12.10"])),
                    json!({"loadBalancer": {"ingress": [
                        {"ip": "3.4.5.6", "hostname": "test.cluster.com"}]}}),
                ),
                json!([
                    "test5",
                    "LoadBalancer",
                    "10.9.8.7",
                    "3.4.5.6,80.11.12.10",
                    "8888/tcp",
                    "<unknown>",
                    "<none>"
                ]),
            ),
            (
                service(
                    "test6",
                    lb(json!(["80.11.12.10", "80.11.12.11"])),
                    json!({"loadBalancer": {"ingress": [
                        {"ip": "2.3.4.5", "hostname": "test.cluster.local"},
                        {"ip": "3.4.5.6", "hostname": "test.cluster.com"}]}}),
                ),
                json!([
                    "test6",
                    "LoadBalancer",
                    "10.9.8.7",
                    "2.3.4.5,3.4.5.6,80.11.12.10,80.11.12.11",
                    "8888/tcp",
                    "<unknown>",
                    "<none>"
                ]),
            ),
            (
                service(
                    "test7",
                    json!({"type": "ExternalName", "externalName": "my.database.example.com"}),
                    json!({}),
                ),
                json!([
                    "test7",
                    "ExternalName",
                    "<none>",
                    "my.database.example.com",
                    "<none>",
                    "<unknown>",
                    "<none>"
                ]),
            ),
        ],
    );
}

// --- pods ----------------------------------------------------------------------------------

/// A pod's wide row: upstream's five cells for a pod without a creation time, then no IP,
/// node, nominated node or readiness gates.
fn pod_row(name: &str, ready: &str, status: &str, restarts: &str) -> Value {
    json!([
        name,
        ready,
        status,
        restarts,
        "<unknown>",
        "<none>",
        "<none>",
        "<none>",
        "<none>"
    ])
}

/// `n` containers as upstream's `make([]api.Container, n)` leaves them: no names.
fn unnamed(n: usize) -> Value {
    Value::Array(vec![json!({"name": ""}); n])
}

fn pod(name: &str, spec: Value, status: Value) -> Value {
    json!({"metadata": {"name": name}, "spec": spec, "status": status})
}

/// A container status: ready or not, its restarts, its state.
fn container(ready: bool, restarts: i64, state: Value) -> Value {
    json!({"ready": ready, "restartCount": restarts, "state": state})
}

/// The same, with its last run ended `secs` seconds ago.
fn restarted(ready: bool, restarts: i64, state: Value, secs: u64) -> Value {
    json!({"ready": ready, "restartCount": restarts, "state": state,
        "lastState": {"terminated": {"finishedAt": ago(secs)}}})
}

fn running() -> Value {
    json!({"running": {}})
}

fn waiting() -> Value {
    json!({"waiting": {}})
}

#[test]
fn pods_print_readiness_status_and_restarts() {
    let two = json!({"containers": unnamed(2)});
    let one = json!({"containers": unnamed(1)});
    let deleted = |name: &str, status: Value| {
        json!({"metadata": {"name": name, "deletionTimestamp": ago(10)},
            "spec": {"containers": unnamed(1)}, "status": status})
    };
    let completed_and_running = |conditions: Value| {
        json!({"phase": "Running", "reason": "", "conditions": conditions, "containerStatuses": [
            container(true, 3, json!({"terminated": {"reason": "Completed", "exitCode": 0}})),
            container(true, 3, running())]})
    };
    check(
        "",
        "pods",
        &[
            (
                pod(
                    "test1",
                    two.clone(),
                    json!({"phase": "podPhase", "containerStatuses": [
                    container(true, 3, running()), container(false, 3, json!({}))]}),
                ),
                pod_row("test1", "1/2", "podPhase", "6"),
            ),
            (
                pod(
                    "test2",
                    two.clone(),
                    json!({"phase": "podPhase", "containerStatuses": [
                    container(true, 3, running()),
                    container(false, 3, json!({"waiting": {"reason": "ContainerWaitingReason"}}))]}),
                ),
                pod_row("test2", "1/2", "ContainerWaitingReason", "6"),
            ),
            (
                pod(
                    "test3",
                    two.clone(),
                    json!({"phase": "podPhase", "containerStatuses": [
                    container(false, 3, json!({"waiting": {"reason": "ContainerWaitingReason"}})),
                    container(false, 3,
                        json!({"terminated": {"reason": "ContainerTerminatedReason"}}))]}),
                ),
                pod_row("test3", "0/2", "ContainerWaitingReason", "6"),
            ),
            (
                pod(
                    "test4",
                    two.clone(),
                    json!({"phase": "podPhase", "containerStatuses": [
                    container(true, 3, running()), container(true, 3, json!({}))]}),
                ),
                pod_row("test4", "1/2", "podPhase", "6"),
            ),
            (
                pod(
                    "test5",
                    two.clone(),
                    json!({"reason": "podReason", "phase": "podPhase",
                    "containerStatuses": [
                        container(true, 3, running()), container(true, 3, json!({}))]}),
                ),
                pod_row("test5", "1/2", "podReason", "6"),
            ),
            (
                pod("test6", two.clone(), completed_and_running(json!([]))),
                pod_row("test6", "1/2", "NotReady", "6"),
            ),
            (
                pod(
                    "test6",
                    two.clone(),
                    completed_and_running(json!([{"type": "Ready", "status": "True",
                        "lastProbeTime": ago(0)}])),
                ),
                pod_row("test6", "1/2", "Running", "6"),
            ),
            (
                pod(
                    "test7",
                    json!({"initContainers": unnamed(1), "containers": unnamed(1)}),
                    json!({"phase": "podPhase",
                        "initContainerStatuses": [restarted(false, 3, running(), 10)],
                        "containerStatuses": [container(false, 0, waiting())]}),
                ),
                pod_row("test7", "0/1", "Init:0/1", "3 (10s ago)"),
            ),
            (
                pod(
                    "test8",
                    json!({"initContainers": unnamed(2), "containers": unnamed(1)}),
                    json!({"phase": "podPhase", "initContainerStatuses": [
                            restarted(false, 3, running(), 10), container(false, 0, waiting())],
                        "containerStatuses": [container(false, 0, waiting())]}),
                ),
                pod_row("test8", "0/1", "Init:0/2", "3 (10s ago)"),
            ),
            (
                pod(
                    "test9",
                    json!({"initContainers": unnamed(2), "containers": unnamed(1)}),
                    json!({"phase": "podPhase", "initContainerStatuses": [
                            container(false, 0, json!({"terminated": {}})),
                            restarted(false, 3, running(), 10)],
                        "containerStatuses": [container(false, 0, waiting())]}),
                ),
                pod_row("test9", "0/1", "Init:1/2", "3 (10s ago)"),
            ),
            (
                pod(
                    "test10",
                    json!({"initContainers": unnamed(2), "containers": unnamed(1)}),
                    json!({"phase": "podPhase", "initContainerStatuses": [
                            restarted(false, 2, json!({"terminated": {}}), 2 * MINUTE),
                            restarted(false, 3, running(), 10)],
                        "containerStatuses": [container(false, 0, waiting())]}),
                ),
                pod_row("test10", "0/1", "Init:1/2", "5 (10s ago)"),
            ),
            (
                pod(
                    "test11",
                    json!({"initContainers": unnamed(1), "containers": unnamed(1)}),
                    json!({"phase": "Running", "initContainerStatuses": [
                            restarted(false, 2, json!({"terminated": {}}), 2 * MINUTE)],
                        "containerStatuses": [restarted(false, 4, running(), 20)]}),
                ),
                pod_row("test11", "0/1", "Running", "4 (20s ago)"),
            ),
            (
                pod(
                    "test12",
                    one.clone(),
                    json!({"phase": "Running",
                    "containerStatuses": [restarted(true, 3, running(), 5 * DAY)]}),
                ),
                pod_row("test12", "1/1", "Running", "3 (5d ago)"),
            ),
            (
                pod(
                    "test13",
                    two.clone(),
                    json!({"phase": "Running", "containerStatuses": [
                    container(true, 0, running()), restarted(true, 3, running(), 10 * DAY)]}),
                ),
                pod_row("test13", "2/2", "Running", "3 (10d ago)"),
            ),
            (
                pod(
                    "test14",
                    two.clone(),
                    json!({"phase": "Running", "containerStatuses": [
                    restarted(true, 6, running(), 5 * DAY),
                    restarted(true, 3, running(), 20 * DAY)]}),
                ),
                pod_row("test14", "2/2", "Running", "9 (5d ago)"),
            ),
            (
                pod(
                    "test15",
                    two,
                    json!({"phase": "podPhase", "conditions": [
                    {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}),
                ),
                pod_row("test15", "0/2", "SchedulingGated", "0"),
            ),
            (
                pod(
                    "test16",
                    one.clone(),
                    json!({"phase": "Succeeded", "containerStatuses": [
                    container(false, 0,
                        json!({"terminated": {"reason": "Completed", "exitCode": 0}}))]}),
                ),
                pod_row("test16", "0/1", "Completed", "0"),
            ),
            (
                pod(
                    "test17",
                    one,
                    json!({"phase": "Failed", "containerStatuses": [
                    container(false, 0, json!({"terminated": {"reason": "Error", "exitCode": 1}}))]}),
                ),
                pod_row("test17", "0/1", "Error", "0"),
            ),
            (
                deleted(
                    "test18",
                    json!({"phase": "Succeeded", "containerStatuses": [
                    container(false, 0,
                        json!({"terminated": {"reason": "Completed", "exitCode": 0}}))]}),
                ),
                pod_row("test18", "0/1", "Completed", "0"),
            ),
            (
                deleted(
                    "test19",
                    json!({"phase": "Running",
                    "containerStatuses": [container(false, 0, running())]}),
                ),
                pod_row("test19", "0/1", "Terminating", "0"),
            ),
            (
                deleted("test20", json!({"phase": "Pending"})),
                pod_row("test20", "0/1", "Terminating", "0"),
            ),
        ],
    );
}

#[test]
fn pods_count_started_sidecars_and_their_restarts() {
    let sidecars = json!({"initContainers": [
            {"name": "restartable-init-1", "restartPolicy": "Always"},
            {"name": "restartable-init-2", "restartPolicy": "Always"}],
        "containers": unnamed(1)});
    let sidecar = |name: &str, restarts: i64, state: Value, started: bool, last: Option<u64>| {
        let mut status = json!({"name": name, "ready": false, "restartCount": restarts,
            "state": state, "started": started});
        if let Some(secs) = last {
            status["lastState"] = json!({"terminated": {"finishedAt": ago(secs)}});
        }
        status
    };
    let initialized = |status: &str| json!([{"type": "Initialized", "status": status}]);
    let error = json!({"terminated": {"reason": "Error", "exitCode": 137}});
    check(
        "",
        "pods",
        &[
            (
                pod(
                    "test1",
                    sidecars.clone(),
                    json!({"phase": "Pending",
                    "initContainerStatuses": [
                        sidecar("restartable-init-1", 3, running(), false, Some(10)),
                        sidecar("restartable-init-2", 0, waiting(), false, None)],
                    "containerStatuses": [container(false, 0, waiting())],
                    "conditions": initialized("False")}),
                ),
                pod_row("test1", "0/3", "Init:0/2", "3 (10s ago)"),
            ),
            (
                pod(
                    "test1",
                    sidecars.clone(),
                    json!({"phase": "Pending",
                    "initContainerStatuses": [
                        sidecar("restartable-init-1", 3, running(), true, Some(10)),
                        sidecar("restartable-init-2", 0, running(), false, None)],
                    "containerStatuses": [container(false, 0, waiting())],
                    "conditions": initialized("False")}),
                ),
                pod_row("test1", "0/3", "Init:1/2", "3 (10s ago)"),
            ),
            (
                pod(
                    "test2",
                    sidecars.clone(),
                    json!({"phase": "Running",
                    "initContainerStatuses": [
                        sidecar("restartable-init-1", 3, running(), true, Some(10)),
                        sidecar("restartable-init-2", 0, running(), true, None)],
                    "containerStatuses": [restarted(true, 4, running(), 20)],
                    "conditions": initialized("True")}),
                ),
                pod_row("test2", "1/3", "Running", "7 (10s ago)"),
            ),
            (
                pod(
                    "test3",
                    sidecars,
                    json!({"phase": "Succeeded",
                    "initContainerStatuses": [
                        sidecar("restartable-init-1", 3, error.clone(), false, Some(10)),
                        sidecar("restartable-init-2", 0, error, false, None)],
                    "containerStatuses": [restarted(false, 4,
                        json!({"terminated": {"reason": "Completed", "exitCode": 0}}), 20)],
                    "conditions": initialized("True")}),
                ),
                pod_row("test3", "0/3", "Completed", "7 (10s ago)"),
            ),
            (
                // Statuses of containers the spec does not have.
                pod(
                    "test4",
                    json!({"initContainers": [
                            {"name": "init1", "image": "initimage"},
                            {"name": "sidecar1", "image": "sidecarimage",
                                "restartPolicy": "Always"}],
                        "containers": [{"name": "container1", "image": "containerimage"}]}),
                    json!({"phase": "Running",
                        "initContainerStatuses": [{"name": "initinvalid"}, {"name": "init1"},
                            {"name": "sidecar1"}],
                        "containerStatuses": [{"name": "containerinvalid"},
                            {"name": "container1"}]}),
                ),
                pod_row("test4", "0/2", "Init:0/2", "0"),
            ),
        ],
    );
}

#[test]
fn pods_print_ip_node_nominated_node_and_readiness_gates_when_wide() {
    let gated = |ips: Value| {
        pod(
            "test1",
            json!({"containers": unnamed(2), "nodeName": "test1", "readinessGates": [
                {"conditionType": "condition1"}, {"conditionType": "condition2"},
                {"conditionType": "condition3"}]}),
            json!({"conditions": [{"type": "condition1", "status": "False"},
                    {"type": "condition2", "status": "True"}],
                "phase": "podPhase", "podIPs": ips,
                "containerStatuses": [container(true, 3, running()), container(false, 3, json!({}))],
                "nominatedNodeName": "node1"}),
        )
    };
    let wide = json!([
        "test1",
        "1/2",
        "podPhase",
        "6",
        "<unknown>",
        "1.1.1.1",
        "test1",
        "node1",
        "1/3"
    ]);
    check(
        "",
        "pods",
        &[
            (gated(json!([{"ip": "1.1.1.1"}])), wide.clone()),
            (
                gated(json!([{"ip": "1.1.1.1"}, {"ip": "2001:db8::"}])),
                wide,
            ),
            (
                pod(
                    "test2",
                    json!({"containers": unnamed(2), "nodeName": ""}),
                    json!({"phase": "podPhase", "containerStatuses": [
                        container(true, 3, running()),
                        container(false, 3,
                            json!({"waiting": {"reason": "ContainerWaitingReason"}}))]}),
                ),
                pod_row("test2", "1/2", "ContainerWaitingReason", "6"),
            ),
        ],
    );
}

/// Upstream's `TestPrintPodConditions`; the row conditions it also checks are not cells
/// (the server adds them to the row, `row_conditions`).
#[test]
fn pods_in_a_final_phase_print_it() {
    let labelled = |name: &str, phase: &str| {
        json!({"metadata": {"name": name, "labels": {"a": "1", "b": "2"}},
            "spec": {"containers": unnamed(2)},
            "status": {"phase": phase, "containerStatuses": [
                container(true, 3, running()), container(false, 3, json!({}))]}})
    };
    check(
        "",
        "pods",
        &[
            (
                labelled("test1", "Running"),
                pod_row("test1", "1/2", "Running", "6"),
            ),
            (
                labelled("test1", "Succeeded"),
                pod_row("test1", "1/2", "Succeeded", "6"),
            ),
            (
                labelled("test2", "Failed"),
                pod_row("test2", "1/2", "Failed", "6"),
            ),
        ],
    );
}

#[test]
fn pod_lists_print_a_row_per_pod() {
    check(
        "",
        "pods",
        &[
            (
                pod(
                    "test1",
                    json!({"containers": unnamed(2)}),
                    json!({"phase": "podPhase",
                    "containerStatuses": [container(true, 3, running()),
                        container(true, 3, running())]}),
                ),
                pod_row("test1", "2/2", "podPhase", "6"),
            ),
            (
                pod(
                    "test2",
                    json!({"containers": unnamed(1)}),
                    json!({"phase": "podPhase",
                    "containerStatuses": [container(true, 1, running())]}),
                ),
                pod_row("test2", "1/1", "podPhase", "1"),
            ),
        ],
    );
}

#[test]
fn pods_print_every_phase() {
    let in_phase = |name: &str, phase: &str, second_ready: bool| {
        pod(
            name,
            json!({"containers": unnamed(2)}),
            json!({"phase": phase,
            "containerStatuses": [container(true, 3, running()),
                container(second_ready, 3, json!({}))]}),
        )
    };
    check(
        "",
        "pods",
        &[
            (
                in_phase("test1", "Running", false),
                pod_row("test1", "1/2", "Running", "6"),
            ),
            (
                in_phase("test2", "Pending", false),
                pod_row("test2", "1/2", "Pending", "6"),
            ),
            (
                in_phase("test3", "Unknown", false),
                pod_row("test3", "1/2", "Unknown", "6"),
            ),
            (
                in_phase("test4", "Succeeded", false),
                pod_row("test4", "1/2", "Succeeded", "6"),
            ),
            (
                in_phase("test5", "Failed", true),
                pod_row("test5", "1/2", "Failed", "6"),
            ),
        ],
    );
}

#[test]
fn pod_templates_print_containers_images_and_pod_labels() {
    let template = |name: &str, labels: Value, containers: Value| {
        json!({"metadata": {"name": name}, "template": {
            "metadata": {"name": name, "labels": labels},
            "spec": {"containers": containers}}})
    };
    check(
        "",
        "podtemplates",
        &[
            (
                template("pod-template-1", Value::Null, json!([])),
                json!(["pod-template-1", "", "", "<none>"]),
            ),
            (
                template(
                    "pod-template-2",
                    Value::Null,
                    json!([{"name": "fake-container1", "image": "fake-image1"},
                        {"name": "fake-container2", "image": "fake-image2"}]),
                ),
                json!([
                    "pod-template-2",
                    "fake-container1,fake-container2",
                    "fake-image1,fake-image2",
                    "<none>"
                ]),
            ),
            (
                template("pod-template-3", json!({"foo": "bar"}), json!([])),
                json!(["pod-template-3", "", "", "foo=bar"]),
            ),
        ],
    );
}

// --- apps ----------------------------------------------------------------------------------

/// Two containers, as upstream's workload cases template them.
fn two_fakes() -> Value {
    json!([{"name": "fake-container1", "image": "fake-image1"},
        {"name": "fake-container2", "image": "fake-image2"}])
}

#[test]
fn deployments_print_ready_of_wanted_up_to_date_and_available() {
    check(
        "apps",
        "deployments",
        // Upstream's narrow and wide cases of one deployment.
        &[
            (
                json!({"metadata": {"name": "test1", "creationTimestamp": ahead(1)},
                "spec": {"replicas": 5, "template": {"spec": {"containers": two_fakes()}},
                    "selector": {"matchLabels": {"foo": "bar"}}},
                "status": {"replicas": 10, "updatedReplicas": 2, "availableReplicas": 1,
                    "unavailableReplicas": 4}}),
                json!([
                    "test1",
                    "0/5",
                    2,
                    1,
                    "0s",
                    "fake-container1,fake-container2",
                    "fake-image1,fake-image2",
                    "foo=bar"
                ]),
            ),
            // Not upstream's case: `printDeployment` prints a missing selector's text, empty
            // (the other workloads print `<none>` through `FormatLabelSelector`).
            (
                json!({"metadata": {"name": "bare", "creationTimestamp": ago(5)},
                "spec": {"replicas": 1, "template": {"spec": {"containers": two_fakes()}}}}),
                json!([
                    "bare",
                    "0/1",
                    0,
                    0,
                    "5s",
                    "fake-container1,fake-container2",
                    "fake-image1,fake-image2",
                    ""
                ]),
            ),
        ],
    );
}

#[test]
fn daemon_sets_print_scheduling_counts_and_node_selector() {
    check(
        "apps",
        "daemonsets",
        // Upstream's narrow and wide cases of one daemon set.
        &[(
            json!({"metadata": {"name": "test1", "creationTimestamp": ahead(1)},
                "spec": {"template": {"spec": {"containers": two_fakes()}},
                    "selector": {"matchLabels": {"foo": "bar"}}},
                "status": {"currentNumberScheduled": 2, "desiredNumberScheduled": 3,
                    "numberReady": 1, "updatedNumberScheduled": 2, "numberAvailable": 0}}),
            json!([
                "test1",
                3,
                2,
                1,
                2,
                0,
                "<none>",
                "0s",
                "fake-container1,fake-container2",
                "fake-image1,fake-image2",
                "foo=bar"
            ]),
        )],
    );
}

#[test]
fn daemon_set_lists_print_a_row_per_daemon_set() {
    let status = |current: i64, desired: i64, ready: i64, updated: i64, available: i64| {
        json!({"currentNumberScheduled": current, "desiredNumberScheduled": desired,
            "numberReady": ready, "updatedNumberScheduled": updated,
            "numberAvailable": available})
    };
    check(
        "apps",
        "daemonsets",
        &[
            (
                json!({"metadata": {"name": "daemonset1", "creationTimestamp": ahead(1)},
                    "spec": {"template": {"spec": {"containers": two_fakes()}}},
                    "status": status(2, 3, 1, 2, 0)}),
                json!([
                    "daemonset1",
                    3,
                    2,
                    1,
                    2,
                    0,
                    "<none>",
                    "0s",
                    "fake-container1,fake-container2",
                    "fake-image1,fake-image2",
                    "<none>"
                ]),
            ),
            (
                json!({"metadata": {"name": "daemonset2", "creationTimestamp": ahead(1)},
                    "spec": {"template": {}, "selector": {"matchLabels": {"foo": "bar"}}},
                    "status": status(4, 2, 9, 3, 3)}),
                json!([
                    "daemonset2",
                    2,
                    4,
                    9,
                    3,
                    3,
                    "<none>",
                    "0s",
                    "",
                    "",
                    "foo=bar"
                ]),
            ),
        ],
    );
}

#[test]
fn replica_sets_print_desired_current_and_ready() {
    check(
        "apps",
        "replicasets",
        // Upstream's narrow and wide cases of one replica set.
        &[(
            json!({"metadata": {"name": "test1", "creationTimestamp": ahead(1)},
                "spec": {"replicas": 5, "template": {"spec": {"containers": two_fakes()}},
                    "selector": {"matchLabels": {"foo": "bar"}}},
                "status": {"replicas": 5, "readyReplicas": 2}}),
            json!([
                "test1",
                5,
                5,
                2,
                "0s",
                "fake-container1,fake-container2",
                "fake-image1,fake-image2",
                "foo=bar"
            ]),
        )],
    );
}

#[test]
fn replica_set_lists_print_a_row_per_replica_set() {
    check(
        "apps",
        "replicasets",
        &[
            (
                json!({"metadata": {"name": "replicaset1", "creationTimestamp": ahead(1)},
                    "spec": {"replicas": 5, "template": {"spec": {"containers": two_fakes()}}},
                    "status": {"replicas": 5, "readyReplicas": 2}}),
                json!([
                    "replicaset1",
                    5,
                    5,
                    2,
                    "0s",
                    "fake-container1,fake-container2",
                    "fake-image1,fake-image2",
                    "<none>"
                ]),
            ),
            (
                json!({"metadata": {"name": "replicaset2", "creationTimestamp": ahead(1)},
                    "spec": {"replicas": 4, "template": {},
                        "selector": {"matchLabels": {"foo": "bar"}}},
                    "status": {"replicas": 3, "readyReplicas": 1}}),
                json!(["replicaset2", 4, 3, 1, "0s", "", "", "foo=bar"]),
            ),
        ],
    );
}

#[test]
fn stateful_sets_print_ready_of_wanted() {
    check(
        "apps",
        "statefulsets",
        // Upstream's narrow and wide cases of one stateful set.
        &[(
            json!({"metadata": {"name": "test1", "creationTimestamp": ahead(1)},
                "spec": {"replicas": 5, "template": {"spec": {"containers": two_fakes()}}},
                "status": {"replicas": 5, "readyReplicas": 2}}),
            json!([
                "test1",
                "2/5",
                "0s",
                "fake-container1,fake-container2",
                "fake-image1,fake-image2"
            ]),
        )],
    );
}

#[test]
fn controller_revisions_print_their_controller_and_revision() {
    let revision = |name: &str, owners: Value, number: i64| {
        json!({"metadata": {"name": name, "creationTimestamp": ahead(1),
            "ownerReferences": owners}, "revision": number})
    };
    check(
        "apps",
        "controllerrevisions",
        &[
            (
                revision(
                    "test1",
                    json!([{"controller": true, "apiVersion": "apps/v1", "kind": "DaemonSet",
                        "name": "foo"}]),
                    1,
                ),
                json!(["test1", "daemonset.apps/foo", 1, "0s"]),
            ),
            (
                revision(
                    "test2",
                    json!([{"controller": false, "kind": "ABC", "name": "foo"}]),
                    2,
                ),
                json!(["test2", "<none>", 2, "0s"]),
            ),
            (
                revision("test3", json!([]), 3),
                json!(["test3", "<none>", 3, "0s"]),
            ),
            (
                revision("test4", Value::Null, 4),
                json!(["test4", "<none>", 4, "0s"]),
            ),
        ],
    );
}

#[test]
fn replication_controllers_print_desired_current_ready_and_selector() {
    let template = json!({"metadata": {"labels": {"a": "b"}}, "spec": {
        "containers": [{"name": "test", "image": "test_image", "imagePullPolicy": "IfNotPresent",
            "terminationMessagePolicy": "File"}],
        "restartPolicy": "Always", "dnsPolicy": "ClusterFirst"}});
    let rc = |replicas: i64, status: Value| {
        json!({"metadata": {"name": "rc1", "namespace": "test-namespace"},
            "spec": {"replicas": replicas, "selector": {"a": "b"}, "template": template},
            "status": status})
    };
    check(
        "",
        "replicationcontrollers",
        &[
            (
                rc(0, json!({})),
                json!(["rc1", 0, 0, 0, "<unknown>", "test", "test_image", "a=b"]),
            ),
            (
                // Upstream's "basic with replicas" and "wide" cases.
                rc(5, json!({"replicas": 3, "readyReplicas": 1})),
                json!(["rc1", 5, 3, 1, "<unknown>", "test", "test_image", "a=b"]),
            ),
            (
                // A watch's bookmark: no name, no template.
                json!({"metadata": {"annotations": {"k8s.io/initial-events-end": "true"}},
                    "spec": {"replicas": 0}}),
                json!(["", 0, 0, 0, "<unknown>", "", "", "<none>"]),
            ),
        ],
    );
}

// --- batch ---------------------------------------------------------------------------------

#[test]
fn jobs_print_status_completions_and_duration() {
    let fake_jobs = json!([{"name": "fake-job-container1", "image": "fake-job-image1"},
        {"name": "fake-job-container2", "image": "fake-job-image2"}]);
    let bare = |name: &str, created: String, status: Value| {
        json!({"metadata": {"name": name, "creationTimestamp": created}, "spec": {},
            "status": status})
    };
    let with_condition = |name: &str, kind: &str| {
        bare(
            name,
            ahead(1),
            json!({"succeeded": 0, "conditions": [
            {"type": kind, "status": "True"}]}),
        )
    };
    let narrow = |name: &str, status: &str, completions: &str, duration: &str, age: &str| {
        json!([name, status, completions, duration, age, "", "", "<none>"])
    };
    check(
        "batch",
        "jobs",
        &[
            (
                // Upstream's narrow and wide cases of job1 (the narrow one misspells its
                // selector's value).
                json!({"metadata": {"name": "job1", "creationTimestamp": ahead(1)},
                    "spec": {"completions": 2, "template": {"spec": {"containers": fake_jobs}},
                        "selector": {"matchLabels": {"job-label": "job-label-value"}}},
                    "status": {"succeeded": 1}}),
                json!([
                    "job1",
                    "Running",
                    "1/2",
                    "",
                    "0s",
                    "fake-job-container1,fake-job-container2",
                    "fake-job-image1,fake-job-image2",
                    "job-label=job-label-value"
                ]),
            ),
            (
                bare("job2", ago(3652 * DAY), json!({"succeeded": 0})),
                narrow("job2", "Running", "0/1", "", "10y"),
            ),
            (
                bare(
                    "job3",
                    ago(TEN_YEARS),
                    json!({"succeeded": 0,
                    "startTime": ahead(MINUTE), "completionTime": ahead(31 * MINUTE)}),
                ),
                narrow("job3", "Running", "0/1", "30m", "10y"),
            ),
            (
                bare(
                    "job4",
                    ago(TEN_YEARS),
                    json!({"succeeded": 0,
                    "startTime": ago(20 * MINUTE)}),
                ),
                narrow("job4", "Running", "0/1", "20m", "10y"),
            ),
            (
                with_condition("job5", "Complete"),
                narrow("job5", "Complete", "0/1", "", "0s"),
            ),
            (
                with_condition("job6", "Failed"),
                narrow("job6", "Failed", "0/1", "", "0s"),
            ),
            (
                with_condition("job7", "Suspended"),
                narrow("job7", "Suspended", "0/1", "", "0s"),
            ),
            (
                with_condition("job8", "FailureTarget"),
                narrow("job8", "FailureTarget", "0/1", "", "0s"),
            ),
            (
                json!({"metadata": {"name": "job9", "creationTimestamp": ahead(1),
                    "deletionTimestamp": ahead(1)}, "spec": {}}),
                narrow("job9", "Terminating", "0/1", "", "0s"),
            ),
        ],
    );
}

#[test]
fn job_lists_print_a_row_per_job() {
    let job = |name: &str, status: Value| {
        json!({"metadata": {"name": name, "creationTimestamp": ahead(1)},
            "spec": {"completions": 2, "template": {"spec": {"containers": [
                    {"name": "fake-job-container1", "image": "fake-job-image1"},
                    {"name": "fake-job-container2", "image": "fake-job-image2"}]}},
                "selector": {"matchLabels": {"job-label": "job-lable-value"}}},
            "status": status})
    };
    let row = |name: &str, completions: &str, duration: &str| {
        json!([
            name,
            "Running",
            completions,
            duration,
            "0s",
            "fake-job-container1,fake-job-container2",
            "fake-job-image1,fake-job-image2",
            "job-label=job-lable-value"
        ])
    };
    check(
        "batch",
        "jobs",
        &[
            (job("job1", json!({"succeeded": 1})), row("job1", "1/2", "")),
            (
                job(
                    "job2",
                    json!({"succeeded": 2, "startTime": ago(20 * MINUTE)}),
                ),
                row("job2", "2/2", "20m"),
            ),
        ],
    );
}

#[test]
fn cron_jobs_print_schedule_time_zone_suspension_and_last_schedule() {
    let template = json!({"spec": {"completions": 2,
        "template": {"spec": {"containers": [
            {"name": "fake-job-container1", "image": "fake-job-image1"},
            {"name": "fake-job-container2", "image": "fake-job-image2"}]}},
        "selector": {"matchLabels": {"a": "b"}}}});
    let templated = |time_zone: Value| {
        json!({"metadata": {"name": "cronjob1", "creationTimestamp": ahead(1)},
            "spec": {"schedule": "0/5 * * * ?", "timeZone": time_zone, "suspend": false,
                "jobTemplate": template},
            "status": {"lastScheduleTime": ahead(1)}})
    };
    let templated_row = |time_zone: &str| {
        json!([
            "cronjob1",
            "0/5 * * * ?",
            time_zone,
            "False",
            0,
            "0s",
            "0s",
            "fake-job-container1,fake-job-container2",
            "fake-job-image1,fake-job-image2",
            "a=b"
        ])
    };
    check(
        "batch",
        "cronjobs",
        &[
            // Upstream's narrow and wide cases of cronjob1.
            (templated(Value::Null), templated_row("<none>")),
            (templated(json!("LOCAL")), templated_row("LOCAL")),
            (
                json!({"metadata": {"name": "cronjob2", "creationTimestamp": ago(5 * MINUTE)},
                    "spec": {"schedule": "0/5 * * * ?", "suspend": false},
                    "status": {"lastScheduleTime": ago(30)}}),
                json!([
                    "cronjob2",
                    "0/5 * * * ?",
                    "<none>",
                    "False",
                    0,
                    "30s",
                    "5m",
                    "",
                    "",
                    "<none>"
                ]),
            ),
            (
                json!({"metadata": {"name": "cronjob3", "creationTimestamp": ago(5 * MINUTE)},
                    "spec": {"schedule": "0/5 * * * ?", "suspend": false}, "status": {}}),
                json!([
                    "cronjob3",
                    "0/5 * * * ?",
                    "<none>",
                    "False",
                    0,
                    "<none>",
                    "5m",
                    "",
                    "",
                    "<none>"
                ]),
            ),
        ],
    );
}

#[test]
fn cron_job_lists_print_a_row_per_cron_job() {
    let template = json!({"spec": {"completions": 2, "selector": {"matchLabels": {"a": "b"}}}});
    check(
        "batch",
        "cronjobs",
        &[
            (
                json!({"metadata": {"name": "cronjob1", "creationTimestamp": ahead(1)},
                    "spec": {"schedule": "0/5 * * * ?", "timeZone": "LOCAL", "suspend": false,
                        "jobTemplate": template},
                    "status": {"lastScheduleTime": ahead(1)}}),
                json!([
                    "cronjob1",
                    "0/5 * * * ?",
                    "LOCAL",
                    "False",
                    0,
                    "0s",
                    "0s",
                    "",
                    "",
                    "a=b"
                ]),
            ),
            (
                json!({"metadata": {"name": "cronjob2", "creationTimestamp": ahead(1)},
                    "spec": {"schedule": "4/5 1 1 1 ?", "suspend": false,
                        "jobTemplate": template},
                    "status": {"lastScheduleTime": ago(20 * MINUTE)}}),
                json!([
                    "cronjob2",
                    "4/5 1 1 1 ?",
                    "<none>",
                    "False",
                    0,
                    "20m",
                    "0s",
                    "",
                    "",
                    "a=b"
                ]),
            ),
        ],
    );
}

// --- autoscaling and policy ----------------------------------------------------------------

/// An HPA of upstream's cases: `some-hpa` scaling `some-rc` up to 10, 4 replicas now.
fn hpa(min: Option<i64>, metrics: Value, current: Value) -> Value {
    json!({"metadata": {"name": "some-hpa"},
        "spec": {"scaleTargetRef": {"name": "some-rc", "kind": "ReplicationController"},
            "minReplicas": min, "maxReplicas": 10, "metrics": metrics},
        "status": {"currentReplicas": 4, "desiredReplicas": 5, "currentMetrics": current}})
}

fn hpa_row(targets: &str, min: &str) -> Value {
    json!([
        "some-hpa",
        "ReplicationController/some-rc",
        targets,
        min,
        10,
        4,
        "<unknown>"
    ])
}

#[test]
fn hpas_print_each_kind_of_metric_against_its_target() {
    let selector = json!({"matchLabels": {"label": "value"}});
    let external = |name: &str, target: Value| {
        json!([{"type": "External", "external": {
            "metric": {"name": name, "selector": selector}, "target": target}}])
    };
    let external_now = |metric: Value, current: Value| json!([{"type": "External", "external": {"metric": metric, "current": current}}]);
    let average_100m = json!({"type": "AverageValue", "averageValue": "100m"});
    let value_100m = json!({"type": "Value", "value": "100m"});
    let utilization_80 = json!({"type": "Utilization", "averageUtilization": 80});
    let pods = json!([{"type": "Pods", "pods": {"metric": {"name": "some-pods-metric"},
        "target": average_100m}}]);
    let pods_now = json!([{"type": "Pods", "pods": {"metric": {"name": "some-pods-metric"},
        "current": {"averageValue": "50m"}}}]);
    let described = json!({"name": "some-service", "kind": "Service"});
    let object = json!([{"type": "Object", "object": {"describedObject": described,
        "metric": {"name": "some-service-metric"}, "target": value_100m}}]);
    let object_now = json!([{"type": "Object", "object": {"describedObject": described,
        "metric": {"name": "some-service-metric"}, "current": {"value": "50m"}}}]);
    let resource = |target: &Value| json!([{"type": "Resource", "resource": {"name": "cpu", "target": target}}]);
    let resource_now = |current: Value| json!([{"type": "Resource", "resource": {"name": "cpu", "current": current}}]);
    let container = |container: Option<&str>, target: &Value| {
        json!([{"type": "ContainerResource", "containerResource": {"name": "cpu",
            "container": container, "target": target}}])
    };
    let container_now = |current: Value| {
        json!([{"type": "ContainerResource", "containerResource": {"name": "cpu",
            "container": "application", "current": current}}])
    };
    let utilization_now = json!({"averageUtilization": 50, "averageValue": "40m"});
    let none = Value::Null;
    check(
        "autoscaling",
        "horizontalpodautoscalers",
        &[
            (
                hpa(None, none.clone(), none.clone()),
                hpa_row("<none>", "<unset>"),
            ),
            (
                hpa(
                    Some(2),
                    external("some-external-metric", average_100m.clone()),
                    none.clone(),
                ),
                hpa_row("<unknown>/100m (avg)", "2"),
            ),
            (
                hpa(
                    Some(2),
                    external("some-external-metric", average_100m.clone()),
                    external_now(
                        json!({"name": "some-external-metric", "selector": selector}),
                        json!({"averageValue": "50m"}),
                    ),
                ),
                hpa_row("50m/100m (avg)", "2"),
            ),
            (
                hpa(
                    Some(2),
                    external("some-service-metric", value_100m.clone()),
                    none.clone(),
                ),
                hpa_row("<unknown>/100m", "2"),
            ),
            (
                hpa(
                    Some(2),
                    external("some-external-metric", value_100m),
                    external_now(
                        json!({"name": "some-external-metric"}),
                        json!({"value": "50m"}),
                    ),
                ),
                hpa_row("50m/100m", "2"),
            ),
            (
                hpa(Some(2), pods.clone(), none.clone()),
                hpa_row("<unknown>/100m", "2"),
            ),
            (
                hpa(Some(2), pods.clone(), pods_now.clone()),
                hpa_row("50m/100m", "2"),
            ),
            (
                hpa(Some(2), object.clone(), none.clone()),
                hpa_row("<unknown>/100m", "2"),
            ),
            (hpa(Some(2), object, object_now), hpa_row("50m/100m", "2")),
            (
                hpa(Some(2), resource(&average_100m), none.clone()),
                hpa_row("cpu: <unknown>/100m", "2"),
            ),
            (
                hpa(
                    Some(2),
                    resource(&average_100m),
                    resource_now(json!({"averageValue": "50m"})),
                ),
                hpa_row("cpu: 50m/100m", "2"),
            ),
            (
                hpa(Some(2), resource(&utilization_80), none.clone()),
                hpa_row("cpu: <unknown>/80%", "2"),
            ),
            (
                hpa(
                    Some(2),
                    resource(&utilization_80),
                    resource_now(utilization_now.clone()),
                ),
                hpa_row("cpu: 50%/80%", "2"),
            ),
            (
                hpa(
                    Some(2),
                    container(Some("application"), &average_100m),
                    none.clone(),
                ),
                hpa_row("cpu: <unknown>/100m", "2"),
            ),
            (
                hpa(
                    Some(2),
                    container(None, &average_100m),
                    container_now(json!({"averageValue": "50m"})),
                ),
                hpa_row("cpu: 50m/100m", "2"),
            ),
            (
                hpa(
                    Some(2),
                    container(Some("application"), &utilization_80),
                    none,
                ),
                hpa_row("cpu: <unknown>/80%", "2"),
            ),
            (
                hpa(
                    Some(2),
                    container(None, &utilization_80),
                    container_now(utilization_now.clone()),
                ),
                hpa_row("cpu: 50%/80%", "2"),
            ),
            (
                // Three metrics: the first two, then how many more.
                hpa(
                    Some(2),
                    json!([pods[0], resource(&utilization_80)[0],
                        {"type": "Pods", "pods": {"metric": {"name": "other-pods-metric"},
                            "target": {"type": "AverageValue", "averageValue": "400m"}}}]),
                    json!([pods_now[0], resource_now(utilization_now)[0]]),
                ),
                hpa_row("50m/100m, cpu: 50%/80% + 1 more...", "2"),
            ),
        ],
    );
}

#[test]
fn pod_disruption_budgets_print_min_available_max_unavailable_and_allowed() {
    let pdb = |namespace: &str, name: &str, spec: Value, allowed: i64| {
        json!({"metadata": {"namespace": namespace, "name": name, "creationTimestamp": ahead(1)},
            "spec": spec, "status": {"disruptionsAllowed": allowed}})
    };
    check(
        "policy",
        "poddisruptionbudgets",
        &[
            (
                pdb("ns1", "pdb1", json!({"minAvailable": 22}), 5),
                json!(["pdb1", "22", "N/A", 5, "0s"]),
            ),
            (
                pdb("ns2", "pdb2", json!({"maxUnavailable": 11}), 5),
                json!(["pdb2", "N/A", "11", 5, "0s"]),
            ),
        ],
    );
}

// --- networking ----------------------------------------------------------------------------

#[test]
fn network_policies_print_their_pod_selector() {
    let meta = |name: &str| json!({"name": name, "creationTimestamp": ahead(1)});
    check(
        "networking.k8s.io",
        "networkpolicies",
        &[
            (
                json!({"metadata": meta("policy1"), "spec": {"podSelector": {}}}),
                json!(["policy1", "<none>", "0s"]),
            ),
            (
                json!({"metadata": meta("policy2"),
                    "spec": {"podSelector": {"matchLabels": {"foo": "bar"}}}}),
                json!(["policy2", "foo=bar", "0s"]),
            ),
        ],
    );
}

#[test]
fn ip_addresses_print_their_parent_reference() {
    let (names, cells) = row_for(
        "networking.k8s.io",
        "ipaddresses",
        &json!({"metadata": {"name": "192.168.2.2", "creationTimestamp": ago(TEN_YEARS)},
            "spec": {"parentRef": {"group": "mygroup", "resource": "myresource",
                "namespace": "mynamespace", "name": "myname"}}}),
        now(),
    );
    // Upstream declares two columns and prints a third cell, the age, past them.
    assert_eq!(names, ["Name", "ParentRef"]);
    assert_eq!(
        Value::Array(cells),
        json!([
            "192.168.2.2",
            "myresource.mygroup/mynamespace/myname",
            "10y"
        ])
    );
}

#[test]
fn ip_address_lists_print_a_row_per_address() {
    let ip = |name: &str, suffix: &str| {
        json!({"metadata": {"name": name},
            "spec": {"parentRef": {"group": format!("mygroup{suffix}"),
                "resource": format!("myresource{suffix}"),
                "namespace": format!("mynamespace{suffix}"), "name": format!("myname{suffix}")}}})
    };
    check(
        "networking.k8s.io",
        "ipaddresses",
        &[
            (
                ip("192.168.2.2", ""),
                json!([
                    "192.168.2.2",
                    "myresource.mygroup/mynamespace/myname",
                    "<unknown>"
                ]),
            ),
            (
                ip("2001:db8::2", "2"),
                json!([
                    "2001:db8::2",
                    "myresource2.mygroup2/mynamespace2/myname2",
                    "<unknown>"
                ]),
            ),
        ],
    );
}

#[test]
fn service_cidrs_print_their_cidrs() {
    let cidr =
        |name: &str, cidrs: Value| json!({"metadata": {"name": name}, "spec": {"cidrs": cidrs}});
    check(
        "networking.k8s.io",
        "servicecidrs",
        &[
            (
                cidr("test1", json!(["10.1.0.0/16"])),
                json!(["test1", "10.1.0.0/16", "<unknown>"]),
            ),
            (
                cidr("test5", json!(["fd00:1:1::/64"])),
                json!(["test5", "fd00:1:1::/64", "<unknown>"]),
            ),
            (
                cidr("test9", json!(["10.1.0.0/16", "fd00:1:1::/64"])),
                json!(["test9", "10.1.0.0/16,fd00:1:1::/64", "<unknown>"]),
            ),
        ],
    );
}

#[test]
fn endpoints_print_up_to_three_addresses_with_ports() {
    check(
        "",
        "endpoints",
        &[
            (
                json!({"metadata": {"name": "endpoint1", "creationTimestamp": ahead(1)}}),
                json!(["endpoint1", "<none>", "0s"]),
            ),
            (
                json!({"metadata": {"name": "endpoint3", "creationTimestamp": ago(5 * MINUTE)},
                    "subsets": [{"addresses": [{"ip": "1.2.3.4"}, {"ip": "5.6.7.8"}]}]}),
                json!(["endpoint3", "1.2.3.4,5.6.7.8", "5m"]),
            ),
            (
                json!({"metadata": {"name": "endpoint2", "creationTimestamp": ahead(1)},
                    "subsets": [{"addresses": [{"ip": "1.2.3.4"}, {"ip": "5.6.7.8"}],
                        "ports": [{"port": 8001, "protocol": "tcp"}]}]}),
                json!(["endpoint2", "1.2.3.4:8001,5.6.7.8:8001", "0s"]),
            ),
            (
                json!({"metadata": {"name": "endpoint2", "creationTimestamp": ahead(1)},
                    "subsets": [{"addresses": [{"ip": "1.2.3.4"}, {"ip": "5.6.7.8"},
                            {"ip": "9.8.7.6"}, {"ip": "6.6.6.6"}],
                        "ports": [{"port": 8001, "protocol": "tcp"}]}]}),
                json!([
                    "endpoint2",
                    "1.2.3.4:8001,5.6.7.8:8001,9.8.7.6:8001 + 1 more...",
                    "0s"
                ]),
            ),
        ],
    );
}

#[test]
fn endpoint_slices_print_address_type_ports_and_endpoints() {
    let port = |name: &str, number: i64| json!({"name": name, "port": number, "protocol": "TCP"});
    let two_endpoints = json!([{"addresses": ["10.1.2.3", "2001:db8::1234:5678"]},
        {"addresses": ["10.2.3.4", "2001:db8::2345:6789"]}]);
    check(
        "discovery.k8s.io",
        "endpointslices",
        &[
            (
                json!({"metadata": {"name": "abcslice.123", "creationTimestamp": ahead(1)},
                    "addressType": "IPv4", "ports": [port("http", 80)],
                    "endpoints": [{"addresses": ["10.1.2.3", "2001:db8::1234:5678"]}]}),
                json!([
                    "abcslice.123",
                    "IPv4",
                    "80",
                    "10.1.2.3,2001:db8::1234:5678",
                    "0s"
                ]),
            ),
            (
                json!({"metadata": {"name": "longerslicename.123",
                        "creationTimestamp": ago(5 * MINUTE)},
                    "addressType": "IPv6", "ports": [port("http", 80), port("https", 443)],
                    "endpoints": two_endpoints}),
                json!([
                    "longerslicename.123",
                    "IPv6",
                    "80,443",
                    "10.1.2.3,2001:db8::1234:5678,10.2.3.4 + 1 more...",
                    "5m"
                ]),
            ),
            (
                json!({"metadata": {"name": "multiportslice.123",
                        "creationTimestamp": ago(5 * MINUTE)},
                    "addressType": "IPv4",
                    "ports": [port("http", 80), port("https", 443), port("extra1", 3000),
                        port("extra2", 3001)],
                    "endpoints": two_endpoints}),
                json!([
                    "multiportslice.123",
                    "IPv4",
                    "80,443,3000 + 1 more...",
                    "10.1.2.3,2001:db8::1234:5678,10.2.3.4 + 1 more...",
                    "5m"
                ]),
            ),
        ],
    );
}

// --- volumes and storage -------------------------------------------------------------------

#[test]
fn persistent_volumes_print_capacity_modes_claim_and_classes() {
    let pv = |name: &str,
              class: Option<&str>,
              attributes: Option<&str>,
              mode: &str,
              size: &str,
              phase: &str| {
        json!({"metadata": {"name": name},
            "spec": {"claimRef": {"name": "test", "namespace": "default"},
                "storageClassName": class, "volumeAttributesClassName": attributes,
                "accessModes": [mode], "capacity": {"storage": size}},
            "status": {"phase": phase}})
    };
    let row = |name: &str, size: &str, mode: &str, phase: &str, class: &str, attributes: &str| {
        json!([
            name,
            size,
            mode,
            "",
            phase,
            "default/test",
            class,
            attributes,
            "",
            "<unknown>",
            "<unset>"
        ])
    };
    check(
        "",
        "persistentvolumes",
        &[
            (
                pv("test1", None, None, "ReadOnlyMany", "4Gi", "Bound"),
                row("test1", "4Gi", "ROX", "Bound", "", "<unset>"),
            ),
            (
                pv("test2", None, None, "ReadOnlyMany", "4Gi", "Failed"),
                row("test2", "4Gi", "ROX", "Failed", "", "<unset>"),
            ),
            (
                pv("test3", None, None, "ReadWriteMany", "10Gi", "Pending"),
                row("test3", "10Gi", "RWX", "Pending", "", "<unset>"),
            ),
            (
                pv(
                    "test4",
                    Some("my-scn"),
                    None,
                    "ReadWriteOnce",
                    "10Gi",
                    "Pending",
                ),
                row("test4", "10Gi", "RWO", "Pending", "my-scn", "<unset>"),
            ),
            (
                pv(
                    "test4",
                    Some("my-scn"),
                    Some("my-vacn"),
                    "ReadWriteOnce",
                    "10Gi",
                    "Pending",
                ),
                row("test4", "10Gi", "RWO", "Pending", "my-scn", "my-vacn"),
            ),
            (
                pv(
                    "test5",
                    Some("my-scn"),
                    None,
                    "ReadWriteOnce",
                    "10Gi",
                    "Available",
                ),
                row("test5", "10Gi", "RWO", "Available", "my-scn", "<unset>"),
            ),
            (
                pv(
                    "test6",
                    Some("my-scn"),
                    None,
                    "ReadWriteOnce",
                    "10Gi",
                    "Released",
                ),
                row("test6", "10Gi", "RWO", "Released", "my-scn", "<unset>"),
            ),
        ],
    );
}

#[test]
fn persistent_volume_claims_print_volume_capacity_modes_and_classes() {
    let pvc = |name: &str, spec: Value, phase: &str, mode: &str, size: &str| {
        json!({"metadata": {"name": name}, "spec": spec,
            "status": {"phase": phase, "accessModes": [mode], "capacity": {"storage": size}}})
    };
    check(
        "",
        "persistentvolumeclaims",
        &[
            (
                pvc(
                    "test1",
                    json!({"volumeName": "my-volume", "volumeMode": "Filesystem"}),
                    "Bound",
                    "ReadOnlyMany",
                    "4Gi",
                ),
                json!([
                    "test1",
                    "Bound",
                    "my-volume",
                    "4Gi",
                    "ROX",
                    "",
                    "<unset>",
                    "<unknown>",
                    "Filesystem"
                ]),
            ),
            (
                pvc(
                    "test2",
                    json!({"volumeMode": "Filesystem"}),
                    "Lost",
                    "ReadOnlyMany",
                    "4Gi",
                ),
                json!([
                    "test2",
                    "Lost",
                    "",
                    "",
                    "",
                    "",
                    "<unset>",
                    "<unknown>",
                    "Filesystem"
                ]),
            ),
            (
                pvc(
                    "test3",
                    json!({"volumeName": "my-volume", "volumeMode": "Filesystem"}),
                    "Pending",
                    "ReadWriteMany",
                    "10Gi",
                ),
                json!([
                    "test3",
                    "Pending",
                    "my-volume",
                    "10Gi",
                    "RWX",
                    "",
                    "<unset>",
                    "<unknown>",
                    "Filesystem"
                ]),
            ),
            (
                pvc(
                    "test4",
                    json!({"volumeName": "my-volume", "storageClassName": "my-scn",
                        "volumeMode": "Filesystem"}),
                    "Pending",
                    "ReadWriteOnce",
                    "10Gi",
                ),
                json!([
                    "test4",
                    "Pending",
                    "my-volume",
                    "10Gi",
                    "RWO",
                    "my-scn",
                    "<unset>",
                    "<unknown>",
                    "Filesystem"
                ]),
            ),
            (
                pvc(
                    "test5",
                    json!({"volumeName": "my-volume", "storageClassName": "my-scn"}),
                    "Pending",
                    "ReadWriteOnce",
                    "10Gi",
                ),
                json!([
                    "test5",
                    "Pending",
                    "my-volume",
                    "10Gi",
                    "RWO",
                    "my-scn",
                    "<unset>",
                    "<unknown>",
                    "<unset>"
                ]),
            ),
            (
                pvc(
                    "test5",
                    json!({"volumeName": "my-volume", "storageClassName": "my-scn",
                        "volumeAttributesClassName": "my-vacn"}),
                    "Pending",
                    "ReadWriteOnce",
                    "10Gi",
                ),
                json!([
                    "test5",
                    "Pending",
                    "my-volume",
                    "10Gi",
                    "RWO",
                    "my-scn",
                    "my-vacn",
                    "<unknown>",
                    "<unset>"
                ]),
            ),
        ],
    );
}

#[test]
fn storage_classes_print_provisioner_policies_and_expansion() {
    let class = |name: &str, created: String, provisioner: &str, extra: Value| {
        let mut class = json!({"metadata": {"name": name, "creationTimestamp": created},
            "provisioner": provisioner});
        if let (Some(class), Some(extra)) = (class.as_object_mut(), extra.as_object()) {
            class.extend(extra.clone());
        }
        class
    };
    let row =
        |name: &str, provisioner: &str, policy: &str, binding: &str, expand: bool, age: &str| {
            json!([name, provisioner, policy, binding, expand, age])
        };
    check(
        "storage.k8s.io",
        "storageclasses",
        &[
            (
                class("sc1", ahead(1), "kubernetes.io/glusterfs", json!({})),
                row(
                    "sc1",
                    "kubernetes.io/glusterfs",
                    "Delete",
                    "Immediate",
                    false,
                    "0s",
                ),
            ),
            (
                class("sc2", ago(5 * MINUTE), "kubernetes.io/nfs", json!({})),
                row(
                    "sc2",
                    "kubernetes.io/nfs",
                    "Delete",
                    "Immediate",
                    false,
                    "5m",
                ),
            ),
            (
                class(
                    "sc3",
                    ago(5 * MINUTE),
                    "kubernetes.io/nfs",
                    json!({"reclaimPolicy": "Delete"}),
                ),
                row(
                    "sc3",
                    "kubernetes.io/nfs",
                    "Delete",
                    "Immediate",
                    false,
                    "5m",
                ),
            ),
            (
                class(
                    "sc4",
                    ago(5 * MINUTE),
                    "kubernetes.io/nfs",
                    json!({"reclaimPolicy": "Retain", "volumeBindingMode": "Immediate"}),
                ),
                row(
                    "sc4",
                    "kubernetes.io/nfs",
                    "Retain",
                    "Immediate",
                    false,
                    "5m",
                ),
            ),
            (
                class(
                    "sc5",
                    ago(5 * MINUTE),
                    "kubernetes.io/nfs",
                    json!({"reclaimPolicy": "Retain",
                        "volumeBindingMode": "WaitForFirstConsumer"}),
                ),
                row(
                    "sc5",
                    "kubernetes.io/nfs",
                    "Retain",
                    "WaitForFirstConsumer",
                    false,
                    "5m",
                ),
            ),
            (
                class(
                    "sc6",
                    ago(5 * MINUTE),
                    "kubernetes.io/nfs",
                    json!({"reclaimPolicy": "Retain", "allowVolumeExpansion": true,
                        "volumeBindingMode": "WaitForFirstConsumer"}),
                ),
                row(
                    "sc6",
                    "kubernetes.io/nfs",
                    "Retain",
                    "WaitForFirstConsumer",
                    true,
                    "5m",
                ),
            ),
        ],
    );
}

#[test]
fn volume_attributes_classes_print_their_driver() {
    check(
        "storage.k8s.io",
        "volumeattributesclasses",
        &[
            (
                json!({"metadata": {"name": "vac1", "creationTimestamp": ahead(1)},
                    "driverName": "fake"}),
                json!(["vac1", "fake", "0s"]),
            ),
            (
                json!({"metadata": {"name": "vac2", "creationTimestamp": ago(5 * MINUTE)},
                    "driverName": "fake",
                    "parameters": {"iops": "500", "throughput": "50MiB/s"}}),
                json!(["vac2", "fake", "5m"]),
            ),
        ],
    );
}

// --- coordination, scheduling, node, certificates, admission -------------------------------

#[test]
fn leases_print_their_holder() {
    check(
        "coordination.k8s.io",
        "leases",
        &[
            (
                json!({"metadata": {"name": "lease1", "creationTimestamp": ahead(1)},
                    "spec": {"holderIdentity": "holder1"}}),
                json!(["lease1", "holder1", "0s"]),
            ),
            (
                json!({"metadata": {"name": "lease2", "creationTimestamp": ago(5 * MINUTE)},
                    "spec": {"holderIdentity": "holder2"}}),
                json!(["lease2", "holder2", "5m"]),
            ),
        ],
    );
}

#[test]
fn priority_classes_print_value_default_and_preemption() {
    let pc = |name: &str, created: String, value: i64, global: bool, policy: Option<&str>| {
        json!({"metadata": {"name": name, "creationTimestamp": created}, "value": value,
            "globalDefault": global, "preemptionPolicy": policy})
    };
    check(
        "scheduling.k8s.io",
        "priorityclasses",
        &[
            (
                pc("pc1", ahead(1), 1, false, Some("Never")),
                json!(["pc1", 1, false, "0s", "Never"]),
            ),
            (
                // Upstream's narrow and wide cases of pc2.
                pc(
                    "pc2",
                    ago(5 * MINUTE),
                    1_000_000_000,
                    true,
                    Some("PreemptLowerPriority"),
                ),
                json!(["pc2", 1_000_000_000, true, "5m", "PreemptLowerPriority"]),
            ),
            (
                pc("pc2", ago(5 * MINUTE), 1_000_000_000, true, None),
                json!(["pc2", 1_000_000_000, true, "5m", ""]),
            ),
        ],
    );
}

#[test]
fn runtime_classes_print_their_handler() {
    check(
        "node.k8s.io",
        "runtimeclasses",
        &[
            (
                json!({"metadata": {"name": "rc1", "creationTimestamp": ahead(1)},
                    "handler": "h1"}),
                json!(["rc1", "h1", "0s"]),
            ),
            (
                json!({"metadata": {"name": "rc2", "creationTimestamp": ago(5 * MINUTE)},
                    "handler": "h2"}),
                json!(["rc2", "h2", "5m"]),
            ),
        ],
    );
}

/// Upstream's cases for both kinds of binding (the same cases for each).
fn binding_cases() -> Vec<(Value, Value)> {
    vec![
        (
            json!({"metadata": {"name": "binding1", "creationTimestamp": ahead(1)},
                    "subjects": [{"kind": "User", "name": "system:kube-controller-manager"}],
                    "roleRef": {"kind": "Role",
                        "name": "extension-apiserver-authentication-reader"}}),
            json!([
                "binding1",
                "Role/extension-apiserver-authentication-reader",
                "0s",
                "system:kube-controller-manager",
                "",
                ""
            ]),
        ),
        (
            json!({"metadata": {"name": "binding2", "creationTimestamp": ahead(1)},
                    "subjects": [{"kind": "User", "name": "user-name"},
                        {"kind": "Group", "name": "group-name"},
                        {"kind": "ServiceAccount", "name": "service-account-name",
                            "namespace": "service-account-namespace"}],
                    "roleRef": {"kind": "Role", "name": "role-name"}}),
            json!([
                "binding2",
                "Role/role-name",
                "0s",
                "user-name",
                "group-name",
                "service-account-namespace/service-account-name"
            ]),
        ),
    ]
}

#[test]
fn role_bindings_print_role_and_subjects() {
    check(
        "rbac.authorization.k8s.io",
        "rolebindings",
        &binding_cases(),
    );
}

#[test]
fn cluster_role_bindings_print_role_and_subjects() {
    check(
        "rbac.authorization.k8s.io",
        "clusterrolebindings",
        &binding_cases(),
    );
}

#[test]
fn certificate_signing_requests_print_signer_requestor_duration_and_condition() {
    let csr = |name: &str, spec: Value, status: Value| {
        json!({"metadata": {"name": name, "creationTimestamp": ahead(1)}, "spec": spec,
            "status": status})
    };
    let approved = json!({"conditions": [{"type": "Approved"}]});
    check(
        "certificates.k8s.io",
        "certificatesigningrequests",
        &[
            (
                csr("csr1", json!({}), json!({})),
                json!(["csr1", "0s", "<none>", "", "<none>", "Pending"]),
            ),
            (
                csr(
                    "csr2",
                    json!({"username": "CSR Requestor"}),
                    approved.clone(),
                ),
                json!([
                    "csr2",
                    "0s",
                    "<none>",
                    "CSR Requestor",
                    "<none>",
                    "Approved"
                ]),
            ),
            (
                csr(
                    "csr2",
                    json!({"username": "CSR Requestor", "signerName": "example.com/test-signer"}),
                    approved.clone(),
                ),
                json!([
                    "csr2",
                    "0s",
                    "example.com/test-signer",
                    "CSR Requestor",
                    "<none>",
                    "Approved"
                ]),
            ),
            (
                // A week and an hour.
                csr(
                    "csr2",
                    json!({"username": "CSR Requestor", "signerName": "example.com/test-signer",
                        "expirationSeconds": 7 * DAY + 3600}),
                    approved,
                ),
                json!([
                    "csr2",
                    "0s",
                    "example.com/test-signer",
                    "CSR Requestor",
                    "7d1h",
                    "Approved"
                ]),
            ),
            (
                csr(
                    "csr2",
                    json!({"username": "CSR Requestor"}),
                    json!({"conditions": [{"type": "Approved"}], "certificate": "Y2VydCBkYXRh"}),
                ),
                json!([
                    "csr2",
                    "0s",
                    "<none>",
                    "CSR Requestor",
                    "<none>",
                    "Approved,Issued"
                ]),
            ),
            (
                csr(
                    "csr3",
                    json!({"username": "CSR Requestor"}),
                    json!({"conditions": [{"type": "Denied"}]}),
                ),
                json!(["csr3", "0s", "<none>", "CSR Requestor", "<none>", "Denied"]),
            ),
        ],
    );
}

#[test]
fn cluster_trust_bundles_print_their_signer() {
    check(
        "certificates.k8s.io",
        "clustertrustbundles",
        &[(
            json!({"metadata": {"name": "test-cluster-trust-bundle"},
                "spec": {"signerName": "test-signer-name"}}),
            json!(["test-cluster-trust-bundle", "test-signer-name"]),
        )],
    );
}

#[test]
fn validating_admission_policy_bindings_print_policy_and_param_ref() {
    check(
        "admissionregistration.k8s.io",
        "validatingadmissionpolicybindings",
        &[(
            json!({"metadata": {"name": "config", "creationTimestamp": ago(5 * MINUTE)},
                "spec": {"policyName": "test-scale.example.com",
                    "paramRef": {"name": "test-scale-setting.example.com",
                        "parameterNotFoundAction": "Deny"}}}),
            json!([
                "config",
                "test-scale.example.com",
                "*/test-scale-setting.example.com",
                "5m"
            ]),
        )],
    );
}

// --- core leftovers: quotas and component statuses ------------------------------------------

#[test]
fn resource_quotas_print_requests_and_limits_used_of_hard() {
    check(
        "",
        "resourcequotas",
        &[(
            json!({"metadata": {"name": "test-resourcequota", "creationTimestamp": ago(5 * MINUTE)},
                "spec": {},
                "status": {
                    "used": {"cpu": "1", "memory": "1Gi", "pods": "1", "services": "1",
                        "replicationcontrollers": "1", "resourcequotas": "1",
                        "limits.cpu": "2", "limits.memory": "2Gi"},
                    "hard": {"cpu": "100", "memory": "4Gi", "pods": "10", "services": "10",
                        "replicationcontrollers": "10", "resourcequotas": "1",
                        "limits.cpu": "200", "limits.memory": "8Gi"}}}),
            json!([
                "test-resourcequota",
                "cpu: 1/100, memory: 1Gi/4Gi, pods: 1/10, replicationcontrollers: 1/10, resourcequotas: 1/1, services: 1/10",
                "limits.cpu: 2/200, limits.memory: 2Gi/8Gi",
                "5m"
            ]),
        )],
    );
}

#[test]
fn component_statuses_print_their_healthy_condition() {
    let healthy = |status: &str| {
        json!([{"type": "Healthy", "status": status, "message": "test message",
            "error": "test error"}])
    };
    check(
        "",
        "componentstatuses",
        &[
            (
                json!({"metadata": {"name": "cs1"}, "conditions": []}),
                json!(["cs1", "Unknown", "", ""]),
            ),
            (
                json!({"metadata": {"name": "cs2"}, "conditions": healthy("True")}),
                json!(["cs2", "Healthy", "test message", "test error"]),
            ),
            (
                json!({"metadata": {"name": "cs3"}, "conditions": healthy("False")}),
                json!(["cs3", "Unhealthy", "test message", "test error"]),
            ),
        ],
    );
}

// --- flow control --------------------------------------------------------------------------

#[test]
fn flow_schemas_print_priority_level_precedence_and_distinguisher() {
    // The rules the cases carry are left out: the printer never reads them.
    check(
        "flowcontrol.apiserver.k8s.io",
        "flowschemas",
        &[
            (
                json!({"metadata": {"name": "all-matcher", "creationTimestamp": ahead(1)},
                    "spec": {"priorityLevelConfiguration": {"name": "allee"},
                        "matchingPrecedence": i32::MAX,
                        "distinguisherMethod": {"type": "ByUser"}}}),
                json!(["all-matcher", "allee", i32::MAX, "ByUser", "0s", "?"]),
            ),
            (
                json!({"metadata": {"name": "some-matcher", "creationTimestamp": ago(5 * MINUTE)},
                    "spec": {"priorityLevelConfiguration": {"name": "allee"},
                        "matchingPrecedence": 0,
                        "distinguisherMethod": {"type": "ByNamespace"}},
                    "status": {"conditions": [{"type": "Dangling", "status": "True",
                        "lastTransitionTime": ago(3600)}]}}),
                json!(["some-matcher", "allee", 0, "ByNamespace", "5m", "True"]),
            ),
            (
                json!({"metadata": {"name": "exempt", "creationTimestamp": ago(5 * MINUTE)},
                    "spec": {"priorityLevelConfiguration": {"name": "allee"},
                        "matchingPrecedence": 0}}),
                json!(["exempt", "allee", 0, "<none>", "5m", "?"]),
            ),
        ],
    );
}

#[test]
fn priority_levels_print_shares_and_queuing() {
    let meta = |name: &str| json!({"name": name, "creationTimestamp": ahead(1)});
    check(
        "flowcontrol.apiserver.k8s.io",
        "prioritylevelconfigurations",
        &[
            (
                json!({"metadata": meta("unlimited"), "spec": {"type": "Exempt"}}),
                json!([
                    "unlimited",
                    "Exempt",
                    "<none>",
                    "<none>",
                    "<none>",
                    "<none>",
                    "0s"
                ]),
            ),
            (
                json!({"metadata": meta("unqueued"), "spec": {"type": "Limited",
                    "limited": {"nominalConcurrencyShares": 47,
                        "limitResponse": {"type": "Reject"}}}}),
                json!([
                    "unqueued", "Limited", 47, "<none>", "<none>", "<none>", "0s"
                ]),
            ),
            (
                json!({"metadata": meta("queued"), "spec": {"type": "Limited",
                    "limited": {"nominalConcurrencyShares": 42, "limitResponse": {
                        "type": "Queue",
                        "queuing": {"queues": 8, "handSize": 3, "queueLengthLimit": 4}}}}}),
                json!(["queued", "Limited", 42, 8, 3, 4, "0s"]),
            ),
        ],
    );
}

// --- dynamic resource allocation -----------------------------------------------------------

#[test]
fn device_classes_print_name_and_age() {
    check(
        "resource.k8s.io",
        "deviceclasses",
        &[
            (
                json!({"metadata": {"name": "test-deviceclass",
                    "creationTimestamp": ago(5 * MINUTE)}}),
                json!(["test-deviceclass", "5m"]),
            ),
            (
                json!({"metadata": {"name": "test-deviceclass"}}),
                json!(["test-deviceclass", "<unknown>"]),
            ),
        ],
    );
}

#[test]
fn resource_claims_print_their_state() {
    let spec = json!({"devices": {"requests": [{"name": "deviceRequest", "exactly": {
        "deviceClassName": "deviceClass", "allocationMode": "ExactCount", "count": 1}}]}});
    let claim =
        |meta: Value, status: Value| json!({"metadata": meta, "spec": spec, "status": status});
    let named = |extra: Value| {
        let mut meta = json!({"name": "test-resourceclaim"});
        if let (Some(meta), Some(extra)) = (meta.as_object_mut(), extra.as_object()) {
            meta.extend(extra.clone());
        }
        meta
    };
    check(
        "resource.k8s.io",
        "resourceclaims",
        &[
            (
                claim(
                    named(json!({"creationTimestamp": ago(5 * MINUTE)})),
                    json!({}),
                ),
                json!(["test-resourceclaim", "pending", "5m"]),
            ),
            (
                claim(named(json!({})), json!({})),
                json!(["test-resourceclaim", "pending", "<unknown>"]),
            ),
            (
                claim(
                    named(json!({"creationTimestamp": ago(5 * MINUTE)})),
                    json!({"allocation": {}, "reservedFor": [
                        {"resource": "pods", "name": "pod-test", "uid": "pod-test"}]}),
                ),
                json!(["test-resourceclaim", "allocated,reserved", "5m"]),
            ),
            (
                claim(
                    named(json!({"creationTimestamp": ago(5 * MINUTE),
                        "deletionTimestamp": ago(0)})),
                    json!({}),
                ),
                json!(["test-resourceclaim", "deleted", "5m"]),
            ),
        ],
    );
}

#[test]
fn resource_claim_templates_print_name_and_age() {
    let spec = json!({"spec": {"devices": {"requests": [{"name": "test-deviceRequest",
        "exactly": {"deviceClassName": "deviceClassName", "allocationMode": "ExactCount",
            "count": 1}}]}}});
    check(
        "resource.k8s.io",
        "resourceclaimtemplates",
        &[
            (
                json!({"metadata": {"name": "test-resourceclaimtemplate",
                    "creationTimestamp": ago(5 * MINUTE)}, "spec": spec}),
                json!(["test-resourceclaimtemplate", "5m"]),
            ),
            (
                json!({"metadata": {"name": "test-resourceclaimtemplate"}, "spec": spec}),
                json!(["test-resourceclaimtemplate", "<unknown>"]),
            ),
        ],
    );
}

#[test]
fn resource_slices_print_node_driver_and_pool() {
    let spec = json!({"nodeName": "nodeName", "driver": "driverName",
        "pool": {"name": "poolName", "resourceSliceCount": 1}});
    check(
        "resource.k8s.io",
        "resourceslices",
        &[
            (
                json!({"metadata": {"name": "test-resourceslice",
                    "creationTimestamp": ago(5 * MINUTE)}, "spec": spec}),
                json!([
                    "test-resourceslice",
                    "nodeName",
                    "driverName",
                    "poolName",
                    "5m"
                ]),
            ),
            (
                json!({"metadata": {"name": "test-resourceslice"}, "spec": spec}),
                json!([
                    "test-resourceslice",
                    "nodeName",
                    "driverName",
                    "poolName",
                    "<unknown>"
                ]),
            ),
        ],
    );
}
