//! Shard selectors: server-side sharded list and watch (KEP-5866), as data.
//!
//! A [`ShardSelector`] asks the API server for the objects whose hashed field falls in one of a
//! few ranges of the 64-bit hash space, so that N replicas of a controller can each list and
//! watch a slice of a resource instead of all of it. On the wire it is the `shardSelector`
//! query parameter of lists and watches (see [`ListOptions`](crate::ListOptions) and
//! [`WatchOptions`](crate::WatchOptions)):
//!
//! ```text
//! shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')
//! shardRange(object.metadata.uid, '0x0000000000000000', '0x4000000000000000') || shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')
//! ```
//!
//! # The rules (Kubernetes 1.36, alpha, feature gate `ShardedListAndWatch`)
//!
//! - The hashed field is `object.metadata.uid` or `object.metadata.namespace` (a missing value
//!   hashes as the empty string); every range of one selector hashes the same field.
//! - The hash is 64-bit FNV-1a of the field's UTF-8 bytes ([`fnv1a_64`]).
//! - A range is `[start, end)`: `start <= hash < end`. Bounds are quoted strings of `0x`
//!   followed by exactly 16 lowercase hex digits; the end may also be `0x10000000000000000`
//!   (2^64, beyond `u64`: bounds are [`u128`] here). A range must not be empty
//!   (`start < end`). Ranges joined by `||` may overlap and come in any order; an object
//!   matches when it falls in any of them.
//! - The server does not normalise bounds: `'0x0'` and `'0xFF'` are refused (it suggests the
//!   16-digit form), as is an empty selector. [`ShardSelector::parse`] refuses what the
//!   server refuses, with the server's reasons, and [`Display`](fmt::Display) renders the
//!   canonical form the server echoes back: `shardRange(<field>, '<start>', '<end>')` joined
//!   by ` || `.
//! - The server's parser is CEL's. Besides the canonical form it accepts any whitespace
//!   between tokens, `//` comments, parentheses around ranges, double quotes and raw (`r'…'`)
//!   and triple-quoted strings; so does [`ShardSelector::parse`]. It does not decode escape
//!   sequences inside the bounds (the server would): a bound with a backslash is refused.
//! - A list answered with a shard selector applied echoes it in `metadata.shardInfo.selector`
//!   ([`ListPageInfo::shard_info_selector`](crate::ListPageInfo::shard_info_selector)); a
//!   server without the feature ignores the parameter and sends everything, without the echo.
//!   [`ShardSelector::check_echo`] tells the two apart.
//!
//! # On the client
//!
//! [`ShardFilter`] is what a list-and-watch loop keeps about its selector: it filters every
//! decoded object with it whatever the server does (a server without the feature sends
//! everything), and tells from the servers' echoes (or from an object outside the shard) who
//! did the filtering ([`ShardFiltering`]). The reflector of `informer` uses it; so does any
//! other driver of [`reflector::Machine`](crate::reflector::Machine).
//!
//! # Splitting the hash space
//!
//! [`ShardRange::even_split`] gives replica `rank` of `n` its slice of `[0, 2^64)`:
//! `[⌊rank·2^64/n⌋, ⌊(rank+1)·2^64/n⌋)`, exact for every `n` a `u64` holds. The slices of all
//! ranks cover the hash space without gaps or overlaps.
//!
//! ```
//! use informer_core::shard::{ShardField, ShardRange, ShardSelector};
//!
//! let mine = ShardSelector::new(ShardField::Uid, [ShardRange::even_split(1, 2)?])?;
//! assert_eq!(
//!     mine.to_string(),
//!     "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"
//! );
//! assert_eq!(ShardSelector::parse(&mine.to_string())?, mine);
//! assert!(mine.matches_value("test-uid-123")); // FNV-1a 64: 0xd0ba679834556c0b
//! # Ok::<(), informer_core::shard::ShardSelectorError>(())
//! ```

use std::fmt;
use std::str::FromStr;

use crate::Object;

mod filter;

pub use filter::{ShardFilter, ShardFiltering};

/// One past the largest 64-bit hash: the upper bound of the whole hash space, 2^64.
pub const HASH_SPACE_END: u128 = 1 << 64;

/// The wire form of [`HASH_SPACE_END`].
const HASH_SPACE_END_TEXT: &str = "0x10000000000000000";

