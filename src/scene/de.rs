//! Reading the scene document into `format::SceneFile` so that every error
//! names the field it is about (`rods[2].segments`, `sim.projection.method`),
//! and finding where a field is written (its line in the file).
//!
//! serde reports a wrong value with a byte span of the document; the span is
//! turned back into the dotted path of the key or value it covers. Entries
//! of `[[rods]]` and `[[colliders]]` are read one by one, kind first, because
//! serde's tagged enums buffer their content and lose the spans inside.

use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;
use toml::de::{DeTable, DeValue, ValueDeserializer};
use toml_edit::{Item, Value};

use super::Field;
use super::format::{ColliderSection, RodSection, SceneFile};

/// Deserialise a scene document (text already known to be valid TOML).
pub fn scene_file(text: &str) -> Result<SceneFile, Field> {
    let spans = toml_edit::Document::parse(text)
        .map_err(|e| ("(syntax)".to_string(), e.message().to_string()))?;
    let at = |e: toml::de::Error| field_of(&spans, &e);
    let mut root = DeTable::parse(text).map_err(at)?;
    let rods = root.get_mut().remove("rods");
    let colliders = root.get_mut().remove("colliders");
    let mut file = SceneFile::deserialize(toml::de::Deserializer::from(root)).map_err(at)?;
    file.rods = entries(rods, "rods", "kind", RodSection::KINDS, &at, |k, d| {
        RodSection::of_kind(k, d)
    })?;
    file.colliders = entries(
        colliders,
        "colliders",
        "shape",
        ColliderSection::SHAPES,
        &at,
        |k, d| ColliderSection::of_shape(k, d),
    )?;
    Ok(file)
}

