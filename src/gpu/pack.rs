//! Packing of a rod set into workgroups for the kernels that run one
//! workgroup per pack (`Kernel::per_pack`: `forces`, `frames`, `twist`,
//! `project_fast`, `project_shake`, `contact_packed` and the fused
//! `substep_start`, `substep_finish`, `substep` that run them in turn).
//! Testable without a GPU.
//!
//! A pack is a run of consecutive rods whose vertices total at most
//! [`PACK_ROWS`]: hair of 32 vertices packs 8 strands to a workgroup, grass of
//! 9 vertices 28 blades, so short strands do not leave invocations idle. A
//! rod longer than a pack is a pack of its own, which the kernel projects
//! serially on one invocation (the form the kernels had before packs).

/// Vertices of a pack at most (`PACK_ROWS` in shaders/project_pack.wgsl):
/// four per invocation of a 64-wide workgroup.
pub const PACK_ROWS: usize = 256;

/// Rods of a pack at most (`PACK_RODS` in the shader): a rod has 2 vertices
/// at least.
pub const PACK_RODS: usize = PACK_ROWS / 2;

/// One past the last rod of each pack, for rods of `vertex_counts` vertices
/// in order: greedy, each pack as many whole rods as fit in [`PACK_ROWS`].
pub fn pack_ends(vertex_counts: impl IntoIterator<Item = usize>) -> Vec<u32> {
    let mut ends = Vec::new();
    let mut rows = 0;
    let mut r = 0u32;
    for n in vertex_counts {
        if r > 0 && rows + n > PACK_ROWS {
            ends.push(r);
            rows = 0;
        }
        rows += n;
        r += 1;
    }
    if r > 0 {
        ends.push(r);
    }
    ends
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every rod is in exactly one pack, in order; no pack but a lone long
    /// rod exceeds PACK_ROWS vertices; no two neighbouring packs would fit
    /// in one (greedy), so packs are as full as the order allows.
    #[test]
    fn packs_cover_the_rods_and_fit() {
        let counts: Vec<usize> = [32, 32, 9, 300, 2, 2, 256, 255, 1000, 3]
            .into_iter()
            .chain(std::iter::repeat_n(32, 40))
            .collect();
        let ends = pack_ends(counts.iter().copied());
        assert_eq!(*ends.last().unwrap() as usize, counts.len());
        let mut start = 0usize;
        let mut sizes = Vec::new();
        for &end in &ends {
            let end = end as usize;
            assert!(end > start, "empty pack");
            let rows: usize = counts[start..end].iter().sum();
            assert!(
                rows <= PACK_ROWS || end - start == 1,
                "pack {start}..{end} has {rows} vertices"
            );
            assert!(end - start <= PACK_RODS);
            sizes.push((start, end, rows));
            start = end;
        }
        for pair in sizes.windows(2) {
            assert!(
                pair[0].2 + counts[pair[1].0] > PACK_ROWS,
                "pack {:?} could have taken the next rod",
                pair[0]
            );
        }
        // 32-vertex hair: 8 strands a pack.
        assert_eq!(pack_ends(std::iter::repeat_n(32, 20)), vec![8, 16, 20]);
        assert!(pack_ends(std::iter::empty()).is_empty());
    }
}
