//! The simulator's WGSL files and the module a pipeline is built from.
//!
//! WGSL has no imports. Each file under `shaders/` names the files whose
//! definitions it uses in `#import NAME` lines at its top (NAME is the
//! file's stem), and `compose` writes one module from a set of root files:
//! every file the roots import, directly or not, once, each after the files
//! it imports, with its `#import` lines turned into comments. Imports form
//! no cycle: `compose` refuses one and names it.
//!
//! Three files have an alternative with the same names, chosen per device
//! or per kernel (`ALTERNATIVES`): a file imports the first of a pair, and
//! a composition that swaps it takes the second everywhere instead.
//! Nothing else is rewritten (the approximate-math variant of
//! `layout::shader_variant`, a test tool, wraps calls in each file's text).

use std::fmt;

/// Every file of the simulator's kernels, by stem (`shaders/STEM.wgsl`).
/// The renderer's and the bandwidth probe's shaders are modules of their
/// own and import nothing.
pub const FILES: [(&str, &str); 19] = [
    ("common", include_str!("../../shaders/common.wgsl")),
    ("real_f32", include_str!("../../shaders/real_f32.wgsl")),
    ("real_f64", include_str!("../../shaders/real_f64.wgsl")),
    (
        "step_uniform",
        include_str!("../../shaders/step_uniform.wgsl"),
    ),
    ("step_table", include_str!("../../shaders/step_table.wgsl")),
    ("frames", include_str!("../../shaders/frames.wgsl")),
    ("twist", include_str!("../../shaders/twist.wgsl")),
    ("forces", include_str!("../../shaders/forces.wgsl")),
    ("integrate", include_str!("../../shaders/integrate.wgsl")),
    ("project", include_str!("../../shaders/project.wgsl")),
    ("contact", include_str!("../../shaders/contact.wgsl")),
    ("substep", include_str!("../../shaders/substep.wgsl")),
    ("frame", include_str!("../../shaders/frame.wgsl")),
    ("grid_fixed", include_str!("../../shaders/grid_fixed.wgsl")),
    ("grid_u32", include_str!("../../shaders/grid_u32.wgsl")),
    ("grid_i64", include_str!("../../shaders/grid_i64.wgsl")),
    ("grid", include_str!("../../shaders/grid.wgsl")),
    ("grid_sort", include_str!("../../shaders/grid_sort.wgsl")),
    ("world", include_str!("../../shaders/world.wgsl")),
];

/// The files with an alternative: (the file others import, the file that
/// takes its place where a composition swaps it).
/// * `real_f32` → `real_f64`: the bending stencil in f64, on a device
///   with `wgpu::Features::SHADER_F64`.
/// * `step_uniform` → `step_table`: a substep's changing values from the
///   frame's table of steps rather than the uniform, in the whole-frame
///   kernel's module.
/// * `grid_u32` → `grid_i64`: the grid's accumulators as 64-bit atomics,
///   on a device with 64-bit atomics.
pub const ALTERNATIVES: [(&str, &str); 3] = [
    ("real_f32", "real_f64"),
    ("step_uniform", "step_table"),
    ("grid_u32", "grid_i64"),
];

/// The text of file `stem`, if it is one of `FILES`.
pub fn file(stem: &str) -> Option<&'static str> {
    FILES
        .iter()
        .find(|(s, _)| *s == stem)
        .map(|(_, text)| *text)
}

/// The stems a file's `#import` lines name, in order.
pub fn imports(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .filter_map(|line| line.strip_prefix("#import "))
        .map(str::trim)
}

/// Why a composition failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ComposeError {
    /// A file imports a stem that is no file.
    UnknownImport {
        /// The importing file's stem.
        file: String,
        /// The stem it imports.
        import: String,
    },
    /// The imports run in a circle, first file repeated last.
    Cycle(Vec<String>),
    /// Both files of an alternative pair ended up in one module.
    BothAlternatives(String, String),
}

impl fmt::Display for ComposeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ComposeError::UnknownImport { file, import } => {
                write!(
                    f,
                    "shaders/{file}.wgsl imports `{import}`, which is no shader file"
                )
            }
            ComposeError::Cycle(files) => {
                write!(f, "shader imports run in a circle: {}", files.join(" → "))
            }
            ComposeError::BothAlternatives(a, b) => write!(
                f,
                "shaders/{a}.wgsl and its alternative shaders/{b}.wgsl are both in one module"
            ),
        }
    }
}

impl std::error::Error for ComposeError {}

