//! Rod–rod contact (`[rod_contact]`, src/cpu/rod_contact.rs): rods rest
//! on each other with their centrelines the sum of their radii apart (two
//! touching cylinders), a rod thrown at 20 m/s, ten of its diameters a
//! substep, stays on its side of another, the pulled knot of
//! scenes/knot.toml keeps its strands apart, the plectoneme keeps its
//! linking number, runs give the same bits on one thread and on two, rods
//! held into each other stop the run with the cause, and a projection
//! never carries strands through each other.

use glam::DVec3;
use strands::cpu::CpuSimulator;
use strands::cpu::contact::segment_segment;
use strands::scene::Scene;

const R: f64 = 1e-3;

/// The smallest distance between the centrelines of rods `a` and `b`.
fn centreline_distance(sim: &CpuSimulator, a: usize, b: usize) -> f64 {
    let rods = &sim.rods;
    let pos = &sim.state.pos;
    let (va, vb) = (rods.vertices(a), rods.vertices(b));
    let mut best = f64::INFINITY;
    for i in va.start..va.end - 1 {
        for j in vb.start..vb.end - 1 {
            let (s, t) = segment_segment(pos[i], pos[i + 1], pos[j], pos[j + 1]);
            let d = pos[i].lerp(pos[i + 1], s) - pos[j].lerp(pos[j + 1], t);
            best = best.min(d.length());
        }
    }
    best
}

fn scene(text: &str, contact: bool) -> Scene {
    let table = if contact {
        "\n[rod_contact]\ngroups = [\"default\"]\nmargin = 0.0\n"
    } else {
        ""
    };
    Scene::parse(
        &format!("{text}{table}"),
        std::path::Path::new("rods.toml"),
        &[],
    )
    .unwrap()
}

fn simulator(scene: &Scene) -> CpuSimulator {
    let (rods, state) = scene.build();
    CpuSimulator::new(rods, state, scene.params)
}

const MATERIAL: &str = r#"
[materials.rod]
density = 1000.0
radius = 1e-3
youngs_modulus = 1e7
"#;

/// A beam at `x` along z, 10 cm between clamps, its rest shape an arc that
/// sags 5 mm (so that it can give way under a load without stretching,
/// as a rod clamped straight at its rest length cannot).
fn beam(x: f64) -> String {
    raised_beam(x, 0.0)
}

/// `beam` with its points raised by `dy` along y.
fn raised_beam(x: f64, dy: f64) -> String {
    let points: Vec<String> = (0..=20)
        .map(|i| {
            let z = -0.05 + 0.005 * i as f64;
            let y = dy - 0.005 * (1.0 - (z / 0.05) * (z / 0.05));
            format!("[{x}, {y}, {z}]")
        })
        .collect();
    format!(
        "[[rods]]\nkind = \"polyline\"\nmaterial = \"rod\"\npoints = [{}]\nstart = \"clamped\"\nend = \"clamped\"\n",
        points.join(", ")
    )
}

/// A free rod (10 cm) laid 4 mm above the lowest points of two beams
/// (`beam`) 6 cm apart, across them, falling under gravity with drag.
fn bridge(contact: bool) -> Scene {
    let text = format!(
        r#"
[sim]
dt = 0.005
drag = 0.05
{MATERIAL}
{}
{}
[[rods]]
kind = "straight"
material = "rod"
from = [-0.05, -0.001, 0.0]
to = [0.05, -0.001, 0.0]
segments = 20
"#,
        beam(-0.03),
        beam(0.03)
    );
    scene(&text, contact)
}

