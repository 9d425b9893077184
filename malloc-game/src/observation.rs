//! The observation: a fixed-size `f32` vector whose layout depends only on the game
//! options (docs/mallocgame.md, "Observation").
//!
//! Layout, in order:
//! - global (`3 + L`): progress, `P(t)/S0`, `P(0)/S0`, then per fast level the fraction of
//!   its capacity below its highest allocation;
//! - the current buffer (`BUFFER_FEATURES`): log size, size/capacity, live range
//!   (start, end, length)/T, uses, memory-boundedness, kind (one-hot), present flag;
//! - the current use (`SEGMENT_FEATURES`): pass, the use and the segment it closes, the
//!   chunk held so far, how many of the buffer's uses are decided;
//! - per fast level, an occupancy grid over the buffer's live range
//!   (`grid_time x grid_offset` cells, each the fraction occupied);
//! - per action (`ACTION_FEATURES` each): legal flag, offset/capacity, gap slack/capacity,
//!   hold length/T, and the cost model's saving `-(delta P)/S0 x 10`;
//! - the look-ahead: `BUFFER_FEATURES` for each of the next `lookahead` buffers;
//! - under the simulated reward, what the simulator knows (`SIM_FEATURES`): `S(t)/S0`, the
//!   share of `S(t)` spent stalled, the prefetch and eviction backlogs queued before the
//!   pending use, and over the ops the turn touches (the segment up to the use, at most
//!   [`SIM_WINDOW`] ops) their stalls and level 0's idle time, the latter over the
//!   buffer's copy time (a prefetch from the segment's start hides where it is >= 1).
//!   The paper's setting (`reward: proxy`) keeps the paper's layout without them.

use crate::game::Game;
use crate::options::{GameOptions, Reward};
use accel_sim::BufferId;

mod grid;

/// Features describing one buffer.
pub const BUFFER_FEATURES: usize = 12;
/// Features describing the use a turn decides.
pub const SEGMENT_FEATURES: usize = 7;
/// Features describing one action.
pub const ACTION_FEATURES: usize = 5;
/// Features of the simulator's state (simulated reward only).
pub const SIM_FEATURES: usize = 6;
/// The most ops before the pending use whose stalls and idle time the observation sums.
pub const SIM_WINDOW: usize = 512;

/// Length of the observation vector for these options.
pub fn observation_len(options: &GameOptions) -> usize {
    let l = options.fast_levels;
    3 + l
        + BUFFER_FEATURES
        + SEGMENT_FEATURES
        + l * options.grid_time * options.grid_offset
        + options.action_count() * ACTION_FEATURES
        + options.lookahead * BUFFER_FEATURES
        + match options.reward {
            Reward::Simulated => SIM_FEATURES,
            Reward::Proxy => 0,
        }
}

/// Writes `game`'s observation into `out` (length [`observation_len`]).
pub fn encode(game: &Game, out: &mut [f32]) {
    let setup = game.setup();
    let options = setup.options();
    assert_eq!(
        out.len(),
        observation_len(options),
        "observation buffer size"
    );
    out.fill(0.0);
    let program = setup.program();
    let mut at = global_features(game, out);
    let current = game.current_buffer();
    if let Some(b) = current {
        buffer_features(game, b, &mut out[at..at + BUFFER_FEATURES]);
    }
    at += BUFFER_FEATURES;
    segment_features(game, &mut out[at..at + SEGMENT_FEATURES]);
    at += SEGMENT_FEATURES;
    // Occupancy grids over the current buffer's live range.
    for li in 0..options.fast_levels {
        let cells = options.grid_time * options.grid_offset;
        if let Some(b) = current {
            let (s, e) = program.live_range(b);
            if let Some(heap) = game.heap(li) {
                let (gt, go) = (options.grid_time, options.grid_offset);
                grid::grid(heap, s, e, gt, go, &mut out[at..at + cells]);
            }
        }
        at += cells;
    }
    // Per action.
    let actions = options.action_count() * ACTION_FEATURES;
    if let Some(b) = current {
        action_features(game, b, &mut out[at..at + actions]);
    }
    at += actions;
    // The next buffers of the pass under way (whose turns come after this buffer's).
    let order = setup.order(game.pass());
    let next = game.next_in_order();
    for k in 0..options.lookahead {
        if let Some(&b) = order.get(next + k) {
            buffer_features(game, b, &mut out[at..at + BUFFER_FEATURES]);
        }
        at += BUFFER_FEATURES;
    }
    if options.reward == Reward::Simulated {
        sim_features(game, &mut out[at..at + SIM_FEATURES]);
        at += SIM_FEATURES;
    }
    debug_assert_eq!(at, out.len());
}

