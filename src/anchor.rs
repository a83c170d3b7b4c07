//! Scripted rigid frames that clamped rod ends follow (a head, a hand, the ground).
//!
//! An anchor has a pivot point and keyframes of (time, translation, rotation
//! vector). Between keyframes translation and the rotation vector (axis × angle)
//! are interpolated linearly, so a rotation of several turns about a fixed axis
//! is represented exactly (a quaternion slerp would take the short way round).
//! Before the first keyframe the first pose holds, after the last the last pose.
//! A point `p` attached at time 0 moves to `pivot + T(t) + R(t) R(0)⁻¹ (p − pivot − T(0))`.

use glam::{DQuat, DVec3};

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
    pub fn new(t: f64, translation: DVec3, rotation: DVec3) -> Self {
        Keyframe {
            t,
            translation,
            rotation,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Anchor {
    pub name: String,
    pub pivot: DVec3,
    /// Sorted by strictly increasing time; may be empty (a fixed frame).
    pub keyframes: Vec<Keyframe>,
}

/// A rigid transform `x ↦ pivot + translation + rotation (x − pivot)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pose {
    pub pivot: DVec3,
    pub translation: DVec3,
    pub rotation: DQuat,
}

impl Pose {
    pub fn point(&self, p: DVec3) -> DVec3 {
        self.pivot + self.translation + self.rotation * (p - self.pivot)
    }
    pub fn vector(&self, v: DVec3) -> DVec3 {
        self.rotation * v
    }
    pub fn inverse_point(&self, x: DVec3) -> DVec3 {
        self.pivot + self.rotation.inverse() * (x - self.pivot - self.translation)
    }
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
}

/// An anchor or keyframes that the library refuses.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AnchorError {
    /// No anchor has this index.
    #[error("no anchor {anchor}: there are {count} (index 0 is the world)")]
    NoSuchAnchor { anchor: usize, count: usize },
    /// A keyframe with a time or vector that is not finite, or out of order.
    #[error("keyframe {index}: {what}")]
    BadKeyframe { index: usize, what: String },
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
