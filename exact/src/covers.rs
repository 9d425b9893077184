//! The model's cover rows, in one of two forms with the same linear relaxation: per
//! buffer, at most one of its holds at a time; per level, the holds' bytes within its
//! capacity.
//!
//! Dense: at each op where a hold of the group starts and the holds covering it could
//! pass the limit, one row over every covering hold. On a large program a cover holds
//! thousands of holds and the rows hundreds of millions of nonzeros (the lowered
//! ResNet-50 step: 233 million, 0.7 million chained; its whole model took 69 s to build
//! before the backend saw it), so past [`DENSE_REACH`] in all, a group whose rows chain
//! into fewer nonzeros is chained instead: a load column per such op, equal to the
//! previous one's plus the holds that started since and minus those that ended since,
//! kept at most 1. Each hold then sits in at most two of the group's rows.

use crate::candidates::Candidate;
use accel_sim::{Hardware, OpId};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

/// Nonzeros of the cover rows past which a group's rows may be chained. Below it the rows
/// are as they always were: the suite and the tests' programs stay dense, with the same
/// solves.
pub(crate) const DENSE_REACH: usize = 1_000_000;

/// What a sweep over holds in start order sees.
pub(crate) enum Event {
    /// The hold starts.
    Enter(usize),
    /// The hold ended before the op now swept.
    Leave(usize),
    /// At an op where some hold starts, after every hold that starts there entered and
    /// every hold that ended before it left: the weight of the holds covering it.
    At(u64),
}

/// What a hold weighs in a group's rows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Weight {
    /// One: a buffer's holds, at most one at a time.
    One,
    /// Its bytes: a level's holds, within its capacity.
    Bytes,
}

impl Weight {
    pub(crate) fn of(self, c: &Candidate) -> u64 {
        match self {
            Weight::One => 1,
            Weight::Bytes => c.size,
        }
    }
}

/// A group of holds whose covers are limited: `sum(weight) <= limit` at every op.
pub(crate) struct Group {
    /// In index order.
    pub(crate) ids: Vec<usize>,
    pub(crate) weight: Weight,
    pub(crate) limit: u64,
}

/// The groups of the model: each buffer's holds (in buffer order), then each level's (in
/// level order), the order the rows were always built in.
fn groups(candidates: &[Candidate], hw: &Hardware) -> Vec<Group> {
    let mut by_buffer: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    let mut by_level: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (i, c) in candidates.iter().enumerate() {
        by_buffer.entry(c.buffer).or_default().push(i);
        by_level.entry(c.hold.level).or_default().push(i);
    }
    let buffers = by_buffer.into_values().map(|ids| Group {
        ids,
        weight: Weight::One,
        limit: 1,
    });
    let levels = by_level.into_iter().map(|(level, ids)| Group {
        ids,
        weight: Weight::Bytes,
        limit: hw.levels[level].capacity,
    });
    buffers.chain(levels).collect()
}

/// Sweeps `ids` in start order, each hold weighing `weight`: the cost is the starts and
/// ends plus what `f` does, not starts x holds (a 100k-op program has 370k holds).
pub(crate) fn sweep(
    candidates: &[Candidate],
    ids: &[usize],
    weight: Weight,
    mut f: impl FnMut(Event),
) {
    let mut by_start = ids.to_vec();
    by_start.sort_by_key(|&c| (candidates[c].hold.start, c));
    let mut ends: BinaryHeap<Reverse<(OpId, usize)>> = BinaryHeap::new();
    let mut bytes = 0u64;
    let mut i = 0;
    while i < by_start.len() {
        let t = candidates[by_start[i]].hold.start;
        while i < by_start.len() && candidates[by_start[i]].hold.start == t {
            let c = by_start[i];
            bytes += weight.of(&candidates[c]);
            ends.push(Reverse((candidates[c].hold.end, c)));
            f(Event::Enter(c));
            i += 1;
        }
        while let Some(&Reverse((end, c))) = ends.peek() {
            if end >= t {
                break;
            }
            bytes -= weight.of(&candidates[c]);
            ends.pop();
            f(Event::Leave(c));
        }
        f(Event::At(bytes));
    }
}

