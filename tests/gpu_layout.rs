//! Every shader parses and validates with naga (no GPU needed), and every
//! Rust struct shared with WGSL has the size and member offsets that WGSL's
//! layout rules give it (naga computes them from the shader source).

use strands::demo::render::SHADER_SOURCE as RENDER_SOURCE;
use strands::gpu::Kernel;
use strands::gpu::layout::{
    REAL_F32, SHADER_SOURCE, Variant, shader_source, shader_variant, shared_structs,
};

fn parse(source: &str) -> naga::Module {
    naga::front::wgsl::parse_str(source)
        .unwrap_or_else(|e| panic!("shaders do not parse:\n{}", e.emit_to_string(source)))
}

fn module() -> naga::Module {
    parse(SHADER_SOURCE)
}

/// The module each kernel is built from on a device without optional
/// features (`Kernel::source`): `SHADER_SOURCE`'s, or the whole-frame
/// kernel's variant, which alone holds `frame_rod`.
struct Modules {
    default: naga::Module,
    frame: naga::Module,
}

impl Modules {
    fn new() -> Modules {
        Modules {
            default: module(),
            frame: parse(&Kernel::FrameRod.source()),
        }
    }

    fn of(&self, k: Kernel) -> &naga::Module {
        if k.is_frame() {
            &self.frame
        } else {
            &self.default
        }
    }
}

/// The module with every block a variant can replace replaced (and the
/// smallest packs), the frame's substep values too where `frame`.
fn every_variant(frame: bool) -> std::borrow::Cow<'static, str> {
    shader_variant(Variant {
        stencil_f64: true,
        resident: true,
        grid_i64: true,
        approximate_math: true,
        pack: strands::gpu::pack::PackShape::ALL[0],
        frame,
    })
}

fn validate(m: &naga::Module, source: &str) {
    validate_with(m, source, naga::valid::Capabilities::empty());
}

fn validate_with(m: &naga::Module, source: &str, caps: naga::valid::Capabilities) {
    naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
        .validate(m)
        .unwrap_or_else(|e| panic!("shaders do not validate:\n{}", e.emit_to_string(source)));
}

/// Struct `name` of module `m`: its members' names and offsets, and its size.
fn wgsl_struct(m: &naga::Module, name: &str) -> (Vec<(String, usize)>, usize) {
    m.types
        .iter()
        .find_map(|(_, ty)| match (&ty.name, &ty.inner) {
            (Some(n), naga::TypeInner::Struct { members, span }) if n == name => Some((
                members
                    .iter()
                    .map(|mb| (mb.name.clone().unwrap_or_default(), mb.offset as usize))
                    .collect(),
                *span as usize,
            )),
            _ => None,
        })
        .unwrap_or_else(|| panic!("WGSL has no struct {name}"))
}

fn check_layouts(m: &naga::Module, structs: Vec<strands::gpu::layout::StructLayout>) {
    for (name, size, fields) in structs {
        let (wgsl, span) = wgsl_struct(m, name);
        assert_eq!(span, size, "size of {name}");
        let rust: Vec<(String, usize)> = fields.iter().map(|(f, o)| (f.to_string(), *o)).collect();
        assert_eq!(rust, wgsl, "members and offsets of {name} (Rust vs WGSL)");
    }
}

/// The variant with the bending stencil in f64 (`shader_source(true)`)
/// validates on a device with f64 and is refused by one without it (so
/// `real` really became f64), and the f32 variant is `SHADER_SOURCE` itself.
#[test]
fn f64_stencil_variant_validates_where_f64_is() {
    assert_eq!(SHADER_SOURCE.matches(REAL_F32).count(), 1);
    assert_eq!(shader_source(false), SHADER_SOURCE);
    let source = shader_source(true);
    let m = parse(&source);
    validate_with(&m, &source, naga::valid::Capabilities::FLOAT64);
    assert!(
        naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::empty()
        )
        .validate(&m)
        .is_err(),
        "the f64 variant validated without the FLOAT64 capability"
    );
}

/// `source` is `SHADER_SOURCE` with the block between `markers` (each found
/// once) replaced by `replacement`, and nothing else changed.
fn assert_only_block_replaced(source: &str, markers: [&str; 2], replacement: &str) {
    for marker in markers {
        assert_eq!(SHADER_SOURCE.matches(marker).count(), 1, "{marker}");
    }
    let start = SHADER_SOURCE.find(markers[0]).unwrap();
    let end = SHADER_SOURCE.find(markers[1]).unwrap() + markers[1].len();
    assert_eq!(&source[..start], &SHADER_SOURCE[..start]);
    assert_eq!(&source[start..start + replacement.len()], replacement);
    assert_eq!(&source[start + replacement.len()..], &SHADER_SOURCE[end..]);
}

