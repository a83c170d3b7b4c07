//! Packing of a rod set into workgroups for the kernels that run one
//! workgroup per pack (`Kernel::per_pack`: `forces`, `frames`, `twist`,
//! `project_fast`, `project_shake`, `contact_packed` and the fused
//! `substep_start`, `substep_finish`, `substep` that run them in turn).
//! Testable without a GPU.
//!
//! A pack is a run of consecutive rods whose vertices total at most the
//! pack's rows ([`PackShape`]; [`PACK_ROWS`] by default): hair of 32
//! vertices packs 8 strands to a 256-row workgroup, grass of 9 vertices 28
//! blades, so short strands do not leave invocations idle. A rod longer than
//! a pack is a pack of its own, which the kernel projects serially on one
//! invocation (the form the kernels had before packs).

use super::WORKGROUP;

/// Vertices of a pack at most in the default shape (`PACK_ROWS` in
/// shaders/project_pack.wgsl): four per invocation of a 64-wide workgroup.
pub const PACK_ROWS: usize = 256;

/// Rods of a pack at most in the default shape (`PACK_RODS` in the
/// shader): a rod has 2 vertices at least.
pub const PACK_RODS: usize = PACK_ROWS / 2;

/// The shape of the packs: rows (vertices) a pack holds at most, and the
/// invocations of its workgroup, `WORKGROUP` (64) or the rows where fewer.
/// The kernels are compiled for one shape (`layout::Variant::pack`), and a
/// rod set packed for it (`pack_ends`). A pack's workgroup memory grows with
/// its rows (the packed fused kernels: 126 B a row and 8 more, and 176 B a
/// row more on a shape that keeps the whole state resident,
/// `state_resident`: `layout::fused_workgroup_bytes`), so more 32-row packs
/// fit on a GPU's multiprocessor at once,
/// and at 32 rows a pack's workgroup is one NVIDIA warp; but a rod longer
/// than the pack is walked by one invocation.
/// On an H200 it paid (`strands bench --gpu-pack-rows`,
/// docs/BENCHMARKS.md): GPUs build the kernels for `WARP`, CPU adapters
/// for `DEFAULT` (`GpuContext::from_device`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PackShape {
    rows: u32,
    /// Whether the packed fused kernels keep the whole state resident
    /// (`state_resident`), not only the positions.
    state: bool,
}

impl Default for PackShape {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl PackShape {
    /// 256 rows on 64 invocations: shaders/project_pack.wgsl's own.
    pub const DEFAULT: PackShape = PackShape {
        rows: PACK_ROWS as u32,
        state: false,
    };

    /// 32 rows on 32 invocations: a warp a pack on NVIDIA, a strand of 32
    /// vertices a pack; GPUs' shape (`GpuContext::from_device`).
    pub const WARP: PackShape = PackShape {
        rows: 32,
        state: false,
    };

    /// The shape `GpuContext::from_device` builds the kernels for on a
    /// device of `device_type`: `WARP` on a GPU, `DEFAULT` on a CPU adapter
    /// (whose SIMD lanes the 64 invocations of a 256-row pack fill).
    pub fn for_device(device_type: wgpu::DeviceType) -> PackShape {
        if device_type == wgpu::DeviceType::Cpu {
            PackShape::DEFAULT
        } else {
            PackShape::WARP
        }
    }

    /// Every row count the kernels can be built for, smallest first, with
    /// only the positions resident (`with_resident_state` for the rest).
    pub const ALL: [PackShape; 4] = [
        PackShape {
            rows: 32,
            state: false,
        },
        PackShape {
            rows: 64,
            state: false,
        },
        PackShape {
            rows: 128,
            state: false,
        },
        PackShape {
            rows: PACK_ROWS as u32,
            state: false,
        },
    ];

    /// Rows a pack may hold at most for its whole state to be resident
    /// (`with_resident_state`): 64 rows take 19,336 B of workgroup memory,
    /// within lavapipe's 32 KiB and GPUs' 48 KiB or more.
    pub const RESIDENT_STATE_MAX_ROWS: usize = 64;

    /// The shape of `rows` rows, with only the positions resident. Errors:
    /// a count other than 32, 64, 128 or 256 (powers of two, so that each
    /// invocation holds a whole number of rows; 256 at most, as the scans
    /// and reductions are sized for).
    pub fn new(rows: u32) -> Result<PackShape, String> {
        Self::ALL
            .into_iter()
            .find(|s| s.rows == rows)
            .ok_or_else(|| format!("a pack holds 32, 64, 128 or 256 rows (vertices), not {rows}"))
    }

