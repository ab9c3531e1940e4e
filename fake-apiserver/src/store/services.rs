//! A Service's cluster IP and node ports, allocated as upstream's service REST storage
//! allocates them (`pkg/registry/core/service/storage`: `alloc.go`, `storage.go`, and the
//! strategy's `patchAllocatedValues` and `normalizeClusterIPs`), on a single-stack IPv4
//! cluster with kubeadm's ranges: cluster IPs from `10.96.0.0/12`, node ports from
//! 30000-32767.
//!
//! On a request's create or update of a Service that is not `ExternalName`: `clusterIPs`
//! follows a lone `clusterIP`; `ipFamilyPolicy` defaults to `SingleStack` (a headless
//! Service without a selector: `RequireDualStack`, which it alone may ask for here) and
//! `ipFamilies` to `[IPv4]` (`[IPv4, IPv6]` for that headless one); a Service that is not
//! headless gets a free cluster IP, chosen at random above the range's first 256 addresses
//! (kept for static assignment) as upstream's allocator chooses, or keeps the one it names
//! if that is in the range and free; a `NodePort` Service, and a `LoadBalancer` one unless
//! it turns `allocateLoadBalancerNodePorts` off, gets a free node port for each port without
//! one (above the range's first 86, as upstream), and a `LoadBalancer` with
//! `externalTrafficPolicy: Local` a health check node port. An update that leaves out what
//! was allocated keeps it (a Service's manifest applied again, or written back without its
//! cluster IP, is not a change), and a changed cluster IP is refused: it may not change
//! once set. What is in use is read from the stored Services, so a deleted Service's
//! addresses are free again at once.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr};

use informer_core::Status;
use serde_json::{Map, Value, json};

use super::Store;
use crate::status;

/// The service CIDR's network address (`10.96.0.0`) and its prefix length.
const NETWORK: u32 = 0x0A60_0000;
const PREFIX: u32 = 12;
const RANGE: &str = "10.96.0.0/12";
/// Addresses usable in the range: all but the network and broadcast addresses; offset 0
/// is `10.96.0.1`.
const ADDRESSES: u32 = (1 << (32 - PREFIX)) - 2;
/// The low band upstream keeps for static assignment (`ServiceIPStaticSubrange`): 16 to
/// 256 addresses, a sixteenth of the range.
const STATIC_ADDRESSES: u32 = 256;
const NODE_PORTS: std::ops::RangeInclusive<i64> = 30_000..=32_767;
/// The node ports kept for static assignment: a 32nd of the range, 16 to 128.
const STATIC_NODE_PORTS: i64 = 86;

/// What other Services hold.
struct InUse {
    addresses: HashSet<u32>,
    node_ports: HashSet<i64>,
}

impl Store {
    /// Allocates the cluster IP and node ports of Service `name` (`body`, decoded and
    /// defaulted), `old` being the stored one on an update; `res` is the services resource.
    pub(super) fn allocate_service(
        &mut self,
        res: usize,
        key: &str,
        name: &str,
        body: &mut Value,
        old: Option<&Value>,
    ) -> Result<(), Status> {
        let old_spec = old.and_then(|o| o.get("spec")).and_then(Value::as_object);
        let Some(spec) = body.get_mut("spec").and_then(Value::as_object_mut) else {
            return Ok(());
        };
        if text(spec, "type") == Some("ExternalName") {
            return Ok(());
        }
        let invalid = |errors: Vec<(String, &'static str, String)>| {
            status::invalid("Service", "", name, &errors)
        };
        if let Some(old) = old_spec {
            keep_allocated(spec, old);
        }
        normalize_cluster_ips(spec, old_spec);
        families(spec, old_spec).map_err(invalid)?;
        let in_use = self.services_in_use(res, key);
        self.allocate_cluster_ip(spec, old_spec, &in_use)
            .map_err(|e| invalid(vec![e]))?;
        self.allocate_node_ports(spec, &in_use).map_err(invalid)?;
        Ok(())
    }

    /// The addresses and node ports of every stored Service but the one at `key`.
    fn services_in_use(&self, res: usize, key: &str) -> InUse {
        let mut in_use = InUse {
            addresses: HashSet::new(),
            node_ports: HashSet::new(),
        };
        for (k, object) in &self.resources[res].objects {
            if &**k == key {
                continue;
            }
            let value = object.to_value();
            let Some(spec) = value.get("spec") else {
                continue;
            };
            let ips = spec.get("clusterIPs").and_then(Value::as_array);
            for ip in ips.into_iter().flatten().filter_map(Value::as_str) {
                if let Some(offset) = offset(ip) {
                    in_use.addresses.insert(offset);
                }
            }
            let ports = spec.get("ports").and_then(Value::as_array);
            for port in ports.into_iter().flatten() {
                if let Some(p) = port.get("nodePort").and_then(Value::as_i64) {
                    in_use.node_ports.insert(p);
                }
            }
            if let Some(p) = spec.get("healthCheckNodePort").and_then(Value::as_i64) {
                in_use.node_ports.insert(p);
            }
        }
        in_use
    }