/// 64-bit FNV-1a of `bytes`, the hash shard selectors range over.
///
/// ```
/// assert_eq!(informer_core::shard::fnv1a_64(b"a"), 0xaf63dc4c8601ec8c);
/// ```
pub fn fnv1a_64(bytes: &[u8]) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes.iter().fold(OFFSET_BASIS, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(PRIME)
    })
}

/// The object field a shard selector hashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ShardField {
    /// `object.metadata.uid`: spreads objects evenly, independently of their names.
    Uid,
    /// `object.metadata.namespace`: keeps each namespace on one shard.
    Namespace,
}

impl ShardField {
    /// Every field the server supports.
    pub const ALL: [Self; 2] = [Self::Uid, Self::Namespace];

    /// The field path on the wire: `object.metadata.uid`, `object.metadata.namespace`.
    pub fn path(self) -> &'static str {
        match self {
            Self::Uid => "object.metadata.uid",
            Self::Namespace => "object.metadata.namespace",
        }
    }

    /// The field with this wire path.
    pub fn from_path(path: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.path() == path)
    }

    /// The value of this field in `object` (empty when absent, as the server hashes it).
    pub fn value_of<K: Object + ?Sized>(self, object: &K) -> &str {
        match self {
            Self::Uid => object.object_uid(),
            Self::Namespace => object.object_namespace(),
        }
        .unwrap_or("")
    }
}

impl fmt::Display for ShardField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.path())
    }
}

/// A non-empty range `[start, end)` of the hash space, `0 <= start < end <= 2^64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShardRange {
    start: u128,
    end: u128,
}

impl ShardRange {
    /// The whole hash space, `[0, 2^64)`.
    pub const ALL: Self = Self {
        start: 0,
        end: HASH_SPACE_END,
    };

    /// The range `[start, end)`. Fails when it is empty or ends beyond 2^64.
    pub fn new(start: u128, end: u128) -> Result<Self, ShardSelectorError> {
        if end > HASH_SPACE_END {
            return Err(ShardSelectorError::new(
                format!("[{start:#x}, {end:#x})"),
                ShardSelectorErrorKind::BeyondHashSpace { end },
            ));
        }
        if start >= end {
            return Err(ShardSelectorError::new(
                format!("[{start:#x}, {end:#x})"),
                ShardSelectorErrorKind::EmptyRange {
                    start: bound_text(start),
                    end: bound_text(end),
                },
            ));
        }
        Ok(Self { start, end })
    }

    /// Slice `rank` of `count` equal slices of the hash space (`0 <= rank < count`):
    /// `[⌊rank·2^64/count⌋, ⌊(rank+1)·2^64/count⌋)`. Every slice is non-empty, and the slices
    /// of ranks `0..count` cover `[0, 2^64)` exactly, each hash in exactly one.
    pub fn even_split(rank: u64, count: u64) -> Result<Self, ShardSelectorError> {
        if rank >= count {
            return Err(ShardSelectorError::new(
                format!("rank {rank} of {count}"),
                ShardSelectorErrorKind::InvalidSplit { rank, count },
            ));
        }
        // rank + 1 <= count <= u64::MAX, so (rank + 1) · 2^64 < 2^128: no overflow.
        let bound = |r: u64| (u128::from(r) << 64) / u128::from(count);
        Ok(Self {
            start: bound(rank),
            end: bound(rank + 1),
        })
    }

    /// The inclusive lower bound.
    pub fn start(self) -> u128 {
        self.start
    }

    /// The exclusive upper bound, at most [`HASH_SPACE_END`].
    pub fn end(self) -> u128 {
        self.end
    }

    /// How many hashes the range holds (`end - start`, up to 2^64).
    pub fn len(self) -> u128 {
        self.end - self.start
    }

    /// Always false: ranges are never empty. (For clippy's `len_without_is_empty`.)
    pub fn is_empty(self) -> bool {
        false
    }

    /// Whether `hash` lies in `[start, end)`.
    pub fn contains(self, hash: u64) -> bool {
        let hash = u128::from(hash);
        self.start <= hash && hash < self.end
    }

    /// Whether this range holds every hash of `inner`.
    pub fn covers(self, inner: ShardRange) -> bool {
        self.start <= inner.start && inner.end <= self.end
    }

    /// The hashes in both ranges, if any.
    pub fn intersection(self, other: ShardRange) -> Option<ShardRange> {
        let (start, end) = (self.start.max(other.start), self.end.min(other.end));
        (start < end).then_some(ShardRange { start, end })
    }

