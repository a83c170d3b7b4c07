//! The demo window (winit 0.30): surface made in `resumed`, continuous
//! redraw from `about_to_wait`, a fixed simulation step decoupled from the
//! display rate, and a resize, minimise or lost surface never fatal.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};
use glam::DVec3;
use winit::application::ApplicationHandler;
use winit::dpi::PhysicalPosition;
use winit::event::{ElementState, MouseButton, MouseScrollDelta, WindowEvent};
use winit::event_loop::{ActiveEventLoop, EventLoop};
use winit::keyboard::{KeyCode, PhysicalKey};
use winit::window::{Window, WindowId};

use super::render::{OrbitCamera, Renderer};
use super::{DemoScene, HeadInput, KEYS, World};
use crate::gpu::{GpuContext, choose_adapter};

/// At most this many simulation steps per displayed frame; when the
/// simulation cannot keep up it runs slower than real time instead of
/// piling up work.
const MAX_STEPS_PER_FRAME: u32 = 4;

struct Gfx {
    window: Arc<Window>,
    surface: wgpu::Surface<'static>,
    config: wgpu::SurfaceConfiguration,
    ctx: GpuContext,
    world: World,
    renderer: Renderer,
}

struct App {
    instance: wgpu::Instance,
    scenes: Vec<DemoScene>,
    index: usize,
    gfx: Option<Gfx>,
    error: Option<anyhow::Error>,
    exit_after: Option<u64>,
    /// Redraws handled (presented or skipped).
    frames: u64,
    /// Resize and minimise the window on a schedule (tests).
    exercise: bool,
    /// Frames presented to the window.
    presented: u64,
    keys: HashSet<KeyCode>,
    camera: Option<OrbitCamera>,
    dragging: bool,
    /// The right button is down: the cursor moves the controlled anchor.
    moving: bool,
    cursor: Option<PhysicalPosition<f64>>,
    paused: bool,
    single_step: bool,
    last: Instant,
    accumulator: f64,
    steps: u64,
    /// Simulation time per step (ms) from the last timed step, and the
    /// displayed frames and simulated seconds since the title was updated.
    sim_ms: Option<f64>,
    title_at: Instant,
    title_frames: u32,
    title_sim: f64,
}

/// Open the window on scene `start` of `scenes` and run until closed (or
/// after `exit_after` redraws). With `exercise`, the window resizes itself,
/// shrinks to 1×1, minimises and comes back while running (tests).
pub fn run(
    scenes: Vec<DemoScene>,
    start: usize,
    exit_after: Option<u64>,
    exercise: bool,
) -> Result<()> {
    let event_loop = EventLoop::new().context("cannot open a window (no display?)")?;
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_with_display_handle_from_env(
        Box::new(event_loop.owned_display_handle()),
    ));
    let mut app = App {
        instance,
        scenes,
        index: start,
        gfx: None,
        error: None,
        exit_after,
        frames: 0,
        exercise,
        presented: 0,
        keys: HashSet::new(),
        camera: None,
        dragging: false,
        moving: false,
        cursor: None,
        paused: false,
        single_step: false,
        last: Instant::now(),
        accumulator: 0.0,
        steps: 0,
        sim_ms: None,
        title_at: Instant::now(),
        title_frames: 0,
        title_sim: 0.0,
    };
    event_loop.run_app(&mut app)?;
    eprintln!(
        "demo: presented {} frames in {} redraws, {} simulation steps",
        app.presented, app.frames, app.steps
    );
    match app.error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

impl App {
    fn fail(&mut self, event_loop: &ActiveEventLoop, e: anyhow::Error) {
        self.error = Some(e);
        event_loop.exit();
    }

    fn start(&mut self, event_loop: &ActiveEventLoop) -> Result<()> {
        let window = Arc::new(
            event_loop.create_window(
                Window::default_attributes()
                    .with_title("strands")
                    .with_inner_size(winit::dpi::LogicalSize::new(1280.0, 720.0)),
            )?,
        );
        let surface = self.instance.create_surface(window.clone())?;
        let adapter = pollster::block_on(choose_adapter(&self.instance, Some(&surface)))?;
        let ctx = pollster::block_on(GpuContext::open(&adapter))?;
        eprintln!("demo: GPU {}", ctx.describe());
        let size = window.inner_size();
        let mut config = surface
            .get_default_config(&adapter, size.width.max(1), size.height.max(1))
            .ok_or_else(|| anyhow!("the adapter cannot present to this window"))?;
        let caps = surface.get_capabilities(&adapter);
        if let Some(f) = caps.formats.iter().find(|f| f.is_srgb()) {
            config.format = *f;
        }
        config.present_mode = wgpu::PresentMode::AutoVsync;
        surface.configure(&ctx.device, &config);
        let world = World::new(&ctx, &self.scenes[self.index])?;
        let renderer = world.renderer(&ctx.device, config.format, (config.width, config.height));
        self.camera = Some(world.default_camera());
        self.gfx = Some(Gfx {
            window,
            surface,
            config,
            ctx,
            world,
            renderer,
        });
        self.last = Instant::now();
        Ok(())
    }

