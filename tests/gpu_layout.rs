//! Every shader parses and validates with naga (no GPU needed), and every
//! Rust struct shared with WGSL has the size and member offsets that WGSL's
//! layout rules give it (naga computes them from the shader source).

use strands::demo::render::SHADER_SOURCE as RENDER_SOURCE;
use strands::gpu::Kernel;
use strands::gpu::compose::{ALTERNATIVES, FILES};
use strands::gpu::layout::{Variant, shader_source, shader_variant, shared_structs};
use strands::model::interaction::{FRAC_BITS, ONE};

fn parse(source: &str) -> naga::Module {
    naga::front::wgsl::parse_str(source)
        .unwrap_or_else(|e| panic!("shaders do not parse:\n{}", e.emit_to_string(source)))
}

fn module() -> naga::Module {
    parse(&shader_source())
}

/// The module each kernel is built from on a device without optional
/// features (`Kernel::source`): `shader_source()`, or the whole-frame
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

/// The module with every alternative file a variant can take, the frame's
/// table of substep values too where `frame`, and approximate math.
fn every_variant(frame: bool) -> String {
    shader_variant(Variant {
        stencil_f64: true,
        grid_i64: true,
        approximate_math: true,
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

/// Each shader file's imports are complete and run one way: every file of
/// `compose::FILES`, composed from itself alone (with the alternatives it
/// needs), parses and validates with naga; every kernel file under
/// shaders/ is one of `FILES` (the renderer's, the bandwidth probe's and
/// the approximate-math model are modules of their own).
#[test]
fn every_shader_file_composes_from_its_own_imports() {
    let own = ["render.wgsl", "bandwidth.wgsl", "approximate.wgsl"];
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/shaders");
    let mut on_disk: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".wgsl") && !own.contains(&n.as_str()))
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = FILES.iter().map(|(s, _)| format!("{s}.wgsl")).collect();
    listed.sort();
    assert_eq!(on_disk, listed, "shaders/ against compose::FILES");
    for (stem, _) in FILES {
        // A file that is an alternative comes in by its swap; the frame
        // kernel reads the frame's table.
        let mut swaps: Vec<(&str, &str)> = ALTERNATIVES
            .into_iter()
            .filter(|(_, b)| *b == stem)
            .collect();
        if stem == "frame" {
            swaps.push(("step_uniform", "step_table"));
        }
        let source = strands::gpu::compose::compose(&[stem], &swaps)
            .unwrap_or_else(|e| panic!("{stem}: {e}"));
        let m = parse(&source);
        naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::all(),
        )
        .validate(&m)
        .unwrap_or_else(|e| panic!("shaders/{stem}.wgsl alone:\n{}", e.emit_to_string(&source)));
    }
}

/// The signatures of a WGSL file's functions (their `fn` lines up to the
/// body), sorted.
fn signatures(text: &str) -> Vec<&str> {
    let mut s: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("fn "))
        .map(|l| l.split('{').next().unwrap().trim_end())
        .collect();
    s.sort();
    s
}

/// Each pair of `compose::ALTERNATIVES` is one interface: every function
/// of either that a file outside the pair calls is in both, with the same
/// signature.
#[test]
fn alternative_files_offer_the_same_functions() {
    let text = |stem: &str| strands::gpu::compose::file(stem).unwrap();
    for (a, b) in ALTERNATIVES {
        let others: String = FILES
            .iter()
            .filter(|(s, _)| *s != a && *s != b)
            .map(|(_, t)| *t)
            .collect();
        let called = |sig: &&str| {
            let name = sig["fn ".len()..sig.find('(').unwrap()].to_string();
            others.contains(&format!("{name}("))
        };
        let of_a: Vec<&str> = signatures(text(a)).into_iter().filter(called).collect();
        let of_b: Vec<&str> = signatures(text(b)).into_iter().filter(called).collect();
        assert!(!of_a.is_empty(), "{a}: no function called from outside");
        assert_eq!(of_a, of_b, "{a} against {b}");
    }
}