    /// The ranges sorted, with overlapping and adjacent ones joined: the same hashes in the
    /// fewest ranges.
    pub fn merge(mut ranges: Vec<ShardRange>) -> Vec<ShardRange> {
        ranges.sort();
        let mut out: Vec<ShardRange> = Vec::with_capacity(ranges.len());
        for range in ranges {
            match out.last_mut() {
                Some(last) if range.start <= last.end => last.end = last.end.max(range.end),
                _ => out.push(range),
            }
        }
        out
    }
}

impl fmt::Display for ShardRange {
    /// `[0x…, 0x…)` with the bounds in their wire form.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}, {})", bound_text(self.start), bound_text(self.end))
    }
}

/// A bound in its wire form: `0x` and 16 lowercase hex digits, or `0x10000000000000000`.
fn bound_text(bound: u128) -> String {
    if bound == HASH_SPACE_END {
        HASH_SPACE_END_TEXT.to_owned()
    } else {
        format!("0x{bound:016x}")
    }
}

/// A shard selector: one field and the ranges of its hash that an object may fall in.
///
/// Always holds at least one range; the ranges keep the order they were given (and parsed)
/// in, so that [`Display`](fmt::Display) gives back the same text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ShardSelector {
    field: ShardField,
    ranges: Vec<ShardRange>,
}

impl ShardSelector {
    /// A selector over `field` with these ranges (at least one).
    pub fn new(
        field: ShardField,
        ranges: impl IntoIterator<Item = ShardRange>,
    ) -> Result<Self, ShardSelectorError> {
        let ranges: Vec<ShardRange> = ranges.into_iter().collect();
        if ranges.is_empty() {
            return Err(ShardSelectorError::new(
                String::new(),
                ShardSelectorErrorKind::Empty,
            ));
        }
        Ok(Self { field, ranges })
    }

    /// Replica `rank` of `count`'s selector over `field`: one range, from
    /// [`ShardRange::even_split`].
    pub fn even_split(
        field: ShardField,
        rank: u64,
        count: u64,
    ) -> Result<Self, ShardSelectorError> {
        Ok(Self {
            field,
            ranges: vec![ShardRange::even_split(rank, count)?],
        })
    }

    /// Parses the wire form, refusing what the API server refuses (see the module docs).
    pub fn parse(text: &str) -> Result<Self, ShardSelectorError> {
        parse::selector(text).map_err(|kind| ShardSelectorError::new(text.to_owned(), kind))
    }

    /// The hashed field.
    pub fn field(&self) -> ShardField {
        self.field
    }

    /// The ranges, in order.
    pub fn ranges(&self) -> &[ShardRange] {
        &self.ranges
    }

    /// Whether a hash falls in any of the ranges.
    pub fn contains_hash(&self, hash: u64) -> bool {
        self.ranges.iter().any(|r| r.contains(hash))
    }

    /// The objects both select: the same field, and the hashes in ranges of both (ranges
    /// merged, in order). `None` when no hash is in both, or the fields differ.
    pub fn intersection(&self, other: &ShardSelector) -> Option<ShardSelector> {
        if self.field != other.field {
            return None;
        }
        let both = self
            .ranges
            .iter()
            .flat_map(|a| other.ranges.iter().filter_map(|b| a.intersection(*b)))
            .collect();
        let ranges = ShardRange::merge(both);
        (!ranges.is_empty()).then_some(ShardSelector {
            field: self.field,
            ranges,
        })
    }

    /// Whether every object `other` selects is selected by this selector too: the same
    /// field, and every range of `other` within the union of this one's.
    pub fn covers(&self, other: &ShardSelector) -> bool {
        let mine = ShardRange::merge(self.ranges.clone());
        self.field == other.field
            && other
                .ranges
                .iter()
                .all(|inner| mine.iter().any(|outer| outer.covers(*inner)))
    }

    /// Whether a field value (a uid, a namespace) belongs to this shard.
    pub fn matches_value(&self, value: &str) -> bool {
        self.contains_hash(fnv1a_64(value.as_bytes()))
    }

    /// Whether the server would send `object` to this shard.
    pub fn matches<K: Object + ?Sized>(&self, object: &K) -> bool {
        self.matches_value(self.field.value_of(object))
    }

