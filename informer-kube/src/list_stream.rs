//! Decoding a list response as it arrives: `{"metadata": {..}, "items": [..], ..}` split into
//! its members and the elements of `items`, each item decoded as soon as its
//! last byte is in, then dropped from the buffer.
//!
//! Sans-IO: [`ListDecoder::feed`] takes bytes as they come off the wire, in any chunking, and
//! hands decoded items to a [`ListSink`]; [`ListDecoder::finish`] checks that the document
//! ended properly and returns the page's metadata. The buffer holds one item (or one top-level
//! member) plus at most one read slice, never the body: a list of a hundred thousand objects
//! answered in one response costs one object's text at a time, not the whole body beside the
//! decoded list. No value longer than the frame cap is accepted.
//!
//! The splitter only finds where values begin and end (strings, escapes, nesting); the values
//! themselves are parsed by serde_json, which reports any syntax error inside them. The
//! structure around them (the top-level object, the `items` array) is checked here as
//! strictly as serde_json would.

use std::marker::PhantomData;

use informer_core::{Error, ItemPeek, Limit, ListPageInfo, ListSink};
use serde::de::{DeserializeOwned, IgnoredAny};

use crate::buffer::{DecoderMemory, SLICE, TrackedBuf};
use crate::decode::ListMeta;
use crate::exact;

/// Decodes one list response body as it arrives.
pub(crate) struct ListDecoder<'a, K> {
    splitter: Splitter,
    context: &'a str,
    meta: ListMeta,
    items: usize,
    bytes: u64,
    /// Whether the sink wants each item's identity before it is decoded (asked once).
    peeks: Option<bool>,
    /// Whether the sink takes items as text, not decoded (asked once).
    takes_text: Option<bool>,
    _items: PhantomData<fn() -> K>,
}

impl<'a, K: DeserializeOwned> ListDecoder<'a, K> {
    /// A decoder for one body. `context` names the request in errors; values (items, members)
    /// longer than `max_value` bytes fail the list.
    pub(crate) fn new(context: &'a str, memory: DecoderMemory, max_value: usize) -> Self {
        Self {
            splitter: Splitter::new(memory, max_value),
            context,
            meta: ListMeta::default(),
            items: 0,
            bytes: 0,
            peeks: None,
            takes_text: None,
            _items: PhantomData,
        }
    }

    /// Feeds the next bytes of the body: every item completed by them goes to `sink`, with
    /// its text ([`ListSink::item_raw`]); when the sink [peeks](ListSink::peeks), each item's
    /// metadata is read first and an item the sink holds unchanged is not decoded.
    pub(crate) fn feed(&mut self, data: &[u8], sink: &mut dyn ListSink<K>) -> Result<(), Error> {
        if self.peeks.is_none() {
            self.peeks = Some(sink.peeks());
            self.takes_text = Some(sink.takes_text());
        }
        for slice in data.chunks(SLICE) {
            sink.received(slice.len() as u64)?;
            self.bytes += slice.len() as u64;
            self.splitter.push(slice);
            while let Some(piece) = self.splitter.next().map_err(|e| self.error(e))? {
                self.take(piece, sink)?;
            }
        }
        Ok(())
    }

    /// The body has ended: checks that the document was complete, and returns what the page
    /// says about itself.
    pub(crate) fn finish(mut self) -> Result<ListPageInfo, Error> {
        self.splitter.finish().map_err(|e| self.error(e))?;
        self.splitter.buf.release();
        let meta = std::mem::take(&mut self.meta);
        Ok(ListPageInfo::new(
            meta.resource_version.unwrap_or_default(),
            meta.continue_token,
        )
        .with_remaining_item_count(meta.remaining_item_count)
        .with_items(self.items)
        .with_bytes(self.bytes)
        .with_shard_info_selector(meta.shard_info.and_then(|i| i.selector)))
    }

