//! A built-in kind's quantities as the API server reads and writes them
//! (`k8s.io/apimachinery/pkg/api/resource`): `ParseQuantity` reads the text, `RoundUp` rounds
//! it (the defaults round every `ResourceList` up to milli-units), and `MarshalJSON` writes it
//! back as the text received when the parser judged that text canonical, else in canonical
//! form. So a client's `1000m` is stored as `1`, `0.5` as `500m`, `1024Mi` as `1Gi`, `2000`
//! as `2k`, the number `2` as the string `"2"`, while `100m`, `128Mi` and `+1` stay as sent;
//! a controller comparing what it wrote with what it reads meets the difference it meets on
//! a cluster.
//!
//! Values are exact (a big integer times a power of ten), as upstream's `inf.Dec` keeps
//! them: any number of digits, rounded up (away from zero) to nano-units, binary quantities
//! capped at 2^63-1.

use std::borrow::Cow;
use std::cmp::Ordering;

use num_bigint::{BigInt, Sign};

/// `ErrFormatWrong`.
pub(crate) const FORMAT_ERROR: &str = "quantities must match the regular expression \
                                       '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
/// `ErrNumeric`.
const NUMERIC_ERROR: &str = "unable to parse numeric part of quantity";
/// `ErrSuffix`.
const SUFFIX_ERROR: &str = "unable to parse quantity's suffix";

/// The digits of an `int64` upstream's fast path takes whole (`maxInt64Factors`).
const MAX_INT64_FACTORS: i64 = 18;
/// The smallest unit a quantity keeps: nano (`10^-9`).
const NANO: i64 = -9;
/// The scale `SetDefaults_ResourceList` rounds up to: milli.
pub(crate) const MILLI: i64 = -3;
/// The most powers of ten two values are brought together over to be added or compared
/// (values further apart than this are not summed: the smaller is dropped).
const MAX_ALIGN: u32 = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    DecimalExponent,
    BinarySI,
    DecimalSI,
}

/// A parsed quantity.
#[derive(Debug, Clone)]
pub(crate) struct Quantity {
    /// The value is `mantissa × 10^exponent`.
    mantissa: BigInt,
    exponent: i64,
    format: Format,
    /// The text written back as is, when the parser kept it (upstream's cached `s`).
    kept: Option<String>,
}

/// The parts `parseQuantityString` splits a quantity into.
struct Parts<'a> {
    positive: bool,
    /// The number with its sign, without the suffix.
    value: &'a str,
    /// The integer digits without leading zeros (`"0"` when there are none).
    num: &'a str,
    /// The fraction's digits.
    denom: &'a str,
    suffix: &'a str,
}

/// Upstream's `parseQuantityString`, byte for byte.
fn split(s: &str) -> Result<Parts<'_>, &'static str> {
    let b = s.as_bytes();
    let end = b.len();
    let mut positive = true;
    let mut pos = 0;
    match b.first() {
        Some(b'-') => {
            positive = false;
            pos += 1;
        }
        Some(b'+') => pos += 1,
        _ => {}
    }
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    let whole = |num, denom| Parts {
        positive,
        value: s,
        num,
        denom,
        suffix: "",
    };
    if pos >= end {
        return Ok(Parts {
            positive,
            value: "0",
            num: "0",
            denom: "",
            suffix: "",
        });
    }
    let start = pos;
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos >= end {
        return Ok(whole(&s[start..], ""));
    }
    let num = if pos == start { "0" } else { &s[start..pos] };
    let mut denom = "";
    if b[pos] == b'.' {
        pos += 1;
        let start = pos;
        while pos < end && b[pos].is_ascii_digit() {
            pos += 1;
        }
        if pos >= end {
            return Ok(whole(num, &s[start..]));
        }
        denom = &s[start..pos];
    }
    let value = &s[..pos];
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < end && matches!(b[pos], b'-' | b'+') {
        pos += 1;
    }
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < end {
        return Err(FORMAT_ERROR);
    }
    Ok(Parts {
        positive,
        value,
        num,
        denom,
        suffix: &s[suffix_start..],
    })
}

/// Upstream's suffixer: the suffix's base, exponent and format.
fn interpret(suffix: &str) -> Option<(u32, i32, Format)> {
    let decimal = |e| Some((10, e, Format::DecimalSI));
    let binary = |e| Some((2, e, Format::BinarySI));
    match suffix {
        "" => decimal(0),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => binary(10),
        "Mi" => binary(20),
        "Gi" => binary(30),
        "Ti" => binary(40),
        "Pi" => binary(50),
        "Ei" => binary(60),
        _ if suffix.len() > 1 && suffix.starts_with(['e', 'E']) => {
            // Go's `int32(parsed)` of an `int64`: the low 32 bits, as `as` keeps them.
            let exponent = suffix[1..].parse::<i64>().ok()? as i32;
            Some((10, exponent, Format::DecimalExponent))
        }
        _ => None,
    }
}

