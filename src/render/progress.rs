//! The progress bar (indicatif) for slow work, on standard error. It appears only when the
//! command has been working for half a second, only when both standard output and standard
//! error are a terminal, and never with `--json`: a fast command, a pipe or a script sees
//! nothing of it.

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::progress::{Progress, Unit};

/// How long work runs before its progress is shown.
pub const DELAY: Duration = Duration::from_millis(500);

pub struct Bar {
    pb: ProgressBar,
    /// Cleared: the command is done and the bar gone for good.
    cleared: Arc<Mutex<bool>>,
}

/// Whether a person watches: a bar only then.
pub fn wanted(json: bool) -> bool {
    !json
        && std::io::stderr().is_terminal()
        && std::io::stdout().is_terminal()
        && std::env::var_os("TERM").is_none_or(|t| t != "dumb")
}

impl Bar {
    /// A bar for one command when a person watches (see `wanted`), else `None`.
    pub fn for_command(json: bool) -> Option<Arc<Bar>> {
        wanted(json).then(|| Arc::new(Bar::new(DELAY)))
    }

    /// A bar that shows itself after `delay` unless cleared first.
    pub fn new(delay: Duration) -> Bar {
        let pb = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        let cleared = Arc::new(Mutex::new(false));
        let (shown, gone) = (pb.clone(), cleared.clone());
        std::thread::spawn(move || {
            std::thread::sleep(delay);
            let gone = gone.lock().unwrap();
            if !*gone {
                shown.set_draw_target(ProgressDrawTarget::stderr_with_hz(10));
                shown.enable_steady_tick(Duration::from_millis(100));
            }
        });
        Bar { pb, cleared }
    }

    /// Runs `f` (a question on the terminal) with the bar out of the way.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.pb.suspend(f)
    }

    /// Removes the bar for good, before the report is printed.
    pub fn clear(&self) {
        let mut gone = self.cleared.lock().unwrap();
        *gone = true;
        self.pb.finish_and_clear();
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.clear();
    }
}

impl Progress for Bar {
    fn start(&self, what: &str, total: Option<u64>, unit: Unit) {
        // The message last, cut to the terminal's width.
        let template = match (unit, total) {
            (Unit::Bytes, Some(_)) => {
                "{spinner} [{bar:30}] {bytes:>9}/{total_bytes:9} {eta:>3} {wide_msg}"
            }
            (Unit::Items, Some(_)) => "{spinner} [{bar:30}] {pos:>5}/{len:5} {wide_msg}",
            (Unit::Bytes, None) => "{spinner} {bytes:>9} {wide_msg}",
            // A step that cannot say how far it is.
            (Unit::Items, None) => "{spinner} {wide_msg}",
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            self.pb.set_style(style.progress_chars("=> "));
        }
        match total {
            Some(n) => self.pb.set_length(n),
            None => self.pb.unset_length(),
        }
        self.pb.set_message(what.to_string());
        self.pb.reset();
    }

    fn advance(&self, n: u64) {
        self.pb.inc(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bar_takes_steps_without_drawing_before_its_delay() {
        let bar = Bar::new(Duration::from_secs(3600));
        bar.start("reading x.jsonl", Some(100), Unit::Bytes);
        bar.advance(40);
        assert_eq!(bar.pb.position(), 40);
        assert!(bar.pb.is_hidden());
        bar.start("scanning", None, Unit::Items);
        assert_eq!(bar.pb.position(), 0);
        assert_eq!(bar.pb.length(), None);
        bar.clear();
        assert!(bar.pb.is_finished());
    }
}
