//! The selector grammar and the hash, against upstream's definitions: the API server's
//! parser cases (k8s.io/apiserver `pkg/sharding/parser_test.go`, rewritten here), FNV-1a 64
//! vectors, and the even split.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;

const UID_LOW_HALF: &str =
    "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')";
const UID_HIGH_HALF: &str =
    "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')";

fn range(start: u128, end: u128) -> ShardRange {
    ShardRange::new(start, end).unwrap()
}

fn parsed(text: &str) -> (ShardField, Vec<(u128, u128)>) {
    let s = ShardSelector::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    (
        s.field(),
        s.ranges().iter().map(|r| (r.start(), r.end())).collect(),
    )
}

fn refused(text: &str) -> ShardSelectorErrorKind {
    match ShardSelector::parse(text) {
        Ok(s) => panic!("{text:?} parsed as {s}"),
        Err(e) => {
            assert_eq!(e.selector, text);
            e.kind
        }
    }
}

// ----- FNV-1a 64 --------------------------------------------------------------------------

/// The offset basis and the published FNV-1a 64 vectors ("", "a", "foobar", from the FNV
/// reference test suite), and values computed from the definition (offset basis
/// 0xcbf29ce484222325, prime 0x100000001b3, xor then multiply per byte) by an independent
/// implementation (Python) for the inputs upstream's own hash test uses.
#[test]
fn fnv1a_64_matches_the_reference_vectors() {
    for (input, want) in [
        ("", 0xcbf2_9ce4_8422_2325_u64),
        ("a", 0xaf63_dc4c_8601_ec8c),
        ("foobar", 0x8594_4171_f739_67e8),
        ("abc", 0xe71f_a219_0541_574b),
        ("test-uid-123", 0xd0ba_6798_3455_6c0b),
        ("test-uid-12345", 0xd4c5_3b72_f928_7c28),
        (
            "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
            0x9375_4b72_48a0_0eb9,
        ),
        ("default", 0xebad_a516_8620_c5fe),
        ("kube-system", 0xdf65_c7bc_1d82_b35e),
        ("é", 0x0ac2_1707_b718_1e01), // UTF-8 bytes, not chars
    ] {
        assert_eq!(fnv1a_64(input.as_bytes()), want, "{input:?}");
    }
}

/// An object with a uid and a namespace, for `matches`.
struct Meta {
    uid: Option<&'static str>,
    namespace: Option<&'static str>,
}

static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

impl crate::Object for Meta {
    fn object_name(&self) -> Option<&str> {
        Some("x")
    }
    fn object_namespace(&self) -> Option<&str> {
        self.namespace
    }
    fn object_uid(&self) -> Option<&str> {
        self.uid
    }
    fn object_resource_version(&self) -> Option<&str> {
        None
    }
    fn object_labels(&self) -> &BTreeMap<String, String> {
        &NO_LABELS
    }
    fn object_annotations(&self) -> &BTreeMap<String, String> {
        &NO_LABELS
    }
}

/// upstream `TestSelectorMatches`: the full range matches, a range starting at the hash
/// matches, ranges above or below it do not; the field chooses the value.
#[test]
fn objects_match_by_the_hash_of_their_field() {
    let obj = Meta {
        uid: Some("test-uid-123"),
        namespace: Some("default"),
    };
    let hash = u128::from(fnv1a_64(b"test-uid-123")); // 0xd0ba679834556c0b
    let uid = |r: ShardRange| ShardSelector::new(ShardField::Uid, [r]).unwrap();
    assert!(uid(ShardRange::ALL).matches(&obj));
    assert!(uid(range(hash, hash + 1)).matches(&obj));
    assert!(!uid(range(hash + 1, HASH_SPACE_END)).matches(&obj));
    assert!(!uid(range(0, hash)).matches(&obj));
    assert!(uid(range(0, hash + 1)).matches(&obj));
    assert!(uid(range(0xd000_0000_0000_0000, 0xe000_0000_0000_0000)).matches(&obj));
    // Namespace: "default" hashes to 0xebada5168620c5fe.
    let ns = ShardSelector::parse(
        "shardRange(object.metadata.namespace, '0xe000000000000000', '0xf000000000000000')",
    )
    .unwrap();
    assert!(ns.matches(&obj));
    assert!(!uid(range(0xe000_0000_0000_0000, 0xf000_0000_0000_0000)).matches(&obj));
    // A missing value hashes as "" (0xcbf29ce484222325), as on the server.
    let bare = Meta {
        uid: None,
        namespace: None,
    };
    assert!(ns.matches(&obj));
    let around_empty = uid(range(0xcbf2_9ce4_8422_2325, 0xcbf2_9ce4_8422_2326));
    assert!(around_empty.matches(&bare));
    assert_eq!(ShardField::Namespace.value_of(&bare), "");
    // Any range of several.
    let two =
        ShardSelector::new(ShardField::Uid, [range(0, 1), range(hash, HASH_SPACE_END)]).unwrap();
    assert!(two.matches(&obj));
    assert!(two.contains_hash(0));
    assert!(!two.contains_hash(1));
    assert!(two.contains_hash(u64::MAX));
}

