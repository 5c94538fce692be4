//! Standard output that tolerates a closed pipe: `warplift run k.wir | head` must end
//! quietly when `head` stops reading, not panic as `print!` does on a broken pipe.

use std::io::{ErrorKind, Write};

/// Writes `bytes` to standard output. A closed pipe ends the process successfully, since
/// the reader wanted no more; any other write error is reported.
pub fn write_stdout(bytes: &[u8]) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => Err(anyhow::anyhow!("writing to standard output: {e}")),
    }
}

/// `print!` through [`write_stdout`]; evaluates to an `anyhow::Result<()>`.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::write_stdout(format!($($arg)*).as_bytes())
    };
}

/// `println!` through [`write_stdout`]; evaluates to an `anyhow::Result<()>`.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::output::write_stdout((format!($($arg)*) + "\n").as_bytes())
    };
}

pub(crate) use {out, outln};

/// Writes to standard output through a buffer with `write`; a closed pipe ends the process
/// successfully, as in [`write_stdout`].
pub fn stream_stdout(
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    match write(&mut out).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => Err(anyhow::anyhow!("writing to standard output: {e}")),
    }
}

/// Prints the results of a run: the printed buffers (`detail` `None`: none of them), as
/// text followed by `tail`, or with `json` as one JSON object
/// `{"buffers", "kernel", "stats"}` written as a stream.
pub fn print_results(
    memory: &warplift_ir::launch::GlobalMemory,
    detail: Option<warplift_ir::launch::results::Detail>,
    json: Option<(&str, &serde_json::Value)>,
    tail: &str,
) -> anyhow::Result<()> {
    use warplift_ir::launch::results::{write_json, write_text};
    stream_stdout(|out| {
        match json {
            Some((kernel, stats)) => {
                out.write_all(b"{\"buffers\":")?;
                match detail {
                    Some(d) => write_json(memory, d, out)?,
                    None => out.write_all(b"{}")?,
                }
                out.write_all(b",\"kernel\":")?;
                serde_json::to_writer(&mut *out, kernel)?;
                out.write_all(b",\"stats\":")?;
                serde_json::to_writer(&mut *out, stats)?;
                out.write_all(b"}\n")?;
            }
            None => {
                if let Some(d) = detail {
                    write_text(memory, d, out)?;
                }
                out.write_all(tail.as_bytes())?;
            }
        }
        Ok(())
    })
}
