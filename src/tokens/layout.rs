// The layout of the vocabulary tables, shared by build.rs, which lays them out, and
// src/tokens/bpe.rs, which looks tokens up in them, so that the two can never disagree.

/// A slot's last word is `len << RANK_BITS | rank`: o200k's ranks take 18 bits.
pub const RANK_BITS: u32 = 18;

/// A token's first bytes, up to 8, zero-padded, as a little-endian word: what a slot keeps of
/// its token, so that a lookup is decided (tokens up to 8 bytes) or nearly so by one compare.
#[inline]
pub fn head(b: &[u8]) -> u64 {
    let len = b.len();
    let le32 = |at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]) as u64;
    if len >= 8 {
        le32(0) | le32(4) << 32
    } else if len >= 4 {
        // Two reads that overlap on 8 - len bytes: the same bits, so OR is exact.
        le32(0) | le32(len - 4) << ((len - 4) * 8)
    } else {
        b.iter().rev().fold(0, |w, &x| w << 8 | x as u64)
    }
}

/// The hash of a token's bytes. Its low bits pick the slot, so the high half of each product
/// is folded into them.
#[inline]
pub fn token_hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h =
        (head(bytes) ^ (bytes.len() as u64).wrapping_mul(0xA24B_AED4_963E_E407)).wrapping_mul(K);
    if bytes.len() > 8 {
        for w in bytes[8..].chunks(8) {
            h = (h.rotate_left(23) ^ head(w)).wrapping_mul(K);
        }
    }
    h ^ (h >> 32)
}
