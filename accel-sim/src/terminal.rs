//! Names as a terminal shows them. Program, buffer, level and player names come from
//! user files, and a terminal acts on the control characters in what it prints: an escape
//! sequence in a program's name can set the window's title, move the cursor over earlier
//! lines or hide what follows. Every name a command prints goes through [`terminal_text`].

use std::borrow::Cow;
use std::fmt::Write;

/// `text` with every control character (C0, DEL and C1: `char::is_control`) written as an
/// escape, `\n`, `\r`, `\t` or `\u{1b}`, so it prints as what it is and does nothing.
/// Text without one comes back as it is.
pub fn terminal_text(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_nothing_else() {
        assert!(matches!(terminal_text("resnet50 ü ∑"), Cow::Borrowed(_)));
        // A window-title sequence, a cursor move, CSI in its one-byte C1 form, DEL, NUL.
        assert_eq!(
            terminal_text("a\u{1b}]0;owned\u{7}b"),
            "a\\u{1b}]0;owned\\u{7}b"
        );
        assert_eq!(terminal_text("\u{1b}[2A\u{9b}31m"), "\\u{1b}[2A\\u{9b}31m");
        assert_eq!(terminal_text("x\u{7f}\u{0}"), "x\\u{7f}\\u{0}");
        assert_eq!(terminal_text("l1\nl2\r\tz"), "l1\\nl2\\r\\tz");
        for c in (0u32..0x250).filter_map(char::from_u32) {
            let shown = terminal_text(&c.to_string()).into_owned();
            assert!(!shown.chars().any(char::is_control), "{c:?}: {shown:?}");
        }
    }
}