// ----- Grammar: what the server accepts -----------------------------------------------------

#[test]
fn accepts_what_the_server_accepts() {
    assert_eq!(
        parsed(UID_LOW_HALF),
        (ShardField::Uid, vec![(0, 0x8000_0000_0000_0000)])
    );
    assert_eq!(
        parsed("shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')"),
        (ShardField::Uid, vec![(0, HASH_SPACE_END)])
    );
    assert_eq!(
        parsed("shardRange(object.metadata.namespace, '0x00000000000000aa', '0x00000000000000ff')"),
        (ShardField::Namespace, vec![(0xaa, 0xff)])
    );
    assert_eq!(
        parsed(&format!("{UID_LOW_HALF} || {UID_HIGH_HALF}")),
        (
            ShardField::Uid,
            vec![
                (0, 0x8000_0000_0000_0000),
                (0x8000_0000_0000_0000, HASH_SPACE_END)
            ]
        )
    );
    assert_eq!(
        parsed(
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x0000000000000005') || \
             shardRange(object.metadata.uid, '0x0000000000000005', '0x000000000000000a') || \
             shardRange(object.metadata.uid, '0x000000000000000a', '0x000000000000000f')"
        )
        .1,
        vec![(0, 5), (5, 10), (10, 15)]
    );
    // Overlapping, unordered and repeated ranges are allowed; their order is kept.
    assert_eq!(
        parsed(&format!(
            "{UID_HIGH_HALF} || {UID_LOW_HALF} || {UID_HIGH_HALF}"
        ))
        .1,
        vec![
            (0x8000_0000_0000_0000, HASH_SPACE_END),
            (0, 0x8000_0000_0000_0000),
            (0x8000_0000_0000_0000, HASH_SPACE_END)
        ]
    );
}

#[test]
fn whitespace_quotes_parentheses_and_comments_as_cel_allows() {
    let want = parsed(UID_LOW_HALF);
    for text in [
        "shardRange(object.metadata.uid,'0x0000000000000000','0x8000000000000000')",
        "  shardRange( object.metadata.uid ,  '0x0000000000000000' ,  '0x8000000000000000' )  ",
        "\tshardRange(\n object . metadata . uid,\r\n'0x0000000000000000',\x0c'0x8000000000000000')\n",
        "shardRange(object.metadata.uid, \"0x0000000000000000\", \"0x8000000000000000\")",
        "shardRange(object.metadata.uid, r'0x0000000000000000', R\"0x8000000000000000\")",
        "shardRange(object.metadata.uid, '''0x0000000000000000''', \"\"\"0x8000000000000000\"\"\")",
        "(shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000'))",
        "// my shard\nshardRange(object.metadata.uid, '0x0000000000000000', // from\n '0x8000000000000000')",
        // Unicode spaces at the ends are trimmed (the server trims with Go's TrimSpace).
        "\u{a0}shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')\u{2003}",
    ] {
        assert_eq!(parsed(text), want, "{text:?}");
    }
    assert_eq!(
        parsed(&format!(
            "({UID_HIGH_HALF} || ({UID_LOW_HALF})) || {UID_HIGH_HALF}"
        ))
        .1,
        vec![
            (0x8000_0000_0000_0000, HASH_SPACE_END),
            (0, 0x8000_0000_0000_0000),
            (0x8000_0000_0000_0000, HASH_SPACE_END)
        ]
    );
}

