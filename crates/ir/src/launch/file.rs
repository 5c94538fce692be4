//! The launch file: a TOML description of a launch, `foo.launch.toml` next to `foo.wir`.
//!
//! ```toml
//! kernel = "saxpy"        # optional: which kernel of a multi-kernel file
//! grid = [2]              # 1 to 3 entries (or one integer); missing ones are 1
//! block = [64, 1, 1]
//! print = ["y"]           # optional: buffers to print (default: all)
//! [args]
//! n = 100
//! alpha = 1.5
//! [buffers.x]
//! type = "f32"            # i8 i16 i32 i64 u8 u16 u32 u64 f32 f64
//! len = 128
//! init = "random"         # zeros (default) | iota | random | file | values
//! seed = 7                # random only (default 0)
//! range = [-1.0, 1.0]     # random only, inclusive bounds
//! [buffers.y]
//! type = "i32"
//! values = [1, 2, 3, 4]   # implies init = "values"; len defaults to the count
//! [buffers.z]
//! type = "u8"
//! file = "z.bin"          # implies init = "file"; relative to the launch file
//! [save]
//! y = "y.out.bin"         # relative to the launch file
//! [expect]
//! y = [2, 4, 6, 8]
//! ```
//!
//! Unknown keys are errors, and every error names the file and the key. Numbers may also be
//! written as strings, which admits `"nan"`, `"inf"`, `"-inf"` and hexadecimal (`"0xff"`;
//! for a float element, its raw bits). A decimal string is rounded once, straight to the
//! element type; a bare TOML float arrives already rounded to `f64`, so an `f32` element
//! gets it rounded twice.

