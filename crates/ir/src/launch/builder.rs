//! Building a launch in Rust: [`LaunchBuilder`], and the typed setters of [`Launch`] that
//! the launch file and the command-line flags go through too.
//!
//! ```
//! use warplift_ir::launch::Launch;
//!
//! let x: Vec<f32> = (0..64).map(|i| i as f32).collect();
//! let launch = Launch::builder()
//!     .grid(2)                 // 2 blocks (a number, or [x, y] / [x, y, z])
//!     .block(32)               // of 32 threads
//!     .arg("n", 64)            // scalar arguments by parameter name
//!     .arg("alpha", 2.0f32)
//!     .buffer("x", &x)         // a buffer holding a typed slice
//!     .zeros::<f32>("y", 64)   // a zeroed buffer of 64 f32
//!     .build();
//! assert_eq!(launch.grid, [2, 1, 1]);
//! assert_eq!(launch.buffers["y"].len, Some(64));
//! ```
//!
//! A launch says nothing about a kernel until [`Launch::prepare`] binds it to one (or
//! [`Launch::prepare_for`], to a kernel known only by its name and parameters, as a
//! loaded object knows it): only then are names, types, ranges and sizes checked, with
//! the same errors whichever way the launch was made. Each setter replaces what an earlier
//! one said about the same name: binding an argument unbinds a buffer of that name, and
//! the other way round.

use super::element::{to_le_bytes, Element};
use super::{BufferInit, BufferSpec, ElemType, Launch, Literal};
use std::path::PathBuf;

/// Grid or block dimensions: `n`, `[x]`, `[x, y]`, `[x, y, z]`, `(x, y)` or `(x, y, z)`;
/// dimensions left out are 1.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Dims(pub [u32; 3]);

impl From<u32> for Dims {
    fn from(x: u32) -> Dims {
        Dims([x, 1, 1])
    }
}

impl From<[u32; 1]> for Dims {
    fn from([x]: [u32; 1]) -> Dims {
        Dims([x, 1, 1])
    }
}

impl From<[u32; 2]> for Dims {
    fn from([x, y]: [u32; 2]) -> Dims {
        Dims([x, y, 1])
    }
}

impl From<[u32; 3]> for Dims {
    fn from(d: [u32; 3]) -> Dims {
        Dims(d)
    }
}

impl From<(u32, u32)> for Dims {
    fn from((x, y): (u32, u32)) -> Dims {
        Dims([x, y, 1])
    }
}

impl From<(u32, u32, u32)> for Dims {
    fn from((x, y, z): (u32, u32, u32)) -> Dims {
        Dims([x, y, z])
    }
}

/// Typed setters: what [`LaunchBuilder`], the launch file and the command-line flags all
/// call.
impl Launch {
    /// A builder for a launch of one block of one thread with nothing bound.
    pub fn builder() -> LaunchBuilder {
        LaunchBuilder::new()
    }

    /// Binds the parameter `name` to a scalar argument, replacing a buffer or argument
    /// bound to it before.
    pub fn bind_arg(&mut self, name: impl Into<String>, value: impl Into<Literal>) {
        let name = name.into();
        self.buffers.remove(&name);
        self.forget_origins(&name);
        self.args.insert(name, value.into());
    }

    /// Binds the parameter `name` to a buffer, replacing a buffer or argument bound to it
    /// before.
    pub fn bind_buffer(&mut self, name: impl Into<String>, spec: BufferSpec) {
        let name = name.into();
        self.args.remove(&name);
        self.forget_origins(&name);
        self.buffers.insert(name, spec);
    }

    /// Forgets where the argument or buffer `name` came from: a later setting replaced it.
    pub(crate) fn forget_origins(&mut self, name: &str) {
        self.origins.remove(&format!("args.{name}"));
        self.origins.remove(&format!("buffers.{name}"));
    }
}

/// Builds a [`Launch`] in code: geometry, scalar arguments, buffers from typed slices or
/// bytes, and what to print, save and expect. See the [module documentation](self).
#[derive(Clone, Debug, Default)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct LaunchBuilder {
    launch: Launch,
}

impl LaunchBuilder {
    /// A launch of one block of one thread with nothing bound.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts from an existing launch (one read from a file, say) to add to it.
    pub fn from_launch(launch: Launch) -> Self {
        LaunchBuilder { launch }
    }

    /// The kernel to run, when the module holds several (with or without its `%`).
    pub fn kernel(mut self, name: &str) -> Self {
        self.launch.set_kernel(name);
        self
    }