    /// What a list answer's `metadata.shardInfo.selector` says about this selector, sent with
    /// the request.
    pub fn check_echo(&self, echo: Option<&str>) -> ShardEcho {
        match echo {
            None => ShardEcho::Ignored,
            Some(text) => match Self::parse(text) {
                Ok(applied) if applied == *self => ShardEcho::Applied,
                _ => ShardEcho::Different(text.to_owned()),
            },
        }
    }
}

impl fmt::Display for ShardSelector {
    /// The canonical wire form, as the server echoes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, range) in self.ranges.iter().enumerate() {
            if i > 0 {
                f.write_str(" || ")?;
            }
            write!(
                f,
                "shardRange({}, '{}', '{}')",
                self.field.path(),
                bound_text(range.start),
                bound_text(range.end)
            )?;
        }
        Ok(())
    }
}

impl FromStr for ShardSelector {
    type Err = ShardSelectorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// What a list answer says about the shard selector of its request.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ShardEcho {
    /// The answer echoes the selector: the server filtered the list.
    Applied,
    /// No echo: the server ignored the parameter (no `ShardedListAndWatch`) and the list is the
    /// whole collection. Filter on the client ([`ShardSelector::matches`]) or give up sharding.
    Ignored,
    /// The echo is another selector (or does not parse).
    Different(String),
}

/// A shard selector or range that is not valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid shard selector {selector:?}: {kind}")]
pub struct ShardSelectorError {
    /// The selector (or range, or split) as given.
    pub selector: String,
    /// What is wrong with it.
    pub kind: ShardSelectorErrorKind,
}

impl ShardSelectorError {
    fn new(selector: String, kind: ShardSelectorErrorKind) -> Self {
        Self { selector, kind }
    }
}

/// Which of the server's rules a shard selector breaks. The messages are the API server's,
/// where it has one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShardSelectorErrorKind {
    /// Nothing but whitespace (or no ranges).
    #[error("empty shard selector is not allowed; omit the parameter for unfiltered lists")]
    Empty,
    /// Not the grammar at all.
    #[error("syntax error at byte {at}: expected {expected}, found {found}")]
    Syntax {
        /// Byte offset in the selector.
        at: usize,
        /// What could come there.
        expected: &'static str,
        /// What came (a token, or "the end").
        found: String,
    },
    /// A function or operator other than `shardRange()` and `||` (operators are named as CEL
    /// names them: `_&&_`, `_>_`, `!_`).
    #[error("unsupported function {0:?}; only shardRange() and || are allowed")]
    UnsupportedFunction(String),
    /// The root (or a side of `||`) is not a `shardRange()` call.
    #[error("unexpected expression kind {0}; expected shardRange() call or || operator")]
    UnexpectedExpression(&'static str),
    /// `shardRange` with other than three arguments.
    #[error("shardRange() requires exactly 3 arguments, got {0}")]
    ArgumentCount(usize),
    /// The first argument is not a field path.
    #[error(
        "shardRange() first argument: expected field path (e.g. object.metadata.uid), got \
         expression kind {0}"
    )]
    FieldPathExpected(&'static str),
    /// A field path the server does not shard by.
    #[error(
        "unsupported field path {0:?}; supported: object.metadata.uid, object.metadata.namespace"
    )]
    UnsupportedField(String),
    /// A bound that is not a string literal.
    #[error("{arg} must be a string literal (e.g. '0xff'), got expression kind {found}")]
    NotStringLiteral {
        /// `hexStart` or `hexEnd`.
        arg: &'static str,
        /// What it is instead.
        found: &'static str,
    },
    /// A bound with an escape sequence (the server would decode it; we do not).
    #[error("{arg}: escape sequences are not supported in bounds, got {value:?}")]
    Escape {
        /// `hexStart` or `hexEnd`.
        arg: &'static str,
        /// The literal's text.
        value: String,
    },
    /// A bound without the `0x` prefix.
    #[error("{arg} must have '0x' prefix, got {value:?}")]
    MissingPrefix {
        /// `hexStart` or `hexEnd`.
        arg: &'static str,
        /// The bound.
        value: String,
    },
    /// `'0x'` alone.
    #[error("{arg}: hex value is required after '0x'")]
    MissingDigits {
        /// `hexStart` or `hexEnd`.
        arg: &'static str,
    },
    /// More than 17 digits.
    #[error("{arg}: hex value too long ({len} chars, max 17): {digits:?}")]
    TooLong {
        /// `hexStart` or `hexEnd`.
        arg: &'static str,
        /// How many digits.
        len: usize,
        /// The digits.
        digits: String,
    },
    /// A character other than `0-9a-f` (upper case included).
    #[error("{arg}: invalid hex character {ch:?} in {value:?}")]
    InvalidDigit {
        /// `hexStart` or `hexEnd`.
        arg: &'static str,
        /// The first bad character.
        ch: char,
        /// The bound.
        value: String,
    },
    /// 17 digits other than 2^64.
    #[error("{arg}: 17-digit hex value must be '0x10000000000000000' (2^64), got {value:?}")]
    NotHashSpaceEnd {
        /// `hexStart` or `hexEnd`.
        arg: &'static str,
        /// The bound.
        value: String,
    },
    /// Fewer than 16 digits: the server does not pad.
    #[error(
        "{arg} must be a 0x-prefixed 16-digit hex value, got {value:?} (did you mean {padded:?}?)"
    )]
    NotSixteenDigits {
        /// `hexStart` or `hexEnd`.
        arg: &'static str,
        /// The bound.
        value: String,
        /// The same value with 16 digits.
        padded: String,
    },
    /// `start >= end`.
    #[error("shard range start {start} must be less than end {end}")]
    EmptyRange {
        /// The start, in wire form.
        start: String,
        /// The end, in wire form.
        end: String,
    },
    /// A range ending beyond 2^64 (only from [`ShardRange::new`]).
    #[error("range end {end:#x} is beyond the hash space (2^64)")]
    BeyondHashSpace {
        /// The end.
        end: u128,
    },
    /// Ranges over different fields in one selector.
    #[error("all shard ranges must use the same field, got {0:?} and {1:?}")]
    MixedFields(String, String),
    /// `rank >= count` in an even split (no slice, or no slices at all).
    #[error("rank {rank} is not one of {count} shards")]
    InvalidSplit {
        /// The rank asked for.
        rank: u64,
        /// How many shards.
        count: u64,
    },
}

