//! Continue tokens: the list's resourceVersion, the last key returned and its position.
//!
//! Encoded like the real server's (base64url of a small JSON document), plus two fields of
//! ours: the position (for `remainingItemCount`) and the server's token epoch (so that
//! [`Faults::expire_continue_tokens`](super::Faults::expire_continue_tokens) can expire every
//! outstanding token at once).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ContinueToken {
    /// Format version, as upstream spells it.
    pub v: String,
    /// The list's resourceVersion.
    pub rv: u64,
    /// The next page starts strictly after this key.
    pub start: String,
    /// How many keys (in the unfiltered view) precede the next page.
    pub pos: usize,
    /// The token epoch at issue time.
    pub epoch: u64,
}

const VERSION: &str = "meta.k8s.io/v1";

impl ContinueToken {
    pub(crate) fn new(rv: u64, last_key: &str, pos: usize, epoch: u64) -> Self {
        Self {
            v: VERSION.into(),
            rv,
            start: last_key.to_owned(),
            pos,
            epoch,
        }
    }

    pub(crate) fn encode(&self) -> String {
        base64url_encode(&serde_json::to_vec(self).unwrap_or_default())
    }

    /// Decodes a token; the error is the reason it is not valid.
    pub(crate) fn decode(token: &str) -> Result<Self, String> {
        let raw = base64url_decode(token).ok_or_else(|| "not base64url".to_owned())?;
        let t: Self = serde_json::from_slice(&raw).map_err(|e| e.to_string())?;
        if t.v != VERSION {
            return Err(format!("unsupported version {:?}", t.v));
        }
        if t.rv == 0 {
            return Err("incorrect encoded start resourceVersion".into());
        }
        Ok(t)
    }
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Standard base64 (`+`, `/`, padded), as Go's `encoding/json` writes a `[]byte`.
const STD_ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

pub(crate) fn base64url_encode(input: &[u8]) -> String {
    encode(input, ALPHABET, false)
}

/// `input` in standard, padded base64.
pub(crate) fn base64_encode(input: &[u8]) -> String {
    encode(input, STD_ALPHABET, true)
}

fn encode(input: &[u8], alphabet: &[u8; 64], pad: bool) -> String {
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let chars = chunk.len() + 1;
        for i in 0..chars {
            let idx = (n >> (18 - 6 * i)) & 0x3f;
            out.push(char::from(alphabet[idx as usize]));
        }
        if pad {
            out.extend(std::iter::repeat_n('=', 4 - chars));
        }
    }
    out
}

fn base64url_decode(input: &str) -> Option<Vec<u8>> {
    let input = input.trim_end_matches('=');
    let mut out = Vec::with_capacity(input.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for c in input.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' | b'+' => 62,
            b'_' | b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(((acc >> bits) & 0xff) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
#[path = "continue_token_proptests.rs"]
mod proptests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips() {
        for len in 0..20 {
            let data: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            assert_eq!(base64url_decode(&base64url_encode(&data)).unwrap(), data);
        }
        assert_eq!(base64url_encode(b"hello"), "aGVsbG8");
    }

    #[test]
    fn tokens_round_trip_and_reject_garbage() {
        let t = ContinueToken::new(42, "ns/pod-7", 7, 3);
        assert_eq!(ContinueToken::decode(&t.encode()).unwrap(), t);
        assert!(ContinueToken::decode("!!").is_err());
        assert!(ContinueToken::decode(&base64url_encode(b"{}")).is_err());
    }
}
