//! Launch descriptions: how to run a kernel.
//!
//! A [`Launch`] says which kernel of a file to run, on what grid and block shape, with
//! which scalar arguments and which buffers of global memory, what to print or save after
//! the run, and optionally what the buffers must then hold. It is shared by every tool
//! that runs kernels (the reference interpreter now, the emulator later), so it depends on
//! none of them.
//!
//! A launch is built in Rust with a [`LaunchBuilder`] (see [`mod@builder`]), read from a
//! TOML file next to the kernel (`foo.wir` -> `foo.launch.toml`, see [`mod@file`]), or
//! given as command-line flags, whose string forms are parsed here too (see [`spec`]);
//! flags override the file. All three go through the same typed setters.
//! [`Launch::prepare`] then binds the launch to one kernel (or [`Launch::prepare_for`], to
//! a kernel known by its name and parameters alone, as a loaded object knows it): it
//! checks every parameter is bound exactly once with a value of the right type, builds the
//! buffers and places them at deterministic addresses (see [`memory`]), and returns a
//! [`PreparedLaunch`] ready to run. After the run, [`GlobalMemory::read_buffer`] reads a
//! buffer back as a `Vec<T>` of its element type (see [`readback`]). The file format is
//! documented in `docs/ir.md`.
//!
//! ```
//! use warplift_ir::launch::Launch;
//! use warplift_ir::{Param, Type};
//!
//! let launch = Launch::builder()
//!     .block(4)
//!     .buffer("x", &[1i32, 2, 3, 4])
//!     .arg("n", 4)
//!     .build();
//! let params = [Param::new("x", Type::I64), Param::new("n", Type::I32)];
//! let prepared = launch.prepare_for("k", &params)?;
//! assert_eq!(prepared.memory.read_buffer::<i32>("x")?, [1, 2, 3, 4]);
//! // The Rust type must be the buffer's element type.
//! let err = prepared.memory.read_buffer::<f32>("x").unwrap_err();
//! assert_eq!(err.to_string(), "buffer `x` holds i32 elements, not f32");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod builder;
pub mod element;
pub mod file;
pub mod literal;
pub mod memory;
pub mod readback;
pub mod results;
pub mod spec;

pub use self::builder::{Dims, LaunchBuilder};
pub use self::element::Element;
pub use self::literal::Literal;
pub use self::memory::{
    Buffer, ElemType, ExpectationError, GlobalMemory, MemFault, TypedValue, BUFFER_ALIGN,
    BUFFER_BASE, GUARD_GAP,
};
pub use self::readback::BufferError;

use self::literal::{literal_bits, literal_float, Scalar};
use crate::function::{Function, Param};
use crate::types::Type;
use rand::{RngCore, SeedableRng};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The most threads one block may have (the product of the block dimensions).
pub const MAX_THREADS_PER_BLOCK: u64 = 1024;
/// The largest grid dimension: block ids and grid dimensions must fit in an `i32`.
pub const MAX_GRID_DIM: u32 = i32::MAX as u32;
/// The most bytes all buffers of a launch may hold together (1 GiB).
pub const MAX_TOTAL_BUFFER_BYTES: u64 = 1 << 30;

/// Why a launch description could not be read or bound to a kernel.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LaunchError {
    /// A launch file is not valid TOML or does not follow the schema.
    #[error("{}: {message}", file.display())]
    File {
        /// The launch file.
        file: PathBuf,
        /// What is wrong, naming the key.
        message: String,
    },
    /// A value is invalid; `context` names where it came from (a file and key, a
    /// command-line spec, a kernel parameter).
    #[error("{context}: {message}")]
    Invalid {
        /// Where the value came from.
        context: String,
        /// What is wrong with it.
        message: String,
    },
    /// A file could not be read or written.
    #[error("{}: {message}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        message: String,
    },
}

impl LaunchError {
    fn invalid(context: impl Into<String>, message: impl Into<String>) -> Self {
        LaunchError::Invalid {
            context: context.into(),
            message: message.into(),
        }
    }
}

