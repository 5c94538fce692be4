//! Short pieces of PTX text built without allocating: register, temporary and label names,
//! immediates, guard prefixes and memory operands.
//!
//! The emitter names several operands for every machine instruction. Formatting each into a
//! `String` of its own made allocation and freeing a large share of emission time, so
//! operand names are kept inline in a [`Name`] (a fixed buffer on the stack) and each PTX
//! line is written straight into the body with `format_args!`. A name longer than the
//! buffer (only a memory operand with a large offset comes close) falls back to the heap,
//! so the result is the same text in every case.

use core::fmt::{self, Write};
use core::ops::Deref;

/// Bytes kept inline: the longest common names are 64-bit immediates such as
/// `0x00000000FFFFFFFF` (18 bytes) and memory operands such as `[%rd12+1024]`.
const INLINE: usize = 30;

/// A short piece of PTX text, inline when it fits.
#[derive(Clone)]
pub(super) enum Name {
    /// The text is `buf[..len]`.
    Inline { len: u8, buf: [u8; INLINE] },
    /// Text that did not fit.
    Heap(String),
    /// Text made once for the whole process (see [`ReadyNames`]).
    Static(&'static str),
}

impl Name {
    /// The text `args` formats to.
    pub(super) fn format(args: fmt::Arguments<'_>) -> Name {
        if let Some(s) = args.as_str() {
            return Name::from(s);
        }
        let mut w = InlineWriter {
            len: 0,
            buf: [0; INLINE],
        };
        if w.write_fmt(args).is_ok() {
            Name::Inline {
                len: w.len as u8,
                buf: w.buf,
            }
        } else {
            Name::Heap(std::fmt::format(args))
        }
    }

    /// `prefix` followed by the decimal digits of `n` (a register, temporary or label name),
    /// written directly: the most frequent names skip the formatting machinery.
    pub(super) fn numbered(prefix: &str, n: u32) -> Name {
        let mut scratch = [0u8; 10];
        let digits = decimal(n, &mut scratch);
        let len = prefix.len() + digits.len();
        if len > INLINE {
            return Name::Heap(format!("{prefix}{n}"));
        }
        // Byte by byte: a handful of bytes, where a call to copy them costs more.
        let mut buf = [0; INLINE];
        for (slot, &b) in buf.iter_mut().zip(prefix.as_bytes().iter().chain(digits)) {
            *slot = b;
        }
        Name::Inline {
            len: len as u8,
            buf,
        }
    }

    /// `prefix` followed by the low `digits` hexadecimal digits of `v`, upper case and
    /// zero-padded (`0f3FC00000`, `0x00000000FFFFFFFF`), written directly.
    pub(super) fn hex(prefix: &str, v: u64, digits: usize) -> Name {
        const HEX: &[u8; 16] = b"0123456789ABCDEF";
        let len = prefix.len() + digits;
        if len > INLINE || digits > 16 {
            let v = if digits >= 16 {
                v
            } else {
                v & ((1 << (4 * digits)) - 1)
            };
            return Name::Heap(format!("{prefix}{v:0digits$X}"));
        }
        let mut buf = [0; INLINE];
        buf[..prefix.len()].copy_from_slice(prefix.as_bytes());
        for (i, slot) in buf[prefix.len()..len].iter_mut().enumerate() {
            let shift = 4 * (digits - 1 - i);
            *slot = HEX[((v >> shift) & 0xF) as usize];
        }
        Name::Inline {
            len: len as u8,
            buf,
        }
    }

    /// The concatenation of `parts`, without the formatting machinery.
    pub(super) fn concat(parts: &[&str]) -> Name {
        let mut w = InlineWriter {
            len: 0,
            buf: [0; INLINE],
        };
        for (i, part) in parts.iter().enumerate() {
            if w.write_str(part).is_err() {
                let mut s = String::from_utf8_lossy(&w.buf[..w.len]).into_owned();
                for rest in &parts[i..] {
                    s.push_str(rest);
                }
                return Name::Heap(s);
            }
        }
        Name::Inline {
            len: w.len as u8,
            buf: w.buf,
        }
    }

    /// The text.
    pub(super) fn as_str(&self) -> &str {
        match self {
            // Only whole `&str`s are copied in, so the bytes are valid UTF-8; the fallback
            // keeps this total without `unsafe`.
            Name::Inline { len, buf } => core::str::from_utf8(&buf[..*len as usize]).unwrap_or(""),
            Name::Heap(s) => s,
            Name::Static(s) => s,
        }
    }
}

/// `prefix` followed by the decimal digits of each number below a bound, for a few
/// prefixes, all written once into one string for the whole process.
///
/// Register and temporary names are most of the operands the emitter writes; a name
/// taken from here is a reference, where one built anew is formatted and then checked
/// as UTF-8 every time it is read. The text is leaked (it lives as long as the process
/// anyway), so that each name is kept as a `&'static str` ready to hand out: a lookup is
/// an index, not a slicing of the text checked at both ends.
pub(super) struct ReadyNames {
    /// `names[p * count + n]` is the name of number `n` with the `p`-th prefix.
    names: Vec<&'static str>,
    count: usize,
}

impl ReadyNames {
    /// The names of `0..count` with each of `prefixes`.
    pub(super) fn new(prefixes: &[&str], count: u32) -> ReadyNames {
        let mut text = String::new();
        let mut ends = Vec::with_capacity(prefixes.len() * count as usize);
        for prefix in prefixes {
            for n in 0..count {
                text.push_str(prefix);
                push_u32(&mut text, n);
                ends.push(text.len());
            }
        }
        let text: &'static str = Box::leak(text.into_boxed_str());
        let mut start = 0;
        let names = ends
            .into_iter()
            .map(|end| {
                let name = text.get(start..end).unwrap_or("");
                start = end;
                name
            })
            .collect();
        ReadyNames {
            names,
            count: count as usize,
        }
    }

