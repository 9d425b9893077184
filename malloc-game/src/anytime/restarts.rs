//! The two restart solvers: random episodes, and beams of growing width.

use super::{thread_seed, AnytimeSolver, Incumbent, Limit};
use crate::game::GameSetup;
use crate::players::{BeamPlayer, Player, RandomPlayer, MAX_BEAM_WIDTH};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Random episodes until the deadline; episode `i` is seeded from `(seed, i)` whichever
/// thread plays it.
#[derive(Clone, Copy, Debug, Default)]
pub struct RandomRestarts;

impl AnytimeSolver for RandomRestarts {
    fn name(&self) -> String {
        "random".into()
    }

    fn run(&self, setup: &Arc<GameSetup>, seed: u64, limit: &Limit, incumbent: &Incumbent) {
        let next = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..limit.threads {
                s.spawn(|| {
                    while !limit.expired() {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let game = RandomPlayer.play(setup, thread_seed(seed, i as usize));
                        incumbent.offer(&game);
                    }
                });
            }
        });
    }
}

/// Beams of width 1, 2, 4, ... (each thread takes the next width) until the deadline
/// cuts one short or [`MAX_BEAM_WIDTH`] is done. Ignores the seed: the beam is
/// deterministic.
#[derive(Clone, Copy, Debug, Default)]
pub struct BeamWidening;

impl AnytimeSolver for BeamWidening {
    fn name(&self) -> String {
        "beam".into()
    }

    fn run(&self, setup: &Arc<GameSetup>, _seed: u64, limit: &Limit, incumbent: &Incumbent) {
        let next = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..limit.threads {
                s.spawn(|| loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let width = 1usize.checked_shl(k as u32).unwrap_or(usize::MAX);
                    if width > MAX_BEAM_WIDTH || limit.expired() {
                        break;
                    }
                    match BeamPlayer::new(width).play_until(setup, &|| limit.expired()) {
                        Some(game) => incumbent.offer(&game),
                        None => break,
                    };
                });
            }
        });
    }
}
