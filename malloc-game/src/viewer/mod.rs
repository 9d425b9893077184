//! The game viewer: one self-contained HTML page that steps through a finished game turn
//! by turn (the memory map after each turn, the turn in the problem's words with its legal
//! alternatives and their simulated latencies, the latency curve), or compares two games
//! of one program on one hardware.
//!
//! The page carries its data as inline JSON and draws it with inline script on canvases,
//! so it needs no network and stays small: a turn costs a few numbers, not a picture.
//! [`GameView::of`] re-plays the game's actions once, recording what each turn saw;
//! [`ViewLimits`] bound what a very large game carries, and [`GameView::left_out`] says
//! what was left out.

mod compare;
mod page;

pub use compare::{compare, CompareError, Comparison, Difference};
pub use page::{compare_html, game_html, script_json};

use crate::game::{Game, GameSetup};
use crate::players::Player;
use crate::record::SearchStats;
use crate::render::{tint, EVICT_COLOUR, KIND_COLOURS};
use accel_sim::{Allocation, Arrival, BufferId, BufferKind, Program};
use serde::Serialize;
use std::collections::HashMap;

/// How much a view may carry, so that a game of a very large program still opens quickly.
#[derive(Clone, Debug, PartialEq)]
pub struct ViewLimits {
    /// Turns whose legal alternatives are listed with their simulated latencies; past it,
    /// an evenly spread subset of turns keeps them (each alternative costs a simulation).
    pub alternative_turns: usize,
    /// Allocation states the memory map draws; past it, the smallest (bytes x ops) are
    /// left out.
    pub map_allocations: usize,
    /// Op names are carried for programs of at most this many ops (else ops are numbers).
    pub op_names: usize,
}

impl Default for ViewLimits {
    fn default() -> ViewLimits {
        ViewLimits {
            alternative_turns: 20_000,
            map_allocations: 60_000,
            op_names: 5_000,
        }
    }
}

/// What one game showed at each of its turns, ready to be drawn ([`game_html`]).
#[derive(Clone, Debug, Serialize)]
pub struct GameView {
    /// The workload's name.
    pub workload: String,
    /// The hardware's name.
    pub hardware: String,
    /// Who played.
    pub player: String,
    /// The player's seed.
    pub seed: u64,
    /// What the rewards measure (`simulated` or `proxy`).
    pub reward_kind: String,
    /// `S0`, seconds.
    pub s0: f64,
    /// `S` of the finished game, seconds.
    pub final_latency_s: f64,
    /// The sum of the rewards.
    #[serde(rename = "return")]
    pub total_return: f64,
    /// Ops in the program.
    pub ops: usize,
    /// Op names, when the program is small enough ([`ViewLimits::op_names`]).
    pub op_names: Option<Vec<String>>,
    /// The fast levels, in pass order (fastest first).
    pub levels: Vec<LevelView>,
    /// The buffer kinds' names, which buffers index.
    pub kinds: Vec<&'static str>,
    /// Each kind's colour.
    pub colours: Vec<&'static str>,
    /// Each kind's lighter colour, for prefetched allocations.
    pub prefetch_colours: Vec<String>,
    /// The colour of eviction marks.
    pub evict_colour: &'static str,
    /// The name of every action ([`crate::GameSetup::action_name`]).
    pub action_names: Vec<String>,
    /// The buffers the view refers to (those with a turn or an allocation).
    pub buffers: BufferTable,
    /// One row per turn.
    pub turns: TurnTable,
    /// The legal actions of the turns that keep them.
    pub alternatives: AlternativeTable,
    /// The search's visits per turn, for agents that search.
    pub search: Option<SearchTable>,
    /// Every fast allocation the game made, and the turns it was visible for.
    pub allocations: AllocationTable,
    /// What was left out to stay within [`ViewLimits`], one sentence each.
    pub left_out: Vec<String>,
    /// Per turn: the key of the decision (pass, program buffer id, use op), for
    /// comparisons.
    #[serde(skip)]
    keys: Vec<(usize, BufferId, usize)>,
    #[serde(skip)]
    program_hash: u64,
    /// The game's hardware and options (`{"hardware": .., "options": ..}`): two games are
    /// comparable when these are equal.
    #[serde(skip)]
    settings: serde_json::Value,
}