// ----- Grammar: what the server refuses, and why ---------------------------------------------

#[test]
fn refuses_what_the_server_refuses() {
    use ShardSelectorErrorKind as K;
    let uid = |a: &str, b: &str| format!("shardRange(object.metadata.uid, {a}, {b})");
    assert_eq!(refused(""), K::Empty);
    assert_eq!(refused(" \t\n "), K::Empty);
    assert_eq!(
        refused(&uid("'0000000000000000'", "'0x8000000000000000'")),
        K::MissingPrefix {
            arg: "hexStart",
            value: "0000000000000000".into()
        }
    );
    assert_eq!(
        refused(&uid("'0x0000000000000000'", "'8000000000000000'")),
        K::MissingPrefix {
            arg: "hexEnd",
            value: "8000000000000000".into()
        }
    );
    assert_eq!(
        refused(&uid("'0X0000000000000000'", "'0x8000000000000000'")),
        K::MissingPrefix {
            arg: "hexStart",
            value: "0X0000000000000000".into()
        }
    );
    assert_eq!(
        refused(&uid("'0x'", "'0x8000000000000000'")),
        K::MissingDigits { arg: "hexStart" }
    );
    assert_eq!(
        refused("shardRange(object.metadata.name, '0x00', '0x80')"),
        K::UnsupportedField("object.metadata.name".into())
    );
    assert_eq!(
        refused("shardRange(object.metadata.labels, '0x00', '0x80')"),
        K::UnsupportedField("object.metadata.labels".into())
    );
    assert_eq!(
        refused("shardRange(metadata.uid, '0x00', '0x80')"),
        K::UnsupportedField("metadata.uid".into())
    );
    assert_eq!(
        refused("invalidFunc(object.metadata.uid, '0x00', '0x80')"),
        K::UnsupportedFunction("invalidFunc".into())
    );
    assert_eq!(
        refused(&uid("'0x000000000000000000'", "'0x80'")),
        K::TooLong {
            arg: "hexStart",
            len: 18,
            digits: "000000000000000000".into()
        }
    );
    assert_eq!(
        refused(&uid("'0x0g'", "'0x80'")),
        K::InvalidDigit {
            arg: "hexStart",
            ch: 'g',
            value: "0x0g".into()
        }
    );
    // Upper-case digits are refused, not normalised.
    assert_eq!(
        refused(&uid("'0x00000000000000FF'", "'0x8000000000000000'")),
        K::InvalidDigit {
            arg: "hexStart",
            ch: 'F',
            value: "0x00000000000000FF".into()
        }
    );
    assert_eq!(
        refused(
            "shardRange(object.metadata.uid, '0x0', '0x8') && shardRange(object.metadata.uid, '0x8', '0xf')"
        ),
        K::UnsupportedFunction("_&&_".into())
    );
    assert_eq!(
        refused("shardRange(object.metadata.uid, 0, 8)"),
        K::NotStringLiteral {
            arg: "hexStart",
            found: "literal"
        }
    );
    assert_eq!(
        refused("object.metadata.uid > '0x0'"),
        K::UnsupportedFunction("_>_".into())
    );
    assert_eq!(
        refused("shardRange(object.metadata.uid, '0x0')"),
        K::ArgumentCount(2)
    );
    assert_eq!(refused("shardRange()"), K::ArgumentCount(0));
    assert_eq!(
        refused(&uid("hex(0)", "'0x8'")),
        K::NotStringLiteral {
            arg: "hexStart",
            found: "call"
        }
    );
    assert_eq!(
        refused(&format!(
            "{UID_LOW_HALF} || shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')"
        )),
        K::MixedFields(
            "object.metadata.uid".into(),
            "object.metadata.namespace".into()
        )
    );
    // The server does not pad short values: it suggests the 16-digit form.
    assert_eq!(
        refused(&uid("'0x0'", "'0x8000000000000000'")),
        K::NotSixteenDigits {
            arg: "hexStart",
            value: "0x0".into(),
            padded: "0x0000000000000000".into()
        }
    );
    assert_eq!(
        refused(&uid("'0x0000000000000000'", "'0xff'")),
        K::NotSixteenDigits {
            arg: "hexEnd",
            value: "0xff".into(),
            padded: "0x00000000000000ff".into()
        }
    );
    assert_eq!(
        refused(&uid("'0x8000000000000000'", "'0x8000000000000000'")),
        K::EmptyRange {
            start: "0x8000000000000000".into(),
            end: "0x8000000000000000".into()
        }
    );
    assert_eq!(
        refused(&uid("'0xffffffffffffffff'", "'0x0000000000000000'")),
        K::EmptyRange {
            start: "0xffffffffffffffff".into(),
            end: "0x0000000000000000".into()
        }
    );
    // 2^64 is only an end; the only 17-digit value.
    assert_eq!(
        refused(&uid("'0x10000000000000000'", "'0x10000000000000000'")),
        K::EmptyRange {
            start: "0x10000000000000000".into(),
            end: "0x10000000000000000".into()
        }
    );
    assert_eq!(
        refused(&uid("'0x0000000000000000'", "'0x10000000000000001'")),
        K::NotHashSpaceEnd {
            arg: "hexEnd",
            value: "0x10000000000000001".into()
        }
    );
}

