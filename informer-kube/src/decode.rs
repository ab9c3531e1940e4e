//! Decoding what the API server sends: list bodies, watch lines, error responses.
//!
//! Sans-IO: every function takes bytes and returns values or typed errors, so the wire handling
//! is unit-tested without a server.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::time::Duration;

use http::{HeaderMap, StatusCode};
use informer_core::{Bookmark, Error, INITIAL_EVENTS_END_ANNOTATION, Status, WatchEvent};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use crate::exact;

/// The whole-body list decoder: the reference the streaming decoder is checked against.
#[cfg(any(test, feature = "fuzzing"))]
mod whole {
    use std::borrow::Cow;
    use std::fmt;
    use std::marker::PhantomData;

    use informer_core::{Error, ListPage};
    use serde::de::{
        DeserializeOwned, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor,
    };

    use super::{error_offset, excerpt_around};

    /// Decodes a whole list response body (`{"metadata": {..}, "items": [..]}`) into a page, in
    /// one serde pass: the reference the streaming decoder ([`crate::list_stream`], what lists
    /// use) is checked against in tests and by the fuzz targets.
    pub(crate) fn list_page<K: DeserializeOwned>(
        body: &[u8],
        context: &str,
    ) -> Result<ListPage<K>, Error> {
        let text = std::str::from_utf8(body).map_err(|e| {
            let at = e.valid_up_to();
            Error::decode(
                format!("the list response while {context} (invalid UTF-8 at byte {at})"),
                excerpt_around(body, at),
                e,
            )
        })?;
        let mut de = serde_json::Deserializer::from_str(text);
        let decoded = ListSeed(PhantomData)
            .deserialize(&mut de)
            .and_then(|page| de.end().map(|()| page));
        decoded.map_err(|e| {
            let at = error_offset(body, &e);
            Error::decode(
                format!("the list response while {context} (at byte {at})"),
                excerpt_around(body, at),
                e,
            )
        })
    }

    struct ListSeed<K>(PhantomData<fn() -> K>);

    impl<'de, K: DeserializeOwned> DeserializeSeed<'de> for ListSeed<K> {
        type Value = ListPage<K>;

        fn deserialize<D: Deserializer<'de>>(
            self,
            deserializer: D,
        ) -> Result<Self::Value, D::Error> {
            deserializer.deserialize_map(self)
        }
    }

    impl<'de, K: DeserializeOwned> Visitor<'de> for ListSeed<K> {
        type Value = ListPage<K>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a Kubernetes list object")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut meta = super::ListMeta::default();
            let mut items = Vec::new();
            let mut items_seen = false;
            while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                match key.as_ref() {
                    "metadata" => meta = map.next_value()?,
                    "items" => {
                        // As the streaming decoder: items already handed over cannot be replaced.
                        if items_seen {
                            return Err(serde::de::Error::custom("\"items\" appears twice"));
                        }
                        items_seen = true;
                        items = map.next_value_seed(ItemsSeed(PhantomData))?;
                    }
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok(ListPage {
                items,
                resource_version: meta.resource_version.unwrap_or_default(),
                continue_token: meta.continue_token.filter(|t| !t.is_empty()),
                remaining_item_count: meta.remaining_item_count,
            })
        }
    }

    /// `items`: an array, or `null` (Go's encoding of an empty list's nil slice).
    struct ItemsSeed<K>(PhantomData<fn() -> K>);

    impl<'de, K: DeserializeOwned> DeserializeSeed<'de> for ItemsSeed<K> {
        type Value = Vec<K>;

        fn deserialize<D: Deserializer<'de>>(
            self,
            deserializer: D,
        ) -> Result<Self::Value, D::Error> {
            deserializer.deserialize_option(self)
        }
    }

    impl<'de, K: DeserializeOwned> Visitor<'de> for ItemsSeed<K> {
        type Value = Vec<K>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an array of objects or null")
        }

        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }

        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }

        fn visit_some<D: Deserializer<'de>>(
            self,
            deserializer: D,
        ) -> Result<Self::Value, D::Error> {
            deserializer.deserialize_seq(self)
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            // The items are moved out into the cache one by one, so this buffer is short-lived;
            // its preallocation is bounded all the same (the count comes from the body's text).
            let bound = (64 << 20) / std::mem::size_of::<K>().max(1);
            let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(bound));
            while let Some(item) = seq.next_element::<K>()? {
                items.push(item);
            }
            Ok(items)
        }
    }
}

