//! Global memory of a launch: the buffers, their addresses, and the results read back.
//!
//! Every tool that runs kernels (the reference interpreter, the emulator) executes against
//! a [`GlobalMemory`] built by [`Launch::prepare`](super::Launch::prepare), so buffers sit
//! at the same addresses everywhere and a pointer stored in memory has the same value in
//! every tool. Buffers are placed from [`BUFFER_BASE`] upward, each starting on a
//! [`BUFFER_ALIGN`]-byte boundary with at least [`GUARD_GAP`] unmapped bytes before the
//! next, so a small overrun faults instead of landing in a neighbour.

use crate::write::{format_f32, format_f64};
use core::fmt::{self, Write as _};
use std::path::PathBuf;

/// Address of the first buffer.
pub const BUFFER_BASE: u64 = 0x1000_0000;
/// Alignment of every buffer's base address.
pub const BUFFER_ALIGN: u64 = 256;
/// Unmapped bytes between the end of one buffer (rounded up to [`BUFFER_ALIGN`]) and the
/// next buffer.
pub const GUARD_GAP: u64 = 256;

/// The element type of a buffer. Signedness only affects how values are printed and
/// compared in range checks of literals; the bytes are the same.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ElemType {
    /// Signed 8-bit integer.
    I8,
    /// Signed 16-bit integer.
    I16,
    /// Signed 32-bit integer.
    I32,
    /// Signed 64-bit integer.
    I64,
    /// Unsigned 8-bit integer.
    U8,
    /// Unsigned 16-bit integer.
    U16,
    /// Unsigned 32-bit integer.
    U32,
    /// Unsigned 64-bit integer.
    U64,
    /// IEEE binary32.
    F32,
    /// IEEE binary64.
    F64,
}

impl ElemType {
    /// Every element type.
    pub const ALL: [ElemType; 10] = [
        ElemType::I8,
        ElemType::I16,
        ElemType::I32,
        ElemType::I64,
        ElemType::U8,
        ElemType::U16,
        ElemType::U32,
        ElemType::U64,
        ElemType::F32,
        ElemType::F64,
    ];

    /// The type's name in launch files and buffer specs.
    pub fn name(self) -> &'static str {
        match self {
            ElemType::I8 => "i8",
            ElemType::I16 => "i16",
            ElemType::I32 => "i32",
            ElemType::I64 => "i64",
            ElemType::U8 => "u8",
            ElemType::U16 => "u16",
            ElemType::U32 => "u32",
            ElemType::U64 => "u64",
            ElemType::F32 => "f32",
            ElemType::F64 => "f64",
        }
    }

    /// Looks a type up by name.
    pub fn from_name(name: &str) -> Option<ElemType> {
        ElemType::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Size of one element in bytes.
    pub fn bytes(self) -> usize {
        match self {
            ElemType::I8 | ElemType::U8 => 1,
            ElemType::I16 | ElemType::U16 => 2,
            ElemType::I32 | ElemType::U32 | ElemType::F32 => 4,
            ElemType::I64 | ElemType::U64 | ElemType::F64 => 8,
        }
    }

    /// Is this a float type?
    pub fn is_float(self) -> bool {
        matches!(self, ElemType::F32 | ElemType::F64)
    }

    /// Is this a signed integer type?
    pub fn is_signed(self) -> bool {
        matches!(
            self,
            ElemType::I8 | ElemType::I16 | ElemType::I32 | ElemType::I64
        )
    }

    /// How literals convert to this type's bits.
    pub fn scalar(self) -> super::literal::Scalar {
        use super::literal::Scalar;
        match self {
            ElemType::F32 => Scalar::F32,
            ElemType::F64 => Scalar::F64,
            t => Scalar::Int(8 * t.bytes() as u32),
        }
    }

    /// The typed value of an element from its bits (the low `bytes()*8` bits of `bits`).
    pub fn value(self, bits: u64) -> TypedValue {
        let width = 8 * self.bytes() as u32;
        let masked = if width == 64 {
            bits
        } else {
            bits & ((1u64 << width) - 1)
        };
        match self {
            ElemType::F32 => TypedValue::F32(f32::from_bits(masked as u32)),
            ElemType::F64 => TypedValue::F64(f64::from_bits(masked)),
            t if t.is_signed() => {
                let shift = 64 - width;
                TypedValue::Signed(((masked << shift) as i64) >> shift)
            }
            _ => TypedValue::Unsigned(masked),
        }
    }
}