/// One link of a chained group: its load equals the previous link's (none for the
/// first) plus `added` and minus `removed`, each hold by its weight over the limit.
#[derive(Debug, PartialEq)]
pub(crate) struct Link {
    pub(crate) added: Vec<usize>,
    pub(crate) removed: Vec<usize>,
}

/// The rows of one group.
#[derive(Debug, PartialEq)]
pub(crate) enum Rows {
    /// A row per cover that could pass the limit, its holds in index order.
    Dense(Vec<Vec<usize>>),
    /// A load column and a row per such cover.
    Chain(Vec<Link>),
}

impl Rows {
    pub(crate) fn nonzeros(&self) -> usize {
        match self {
            Rows::Dense(rows) => rows.iter().map(Vec::len).sum(),
            Rows::Chain(links) => chain_nonzeros(links),
        }
    }
}

fn chain_nonzeros(links: &[Link]) -> usize {
    // The load's own column and the previous link's.
    links
        .iter()
        .map(|l| l.added.len() + l.removed.len() + 2)
        .sum()
}

/// The model's cover rows: each group with its rows.
pub(crate) struct Covers {
    pub(crate) groups: Vec<Group>,
    pub(crate) rows: Vec<Rows>,
}

impl Covers {
    /// The covers of `candidates`, dense within `reach` nonzeros ([`DENSE_REACH`] but in
    /// tests).
    pub(crate) fn new(candidates: &[Candidate], hw: &Hardware, reach: usize) -> Covers {
        let groups = groups(candidates, hw);
        let rows = rows(candidates, &groups, reach);
        Covers { groups, rows }
    }

    pub(crate) fn nonzeros(&self) -> usize {
        self.rows.iter().map(Rows::nonzeros).sum()
    }

    /// Groups whose rows are chained.
    pub(crate) fn chained(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| matches!(r, Rows::Chain(_)))
            .count()
    }

    /// A hold's coefficient in its group's rows.
    pub(crate) fn share(&self, group: usize, c: &Candidate) -> f64 {
        let g = &self.groups[group];
        g.weight.of(c) as f64 / g.limit as f64
    }
}

/// Each group's rows: all dense where they stay within `reach` nonzeros in all
/// ([`DENSE_REACH`] but in tests), else each group in the form with fewer.
fn rows(candidates: &[Candidate], groups: &[Group], reach: usize) -> Vec<Rows> {
    let counts: Vec<usize> = groups
        .iter()
        .map(|g| dense_nonzeros(candidates, g))
        .collect();
    let all_dense = counts.iter().sum::<usize>() <= reach;
    groups
        .iter()
        .zip(counts)
        .map(|(g, dense_count)| {
            if !all_dense {
                let links = chain(candidates, g);
                if chain_nonzeros(&links) < dense_count {
                    return Rows::Chain(links);
                }
            }
            Rows::Dense(dense(candidates, g))
        })
        .collect()
}

fn dense_nonzeros(candidates: &[Candidate], g: &Group) -> usize {
    let (mut active, mut nonzeros) = (0usize, 0usize);
    sweep(candidates, &g.ids, g.weight, |e| match e {
        Event::Enter(_) => active += 1,
        Event::Leave(_) => active -= 1,
        Event::At(w) if w > g.limit => nonzeros += active,
        Event::At(_) => {}
    });
    nonzeros
}

fn dense(candidates: &[Candidate], g: &Group) -> Vec<Vec<usize>> {
    let mut rows = Vec::new();
    let mut active = BTreeSet::new();
    sweep(candidates, &g.ids, g.weight, |e| match e {
        Event::Enter(c) => {
            active.insert(c);
        }
        Event::Leave(c) => {
            active.remove(&c);
        }
        Event::At(w) if w > g.limit => rows.push(active.iter().copied().collect()),
        Event::At(_) => {}
    });
    rows
}

