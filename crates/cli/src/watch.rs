//! Watching a long emulator run from the terminal: a progress line on standard error once
//! the run has lasted about a second (only when standard error is a terminal), and Ctrl-C,
//! which stops the run so that it can report the statistics so far and where each warp
//! stood instead of losing everything.
//!
//! A second Ctrl-C ends the process at once, for a run that does not reach its next poll.

use core::ops::ControlFlow;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use warplift_emu::{Monitor, Progress};

/// How long a run goes before the progress line appears.
const QUIET: Duration = Duration::from_secs(1);

/// The [`Monitor`] of a command-line run.
pub struct Watch {
    start: Instant,
    stop: Arc<AtomicBool>,
    /// Whether a progress line may be drawn (standard error is a terminal).
    show: bool,
    bar: Option<ProgressBar>,
    /// The last update: time and warp-instructions, for the rate.
    last: (Instant, u64),
}

impl Watch {
    /// Starts watching: installs the Ctrl-C handler (once per process).
    pub fn new() -> Watch {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        // Failing to install the handler (one is installed already) only costs the
        // graceful stop: Ctrl-C then ends the process as usual.
        let _ = ctrlc::set_handler(move || {
            if flag.swap(true, Ordering::SeqCst) {
                std::process::exit(130);
            }
        });
        let now = Instant::now();
        Watch {
            start: now,
            stop,
            show: std::io::stderr().is_terminal(),
            bar: None,
            last: (now, 0),
        }
    }

    fn update(&mut self, p: &Progress) {
        let now = Instant::now();
        if self.bar.is_none() {
            if now.duration_since(self.start) < QUIET {
                return;
            }
            let bar = ProgressBar::with_draw_target(Some(p.blocks), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{elapsed:>4} [{bar:30}] {pos}/{len} blocks  {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            self.bar = Some(bar);
        }
        let Some(bar) = &self.bar else { return };
        let dt = now.duration_since(self.last.0).as_secs_f64();
        if dt < 0.1 {
            return;
        }
        let rate = (p.warp_instructions - self.last.1) as f64 / dt;
        self.last = (now, p.warp_instructions);
        bar.set_position(p.blocks_done);
        let clock = if p.cycles > 0 {
            format!("{} cycles, ", p.cycles)
        } else {
            String::new()
        };
        bar.set_message(format!(
            "{clock}{} warp-instructions, {:.3e} warp-instructions/s",
            p.warp_instructions, rate
        ));
    }
}

impl Monitor for Watch {
    fn poll(&mut self, progress: &Progress) -> ControlFlow<()> {
        if self.stop.load(Ordering::Relaxed) {
            return ControlFlow::Break(());
        }
        if self.show {
            self.update(progress);
        }
        ControlFlow::Continue(())
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