    fn take(&mut self, piece: Piece, sink: &mut dyn ListSink<K>) -> Result<(), Error> {
        let text = &self.splitter.bytes()[..piece.len];
        match piece.kind {
            PieceKind::Item => {
                self.items += 1;
                let text = item_text(text, self.items, piece.offset, self.context)?;
                if self.takes_text == Some(true) {
                    // Read, not decoded: the metadata, and a check that the text is JSON.
                    let peek = ItemPeek::of(text).map_err(|e| {
                        let at = crate::decode::error_offset(text.as_bytes(), &e);
                        item_error(
                            text.as_bytes(),
                            self.items,
                            piece.offset,
                            self.context,
                            at,
                            Box::new(e),
                        )
                    })?;
                    if self.peeks == Some(true) && sink.unchanged(&peek)? {
                        return Ok(());
                    }
                    return sink.item_text(&peek, text);
                }
                if self.peeks == Some(true)
                    && let Ok(peek) = ItemPeek::of(text)
                    && sink.unchanged(&peek)?
                {
                    return Ok(());
                }
                let item = decode_item::<K>(text, self.items, piece.offset, self.context)?;
                sink.item_raw(item, text)
            }
            PieceKind::Member(key) => {
                // Checked as text first: skipping a value (and the fields of the metadata
                // that are not read) does not check the UTF-8 of its strings.
                let text = std::str::from_utf8(text).map_err(|e| {
                    Error::decode(
                        format!(
                            "the list member {key:?} while {} (invalid UTF-8 at byte {})",
                            self.context,
                            piece.offset + e.valid_up_to() as u64
                        ),
                        text,
                        e,
                    )
                })?;
                let fail = |e: serde_json::Error| {
                    Error::decode(
                        format!(
                            "the list member {key:?} while {} (at byte {})",
                            self.context, piece.offset
                        ),
                        text.as_bytes(),
                        e,
                    )
                };
                if key == "metadata" {
                    self.meta = serde_json::from_str(text).map_err(fail)?;
                } else {
                    serde_json::from_str::<IgnoredAny>(text).map_err(fail)?;
                }
                Ok(())
            }
        }
    }

    fn error(&self, error: SplitError) -> Error {
        match error {
            SplitError::TooLarge { offset, limit } => Error::limit(
                format!(
                    "reading the list response while {} (a value from byte {offset})",
                    self.context
                ),
                Limit::FrameBytes(limit as u64),
            ),
            SplitError::Syntax { offset, reason } => Error::decode(
                format!(
                    "the list response while {} (at byte {offset})",
                    self.context
                ),
                self.splitter.excerpt(),
                reason,
            ),
        }
    }
}

/// The error of item `number` (1-based, at `offset` in the body) failing at byte `at` of
/// its `text`.
fn item_error(
    text: &[u8],
    number: usize,
    offset: u64,
    context: &str,
    at: usize,
    source: Box<dyn std::error::Error + Send + Sync>,
) -> Error {
    let start = at.saturating_sub(informer_core::EXCERPT_LIMIT / 2);
    Error::decode(
        format!(
            "item {number} of the list response while {context} (at byte {})",
            offset + at as u64
        ),
        &text[start..text.len().min(start + informer_core::EXCERPT_LIMIT)],
        source,
    )
}

/// One item's bytes as text (checked as UTF-8 once, for the peek and the decode).
fn item_text<'t>(
    text: &'t [u8],
    number: usize,
    offset: u64,
    context: &str,
) -> Result<&'t str, Error> {
    std::str::from_utf8(text).map_err(|e| {
        let at = e.valid_up_to();
        item_error(text, number, offset, context, at, Box::new(e))
    })
}

/// Decodes one item's text; `number` (1-based) and `offset` (in the body) are for errors.
fn decode_item<K: DeserializeOwned>(
    text: &str,
    number: usize,
    offset: u64,
    context: &str,
) -> Result<K, Error> {
    exact::from_str(text).map_err(|e| {
        let at = crate::decode::error_offset(text.as_bytes(), &e);
        item_error(text.as_bytes(), number, offset, context, at, Box::new(e))
    })
}

/// A complete value at the start of the splitter's buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Piece {
    pub(crate) kind: PieceKind,
    /// Its length in bytes.
    pub(crate) len: usize,
    /// Where it starts in the body.
    pub(crate) offset: u64,
}

/// What a [`Piece`] is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PieceKind {
    /// An element of `items`.
    Item,
    /// The value of another top-level member, with its key.
    Member(String),
}

/// Why the body is not a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SplitError {
    /// A value longer than the cap.
    TooLarge { offset: u64, limit: usize },
    /// Not a JSON object with an `items` array.
    Syntax { offset: u64, reason: String },
}

