//! The traffic model of `strands bench` (src/gpu/traffic.rs) charges each
//! kernel the bytes of the buffer elements its WGSL reads and writes, once
//! each: checked against a count by hand for `integrate`, against naga's
//! own record of which globals each entry point reads and writes, and the
//! bandwidth probe's shader validates. No GPU needed.

use strands::bench::Workload;
use strands::gpu::Kernel;
use strands::gpu::layout::shader_source;
use strands::gpu::schedule::Splat;
use strands::gpu::traffic::{Bytes, Counts, TrafficModel, substep_kernels};

/// The sizes both hand counts of `integrate` below take: 100 vertices in 5
/// rods, 5 clamps, one anchor, no grid.
fn integrate_counts() -> Counts {
    Counts {
        vertices: 100,
        rods: 5,
        edges: 95,
        clamps: 5,
        anchors: 1,
        groups: 0,
        nodes: 0,
    }
}

/// `integrate` (shaders/integrate.wgsl) with V vertices, R rods, C clamps,
/// A anchors, counted by reading the kernel:
/// reads `pos` (a `Position`, 32 B), `vel` (16 B), `scratch.force` (16 B), of `rest` the
/// members inv_mass, rod, clamp, clamp_slot (16 B) per vertex; of `clamps`
/// local_pos0, local_pos1, anchor (36 B) per clamp; `rods[..].origin` (16 B)
/// per rod; whole poses (32 B) of the substep's two slots per anchor; of the
/// uniform `Step` h, rod_count (`vertex_slot`'s last block, read where rods
/// are interleaved), vertex_count, anchor_count, slot_end (20 B). Writes
/// `pos`, `pos_unc` (32 B each) and `vel` (16 B) per vertex.
#[test]
fn integrate_moves_what_a_hand_count_says() {
    let c = integrate_counts();
    let (v, r, cl, a) = (c.vertices, c.rods, c.clamps, c.anchors);
    let read = 32 * v + 16 * v + 16 * v + 16 * v + 36 * cl + 16 * r + 32 * 2 * a + 20;
    let written = (32 + 32 + 16) * v;
    let model = TrafficModel::from_shaders();
    let got = model.kernel_bytes(Kernel::Integrate, &c);
    assert_eq!(
        got,
        Bytes { read, written },
        "uses: {:#?}",
        model.uses(Kernel::Integrate)
    );
}

/// The sector floor of `integrate`, counted by hand from the same reads
/// and writes as above and the structs' layouts (shaders/common.wgsl),
/// each 32-byte sector that holds a byte it touches once: per vertex,
/// `pos` 32 B (a sector), `vel` 16 B (half of one), `scratch.force`
/// (bytes 48–63 of 64: one sector), and of the 48-byte `rest` bytes 24–27
/// and 32–43, which two vertices spread over three sectors (48 B a
/// vertex, the whole struct, where the byte count charges 16). Per clamp,
/// bytes 0–31 and 48–51 of 64: two sectors; per rod `origin`, bytes 32–47
/// of 64: one; the two whole 32-byte poses per anchor; of `Step`, `h` at
/// byte 48 and bytes 64–75 and 80–83: two sectors. Written: `pos`,
/// `pos_unc` and `vel`, whole and contiguous, as bytes.
#[test]
fn integrate_moves_these_sectors_by_hand() {
    use strands::gpu::traffic::Granularity;
    let c = integrate_counts();
    let (v, r, cl, a) = (c.vertices, c.rods, c.clamps, c.anchors);
    let read = (32 + 16 + 32 + 48) * v + 64 * cl + 32 * r + 32 * 2 * a + 64;
    let written = (32 + 32 + 16) * v;
    let model = TrafficModel::from_shaders();
    let params = strands::model::params::SimParams::default();
    let got = model.kernel_traffic_under(
        Kernel::Integrate,
        &c,
        &params,
        Splat::Own,
        Granularity::Sectors,
    );
    assert_eq!(
        got,
        Bytes { read, written },
        "uses: {:#?}",
        model.uses(Kernel::Integrate)
    );
}

