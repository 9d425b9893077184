//! `replay GAME --html FILE [--compare OTHER]`: the game viewer (malloc_game::viewer).

use anyhow::{anyhow, Context, Result};
use malloc_game::record::{GameRecord, Replay};
use malloc_game::viewer::{self, GameView, ViewLimits};
use std::path::Path;
use std::time::Instant;

/// What `--html` wrote.
pub struct Written {
    pub path: String,
    pub bytes: usize,
    pub seconds: f64,
    pub left_out: Vec<String>,
    /// With `--compare`: the first turn that differs, the number of differences, `S_A - S_B`.
    pub compared: Option<(Option<usize>, usize, f64)>,
}

impl Written {
    /// The lines `replay` prints about the page.
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![format!(
            "viewer: wrote {} ({:.1} KiB in {:.2} s)",
            self.path,
            self.bytes as f64 / 1024.0,
            self.seconds
        )];
        if let Some((first, n, gap)) = self.compared {
            out.push(match first {
                Some(t) => format!(
                    "compare: the games first differ at turn {t}; {n} decisions made differently; A - B = {:+.3} us",
                    gap * 1e6
                ),
                None => "compare: the games are the same, turn for turn".into(),
            });
        }
        for l in &self.left_out {
            out.push(format!("viewer: left out {l}"));
        }
        out
    }

    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "path": self.path, "bytes": self.bytes, "seconds": self.seconds,
            "left_out": self.left_out,
        });
        if let Some((first, n, gap)) = self.compared {
            v["first_difference"] = first.into();
            v["differences"] = n.into();
            v["gap_s"] = gap.into();
        }
        v
    }
}

/// The view of a replayed game.
pub fn view_of(record: &GameRecord, replay: &Replay) -> GameView {
    GameView::of(
        &replay.game,
        &record.player,
        record.seed,
        record.search.as_deref(),
        &ViewLimits::default(),
    )
}

/// Writes the viewer of `a` (against `b` when given, named `b_path`) to `out`.
pub fn write(
    out: &Path,
    a: (&GameRecord, &Replay, &Path),
    b: Option<(&GameRecord, &Replay, &Path)>,
) -> Result<Written> {
    let t0 = Instant::now();
    let view_a = view_of(a.0, a.1);
    let mut left_out: Vec<String> = view_a.left_out().to_vec();
    let (html, compared) = match b {
        None => (viewer::game_html(&view_a), None),
        Some((record_b, replay_b, path_b)) => {
            let view_b = view_of(record_b, replay_b);
            left_out.extend(view_b.left_out().iter().map(|l| format!("(B) {l}")));
            let cmp = viewer::compare(&view_a, &view_b).map_err(|e| {
                anyhow!(
                    "--compare {}: cannot compare with {}: {e}",
                    path_b.display(),
                    a.2.display()
                )
            })?;
            let html = viewer::compare_html(&view_a, &view_b)?;
            (
                html,
                Some((cmp.first_difference, cmp.differences.len(), cmp.gap_s)),
            )
        }
    };
    binio::write_bytes_atomic(out, html.as_bytes())
        .with_context(|| format!("--html {}", out.display()))?;
    Ok(Written {
        path: out.display().to_string(),
        bytes: html.len(),
        seconds: t0.elapsed().as_secs_f64(),
        left_out,
        compared,
    })
}