/// Upstream's `ParseQuantity` (the text of a JSON string, trimmed, or of a number).
pub(crate) fn parse(s: &str) -> Result<Quantity, &'static str> {
    if s.is_empty() {
        return Err(FORMAT_ERROR);
    }
    if s == "0" {
        return Ok(Quantity {
            mantissa: BigInt::ZERO,
            exponent: 0,
            format: Format::DecimalSI,
            kept: Some(s.to_owned()),
        });
    }
    let parts = split(s)?;
    let (base, exponent, format) = interpret(parts.suffix).ok_or(SUFFIX_ERROR)?;
    if let Some(fast) = parse_int64(s, &parts, exponent, format)? {
        return Ok(fast);
    }
    // The `inf.Dec` path: exact, whatever the number of digits.
    let (mut amount, mut at) = parse_decimal(parts.value).ok_or(NUMERIC_ERROR)?;
    if base == 10 {
        at += i64::from(exponent);
    } else {
        // Binary suffixes are 2^10 to 2^60.
        amount <<= u32::try_from(exponent).unwrap_or(0);
    }
    let negative = amount.sign() == Sign::Minus;
    let mut amount = BigInt::from(amount.magnitude().clone());
    if amount.sign() != Sign::NoSign && at < NANO {
        amount = shift_down_rounding_up(&amount, NANO - at);
        at = NANO;
    }
    let mut q = Quantity {
        mantissa: amount,
        exponent: at,
        format,
        kept: None,
    };
    if format == Format::BinarySI && q.cmp_int(i64::MAX) == Ordering::Greater {
        q.mantissa = BigInt::from(i64::MAX);
        q.exponent = 0;
    }
    if format == Format::BinarySI
        && q.cmp_int(1) == Ordering::Less
        && q.mantissa.sign() == Sign::Plus
    {
        q.format = Format::DecimalSI;
    }
    if negative {
        q.mantissa = -q.mantissa;
    }
    Ok(q)
}

/// Upstream's fast path: a value that fits an `int64` at a scale no finer than nano, and
/// whether the text received is kept (when it looks canonical). `None` when it does not
/// apply.
fn parse_int64(
    s: &str,
    parts: &Parts<'_>,
    exponent: i32,
    format: Format,
) -> Result<Option<Quantity>, &'static str> {
    let digits = (parts.num.len() + parts.denom.len()) as i64;
    let (precision, mut scale, multiplier) = match format {
        Format::DecimalExponent | Format::DecimalSI => {
            (MAX_INT64_FACTORS - digits, i64::from(exponent), 1i64)
        }
        Format::BinarySI if exponent >= 0 && parts.denom.is_empty() => (
            // A binary suffix (2^10 to 2^60) holds about three decimal digits per 2^10.
            15 - parts.num.len() as i64 - i64::from(exponent) * 3 / 10 - 1,
            0,
            1i64 << exponent.clamp(0, 62),
        ),
        Format::BinarySI => (-1, 0, 1),
    };
    if precision < 0 {
        return Ok(None);
    }
    scale -= parts.denom.len() as i64;
    if scale < NANO {
        return Ok(None);
    }
    let shifted = format!("{}{}", parts.num, parts.denom);
    let value: i64 = shifted.parse().map_err(|_| NUMERIC_ERROR)?;
    let Some(result) = value.checked_mul(multiplier) else {
        return Ok(None);
    };
    let kept = match format {
        Format::BinarySI => exponent % 10 == 0 && value & 0x07 != 0,
        _ => scale % 3 == 0 && !shifted.ends_with("000") && !shifted.starts_with('0'),
    };
    Ok(Some(Quantity {
        mantissa: BigInt::from(if parts.positive { result } else { -result }),
        exponent: scale,
        format,
        kept: kept.then(|| s.to_owned()),
    }))
}