/// `sector_bytes` on layouts counted by hand: the distinct 32-byte
/// sectors that n elements of a stride occupy with the given byte ranges.
#[test]
fn sector_bytes_count_each_sector_once() {
    use strands::gpu::traffic::sector_bytes;
    // One 4-byte member of a 48-byte struct: a sector per element.
    assert_eq!(sector_bytes(4, 48, &[(24, 4)]), 4 * 32);
    // Bytes 24–27 and 32–43 of 48: element 0 spans sectors 0 and 1,
    // element 1 (bytes 72–91) sector 2, element 2 (120–139) 3 and 4.
    assert_eq!(sector_bytes(2, 48, &[(24, 4), (32, 12)]), 3 * 32);
    assert_eq!(sector_bytes(3, 48, &[(24, 4), (32, 12)]), 5 * 32);
    // Whole 16-byte elements: two a sector, the last one half used.
    assert_eq!(sector_bytes(5, 16, &[(0, 16)]), 3 * 32);
    // The last 16 bytes of 64: one sector of the two.
    assert_eq!(sector_bytes(3, 64, &[(48, 16)]), 3 * 32);
    // 4-byte elements: eight a sector.
    assert_eq!(sector_bytes(9, 4, &[(0, 4)]), 2 * 32);
    // A sector shared by neighbouring elements is counted once.
    assert_eq!(sector_bytes(2, 8, &[(0, 8)]), 32);
    assert_eq!(sector_bytes(0, 48, &[(0, 48)]), 0);
    assert_eq!(sector_bytes(7, 48, &[]), 0);
}

/// In every form, the sector floor of each buffer is at least its byte
/// floor (a sector moves at least the bytes in it), and equal where each
/// element is read or written whole and a whole number of sectors long
/// (`pos`, a 32-byte `Position`).
#[test]
fn sector_floor_bounds() {
    use strands::gpu::Form;
    use strands::gpu::schedule::Splat;
    use strands::gpu::traffic::Granularity;
    let w = Workload::standard("hair", 40, 32).unwrap();
    let (rods, _) = w.scene.build();
    let params = strands::bench::bench_params(&rods, &w.scene.params, 2);
    let model = TrafficModel::from_shaders();
    for (form, splat) in Form::ALL
        .into_iter()
        .flat_map(|f| Splat::ALL.map(|s| (f, s)))
    {
        let bytes =
            model.substep_traffic_by_buffer(&rods, &params, form, splat, Granularity::Bytes);
        let sectors =
            model.substep_traffic_by_buffer(&rods, &params, form, splat, Granularity::Sectors);
        for (name, b) in &bytes {
            let s = sectors
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, s)| *s)
                .unwrap_or_else(|| panic!("{form:?}: {name} has no sector count"));
            assert!(
                s.read >= b.read && s.written >= b.written,
                "{form:?}: {name} moves fewer sectors ({s:?}) than bytes ({b:?})"
            );
            if name == "pos" {
                assert_eq!(s, *b, "{form:?}: whole 32-byte positions are whole sectors");
            }
        }
        let (b, s) = (
            model.substep_traffic_in(&rods, &params, form, splat, Granularity::Bytes),
            model.substep_traffic_in(&rods, &params, form, splat, Granularity::Sectors),
        );
        assert!(s.total() >= b.total(), "{form:?}");
    }
}