/// A variant's files are the default module's with one file swapped for
/// its alternative, in the same place, and nothing else.
fn assert_only_file_swapped(variant: Variant, from: &str, to: &str) {
    let default: Vec<&str> = Variant::default().files().iter().map(|(s, _)| *s).collect();
    let ours: Vec<&str> = variant.files().iter().map(|(s, _)| *s).collect();
    let expected: Vec<&str> = default
        .iter()
        .map(|s| if *s == from { to } else { s })
        .collect();
    assert!(default.contains(&from), "{from} not in the default module");
    assert_eq!(ours, expected);
}

/// The variant with the bending stencil in f64 is the default with
/// shaders/real_f64.wgsl for real_f32.wgsl; it validates on a device with
/// f64 and is refused by one without it (so `real` really became f64).
#[test]
fn f64_stencil_variant_validates_where_f64_is() {
    let variant = Variant {
        stencil_f64: true,
        ..Variant::default()
    };
    assert_only_file_swapped(variant, "real_f32", "real_f64");
    let source = shader_variant(variant);
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

/// The grid's 64-bit accumulators (`Variant::grid_i64`): the default with
/// shaders/grid_i64.wgsl for grid_u32.wgsl and nothing else; it validates
/// with the 64-bit integer and atomic capabilities (also with every other
/// variant) and is refused without them (so the atomics really are
/// 64-bit), and `grid` is an array of 64-bit atomics in it and of 32-bit
/// ones in the default module.
#[test]
fn grid_i64_variant_validates_where_64_bit_atomics_are() {
    use naga::valid::Capabilities as Caps;
    let variant = Variant {
        grid_i64: true,
        ..Variant::default()
    };
    assert_only_file_swapped(variant, "grid_u32", "grid_i64");
    let source = shader_variant(variant);
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
        .map(|(name, _)| calls_of(&shader_source(), name))
        .sum();
    assert!(sites >= 24, "only {sites} calls found");
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
    validate(&modules.default, &shader_source());
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
/// Each kernel is checked in the module it is built from (`Kernel::source`).
#[test]
fn kernel_bindings_match_what_each_entry_point_uses() {
    let modules = Modules::new();
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
    for k in Kernel::ALL {
        let mut declared = k.bindings().to_vec();
        declared.sort();
        let info = if k.is_frame() {
            &info_frame
        } else {
            &info_default
        };
        // The module uses only declared bindings, and all of them.
        let mut all = used(modules.of(k), info, k.entry_point());
        assert!(
            all.iter().all(|b| declared.contains(b)),
            "{}: bindings used {all:?}, declared by the host {declared:?}",
            k.entry_point()
        );
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

/// Every kernel's workgroup memory, each from the module it is built from,
/// fits WebGPU's default `maxComputeWorkgroupStorageSize` of 16 KiB; the
/// fused kernels, which walk rods, use none, so they are gated on storage
/// buffers alone (`walked_fused_supported`); and only the sorted splat's
/// count and scans share memory across a workgroup's invocations.
#[test]
fn workgroup_memory_fits_the_default_limit() {
    let modules = Modules::new();
    let limit = wgpu::Limits::default().max_compute_workgroup_storage_size as usize;
    assert_eq!(limit, 16384);
    for k in Kernel::ALL {
        let bytes = workgroup_bytes(modules.of(k), k.entry_point());
        eprintln!("{}: {bytes} bytes of workgroup memory", k.entry_point());
        if k.is_fused() {
            assert_eq!(bytes, 0, "{}", k.entry_point());
            continue;
        }
        assert!(
            bytes <= limit,
            "{}: {bytes} bytes of workgroup memory",
            k.entry_point()
        );
        // The sorted splat's count and scans share memory, over a
        // workgroup's vertices or cells (not the scatter, which moves each
        // vertex alone, nor the splat, whose invocations walk their own
        // slots); no other kernel does.
        let shares =
            k.is_sorted_splat() && !matches!(k, Kernel::GridCellScatter | Kernel::GridSplatSorted);
        assert_eq!(bytes > 0, shares, "{}", k.entry_point());
    }
}

/// The whole-frame kernel's module (`shader_variant` with `frame`) is the
/// default with shaders/step_table.wgsl for step_uniform.wgsl, and
/// shaders/frame.wgsl last; it validates (with the f64 stencil too); only
/// it holds `frame_rod`, which no other module's build can therefore run;
/// and no stage reads a substep's changing values from `params` directly
/// (where the whole frame's dispatch would see its first substep's) but
/// through the accessors of those two files.
#[test]
fn frame_variant_reads_each_substeps_values_from_the_frames_table() {
    let variant = Variant {
        frame: true,
        ..Variant::default()
    };
    let mut files: Vec<&str> = variant.files().iter().map(|(s, _)| *s).collect();
    assert_eq!(files.pop(), Some("frame"));
    let expected: Vec<&str> = Variant::default()
        .files()
        .iter()
        .map(|(s, _)| {
            if *s == "step_uniform" {
                "step_table"
            } else {
                s
            }
        })
        .collect();
    assert_eq!(files, expected);
    let source = Kernel::FrameRod.source();
    let m = parse(&source);
    validate(&m, &source);
    let f64 = shader_variant(Variant {
        stencil_f64: true,
        ..variant
    });
    validate_with(&parse(&f64), &f64, naga::valid::Capabilities::FLOAT64);
    let default = module();
    let has = |m: &naga::Module, name: &str| m.entry_points.iter().any(|e| e.name == name);
    assert!(has(&m, "frame_rod") && !has(&default, "frame_rod"));
    // Outside the accessors, `params`' changing members (those
    // `GpuSimulator::step_values` sets from the substep's time and slots)
    // are read nowhere, in any file of any variant.
    let outside: String = FILES
        .iter()
        .filter(|(s, _)| !["step_uniform", "step_table"].contains(s))
        .map(|(_, t)| *t)
        .collect();
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
/// single invocation when its workgroup is one (`@workgroup_size(1)`), a region's node when it
/// reads `grid_region` and its z index, else the count its
/// invocation index is first tested against, following the first call of a
/// function of the module when the entry point tests none itself.
fn wgsl_domain(source: &str, name: &str) -> strands::gpu::Domain {
    use strands::gpu::Domain;
    let body = wgsl_fn(source, name);
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
/// slowdown on lavapipe), and one dispatched per rod
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
    let twins: [(&str, f64); 45] = [
        ("STAT_TWIST_ITERATIONS", gl::stat::TWIST_ITERATIONS as f64),
        (
            "STAT_PROJECTION_ITERATIONS",
            gl::stat::PROJECTION_ITERATIONS as f64,
        ),
        ("STAT_TUNNELLED", gl::stat::TUNNELLED as f64),
        ("STAT_TUNNEL_SITE", gl::stat::TUNNEL_SITE as f64),
        ("STAT_TUNNEL_MOTION", gl::stat::TUNNEL_MOTION as f64),
        ("STAT_LOOPS_CUT_SHORT", gl::stat::LOOPS_CUT_SHORT as f64),
        ("STAT_PROJECTION_FAILED", gl::stat::PROJECTION_FAILED as f64),
        (
            "STAT_PROJECTION_FAILED_STRAIN",
            gl::stat::PROJECTION_FAILED_STRAIN as f64,
        ),
        ("STAT_COUNT", gl::stat::COUNT as f64),
        ("PROJECTION_NONE", gl::PROJECTION_NONE as f64),
        ("PROJECTION_FAST", gl::PROJECTION_FAST as f64),
        ("PROJECTION_SHAKE", gl::PROJECTION_SHAKE as f64),
        ("PROJECTION_JACOBI", gl::PROJECTION_JACOBI as f64),
        ("SPLAT_OWN", gl::SPLAT_OWN as f64),
        ("SPLAT_SORTED", gl::SPLAT_SORTED as f64),
        ("CELL_RUN", gl::CELL_RUN as f64),
        ("CELL_BLOCK", gl::CELL_BLOCK as f64),
        ("POSITION_QUANTUM", strands::gpu::layout::POSITION_QUANTUM),
        ("NONE", strands::gpu::layout::NONE as f64),
        ("WORKGROUP", strands::gpu::WORKGROUP as f64),
        ("F32_EPSILON", f32_of(f32::EPSILON as f64)),
        ("SPHERE", strands::model::colliders::kind::SPHERE as f64),
        ("CAPSULE", strands::model::colliders::kind::CAPSULE as f64),
        ("PLANE", strands::model::colliders::kind::PLANE as f64),
        ("SDF", strands::model::colliders::kind::SDF as f64),
        (
            "MAX_COLLIDERS",
            strands::model::colliders::MAX_COLLIDERS as f64,
        ),
        ("REACH_SLACK", f32_of(strands::cpu::contact::REACH_SLACK)),
        (
            "CHATTER_SUBSTEPS",
            strands::model::stability::CHATTER_SUBSTEPS as f64,
        ),
        (
            "CHATTER_FRACTION",
            f32_of(strands::model::stability::CHATTER_FRACTION),
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
        ("FRAC_BITS", FRAC_BITS as f64),
        ("ONE_F", ONE as f64),
        ("VELOCITY_SCALE", grid::VELOCITY_SCALE as f64),
        ("VELOCITY_LIMIT", grid::VELOCITY_LIMIT as f64),
        (
            "WORDS_PER_NODE",
            strands::gpu::layout::GRID_WORDS_PER_NODE as f64,
        ),
        ("FULL", (1u64 << FRAC_BITS) as f64),
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
        let wgsl = f32_of(wgsl_const(&shader_source(), name));
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
/// the interleaved rod length, `INTERLEAVE`, and
/// `pipelines::ColliderKinds::constants`) are the ones the shaders
/// declare, so none is silently ignored or left at its default.
#[test]
fn collider_kind_overrides_are_declared() {
    let m = module();
    let mut declared: Vec<String> = m
        .overrides
        .iter()
        .filter_map(|(_, o)| o.name.clone())
        .collect();
    let mut set = vec!["INTERLEAVE".to_string()];
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
/// interleaved: naga 30's writer panicked ("Expression is not cached") on
/// a contact walk that passed a pointer to a member of a pointee, in every
/// kernel that walks contact. In
/// each module a kernel is built from (the default, the whole frame's), with
/// the f64 stencil.
#[test]
fn every_kernel_writes_spirv() {
    use naga::valid::{Capabilities, ValidationFlags, Validator};
    let mut written = 0;
    for k in Kernel::ALL {
        let source = shader_variant(Variant {
            stencil_f64: true,
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
/// on WebGPU's default limits, but for two of the sorted splat's, which
/// need 10 storage buffers; the fused ones (all walked) once
/// `FUSED_STORAGE_BUFFERS` (15) are allowed.
#[test]
fn fused_kernels_are_gated_on_the_limits_they_need() {
    use strands::gpu::layout::FUSED_STORAGE_BUFFERS;
    let default = wgpu::Limits::default();
    let buffers = wgpu::Limits {
        max_storage_buffers_per_shader_stage: FUSED_STORAGE_BUFFERS,
        ..default.clone()
    };
    for k in Kernel::ALL {
        assert_eq!(
            k.supported(&default),
            !k.is_fused() && k.storage_buffers() <= 8,
            "{k:?}"
        );
        if k.is_sorted_splat() {
            let ten = wgpu::Limits {
                max_storage_buffers_per_shader_stage: 10,
                ..default.clone()
            };
            assert!(k.supported(&ten), "{k:?}");
        }
        assert!(k.supported(&buffers), "{k:?}");
    }
    assert!(Kernel::SubstepRod.supported(&buffers));
    // The sorted splat needs 10 storage buffers for two of its kernels.
    use strands::gpu::layout::sorted_splat_supported;
    assert!(!sorted_splat_supported(&default) && sorted_splat_supported(&buffers));
    assert!(Kernel::SORTED_SPLAT.iter().any(|k| !k.supported(&default)));
}