    fn allocate_cluster_ip(
        &mut self,
        spec: &mut Map<String, Value>,
        old: Option<&Map<String, Value>>,
        in_use: &InUse,
    ) -> Result<(), (String, &'static str, String)> {
        let ips = cluster_ips(spec);
        let headless = |ips: &[String]| ips.first().map(String::as_str) == Some("None");
        if let Some(old) = old {
            // `validateUpgradeDowngradeClusterIPs`: the addresses held may not change.
            let before = cluster_ips(old);
            let external = text(old, "type") == Some("ExternalName");
            let both_headless = headless(&before) && headless(&ips);
            if !external && !both_headless && !before.is_empty() && before.len() == ips.len() {
                if let Some(i) = (0..ips.len()).find(|&i| ips[i] != before[i]) {
                    return Err((
                        format!("spec.clusterIPs[{i}]"),
                        "FieldValueInvalid",
                        format!("{}: may not change once set", go_strings(&ips)),
                    ));
                }
                return Ok(());
            }
        }
        if headless(&ips) {
            return Ok(());
        }
        let failed = |ip: &str, why: &str| {
            (
                "spec.clusterIPs".to_owned(),
                "FieldValueInvalid",
                format!(
                    "{}: failed to allocate IP {ip}: {why}",
                    go_strings(&cluster_ips(spec))
                ),
            )
        };
        let ip = match ips.first().map(String::as_str) {
            None | Some("") => {
                let Some(offset) = self.free_offset(in_use) else {
                    return Err((
                        "spec.clusterIPs".to_owned(),
                        "InternalError",
                        "failed to allocate a serviceIP: range is full".into(),
                    ));
                };
                Ipv4Addr::from(NETWORK + 1 + offset).to_string()
            }
            Some(ip) => {
                match offset(ip) {
                    None => {
                        return Err(failed(
                            ip,
                            &format!(
                                "the provided IP ({ip}) is not in the valid range. The range \
                                 of valid IPs is {RANGE}"
                            ),
                        ));
                    }
                    Some(o) if in_use.addresses.contains(&o) => {
                        return Err(failed(ip, "provided IP is already allocated"));
                    }
                    Some(_) => {}
                }
                ip.to_owned()
            }
        };
        spec.insert("clusterIP".into(), json!(ip));
        spec.insert("clusterIPs".into(), json!([ip]));
        Ok(())
    }

    /// A free address's offset: at random in the dynamic band, looking on from there, then
    /// the static band (upstream's bitmap allocator with its static subrange).
    fn free_offset(&mut self, in_use: &InUse) -> Option<u32> {
        use rand::Rng as _;
        let dynamic = STATIC_ADDRESSES..ADDRESSES;
        let start = self.rng.random_range(dynamic.clone());
        (start..dynamic.end)
            .chain(dynamic.start..start)
            .chain(0..STATIC_ADDRESSES)
            .find(|o| !in_use.addresses.contains(o))
    }

    fn free_node_port(&mut self, in_use: &InUse, taken: &HashSet<i64>) -> Option<i64> {
        use rand::Rng as _;
        let (low, high) = (*NODE_PORTS.start(), *NODE_PORTS.end());
        let dynamic = low + STATIC_NODE_PORTS..=high;
        let start = self.rng.random_range(dynamic.clone());
        (start..=high)
            .chain(*dynamic.start()..start)
            .chain(low..*dynamic.start())
            .find(|p| !in_use.node_ports.contains(p) && !taken.contains(p))
    }