/// How a buffer's contents are initialised.
#[derive(Clone, Debug, PartialEq)]
pub enum BufferInit {
    /// All zero bytes.
    Zeros,
    /// Element `i` holds `i` (as a float for float buffers), wrapping for narrow types.
    Iota,
    /// Uniform pseudo-random values from a seeded ChaCha8 generator (see
    /// [`Launch::prepare`] for the exact algorithm, which every tool shares).
    Random {
        /// The generator's seed.
        seed: u64,
        /// Inclusive bounds; by default the whole type for integers and `[0, 1)` for floats.
        range: Option<(Literal, Literal)>,
    },
    /// Raw little-endian bytes read from a file.
    File(PathBuf),
    /// The given values.
    Values(Vec<Literal>),
    /// The given little-endian bytes (a whole number of elements), as
    /// [`LaunchBuilder::buffer`] makes from a typed slice.
    Bytes(Vec<u8>),
}

/// A buffer to create and bind to an `i64` kernel parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct BufferSpec {
    /// The element type.
    pub elem: ElemType,
    /// The number of elements; when `None` it comes from the values or the file.
    pub len: Option<u64>,
    /// The initial contents.
    pub init: BufferInit,
}

/// A launch description, before binding to a kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    /// The kernel to run, by name (without `%`); may be omitted when a file holds one.
    pub kernel: Option<String>,
    /// Blocks in the grid, per dimension.
    pub grid: [u32; 3],
    /// Threads per block, per dimension.
    pub block: [u32; 3],
    /// Scalar arguments by parameter name.
    pub args: BTreeMap<String, Literal>,
    /// Buffers by parameter name.
    pub buffers: BTreeMap<String, BufferSpec>,
    /// The buffers to print after the run; `None` means all.
    pub print: Option<Vec<String>>,
    /// Buffers to save after the run, as raw little-endian bytes, by name.
    pub save: BTreeMap<String, PathBuf>,
    /// What buffers must hold after the run, by name.
    pub expect: BTreeMap<String, Vec<Literal>>,
    /// The launch file each setting was read from, by its key in the file (`kernel`,
    /// `grid`, `block`, `print`, `args.NAME`, `buffers.NAME`, `save.NAME`,
    /// `expect.NAME`), so errors found only when binding to a kernel still name the
    /// file. Settings from the command line have no entry: each setter removes the key
    /// it overrides.
    pub origins: BTreeMap<String, PathBuf>,
}

impl Default for Launch {
    /// One block of one thread, nothing bound.
    fn default() -> Self {
        Launch {
            kernel: None,
            grid: [1; 3],
            block: [1; 3],
            args: BTreeMap::new(),
            buffers: BTreeMap::new(),
            print: None,
            save: BTreeMap::new(),
            expect: BTreeMap::new(),
            origins: BTreeMap::new(),
        }
    }
}

/// A launch bound to a kernel: geometry, argument bits and global memory, ready to run.
#[derive(Clone, Debug, PartialEq)]
pub struct PreparedLaunch {
    /// The kernel's name.
    pub kernel: String,
    /// Blocks in the grid, per dimension (each at least 1).
    pub grid: [u32; 3],
    /// Threads per block, per dimension (each at least 1, product at most
    /// [`MAX_THREADS_PER_BLOCK`]).
    pub block: [u32; 3],
    /// The bits of every kernel parameter, in signature order; a buffer's is its base.
    pub args: Vec<u64>,
    /// The buffers.
    pub memory: GlobalMemory,
}

impl PreparedLaunch {
    /// The number of threads in one block. The fields are public, so a launch that did
    /// not pass [`check_geometry`] may exceed a `u32`; the count then saturates.
    pub fn threads_per_block(&self) -> u32 {
        let n: u128 = self.block.iter().map(|&d| u128::from(d)).product();
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// The number of blocks in the grid.
    ///
    /// Three grid dimensions of up to [`MAX_GRID_DIM`] give up to about 2^93 blocks, more
    /// than a `u64` holds, so the count is a `u128` (three `u32` factors cannot overflow
    /// it). Running that many blocks is bounded by the interpreter's step limit, not by
    /// this count.
    pub fn num_blocks(&self) -> u128 {
        self.grid.iter().map(|&d| u128::from(d)).product()
    }
}

impl Launch {
    /// `key`, prefixed with the launch file it was read from, if any: the context of an
    /// error about that setting.
    fn context(&self, key: &str) -> String {
        match self.origins.get(key) {
            Some(file) => format!("{}: {key}", file.display()),
            None => key.to_string(),
        }
    }

