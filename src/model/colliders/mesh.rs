//! Collision meshes: load a closed triangle mesh from OBJ or glTF/GLB, check
//! that it encloses a volume, and bake its signed distance field (SDF) on a
//! regular grid.
//!
//! The sign of the distance comes from the generalised winding number (the
//! sum of the triangles' solid angles seen from the point, over 4π), so it
//! does not depend on which way the whole mesh is wound; the magnitude is the
//! exact distance to the closest point of the closest triangle.

use std::collections::HashMap;
use std::fmt;
use std::io::{BufWriter, Write};
use std::path::Path;

use glam::{DMat4, DVec3, Mat4};
use rayon::prelude::*;

/// A closed triangle mesh in world coordinates (m).
#[derive(Clone, Debug, PartialEq)]
pub struct Mesh {
    /// Vertex positions (m).
    pub vertices: Vec<DVec3>,
    /// Vertex indices of each triangle, counter-clockwise seen from outside.
    pub triangles: Vec<[u32; 3]>,
}

/// Why a mesh cannot be loaded, used as a collider, or baked.
///
/// The messages never name the file: the caller prefixes the file and field.
#[derive(Debug, thiserror::Error)]
pub enum MeshError {
    /// The file (or a buffer file a glTF refers to) cannot be read.
    #[error("cannot read {what}: {detail}.")]
    Io {
        /// What could not be read.
        what: String,
        /// The system's error.
        detail: String,
    },
    /// The file is not valid OBJ or glTF.
    #[error(
        "the file is not valid {format}: {detail}. Export the mesh again from a modelling tool."
    )]
    Parse {
        /// `OBJ` or `glTF`.
        format: &'static str,
        /// The parser's error.
        detail: String,
    },
    /// The extension is none of the supported ones.
    #[error(
        "meshes in {0} files are not supported: the supported formats are .obj, .gltf and .glb \
         (the extension decides the format, in any letter case)."
    )]
    UnsupportedExtension(String),
    /// Nothing to collide with.
    #[error(
        "the mesh has no triangles: export its faces (OBJ `f` lines, or glTF primitives of mode \
         TRIANGLES, TRIANGLE_STRIP or TRIANGLE_FAN; points and lines are ignored)."
    )]
    NoTriangles,
    /// Some edge is not shared by exactly two triangles.
    #[error(
        "the mesh is not closed: {open_edges} edges are not shared by exactly two triangles, \
         for example the edge from {} to {} m, used by {uses} triangle(s). Close the holes and \
         split non-manifold edges so that the surface encloses a volume.",
        Pt(&.example[0]), Pt(&.example[1])
    )]
    NotClosed {
        /// Edges not shared by exactly two triangles.
        open_edges: usize,
        /// One of them, by its end points (m).
        example: [DVec3; 2],
        /// Triangles that use it.
        uses: usize,
    },
    /// Both triangles of some edge run along it in the same direction.
    #[error(
        "the triangles are not consistently oriented: {edges} edges are traversed in the same \
         direction by both of their triangles, for example the edge from {} to {} m. Make the \
         face normals consistent (load_mesh does this for mesh files).",
        Pt(&.example[0]), Pt(&.example[1])
    )]
    InconsistentWinding {
        /// Edges traversed the same way by both triangles.
        edges: usize,
        /// One of them, by its end points (m).
        example: [DVec3; 2],
    },
    /// A closed surface without an inside and an outside.
    #[error(
        "the mesh is not orientable (like a Klein bottle), so it has no inside; use a solid, \
         closed mesh."
    )]
    NotOrientable,
    /// The enclosed volume is (numerically) zero.
    #[error(
        "the mesh encloses no volume (signed volume {volume:e} m³ inside a bounding box of \
         {} m): it is flat or its faces cancel out. Use a solid, closed mesh.",
        Size(.extent)
    )]
    NoVolume {
        /// Signed volume (m³).
        volume: f64,
        /// Bounding-box size (m).
        extent: DVec3,
    },
    /// A vertex coordinate is NaN or infinite.
    #[error(
        "vertex {index} (counting from 0) has a non-finite coordinate {}; fix or remove it in \
         the mesh.",
        Pt(.position)
    )]
    NonFiniteVertex {
        /// The vertex, from 0.
        index: usize,
        /// Its coordinates.
        position: DVec3,
    },
    /// A triangle refers to a vertex that does not exist.
    #[error(
        "triangle {triangle} refers to vertex {index}, but the mesh has only {vertices} \
         vertices; the mesh is corrupt, export it again."
    )]
    BadIndex {
        /// The triangle, from 0.
        triangle: usize,
        /// The vertex index it holds.
        index: u32,
        /// Vertices in the mesh.
        vertices: usize,
    },
    /// A triangle has two corners at the same position.
    #[error(
        "triangle {triangle} has two corners at the same position {} m; remove degenerate \
         triangles (load_mesh drops them from mesh files).",
        Pt(.position)
    )]
    DegenerateTriangle {
        /// The triangle, from 0.
        triangle: usize,
        /// Where two of its corners coincide (m).
        position: DVec3,
    },
    /// The SDF grid would have more samples than allowed.
    #[error(
        "the distance field needs a grid of {}×{}×{} = {samples:.0} samples to cover the mesh \
         with a cell of {cell} m and {padding} m of padding, but at most {limit} samples are \
         allowed: use a cell of about {suggested:.3e} m or more, or less padding.",
        .dims[0], .dims[1], .dims[2]
    )]
    GridTooLarge {
        /// Samples along x, y, z.
        dims: [u64; 3],
        /// Their product.
        samples: f64,
        /// Samples allowed.
        limit: usize,
        /// Cell size asked for (m).
        cell: f64,
        /// Padding around the mesh (m).
        padding: f64,
        /// A cell size that fits (m).
        suggested: f64,
    },
    /// Cell size or padding is not usable.
    #[error("{0}")]
    BadGridParameter(String),
}

/// Formats a point in metres to the micrometre.
struct Pt<'a>(&'a DVec3);

impl fmt::Display for Pt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({:.6}, {:.6}, {:.6})", self.0.x, self.0.y, self.0.z)
    }
}

/// Formats a box size as `a×b×c`.
struct Size<'a>(&'a DVec3);

impl fmt::Display for Size<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6}×{:.6}×{:.6}", self.0.x, self.0.y, self.0.z)
    }
}

fn io_error(what: &str, e: std::io::Error) -> MeshError {
    MeshError::Io {
        what: what.to_string(),
        detail: e.to_string(),
    }
}

/// Loads a mesh by extension (case-insensitive): `.obj`, `.gltf` or `.glb`.
///
/// OBJ: all models merged, polygons triangulated, materials ignored.
/// glTF/GLB: every primitive of mode TRIANGLES (strips and fans too) of every
/// mesh in the default scene (else the first scene; else every mesh,
/// untransformed), with the node transforms applied; buffers embedded as
/// base64 data URIs, in the GLB binary chunk, or in files beside the glTF.
///
/// The result is cleaned and checked: vertices at identical positions are
/// welded, triangles with two corners at one position are dropped, the
/// triangles are oriented consistently and outward (each closed shell gets a
/// positive volume), and [`Mesh::check`] passes.
pub fn load_mesh(path: &Path) -> Result<Mesh, MeshError> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let raw = match ext.as_deref() {
        Some("obj") => {
            let bytes = std::fs::read(path).map_err(|e| io_error("the file", e))?;
            read_obj(&bytes)?
        }
        Some("gltf" | "glb") => {
            let bytes = std::fs::read(path).map_err(|e| io_error("the file", e))?;
            read_gltf(&bytes, path.parent().unwrap_or(Path::new("")))?
        }
        Some(other) => return Err(MeshError::UnsupportedExtension(format!(".{other}"))),
        None => {
            return Err(MeshError::UnsupportedExtension("extensionless".to_string()));
        }
    };
    raw.check_values()?;
    let (vertices, triangles) = weld(&raw.vertices, &raw.triangles);
    let triangles: Vec<[u32; 3]> = triangles
        .into_iter()
        .filter(|t| t[0] != t[1] && t[1] != t[2] && t[2] != t[0])
        .collect();
    let mut mesh = Mesh {
        vertices,
        triangles,
    };
    if mesh.triangles.is_empty() {
        return Err(MeshError::NoTriangles);
    }
    check_edges(&mesh.vertices, &mesh.triangles, false)?;
    mesh.orient()?;
    mesh.check()?;
    Ok(mesh)
}