    /// This shape with the pack's whole state resident in the packed fused
    /// kernels (`state_resident`). Errors: a pack of more than
    /// `RESIDENT_STATE_MAX_ROWS` rows, whose state would not fit a
    /// workgroup's memory.
    pub fn with_resident_state(self) -> Result<PackShape, String> {
        if self.rows() > Self::RESIDENT_STATE_MAX_ROWS {
            return Err(format!(
                "a pack's whole state is resident on packs of up to {} rows, not {} (at 302 B of workgroup memory a row it would not fit lavapipe's 32 KiB)",
                Self::RESIDENT_STATE_MAX_ROWS,
                self.rows
            ));
        }
        Ok(PackShape {
            state: true,
            ..self
        })
    }

    /// Vertices of a pack at most (WGSL `PACK_ROWS`).
    pub const fn rows(self) -> usize {
        self.rows as usize
    }

    /// Invocations of a pack's workgroup (WGSL `PACK_WORKGROUP`).
    pub fn invocations(self) -> u32 {
        self.rows.min(WORKGROUP)
    }

    /// Rows each invocation holds (WGSL `ROWS_PER_INVOCATION`).
    pub fn rows_per_invocation(self) -> u32 {
        self.rows / self.invocations()
    }

    /// Rods of a pack at most (WGSL `PACK_RODS`): 2 vertices each at least.
    pub fn rods(self) -> usize {
        self.rows() / 2
    }

    /// Whether the packed fused kernels keep a pack's whole state in
    /// workgroup memory for the dispatch (velocities, unconstrained
    /// positions, contacts, scratch and frames besides the positions:
    /// shaders/resident.wgsl `RESIDENT_STATE`), as `with_resident_state`
    /// asks (`--gpu-pack-rows 32:state`); whose workgroups then need
    /// `layout::fused_workgroup_bytes` (9,672 B at 32 rows, 19,336 B at 64).
    /// Off by default: it made fused-frame on 32-row packs 2.2× slower on an
    /// H200 (2.52 against 1.14–1.25 ms a substep, 1 M vertices) and 1.2×
    /// on lavapipe (docs/BENCHMARKS.md, thirtieth session).
    pub const fn state_resident(self) -> bool {
        self.state
    }

    /// Rows of the resident state's workgroup arrays (WGSL
    /// `RESIDENT_STATE_ROWS`): the pack's where `state_resident`, else 1
    /// (arrays the kernels never index).
    pub const fn resident_state_rows(self) -> usize {
        if self.state_resident() {
            self.rows()
        } else {
            1
        }
    }

    /// The WGSL constants of this shape: the block between shaders/
    /// project_pack.wgsl's `BEGIN pack shape` and `END pack shape` lines
    /// that `layout::shader_variant` puts in place of the default's.
    pub fn wgsl(self) -> String {
        format!(
            "const PACK_ROWS: u32 = {}u;\nconst PACK_WORKGROUP: u32 = {}u;\nconst ROWS_PER_INVOCATION: u32 = {}u;\nconst PACK_RODS: u32 = {}u;\nconst RESIDENT_STATE_ROWS: u32 = {}u;\n",
            self.rows,
            self.invocations(),
            self.rows_per_invocation(),
            self.rods(),
            self.resident_state_rows()
        )
    }
}

/// `ROWS`, or `ROWS:state` for a shape with the whole state resident.
impl std::fmt::Display for PackShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.rows)?;
        if self.state {
            write!(f, ":state")?;
        }
        Ok(())
    }
}

/// `ROWS` (32, 64, 128 or 256), or `ROWS:state` for the whole state
/// resident (`with_resident_state`, up to 64 rows).
impl std::str::FromStr for PackShape {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (count, state) = match s.trim().split_once(':').map(|(c, k)| (c, k.trim())) {
            Some((count, "state")) => (count, true),
            Some((_, other)) => {
                return Err(format!(
                    "a pack shape is ROWS or ROWS:state (its whole state resident), not {s:?}: unknown {other:?}"
                ));
            }
            None => (s.trim(), false),
        };
        let rows = count.trim().parse::<u32>().map_err(|_| {
            format!("a pack's rows are a count (32, 64, 128 or 256), not {count:?} in {s:?}")
        })?;
        let shape = PackShape::new(rows)?;
        if state {
            shape.with_resident_state()
        } else {
            Ok(shape)
        }
    }
}

