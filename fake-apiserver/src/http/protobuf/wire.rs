//! Protobuf wire primitives over byte slices (varints and keys come from prost), and the
//! text forms of the special types: RFC 3339 times and Go duration strings.

use prost::encoding::{WireType, decode_varint, encode_key, encode_varint};

use crate::object::civil_from_days;
pub(super) use crate::object::parse_time;

/// One field read from a message.
pub(super) enum Raw<'a> {
    Varint(u64),
    Fixed64(u64),
    /// A fixed 32-bit value (no Kubernetes message has one; read to be skipped).
    Fixed32,
    Bytes(&'a [u8]),
}

/// Reads the fields of one message, in order.
pub(super) struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(super) fn new(buf: &'a [u8]) -> Self {
        Self { buf }
    }

    /// The next field's number and value; `None` at the end.
    pub(super) fn next_field(&mut self) -> Result<Option<(u32, Raw<'a>)>, String> {
        if self.buf.is_empty() {
            return Ok(None);
        }
        let key = decode_varint(&mut self.buf).map_err(|e| e.to_string())?;
        let number = u32::try_from(key >> 3).map_err(|_| format!("invalid field key {key}"))?;
        let value = match key & 7 {
            0 => Raw::Varint(decode_varint(&mut self.buf).map_err(|e| e.to_string())?),
            1 => Raw::Fixed64(u64::from_le_bytes(
                self.take(8)?.try_into().unwrap_or([0; 8]),
            )),
            2 => {
                let len = decode_varint(&mut self.buf).map_err(|e| e.to_string())?;
                let len = usize::try_from(len).map_err(|_| "length overflow".to_owned())?;
                Raw::Bytes(self.take(len)?)
            }
            5 => {
                self.take(4)?;
                Raw::Fixed32
            }
            other => return Err(format!("unsupported wire type {other} (field {number})")),
        };
        Ok(Some((number, value)))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.buf.len() < n {
            return Err(format!(
                "truncated message: {n} bytes wanted, {} left",
                self.buf.len()
            ));
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    /// Every varint of a packed repeated field.
    pub(super) fn packed_varints(mut buf: &[u8]) -> Result<Vec<u64>, String> {
        let mut out = Vec::new();
        while !buf.is_empty() {
            out.push(decode_varint(&mut buf).map_err(|e| e.to_string())?);
        }
        Ok(out)
    }
}

/// Writes a length-delimited field.
pub(super) fn put_bytes(number: u32, bytes: &[u8], out: &mut Vec<u8>) {
    encode_key(number, WireType::LengthDelimited, out);
    encode_varint(bytes.len() as u64, out);
    out.extend_from_slice(bytes);
}

/// Writes a varint field (negative numbers as ten-byte two's complement, as int32 and int64
/// fields carry them).
pub(super) fn put_varint(number: u32, value: u64, out: &mut Vec<u8>) {
    encode_key(number, WireType::Varint, out);
    encode_varint(value, out);
}

/// Writes a fixed 64-bit field (a double).
pub(super) fn put_fixed64(number: u32, value: u64, out: &mut Vec<u8>) {
    encode_key(number, WireType::SixtyFourBit, out);
    out.extend_from_slice(&value.to_le_bytes());
}

// ----- Times ------------------------------------------------------------------------------

/// `2026-01-02T03:04:05Z`, or with `micros` `2026-01-02T03:04:05.123456Z` (Go's RFC3339 and
/// Kubernetes' MicroTime layouts).
pub(super) fn format_time(seconds: i64, nanos: i32, micros: bool) -> String {
    let days = seconds.div_euclid(86_400);
    let rem = seconds.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let base = format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    );
    if micros {
        format!("{base}.{:06}Z", nanos.max(0) / 1000)
    } else {
        format!("{base}Z")
    }
}

// ----- Go durations -----------------------------------------------------------------------

const NS_PER_US: u64 = 1_000;
const NS_PER_MS: u64 = 1_000_000;
const NS_PER_S: u64 = 1_000_000_000;

/// A duration in nanoseconds as Go's `time.Duration.String` writes it (`1h2m3.5s`, `1.5ms`,
/// `0s`), which is how `metav1.Duration` appears in JSON.
pub(super) fn format_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".to_owned();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let u = nanos.unsigned_abs();
    let body = if u < NS_PER_US {
        format!("{u}ns")
    } else if u < NS_PER_MS {
        with_fraction(u, NS_PER_US, "µs")
    } else if u < NS_PER_S {
        with_fraction(u, NS_PER_MS, "ms")
    } else {
        let hours = u / (3600 * NS_PER_S);
        let rem = u % (3600 * NS_PER_S);
        let minutes = rem / (60 * NS_PER_S);
        let secs = rem % (60 * NS_PER_S);
        let mut out = String::new();
        if hours > 0 {
            out.push_str(&format!("{hours}h"));
        }
        if hours > 0 || minutes > 0 {
            out.push_str(&format!("{minutes}m"));
        }
        out.push_str(&with_fraction(secs, NS_PER_S, "s"));
        out
    };
    format!("{sign}{body}")
}