/// Where the splitter is in the document.
#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    /// Before the top-level `{`.
    Start,
    /// After `{`: a key or `}`.
    KeyOrEnd,
    /// After `,` between members: a key.
    Key,
    /// Inside a key's string.
    InKey(Scan),
    /// After a key: `:`.
    Colon(String),
    /// After `:`: the value of this key.
    Value(String),
    /// Inside a member's value.
    InValue(String, Scan),
    /// After a member: `,` or `}`.
    AfterMember,
    /// After `"items":`: `[` or `null`.
    ItemsStart,
    /// Inside a `null` given as `items` (or garbage in its place).
    InItemsNull(Scan),
    /// After `[`: an item or `]`.
    ItemOrEnd,
    /// After `,` between items: an item.
    Item,
    /// Inside an item.
    InItem(Scan),
    /// After an item: `,` or `]`.
    AfterItem,
    /// After the top-level `}`: only whitespace may follow.
    Done,
}

/// The resumable scan of one value whose first byte is at the buffer's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Scan {
    /// Bytes of the value scanned so far.
    pos: usize,
    kind: ScanKind,
    /// Open brackets and braces (containers).
    depth: u32,
    /// Inside a string (containers).
    in_string: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ScanKind {
    Container,
    String,
    Scalar,
}

impl Scan {
    fn new(first: u8) -> Self {
        let kind = match first {
            b'{' | b'[' => ScanKind::Container,
            b'"' => ScanKind::String,
            _ => ScanKind::Scalar,
        };
        Self {
            pos: usize::from(kind != ScanKind::Scalar),
            kind,
            depth: u32::from(kind == ScanKind::Container),
            in_string: kind == ScanKind::String,
        }
    }

    /// Scans on through `bytes` (the value from its start): the value's length once its end
    /// is in, else `None` (more bytes needed).
    fn advance(&mut self, bytes: &[u8]) -> Option<usize> {
        loop {
            if self.in_string {
                match memchr::memchr2(b'"', b'\\', &bytes[self.pos..]) {
                    None => {
                        self.pos = bytes.len();
                        return None;
                    }
                    Some(at) if bytes[self.pos + at] == b'\\' => {
                        if self.pos + at + 1 >= bytes.len() {
                            // The escaped byte has not arrived: look at the backslash again.
                            self.pos += at;
                            return None;
                        }
                        self.pos += at + 2;
                    }
                    Some(at) => {
                        self.pos += at + 1;
                        self.in_string = false;
                        if self.kind == ScanKind::String {
                            return Some(self.pos);
                        }
                    }
                }
                continue;
            }
            match self.kind {
                ScanKind::Scalar => {
                    return match bytes[self.pos..]
                        .iter()
                        .position(|b| is_whitespace(*b) || matches!(b, b',' | b'}' | b']'))
                    {
                        Some(at) => Some(self.pos + at),
                        None => {
                            self.pos = bytes.len();
                            None
                        }
                    };
                }
                // A string scan returns at its closing quote, so it is never outside its
                // string here; were it, the string would have ended.
                ScanKind::String => return Some(self.pos),
                ScanKind::Container => {
                    while self.pos < bytes.len() {
                        let b = bytes[self.pos];
                        self.pos += 1;
                        match b {
                            b'"' => {
                                self.in_string = true;
                                break;
                            }
                            b'{' | b'[' => self.depth += 1,
                            b'}' | b']' => {
                                self.depth -= 1;
                                if self.depth == 0 {
                                    return Some(self.pos);
                                }
                            }
                            _ => {}
                        }
                    }
                    if !self.in_string {
                        return None;
                    }
                }
            }
        }
    }
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t')
}

/// Splits a list body into [`Piece`]s.
pub(crate) struct Splitter {
    buf: TrackedBuf,
    state: State,
    /// Body bytes consumed before the buffer's start.
    consumed: u64,
    max_value: usize,
    /// A piece returned by `next`, consumed at the next call.
    pending: usize,
    items_seen: bool,
}

impl Splitter {
    pub(crate) fn new(memory: DecoderMemory, max_value: usize) -> Self {
        Self {
            buf: TrackedBuf::new(memory, max_value.saturating_add(SLICE)),
            state: State::Start,
            consumed: 0,
            max_value,
            pending: 0,
            items_seen: false,
        }
    }

    /// Appends the next bytes of the body.
    pub(crate) fn push(&mut self, data: &[u8]) {
        let pending = std::mem::take(&mut self.pending);
        self.consume(pending);
        self.buf.push(data);
    }