/// One past the last rod of each pack, for rods of `vertex_counts` vertices
/// in order: greedy, each pack as many whole rods as fit in `rows`.
pub fn pack_ends(vertex_counts: impl IntoIterator<Item = usize>, rows: usize) -> Vec<u32> {
    let mut ends = Vec::new();
    let mut taken = 0;
    let mut r = 0u32;
    for n in vertex_counts {
        if r > 0 && taken + n > rows {
            ends.push(r);
            taken = 0;
        }
        taken += n;
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

    /// GPUs build the per-pack kernels for a warp's 32 rows (faster on an
    /// H200, docs/BENCHMARKS.md), CPU adapters for 256 on 64 invocations.
    /// `--gpu-pack-rows` reads `ROWS` and `ROWS:state`, prints them back,
    /// and refuses what no kernel is built for, saying what it takes.
    #[test]
    fn pack_shapes_parse_and_print() {
        for text in ["32", "64", "128", "256", "32:state", "64:state"] {
            let shape: PackShape = text.parse().unwrap();
            assert_eq!(shape.to_string(), text);
            assert_eq!(shape.state_resident(), text.ends_with(":state"), "{text}");
        }
        assert_eq!(
            " 32 : state ".parse::<PackShape>().unwrap().to_string(),
            "32:state"
        );
        // Only the positions resident unless asked: the defaults and ALL.
        assert!(!PackShape::WARP.state_resident() && !PackShape::DEFAULT.state_resident());
        assert!(PackShape::ALL.iter().all(|s| !s.state_resident()));
        let e = "128:state".parse::<PackShape>().unwrap_err();
        assert!(e.contains("up to 64 rows, not 128"), "{e}");
        let e = "32:all".parse::<PackShape>().unwrap_err();
        assert!(e.contains("ROWS:state") && e.contains("\"all\""), "{e}");
        let e = "48".parse::<PackShape>().unwrap_err();
        assert!(
            e.contains("32, 64, 128 or 256 rows") && e.contains("48"),
            "{e}"
        );
        let e = "x:state".parse::<PackShape>().unwrap_err();
        assert!(e.contains("\"x\""), "{e}");
    }

    #[test]
    fn pack_shape_follows_the_device() {
        use wgpu::DeviceType::*;
        assert_eq!(PackShape::for_device(Cpu), PackShape::DEFAULT);
        assert_eq!(PackShape::for_device(Cpu).rows(), 256);
        for gpu in [DiscreteGpu, IntegratedGpu, VirtualGpu, Other] {
            let shape = PackShape::for_device(gpu);
            assert_eq!((shape.rows(), shape.invocations()), (32, 32), "{gpu:?}");
        }
    }

    /// Every rod is in exactly one pack, in order; no pack but a lone long
    /// rod exceeds the shape's rows; no two neighbouring packs would fit in
    /// one (greedy), so packs are as full as the order allows. For every
    /// shape.
    #[test]
    fn packs_cover_the_rods_and_fit() {
        let counts: Vec<usize> = [32, 32, 9, 300, 2, 2, 256, 255, 1000, 3, 33, 31, 64, 65]
            .into_iter()
            .chain(std::iter::repeat_n(32, 40))
            .collect();
        for shape in PackShape::ALL {
            let rows = shape.rows();
            let ends = pack_ends(counts.iter().copied(), rows);
            assert_eq!(*ends.last().unwrap() as usize, counts.len());
            let mut start = 0usize;
            let mut sizes = Vec::new();
            for &end in &ends {
                let end = end as usize;
                assert!(end > start, "empty pack");
                let taken: usize = counts[start..end].iter().sum();
                assert!(
                    taken <= rows || end - start == 1,
                    "{rows} rows: pack {start}..{end} has {taken} vertices"
                );
                assert!(end - start <= shape.rods());
                sizes.push((start, end, taken));
                start = end;
            }
            for pair in sizes.windows(2) {
                assert!(
                    pair[0].2 + counts[pair[1].0] > rows,
                    "{rows} rows: pack {:?} could have taken the next rod",
                    pair[0]
                );
            }
        }
        // 32-vertex hair: 8 strands a 256-row pack, 1 a 32-row one.
        assert_eq!(
            pack_ends(std::iter::repeat_n(32, 20), PACK_ROWS),
            vec![8, 16, 20]
        );
        assert_eq!(pack_ends(std::iter::repeat_n(32, 3), 32), vec![1, 2, 3]);
        assert!(pack_ends(std::iter::empty(), PACK_ROWS).is_empty());
    }

    /// The shapes: each invocation holds a whole number of rows, at most 64
    /// invocations, the default the shader source's own; only the four
    /// counts parse.
    #[test]
    fn shapes_divide_their_rows_among_invocations() {
        for s in PackShape::ALL {
            assert_eq!(s.rows_per_invocation() * s.invocations(), s.rows);
            assert!(s.invocations() <= WORKGROUP);
            assert_eq!(s.to_string().parse::<PackShape>(), Ok(s));
            assert!(
                s.wgsl()
                    .contains(&format!("const PACK_ROWS: u32 = {}u;", s.rows))
            );
        }
        assert_eq!(PackShape::default().rows(), PACK_ROWS);
        assert_eq!(PackShape::default().rods(), PACK_RODS);
        assert_eq!(PackShape::default().rows_per_invocation(), 4);
        assert_eq!(PackShape::new(32).unwrap().invocations(), 32);
        assert!("48".parse::<PackShape>().unwrap_err().contains("not 48"));
        assert!("x".parse::<PackShape>().is_err());
    }
}