impl fmt::Display for ElemType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One element of a buffer, typed by the buffer's element type.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum TypedValue {
    /// An element of a signed integer buffer.
    Signed(i64),
    /// An element of an unsigned integer buffer.
    Unsigned(u64),
    /// An element of an `f32` buffer.
    F32(f32),
    /// An element of an `f64` buffer.
    F64(f64),
}

impl TypedValue {
    /// The value as JSON: integers as numbers, finite floats as the shortest number that
    /// reads back to the same float, NaN and infinities as the strings `"nan"`, `"inf"`
    /// and `"-inf"` (JSON has no spelling for them).
    pub fn to_json(self) -> serde_json::Value {
        let float = |x: f64, text: String| {
            if x.is_nan() {
                serde_json::Value::from("nan")
            } else if x.is_infinite() {
                serde_json::Value::from(if x > 0.0 { "inf" } else { "-inf" })
            } else {
                // Going through the shortest text keeps f32 values short (0.1, not
                // 0.10000000149011612) while still reading back exactly.
                let y: f64 = text.parse().unwrap_or(x);
                serde_json::Number::from_f64(y).map_or(serde_json::Value::Null, Into::into)
            }
        };
        match self {
            TypedValue::Signed(v) => v.into(),
            TypedValue::Unsigned(v) => v.into(),
            TypedValue::F32(x) => float(f64::from(x), format!("{x:?}")),
            TypedValue::F64(x) => float(x, format!("{x:?}")),
        }
    }
}

impl fmt::Display for TypedValue {
    /// Integers in decimal; floats as in the text format (`1.5`, `inf`, `nan`, or raw bits
    /// for a non-canonical NaN).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            TypedValue::Signed(v) => write!(f, "{v}"),
            TypedValue::Unsigned(v) => write!(f, "{v}"),
            TypedValue::F32(x) => f.write_str(&format_f32(x.to_bits())),
            TypedValue::F64(x) => f.write_str(&format_f64(x.to_bits())),
        }
    }
}

/// A buffer of global memory.
#[derive(Clone, Debug)]
pub struct Buffer {
    /// The name of the kernel parameter the buffer is bound to.
    pub name: String,
    /// The element type.
    pub elem: ElemType,
    /// The address of the first byte.
    pub base: u64,
    /// The contents, little-endian.
    pub bytes: Vec<u8>,
    /// Is the buffer among the results printed after the run?
    pub print: bool,
    /// Where to save the buffer's bytes after the run, if anywhere.
    pub save: Option<PathBuf>,
    /// The element bits the buffer must hold after the run, if checked.
    pub expect: Option<Vec<u64>>,
}

impl Buffer {
    /// The number of elements.
    pub fn len(&self) -> usize {
        self.bytes.len() / self.elem.bytes()
    }

    /// Has the buffer no elements?
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The address one past the last byte.
    pub fn end(&self) -> u64 {
        self.base + self.bytes.len() as u64
    }

    /// The bits of element `i` (zero-extended).
    pub fn elem_bits(&self, i: usize) -> u64 {
        let n = self.elem.bytes();
        read_le(&self.bytes[i * n..(i + 1) * n])
    }

    /// Every element, typed.
    pub fn values(&self) -> Vec<TypedValue> {
        (0..self.len())
            .map(|i| self.elem.value(self.elem_bits(i)))
            .collect()
    }
}

/// Why an access to global memory failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MemFault {
    /// The access does not lie entirely inside one buffer.
    #[error("{}", out_of_bounds_detail(*.addr, .nearest))]
    OutOfBounds {
        /// The first byte accessed.
        addr: u64,
        /// The number of bytes accessed.
        size: u32,
        /// The buffer whose range is nearest below the address: its name, base and end.
        nearest: Option<(String, u64, u64)>,
    },
}

