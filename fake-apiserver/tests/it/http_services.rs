//! HTTP front end: a Service's cluster IP and node ports are allocated as a cluster's API
//! server allocates them (single-stack IPv4, `10.96.0.0/12`, node ports 30000-32767), kept
//! when an update leaves them out, and refused when taken, out of range or changed.
#![cfg(feature = "http")]

use serde_json::{Value, json};

use crate::support::http::{namespaces, post, put, start};

const SERVICES: &str = "/api/v1/namespaces/a/services";

fn service(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec})
}

fn ports(list: Value) -> Value {
    json!({"selector": {"app": "web"}, "ports": list})
}

/// Whether `ip` is an address of `10.96.0.0/12` past its first 256 (upstream's dynamic band).
fn dynamic(ip: &str) -> bool {
    let ip: std::net::Ipv4Addr = ip.parse().unwrap();
    let n = u32::from(ip);
    (0x0A60_0000 + 257..0x0A70_0000 - 1).contains(&n)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn services_get_cluster_ips_and_node_ports_as_on_a_cluster() {
    let (server, http) = start().await;
    namespaces(&server, &["a"]);
    let created = post(
        &http,
        SERVICES,
        &service("web", ports(json!([{"port": 80}]))),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let spec = &created.body["spec"];
    let ip = spec["clusterIP"].as_str().unwrap().to_owned();
    assert!(dynamic(&ip), "{ip}");
    assert_eq!(spec["clusterIPs"], json!([ip]));
    assert_eq!(
        (&spec["ipFamilies"], &spec["ipFamilyPolicy"]),
        (&json!(["IPv4"]), &json!("SingleStack"))
    );
    assert_eq!(spec["ports"][0].get("nodePort"), None);

    // A NodePort Service: a node port per port; one named is kept if free.
    let node_ports = post(
        &http,
        SERVICES,
        &service(
            "edge",
            json!({"type": "NodePort", "selector": {"app": "web"},
                   "ports": [{"name": "http", "port": 80}, {"name": "admin", "port": 81, "nodePort": 30001}]}),
        ),
    )
    .await;
    assert_eq!(node_ports.status, 201, "{}", node_ports.body);
    let given = &node_ports.body["spec"]["ports"];
    let allocated = given[0]["nodePort"].as_i64().unwrap();
    assert!((30086..=32767).contains(&allocated), "{allocated}");
    assert_eq!(given[1]["nodePort"], 30001);
    // A LoadBalancer with a local traffic policy also gets a health check node port.
    let balancer = post(
        &http,
        SERVICES,
        &service(
            "lb",
            json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local",
                   "selector": {"app": "web"}, "ports": [{"port": 443}]}),
        ),
    )
    .await;
    assert_eq!(balancer.status, 201, "{}", balancer.body);
    let health = balancer.body["spec"]["healthCheckNodePort"]
        .as_i64()
        .unwrap();
    assert!((30000..=32767).contains(&health), "{health}");
    assert!(balancer.body["spec"]["ports"][0]["nodePort"].is_i64());

    // Headless: no address; without a selector its families are both (RequireDualStack).
    let headless = post(
        &http,
        SERVICES,
        &service(
            "peers",
            json!({"clusterIP": "None", "ports": [{"port": 7000}]}),
        ),
    )
    .await;
    let spec = &headless.body["spec"];
    assert_eq!(
        (
            &spec["clusterIPs"],
            &spec["ipFamilyPolicy"],
            &spec["ipFamilies"]
        ),
        (
            &json!(["None"]),
            &json!("RequireDualStack"),
            &json!(["IPv4", "IPv6"])
        )
    );
    let external = post(
        &http,
        SERVICES,
        &service(
            "ext",
            json!({"type": "ExternalName", "externalName": "example.com"}),
        ),
    )
    .await;
    assert_eq!(external.body["spec"].get("clusterIP"), None);

    // Taken, out of range, dual stack: upstream's 422s.
    for (name, spec, message) in [
        (
            "twin",
            json!({"clusterIP": ip, "ports": [{"port": 80}]}),
            format!(
                "Service \"twin\" is invalid: spec.clusterIPs: Invalid value: []string{{\"{ip}\"}}: \
                 failed to allocate IP {ip}: provided IP is already allocated"
            ),
        ),
        (
            "far",
            json!({"clusterIP": "192.168.0.10", "ports": [{"port": 80}]}),
            "Service \"far\" is invalid: spec.clusterIPs: Invalid value: []string{\"192.168.0.10\"}: \
             failed to allocate IP 192.168.0.10: the provided IP (192.168.0.10) is not in the valid \
             range. The range of valid IPs is 10.96.0.0/12"
                .into(),
        ),
        (
            "dual",
            json!({"ipFamilyPolicy": "RequireDualStack", "selector": {"app": "web"},
                   "ports": [{"port": 80}]}),
            "Service \"dual\" is invalid: spec.ipFamilyPolicy: Invalid value: \"RequireDualStack\": \
             this cluster is not configured for dual-stack services"
                .into(),
        ),
        (
            "clash",
            json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30001}]}),
            "Service \"clash\" is invalid: spec.ports[0].nodePort: Invalid value: 30001: provided \
             port is already allocated"
                .into(),
        ),
        (
            "low",
            json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 80}]}),
            "Service \"low\" is invalid: spec.ports[0].nodePort: Invalid value: 80: provided port \
             is not in the valid range. The range of valid ports is 30000-32767"
                .into(),
        ),
    ] {
        let refused = post(&http, SERVICES, &service(name, spec)).await;
        assert_eq!(refused.status, 422, "{}", refused.body);
        assert_eq!(refused.body["message"], message);
    }

    // An update that leaves out the allocated values keeps them (no change at all: the
    // resourceVersion stays); one that changes the address is refused.
    let rv = created.body["metadata"]["resourceVersion"].clone();
    let mut again = service("web", ports(json!([{"port": 80}])));
    again["metadata"]["resourceVersion"] = rv.clone();
    let kept = put(&http, &format!("{SERVICES}/web"), &again).await;
    assert_eq!(kept.status, 200, "{}", kept.body);
    assert_eq!(kept.body["spec"]["clusterIP"], json!(ip));
    assert_eq!(kept.body["metadata"]["resourceVersion"], rv);
    let mut moved = again.clone();
    moved["spec"]["clusterIP"] = json!("10.100.0.10");
    let refused = put(&http, &format!("{SERVICES}/web"), &moved).await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert_eq!(
        refused.body["message"],
        "Service \"web\" is invalid: spec.clusterIPs[0]: Invalid value: []string{\"10.100.0.10\"}: \
         may not change once set"
    );
    // A NodePort update without its node ports keeps them, by port name.
    let mut edge = service(
        "edge",
        json!({"type": "NodePort", "selector": {"app": "web"},
               "ports": [{"name": "http", "port": 80}, {"name": "admin", "port": 81}]}),
    );
    edge["metadata"]["resourceVersion"] = node_ports.body["metadata"]["resourceVersion"].clone();
    let kept = put(&http, &format!("{SERVICES}/edge"), &edge).await;
    assert_eq!(kept.status, 200, "{}", kept.body);
    assert_eq!(kept.body["spec"]["ports"][0]["nodePort"], allocated);
    assert_eq!(kept.body["spec"]["ports"][1]["nodePort"], 30001);

    // A deleted Service's address is free again.
    server.delete("services", Some("a"), "web").unwrap();
    let reused = post(
        &http,
        SERVICES,
        &service("twin", json!({"clusterIP": ip, "ports": [{"port": 80}]})),
    )
    .await;
    assert_eq!(reused.status, 201, "{}", reused.body);
}
