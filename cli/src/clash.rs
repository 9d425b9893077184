//! An output that would replace what the command reads, or another of its outputs: refused
//! before anything is computed. `replay GAME --html GAME` replaced the game by the page and
//! succeeded; `--html X --export-json X` kept only the last written.

use anyhow::{bail, Result};
use std::path::{Path, PathBuf};

/// A path a command reads or writes: the flag (or argument) that gave it, and what it is
/// (`GAME`, `the game being read`).
pub struct Named<'a> {
    pub flag: &'a str,
    pub what: &'a str,
    pub path: &'a Path,
}

/// Refuses an output that names one of `inputs`, or the same file as another output.
/// Paths are compared as the file system finds them (`./a`, `dir/../a` and a link to `a`
/// are `a`), not as typed.
pub fn refuse_clashes(inputs: &[Named], outputs: &[Named]) -> Result<()> {
    for (k, out) in outputs.iter().enumerate() {
        let here = places(out.path);
        for input in inputs {
            if places(input.path).iter().any(|p| here.contains(p)) {
                bail!(
                    "{} {}: names {} ({} {}): writing it would replace what is read; name another file",
                    out.flag,
                    out.path.display(),
                    input.what,
                    input.flag,
                    input.path.display()
                );
            }
        }
        for other in &outputs[..k] {
            if places(other.path).iter().any(|p| here.contains(p)) {
                bail!(
                    "{} {} and {} {} name one file: each output needs a file of its own",
                    other.flag,
                    other.path.display(),
                    out.flag,
                    out.path.display()
                );
            }
        }
    }
    Ok(())
}

/// Where `path` is: its folder resolved, then its name (what a write replaces), and, when
/// it exists, where it leads (what a read reads).
fn places(path: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match (parent.canonicalize(), path.file_name()) {
        (Ok(dir), Some(name)) => out.push(dir.join(name)),
        _ => out.push(path.to_path_buf()),
    }
    if let Ok(real) = path.canonicalize() {
        if !out.contains(&real) {
            out.push(real);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_on_an_input_or_another_output_is_refused() {
        let dir = std::env::temp_dir().join(format!("mmz-clash-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let game = dir.join("a.game");
        std::fs::write(&game, b"x").unwrap();
        let input = [Named {
            flag: "GAME",
            what: "the game being read",
            path: &game,
        }];
        let out = |flag, path| Named {
            flag,
            what: "",
            path,
        };
        let roundabout = dir.join("sub").join("..").join("a.game");
        let e = refuse_clashes(&input, &[out("--html", &roundabout)]).unwrap_err();
        assert!(
            e.to_string().contains("--html") && e.to_string().contains("GAME"),
            "{e}"
        );
        #[cfg(unix)]
        {
            let link = dir.join("link.game");
            std::os::unix::fs::symlink(&game, &link).unwrap();
            let linked = [Named {
                flag: "GAME",
                what: "the game being read",
                path: &link,
            }];
            assert!(refuse_clashes(&linked, &[out("--html", &game)]).is_err());
        }
        let page = dir.join("page.html");
        let e = refuse_clashes(&input, &[out("--html", &page), out("--export-json", &page)])
            .unwrap_err();
        assert!(e.to_string().contains("name one file"), "{e}");
        // Distinct files, existing or not, pass.
        let json = dir.join("game.json");
        refuse_clashes(&input, &[out("--html", &page), out("--export-json", &json)]).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
