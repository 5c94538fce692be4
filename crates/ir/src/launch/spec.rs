//! Command-line forms of a launch: string parsers that the CLI calls for its flags.
//!
//! Each setter parses its string and hands the result to the typed setters that
//! [`LaunchBuilder`](super::LaunchBuilder) uses too, changing a [`Launch`] in place and
//! overriding what a launch file said:
//!
//! | method | example | meaning |
//! |---|---|---|
//! | [`Launch::set_grid`] | `4,2` | grid of 1 to 3 dimensions, missing ones 1 |
//! | [`Launch::set_block`] | `32` | block shape, same syntax |
//! | [`Launch::set_kernel`] | `saxpy` or `%saxpy` | the kernel to run |
//! | [`Launch::add_arg`] | `n=100`, `alpha=1.5` | scalar argument |
//! | [`Launch::add_buffer`] | `x=f32[128]:random:7` | buffer, see below |
//! | [`Launch::add_print`] | `y` or `x,y` | buffers to print |
//! | [`Launch::add_save`] | `y=out.bin` | save a buffer's bytes after the run |
//! | [`Launch::add_expect`] | `y=2,4,6,8` | expected contents after the run |
//!
//! Buffer specs: `NAME=TYPE[LEN]:INIT` where `TYPE` is an [`ElemType`] name and `INIT` is
//! one of
//! - `zeros` (the default when `:INIT` is left out),
//! - `iota` (0, 1, 2, ...),
//! - `random`, `random:SEED` or `random:SEED:LO:HI` (inclusive bounds),
//! - `file:PATH` (raw little-endian bytes; the rest of the spec is the path),
//! - `values:V1,V2,...`.
//!
//! With `values` and `file` the `[LEN]` may be left out (`y=i32:values:1,2,3`): the length
//! comes from the values or the file size. Paths are used as given (relative to the
//! current directory).

use super::literal::{parse_int, parse_literal, Literal};
use super::{BufferInit, BufferSpec, ElemType, Launch, LaunchError};
use std::path::PathBuf;

impl Launch {
    /// Sets the grid shape from `X[,Y[,Z]]`.
    pub fn set_grid(&mut self, s: &str) -> Result<(), LaunchError> {
        self.grid = parse_dims(s).map_err(|m| LaunchError::invalid(format!("grid `{s}`"), m))?;
        self.origins.remove("grid");
        Ok(())
    }

    /// Sets the block shape from `X[,Y[,Z]]`.
    pub fn set_block(&mut self, s: &str) -> Result<(), LaunchError> {
        self.block = parse_dims(s).map_err(|m| LaunchError::invalid(format!("block `{s}`"), m))?;
        self.origins.remove("block");
        Ok(())
    }

    /// Sets the kernel to run, with or without its `%`.
    pub fn set_kernel(&mut self, s: &str) {
        self.kernel = Some(s.strip_prefix('%').unwrap_or(s).to_string());
        self.origins.remove("kernel");
    }

    /// Adds or replaces a scalar argument from `NAME=VALUE`.
    pub fn add_arg(&mut self, s: &str) -> Result<(), LaunchError> {
        let ctx = || format!("argument `{s}`");
        let (name, value) = split_name(s).map_err(|m| LaunchError::invalid(ctx(), m))?;
        let lit = parse_literal(value).map_err(|m| LaunchError::invalid(ctx(), m))?;
        self.bind_arg(name, lit);
        Ok(())
    }

    /// Adds or replaces a buffer from `NAME=TYPE[LEN]:INIT` (see the module documentation).
    pub fn add_buffer(&mut self, s: &str) -> Result<(), LaunchError> {
        let (name, spec) =
            parse_buffer_spec(s).map_err(|m| LaunchError::invalid(format!("buffer `{s}`"), m))?;
        self.bind_buffer(name, spec);
        Ok(())
    }

    /// Adds buffers to print, from `NAME[,NAME...]`. The first call replaces the file's
    /// default of printing every buffer.
    pub fn add_print(&mut self, s: &str) -> Result<(), LaunchError> {
        self.origins.remove("print");
        let list = self.print.get_or_insert_with(Vec::new);
        for name in s.split(',').map(str::trim) {
            if !is_name(name) {
                return Err(LaunchError::invalid(
                    format!("print `{s}`"),
                    format!("`{name}` is not a buffer name"),
                ));
            }
            if !list.iter().any(|n| n == name) {
                list.push(name.to_string());
            }
        }
        Ok(())
    }

    /// Saves a buffer after the run, from `NAME=PATH`.
    pub fn add_save(&mut self, s: &str) -> Result<(), LaunchError> {
        let (name, path) =
            split_name(s).map_err(|m| LaunchError::invalid(format!("save `{s}`"), m))?;
        if path.is_empty() {
            return Err(LaunchError::invalid(format!("save `{s}`"), "missing path"));
        }
        self.save.insert(name.to_string(), PathBuf::from(path));
        self.origins.remove(&format!("save.{name}"));
        Ok(())
    }