/// The parser: a small recursive descent over the part of CEL the server accepts.
mod parse {
    use super::{HASH_SPACE_END, HASH_SPACE_END_TEXT, ShardField, ShardRange, ShardSelector};
    use super::{ShardSelectorErrorKind as E, bound_text};

    /// A token and where it starts.
    #[derive(Debug, Clone, PartialEq)]
    enum Tok {
        Ident(String),
        /// A string literal's content; `raw` when no escapes apply (`r'…'`).
        Str {
            text: String,
            raw: bool,
        },
        /// A bytes literal (`b'…'`): not a string to CEL.
        Bytes,
        /// A number literal (any form).
        Number,
        LParen,
        RParen,
        Comma,
        Dot,
        OrOr,
        /// Any other CEL operator, by its CEL function name (`_&&_`, `!_`, ...).
        Op(&'static str),
        End,
    }

    fn describe(tok: &Tok) -> String {
        match tok {
            Tok::Ident(name) => format!("identifier {name:?}"),
            Tok::Str { text, .. } => format!("string {text:?}"),
            Tok::Bytes => "a bytes literal".to_owned(),
            Tok::Number => "a number".to_owned(),
            Tok::LParen => "'('".to_owned(),
            Tok::RParen => "')'".to_owned(),
            Tok::Comma => "','".to_owned(),
            Tok::Dot => "'.'".to_owned(),
            Tok::OrOr => "'||'".to_owned(),
            Tok::Op(op) => format!("operator {op}"),
            Tok::End => "the end".to_owned(),
        }
    }

    struct Lexer<'a> {
        text: &'a str,
        pos: usize,
    }

    impl<'a> Lexer<'a> {
        fn rest(&self) -> &'a str {
            &self.text[self.pos..]
        }

        /// Skips CEL whitespace (space, tab, newline, carriage return, form feed) and `//`
        /// comments.
        fn skip_blank(&mut self) {
            loop {
                let rest = self.rest();
                let trimmed = rest.trim_start_matches([' ', '\t', '\n', '\r', '\x0c']);
                self.pos += rest.len() - trimmed.len();
                if trimmed.starts_with("//") {
                    self.pos += trimmed.find('\n').unwrap_or(trimmed.len());
                } else {
                    return;
                }
            }
        }