    /// The name of number `n` with the `prefix`-th prefix, if it is one made ready.
    pub(super) fn get(&self, prefix: usize, n: u32) -> Option<Name> {
        let n = n as usize;
        if n >= self.count {
            return None;
        }
        self.names
            .get(prefix * self.count + n)
            .copied()
            .map(Name::Static)
    }
}

impl From<&str> for Name {
    fn from(s: &str) -> Name {
        if s.len() <= INLINE {
            let mut buf = [0; INLINE];
            buf[..s.len()].copy_from_slice(s.as_bytes());
            Name::Inline {
                len: s.len() as u8,
                buf,
            }
        } else {
            Name::Heap(s.to_string())
        }
    }
}

/// Appends the decimal digits of `n` to `out`, without the formatting machinery (the
/// emitter writes a line number, a column or a label number on nearly every line).
pub(super) fn push_u32(out: &mut String, n: u32) {
    let mut scratch = [0u8; 10];
    for &d in decimal(n, &mut scratch) {
        out.push(char::from(d));
    }
}

/// The decimal digits of `n`, most significant first, written at the end of `scratch`
/// (ten digits hold any `u32`).
fn decimal(n: u32, scratch: &mut [u8; 10]) -> &[u8] {
    let mut i = scratch.len();
    let mut m = n;
    loop {
        i -= 1;
        scratch[i] = b'0' + (m % 10) as u8;
        m /= 10;
        if m == 0 {
            break;
        }
    }
    &scratch[i..]
}

/// Formats into a fixed buffer; fails when the text does not fit.
struct InlineWriter {
    len: usize,
    buf: [u8; INLINE],
}

impl Write for InlineWriter {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        if end > INLINE {
            return Err(fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

impl Deref for Name {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// A [`Name`] formatted like `format!`.
macro_rules! name {
    ($($arg:tt)*) => {
        $crate::isa::ptx::name::Name::format(format_args!($($arg)*))
    };
}
pub(super) use name;

#[cfg(test)]
mod tests {
    use super::*;

    fn long_prefix_of(n: usize) -> String {
        "q".repeat(n)
    }

    #[test]
    fn ready_names_are_the_numbered_names() {
        let prefixes = ["%r", "%trd"];
        let ready = ReadyNames::new(&prefixes, 70);
        for (p, prefix) in prefixes.iter().enumerate() {
            for n in 0..70 {
                let name = ready.get(p, n).expect("a ready name");
                assert_eq!(name.as_str(), Name::numbered(prefix, n).as_str());
            }
            assert!(ready.get(p, 70).is_none());
        }
        assert!(ready.get(2, 0).is_none());
    }

    #[test]
    fn short_names_stay_inline_and_long_ones_move_to_the_heap() {
        let r = name!("%rd{}", 12);
        assert!(matches!(r, Name::Inline { .. }));
        assert_eq!(r.as_str(), "%rd12");
        assert_eq!(format!("[{r}+8]"), "[%rd12+8]");
        let long = name!("[{}+{}]", "%wl_lbase_very_long_name", i64::MIN);
        assert!(matches!(long, Name::Heap(_)));
        assert_eq!(
            long.as_str(),
            format!("[%wl_lbase_very_long_name+{}]", i64::MIN)
        );
        let exact = Name::from("x".repeat(INLINE).as_str());
        assert!(matches!(exact, Name::Inline { .. }));
        assert_eq!(exact.len(), INLINE);
        assert_eq!(name!("plain"), "plain");
        for n in [0, 7, 10, 99, 12345, u32::MAX] {
            assert_eq!(Name::numbered("%rd", n).as_str(), format!("%rd{n}"));
        }
        for v in [0, 9, 0x3FC0_0000, u64::MAX, 0x0123_4567_89AB_CDEF] {
            assert_eq!(
                Name::hex("0f", v, 8).as_str(),
                format!("0f{:08X}", v as u32)
            );
            assert_eq!(Name::hex("0x", v, 16).as_str(), format!("0x{v:016X}"));
        }
        assert_eq!(
            Name::hex(&long_prefix_of(INLINE), 5, 8).as_str(),
            format!("{}00000005", long_prefix_of(INLINE))
        );
        assert_eq!(Name::concat(&["@", "!", "%p3", " "]).as_str(), "@!%p3 ");
        for n in [0, 7, 10, 99, 12345, u32::MAX] {
            let mut s = String::from("x");
            push_u32(&mut s, n);
            assert_eq!(s, format!("x{n}"));
        }
        let parts = ["0123456789"; 4];
        let joined = Name::concat(&parts);
        assert!(matches!(joined, Name::Heap(_)));
        assert_eq!(joined.as_str(), parts.concat());
        let long_prefix = "p".repeat(INLINE - 2);
        assert_eq!(
            Name::numbered(&long_prefix, 123).as_str(),
            format!("{long_prefix}123")
        );
    }
}