/// The files of the module of `roots` with `swaps` (pairs of
/// `ALTERNATIVES`' kind: each first file replaced by the second), each
/// after those it imports, as (stem, text). `lookup` gives a stem's text.
pub fn order<'a>(
    lookup: impl Fn(&str) -> Option<&'a str>,
    roots: &[&'a str],
    swaps: &[(&'a str, &'a str)],
) -> Result<Vec<(&'a str, &'a str)>, ComposeError> {
    let swap = |stem: &'a str| {
        swaps
            .iter()
            .find(|(from, _)| *from == stem)
            .map_or(stem, |(_, to)| *to)
    };
    let mut done: Vec<(&'a str, &'a str)> = Vec::new();
    // Depth-first, the files being visited on `path`.
    fn visit<'a>(
        stem: &'a str,
        from: &str,
        lookup: &dyn Fn(&str) -> Option<&'a str>,
        swap: &dyn Fn(&'a str) -> &'a str,
        path: &mut Vec<&'a str>,
        done: &mut Vec<(&'a str, &'a str)>,
    ) -> Result<(), ComposeError> {
        if done.iter().any(|(s, _)| *s == stem) {
            return Ok(());
        }
        if let Some(at) = path.iter().position(|s| *s == stem) {
            let mut circle: Vec<String> = path[at..].iter().map(|s| s.to_string()).collect();
            circle.push(stem.to_string());
            return Err(ComposeError::Cycle(circle));
        }
        let text = lookup(stem).ok_or_else(|| ComposeError::UnknownImport {
            file: from.to_string(),
            import: stem.to_string(),
        })?;
        path.push(stem);
        for import in imports(text) {
            visit(swap(import), stem, lookup, swap, path, done)?;
        }
        path.pop();
        done.push((stem, text));
        Ok(())
    }
    for root in roots {
        visit(
            swap(root),
            "(the roots)",
            &lookup,
            &swap,
            &mut Vec::new(),
            &mut done,
        )?;
    }
    for (a, b) in ALTERNATIVES {
        let has = |stem: &str| done.iter().any(|(s, _)| *s == stem);
        if has(a) && has(b) {
            return Err(ComposeError::BothAlternatives(a.into(), b.into()));
        }
    }
    Ok(done)
}

/// The files of `FILES` in the module of `roots` with `swaps` (`order`).
pub fn files_of(
    roots: &[&'static str],
    swaps: &[(&'static str, &'static str)],
) -> Result<Vec<(&'static str, &'static str)>, ComposeError> {
    order(file, roots, swaps)
}

/// One file's text as it goes into a module: a line naming it, then its
/// text with its `#import` lines as comments.
pub fn part(stem: &str, text: &str) -> String {
    let mut out = format!("// ---- shaders/{stem}.wgsl\n");
    for line in text.lines() {
        if line.starts_with("#import ") {
            out.push_str("// ");
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The module of `roots` with `swaps` from `FILES`, ready for naga.
pub fn compose(
    roots: &[&'static str],
    swaps: &[(&'static str, &'static str)],
) -> Result<String, ComposeError> {
    Ok(files_of(roots, swaps)?
        .into_iter()
        .map(|(stem, text)| part(stem, text))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup<'a>(files: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<&'a str> {
        move |stem| files.iter().find(|(s, _)| *s == stem).map(|(_, t)| *t)
    }

    /// Each file comes once, after every file it imports, whatever the
    /// order the roots name them in.
    #[test]
    fn files_come_once_after_their_imports() {
        let files = [
            ("a", "#import b\n#import c\nfn a() {}\n"),
            ("b", "#import c\nfn b() {}\n"),
            ("c", "fn c() {}\n"),
        ];
        for roots in [["a", "b"], ["b", "a"]] {
            let got: Vec<&str> = order(lookup(&files), &roots, &[])
                .unwrap()
                .into_iter()
                .map(|(s, _)| s)
                .collect();
            assert_eq!(got, ["c", "b", "a"], "roots {roots:?}");
        }
    }

    /// A circle of imports is refused, named from where it closes.
    #[test]
    fn a_circle_of_imports_is_refused_and_named() {
        let files = [
            ("a", "#import b\n"),
            ("b", "#import c\n"),
            ("c", "#import b\n"),
        ];
        let err = order(lookup(&files), &["a"], &[]).unwrap_err();
        assert_eq!(
            err,
            ComposeError::Cycle(vec!["b".into(), "c".into(), "b".into()])
        );
        assert_eq!(err.to_string(), "shader imports run in a circle: b → c → b");
    }

    /// An import of no file names the file that asked for it.
    #[test]
    fn an_unknown_import_names_its_file() {
        let files = [("a", "#import nowhere\n")];
        let err = order(lookup(&files), &["a"], &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "shaders/a.wgsl imports `nowhere`, which is no shader file"
        );
    }

    /// A swap replaces the file wherever it is imported, and its
    /// alternative's own imports come in with it.
    #[test]
    fn a_swap_takes_the_alternative_everywhere() {
        let files = [
            ("a", "#import step_uniform\n"),
            ("b", "#import step_uniform\n#import a\n"),
            ("step_uniform", ""),
            ("step_table", "#import c\n"),
            ("c", ""),
        ];
        let got: Vec<&str> = order(lookup(&files), &["b"], &[("step_uniform", "step_table")])
            .unwrap()
            .into_iter()
            .map(|(s, _)| s)
            .collect();
        assert_eq!(got, ["c", "step_table", "a", "b"]);
        let both = [
            ("a", "#import step_uniform\n#import step_table\n"),
            files[2],
            files[3],
            files[4],
        ];
        assert_eq!(
            order(lookup(&both), &["a"], &[]).unwrap_err(),
            ComposeError::BothAlternatives("step_uniform".into(), "step_table".into())
        );
    }

    /// Every `#import` line is an import, and becomes a comment in the
    /// module.
    #[test]
    fn import_lines_become_comments() {
        let text = "#import a\n#import b\n\nfn f() {}\n// #import c\n";
        assert_eq!(imports(text).collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(
            part("x", "#import a\nfn f() {}\n"),
            "// ---- shaders/x.wgsl\n// #import a\nfn f() {}\n"
        );
    }
}