        fn next(&mut self) -> Result<(usize, Tok), E> {
            self.skip_blank();
            let at = self.pos;
            let rest = self.rest();
            let Some(c) = rest.chars().next() else {
                return Ok((at, Tok::End));
            };
            let two = rest.get(..2).unwrap_or("");
            let (len, tok) = match (c, two) {
                (_, "||") => (2, Tok::OrOr),
                (_, "&&") => (2, Tok::Op("_&&_")),
                (_, "==") => (2, Tok::Op("_==_")),
                (_, "!=") => (2, Tok::Op("_!=_")),
                (_, "<=") => (2, Tok::Op("_<=_")),
                (_, ">=") => (2, Tok::Op("_>=_")),
                ('<', _) => (1, Tok::Op("_<_")),
                ('>', _) => (1, Tok::Op("_>_")),
                ('!', _) => (1, Tok::Op("!_")),
                ('-', _) => (1, Tok::Op("-_")),
                ('+', _) => (1, Tok::Op("_+_")),
                ('*', _) => (1, Tok::Op("_*_")),
                ('/', _) => (1, Tok::Op("_/_")),
                ('%', _) => (1, Tok::Op("_%_")),
                ('?', _) => (1, Tok::Op("_?_:_")),
                ('[', _) => (1, Tok::Op("_[_]")),
                ('{', _) => (1, Tok::Op("map")),
                ('(', _) => (1, Tok::LParen),
                (')', _) => (1, Tok::RParen),
                (',', _) => (1, Tok::Comma),
                ('.', _) if !rest[1..].starts_with(|d: char| d.is_ascii_digit()) => (1, Tok::Dot),
                ('\'' | '"', _) => return self.string(at, false),
                (c, _) if c.is_ascii_digit() || c == '.' => {
                    let len = rest
                        .find(|d: char| !(d.is_ascii_alphanumeric() || d == '.' || d == '_'))
                        .unwrap_or(rest.len());
                    (len, Tok::Number)
                }
                (c, _) if c == '_' || c.is_ascii_alphabetic() => {
                    let len = rest
                        .find(|d: char| !(d == '_' || d.is_ascii_alphanumeric()))
                        .unwrap_or(rest.len());
                    let word = &rest[..len];
                    let quoted = rest[len..].starts_with(['\'', '"']);
                    match word {
                        "r" | "R" if quoted => {
                            self.pos += len;
                            return self.string(at, true);
                        }
                        "b" | "B" if quoted => {
                            self.pos += len;
                            self.string(at, false)?;
                            return Ok((at, Tok::Bytes));
                        }
                        "rb" | "rB" | "Rb" | "RB" | "br" | "bR" | "Br" | "BR" if quoted => {
                            self.pos += len;
                            self.string(at, true)?;
                            return Ok((at, Tok::Bytes));
                        }
                        _ => (len, Tok::Ident(word.to_owned())),
                    }
                }
                (c, _) => {
                    return Err(E::Syntax {
                        at,
                        expected: "a token",
                        found: format!("{c:?}"),
                    });
                }
            };
            self.pos += len;
            Ok((at, tok))
        }