/// Parses OBJ text: all models, triangulated, merged into one mesh.
fn read_obj(bytes: &[u8]) -> Result<Mesh, MeshError> {
    // The update covers the fields that tobj's optional features add.
    #[allow(clippy::needless_update)]
    let options = tobj::LoadOptions {
        triangulate: true,
        single_index: false,
        ignore_points: true,
        ignore_lines: true,
        ..Default::default()
    };
    let (models, _materials) =
        tobj::load_obj_buf(&mut std::io::Cursor::new(bytes), &options, |_| {
            Err(tobj::LoadError::OpenFileFailed)
        })
        .map_err(|e| MeshError::Parse {
            format: "OBJ",
            detail: e.to_string(),
        })?;
    let mut mesh = Mesh {
        vertices: Vec::new(),
        triangles: Vec::new(),
    };
    for model in &models {
        let base = mesh.vertices.len();
        let positions = &model.mesh.positions;
        mesh.vertices.extend(
            positions
                .chunks_exact(3)
                .map(|p| DVec3::new(p[0], p[1], p[2])),
        );
        let count = positions.len() / 3;
        for tri in model.mesh.indices.chunks_exact(3) {
            let mut t = [0u32; 3];
            for (k, &i) in tri.iter().enumerate() {
                if i as usize >= count {
                    return Err(MeshError::Parse {
                        format: "OBJ",
                        detail: format!(
                            "a face of object {:?} refers to vertex {} of {count}",
                            model.name,
                            i as usize + 1
                        ),
                    });
                }
                t[k] = to_u32(base + i as usize)?;
            }
            mesh.triangles.push(t);
        }
    }
    Ok(mesh)
}

fn to_u32(i: usize) -> Result<u32, MeshError> {
    u32::try_from(i).map_err(|_| MeshError::Parse {
        format: "mesh",
        detail: "more than 4 294 967 295 vertices".to_string(),
    })
}

fn gltf_error(detail: impl Into<String>) -> MeshError {
    MeshError::Parse {
        format: "glTF",
        detail: detail.into(),
    }
}

/// Parses glTF JSON or GLB; `dir` is where relative buffer URIs are found.
fn read_gltf(bytes: &[u8], dir: &Path) -> Result<Mesh, MeshError> {
    let gltf = gltf::Gltf::from_slice(bytes).map_err(|e| gltf_error(e.to_string()))?;
    let buffers = gltf_buffers(&gltf, dir)?;
    let doc = &gltf.document;
    let mut mesh = Mesh {
        vertices: Vec::new(),
        triangles: Vec::new(),
    };
    match doc.default_scene().or_else(|| doc.scenes().next()) {
        Some(scene) => {
            for node in scene.nodes() {
                gltf_node(&node, DMat4::IDENTITY, &buffers, &mut mesh, 0)?;
            }
        }
        None => {
            for m in doc.meshes() {
                gltf_mesh(&m, DMat4::IDENTITY, &buffers, &mut mesh)?;
            }
        }
    }
    Ok(mesh)
}

/// Loads the bytes of every buffer of the document.
fn gltf_buffers(gltf: &gltf::Gltf, dir: &Path) -> Result<Vec<Vec<u8>>, MeshError> {
    gltf.document
        .buffers()
        .map(|buffer| {
            let i = buffer.index();
            let data = match buffer.source() {
                gltf::buffer::Source::Bin => gltf.blob.clone().ok_or_else(|| {
                    gltf_error(format!(
                        "buffer {i} refers to the binary chunk, which the file does not have"
                    ))
                })?,
                gltf::buffer::Source::Uri(uri) => {
                    if let Some(rest) = uri.strip_prefix("data:") {
                        let (_, payload) = rest.split_once(";base64,").ok_or_else(|| {
                            gltf_error(format!("buffer {i} has a data URI that is not base64"))
                        })?;
                        decode_base64(payload).ok_or_else(|| {
                            gltf_error(format!("buffer {i} has invalid base64 data"))
                        })?
                    } else if uri.contains("://") {
                        return Err(gltf_error(format!(
                            "buffer {i} is at {uri:?}; only embedded buffers and files beside \
                             the glTF are supported"
                        )));
                    } else {
                        let name = percent_decode(uri).ok_or_else(|| {
                            gltf_error(format!("buffer {i} has a malformed URI {uri:?}"))
                        })?;
                        std::fs::read(dir.join(&name))
                            .map_err(|e| io_error(&format!("the glTF's buffer file {name:?}"), e))?
                    }
                }
            };
            if data.len() < buffer.length() {
                return Err(gltf_error(format!(
                    "buffer {i} holds {} bytes but is declared to hold {}",
                    data.len(),
                    buffer.length()
                )));
            }
            Ok(data)
        })
        .collect()
}

/// Adds a node's meshes and its children's, with `parent` the parent's
/// node-to-world transform.
fn gltf_node(
    node: &gltf::Node<'_>,
    parent: DMat4,
    buffers: &[Vec<u8>],
    out: &mut Mesh,
    depth: usize,
) -> Result<(), MeshError> {
    if depth > 256 {
        return Err(gltf_error(
            "the node hierarchy is more than 256 levels deep (a cycle?)",
        ));
    }
    let local = Mat4::from_cols_array_2d(&node.transform().matrix()).as_dmat4();
    let world = parent * local;
    if let Some(m) = node.mesh() {
        gltf_mesh(&m, world, buffers, out)?;
    }
    for child in node.children() {
        gltf_node(&child, world, buffers, out, depth + 1)?;
    }
    Ok(())
}

/// Adds the triangle primitives of one mesh, transformed by `world`.
fn gltf_mesh(
    m: &gltf::Mesh<'_>,
    world: DMat4,
    buffers: &[Vec<u8>],
    out: &mut Mesh,
) -> Result<(), MeshError> {
    use gltf::mesh::Mode;
    for primitive in m.primitives() {
        let mode = primitive.mode();
        if !matches!(
            mode,
            Mode::Triangles | Mode::TriangleStrip | Mode::TriangleFan
        ) {
            continue;
        }
        let what = format!("primitive {} of mesh {}", primitive.index(), m.index());
        let reader = primitive.reader(|b| buffers.get(b.index()).map(Vec::as_slice));
        let positions = reader
            .read_positions()
            .ok_or_else(|| gltf_error(format!("{what} has no readable POSITION data")))?;
        let base = out.vertices.len();
        out.vertices.extend(positions.map(|p| {
            world.transform_point3(DVec3::new(
                f64::from(p[0]),
                f64::from(p[1]),
                f64::from(p[2]),
            ))
        }));
        let count = out.vertices.len() - base;
        let indices: Vec<u32> = if primitive.indices().is_some() {
            reader
                .read_indices()
                .ok_or_else(|| gltf_error(format!("{what} has unreadable indices")))?
                .into_u32()
                .collect()
        } else {
            (0..to_u32(count)?).collect()
        };
        if let Some(&bad) = indices.iter().find(|&&i| i as usize >= count) {
            return Err(gltf_error(format!(
                "{what} refers to vertex {bad} of {count}"
            )));
        }
        let n = indices.len();
        let corner = |k: usize| to_u32(base + indices[k] as usize);
        match mode {
            Mode::Triangles => {
                for k in (0..n / 3).map(|t| 3 * t) {
                    out.triangles
                        .push([corner(k)?, corner(k + 1)?, corner(k + 2)?]);
                }
            }
            Mode::TriangleStrip => {
                for k in 0..n.saturating_sub(2) {
                    let (a, b) = if k % 2 == 0 { (k, k + 1) } else { (k + 1, k) };
                    out.triangles.push([corner(a)?, corner(b)?, corner(k + 2)?]);
                }
            }
            _ => {
                for k in 1..n.saturating_sub(1) {
                    out.triangles.push([corner(0)?, corner(k)?, corner(k + 1)?]);
                }
            }
        }
    }
    Ok(())
}

/// Decodes base64 (standard or URL-safe alphabet, padding optional).
fn decode_base64(s: &str) -> Option<Vec<u8>> {
    let s = s.trim_end_matches('=');
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // One character alone (6 bits) cannot end a base64 text.
    (bits < 6).then_some(out)
}

/// Decodes `%XX` escapes of a relative URI.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Bit pattern of a position, with −0 read as +0, for welding.
fn weld_key(v: DVec3) -> [u64; 3] {
    [
        (v.x + 0.0).to_bits(),
        (v.y + 0.0).to_bits(),
        (v.z + 0.0).to_bits(),
    ]
}

/// Merges vertices at identical positions (first occurrence kept, in order)
/// and remaps the triangles. Indices must be in range.
fn weld(vertices: &[DVec3], triangles: &[[u32; 3]]) -> (Vec<DVec3>, Vec<[u32; 3]>) {
    let mut ids: HashMap<[u64; 3], u32> = HashMap::with_capacity(vertices.len());
    let mut welded = Vec::new();
    let remap: Vec<u32> = vertices
        .iter()
        .map(|&v| {
            *ids.entry(weld_key(v)).or_insert_with(|| {
                welded.push(v);
                (welded.len() - 1) as u32
            })
        })
        .collect();
    let triangles = triangles
        .iter()
        .map(|t| t.map(|i| remap[i as usize]))
        .collect();
    (welded, triangles)
}