fn with_fraction(value: u64, unit: u64, suffix: &str) -> String {
    let whole = value / unit;
    let frac = value % unit;
    if frac == 0 {
        return format!("{whole}{suffix}");
    }
    let width = unit.ilog10() as usize;
    let digits = format!("{frac:0width$}");
    format!("{whole}.{}{suffix}", digits.trim_end_matches('0'))
}

/// Parses a Go duration string (`300ms`, `-1.5h`, `2h45m`) into nanoseconds.
pub(super) fn parse_duration(text: &str) -> Option<i64> {
    let (negative, mut rest) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let num_len = rest
            .bytes()
            .take_while(|b| b.is_ascii_digit() || *b == b'.')
            .count();
        if num_len == 0 {
            return None;
        }
        let value: f64 = rest[..num_len].parse().ok()?;
        rest = &rest[num_len..];
        let unit_len = rest
            .char_indices()
            .find(|(_, c)| c.is_ascii_digit() || *c == '.')
            .map_or(rest.len(), |(i, _)| i);
        let unit = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        total += value * unit;
        rest = &rest[unit_len..];
    }
    if !total.is_finite() || total > i64::MAX as f64 {
        return None;
    }
    // Durations are whole nanoseconds; the float only carries fractions like `1.5h`.
    #[allow(clippy::cast_possible_truncation)]
    let nanos = total.round() as i64;
    Some(if negative { -nanos } else { nanos })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip() {
        assert_eq!(format_time(0, 0, false), "1970-01-01T00:00:00Z");
        assert_eq!(format_time(1_767_323_045, 0, false), "2026-01-02T03:04:05Z");
        assert_eq!(
            format_time(1_767_323_045, 123_456_789, true),
            "2026-01-02T03:04:05.123456Z"
        );
        assert_eq!(parse_time("2026-01-02T03:04:05Z"), Some((1_767_323_045, 0)));
        assert_eq!(
            parse_time("2026-01-02T04:04:05.5+01:00"),
            Some((1_767_323_045, 500_000_000))
        );
        assert_eq!(parse_time("2000-02-29T00:00:00Z"), Some((951_782_400, 0)));
        assert_eq!(parse_time("1969-12-31T23:59:59Z"), Some((-1, 0)));
        assert_eq!(parse_time("yesterday"), None);
        assert_eq!(parse_time("2026-13-02T03:04:05Z"), None);
    }

    #[test]
    fn durations_as_go_writes_them() {
        for (nanos, text) in [
            (0, "0s"),
            (1, "1ns"),
            (1_500, "1.5µs"),
            (1_500_000, "1.5ms"),
            (1_500_000_000, "1.5s"),
            (3_600_000_000_000, "1h0m0s"),
            (3_723_500_000_000, "1h2m3.5s"),
            (-90_000_000_000, "-1m30s"),
        ] {
            assert_eq!(format_duration(nanos), text);
            assert_eq!(parse_duration(text), Some(nanos), "{text}");
        }
        assert_eq!(parse_duration("2h45m"), Some(9_900_000_000_000));
        assert_eq!(parse_duration("300us"), Some(300_000));
        assert_eq!(parse_duration("5"), None);
        assert_eq!(parse_duration("1x"), None);
    }

    #[test]
    fn reads_every_wire_type() {
        let mut out = Vec::new();
        put_varint(1, 150, &mut out);
        put_bytes(2, b"hi", &mut out);
        put_fixed64(3, 1.5f64.to_bits(), &mut out);
        out.extend_from_slice(&[0x25, 1, 0, 0, 0]); // field 4, fixed32
        let mut r = Reader::new(&out);
        assert!(matches!(r.next_field(), Ok(Some((1, Raw::Varint(150))))));
        assert!(matches!(r.next_field(), Ok(Some((2, Raw::Bytes(b"hi"))))));
        assert!(
            matches!(r.next_field(), Ok(Some((3, Raw::Fixed64(b)))) if f64::from_bits(b) == 1.5)
        );
        assert!(matches!(r.next_field(), Ok(Some((4, Raw::Fixed32)))));
        assert!(matches!(r.next_field(), Ok(None)));
        assert!(
            Reader::new(&[0x12, 5, b'a']).next_field().is_err(),
            "truncated"
        );
    }
}
