//! A persistent array whose elements sit behind an `Arc` each, for the time index's
//! segment-tree nodes and per-op lists: copying a shared piece of the array copies
//! pointers, not the elements' lists, and a write then copies the one element it changes.
//! On a large beam search, where every kept line writes to an index it shares, the lists
//! copied whole were a fifth of the time.
//!
//! A blocked layout of the tree's nodes (a subtree of five levels per array leaf, so that
//! a root-to-leaf path crosses fewer leaves) was measured slower on that search by 10%:
//! the nodes an insert and a query touch at one level lie close together in heap order,
//! and share leaves.

use super::parray::PArray;
use std::sync::Arc;

/// `len` elements, each behind its own `Arc`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SharedArray<T> {
    slots: PArray<Arc<T>>,
}

impl<T: Clone + Default> SharedArray<T> {
    /// `len` default elements, all one shared value until written.
    pub(crate) fn new(len: usize) -> SharedArray<T> {
        let empty = Arc::new(T::default());
        SharedArray {
            slots: PArray::from_fn(len, |_| Arc::clone(&empty)),
        }
    }

    /// Element `i`, for writing: copied first if another array shares it.
    pub(crate) fn get_mut(&mut self, i: usize) -> &mut T {
        Arc::make_mut(self.slots.get_mut(i))
    }
}

impl<T: Clone> std::ops::Index<usize> for SharedArray<T> {
    type Output = T;
    fn index(&self, i: usize) -> &T {
        self.slots.get(i)
    }
}

impl<T: Clone> SharedArray<T> {
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        self.slots.iter().map(|x| &**x)
    }

    /// Calls `f` on elements `range`, in order ([`PArray::for_each_in`]).
    pub(crate) fn for_each_in(&self, range: std::ops::Range<usize>, mut f: impl FnMut(&T)) {
        self.slots.for_each_in(range, |x| f(x));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_reach_their_element_only_and_clones_keep_theirs() {
        let mut a: SharedArray<u32> = SharedArray::new(256);
        for i in 0..256 {
            *a.get_mut(i) = i as u32;
        }
        let b = a.clone();
        *a.get_mut(77) += 1000;
        for i in 0..256 {
            assert_eq!(b[i], i as u32);
            assert_eq!(a[i], i as u32 + if i == 77 { 1000 } else { 0 });
        }
    }
}
