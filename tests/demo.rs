//! `strands demo`: the offscreen screenshot shows hair on the head and
//! follows the head when it moves; the real window opens under Xvfb, renders
//! frames and exits; bad arguments are refused.

use std::path::{Path, PathBuf};
use std::process::Command;

fn strands() -> Command {
    Command::new(env!("CARGO_BIN_EXE_strands"))
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("strands-demo-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn shot(path: &Path, extra: &[&str]) -> image::RgbaImage {
    let o = strands()
        .args([
            "demo",
            "--frames",
            "40",
            "--size",
            "320x180",
            "--screenshot",
        ])
        .arg(path)
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    image::open(path).unwrap().to_rgba8()
}

/// Hair pixels: brown, with blue under 65 % of red, unlike the blue-grey
/// background and the skin-coloured head (blue ≈ 80 % of red, lit or in
/// shadow; `screenshot_of_a_nearly_bald_head_has_little_hair` checks it).
fn is_hair(p: &image::Rgba<u8>) -> bool {
    let [r, g, b, _] = p.0.map(|c| c as i32);
    r >= g && g >= b && r < 200 && r > 12 && 100 * b < 65 * r
}

/// Column centroid of the hair pixels and how many there are.
fn hair(img: &image::RgbaImage) -> (f64, usize) {
    let (mut sum, mut n) = (0.0, 0);
    for (x, _, p) in img.enumerate_pixels() {
        if is_hair(p) {
            sum += x as f64;
            n += 1;
        }
    }
    (sum / n.max(1) as f64, n)
}

/// The default camera looks at the head: the centre of the image is head
/// or hair, hair covers a good part of it, and the corners show background.
#[test]
fn screenshot_shows_hair_on_the_head() {
    let img = shot(&tmp("still.png"), &[]);
    let (w, h) = img.dimensions();
    let (cx, n) = hair(&img);
    assert!(n > (w * h / 50) as usize, "only {n} hair pixels");
    assert!(
        (cx - w as f64 / 2.0).abs() < w as f64 / 4.0,
        "hair centred at x = {cx}"
    );
    let centre = img.get_pixel(w / 2, h / 2);
    let background = img.get_pixel(1, 1);
    assert_ne!(centre, background, "nothing drawn at the centre");
    for (x, y) in [(1, 1), (w - 2, 1)] {
        assert!(
            !is_hair(img.get_pixel(x, y)),
            "hair in the corner ({x}, {y})"
        );
    }
}

/// The hair classifier does not count the head: the same head with 8
/// strands instead of 600 has a tenth of the "hair" pixels or fewer.
#[test]
fn screenshot_of_a_nearly_bald_head_has_little_hair() {
    let (_, full) = hair(&shot(&tmp("full.png"), &[]));
    let path = tmp("bald.png");
    let o = strands()
        .args([
            "demo",
            concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/hair.toml"),
        ])
        .args([
            "--set",
            "rods.0.count=8",
            "--set",
            "anchors.head.keyframes=[{ t = 0.0 }]",
        ])
        .args(["--frames", "40", "--size", "320x180", "--screenshot"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (_, bald) = hair(&image::open(&path).unwrap().to_rgba8());
    assert!(
        bald * 10 < full,
        "{bald} hair pixels with 8 strands, {full} with 600"
    );
}

/// Skin-coloured pixels (the colliders' colour): red over green over blue,
/// blue between 65 % and 95 % of red, not the blue-grey background.
fn is_skin(p: &image::Rgba<u8>) -> bool {
    let [r, g, b, _] = p.0.map(|c| c as i32);
    r > g && g > b && r > 60 && 100 * b >= 65 * r && 100 * b < 95 * r
}

/// The colliders are drawn: the built-in hair scene's shoulders (a capsule
/// below the head) fill part of the bottom quarter of the default view in
/// skin colour; with the scene's colliders removed nothing skin-coloured is
/// drawn there (only the head sphere under the roots).
#[test]
fn screenshot_draws_the_shoulders() {
    let skin_below = |img: &image::RgbaImage| {
        let h = img.height();
        img.enumerate_pixels()
            .filter(|(_, y, p)| *y > 3 * h / 4 && is_skin(p))
            .count()
    };
    let scene = concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/hair.toml");
    let still = "anchors.head.keyframes=[{ t = 0.0 }]";
    let with = shot(&tmp("body.png"), &[scene, "--set", still]);
    let without = shot(
        &tmp("nobody.png"),
        &[scene, "--set", still, "--set", "colliders=[]"],
    );
    let (a, b) = (skin_below(&with), skin_below(&without));
    let quarter = (with.width() * with.height() / 4) as usize;
    assert!(
        a > quarter / 10,
        "{a} skin pixels below the head with colliders"
    );
    assert!(
        b * 10 < a,
        "{b} skin pixels below the head without colliders, {a} with"
    );
}

/// Moving the head 15 cm to +x (screen right for the default camera) and
/// turning it 60° moves the hair: many pixels change and the hair's
/// centroid moves right.
#[test]
fn moving_the_head_changes_the_picture() {
    let still = shot(&tmp("a.png"), &[]);
    let moved = shot(
        &tmp("b.png"),
        &["--head-offset", "0.15,0,0", "--head-turn", "60"],
    );
    let changed = still
        .pixels()
        .zip(moved.pixels())
        .filter(|(a, b)| a.0.iter().zip(b.0).any(|(x, y)| x.abs_diff(y) > 24))
        .count();
    let total = (still.width() * still.height()) as usize;
    assert!(
        changed > total / 20,
        "only {changed} of {total} pixels changed"
    );
    let (a, _) = hair(&still);
    let (b, _) = hair(&moved);
    assert!(
        b > a + 10.0,
        "hair centroid moved from x = {a:.0} to {b:.0}"
    );
}

/// Run the demo window under Xvfb (a virtual X display) with `args`.
fn xvfb_demo(args: &[&str]) -> std::process::Output {
    let xvfb = Command::new("xvfb-run").arg("--help").output();
    assert!(
        xvfb.is_ok(),
        "the window test needs Xvfb: apt-get install xvfb xauth (as .ci/run does)"
    );
    Command::new("timeout")
        .args(["300", "xvfb-run", "-a", "-s", "-screen 0 1280x800x24"])
        .arg(env!("CARGO_BIN_EXE_strands"))
        .arg("demo")
        .args(args)
        .output()
        .unwrap()
}

/// The real window: opens, renders 30 frames of the simulation through the
/// swapchain, exits cleanly.
#[test]
fn window_opens_renders_and_exits_under_xvfb() {
    let o = xvfb_demo(&["--start", "grass", "--exit-after-frames", "30"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains("demo: GPU "), "{stderr}");
    assert!(
        presented(&stderr) > 0,
        "no frame reached the window: {stderr}"
    );
}

/// Frames presented, from the demo's closing line.
fn presented(stderr: &str) -> u64 {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("demo: presented "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no 'presented' line: {stderr}"))
}

/// Resizing (down to 1×1) and a minimise request and restore while the
/// simulation runs do not crash the demo, and it keeps presenting frames.
/// (Xvfb without a window manager ignores the minimise; the zero-size path
/// is not reached here.)
#[test]
fn window_survives_resize_and_minimise() {
    let o = xvfb_demo(&["--exit-after-frames", "70", "--exercise-window"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    for size in ["320x200", "1x1", "900x500"] {
        assert!(
            stderr.contains(&format!("resized to {size}")),
            "no resize to {size}: {stderr}"
        );
    }
}

#[test]
fn bad_demo_arguments_are_refused() {
    for (args, says) in [
        (vec!["--start", "fur"], "hair, curly and grass"),
        (
            vec!["--screenshot", "x.png", "--size", "0x10"],
            "WIDTHxHEIGHT",
        ),
        (vec!["--head-turn", "30"], "--screenshot"),
        (vec!["scenes/twist.toml", "--start", "grass"], "built-in"),
        (vec!["--size", "100x100"], "--screenshot"),
        (
            vec!["--screenshot", "x.png", "--exit-after-frames", "3"],
            "window",
        ),
    ] {
        let o = strands().arg("demo").args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

/// Any scene file: a single twisted cable (no head, no ground) is framed by
/// the camera and drawn — the image is not just background.
#[test]
fn scene_file_screenshot_draws_the_rod() {
    let path = tmp("twist.png");
    let o = strands()
        .args([
            "demo",
            concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/twist.toml"),
        ])
        .args(["--frames", "20", "--size", "320x180", "--screenshot"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let img = image::open(&path).unwrap().to_rgba8();
    let background = *img.get_pixel(0, 0);
    let drawn = img.pixels().filter(|p| **p != background).count();
    assert!(
        drawn > 200,
        "only {drawn} pixels differ from the background"
    );
}

/// The cable scene in the demo: statics on the CPU reference, drawn from
/// the GPU simulator's buffers. A right-button drag of 10 cm moves the
/// handle, and so the cable's clamped end, by 10 cm within the steps the
/// drag speed allows (2 m/s: 3 steps of 1/60 s), and the drawn state is
/// the CPU reference's, to f32.
#[test]
fn dragging_the_handle_moves_the_cable_in_the_demo() {
    use glam::DVec3;
    let ctx = strands::gpu::GpuContext::headless().expect("a GPU adapter (lavapipe in CI)");
    let scene = strands::demo::scene_file(
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/cable.toml")),
        // Without the script, so that only the drag moves the handle.
        &["anchors.handle.keyframes=[{ t = 0.0 }]".into()],
    )
    .unwrap();
    let mut world = strands::demo::World::new(&ctx, &scene).unwrap();
    assert!(world.on_cpu() && world.has_control());
    let tip = |w: &strands::demo::World| *w.sim.read_state().pos.last().unwrap();
    let still = strands::demo::HeadInput::default();
    world.step(still, false);
    let before = tip(&world);
    world.drag(DVec3::new(0.0, 0.1, 0.0));
    for _ in 0..3 {
        world.step(still, false);
    }
    assert!(world.stopped.is_none(), "{:?}", world.stopped);
    let moved = tip(&world) - before;
    assert!(
        (moved - DVec3::new(0.0, 0.1, 0.0)).length() < 1e-5,
        "the end moved by {moved}"
    );
}