/// One fast level of the game.
#[derive(Clone, Debug, Serialize)]
pub struct LevelView {
    /// Its hardware level.
    pub level: usize,
    /// Its name.
    pub name: String,
    /// Its capacity, bytes.
    pub capacity: u64,
}

/// The buffers of a view, column by column.
#[derive(Clone, Debug, Default, Serialize)]
pub struct BufferTable {
    /// Each buffer's name.
    pub name: Vec<String>,
    /// Its size, bytes.
    pub size: Vec<u64>,
    /// Index into [`GameView::kinds`].
    pub kind: Vec<u8>,
}

/// One row per turn, column by column.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TurnTable {
    /// Index into [`GameView::buffers`].
    pub buffer: Vec<u32>,
    /// The op whose use the turn decides.
    #[serde(rename = "use")]
    pub use_op: Vec<u32>,
    /// The pass (index into [`GameView::levels`]).
    pub pass: Vec<u8>,
    /// The action played.
    pub action: Vec<u32>,
    /// Its reward.
    pub reward: Vec<f64>,
    /// The simulated latency of the mapping after the turn (`S(t)`), seconds.
    pub latency: Vec<f64>,
}

/// The legal actions of the turns that keep them ([`ViewLimits::alternative_turns`]):
/// turn `turn[k]` owns rows `start[k]..start[k + 1]`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct AlternativeTable {
    /// The turn the rows belong to.
    pub turn: Vec<u32>,
    /// Its first row.
    pub start: Vec<u32>,
    /// Each legal action.
    pub action: Vec<u32>,
    /// The offset of the chunk the action places (-1: action 0, level 0).
    pub offset: Vec<i64>,
    /// The change in `S` the move alone would make, seconds; `null` for slots other than
    /// 0 of a mode, which differ from slot 0 only in offset (the same latency).
    pub delta: Vec<Option<f64>>,
}

/// The search's statistics per turn: turn `t` owns rows `start[t]..start[t + 1]` (the
/// actions with visits).
#[derive(Clone, Debug, Default, Serialize)]
pub struct SearchTable {
    /// Each turn's root value.
    pub root_value: Vec<f64>,
    /// Each turn's first row.
    pub start: Vec<u32>,
    /// Each action with visits.
    pub action: Vec<u32>,
    /// Its visits.
    pub visits: Vec<u32>,
}

/// Every state of every fast allocation the game made: a state is visible from state
/// `from` to `to` (exclusive), where state `s` is the mapping after `s` turns.
#[derive(Clone, Debug, Default, Serialize)]
pub struct AllocationTable {
    /// Index into [`GameView::buffers`].
    pub buffer: Vec<u32>,
    /// The allocation's level.
    pub level: Vec<u8>,
    /// Its offset in the level.
    pub offset: Vec<u64>,
    /// Its first op.
    pub start: Vec<u32>,
    /// Its last op.
    pub end: Vec<u32>,
    /// 1 for a prefetch, 0 for a chunk its defining op writes.
    pub prefetch: Vec<u8>,
    /// The op after which the eviction is issued, -1 for none.
    pub evict: Vec<i64>,
    /// A prefetch's first use it serves (the copy is in flight until then), -1 for none.
    pub first_use: Vec<i64>,
    /// The first state that shows it.
    pub from: Vec<u32>,
    /// The first state that no longer does.
    pub to: Vec<u32>,
}

/// Seven significant digits: what a person reads, and a third of the JSON's size.
fn short(x: f64) -> f64 {
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    format!("{x:.6e}").parse().unwrap_or(x)
}

/// Gathers the view's buffer table, numbering buffers as they are first met.
#[derive(Default)]
struct Buffers {
    index: HashMap<BufferId, u32>,
    table: BufferTable,
}

impl Buffers {
    fn id(&mut self, game: &Game, b: BufferId) -> u32 {
        if let Some(&i) = self.index.get(&b) {
            return i;
        }
        let buf = game.setup().program().buffer(b);
        let i = self.table.name.len() as u32;
        self.table.name.push(buf.name.clone());
        self.table.size.push(buf.size);
        let kind = BufferKind::ALL.iter().position(|k| *k == buf.kind);
        self.table.kind.push(kind.unwrap_or(0) as u8);
        self.index.insert(b, i);
        i
    }
}

/// The allocation states open so far, by buffer: `(row, allocation)`.
struct OpenStates {
    open: HashMap<BufferId, Vec<(usize, Allocation)>>,
    table: AllocationTable,
}

