//! Service account tokens: `serviceaccounts/<name>/token` (a `TokenRequest`) and their review
//! (a `TokenReview`), as upstream's `TokenREST` (`pkg/registry/core/serviceaccount/storage`)
//! and token authenticator answer them.
//!
//! A token is a JWT with upstream's claims (`iss`, `sub`, `aud`, `exp`, `iat`, `nbf`, `jti`
//! and the `kubernetes.io` claim naming the namespace, the service account and the bound
//! object), signed by no key: its signature is random, and the server knows its tokens by
//! keeping the newest [`MAX_ISSUED_TOKENS`](super::MAX_ISSUED_TOKENS). A review
//! authenticates a token this server issued while it has not expired and its service
//! account (and bound object) still exist with the same uid.

use serde_json::{Map, Value, json};

use super::{BoundObject, IssuedToken, MAX_ISSUED_TOKENS, Store, object_key};
use crate::continue_token::base64url_encode;
use crate::object::string_list;
use crate::typed;
use crate::{ResourceDef, status};
use informer_core::Status;

/// The issuer and default audience of tokens (a kubeadm or kind cluster's).
pub(crate) const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// Upstream's `MinTokenAgeSec` and `MaxTokenAgeSec`.
const MIN_EXPIRATION: i64 = 10 * 60;
const MAX_EXPIRATION: i64 = 1 << 32;

/// The expiration a request without one gets (upstream's defaulting).
const DEFAULT_EXPIRATION: i64 = 3600;

fn token_request_invalid(field: &str, value: &Value, message: &str) -> Status {
    status::invalid(
        "TokenRequest",
        "authentication.k8s.io",
        "",
        &[(
            field.to_owned(),
            "FieldValueInvalid",
            format!("{value}: {message}"),
        )],
    )
}

/// A spec's `audiences`, else the server's.
fn audiences_of(spec: &Value) -> Vec<String> {
    let given = string_list(spec.get("audiences"));
    if given.is_empty() {
        vec![ISSUER.to_owned()]
    } else {
        given
    }
}

