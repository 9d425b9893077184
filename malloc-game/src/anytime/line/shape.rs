//! Where each buffer's turn of each pass sits in a line: its position among all passes'
//! buffers, pass after pass, each in the pass's order. The same for every line of a
//! setup.

use crate::game::GameSetup;
use accel_sim::BufferId;
use std::ops::Range;

#[derive(Debug)]
pub(super) struct Shape {
    /// Per pass: the position of its first buffer; then the number of positions.
    base: Vec<usize>,
    /// Per pass, per buffer: its place in the pass's order.
    place: Vec<Vec<u32>>,
}

impl Shape {
    pub(super) fn new(setup: &GameSetup) -> Shape {
        let passes = setup.passes();
        let n = setup.program().buffers().len();
        let mut base = vec![0];
        let mut place = Vec::with_capacity(passes);
        for p in 0..passes {
            let order = setup.order(p);
            let mut mine = vec![u32::MAX; n];
            for (i, &b) in order.iter().enumerate() {
                mine[b] = i as u32;
            }
            place.push(mine);
            base.push(base[p] + order.len());
        }
        Shape { base, place }
    }

    /// The number of positions.
    pub(super) fn len(&self) -> usize {
        self.base.last().copied().unwrap_or(0)
    }

    /// The position of place `pos` of pass `pass`'s order.
    pub(super) fn position(&self, pass: usize, pos: usize) -> usize {
        self.base[pass] + pos
    }

    /// The position of buffer `b`'s turn in pass `pass`.
    pub(super) fn position_of(&self, pass: usize, b: BufferId) -> Option<usize> {
        let i = *self.place.get(pass)?.get(b)?;
        (i != u32::MAX).then(|| self.base[pass] + i as usize)
    }

    /// The pass of a position.
    pub(super) fn pass_of(&self, at: usize) -> usize {
        self.base.partition_point(|&b| b <= at) - 1
    }

    /// The positions of pass `pass`.
    pub(super) fn pass_range(&self, pass: usize) -> Range<usize> {
        self.base[pass]..self.base[pass + 1]
    }
}