impl OpenStates {
    /// Brings buffer `b` to `now` at state `s`: states that changed close, new ones open.
    fn update(&mut self, buffers: &mut Buffers, game: &Game, b: BufferId, s: usize) {
        let now = game.allocations_so_far(b);
        let open = self.open.entry(b).or_default();
        let before = open.len();
        open.retain(|(row, a)| {
            let kept = now.contains(a);
            if !kept {
                self.table.to[*row] = s as u32;
            }
            kept
        });
        let unchanged = open.len() == before && open.len() == now.len();
        if unchanged {
            return;
        }
        for a in now {
            if open.iter().any(|(_, o)| o == a) || a.level == 0 {
                continue;
            }
            let row = self.table.buffer.len();
            let t = &mut self.table;
            t.buffer.push(buffers.id(game, b));
            t.level.push(a.level as u8);
            t.offset.push(a.offset);
            t.start.push(a.start as u32);
            t.end.push(a.end as u32);
            t.prefetch.push(u8::from(a.arrival == Arrival::Prefetch));
            t.evict.push(a.eviction.map_or(-1, |e| e as i64));
            let served = (a.arrival == Arrival::Prefetch)
                .then(|| {
                    let uses = game.setup().program().uses(b);
                    uses.iter().copied().find(|&u| u >= a.start && u <= a.end)
                })
                .flatten();
            t.first_use.push(served.map_or(-1, |u| u as i64));
            t.from.push(s as u32);
            t.to.push(u32::MAX);
            open.push((row, *a));
        }
    }
}

/// What playing a game's actions again from its setup gathers for its view.
struct Played {
    buffers: Buffers,
    states: OpenStates,
    turns: TurnTable,
    alternatives: AlternativeTable,
    keys: Vec<(usize, BufferId, usize)>,
}

/// Plays `game`'s actions again from its setup, noting each turn, the legal alternatives
/// of every `alt_every`th turn and every allocation as it opens and closes.
fn play_again(game: &Game, alt_every: usize) -> Played {
    let mut buffers = Buffers::default();
    let mut states = OpenStates {
        open: HashMap::new(),
        table: AllocationTable::default(),
    };
    let mut turns = TurnTable::default();
    let mut alts = AlternativeTable::default();
    let actions = game.actions();
    let mut keys = Vec::with_capacity(actions.len());
    let mut g = game.setup().start();
    walk(&g, (0, 0), &mut buffers, &mut states, 0);
    for (t, &action) in actions.iter().enumerate() {
        let Some((b, use_op)) = g.pending() else {
            break;
        };
        let pass = g.pass();
        keys.push((pass, b, use_op));
        let bi = buffers.id(&g, b);
        turns.buffer.push(bi);
        turns.use_op.push(use_op as u32);
        turns.pass.push(pass as u8);
        turns.action.push(action as u32);
        if t % alt_every == 0 {
            alts.turn.push(t as u32);
            alts.start.push(alts.action.len() as u32);
            alternatives(&g, &mut alts);
        }
        let from = (g.pass(), g.next_in_order());
        let reward = match g.apply_action(action) {
            Ok(r) => r,
            // The game came from these actions; a refusal means a changed game.
            Err(_) => break,
        };
        turns.reward.push(short(reward));
        turns
            .latency
            .push(short(g.final_latency().unwrap_or(g.simulated_latency())));
        states.update(&mut buffers, &g, b, t + 1);
        walk(&g, from, &mut buffers, &mut states, t + 1);
    }
    alts.start.push(alts.action.len() as u32);
    Played {
        buffers,
        states,
        turns,
        alternatives: alts,
        keys,
    }
}

/// The search's statistics of the played turns, the visited actions alone.
fn search_table(stats: &[SearchStats]) -> SearchTable {
    let mut table = SearchTable::default();
    for st in stats {
        table.root_value.push(short(st.root_value as f64));
        table.start.push(table.action.len() as u32);
        for (a, &v) in st.visits.iter().enumerate().filter(|(_, &v)| v > 0) {
            table.action.push(a as u32);
            table.visits.push(v);
        }
    }
    table.start.push(table.action.len() as u32);
    table
}