use super::literal::{literal_from_toml, Literal};
use super::{
    BufferInit, BufferSpec, ElemType, Launch, LaunchError, MAX_GRID_DIM, MAX_THREADS_PER_BLOCK,
};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSchema {
    kernel: Option<String>,
    grid: Option<toml::Value>,
    block: Option<toml::Value>,
    #[serde(default)]
    args: BTreeMap<String, toml::Value>,
    #[serde(default)]
    buffers: BTreeMap<String, BufferSchema>,
    print: Option<Vec<String>>,
    #[serde(default)]
    save: BTreeMap<String, String>,
    #[serde(default)]
    expect: BTreeMap<String, Vec<toml::Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BufferSchema {
    #[serde(rename = "type")]
    ty: String,
    len: Option<u64>,
    init: Option<String>,
    seed: Option<u64>,
    range: Option<Vec<toml::Value>>,
    file: Option<String>,
    values: Option<Vec<toml::Value>>,
}

impl Launch {
    /// Reads a launch file. Relative paths in it are resolved against its directory.
    pub fn from_file(path: &Path) -> Result<Launch, LaunchError> {
        let text = std::fs::read_to_string(path).map_err(|e| LaunchError::Io {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        Launch::from_toml_str(&text, path)
    }

    /// Parses the text of a launch file; `file` names it in errors, and relative paths are
    /// resolved against its directory.
    pub fn from_toml_str(text: &str, file: &Path) -> Result<Launch, LaunchError> {
        let err = |message: String| LaunchError::File {
            file: file.to_path_buf(),
            message,
        };
        let schema: FileSchema = toml::from_str(text).map_err(|e| err(one_line(&e, text)))?;
        let dir = file.parent().unwrap_or(Path::new(""));
        let resolve = |p: &str| -> PathBuf { dir.join(p) };

        let mut launch = Launch {
            kernel: schema.kernel,
            print: schema.print,
            ..Launch::default()
        };
        if let Some(v) = &schema.grid {
            launch.grid = dims_from_toml(v, MAX_GRID_DIM, "a grid dimension")
                .map_err(|m| err(format!("grid: {m}")))?;
        }
        if let Some(v) = &schema.block {
            let max = MAX_THREADS_PER_BLOCK as u32;
            launch.block = dims_from_toml(v, max, "a block dimension")
                .map_err(|m| err(format!("block: {m}")))?;
        }
        for (name, v) in &schema.args {
            let lit = literal_from_toml(v).map_err(|m| err(format!("args.{name}: {m}")))?;
            launch.args.insert(name.clone(), lit);
        }
        for (name, b) in schema.buffers {
            let spec = buffer_from_schema(b, &resolve)
                .map_err(|(key, m)| err(format!("buffers.{name}.{key}: {m}")))?;
            launch.buffers.insert(name, spec);
        }
        for (name, path) in &schema.save {
            launch.save.insert(name.clone(), resolve(path));
        }
        for (name, values) in &schema.expect {
            let lits =
                literals(values).map_err(|(i, m)| err(format!("expect.{name}[{i}]: {m}")))?;
            launch.expect.insert(name.clone(), lits);
        }

        // Remember which settings this file made, for errors found when binding.
        let singles = [
            ("kernel", launch.kernel.is_some()),
            ("grid", schema.grid.is_some()),
            ("block", schema.block.is_some()),
            ("print", launch.print.is_some()),
        ];
        let keys = (singles.iter().filter(|(_, set)| *set))
            .map(|(key, _)| key.to_string())
            .chain(launch.args.keys().map(|n| format!("args.{n}")))
            .chain(launch.buffers.keys().map(|n| format!("buffers.{n}")))
            .chain(launch.save.keys().map(|n| format!("save.{n}")))
            .chain(launch.expect.keys().map(|n| format!("expect.{n}")));
        launch.origins = keys.map(|key| (key, file.to_path_buf())).collect();
        Ok(launch)
    }
}

/// `[2]`, `[2, 3]`, `[2, 3, 4]` or `2`, each in `1..=max`; missing dimensions are 1.
/// (The product of block dimensions is checked when the launch is bound.)
fn dims_from_toml(v: &toml::Value, max: u32, what: &str) -> Result<[u32; 3], String> {
    let items: Vec<&toml::Value> = match v {
        toml::Value::Array(a) => a.iter().collect(),
        other => vec![other],
    };
    if items.is_empty() || items.len() > 3 {
        return Err(format!("expected 1 to 3 dimensions, found {}", items.len()));
    }
    let mut dims = [1u32; 3];
    for (d, item) in dims.iter_mut().zip(items) {
        *d = item
            .as_integer()
            .and_then(|i| u32::try_from(i).ok())
            .filter(|d| (1..=max).contains(d))
            .ok_or_else(|| format!("`{item}` is not {what} (an integer 1 to {max})"))?;
    }
    Ok(dims)
}

fn literals(values: &[toml::Value]) -> Result<Vec<Literal>, (usize, String)> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| literal_from_toml(v).map_err(|m| (i, m)))
        .collect()
}

/// Turns a `[buffers.NAME]` table into a spec; errors name the key within the table.
fn buffer_from_schema(
    b: BufferSchema,
    resolve: &dyn Fn(&str) -> PathBuf,
) -> Result<BufferSpec, (String, String)> {
    let key_err = |key: &str, m: String| (key.to_string(), m);
    let elem = ElemType::from_name(&b.ty).ok_or_else(|| {
        key_err(
            "type",
            format!(
                "unknown element type `{}` (expected one of {})",
                b.ty,
                ElemType::ALL.map(ElemType::name).join(" ")
            ),
        )
    })?;
    let init_name = match (&b.init, &b.values, &b.file) {
        (Some(i), _, _) => i.as_str(),
        (None, Some(_), _) => "values",
        (None, None, Some(_)) => "file",
        (None, None, None) => "zeros",
    };
    let only = |key: &str, present: bool, init: &str| {
        if present && init_name != init {
            Err(key_err(key, format!("only allowed with init = \"{init}\"")))
        } else {
            Ok(())
        }
    };
    only("seed", b.seed.is_some(), "random")?;
    only("range", b.range.is_some(), "random")?;
    only("values", b.values.is_some(), "values")?;
    only("file", b.file.is_some(), "file")?;
    let init = match init_name {
        "zeros" => BufferInit::Zeros,
        "iota" => BufferInit::Iota,
        "random" => {
            let range = match &b.range {
                None => None,
                Some(r) if r.len() == 2 => {
                    let lits = literals(r).map_err(|(i, m)| key_err(&format!("range[{i}]"), m))?;
                    Some((lits[0], lits[1]))
                }
                Some(r) => {
                    return Err(key_err(
                        "range",
                        format!("expected [lo, hi], found {} values", r.len()),
                    ))
                }
            };
            BufferInit::Random {
                seed: b.seed.unwrap_or(0),
                range,
            }
        }
        "values" => {
            let values = b
                .values
                .as_deref()
                .ok_or_else(|| key_err("values", "missing for init = \"values\"".into()))?;
            BufferInit::Values(
                literals(values).map_err(|(i, m)| key_err(&format!("values[{i}]"), m))?,
            )
        }
        "file" => {
            let file = b
                .file
                .as_deref()
                .ok_or_else(|| key_err("file", "missing for init = \"file\"".into()))?;
            BufferInit::File(resolve(file))
        }
        other => {
            return Err(key_err(
                "init",
                format!("unknown init `{other}` (expected zeros, iota, random, file or values)"),
            ))
        }
    };
    Ok(BufferSpec {
        elem,
        len: b.len,
        init,
    })
}

/// TOML errors come with a multi-line snippet; keep the message and the position on one
/// line so a launch error reads like every other diagnostic.
fn one_line(e: &toml::de::Error, text: &str) -> String {
    let msg = e.message().trim().replace('\n', " ");
    match e.span() {
        Some(span) => {
            let before = &text.as_bytes()[..span.start.min(text.len())];
            let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
            // Columns count characters, as in .wir errors: skip UTF-8 continuation bytes.
            let col = before
                .iter()
                .rev()
                .take_while(|&&b| b != b'\n')
                .filter(|&&b| b & 0xc0 != 0x80)
                .count()
                + 1;
            format!("{line}:{col}: {msg}")
        }
        None => msg,
    }
}
