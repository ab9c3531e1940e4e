//! Entry points into the decoders of untrusted input, for the fuzz targets in `fuzz/` and the
//! property tests (feature `fuzzing`; not for applications). Each function decodes what a
//! server could send and checks the invariants the decoders promise, panicking when one
//! breaks: no input may make a decoder panic, and every decoder must agree with its
//! reference.

use informer_core::{Error, ListPageInfo, WatchEvent};
use k8s_openapi::api::core::v1::Pod;
use serde::de::DeserializeOwned;

use crate::buffer::{DecoderMemory, SLICE};
use crate::list_stream::ListDecoder;

/// Decodes one watch line as a pod event. Never panics; an error is typed. The text an
/// object event carries decodes to the same pod.
pub fn watch_line(line: &[u8]) -> Result<WatchEvent<Pod>, Error> {
    let (event, text) = crate::decode::watch_line_with_text::<Pod>(line, "fuzzing")?;
    if let (
        WatchEvent::Added(pod) | WatchEvent::Modified(pod) | WatchEvent::Deleted(pod),
        Some(text),
    ) = (&event, text)
    {
        let again: Pod = serde_json::from_str(text)
            .unwrap_or_else(|e| panic!("the text of a decoded object does not decode: {e}"));
        assert_eq!(
            &again, pod,
            "the text of an object decodes to another object"
        );
    }
    Ok(event)
}

/// Decodes a list body as pods, fed in pieces of the given sizes (cycled; zero sizes are
/// skipped), and checks that the result agrees with the whole-body decoder: the same items
/// and metadata, or an error from both. Also checks that the decoder's buffers never held
/// more than `max_value` plus one read slice. Returns the streaming result.
pub fn list_body(
    body: &[u8],
    chunks: &[usize],
    max_value: usize,
) -> Result<(Vec<Pod>, ListPageInfo), Error> {
    let memory = DecoderMemory::default();
    let streamed = stream_list::<Pod>(body, chunks, max_value, &memory);
    assert!(
        memory.peak_held_bytes() <= max_value.saturating_add(SLICE),
        "decoder held {} bytes with a cap of {max_value}",
        memory.peak_held_bytes()
    );
    assert_eq!(memory.held_bytes(), 0, "decoder kept memory after the body");
    let whole = crate::decode::list_page::<Pod>(body, "fuzzing");
    match (&streamed, &whole) {
        (Ok((items, info)), Ok(page)) => {
            assert_eq!(items, &page.items, "items differ");
            assert_eq!(info.resource_version, page.resource_version);
            assert_eq!(info.continue_token, page.continue_token);
            assert_eq!(info.remaining_item_count, page.remaining_item_count);
        }
        (Err(_), Err(_)) => {}
        (Err(e), Ok(_)) => {
            // The only refusals the whole-body decoder cannot make: a value over the cap.
            assert!(
                e.limit_exceeded().is_some(),
                "streaming refused what the whole-body decoder accepts: {e}"
            );
        }
        (Ok(_), Err(e)) => panic!("streaming accepted what the whole-body decoder refuses: {e}"),
    }
    streamed
}

/// The streaming list decoder alone.
fn stream_list<K: DeserializeOwned + Send>(
    body: &[u8],
    chunks: &[usize],
    max_value: usize,
    memory: &DecoderMemory,
) -> Result<(Vec<K>, ListPageInfo), Error> {
    let mut items = Vec::new();
    let mut decoder = ListDecoder::<K>::new("fuzzing", memory.clone(), max_value);
    let mut rest = body;
    let mut sizes = chunks.iter().copied().filter(|n| *n > 0).cycle();
    while !rest.is_empty() {
        let n = sizes.next().unwrap_or(rest.len()).min(rest.len());
        let (now, later) = rest.split_at(n);
        decoder.feed(now, &mut items)?;
        rest = later;
    }
    let info = decoder.finish()?;
    Ok((items, info))
}

/// Decodes `text` as a `K` with exact `Vec` capacities and plainly, and checks that both give
/// the same value, or the same error. Returns whether it decoded.
pub fn exact_matches_plain<K>(text: &str) -> bool
where
    K: DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let exact = crate::exact::from_str::<K>(text);
    let plain = serde_json::from_str::<K>(text);
    match (exact, plain) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a, b, "hinted and plain decodes differ");
            true
        }
        (Err(a), Err(b)) => {
            assert_eq!(a.to_string(), b.to_string(), "errors differ");
            false
        }
        (a, b) => panic!("hinted {:?} but plain {:?}", a.is_ok(), b.is_ok()),
    }
}

/// The element count of every array in `text` (the exact decoder's pre-pass). Never panics.
pub fn array_lengths(text: &[u8]) -> Vec<u32> {
    crate::exact::array_lengths(text)
}
