//! Cem Yuksel's binary `.hair` format, the one the hair research community's
//! public models (`wStraight.hair`, `natural.hair`, …) are published in.
//!
//! Written by hand: no crate on crates.io reads it (searched for `hair`,
//! `cyhair`, `hair-format`), and the format is a fixed 128-byte header and
//! up to five flat arrays.
//!
//! Layout (little-endian): the header is
//!
//! | bytes | field |
//! |---|---|
//! | 0–3 | `"HAIR"` |
//! | 4–7 | strand count (u32) |
//! | 8–11 | point count, all strands (u32) |
//! | 12–15 | which arrays follow (u32 bit flags: 1 segments, 2 points, 4 thickness, 8 transparency, 16 colors) |
//! | 16–19 | segments per strand when there is no segments array (u32) |
//! | 20–23 | default thickness (f32) |
//! | 24–27 | default transparency (f32) |
//! | 28–39 | default color (3 × f32) |
//! | 40–127 | free text (88 bytes) |
//!
//! then, in this order and only when flagged: segments (u16 per strand,
//! points − 1), points (3 × f32 per point, strand by strand, root to tip),
//! thickness (f32 per point), transparency (f32 per point), colors
//! (3 × f32 per point). A file without the points array is refused (there
//! is nothing to simulate); thickness, transparency and colors are read
//! past (the material gives the strand its radius).

use std::path::Path;

/// Header size (bytes).
pub const HEADER_BYTES: usize = 128;
/// Header flag: a segments array (u16 per strand) follows.
pub const SEGMENTS_BIT: u32 = 1;
/// Header flag: a points array (3 × f32 per point) follows.
pub const POINTS_BIT: u32 = 2;
/// Header flag: a thickness array (f32 per point) follows.
pub const THICKNESS_BIT: u32 = 4;
/// Header flag: a transparency array (f32 per point) follows.
pub const TRANSPARENCY_BIT: u32 = 8;
/// Header flag: a colors array (3 × f32 per point) follows.
pub const COLORS_BIT: u32 = 16;

/// Strands read from a `.hair` file: positions in file units, root first.
#[derive(Clone, Debug, PartialEq)]
pub struct HairFile {
    /// Each strand's points, root first.
    pub strands: Vec<Vec<[f32; 3]>>,
    /// The header's free-text field, up to its first NUL.
    pub info: String,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn f32_at(b: &[u8], at: usize) -> f32 {
    f32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

/// Read a `.hair` file. Errors say what is wrong (the caller adds the file name).
pub fn read(path: &Path) -> Result<HairFile, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read: {e}"))?;
    parse(&bytes)
}

/// Parse the bytes of a `.hair` file.
pub fn parse(b: &[u8]) -> Result<HairFile, String> {
    if b.len() < HEADER_BYTES {
        return Err(format!(
            "truncated: {} bytes, shorter than the {HEADER_BYTES}-byte .hair header",
            b.len()
        ));
    }
    if &b[0..4] != b"HAIR" {
        return Err(format!(
            "not a .hair file: it starts with {:?}, not \"HAIR\"",
            String::from_utf8_lossy(&b[0..4])
        ));
    }
    let strands = u32_at(b, 4) as usize;
    let points = u32_at(b, 8) as usize;
    let arrays = u32_at(b, 12);
    let default_segments = u32_at(b, 16) as usize;
    let info_bytes = &b[40..HEADER_BYTES];
    let info_end = info_bytes.iter().position(|&c| c == 0).unwrap_or(88);
    let info = String::from_utf8_lossy(&info_bytes[..info_end]).into_owned();
    if arrays & !(SEGMENTS_BIT | POINTS_BIT | THICKNESS_BIT | TRANSPARENCY_BIT | COLORS_BIT) != 0 {
        return Err(format!(
            "header: unknown array flags {arrays:#x} (known: 1 segments, 2 points, 4 thickness, 8 transparency, 16 colors)"
        ));
    }
    if arrays & POINTS_BIT == 0 {
        return Err("header: the file has no points array (flag 2 is not set)".into());
    }
    // Sizes first, in u64 so that no count can overflow, against the file length.
    let has = |bit: u32| u64::from(arrays & bit != 0);
    let (s, p) = (strands as u64, points as u64);
    let need = HEADER_BYTES as u64
        + has(SEGMENTS_BIT) * 2 * s
        + 12 * p
        + has(THICKNESS_BIT) * 4 * p
        + has(TRANSPARENCY_BIT) * 4 * p
        + has(COLORS_BIT) * 12 * p;
    if (b.len() as u64) < need {
        return Err(format!(
            "truncated: the header announces {strands} strands and {points} points (arrays {arrays:#x}), which need {need} bytes, but the file has {}",
            b.len()
        ));
    }
    let mut at = HEADER_BYTES;
    let segments: Vec<usize> = if arrays & SEGMENTS_BIT != 0 {
        let v = (0..strands)
            .map(|i| u16::from_le_bytes([b[at + 2 * i], b[at + 2 * i + 1]]) as usize)
            .collect();
        at += 2 * strands;
        v
    } else {
        vec![default_segments; strands]
    };
    let total: u64 = segments.iter().map(|&n| n as u64 + 1).sum();
    if total != p {
        return Err(format!(
            "header: {points} points announced, but the strands' segment counts add up to {total} points (segments + 1 per strand)"
        ));
    }
    let mut out = Vec::with_capacity(strands);
    for &n in &segments {
        let strand: Vec<[f32; 3]> = (0..=n)
            .map(|k| {
                let q = at + 12 * k;
                [f32_at(b, q), f32_at(b, q + 4), f32_at(b, q + 8)]
            })
            .collect();
        at += 12 * (n + 1);
        out.push(strand);
    }
    Ok(HairFile { strands: out, info })
}

/// The bytes of a `.hair` file holding `strands` (segments and points
/// arrays only; defaults zero). For tests and the shipped groom.
pub fn to_bytes(strands: &[Vec<[f32; 3]>], info: &str) -> Result<Vec<u8>, String> {
    let points: usize = strands.iter().map(Vec::len).sum();
    let mut b = Vec::with_capacity(HEADER_BYTES + 2 * strands.len() + 12 * points);
    b.extend_from_slice(b"HAIR");
    let count = |n: usize, what: &str| {
        u32::try_from(n).map_err(|_| format!("{n} {what} do not fit the header's u32"))
    };
    b.extend_from_slice(&count(strands.len(), "strands")?.to_le_bytes());
    b.extend_from_slice(&count(points, "points")?.to_le_bytes());
    b.extend_from_slice(&(SEGMENTS_BIT | POINTS_BIT).to_le_bytes());
    b.extend_from_slice(&[0; 4 * 6]);
    let mut text = [0u8; 88];
    let n = info.len().min(87);
    text[..n].copy_from_slice(&info.as_bytes()[..n]);
    b.extend_from_slice(&text);
    for (i, s) in strands.iter().enumerate() {
        let n = s.len().checked_sub(1).filter(|&n| n <= u16::MAX as usize);
        let n = n.ok_or_else(|| {
            format!(
                "strand {i} has {} points; a .hair strand has 1 to 65536",
                s.len()
            )
        })?;
        b.extend_from_slice(&(n as u16).to_le_bytes());
    }
    for p in strands.iter().flatten() {
        for c in p {
            b.extend_from_slice(&c.to_le_bytes());
        }
    }
    Ok(b)
}