/// The grid's 64-bit accumulators (`Variant::grid_i64`): the block between
/// shaders/grid.wgsl's markers replaced by shaders/grid_i64.wgsl and nothing
/// else; it validates with the 64-bit integer and atomic capabilities (also
/// with the f64 stencil and resident state) and is refused without them
/// (so the atomics really are 64-bit), and `grid` is an array of 64-bit
/// atomics in it and of 32-bit ones in the default module.
#[test]
fn grid_i64_variant_validates_where_64_bit_atomics_are() {
    use naga::valid::Capabilities as Caps;
    use strands::gpu::layout::{GRID_I64_MARKERS, GRID_I64_SOURCE};
    let source = shader_variant(Variant {
        grid_i64: true,
        ..Variant::default()
    });
    assert_only_block_replaced(&source, GRID_I64_MARKERS, GRID_I64_SOURCE);
    let m = parse(&source);
    let caps = Caps::SHADER_INT64 | Caps::SHADER_INT64_ATOMIC_ALL_OPS;
    validate_with(&m, &source, caps);
    assert!(
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), Caps::SHADER_INT64)
            .validate(&m)
            .is_err(),
        "the i64 grid validated without 64-bit atomics"
    );
    let all = every_variant(true);
    validate_with(&parse(&all), &all, caps | Caps::FLOAT64);
    let grid_scalar = |m: &naga::Module| {
        let (_, var) = m
            .global_variables
            .iter()
            .find(|(_, v)| v.name.as_deref() == Some("grid"))
            .expect("a global `grid`");
        let naga::TypeInner::Array { base, .. } = m.types[var.ty].inner else {
            panic!("`grid` is not an array");
        };
        match m.types[base].inner {
            naga::TypeInner::Atomic(s) => s,
            ref other => panic!("`grid` holds {other:?}, not atomics"),
        }
    };
    assert_eq!(grid_scalar(&m).width, 8);
    assert_eq!(grid_scalar(&module()).width, 4);
}

/// Calls of `name` in WGSL `source`, outside `//` comments.
fn calls_of(source: &str, name: &str) -> usize {
    source
        .lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .map(|code| {
            code.match_indices(&format!("{name}("))
                .filter(|(i, _)| {
                    let before = code[..*i].chars().next_back();
                    !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.')
                })
                .count()
        })
        .sum()
}

/// The approximate-math variant (`Variant::approximate_math`): each call of
/// sin, cos, atan2, length and normalize in the module gets its error term
/// (counted here independently of `layout::approximate_math`'s scanner),
/// except `length_real`'s where the stencil is f64; its sites are numbered
/// once each; and the module validates with either stencil.
#[test]
fn approximate_math_wraps_every_approximated_call() {
    use strands::gpu::layout::{APPROX_ULPS, APPROXIMATE_SOURCE, APPROXIMATED_CALLS};
    assert!(APPROXIMATE_SOURCE.contains(&format!("const APPROX_ULPS: f32 = {APPROX_ULPS:?};")));
    let sites: usize = APPROXIMATED_CALLS
        .iter()
        .map(|(name, _)| calls_of(SHADER_SOURCE, name))
        .sum();
    assert!(sites >= 30, "only {sites} calls found");
    for f64 in [false, true] {
        let source = shader_variant(Variant {
            stencil_f64: f64,
            approximate_math: true,
            ..Variant::default()
        });
        let body = source
            .strip_suffix(APPROXIMATE_SOURCE)
            .expect("the error model appended");
        let wrapped = calls_of(body, "approx_abs") + calls_of(body, "approx_factor");
        // `length_real` (one call of length) stays exact in f64.
        assert_eq!(wrapped, sites - usize::from(f64), "f64 stencil: {f64}");
        for k in 0..wrapped {
            let numbered = ["_ABS", "APPROX_ULPS"]
                .map(|bound| body.matches(&format!("{bound}, {k}u, ")).count());
            assert_eq!(numbered.iter().sum::<usize>(), 1, "site {k}");
        }
        let caps = if f64 {
            naga::valid::Capabilities::FLOAT64
        } else {
            naga::valid::Capabilities::empty()
        };
        validate_with(&parse(&source), &source, caps);
    }
}

#[test]
fn shaders_validate_with_naga() {
    let modules = Modules::new();
    validate(&modules.default, SHADER_SOURCE);
    validate(&modules.frame, &Kernel::FrameRod.source());
    // Every kernel the simulator dispatches is a compute entry point of
    // the module it is built from.
    for k in Kernel::ALL {
        let ep = modules
            .of(k)
            .entry_points
            .iter()
            .find(|ep| ep.name == k.entry_point())
            .unwrap_or_else(|| panic!("no entry point `{}`", k.entry_point()));
        assert_eq!(ep.stage, naga::ShaderStage::Compute);
        // The host dispatches WORKGROUP-sized groups, or one group of one
        // invocation for a single-invocation kernel.
        let size = match k.domain() {
            strands::gpu::Domain::Single => [1, 1, 1],
            strands::gpu::Domain::Region => {
                let side = strands::gpu::layout::REGION_WORKGROUP;
                [side, side, 1]
            }
            _ => [strands::gpu::WORKGROUP, 1, 1],
        };
        assert_eq!(ep.workgroup_size, size, "{}", ep.name);
    }
    // The demo's drawing.
    let r = parse(RENDER_SOURCE);
    validate(&r, RENDER_SOURCE);
    for (name, stage) in [
        ("strand_vertex", naga::ShaderStage::Vertex),
        ("strand_fragment", naga::ShaderStage::Fragment),
        ("mesh_vertex", naga::ShaderStage::Vertex),
        ("mesh_fragment", naga::ShaderStage::Fragment),
    ] {
        assert!(
            r.entry_points
                .iter()
                .any(|ep| ep.name == name && ep.stage == stage),
            "{name}"
        );
    }
}

#[test]
fn rust_structs_match_wgsl_layout() {
    check_layouts(&module(), shared_structs());
    let r = parse(RENDER_SOURCE);
    check_layouts(&r, strands::demo::render::shared_structs());
    // The renderer reads the simulation's frame and position buffers with its
    // own copies of `EdgeFrame` and `Position`: same layout as the compute side's.
    check_layouts(
        &r,
        shared_structs()
            .into_iter()
            .filter(|(n, _, _)| *n == "EdgeFrame" || *n == "Position")
            .collect(),
    );
}