#[test]
fn refuses_other_shapes_with_a_reason() {
    use ShardSelectorErrorKind as K;
    assert_eq!(
        refused("object.metadata.uid"),
        K::UnexpectedExpression("select")
    );
    assert_eq!(refused("'0x00'"), K::UnexpectedExpression("literal"));
    assert_eq!(
        refused(&format!("{UID_LOW_HALF} ||")),
        K::Syntax {
            at: UID_LOW_HALF.len() + 3,
            expected: "shardRange(...)",
            found: "the end".into()
        }
    );
    assert!(matches!(
        refused(&format!("{UID_LOW_HALF} {UID_LOW_HALF}")),
        K::Syntax { .. }
    ));
    assert!(matches!(
        refused("shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000'"),
        K::Syntax { .. }
    ));
    assert!(matches!(
        refused("shardRange(object.metadata.uid, '0x0000000000000000, '0x8000000000000000')"),
        K::Syntax { .. }
    ));
    assert_eq!(
        refused("!shardRange(x, 'a', 'b')"),
        K::UnsupportedFunction("!_".into())
    );
    assert_eq!(
        refused("shardRange('0x0000000000000000', '0x0000000000000000', '0x8000000000000000')"),
        K::FieldPathExpected("literal")
    );
    assert_eq!(
        refused("shardRange(object.metadata.uid, b'0x0000000000000000', '0x8000000000000000')"),
        K::NotStringLiteral {
            arg: "hexStart",
            found: "bytes literal"
        }
    );
    // Escapes would be decoded by the server; refused here rather than guessed.
    assert_eq!(
        refused("shardRange(object.metadata.uid, '\\x30x0000000000000000', '0x8000000000000000')"),
        K::Escape {
            arg: "hexStart",
            value: "\\x30x0000000000000000".into()
        }
    );
    assert_eq!(
        refused("object.metadata.uid.shardRange('0x0000000000000000', '0x8000000000000000')"),
        K::ArgumentCount(2)
    );
    assert!(matches!(
        refused("shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') ; x"),
        K::Syntax { .. }
    ));
}

#[test]
fn errors_say_what_the_server_says() {
    let e = ShardSelector::parse("shardRange(object.metadata.uid, '0x0', '0x8000000000000000')")
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid shard selector \"shardRange(object.metadata.uid, '0x0', '0x8000000000000000')\": \
         hexStart must be a 0x-prefixed 16-digit hex value, got \"0x0\" (did you mean \
         \"0x0000000000000000\"?)"
    );
    assert_eq!(
        ShardSelector::parse("").unwrap_err().kind.to_string(),
        "empty shard selector is not allowed; omit the parameter for unfiltered lists"
    );
    assert_eq!(
        ShardSelector::parse("f(object.metadata.uid, '0x00', '0x80')")
            .unwrap_err()
            .kind
            .to_string(),
        "unsupported function \"f\"; only shardRange() and || are allowed"
    );
    assert_eq!(
        ShardSelector::parse(
            "shardRange(object.metadata.uid, '0x8000000000000000', '0x0000000000000000')"
        )
        .unwrap_err()
        .kind
        .to_string(),
        "shard range start 0x8000000000000000 must be less than end 0x0000000000000000"
    );
}

