//! The progress bar of `warplift study`: runs done, failures, elapsed time and time left,
//! drawn on standard error (only on a terminal) from the study engine's progress reports.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use warplift_study::Progress;

/// A progress bar fed by [`warplift_study::Progress`] reports.
pub struct Bar(ProgressBar);

impl Bar {
    /// A bar, drawn only if `shown` (and standard error is a terminal).
    pub fn new(shown: bool) -> Bar {
        let target = if shown {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(None, target);
        if let Ok(style) = ProgressStyle::with_template(
            "{bar:30} {pos}/{len} runs, {msg} [{elapsed_precise} elapsed, {eta} left]",
        ) {
            bar.set_style(style);
        }
        bar.set_message("0 failed");
        Bar(bar)
    }

    /// Shows a report (from any thread).
    pub fn update(&self, p: Progress) {
        self.0.set_length(p.total as u64);
        self.0.set_message(format!("{} failed", p.failed));
        self.0.set_position(p.done as u64);
    }

    /// Clears the bar.
    pub fn finish(&self) {
        self.0.finish_and_clear();
    }
}