/// Every global an entry point reads or writes, by naga's validator (its
/// `GlobalUse` through calls), is charged to the kernel with the same
/// direction, and nothing else is; the SDF texture is the one exception
/// (sampled sparsely, not counted).
#[test]
fn traced_accesses_agree_with_naga() {
    let validated = |source: &str| {
        let m = naga::front::wgsl::parse_str(source).unwrap();
        let info = naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::empty(),
        )
        .validate(&m)
        .unwrap();
        (m, info)
    };
    let default = validated(&shader_source());
    // The whole-frame kernel's entry point is in its own module only.
    let frame = validated(&Kernel::FrameRod.source());
    let model = TrafficModel::from_shaders();
    for k in Kernel::ALL {
        let (m, info) = if k.is_frame() { &frame } else { &default };
        let i = m
            .entry_points
            .iter()
            .position(|ep| ep.name == k.entry_point())
            .unwrap();
        let ep = info.get_entry_point(i);
        let mut naga_uses: Vec<(u32, u32, bool, bool)> = m
            .global_variables
            .iter()
            .filter(|(h, _)| !ep[*h].is_empty())
            .filter_map(|(h, var)| {
                let b = var.binding.as_ref()?;
                let u = ep[h];
                let texture = matches!(m.types[var.ty].inner, naga::TypeInner::Image { .. });
                (!texture).then_some((
                    b.group,
                    b.binding,
                    u.contains(naga::valid::GlobalUse::READ),
                    u.contains(naga::valid::GlobalUse::WRITE),
                ))
            })
            .collect();
        naga_uses.sort();
        let mut ours: Vec<(u32, u32, bool, bool)> = model
            .uses(k)
            .iter()
            .filter(|u| !(u.group == 1 && u.binding == strands::gpu::layout::binding::SDF))
            .map(|u| (u.group, u.binding, u.read > 0, u.written > 0))
            .collect();
        ours.sort();
        assert_eq!(
            ours,
            naga_uses,
            "{}: (group, binding, read, written) traced (left) vs naga (right)",
            k.entry_point()
        );
    }
}

/// The standard hair workload (colliders, interaction, the fast
/// projection) dispatches, in the staged walk, the projection twice per
/// substep (the plain one and the one filtered by contact), the splat and
/// the contact walk; in the bench's form (`substep_kernels`, the walked
/// frame, which with the grid runs the walked fused halves around it) the
/// two halves and the grid's region between them; and every kernel moves
/// something.
#[test]
fn hair_substep_dispatches_and_moves_bytes() {
    use strands::gpu::Form;
    use strands::gpu::traffic::substep_kernels_in;
    let w = Workload::standard("hair", 20, 16).unwrap();
    let (rods, _) = w.scene.build();
    let params = strands::bench::bench_params(&rods, &w.scene.params, 2);
    let staged = substep_kernels_in(&rods, &params, Form::Walked, Splat::Own);
    // The workload's default fast projection: the plain one, and the
    // filtered one after contact (hair has colliders).
    let fast = staged
        .iter()
        .filter(|&&k| k == Kernel::ProjectFastRod)
        .count();
    assert_eq!(fast, 2, "{staged:?}");
    assert!(staged.contains(&Kernel::GridSplat) && staged.contains(&Kernel::ContactRod));
    let ks = substep_kernels(&rods, &params);
    assert_eq!(
        ks,
        [
            Kernel::SubstepStartRod,
            Kernel::GridExtent,
            Kernel::GridVelocityBox,
            Kernel::SubstepFinishRod
        ]
    );
    let model = TrafficModel::from_shaders();
    let c = Counts::of(&rods);
    for k in ks.iter().chain(&staged) {
        assert!(model.kernel_bytes(*k, &c).total() > 0, "{k:?}");
    }
    let total = model.substep_bytes(&rods, &params).total();
    let per_vertex = total as f64 / rods.vertex_count() as f64;
    // Each kernel moves at least a position (16 B) per vertex.
    assert!(
        per_vertex > 16.0 * ks.len() as f64,
        "{per_vertex} B per vertex"
    );
}

