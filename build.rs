//! Lays out the BPE vocabularies (o200k_base, cl100k_base) as lookup tables compiled into the
//! binary, so that counting starts at once. Built at run time, as tokenizer crates do, the
//! tables cost every run some 80 ms of CPU (decompressing and hashing 200,000 tokens), which
//! was most of a small relay's time.
//!
//! The vocabularies come from the `tiktoken` crate (a build dependency only), read through its
//! public `decode`. The layout, read by src/tokens/bpe.rs (all little-endian u32 words):
//! - `<name>.single`: 256 words, the rank of each 1-byte token;
//! - `<name>.pair`: 65,536 words, the rank of each 2-byte token by `first << 8 | second`;
//! - `<name>.slots`: open addressing with linear probing over the longer tokens, four words a
//!   slot: the token's first 8 bytes (`layout::head`, two words), the offset of the rest in
//!   the arena, then `len << RANK_BITS | rank` (0: an empty slot);
//! - `<name>.arena`: the bytes after the eighth of tokens longer than 8, one after another.
//!
//! Absent ranks are `u32::MAX`.

use std::fs;
use std::path::PathBuf;

#[path = "src/tokens/layout.rs"]
mod layout;

use layout::RANK_BITS;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/tokens/layout.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    for name in ["o200k_base", "cl100k_base"] {
        let enc = tiktoken::get_encoding(name).expect("built into the tiktoken build dependency");
        let mut single = vec![u32::MAX; 256];
        let mut pair = vec![u32::MAX; 1 << 16];
        let mut long: Vec<(Vec<u8>, u32)> = Vec::new();
        for rank in 0..enc.vocab_size() as u32 {
            let token = enc.decode(&[rank]);
            match token.len() {
                0 => panic!("{name}: rank {rank} has no bytes"),
                1 => single[token[0] as usize] = rank,
                2 => pair[(token[0] as usize) << 8 | token[1] as usize] = rank,
                _ => long.push((token, rank)),
            }
        }
        // o200k, what relays count with, at a load under half: lookups in the merge loop mostly
        // miss, and a miss ends at the first empty slot (4 MB more of binary than at 3/4, for
        // a fifth more speed). cl100k, which only a config names, at 3/4.
        let size = match name {
            "o200k_base" => (long.len() * 2).next_power_of_two(),
            _ => long.len().next_power_of_two(),
        };
        let mask = size - 1;
        let mut slots = vec![[0u32; 4]; size];
        let mut arena = Vec::new();
        for (token, rank) in &long {
            assert!(
                *rank < 1 << RANK_BITS,
                "{name}: rank {rank} needs more bits"
            );
            assert!(
                token.len() < 1 << (32 - RANK_BITS),
                "{name}: a token is too long"
            );
            let mut i = layout::token_hash(token) as usize & mask;
            while slots[i][3] != 0 {
                i = (i + 1) & mask;
            }
            let head = layout::head(token);
            slots[i] = [
                head as u32,
                (head >> 32) as u32,
                arena.len() as u32,
                (token.len() as u32) << RANK_BITS | rank,
            ];
            arena.extend_from_slice(token.get(8..).unwrap_or_default());
        }
        let words = |ws: &mut dyn Iterator<Item = u32>| -> Vec<u8> {
            ws.flat_map(u32::to_le_bytes).collect()
        };
        let write = |ext: &str, bytes: &[u8]| {
            fs::write(out.join(format!("{name}.{ext}")), bytes).expect("write to OUT_DIR");
        };
        write("single", &words(&mut single.into_iter()));
        write("pair", &words(&mut pair.into_iter()));
        write("slots", &words(&mut slots.into_iter().flatten()));
        write("arena", &arena);
    }
}