    /// As [`Launch::context`] for a context that is not the key itself.
    fn context_for(&self, key: &str, context: String) -> String {
        match self.origins.get(key) {
            Some(file) => format!("{}: {context}", file.display()),
            None => context,
        }
    }

    /// The launch file of a kernel file: `dir/foo.wir` -> `dir/foo.launch.toml`.
    pub fn path_next_to(kernel_path: &Path) -> PathBuf {
        let stem = kernel_path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        kernel_path.with_file_name(format!("{stem}.launch.toml"))
    }

    /// Chooses the kernel to run among `funcs`: the one named by [`Launch::kernel`], or
    /// the only one when no name is given.
    pub fn select_kernel<'a>(&self, funcs: &'a [Function]) -> Result<&'a Function, LaunchError> {
        self.select(funcs, |f| &f.name)
    }

    /// As [`Launch::select_kernel`] among any kernels, known by `name_of` (the kernels
    /// of a loaded object, say).
    pub fn select<'a, K>(
        &self,
        funcs: &'a [K],
        name_of: impl Fn(&K) -> &str,
    ) -> Result<&'a K, LaunchError> {
        let names = || {
            funcs
                .iter()
                .map(|f| format!("%{}", name_of(f)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match &self.kernel {
            Some(name) => {
                let name = name.strip_prefix('%').unwrap_or(name);
                funcs.iter().find(|f| name_of(f) == name).ok_or_else(|| {
                    LaunchError::invalid(
                        self.context("kernel"),
                        format!("no kernel %{name} (have {})", names()),
                    )
                })
            }
            None => match funcs {
                [f] => Ok(f),
                [] => Err(LaunchError::invalid("kernel", "the file holds no kernel")),
                _ => Err(LaunchError::invalid(
                    "kernel",
                    format!("the file holds several kernels ({}); name one", names()),
                )),
            },
        }
    }

    /// Binds the launch to `func`.
    ///
    /// Every parameter must be bound exactly once: an `i64` parameter to a buffer (its
    /// value is the buffer's base address) or to a scalar, any other parameter to a scalar
    /// of its type (integers must fit as signed or unsigned, floats accept integers and
    /// floats, `i1` accepts `true`/`false`/0/1). Names that are not parameters are errors.
    ///
    /// Buffers are placed in the order of the kernel's parameters, the first at
    /// [`BUFFER_BASE`], each next one at the previous end rounded up to [`BUFFER_ALIGN`]
    /// plus [`GUARD_GAP`]. Random contents come from `ChaCha8Rng::seed_from_u64(seed)`,
    /// one `next_u64` per element: an integer element in `[lo, hi]` is
    /// `lo + ((r * (hi - lo + 1)) >> 64)`; a float is `lo + (r >> 11) * 2^-53 * (hi - lo)`,
    /// computed in `f64` and rounded to the element type.
    pub fn prepare(&self, func: &Function) -> Result<PreparedLaunch, LaunchError> {
        self.prepare_for(&func.name, &func.signature.params)
    }

    /// [`Launch::prepare`] for the kernel called `kernel` with the parameters `params`:
    /// what a kernel loaded from an object is known by, without its IR.
    pub fn prepare_for(
        &self,
        kernel: &str,
        params: &[Param],
    ) -> Result<PreparedLaunch, LaunchError> {
        let kctx =
            |key: &str, what: &str| self.context_for(key, format!("kernel %{kernel}: {what}"));
        check_geometry(self.grid, self.block).map_err(|e| match e {
            LaunchError::Invalid { context, message } => LaunchError::Invalid {
                context: self.context(&context),
                message,
            },
            e => e,
        })?;

        let keys = (self.args.keys().map(|n| ("args", n)))
            .chain(self.buffers.keys().map(|n| ("buffers", n)));
        for (table, name) in keys {
            if !params.iter().any(|p| &p.name == name) {
                return Err(LaunchError::invalid(
                    kctx(&format!("{table}.{name}"), name),
                    "not a parameter of the kernel",
                ));
            }
        }

        // Sizes first, so nothing is allocated for a launch that is too large.
        let mut total: u64 = 0;
        for (name, spec) in &self.buffers {
            let ctx = self.context(&format!("buffers.{name}"));
            let len = spec_len(&ctx, spec)?;
            let bytes = len
                .checked_mul(spec.elem.bytes() as u64)
                .filter(|&b| b <= MAX_TOTAL_BUFFER_BYTES);
            total = bytes
                .and_then(|b| total.checked_add(b))
                .filter(|&t| t <= MAX_TOTAL_BUFFER_BYTES)
                .ok_or_else(|| {
                    LaunchError::invalid(
                        ctx.clone(),
                        format!(
                            "all buffers together may hold at most {MAX_TOTAL_BUFFER_BYTES} bytes"
                        ),
                    )
                })?;
        }

        let mut args = Vec::with_capacity(params.len());
        let mut memory = GlobalMemory::default();
        let mut next_base = BUFFER_BASE;
        for param in params {
            let name = &param.name;
            let arg_key = format!("args.{name}");
            let buf_key = format!("buffers.{name}");
            match (self.args.get(name), self.buffers.get(name)) {
                (Some(_), Some(_)) => {
                    let key = if self.origins.contains_key(&arg_key) {
                        &arg_key
                    } else {
                        &buf_key
                    };
                    return Err(LaunchError::invalid(
                        kctx(key, name),
                        "bound both to a scalar argument and to a buffer",
                    ));
                }
                (None, None) => {
                    return Err(LaunchError::invalid(
                        kctx(name, name),
                        format!("parameter `{name}: {}` is not bound", param.ty),
                    ))
                }
                (Some(&lit), None) => {
                    let bits = literal_bits(lit, Scalar::of_type(param.ty)).map_err(|m| {
                        LaunchError::invalid(
                            kctx(
                                &arg_key,
                                &format!("argument {name} for a {} parameter", param.ty),
                            ),
                            m,
                        )
                    })?;
                    args.push(bits);
                }
                (None, Some(spec)) => {
                    if param.ty != Type::I64 {
                        return Err(LaunchError::invalid(
                            kctx(&buf_key, name),
                            format!(
                                "a buffer is bound to a {} parameter; buffer addresses are i64",
                                param.ty
                            ),
                        ));
                    }
                    let bytes = build_contents(&self.context(&buf_key), spec)?;
                    let base = next_base;
                    let end = base + bytes.len() as u64;
                    next_base = end.div_ceil(BUFFER_ALIGN) * BUFFER_ALIGN + GUARD_GAP;
                    args.push(base);
                    memory.buffers.push(Buffer {
                        name: name.clone(),
                        elem: spec.elem,
                        base,
                        bytes,
                        print: self.print.is_none(),
                        save: None,
                        expect: None,
                    });
                }
            }
        }

        let find = |memory: &mut GlobalMemory, key: &str, name: &str| {
            let ctx = match key {
                // `print` is one setting, a list.
                "print" => self.context_for("print", format!("print.{name}")),
                _ => self.context(&format!("{key}.{name}")),
            };
            let idx = memory.buffers.iter().position(|b| b.name == name);
            idx.ok_or_else(|| LaunchError::invalid(ctx, "no buffer of that name"))
        };
        for name in self.print.iter().flatten() {
            let i = find(&mut memory, "print", name)?;
            memory.buffers[i].print = true;
        }
        for (name, path) in &self.save {
            let i = find(&mut memory, "save", name)?;
            memory.buffers[i].save = Some(path.clone());
        }
        for (name, values) in &self.expect {
            let i = find(&mut memory, "expect", name)?;
            let buf = &mut memory.buffers[i];
            let ctx = self.context(&format!("expect.{name}"));
            if values.len() != buf.len() {
                return Err(LaunchError::invalid(
                    ctx,
                    format!(
                        "{} given for a buffer of {}",
                        crate::write::count(values.len(), "value"),
                        crate::write::count(buf.len(), "element")
                    ),
                ));
            }
            let bits = values
                .iter()
                .enumerate()
                .map(|(i, &v)| {
                    literal_bits(v, buf.elem.scalar())
                        .map_err(|m| LaunchError::invalid(format!("{ctx}[{i}]"), m))
                })
                .collect::<Result<Vec<_>, _>>()?;
            buf.expect = Some(bits);
        }

        Ok(PreparedLaunch {
            kernel: kernel.to_string(),
            grid: self.grid,
            block: self.block,
            args,
            memory,
        })
    }
}

/// Checks the grid and block shapes: every dimension at least 1, grid dimensions at most
/// [`MAX_GRID_DIM`], at most [`MAX_THREADS_PER_BLOCK`] threads per block.
pub fn check_geometry(grid: [u32; 3], block: [u32; 3]) -> Result<(), LaunchError> {
    if let Some(d) = grid.iter().find(|&&d| d == 0 || d > MAX_GRID_DIM) {
        return Err(LaunchError::invalid(
            "grid",
            format!("dimension {d} is not in 1..={MAX_GRID_DIM}"),
        ));
    }
    // Three u32 factors cannot overflow a u128 (they can overflow a u64).
    let threads: u128 = block.iter().map(|&d| u128::from(d)).product();
    if block.contains(&0) || threads > u128::from(MAX_THREADS_PER_BLOCK) {
        return Err(LaunchError::invalid(
            "block",
            format!(
                "{}x{}x{} is not a block of 1 to {MAX_THREADS_PER_BLOCK} threads",
                block[0], block[1], block[2]
            ),
        ));
    }
    Ok(())
}

/// The number of elements of a buffer, from its length, its values or its file; `ctx`
/// names the buffer in errors.
fn spec_len(ctx: &str, spec: &BufferSpec) -> Result<u64, LaunchError> {
    let ctx = || ctx.to_string();
    let derived = match &spec.init {
        BufferInit::Values(v) => Some(v.len() as u64),
        BufferInit::Bytes(bytes) => {
            let elem = spec.elem.bytes();
            if bytes.len() % elem != 0 {
                return Err(LaunchError::invalid(
                    ctx(),
                    format!(
                        "{} are not a whole number of {} elements",
                        crate::write::count(bytes.len(), "byte"),
                        spec.elem
                    ),
                ));
            }
            Some((bytes.len() / elem) as u64)
        }
        BufferInit::File(path) => {
            let meta = std::fs::metadata(path).map_err(|e| LaunchError::Io {
                path: path.clone(),
                message: e.to_string(),
            })?;
            let size = meta.len();
            let elem = spec.elem.bytes() as u64;
            if size % elem != 0 {
                return Err(LaunchError::invalid(
                    ctx(),
                    format!(
                        "file {} holds {}, not a whole number of {} elements",
                        path.display(),
                        crate::write::count(size, "byte"),
                        spec.elem
                    ),
                ));
            }
            Some(size / elem)
        }
        _ => None,
    };
    match (spec.len, derived) {
        (Some(len), Some(d)) if len != d => Err(LaunchError::invalid(
            ctx(),
            format!(
                "len is {len} but {} given",
                match d {
                    1 => "1 element is".to_string(),
                    _ => format!("{d} elements are"),
                }
            ),
        )),
        (Some(len), _) | (None, Some(len)) => Ok(len),
        (None, None) => Err(LaunchError::invalid(ctx(), "missing len")),
    }
}

/// The initial bytes of a buffer; `ctx` names the buffer in errors.
fn build_contents(ctx: &str, spec: &BufferSpec) -> Result<Vec<u8>, LaunchError> {
    let len = spec_len(ctx, spec)? as usize;
    let ctx = || ctx.to_string();
    let esize = spec.elem.bytes();
    let mut bytes = vec![0u8; len * esize];
    let mut put =
        |i: usize, bits: u64| memory::write_le(&mut bytes[i * esize..(i + 1) * esize], bits);
    match &spec.init {
        BufferInit::Zeros => {}
        BufferInit::Iota => {
            for i in 0..len {
                let bits = match spec.elem {
                    ElemType::F32 => u64::from((i as f32).to_bits()),
                    ElemType::F64 => (i as f64).to_bits(),
                    _ => i as u64,
                };
                put(i, bits);
            }
        }
        BufferInit::Values(values) => {
            for (i, &v) in values.iter().enumerate() {
                let bits = literal_bits(v, spec.elem.scalar())
                    .map_err(|m| LaunchError::invalid(format!("{}.values[{i}]", ctx()), m))?;
                put(i, bits);
            }
        }
        BufferInit::Bytes(data) => bytes.copy_from_slice(data),
        BufferInit::File(path) => {
            let data = std::fs::read(path).map_err(|e| LaunchError::Io {
                path: path.clone(),
                message: e.to_string(),
            })?;
            if data.len() != len * esize {
                return Err(LaunchError::invalid(
                    ctx(),
                    format!("file {} changed size while being read", path.display()),
                ));
            }
            bytes = data;
        }
        BufferInit::Random { seed, range } => {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(*seed);
            if spec.elem.is_float() {
                let (lo, hi) = float_range(spec.elem, range)
                    .map_err(|m| LaunchError::invalid(format!("{}.range", ctx()), m))?;
                for i in 0..len {
                    let u = (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
                    let x = lo + u * (hi - lo);
                    let bits = match spec.elem {
                        ElemType::F32 => u64::from((x as f32).to_bits()),
                        _ => x.to_bits(),
                    };
                    put(i, bits);
                }
            } else {
                let (lo, hi) = int_range(spec.elem, range)
                    .map_err(|m| LaunchError::invalid(format!("{}.range", ctx()), m))?;
                let span = (hi - lo + 1) as u128;
                for i in 0..len {
                    let r = u128::from(rng.next_u64());
                    let v = lo + ((r * span) >> 64) as i128;
                    put(i, v as u64);
                }
            }
        }
    }
    Ok(bytes)
}

/// The inclusive integer range of a random buffer, checked against the element type.
fn int_range(elem: ElemType, range: &Option<(Literal, Literal)>) -> Result<(i128, i128), String> {
    let bits = 8 * elem.bytes() as u32;
    let (tlo, thi) = if elem.is_signed() {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    };
    let Some((lo, hi)) = range else {
        return Ok((tlo, thi));
    };
    let int = |l: &Literal| match *l {
        Literal::Int(v) | Literal::Hex(v) if (tlo..=thi).contains(&v) => Ok(v),
        Literal::Int(v) | Literal::Hex(v) => Err(format!(
            "{v} is outside the range of {elem} ({tlo}..={thi})"
        )),
        _ => Err(format!("the bounds of an {elem} range must be integers")),
    };
    let (lo, hi) = (int(lo)?, int(hi)?);
    if lo > hi {
        return Err(format!("empty range {lo}..={hi}"));
    }
    Ok((lo, hi))
}

/// The float range of a random buffer: finite bounds, `lo <= hi`. Each bound is the value
/// it converts to for the element type (an `f32` bound is rounded to `f32` first), so
/// every generated element lies between the bounds as stored.
fn float_range(elem: ElemType, range: &Option<(Literal, Literal)>) -> Result<(f64, f64), String> {
    let Some((lo, hi)) = range else {
        return Ok((0.0, 1.0));
    };
    // A hexadecimal bound is the raw bits of the element type, as for values.
    let float = |l: &Literal| match literal_float(*l, elem.scalar())? {
        x if x.is_finite() => Ok(x),
        _ => Err(format!(
            "the bounds of an {elem} range must be finite numbers"
        )),
    };
    let (lo, hi) = (float(lo)?, float(hi)?);
    if lo > hi || !(hi - lo).is_finite() {
        return Err(format!("bad range {lo}..{hi}"));
    }
    Ok((lo, hi))
}

#[cfg(test)]
mod tests;