// ----- Rendering --------------------------------------------------------------------------

/// upstream `TestParseRoundTrip`: the canonical form renders back unchanged.
#[test]
fn canonical_text_renders_back_unchanged() {
    for text in [
        UID_LOW_HALF.to_owned(),
        UID_HIGH_HALF.to_owned(),
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')".to_owned(),
        "shardRange(object.metadata.namespace, '0x00000000000000aa', '0x00000000000000ff')"
            .to_owned(),
        format!("{UID_LOW_HALF} || {UID_HIGH_HALF}"),
    ] {
        let selector: ShardSelector = text.parse().unwrap();
        assert_eq!(selector.to_string(), text);
    }
    // Other spellings render canonically.
    let loose = ShardSelector::parse(
        "( shardRange(object . metadata . uid,\"0x0000000000000000\",r'0x8000000000000000') )",
    )
    .unwrap();
    assert_eq!(loose.to_string(), UID_LOW_HALF);
    assert_eq!(
        range(0xab, HASH_SPACE_END).to_string(),
        "[0x00000000000000ab, 0x10000000000000000)"
    );
}

#[test]
fn ranges_and_selectors_are_checked_when_built() {
    use ShardSelectorErrorKind as K;
    assert_eq!(
        ShardRange::new(5, 5).unwrap_err().kind,
        K::EmptyRange {
            start: "0x0000000000000005".into(),
            end: "0x0000000000000005".into()
        }
    );
    assert_eq!(
        ShardRange::new(0, HASH_SPACE_END + 1).unwrap_err().kind,
        K::BeyondHashSpace {
            end: HASH_SPACE_END + 1
        }
    );
    assert_eq!(
        ShardSelector::new(ShardField::Uid, []).unwrap_err().kind,
        K::Empty
    );
    assert_eq!(ShardRange::ALL.len(), HASH_SPACE_END);
    assert!(!ShardRange::ALL.is_empty());
    assert_eq!(
        ShardField::from_path("object.metadata.namespace"),
        Some(ShardField::Namespace)
    );
    assert_eq!(ShardField::from_path("metadata.namespace"), None);
}

#[test]
fn echoes_tell_an_applied_selector_from_an_ignored_one() {
    let mine = ShardSelector::parse(UID_LOW_HALF).unwrap();
    assert_eq!(mine.check_echo(None), ShardEcho::Ignored);
    assert_eq!(mine.check_echo(Some(UID_LOW_HALF)), ShardEcho::Applied);
    // Spelled differently but the same selector.
    assert_eq!(
        mine.check_echo(Some(
            "shardRange(object.metadata.uid,\"0x0000000000000000\",\"0x8000000000000000\")"
        )),
        ShardEcho::Applied
    );
    assert_eq!(
        mine.check_echo(Some(UID_HIGH_HALF)),
        ShardEcho::Different(UID_HIGH_HALF.into())
    );
    assert_eq!(
        mine.check_echo(Some("garbage")),
        ShardEcho::Different("garbage".into())
    );
}

// ----- Even split -------------------------------------------------------------------------