impl Store {
    /// Issues a token for the service account `namespace/name` as `request` (a
    /// `TokenRequest`) asks: the request answered with its spec defaulted and its status.
    pub(crate) fn issue_token(
        &mut self,
        namespace: &str,
        name: &str,
        request: &Value,
    ) -> Result<Value, Status> {
        let Some(object) = request.as_object() else {
            return Err(status::bad_request(
                "the request body must be a JSON object",
            ));
        };
        for (field, want) in [
            ("apiVersion", "authentication.k8s.io/v1"),
            ("kind", "TokenRequest"),
        ] {
            if let Some(got) = object.get(field).and_then(Value::as_str)
                && got != want
            {
                return Err(status::bad_request(format!(
                    "the {field} in the data ({got}) does not match the expected {field} \
                     ({want})"
                )));
            }
        }
        // Decoded into its Go type as upstream decodes it (its fields' types checked, unknown
        // fields dropped).
        let mut request = request.clone();
        typed::decode("io.k8s.api.authentication.v1.TokenRequest", &mut request).map_err(|e| {
            status::bad_request(format!(
                "TokenRequest in version \"v1\" cannot be handled as a TokenRequest: {e}"
            ))
        })?;
        let spec = request.get("spec").cloned().unwrap_or(Value::Null);
        let expiration = spec
            .get("expirationSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(DEFAULT_EXPIRATION);
        if expiration < MIN_EXPIRATION {
            return Err(token_request_invalid(
                "spec.expirationSeconds",
                &json!(expiration),
                "may not specify a duration less than 10 minutes",
            ));
        }
        if expiration > MAX_EXPIRATION {
            return Err(token_request_invalid(
                "spec.expirationSeconds",
                &json!(expiration),
                "may not specify a duration larger than 2^32 seconds",
            ));
        }
        let accounts = self
            .find_gvr("", "v1", "serviceaccounts")
            .ok_or_else(status::resource_not_found)?;
        let account = self.get(accounts, Some(namespace), name)?;
        let bound = match spec.get("boundObjectRef").filter(|r| !r.is_null()) {
            Some(reference) => Some(self.bound_object(namespace, name, reference)?),
            None => None,
        };
        let audiences = audiences_of(&spec);
        let now = self.clock.now_unix();
        let expires = now.saturating_add(expiration.unsigned_abs());
        let jti = self.new_uid();
        let mut claim = Map::new();
        claim.insert("namespace".into(), json!(namespace));
        claim.insert(
            "serviceaccount".into(),
            json!({"name": name, "uid": account.uid()}),
        );
        if let Some(b) = &bound {
            claim.insert(
                b.kind.to_ascii_lowercase(),
                json!({"name": b.name, "uid": b.uid}),
            );
        }
        let claims = json!({
            "aud": audiences,
            "exp": expires,
            "iat": now,
            "iss": ISSUER,
            "jti": jti,
            "kubernetes.io": claim,
            "nbf": now,
            "sub": format!("system:serviceaccount:{namespace}:{name}"),
        });
        let header = json!({"alg": "RS256", "kid": "fake-apiserver"});
        let signature: [u8; 32] = self.rng_bytes();
        let token = format!(
            "{}.{}.{}",
            base64url_encode(header.to_string().as_bytes()),
            base64url_encode(claims.to_string().as_bytes()),
            base64url_encode(&signature),
        );
        if !self.dry_run {
            self.remember_token(
                token.clone(),
                IssuedToken {
                    namespace: namespace.to_owned(),
                    service_account: name.to_owned(),
                    service_account_uid: account.uid().to_owned(),
                    audiences: audiences.clone(),
                    expires,
                    bound,
                    jti,
                },
            );
        }
        let mut answered = request.clone();
        if let Some(out) = answered.as_object_mut() {
            out.insert("apiVersion".into(), json!("authentication.k8s.io/v1"));
            out.insert("kind".into(), json!("TokenRequest"));
            let meta = out.entry("metadata").or_insert_with(|| json!({}));
            if let Some(meta) = meta.as_object_mut() {
                meta.entry("creationTimestamp").or_insert(Value::Null);
            }
            let mut spec = spec.as_object().cloned().unwrap_or_default();
            spec.insert("audiences".into(), json!(audiences));
            spec.insert("expirationSeconds".into(), json!(expiration));
            spec.entry("boundObjectRef").or_insert(Value::Null);
            out.insert("spec".into(), Value::Object(spec));
            out.insert(
                "status".into(),
                json!({
                    "token": token,
                    "expirationTimestamp": crate::object::rfc3339(
                        std::time::UNIX_EPOCH + std::time::Duration::from_secs(expires)
                    ),
                }),
            );
        }
        Ok(answered)
    }

    /// The object a token is bound to (`spec.boundObjectRef`): a pod running as the service
    /// account, a secret or a node.
    fn bound_object(
        &self,
        namespace: &str,
        account: &str,
        reference: &Value,
    ) -> Result<BoundObject, Status> {
        let text = |k: &str| reference.get(k).and_then(Value::as_str).unwrap_or("");
        let (api_version, asked, name) = (text("apiVersion"), text("kind"), text("name"));
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version),
        };
        let (plural, namespaced, kind) = match (group, asked) {
            ("", "Pod") => ("pods", true, "Pod"),
            ("", "Secret") => ("secrets", true, "Secret"),
            ("", "Node") => ("nodes", false, "Node"),
            _ => {
                return Err(status::bad_request(format!(
                    "cannot bind token to object of type {group}/{version}, Kind={asked}"
                )));
            }
        };
        let res = self
            .find_gvr("", "v1", plural)
            .ok_or_else(status::resource_not_found)?;
        let object = self.get(res, namespaced.then_some(namespace), name)?;
        if kind == "Pod" {
            let runs_as = object
                .to_value()
                .pointer("/spec/serviceAccountName")
                .and_then(Value::as_str)
                .map_or_else(|| "default".to_owned(), str::to_owned);
            if runs_as != account {
                return Err(status::bad_request(format!(
                    "cannot bind token for serviceaccount {account:?} to pod running with \
                     different serviceaccount name."
                )));
            }
        }
        let uid = text("uid");
        if !uid.is_empty() && uid != object.uid() {
            let mut def = ResourceDef::namespaced("", "v1", kind, kind);
            def.namespaced = namespaced;
            let mut refused = status::conflict(&def, name);
            refused.message = format!(
                "Operation cannot be fulfilled on {kind} {name:?}: the UID in the bound \
                 object reference ({uid}) does not match the UID in record. The object might \
                 have been deleted and then recreated"
            );
            return Err(refused);
        }
        Ok(BoundObject {
            kind,
            res,
            name: name.to_owned(),
            uid: object.uid().to_owned(),
        })
    }

    fn remember_token(&mut self, token: String, issued: IssuedToken) {
        let tokens = &mut self.tokens;
        while tokens.order.len() >= MAX_ISSUED_TOKENS {
            if let Some(oldest) = tokens.order.pop_front() {
                tokens.by_token.remove(&oldest);
            }
        }
        tokens.order.push_back(token.clone());
        tokens.by_token.insert(token, issued);
    }

    /// A `TokenReview`'s status for `spec` (its `token` and `audiences`).
    pub(crate) fn review_token(&self, spec: &Value) -> Result<Value, Status> {
        let token = spec.get("token").and_then(Value::as_str).unwrap_or("");
        if token.is_empty() {
            return Err(status::bad_request(
                "token is required for TokenReview in authentication",
            ));
        }
        let wanted = audiences_of(spec);
        let refused =
            |why: &str| json!({"user": {}, "error": format!("[invalid bearer token, {why}]")});
        let Some(issued) = self.tokens.by_token.get(token) else {
            return Ok(refused("token lookup failed"));
        };
        if self.clock.now_unix() >= issued.expires {
            return Ok(refused("service account token has expired"));
        }
        let alive = |res: Option<usize>, namespace: Option<&str>, name: &str, uid: &str| {
            res.is_some_and(|res| {
                let def = &self.resources[res].def;
                self.resources[res]
                    .objects
                    .get(object_key(def, namespace, name).as_str())
                    .is_some_and(|o| o.uid() == uid)
            })
        };
        let account_alive = alive(
            self.find_gvr("", "v1", "serviceaccounts"),
            Some(&issued.namespace),
            &issued.service_account,
            &issued.service_account_uid,
        );
        let bound_alive = issued.bound.as_ref().is_none_or(|b| {
            let namespace = (b.kind != "Node").then_some(issued.namespace.as_str());
            alive(Some(b.res), namespace, &b.name, &b.uid)
        });
        if !account_alive || !bound_alive {
            return Ok(refused("service account token has been invalidated"));
        }
        let shared: Vec<&String> = wanted
            .iter()
            .filter(|a| issued.audiences.contains(a))
            .collect();
        if shared.is_empty() {
            return Ok(refused(&format!(
                "token audiences {:?} is invalid for the target audiences {:?}",
                issued.audiences, wanted
            )));
        }
        let mut extra = Map::new();
        extra.insert(
            "authentication.kubernetes.io/credential-id".into(),
            json!([format!("JTI={}", issued.jti)]),
        );
        if let Some(b) = &issued.bound
            && b.kind != "Secret"
        {
            let kind = b.kind.to_ascii_lowercase();
            extra.insert(
                format!("authentication.kubernetes.io/{kind}-name"),
                json!([b.name]),
            );
            extra.insert(
                format!("authentication.kubernetes.io/{kind}-uid"),
                json!([b.uid]),
            );
        }
        Ok(json!({
            "authenticated": true,
            "user": {
                "username": format!(
                    "system:serviceaccount:{}:{}",
                    issued.namespace, issued.service_account
                ),
                "uid": issued.service_account_uid,
                "groups": [
                    "system:serviceaccounts",
                    format!("system:serviceaccounts:{}", issued.namespace),
                    "system:authenticated",
                ],
                "extra": extra,
            },
            "audiences": shared,
        }))
    }
}
