//! Progress that also reaches a log. indicatif draws only on a terminal, so a command whose
//! standard error goes to a file or a pipe (a job scheduler, CI, `2> log`) said nothing for
//! the minutes a large program takes. [`Talk`] sets the bar's message, and where standard
//! error is not a terminal a thread of its own also prints the message as a plain line once
//! it has stood for [`FIRST_AFTER`] (so a command that fails or ends at once prints only
//! its own lines), and again every [`LOG_EVERY`] while its work goes on.

use indicatif::ProgressBar;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a message stands before a log hears of it.
pub const FIRST_AFTER: Duration = Duration::from_secs(1);
/// How often a log hears that the work goes on.
pub const LOG_EVERY: Duration = Duration::from_secs(10);

/// The message now, when it was set, and when a line last went to the log.
struct Said {
    msg: String,
    since: Instant,
    logged: Option<Instant>,
}

/// A progress bar's messages, echoed to a log where there is no terminal.
pub struct Talk {
    bar: ProgressBar,
    said: Arc<Mutex<Said>>,
    done: Arc<AtomicBool>,
    logger: Option<std::thread::JoinHandle<()>>,
}

impl Talk {
    /// `quiet`: no plain lines (the bar is hidden too where the caller made it so).
    pub fn new(bar: &ProgressBar, quiet: bool) -> Talk {
        let said = Arc::new(Mutex::new(Said {
            msg: String::new(),
            since: Instant::now(),
            logged: None,
        }));
        let done = Arc::new(AtomicBool::new(false));
        let log = !quiet && !std::io::stderr().is_terminal();
        let logger = log.then(|| {
            let (said, done, bar) = (Arc::clone(&said), Arc::clone(&done), bar.clone());
            let started = Instant::now();
            std::thread::spawn(move || {
                while !done.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(100));
                    let Ok(mut s) = said.lock() else { return };
                    let due = match s.logged {
                        None => s.since.elapsed() >= FIRST_AFTER,
                        Some(at) => at.elapsed() >= LOG_EVERY,
                    };
                    if due && !s.msg.is_empty() && !done.load(Ordering::SeqCst) {
                        let line =
                            format!("[{:>6.1} s] {}", started.elapsed().as_secs_f64(), s.msg);
                        bar.suspend(|| errln!("{line}"));
                        s.logged = Some(Instant::now());
                    }
                }
            })
        });
        Talk {
            bar: bar.clone(),
            said,
            done,
            logger,
        }
    }

    /// Shows `msg`. A message about new work is logged once it has stood a moment; one
    /// that only counts progress of the same work (`same_work`) keeps the log's pace.
    /// Names in it are shown as [`crate::output::shown`] says.
    pub fn say(&self, msg: String, same_work: bool) {
        let msg = crate::output::shown(&msg).into_owned();
        if let Ok(mut s) = self.said.lock() {
            if !same_work {
                s.since = Instant::now();
                s.logged = None;
            }
            s.msg.clone_from(&msg);
        }
        self.bar.set_message(msg);
    }
}

impl Drop for Talk {
    fn drop(&mut self) {
        self.done.store(true, Ordering::SeqCst);
        if let Some(h) = self.logger.take() {
            let _ = h.join();
        }
    }
}