/// Each entry point uses exactly the group-1 bindings the host declares for
/// it (`Kernel::bindings`), only the world bindings of group 0, and no
/// kernel binds more than WebGPU's default of 8 storage buffers. naga's
/// validator reports every global an entry point reaches, through calls.
/// The packed fused kernels (`Kernel::is_resident`) are built from the
/// resident variant too (`Form::FusedBuffer` from the buffer module), so
/// they are checked there, on the default packs (positions resident) and
/// the smallest with the whole state resident (`32:state`): each module uses only what the
/// host declares, and the modules together all of it.
#[test]
fn kernel_bindings_match_what_each_entry_point_uses() {
    use strands::gpu::pack::PackShape;
    let modules = Modules::new();
    let resident = |pack: PackShape, frame: bool| {
        parse(&shader_variant(Variant {
            resident: true,
            frame,
            pack,
            ..Variant::default()
        }))
    };
    let residents = [
        (
            resident(PackShape::DEFAULT, false),
            resident(PackShape::DEFAULT, true),
        ),
        (
            resident(PackShape::WARP.with_resident_state().unwrap(), false),
            resident(PackShape::WARP.with_resident_state().unwrap(), true),
        ),
    ];
    let info_of = |m: &naga::Module| {
        naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::empty(),
        )
        .validate(m)
        .unwrap()
    };
    // The group-1 bindings entry point `name` of `m` uses, sorted.
    let used = |m: &naga::Module, info: &naga::valid::ModuleInfo, name: &str| {
        let (i, _) = m
            .entry_points
            .iter()
            .enumerate()
            .find(|(_, ep)| ep.name == name)
            .unwrap();
        let ep = info.get_entry_point(i);
        let mut group1: Vec<u32> = Vec::new();
        for (h, var) in m.global_variables.iter() {
            if ep[h].is_empty() {
                continue;
            }
            let Some(b) = &var.binding else { continue };
            match b.group {
                0 => assert!(
                    b.binding == 0 || strands::gpu::layout::WORLD_STORAGE.contains(&b.binding),
                    "{name}: group 0 binding {} is not in the world group",
                    b.binding
                ),
                1 => group1.push(b.binding),
                g => panic!("{name}: unexpected group {g}"),
            }
        }
        group1.sort();
        group1
    };
    let (info_default, info_frame) = (info_of(&modules.default), info_of(&modules.frame));
    let resident_infos: Vec<_> = residents
        .iter()
        .map(|(m, f)| (info_of(m), info_of(f)))
        .collect();
    for k in Kernel::ALL {
        let mut declared = k.bindings().to_vec();
        declared.sort();
        let mut checked = vec![(
            "buffer module",
            modules.of(k),
            if k.is_frame() {
                &info_frame
            } else {
                &info_default
            },
        )];
        if k.is_resident() {
            for ((m, f), (info_m, info_f)) in residents.iter().zip(&resident_infos) {
                checked.push(if k.is_frame() {
                    ("resident module", f, info_f)
                } else {
                    ("resident module", m, info_m)
                });
            }
        }
        // Each module uses only declared bindings, and together they use
        // all of them (the buffer module's `substep_start` does not reach
        // the contacts, which only the resident state's load and store
        // carry; a layout may hold a binding its shader does not use).
        let mut all: Vec<u32> = Vec::new();
        for (which, m, info) in checked {
            let u = used(m, info, k.entry_point());
            assert!(
                u.iter().all(|b| declared.contains(b)),
                "{} in the {which}: bindings used {u:?}, declared by the host {declared:?}",
                k.entry_point()
            );
            all.extend(u);
        }
        all.sort();
        all.dedup();
        assert_eq!(
            all,
            declared,
            "{}: bindings used (left) vs declared by the host (right)",
            k.entry_point()
        );
        // WebGPU's default limit, which a caller's default device gives;
        // the fused kernels, and the sorted splat's that read the vertices
        // and write the grid (10), are built only where the device allows
        // more (`Kernel::supported`).
        let limit = if k.is_fused() {
            strands::gpu::layout::FUSED_STORAGE_BUFFERS as usize
        } else if k.is_sorted_splat() {
            10
        } else {
            8
        };
        assert!(
            k.storage_buffers() <= limit,
            "{}: {} storage buffers",
            k.entry_point(),
            k.storage_buffers()
        );
    }
}

/// Bytes of workgroup memory that entry point `name` of `m` uses (the
/// workgroup variables it reaches).
fn workgroup_bytes(m: &naga::Module, name: &str) -> usize {
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::empty(),
    )
    .validate(m)
    .unwrap();
    let (i, _) = m
        .entry_points
        .iter()
        .enumerate()
        .find(|(_, ep)| ep.name == name)
        .unwrap_or_else(|| panic!("no entry point `{name}`"));
    let ep = info.get_entry_point(i);
    m.global_variables
        .iter()
        .filter(|(h, var)| var.space == naga::AddressSpace::WorkGroup && !ep[*h].is_empty())
        .map(|(_, var)| m.types[var.ty].inner.size(m.to_ctx()) as usize)
        .sum()
}

