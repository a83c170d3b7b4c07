//! Every shader parses and validates with naga (no GPU needed), and every
//! Rust struct shared with WGSL has the size and member offsets that WGSL's
//! layout rules give it (naga computes them from the shader source).

use strands::gpu::Kernel;
use strands::gpu::layout::{SHADER_SOURCE, shared_structs};

fn module() -> naga::Module {
    naga::front::wgsl::parse_str(SHADER_SOURCE)
        .unwrap_or_else(|e| panic!("shaders do not parse:\n{}", e.emit_to_string(SHADER_SOURCE)))
}

#[test]
fn shaders_validate_with_naga() {
    let m = module();
    naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::empty(),
    )
    .validate(&m)
    .unwrap_or_else(|e| {
        panic!(
            "shaders do not validate:\n{}",
            e.emit_to_string(SHADER_SOURCE)
        )
    });
    // Every kernel the simulator dispatches is a compute entry point.
    for k in Kernel::ALL {
        let ep = m
            .entry_points
            .iter()
            .find(|ep| ep.name == k.entry_point())
            .unwrap_or_else(|| panic!("no entry point `{}`", k.entry_point()));
        assert_eq!(ep.stage, naga::ShaderStage::Compute);
        assert_eq!(ep.workgroup_size, [64, 1, 1], "{}", ep.name);
    }
}

#[test]
fn rust_structs_match_wgsl_layout() {
    let m = module();
    for (name, size, fields) in shared_structs() {
        let (members, span) = m
            .types
            .iter()
            .find_map(|(_, ty)| match (&ty.name, &ty.inner) {
                (Some(n), naga::TypeInner::Struct { members, span }) if n == name => {
                    Some((members.clone(), *span))
                }
                _ => None,
            })
            .unwrap_or_else(|| panic!("WGSL has no struct {name}"));
        assert_eq!(span as usize, size, "size of {name}");
        let wgsl: Vec<(String, usize)> = members
            .iter()
            .map(|mb| (mb.name.clone().unwrap_or_default(), mb.offset as usize))
            .collect();
        let rust: Vec<(String, usize)> = fields.iter().map(|(f, o)| (f.to_string(), *o)).collect();
        assert_eq!(rust, wgsl, "members and offsets of {name} (Rust vs WGSL)");
    }
}
