//! Reading results back in Rust: a buffer as a `Vec<T>` of its element type, buffers
//! written from typed slices between runs, and equality of buffers and memories.
//!
//! ```
//! use warplift_ir::launch::{GlobalMemory, Launch};
//! use warplift_ir::{Param, Type};
//!
//! let launch = Launch::builder().zeros::<f32>("out", 3).build();
//! let mut prepared = launch.prepare_for("k", &[Param::new("out", Type::I64)])?;
//! let memory: &mut GlobalMemory = &mut prepared.memory;
//! memory.write_buffer("out", &[1.0f32, 2.5, -0.0])?;
//! assert_eq!(memory.read_buffer::<f32>("out")?, [1.0, 2.5, -0.0]);
//! assert!(memory.read_buffer::<i32>("out").is_err()); // an f32 buffer
//! assert!(memory.read_buffer::<f32>("in").is_err()); // no such buffer
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Two buffers are equal when they have the same name, element type, address and bytes;
//! what a tool should print, save or expect of them is launch bookkeeping and takes no
//! part. Floats compare by their bits here, so equal memories are identical memories: the
//! memory the emulator leaves equals the interpreter's, NaN payloads included.

use super::element::{from_le_bytes, to_le_bytes, Element};
use super::memory::{Buffer, ElemType, GlobalMemory};
use crate::write::count;

/// Why a buffer could not be read or written as a typed slice.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BufferError {
    /// No buffer has the name.
    #[error("no buffer `{name}` (the buffers are: {})", list(.buffers))]
    NoBuffer {
        /// The name asked for.
        name: String,
        /// The buffers there are.
        buffers: Vec<String>,
    },
    /// The Rust type asked for is not the buffer's element type.
    #[error("buffer `{name}` holds {holds} elements, not {requested}")]
    TypeMismatch {
        /// The buffer.
        name: String,
        /// Its element type.
        holds: ElemType,
        /// The element type of the Rust type asked for.
        requested: ElemType,
    },
    /// A write of another number of elements than the buffer holds.
    #[error(
        "buffer `{name}` holds {}; {} given",
        count(*.len, "element"),
        count(*.given, "value")
    )]
    LengthMismatch {
        /// The buffer.
        name: String,
        /// Its number of elements.
        len: usize,
        /// The number of elements given.
        given: usize,
    },
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

impl Buffer {
    /// The elements, as the Rust type of the buffer's element type (`f32` for an `f32`
    /// buffer); any other `T` is a [`BufferError::TypeMismatch`].
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>, BufferError> {
        self.check_type::<T>()?;
        Ok(from_le_bytes(&self.bytes))
    }

    /// Replaces the contents with `values`, which must be as many elements of the
    /// buffer's element type as it holds.
    pub fn write<T: Element>(&mut self, values: &[T]) -> Result<(), BufferError> {
        self.check_type::<T>()?;
        if values.len() != self.len() {
            return Err(BufferError::LengthMismatch {
                name: self.name.clone(),
                len: self.len(),
                given: values.len(),
            });
        }
        self.bytes = to_le_bytes(values);
        Ok(())
    }

    fn check_type<T: Element>(&self) -> Result<(), BufferError> {
        if T::ELEM == self.elem {
            Ok(())
        } else {
            Err(BufferError::TypeMismatch {
                name: self.name.clone(),
                holds: self.elem,
                requested: T::ELEM,
            })
        }
    }
}

impl GlobalMemory {
    /// The elements of the buffer `name` as a `Vec<T>`, `T` being the Rust type of its
    /// element type.
    pub fn read_buffer<T: Element>(&self, name: &str) -> Result<Vec<T>, BufferError> {
        self.buffer(name)
            .ok_or_else(|| self.no_buffer(name))?
            .to_vec()
    }

    /// Replaces the contents of the buffer `name` with `values` (as many as it holds), to
    /// run a kernel again on new inputs without building a new launch.
    pub fn write_buffer<T: Element>(
        &mut self,
        name: &str,
        values: &[T],
    ) -> Result<(), BufferError> {
        let err = self.no_buffer(name);
        self.buffers
            .iter_mut()
            .find(|b| b.name == name)
            .ok_or(err)?
            .write(values)
    }

    fn no_buffer(&self, name: &str) -> BufferError {
        BufferError::NoBuffer {
            name: name.to_string(),
            buffers: self.buffers.iter().map(|b| b.name.clone()).collect(),
        }
    }
}

impl PartialEq for Buffer {
    /// Same name, element type, address and bytes (see the [module documentation](self)).
    fn eq(&self, other: &Buffer) -> bool {
        self.name == other.name
            && self.elem == other.elem
            && self.base == other.base
            && self.bytes == other.bytes
    }
}

impl Eq for Buffer {}

impl PartialEq for GlobalMemory {
    /// The same buffers, in the same order.
    fn eq(&self, other: &GlobalMemory) -> bool {
        self.buffers == other.buffers
    }
}

impl Eq for GlobalMemory {}

#[cfg(test)]
mod tests {
    use crate::function::Param;
    use crate::launch::{BufferError, ElemType, Launch};
    use crate::types::Type;

    #[test]
    fn typed_round_trip_and_errors() {
        let launch = Launch::builder()
            .buffer("a", &[-1i8, 2, -3])
            .buffer("b", &[u64::MAX, 7])
            .buffer("c", &[f64::NAN, 0.5])
            .build();
        let params = ["a", "b", "c"].map(|n| Param::new(n, Type::I64));
        let p = launch.prepare_for("k", &params).unwrap();
        let m = &p.memory;
        assert_eq!(m.read_buffer::<i8>("a").unwrap(), [-1, 2, -3]);
        assert_eq!(m.read_buffer::<u64>("b").unwrap(), [u64::MAX, 7]);
        let c = m.read_buffer::<f64>("c").unwrap();
        assert_eq!(c[0].to_bits(), f64::NAN.to_bits());
        assert_eq!(c[1], 0.5);
        assert_eq!(
            m.read_buffer::<u8>("a").unwrap_err(),
            BufferError::TypeMismatch {
                name: "a".into(),
                holds: ElemType::I8,
                requested: ElemType::U8
            }
        );
        assert_eq!(
            m.read_buffer::<u8>("d").unwrap_err().to_string(),
            "no buffer `d` (the buffers are: a, b, c)"
        );
        let mut m2 = m.clone();
        assert_eq!(*m, m2);
        m2.write_buffer("a", &[1i8, 2, 3]).unwrap();
        assert_ne!(*m, m2);
        assert_eq!(
            m2.write_buffer("a", &[1i8]).unwrap_err().to_string(),
            "buffer `a` holds 3 elements; 1 value given"
        );
        // Bookkeeping does not count.
        m2 = m.clone();
        m2.buffers[0].print = !m2.buffers[0].print;
        assert_eq!(*m, m2);
    }
}