        /// A string literal starting at the current position (a quote): `'…'`, `"…"`, or
        /// their triple-quoted forms.
        fn string(&mut self, at: usize, raw: bool) -> Result<(usize, Tok), E> {
            let rest = self.rest();
            let quote = if rest.starts_with("'''") {
                "'''"
            } else if rest.starts_with("\"\"\"") {
                "\"\"\""
            } else if rest.starts_with('\'') {
                "'"
            } else {
                "\""
            };
            let body = &rest[quote.len()..];
            // Find the closing quote; outside raw strings a backslash escapes the next char.
            let mut end = None;
            let mut chars = body.char_indices();
            while let Some((i, c)) = chars.next() {
                if !raw && c == '\\' {
                    chars.next();
                    continue;
                }
                if quote.len() == 1 && c == '\n' {
                    break;
                }
                if body[i..].starts_with(quote) {
                    end = Some(i);
                    break;
                }
            }
            let Some(end) = end else {
                return Err(E::Syntax {
                    at,
                    expected: "a closing quote",
                    found: "the end of the line or text".to_owned(),
                });
            };
            let text = body[..end].to_owned();
            self.pos += quote.len() + end + quote.len();
            Ok((at, Tok::Str { text, raw }))
        }
    }

    /// An expression, as far as the grammar needs to tell kinds apart.
    enum Expr {
        Call {
            name: String,
            args: Vec<Expr>,
        },
        Path(String),
        Str {
            text: String,
            raw: bool,
        },
        Bytes,
        Number,
        /// `(a || b)`: already checked and flattened.
        Group(Vec<(ShardField, ShardRange)>),
    }

    impl Expr {
        /// CEL's name for the expression's kind, for messages.
        fn kind(&self) -> &'static str {
            match self {
                Self::Call { .. } | Self::Group(_) => "call",
                Self::Path(_) => "select",
                Self::Str { .. } | Self::Bytes | Self::Number => "literal",
            }
        }
    }

    struct Parser<'a> {
        lexer: Lexer<'a>,
        peeked: Option<(usize, Tok)>,
    }

    impl Parser<'_> {
        fn peek(&mut self) -> Result<&Tok, E> {
            if self.peeked.is_none() {
                self.peeked = Some(self.lexer.next()?);
            }
            Ok(self.peeked.as_ref().map_or(&Tok::End, |(_, t)| t))
        }

        fn take(&mut self) -> Result<(usize, Tok), E> {
            match self.peeked.take() {
                Some(t) => Ok(t),
                None => self.lexer.next(),
            }
        }

        fn expect(&mut self, want: &Tok, expected: &'static str) -> Result<(), E> {
            let (at, tok) = self.take()?;
            if &tok == want {
                Ok(())
            } else {
                Err(E::Syntax {
                    at,
                    expected,
                    found: describe(&tok),
                })
            }
        }

        /// `term ('||' term)*`, flattened left to right.
        fn or_chain(&mut self) -> Result<Vec<(ShardField, ShardRange)>, E> {
            let mut ranges = self.term()?;
            while *self.peek()? == Tok::OrOr {
                self.take()?;
                ranges.extend(self.term()?);
            }
            Ok(ranges)
        }

        /// One side of `||`: a `shardRange()` call or a parenthesised chain.
        fn term(&mut self) -> Result<Vec<(ShardField, ShardRange)>, E> {
            let expr = self.operand()?;
            match expr {
                Expr::Group(ranges) => Ok(ranges),
                Expr::Call { name, args } if name == "shardRange" => Ok(vec![shard_range(args)?]),
                Expr::Call { name, .. } => Err(E::UnsupportedFunction(name)),
                other => Err(E::UnexpectedExpression(other.kind())),
            }
        }

        /// A primary expression, refusing any operator but `||` after it (the server would
        /// see a call of that operator).
        fn operand(&mut self) -> Result<Expr, E> {
            let expr = self.primary()?;
            if let Tok::Op(op) = self.peek()? {
                return Err(E::UnsupportedFunction((*op).to_owned()));
            }
            Ok(expr)
        }

        fn primary(&mut self) -> Result<Expr, E> {
            let (at, tok) = self.take()?;
            match tok {
                Tok::LParen => {
                    let ranges = self.or_chain()?;
                    self.expect(&Tok::RParen, "')'")?;
                    Ok(Expr::Group(ranges))
                }
                Tok::Str { text, raw } => Ok(Expr::Str { text, raw }),
                Tok::Bytes => Ok(Expr::Bytes),
                Tok::Number => Ok(Expr::Number),
                Tok::Op(op) => Err(E::UnsupportedFunction(op.to_owned())),
                Tok::Ident(first) => {
                    let mut path = first;
                    let mut dotted = false;
                    while *self.peek()? == Tok::Dot {
                        self.take()?;
                        let (at, tok) = self.take()?;
                        let Tok::Ident(next) = tok else {
                            return Err(E::Syntax {
                                at,
                                expected: "a field name after '.'",
                                found: describe(&tok),
                            });
                        };
                        path.push('.');
                        path.push_str(&next);
                        dotted = true;
                    }
                    if *self.peek()? != Tok::LParen {
                        return Ok(Expr::Path(path));
                    }
                    self.take()?;
                    let args = self.arguments()?;
                    // `a.b.f(x)` calls `f` on `a.b`: the function is the last segment.
                    let name = if dotted {
                        path.rsplit('.').next().unwrap_or(&path).to_owned()
                    } else {
                        path
                    };
                    Ok(Expr::Call { name, args })
                }
                other => Err(E::Syntax {
                    at,
                    expected: "shardRange(...)",
                    found: describe(&other),
                }),
            }
        }

        /// Call arguments after `(`, through `)`.
        fn arguments(&mut self) -> Result<Vec<Expr>, E> {
            let mut args = Vec::new();
            if *self.peek()? == Tok::RParen {
                self.take()?;
                return Ok(args);
            }
            loop {
                args.push(self.operand()?);
                let (at, tok) = self.take()?;
                match tok {
                    Tok::Comma => {}
                    Tok::RParen => return Ok(args),
                    other => {
                        return Err(E::Syntax {
                            at,
                            expected: "',' or ')'",
                            found: describe(&other),
                        });
                    }
                }
            }
        }
    }

    /// Checks a `shardRange(field, start, end)` call's arguments.
    fn shard_range(args: Vec<Expr>) -> Result<(ShardField, ShardRange), E> {
        let [field, start, end]: [Expr; 3] = args
            .try_into()
            .map_err(|args: Vec<Expr>| E::ArgumentCount(args.len()))?;
        let path = match field {
            Expr::Path(path) => path,
            other => return Err(E::FieldPathExpected(other.kind())),
        };
        let field = ShardField::from_path(&path).ok_or(E::UnsupportedField(path))?;
        let start = bound("hexStart", start)?;
        let end = bound("hexEnd", end)?;
        if start >= end {
            return Err(E::EmptyRange {
                start: bound_text(start),
                end: bound_text(end),
            });
        }
        Ok((field, ShardRange { start, end }))
    }

    /// A bound: a string literal of `0x` and 16 lowercase hex digits, or 2^64.
    fn bound(arg: &'static str, expr: Expr) -> Result<u128, E> {
        let (text, raw) = match expr {
            Expr::Str { text, raw } => (text, raw),
            Expr::Bytes => {
                return Err(E::NotStringLiteral {
                    arg,
                    found: "bytes literal",
                });
            }
            other => {
                return Err(E::NotStringLiteral {
                    arg,
                    found: other.kind(),
                });
            }
        };
        if !raw && text.contains('\\') {
            return Err(E::Escape { arg, value: text });
        }
        let Some(digits) = text.strip_prefix("0x") else {
            return Err(E::MissingPrefix { arg, value: text });
        };
        if digits.is_empty() {
            return Err(E::MissingDigits { arg });
        }
        // Counted in bytes, as the server does.
        let len = digits.len();
        if len > 17 {
            return Err(E::TooLong {
                arg,
                len,
                digits: digits.to_owned(),
            });
        }
        if let Some(ch) = digits.chars().find(|c| !matches!(c, '0'..='9' | 'a'..='f')) {
            return Err(E::InvalidDigit {
                arg,
                ch,
                value: text,
            });
        }
        if len == 17 {
            if text != HASH_SPACE_END_TEXT {
                return Err(E::NotHashSpaceEnd { arg, value: text });
            }
            return Ok(HASH_SPACE_END);
        }
        if len != 16 {
            let padded = format!("0x{digits:0>16}");
            return Err(E::NotSixteenDigits {
                arg,
                value: text,
                padded,
            });
        }
        // Cannot fail: 16 digits, each checked to be 0-9a-f. Mapped rather than unwrapped.
        u64::from_str_radix(digits, 16)
            .map(u128::from)
            .map_err(|_| E::InvalidDigit {
                arg,
                ch: '?',
                value: text,
            })
    }

    /// The whole selector.
    pub(super) fn selector(text: &str) -> Result<ShardSelector, E> {
        let text = text.trim();
        if text.is_empty() {
            return Err(E::Empty);
        }
        let mut parser = Parser {
            lexer: Lexer { text, pos: 0 },
            peeked: None,
        };
        let ranges = parser.or_chain()?;
        let (at, tok) = parser.take()?;
        if tok != Tok::End {
            return Err(E::Syntax {
                at,
                expected: "'||' or the end",
                found: describe(&tok),
            });
        }
        let mut iter = ranges.into_iter();
        let Some((field, first)) = iter.next() else {
            return Err(E::Empty);
        };
        let mut out = vec![first];
        for (other, range) in iter {
            if other != field {
                return Err(E::MixedFields(
                    field.path().to_owned(),
                    other.path().to_owned(),
                ));
            }
            out.push(range);
        }
        Ok(ShardSelector { field, ranges: out })
    }
}

#[cfg(test)]
mod tests;
