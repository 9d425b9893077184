//! What the examples share.

/// This process's CPU seconds so far (user + system, all threads), from /proc/self/stat:
/// on a machine shared with other work, moves per CPU second compare guides fairly where
/// moves per wall second do not. `NaN` where /proc is not there.
pub fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return f64::NAN;
    };
    // The fields after the command name (which may hold spaces) start past its `)`.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(f64::NAN))
        .collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name; in
    // clock ticks, 100 a second on Linux.
    (f.get(11).copied().unwrap_or(f64::NAN) + f.get(12).copied().unwrap_or(f64::NAN)) / 100.0
}