/// Undirected edges as (smaller, larger) vertex pairs, each with the number
/// of triangles using it and the sum of +1 per use from smaller to larger and
/// −1 per use the other way.
fn edge_uses(triangles: &[[u32; 3]]) -> HashMap<(u32, u32), (usize, i64)> {
    let mut edges: HashMap<(u32, u32), (usize, i64)> = HashMap::with_capacity(triangles.len() * 2);
    for t in triangles {
        for k in 0..3 {
            let (a, b) = (t[k], t[(k + 1) % 3]);
            let entry = edges.entry((a.min(b), a.max(b))).or_insert((0, 0));
            entry.0 += 1;
            entry.1 += if a < b { 1 } else { -1 };
        }
    }
    edges
}

/// Closedness (each edge used by exactly two triangles) and, if `oriented`,
/// consistent orientation (the two run along it in opposite directions).
/// `vertices` and `triangles` are welded.
fn check_edges(
    vertices: &[DVec3],
    triangles: &[[u32; 3]],
    oriented: bool,
) -> Result<(), MeshError> {
    let edges = edge_uses(triangles);
    let positions = |e: (u32, u32)| [vertices[e.0 as usize], vertices[e.1 as usize]];
    let open: Vec<_> = edges.iter().filter(|(_, u)| u.0 != 2).collect();
    if let Some((&e, &(uses, _))) = open.iter().min_by_key(|(e, _)| **e).copied() {
        return Err(MeshError::NotClosed {
            open_edges: open.len(),
            example: positions(e),
            uses,
        });
    }
    if oriented {
        let same: Vec<(u32, u32)> = edges
            .iter()
            .filter(|(_, u)| u.1 != 0)
            .map(|(e, _)| *e)
            .collect();
        if let Some(&e) = same.iter().min() {
            return Err(MeshError::InconsistentWinding {
                edges: same.len(),
                example: positions(e),
            });
        }
    }
    Ok(())
}

impl Mesh {
    /// Checks that the mesh can be used as a solid: at least one triangle,
    /// finite vertices, indices in range, no triangle with two corners at one
    /// position, closed (after welding vertices at identical positions, every
    /// undirected edge is used by exactly two triangles), consistently
    /// oriented (those two run along it in opposite directions), and a
    /// volume: |signed volume| at least 1e-12 m³ and at least 1e-9 of the
    /// cube of the bounding box's diagonal.
    ///
    /// A negative signed volume (the whole mesh wound inside out) is
    /// accepted: the distance's sign does not depend on it, and
    /// [`load_mesh`] turns such meshes outward anyway.
    pub fn check(&self) -> Result<(), MeshError> {
        self.check_values()?;
        let (vertices, triangles) = weld(&self.vertices, &self.triangles);
        if let Some((i, t)) = triangles
            .iter()
            .enumerate()
            .find(|(_, t)| t[0] == t[1] || t[1] == t[2] || t[2] == t[0])
        {
            let corner = if t[0] == t[1] || t[0] == t[2] {
                t[0]
            } else {
                t[1]
            };
            return Err(MeshError::DegenerateTriangle {
                triangle: i,
                position: vertices[corner as usize],
            });
        }
        check_edges(&vertices, &triangles, true)?;
        let volume = self.signed_volume();
        let (lo, hi) = self.bounds();
        let extent = hi - lo;
        if volume.abs() < 1e-12 || volume.abs() < 1e-9 * extent.length().powi(3) {
            return Err(MeshError::NoVolume { volume, extent });
        }
        Ok(())
    }

    /// Triangles present, vertices finite, indices in range.
    fn check_values(&self) -> Result<(), MeshError> {
        if self.triangles.is_empty() {
            return Err(MeshError::NoTriangles);
        }
        if let Some((index, &position)) = self
            .vertices
            .iter()
            .enumerate()
            .find(|(_, v)| !v.is_finite())
        {
            return Err(MeshError::NonFiniteVertex { index, position });
        }
        for (triangle, t) in self.triangles.iter().enumerate() {
            if let Some(&index) = t.iter().find(|&&i| i as usize >= self.vertices.len()) {
                return Err(MeshError::BadIndex {
                    triangle,
                    index,
                    vertices: self.vertices.len(),
                });
            }
        }
        Ok(())
    }

    /// Orients the triangles of each connected shell consistently, then turns
    /// each shell with a negative volume inside out. Requires a closed,
    /// welded mesh.
    fn orient(&mut self) -> Result<(), MeshError> {
        let n = self.triangles.len();
        // For each undirected edge: the triangles using it, and whether each
        // runs along it from the smaller vertex to the larger.
        let mut users: HashMap<(u32, u32), Vec<(usize, bool)>> = HashMap::with_capacity(n * 2);
        for (i, t) in self.triangles.iter().enumerate() {
            for k in 0..3 {
                let (a, b) = (t[k], t[(k + 1) % 3]);
                users
                    .entry((a.min(b), a.max(b)))
                    .or_default()
                    .push((i, a < b));
            }
        }
        let mut flip: Vec<Option<bool>> = vec![None; n];
        let centre = {
            let (lo, hi) = self.bounds();
            0.5 * (lo + hi)
        };
        let mut stack = Vec::new();
        for seed in 0..n {
            if flip[seed].is_some() {
                continue;
            }
            flip[seed] = Some(false);
            stack.push(seed);
            let mut shell = Vec::new();
            while let Some(i) = stack.pop() {
                shell.push(i);
                let t = self.triangles[i];
                let fi = flip[i] == Some(true);
                for k in 0..3 {
                    let (a, b) = (t[k], t[(k + 1) % 3]);
                    // Direction in which triangle i (as it will be) runs along the edge.
                    let forward = (a < b) != fi;
                    for &(j, up) in &users[&(a.min(b), a.max(b))] {
                        if j == i {
                            continue;
                        }
                        // j must run the other way: up XOR flip_j == !forward.
                        let need = up == forward;
                        match flip[j] {
                            None => {
                                flip[j] = Some(need);
                                stack.push(j);
                            }
                            Some(f) if f != need => return Err(MeshError::NotOrientable),
                            Some(_) => {}
                        }
                    }
                }
            }
            let volume: f64 = shell
                .iter()
                .map(|&i| {
                    let v = self.tetra_volume(self.triangles[i], centre);
                    if flip[i] == Some(true) { -v } else { v }
                })
                .sum();
            if volume < 0.0 {
                for &i in &shell {
                    flip[i] = flip[i].map(|f| !f);
                }
            }
        }
        for (t, f) in self.triangles.iter_mut().zip(&flip) {
            if *f == Some(true) {
                t.swap(1, 2);
            }
        }
        Ok(())
    }

    /// Signed volume of the tetrahedron (o, a, b, c) of triangle t.
    fn tetra_volume(&self, t: [u32; 3], o: DVec3) -> f64 {
        let [a, b, c] = t.map(|i| self.vertices[i as usize] - o);
        a.dot(b.cross(c)) / 6.0
    }

    /// Signed volume (m³) enclosed by the mesh, by the divergence theorem
    /// (tetrahedra from the bounding box's centre): positive when the
    /// triangles are wound counter-clockwise seen from outside. Meaningful
    /// for closed meshes only.
    pub fn signed_volume(&self) -> f64 {
        let (lo, hi) = self.bounds();
        let centre = 0.5 * (lo + hi);
        self.triangles
            .iter()
            .map(|&t| self.tetra_volume(t, centre))
            .sum()
    }

    /// Axis-aligned bounding box (min, max) of all vertices; (0, 0) for a
    /// mesh without vertices.
    pub fn bounds(&self) -> (DVec3, DVec3) {
        if self.vertices.is_empty() {
            return (DVec3::ZERO, DVec3::ZERO);
        }
        self.vertices
            .iter()
            .fold((DVec3::INFINITY, DVec3::NEG_INFINITY), |(lo, hi), &v| {
                (lo.min(v), hi.max(v))
            })
    }

    /// Exact signed distance (m) from `p` to the surface: negative inside.
    ///
    /// The sign comes from the generalised winding number w = Σ Ωᵢ / 4π
    /// (solid angles of the triangles seen from `p`): inside when |w| > 0.5,
    /// so it does not depend on the winding of the whole mesh; outside the
    /// bounding box w = 0 without summing. The magnitude is the distance to
    /// the closest point of the closest triangle. Costs O(triangles).
    ///
    /// Panics if a triangle refers past `vertices` ([`Mesh::check`] refuses
    /// such meshes).
    pub fn signed_distance(&self, p: DVec3) -> f64 {
        Prepared::new(self).signed(p, usize::MAX, None).0
    }

