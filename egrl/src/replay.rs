//! The replay buffer the population and the learner share: every scored assignment.

use crate::problem::Assignment;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// A ring of (assignment, fitness) pairs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Replay {
    capacity: usize,
    next: usize,
    items: Vec<(Assignment, f64)>,
}

impl Replay {
    /// An empty buffer of `capacity` assignments (at least 1).
    pub fn new(capacity: usize) -> Replay {
        Replay {
            capacity: capacity.max(1),
            next: 0,
            items: Vec::new(),
        }
    }
    /// Assignments held.
    pub fn len(&self) -> usize {
        self.items.len()
    }
    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    /// Adds one, overwriting the oldest when full.
    pub fn push(&mut self, assignment: Assignment, fitness: f64) {
        if self.items.len() < self.capacity {
            self.items.push((assignment, fitness));
        } else {
            self.items[self.next] = (assignment, fitness);
        }
        self.next = (self.next + 1) % self.capacity;
    }
    /// `n` items drawn uniformly with replacement (none when empty).
    pub fn sample(&self, n: usize, rng: &mut impl Rng) -> Vec<(&Assignment, f64)> {
        if self.items.is_empty() {
            return Vec::new();
        }
        (0..n)
            .map(|_| {
                let (a, f) = &self.items[rng.random_range(0..self.items.len())];
                (a, *f)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_keeps_the_newest() {
        let mut r = Replay::new(3);
        for i in 0..5u8 {
            r.push(Assignment(vec![i]), i as f64);
        }
        let mut kept: Vec<u8> = r.items.iter().map(|(a, _)| a.0[0]).collect();
        kept.sort();
        assert_eq!(kept, vec![2, 3, 4]);
    }
}