/// The 2- and 4-shard splits of the API's documentation, and exact thirds and sevenths.
#[test]
fn even_splits_are_the_documented_ones() {
    let text = |rank, count| {
        ShardSelector::even_split(ShardField::Uid, rank, count)
            .unwrap()
            .to_string()
    };
    assert_eq!(text(0, 2), UID_LOW_HALF);
    assert_eq!(text(1, 2), UID_HIGH_HALF);
    let quarters: Vec<String> = (0..4).map(|r| text(r, 4)).collect();
    assert_eq!(
        quarters,
        [
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x4000000000000000')",
            "shardRange(object.metadata.uid, '0x4000000000000000', '0x8000000000000000')",
            "shardRange(object.metadata.uid, '0x8000000000000000', '0xc000000000000000')",
            "shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')",
        ]
    );
    let split = |rank, count| {
        let r = ShardRange::even_split(rank, count).unwrap();
        (r.start(), r.end())
    };
    assert_eq!(split(0, 1), (0, HASH_SPACE_END));
    assert_eq!(split(0, 3), (0, 0x5555_5555_5555_5555));
    assert_eq!(split(1, 3), (0x5555_5555_5555_5555, 0xaaaa_aaaa_aaaa_aaaa));
    assert_eq!(split(2, 3), (0xaaaa_aaaa_aaaa_aaaa, HASH_SPACE_END));
    assert_eq!(split(3, 7), (0x6db6_db6d_b6db_6db6, 0x9249_2492_4924_9249));
    // The largest count: slices of one or two hashes, the last ending at 2^64.
    assert_eq!(split(0, u64::MAX), (0, 1));
    assert_eq!(
        split(u64::MAX - 1, u64::MAX),
        (u128::from(u64::MAX) - 1, HASH_SPACE_END)
    );
    assert_eq!(
        ShardRange::even_split(2, 2).unwrap_err().kind,
        ShardSelectorErrorKind::InvalidSplit { rank: 2, count: 2 }
    );
    assert!(ShardRange::even_split(0, 0).is_err());
}

// ----- Properties -------------------------------------------------------------------------

fn any_range() -> impl Strategy<Value = ShardRange> {
    prop_oneof![
        (any::<u64>(), any::<u64>()).prop_filter_map("empty", |(a, b)| {
            ShardRange::new(u128::from(a.min(b)), u128::from(a.max(b))).ok()
        }),
        any::<u64>().prop_map(|a| range(u128::from(a), HASH_SPACE_END)),
        (1u64..1000, any::<u64>())
            .prop_map(|(count, r)| { ShardRange::even_split(r % count, count).unwrap() }),
    ]
}

fn any_selector() -> impl Strategy<Value = ShardSelector> {
    (
        prop_oneof![Just(ShardField::Uid), Just(ShardField::Namespace)],
        proptest::collection::vec(any_range(), 1..5),
    )
        .prop_map(|(field, ranges)| ShardSelector::new(field, ranges).unwrap())
}