/// Two touching cylinders of radii r₁ and r₂ have their axes r₁ + r₂
/// apart: the rod laid across the two clamped ones settles there, on each,
/// within 1 %, and at rest; without rod contact it falls through.
#[test]
fn crossing_rods_rest_their_radii_apart() {
    let mut sim = simulator(&bridge(true));
    for _ in 0..200 {
        sim.step().unwrap();
    }
    for beam in [0, 1] {
        let d = centreline_distance(&sim, 2, beam);
        assert!(
            (d / (2.0 * R) - 1.0).abs() < 0.01,
            "rod 2 rests {d:.4e} m from rod {beam}'s centreline, not 2r = {:.1e}",
            2.0 * R
        );
    }
    let d = sim.step().unwrap();
    assert!(d.rod_contacts > 0, "no contact reported: {d:?}");
    assert!(d.max_speed < 1e-3, "not at rest: {} m/s", d.max_speed);
    assert!(
        d.rod_penetration < 0.01 * R,
        "penetration {}",
        d.rod_penetration
    );
    let mut through = simulator(&bridge(false));
    for _ in 0..40 {
        through.step().unwrap();
    }
    let below = through.state.pos[through.rods.vertices(2)][10].y;
    assert!(
        below < -0.05,
        "without rod contact the rod stays at y = {below}"
    );
}

/// A free rod thrown at 20 m/s across another free rod at rest, without
/// gravity: with 1 cm edges the explicit step limit allows a substep of
/// about 1 ms, so the rod moves some ten of its diameters a substep.
/// Continuous detection keeps it on the side it came from: at every step
/// its middle is above the other's, and no two edges ever overlap by more
/// than a tenth of their radii (the centrelines never closer than
/// 0.9 · 2r); without rod contact it passes straight through.
#[test]
fn a_rod_thrown_at_20_m_per_s_does_not_pass_through() {
    let text = format!(
        r#"
[sim]
dt = 0.001
gravity = [0.0, 0.0, 0.0]
{MATERIAL}
[[rods]]
kind = "straight"
material = "rod"
from = [-0.1, 0.0, 0.0]
to = [0.1, 0.0, 0.0]
segments = 20

[[rods]]
kind = "straight"
material = "rod"
from = [0.0, 0.05, -0.1]
to = [0.0, 0.05, 0.1]
segments = 20
velocity = [0.0, -20.0, 0.0]
"#
    );
    let middle = |sim: &CpuSimulator, r: usize| sim.state.pos[sim.rods.vertices(r)][10];
    let mut sim = simulator(&scene(&text, true));
    let step_motion = 20.0 * sim.params.h();
    assert!(
        step_motion > 8.0 * R,
        "a substep moves the rod {step_motion:.1e} m, under several diameters"
    );
    let mut contacts = 0;
    for _ in 0..20 {
        let d = sim.step().unwrap();
        contacts = contacts.max(d.rod_contacts);
        assert!(
            d.rod_penetration < 0.1 * 2.0 * R,
            "edges overlap by {:.3e} m at t = {}",
            d.rod_penetration,
            d.time
        );
        let (thrown, struck) = (middle(&sim, 1), middle(&sim, 0));
        assert!(
            thrown.y > struck.y,
            "at t = {} the thrown rod's middle is at y = {}, the other's at {}",
            d.time,
            thrown.y,
            struck.y
        );
    }
    assert!(contacts > 0, "the rods never touched");
    assert!(
        middle(&sim, 0).y < -0.05,
        "the struck rod was not carried along: y = {}",
        middle(&sim, 0).y
    );
    let mut through = simulator(&scene(&text, false));
    for _ in 0..20 {
        through.step().unwrap();
    }
    let (thrown, struck) = (middle(&through, 1), middle(&through, 0));
    assert!(
        thrown.y < struck.y - 0.1,
        "without rod contact the thrown rod ends at y = {}",
        thrown.y
    );
}