/// The walked fused form (`substep_start_rod` with the walked splat,
/// `grid_extent`, `grid_velocity_box`, `substep_finish_rod` with the
/// blend) moves less per substep than the same stages as separate
/// dispatches (`Form::Walked`): each of its two halves reads and writes a
/// vertex's state once, where the staged stages each read the positions
/// again (the projection's two passes, contact's two, frames, twist,
/// forces). The bench's count (`substep_bytes`, the walked frame) is the
/// walked fused form's here: with the grid the walked frame runs its
/// halves.
#[test]
fn fused_substep_models_fewer_bytes_than_its_stages() {
    use strands::gpu::Form;
    use strands::gpu::traffic::substep_kernels_in;
    let w = Workload::standard("hair", 20, 16).unwrap();
    let (rods, _) = w.scene.build();
    let params = strands::bench::bench_params(&rods, &w.scene.params, 2);
    assert_eq!(
        substep_kernels_in(&rods, &params, Form::WalkedFused, Splat::Own),
        [
            Kernel::SubstepStartRod,
            Kernel::GridExtent,
            Kernel::GridVelocityBox,
            Kernel::SubstepFinishRod
        ]
    );
    let model = TrafficModel::from_shaders();
    let bytes = |form| {
        model
            .substep_bytes_in(&rods, &params, form, Splat::Own)
            .total()
    };
    let (staged, fused) = (bytes(Form::Walked), bytes(Form::WalkedFused));
    eprintln!(
        "hair: staged {} B, walked fused {} B per vertex-step",
        staged / rods.vertex_count() as u64,
        fused / rods.vertex_count() as u64
    );
    assert!(fused < staged, "walked fused {fused} B, staged {staged} B");
    assert_eq!(
        model.substep_bytes(&rods, &params).total(),
        bytes(Form::WalkedFrame)
    );
    assert_eq!(bytes(Form::WalkedFrame), fused);
}

#[test]
fn bandwidth_probe_validates() {
    let src = strands::gpu::bandwidth::SHADER_SOURCE;
    let m = naga::front::wgsl::parse_str(src).unwrap();
    naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::empty(),
    )
    .validate(&m)
    .unwrap();
    let ep = m.entry_points.iter().find(|e| e.name == "copy").unwrap();
    assert_eq!(
        ep.workgroup_size,
        [strands::gpu::bandwidth::COPY_WORKGROUP, 1, 1]
    );
}

/// Only SHAKE touches the positions at the start of the substep
/// (`pos_start`): with the workload's fast projection the fused substep
/// (the walked fused halves, which the walked frame runs with the grid) is
/// charged 64 B per vertex less than its kernels' static count, the 32 B
/// (a `Position`) that `substep_start_rod` would write there and the 32 B
/// that `substep_finish_rod` would read, both behind `params.projection ==
/// PROJECTION_SHAKE`; under SHAKE, exactly the static count. Counted by
/// hand from shaders/substep.wgsl.
#[test]
fn only_shake_is_charged_for_the_start_positions() {
    use strands::gpu::Form;
    use strands::gpu::traffic::substep_kernels_in;
    use strands::model::params::Projection;
    let w = Workload::standard("hair", 20, 16).unwrap();
    let (rods, _) = w.scene.build();
    let fast = strands::bench::bench_params(&rods, &w.scene.params, 2);
    let Projection::Fast {
        tolerance,
        max_iterations,
    } = fast.projection
    else {
        panic!("the hair workload projects with the fast projection");
    };
    let shake = strands::model::params::SimParams {
        projection: Projection::Shake {
            tolerance,
            max_iterations,
        },
        ..fast
    };
    let model = TrafficModel::from_shaders();
    let c = Counts::of(&rods);
    let v = rods.vertex_count() as u64;
    for form in [Form::WalkedFused, Form::WalkedFrame] {
        let kernels = substep_kernels_in(&rods, &fast, form, Splat::Own);
        let static_count: u64 = kernels
            .iter()
            .map(|&k| model.kernel_bytes(k, &c).total())
            .sum();
        let under_fast = model
            .substep_bytes_in(&rods, &fast, form, Splat::Own)
            .total();
        assert_eq!(static_count, under_fast + 64 * v, "{form}");
        let under_shake = model
            .substep_bytes_in(&rods, &shake, form, Splat::Own)
            .total();
        assert_eq!(under_shake, static_count, "{form}");
    }
}

