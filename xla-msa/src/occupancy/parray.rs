//! A fixed-length persistent array for the time index: a clone is one `Arc` (a beam search
//! clones whole game states), a read walks a few levels of 32-way nodes with plain shifts,
//! and a write copies only the path to its element. `imbl`'s general vector did the same
//! job at twice the cost per read on the game's hot path.

use std::sync::Arc;

const BITS: u32 = 5;
const WIDTH: usize = 1 << BITS;
const MASK: usize = WIDTH - 1;

#[derive(Clone, Debug)]
enum Node<T> {
    Leaf(Vec<T>),
    Branch(Vec<Arc<Node<T>>>),
}

/// `len` elements in a tree of 32-way nodes, `depth` levels of branches above the leaves.
#[derive(Clone, Debug)]
pub(crate) struct PArray<T> {
    len: usize,
    depth: u32,
    root: Arc<Node<T>>,
}

impl<T: Clone> PArray<T> {
    /// The array of `len` elements `f(0), f(1), ...`.
    pub(crate) fn from_fn(len: usize, mut f: impl FnMut(usize) -> T) -> PArray<T> {
        let mut level: Vec<Arc<Node<T>>> = (0..len.div_ceil(WIDTH).max(1))
            .map(|c| {
                let lo = c * WIDTH;
                Arc::new(Node::Leaf((lo..len.min(lo + WIDTH)).map(&mut f).collect()))
            })
            .collect();
        let mut depth = 0;
        while level.len() > 1 {
            level = level
                .chunks(WIDTH)
                .map(|c| Arc::new(Node::Branch(c.to_vec())))
                .collect();
            depth += 1;
        }
        let root = level
            .pop()
            .unwrap_or_else(|| Arc::new(Node::Leaf(Vec::new())));
        PArray { len, depth, root }
    }

    /// Element `i` (panics past the end, as a slice does).
    pub(crate) fn get(&self, i: usize) -> &T {
        assert!(
            i < self.len,
            "index {i} out of range for length {}",
            self.len
        );
        let mut node = &*self.root;
        let mut shift = BITS * self.depth;
        loop {
            match node {
                Node::Leaf(v) => return &v[i & MASK],
                Node::Branch(c) => {
                    node = &c[(i >> shift) & MASK];
                    shift -= BITS;
                }
            }
        }
    }

    /// The leaf holding element `i`: elements `i & !MASK` onwards, at most 32 of them.
    fn leaf(&self, i: usize) -> &[T] {
        let mut node = &*self.root;
        let mut shift = BITS * self.depth;
        loop {
            match node {
                Node::Leaf(v) => return v,
                Node::Branch(c) => {
                    node = &c[(i >> shift) & MASK];
                    shift -= BITS;
                }
            }
        }
    }

    /// Calls `f` on elements `range`, in order, one leaf walk per 32 elements instead of
    /// one per element.
    pub(crate) fn for_each_in(&self, range: std::ops::Range<usize>, mut f: impl FnMut(&T)) {
        assert!(
            range.end <= self.len,
            "range end {} out of range for length {}",
            range.end,
            self.len
        );
        let mut i = range.start;
        while i < range.end {
            let leaf = self.leaf(i);
            let lo = i & MASK;
            let hi = (lo + (range.end - i)).min(leaf.len());
            leaf[lo..hi].iter().for_each(&mut f);
            i += hi - lo;
        }
    }

    /// Element `i`, for writing: the nodes on its path are copied if shared.
    pub(crate) fn get_mut(&mut self, i: usize) -> &mut T {
        assert!(
            i < self.len,
            "index {i} out of range for length {}",
            self.len
        );
        let mut node = Arc::make_mut(&mut self.root);
        let mut shift = BITS * self.depth;
        loop {
            match node {
                Node::Leaf(v) => return &mut v[i & MASK],
                Node::Branch(c) => {
                    node = Arc::make_mut(&mut c[(i >> shift) & MASK]);
                    shift -= BITS;
                }
            }
        }
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        (0..self.len).map(|i| self.get(i))
    }
}

impl<T: Clone> Default for PArray<T> {
    fn default() -> Self {
        PArray::from_fn(0, |_| unreachable!("an empty array has no elements"))
    }
}

impl<T: Clone> std::ops::Index<usize> for PArray<T> {
    type Output = T;
    fn index(&self, i: usize) -> &T {
        self.get(i)
    }
}

impl<T: Clone> std::ops::IndexMut<usize> for PArray<T> {
    fn index_mut(&mut self, i: usize) -> &mut T {
        self.get_mut(i)
    }
}

impl<T: Clone + PartialEq> PartialEq for PArray<T> {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl<T: Clone + Eq> Eq for PArray<T> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_writes_and_clones_are_independent() {
        for len in [0, 1, 31, 32, 33, 1024, 1025, 40_000] {
            let mut a = PArray::from_fn(len, |i| i as u64);
            assert_eq!(a.iter().count(), len);
            assert!(a.iter().copied().eq(0..len as u64));
            let b = a.clone();
            for i in (0..len).step_by(7) {
                a[i] += 1;
            }
            for i in 0..len {
                assert_eq!(b[i], i as u64);
                assert_eq!(a[i], i as u64 + u64::from(i % 7 == 0));
            }
            assert_eq!(a == b, len == 0);
            for (lo, hi) in [
                (0, len),
                (len / 3, len / 2),
                (len / 2, len / 2),
                (1.min(len), len),
            ] {
                let mut got = Vec::new();
                a.for_each_in(lo..hi, |x| got.push(*x));
                let want: Vec<u64> = (lo..hi).map(|i| a[i]).collect();
                assert_eq!(got, want, "{lo}..{hi} of {len}");
            }
        }
    }
}