/// Every kernel's workgroup memory (the packed kernels' per-pack arrays),
/// each from the module it is built from (`Kernel::is_resident`: the packed
/// fused kernels from the variant with resident state), fits WebGPU's
/// default `maxComputeWorkgroupStorageSize` of 16 KiB, but for the fused
/// kernels, which fit `FUSED_WORKGROUP_BYTES`; and the packed kernels use
/// some (one workgroup per pack: `Kernel::per_pack`).
#[test]
fn workgroup_memory_fits_the_default_limit() {
    let modules = Modules::new();
    let resident_of = |frame| {
        parse(&shader_variant(Variant {
            resident: true,
            frame,
            ..Variant::default()
        }))
    };
    let (resident, resident_frame) = (resident_of(false), resident_of(true));
    let limit = wgpu::Limits::default().max_compute_workgroup_storage_size as usize;
    assert_eq!(limit, 16384);
    for k in Kernel::ALL {
        let bytes = workgroup_bytes(
            match (k.is_resident(), k.is_frame()) {
                (true, false) => &resident,
                (true, true) => &resident_frame,
                (false, _) => modules.of(k),
            },
            k.entry_point(),
        );
        eprintln!("{}: {bytes} bytes of workgroup memory", k.entry_point());
        if k.is_fused() {
            // What `fused_supported` asks of the device: the whole substep's,
            // which runs every stage, exactly (and the whole frame's).
            let fused = strands::gpu::layout::FUSED_WORKGROUP_BYTES as usize;
            if matches!(k, Kernel::Substep | Kernel::FramePack) {
                assert_eq!(bytes, fused);
            }
            // The walked ones use none, so they are gated on storage
            // buffers alone (`walked_fused_supported`).
            if !k.per_pack() {
                assert_eq!(bytes, 0, "{}", k.entry_point());
            }
            assert!(bytes <= fused, "{}: {bytes} bytes", k.entry_point());
            continue;
        }
        assert!(
            bytes <= limit,
            "{}: {bytes} bytes of workgroup memory",
            k.entry_point()
        );
        // Only a kernel that runs a workgroup per pack shares memory across
        // its invocations (`contact_packed` needs only the barriers), and
        // the sorted splat's count and scans, over a workgroup's vertices
        // or cells (not the scatter, which moves each vertex alone, nor
        // the splat, whose invocations walk their own slots).
        if k.is_sorted_splat() {
            let shares = !matches!(k, Kernel::GridCellScatter | Kernel::GridSplatSorted);
            assert_eq!(bytes > 0, shares, "{}", k.entry_point());
            assert!(!k.per_pack(), "{}", k.entry_point());
        } else if bytes > 0 || k == Kernel::ContactPacked {
            assert!(k.per_pack(), "{}", k.entry_point());
        } else {
            assert!(
                !k.per_pack(),
                "{}: packed without workgroup memory",
                k.entry_point()
            );
        }
    }
}

/// The pack shapes (`Variant::pack`, `PackShape`): each module is the
/// default with the block between shaders/project_pack.wgsl's pack-shape
/// markers replaced by the shape's constants and nothing else; it
/// validates; every per-pack kernel's workgroup has the shape's
/// invocations and every other kernel the default's; and the packed fused
/// substep holds `layout::fused_workgroup_bytes` of workgroup memory with
/// resident state (what `Kernel::supported` asks of a device for that
/// shape), which is why a small shape fits more workgroups on a
/// multiprocessor.
#[test]
fn pack_shape_variants_size_the_packed_kernels() {
    use strands::gpu::layout::{PACK_SHAPE_MARKERS, fused_workgroup_bytes};
    use strands::gpu::pack::PackShape;
    for shape in PackShape::ALL {
        let source = shader_variant(Variant {
            pack: shape,
            ..Variant::default()
        });
        if shape == PackShape::DEFAULT {
            assert_eq!(source, SHADER_SOURCE);
            // The default block, marker lines and all, is what `wgsl` writes.
            let start = SHADER_SOURCE.find(PACK_SHAPE_MARKERS[0]).unwrap();
            let end = SHADER_SOURCE.find(PACK_SHAPE_MARKERS[1]).unwrap();
            let block: String = SHADER_SOURCE[start..end]
                .lines()
                .skip(1)
                .map(|l| format!("{}\n", l.split("//").next().unwrap().trim_end()))
                .collect();
            assert_eq!(block, shape.wgsl());
        } else {
            assert_only_block_replaced(&source, PACK_SHAPE_MARKERS, &shape.wgsl());
        }
        let m = parse(&source);
        validate(&m, &source);
        let default = module();
        let size = |m: &naga::Module, k: Kernel| {
            m.entry_points
                .iter()
                .find(|e| e.name == k.entry_point())
                .unwrap_or_else(|| panic!("no entry point {}", k.entry_point()))
                .workgroup_size
        };
        // (The whole-frame kernel, in a module of its own, walks rods:
        // `WORKGROUP` wide in every shape, `shaders_validate_with_naga`.)
        for k in Kernel::ALL.into_iter().filter(|k| !k.is_frame()) {
            if k.per_pack() {
                assert_eq!(size(&m, k), [shape.invocations(), 1, 1], "{k:?}");
            } else {
                assert_eq!(size(&m, k), size(&default, k), "{k:?}");
            }
        }
        // The default's per-vertex and per-rod kernels: `WORKGROUP` wide.
        assert_eq!(
            size(&default, Kernel::ForcesRod),
            [strands::gpu::WORKGROUP, 1, 1]
        );
        let resident_source = shader_variant(Variant {
            pack: shape,
            resident: true,
            ..Variant::default()
        });
        let resident = parse(&resident_source);
        let bytes = workgroup_bytes(&resident, Kernel::Substep.entry_point());
        assert_eq!(bytes, fused_workgroup_bytes(shape) as usize, "{shape} rows");
        eprintln!(
            "{shape}-row packs on {} invocations: fused substep {bytes} B of workgroup memory",
            shape.invocations()
        );
    }
}