fn out_of_bounds_detail(addr: u64, nearest: &Option<(String, u64, u64)>) -> String {
    match nearest {
        Some((name, _, end)) => format!("buffer {name} ends at {end:#x}"),
        None => format!("no buffer at or below {addr:#x}"),
    }
}

/// The buffers of a launch, sorted by address.
#[derive(Clone, Debug, Default)]
pub struct GlobalMemory {
    /// The buffers, in increasing address order (which is the order of the kernel's
    /// parameters).
    pub buffers: Vec<Buffer>,
}

impl GlobalMemory {
    /// The buffer called `name`.
    pub fn buffer(&self, name: &str) -> Option<&Buffer> {
        self.buffers.iter().find(|b| b.name == name)
    }

    /// Finds the buffer holding the `size` bytes at `addr`: its index and the offset of
    /// `addr` in it.
    pub fn find(&self, addr: u64, size: u32) -> Result<(usize, usize), MemFault> {
        // Index of the last buffer whose base is <= addr.
        let idx = self.buffers.partition_point(|b| b.base <= addr);
        let fault = |nearest: Option<&Buffer>| MemFault::OutOfBounds {
            addr,
            size,
            nearest: nearest.map(|b| (b.name.clone(), b.base, b.end())),
        };
        if idx == 0 {
            return Err(fault(None));
        }
        let buf = &self.buffers[idx - 1];
        let off = addr - buf.base;
        match off.checked_add(u64::from(size)) {
            Some(end) if end <= buf.bytes.len() as u64 => Ok((idx - 1, off as usize)),
            _ => Err(fault(Some(buf))),
        }
    }

    /// Reads `size` (1, 2, 4 or 8) bytes at `addr`, little-endian, zero-extended.
    pub fn read(&self, addr: u64, size: u32) -> Result<u64, MemFault> {
        let (b, off) = self.find(addr, size)?;
        Ok(read_le(&self.buffers[b].bytes[off..off + size as usize]))
    }

    /// Writes the low `size` (1, 2, 4 or 8) bytes of `bits` at `addr`, little-endian.
    pub fn write(&mut self, addr: u64, size: u32, bits: u64) -> Result<(), MemFault> {
        let (b, off) = self.find(addr, size)?;
        write_le(&mut self.buffers[b].bytes[off..off + size as usize], bits);
        Ok(())
    }

    /// The elements of the buffer called `name`, typed.
    pub fn buffer_values(&self, name: &str) -> Option<Vec<TypedValue>> {
        self.buffer(name).map(Buffer::values)
    }

    /// The printed buffers as JSON: `{"buffers": {"y": [2, 4, 6, 8]}}`, in address order.
    /// See [`TypedValue::to_json`] for how floats are written.
    pub fn results_json(&self) -> serde_json::Value {
        let mut map = serde_json::Map::new();
        for buf in self.buffers.iter().filter(|b| b.print) {
            let values = buf.values().into_iter().map(TypedValue::to_json).collect();
            map.insert(buf.name.clone(), serde_json::Value::Array(values));
        }
        serde_json::json!({ "buffers": map })
    }

    /// The printed buffers as text for a person: a header per buffer, then 8 values per
    /// line, each line starting with the index of its first value.
    pub fn results_text(&self) -> String {
        const PER_LINE: usize = 8;
        let mut out = String::new();
        for buf in self.buffers.iter().filter(|b| b.print) {
            let _ = writeln!(out, "{}: {}[{}]", buf.name, buf.elem, buf.len());
            let values = buf.values();
            let width = values.len().saturating_sub(1).to_string().len();
            for (line, chunk) in values.chunks(PER_LINE).enumerate() {
                let _ = write!(out, "  [{:>width$}]", line * PER_LINE);
                for v in chunk {
                    let _ = write!(out, " {v}");
                }
                out.push('\n');
            }
        }
        out
    }

