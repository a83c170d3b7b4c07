//! `strands demo`: the GPU simulation live in a window (winit + wgpu), drawn
//! straight from the simulation's buffers, or one offscreen image
//! (`--screenshot`). The head (the first anchor that strands are clamped to)
//! is moved and turned by the user; the hair follows through its clamped
//! roots and twists when the head turns. A scene without a head whose rod
//! ends are clamped to an anchor (a cable between handles) gives that
//! handle to the user instead, dragged with the right mouse button. A scene
//! with an implicit integrator (statics, backward Euler) is simulated by
//! the CPU reference, whose state is written into the GPU simulator's
//! buffers each step for drawing.

pub mod render;
pub mod screenshot;
pub mod window;

use anyhow::{Context, Result};
use glam::{DMat4, DQuat, DVec3, Mat4, Vec3};

use crate::build::EndSpec;
use crate::cpu::CpuSimulator;
use crate::gpu::{GpuContext, GpuSimulator};
use crate::model::anchor::{Anchor, Keyframe};
use crate::model::colliders::Shape;
use crate::model::params::SimParams;
use crate::model::params::Wind;
use crate::model::rods::RodSet;
use crate::scene::Scene;
use render::{Look, MeshPose, OrbitCamera};

/// A scene the demo can show.
#[derive(Clone)]
pub struct DemoScene {
    pub name: String,
    pub scene: Scene,
    pub look: Look,
}

/// The built-in scenes: straight hair (600 strands), curly hair (300), both
/// on a head the user moves (the scene files' scripted motion is removed),
/// and grass in wind (scenes/grass.toml).
pub fn builtin_scenes() -> Result<Vec<DemoScene>> {
    let still_head = |count: usize| {
        [
            "anchors.head.keyframes=[{ t = 0.0 }]".to_string(),
            format!("rods.0.count={count}"),
        ]
    };
    let parse = |text: &str, file: &str, set: &[String]| {
        Scene::parse(text, std::path::Path::new(file), set)
            .with_context(|| format!("built-in scene {file}"))
    };
    Ok(vec![
        DemoScene {
            name: "hair".into(),
            scene: parse(
                include_str!("../../scenes/hair.toml"),
                "scenes/hair.toml",
                &still_head(600),
            )?,
            look: Look::hair(),
        },
        DemoScene {
            name: "curly".into(),
            scene: parse(
                include_str!("../../scenes/curly.toml"),
                "scenes/curly.toml",
                &still_head(300),
            )?,
            look: Look::curly(),
        },
        DemoScene {
            name: "grass".into(),
            scene: parse(
                include_str!("../../scenes/grass.toml"),
                "scenes/grass.toml",
                &[],
            )?,
            look: Look::grass(),
        },
    ])
}

/// A scene file for the demo, with a look chosen from what it contains.
pub fn scene_file(path: &std::path::Path, set: &[String]) -> Result<DemoScene> {
    let scene = Scene::load(path, set).map_err(|e| e.with_override_flag("--set"))?;
    let (head, ground) = (find_head(&scene), find_ground(&scene));
    let look = if head.is_some() {
        Look::hair()
    } else if ground.is_some() {
        Look::grass()
    } else {
        // Ribbons wide enough to show the twist at the scene's scale.
        let (lo, hi) = scene.rods.iter().flat_map(|r| r.points.iter()).fold(
            (DVec3::splat(f64::MAX), DVec3::splat(f64::MIN)),
            |(lo, hi), p| (lo.min(*p), hi.max(*p)),
        );
        let size = (hi - lo).length();
        Look {
            half_width: (0.02 * size).clamp(1e-3, 0.05) as f32,
            ..Look::cable()
        }
    };
    Ok(DemoScene {
        name: path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
        scene,
        look,
    })
}

