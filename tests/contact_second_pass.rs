//! Contact's second pass (phase 1, after the filtered projection) is skipped
//! on a rod that phase 0 left out of contact and the projection did not move
//! (src/cpu/substep.rs `substep_finish`, shaders/substep.wgsl
//! `substep_finish_walk`). The claim that makes it exact, checked on the
//! CPU's stages: on such a rod the second pass changes nothing, no position
//! and no contact record, bit for bit; on rods in contact it does act (so
//! the check is not of an idle pass).

use glam::DVec3;
use std::path::Path;
use strands::cpu::contact::{Contact, contact, contact_edges};
use strands::cpu::substep::collider_poses;
use strands::scene::Scene;

#[test]
fn second_pass_changes_nothing_on_a_rod_out_of_contact() {
    let o = vec!["rods.0.count=60".to_string()];
    let scene = Scene::load(Path::new("scenes/hair.toml"), &o).unwrap();
    let (rods, state) = scene.build();
    let h = scene.params.h();
    let poses = collider_poses(&rods, 0.0, h);
    // Each rod swung toward the head by a different amount, so that some
    // end up inside it and some stay clear of it.
    let centre = DVec3::new(0.0, 1.6, 0.0);
    let (mut untouched, mut touched) = (0, 0);
    for r in 0..rods.rod_count() {
        let vs = rods.vertices(r);
        let s = 0.06 * (r % 7) as f64;
        let mut pos: Vec<DVec3> = state.pos[vs.clone()]
            .iter()
            .map(|&x| x + (centre - x) * s)
            .collect();
        let vel: Vec<DVec3> = state.vel[vs.clone()].to_vec();
        let pos_unc = pos.clone();
        let inv_mass = &rods.inv_mass[vs.clone()];
        let radius = rods.material[r].radius;
        let mut contacts = vec![Contact::default(); pos.len()];
        let pass = |phase, pos: &mut Vec<DVec3>, contacts: &mut Vec<Contact>| {
            contact(
                &rods.colliders,
                &poses,
                radius,
                inv_mass,
                phase,
                h,
                pos,
                &pos_unc,
                &vel,
                contacts,
            );
            for parity in [0, 1] {
                contact_edges(
                    &rods.colliders,
                    &poses,
                    radius,
                    inv_mass,
                    phase,
                    h,
                    parity,
                    pos,
                    &pos_unc,
                    &vel,
                    contacts,
                );
            }
        };
        let before = pos.clone();
        pass(0, &mut pos, &mut contacts);
        let in_contact = contacts.iter().any(|c| c.depth != 0.0);
        assert_eq!(
            in_contact,
            pos != before,
            "rod {r}: phase 0 moved it exactly when it recorded a contact"
        );
        let (after_0, contacts_0) = (pos.clone(), contacts.clone());
        pass(1, &mut pos, &mut contacts);
        if in_contact {
            touched += 1;
        } else {
            untouched += 1;
            assert_eq!(
                pos, after_0,
                "rod {r}: the second pass moved a rod out of contact"
            );
            assert_eq!(
                contacts, contacts_0,
                "rod {r}: the second pass recorded a contact"
            );
        }
    }
    eprintln!("{touched} rods in contact, {untouched} clear");
    assert!(
        touched > 5 && untouched > 5,
        "{touched} in contact, {untouched} clear"
    );
}