/// The packed fused kernels' module (`shader_variant` with `resident`) is the
/// buffer module with the block between the markers replaced by
/// shaders/resident.wgsl and nothing else; it validates (also with the f64
/// stencil); for every pack shape its packed fused kernels hold a pack's
/// positions in workgroup memory, 24 bytes a row, and where the shape keeps
/// the whole state resident (`32:state`, `64:state`) the rest of it, 176
/// bytes a row, more than the same kernels in the buffer module (the whole frame's
/// `frame_pack` likewise in the frame's module with and without them).
/// (Its other kernels reach the arrays too, through the accessors; only the
/// packed fused ones are built from it, `Kernel::is_resident`.)
#[test]
fn resident_variant_holds_a_packs_state_in_workgroup_memory() {
    use strands::gpu::layout::{RESIDENT_MARKERS, RESIDENT_SOURCE};
    use strands::gpu::pack::PackShape;
    let source = shader_variant(Variant {
        resident: true,
        ..Variant::default()
    });
    assert_only_block_replaced(&source, RESIDENT_MARKERS, RESIDENT_SOURCE);
    let resident = parse(&source);
    validate(&resident, &source);
    let both = shader_variant(Variant {
        stencil_f64: true,
        resident: true,
        grid_i64: false,
        approximate_math: false,
        pack: Default::default(),
        frame: false,
    });
    validate_with(&parse(&both), &both, naga::valid::Capabilities::FLOAT64);
    assert!(both.contains("alias real = f64;") && both.contains(RESIDENT_SOURCE));

    // Each resident kernel holds 24 B a row more than its buffer twin for
    // the positions, and 176 B a row more for the rest of the state where
    // the shape keeps it resident (`PackShape::state_resident`, asked for
    // with `with_resident_state` on up to 64 rows), else 176 B in all
    // (one-row arrays it never indexes); the whole frame's kernel in its
    // own module, with and without them.
    let kernels: Vec<Kernel> = Kernel::ALL
        .into_iter()
        .filter(|k| k.is_resident())
        .collect();
    assert_eq!(
        kernels,
        [
            Kernel::SubstepStart,
            Kernel::SubstepFinish,
            Kernel::Substep,
            Kernel::FramePack
        ]
    );
    let with_state: Vec<PackShape> = PackShape::ALL
        .into_iter()
        .filter_map(|s| s.with_resident_state().ok())
        .collect();
    assert_eq!(
        with_state.iter().map(|s| s.rows()).collect::<Vec<_>>(),
        [32, 64]
    );
    for shape in PackShape::ALL.into_iter().chain(with_state) {
        let variant = |resident: bool, frame: bool| {
            parse(&shader_variant(Variant {
                resident,
                frame,
                pack: shape,
                ..Variant::default()
            }))
        };
        let source = shader_variant(Variant {
            resident: true,
            pack: shape,
            ..Variant::default()
        });
        validate(&parse(&source), &source);
        let (resident, buffer) = (variant(true, false), variant(false, false));
        let (frame_resident, frame_buffer) = (variant(true, true), variant(false, true));
        let rows = shape.rows();
        let state = if shape.state_resident() {
            176 * rows
        } else {
            176
        };
        for &k in &kernels {
            let name = k.entry_point();
            let (with, without) = if k.is_frame() {
                (&frame_resident, &frame_buffer)
            } else {
                (&resident, &buffer)
            };
            let grown = workgroup_bytes(with, name) - workgroup_bytes(without, name);
            assert_eq!(grown, 24 * rows + state, "{name}, {shape} rows");
        }
    }
}

/// The whole-frame kernel's module (`shader_variant` with `frame`) is the
/// default with the block of a substep's changing values replaced by
/// shaders/frame.wgsl and nothing else; it validates (with the f64 stencil
/// too); it defines every accessor of that block with the same signature,
/// so that every stage reads the substep's values through the frame's
/// table, and no stage reads them from `params` directly (where the whole
/// frame's dispatch would see its first substep's); and only it holds
/// `frame_rod`, which no other module's build can therefore run.
#[test]
fn frame_variant_reads_each_substeps_values_from_the_frames_table() {
    use strands::gpu::layout::{FRAME_MARKERS, FRAME_SOURCE};
    let source = Kernel::FrameRod.source();
    assert_only_block_replaced(&source, FRAME_MARKERS, FRAME_SOURCE);
    let m = parse(&source);
    validate(&m, &source);
    let f64 = shader_variant(Variant {
        stencil_f64: true,
        frame: true,
        ..Variant::default()
    });
    validate_with(&parse(&f64), &f64, naga::valid::Capabilities::FLOAT64);
    let default = module();
    let has = |m: &naga::Module, name: &str| m.entry_points.iter().any(|e| e.name == name);
    assert!(has(&m, "frame_rod") && !has(&default, "frame_rod"));
    // The accessors' signatures, in each block.
    let signatures = |block: &str| -> Vec<String> {
        let mut s: Vec<String> = block
            .lines()
            .filter(|l| l.starts_with("fn step_"))
            .map(|l| l.to_string())
            .collect();
        s.sort();
        s
    };
    let start = SHADER_SOURCE.find(FRAME_MARKERS[0]).unwrap();
    let end = SHADER_SOURCE.find(FRAME_MARKERS[1]).unwrap();
    let ours = signatures(&SHADER_SOURCE[start..end]);
    assert_eq!(ours.len(), 6, "{ours:?}");
    assert_eq!(signatures(FRAME_SOURCE), ours);
    // Outside the block, `params`' changing members (those
    // `GpuSimulator::step_values` sets from the substep's time and slots)
    // are read through the accessors alone: in the default module and in
    // every block a variant puts in (the module with all of them).
    let all = every_variant(false);
    let start_all = all.find(FRAME_MARKERS[0]).unwrap();
    let end_all = all.find(FRAME_MARKERS[1]).unwrap();
    let outside = format!(
        "{}{}{}{}",
        &SHADER_SOURCE[..start],
        &SHADER_SOURCE[end..],
        &all[..start_all],
        &all[end_all..]
    );
    for member in [
        "wind_phase",
        "slot_start",
        "slot_end",
        "collider_start",
        "collider_end",
        "collider_now",
        "time",
    ] {
        let read = format!("params.{member}");
        let code: Vec<&str> = outside
            .lines()
            .map(|l| l.split("//").next().unwrap())
            .filter(|l| l.contains(&read))
            .collect();
        assert!(
            code.is_empty(),
            "{read} read outside the accessors: {code:?}"
        );
    }
}