/// The game's own features (progress, the latencies so far and with nothing fast, each fast
/// level's peak) at the start of `out`; returns how many.
fn global_features(game: &Game, out: &mut [f32]) -> usize {
    let setup = game.setup();
    let options = setup.options();
    let hw = setup.hardware();
    let s0 = setup.all_slow_latency();
    let mut i = 0;
    let mut put = |out: &mut [f32], v: f32| {
        out[i] = v;
        i += 1;
    };
    // Progress: turns so far over the most a game can take, 1 at the end.
    let progress = if game.is_terminal() {
        1.0
    } else {
        (game.turn() as f32 / setup.max_turns().max(1) as f32).min(1.0)
    };
    put(out, progress);
    put(out, (game.proxy_latency() / s0) as f32);
    put(out, (setup.cost_model().all_slow_latency() / s0) as f32);
    for li in 0..options.fast_levels {
        let cap = hw.levels[setup.level(li)].capacity as f32;
        let peak = game.heap(li).map_or(0, |h| h.peak_address());
        put(out, peak as f32 / cap);
    }
    i
}

/// Per action of buffer `b`'s menu: legal, its offset and the room its gap leaves (over the
/// level's capacity), its allocation's length (over the program's), and what the cost model
/// says it saves (over `S0`, times 10). Slot 0 of `out` is set to 1 as well: the buffer has a
/// turn.
fn action_features(game: &Game, b: BufferId, out: &mut [f32]) {
    let setup = game.setup();
    let program = setup.program();
    let hw = setup.hardware();
    let s0 = setup.all_slow_latency();
    let t_count = program.len() as f32;
    out[0] = 1.0;
    let size = program.buffer(b).size as f64;
    game.for_each_legal(|a, alloc, gap| {
        let cap = hw.levels[alloc.level].capacity as f64;
        let f = &mut out[a * ACTION_FEATURES..(a + 1) * ACTION_FEATURES];
        f[0] = 1.0;
        f[1] = (alloc.offset as f64 / cap) as f32;
        f[2] = ((gap as f64 - size).max(0.0) / cap) as f32;
        f[3] = (alloc.end + 1 - alloc.start) as f32 / t_count;
        f[4] = (-game.cost_delta(a) / s0 * 10.0) as f32;
    });
}

/// The observation of `game` as a game of one fast level sees it: the level the pass under
/// way fills stands for the only one (its peak and its occupancy grid; the pass feature
/// reads 0, as it always does with one level). A network trained with `fast_levels: 1`
/// can so guide a game over several fast levels, one pass at a time. `full` is scratch
/// space; `out` has [`observation_len`] of the game's options with `fast_levels: 1`.
pub fn encode_pass_view(game: &Game, full: &mut Vec<f32>, out: &mut [f32]) {
    let options = game.setup().options();
    let levels = options.fast_levels;
    full.resize(observation_len(options), 0.0);
    encode(game, full);
    let one = GameOptions {
        fast_levels: 1,
        ..options.clone()
    };
    assert_eq!(out.len(), observation_len(&one), "observation buffer size");
    // The pass under way; at the end of the game, the last one.
    let pass = game.pass().min(levels - 1);
    let cells = options.grid_time * options.grid_offset;
    out[..3].copy_from_slice(&full[..3]);
    out[3] = full[3 + pass];
    let (from, to) = (3 + levels, 4);
    let features = BUFFER_FEATURES + SEGMENT_FEATURES;
    out[to..to + features].copy_from_slice(&full[from..from + features]);
    out[to + BUFFER_FEATURES] = 0.0;
    let (grids, grid) = (from + features, to + features);
    out[grid..grid + cells]
        .copy_from_slice(&full[grids + pass * cells..grids + (pass + 1) * cells]);
    let (rest_from, rest_to) = (grids + levels * cells, grid + cells);
    out[rest_to..].copy_from_slice(&full[rest_from..]);
}

/// What the simulator knows at the pending use (see the module's layout).
fn sim_features(game: &Game, f: &mut [f32]) {
    let setup = game.setup();
    let s0 = setup.all_slow_latency();
    let sim = game.simulation();
    let s = sim.latency_s();
    f[0] = (s / s0) as f32;
    f[1] = (sim.stall_s() / s.max(f64::MIN_POSITIVE)) as f32;
    let Some((b, u)) = game.pending() else {
        return;
    };
    // Seconds in units of the mean all-level-0 op time, squashed: backlogs and stalls run
    // from nothing to many ops' worth.
    let op_s = s0 / setup.program().len().max(1) as f64;
    let squash = |x: f64| ((x / op_s).ln_1p() / 8.0) as f32;
    let at = sim.op(u);
    f[2] = squash(at.backlog_s[0]);
    f[3] = squash(at.backlog_s[1]);
    let p = game.segment_start().unwrap_or(u).min(u);
    let (stall, idle) = sim.stall_and_idle(p.max(u.saturating_sub(SIM_WINDOW)), u);
    f[4] = squash(stall);
    let copy_s = setup.cost_model().copy_s(b, setup.level(game.pass()));
    f[5] = (idle / copy_s.max(f64::MIN_POSITIVE)).tanh() as f32;
}