    fn allocate_node_ports(
        &mut self,
        spec: &mut Map<String, Value>,
        in_use: &InUse,
    ) -> Result<(), Vec<(String, &'static str, String)>> {
        let kind = text(spec, "type").unwrap_or("ClusterIP").to_owned();
        let balancer = kind == "LoadBalancer";
        let wanted = kind == "NodePort"
            || (balancer && spec.get("allocateLoadBalancerNodePorts") != Some(&json!(false)));
        // A port named twice in one Service (say for TCP and UDP) is that Service's.
        let problem = |port: i64| {
            if !NODE_PORTS.contains(&port) {
                Some(format!(
                    "{port}: provided port is not in the valid range. The range of valid ports \
                     is {}-{}",
                    NODE_PORTS.start(),
                    NODE_PORTS.end()
                ))
            } else if in_use.node_ports.contains(&port) {
                Some(format!("{port}: provided port is already allocated"))
            } else {
                None
            }
        };
        let mut errors = Vec::new();
        let mut taken: HashSet<i64> = HashSet::new();
        let count = spec
            .get("ports")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        for i in (0..count).filter(|_| wanted) {
            let field = format!("spec.ports[{i}].nodePort");
            let given = spec["ports"][i].get("nodePort").and_then(Value::as_i64);
            if let Some(port) = given.filter(|p| *p != 0) {
                taken.insert(port);
                errors.extend(problem(port).map(|p| (field, "FieldValueInvalid", p)));
                continue;
            }
            match self.free_node_port(in_use, &taken) {
                Some(port) => {
                    taken.insert(port);
                    if let Some(p) = spec["ports"][i].as_object_mut() {
                        p.insert("nodePort".into(), json!(port));
                    }
                }
                None => errors.push((
                    field,
                    "InternalError",
                    "failed to allocate a nodePort: range is full".into(),
                )),
            }
        }
        if balancer && text(spec, "externalTrafficPolicy") == Some("Local") {
            let field = "spec.healthCheckNodePort".to_owned();
            match spec.get("healthCheckNodePort").and_then(Value::as_i64) {
                Some(port) if port != 0 => {
                    errors.extend(problem(port).map(|p| (field, "FieldValueInvalid", p)));
                }
                _ => {
                    if let Some(port) = self.free_node_port(in_use, &taken) {
                        spec.insert("healthCheckNodePort".into(), json!(port));
                    }
                }
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }
}

fn text<'a>(spec: &'a Map<String, Value>, field: &str) -> Option<&'a str> {
    spec.get(field).and_then(Value::as_str)
}