/// The ops' names, unless there are more than the limit (then noted in `left_out`).
fn op_names(
    program: &Program,
    limits: &ViewLimits,
    left_out: &mut Vec<String>,
) -> Option<Vec<String>> {
    let names = (program.len() <= limits.op_names).then(|| {
        (0..program.len())
            .map(|t| program.op(t).name.clone())
            .collect()
    });
    if names.is_none() {
        left_out.push(format!(
            "op names ({} ops; limit {}): ops are shown by number",
            program.len(),
            limits.op_names
        ));
    }
    names
}

/// The fast levels in the order of the game's passes.
fn levels(setup: &GameSetup) -> Vec<LevelView> {
    let hw = setup.hardware();
    (0..setup.passes())
        .map(|p| {
            let level = setup.level(p);
            LevelView {
                level,
                name: hw.levels[level].name.clone(),
                capacity: hw.levels[level].capacity,
            }
        })
        .collect()
}

impl GameView {
    /// The view of the finished `game`, played by `player` from `seed`; `search`, when
    /// given, has one entry per turn. The game's actions are played again from its setup,
    /// so the view shows exactly what each turn saw.
    pub fn of(
        game: &Game,
        player: &str,
        seed: u64,
        search: Option<&[SearchStats]>,
        limits: &ViewLimits,
    ) -> GameView {
        let setup = game.setup();
        let program = setup.program();
        let hw = setup.hardware();
        let turns_n = game.actions().len();
        let mut left_out = Vec::new();
        let alt_every = turns_n.div_ceil(limits.alternative_turns.max(1)).max(1);
        if alt_every > 1 {
            left_out.push(format!(
                "the legal alternatives of {} of {turns_n} turns (each {alt_every}th turn keeps them; limit {} turns)",
                turns_n - turns_n.div_ceil(alt_every),
                limits.alternative_turns
            ));
        }
        let Played {
            buffers,
            states,
            turns,
            alternatives: alts,
            keys,
        } = play_again(game, alt_every);
        let played = turns.action.len();
        let search = search
            .filter(|s| s.len() >= played)
            .map(|s| search_table(&s[..played]));
        let mut allocations = states.table;
        let end = played as u32 + 1;
        for to in &mut allocations.to {
            *to = (*to).min(end);
        }
        let allocations = thin(
            allocations,
            &buffers.table,
            limits.map_allocations,
            &mut left_out,
        );
        let op_names = op_names(program, limits, &mut left_out);
        GameView {
            workload: program.name().to_string(),
            hardware: hw.name.clone(),
            player: player.to_string(),
            seed,
            reward_kind: setup.options().reward.as_str().to_string(),
            s0: setup.all_slow_latency(),
            final_latency_s: game.final_latency().unwrap_or(f64::NAN),
            total_return: game.total_return(),
            ops: program.len(),
            op_names,
            levels: levels(setup),
            kinds: BufferKind::ALL.iter().map(|k| k.as_str()).collect(),
            colours: KIND_COLOURS.to_vec(),
            prefetch_colours: KIND_COLOURS.iter().map(|c| tint(c, 0.55)).collect(),
            evict_colour: EVICT_COLOUR,
            action_names: (0..setup.action_count())
                .map(|a| setup.action_name(a))
                .collect(),
            buffers: buffers.table,
            turns,
            alternatives: alts,
            search,
            allocations,
            left_out,
            keys,
            program_hash: program.content_hash(),
            settings: settings_of(game),
        }
    }

    /// The number of turns.
    pub fn turns(&self) -> usize {
        self.turns.action.len()
    }

    /// What was left out to stay within the [`ViewLimits`] (empty: nothing).
    pub fn left_out(&self) -> &[String] {
        &self.left_out
    }

    /// The allocations the map shows after `turns` turns, as `(buffer name, allocation)`
    /// (for tests and scripts).
    pub fn allocations_after(&self, turns: usize) -> Vec<(String, Allocation)> {
        let a = &self.allocations;
        let s = turns as u32;
        (0..a.buffer.len())
            .filter(|&i| a.from[i] <= s && s < a.to[i])
            .map(|i| {
                (
                    self.buffers.name[a.buffer[i] as usize].clone(),
                    Allocation {
                        level: a.level[i] as usize,
                        offset: a.offset[i],
                        start: a.start[i] as usize,
                        end: a.end[i] as usize,
                        arrival: if a.prefetch[i] == 1 {
                            Arrival::Prefetch
                        } else {
                            Arrival::Defined
                        },
                        eviction: usize::try_from(a.evict[i]).ok(),
                    },
                )
            })
            .collect()
    }
}