    /// Writes every buffer that has a save path to its file, as raw little-endian bytes.
    pub fn save_buffers(&self) -> Result<(), super::LaunchError> {
        for buf in &self.buffers {
            if let Some(path) = &buf.save {
                std::fs::write(path, &buf.bytes).map_err(|e| super::LaunchError::Io {
                    path: path.clone(),
                    message: e.to_string(),
                })?;
            }
        }
        Ok(())
    }

    /// Compares every buffer that has expected values with them. Floats compare by bits,
    /// except that any NaN equals any NaN. Returns one line per mismatching buffer, naming
    /// the first differing index, the expected and the actual value, and the number of
    /// differing elements.
    pub fn check_expectations(&self) -> Result<(), ExpectationError> {
        let mut report = Vec::new();
        for buf in &self.buffers {
            let Some(expect) = &buf.expect else { continue };
            if expect.len() != buf.len() {
                report.push(format!(
                    "buffer {}: expected {} elements, the buffer has {}",
                    buf.name,
                    expect.len(),
                    buf.len()
                ));
                continue;
            }
            let mut first = None;
            let mut count = 0usize;
            for (i, &want) in expect.iter().enumerate() {
                let have = buf.elem_bits(i);
                if !same_elem(buf.elem, want, have) {
                    count += 1;
                    first.get_or_insert((i, want, have));
                }
            }
            if let Some((i, want, have)) = first {
                report.push(format!(
                    "buffer {}: element [{i}] is {}, expected {} ({count} of {} elements differ)",
                    buf.name,
                    buf.elem.value(have),
                    buf.elem.value(want),
                    buf.len()
                ));
            }
        }
        if report.is_empty() {
            Ok(())
        } else {
            Err(ExpectationError { report })
        }
    }
}

/// Buffers that do not hold their expected values after a run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", report.join("\n"))]
pub struct ExpectationError {
    /// One line per mismatching buffer.
    pub report: Vec<String>,
}

fn same_elem(elem: ElemType, a: u64, b: u64) -> bool {
    match elem {
        ElemType::F32 => {
            a == b || (f32::from_bits(a as u32).is_nan() && f32::from_bits(b as u32).is_nan())
        }
        ElemType::F64 => a == b || (f64::from_bits(a).is_nan() && f64::from_bits(b).is_nan()),
        _ => a == b,
    }
}

/// Reads up to 8 bytes as a little-endian integer. The access sizes of the IR (1, 2, 4
/// and 8 bytes) read as one word; other lengths byte by byte.
#[inline]
pub fn read_le(bytes: &[u8]) -> u64 {
    match bytes.len() {
        1 => u64::from(bytes[0]),
        2 => u64::from(u16::from_le_bytes([bytes[0], bytes[1]])),
        4 => {
            let mut w = [0u8; 4];
            w.copy_from_slice(bytes);
            u64::from(u32::from_le_bytes(w))
        }
        8 => {
            let mut w = [0u8; 8];
            w.copy_from_slice(bytes);
            u64::from_le_bytes(w)
        }
        _ => bytes
            .iter()
            .rev()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)),
    }
}

/// Writes the low `bytes.len()` bytes of `bits`, little-endian (as one word for 1, 2, 4 and
/// 8 bytes).
#[inline]
pub fn write_le(bytes: &mut [u8], bits: u64) {
    match bytes.len() {
        1 => bytes[0] = bits as u8,
        2 => bytes.copy_from_slice(&(bits as u16).to_le_bytes()),
        4 => bytes.copy_from_slice(&(bits as u32).to_le_bytes()),
        8 => bytes.copy_from_slice(&bits.to_le_bytes()),
        _ => {
            for (i, b) in bytes.iter_mut().enumerate() {
                *b = (bits >> (8 * i)) as u8;
            }
        }
    }
}

/// Reads the `size`-byte little-endian value at byte `off` of `bytes`, zero-extended.
#[inline]
pub fn load_le(bytes: &[u8], off: usize, size: u32) -> u64 {
    read_le(&bytes[off..off + size as usize])
}