/// The by-buffer breakdown the bench prints is the substep's traffic split
/// up, not a second count: in every form and under SHAKE as under the fast
/// projection its parts add up to `substep_bytes_in`, read and written
/// apart, each buffer once, most first, none empty.
#[test]
fn traffic_by_buffer_adds_up_to_the_substep() {
    use strands::gpu::Form;
    use strands::model::params::Projection;
    let w = Workload::standard("hair", 20, 16).unwrap();
    let (rods, _) = w.scene.build();
    let fast = strands::bench::bench_params(&rods, &w.scene.params, 2);
    let shake = strands::model::params::SimParams {
        projection: Projection::Shake {
            tolerance: 1e-6,
            max_iterations: 20,
        },
        ..fast
    };
    let model = TrafficModel::from_shaders();
    for params in [fast, shake] {
        for form in Form::ALL {
            let by = model.substep_bytes_by_buffer(&rods, &params, form, Splat::Own);
            let mut sum = Bytes::default();
            for (_, b) in &by {
                assert!(b.total() > 0);
                sum += *b;
            }
            assert_eq!(
                sum,
                model.substep_bytes_in(&rods, &params, form, Splat::Own),
                "{form}"
            );
            let mut names: Vec<&str> = by.iter().map(|(n, _)| n.as_str()).collect();
            assert!(
                by.windows(2).all(|p| p[0].1.total() >= p[1].1.total()),
                "{by:?}"
            );
            names.sort();
            names.dedup();
            assert_eq!(names.len(), by.len(), "{by:?}");
            // Positions move under every form; `pos_start` only under SHAKE.
            assert!(names.contains(&"pos"));
            let shake_only = matches!(params.projection, Projection::Shake { .. });
            assert_eq!(
                names.contains(&"pos_start"),
                shake_only,
                "{form}: {names:?}"
            );
        }
    }
}

/// The model's account of the sorted splat: the fused first halves do not
/// splat under it (`Step.splat`; that the kernels honour it is
/// tests/gpu_interaction.rs's, whose runs would differ with the mass
/// splatted twice), so the model has the grid move as many bytes a
/// substep as under the form's own splat (the splat moved to
/// `grid_splat_sorted`, not doubled) but for `grid_cell_count`'s, which
/// reaches the grid's counters alone.
#[test]
fn sorted_splat_moves_the_grid_once() {
    use strands::gpu::Form;
    use strands::gpu::traffic::{Counts, Granularity};
    let w = Workload::standard("hair", 40, 32).unwrap();
    let (rods, _) = w.scene.build();
    let params = strands::bench::bench_params(&rods, &w.scene.params, 2);
    let model = TrafficModel::from_shaders();
    let grid = |form, splat| {
        model
            .substep_bytes_by_buffer(&rods, &params, form, splat)
            .into_iter()
            .find(|(name, _)| name == "grid")
            .map(|(_, b)| b)
            .unwrap()
    };
    for form in Form::ALL {
        let own = grid(form, Splat::Own);
        assert!(own.total() > 0, "{form}");
        // And the counters `grid_cell_count` adds the outside vertices to.
        let counters = (strands::gpu::layout::GRID_COUNTERS * 4) as u64;
        let sorted = grid(form, Splat::SORTED);
        assert_eq!(sorted.read, own.read + counters, "{form}");
        assert_eq!(sorted.written, own.written + counters, "{form}");
    }
    let c = Counts::of(&rods);
    let count = model.kernel_traffic_under(
        Kernel::GridCellCount,
        &c,
        &params,
        Splat::SORTED,
        Granularity::Bytes,
    );
    let whole_grid = model.kernel_bytes_under(Kernel::GridSplatSorted, &c, &params, Splat::SORTED);
    assert!(
        count.total() < whole_grid.total() / 4,
        "{count:?} vs {whole_grid:?}"
    );
}