/// A decimal number as `inf.Dec` scans it (a sign, digits, at most one point): its digits as
/// an integer and the power of ten they are scaled by.
fn parse_decimal(value: &str) -> Option<(BigInt, i64)> {
    let (negative, digits) = match value.as_bytes().first() {
        Some(b'-') => (true, &value[1..]),
        Some(b'+') => (false, &value[1..]),
        _ => (false, value),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let all = format!("{int}{frac}");
    if all.is_empty() || !all.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let magnitude: BigInt = all.parse().ok()?;
    Some((
        if negative { -magnitude } else { magnitude },
        -(frac.len() as i64),
    ))
}

/// `|n| / 10^places`, rounded up (away from zero) when anything is dropped; `n` is not
/// negative.
fn shift_down_rounding_up(n: &BigInt, places: i64) -> BigInt {
    // More places than `n` has digits: all of it is dropped.
    if places > n.to_string().len() as i64 {
        return BigInt::from(u8::from(n.sign() != Sign::NoSign));
    }
    let divisor = BigInt::from(10u8).pow(u32::try_from(places).unwrap_or(u32::MAX));
    let (quotient, remainder) = (n / &divisor, n % &divisor);
    if remainder.sign() == Sign::NoSign {
        quotient
    } else {
        quotient + 1u8
    }
}

impl Quantity {
    /// Upstream's `RoundUp(scale)`: the value rounded up (away from zero) to `10^scale`; the
    /// text kept is forgotten only when the value was finer.
    pub(crate) fn round_up(&mut self, scale: i64) {
        if self.exponent >= scale {
            return;
        }
        self.kept = None;
        let negative = self.mantissa.sign() == Sign::Minus;
        let magnitude = BigInt::from(self.mantissa.magnitude().clone());
        let rounded = shift_down_rounding_up(&magnitude, scale - self.exponent);
        self.mantissa = if negative { -rounded } else { rounded };
        self.exponent = scale;
    }

    /// Whether the value is above zero.
    pub(crate) fn is_positive(&self) -> bool {
        self.mantissa.sign() == Sign::Plus
    }

    /// The two values over one exponent (the smaller), unless they are more than
    /// [`MAX_ALIGN`] powers of ten apart.
    fn aligned(&self, other: &Quantity) -> Option<(BigInt, BigInt, i64)> {
        let at = self.exponent.min(other.exponent);
        let shift = |q: &Quantity| {
            u32::try_from(q.exponent - at)
                .ok()
                .filter(|s| *s <= MAX_ALIGN)
        };
        let (a, b) = (shift(self)?, shift(other)?);
        Some((
            &self.mantissa * BigInt::from(10u8).pow(a),
            &other.mantissa * BigInt::from(10u8).pow(b),
            at,
        ))
    }

    /// The sum of two values (upstream's `Add`), exact; of two values more than
    /// [`MAX_ALIGN`] powers of ten apart, the larger (a sum no request would hold).
    pub(crate) fn sum(&self, other: &Quantity) -> Quantity {
        let (mantissa, exponent) = match self.aligned(other) {
            Some((a, b, at)) => (a + b, at),
            None if self.exponent > other.exponent => (self.mantissa.clone(), self.exponent),
            None => (other.mantissa.clone(), other.exponent),
        };
        Quantity {
            mantissa,
            exponent,
            format: self.format,
            kept: None,
        }
    }

    /// The values compared (upstream's `Cmp`).
    pub(crate) fn cmp_value(&self, other: &Quantity) -> Ordering {
        match self.aligned(other) {
            Some((a, b, _)) => a.cmp(&b),
            // Far apart: the larger exponent wins, unless signs say otherwise.
            None => {
                let (a, b) = (self.mantissa.sign(), other.mantissa.sign());
                if a != b || a == Sign::NoSign {
                    a.cmp(&b)
                } else if (self.exponent > other.exponent) == (a == Sign::Plus) {
                    Ordering::Greater
                } else {
                    Ordering::Less
                }
            }
        }
    }

    /// The value compared with `n`.
    fn cmp_int(&self, n: i64) -> Ordering {
        let n = BigInt::from(n);
        match self.exponent {
            // Beyond any `i64` unless zero.
            e if e > 40 => self.mantissa.sign().cmp(&Sign::NoSign),
            e if e >= 0 => (&self.mantissa * BigInt::from(10u8).pow(e as u32)).cmp(&n),
            e => self
                .mantissa
                .cmp(&(n * BigInt::from(10u8).pow(u32::try_from(-e).unwrap_or(u32::MAX)))),
        }
    }

    /// The text `MarshalJSON` writes: the one received when the parser kept it, else the
    /// canonical form (`CanonicalizeBytes`).
    pub(crate) fn text(&self) -> Cow<'_, str> {
        if let Some(kept) = &self.kept {
            return Cow::Borrowed(kept);
        }
        if self.mantissa.sign() == Sign::NoSign {
            return Cow::Borrowed("0");
        }
        let mut format = self.format;
        if format == Format::BinarySI {
            let small =
                self.cmp_int(-1024) == Ordering::Greater && self.cmp_int(1024) == Ordering::Less;
            // A fraction would be rounded: shown in decimal instead.
            if small || !self.is_integer() {
                format = Format::DecimalSI;
            }
        }
        Cow::Owned(match format {
            Format::BinarySI => self.binary_text(),
            Format::DecimalSI | Format::DecimalExponent => self.decimal_text(format),
        })
    }

    fn is_integer(&self) -> bool {
        self.exponent >= 0 || {
            let divisor = BigInt::from(10u8).pow(u32::try_from(-self.exponent).unwrap_or(0));
            (&self.mantissa % divisor).sign() == Sign::NoSign
        }
    }

    /// An integer value in powers of 1024 (`AsCanonicalBase1024Bytes`).
    fn binary_text(&self) -> String {
        let mut n = if self.exponent >= 0 {
            &self.mantissa * BigInt::from(10u8).pow(self.exponent as u32)
        } else {
            &self.mantissa / BigInt::from(10u8).pow(u32::try_from(-self.exponent).unwrap_or(0))
        };
        let mut times = 0;
        let kibi = BigInt::from(1024u16);
        while (&n % &kibi).sign() == Sign::NoSign {
            n /= &kibi;
            times += 1;
        }
        let suffix = match times {
            1 => "Ki",
            2 => "Mi",
            3 => "Gi",
            4 => "Ti",
            5 => "Pi",
            6 => "Ei",
            // No binary suffix for 1024^0 (nor beyond 2^60, which the cap excludes).
            _ => "",
        };
        format!("{n}{suffix}")
    }

    /// The mantissa without factors of ten and the exponent lowered to a multiple of three
    /// (`AsCanonicalBytes`), with the format's suffix.
    fn decimal_text(&self, format: Format) -> String {
        // In decimal digits: the factors of ten are the trailing zeros (no division per
        // factor, whatever the number of digits).
        let digits = self.mantissa.magnitude().to_string();
        let significant = digits.trim_end_matches('0');
        let mut e = self.exponent + (digits.len() - significant.len()) as i64;
        let mut m = String::with_capacity(significant.len() + 3);
        if self.mantissa.sign() == Sign::Minus {
            m.push('-');
        }
        m.push_str(significant);
        // Go's remainder keeps the dividend's sign, so this lowers `e` to a multiple of 3.
        match e % 3 {
            1 | -2 => {
                m.push('0');
                e -= 1;
            }
            2 | -1 => {
                m.push_str("00");
                e -= 2;
            }
            _ => {}
        }
        let suffix = match format {
            Format::DecimalExponent if e == 0 => String::new(),
            Format::DecimalExponent => format!("e{e}"),
            _ => match e {
                -9 => "n",
                -6 => "u",
                -3 => "m",
                3 => "k",
                6 => "M",
                9 => "G",
                12 => "T",
                15 => "P",
                18 => "E",
                // Upstream has no decimal suffix beyond `E` and prints the mantissa alone
                // (`1000E` is written `1`); kept as it is.
                _ => "",
            }
            .to_owned(),
        };
        format!("{m}{suffix}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(s: &str) -> String {
        parse(s)
            .unwrap_or_else(|e| panic!("{s}: {e}"))
            .text()
            .into_owned()
    }

    #[test]
    fn canonical_texts_are_kept_and_others_rewritten_as_upstream_s_tests_say() {
        // apimachinery's TestQuantityString: each canonical text is kept as received, and
        // its alternate is written in that canonical form.
        for (canonical, alternate) in [
            ("1Gi", "1024Mi"),
            ("300Mi", "307200Ki"),
            ("6Ki", ""),
            ("1001Gi", "1025024Mi"),
            ("1Ti", "1024Gi"),
            ("5", "5000m"),
            ("500m", "0.5"),
            ("1G", "1000M"),
            ("1G", "0.001T"),
            ("1m", "1000u"),
            ("80m", ""),
            ("1080m", "1.08"),
            ("1080m", "1080000000n"),
            ("300M", ""),
            ("1T", ""),
            ("1234567M", ""),
            ("1234567m", ""),
            ("3k", ""),
            ("1025", ""),
            ("0", "00"),
            ("1e9", ".001e12"),
            ("1e-3", "0.001e0"),
            ("1e-9", "1000e-12"),
            ("80e-3", ""),
            ("300e6", ""),
            ("1e12", ""),
            ("3e3", ""),
            ("1n", ""),
            ("80n", ""),
            ("1080n", ""),
            ("1u", ""),
            ("80u", ""),
            ("1080u", ""),
        ] {
            let q = parse(canonical).expect(canonical);
            assert_eq!(q.kept.as_deref(), Some(canonical), "{canonical} is kept");
            assert_eq!(
                written(&format!("-{canonical}")).trim_start_matches('-'),
                canonical
            );
            if !alternate.is_empty() {
                let q = parse(alternate).expect(alternate);
                assert_eq!(q.kept, None, "{alternate} is not kept");
                assert_eq!(q.text(), canonical, "{alternate}");
            }
        }
        // TestQuantityParseEmit, and its negative forms.
        for (input, expect) in [
            ("1Ki", "1Ki"),
            ("1Mi", "1Mi"),
            ("1Gi", "1Gi"),
            ("1024Mi", "1Gi"),
            ("1000M", "1G"),
            (".001Ki", "1024m"),
            (".000001Ki", "1024u"),
            (".000000001Ki", "1024n"),
            (".000000000001Ki", "2n"),
        ] {
            assert_eq!(written(input), expect, "{input}");
            assert_eq!(
                written(&format!("-{input}")),
                format!("-{expect}"),
                "-{input}"
            );
        }
    }

    #[test]
    fn values_are_exact_rounded_up_to_nano_and_binary_ones_capped() {
        // Values from apimachinery's TestQuantityParse, written back.
        for (input, expect) in [
            ("0n", "0"),
            ("0Ki", "0"),
            ("8Ki", "8Ki"),
            ("3Ei", "3Ei"),
            ("50k", "50k"),
            ("40T", "40T"),
            ("100.035k", "100.035k"),
            ("0.0005k", "500m"),
            ("0.00050k", "500m"),
            ("0.05000", "50m"),
            ("0.5e-1", "50e-3"),
            ("10.035M", "10.035M"),
            ("1.2e3", "1200"),
            ("1.3E+6", "1300e3"),
            ("1.53E12", "1530e9"),
            ("7.123456M", "7.123456M"),
            ("6.987654321G", "6.987654321G"),
            ("1.01E", "1010P"),
            ("3.001n", "4n"),
            ("1.1E-9", "2e-9"),
            ("0.0000000005", "1n"),
            ("0.5e-9", "1e-9"),
            ("0.00000012345", "124n"),
            ("9Ei", "9223372036854775807"),
            ("9223372036854775807Ki", "9223372036854775807"),
            ("12E", "12E"),
            ("100.035Ki", "102435840m"),
            ("0.5Mi", "512Ki"),
            ("0.05Gi", "53687091200m"),
            ("0.000000000001Ki", "2n"),
            (".0001k", "100m"),
            // Kept as received, as upstream keeps them: the parser judges by the digits.
            ("1.", "1."),
            ("1.G", "1.G"),
            ("01", "01"),
            (
                "123456789012345678901234567890",
                "123456789012345678901234567890",
            ),
            ("1234567890123456789012.5m", "1234567890123456789012500u"),
            ("+1", "+1"),
            ("-0", "0"),
            // No decimal suffix beyond E: upstream writes the mantissa alone.
            ("1000E", "1"),
        ] {
            assert_eq!(written(input), expect, "{input}");
        }
        // Any number of digits, without a division per trailing zero: 10^5000, whose
        // canonical exponent has no decimal suffix, is written as its mantissa alone.
        assert_eq!(written(&format!("1{}", "0".repeat(5000))), "100");
        for invalid in [
            "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i",
        ] {
            assert!(parse(invalid).is_err(), "{invalid}");
        }
        assert_eq!(parse("-3.01e-").err(), Some(SUFFIX_ERROR));
        assert_eq!(parse("1 Gi").err(), Some(FORMAT_ERROR));
        assert_eq!(parse("5Mm").err(), Some(SUFFIX_ERROR));
    }

    #[test]
    fn rounding_to_milli_units_is_upstream_s_round_up() {
        let rounded = |s: &str| {
            let mut q = parse(s).expect(s);
            q.round_up(MILLI);
            q.text().into_owned()
        };
        // A value already in milli-units keeps its text; a finer one is rounded away from
        // zero and written canonically.
        assert_eq!(rounded("100m"), "100m");
        assert_eq!(rounded("1000m"), "1");
        assert_eq!(rounded("100u"), "1m");
        assert_eq!(rounded("0.0001"), "1m");
        assert_eq!(rounded("-9.0001"), "-9001m");
        assert_eq!(rounded("5n"), "1m");
        assert_eq!(rounded("1.5Gi"), "1536Mi");
        assert_eq!(rounded("0.0000000000001"), "1m");
        // apimachinery's TestQuantityRoundUp at -3: 9.01 stays 9.01.
        assert_eq!(rounded("9.01"), "9010m");
    }
}