fn buffer_features(game: &Game, b: BufferId, f: &mut [f32]) {
    let setup = game.setup();
    let program = setup.program();
    let hw = setup.hardware();
    let t = program.len() as f32;
    let buf = program.buffer(b);
    let (s, e) = program.live_range(b);
    let cap = hw.levels[hw.fastest()].capacity as f64;
    f[0] = (buf.size as f64).log2() as f32 / 40.0;
    f[1] = (buf.size as f64 / cap).min(4.0) as f32 / 4.0;
    f[2] = s as f32 / t;
    f[3] = e as f32 / t;
    f[4] = (e + 1 - s) as f32 / t;
    f[5] = program.uses(b).len().min(32) as f32 / 32.0;
    // Seconds saved per sqrt(byte), scaled so a buffer that saves its own all-slow read
    // time lands near 1.
    let scale = (buf.size as f64).sqrt() / (buf.size as f64 / hw.levels[0].read_bw);
    f[6] = (setup.boundedness(b) * scale).tanh() as f32;
    let kind = accel_sim::BufferKind::ALL
        .iter()
        .position(|&k| k == buf.kind)
        .unwrap_or(0);
    f[7 + kind] = 1.0;
    f[11] = 1.0;
}

fn segment_features(game: &Game, f: &mut [f32]) {
    let Some((_, u)) = game.pending() else {
        return;
    };
    let setup = game.setup();
    let t = setup.program().len() as f32;
    f[0] = game.pass() as f32 / setup.passes().max(1) as f32;
    f[1] = u as f32 / t;
    f[2] = game
        .segment_start()
        .map_or(0.0, |p| (u - p.min(u)) as f32 / t);
    if let Some((a, defined)) = game.open_chunk() {
        f[3] = 1.0;
        f[4] = if defined { 1.0 } else { 0.0 };
        f[5] = (a.end + 1 - a.start) as f32 / t;
    }
    let (done, all) = game.uses_decided();
    f[6] = done as f32 / all.max(1) as f32;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::GameOptions;
    use accel_sim::{Buffer, BufferKind, Hardware, Op, Program};
    use std::sync::Arc;

    #[test]
    fn size_depends_on_options_only_and_values_are_sane() {
        let buf = |n: &str, s| Buffer {
            name: n.into(),
            size: s,
            kind: BufferKind::Activation,
        };
        let p = Program::new(
            "p",
            "",
            vec![
                Buffer {
                    name: "x".into(),
                    size: 4096,
                    kind: BufferKind::Input,
                },
                buf("a", 8192),
                buf("b", 8192),
            ],
            vec![
                Op {
                    name: "o0".into(),
                    kind: "t".into(),
                    flops: 0.0,
                    reads: vec![0],
                    writes: vec![1],
                },
                Op {
                    name: "o1".into(),
                    kind: "t".into(),
                    flops: 0.0,
                    reads: vec![1],
                    writes: vec![2],
                },
            ],
        )
        .unwrap();
        let hw = Hardware::tpu_v4i_like().with_capacity(1, 16384).unwrap();
        let opts = GameOptions::default();
        let mut g = Game::new(Arc::new(p), hw, opts.clone()).unwrap();
        let n = observation_len(&opts);
        let mut obs = vec![0f32; n];
        while !g.is_terminal() {
            encode(&g, &mut obs);
            assert!(obs.iter().all(|x| x.is_finite()));
            // The grid cells are fractions.
            let grid0 = 4 + BUFFER_FEATURES + SEGMENT_FEATURES;
            assert!(obs[grid0..grid0 + 64]
                .iter()
                .all(|&x| (0.0..=1.0 + 1e-5).contains(&x)));
            // Action 0 is always marked legal, and the legal flags match legal_actions.
            let a0 = grid0 + 64;
            let legal = g.legal_actions();
            for a in 0..g.action_count() {
                assert_eq!(obs[a0 + a * ACTION_FEATURES] == 1.0, legal.contains(&a));
            }
            let a = *legal.last().unwrap();
            g.apply_action(a).unwrap();
        }
        // After placing everything, the last grid shows occupancy > 0 somewhere before.
        encode(&g, &mut obs);
        assert_eq!(obs[0], 1.0);
    }
}
