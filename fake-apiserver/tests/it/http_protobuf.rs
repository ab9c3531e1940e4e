//! HTTP front end: Kubernetes protobuf, checked with the k8s-pb crate (prost bindings of the
//! upstream protos), independently of the server's own schema-driven codec: lists and watches
//! of pods asked for in protobuf decode with k8s-pb to the same pods as the JSON answers, and
//! a pod encoded by k8s-pb and posted as protobuf is stored as the same JSON.
#![cfg(feature = "http")]

use fake_apiserver::seed::{SeedConfig, seed};
use futures::StreamExt;
use k8s_pb::api::core::v1::{Pod, PodList};
use k8s_pb::apimachinery::pkg::apis::meta::v1::{Time, WatchEvent};
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use prost::Message;
use serde_json::{Value, json};

use crate::support::GUARD;
use crate::support::http::{WatchLines, client, get, namespaces, register_widgets, start};

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
/// What client-go sends for built-in types.
const ACCEPT: &str = "application/vnd.kubernetes.protobuf, application/json";

/// Strips `k8s\0` and decodes the `runtime.Unknown` envelope.
/// `POST`s `raw` (a message of `kind`) in protobuf, asking for JSON back.
async fn post_in_protobuf(
    http: &fake_apiserver::http::FakeHttpServer,
    path: &str,
    api_version: &str,
    kind: &str,
    raw: Vec<u8>,
) -> reqwest::Response {
    client()
        .post(format!("{}{path}", http.url()))
        .header("Content-Type", PROTOBUF)
        .header("Accept", "application/json")
        .body(wrap_envelope(api_version, kind, raw))
        .send()
        .await
        .unwrap()
}

/// A protobuf request body: `k8s\0` and an `Unknown` around `raw`.
fn wrap_envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    let body = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.into()),
            kind: Some(kind.into()),
        }),
        raw: Some(raw),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut bytes = b"k8s\0".to_vec();
    bytes.extend(body.encode_to_vec());
    bytes
}

fn unwrap_envelope(body: &[u8]) -> Unknown {
    let rest = body.strip_prefix(b"k8s\0").expect("the k8s\\0 prefix");
    Unknown::decode(rest).expect("a runtime.Unknown")
}

fn seconds(json_time: &Value) -> Option<i64> {
    let t: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time =
        serde_json::from_value(json_time.clone()).ok()?;
    Some(t.0.as_second())
}

fn pb_seconds(t: Option<&Time>) -> Option<i64> {
    t.and_then(|t| t.seconds)
}

