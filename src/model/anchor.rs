//! Scripted rigid frames that clamped rod ends follow (a head, a hand, the ground).
//!
//! An anchor has a pivot point and keyframes of (time, translation, rotation
//! vector). Between keyframes translation and the rotation vector (axis × angle)
//! are interpolated linearly, so a rotation of several turns about a fixed axis
//! is represented exactly (a quaternion slerp would take the short way round).
//! Before the first keyframe the first pose holds, after the last the last pose.
//! A point `p` attached at time 0 moves to `pivot + T(t) + R(t) R(0)⁻¹ (p − pivot − T(0))`.
//!
//! # Driving an anchor from an engine
//!
//! An engine that moves a head on its own clock does not script keyframes
//! ahead of time; each frame it says where the head will be at the end of
//! the frame: [`Anchor::set_pose`] (simulation time `now`, target time
//! `t_target`, pose). The anchor then holds two samples, its pose at `now`
//! (whatever it was: scripted, driven or held) and the new one at
//! `t_target`, and every substep in between sees the keyframe rule above:
//! translation and rotation vector interpolated linearly in time. After
//! `t_target` the pose holds until the next sample. A driven run whose
//! samples equal a script's keyframes is therefore the scripted run.
//! Both simulators read poses only through [`Anchor::pose`], so a driven
//! anchor drives the CPU reference and the GPU simulator alike.
//!
//! A jump (a cut in the game, a respawn) is [`teleport`]: every rod clamped
//! to the anchor moves rigidly with it, so the next substep sees no jump
//! and the strands get no spurious velocity.
//!
//! [`teleport`]: crate::model::rods::teleport

use glam::{DQuat, DVec3};

/// One pose of an anchor's script.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Keyframe {
    /// Time (s).
    pub t: f64,
    /// Translation of the pivot (m).
    pub translation: DVec3,
    /// Rotation vector: axis times angle (rad), about the pivot.
    pub rotation: DVec3,
}

impl Keyframe {
    /// The keyframe at time `t` (s) with `translation` (m) and `rotation`
    /// (rotation vector, rad).
    pub fn new(t: f64, translation: DVec3, rotation: DVec3) -> Self {
        Keyframe {
            t,
            translation,
            rotation,
        }
    }
}

/// A rigid frame that clamped rod ends (and colliders) follow: scripted by
/// keyframes, or driven sample by sample ([`Anchor::set_pose`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Anchor {
    /// Name the scene gives it (`[anchors.NAME]`; `world` is index 0).
    pub name: String,
    /// Point the rotation turns about, at rest (m).
    pub pivot: DVec3,
    /// Sorted by strictly increasing time; may be empty (a fixed frame).
    pub keyframes: Vec<Keyframe>,
}

/// A rigid transform `x ↦ pivot + translation + rotation (x − pivot)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pose {
    /// The anchor's pivot at rest (m).
    pub pivot: DVec3,
    /// Translation of the pivot (m).
    pub translation: DVec3,
    /// Rotation about the pivot.
    pub rotation: DQuat,
}

impl Pose {
    /// Where a point given in rest coordinates is.
    pub fn point(&self, p: DVec3) -> DVec3 {
        self.pivot + self.translation + self.rotation * (p - self.pivot)
    }
    /// A direction given in rest coordinates, turned.
    pub fn vector(&self, v: DVec3) -> DVec3 {
        self.rotation * v
    }
    /// The rest coordinates of a point (`point` undone).
    pub fn inverse_point(&self, x: DVec3) -> DVec3 {
        self.pivot + self.rotation.inverse() * (x - self.pivot - self.translation)
    }
    /// The rest coordinates of a direction (`vector` undone).
    pub fn inverse_vector(&self, v: DVec3) -> DVec3 {
        self.rotation.inverse() * v
    }
    /// Where the pivot is (m).
    pub fn offset(&self) -> DVec3 {
        self.pivot + self.translation
    }
}

impl Anchor {
    /// The fixed world frame.
    pub fn world() -> Self {
        Anchor {
            name: "world".into(),
            pivot: DVec3::ZERO,
            keyframes: Vec::new(),
        }
    }

