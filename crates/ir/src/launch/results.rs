//! The results of a run as a person or a program reads them, written as a stream.
//!
//! A buffer of up to [`SUMMARY_THRESHOLD`] elements prints in full; a larger one, unless
//! asked for in full ([`Detail::Full`]), prints as a summary: its length, its first and
//! last [`SUMMARY_EDGE`] elements and a checksum of its bytes (64-bit FNV-1a), enough to
//! see that a run did something and to compare two runs, without the gigabyte of text a
//! buffer of 10^8 elements would make. Both writers go element by element into the
//! output, never building the text or a vector of values in memory, so printing costs
//! no memory in proportion to the buffers.
//!
//! ```text
//! out: i32[1048576] (summary: --print out for every element)
//!   [      0] 0 1 2 3 4 5 6 7
//!   [1048568] 1048568 1048569 1048570 1048571 1048572 1048573 1048574 1048575
//!   fnv1a64 0x8ea6bff3d4d0c24c
//! ```
//!
//! In JSON a summarised buffer is an object instead of an array:
//! `{"type": "i32", "len": 1048576, "first": [...], "last": [...], "fnv1a64": "0x..."}`.

use super::memory::{Buffer, GlobalMemory, TypedValue};
use std::io::{self, Write};

/// Buffers with more elements than this are summarised unless asked for in full.
pub const SUMMARY_THRESHOLD: usize = 1024;
/// Elements shown at each end of a summarised buffer.
pub const SUMMARY_EDGE: usize = 8;
/// Values per line of text output.
const PER_LINE: usize = 8;

/// How much of each printed buffer to show.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Detail {
    /// Small buffers in full, large ones summarised.
    #[default]
    Auto,
    /// Every element of every printed buffer.
    Full,
}

impl Buffer {
    /// Whether the buffer prints as a summary at `detail`.
    pub fn summarised(&self, detail: Detail) -> bool {
        detail == Detail::Auto && self.len() > SUMMARY_THRESHOLD
    }

    /// The 64-bit FNV-1a hash of the buffer's bytes.
    pub fn checksum(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in &self.bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h
    }

    /// Element `i`, typed.
    fn typed(&self, i: usize) -> TypedValue {
        self.elem.value(self.elem_bits(i))
    }
}

/// Writes the printed buffers as text: a header per buffer, then 8 values per line, each
/// line starting with the index of its first value; a summarised buffer shows its first
/// and last line and its checksum.
pub fn write_text(memory: &GlobalMemory, detail: Detail, out: &mut dyn Write) -> io::Result<()> {
    for buf in memory.buffers.iter().filter(|b| b.print) {
        let n = buf.len();
        let width = n.saturating_sub(1).to_string().len();
        let line = |out: &mut dyn Write, start: usize| -> io::Result<()> {
            write!(out, "  [{start:>width$}]")?;
            for i in start..(start + PER_LINE).min(n) {
                write!(out, " {}", buf.typed(i))?;
            }
            writeln!(out)
        };
        if buf.summarised(detail) {
            writeln!(
                out,
                "{}: {}[{n}] (summary: --print {} for every element)",
                buf.name, buf.elem, buf.name
            )?;
            line(out, 0)?;
            line(out, n - SUMMARY_EDGE)?;
            writeln!(out, "  fnv1a64 {:#018x}", buf.checksum())?;
        } else {
            writeln!(out, "{}: {}[{n}]", buf.name, buf.elem)?;
            for start in (0..n).step_by(PER_LINE) {
                line(out, start)?;
            }
        }
    }
    Ok(())
}