    /// The unconsumed bytes (a piece returned by [`next`](Self::next) starts them).
    pub(crate) fn bytes(&self) -> &[u8] {
        self.buf.bytes()
    }

    fn consume(&mut self, n: usize) {
        self.buf.consume(n);
        self.consumed += n as u64;
    }

    fn syntax(&self, at: usize, reason: impl Into<String>) -> SplitError {
        SplitError::Syntax {
            offset: self.consumed + at as u64,
            reason: reason.into(),
        }
    }

    /// Up to an excerpt's worth of the bytes where the splitter stands.
    pub(crate) fn excerpt(&self) -> &[u8] {
        let bytes = self.buf.bytes();
        &bytes[..bytes.len().min(informer_core::EXCERPT_LIMIT)]
    }

    /// Skips whitespace; the next byte, if one has arrived.
    fn peek(&mut self) -> Option<u8> {
        let bytes = self.buf.bytes();
        let skip = bytes.iter().take_while(|b| is_whitespace(**b)).count();
        self.consume(skip);
        self.buf.bytes().first().copied()
    }

    /// The next complete piece, `None` when more bytes are needed. The piece's bytes start
    /// [`bytes`](Self::bytes) until the next call.
    pub(crate) fn next(&mut self) -> Result<Option<Piece>, SplitError> {
        let pending = std::mem::take(&mut self.pending);
        self.consume(pending);
        loop {
            match std::mem::replace(&mut self.state, State::Done) {
                State::Start => match self.peek() {
                    None => return self.wait(State::Start),
                    Some(b'{') => {
                        self.consume(1);
                        self.state = State::KeyOrEnd;
                    }
                    Some(_) => return Err(self.syntax(0, "a list response is a JSON object")),
                },
                state @ (State::KeyOrEnd | State::Key) => {
                    let or_end = state == State::KeyOrEnd;
                    match self.peek() {
                        None => {
                            return self.wait(if or_end { State::KeyOrEnd } else { State::Key });
                        }
                        Some(b'}') if or_end => {
                            self.consume(1);
                            self.state = State::Done;
                        }
                        Some(b'"') => self.state = State::InKey(Scan::new(b'"')),
                        Some(_) => return Err(self.syntax(0, "expected a member name")),
                    }
                }
                State::InKey(mut scan) => match scan.advance(self.buf.bytes()) {
                    None => {
                        self.check_size(scan.pos)?;
                        return self.wait(State::InKey(scan));
                    }
                    Some(len) => {
                        self.check_size(len)?;
                        let key: String = serde_json::from_slice(&self.buf.bytes()[..len])
                            .map_err(|e| self.syntax(0, format!("a member name: {e}")))?;
                        self.consume(len);
                        self.state = State::Colon(key);
                    }
                },
                State::Colon(key) => match self.peek() {
                    None => return self.wait(State::Colon(key)),
                    Some(b':') => {
                        self.consume(1);
                        if key == "items" {
                            if self.items_seen {
                                return Err(self.syntax(0, "\"items\" appears twice"));
                            }
                            self.items_seen = true;
                            self.state = State::ItemsStart;
                        } else {
                            self.state = State::Value(key);
                        }
                    }
                    Some(_) => return Err(self.syntax(0, "expected ':' after a member name")),
                },
                State::Value(key) => match self.peek() {
                    None => return self.wait(State::Value(key)),
                    Some(b',' | b'}' | b']' | b':') => {
                        return Err(self.syntax(0, "expected a value"));
                    }
                    Some(first) => self.state = State::InValue(key, Scan::new(first)),
                },
                State::InValue(key, mut scan) => match scan.advance(self.buf.bytes()) {
                    None => {
                        self.check_size(scan.pos)?;
                        return self.wait(State::InValue(key, scan));
                    }
                    Some(len) => {
                        self.check_size(len)?;
                        self.state = State::AfterMember;
                        return Ok(Some(self.piece(PieceKind::Member(key), len)));
                    }
                },
                State::AfterMember => match self.peek() {
                    None => return self.wait(State::AfterMember),
                    Some(b',') => {
                        self.consume(1);
                        self.state = State::Key;
                    }
                    Some(b'}') => {
                        self.consume(1);
                        self.state = State::Done;
                    }
                    Some(_) => return Err(self.syntax(0, "expected ',' or '}' after a member")),
                },
                State::ItemsStart => match self.peek() {
                    None => return self.wait(State::ItemsStart),
                    Some(b'[') => {
                        self.consume(1);
                        self.state = State::ItemOrEnd;
                    }
                    Some(b'n') => self.state = State::InItemsNull(Scan::new(b'n')),
                    Some(_) => return Err(self.syntax(0, "\"items\" is not an array")),
                },
                State::InItemsNull(mut scan) => match scan.advance(self.buf.bytes()) {
                    None if scan.pos > 4 => {
                        return Err(self.syntax(0, "\"items\" is not an array"));
                    }
                    None => return self.wait(State::InItemsNull(scan)),
                    Some(len) => {
                        if &self.buf.bytes()[..len] != b"null" {
                            return Err(self.syntax(0, "\"items\" is not an array"));
                        }
                        self.consume(len);
                        self.state = State::AfterMember;
                    }
                },
                state @ (State::ItemOrEnd | State::Item) => {
                    let or_end = state == State::ItemOrEnd;
                    match self.peek() {
                        None => {
                            return self.wait(if or_end {
                                State::ItemOrEnd
                            } else {
                                State::Item
                            });
                        }
                        Some(b']') if or_end => {
                            self.consume(1);
                            self.state = State::AfterMember;
                        }
                        Some(b',' | b'}' | b']' | b':') => {
                            return Err(self.syntax(0, "expected an item"));
                        }
                        Some(first) => self.state = State::InItem(Scan::new(first)),
                    }
                }
                State::InItem(mut scan) => match scan.advance(self.buf.bytes()) {
                    None => {
                        self.check_size(scan.pos)?;
                        return self.wait(State::InItem(scan));
                    }
                    Some(len) => {
                        self.check_size(len)?;
                        self.state = State::AfterItem;
                        return Ok(Some(self.piece(PieceKind::Item, len)));
                    }
                },
                State::AfterItem => match self.peek() {
                    None => return self.wait(State::AfterItem),
                    Some(b',') => {
                        self.consume(1);
                        self.state = State::Item;
                    }
                    Some(b']') => {
                        self.consume(1);
                        self.state = State::AfterMember;
                    }
                    Some(_) => return Err(self.syntax(0, "expected ',' or ']' after an item")),
                },
                State::Done => {
                    return match self.peek() {
                        None => self.wait(State::Done),
                        Some(_) => Err(self.syntax(0, "trailing characters after the list")),
                    };
                }
            }
        }
    }

