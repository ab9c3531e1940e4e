//! Content negotiation as the real API server does it: which format an answer takes
//! (`Accept`, 406 when none can be produced), how a request body is read (`Content-Type`, 415
//! for an unknown one), and the request body limit (413 over 3 MiB).

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::StreamExt;
use informer_core::Status;
use serde_json::Value;

use super::discovery::MediaType;
use super::protobuf;
use super::response::JSON;
use crate::{ResourceDef, StoredObject, status};

/// The largest request body accepted, as on the real server (3 MiB).
pub(crate) const MAX_BODY: usize = 3 << 20;

/// How much of an oversized body is read and discarded before answering 413, so that a
/// client still writing its body reads the answer instead of a reset connection.
const MAX_DRAIN: usize = 256 << 20;

/// How long discarding an oversized body may take.
const DRAIN_TIME: std::time::Duration = std::time::Duration::from_secs(30);

/// `Content-Type: application/yaml`.
pub(crate) const YAML: &str = "application/yaml";

/// The form of an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// JSON (also for `*/*`).
    Json,
    /// YAML (not for watches).
    Yaml,
    /// Kubernetes protobuf (built-in kinds only).
    Protobuf,
    /// A `meta.k8s.io` Table of this version (kubectl's `get`).
    Table(&'static str),
    /// `PartialObjectMetadata[List]` of this version.
    Metadata(&'static str),
}

/// The first media type of `accept` the server can produce for `def` (JSON when there is no
/// `Accept`); 406 NotAcceptable when there is none.
pub(crate) fn answer(
    accept: Option<&str>,
    def: &ResourceDef,
    watch: bool,
) -> Result<Answer, Status> {
    let accept = accept.map(str::trim).filter(|a| !a.is_empty());
    let Some(accept) = accept else {
        return Ok(Answer::Json);
    };
    for media in accept.split(',') {
        let m = MediaType::parse(media);
        let essence = m.essence().to_ascii_lowercase();
        let version = match m.param("v") {
            None | Some("v1") => "v1",
            Some("v1beta1") => "v1beta1",
            Some(_) => continue,
        };
        match (essence.as_str(), m.param("as"), m.param("g")) {
            ("application/json" | "*/*" | "application/*", None, _) => return Ok(Answer::Json),
            ("application/json", Some("Table"), Some("meta.k8s.io")) => {
                return Ok(Answer::Table(version));
            }
            (
                "application/json",
                Some("PartialObjectMetadata" | "PartialObjectMetadataList"),
                Some("meta.k8s.io"),
            ) => return Ok(Answer::Metadata(version)),
            ("application/yaml", None, _) if !watch => return Ok(Answer::Yaml),
            (protobuf::MEDIA_TYPE, None, _) if protobuf::supports(def) => {
                return Ok(Answer::Protobuf);
            }
            _ => {}
        }
    }
    Err(Status::failure(
        406,
        "NotAcceptable",
        format!(
            "only the following media types are accepted: application/json, {YAML}, {} \
             (got {accept:?})",
            protobuf::MEDIA_TYPE
        ),
    ))
}

/// Reads a request body of at most [`MAX_BODY`] bytes. A larger one is read to its end (up
/// to [`MAX_DRAIN`] bytes, for at most [`DRAIN_TIME`]) and discarded, then refused with 413
/// RequestEntityTooLarge.
pub(crate) async fn read_body(body: Body) -> Result<Bytes, Status> {
    let mut stream = body.into_data_stream();
    let mut buf = bytes::BytesMut::new();
    while let Some(chunk) = stream.next().await {
        let chunk =
            chunk.map_err(|e| status::bad_request(format!("cannot read the request body: {e}")))?;
        if buf.len() + chunk.len() > MAX_BODY {
            let mut seen = buf.len() + chunk.len();
            drop(buf);
            let drain = async {
                while let Some(Ok(c)) = stream.next().await {
                    seen += c.len();
                    if seen > MAX_DRAIN {
                        break;
                    }
                }
            };
            let _ = tokio::time::timeout(DRAIN_TIME, drain).await;
            return Err(too_large());
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf.freeze())
}

/// 413 RequestEntityTooLarge, worded like the real server.
pub(crate) fn too_large() -> Status {
    Status::failure(
        413,
        "RequestEntityTooLarge",
        format!("Request entity too large: limit is {MAX_BODY}"),
    )
}

/// The object in a request body, read as its `Content-Type` says: JSON (also when there is
/// none), YAML or protobuf; any other type is a 415 UnsupportedMediaType.
pub(crate) fn decode_body(content_type: Option<&str>, bytes: &[u8]) -> Result<Value, Status> {
    let essence = content_type
        .map(|c| MediaType::parse(c).essence().to_ascii_lowercase())
        .unwrap_or_default();
    match essence.as_str() {
        "" | "application/json" => serde_json::from_slice(bytes).map_err(|e| {
            status::bad_request(format!(
                "the body of the request could not be decoded as JSON: {e}"
            ))
        }),
        YAML => decode_yaml(bytes),
        protobuf::MEDIA_TYPE => protobuf::decode_envelope(bytes),
        other => Err(unsupported_media_type(
            other,
            &["application/json", YAML, protobuf::MEDIA_TYPE],
        )),
    }
}

/// A YAML document as JSON.
pub(crate) fn decode_yaml(bytes: &[u8]) -> Result<Value, Status> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| status::bad_request(format!("the YAML body is not UTF-8: {e}")))?;
    serde_saphyr::from_str::<Value>(text).map_err(|e| {
        status::bad_request(format!(
            "the body of the request could not be decoded as YAML: {e}"
        ))
    })
}