/// The viewer of the finished `game` (A) against the `xla` player's line on the same
/// setup (B): what `train` and `race` write beside a best game (`compare-xla.html`).
pub fn against_xla_html(
    game: &Game,
    player: &str,
    seed: u64,
    search: Option<&[SearchStats]>,
    limits: &ViewLimits,
) -> String {
    let xla = crate::players::XlaPlayer.play(game.setup(), 0);
    let a = GameView::of(game, player, seed, search, limits);
    let b = GameView::of(&xla, "xla", 0, None, limits);
    // Both games are of one setup: the comparison cannot be refused.
    compare_html(&a, &b).unwrap_or_else(|_| game_html(&a))
}

/// Brings up to date, at state `s`, the buffers a move can change: the one whose turn it
/// was, and those the game walked through before the next turn (in pass order), from
/// `from` (the pass and position in its order of the turn).
fn walk(g: &Game, from: (usize, usize), buffers: &mut Buffers, states: &mut OpenStates, s: usize) {
    let setup = g.setup();
    let (p1, q1) = (g.pass(), g.next_in_order());
    for p in from.0..=p1.min(setup.passes().saturating_sub(1)) {
        let order = setup.order(p);
        let lo = if p == from.0 {
            from.1.saturating_sub(1)
        } else {
            0
        };
        let hi = if p == p1 { q1 } else { order.len() };
        for &b in order.get(lo..hi.min(order.len())).unwrap_or(&[]) {
            states.update(buffers, g, b, s);
        }
    }
}

/// The hardware and game options of a game: two games are comparable when these are
/// equal.
fn settings_of(game: &Game) -> serde_json::Value {
    let setup = game.setup();
    serde_json::json!({
        "hardware": serde_json::to_value(setup.hardware().to_file()).unwrap_or_default(),
        "options": serde_json::to_value(setup.options()).unwrap_or_default(),
    })
}

/// Action 0 and every legal action of `g`'s pending use, with its offset and, for slot 0
/// of each mode, the simulated latency change of the move alone.
fn alternatives(g: &Game, alts: &mut AlternativeTable) {
    let options = g.setup().options();
    alts.action.push(0);
    alts.offset.push(-1);
    alts.delta.push(Some(short(g.simulated_delta(0))));
    g.for_each_legal(|action, allocation, _| {
        alts.action.push(action as u32);
        alts.offset.push(allocation.offset as i64);
        let slot0 = options.decode(action).is_some_and(|(_, slot)| slot == 0);
        alts.delta
            .push(slot0.then(|| short(g.simulated_delta(action))));
    });
}

/// At most `limit` allocation states: past it, the smallest by bytes x ops are left out.
fn thin(
    table: AllocationTable,
    buffers: &BufferTable,
    limit: usize,
    left_out: &mut Vec<String>,
) -> AllocationTable {
    let n = table.buffer.len();
    if n <= limit {
        return table;
    }
    let area = |i: usize| {
        let size = buffers.size[table.buffer[i] as usize] as f64;
        size * (table.end[i] as f64 - table.start[i] as f64 + 1.0)
    };
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&x, &y| area(y).total_cmp(&area(x)));
    let mut keep = vec![false; n];
    for &i in order.iter().take(limit) {
        keep[i] = true;
    }
    let threshold = order.get(limit).map_or(0.0, |&i| area(i));
    left_out.push(format!(
        "{} of {n} allocation states from the memory map (the smallest, under {:.3} MiB x ops each; limit {limit}); the turn panel still names every buffer and action",
        n - limit,
        threshold / (1u64 << 20) as f64
    ));
    let mut out = AllocationTable::default();
    for i in (0..n).filter(|&i| keep[i]) {
        out.buffer.push(table.buffer[i]);
        out.level.push(table.level[i]);
        out.offset.push(table.offset[i]);
        out.start.push(table.start[i]);
        out.end.push(table.end[i]);
        out.prefetch.push(table.prefetch[i]);
        out.evict.push(table.evict[i]);
        out.first_use.push(table.first_use[i]);
        out.from.push(table.from[i]);
        out.to.push(table.to[i]);
    }
    out
}

#[cfg(test)]
mod tests;