    /// Whether any keyframe turns the anchor.
    pub fn rotates(&self) -> bool {
        self.keyframes.iter().any(|k| k.rotation != DVec3::ZERO)
    }

    /// Translation and rotation vector at time `t`.
    pub fn sample(&self, t: f64) -> (DVec3, DVec3) {
        let k = &self.keyframes;
        match k.len() {
            0 => (DVec3::ZERO, DVec3::ZERO),
            _ if t <= k[0].t => (k[0].translation, k[0].rotation),
            n if t >= k[n - 1].t => (k[n - 1].translation, k[n - 1].rotation),
            _ => {
                let i = k.partition_point(|f| f.t <= t) - 1;
                let (a, b) = (&k[i], &k[i + 1]);
                let s = (t - a.t) / (b.t - a.t);
                (
                    a.translation.lerp(b.translation, s),
                    a.rotation.lerp(b.rotation, s),
                )
            }
        }
    }

    /// The anchor's pose at time `t` (s).
    pub fn pose(&self, t: f64) -> Pose {
        let (translation, rv) = self.sample(t);
        Pose {
            pivot: self.pivot,
            translation,
            rotation: DQuat::from_scaled_axis(rv),
        }
    }

    /// Drive the anchor: at time `t_target` (s) its pivot is translated by
    /// `translation` (m) and it is turned by the rotation vector `rotation`
    /// (axis × angle, rad, about the pivot). `now` is the simulation's
    /// current time (`State::time`): between `now` and `t_target` the pose
    /// goes from its pose at `now` to the new one by the keyframe rule
    /// (translation and rotation vector linear in time, see the module
    /// documentation); after `t_target` it holds. Keyframes after `now`
    /// are dropped (the caller has taken over) and so are those before it
    /// (the simulation never looks back), so a driven anchor keeps two.
    ///
    /// Errors: `t_target` not after `now`, or a value not finite.
    pub fn set_pose(
        &mut self,
        now: f64,
        t_target: f64,
        translation: DVec3,
        rotation: DVec3,
    ) -> Result<(), AnchorError> {
        if !(now.is_finite() && t_target.is_finite()) {
            return Err(AnchorError::NotFinite {
                anchor: self.name.clone(),
                what: format!("time {t_target} (now {now})"),
            });
        }
        if !(translation.is_finite() && rotation.is_finite()) {
            return Err(AnchorError::NotFinite {
                anchor: self.name.clone(),
                what: format!("pose: translation {translation}, rotation {rotation}"),
            });
        }
        if t_target <= now {
            return Err(AnchorError::NotAfterNow {
                anchor: self.name.clone(),
                t_target,
                now,
            });
        }
        let (t0, r0) = self.sample(now);
        self.keyframes = vec![
            Keyframe::new(now, t0, r0),
            Keyframe::new(t_target, translation, rotation),
        ];
        Ok(())
    }

    /// [`Anchor::set_pose`] with the rotation as a quaternion, as engines
    /// keep it. Of the rotation vectors that give `rotation` (one axis,
    /// angles 2π apart), the one nearest the anchor's rotation vector at
    /// `now` is taken, so a head turning steadily past 180° keeps turning
    /// the same way instead of being interpolated back the short way.
    pub fn set_pose_quat(
        &mut self,
        now: f64,
        t_target: f64,
        translation: DVec3,
        rotation: DQuat,
    ) -> Result<(), AnchorError> {
        let previous = self.sample(now).1;
        self.set_pose(
            now,
            t_target,
            translation,
            nearest_rotation_vector(rotation, previous),
        )
    }

    /// Hold `translation` and rotation vector `rotation` from now on, with
    /// no interpolation from the pose before (a cut). Used by [`teleport`],
    /// which also moves the rods; alone it makes clamped ends jump.
    ///
    /// [`teleport`]: crate::model::rods::teleport
    pub fn reset(&mut self, now: f64, translation: DVec3, rotation: DVec3) {
        self.keyframes = vec![Keyframe::new(now, translation, rotation)];
    }
}