    /// The body ended: the document must be complete.
    pub(crate) fn finish(&mut self) -> Result<(), SplitError> {
        let pending = std::mem::take(&mut self.pending);
        self.consume(pending);
        // A scalar member value at the very end cannot be complete without its `}`; anything
        // but `Done` is a truncated document.
        if self.next()?.is_some() || self.state != State::Done {
            return Err(self.syntax(self.buf.len(), "the list response ended early"));
        }
        Ok(())
    }

    fn piece(&mut self, kind: PieceKind, len: usize) -> Piece {
        self.pending = len;
        Piece {
            kind,
            len,
            offset: self.consumed,
        }
    }

    fn wait(&mut self, state: State) -> Result<Option<Piece>, SplitError> {
        self.state = state;
        // Whatever is left is the start of the current value (or nothing): keep memory small
        // between values.
        self.buf.shrink_if_empty(SLICE * 2);
        Ok(None)
    }

    fn check_size(&self, len: usize) -> Result<(), SplitError> {
        if len > self.max_value {
            return Err(SplitError::TooLarge {
                offset: self.consumed,
                limit: self.max_value,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use informer_core::ErrorClass;
    use k8s_openapi::api::core::v1::Pod;

    use super::*;

    /// Decodes `body` fed `chunk` bytes at a time.
    fn decode(body: &[u8], chunk: usize, max: usize) -> Result<(Vec<Pod>, ListPageInfo), Error> {
        let memory = DecoderMemory::default();
        let mut items = Vec::new();
        let mut decoder = ListDecoder::<Pod>::new("listing pods", memory.clone(), max);
        for piece in body.chunks(chunk.max(1)) {
            decoder.feed(piece, &mut items)?;
        }
        let info = decoder.finish()?;
        assert_eq!(memory.held_bytes(), 0);
        Ok((items, info))
    }

    /// A sink that records each item's text, and holds `unchanged` (name@resourceVersion).
    struct Peeking {
        peeks: bool,
        unchanged: &'static str,
        texts: Vec<String>,
        skipped: Vec<String>,
    }

    impl ListSink<Pod> for Peeking {
        fn item(&mut self, _: Pod) -> Result<(), Error> {
            unreachable!("a backend reading JSON hands over the text too")
        }

        fn item_raw(&mut self, item: Pod, raw: &str) -> Result<(), Error> {
            let back: Pod = serde_json::from_str(raw).unwrap();
            assert_eq!(back, item, "the text decodes to the item");
            self.texts.push(raw.to_owned());
            Ok(())
        }

        fn peeks(&self) -> bool {
            self.peeks
        }

        fn unchanged(&mut self, peek: &ItemPeek<'_>) -> Result<bool, Error> {
            let seen = format!(
                "{}@{}",
                peek.name.as_deref().unwrap_or_default(),
                peek.resource_version.as_deref().unwrap_or_default()
            );
            let held = seen == self.unchanged;
            self.skipped.push(seen);
            Ok(held)
        }
    }

    /// Items go to the sink with their exact text; a sink that peeks sees each item's
    /// identity first and an item it holds is not decoded (it still counts in the page).
    #[test]
    fn items_carry_their_text_and_peeked_items_the_sink_holds_are_skipped() {
        let a = r#"{"metadata":{"name":"a","resourceVersion":"1"}}"#;
        let b = r#"{"metadata":{"name":"b","resourceVersion":"2"},"spec":{"nodeName":"n"}}"#;
        let c = r#"{"metadata" : {"resourceVersion":"3", "name":"c"}}"#;
        let body = format!(r#"{{"metadata":{{"resourceVersion":"9"}},"items":[{a}, {b},{c}]}}"#);
        for chunk in [1, 7, body.len()] {
            for peeks in [false, true] {
                let mut sink = Peeking {
                    peeks,
                    unchanged: "b@2",
                    texts: Vec::new(),
                    skipped: Vec::new(),
                };
                let mut decoder =
                    ListDecoder::<Pod>::new("listing pods", DecoderMemory::default(), 1 << 20);
                for piece in body.as_bytes().chunks(chunk) {
                    decoder.feed(piece, &mut sink).unwrap();
                }
                let info = decoder.finish().unwrap();
                assert_eq!(info.items, 3);
                if peeks {
                    assert_eq!(sink.texts, [a, c], "chunk {chunk}");
                    assert_eq!(sink.skipped, ["a@1", "b@2", "c@3"]);
                } else {
                    assert_eq!(sink.texts, [a, b, c], "chunk {chunk}");
                    assert!(sink.skipped.is_empty());
                }
            }
        }
    }

    #[test]
    fn members_in_any_order_escapes_and_chunkings() {
        let body = br#" { "items" : [ {"metadata":{"name":"a\"]}","labels":{"k":"\\"}}} ,
            {"metadata":{"name":"b"}} ] , "kind":"PodList", "x": [1, {"y": "]"}, null, -2.5e3],
            "metadata": {"resourceVersion":"7","remainingItemCount":0}, "z": true } "#;
        for chunk in [1, 2, 3, 5, 8, 13, body.len()] {
            let (items, info) = decode(body, chunk, 1 << 20).unwrap();
            assert_eq!(items.len(), 2, "chunk {chunk}");
            assert_eq!(items[0].metadata.name.as_deref(), Some("a\"]}"));
            assert_eq!(items[0].metadata.labels.as_ref().unwrap()["k"], "\\");
            assert_eq!(info.resource_version, "7");
            assert_eq!(info.remaining_item_count, Some(0));
            assert_eq!(info.items, 2);
        }
    }

    #[test]
    fn a_sharded_list_echoes_its_selector() {
        let body = br#"{"kind":"PodList","metadata":{"resourceVersion":"9","shardInfo":
            {"selector":"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"}},
            "items":[{"metadata":{"name":"a","uid":"u"}}]}"#;
        for chunk in [1, 7, body.len()] {
            let (items, info) = decode(body, chunk, 1 << 20).unwrap();
            assert_eq!(items.len(), 1);
            assert_eq!(
                info.shard_info_selector.as_deref(),
                Some("shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')")
            );
        }
        let (_, info) = decode(
            br#"{"metadata":{"resourceVersion":"9"},"items":[]}"#,
            4,
            100,
        )
        .unwrap();
        assert_eq!(info.shard_info_selector, None);
        let (_, info) = decode(br#"{"metadata":{"shardInfo":{}},"items":[]}"#, 4, 100).unwrap();
        assert_eq!(info.shard_info_selector, None);
    }

    #[test]
    fn null_and_empty_items_and_an_empty_object() {
        let (items, info) =
            decode(br#"{"items":null,"metadata":{"continue":""}}"#, 3, 100).unwrap();
        assert!(items.is_empty());
        assert_eq!(info.continue_token, None);
        assert!(decode(br#"{"items":[]}"#, 1, 100).unwrap().0.is_empty());
        assert!(decode(br#"{}"#, 1, 100).unwrap().0.is_empty());
    }

    #[test]
    fn malformed_bodies_are_decode_errors() {
        for bad in [
            &br#""#[..],
            br#"[]"#,
            br#"{"items":[{"metadata":{}}]"#,
            br#"{"items":[{"metadata":{}},]}"#,
            br#"{"items":[,]}"#,
            br#"{"items":5}"#,
            br#"{"items":nullx}"#,
            br#"{"items":[],}"#,
            br#"{"items":[]} x"#,
            br#"{"items":[] "kind":"x"}"#,
            br#"{items:[]}"#,
            br#"{"items":[],"items":[]}"#,
            br#"{"kind": tru}"#,
            br#"{"kind": }"#,
            br#"{"metadata":{"resourceVersion":5}}"#,
            br#"{"items":[{"metadata":{"name":5}}]}"#,
            b"{\"items\":[{\"metadata\":{\"name\":\"\xff\"}}]}",
        ] {
            for chunk in [1, 4, bad.len().max(1)] {
                let error = decode(bad, chunk, 1000).unwrap_err();
                assert_eq!(
                    error.class(),
                    ErrorClass::Decode,
                    "{:?}: {error}",
                    String::from_utf8_lossy(bad)
                );
            }
        }
    }

    #[test]
    fn item_errors_name_the_item_and_the_byte() {
        let body = br#"{"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b","labels":7}}]}"#;
        let error = decode(body, 7, 1000).unwrap_err();
        let text = error.to_string();
        assert!(text.contains("item 2"), "{text}");
        assert!(text.contains("listing pods"), "{text}");
        match error {
            Error::Decode { line_excerpt, .. } => assert!(line_excerpt.contains("labels")),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn values_over_the_cap_are_refused_while_they_arrive() {
        let memory = DecoderMemory::default();
        let mut items: Vec<Pod> = Vec::new();
        let mut decoder = ListDecoder::<Pod>::new("listing pods", memory.clone(), 1000);
        decoder
            .feed(br#"{"items":[{"metadata":{"name":""#, &mut items)
            .unwrap();
        let mut error = None;
        for _ in 0..100 {
            if let Err(e) = decoder.feed(&[b'a'; 100], &mut items) {
                error = Some(e);
                break;
            }
        }
        let error = error.expect("the cap was never hit");
        assert_eq!(error.limit_exceeded(), Some(Limit::FrameBytes(1000)));
        assert!(memory.peak_held_bytes() <= 1000 + SLICE);
        // A long member name is a value like any other.
        let long_key = format!(r#"{{"{}":1}}"#, "k".repeat(2000));
        let error = decode(long_key.as_bytes(), 64, 1000).unwrap_err();
        assert_eq!(error.limit_exceeded(), Some(Limit::FrameBytes(1000)));
    }

    #[test]
    fn the_sink_can_stop_the_list() {
        struct Stop(usize);
        impl ListSink<Pod> for Stop {
            fn item(&mut self, _: Pod) -> Result<(), Error> {
                self.0 += 1;
                Ok(())
            }
            fn received(&mut self, bytes: u64) -> Result<(), Error> {
                if bytes > 0 && self.0 >= 1 {
                    return Err(Error::limit("test", Limit::ListBytes(1)));
                }
                Ok(())
            }
        }
        let body = br#"{"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}"#;
        let mut decoder = ListDecoder::<Pod>::new("listing pods", DecoderMemory::default(), 1000);
        let mut sink = Stop(0);
        let result = body
            .chunks(10)
            .try_for_each(|piece| decoder.feed(piece, &mut sink));
        assert_eq!(
            result.unwrap_err().limit_exceeded(),
            Some(Limit::ListBytes(1))
        );
        assert_eq!(sink.0, 1);
    }
}