    /// Icosphere of radius `r` centred at `c`: an icosahedron (20 faces)
    /// whose faces are split into 4 `subdivisions` times, with every vertex
    /// on the sphere; 20·4ˢ triangles wound outward, 10·4ˢ + 2 vertices.
    pub fn icosphere(c: DVec3, r: f64, subdivisions: u32) -> Mesh {
        let g = (1.0 + 5f64.sqrt()) / 2.0;
        let mut unit: Vec<DVec3> = [
            (-1.0, g, 0.0),
            (1.0, g, 0.0),
            (-1.0, -g, 0.0),
            (1.0, -g, 0.0),
            (0.0, -1.0, g),
            (0.0, 1.0, g),
            (0.0, -1.0, -g),
            (0.0, 1.0, -g),
            (g, 0.0, -1.0),
            (g, 0.0, 1.0),
            (-g, 0.0, -1.0),
            (-g, 0.0, 1.0),
        ]
        .iter()
        .map(|&(x, y, z)| DVec3::new(x, y, z).normalize())
        .collect();
        let mut triangles: Vec<[u32; 3]> = vec![
            [0, 11, 5],
            [0, 5, 1],
            [0, 1, 7],
            [0, 7, 10],
            [0, 10, 11],
            [1, 5, 9],
            [5, 11, 4],
            [11, 10, 2],
            [10, 7, 6],
            [7, 1, 8],
            [3, 9, 4],
            [3, 4, 2],
            [3, 2, 6],
            [3, 6, 8],
            [3, 8, 9],
            [4, 9, 5],
            [2, 4, 11],
            [6, 2, 10],
            [8, 6, 7],
            [9, 8, 1],
        ];
        for _ in 0..subdivisions {
            let mut midpoints: HashMap<(u32, u32), u32> = HashMap::new();
            let mut midpoint = |a: u32, b: u32| {
                *midpoints.entry((a.min(b), a.max(b))).or_insert_with(|| {
                    unit.push((unit[a as usize] + unit[b as usize]).normalize());
                    (unit.len() - 1) as u32
                })
            };
            triangles = triangles
                .iter()
                .flat_map(|&[a, b, c]| {
                    let (ab, bc, ca) = (midpoint(a, b), midpoint(b, c), midpoint(c, a));
                    [[a, ab, ca], [b, bc, ab], [c, ca, bc], [ab, bc, ca]]
                })
                .collect();
        }
        Mesh {
            vertices: unit.iter().map(|&u| c + r * u).collect(),
            triangles,
        }
    }

    /// Writes the mesh as OBJ text (`v` and `f` lines, shortest decimal
    /// forms that read back to the same f64 values).
    pub fn write_obj(&self, path: &Path) -> std::io::Result<()> {
        self.write_obj_with_header(
            path,
            &format!(
                "strands mesh: {} vertices, {} triangles, in metres",
                self.vertices.len(),
                self.triangles.len()
            ),
        )
    }

    /// [`Mesh::write_obj`] with the given comment lines at the top.
    fn write_obj_with_header(&self, path: &Path, header: &str) -> std::io::Result<()> {
        let mut w = BufWriter::new(std::fs::File::create(path)?);
        for line in header.lines() {
            writeln!(w, "# {line}")?;
        }
        for v in &self.vertices {
            writeln!(w, "v {} {} {}", v.x, v.y, v.z)?;
        }
        for t in &self.triangles {
            writeln!(w, "f {} {} {}", t[0] + 1, t[1] + 1, t[2] + 1)?;
        }
        w.flush()
    }
}

/// A triangle ready for distance queries, with its bounding box.
#[derive(Clone, Copy)]
struct Tri {
    a: DVec3,
    b: DVec3,
    c: DVec3,
    lo: DVec3,
    hi: DVec3,
}

/// The mesh's triangles as coordinates, and their bounding box.
struct Prepared {
    tris: Vec<Tri>,
    lo: DVec3,
    hi: DVec3,
}

impl Prepared {
    fn new(mesh: &Mesh) -> Prepared {
        let tris: Vec<Tri> = mesh
            .triangles
            .iter()
            .map(|t| {
                let [a, b, c] = t.map(|i| mesh.vertices[i as usize]);
                Tri {
                    a,
                    b,
                    c,
                    lo: a.min(b).min(c),
                    hi: a.max(b).max(c),
                }
            })
            .collect();
        let (lo, hi) = tris
            .iter()
            .fold((DVec3::INFINITY, DVec3::NEG_INFINITY), |(lo, hi), t| {
                (lo.min(t.lo), hi.max(t.hi))
            });
        Prepared { tris, lo, hi }
    }

    /// Squared distance to the closest triangle and its index. `hint` (a
    /// triangle likely to be close, or usize::MAX) only speeds the search:
    /// triangles whose bounding box is no closer than the best so far are
    /// skipped.
    fn closest(&self, p: DVec3, hint: usize) -> (f64, usize) {
        let (mut best, mut best_i) = match self.tris.get(hint) {
            Some(t) => ((closest_point(p, t.a, t.b, t.c) - p).length_squared(), hint),
            None => (f64::INFINITY, usize::MAX),
        };
        for (i, t) in self.tris.iter().enumerate() {
            let gap = (t.lo - p).max(p - t.hi).max(DVec3::ZERO);
            if gap.length_squared() >= best {
                continue;
            }
            let d2 = (closest_point(p, t.a, t.b, t.c) - p).length_squared();
            if d2 < best {
                best = d2;
                best_i = i;
            }
        }
        (best, best_i)
    }

    /// Generalised winding number at `p`: 0 outside the bounding box.
    fn winding(&self, p: DVec3) -> f64 {
        if p.cmplt(self.lo).any() || p.cmpgt(self.hi).any() {
            return 0.0;
        }
        let total: f64 = self
            .tris
            .iter()
            .map(|t| solid_angle(p, t.a, t.b, t.c))
            .sum();
        total / (4.0 * std::f64::consts::PI)
    }

    /// (signed distance, unsigned distance, closest triangle, inside). If
    /// `inside` is given it is used instead of the winding number.
    fn signed(&self, p: DVec3, hint: usize, inside: Option<bool>) -> (f64, f64, usize, bool) {
        let (d2, tri) = self.closest(p, hint);
        let d = d2.sqrt();
        let inside = inside.unwrap_or_else(|| self.winding(p).abs() > 0.5);
        let s = if d == 0.0 {
            0.0
        } else if inside {
            -d
        } else {
            d
        };
        (s, d, tri, inside)
    }
}

/// Solid angle (sr) of triangle abc seen from p, positive when abc runs
/// counter-clockwise seen from p (Van Oosterom & Strackee's formula).
fn solid_angle(p: DVec3, a: DVec3, b: DVec3, c: DVec3) -> f64 {
    let (a, b, c) = (a - p, b - p, c - p);
    let (la, lb, lc) = (a.length(), b.length(), c.length());
    let num = a.dot(b.cross(c));
    let den = la * lb * lc + a.dot(b) * lc + a.dot(c) * lb + b.dot(c) * la;
    2.0 * num.atan2(den)
}

/// Closest point to p on segment ab.
fn closest_on_segment(p: DVec3, a: DVec3, b: DVec3) -> DVec3 {
    let ab = b - a;
    let len2 = ab.length_squared();
    if len2 == 0.0 {
        return a;
    }
    a + ab * ((p - a).dot(ab) / len2).clamp(0.0, 1.0)
}

/// Closest point to p on triangle abc (exact up to rounding): classify p
/// against the Voronoi regions of the corners, then the edges, else project
/// onto the plane.
fn closest_point(p: DVec3, a: DVec3, b: DVec3, c: DVec3) -> DVec3 {
    let ab = b - a;
    let ac = c - a;
    let ap = p - a;
    let d1 = ab.dot(ap);
    let d2 = ac.dot(ap);
    if d1 <= 0.0 && d2 <= 0.0 {
        return a;
    }
    let bp = p - b;
    let d3 = ab.dot(bp);
    let d4 = ac.dot(bp);
    if d3 >= 0.0 && d4 <= d3 {
        return b;
    }
    let cp = p - c;
    let d5 = ab.dot(cp);
    let d6 = ac.dot(cp);
    if d6 >= 0.0 && d5 <= d6 {
        return c;
    }
    // Barycentric-like areas: vc for edge ab, vb for edge ac, va for edge bc.
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        return a + ab * (d1 / (d1 - d3));
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        return a + ac * (d2 / (d2 - d6));
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && d4 - d3 >= 0.0 && d5 - d6 >= 0.0 {
        return b + (c - b) * ((d4 - d3) / ((d4 - d3) + (d5 - d6)));
    }
    let sum = va + vb + vc;
    if sum > 0.0 && sum.is_finite() {
        return a + ab * (vb / sum) + ac * (vc / sum);
    }
    // Degenerate (zero-area) triangle: the closest of its edges' points.
    [
        closest_on_segment(p, a, b),
        closest_on_segment(p, b, c),
        closest_on_segment(p, c, a),
    ]
    .into_iter()
    .min_by(|x, y| {
        (*x - p)
            .length_squared()
            .total_cmp(&(*y - p).length_squared())
    })
    .unwrap_or(a)
}

/// SDF samples on a regular grid: value k = x + dims\[0\]·(y + dims\[1\]·z) is
/// the signed distance (m, f32) at origin + cell·(x, y, z).
#[derive(Clone, Debug, PartialEq)]
pub struct SdfGrid {
    /// Position of sample (0, 0, 0) (m).
    pub origin: DVec3,
    /// Sample spacing (m).
    pub cell: f64,
    /// Samples along x, y, z.
    pub dims: [u32; 3],
    /// Signed distances (m), negative inside.
    pub values: Vec<f32>,
    /// Depth of the deepest sample inside (m, ≥ 0): how far a point may
    /// move into the shape before the nearest surface is on the far side.
    pub deepest: f64,
    /// The mesh it was baked from (welded and oriented), for drawing.
    pub surface: Mesh,
}