/// 415 UnsupportedMediaType listing what is accepted.
pub(crate) fn unsupported_media_type(got: &str, accepted: &[&str]) -> Status {
    Status::failure(
        415,
        "UnsupportedMediaType",
        format!(
            "the body of the request was in an unknown format - accepted media types include: \
             {} (got {got:?})",
            accepted.join(", ")
        ),
    )
}

/// A stored object as the answer asks (JSON answers share the stored bytes).
pub(crate) fn object(code: StatusCode, obj: &StoredObject, answer: Answer) -> Response {
    match answer {
        Answer::Json | Answer::Table(_) | Answer::Metadata(_) => {
            body(code, JSON, obj.bytes().clone())
        }
        _ => value(code, &obj.to_value(), answer),
    }
}

/// A JSON value as the answer asks (protobuf when its kind has a message, JSON otherwise).
pub(crate) fn value(code: StatusCode, v: &Value, answer: Answer) -> Response {
    match answer {
        Answer::Yaml => match serde_saphyr::to_string(v) {
            Ok(text) => body(code, YAML, Bytes::from(text)),
            Err(_) => body(code, JSON, Bytes::from(v.to_string())),
        },
        Answer::Protobuf => match protobuf::encode_object(v) {
            Some(b) => body(code, protobuf::MEDIA_TYPE, b),
            None => body(code, JSON, Bytes::from(v.to_string())),
        },
        _ => body(code, JSON, Bytes::from(v.to_string())),
    }
}

fn body(code: StatusCode, content_type: &'static str, bytes: Bytes) -> Response {
    (
        code,
        [(header::CONTENT_TYPE, HeaderValue::from_static(content_type))],
        bytes,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pods() -> ResourceDef {
        ResourceDef::builtins().remove(0)
    }

    #[test]
    fn accept_headers() {
        let pods = pods();
        let widgets = ResourceDef::namespaced("example.com", "v1", "widgets", "Widget");
        let client_go = "application/vnd.kubernetes.protobuf, application/json";
        assert_eq!(answer(Some(client_go), &pods, false), Ok(Answer::Protobuf));
        assert_eq!(answer(Some(client_go), &pods, true), Ok(Answer::Protobuf));
        assert_eq!(answer(Some(client_go), &widgets, false), Ok(Answer::Json));
        assert_eq!(answer(None, &pods, false), Ok(Answer::Json));
        assert_eq!(answer(Some("*/*"), &pods, false), Ok(Answer::Json));
        assert_eq!(
            answer(Some("application/yaml"), &pods, false),
            Ok(Answer::Yaml)
        );
        let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
        assert_eq!(answer(Some(kubectl), &pods, false), Ok(Answer::Table("v1")));
        assert_eq!(
            answer(Some("text/html"), &pods, false).unwrap_err().code,
            406
        );
        assert_eq!(
            answer(Some("application/yaml"), &pods, true)
                .unwrap_err()
                .code,
            406
        );
        assert_eq!(
            answer(Some("application/vnd.kubernetes.protobuf"), &widgets, false)
                .unwrap_err()
                .code,
            406
        );
    }

    #[test]
    fn content_types() {
        let json = decode_body(Some("application/json; charset=utf-8"), br#"{"a":1}"#).unwrap();
        assert_eq!(json["a"], 1);
        let yaml = decode_body(Some("application/yaml"), b"a: 1\nb: [x]\n").unwrap();
        assert_eq!(yaml, serde_json::json!({"a": 1, "b": ["x"]}));
        assert_eq!(decode_body(None, b"{}").unwrap(), serde_json::json!({}));
        assert_eq!(
            decode_body(Some("text/plain"), b"{}").unwrap_err().code,
            415
        );
        assert_eq!(
            decode_body(Some("application/json"), b"{")
                .unwrap_err()
                .code,
            400
        );
    }
}