#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use whole::list_page;

/// What a list response's `metadata` carries.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListMeta {
    #[serde(default)]
    pub(crate) resource_version: Option<String>,
    #[serde(default, rename = "continue")]
    pub(crate) continue_token: Option<String>,
    #[serde(default)]
    pub(crate) remaining_item_count: Option<i64>,
    /// `shardInfo`: present when the server applied a shard selector.
    #[serde(default)]
    pub(crate) shard_info: Option<ShardInfo>,
}

/// `metadata.shardInfo` of a sharded list (KEP-5866).
#[derive(Deserialize, Default)]
pub(crate) struct ShardInfo {
    /// The selector the server applied, in its canonical form.
    #[serde(default)]
    pub(crate) selector: Option<String>,
}

/// A watch line: `{"type": "...", "object": {...}}`, the object kept raw until the type is
/// known.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(rename = "type", borrow, default)]
    event_type: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    object: Option<&'a RawValue>,
    #[serde(borrow, default)]
    kind: Option<Cow<'a, str>>,
}

/// What a `BOOKMARK` event's object carries.
#[derive(Deserialize)]
struct BookmarkObject {
    #[serde(default)]
    metadata: BookmarkMeta,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct BookmarkMeta {
    #[serde(default)]
    resource_version: Option<String>,
    #[serde(default)]
    annotations: Option<BTreeMap<String, String>>,
}

/// [`watch_line_with_text`] without the text (the tests' decoder).
#[cfg(test)]
pub(crate) fn watch_line<K: DeserializeOwned>(
    line: &[u8],
    context: &str,
) -> Result<WatchEvent<K>, Error> {
    watch_line_with_text(line, context).map(|(event, _)| event)
}

/// Decodes one watch line (without its newline). `context` says which watch, for errors.
/// With an object event (`ADDED`, `MODIFIED`, `DELETED`) comes the text of its object, a
/// slice of `line`: what the object was decoded from.
///
/// A bare `Status` object on a line (some proxies and old servers end a watch that way) is an
/// `ERROR` event, like one wrapped in an envelope.
pub(crate) fn watch_line_with_text<'l, K: DeserializeOwned>(
    line: &'l [u8],
    context: &str,
) -> Result<(WatchEvent<K>, Option<&'l str>), Error> {
    if let Some((event, text)) = object_event(line) {
        return Ok((event, Some(text)));
    }
    let envelope: Envelope<'l> = serde_json::from_slice(line)
        .map_err(|e| Error::decode(format!("a watch line while {context}"), line, e))?;
    let Some(event_type) = envelope.event_type else {
        if envelope.kind.as_deref() == Some("Status") {
            let status: Status = serde_json::from_slice(line)
                .map_err(|e| Error::decode(format!("a Status line while {context}"), line, e))?;
            return Ok((WatchEvent::Error(status), None));
        }
        return Err(Error::decode(
            format!("a watch line while {context}"),
            line,
            "the line has no \"type\" field",
        ));
    };
    let Some(object) = envelope.object else {
        return Err(Error::decode(
            format!("a {event_type} event while {context}"),
            line,
            "the event has no \"object\" field",
        ));
    };
    let object_of = |line: &[u8]| -> Result<K, Error> {
        exact::from_str(object.get())
            .map_err(|e| Error::decode(format!("a {event_type} event while {context}"), line, e))
    };
    let with_text = |event: WatchEvent<K>| (event, Some(object.get()));
    let event = match event_type.as_ref() {
        "ADDED" => return object_of(line).map(WatchEvent::Added).map(with_text),
        "MODIFIED" => return object_of(line).map(WatchEvent::Modified).map(with_text),
        "DELETED" => return object_of(line).map(WatchEvent::Deleted).map(with_text),
        "BOOKMARK" => {
            let bookmark: BookmarkObject = serde_json::from_str(object.get())
                .map_err(|e| Error::decode(format!("a BOOKMARK event while {context}"), line, e))?;
            let initial_events_end = bookmark
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(INITIAL_EVENTS_END_ANNOTATION))
                .is_some_and(|v| v == "true");
            Ok(WatchEvent::Bookmark(Bookmark {
                resource_version: bookmark.metadata.resource_version.unwrap_or_default(),
                initial_events_end,
            }))
        }
        "ERROR" => serde_json::from_str::<Status>(object.get())
            .map(WatchEvent::Error)
            .map_err(|e| Error::decode(format!("an ERROR event while {context}"), line, e)),
        other => Err(Error::UnknownEventType {
            context: context.to_owned(),
            event_type: other.to_owned(),
        }),
    };
    event.map(|event| (event, None))
}