/// The head: the first non-world anchor that at least 8 strands start
/// clamped to with their roots on a sphere about its pivot, drawn as that
/// sphere: `(anchor, centre, radius)`.
pub fn find_head(scene: &Scene) -> Option<(usize, DVec3, f64)> {
    let anchor = scene.rods.iter().find_map(|r| match r.start {
        EndSpec::Clamped(a) if a > 0 => Some(a),
        _ => None,
    })?;
    let c = scene.anchors[anchor].pivot;
    let d: Vec<f64> = scene
        .rods
        .iter()
        .filter(|r| r.start == EndSpec::Clamped(anchor))
        .map(|r| (r.points[0] - c).length())
        .collect();
    let (lo, hi) = d
        .iter()
        .fold((f64::MAX, 0.0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    // At least 8 roots on a sphere about the pivot: a head (one cable
    // clamped to a moving anchor is not).
    (d.len() >= 8 && lo > 0.0 && hi < 1.2 * lo).then_some((anchor, c, 0.97 * lo))
}

/// A handle: where no head is, the first non-world anchor a rod end is
/// clamped to (a cable's handle), and its pivot.
pub fn find_handle(scene: &Scene) -> Option<(usize, DVec3)> {
    if find_head(scene).is_some() {
        return None;
    }
    scene.rods.iter().find_map(|r| {
        [r.start, r.end].into_iter().find_map(|e| match e {
            EndSpec::Clamped(a) if a > 0 => Some((a, scene.anchors[a].pivot)),
            _ => None,
        })
    })
}

/// Ground: at least 8 strands rooted in the world frame at one height over
/// an area (a field, not a single cable): `(y, min, max)`.
pub fn find_ground(scene: &Scene) -> Option<(f64, DVec3, DVec3)> {
    let roots: Vec<DVec3> = scene
        .rods
        .iter()
        .filter(|r| r.start == EndSpec::Clamped(0))
        .map(|r| r.points[0])
        .collect();
    let first = roots.first()?;
    let flat = roots.iter().all(|p| (p.y - first.y).abs() < 1e-3);
    let (lo, hi) = roots
        .iter()
        .fold((*first, *first), |(lo, hi), p| (lo.min(*p), hi.max(*p)));
    let spread = hi.x - lo.x > 0.01 && hi.z - lo.z > 0.01;
    (flat && spread && roots.len() >= 8).then_some((first.y, lo, hi))
}

/// What the user asks of the head during one step: a direction to move in
/// (each component −1, 0 or 1) and a turning direction.
#[derive(Clone, Copy, Debug, Default)]
pub struct HeadInput {
    pub movement: DVec3,
    pub turn: f64,
}

/// Head speed (m/s) and turning rate (rad/s) at full input.
pub const HEAD_SPEED: f64 = 0.4;
pub const HEAD_TURN_RATE: f64 = 1.6;
/// The fastest a mouse drag moves a handle (m/s).
pub const DRAG_SPEED: f64 = 2.0;

/// The user's control of one anchor, on top of its scripted motion.
struct Control {
    anchor: usize,
    script: Anchor,
    offset: DVec3,
    yaw: f64,
    /// Mouse drags since the last step (m), applied over the next.
    dragged: DVec3,
    /// Rotation vector of the last keyframe written, to continue from.
    last_rotation: DVec3,
}

/// Among the rotation vectors of `q` (its axis-angle form plus whole turns),
/// the one nearest `previous`, so interpolating between keyframes never
/// swings the long way round.
pub fn continue_rotation(previous: DVec3, q: DQuat) -> DVec3 {
    let rv = q.to_scaled_axis();
    let angle = rv.length();
    let axis = if angle > 1e-12 {
        rv / angle
    } else {
        previous.try_normalize().unwrap_or(DVec3::Y)
    };
    // (angle + τk)·axis for the k nearest `previous` along the axis; the
    // other representation, (τ − angle)·(−axis), is among these.
    let k = ((axis.dot(previous) - angle) / std::f64::consts::TAU).round();
    axis * (angle + std::f64::consts::TAU * k)
}

/// One running scene: the simulation, how to draw it, and the user's controls.
pub struct World {
    pub name: String,
    /// The GPU simulator: it steps the scene, or with `cpu` only holds
    /// the state for drawing.
    pub sim: GpuSimulator,
    /// The CPU reference, where the scene's integrator or its rod–rod
    /// contact runs there only.
    cpu: Option<Box<CpuSimulator>>,
    /// Why the simulation stopped, if it did (the CPU reference's error).
    pub stopped: Option<String>,
    /// A cable's handle: its pivot and the radius it is drawn with.
    pub handle: Option<(DVec3, f64)>,
    pub look: Look,
    pub head: Option<(DVec3, f64)>,
    pub ground: Option<(f64, DVec3, DVec3)>,
    /// Bounding box of the initial vertex positions.
    pub bounds: (DVec3, DVec3),
    control: Option<Control>,
    base_wind: Wind,
    pub wind_on: bool,
    pub wind_strength: f64,
}

impl World {
    pub fn new(ctx: &GpuContext, s: &DemoScene) -> Result<World> {
        let (rods, state) = s.scene.build();
        let bounds = state.pos.iter().fold(
            (DVec3::splat(f64::MAX), DVec3::splat(f64::MIN)),
            |(lo, hi), p| (lo.min(*p), hi.max(*p)),
        );
        let params = s.scene.params;
        let (sim, cpu) = if params.integrator.is_implicit() || rods.rod_contact.is_active() {
            let cpu = CpuSimulator::new(rods.clone(), state.clone(), params);
            // The GPU simulator only holds the state to draw.
            let display = SimParams {
                integrator: Default::default(),
                ..params
            };
            let shown = RodSet {
                rod_contact: Default::default(),
                ..rods
            };
            let mut sim = GpuSimulator::new(ctx, shown, state, display)?;
            sim.write_state(&cpu.state);
            (sim, Some(Box::new(cpu)))
        } else {
            let sim = GpuSimulator::new(ctx, rods, state, params)?;
            // The driver's compile here, before the window's first frames.
            sim.compile_kernels();
            (sim, None)
        };
        let head = find_head(&s.scene);
        let handle = find_handle(&s.scene);
        let controlled = head.map(|(a, _, _)| a).or(handle.map(|(a, _)| a));
        let control = controlled.map(|anchor| Control {
            anchor,
            script: s.scene.anchors[anchor].clone(),
            offset: DVec3::ZERO,
            yaw: 0.0,
            dragged: DVec3::ZERO,
            last_rotation: s.scene.anchors[anchor].sample(sim.time()).1,
        });
        let scene_wind = s.scene.params.wind;
        let has_wind = scene_wind.velocity != DVec3::ZERO || scene_wind.gust_amplitude != 0.0;
        let base_wind = if has_wind {
            scene_wind
        } else {
            Wind {
                velocity: DVec3::new(1.0, 0.0, 0.4),
                gust_amplitude: 0.8,
                gust_frequency: 0.6,
                gust_wavelength: 1.5,
            }
        };
        let size = (bounds.1 - bounds.0).length().max(0.05);
        let mut w = World {
            name: s.name.clone(),
            sim,
            cpu,
            stopped: None,
            handle: handle.map(|(_, pivot)| (pivot, 0.015 * size)),
            look: s.look,
            head: head.map(|(_, c, r)| (c, r)),
            ground: find_ground(&s.scene),
            bounds,
            control,
            base_wind,
            wind_on: has_wind,
            wind_strength: 1.0,
        };
        w.apply_wind();
        Ok(w)
    }

    fn apply_wind(&mut self) {
        let b = self.base_wind;
        let wind = if self.wind_on {
            Wind {
                velocity: b.velocity * self.wind_strength,
                gust_amplitude: b.gust_amplitude * self.wind_strength,
                ..b
            }
        } else {
            Wind::default()
        };
        match self.cpu.as_mut() {
            Some(cpu) => cpu.params.wind = wind,
            None => self.sim.set_wind(wind),
        }
    }

    /// The rods as the simulation that steps them has them (anchors
    /// included).
    pub fn rods(&self) -> &RodSet {
        match &self.cpu {
            Some(cpu) => &cpu.rods,
            None => self.sim.rods(),
        }
    }

    /// The parameters of the simulation that steps the rods.
    pub fn params(&self) -> &SimParams {
        match &self.cpu {
            Some(cpu) => &cpu.params,
            None => self.sim.params(),
        }
    }

    /// Simulated time (s).
    pub fn time(&self) -> f64 {
        self.sim.time()
    }

    /// Whether the rods are simulated by the CPU reference.
    pub fn on_cpu(&self) -> bool {
        self.cpu.is_some()
    }

    /// Move the controlled anchor by `delta` (m) over the next step (a
    /// mouse drag).
    pub fn drag(&mut self, delta: DVec3) {
        if let Some(c) = self.control.as_mut() {
            c.dragged += delta;
        }
    }

    pub fn toggle_wind(&mut self) {
        self.wind_on = !self.wind_on;
        self.apply_wind();
    }

    /// Multiply the wind's speed and gusts by `factor`.
    pub fn scale_wind(&mut self, factor: f64) {
        self.wind_strength = (self.wind_strength * factor).clamp(0.05, 20.0);
        self.apply_wind();
    }

    /// Whether the user can move a head in this scene.
    pub fn has_control(&self) -> bool {
        self.control.is_some()
    }

    /// The user's head offset (m) and turn (rad).
    pub fn head_control(&self) -> Option<(DVec3, f64)> {
        self.control.as_ref().map(|c| (c.offset, c.yaw))
    }

    /// Pose of the controlled anchor at `t` with the user's offset and turn
    /// on top of its script: the head turns in place (about its pivot where
    /// the script has put it) and moves by the offset.
    fn controlled_pose(c: &Control, t: f64, offset: DVec3, yaw: f64) -> (DVec3, DQuat) {
        let (ts, rv) = c.script.sample(t);
        let user = DQuat::from_rotation_y(yaw);
        (ts + offset, user * DQuat::from_scaled_axis(rv))
    }

    /// One simulation step (a frame of `dt`), the head moving by `input`.
    /// With `timed`, waits for the GPU and returns its time for the step (s).
    pub fn step(&mut self, input: HeadInput, timed: bool) -> Option<f64> {
        if self.stopped.is_some() {
            return None;
        }
        let dt = self.params().dt;
        let t0 = self.sim.time();
        let mut keyframes = None;
        if let Some(c) = self.control.as_mut() {
            let (o0, y0) = (c.offset, c.yaw);
            c.offset +=
                input.movement.clamp(DVec3::splat(-1.0), DVec3::splat(1.0)) * (HEAD_SPEED * dt);
            // A drag moves at most DRAG_SPEED; the rest waits for the
            // next steps.
            let most = DRAG_SPEED * dt;
            let d = c.dragged.clamp_length_max(most);
            c.offset += d;
            c.dragged -= d;
            c.yaw += input.turn.clamp(-1.0, 1.0) * HEAD_TURN_RATE * dt;
            let (tr0, q0) = Self::controlled_pose(c, t0, o0, y0);
            let (tr1, q1) = Self::controlled_pose(c, t0 + dt, c.offset, c.yaw);
            let rv0 = continue_rotation(c.last_rotation, q0);
            let rv1 = continue_rotation(rv0, q1);
            c.last_rotation = rv1;
            keyframes = Some((
                c.anchor,
                vec![
                    Keyframe::new(t0, tr0, rv0),
                    Keyframe::new(t0 + dt, tr1, rv1),
                ],
            ));
        }
        if let Some(cpu) = self.cpu.as_mut() {
            if let Some((a, k)) = keyframes {
                crate::model::anchor::check_keyframes(&k)
                    .expect("the controlled anchor's keyframes are in order");
                cpu.rods.anchors[a].keyframes = k;
            }
            let start = std::time::Instant::now();
            if let Err(e) = cpu.step() {
                self.stopped = Some(e.to_string());
            }
            let seconds = start.elapsed().as_secs_f64();
            self.sim.write_state(&cpu.state);
            return timed.then_some(seconds);
        }
        if let Some((a, k)) = keyframes {
            self.sim
                .set_anchor_keyframes(a, k)
                .expect("the controlled anchor exists and dt > 0");
        }
        if timed {
            self.sim.step_timed()
        } else {
            self.sim.step();
            None
        }
    }

    /// Model matrices of the meshes to draw: every collider, on its
    /// anchor's current pose; in a scene without colliders, a sphere under
    /// the head's roots and a ground quad under a field's.
    pub fn meshes(&self) -> Vec<MeshPose> {
        let rods = self.rods();
        if !rods.colliders.is_empty() {
            return rods
                .colliders
                .iter()
                .map(|c| {
                    let p = rods.anchors[c.anchor].pose(self.sim.time());
                    let m = DMat4::from_translation(p.pivot + p.translation)
                        * DMat4::from_quat(p.rotation);
                    let color = match c.shape {
                        Shape::Plane { .. } => Vec3::new(0.22, 0.17, 0.10),
                        _ => Vec3::new(0.80, 0.62, 0.50),
                    };
                    MeshPose {
                        model: m.as_mat4(),
                        color,
                    }
                })
                .collect();
        }
        let mut out = Vec::new();
        if let (Some((c, r)), Some(ctl)) = (self.head, self.control.as_ref()) {
            let a = &self.rods().anchors[ctl.anchor];
            let now = a.pose(self.sim.time());
            let start = ctl.script.pose(0.0);
            // Rest coordinates (pose at t = 0 undone), then today's pose.
            let m = pose_matrix(now.pivot, now.translation, now.rotation)
                * pose_matrix(start.pivot, start.translation, start.rotation).inverse()
                * DMat4::from_translation(c)
                * DMat4::from_scale(DVec3::splat(r));
            out.push(MeshPose {
                model: m.as_mat4(),
                color: Vec3::new(0.80, 0.62, 0.50),
            });
        }
        if let (Some((c, r)), Some(ctl)) = (self.handle, self.control.as_ref()) {
            let p = self.rods().anchors[ctl.anchor].pose(self.sim.time());
            let m = DMat4::from_translation(p.point(c)) * DMat4::from_scale(DVec3::splat(r));
            out.push(MeshPose {
                model: m.as_mat4(),
                color: Vec3::new(0.85, 0.35, 0.15),
            });
        }
        if let Some((y, lo, hi)) = self.ground {
            let centre = (lo + hi) * 0.5;
            let half = ((hi - lo) * 0.5).max(DVec3::splat(0.05)) * 1.6;
            let m = Mat4::from_translation(Vec3::new(
                centre.x as f32,
                y as f32 - 1e-3,
                centre.z as f32,
            )) * Mat4::from_scale(Vec3::new(half.x as f32, 1.0, half.z as f32));
            out.push(MeshPose {
                model: m,
                color: Vec3::new(0.22, 0.17, 0.10),
            });
        }
        out
    }

    /// A renderer for this world into targets of `format` and `size`.
    pub fn renderer(
        &self,
        device: &wgpu::Device,
        format: wgpu::TextureFormat,
        size: (u32, u32),
    ) -> render::Renderer {
        render::Renderer::new(
            device,
            format,
            size,
            &self.sim,
            self.look,
            &self.mesh_geometry(),
        )
    }

    /// Geometry of the meshes `meshes` returns, in the same order.
    pub fn mesh_geometry(&self) -> Vec<(Vec<render::MeshVertex>, Vec<u32>)> {
        let rods = self.rods();
        if !rods.colliders.is_empty() {
            // A plane is drawn about the strands' initial bounds.
            let (lo, hi) = self.bounds;
            let half = (0.8 * (hi - lo).length()).max(0.1);
            return rods
                .colliders
                .iter()
                .map(|c| {
                    let p = rods.anchors[c.anchor].pose(0.0);
                    let near = p.rotation.inverse() * ((lo + hi) * 0.5 - p.pivot - p.translation);
                    render::collider_geometry(c, near, half)
                })
                .collect();
        }
        let mut out = Vec::new();
        if self.head.is_some() && self.control.is_some() {
            out.push(render::sphere(48, 24));
        }
        if self.handle.is_some() && self.control.is_some() {
            out.push(render::sphere(24, 12));
        }
        if self.ground.is_some() {
            out.push(render::quad());
        }
        out
    }

    /// A camera that frames the scene: the head from the front, the field
    /// from above its edge, or all the strands.
    pub fn default_camera(&self) -> OrbitCamera {
        if let Some((c, r)) = self.head {
            return OrbitCamera {
                target: (c - DVec3::new(0.0, 0.8 * r, 0.0)).as_vec3(),
                yaw: 0.5,
                pitch: 0.15,
                distance: (8.0 * r) as f32,
            };
        }
        if let Some((_, lo, hi)) = self.ground {
            let centre = (lo + hi) * 0.5;
            let size = (hi - lo).length().max(0.2);
            return OrbitCamera {
                target: (centre + DVec3::new(0.0, 0.1 * size, 0.0)).as_vec3(),
                yaw: 0.6,
                pitch: 0.45,
                distance: (1.3 * size) as f32,
            };
        }
        let (lo, hi) = self.bounds;
        let size = (hi - lo).length().max(0.05);
        OrbitCamera {
            target: ((lo + hi) * 0.5).as_vec3(),
            yaw: 0.6,
            pitch: 0.3,
            distance: (1.6 * size) as f32,
        }
    }
}

/// The matrix of `x ↦ pivot + translation + R (x − pivot)`.
fn pose_matrix(pivot: DVec3, translation: DVec3, rotation: DQuat) -> DMat4 {
    DMat4::from_translation(pivot + translation)
        * DMat4::from_quat(rotation)
        * DMat4::from_translation(-pivot)
}

/// Keys, as the window title and README list them.
pub const KEYS: &str = "drag orbit, right-drag move handle, wheel zoom, arrows/PgUp/PgDn move head or handle, Q/E turn it, F wind, +/- wind strength, Space pause, N step, R reset, Tab scene, Esc quit";

#[cfg(test)]
mod tests {
    use super::*;

    /// Whole turns are kept: a rotation just past π continues from one just
    /// before it instead of jumping to the opposite axis.
    #[test]
    fn rotation_vectors_continue_through_pi() {
        let before = DVec3::Y * 3.1;
        let q = DQuat::from_rotation_y(3.2);
        let rv = continue_rotation(before, q);
        assert!((rv - DVec3::Y * 3.2).length() < 1e-9, "{rv}");
        let q = DQuat::from_rotation_y(3.2 + std::f64::consts::TAU);
        let rv = continue_rotation(DVec3::Y * 9.4, q);
        assert!(
            (rv - DVec3::Y * (3.2 + std::f64::consts::TAU)).length() < 1e-9,
            "{rv}"
        );
    }
}
