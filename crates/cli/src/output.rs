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