    /// Adds or replaces the expected contents of a buffer, from `NAME=V1,V2,...`.
    pub fn add_expect(&mut self, s: &str) -> Result<(), LaunchError> {
        let ctx = || format!("expect `{s}`");
        let (name, values) = split_name(s).map_err(|m| LaunchError::invalid(ctx(), m))?;
        let lits = parse_values(values).map_err(|m| LaunchError::invalid(ctx(), m))?;
        self.expect.insert(name.to_string(), lits);
        self.origins.remove(&format!("expect.{name}"));
        Ok(())
    }
}

/// `X[,Y[,Z]]`, each a positive integer; missing dimensions are 1.
fn parse_dims(s: &str) -> Result<[u32; 3], String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.len() > 3 {
        return Err("expected 1 to 3 dimensions".to_string());
    }
    let mut dims = [1u32; 3];
    for (d, p) in dims.iter_mut().zip(&parts) {
        *d = match parse_int(p) {
            Some((v, _)) => u32::try_from(v).map_err(|_| format!("`{p}` is out of range"))?,
            None => return Err(format!("`{p}` is not an integer")),
        };
    }
    Ok(dims)
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

/// Splits `NAME=REST`.
fn split_name(s: &str) -> Result<(&str, &str), String> {
    let (name, rest) = s.split_once('=').ok_or("expected NAME=...")?;
    let name = name.trim();
    if !is_name(name) {
        return Err(format!("`{name}` is not a parameter name"));
    }
    Ok((name, rest.trim()))
}

fn parse_values(s: &str) -> Result<Vec<Literal>, String> {
    if s.trim().is_empty() {
        return Ok(Vec::new());
    }
    s.split(',').map(parse_literal).collect()
}

/// Parses `NAME=TYPE[LEN]:INIT`.
pub fn parse_buffer_spec(s: &str) -> Result<(String, BufferSpec), String> {
    let (name, rest) = split_name(s)?;
    let (ty_len, init) = match rest.split_once(':') {
        Some((a, b)) => (a.trim(), Some(b)),
        None => (rest, None),
    };
    let (ty, len) = match ty_len.split_once('[') {
        Some((ty, len)) => {
            let len = len
                .strip_suffix(']')
                .ok_or("missing `]` after the length")?;
            let len = match parse_int(len.trim()) {
                Some((v, _)) => u64::try_from(v).map_err(|_| format!("bad length `{len}`"))?,
                None => return Err(format!("bad length `{len}`")),
            };
            (ty.trim(), Some(len))
        }
        None => (ty_len, None),
    };
    let elem = ElemType::from_name(ty).ok_or_else(|| {
        format!(
            "unknown element type `{ty}` (expected one of {})",
            ElemType::ALL.map(ElemType::name).join(" ")
        )
    })?;
    let init = match init {
        None => BufferInit::Zeros,
        Some(init) => {
            let (kind, arg) = match init.split_once(':') {
                Some((k, a)) => (k.trim(), Some(a)),
                None => (init.trim(), None),
            };
            match (kind, arg) {
                ("zeros", None) => BufferInit::Zeros,
                ("iota", None) => BufferInit::Iota,
                ("random", None) => BufferInit::Random {
                    seed: 0,
                    range: None,
                },
                ("random", Some(a)) => {
                    let parts: Vec<&str> = a.split(':').map(str::trim).collect();
                    let seed = match parse_int(parts[0]) {
                        Some((v, _)) => {
                            u64::try_from(v).map_err(|_| format!("bad seed `{}`", parts[0]))?
                        }
                        None => return Err(format!("bad seed `{}`", parts[0])),
                    };
                    let range = match parts.len() {
                        1 => None,
                        3 => Some((parse_literal(parts[1])?, parse_literal(parts[2])?)),
                        _ => return Err("expected random[:SEED[:LO:HI]]".to_string()),
                    };
                    BufferInit::Random { seed, range }
                }
                ("file", Some(path)) if !path.is_empty() => BufferInit::File(PathBuf::from(path)),
                ("values", Some(values)) => BufferInit::Values(parse_values(values)?),
                _ => {
                    return Err(format!(
                        "bad init `{init}` (expected zeros, iota, random[:SEED[:LO:HI]], \
                         file:PATH or values:V1,V2,...)"
                    ))
                }
            }
        }
    };
    if len.is_none() && !matches!(init, BufferInit::Values(_) | BufferInit::File(_)) {
        return Err("missing [LEN] (only values and file buffers may leave it out)".to_string());
    }
    Ok((name.to_string(), BufferSpec { elem, len, init }))
}