fn cluster_ips(spec: &Map<String, Value>) -> Vec<String> {
    spec.get("clusterIPs")
        .and_then(Value::as_array)
        .map(|ips| {
            ips.iter()
                .map(|ip| ip.as_str().unwrap_or("").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// A `[]string` as Go's `%#v` prints it in a field error.
fn go_strings(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// The offset of `ip` in the service range (`10.96.0.1` is 0), if it is an IPv4 address
/// in the range other than the network and broadcast addresses.
fn offset(ip: &str) -> Option<u32> {
    let ip: Ipv4Addr = ip.parse().ok()?;
    let n = u32::from(ip);
    (n > NETWORK && n - NETWORK <= ADDRESSES).then(|| n - NETWORK - 1)
}

/// `patchAllocatedValues`: what an update leaves out that the stored Service was given.
fn keep_allocated(spec: &mut Map<String, Value>, old: &Map<String, Value>) {
    let needs_ip = |s: &Map<String, Value>| text(s, "type") != Some("ExternalName");
    if needs_ip(old) && needs_ip(spec) {
        if text(spec, "clusterIP").is_none_or(str::is_empty)
            && let Some(ip) = old.get("clusterIP")
        {
            spec.insert("clusterIP".into(), ip.clone());
        }
        if cluster_ips(spec).is_empty() && !cluster_ips(old).is_empty() {
            spec.insert("clusterIPs".into(), old["clusterIPs"].clone());
        }
    }
    let needs_node_port = |s: &Map<String, Value>| match text(s, "type") {
        Some("NodePort") => true,
        Some("LoadBalancer") => s.get("allocateLoadBalancerNodePorts") != Some(&json!(false)),
        _ => false,
    };
    if needs_node_port(old) && needs_node_port(spec) {
        let node_ports = |s: &Map<String, Value>| -> Vec<(String, i64)> {
            s.get("ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|p| {
                    let port = p
                        .get("nodePort")
                        .and_then(Value::as_i64)
                        .filter(|n| *n != 0)?;
                    Some((
                        p.get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned(),
                        port,
                    ))
                })
                .collect()
        };
        let before = node_ports(old);
        let now: HashSet<i64> = node_ports(spec).into_iter().map(|(_, p)| p).collect();
        if let Some(Value::Array(ports)) = spec.get_mut("ports") {
            for port in ports.iter_mut().filter_map(Value::as_object_mut) {
                let unset = port.get("nodePort").and_then(Value::as_i64).unwrap_or(0) == 0;
                let name = port.get("name").and_then(Value::as_str).unwrap_or("");
                // By name; a port another of its ports now names is not taken back.
                let kept = before
                    .iter()
                    .find(|(n, p)| n == name && !now.contains(p))
                    .map(|(_, p)| *p);
                if unset && let Some(p) = kept {
                    port.insert("nodePort".into(), json!(p));
                }
            }
        }
    }
    let needs_health_check = |s: &Map<String, Value>| {
        text(s, "type") == Some("LoadBalancer") && text(s, "externalTrafficPolicy") == Some("Local")
    };
    if needs_health_check(old)
        && needs_health_check(spec)
        && spec
            .get("healthCheckNodePort")
            .and_then(Value::as_i64)
            .unwrap_or(0)
            == 0
        && let Some(p) = old.get("healthCheckNodePort")
    {
        spec.insert("healthCheckNodePort".into(), p.clone());
    }
}

/// `normalizeClusterIPs`: `clusterIPs` follows `clusterIP` when a client sets only the
/// singular (a create), or changes or clears it leaving the plural as stored (an update).
fn normalize_cluster_ips(spec: &mut Map<String, Value>, old: Option<&Map<String, Value>>) {
    let ip = text(spec, "clusterIP").unwrap_or("").to_owned();
    let ips = cluster_ips(spec);
    let Some(old) = old else {
        if !ip.is_empty() && ips.is_empty() {
            spec.insert("clusterIPs".into(), json!([ip]));
        }
        return;
    };
    let old_ip = text(old, "clusterIP").unwrap_or("");
    if old_ip == ip || ips != cluster_ips(old) {
        return;
    }
    if !old_ip.is_empty() && ip.is_empty() {
        spec.remove("clusterIPs");
    } else {
        spec.insert("clusterIPs".into(), json!([ip]));
    }
}

/// `initIPFamilyFields` on a single-stack IPv4 cluster: the policy and families, or the
/// field errors upstream answers for what this cluster cannot give.
fn families(
    spec: &mut Map<String, Value>,
    old: Option<&Map<String, Value>>,
) -> Result<(), Vec<(String, &'static str, String)>> {
    let headless = text(spec, "clusterIP") == Some("None");
    let selectorless = spec
        .get("selector")
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty);
    if text(spec, "ipFamilyPolicy").is_none() {
        let policy = match old.and_then(|o| o.get("ipFamilyPolicy")) {
            Some(p) if p.is_string() => p.clone(),
            _ if headless && selectorless => json!("RequireDualStack"),
            _ => json!("SingleStack"),
        };
        spec.insert("ipFamilyPolicy".into(), policy);
    }
    let policy = text(spec, "ipFamilyPolicy").unwrap_or("").to_owned();
    let mut errors = Vec::new();
    let ips = cluster_ips(spec);
    for (i, ip) in ips.iter().enumerate() {
        if ip == "None" {
            break;
        }
        match ip.parse::<IpAddr>() {
            Ok(IpAddr::V4(_)) => {}
            Ok(IpAddr::V6(_)) => errors.push((
                format!("spec.clusterIPs[{i}]"),
                "FieldValueInvalid",
                format!(
                    "{}: IPv6 is not configured on this cluster",
                    go_strings(&ips)
                ),
            )),
            Err(_) => errors.push((
                format!("spec.clusterIPs[{i}]"),
                "FieldValueInvalid",
                format!("{ip:?}: must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"),
            )),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut families: Vec<Value> = spec
        .get("ipFamilies")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if headless && selectorless {
        if families.is_empty() {
            families.push(json!("IPv4"));
        }
        if families.len() < 2 && policy != "SingleStack" {
            let other = if families[0] == "IPv4" {
                "IPv6"
            } else {
                "IPv4"
            };
            families.push(json!(other));
        }
        spec.insert("ipFamilies".into(), Value::Array(families));
        return Ok(());
    }
    if policy == "RequireDualStack" {
        errors.push((
            "spec.ipFamilyPolicy".into(),
            "FieldValueInvalid",
            "\"RequireDualStack\": this cluster is not configured for dual-stack services".into(),
        ));
    }
    for (i, family) in families.iter().enumerate() {
        if family != "IPv4" {
            errors.push((
                format!("spec.ipFamilies[{i}]"),
                "FieldValueInvalid",
                format!("{family}: not configured on this cluster"),
            ));
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    if families.is_empty() {
        spec.insert("ipFamilies".into(), json!(["IPv4"]));
    }
    Ok(())
}