/// The chained rows: between two covers that could pass the limit, a hold that both
/// started and ended is in neither and in no link.
fn chain(candidates: &[Candidate], g: &Group) -> Vec<Link> {
    #[derive(Clone, Copy, PartialEq)]
    enum Seen {
        Out,
        /// Started since the last link.
        New,
        /// In the last link's load.
        Loaded,
    }
    // By position in the group's ids (in index order): a group is often far smaller
    // than the candidates.
    let at = |c: usize| {
        g.ids
            .binary_search(&c)
            .expect("swept holds are the group's")
    };
    let mut seen = vec![Seen::Out; g.ids.len()];
    let mut links = Vec::new();
    let (mut added, mut removed) = (Vec::new(), Vec::new());
    sweep(candidates, &g.ids, g.weight, |e| match e {
        Event::Enter(c) => {
            seen[at(c)] = Seen::New;
            added.push(c);
        }
        Event::Leave(c) => {
            if seen[at(c)] == Seen::Loaded {
                removed.push(c);
            }
            seen[at(c)] = Seen::Out;
        }
        Event::At(w) if w > g.limit => {
            let mut link = Link {
                added: std::mem::take(&mut added),
                removed: std::mem::take(&mut removed),
            };
            link.added.retain(|&c| seen[at(c)] == Seen::New);
            for &c in &link.added {
                seen[at(c)] = Seen::Loaded;
            }
            links.push(link);
        }
        Event::At(_) => {}
    });
    links
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each link's load, from the chain: the holds it adds up to.
    fn loads(links: &[Link]) -> Vec<BTreeSet<usize>> {
        let mut load = BTreeSet::new();
        links
            .iter()
            .map(|l| {
                for c in &l.removed {
                    assert!(load.remove(c), "{c} removed but not loaded");
                }
                for &c in &l.added {
                    assert!(load.insert(c), "{c} added twice");
                }
                load.clone()
            })
            .collect()
    }

    fn level(ids: Vec<usize>, limit: u64) -> Group {
        Group {
            ids,
            weight: Weight::Bytes,
            limit,
        }
    }

    fn holds(spans: &[(usize, usize, u64)]) -> Vec<Candidate> {
        spans
            .iter()
            .map(|&(s, e, size)| Candidate::fixture(s, e, size, 0))
            .collect()
    }

    #[test]
    fn covers_are_the_holds_at_each_start() {
        let cs = holds(&[(0, 5, 1), (1, 2, 1), (3, 4, 1), (4, 6, 1)]);
        assert_eq!(
            dense(&cs, &level(vec![0, 1, 2, 3], 0)),
            vec![vec![0], vec![0, 1], vec![0, 2], vec![0, 2, 3]]
        );
        // One set per start, however many holds start there.
        let cs2 = holds(&[(0, 5, 1), (0, 3, 1)]);
        assert_eq!(dense(&cs2, &level(vec![0, 1], 0)), vec![vec![0, 1]]);
    }

    #[test]
    fn a_chain_skips_holds_that_start_and_end_between_two_rows() {
        // Capacity 2: covers at 0 ({0}: 1 byte), 1 ({0,1}: 3), 2 ({0,2}: 2), 3 ({0,3}: 4).
        let cs = holds(&[(0, 5, 1), (1, 1, 2), (2, 2, 1), (3, 4, 3)]);
        let links = chain(&cs, &level(vec![0, 1, 2, 3], 2));
        assert_eq!(
            links,
            vec![
                Link {
                    added: vec![0, 1],
                    removed: vec![]
                },
                Link {
                    added: vec![3],
                    removed: vec![1]
                },
            ]
        );
    }

    /// The chain's loads are the dense rows' holds, row for row: the two forms have the
    /// same rows once the load columns are substituted. Random spans, seeded.
    #[test]
    fn the_chain_loads_what_the_dense_rows_hold() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for _ in 0..500 {
            let n = rng.random_range(1..40);
            let spans: Vec<_> = (0..n)
                .map(|_| {
                    let s = rng.random_range(0..30);
                    (s, s + rng.random_range(0..10), rng.random_range(1..5u64))
                })
                .collect();
            let cap = rng.random_range(1..12u64);
            let cs = holds(&spans);
            let g = level((0..cs.len()).collect(), cap);
            let dense = dense(&cs, &g);
            assert_eq!(
                dense_nonzeros(&cs, &g),
                dense.iter().map(Vec::len).sum::<usize>()
            );
            let chained: Vec<Vec<usize>> = loads(&chain(&cs, &g))
                .into_iter()
                .map(|s| s.into_iter().collect())
                .collect();
            assert_eq!(dense, chained, "spans {spans:?}, capacity {cap}");
        }
    }
}