/// Writes the printed buffers as one JSON object, name to value, in address order: an
/// array of every element, or for a summarised buffer an object with its type, length,
/// first and last elements and checksum. Floats as in [`TypedValue::to_json`].
pub fn write_json(memory: &GlobalMemory, detail: Detail, out: &mut dyn Write) -> io::Result<()> {
    let elems = |out: &mut dyn Write, buf: &Buffer, range: core::ops::Range<usize>| {
        out.write_all(b"[")?;
        for i in range.clone() {
            if i != range.start {
                out.write_all(b",")?;
            }
            serde_json::to_writer(&mut *out, &buf.typed(i).to_json())?;
        }
        out.write_all(b"]")
    };
    out.write_all(b"{")?;
    for (k, buf) in memory.buffers.iter().filter(|b| b.print).enumerate() {
        if k > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *out, &buf.name)?;
        out.write_all(b":")?;
        let n = buf.len();
        if buf.summarised(detail) {
            write!(out, "{{\"type\":\"{}\",\"len\":{n},\"first\":", buf.elem)?;
            elems(out, buf, 0..SUMMARY_EDGE)?;
            out.write_all(b",\"last\":")?;
            elems(out, buf, n - SUMMARY_EDGE..n)?;
            write!(out, ",\"fnv1a64\":\"{:#018x}\"}}", buf.checksum())?;
        } else {
            elems(out, buf, 0..n)?;
        }
    }
    out.write_all(b"}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::memory::ElemType;

    fn memory(len: usize) -> GlobalMemory {
        let mut bytes = Vec::new();
        for i in 0..len as i32 {
            bytes.extend_from_slice(&(i - 3).to_le_bytes());
        }
        GlobalMemory {
            buffers: vec![Buffer {
                name: "out".into(),
                elem: ElemType::I32,
                base: 0x1000_0000,
                bytes,
                print: true,
                save: None,
                expect: None,
            }],
        }
    }

    fn text(m: &GlobalMemory, d: Detail) -> String {
        let mut v = Vec::new();
        write_text(m, d, &mut v).unwrap();
        String::from_utf8(v).unwrap()
    }

    fn json(m: &GlobalMemory, d: Detail) -> String {
        let mut v = Vec::new();
        write_json(m, d, &mut v).unwrap();
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn small_buffers_print_in_full_as_before() {
        let m = memory(10);
        assert_eq!(text(&m, Detail::Auto), m.results_text());
        let j: serde_json::Value = serde_json::from_str(&json(&m, Detail::Auto)).unwrap();
        assert_eq!(j, m.results_json()["buffers"]);
        let m = memory(SUMMARY_THRESHOLD);
        assert_eq!(text(&m, Detail::Auto), m.results_text());
    }

    #[test]
    fn large_buffers_are_summarised_unless_asked_for_in_full() {
        let m = memory(SUMMARY_THRESHOLD + 1);
        let t = text(&m, Detail::Auto);
        let sum = m.buffers[0].checksum();
        assert_eq!(
            t,
            format!(
                "out: i32[1025] (summary: --print out for every element)\n  \
                 [   0] -3 -2 -1 0 1 2 3 4\n  \
                 [1017] 1014 1015 1016 1017 1018 1019 1020 1021\n  fnv1a64 {sum:#018x}\n"
            )
        );
        assert_eq!(text(&m, Detail::Full), m.results_text());
        let j: serde_json::Value = serde_json::from_str(&json(&m, Detail::Auto)).unwrap();
        assert_eq!(
            j,
            serde_json::json!({"out": {
                "type": "i32",
                "len": 1025,
                "first": [-3, -2, -1, 0, 1, 2, 3, 4],
                "last": [1014, 1015, 1016, 1017, 1018, 1019, 1020, 1021],
                "fnv1a64": format!("{sum:#018x}"),
            }})
        );
        let j: serde_json::Value = serde_json::from_str(&json(&m, Detail::Full)).unwrap();
        assert_eq!(j, m.results_json()["buffers"]);
    }

    #[test]
    fn the_checksum_is_fnv1a_of_the_bytes() {
        let mut m = memory(0);
        assert_eq!(m.buffers[0].checksum(), 0xcbf2_9ce4_8422_2325);
        m.buffers[0].bytes = b"a".to_vec();
        assert_eq!(m.buffers[0].checksum(), 0xaf63_dc4c_8601_ec8c);
    }
}
