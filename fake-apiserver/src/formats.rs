//! The string formats a CRD schema's `format` checks, as upstream checks them: the formats
//! `apiextensions-apiserver` supports (`pkg/apiserver/validation/formats.go`; names compared
//! without dashes, so `date-time` is `datetime`) with the validators of kube-openapi's
//! `strfmt` registry (`pkg/validation/strfmt`, its `govalidator` copy), read there. Any other
//! format is not checked, as upstream strips it. Where upstream calls Go's parsers
//! (`net/mail`, `net/url`, `net`), these follow the parsers' rules for the forms a schema
//! meets; the parity doc lists what is approximated.

use std::net::Ipv6Addr;
use std::sync::OnceLock;

use regex::Regex;

/// Whether `value` has the string format `format`: `None` for a format upstream does not
/// check.
pub(crate) fn check(format: &str, value: &str) -> Option<bool> {
    let normalized = format.replace('-', "");
    Some(match normalized.as_str() {
        "bsonobjectid" => value.len() == 24 && value.bytes().all(|b| b.is_ascii_hexdigit()),
        "uri" => is_request_uri(value),
        "email" => is_email(value),
        "hostname" => is_hostname(value),
        "ipv4" => (ipv4_sloppy(value) || value.parse::<Ipv6Addr>().is_ok()) && value.contains('.'),
        "ipv6" => value.parse::<Ipv6Addr>().is_ok() && value.contains(':'),
        "cidr" => is_cidr(value),
        "mac" => is_mac(value),
        "uuid" => matches(&UUID, value),
        "uuid3" => matches(&UUID3, value),
        "uuid4" => matches(&UUID4, value),
        "uuid5" => matches(&UUID5, value),
        "isbn" => is_isbn10(value) || is_isbn13(value),
        "isbn10" => is_isbn10(value),
        "isbn13" => is_isbn13(value),
        "creditcard" => is_credit_card(value),
        "ssn" => value.len() == 11 && matches(&SSN, value),
        "hexcolor" => matches(&HEXCOLOR, value),
        "rgbcolor" => matches(&RGBCOLOR, value),
        "byte" => matches(&BASE64, value),
        "password" => true,
        "date" => is_date(value),
        "datetime" => is_date_time(value),
        "duration" => is_duration(value),
        "k8sshortname" => value.len() <= 63 && matches(&SHORT_NAME, value),
        "k8slongname" => value.len() <= 253 && matches(&LONG_NAME, value),
        _ => return None,
    })
}

/// A pattern, compiled once.
struct Pattern {
    source: &'static str,
    compiled: OnceLock<Option<Regex>>,
}

impl Pattern {
    const fn new(source: &'static str) -> Self {
        Self {
            source,
            compiled: OnceLock::new(),
        }
    }
}

impl Pattern {
    /// The compiled pattern (`None` only if it does not compile, which the tests rule out).
    fn regex(&self) -> Option<&Regex> {
        self.compiled
            .get_or_init(|| Regex::new(self.source).ok())
            .as_ref()
    }
}

fn matches(pattern: &Pattern, value: &str) -> bool {
    pattern.regex().is_some_and(|re| re.is_match(value))
}