/// The body of WGSL function `name` (from its `fn` line to the closing
/// brace at the start of a line).
fn wgsl_fn<'a>(source: &'a str, name: &str) -> &'a str {
    let start = source
        .find(&format!("\nfn {name}("))
        .unwrap_or_else(|| panic!("WGSL has no `fn {name}`"))
        + 1;
    let len = source[start..].find("\n}\n").expect("function end");
    &source[start..start + len]
}

/// What an entry point's invocation stands for, read from its WGSL: a
/// workgroup per pack when it takes `workgroup_id`, a single invocation when
/// its workgroup is one (`@workgroup_size(1)`), a region's node when it
/// reads `grid_region` and its z index, else the count its
/// invocation index is first tested against, following the first call of a
/// function of the module when the entry point tests none itself.
fn wgsl_domain(source: &str, name: &str) -> strands::gpu::Domain {
    use strands::gpu::Domain;
    let body = wgsl_fn(source, name);
    if body.lines().next().unwrap().contains("workgroup_id") {
        return Domain::Pack;
    }
    let at = source.find(&format!("\nfn {name}(")).unwrap();
    if source[..at].ends_with("@workgroup_size(1)") {
        return Domain::Single;
    }
    // One workgroup: it knows its invocations only within the workgroup.
    let signature = body.lines().next().unwrap();
    if signature.contains("local_invocation_index") && !signature.contains("global_invocation_id") {
        return Domain::Workgroup;
    }
    // Each invocation walks a run of the sorted splat's slots.
    if body.contains("* params.sorted_run") {
        return Domain::SortedRuns;
    }
    // Each invocation sums a run of cells.
    if body.contains("* CELL_RUN") {
        return Domain::CellRuns;
    }
    // Its invocations index the region `grid_extent` wrote.
    if body.contains("grid_region[") && body.contains("gid.z") {
        return Domain::Region;
    }
    let bounds = [
        ("params.vertex_count", Domain::Vertex),
        ("params.rod_count", Domain::Rod),
        ("params.node_count", Domain::Node),
    ];
    if let Some((_, d)) = bounds
        .iter()
        .filter_map(|(b, d)| body.find(b).map(|i| (i, *d)))
        .min_by_key(|(i, _)| *i)
    {
        return d;
    }
    let callee = body
        .lines()
        .skip(1)
        .flat_map(|l| l.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '(')))
        .flat_map(|w| w.split_inclusive('('))
        .filter_map(|w| w.strip_suffix('('))
        .find(|f| *f != "invocation" && source.contains(&format!("\nfn {f}(")))
        .unwrap_or_else(|| panic!("{name}: no bound and no call to follow"));
    wgsl_domain(source, callee)
}

/// Every kernel is dispatched over what its entry point indexes: a kernel
/// that walks rods but is dispatched per vertex runs 32× the workgroups
/// for hair, all but a few returning at once (the cause of a 1.35×
/// slowdown on lavapipe, docs/BENCHMARKS.md), and one dispatched per rod
/// but indexing vertices misses most of them.
#[test]
fn kernels_are_dispatched_over_what_they_index() {
    for k in Kernel::ALL {
        assert_eq!(
            k.domain(),
            wgsl_domain(&k.source(), k.entry_point()),
            "{}",
            k.entry_point()
        );
    }
}

/// `const NAME: T = VALUE;` of the shader source, as a number.
fn wgsl_const(source: &str, name: &str) -> f64 {
    let prefix = format!("const {name}:");
    let line = source
        .lines()
        .find(|l| l.trim_start().starts_with(&prefix))
        .unwrap_or_else(|| panic!("WGSL has no `const {name}`"));
    let value = line
        .split('=')
        .nth(1)
        .and_then(|v| v.split(';').next())
        .unwrap_or_else(|| panic!("cannot read `{line}`"))
        .trim();
    let value = value.trim_end_matches('u');
    if let Some(hex) = value.strip_prefix("0x") {
        return u64::from_str_radix(hex, 16).unwrap() as f64;
    }
    value
        .parse()
        .unwrap_or_else(|e| panic!("`const {name}` = {value:?}: {e}"))
}