    /// Rebuild the world for scene `index` (reset or switch).
    fn load(&mut self, index: usize) -> Result<()> {
        let Some(g) = self.gfx.as_mut() else {
            return Ok(());
        };
        self.index = index % self.scenes.len();
        let scene = &self.scenes[self.index];
        let world = World::new(&g.ctx, scene)?;
        g.renderer = world.renderer(
            &g.ctx.device,
            g.config.format,
            (g.config.width, g.config.height),
        );
        self.camera = Some(world.default_camera());
        g.world = world;
        self.accumulator = 0.0;
        self.sim_ms = None;
        Ok(())
    }

    fn head_input(&self) -> HeadInput {
        let k = |c| self.keys.contains(&c) as i32 as f64;
        HeadInput {
            movement: DVec3::new(
                k(KeyCode::ArrowRight) - k(KeyCode::ArrowLeft),
                k(KeyCode::PageUp) - k(KeyCode::PageDown),
                k(KeyCode::ArrowDown) - k(KeyCode::ArrowUp),
            ),
            turn: k(KeyCode::KeyQ) - k(KeyCode::KeyE),
        }
    }

    fn key(&mut self, event_loop: &ActiveEventLoop, code: KeyCode) -> Result<()> {
        match code {
            KeyCode::Escape => event_loop.exit(),
            KeyCode::Space => self.paused = !self.paused,
            KeyCode::KeyN => {
                self.paused = true;
                self.single_step = true;
            }
            KeyCode::KeyR => self.load(self.index)?,
            KeyCode::Tab => self.load(self.index + 1)?,
            KeyCode::KeyF => {
                if let Some(g) = self.gfx.as_mut() {
                    g.world.toggle_wind();
                }
            }
            KeyCode::Equal | KeyCode::NumpadAdd => {
                if let Some(g) = self.gfx.as_mut() {
                    g.world.scale_wind(1.25);
                }
            }
            KeyCode::Minus | KeyCode::NumpadSubtract => {
                if let Some(g) = self.gfx.as_mut() {
                    g.world.scale_wind(0.8);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Advance the simulation by the real time elapsed, in whole steps of dt.
    fn simulate(&mut self) {
        let now = Instant::now();
        let elapsed = (now - self.last).as_secs_f64();
        self.last = now;
        let input = self.head_input();
        let Some(g) = self.gfx.as_mut() else {
            return;
        };
        let dt = g.world.params().dt;
        let mut todo = 0;
        if self.paused {
            self.accumulator = 0.0;
            if self.single_step {
                todo = 1;
                self.single_step = false;
            }
        } else {
            self.accumulator += elapsed;
            todo = (self.accumulator / dt).floor() as u32;
            if todo > MAX_STEPS_PER_FRAME {
                // Behind: run slower than real time rather than fall further behind.
                todo = MAX_STEPS_PER_FRAME;
                self.accumulator = 0.0;
            } else {
                self.accumulator -= todo as f64 * dt;
            }
        }
        for _ in 0..todo {
            // Every 30th step is timed (waits for the GPU) for the title.
            let timed = self.steps.is_multiple_of(30);
            if let Some(t) = g.world.step(input, timed) {
                self.sim_ms = Some(t * 1e3);
            }
            self.steps += 1;
            self.title_sim += dt;
        }
    }

    fn redraw(&mut self, event_loop: &ActiveEventLoop) {
        self.frames += 1;
        if self.exit_after.is_some_and(|n| self.frames > n) {
            event_loop.exit();
            return;
        }
        if self.exercise {
            self.exercise_window();
        }
        self.simulate();
        let camera = self.camera;
        let Some(g) = self.gfx.as_mut() else {
            return;
        };
        if g.config.width == 0 || g.config.height == 0 {
            return; // minimised
        }
        let frame = match g.surface.get_current_texture() {
            wgpu::CurrentSurfaceTexture::Success(f)
            | wgpu::CurrentSurfaceTexture::Suboptimal(f) => f,
            wgpu::CurrentSurfaceTexture::Timeout
            | wgpu::CurrentSurfaceTexture::Occluded
            | wgpu::CurrentSurfaceTexture::Validation => return,
            wgpu::CurrentSurfaceTexture::Outdated => {
                g.surface.configure(&g.ctx.device, &g.config);
                return;
            }
            wgpu::CurrentSurfaceTexture::Lost => {
                match self.instance.create_surface(g.window.clone()) {
                    Ok(s) => {
                        g.surface = s;
                        g.surface.configure(&g.ctx.device, &g.config);
                    }
                    Err(e) => {
                        eprintln!("warning: lost the window surface and cannot recreate it: {e}")
                    }
                }
                return;
            }
        };
        if let Some(cam) = camera {
            g.renderer.update(&g.ctx.queue, &cam, &g.world.meshes());
        }
        let view = frame.texture.create_view(&Default::default());
        let mut encoder = g.ctx.device.create_command_encoder(&Default::default());
        g.renderer.draw(&mut encoder, &view);
        g.ctx.queue.submit([encoder.finish()]);
        g.window.pre_present_notify();
        g.ctx.queue.present(frame);
        self.presented += 1;
        self.title_frames += 1;
        let since = self.title_at.elapsed();
        if since > Duration::from_millis(500) {
            let fps = self.title_frames as f64 / since.as_secs_f64();
            let rods = g.world.rods();
            let speed = self.title_sim / since.as_secs_f64();
            g.window.set_title(&format!(
                "strands — {} | {} strands, {} vertices | {} | {fps:.0} fps, sim {} ({:.2}× real time){}{}{} | {KEYS}",
                g.world.name,
                rods.rod_count(),
                rods.vertex_count(),
                if g.world.on_cpu() {
                    format!(
                        "CPU reference, {}, drawn on {}",
                        g.world.params().integrator.name(),
                        g.ctx.info.name
                    )
                } else {
                    format!("GPU {} ({:?})", g.ctx.info.name, g.ctx.info.backend)
                },
                self.sim_ms
                    .map(|m| format!("{m:.2} ms/step of {} substeps", g.world.params().substeps))
                    .unwrap_or_else(|| "– ms/step".into()),
                speed,
                if g.world.wind_on {
                    format!(", wind ×{:.2}", g.world.wind_strength)
                } else {
                    String::new()
                },
                if self.paused { ", paused" } else { "" },
                match &g.world.stopped {
                    Some(e) => format!(" | stopped: {e}"),
                    None => String::new(),
                },
            ));
            self.title_at = Instant::now();
            self.title_frames = 0;
            self.title_sim = 0.0;
        }
    }

    /// The window-system events a user causes: resizes (down to 1×1), a
    /// minimise and a restore, at fixed redraw counts.
    fn exercise_window(&self) {
        let Some(g) = &self.gfx else {
            return;
        };
        let w = &g.window;
        let size = |x: u32, y: u32| {
            let _ = w.request_inner_size(winit::dpi::PhysicalSize::new(x, y));
        };
        match self.frames {
            10 => size(320, 200),
            20 => size(1, 1),
            30 => w.set_minimized(true),
            40 => w.set_minimized(false),
            50 => size(900, 500),
            _ => {}
        }
    }
}

impl ApplicationHandler for App {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.gfx.is_none()
            && let Err(e) = self.start(event_loop)
        {
            self.fail(event_loop, e);
        }
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, _id: WindowId, event: WindowEvent) {
        match event {
            WindowEvent::CloseRequested => event_loop.exit(),
            // Keys released while another window has focus never arrive.
            WindowEvent::Focused(false) => self.keys.clear(),
            WindowEvent::Resized(size) => {
                if self.exercise {
                    eprintln!("demo: resized to {}x{}", size.width, size.height);
                }
                if let Some(g) = self.gfx.as_mut() {
                    g.config.width = size.width;
                    g.config.height = size.height;
                    if size.width > 0 && size.height > 0 {
                        g.surface.configure(&g.ctx.device, &g.config);
                        g.renderer.resize(&g.ctx.device, (size.width, size.height));
                    }
                }
            }
            WindowEvent::RedrawRequested => self.redraw(event_loop),
            WindowEvent::KeyboardInput { event, .. } => {
                if let PhysicalKey::Code(code) = event.physical_key {
                    match event.state {
                        ElementState::Pressed => {
                            let fresh = self.keys.insert(code);
                            if fresh && let Err(e) = self.key(event_loop, code) {
                                self.fail(event_loop, e);
                            }
                        }
                        ElementState::Released => {
                            self.keys.remove(&code);
                        }
                    }
                }
            }
            WindowEvent::MouseInput {
                state,
                button: MouseButton::Left,
                ..
            } => self.dragging = state == ElementState::Pressed,
            WindowEvent::MouseInput {
                state,
                button: MouseButton::Right,
                ..
            } => self.moving = state == ElementState::Pressed,
            WindowEvent::CursorMoved { position, .. } => {
                if let (Some(last), Some(cam)) = (self.cursor, self.camera.as_mut()) {
                    let (dx, dy) = ((position.x - last.x) as f32, (position.y - last.y) as f32);
                    if self.dragging {
                        cam.orbit(dx, dy);
                    } else if self.moving {
                        let height = self.gfx.as_ref().map_or(1, |g| g.config.height.max(1));
                        let delta = cam.drag_delta(dx, dy, height);
                        if let Some(g) = self.gfx.as_mut() {
                            g.world.drag(delta.as_dvec3());
                        }
                    }
                }
                self.cursor = Some(position);
            }
            WindowEvent::MouseWheel { delta, .. } => {
                let steps = match delta {
                    MouseScrollDelta::LineDelta(_, y) => y,
                    MouseScrollDelta::PixelDelta(p) => p.y as f32 / 40.0,
                };
                if let Some(cam) = self.camera.as_mut() {
                    cam.zoom(steps);
                }
            }
            _ => {}
        }
    }

    fn about_to_wait(&mut self, _event_loop: &ActiveEventLoop) {
        // Continuous redraw, except while minimised (zero size): then the
        // loop waits for the next event instead of spinning.
        if let Some(g) = &self.gfx
            && g.config.width > 0
            && g.config.height > 0
        {
            g.window.request_redraw();
        }
    }
}
