//! `strands demo --screenshot FILE.png`: simulate some frames headless and
//! write one image, no window (tests, README pictures).

use anyhow::{Context, Result};
use glam::DVec3;

use super::{DemoScene, HeadInput, World};
use crate::gpu::GpuContext;

/// What to do before taking the picture.
#[derive(Clone, Copy, Debug)]
pub struct Shot {
    /// Simulation steps (frames of `dt`) to run first.
    pub frames: u32,
    pub size: (u32, u32),
    /// Where the user moves the head (m) and how far they turn it (rad),
    /// reached at the head's interactive speed during the frames.
    pub head_offset: DVec3,
    pub head_turn: f64,
}

/// The input that moves the head toward the shot's target at full speed at
/// most, as a user holding keys would.
fn toward(world: &World, shot: &Shot) -> HeadInput {
    let Some((offset, yaw)) = world.head_control() else {
        return HeadInput::default();
    };
    let dt = world.params().dt;
    let m = (shot.head_offset - offset) / (super::HEAD_SPEED * dt);
    let t = (shot.head_turn - yaw) / (super::HEAD_TURN_RATE * dt);
    HeadInput {
        movement: m.clamp(DVec3::splat(-1.0), DVec3::splat(1.0)),
        turn: t.clamp(-1.0, 1.0),
    }
}

/// Render `scene` after `shot.frames` steps and return RGBA8 pixels (sRGB).
pub fn render(ctx: &GpuContext, scene: &DemoScene, shot: &Shot) -> Result<Vec<u8>> {
    let device = &ctx.device;
    let format = wgpu::TextureFormat::Rgba8UnormSrgb;
    let (w, h) = shot.size;
    let mut world = World::new(ctx, scene)?;
    for _ in 0..shot.frames {
        let input = toward(&world, shot);
        world.step(input, false);
    }
    let renderer = world.renderer(device, format, shot.size);
    renderer.update(&ctx.queue, &world.default_camera(), &world.meshes());
    let target = device.create_texture(&wgpu::TextureDescriptor {
        label: Some("screenshot"),
        size: wgpu::Extent3d {
            width: w,
            height: h,
            depth_or_array_layers: 1,
        },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format,
        usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
        view_formats: &[],
    });
    let row =
        (w * 4).div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT) * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT;
    let buffer = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("screenshot read-back"),
        size: (row * h) as u64,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    renderer.draw(&mut encoder, &target.create_view(&Default::default()));
    encoder.copy_texture_to_buffer(
        target.as_image_copy(),
        wgpu::TexelCopyBufferInfo {
            buffer: &buffer,
            layout: wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(row),
                rows_per_image: Some(h),
            },
        },
        wgpu::Extent3d {
            width: w,
            height: h,
            depth_or_array_layers: 1,
        },
    );
    ctx.queue.submit([encoder.finish()]);
    let data = crate::gpu::read_mapped(device, &buffer, buffer.size());
    let mut pixels = Vec::with_capacity((w * h * 4) as usize);
    for y in 0..h {
        let start = (y * row) as usize;
        pixels.extend_from_slice(&data[start..start + (w * 4) as usize]);
    }
    Ok(pixels)
}

/// Render and write a PNG.
pub fn write(
    ctx: &GpuContext,
    scene: &DemoScene,
    shot: &Shot,
    path: &std::path::Path,
) -> Result<()> {
    let pixels = render(ctx, scene, shot)?;
    image::save_buffer(
        path,
        &pixels,
        shot.size.0,
        shot.size.1,
        image::ExtendedColorType::Rgba8,
    )
    .with_context(|| format!("cannot write {}", path.display()))
}
