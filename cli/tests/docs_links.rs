//! The README and docs link to each other by path and heading: every relative link must
//! name a file of the repository and, where it has one, a heading of that file. A heading
//! renamed or a section lost in an edit (docs/exact.md once lost its proof of the bound
//! this way, with the links to it left dangling) fails here.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The repository's root (this crate lives one folder below it).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

/// The `.md` files of `dir`, sorted (only its README where `only_readme`).
fn markdown_in(dir: &Path, only_readme: bool) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .filter(|p| !only_readme || p.file_name().is_some_and(|n| n == "README.md"))
        .collect();
    found.sort();
    found
}

/// The Markdown pages users read: the front page, docs/, and the READMEs of each crate
/// and of the folders just below it.
fn pages(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.join("README.md")];
    out.extend(markdown_in(&root.join("docs"), false));
    let mut crates: Vec<PathBuf> = fs::read_dir(root)
        .expect("the root lists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir() && p.join("Cargo.toml").exists())
        .collect();
    crates.sort();
    for c in crates {
        out.extend(markdown_in(&c, true));
        let mut subs: Vec<PathBuf> = fs::read_dir(&c)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect();
        subs.sort();
        for sub in subs {
            out.extend(markdown_in(&sub, true));
        }
    }
    out
}

/// The lines of `text` outside fenced code blocks.
fn prose(text: &str) -> Vec<&str> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push(line);
        }
    }
    out
}

/// GitHub's anchor for a heading: lower case, only letters, digits, `-`, `_` and spaces
/// kept, spaces as `-`; a repeated one gets `-1`, `-2`, ...
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for line in prose(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if hashes == 0 || !line[hashes..].starts_with(' ') {
            continue;
        }
        let slug: String = line[hashes..]
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let n = seen.entry(slug.clone()).or_insert(0);
        out.insert(if *n == 0 {
            slug.clone()
        } else {
            format!("{slug}-{n}")
        });
        *n += 1;
    }
    out
}

/// Every inline link target `](target)` of `text`'s prose (inline code spans left out).
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose(text) {
        // Inline code is not a link: drop the spans between backticks.
        let plain: String = line
            .split('`')
            .enumerate()
            .filter(|(i, _)| i % 2 == 0)
            .map(|(_, s)| s)
            .collect::<Vec<_>>()
            .join(" ");
        let mut rest = plain.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let end = rest.find(')').unwrap_or(rest.len());
            out.push(rest[..end].trim().to_string());
            rest = &rest[end..];
        }
    }
    out
}

#[test]
fn every_relative_link_names_a_file_and_a_heading_that_exist() {
    let root = root();
    let pages = pages(&root);
    assert!(pages.len() > 10, "found only {pages:?}");
    let mut bad = Vec::new();
    let mut checked = 0;
    for page in &pages {
        let text = fs::read_to_string(page).expect("a page reads");
        for target in links(&text) {
            let external = target.contains("://") || target.starts_with("mailto:");
            if external || target.is_empty() {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() {
                page.clone()
            } else {
                page.parent().expect("a folder").join(path)
            };
            checked += 1;
            let name = page.strip_prefix(&root).unwrap_or(page).display();
            if !file.exists() {
                bad.push(format!("{name}: ({target}): no such file"));
                continue;
            }
            let Some(anchor) = anchor else { continue };
            if file.extension().is_none_or(|x| x != "md") {
                continue;
            }
            let there = fs::read_to_string(&file).expect("the linked page reads");
            if !anchors(&there).contains(anchor) {
                bad.push(format!("{name}: ({target}): no such heading"));
            }
        }
    }
    assert!(checked > 50, "only {checked} links checked");
    assert!(
        bad.is_empty(),
        "{} dangling links:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn anchors_follow_githubs_rule() {
    let text = "# The race\n## The agent's training (`muzero-train`)\n```\n# not a heading\n```\n## Scale\n### Scale\n";
    let a = anchors(text);
    let want: BTreeSet<String> = [
        "the-race",
        "the-agents-training-muzero-train",
        "scale",
        "scale-1",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(a, want);
    assert_eq!(
        links("see [a](b.md#c) and `[x](not-a-link)` then [d](#e)"),
        vec!["b.md#c".to_string(), "#e".to_string()]
    );
}