/// Writes the low `size` bytes of `bits` at byte `off` of `bytes`, little-endian.
#[inline]
pub fn store_le(bytes: &mut [u8], off: usize, size: u32, bits: u64) {
    write_le(&mut bytes[off..off + size as usize], bits);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mem() -> GlobalMemory {
        let buf = |name: &str, elem, base, len: usize| Buffer {
            name: name.into(),
            elem,
            base,
            bytes: vec![0; len * elem.bytes()],
            print: true,
            save: None,
            expect: None,
        };
        GlobalMemory {
            buffers: vec![
                buf("x", ElemType::F32, 0x1000_0000, 4),
                buf("y", ElemType::I32, 0x1000_0200, 4),
            ],
        }
    }

    #[test]
    fn find_and_access() {
        let mut m = mem();
        assert_eq!(m.find(0x1000_0000, 4), Ok((0, 0)));
        assert_eq!(m.find(0x1000_000c, 4), Ok((0, 12)));
        assert!(m.find(0x1000_000d, 4).is_err());
        assert!(m.find(0x1000_0010, 1).is_err());
        assert!(m.find(0, 1).is_err());
        assert!(m.find(u64::MAX, 8).is_err());
        assert_eq!(m.find(0x1000_0204, 4), Ok((1, 4)));
        m.write(0x1000_0204, 4, 0xdead_beef).unwrap();
        assert_eq!(m.read(0x1000_0204, 4), Ok(0xdead_beef));
        assert_eq!(m.read(0x1000_0205, 2), Ok(0xadbe));
        let e = m.find(0x1000_0010, 4).unwrap_err();
        assert_eq!(e.to_string(), "buffer x ends at 0x10000010");
    }

    #[test]
    fn word_wide_access_is_little_endian() {
        let mut b = vec![0u8; 16];
        for size in [1u32, 2, 3, 4, 8] {
            let v = 0x0807_0605_0403_0201u64;
            b.fill(0);
            store_le(&mut b, 4, size, v);
            let bits = 8 * size;
            let mask = if bits == 64 {
                u64::MAX
            } else {
                (1 << bits) - 1
            };
            assert_eq!(load_le(&b, 4, size), v & mask);
            for (i, &x) in b.iter().enumerate() {
                let want = if (4..4 + size as usize).contains(&i) {
                    i as u8 - 3
                } else {
                    0
                };
                assert_eq!(x, want, "size {size} byte {i}");
            }
        }
    }

    #[test]
    fn results() {
        let mut m = mem();
        m.write(0x1000_0000, 4, u64::from(f32::NAN.to_bits()))
            .unwrap();
        m.write(0x1000_0004, 4, u64::from(0.1f32.to_bits()))
            .unwrap();
        m.write(0x1000_0008, 4, u64::from(f32::NEG_INFINITY.to_bits()))
            .unwrap();
        m.write(0x1000_0200, 4, (-5i32) as u32 as u64).unwrap();
        let j = m.results_json();
        assert_eq!(
            j.to_string(),
            r#"{"buffers":{"x":["nan",0.1,"-inf",0.0],"y":[-5,0,0,0]}}"#
        );
        let t = m.results_text();
        assert!(t.contains("y: i32[4]\n  [0] -5 0 0 0\n"), "{t}");
    }

    #[test]
    fn expectations() {
        let mut m = mem();
        m.buffers[0].expect = Some(vec![u64::from(f32::NAN.to_bits()), 0, 0, 0]);
        m.write(0x1000_0000, 4, 0x7fff_ffff).unwrap();
        assert!(m.check_expectations().is_ok());
        m.buffers[1].expect = Some(vec![0, 0, 7, 0]);
        let e = m.check_expectations().unwrap_err();
        assert_eq!(
            e.to_string(),
            "buffer y: element [2] is 0, expected 7 (1 of 4 elements differ)"
        );
        // -0.0 and +0.0 differ: floats compare exactly.
        m.buffers[1].expect = None;
        m.buffers[0].expect = Some(vec![0x7fff_ffff, 0x8000_0000, 0, 0]);
        assert!(m.check_expectations().is_err());
    }
}
