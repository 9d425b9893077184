//! A persistent vector of `f64`: a clone costs one pointer, and a write copies only the
//! `O(log n)` nodes on its path while they are shared (`Arc::make_mut`). The beam search
//! keeps its games' per-op memory times in one, so that a game's children share them.

use accel_sim::cost::MemTimes;
use accel_sim::OpId;
use std::sync::Arc;

const BITS: u32 = 5;
const FAN: usize = 1 << BITS;

#[derive(Clone, Debug)]
enum Node {
    Leaf([f64; FAN]),
    Inner([Option<Arc<Node>>; FAN]),
}

#[derive(Clone, Debug)]
pub(crate) struct PVec {
    len: usize,
    /// Levels of inner nodes above the leaves.
    height: u32,
    root: Arc<Node>,
}

impl PVec {
    pub fn from_slice(values: &[f64]) -> PVec {
        let (mut height, mut capacity) = (0, FAN);
        while capacity < values.len() {
            height += 1;
            capacity = capacity.saturating_mul(FAN);
        }
        PVec {
            len: values.len(),
            height,
            root: Arc::new(build(values, height)),
        }
    }

    pub fn get(&self, i: usize) -> f64 {
        assert!(i < self.len, "index {i} out of 0..{}", self.len);
        let mut node = &*self.root;
        let mut shift = BITS * self.height;
        loop {
            let k = (i >> shift) & (FAN - 1);
            match node {
                Node::Leaf(v) => return v[k],
                Node::Inner(kids) => match &kids[k] {
                    Some(kid) => node = kid,
                    None => unreachable!("a built vector has every node below its length"),
                },
            }
            shift -= BITS;
        }
    }

    pub fn set(&mut self, i: usize, value: f64) {
        assert!(i < self.len, "index {i} out of 0..{}", self.len);
        let mut node = Arc::make_mut(&mut self.root);
        let mut shift = BITS * self.height;
        loop {
            let k = (i >> shift) & (FAN - 1);
            match node {
                Node::Leaf(v) => {
                    v[k] = value;
                    return;
                }
                Node::Inner(kids) => match &mut kids[k] {
                    Some(kid) => node = Arc::make_mut(kid),
                    None => unreachable!("a built vector has every node below its length"),
                },
            }
            shift -= BITS;
        }
    }
}

/// The subtree of `height` inner levels holding `values` (at most `FAN^(height+1)`).
fn build(values: &[f64], height: u32) -> Node {
    if height == 0 {
        let mut leaf = [0.0; FAN];
        leaf[..values.len()].copy_from_slice(values);
        return Node::Leaf(leaf);
    }
    let per_kid = FAN << (BITS * (height - 1));
    let mut kids: [Option<Arc<Node>>; FAN] = Default::default();
    for (k, part) in values.chunks(per_kid).enumerate() {
        kids[k] = Some(Arc::new(build(part, height - 1)));
    }
    Node::Inner(kids)
}

impl MemTimes for PVec {
    fn mem_s(&self, t: OpId) -> f64 {
        self.get(t)
    }
    fn set_mem_s(&mut self, t: OpId, v: f64) {
        self.set(t, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_do_not_reach_clones() {
        for n in [1, 31, 32, 33, 1024, 1025, 40_000] {
            let values: Vec<f64> = (0..n).map(|i| i as f64).collect();
            let mut v = PVec::from_slice(&values);
            let before = v.clone();
            for i in (0..n).step_by(7) {
                v.set(i, -(i as f64));
            }
            for i in 0..n {
                assert_eq!(before.get(i), i as f64);
                let want = if i % 7 == 0 { -(i as f64) } else { i as f64 };
                assert_eq!(v.get(i), want, "{n}: {i}");
            }
        }
    }
}
