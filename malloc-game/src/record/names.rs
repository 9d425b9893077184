//! The file names of saved games: safe in one folder, bounded in length, and with the
//! player and seed kept whatever the program's name.

/// `name` made safe as one file name: every character but ASCII letters, digits, `-`, `_`
/// and `.` becomes `_`, a leading `.` too (no hidden files, no `..`), and the result is at
/// most 120 bytes ([`bounded_name`]). Program names come from user files, and a name such
/// as `../x` must not steer a write out of the folder it was meant for.
pub fn safe_file_name(name: &str) -> String {
    bounded_name(&safe_chars(name), 120)
}

/// The file name `play --save` gives a saved game:
/// `<workload>-<hardware>-<player>-<seed>.game` (`beam:W` written `beam-W`), each part
/// made safe as [`safe_file_name`] says. The hardware is in the name because one program
/// is often played on several configs into one folder, and each config's games must stay.
/// The workload's and the hardware's parts are bounded ([`bounded_name`]), so however long
/// their names, the player, the seed and the extension stay: every episode of every player
/// keeps a file.
pub fn saved_game_name(workload: &str, hardware: &str, player: &str, seed: u64) -> String {
    let workload = bounded_name(&safe_chars(workload), 100);
    let hardware = bounded_name(&safe_chars(hardware), 40);
    let player = bounded_name(&safe_chars(&player.replace(':', "-")), 40);
    format!("{workload}-{hardware}-{player}-{seed}.game")
}

/// `name` in at most `max` bytes: one that is longer keeps its start (cut at a character
/// boundary) and ends in `~` and the 16 hex digits of the FNV-1a hash of the whole name, so
/// two long names that differ only past the cut stay two names.
pub fn bounded_name(name: &str, max: usize) -> String {
    if name.len() <= max {
        return name.to_string();
    }
    let tag = format!("~{:016x}", binio::fnv1a64(name.as_bytes()));
    let mut cut = max.saturating_sub(tag.len());
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{tag}", &name[..cut])
}

/// Every character but ASCII letters, digits, `-`, `_` and `.` made `_`, a leading `.` too;
/// never empty.
fn safe_chars(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.starts_with('.') {
        out.replace_range(0..1, "_");
    }
    if out.is_empty() {
        out.push('_');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_cannot_leave_their_folder() {
        assert_eq!(safe_file_name("../escaped"), "_._escaped");
        assert_eq!(safe_file_name("a/b\\c d"), "a_b_c_d");
        assert_eq!(safe_file_name(".."), "_.");
        assert_eq!(safe_file_name(""), "_");
        assert_eq!(
            safe_file_name("resnet50-beam-32-0.game"),
            "resnet50-beam-32-0.game"
        );
        assert_eq!(safe_file_name(&"x".repeat(500)).len(), 120);
        // Two long names that differ past the cut stay two names.
        let (a, b) = ("y".repeat(300) + "a", "y".repeat(300) + "b");
        assert_ne!(safe_file_name(&a), safe_file_name(&b));
        assert_eq!(bounded_name("short", 10), "short");
        // A multi-byte character at the cut is not split.
        let cut = bounded_name(&"é".repeat(100), 50);
        assert!(cut.len() <= 50 && cut.contains('~'), "{cut}");
        for s in ["../x", "/etc/passwd", "..\\..\\y", "\u{0}a", "ü/.."] {
            let f = safe_file_name(s);
            assert!(
                !f.contains('/') && !f.contains('\\') && !f.starts_with('.'),
                "{s}: {f}"
            );
        }
    }
    /// However long the workload's and the hardware's names, each hardware, player and
    /// seed keeps a file of its own, with its extension.
    #[test]
    fn saved_game_names_keep_hardware_player_and_seed() {
        assert_eq!(
            saved_game_name("resnet50", "tpu-v4i-like", "beam:32", 7),
            "resnet50-tpu-v4i-like-beam-32-7.game"
        );
        let long = "w".repeat(130);
        let long_hw = "h".repeat(60);
        let mut names = std::collections::HashSet::new();
        for hw in ["tpu-v4i-like", "nnp-i-like", long_hw.as_str()] {
            for player in ["greedy", "beam:4", "random"] {
                for seed in [0, 1, u64::MAX] {
                    let n = saved_game_name(&long, hw, player, seed);
                    let tag = player.replace(':', "-");
                    assert!(n.ends_with(&format!("-{tag}-{seed}.game")), "{n}");
                    assert!(n.len() <= 200 && !n.contains('/'), "{n}");
                    names.insert(n);
                }
            }
        }
        assert_eq!(names.len(), 27);
        let other = saved_game_name(&("w".repeat(129) + "v"), "tpu-v4i-like", "greedy", 0);
        assert!(!names.contains(&other));
        let other_hw = saved_game_name(&long, &("h".repeat(59) + "g"), "greedy", 0);
        assert!(!names.contains(&other_hw));
        assert!(saved_game_name("../x", "tpu-v4i-like", "greedy", 0).starts_with("_._x-"));
        assert!(saved_game_name("x", "../hw", "greedy", 0).starts_with("x-_._hw-"));
    }
}