/// The smallest distance between the centrelines of two edges of rod 0
/// whose nearest ends are at least `apart` (m) from each other along the
/// rod at rest.
fn closest_approach(sim: &CpuSimulator, apart: f64) -> f64 {
    let rods = &sim.rods;
    let pos = &sim.state.pos[rods.vertices(0)];
    let len = &rods.rest_len[rods.edges(0)];
    let arc: Vec<f64> = std::iter::once(0.0)
        .chain(len.iter().scan(0.0, |s, l| {
            *s += l;
            Some(*s)
        }))
        .collect();
    let mut best = f64::INFINITY;
    for i in 0..len.len() {
        for j in i + 1..len.len() {
            if arc[j] - arc[i + 1] < apart {
                continue;
            }
            let (s, t) = segment_segment(pos[i], pos[i + 1], pos[j], pos[j + 1]);
            let d = pos[i].lerp(pos[i + 1], s) - pos[j].lerp(pos[j + 1], t);
            best = best.min(d.length());
        }
    }
    best
}

fn knot(overrides: &[&str]) -> CpuSimulator {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    let scene = Scene::load(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/knot.toml"),
        &o,
    )
    .unwrap();
    simulator(&scene)
}

/// scenes/knot.toml: an overhand knot pulled tight by its tails, then
/// twisted a full turn. Two touching strands of radius r have their axes
/// 2r apart: at every step, strands at least 1 cm apart along the rope
/// never come closer than 0.9 · 2r, and at the end they touch (the knot is
/// tied and tight: some such pair within 2r + margin + 5 %). Without rod
/// contact the rope passes through itself within the first second.
#[test]
fn the_pulled_knot_keeps_its_strands_apart() {
    let r = 1e-3;
    let mut sim = knot(&[]);
    let mut lowest = f64::INFINITY;
    for _ in 0..300 {
        sim.step().unwrap();
        lowest = lowest.min(closest_approach(&sim, 0.01));
        assert!(
            lowest >= 0.9 * 2.0 * r,
            "at t = {:.2} s strands 1 cm apart along the rope are {lowest:.3e} m apart",
            sim.state.time
        );
    }
    let end = closest_approach(&sim, 0.01);
    let touching = (2.0 * r + sim.rods.rod_contact.margin) * 1.05;
    assert!(
        end <= touching,
        "the knot is loose or untied: closest approach {end:.3e} m"
    );
    let mut through = knot(&["rod_contact.groups=[]"]);
    let mut lowest = f64::INFINITY;
    for _ in 0..100 {
        through.step().unwrap();
        lowest = lowest.min(closest_approach(&through, 0.01));
    }
    assert!(
        lowest < 0.5 * 2.0 * r,
        "without rod contact the strands keep {lowest:.3e} m apart"
    );
}

/// Rod–rod contact's broad phase sorts, its detection keeps the pairs'
/// order and its sweeps run in that order: the knot gives the same bits on
/// one thread and on two.
#[test]
fn rod_contact_gives_the_same_bits_on_one_thread_and_two() {
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let mut sim = knot(&[]);
            for _ in 0..40 {
                sim.step().unwrap();
            }
            (sim.state.pos.clone(), sim.state.theta.clone())
        })
    };
    let (one, two) = (run(1), run(2));
    assert!(
        one.0
            .iter()
            .zip(&two.0)
            .all(|(a, b)| a.to_array().map(f64::to_bits) == b.to_array().map(f64::to_bits)),
        "positions differ between one thread and two"
    );
    assert!(
        one.1
            .iter()
            .zip(&two.1)
            .all(|(a, b)| a.to_bits() == b.to_bits()),
        "twist angles differ between one thread and two"
    );
    assert!(
        knot(&[]).step().unwrap().rod_contacts == 0,
        "the knot starts with its strands apart"
    );
}