proptest! {
    /// Rendering then parsing gives the same selector back, and renders the same text.
    #[test]
    fn parse_of_render_is_identity(selector in any_selector()) {
        let text = selector.to_string();
        let back = ShardSelector::parse(&text).unwrap();
        prop_assert_eq!(&back, &selector);
        prop_assert_eq!(back.to_string(), text);
        prop_assert_eq!(selector.check_echo(Some(&selector.to_string())), ShardEcho::Applied);
    }

    /// The slices of an even split follow each other from 0 to 2^64: no gap, no overlap,
    /// and their sizes differ by at most one.
    #[test]
    fn even_split_covers_the_hash_space_exactly(count in prop_oneof![
        1u64..300,
        any::<u64>().prop_filter("zero", |c| *c > 0),
    ]) {
        let ranks: Vec<u64> = if count <= 300 {
            (0..count).collect()
        } else {
            // Too many to walk: the first, the last and some in between.
            vec![0, 1, count / 3, count / 2, count - 2, count - 1]
        };
        let floor = HASH_SPACE_END / u128::from(count);
        let mut expected_start = 0;
        for (i, &rank) in ranks.iter().enumerate() {
            let r = ShardRange::even_split(rank, count).unwrap();
            if i == 0 || ranks[i - 1] + 1 == rank {
                prop_assert_eq!(r.start(), expected_start);
            }
            prop_assert!(r.len() == floor || r.len() == floor + 1, "{} of {}: {}", rank, count, r);
            if rank + 1 < count {
                prop_assert_eq!(ShardRange::even_split(rank + 1, count).unwrap().start(), r.end());
            }
            expected_start = r.end();
        }
        if count <= 300 {
            prop_assert_eq!(expected_start, HASH_SPACE_END);
        }
        let last = ShardRange::even_split(count - 1, count).unwrap();
        prop_assert_eq!(last.end(), HASH_SPACE_END);
    }

    /// Every hash belongs to exactly one slice: the one its position in [0, 2^64) names.
    #[test]
    fn every_hash_is_in_exactly_one_slice(count in 1u64..64, hash in any::<u64>()) {
        let owners: Vec<u64> = (0..count)
            .filter(|&rank| ShardRange::even_split(rank, count).unwrap().contains(hash))
            .collect();
        prop_assert_eq!(owners.len(), 1);
        // rank = ⌊hash · count / 2^64⌋ up to the floor rounding of the bounds.
        let rank = owners[0];
        let r = ShardRange::even_split(rank, count).unwrap();
        prop_assert!(r.start() <= u128::from(hash) && u128::from(hash) < r.end());
    }

    /// Matching agrees with the ranges, for any value.
    #[test]
    fn matching_is_membership_of_the_hash(selector in any_selector(), value in ".{0,40}") {
        let hash = u128::from(fnv1a_64(value.as_bytes()));
        let inside = selector.ranges().iter().any(|r| r.start() <= hash && hash < r.end());
        prop_assert_eq!(selector.matches_value(&value), inside);
    }

    /// `covers` is set inclusion of the selected hashes: checked at every hash where an
    /// inclusion could first fail (the starts of `inner`'s ranges, the ends of `outer`'s),
    /// for arbitrary pairs and for pairs where `inner` is cut from `outer`'s ranges.
    #[test]
    fn covering_is_inclusion_of_the_hashes(
        outer in any_selector(),
        other in any_selector(),
        cuts in proptest::collection::vec((any::<prop::sample::Index>(), any::<u64>(), any::<u64>()), 1..4),
    ) {
        let cut = cuts.iter().filter_map(|(which, a, b)| {
            let r = outer.ranges()[which.index(outer.ranges().len())];
            let at = |x: u64| r.start() + u128::from(x) % r.len();
            let (lo, hi) = (at(*a).min(at(*b)), at(*a).max(at(*b)));
            ShardRange::new(lo, hi + 1).ok()
        });
        let inner_cut = ShardSelector::new(outer.field(), cut).unwrap();
        for inner in [other, inner_cut] {
            let probes = inner.ranges().iter().map(|r| r.start())
                .chain(outer.ranges().iter().map(|r| r.end()))
                .filter_map(|h| u64::try_from(h).ok());
            let included = outer.field() == inner.field()
                && probes.filter(|h| inner.contains_hash(*h)).all(|h| outer.contains_hash(h));
            prop_assert_eq!(outer.covers(&inner), included, "{} covers {}", outer, inner);
        }
    }

    /// The intersection selects exactly the hashes both select: checked at every range
    /// boundary of either (membership is constant between them).
    #[test]
    fn intersection_is_membership_of_both(a in any_selector(), b in any_selector()) {
        let both = a.intersection(&b);
        let bounds = a.ranges().iter().chain(b.ranges()).flat_map(|r| [r.start(), r.end()]);
        for h in bounds.filter_map(|h| u64::try_from(h).ok()) {
            let expected = a.field() == b.field() && a.contains_hash(h) && b.contains_hash(h);
            let got = both.as_ref().is_some_and(|s| s.contains_hash(h));
            prop_assert_eq!(got, expected, "{:#x} in {} and {}: {:?}", h, a, b, both);
        }
        if let Some(both) = both {
            prop_assert!(a.covers(&both) && b.covers(&both));
        }
    }

    /// Arbitrary text never panics the parser.
    #[test]
    fn parser_never_panics(text in ".{0,120}") {
        let _ = ShardSelector::parse(&text);
    }

    /// Nor does almost-valid text.
    #[test]
    fn parser_never_panics_near_the_grammar(
        pieces in proptest::collection::vec(prop_oneof![
            Just("shardRange"), Just("("), Just(")"), Just(","), Just("||"), Just("&&"),
            Just("object.metadata.uid"), Just("'0x0000000000000000'"), Just("'0x10000000000000000'"),
            Just("'"), Just("\""), Just("r"), Just("b"), Just(" "), Just("//"), Just("\n"), Just("."),
            Just("0x"), Just("\\"), Just("'''"),
        ], 0..30)
    ) {
        let text: String = pieces.concat();
        let _ = ShardSelector::parse(&text);
    }
}