/// The rotation vector of `q` nearest `previous`: `axis · (angle + 2πk)`
/// with `k` chosen so that it lies closest to `previous` (for the identity,
/// the whole turns along `previous`).
pub fn nearest_rotation_vector(q: DQuat, previous: DVec3) -> DVec3 {
    let tau = std::f64::consts::TAU;
    let q = if q.w < 0.0 { -q } else { q }.normalize();
    let (axis, angle) = q.to_axis_angle();
    if angle.abs() < 1e-300 || !axis.is_finite() {
        let len = previous.length();
        let k = (len / tau).round();
        return if k == 0.0 {
            DVec3::ZERO
        } else {
            previous / len * (k * tau)
        };
    }
    let k = ((axis.dot(previous) - angle) / tau).round();
    axis * (angle + k * tau)
}

/// What is wrong with an anchor's new pose.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum AnchorError {
    /// A pose set for a time that is not after the simulation's.
    #[error(
        "anchor `{anchor}`: a pose was set for t = {t_target} s, not after the simulation's time {now} s; a pose takes effect over the coming substeps (to jump, teleport the anchor)"
    )]
    NotAfterNow {
        /// The anchor's name.
        anchor: String,
        /// The time asked (s).
        t_target: f64,
        /// The simulation's time (s).
        now: f64,
    },
    /// A NaN or infinite time or pose.
    #[error("anchor `{anchor}`: {what} is not finite")]
    NotFinite {
        /// The anchor's name.
        anchor: String,
        /// What was not finite.
        what: String,
    },
    /// No anchor has this index.
    #[error("there is no anchor {index} (the scene has {count})")]
    NoSuchAnchor {
        /// The index asked.
        index: usize,
        /// How many anchors there are.
        count: usize,
    },
    /// A rod clamped to the teleported anchor at one end and another
    /// anchor at the other cannot move rigidly with either.
    #[error(
        "rod {rod} (`{name}`) is clamped to anchor `{anchor}` and to anchor `{other}`; teleporting one would tear it (teleport both anchors' rods by moving `{other}` with `{anchor}` in one call, or free the rod)"
    )]
    SharedRod {
        /// The rod.
        rod: usize,
        /// Its name.
        name: String,
        /// The anchor teleported.
        anchor: String,
        /// The rod's other anchor.
        other: String,
    },
    /// The world frame (anchor 0) cannot be moved.
    #[error("anchor 0 is the fixed world frame; it cannot be moved")]
    World,
    /// A keyframe with a time or vector that is not finite, or out of order.
    #[error("keyframe {index}: {what}")]
    BadKeyframe {
        /// The keyframe's index.
        index: usize,
        /// What is wrong with it.
        what: String,
    },
}

/// Check keyframes as `Anchor` needs them: finite, strictly increasing times.
pub fn check_keyframes(keyframes: &[Keyframe]) -> Result<(), AnchorError> {
    for (index, k) in keyframes.iter().enumerate() {
        let bad = |what: String| Err(AnchorError::BadKeyframe { index, what });
        if !k.t.is_finite() || !k.translation.is_finite() || !k.rotation.is_finite() {
            return bad(format!(
                "time {}, translation {}, rotation {}: not all finite",
                k.t, k.translation, k.rotation
            ));
        }
        if index > 0 && k.t <= keyframes[index - 1].t {
            return bad(format!(
                "time {} s is not after the previous keyframe's {} s",
                k.t,
                keyframes[index - 1].t
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Linear interpolation of the rotation vector keeps full turns: halfway
    /// through a 720° keyframe about z the frame has turned 360° (identity).
    #[test]
    fn multi_turn_rotation_is_interpolated_linearly() {
        let a = Anchor {
            name: "a".into(),
            pivot: DVec3::ZERO,
            keyframes: vec![
                Keyframe::new(0.0, DVec3::ZERO, DVec3::ZERO),
                Keyframe::new(
                    2.0,
                    DVec3::new(2.0, 0.0, 0.0),
                    DVec3::Z * 4.0 * std::f64::consts::PI,
                ),
            ],
        };
        let p = a.pose(1.0);
        assert!((p.point(DVec3::X) - DVec3::new(2.0, 0.0, 0.0)).length() < 1e-12);
        let q = a.pose(0.25); // 90°
        assert!((q.vector(DVec3::X) - DVec3::Y).length() < 1e-12);
        assert_eq!(a.pose(5.0).translation, DVec3::new(2.0, 0.0, 0.0));
    }
}