/// The writhe of the polygon `p` (Klenin and Langowski 2000: each pair of
/// non-adjacent segments adds the solid angle it subtends, twice, over 4π).
fn writhe(p: &[DVec3]) -> f64 {
    let unit = |v: DVec3| v.normalize_or_zero();
    let omega = |p1: DVec3, p2: DVec3, p3: DVec3, p4: DVec3| {
        let (r13, r14, r23, r24) = (p3 - p1, p4 - p1, p3 - p2, p4 - p2);
        let n = [
            unit(r13.cross(r14)),
            unit(r14.cross(r24)),
            unit(r24.cross(r23)),
            unit(r23.cross(r13)),
        ];
        let o: f64 = (0..4)
            .map(|k| n[k].dot(n[(k + 1) % 4]).clamp(-1.0, 1.0).asin())
            .sum();
        o * (p4 - p3).cross(p2 - p1).dot(r13).signum()
    };
    let mut w = 0.0;
    for i in 0..p.len() - 1 {
        for j in i + 2..p.len() - 1 {
            w += 2.0 * omega(p[i], p[i + 1], p[j], p[j + 1]);
        }
    }
    w / (4.0 * std::f64::consts::PI)
}

/// Rod 0's linking number Tw + Wr, its ends carried 100 m further along x
/// (both clamps hold their edges along x, so this closes the rod at
/// infinity without adding writhe): the twist from the angles against the
/// Bishop frame, which itself does not twist (θ at the last edge minus θ
/// at the first, over 2π).
fn linking_number(sim: &CpuSimulator) -> (f64, f64) {
    let pos = &sim.state.pos[sim.rods.vertices(0)];
    let theta = &sim.state.theta[sim.rods.edges(0)];
    let far = DVec3::new(100.0, 0.0, 0.0);
    let mut closed = vec![pos[0] - far];
    closed.extend_from_slice(pos);
    closed.push(pos[pos.len() - 1] + far);
    let twist = (theta[theta.len() - 1] - theta[0]) / std::f64::consts::TAU;
    let wr = writhe(&closed);
    (twist + wr, wr)
}

fn plectoneme(overrides: &[&str]) -> CpuSimulator {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    let scene = Scene::load(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/plectoneme.toml"),
        &o,
    )
    .unwrap();
    simulator(&scene)
}

/// scenes/plectoneme.toml: a rod with slack whose clamp turns ten turns
/// coils into a plectoneme. Its linking number Lk = Tw + Wr (Călugăreanu,
/// White) is the clamp's turns at every step, within 0.01 (it changes
/// only when the rod passes through itself, by ±2), while the coils take
/// up more than two turns as writhe; without rod contact the rod passes
/// through itself and ends with Lk off by 2 or more.
#[test]
fn the_plectoneme_keeps_the_linking_number_its_clamp_imposed() {
    let turns =
        |sim: &CpuSimulator| sim.rods.anchors[1].sample(sim.state.time).1.x / std::f64::consts::TAU;
    let mut sim = plectoneme(&[]);
    let mut contacts = 0;
    for step in 1..=350 {
        let d = sim.step().unwrap();
        contacts = contacts.max(d.rod_contacts);
        if step % 10 == 0 {
            let (lk, _) = linking_number(&sim);
            assert!(
                (lk - turns(&sim)).abs() < 0.01,
                "at t = {:.2} s Lk = {lk:.4}, the clamp has turned {:.4} turns",
                sim.state.time,
                turns(&sim)
            );
        }
    }
    assert!((turns(&sim) - 10.0).abs() < 1e-9);
    let (_, wr) = linking_number(&sim);
    assert!(wr > 2.0, "no plectoneme: writhe {wr:.3}");
    assert!(contacts > 0, "the coils never touched");
    let mut through = plectoneme(&["rod_contact.groups=[]"]);
    for _ in 0..350 {
        through.step().unwrap();
    }
    let (lk, _) = linking_number(&through);
    assert!(
        (lk - 10.0).abs() > 1.9,
        "without rod contact Lk = {lk:.4} stayed at the clamp's 10 turns"
    );
}

