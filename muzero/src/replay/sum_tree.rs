//! The sum tree the buffer samples through: O(log N) per update and per draw.

/// A binary sum tree over `size` leaves (a power of two): each inner node holds the sum of
/// its children, so the root is the total and a prefix-sum search is one descent.
#[derive(Clone, Debug)]
pub(super) struct SumTree {
    pub(super) size: usize,
    /// Root at 1, leaves at `size..2 * size`; f64 so 100k+ leaves sum without visible
    /// rounding.
    nodes: Vec<f64>,
}

impl SumTree {
    pub(super) fn new(min_leaves: usize) -> Self {
        let size = min_leaves.max(1).next_power_of_two();
        SumTree {
            size,
            nodes: vec![0.0; 2 * size],
        }
    }

    pub(super) fn total(&self) -> f64 {
        self.nodes[1]
    }

    pub(super) fn get(&self, leaf: usize) -> f64 {
        self.nodes[self.size + leaf]
    }

    /// Parents are recomputed from their children rather than adjusted by a delta, so no
    /// rounding error accumulates over millions of updates.
    pub(super) fn set(&mut self, leaf: usize, value: f64) {
        let mut i = self.size + leaf;
        self.nodes[i] = value;
        while i > 1 {
            i /= 2;
            self.nodes[i] = self.nodes[2 * i] + self.nodes[2 * i + 1];
        }
    }

    /// The leaf whose cumulative range holds `u` (in `[0, total)`). Never returns a
    /// zero leaf while the total is positive: a descent avoids an empty child even when
    /// rounding pushes `u` past a sum.
    pub(super) fn find(&self, mut u: f64) -> usize {
        let mut i = 1;
        while i < self.size {
            let left = self.nodes[2 * i];
            let right = self.nodes[2 * i + 1];
            if (u < left && left > 0.0) || right <= 0.0 {
                i *= 2;
            } else {
                u -= left;
                i = 2 * i + 1;
            }
        }
        i - self.size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sum_tree_sums_and_finds() {
        let mut t = SumTree::new(5);
        assert_eq!(t.size, 8);
        for (i, v) in [1.0, 0.0, 2.0, 3.0, 0.0].iter().enumerate() {
            t.set(i, *v);
        }
        assert_eq!(t.total(), 6.0);
        assert_eq!(t.find(0.0), 0);
        assert_eq!(t.find(0.999), 0);
        assert_eq!(t.find(1.0), 2);
        assert_eq!(t.find(2.999), 2);
        assert_eq!(t.find(3.0), 3);
        assert_eq!(t.find(5.999), 3);
        // Rounding past the total still lands on a non-empty leaf.
        assert_eq!(t.find(6.0), 3);
        assert_eq!(t.find(1e9), 3);
        t.set(3, 0.0);
        assert_eq!(t.total(), 3.0);
        assert_eq!(t.find(2.5), 2);
    }
}
