//! Scene generators build the geometry they promise: hair roots on the scalp
//! sphere along its normals, helices of the stated radius and pitch, grass
//! standing on its patch, and rest shapes that are equilibria of the rods made.

use glam::DVec3;
use std::path::Path;
use strands::build::EndSpec;
use strands::scene::Scene;

fn parse(text: &str) -> Scene {
    Scene::parse(text, Path::new("gen.toml"), &[]).unwrap_or_else(|e| panic!("{e}"))
}

const MATERIAL: &str =
    "[materials.m]\nbending_stiffness = 1e-3\ntwist_stiffness = 1e-3\nmass_per_length = 0.01\n";

#[test]
fn scalp_roots_lie_on_the_sphere_inside_the_cap() {
    let s = parse(&format!(
        "{MATERIAL}[anchors.head]\npivot = [0, 1.6, 0]\n[[rods]]\nkind = \"scalp\"\nmaterial = \"m\"\nstart_anchor = \"head\"\ncenter = [0, 1.6, 0]\nradius = 0.1\ncount = 50\nlength = 0.3\nsegments = 6\ncap_angle = 60\nlength_variation = 0.1\n"
    ));
    assert_eq!(s.rods.len(), 50);
    let c = DVec3::new(0.0, 1.6, 0.0);
    for r in &s.rods {
        let root = r.points[0];
        assert!(
            ((root - c).length() - 0.1).abs() < 1e-12,
            "root off the sphere"
        );
        let n = (root - c).normalize();
        assert!(
            n.y >= 60f64.to_radians().cos() - 1e-12,
            "root outside the cap"
        );
        let t = (r.points[1] - r.points[0]).normalize();
        assert!(
            (t - n).length() < 1e-12,
            "straight hair starts along the normal"
        );
        let len: f64 = r.points.windows(2).map(|w| (w[1] - w[0]).length()).sum();
        assert!((0.27 - 1e-12..=0.33 + 1e-12).contains(&len), "length {len}");
        assert_eq!(
            r.start,
            EndSpec::Clamped(1),
            "roots clamped to the head anchor"
        );
        assert_eq!(r.end, EndSpec::Free);
    }
}

#[test]
fn helix_has_its_radius_and_pitch() {
    let s = parse(&format!(
        "{MATERIAL}[[rods]]\nkind = \"helix\"\nmaterial = \"m\"\ncenter = [1, 2, 3]\naxis = [0, 0, 2]\nradius = 0.05\npitch = 0.02\nturns = 3\nsegments = 60\n"
    ));
    let p = &s.rods[0].points;
    assert_eq!(p.len(), 61);
    for x in p {
        let d = *x - DVec3::new(1.0, 2.0, 3.0);
        assert!(
            (d.truncate().length() - 0.05).abs() < 1e-12,
            "off the helix radius"
        );
    }
    assert!(
        (p[60].z - p[0].z - 0.06).abs() < 1e-12,
        "3 turns of 0.02 m pitch"
    );
}

#[test]
fn grass_stands_on_its_patch_and_rest_is_initial() {
    let s = parse(&format!(
        "{MATERIAL}[[rods]]\nkind = \"grass\"\nmaterial = \"m\"\norigin = [-1, 0.5, -1]\nsize = [2, 2]\ncount = 40\nheight = 0.3\nsegments = 5\nlean = 20\nbend = 30\n"
    ));
    assert_eq!(s.rods.len(), 40);
    for r in &s.rods {
        let root = r.points[0];
        assert!(root.y == 0.5 && (-1.0..=1.0).contains(&root.x) && (-1.0..=1.0).contains(&root.z));
        assert!(
            r.points.iter().skip(1).all(|p| p.y > 0.5),
            "blade grows upward"
        );
        assert_eq!(r.points, r.rest);
        assert_eq!(r.start, EndSpec::Clamped(0));
    }
}

#[test]
fn straight_rest_shape_keeps_edge_lengths() {
    let s = parse(&format!(
        "{MATERIAL}[[rods]]\nkind = \"polyline\"\nmaterial = \"m\"\nrest_shape = \"straight\"\npoints = [[0,0,0],[1,0,0],[1,2,0],[3,2,0]]\n"
    ));
    let r = &s.rods[0];
    for (a, b) in r.points.windows(2).zip(r.rest.windows(2)) {
        assert!(((a[1] - a[0]).length() - (b[1] - b[0]).length()).abs() < 1e-12);
    }
    let t = (r.rest[1] - r.rest[0]).normalize();
    assert!(
        r.rest
            .windows(2)
            .all(|w| ((w[1] - w[0]).normalize() - t).length() < 1e-12)
    );
}