/// Every WGSL constant that mirrors one of the CPU reference has its value:
/// a drifted copy makes the two backends disagree without any parity test
/// noticing (the chatter threshold once was 1e-3 on the CPU and 0.05 here).
#[test]
fn wgsl_constants_match_rust() {
    use strands::cpu::grid;
    let f32_of = |x: f64| x as f32 as f64;
    use strands::gpu::layout as gl;
    use strands::gpu::pack;
    let twins: [(&str, f64); 40] = [
        ("PROJECTION_NONE", gl::PROJECTION_NONE as f64),
        ("PROJECTION_FAST", gl::PROJECTION_FAST as f64),
        ("PROJECTION_SHAKE", gl::PROJECTION_SHAKE as f64),
        ("PROJECTION_JACOBI", gl::PROJECTION_JACOBI as f64),
        ("SPLAT_OWN", gl::SPLAT_OWN as f64),
        ("SPLAT_SORTED", gl::SPLAT_SORTED as f64),
        ("CELL_RUN", gl::CELL_RUN as f64),
        ("CELL_BLOCK", gl::CELL_BLOCK as f64),
        ("PACK_ROWS", pack::PACK_ROWS as f64),
        ("PACK_RODS", pack::PACK_RODS as f64),
        (
            "ROWS_PER_INVOCATION",
            (pack::PACK_ROWS / strands::gpu::WORKGROUP as usize) as f64,
        ),
        ("PCR_SINGULAR", f32_of(strands::cpu::project::PCR_SINGULAR)),
        ("POSITION_QUANTUM", strands::gpu::layout::POSITION_QUANTUM),
        ("NONE", strands::gpu::layout::NONE as f64),
        ("WORKGROUP", strands::gpu::WORKGROUP as f64),
        ("F32_EPSILON", f32_of(f32::EPSILON as f64)),
        ("SPHERE", strands::contact::kind::SPHERE as f64),
        ("CAPSULE", strands::contact::kind::CAPSULE as f64),
        ("PLANE", strands::contact::kind::PLANE as f64),
        ("SDF", strands::contact::kind::SDF as f64),
        ("MAX_COLLIDERS", strands::contact::MAX_COLLIDERS as f64),
        ("REACH_SLACK", f32_of(strands::cpu::contact::REACH_SLACK)),
        (
            "CHATTER_SUBSTEPS",
            strands::stability::CHATTER_SUBSTEPS as f64,
        ),
        (
            "CHATTER_FRACTION",
            f32_of(strands::stability::CHATTER_FRACTION),
        ),
        (
            "PROJECTION_FAIL_STRAIN",
            f32_of(strands::cpu::project::PROJECTION_FAIL_STRAIN),
        ),
        ("GRID_VMAX", strands::gpu::layout::GRID_VMAX as f64),
        ("GRID_OVERFLOW", strands::gpu::layout::GRID_OVERFLOW as f64),
        ("GRID_OUTSIDE", strands::gpu::layout::GRID_OUTSIDE as f64),
        ("GRID_BOX", strands::gpu::layout::GRID_BOX as f64),
        ("REGION_GROUPS", strands::gpu::layout::REGION_GROUPS as f64),
        ("REGION_WORDS", strands::gpu::layout::REGION_WORDS as f64),
        (
            "REGION_WORKGROUP",
            strands::gpu::layout::REGION_WORKGROUP as f64,
        ),
        ("FRAC_BITS", grid::FRAC_BITS as f64),
        ("ONE_F", grid::ONE as f64),
        ("VELOCITY_SCALE", grid::VELOCITY_SCALE as f64),
        ("VELOCITY_LIMIT", grid::VELOCITY_LIMIT as f64),
        (
            "WORDS_PER_NODE",
            strands::gpu::layout::GRID_WORDS_PER_NODE as f64,
        ),
        ("FULL", (1u64 << grid::FRAC_BITS) as f64),
        (
            "FAST_TOLERANCE_F32",
            f32_of(strands::gpu::FAST_TOLERANCE_F32),
        ),
        (
            "TWIST_TOLERANCE_F32",
            f32_of(strands::gpu::TWIST_TOLERANCE_F32),
        ),
    ];
    let mut wrong = Vec::new();
    for (name, rust) in twins {
        let wgsl = f32_of(wgsl_const(SHADER_SOURCE, name));
        if wgsl != f32_of(rust) {
            wrong.push(format!("{name}: WGSL {wgsl:e}, Rust {rust:e}"));
        }
    }
    // The renderer reads positions with its own copy of the quantum.
    let quantum = strands::gpu::layout::POSITION_QUANTUM;
    let render = wgsl_const(RENDER_SOURCE, "POSITION_QUANTUM");
    if render != quantum {
        wrong.push(format!(
            "POSITION_QUANTUM: render.wgsl {render:e}, Rust {quantum:e}"
        ));
    }
    assert!(
        wrong.is_empty(),
        "constants that drifted:\n{}",
        wrong.join("\n")
    );
}