/// The fields of a pod both views are compared on, from k8s-pb's decoded message. Every
/// kind of field the seeded pods carry is here: strings, numbers, booleans, maps, repeated
/// messages, embedded structs (volume sources, probe handlers), Time, Quantity,
/// IntOrString, FieldsV1.
fn view_pb(pod: &Pod) -> Value {
    let meta = pod.metadata.as_ref().unwrap();
    let spec = pod.spec.as_ref().unwrap();
    let status = pod.status.as_ref().unwrap();
    let c = &spec.containers[0];
    let probe = c.liveness_probe.as_ref().unwrap();
    let http_get = probe.handler.as_ref().unwrap().http_get.as_ref().unwrap();
    let port = http_get.port.as_ref().unwrap();
    let limits = &c.resources.as_ref().unwrap().limits;
    let volume = spec.volumes[0].volume_source.as_ref().unwrap();
    let config_map = volume.config_map.as_ref().unwrap();
    let owner = &meta.owner_references[0];
    let managed = &meta.managed_fields[0];
    let fields: Value =
        serde_json::from_slice(managed.fields_v1.as_ref().unwrap().raw.as_ref().unwrap()).unwrap();
    let cs = &status.container_statuses[0];
    json!({
        "name": meta.name, "namespace": meta.namespace, "uid": meta.uid,
        "resourceVersion": meta.resource_version, "generateName": meta.generate_name,
        "labels": meta.labels, "annotations": meta.annotations,
        "created": pb_seconds(meta.creation_timestamp.as_ref()),
        "owner": [owner.kind, owner.name, owner.uid, owner.controller],
        "managed": [meta.managed_fields.len(), managed.manager, managed.operation, pb_seconds(managed.time.as_ref()), fields],
        "nodeName": spec.node_name, "restartPolicy": spec.restart_policy,
        "grace": spec.termination_grace_period_seconds, "links": spec.enable_service_links,
        "containers": spec.containers.iter().map(|c| [c.name.clone(), c.image.clone()]).collect::<Vec<_>>(),
        "ports": c.ports.iter().map(|p| json!([p.name, p.container_port, p.protocol])).collect::<Vec<_>>(),
        "env": c.env.iter().map(|e| json!([e.name, e.value, e.value_from.as_ref().and_then(|v| v.field_ref.as_ref()).and_then(|f| f.field_path.clone())])).collect::<Vec<_>>(),
        "limits": limits.iter().map(|(k, q)| (k.clone(), q.string.clone())).collect::<std::collections::BTreeMap<_, _>>(),
        "probe": [http_get.path, port.r#type, port.int_val, port.str_val, probe.period_seconds],
        "volume": [spec.volumes[0].name, config_map.local_object_reference.as_ref().unwrap().name, config_map.default_mode],
        "tolerations": spec.tolerations.iter().map(|t| json!([t.key, t.effect, t.toleration_seconds])).collect::<Vec<_>>(),
        "phase": status.phase, "podIP": status.pod_ip,
        "podIPs": status.pod_ips.iter().map(|p| p.ip.clone()).collect::<Vec<_>>(),
        "conditions": status.conditions.iter().map(|c| json!([c.r#type, c.status, pb_seconds(c.last_transition_time.as_ref())])).collect::<Vec<_>>(),
        "containerStatus": [cs.name, cs.ready, cs.restart_count, cs.started, cs.image_id,
            pb_seconds(cs.state.as_ref().unwrap().running.as_ref().unwrap().started_at.as_ref())],
        "qos": status.qos_class,
    })
}

/// The same fields read from the JSON answer.
fn view_json(pod: &Value) -> Value {
    let meta = &pod["metadata"];
    let spec = &pod["spec"];
    let status = &pod["status"];
    let c = &spec["containers"][0];
    let port = &c["livenessProbe"]["httpGet"]["port"];
    let (port_type, int_val, str_val) = match port {
        Value::String(s) => (1, 0, s.clone()),
        other => (0, other.as_i64().unwrap(), String::new()),
    };
    let owner = &meta["ownerReferences"][0];
    let managed = &meta["managedFields"][0];
    let cs = &status["containerStatuses"][0];
    json!({
        "name": meta["name"], "namespace": meta["namespace"], "uid": meta["uid"],
        "resourceVersion": meta["resourceVersion"], "generateName": meta["generateName"],
        "labels": meta["labels"], "annotations": meta["annotations"],
        "created": seconds(&meta["creationTimestamp"]),
        "owner": [owner["kind"], owner["name"], owner["uid"], owner["controller"]],
        "managed": [meta["managedFields"].as_array().unwrap().len(), managed["manager"], managed["operation"], seconds(&managed["time"]), managed["fieldsV1"]],
        "nodeName": spec["nodeName"], "restartPolicy": spec["restartPolicy"],
        "grace": spec["terminationGracePeriodSeconds"], "links": spec["enableServiceLinks"],
        "containers": spec["containers"].as_array().unwrap().iter().map(|c| [c["name"].clone(), c["image"].clone()]).collect::<Vec<_>>(),
        "ports": c["ports"].as_array().unwrap().iter().map(|p| json!([p["name"], p["containerPort"], p["protocol"]])).collect::<Vec<_>>(),
        "env": c["env"].as_array().unwrap().iter().map(|e| json!([e["name"], e["value"], e["valueFrom"]["fieldRef"]["fieldPath"]])).collect::<Vec<_>>(),
        "limits": c["resources"]["limits"],
        "probe": [c["livenessProbe"]["httpGet"]["path"], port_type, int_val, str_val, c["livenessProbe"]["periodSeconds"]],
        "volume": [spec["volumes"][0]["name"], spec["volumes"][0]["configMap"]["name"], spec["volumes"][0]["configMap"]["defaultMode"]],
        "tolerations": spec["tolerations"].as_array().unwrap().iter().map(|t| json!([t["key"], t["effect"], t["tolerationSeconds"]])).collect::<Vec<_>>(),
        "phase": status["phase"], "podIP": status["podIP"],
        "podIPs": status["podIPs"].as_array().unwrap().iter().map(|p| p["ip"].clone()).collect::<Vec<_>>(),
        "conditions": status["conditions"].as_array().unwrap().iter().map(|c| json!([c["type"], c["status"], seconds(&c["lastTransitionTime"])])).collect::<Vec<_>>(),
        "containerStatus": [cs["name"], cs["ready"], cs["restartCount"], cs["started"], cs["imageID"],
            seconds(&cs["state"]["running"]["startedAt"])],
        "qos": status["qosClass"],
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_in_protobuf_decode_with_k8s_pb_to_the_json_answer() {
    let (server, http) = start().await;
    seed(
        &server,
        &SeedConfig {
            namespaces: 2,
            pods: 6,
            configmaps: 0,
            seed: 9,
        },
    )
    .unwrap();
    for query in ["", "?limit=4", "?fieldSelector=metadata.namespace%3Dns-1"] {
        let path = format!("/api/v1/pods{query}");
        let resp = client()
            .get(format!("{}{path}", http.url()))
            .header("Accept", ACCEPT)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["content-type"], PROTOBUF);
        let unknown = unwrap_envelope(&resp.bytes().await.unwrap());
        assert_eq!(
            unknown.type_meta,
            Some(TypeMeta {
                api_version: Some("v1".into()),
                kind: Some("PodList".into())
            })
        );
        let list = PodList::decode(unknown.raw.as_deref().unwrap()).unwrap();
        let json = get(&http, &path).await.body;
        let list_meta = list.metadata.as_ref().unwrap();
        assert_eq!(
            list_meta.resource_version.as_deref(),
            json["metadata"]["resourceVersion"].as_str()
        );
        assert_eq!(
            list_meta.r#continue.as_deref(),
            json["metadata"]["continue"].as_str()
        );
        assert_eq!(
            list_meta.remaining_item_count,
            json["metadata"]["remainingItemCount"].as_i64()
        );
        let items = json["items"].as_array().unwrap();
        assert_eq!(list.items.len(), items.len(), "{path}");
        assert!(!items.is_empty());
        for (pb, js) in list.items.iter().zip(items) {
            assert_eq!(view_pb(pb), view_json(js), "{path}");
        }
        // The views are not vacuous: every part was found.
        let view = view_pb(&list.items[0]);
        assert!(
            view["nodeName"]
                .as_str()
                .is_some_and(|n| n.starts_with("node-")),
            "{view}"
        );
        assert_eq!(view["limits"], json!({"cpu": "1", "memory": "1Gi"}));
        assert_eq!(view["probe"], json!(["/healthz", 1, 0, "http", 10]));
        assert_eq!(view["volume"][2], 420);
        assert!(view["managed"][4]["f:metadata"].is_object(), "{view}");
        assert!(view["created"].as_i64().is_some() && view["conditions"][0][2].as_i64().is_some());
        assert_eq!(view["containerStatus"][1], true);
    }
    // One object, too.
    let name = server.objects("pods", Some("ns-0")).unwrap()[0]
        .name()
        .to_owned();
    let path = format!("/api/v1/namespaces/ns-0/pods/{name}");
    let resp = client()
        .get(format!("{}{path}", http.url()))
        .header("Accept", ACCEPT)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["content-type"], PROTOBUF);
    let unknown = unwrap_envelope(&resp.bytes().await.unwrap());
    let pod = Pod::decode(unknown.raw.as_deref().unwrap()).unwrap();
    assert_eq!(view_pb(&pod), view_json(&get(&http, &path).await.body));
    http.shutdown().await.unwrap();
}

/// Reads length-delimited `WatchEvent` frames.
struct Frames {
    stream: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buffer: Vec<u8>,
}

impl Frames {
    async fn next(&mut self) -> (String, Unknown) {
        loop {
            if self.buffer.len() >= 4 {
                let len = u32::from_be_bytes(self.buffer[..4].try_into().unwrap()) as usize;
                if self.buffer.len() >= 4 + len {
                    let frame: Vec<u8> = self.buffer.drain(..4 + len).skip(4).collect();
                    let event = WatchEvent::decode(frame.as_slice()).unwrap();
                    let raw = event.object.unwrap().raw.unwrap();
                    return (event.r#type.unwrap(), unwrap_envelope(&raw));
                }
            }
            let chunk = tokio::time::timeout(GUARD, self.stream.next())
                .await
                .expect("no watch frame in time")
                .expect("the watch ended")
                .unwrap();
            self.buffer.extend_from_slice(&chunk);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_in_protobuf_decode_with_k8s_pb_to_the_json_events() {
    let (server, http) = start().await;
    seed(
        &server,
        &SeedConfig {
            namespaces: 1,
            pods: 3,
            configmaps: 0,
            seed: 4,
        },
    )
    .unwrap();
    let path = "/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan\
                &allowWatchBookmarks=true";
    let resp = client()
        .get(format!("{}{path}", http.url()))
        .header("Accept", ACCEPT)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()["content-type"],
        "application/vnd.kubernetes.protobuf;stream=watch"
    );
    let mut frames = Frames {
        stream: resp.bytes_stream().boxed(),
        buffer: Vec::new(),
    };
    let mut lines = WatchLines::open(&http, path).await;
    // The initial events, then the bookmark that ends them, then live changes.
    for _ in 0..3 {
        let (ty, unknown) = frames.next().await;
        let json = lines.event().await;
        assert_eq!(ty, json["type"].as_str().unwrap());
        assert_eq!(unknown.type_meta.unwrap().kind.as_deref(), Some("Pod"));
        let pod = Pod::decode(unknown.raw.as_deref().unwrap()).unwrap();
        assert_eq!(view_pb(&pod), view_json(&json["object"]));
    }
    let (ty, unknown) = frames.next().await;
    let json = lines.event().await;
    assert_eq!(
        (ty.as_str(), json["type"].as_str()),
        ("BOOKMARK", Some("BOOKMARK"))
    );
    let bookmark = Pod::decode(unknown.raw.as_deref().unwrap()).unwrap();
    let meta = bookmark.metadata.unwrap();
    assert_eq!(
        meta.resource_version.as_deref(),
        json["object"]["metadata"]["resourceVersion"].as_str()
    );
    assert_eq!(
        meta.annotations
            .get("k8s.io/initial-events-end")
            .map(String::as_str),
        Some("true")
    );
    let name = server.objects("pods", None).unwrap()[0].name().to_owned();
    server
        .patch(
            "pods",
            Some("ns-0"),
            &name,
            &json!({"status": {"phase": "Failed"}}),
        )
        .unwrap();
    server.delete("pods", Some("ns-0"), &name).unwrap();
    for want in ["MODIFIED", "DELETED"] {
        let (ty, unknown) = frames.next().await;
        let json = lines.event().await;
        assert_eq!((ty.as_str(), json["type"].as_str()), (want, Some(want)));
        let pod = Pod::decode(unknown.raw.as_deref().unwrap()).unwrap();
        assert_eq!(view_pb(&pod), view_json(&json["object"]));
        assert_eq!(pod.status.unwrap().phase.as_deref(), Some("Failed"));
    }
    http.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_encoded_by_k8s_pb_is_stored_as_the_same_json() {
    let (server, http) = start().await;
    seed(
        &server,
        &SeedConfig {
            namespaces: 1,
            pods: 1,
            configmaps: 0,
            seed: 5,
        },
    )
    .unwrap();
    let original = server.objects("pods", None).unwrap()[0].to_value();
    // Take the pod as k8s-pb decodes it, rename it, and send it back as protobuf.
    let resp = client()
        .get(format!(
            "{}/api/v1/namespaces/ns-0/pods/{}",
            http.url(),
            original["metadata"]["name"].as_str().unwrap()
        ))
        .header("Accept", PROTOBUF)
        .send()
        .await
        .unwrap();
    let unknown = unwrap_envelope(&resp.bytes().await.unwrap());
    let mut pod = Pod::decode(unknown.raw.as_deref().unwrap()).unwrap();
    let meta = pod.metadata.as_mut().unwrap();
    meta.name = Some("copy".into());
    meta.uid = None;
    meta.resource_version = None;
    meta.creation_timestamp = None;
    let created = post_in_protobuf(
        &http,
        "/api/v1/namespaces/ns-0/pods",
        "v1",
        "Pod",
        pod.encode_to_vec(),
    )
    .await;
    assert_eq!(created.status(), 201);
    let stored = server.get("pods", Some("ns-0"), "copy").unwrap().to_value();
    // The creator owns every field it set: the managed fields sent are the base that a
    // create's changes (every field but the status, which a create resets) are taken from,
    // as upstream's field manager takes them.
    let managers = stored["metadata"]["managedFields"].as_array().unwrap();
    let creator = managers.iter().find(|m| m["manager"] == "unknown").unwrap();
    assert_eq!(creator["operation"], "Update");
    assert!(creator["fieldsV1"]["f:spec"]["f:containers"].is_object());
    let created_containers = creator["fieldsV1"]["f:spec"]["f:containers"]
        .as_object()
        .unwrap();
    for sent in managers.iter().filter(|m| m["manager"] != "unknown") {
        if let Some(theirs) = sent["fieldsV1"]["f:spec"]["f:containers"].as_object() {
            // Only items this pod does not have (the seed's own entries name others).
            assert!(
                theirs.keys().all(|k| !created_containers.contains_key(k)),
                "{sent}"
            );
        }
    }
    // Everything but what the server sets on create (and the status a create resets).
    let strip = |mut v: Value| {
        let meta = v["metadata"].as_object_mut().unwrap();
        for k in [
            "name",
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "managedFields",
        ] {
            meta.remove(k);
        }
        v.as_object_mut().unwrap().remove("status");
        v
    };
    let sent_qos = original["status"]["qosClass"].clone();
    assert_eq!(strip(stored.clone()), strip(original));
    // A create resets the status to Pending, keeping the QoS class the body names (as
    // upstream's `GetPodQOS` does; the seed's pods carry one).
    assert_eq!(sent_qos, "Burstable");
    assert_eq!(
        stored["status"],
        json!({"phase": "Pending", "qosClass": "Burstable"})
    );
    http.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protobuf_for_every_built_in_kind_decodes_with_k8s_pb() {
    // Each kind's empty-ish object encodes to a message k8s-pb's type for that kind decodes
    // (a wrong field number or wire type would fail to decode or land in the wrong field).
    let (server, http) = start().await;
    namespaces(&server, &["a"]);
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "a", "labels": {"app": "d"}},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "d"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
            "template": {"metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "250m"}}}]}}}});
    server.create("deployments", &deployment).unwrap();
    let resp = client()
        .get(format!(
            "{}/apis/apps/v1/namespaces/a/deployments/d",
            http.url()
        ))
        .header("Accept", PROTOBUF)
        .send()
        .await
        .unwrap();
    let unknown = unwrap_envelope(&resp.bytes().await.unwrap());
    let d = k8s_pb::api::apps::v1::Deployment::decode(unknown.raw.as_deref().unwrap()).unwrap();
    let spec = d.spec.unwrap();
    assert_eq!(spec.replicas, Some(3));
    let rolling = spec.strategy.unwrap().rolling_update.unwrap();
    assert_eq!(rolling.max_surge.unwrap().str_val.as_deref(), Some("25%"));
    assert_eq!(rolling.max_unavailable.unwrap().int_val, Some(0));
    let container = &spec.template.unwrap().spec.unwrap().containers[0];
    assert_eq!(
        container.resources.as_ref().unwrap().requests["cpu"]
            .string
            .as_deref(),
        Some("250m")
    );
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "l", "namespace": "a"},
        "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15,
            "renewTime": "2026-01-02T03:04:05.123456Z"}});
    server.create("leases", &lease).unwrap();
    let resp = client()
        .get(format!("{}/apis/coordination.k8s.io/v1/leases", http.url()))
        .header("Accept", ACCEPT)
        .send()
        .await
        .unwrap();
    let unknown = unwrap_envelope(&resp.bytes().await.unwrap());
    let leases =
        k8s_pb::api::coordination::v1::LeaseList::decode(unknown.raw.as_deref().unwrap()).unwrap();
    let spec = leases.items[0].spec.clone().unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some("me"));
    let renew = spec.renew_time.unwrap();
    assert_eq!(
        (renew.seconds, renew.nanos),
        (Some(1_767_323_045), Some(123_456_000))
    );
    // A custom resource has no protobuf: asked first, JSON comes back.
    register_widgets(&server);
    let resp = client()
        .get(format!("{}/apis/example.com/v1/widgets", http.url()))
        .header("Accept", ACCEPT)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["content-type"], "application/json");
    http.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_eviction_posted_in_protobuf_evicts() {
    // client-go clients configured for protobuf post `policy/v1` Evictions in it.
    let (server, http) = start().await;
    namespaces(&server, &["a"]);
    server
        .create(
            "pods",
            &json!({"metadata": {"name": "p", "namespace": "a"}}),
        )
        .unwrap();
    let eviction = k8s_pb::api::policy::v1::Eviction {
        metadata: Some(k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some("p".into()),
            namespace: Some("a".into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let resp = post_in_protobuf(
        &http,
        "/api/v1/namespaces/a/pods/p/eviction",
        "policy/v1",
        "Eviction",
        eviction.encode_to_vec(),
    )
    .await;
    assert_eq!(resp.status(), 201);
    let answer: Value = resp.json().await.unwrap();
    assert_eq!(answer["status"], "Success");
    assert!(server.get("pods", Some("a"), "p").is_err());
    http.shutdown().await.unwrap();
}