/// The entries of an array of tables selected by a tag key (`kind`, `shape`).
fn entries<T>(
    list: Option<Spanned<DeValue<'_>>>,
    name: &str,
    tag: &str,
    tags: &[&str],
    at: &dyn Fn(toml::de::Error) -> Field,
    read: impl for<'a> Fn(&str, ValueDeserializer<'a>) -> Result<T, toml::de::Error>,
) -> Result<Vec<T>, Field> {
    let Some(list) = list else {
        return Ok(Vec::new());
    };
    let one_of = tags
        .iter()
        .map(|t| format!("`{t}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let array = match list.into_inner() {
        DeValue::Array(a) => a,
        other => {
            return Err((
                name.into(),
                format!(
                    "expected [[{name}]] tables (an array of tables), got {}",
                    a_type(&other)
                ),
            ));
        }
    };
    let mut out = Vec::new();
    for (i, entry) in array.into_iter().enumerate() {
        let field = |k: &str| format!("{name}[{i}]{k}");
        let span = entry.span();
        let mut table = match entry.into_inner() {
            DeValue::Table(t) => t,
            other => {
                return Err((
                    field(""),
                    format!("expected a table, got {}", a_type(&other)),
                ));
            }
        };
        let kind = match table.remove(tag) {
            None => {
                return Err((
                    field(&format!(".{tag}")),
                    format!("is missing (one of {one_of})"),
                ));
            }
            Some(v) => match v.get_ref().as_str() {
                Some(s) => s.to_string(),
                None => {
                    return Err((
                        field(&format!(".{tag}")),
                        format!(
                            "expected a string (one of {one_of}), got {}",
                            a_type(v.get_ref())
                        ),
                    ));
                }
            },
        };
        if !tags.contains(&kind.as_str()) {
            return Err((
                field(&format!(".{tag}")),
                format!("unknown {tag} `{kind}`, expected one of {one_of}"),
            ));
        }
        let d = ValueDeserializer::from(Spanned::new(span, DeValue::Table(table)));
        out.push(read(&kind, d).map_err(at)?);
    }
    Ok(out)
}

/// "an integer", "a table": the type of a value with its article.
fn a_type(v: &DeValue) -> String {
    let t = v.type_str();
    let article = if t.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {t}")
}

/// The field a serde error is about, and the error in words.
fn field_of(spans: &toml_edit::Document<&str>, e: &toml::de::Error) -> Field {
    let path = e.span().and_then(|s| locate(spans, s)).unwrap_or_default();
    let msg = e.message().trim();
    if let Some(name) = msg
        .strip_prefix("missing field `")
        .and_then(|r| r.strip_suffix('`'))
    {
        return (join(&path, name), "is missing".into());
    }
    let msg = if msg.starts_with("wanted string or table") {
        "expected a string".to_string()
    } else if let Some((head, _)) = msg.split_once(", expected struct ") {
        format!("{head}, expected a table")
    } else {
        // Rust's type names in words.
        let mut m = msg.to_string();
        for (rust, words) in [
            ("usize", "a whole number ≥ 0"),
            ("u64", "a whole number ≥ 0"),
            ("u32", "a whole number from 0 to 4294967295"),
            ("i64", "a whole number"),
            ("f64", "a number"),
        ] {
            if let Some(head) = m.strip_suffix(&format!(", expected {rust}")) {
                m = format!("{head}, expected {words}");
            }
        }
        m
    };
    let path = if path.is_empty() {
        "(top level)".to_string()
    } else {
        path
    };
    (path, msg)
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// The most specific key or value path whose span covers `at`.
pub fn locate(doc: &toml_edit::Document<&str>, at: Range<usize>) -> Option<String> {
    let mut best = None;
    walk_table(doc.as_table(), "", &at, &mut best);
    best.map(|(_, p)| p)
}

type Best = Option<(usize, String)>;

fn consider(span: Option<Range<usize>>, at: &Range<usize>, path: &str, best: &mut Best) {
    let Some(s) = span else { return };
    // An empty error span (a missing field of the whole document) sits at its start.
    if s.start <= at.start && at.end <= s.end.max(s.start + 1) {
        let len = s.end - s.start;
        if best.as_ref().is_none_or(|(l, _)| len <= *l) {
            *best = Some((len, path.to_string()));
        }
    }
}

fn walk_table(t: &toml_edit::Table, path: &str, at: &Range<usize>, best: &mut Best) {
    consider(t.span(), at, path, best);
    for (k, item) in t.iter() {
        let p = join(path, k);
        if let Some(key) = t.key(k) {
            consider(key.span(), at, &p, best);
        }
        match item {
            Item::Table(t) => walk_table(t, &p, at, best),
            Item::ArrayOfTables(a) => {
                for (n, t) in a.iter().enumerate() {
                    walk_table(t, &format!("{p}[{n}]"), at, best);
                }
            }
            Item::Value(v) => walk_value(v, &p, at, best),
            Item::None => {}
        }
    }
}

fn walk_value(v: &Value, path: &str, at: &Range<usize>, best: &mut Best) {
    consider(v.span(), at, path, best);
    match v {
        Value::Array(a) => {
            for (n, x) in a.iter().enumerate() {
                walk_value(x, &format!("{path}[{n}]"), at, best);
            }
        }
        Value::InlineTable(t) => {
            for (k, x) in t.iter() {
                let p = join(path, k);
                if let Some(key) = t.key(k) {
                    consider(key.span(), at, &p, best);
                }
                walk_value(x, &p, at, best);
            }
        }
        _ => {}
    }
}

/// One step of a field path: a key or an index.
#[derive(Debug, PartialEq)]
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// The leading part of a field path that is a plain path (`rods[0].points[2][1]`);
/// it ends at a space or a parenthesised name (`materials.m.(kind)`).
fn steps(field: &str) -> Vec<Step<'_>> {
    let plain = field.split(' ').next().unwrap_or("");
    let mut out = Vec::new();
    for part in plain.split('.') {
        if part.is_empty() || part.starts_with('(') {
            break;
        }
        let (key, mut rest) = part.split_at(part.find('[').unwrap_or(part.len()));
        if !key.is_empty() {
            out.push(Step::Key(key));
        }
        while let Some(r) = rest.strip_prefix('[') {
            let Some((n, tail)) = r.split_once(']') else {
                return out;
            };
            let Ok(n) = n.parse() else { return out };
            out.push(Step::Index(n));
            rest = tail;
        }
    }
    out
}

/// A place in the document a field path can step through.
#[derive(Clone, Copy)]
enum Node<'a> {
    Table(&'a toml_edit::Table),
    Tables(&'a toml_edit::ArrayOfTables),
    Value(&'a Value),
}

fn node(item: &Item) -> Option<Node<'_>> {
    match item {
        Item::Table(t) => Some(Node::Table(t)),
        Item::ArrayOfTables(a) => Some(Node::Tables(a)),
        Item::Value(v) => Some(Node::Value(v)),
        Item::None => None,
    }
}

/// The child at `step` and where it is written (its key, for a key).
fn child<'a>(n: Node<'a>, step: &Step) -> Option<(Node<'a>, Option<Range<usize>>)> {
    match (n, step) {
        (Node::Table(t), Step::Key(k)) => {
            let (key, item) = t.get_key_value(k)?;
            Some((node(item)?, key.span()))
        }
        (Node::Tables(a), Step::Index(i)) => {
            let t = a.get(*i)?;
            Some((Node::Table(t), t.span()))
        }
        (Node::Value(Value::Array(a)), Step::Index(i)) => {
            let v = a.get(*i)?;
            Some((Node::Value(v), v.span()))
        }
        (Node::Value(Value::InlineTable(t)), Step::Key(k)) => {
            let (key, item) = t.get_key_value(k)?;
            Some((node(item)?, key.span()))
        }
        _ => None,
    }
}

/// Where `field` (or the deepest part of it that exists) is written in `doc`.
pub fn find(doc: &toml_edit::Document<&str>, field: &str) -> Option<Range<usize>> {
    let mut at = Node::Table(doc.as_table());
    let mut found = None;
    for step in steps(field) {
        let Some((next, span)) = child(at, &step) else {
            break;
        };
        found = span.or(found);
        at = next;
    }
    found
}

/// Whether an error about `field` concerns the value at `set` (a path an
/// override wrote): one path contains the other.
pub fn related(field: &str, set: &str) -> bool {
    let (a, b) = (steps(field), steps(set));
    let n = a.len().min(b.len());
    n > 0 && a[..n] == b[..n]
}

/// The 1-based line of byte `offset` in `text`.
pub fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&c| c == b'\n')
        .count()
        + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_of_field_paths() {
        use Step::*;
        assert_eq!(
            steps("rods[0].points[2][1]"),
            vec![Key("rods"), Index(0), Key("points"), Index(2), Index(1)]
        );
        assert_eq!(
            steps("materials.m.(kind)"),
            vec![Key("materials"), Key("m")]
        );
        assert_eq!(steps("rods[3] (rod 2, `x`)"), vec![Key("rods"), Index(3)]);
    }

    #[test]
    fn fields_are_found_on_their_line() {
        let text = "[sim]\ndt = 0.1\n\n[[rods]]\nkind = \"x\"\n[[rods]]\npoints = [[0, 0, 0],\n  [1, 2, 3]]\nw = { a = 1 }\n";
        let doc = toml_edit::Document::parse(text).unwrap();
        let line = |f: &str| find(&doc, f).map(|s| line_of(text, s.start));
        assert_eq!(line("sim.dt"), Some(2));
        assert_eq!(line("rods[1]"), Some(6));
        assert_eq!(line("rods[1].points[1][2]"), Some(8));
        assert_eq!(line("rods[1].w.a"), Some(9));
        // The deepest part that exists.
        assert_eq!(line("rods[0].segments"), Some(4));
        assert_eq!(line("anchors.x"), None);
    }

    #[test]
    fn related_paths_share_a_prefix() {
        assert!(related("sim.dt", "sim.dt"));
        assert!(related("rods[0] (rod 3)", "rods[0].count"));
        assert!(related("materials.m.(kind)", "materials.m.density"));
        assert!(!related("materials.m.radius", "materials.n.radius"));
        assert!(!related("sim.dt", "sim.steps"));
    }
}