/// The override constants the host sets per pipeline (`Pipelines::new`:
/// the interleaved rod length, `INTERLEAVE`, `pipelines::Switches::
/// constants`: whether the packs' row loops run to a constant,
/// `UNROLL_ROWS`, and `pipelines::ColliderKinds::constants`) are the ones
/// the shaders declare, so none is silently ignored or left at its
/// default.
#[test]
fn collider_kind_overrides_are_declared() {
    let m = module();
    let mut declared: Vec<String> = m
        .overrides
        .iter()
        .filter_map(|(_, o)| o.name.clone())
        .collect();
    let switches = strands::gpu::pipelines::Switches { unroll_rows: true };
    let mut set = vec!["INTERLEAVE".to_string()];
    set.extend(switches.constants().iter().map(|c| c.0.to_string()));
    assert_eq!(set.len(), 2, "the switch, once: {set:?}");
    set.extend(
        strands::gpu::pipelines::ColliderKinds::ALL
            .constants()
            .iter()
            .map(|c| c.0.to_string()),
    );
    declared.sort();
    set.sort();
    assert_eq!(declared, set);
}

/// Every kernel's SPIR-V, as wgpu's Vulkan backend writes it, with rods
/// interleaved, in each module a kernel is built from (resident,
/// whole-frame), with the f64 stencil: naga 30's writer panics ("Expression
/// is not cached") on a pointer to a member of a pointee, which a
/// simulator would meet only when it first compiled such a kernel.
#[test]
fn every_kernel_writes_spirv() {
    use naga::valid::{Capabilities, ValidationFlags, Validator};
    let mut written = 0;
    for k in Kernel::ALL {
        let source = shader_variant(Variant {
            stencil_f64: true,
            resident: k.is_resident(),
            frame: k.is_frame(),
            ..Variant::default()
        });
        let m = parse(&source);
        let info = Validator::new(ValidationFlags::all(), Capabilities::all())
            .validate(&m)
            .unwrap_or_else(|e| panic!("{}: {e:?}", k.entry_point()));
        let mut constants = naga::back::PipelineConstants::default();
        for (n, v) in strands::gpu::pipelines::ColliderKinds::ALL.constants() {
            constants.insert(n.to_string(), v);
        }
        constants.insert("INTERLEAVE".into(), 32.0);
        let (m, info) = naga::back::pipeline_constants::process_overrides(
            &m,
            &info,
            Some((naga::ShaderStage::Compute, k.entry_point())),
            &constants,
        )
        .unwrap_or_else(|e| panic!("{}: {e:?}", k.entry_point()));
        let pipeline = naga::back::spv::PipelineOptions {
            shader_stage: naga::ShaderStage::Compute,
            entry_point: k.entry_point().to_string(),
        };
        let words = naga::back::spv::write_vec(
            &m,
            &info,
            &naga::back::spv::Options::default(),
            Some(&pipeline),
        )
        .unwrap_or_else(|e| panic!("{}: {e}", k.entry_point()));
        assert_eq!(words[0], 0x0723_0203, "{}: SPIR-V's magic", k.entry_point());
        written += 1;
    }
    assert_eq!(written, Kernel::ALL.len());
}

/// Which kernels a device can run (`Kernel::supported`): every staged one
/// on WebGPU's default limits; the walked fused ones once 15 storage
/// buffers are allowed; the packed fused ones only with the workgroup
/// memory of their pack shape too: WebGPU's default 16 KiB holds packs of
/// up to 128 rows, not the default 256.
#[test]
fn fused_kernels_are_gated_on_the_limits_they_need() {
    use strands::gpu::layout::{FUSED_STORAGE_BUFFERS, FUSED_WORKGROUP_BYTES};
    use strands::gpu::pack::PackShape;
    let d = PackShape::DEFAULT;
    let default = wgpu::Limits::default();
    let buffers = wgpu::Limits {
        max_storage_buffers_per_shader_stage: FUSED_STORAGE_BUFFERS,
        ..default.clone()
    };
    let both = wgpu::Limits {
        max_compute_workgroup_storage_size: FUSED_WORKGROUP_BYTES,
        ..buffers.clone()
    };
    for k in Kernel::ALL {
        assert_eq!(
            k.supported(&default, d),
            !k.is_fused() && k.storage_buffers() <= 8,
            "{k:?}"
        );
        if k.is_sorted_splat() {
            let ten = wgpu::Limits {
                max_storage_buffers_per_shader_stage: 10,
                ..default.clone()
            };
            assert!(k.supported(&ten, d), "{k:?}");
        }
        assert_eq!(
            k.supported(&buffers, d),
            !k.is_fused() || !k.per_pack(),
            "{k:?}"
        );
        assert!(k.supported(&both, d), "{k:?}");
    }
    assert!(Kernel::SubstepRod.supported(&buffers, d) && !Kernel::Substep.supported(&buffers, d));
    // The sorted splat needs 10 storage buffers for two of its kernels.
    use strands::gpu::layout::sorted_splat_supported;
    assert!(!sorted_splat_supported(&default) && sorted_splat_supported(&buffers));
    assert!(
        Kernel::SORTED_SPLAT
            .iter()
            .any(|k| !k.supported(&default, d))
    );
    assert_eq!(default.max_compute_workgroup_storage_size, 16384);
    for shape in PackShape::ALL {
        // 16 KiB holds the fused kernels' arrays for 32, 64 and 128 rows
        // with the positions resident (4,216, 8,248 and 16,312 B), not for
        // 256 rows (32,440 B); with the whole state resident, for 32 rows
        // (9,672 B), not for 64 (19,336 B).
        assert_eq!(
            Kernel::Substep.supported(&buffers, shape),
            shape.rows() <= 128,
            "{shape} rows"
        );
        assert!(!Kernel::Substep.supported(&default, shape));
        if let Ok(state) = shape.with_resident_state() {
            assert_eq!(
                Kernel::Substep.supported(&buffers, state),
                state.rows() == 32,
                "{state} rows"
            );
        }
    }
}