/// Bakes the signed distance field of a mesh that passes [`Mesh::check`] on
/// a grid covering its bounding box grown by `padding` (m) on every side,
/// with cell size `cell` (m): dims = ⌈extent/cell⌉ + 1 per axis (a ratio
/// within 1e-9 of an integer counts as that integer), origin = min − padding.
/// Each sample is [`Mesh::signed_distance`] at the grid point, rounded to
/// f32. Refused when the grid would have more than `max_samples` samples.
///
/// The z-slices are baked in parallel (rayon). Along a row, the sign of a
/// sample is taken from the previous one when that one is farther than a cell
/// from the surface (the ball around it free of surface contains the new
/// point, so the winding number is the same); the closest-triangle search
/// starts from the previous sample's and skips triangles whose bounding box
/// is no closer. Measured: a 1,280-triangle icosphere (r = 0.1 m) on a 48³
/// grid (cell 5.1 mm, padding 20 mm) takes about 0.55 s in release on
/// 2 cores, most of it the O(triangles) bounding-box scan per sample (about
/// 2.0 s with the winding number summed at every sample); see the ignored
/// test `bake_timing`.
pub fn bake_sdf(
    mesh: &Mesh,
    cell: f64,
    padding: f64,
    max_samples: usize,
) -> Result<SdfGrid, MeshError> {
    if !(cell.is_finite() && cell > 0.0) {
        return Err(MeshError::BadGridParameter(format!(
            "the distance field's cell size must be a positive length in metres, not {cell}."
        )));
    }
    if !(padding.is_finite() && padding >= 0.0) {
        return Err(MeshError::BadGridParameter(format!(
            "the distance field's padding must be a length in metres of 0 or more, not {padding}."
        )));
    }
    mesh.check()?;
    let (lo, hi) = mesh.bounds();
    let origin = lo - DVec3::splat(padding);
    let extent = hi - lo + DVec3::splat(2.0 * padding);
    let n = (extent / cell - 1e-9).ceil().max(DVec3::ZERO) + 1.0;
    let samples = n.x * n.y * n.z;
    if samples > max_samples as f64 || n.max_element() > f64::from(u32::MAX) {
        let suggested = cell * (samples / max_samples.max(1) as f64).cbrt();
        return Err(MeshError::GridTooLarge {
            dims: [n.x as u64, n.y as u64, n.z as u64],
            samples,
            limit: max_samples,
            cell,
            padding,
            suggested,
        });
    }
    let dims = [n.x as u32, n.y as u32, n.z as u32];
    let (nx, ny) = (dims[0] as usize, dims[1] as usize);
    let prepared = Prepared::new(mesh);
    // A sign is passed on only from a sample clearly more than a cell away
    // from the surface, so rounding in the grid coordinates cannot matter.
    let reach = cell * (1.0 + 1e-6);
    let mut values = vec![0f32; nx * ny * dims[2] as usize];
    values
        .par_chunks_mut(nx * ny)
        .enumerate()
        .for_each(|(z, slice)| {
            let mut hint = usize::MAX;
            for y in 0..ny {
                let mut previous: Option<(f64, bool)> = None;
                for x in 0..nx {
                    let p = origin + cell * DVec3::new(x as f64, y as f64, z as f64);
                    let known = previous
                        .filter(|&(d, _)| d > reach)
                        .map(|(_, inside)| inside);
                    let (s, d, tri, inside) = prepared.signed(p, hint, known);
                    hint = tri;
                    previous = Some((d, inside));
                    slice[x + nx * y] = s as f32;
                }
            }
        });
    let deepest = values.iter().fold(0.0f64, |m, &v| m.max(-(v as f64)));
    Ok(SdfGrid {
        origin,
        cell,
        dims,
        values,
        deepest,
        surface: mesh.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// xorshift64* uniform numbers in [0, 1), reproducible.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> f64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
        }

        fn in_box(&mut self, lo: DVec3, hi: DVec3) -> DVec3 {
            lo + (hi - lo) * DVec3::new(self.next(), self.next(), self.next())
        }
    }

    /// A fresh, empty scratch directory for one test.
    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("strands-mesh-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Axis-aligned box [lo, hi]: its 8 corners (corner i has x from bit 0,
    /// y from bit 1, z from bit 2 of i) and its 6 faces as quads wound
    /// counter-clockwise seen from outside.
    fn cube_quads(lo: DVec3, hi: DVec3) -> (Vec<DVec3>, Vec<[u32; 4]>) {
        let vertices: Vec<DVec3> = (0..8u32)
            .map(|i| {
                DVec3::new(
                    if i & 1 == 0 { lo.x } else { hi.x },
                    if i & 2 == 0 { lo.y } else { hi.y },
                    if i & 4 == 0 { lo.z } else { hi.z },
                )
            })
            .collect();
        let mut quads = Vec::new();
        for axis in 0..3 {
            let (u, v) = ((axis + 1) % 3, (axis + 2) % 3);
            for side in 0..2u32 {
                let corner = |cu: u32, cv: u32| (side << axis) | (cu << u) | (cv << v);
                let mut q = [corner(0, 0), corner(1, 0), corner(1, 1), corner(0, 1)];
                let [a, b, c] = [q[0], q[1], q[2]].map(|i| vertices[i as usize]);
                let outward = if side == 1 { 1.0 } else { -1.0 };
                if (b - a).cross(c - a)[axis] * outward < 0.0 {
                    q.reverse();
                }
                quads.push(q);
            }
        }
        (vertices, quads)
    }

    /// The box [lo, hi] as 12 triangles wound outward (two per face).
    fn cube(lo: DVec3, hi: DVec3) -> Mesh {
        let (vertices, quads) = cube_quads(lo, hi);
        Mesh {
            vertices,
            triangles: quads
                .iter()
                .flat_map(|q| [[q[0], q[1], q[2]], [q[0], q[2], q[3]]])
                .collect(),
        }
    }

    /// Exact signed distance to the box [lo, hi] (negative inside).
    fn box_sdf(p: DVec3, lo: DVec3, hi: DVec3) -> f64 {
        let outside = (lo - p).max(p - hi);
        if outside.max_element() > 0.0 {
            outside.max(DVec3::ZERO).length()
        } else {
            outside.max_element()
        }
    }

    fn flipped(mesh: &Mesh) -> Mesh {
        Mesh {
            vertices: mesh.vertices.clone(),
            triangles: mesh.triangles.iter().map(|t| [t[0], t[2], t[1]]).collect(),
        }
    }

    /// Law: every triangle of an icosphere is a chord triangle of the sphere
    /// whose circumcircle has angular radius α, so its points lie between
    /// r·cos α and r from the centre, and the mesh (star-shaped about c)
    /// meets every ray from c between those radii. Hence the signed distance
    /// differs from the sphere's |p−c|−r by at most the sagitta
    /// s = r(1 − cos α). For an acute triangle with longest chord ℓ = 2r
    /// sin(θ/2) (θ = edge angle seen from c), the circumradius is at most
    /// ℓ/√3, so sin α ≤ 2 sin(θ_max/2)/√3, i.e. α ≈ θ_max/√3 and
    /// s ≈ r θ_max²/6. θ_max is measured on the mesh; acuteness checked.
    #[test]
    fn icosphere_distance_within_sagitta_of_sphere() {
        let (c, r) = (DVec3::new(0.1, 1.6, -0.2), 0.1);
        let mesh = Mesh::icosphere(c, r, 3);
        assert_eq!(mesh.triangles.len(), 1280);
        assert_eq!(mesh.vertices.len(), 642);
        mesh.check().unwrap();
        let mut theta_max: f64 = 0.0;
        for t in &mesh.triangles {
            let [a, b, cc] = t.map(|i| mesh.vertices[i as usize] - c);
            for (u, v, w) in [(a, b, cc), (b, cc, a), (cc, a, b)] {
                theta_max = theta_max.max(u.angle_between(v));
                // acute: the angle at w is below 90°
                assert!((u - w).dot(v - w) > 0.0, "obtuse triangle");
            }
        }
        let alpha = (2.0 * (theta_max / 2.0).sin() / 3f64.sqrt()).asin();
        let bound = r * (1.0 - alpha.cos());
        // θ_max ≈ 0.157 rad here (an icosahedron edge spans 1.107 rad).
        assert!(bound < 0.005 * r, "bound {bound} is not tight");
        let mut rng = Rng(0x5eed);
        let mut worst: f64 = 0.0;
        for _ in 0..2000 {
            let p = rng.in_box(c - 2.0 * r, c + 2.0 * r);
            let err = (mesh.signed_distance(p) - ((p - c).length() - r)).abs();
            worst = worst.max(err);
        }
        // The centre is farthest inside: its error is the largest sagitta.
        worst = worst.max((mesh.signed_distance(c) + r).abs());
        println!(
            "θ_max {theta_max:.5} rad, α {alpha:.5} rad, bound {bound:.3e} m, worst {worst:.3e} m"
        );
        assert!(
            worst <= bound + 1e-12,
            "worst error {worst} above the sagitta bound {bound}"
        );
        assert!(worst > 0.5 * bound, "worst error {worst} vs bound {bound}");
    }

    /// Law: the winding number is 1 inside a closed mesh and 0 outside, so
    /// the sign is negative exactly inside; |w| makes it independent of the
    /// orientation. The expected magnitude is the exact box distance.
    #[test]
    fn winding_sign_inside_and_outside_a_cube_either_orientation() {
        let (lo, hi) = (DVec3::new(-0.1, 0.2, 0.0), DVec3::new(0.3, 0.5, 0.25));
        let mesh = cube(lo, hi);
        mesh.check().unwrap();
        assert!((mesh.signed_volume() - 0.4 * 0.3 * 0.25).abs() < 1e-15);
        let inverted = flipped(&mesh);
        inverted.check().unwrap();
        assert!(inverted.signed_volume() < 0.0);
        let mut rng = Rng(7);
        for _ in 0..500 {
            let p = rng.in_box(lo - 0.2, hi + 0.2);
            let expected = box_sdf(p, lo, hi);
            let d = mesh.signed_distance(p);
            assert_eq!(d < 0.0, expected < 0.0, "sign at {p}");
            assert!((d - expected).abs() < 1e-12, "{d} vs {expected} at {p}");
            assert!((inverted.signed_distance(p) - d).abs() < 1e-12);
        }
        let centre = 0.5 * (lo + hi);
        assert!((mesh.signed_distance(centre) + 0.125).abs() < 1e-15);
    }

    /// Law: the returned point lies on the triangle (barycentric coordinates
    /// in [0, 1]) and no point of the triangle (dense barycentric sampling)
    /// is closer.
    #[test]
    fn closest_point_is_on_the_triangle_and_nearest() {
        let mut rng = Rng(99);
        for _ in 0..200 {
            let [a, b, c] = [(); 3].map(|_| rng.in_box(DVec3::splat(-1.0), DVec3::splat(1.0)));
            let p = rng.in_box(DVec3::splat(-2.0), DVec3::splat(2.0));
            let q = closest_point(p, a, b, c);
            let n = (b - a).cross(c - a);
            let area2 = n.length_squared();
            let bary_u = (c - q).cross(a - q).dot(n) / area2;
            let bary_v = (a - q).cross(b - q).dot(n) / area2;
            assert!((q - a).dot(n).abs() < 1e-9 * n.length(), "off the plane");
            assert!(bary_u >= -1e-9 && bary_v >= -1e-9 && bary_u + bary_v <= 1.0 + 1e-9);
            let d = (q - p).length();
            let steps = 60;
            for i in 0..=steps {
                for j in 0..=steps - i {
                    let (u, v) = (i as f64 / steps as f64, j as f64 / steps as f64);
                    let s = a + u * (b - a) + v * (c - a);
                    assert!((s - p).length() >= d - 1e-12);
                }
            }
        }
    }

    /// Law: a solid needs a closed surface (every edge shared by exactly two
    /// triangles) and a volume. Removing one of the cube's 12 triangles opens
    /// its 3 edges; two triangles back to back are closed but flat.
    #[test]
    fn check_refuses_open_flat_and_invalid_meshes() {
        let mut open = cube(DVec3::ZERO, DVec3::ONE);
        open.triangles.pop();
        match open.check() {
            Err(MeshError::NotClosed {
                open_edges, uses, ..
            }) => {
                assert_eq!(open_edges, 3);
                assert_eq!(uses, 1);
            }
            other => panic!("{other:?}"),
        }
        let flat = Mesh {
            vertices: vec![DVec3::ZERO, DVec3::X, DVec3::Y],
            triangles: vec![[0, 1, 2], [0, 2, 1]],
        };
        assert!(matches!(flat.check(), Err(MeshError::NoVolume { .. })));

        let mut mixed = cube(DVec3::ZERO, DVec3::ONE);
        mixed.triangles[0].swap(1, 2);
        assert!(matches!(
            mixed.check(),
            Err(MeshError::InconsistentWinding { edges: 3, .. })
        ));

        let mut nan = cube(DVec3::ZERO, DVec3::ONE);
        nan.vertices[5].y = f64::NAN;
        assert!(matches!(
            nan.check(),
            Err(MeshError::NonFiniteVertex { index: 5, .. })
        ));

        let mut bad = cube(DVec3::ZERO, DVec3::ONE);
        bad.triangles[3][1] = 8;
        assert!(matches!(
            bad.check(),
            Err(MeshError::BadIndex {
                triangle: 3,
                index: 8,
                vertices: 8
            })
        ));

        // A duplicate of vertex 0 welds onto it and makes triangle 0 degenerate.
        let mut degenerate = cube(DVec3::ZERO, DVec3::ONE);
        degenerate.vertices.push(degenerate.vertices[0]);
        degenerate.triangles[0][1] = 8;
        degenerate.triangles[0][0] = 0;
        degenerate.triangles[0][2] = 0;
        assert!(matches!(
            degenerate.check(),
            Err(MeshError::DegenerateTriangle { triangle: 0, .. })
        ));

        let empty = Mesh {
            vertices: vec![],
            triangles: vec![],
        };
        assert!(matches!(empty.check(), Err(MeshError::NoTriangles)));
        // Messages are sentences with the example edge's positions.
        let message = open.check().unwrap_err().to_string();
        assert!(
            message.contains("3 edges") && message.contains("m, used by 1"),
            "{message}"
        );
    }

    /// Law: the bake samples signed_distance at origin + cell·(x, y, z) with
    /// dims = ⌈extent/cell⌉ + 1 (extent = bbox + 2·padding), so each value is
    /// that function's value rounded to f32.
    #[test]
    fn bake_matches_signed_distance_at_grid_points() {
        let (c, r) = (DVec3::new(0.0, 1.6, 0.0), 0.1);
        let mesh = Mesh::icosphere(c, r, 2);
        let (lo, hi) = mesh.bounds();
        let (cell, padding) = (0.01, 0.03);
        let grid = bake_sdf(&mesh, cell, padding, 1_000_000).unwrap();
        let expected_dims = ((hi - lo + 2.0 * padding) / cell - 1e-9).ceil() + 1.0;
        assert_eq!(
            grid.dims,
            [
                expected_dims.x as u32,
                expected_dims.y as u32,
                expected_dims.z as u32
            ]
        );
        assert_eq!(grid.origin, lo - padding);
        let [nx, ny, nz] = grid.dims.map(|d| d as usize);
        assert_eq!(grid.values.len(), nx * ny * nz);
        let last =
            grid.origin + cell * DVec3::new((nx - 1) as f64, (ny - 1) as f64, (nz - 1) as f64);
        assert!(last.cmpge(hi + padding - 1e-9).all());
        let mut inside = 0;
        for z in 0..nz {
            for y in 0..ny {
                for x in 0..nx {
                    let p = grid.origin + cell * DVec3::new(x as f64, y as f64, z as f64);
                    let v = grid.values[x + nx * (y + ny * z)];
                    assert_eq!(v, mesh.signed_distance(p) as f32, "at {x},{y},{z}");
                    inside += usize::from(v < 0.0);
                }
            }
        }
        // About the sphere's volume in cells: (4/3)π(0.1/0.01)³ ≈ 4189.
        assert!((3900..4300).contains(&inside), "{inside}");
    }

    #[test]
    fn bake_refuses_grids_above_the_limit_and_bad_cells() {
        let mesh = Mesh::icosphere(DVec3::ZERO, 0.1, 1);
        // extent 0.2 + 2·0.03 = 0.26 m at 0.02 m: 13 + 1 = 14 per axis.
        let err = bake_sdf(&mesh, 0.02, 0.03, 1000).unwrap_err();
        assert!(matches!(err, MeshError::GridTooLarge { limit: 1000, .. }));
        let message = err.to_string();
        assert!(
            message.contains("14×14×14 = 2744") && message.contains("1000"),
            "{message}"
        );
        assert!(bake_sdf(&mesh, 0.02, 0.03, 2744).is_ok());
        assert!(matches!(
            bake_sdf(&mesh, 0.0, 0.03, 1000),
            Err(MeshError::BadGridParameter(_))
        ));
        assert!(matches!(
            bake_sdf(&mesh, 0.01, f64::NAN, 1000),
            Err(MeshError::BadGridParameter(_))
        ));
    }

    /// Law: write_obj prints shortest round-trip decimals, so reading the
    /// file back gives the same vertices, hence the same volume.
    #[test]
    fn obj_round_trip_keeps_the_volume() {
        let dir = scratch("roundtrip");
        let mesh = Mesh::icosphere(DVec3::new(0.0, 1.6, 0.0), 0.1, 2);
        let path = dir.join("sphere.OBJ");
        mesh.write_obj(&path).unwrap();
        let loaded = load_mesh(&path).unwrap();
        assert_eq!(loaded.triangles.len(), mesh.triangles.len());
        assert_eq!(loaded.vertices.len(), mesh.vertices.len());
        assert_eq!(loaded.signed_volume(), mesh.signed_volume());
        assert_eq!(loaded.bounds(), mesh.bounds());
        let _ = std::fs::remove_dir_all(dir);
    }

    /// Law: load_mesh welds per-face vertices, triangulates polygons, and
    /// orients the shell outward, so a unit cube of 6 separately-vertexed
    /// quads, some wound inward, loads with 8 vertices and volume +1.
    #[test]
    fn obj_quads_welded_and_oriented_outward() {
        let dir = scratch("quads");
        let (vertices, quads) = cube_quads(DVec3::ZERO, DVec3::ONE);
        let mut text = String::from("o cube\n");
        for (f, &quad) in quads.iter().enumerate() {
            // Every other face wound inward.
            let mut quad = quad;
            if f % 2 == 0 {
                quad.reverse();
            }
            for i in quad {
                let v = vertices[i as usize];
                text += &format!("v {} {} {}\n", v.x, v.y, v.z);
            }
            let k = 4 * f + 1;
            text += &format!("f {} {} {} {}\n", k, k + 1, k + 2, k + 3);
        }
        let path = dir.join("cube.obj");
        std::fs::write(&path, text).unwrap();
        let loaded = load_mesh(&path).unwrap();
        assert_eq!(loaded.vertices.len(), 8);
        assert_eq!(loaded.triangles.len(), 12);
        assert!((loaded.signed_volume() - 1.0).abs() < 1e-15);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn load_refuses_missing_garbage_and_unsupported_files() {
        let dir = scratch("refuse");
        assert!(matches!(
            load_mesh(&dir.join("missing.obj")),
            Err(MeshError::Io { .. })
        ));
        let garbage = dir.join("garbage.obj");
        std::fs::write(&garbage, [0xff, 0xfe, 0x00, 0x80, b'\n', 0xc3]).unwrap();
        assert!(matches!(
            load_mesh(&garbage),
            Err(MeshError::Parse { format: "OBJ", .. })
        ));
        let bad_number = dir.join("bad.obj");
        std::fs::write(&bad_number, "v 1 2 x\nf 1 1 1\n").unwrap();
        assert!(matches!(
            load_mesh(&bad_number),
            Err(MeshError::Parse { .. })
        ));
        let garbage_gltf = dir.join("garbage.glb");
        std::fs::write(&garbage_gltf, b"not a glTF at all").unwrap();
        assert!(matches!(
            load_mesh(&garbage_gltf),
            Err(MeshError::Parse { format: "glTF", .. })
        ));
        let points = dir.join("points.obj");
        std::fs::write(&points, "v 0 0 0\nv 1 0 0\nl 1 2\n").unwrap();
        assert!(matches!(load_mesh(&points), Err(MeshError::NoTriangles)));
        let stl = dir.join("model.stl");
        std::fs::write(&stl, "solid x\nendsolid x\n").unwrap();
        let err = load_mesh(&stl).unwrap_err();
        assert!(matches!(err, MeshError::UnsupportedExtension(_)));
        let message = err.to_string();
        for ext in [".stl", ".obj", ".gltf", ".glb"] {
            assert!(message.contains(ext), "{message}");
        }
        let mut open = cube(DVec3::ZERO, DVec3::ONE);
        open.triangles.pop();
        let open_path = dir.join("open.obj");
        open.write_obj(&open_path).unwrap();
        assert!(matches!(
            load_mesh(&open_path),
            Err(MeshError::NotClosed { open_edges: 3, .. })
        ));
        let _ = std::fs::remove_dir_all(dir);
    }

    fn encode_base64(bytes: &[u8]) -> String {
        const ALPHABET: &[u8; 64] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let b = [
                chunk[0],
                *chunk.get(1).unwrap_or(&0),
                *chunk.get(2).unwrap_or(&0),
            ];
            let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
            for k in 0..4 {
                if k <= chunk.len() {
                    out.push(ALPHABET[(n >> (18 - 6 * k) & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }

    #[test]
    fn base64_round_trip() {
        for len in 0..20 {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            assert_eq!(decode_base64(&encode_base64(&bytes)).unwrap(), bytes);
        }
        assert_eq!(decode_base64("TWFu").unwrap(), b"Man");
        assert!(decode_base64("TWFuA").is_none());
        assert!(decode_base64("TW!u").is_none());
        assert_eq!(percent_decode("my%20cube.bin").unwrap(), "my cube.bin");
    }

    /// A unit cube [0, 1]³ with 4 vertices per face (24, as exporters write
    /// them for flat normals) and u16 indices: (buffer bytes, glTF JSON with
    /// `buffer` as the buffer object). The scene has a node translated by
    /// (0, 1, 0) whose child is scaled by 2 and holds the mesh.
    fn gltf_cube(buffer: &str) -> (Vec<u8>, String) {
        let (vertices, quads) = cube_quads(DVec3::ZERO, DVec3::ONE);
        let mut positions: Vec<u8> = Vec::new();
        let mut indices: Vec<u8> = Vec::new();
        for (f, quad) in quads.iter().enumerate() {
            for &i in quad {
                for x in vertices[i as usize].to_array() {
                    positions.extend((x as f32).to_le_bytes());
                }
            }
            let k = 4 * f as u16;
            for i in [k, k + 1, k + 2, k, k + 2, k + 3] {
                indices.extend(i.to_le_bytes());
            }
        }
        assert_eq!((positions.len(), indices.len()), (288, 72));
        let mut data = positions;
        data.extend(indices);
        let json = format!(
            r#"{{
  "asset": {{"version": "2.0"}},
  "scene": 0,
  "scenes": [{{"nodes": [0]}}],
  "nodes": [
    {{"translation": [0.0, 1.0, 0.0], "children": [1]}},
    {{"scale": [2.0, 2.0, 2.0], "mesh": 0}}
  ],
  "meshes": [{{"primitives": [{{"attributes": {{"POSITION": 0}}, "indices": 1, "mode": 4}}]}}],
  "buffers": [{buffer}],
  "bufferViews": [
    {{"buffer": 0, "byteOffset": 0, "byteLength": 288, "target": 34962}},
    {{"buffer": 0, "byteOffset": 288, "byteLength": 72, "target": 34963}}
  ],
  "accessors": [
    {{"bufferView": 0, "componentType": 5126, "count": 24, "type": "VEC3",
      "min": [0.0, 0.0, 0.0], "max": [1.0, 1.0, 1.0]}},
    {{"bufferView": 1, "componentType": 5123, "count": 36, "type": "SCALAR"}}
  ]
}}"#
        );
        (data, json)
    }

    /// Law: node transforms compose parent·child, so the unit cube scaled by
    /// 2 then moved up by 1 spans [0, 2] × [1, 3] × [0, 2] with volume 2³ = 8;
    /// its 24 per-face vertices weld to 8. Checked for an embedded base64
    /// buffer (.gltf) and for a GLB binary chunk.
    #[test]
    fn gltf_and_glb_cubes_load_with_transforms() {
        let dir = scratch("gltf");
        let expected_bounds = (DVec3::new(0.0, 1.0, 0.0), DVec3::new(2.0, 3.0, 2.0));

        let (data, _) = gltf_cube("");
        let buffer = format!(
            r#"{{"byteLength": {}, "uri": "data:application/octet-stream;base64,{}"}}"#,
            data.len(),
            encode_base64(&data)
        );
        let (_, json) = gltf_cube(&buffer);
        let path = dir.join("cube.gltf");
        std::fs::write(&path, &json).unwrap();
        let mesh = load_mesh(&path).unwrap();
        assert_eq!(mesh.vertices.len(), 8);
        assert_eq!(mesh.triangles.len(), 12);
        assert!((mesh.signed_volume() - 8.0).abs() < 1e-12);
        assert_eq!(mesh.bounds(), expected_bounds);

        // The same with the buffer in a file beside the glTF.
        std::fs::write(dir.join("cube data.bin"), &data).unwrap();
        let external = format!(
            r#"{{"byteLength": {}, "uri": "cube%20data.bin"}}"#,
            data.len()
        );
        let (_, json_external) = gltf_cube(&external);
        let path_external = dir.join("external.gltf");
        std::fs::write(&path_external, &json_external).unwrap();
        assert_eq!(load_mesh(&path_external).unwrap(), mesh);
        std::fs::remove_file(dir.join("cube data.bin")).unwrap();
        assert!(matches!(
            load_mesh(&path_external),
            Err(MeshError::Io { .. })
        ));

        let (data, mut json) = gltf_cube(&format!(r#"{{"byteLength": {}}}"#, 360));
        while json.len() % 4 != 0 {
            json.push(' ');
        }
        let mut glb = Vec::new();
        glb.extend(b"glTF");
        glb.extend(2u32.to_le_bytes());
        glb.extend(((12 + 8 + json.len() + 8 + data.len()) as u32).to_le_bytes());
        glb.extend((json.len() as u32).to_le_bytes());
        glb.extend(b"JSON");
        glb.extend(json.as_bytes());
        glb.extend((data.len() as u32).to_le_bytes());
        glb.extend(b"BIN\0");
        glb.extend(&data);
        let glb_path = dir.join("cube.GLB");
        std::fs::write(&glb_path, &glb).unwrap();
        let from_glb = load_mesh(&glb_path).unwrap();
        assert_eq!(from_glb, mesh);
        let _ = std::fs::remove_dir_all(dir);
    }

    // ----- the shipped bust -------------------------------------------------

    /// Where rays from `o` along unit `d` leave the ellipsoid (o inside).
    fn ellipsoid_exit(o: DVec3, d: DVec3, centre: DVec3, radii: DVec3) -> f64 {
        let q = (o - centre) / radii;
        let e = d / radii;
        let (a, b, c) = (e.dot(e), q.dot(e), q.dot(q) - 1.0);
        (-b + (b * b - a * c).sqrt()) / a
    }

    /// Where the ray leaves the vertical cylinder of radius `radius` around
    /// (axis.x, ·, axis.y) between heights y0 and y1 (o inside).
    fn cylinder_exit(o: DVec3, d: DVec3, axis: [f64; 2], radius: f64, y0: f64, y1: f64) -> f64 {
        let (qx, qz) = (o.x - axis[0], o.z - axis[1]);
        let a = d.x * d.x + d.z * d.z;
        let side = if a > 0.0 {
            let b = qx * d.x + qz * d.z;
            let c = qx * qx + qz * qz - radius * radius;
            (-b + (b * b - a * c).sqrt()) / a
        } else {
            f64::INFINITY
        };
        let cap = if d.y > 0.0 {
            (y1 - o.y) / d.y
        } else if d.y < 0.0 {
            (y0 - o.y) / d.y
        } else {
            f64::INFINITY
        };
        side.min(cap)
    }

    /// Smooth maximum: max(a, b) plus at most k/4 where they are within k.
    fn smooth_max(a: f64, b: f64, k: f64) -> f64 {
        let h = (k - (a - b).abs()).max(0.0) / k;
        a.max(b) + 0.25 * k * h * h
    }

    /// The bust: a star-shaped solid about o = (0, 1.52, 0), the smooth union
    /// of four convex pieces that all contain o — the skull (sphere r = 0.1 m
    /// at (0, 1.6, 0), the `hair` scene's scalp), the jaw (ellipsoid), the
    /// neck (vertical cylinder) and the shoulders (flat ellipsoid) — sampled
    /// along the 642 directions of a 3-subdivision icosphere: vertex = o +
    /// ρ(d)·d, ρ the ray's exit distance. Same topology as the icosphere, so
    /// closed and embedded (1,280 triangles).
    fn bust() -> Mesh {
        let o = DVec3::new(0.0, 1.52, 0.0);
        let k = 0.01;
        let directions = Mesh::icosphere(DVec3::ZERO, 1.0, 3);
        let vertices = directions
            .vertices
            .iter()
            .map(|&d| {
                let skull = ellipsoid_exit(o, d, DVec3::new(0.0, 1.6, 0.0), DVec3::splat(0.1));
                let jaw = ellipsoid_exit(
                    o,
                    d,
                    DVec3::new(0.0, 1.545, 0.02),
                    DVec3::new(0.068, 0.085, 0.085),
                );
                let neck = cylinder_exit(o, d, [0.0, -0.01], 0.052, 1.30, 1.58);
                let shoulders = ellipsoid_exit(
                    o,
                    d,
                    DVec3::new(0.0, 1.29, -0.01),
                    DVec3::new(0.19, 0.235, 0.105),
                );
                let rho = smooth_max(smooth_max(skull, jaw, k), smooth_max(neck, shoulders, k), k);
                o + rho * d
            })
            .collect();
        Mesh {
            vertices,
            triangles: directions.triangles,
        }
    }

    fn bust_path() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/bust.obj")
    }

    /// Regenerates scenes/bust.obj:
    /// `cargo test --release --lib model::colliders::mesh -- --ignored generate_bust`.
    #[test]
    #[ignore]
    fn generate_bust() {
        let mesh = bust();
        mesh.check().unwrap();
        let (lo, hi) = mesh.bounds();
        mesh.write_obj_with_header(
            &bust_path(),
            &format!(
                "Bust collider for strands: skull (sphere r = 0.1 m at (0, 1.6, 0), the hair \
                 scene's scalp), jaw, neck and shoulders,\nsmoothly united and sampled along \
                 the directions of a 3-subdivision icosphere from (0, 1.52, 0): closed, {} \
                 vertices, {} triangles, in metres,\nbounds {} to {}. Generated by \
                 src/model/colliders/mesh.rs (test generate_bust, run with --ignored).",
                mesh.vertices.len(),
                mesh.triangles.len(),
                Pt(&lo),
                Pt(&hi)
            ),
        )
        .unwrap();
    }

    /// Law: the shipped bust is what the generator makes (same volume and
    /// bounds) and passes check(); where hair grows (up to 75° from the
    /// crown) its vertices lie on the hair scene's scalp sphere (r = 0.1 m
    /// at (0, 1.6, 0)), so each facet there is a chord triangle whose points
    /// lie between √(r² − ρ²) and r from the centre (ρ its circumradius):
    /// scalp points are outside the mesh by at most the largest sagitta
    /// r − √(r² − ρ²) of those facets (about 1.3 mm, edges ≈ 2.7 cm).
    #[test]
    fn shipped_bust_is_closed_and_fits_the_scalp() {
        let mesh = load_mesh(&bust_path()).unwrap();
        let generated = bust();
        assert_eq!(mesh.triangles.len(), 1280);
        assert!((mesh.signed_volume() - generated.signed_volume()).abs() < 1e-12);
        assert_eq!(mesh.bounds(), generated.bounds());
        let (c, r) = (DVec3::new(0.0, 1.6, 0.0), 0.1);
        assert!(mesh.signed_distance(c) < -0.09);
        let crown_angle = |p: DVec3| (p - c).angle_between(DVec3::Y);
        let mut bound: f64 = 0.0;
        for t in &mesh.triangles {
            let [a, b, cc] = t.map(|i| mesh.vertices[i as usize]);
            if crown_angle((a + b + cc) / 3.0) > 85f64.to_radians() {
                continue;
            }
            for v in [a, b, cc] {
                assert!(
                    ((v - c).length() - r).abs() < 1e-12,
                    "scalp vertex {v} off the sphere"
                );
            }
            let rho = (a - b).length() * (b - cc).length() * (cc - a).length()
                / (2.0 * (b - a).cross(cc - a).length());
            bound = bound.max(r - (r * r - rho * rho).sqrt());
        }
        assert!(bound < 2e-3, "sagitta {bound}");
        let mut rng = Rng(3);
        let mut worst: f64 = 0.0;
        for _ in 0..300 {
            let polar = 75f64.to_radians() * rng.next().sqrt();
            let azimuth = std::f64::consts::TAU * rng.next();
            let n = DVec3::new(
                polar.sin() * azimuth.cos(),
                polar.cos(),
                polar.sin() * azimuth.sin(),
            );
            let d = mesh.signed_distance(c + r * n);
            assert!(
                d >= 0.0 && d <= bound + 1e-12,
                "scalp point {n}: {d} (bound {bound})"
            );
            worst = worst.max(d);
        }
        println!("scalp sagitta bound {bound:.3e} m, worst {worst:.3e} m");
        assert!(worst > 0.3 * bound, "{worst} vs {bound}");
    }

    /// Bake timing (the figure in bake_sdf's doc comment):
    /// `cargo test --release --lib model::colliders::mesh -- --ignored --nocapture bake_timing`.
    #[test]
    #[ignore]
    fn bake_timing() {
        let mesh = Mesh::icosphere(DVec3::new(0.0, 1.6, 0.0), 0.1, 3);
        let padding = 0.02;
        let cell = 0.24 / 47.0;
        let start = std::time::Instant::now();
        let grid = bake_sdf(&mesh, cell, padding, 1 << 20).unwrap();
        let elapsed = start.elapsed();
        assert_eq!(grid.dims, [48, 48, 48]);
        println!(
            "bake of {} triangles on {:?}: {:.3} s on {} threads",
            mesh.triangles.len(),
            grid.dims,
            elapsed.as_secs_f64(),
            rayon::current_num_threads()
        );
        let start = std::time::Instant::now();
        let prepared = Prepared::new(&mesh);
        let brute: Vec<f32> = (0..48 * 48 * 48)
            .into_par_iter()
            .map(|k: usize| {
                let p = grid.origin
                    + cell * DVec3::new((k % 48) as f64, (k / 48 % 48) as f64, (k / 2304) as f64);
                prepared.signed(p, usize::MAX, None).0 as f32
            })
            .collect();
        println!(
            "winding number at every sample: {:.3} s",
            start.elapsed().as_secs_f64()
        );
        assert_eq!(brute, grid.values);
    }
}