/// An `ADDED`, `MODIFIED` or `DELETED` line as API servers write it,
/// `{"type":"MODIFIED","object":{...}}`, decoded in one pass: the type read from the fixed
/// prefix, the object decoded in place from text checked as UTF-8 once. `None` for any other
/// line, or one that does not decode this way: the general path of [`watch_line_with_text`] then
/// decodes it (or reports why it cannot), so the result never depends on the shortcut.
fn object_event<K: DeserializeOwned>(line: &[u8]) -> Option<(WatchEvent<K>, &str)> {
    /// What the event type decoded from the prefix makes of the object.
    type Make<K> = fn(K) -> WatchEvent<K>;
    let rest = line.strip_prefix(br#"{"type":""#)?;
    let prefixes: [(&[u8], Make<K>); 3] = [
        (br#"MODIFIED","object":"#, WatchEvent::Modified),
        (br#"ADDED","object":"#, WatchEvent::Added),
        (br#"DELETED","object":"#, WatchEvent::Deleted),
    ];
    let (object, make) = prefixes
        .into_iter()
        .find_map(|(prefix, make)| rest.strip_prefix(prefix).map(|object| (object, make)))?;
    // The envelope's closing brace ends the line; anything else after the object (another
    // field) makes the object's text invalid and sends the line to the general path.
    let object = object.trim_ascii_end().strip_suffix(b"}")?;
    let text = std::str::from_utf8(object).ok()?;
    exact::from_str(text).ok().map(|obj| (make(obj), text))
}

/// The `Status` of an error response: the body when it is one (its code filled in from the
/// HTTP status when missing), else a failure made from the HTTP status and the body's text.
pub(crate) fn error_status(code: StatusCode, body: &[u8]) -> Status {
    if let Ok(mut status) = serde_json::from_slice::<Status>(body)
        && (!status.reason.is_empty() || !status.message.is_empty() || status.code != 0)
    {
        if status.code == 0 {
            status.code = code.as_u16();
        }
        return status;
    }
    let text = String::from_utf8_lossy(body);
    let mut message =
        informer_core::cut_at_char_boundary(text.trim(), informer_core::EXCERPT_LIMIT).to_owned();
    if message.is_empty() {
        message = code.canonical_reason().unwrap_or("unknown").to_owned();
    }
    Status::failure(code.as_u16(), reason_for_code(code), message)
}

/// The reason the API server would give for a bare HTTP status.
fn reason_for_code(code: StatusCode) -> &'static str {
    match code.as_u16() {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        409 => "Conflict",
        410 => "Expired",
        415 => "UnsupportedMediaType",
        422 => "Invalid",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "Unknown",
    }
}

/// The `Retry-After` header as a delay: delay-seconds only (an HTTP-date is ignored, and the
/// body's `retryAfterSeconds` then applies).
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    headers
        .get(http::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse::<u64>()
        .ok()
        .map(Duration::from_secs)
}

/// The byte offset of a serde error in `input` (from its 1-based line and column).
pub(crate) fn error_offset(input: &[u8], error: &serde_json::Error) -> usize {
    let line = error.line();
    if line == 0 {
        return 0;
    }
    let line_start = if line == 1 {
        0
    } else {
        input
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .nth(line - 2)
            .map_or(input.len(), |(i, _)| i + 1)
    };
    (line_start + error.column().saturating_sub(1)).min(input.len())
}

/// Up to [`EXCERPT_LIMIT`](informer_core::EXCERPT_LIMIT) bytes of `input` around `at`.
#[cfg(any(test, feature = "fuzzing"))]
fn excerpt_around(input: &[u8], at: usize) -> &[u8] {
    let start = at.saturating_sub(informer_core::EXCERPT_LIMIT / 2);
    &input[start..input.len().min(start + informer_core::EXCERPT_LIMIT)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use informer_core::ErrorClass;
    use k8s_openapi::api::core::v1::Pod;

    fn decoded(line: &str) -> Result<WatchEvent<Pod>, Error> {
        watch_line::<Pod>(line.as_bytes(), "watching pods")
    }

    #[test]
    fn object_events_decode_into_the_type() {
        let line = r#"{"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"n","resourceVersion":"7"}}}"#;
        match decoded(line).unwrap() {
            WatchEvent::Modified(pod) => {
                assert_eq!(pod.metadata.name.as_deref(), Some("a"));
                assert_eq!(pod.metadata.resource_version.as_deref(), Some("7"));
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(matches!(
            decoded(&line.replace("MODIFIED", "ADDED")).unwrap(),
            WatchEvent::Added(_)
        ));
        assert!(matches!(
            decoded(&line.replace("MODIFIED", "DELETED")).unwrap(),
            WatchEvent::Deleted(_)
        ));
    }

    #[test]
    fn object_lines_of_any_shape_decode_the_same() {
        let object = r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"n","resourceVersion":"7","labels":{"k":"é}\"{"}}}"#;
        let key = |event: WatchEvent<Pod>| match event {
            WatchEvent::Added(p) => ("ADDED", p),
            WatchEvent::Modified(p) => ("MODIFIED", p),
            WatchEvent::Deleted(p) => ("DELETED", p),
            other => panic!("unexpected {other:?}"),
        };
        for event_type in ["ADDED", "MODIFIED", "DELETED"] {
            // As API servers write it (the shortcut), and in shapes only the general path
            // takes: spaces, fields in another order, an extra field, a trailing CR.
            for line in [
                format!(r#"{{"type":"{event_type}","object":{object}}}"#),
                format!(r#"{{"type":"{event_type}","object":{object}}}"#) + "  \r",
                format!(r#"{{ "type" : "{event_type}", "object" : {object} }}"#),
                format!(r#"{{"object":{object},"type":"{event_type}"}}"#),
                format!(r#"{{"type":"{event_type}","object":{object},"extra":{{"a":1}}}}"#),
            ] {
                let (got_type, pod) = key(decoded(&line).unwrap());
                assert_eq!(got_type, event_type, "{line}");
                assert_eq!(pod.metadata.name.as_deref(), Some("a"), "{line}");
                assert_eq!(pod.metadata.labels.unwrap()["k"], "é}\"{", "{line}");
            }
        }
        // Which lines take the shortcut.
        let shortcut = |line: &str| object_event::<Pod>(line.as_bytes()).is_some();
        assert!(shortcut(&format!(
            r#"{{"type":"MODIFIED","object":{object}}}"#
        )));
        assert!(shortcut(
            &(format!(r#"{{"type":"DELETED","object":{object}}}"#) + " \r")
        ));
        assert!(!shortcut(&format!(
            r#"{{ "type":"MODIFIED","object":{object}}}"#
        )));
        assert!(!shortcut(&format!(
            r#"{{"type":"BOOKMARK","object":{object}}}"#
        )));
        assert!(!shortcut(&format!(
            r#"{{"type":"ADDED","object":{object},"x":1}}"#
        )));
        // Lines the shortcut starts on but cannot finish still get the general path's errors.
        let bad_object = r#"{"type":"ADDED","object":{"metadata":{"name":5}}}"#;
        assert!(matches!(
            decoded(bad_object),
            Err(Error::Decode { context, .. }) if context.contains("ADDED")
        ));
        let not_utf8 = [
            br#"{"type":"ADDED","object":{"metadata":{"name":""#.as_slice(),
            &[0xff],
            br#""}}}"#,
        ]
        .concat();
        assert!(matches!(
            watch_line::<Pod>(&not_utf8, "watching pods"),
            Err(Error::Decode { .. })
        ));
        let truncated = r#"{"type":"MODIFIED","object":{"metadata":{"name":"a"}}"#;
        assert!(matches!(decoded(truncated), Err(Error::Decode { .. })));
    }

    #[test]
    fn bookmarks_carry_the_initial_events_end_annotation() {
        let plain = r#"{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"12"}}}"#;
        assert_eq!(
            format!("{:?}", decoded(plain).unwrap()),
            format!(
                "{:?}",
                WatchEvent::<Pod>::Bookmark(Bookmark {
                    resource_version: "12".into(),
                    initial_events_end: false
                })
            )
        );
        let end = r#"{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"13","annotations":{"k8s.io/initial-events-end":"true"}}}}"#;
        match decoded(end).unwrap() {
            WatchEvent::Bookmark(b) => {
                assert_eq!(b.resource_version, "13");
                assert!(b.initial_events_end);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn error_events_and_bare_statuses_are_error_events() {
        let line = r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}}"#;
        match decoded(line).unwrap() {
            WatchEvent::Error(s) => {
                assert_eq!(s.code, 410);
                assert_eq!(s.class(), ErrorClass::Expired);
            }
            other => panic!("unexpected {other:?}"),
        }
        let bare =
            r#"{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Gone","code":410}"#;
        assert!(matches!(decoded(bare).unwrap(), WatchEvent::Error(s) if s.reason == "Gone"));
    }

    #[test]
    fn bad_lines_are_typed_errors_with_the_line() {
        let err = decoded(r#"{"type":"ADDED","object":{"metadata":{"name":"#).unwrap_err();
        match &err {
            Error::Decode {
                context,
                line_excerpt,
                ..
            } => {
                assert!(context.contains("watching pods"), "{context}");
                assert!(line_excerpt.starts_with(r#"{"type":"ADDED""#));
            }
            other => panic!("unexpected {other:?}"),
        }
        // Valid JSON, wrong shape for a Pod.
        let err = decoded(r#"{"type":"ADDED","object":{"metadata":{"name":5}}}"#).unwrap_err();
        assert!(
            matches!(&err, Error::Decode { context, .. } if context.contains("ADDED")),
            "{err:?}"
        );
        let err = decoded(r#"{"type":"SURPRISE","object":{}}"#).unwrap_err();
        assert!(
            matches!(&err, Error::UnknownEventType { event_type, .. } if event_type == "SURPRISE")
        );
        assert_eq!(err.class(), ErrorClass::Decode);
        assert!(matches!(
            decoded(r#"{"object":{}}"#),
            Err(Error::Decode { .. })
        ));
        assert!(matches!(
            decoded(r#"{"type":"ADDED"}"#),
            Err(Error::Decode { .. })
        ));
    }

    #[test]
    fn list_bodies_decode_with_their_metadata() {
        let body = br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"42","continue":"abc","remainingItemCount":3},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}"#;
        let page = list_page::<Pod>(body, "listing pods").unwrap();
        assert_eq!(page.items.len(), 2);
        assert_eq!(page.resource_version, "42");
        assert_eq!(page.continue_token.as_deref(), Some("abc"));
        assert_eq!(page.remaining_item_count, Some(3));
        let empty =
            br#"{"kind":"PodList","metadata":{"resourceVersion":"9","continue":""},"items":null}"#;
        let page = list_page::<Pod>(empty, "listing pods").unwrap();
        assert!(page.items.is_empty());
        assert_eq!(page.continue_token, None);
    }

    #[test]
    fn trailing_bytes_after_a_list_are_refused() {
        let trailing = list_page::<Pod>(br#"{"items":[]} x"#, "listing pods");
        assert!(matches!(trailing, Err(Error::Decode { .. })));
    }

    #[test]
    fn list_decode_errors_point_at_the_offending_bytes() {
        let mut body = String::from(r#"{"metadata":{"resourceVersion":"1"},"items":["#);
        for i in 0..50 {
            body.push_str(&format!(r#"{{"metadata":{{"name":"pod-{i}"}}}},"#));
        }
        body.push_str(r#"{"metadata":{"name":"broken","labels":7}}]}"#);
        let err = list_page::<Pod>(body.as_bytes(), "listing pods").unwrap_err();
        match &err {
            Error::Decode {
                context,
                line_excerpt,
                ..
            } => {
                assert!(context.contains("listing pods"), "{context}");
                assert!(line_excerpt.contains("broken"), "{line_excerpt}");
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn list_bodies_that_are_not_utf8_are_decode_errors_at_the_bad_byte() {
        let mut body =
            br#"{"metadata":{"resourceVersion":"1"},"items":[{"metadata":{"name":"a"#.to_vec();
        body.extend_from_slice(&[0xff, 0xfe]);
        body.extend_from_slice(br#""}}]}"#);
        match list_page::<Pod>(&body, "listing pods").unwrap_err() {
            Error::Decode {
                context,
                line_excerpt,
                ..
            } => {
                assert!(context.contains("listing pods"), "{context}");
                assert!(context.contains("invalid UTF-8 at byte 67"), "{context}");
                assert!(line_excerpt.contains(r#""name":"a"#), "{line_excerpt}");
            }
            other => panic!("unexpected {other:?}"),
        }
        // Multi-byte characters are fine.
        let page = list_page::<Pod>(
            r#"{"items":[{"metadata":{"name":"a","labels":{"k":"é ✓"}}}]}"#.as_bytes(),
            "listing pods",
        )
        .unwrap();
        assert_eq!(page.items[0].metadata.labels.as_ref().unwrap()["k"], "é ✓");
    }

    #[test]
    fn error_responses_become_statuses() {
        let body = br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Timeout: Too large resource version: 9, current: 5","reason":"Timeout","details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}],"retryAfterSeconds":1},"code":504}"#;
        let status = error_status(StatusCode::GATEWAY_TIMEOUT, body);
        assert_eq!(status.class(), ErrorClass::ResourceVersionTooLarge);
        assert_eq!(status.retry_after(), Some(Duration::from_secs(1)));
        let plain = error_status(StatusCode::TOO_MANY_REQUESTS, b"slow down\n");
        assert_eq!(plain.code, 429);
        assert_eq!(plain.message, "slow down");
        assert_eq!(plain.class(), ErrorClass::Throttled);
        let gone = error_status(StatusCode::GONE, b"");
        assert_eq!(gone.class(), ErrorClass::Expired);
        let mut headers = HeaderMap::new();
        headers.insert(http::header::RETRY_AFTER, "3".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(3)));
        headers.insert(
            http::header::RETRY_AFTER,
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&headers), None);
    }
}