static HOSTNAME: Pattern = Pattern::new(
    r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$",
);
static UUID: Pattern =
    Pattern::new(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$");
static UUID3: Pattern =
    Pattern::new(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$");
static UUID4: Pattern =
    Pattern::new(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$");
static UUID5: Pattern =
    Pattern::new(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$");
static CREDIT_CARD: Pattern = Pattern::new(
    r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11})$",
);
static ISBN10: Pattern = Pattern::new(r"^(?:[0-9]{9}X|[0-9]{10})$");
static ISBN13: Pattern = Pattern::new(r"^(?:[0-9]{13})$");
static HEXCOLOR: Pattern = Pattern::new(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$");
static RGBCOLOR: Pattern = Pattern::new(
    r"^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$",
);
static BASE64: Pattern = Pattern::new(
    r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$",
);
static SSN: Pattern = Pattern::new(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$");
static DATE_TIME: Pattern =
    Pattern::new(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$");
static DURATION_PART: Pattern = Pattern::new(r"((\d+)\s*([A-Za-zµ]+))");
static SHORT_NAME: Pattern = Pattern::new(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$");
static LONG_NAME: Pattern =
    Pattern::new(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$");
static EMAIL: Pattern = Pattern::new(
    r"^(?:[^<>@]*<)?[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*(?:>)?$",
);

/// `strfmt.IsHostname`: the pattern, at most 255 bytes, labels of at most 63.
fn is_hostname(value: &str) -> bool {
    matches(&HOSTNAME, value) && value.len() <= 255 && value.split('.').all(|p| p.len() <= 63)
}

/// `net/mail.ParseAddress` for the forms a schema meets: `local@domain`, optionally as
/// `Name <local@domain>` (dot-atoms; quoted local parts and domain literals are not taken).
fn is_email(value: &str) -> bool {
    let bracketed = value.contains('<');
    matches(&EMAIL, value) && bracketed == value.ends_with('>')
}

/// `net/url.ParseRequestURI`: an absolute URI (a scheme) or an absolute path; no control
/// bytes; every `%` escape two hex digits.
fn is_request_uri(value: &str) -> bool {
    if value.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return false;
    }
    let bytes = value.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = |j: usize| bytes.get(j).is_some_and(u8::is_ascii_hexdigit);
            if !(hex(i + 1) && hex(i + 2)) {
                return false;
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    match value.find(':') {
        Some(colon) => {
            let scheme = &value[..colon];
            let mut chars = scheme.chars();
            match chars.next() {
                Some(c) if c.is_ascii_alphabetic() => {
                    chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
                }
                // A colon after something that is not a scheme (`/a:b`): a path.
                Some(_) => value.starts_with('/'),
                None => false,
            }
        }
        None => value.starts_with('/'),
    }
}

/// `ParseIPSloppy` of an IPv4 address: four decimal parts up to 255, leading zeros allowed.
fn ipv4_sloppy(value: &str) -> bool {
    let parts: Vec<&str> = value.split('.').collect();
    parts.len() == 4
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.len() <= 3
                && p.bytes().all(|b| b.is_ascii_digit())
                && p.parse::<u16>().is_ok_and(|n| n <= 255)
        })
}

/// `ParseCIDRSloppy`: an address (IPv4 sloppily) and a prefix length it allows.
fn is_cidr(value: &str) -> bool {
    let Some((ip, prefix)) = value.split_once('/') else {
        return false;
    };
    let bits = if ipv4_sloppy(ip) {
        32
    } else if ip.parse::<Ipv6Addr>().is_ok() {
        128
    } else {
        return false;
    };
    !prefix.is_empty()
        && prefix.len() <= 3
        && prefix.bytes().all(|b| b.is_ascii_digit())
        && prefix.parse::<u32>().is_ok_and(|n| n <= bits)
}

/// `net.ParseMAC`: 6, 8 or 20 bytes as two hex digits each separated by `:` or `-`, or as
/// groups of four hex digits separated by `.`.
fn is_mac(value: &str) -> bool {
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    let sized = |n: usize| matches!(n, 6 | 8 | 20);
    for sep in [':', '-'] {
        if value.len() > 2 && value.as_bytes()[2] == sep as u8 {
            let parts: Vec<&str> = value.split(sep).collect();
            return sized(parts.len()) && parts.iter().all(|p| hex(p, 2));
        }
    }
    if value.len() > 4 && value.as_bytes()[4] == b'.' {
        let parts: Vec<&str> = value.split('.').collect();
        return sized(parts.len() * 2) && parts.iter().all(|p| hex(p, 4));
    }
    false
}

fn digits(value: &str, keep: impl Fn(char) -> bool) -> String {
    value.chars().filter(|c| keep(*c)).collect()
}

fn is_isbn10(value: &str) -> bool {
    let s = digits(value, |c| !(c.is_whitespace() || c == '-'));
    if !matches(&ISBN10, &s) {
        return false;
    }
    let b = s.as_bytes();
    let mut sum: u32 = (0..9)
        .map(|i| (i as u32 + 1) * u32::from(b[i] - b'0'))
        .sum();
    sum += 10
        * if b[9] == b'X' {
            10
        } else {
            u32::from(b[9] - b'0')
        };
    sum.is_multiple_of(11)
}

fn is_isbn13(value: &str) -> bool {
    let s = digits(value, |c| !(c.is_whitespace() || c == '-'));
    if !matches(&ISBN13, &s) {
        return false;
    }
    let b = s.as_bytes();
    let sum: u32 = (0..12)
        .map(|i| if i % 2 == 0 { 1 } else { 3 } * u32::from(b[i] - b'0'))
        .sum();
    u32::from(b[12] - b'0') == (10 - sum % 10) % 10
}

/// `govalidator.IsCreditCard`: the digits match a known issuer's pattern and pass Luhn's
/// check.
fn is_credit_card(value: &str) -> bool {
    let s = digits(value, |c| c.is_ascii_digit());
    if !matches(&CREDIT_CARD, &s) {
        return false;
    }
    let mut sum = 0;
    for (i, b) in s.bytes().rev().enumerate() {
        let mut d = u32::from(b - b'0');
        if i % 2 == 1 {
            d *= 2;
            if d >= 10 {
                d = d % 10 + 1;
            }
        }
        sum += d;
    }
    sum % 10 == 0
}

/// Go's `time.Parse("2006-01-02", s)`: a calendar date.
fn is_date(value: &str) -> bool {
    let b = value.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let number = |r: std::ops::Range<usize>| {
        let s = &value[r];
        s.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| s.parse::<u32>().ok())
            .flatten()
    };
    let (Some(year), Some(month), Some(day)) = (number(0..4), number(5..7), number(8..10)) else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// `strfmt.IsDateTime`: a date, `t`, then a time of day and a zone (checked on the part
/// between the first and second `t`, as upstream splits).
fn is_date_time(value: &str) -> bool {
    if value.len() < 4 {
        return false;
    }
    let lower = value.to_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    if parts.len() < 2 || !is_date(parts[0]) {
        return false;
    }
    let Some(re) = DATE_TIME.regex() else {
        return false;
    };
    re.captures(parts[1]).is_some_and(|m| {
        let field = |i: usize| m.get(i).map_or("", |g| g.as_str());
        field(1) <= "23" && field(2) <= "59" && field(3) <= "59"
    })
}

/// `strfmt.ParseDuration`: Go's `time.ParseDuration`, else any `<digits> <unit>` in the
/// text with a unit it knows (`ns`, `us`, `ms`, `s`, `m`, `h`, `d`, `w` and their words).
fn is_duration(value: &str) -> bool {
    if go_duration(value) {
        return true;
    }
    const UNITS: [&[&str]; 8] = [
        &["ns", "nano"],
        &["us", "µs", "micro"],
        &["ms", "milli"],
        &["s", "sec"],
        &["m", "min"],
        &["h", "hr", "hour"],
        &["d", "day"],
        &["w", "wk", "week"],
    ];
    let Some(re) = DURATION_PART.regex() else {
        return false;
    };
    let mut found = false;
    for m in re.captures_iter(value) {
        let amount = m.get(2).map_or("", |g| g.as_str());
        if amount.parse::<i64>().is_err() {
            // Go's `strconv.Atoi` failing (too large) fails the whole parse.
            return false;
        }
        let unit = m.get(3).map_or("", |g| g.as_str()).trim().to_lowercase();
        for variants in UNITS {
            let last = variants.len() - 1;
            for (i, variant) in variants.iter().enumerate() {
                if (i == last && unit.starts_with(variant)) || unit.eq_ignore_ascii_case(variant) {
                    found = true;
                }
            }
        }
    }
    found
}

/// Go's `time.ParseDuration`: `[-+]?` then `<number><unit>` one or more times (`0` alone).
fn go_duration(value: &str) -> bool {
    let s = value.strip_prefix(['-', '+']).unwrap_or(value);
    if s == "0" {
        return true;
    }
    if s.is_empty() {
        return false;
    }
    let mut rest = s;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let mut after = &rest[int_len..];
        let mut frac_len = 0;
        if let Some(f) = after.strip_prefix('.') {
            frac_len = f.bytes().take_while(u8::is_ascii_digit).count();
            after = &f[frac_len..];
        }
        if int_len == 0 && frac_len == 0 {
            return false;
        }
        let unit_len = after
            .char_indices()
            .find(|(_, c)| *c == '.' || c.is_ascii_digit())
            .map_or(after.len(), |(i, _)| i);
        if !matches!(
            &after[..unit_len],
            "ns" | "us" | "µs" | "μs" | "ms" | "s" | "m" | "h"
        ) {
            return false;
        }
        rest = &after[unit_len..];
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_compiles() {
        for pattern in [
            &HOSTNAME,
            &UUID,
            &UUID3,
            &UUID4,
            &UUID5,
            &CREDIT_CARD,
            &ISBN10,
            &ISBN13,
            &HEXCOLOR,
            &RGBCOLOR,
            &BASE64,
            &SSN,
            &DATE_TIME,
            &DURATION_PART,
            &SHORT_NAME,
            &LONG_NAME,
            &EMAIL,
        ] {
            assert!(pattern.regex().is_some(), "{}", pattern.source);
        }
    }

    #[test]
    fn formats_accept_and_refuse_as_upstream_s_validators() {
        let cases: &[(&str, &[&str], &[&str])] = &[
            (
                "date-time",
                &["2024-02-29T10:00:00Z", "2024-01-01t23:59:59.5+02:00"],
                &[
                    "2023-02-29T10:00:00Z",
                    "2024-01-01T24:00:00Z",
                    "2024-01-01",
                    "yesterday",
                ],
            ),
            (
                "date",
                &["2024-12-31"],
                &["2024-13-01", "24-01-01", "2024-1-1"],
            ),
            (
                "duration",
                &["1h30m", "-1.5s", "0", "3 days", "22 ns"],
                &["", "1x", "h"],
            ),
            (
                "uuid",
                &[
                    "123e4567-e89b-12d3-a456-426614174000",
                    "123E4567E89B12D3A456426614174000",
                ],
                &["123e4567-e89b-12d3-a456"],
            ),
            (
                "uuid4",
                &["123e4567-e89b-42d3-a456-426614174000"],
                &["123e4567-e89b-12d3-a456-426614174000"],
            ),
            (
                "ipv4",
                &["10.0.0.1", "010.0.0.1", "::ffff:1.2.3.4"],
                &["10.0.0", "::1", "256.0.0.1"],
            ),
            ("ipv6", &["::1", "fe80::1"], &["10.0.0.1", "fe80::g"]),
            (
                "cidr",
                &["10.0.0.0/8", "fd00::/64"],
                &["10.0.0.0/33", "10.0.0.0", "x/8"],
            ),
            (
                "mac",
                &["00:00:5e:00:53:01", "00-00-5E-00-53-01", "0000.5e00.5301"],
                &["00:00:5e:00:53", "0:0:5e:0:53:1"],
            ),
            (
                "hostname",
                &["example.com", "a", "xn--bcher-kva.example"],
                &["-a.com", "a..b"],
            ),
            (
                "email",
                &["a.b@example.com", "Ann <ann@example.com>"],
                &["a@", "@b", "a b@c"],
            ),
            (
                "uri",
                &[
                    "https://example.com/x?y=1",
                    "/absolute/path",
                    "urn:isbn:123",
                ],
                &["relative/path", "http://a/%zz", ""],
            ),
            (
                "byte",
                &["aGVsbG8=", "aGVsbG8h"],
                &["aGVsbG8", "not base64!", ""],
            ),
            ("isbn10", &["0321751043", "0-321-75104-3"], &["0321751044"]),
            ("isbn13", &["978-0321751041"], &["978-0321751042"]),
            (
                "creditcard",
                &["4111 1111 1111 1111"],
                &["4111 1111 1111 1112"],
            ),
            ("ssn", &["123-45-6789"], &["123456789", "12-345-6789"]),
            ("hexcolor", &["#fff", "A0B1C2"], &["#ffff"]),
            ("rgbcolor", &["rgb(255, 0, 10)"], &["rgb(256,0,0)"]),
            (
                "bsonobjectid",
                &["507f1f77bcf86cd799439011"],
                &["507f1f77bcf86cd79943901"],
            ),
            (
                "k8s-short-name",
                &["web-1"],
                &["Web", "-web", &"a".repeat(64)],
            ),
            ("k8s-long-name", &["a.b-c.d"], &["a..b", "A.b"]),
            ("password", &["anything at all"], &[]),
        ];
        for (format, good, bad) in cases {
            for value in *good {
                assert_eq!(check(format, value), Some(true), "{format}: {value:?}");
            }
            for value in *bad {
                assert_eq!(check(format, value), Some(false), "{format}: {value:?}");
            }
        }
        assert_eq!(check("int32", "x"), None);
        assert_eq!(check("my-own-format", "x"), None);
    }
}
