//! HTTP front end: certificate signing requests as an approver and a signer written with
//! kube-client meet them: the requester recorded, approval through `/approval`, the
//! certificate through `/status`, and upstream's refusals.
#![cfg(feature = "http")]

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube_client::Api;
use kube_client::api::{Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::http_kube_client::kube;
use crate::support::http::{get, start};

fn request(name: &str) -> CertificateSigningRequest {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"request": "cmVxdWVzdA==", "signerName": "example.com/serving",
                 "usages": ["digital signature", "server auth"],
                 "username": "spoofed", "groups": ["spoofers"]},
        "status": {"conditions": [{"type": "Approved", "status": "True", "reason": "Self"}]},
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_are_approved_and_issued_as_on_a_cluster() {
    let (_server, http) = start().await;
    let csrs: Api<CertificateSigningRequest> = Api::all(kube(&http).await);

    // The requester is the caller; nobody creates an approved request.
    let created = csrs
        .create(&PostParams::default(), &request("web"))
        .await
        .unwrap();
    let spec = created.spec;
    assert_eq!(spec.username.as_deref(), Some("system:admin"));
    assert_eq!(
        spec.groups,
        Some(vec![
            "system:masters".to_owned(),
            "system:authenticated".to_owned()
        ])
    );
    assert!(created.status.unwrap_or_default().conditions.is_none());

    // An approver approves through `/approval`: the condition stamped, nothing else changed.
    let approval = json!({"spec": {"signerName": "example.com/other"},
        "status": {"conditions": [{"type": "Approved", "status": "True",
                                   "reason": "AutoApproved", "message": "ok"}]}});
    let approved = csrs
        .patch_approval("web", &PatchParams::default(), &Patch::Merge(&approval))
        .await
        .unwrap();
    assert_eq!(approved.spec.signer_name, "example.com/serving");
    let condition = &approved.status.clone().unwrap().conditions.unwrap()[0];
    assert_eq!(condition.reason.as_deref(), Some("AutoApproved"));
    assert!(condition.last_update_time.is_some() && condition.last_transition_time.is_some());
    assert_eq!(
        csrs.get_approval("web").await.unwrap().status,
        approved.status
    );

    // The signer issues through `/status`; the approval cannot change there, nor a second
    // certificate be set.
    let issued = csrs
        .patch_status(
            "web",
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": {"certificate": "Y2VydA==",
                "conditions": [{"type": "Approved", "status": "True", "reason": "Rewritten"}]}})),
        )
        .await
        .unwrap();
    let status = issued.status.unwrap();
    assert_eq!(status.certificate.unwrap().0, b"cert");
    assert_eq!(
        status.conditions.unwrap()[0].reason.as_deref(),
        Some("AutoApproved")
    );
    let again = csrs
        .patch_status(
            "web",
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": {"certificate": "b3RoZXI="}})),
        )
        .await
        .unwrap_err();
    assert_eq!(
        api_error(again),
        (
            422,
            "CertificateSigningRequest.certificates.k8s.io \"web\" is invalid: \
             status.certificate: Forbidden: updates may not modify existing certificate content"
                .to_owned()
        )
    );

    // An approval is never taken back, and a request is not approved and denied at once.
    let removed = csrs
        .patch_approval(
            "web",
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": {"conditions": []}})),
        )
        .await
        .unwrap_err();
    assert_eq!(
        api_error(removed).1,
        "CertificateSigningRequest.certificates.k8s.io \"web\" is invalid: status.conditions: \
         Forbidden: updates may not remove a condition of type \"Approved\""
    );
    let both = csrs
        .patch_approval(
            "web",
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": {"conditions": [
                {"type": "Approved", "status": "True", "reason": "AutoApproved"},
                {"type": "Denied", "status": "True"}]}})),
        )
        .await
        .unwrap_err();
    assert_eq!(
        api_error(both).1,
        "CertificateSigningRequest.certificates.k8s.io \"web\" is invalid: status.conditions: \
         Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive"
    );

    // An update of the request itself changes its metadata only.
    let mut changed = csrs.get("web").await.unwrap();
    changed.spec.usages = Some(vec!["client auth".into()]);
    changed.status = None;
    changed.metadata.labels = Some([("team".to_owned(), "web".to_owned())].into());
    let stored = csrs
        .replace("web", &PostParams::default(), &changed)
        .await
        .unwrap();
    assert_eq!(stored.metadata.labels.unwrap()["team"], "web");
    assert_eq!(
        stored.spec.usages,
        Some(vec![
            "digital signature".to_owned(),
            "server auth".to_owned()
        ])
    );
    assert!(stored.status.unwrap().certificate.is_some());

    // Listed in discovery as upstream lists it.
    let group = get(&http, "/apis/certificates.k8s.io/v1").await;
    let approval: Vec<&Value> = group.body["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["name"] == "certificatesigningrequests/approval")
        .collect();
    assert_eq!(approval.len(), 1);
    assert_eq!(approval[0]["verbs"], json!(["get", "patch", "update"]));
}

/// The code and message of an API error.
fn api_error(e: kube_client::Error) -> (u16, String) {
    match e {
        kube_client::Error::Api(s) => (s.code, s.message),
        other => panic!("not an API error: {other}"),
    }
}