/// Two rods clamped at both ends, crossing with their centrelines 1.5 mm
/// apart, less than 2r: straight at their rest length, neither can give
/// way sideways without stretching, so no positions keep both the lengths
/// and the contact, and the run stops saying which rods and edges and by
/// how much (rather than run on with the strands in each other); with one
/// of them the sagging arc of `beam`, it gives way and they settle 2r
/// apart, within 1 %.
#[test]
fn rods_held_into_each_other_stop_the_run_with_the_cause() {
    let crossing = |first: String| {
        let text = format!(
            r#"
[sim]
dt = 0.002
drag = 0.05
gravity = [0.0, 0.0, 0.0]
{MATERIAL}
{first}
[[rods]]
kind = "straight"
material = "rod"
from = [-0.05, 0.0015, 0.0]
to = [0.05, 0.0015, 0.0]
segments = 20
start = "clamped"
end = "clamped"
"#
        );
        simulator(&scene(&text, true))
    };
    let taut = "[[rods]]\nkind = \"straight\"\nmaterial = \"rod\"\nfrom = [0.0, 0.0, -0.05]\nto = [0.0, 0.0, 0.05]\nsegments = 20\nstart = \"clamped\"\nend = \"clamped\"\n";
    let mut sim = crossing(taut.to_string());
    let stop = (0..50)
        .find_map(|_| sim.step().err())
        .expect("the taut rods ran on with their strands in each other");
    assert_eq!(stop.cause, strands::cpu::Cause::RodContact, "{stop}");
    let text = stop.to_string();
    for part in ["rod 0", "rod–rod contact", "rod 1", "raise sim.substeps"] {
        assert!(text.contains(part), "{part:?} missing from: {text}");
    }
    // They cross at vertex 10 of each: the edges on either side of it.
    assert!(
        text.contains("edge 9") || text.contains("edge 10"),
        "the crossing's edges missing from: {text}"
    );
    // Raised by its 5 mm sag, the beam's middle is at y = 0, 1.5 mm below
    // the taut rod's centreline.
    let mut sim = crossing(raised_beam(0.0, 0.005));
    for _ in 0..100 {
        sim.step().unwrap();
    }
    let d = centreline_distance(&sim, 0, 1);
    assert!(
        (d / (2.0 * R) - 1.0).abs() < 0.01,
        "the bent rods settle {d:.4e} m apart, not 2r"
    );
}

/// Contact is detected anew after each projection of the rounds, over the
/// substep's whole path: a projection that carries an edge through
/// another is caught on the side it came from. Through the library (the
/// scene format refuses rod contact with an implicit integrator), the
/// knot under backward Euler at one step of 10 ms, whose Newton steps
/// leave the projection millimetres to restore, keeps strands 1 cm apart
/// along the rope at 0.9 · 2r or more at every step until, within 40
/// steps, it stops with its cause (Newton unconverged at 0.38 s); detected
/// only before the projection, it would pass through itself by 0.24 s.
#[test]
fn a_projection_does_not_carry_strands_through_each_other() {
    let r = 1e-3;
    let scene = Scene::load(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/knot.toml"),
        &[],
    )
    .unwrap();
    let (rods, state) = scene.build();
    let params = strands::model::params::SimParams {
        integrator: strands::model::params::Integrator::BackwardEuler,
        substeps: 1,
        ..scene.params
    };
    let mut sim = CpuSimulator::new(rods, state, params);
    let mut steps = 0;
    while steps < 40 {
        match sim.step() {
            Ok(_) => steps += 1,
            Err(stop) => {
                let cause = stop.cause;
                assert!(
                    matches!(
                        cause,
                        strands::cpu::Cause::Newton | strands::cpu::Cause::RodContact
                    ),
                    "{stop}"
                );
                break;
            }
        }
        let gap = closest_approach(&sim, 0.01);
        assert!(
            gap >= 0.9 * 2.0 * r,
            "step {steps}: strands 1 cm apart along the rope are {gap:.3e} m apart"
        );
    }
    assert!(
        (30..40).contains(&steps),
        "{steps} steps: it should run 30 and stop before 40"
    );
}