    /// Blocks in the grid: `4`, `[4, 2]`, `(4, 2, 1)`, ...
    pub fn grid(mut self, dims: impl Into<Dims>) -> Self {
        self.launch.grid = dims.into().0;
        self.launch.origins.remove("grid");
        self
    }

    /// Threads per block: `64`, `[8, 8]`, ...
    pub fn block(mut self, dims: impl Into<Dims>) -> Self {
        self.launch.block = dims.into().0;
        self.launch.origins.remove("block");
        self
    }

    /// Binds a scalar parameter: `.arg("n", 100)`, `.arg("alpha", 1.5f32)`,
    /// `.arg("flag", true)`. Integers must fit the parameter's type (as signed or
    /// unsigned), integers and floats both convert to float parameters, and `bool` is for
    /// `i1` parameters; [`Launch::prepare`] reports any mismatch.
    pub fn arg(mut self, name: &str, value: impl Into<Literal>) -> Self {
        self.launch.bind_arg(name, value);
        self
    }

    /// Binds a pointer parameter to a new buffer holding `values` (its element type is
    /// `T`'s: `&[f32]` makes an `f32` buffer).
    pub fn buffer<T: Element>(self, name: &str, values: &[T]) -> Self {
        self.buffer_bytes(name, T::ELEM, to_le_bytes(values))
    }

    /// Binds a pointer parameter to a new buffer of `elem` elements holding `bytes`
    /// (little-endian; the length must be a whole number of elements).
    pub fn buffer_bytes(self, name: &str, elem: ElemType, bytes: impl Into<Vec<u8>>) -> Self {
        let bytes = bytes.into();
        self.buffer_spec(
            name,
            BufferSpec {
                elem,
                len: None,
                init: BufferInit::Bytes(bytes),
            },
        )
    }

    /// Binds a pointer parameter to a new buffer of `len` zeros of type `T`.
    pub fn zeros<T: Element>(self, name: &str, len: usize) -> Self {
        self.buffer_spec(name, sized(T::ELEM, len, BufferInit::Zeros))
    }

    /// Binds a pointer parameter to a new buffer of `len` elements of type `T` holding
    /// 0, 1, 2, ...
    pub fn iota<T: Element>(self, name: &str, len: usize) -> Self {
        self.buffer_spec(name, sized(T::ELEM, len, BufferInit::Iota))
    }

    /// Binds a pointer parameter to a new buffer of `len` pseudo-random elements of type
    /// `T` (the whole type for integers, `[0, 1)` for floats), the same for a given
    /// `seed` in every tool (see [`Launch::prepare`]).
    pub fn random<T: Element>(self, name: &str, len: usize, seed: u64) -> Self {
        let init = BufferInit::Random { seed, range: None };
        self.buffer_spec(name, sized(T::ELEM, len, init))
    }

    /// Binds a pointer parameter to a buffer described as in a launch file.
    pub fn buffer_spec(mut self, name: &str, spec: BufferSpec) -> Self {
        self.launch.bind_buffer(name, spec);
        self
    }

    /// Marks buffers to print after the run (by default every buffer is printed). Only
    /// tools that print (the command line) look at this.
    pub fn print(mut self, names: &[&str]) -> Self {
        self.launch.origins.remove("print");
        let list = self.launch.print.get_or_insert_with(Vec::new);
        for &name in names {
            if !list.iter().any(|n| n == name) {
                list.push(name.to_string());
            }
        }
        self
    }

    /// Saves a buffer's bytes to `path` when the tool calls
    /// [`GlobalMemory::save_buffers`](super::GlobalMemory::save_buffers) after the run.
    pub fn save(mut self, name: &str, path: impl Into<PathBuf>) -> Self {
        self.launch.save.insert(name.to_string(), path.into());
        self.launch.origins.remove(&format!("save.{name}"));
        self
    }

    /// What the buffer `name` must hold after the run, checked by
    /// [`GlobalMemory::check_expectations`](super::GlobalMemory::check_expectations).
    /// Floats compare by bits (any NaN equals any NaN).
    pub fn expect<T: Element>(mut self, name: &str, values: &[T]) -> Self {
        let lits = values.iter().map(|v| v.to_literal()).collect();
        self.launch.expect.insert(name.to_string(), lits);
        self.launch.origins.remove(&format!("expect.{name}"));
        self
    }

    /// The launch.
    pub fn build(self) -> Launch {
        self.launch
    }
}

fn sized(elem: ElemType, len: usize, init: BufferInit) -> BufferSpec {
    BufferSpec {
        elem,
        len: Some(len as u64),
        init,
    }
}

impl From<LaunchBuilder> for Launch {
    fn from(b: LaunchBuilder) -> Launch {
        b.build()
    }
}
