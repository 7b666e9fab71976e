//! Progress of slow work (reading a large session, scanning a large store, cleaning), told to
//! whoever listens. The library never prints: `main` passes a `Progress` in through a command's
//! options (`render::progress` draws it on standard error, on a terminal only), and the command
//! installs it with `progress::scope` for the stages below it — readers and the listing scan
//! find it with `progress::current`, so that no adapter needs a parameter for it.

use std::cell::RefCell;
use std::sync::Arc;

/// What a unit of a step is, for display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Bytes,
    /// Files, sessions: things counted one by one.
    Items,
}

/// Someone who wants to know how slow work goes. Steps follow each other; a step may be long
/// or short, and most are over before anything is worth showing.
pub trait Progress: Send + Sync {
    /// A new step, `what` (`reading 771ce1df.jsonl`), of `total` units when known.
    fn start(&self, what: &str, total: Option<u64>, unit: Unit);
    /// `n` more units of the current step are done.
    fn advance(&self, n: u64);
}

/// A progress listener as commands carry it in their options.
pub type Handle = Option<Arc<dyn Progress>>;

thread_local! {
    static CURRENT: RefCell<Handle> = const { RefCell::new(None) };
}

/// Runs `f` with `handle` as this thread's listener (the previous one is restored after).
pub fn scope<R>(handle: &Handle, f: impl FnOnce() -> R) -> R {
    struct Restore(Handle);
    impl Drop for Restore {
        fn drop(&mut self) {
            CURRENT.with(|c| *c.borrow_mut() = self.0.take());
        }
    }
    let _restore = Restore(CURRENT.with(|c| c.replace(handle.clone())));
    f()
}

/// This thread's listener, if a command installed one. Work spread over other threads takes
/// it along (it is `Send + Sync`).
pub fn current() -> Handle {
    CURRENT.with(|c| c.borrow().clone())
}

/// Starts a step on this thread's listener, if any, and returns it for `advance`.
pub fn start(what: &str, total: Option<u64>, unit: Unit) -> Handle {
    let h = current();
    if let Some(p) = &h {
        p.start(what, total, unit);
    }
    h
}

/// A listener that keeps the names of the steps started, for tests of which steps a command
/// names.
#[cfg(test)]
#[derive(Default)]
pub struct Steps(pub std::sync::Mutex<Vec<String>>);

#[cfg(test)]
impl Progress for Steps {
    fn start(&self, what: &str, _total: Option<u64>, _unit: Unit) {
        self.0.lock().unwrap().push(what.to_string());
    }
    fn advance(&self, _n: u64) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Log(Mutex<Vec<String>>);

    impl Progress for Log {
        fn start(&self, what: &str, total: Option<u64>, _unit: Unit) {
            self.0.lock().unwrap().push(format!("{what} {total:?}"));
        }
        fn advance(&self, n: u64) {
            self.0.lock().unwrap().push(format!("+{n}"));
        }
    }

    #[test]
    fn a_scope_installs_the_listener_and_restores_the_previous_one() {
        let log = Arc::new(Log::default());
        let handle: Handle = Some(log.clone());
        assert!(current().is_none());
        scope(&handle, || {
            let p = start("reading", Some(3), Unit::Bytes);
            p.unwrap().advance(3);
            scope(&None, || assert!(current().is_none()));
            assert!(current().is_some());
        });
        assert!(current().is_none());
        assert_eq!(*log.0.lock().unwrap(), ["reading Some(3)", "+3"]);
    }
}
