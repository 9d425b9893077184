//! Which positions the moves between two lines of one search changed: each line made by a
//! move notes the positions whose runs it put in place, after its parent's. A checkpoint
//! refreshed for one line then finds where its runs are stale for another by walking the
//! few moves between them, instead of comparing every run of the pass (which on a program
//! of thousands of buffers took a fifth of a move).

use std::sync::Arc;

/// The most moves a lineage remembers: past it a line starts a new one (and a checkpoint
/// refreshed before then compares its runs one by one, once).
const MAX_DEPTH: usize = 4096;

/// One line's place among the moves of a search: the positions its move changed and the
/// line it moved from.
#[derive(Debug, Default)]
pub(super) struct Lineage {
    parent: Option<Arc<Lineage>>,
    /// The positions whose runs the move put in place.
    positions: Vec<usize>,
    /// Moves since the lineage began.
    depth: usize,
}

impl Lineage {
    /// A lineage of its own: a line played turn by turn.
    pub(super) fn root() -> Arc<Lineage> {
        Arc::new(Lineage::default())
    }

    /// The lineage of a line that a move made from `parent`'s, changing the runs at
    /// `positions`.
    pub(super) fn child(
        parent: &Arc<Lineage>,
        positions: impl Iterator<Item = usize>,
    ) -> Arc<Lineage> {
        if parent.depth + 1 >= MAX_DEPTH {
            return Lineage::root();
        }
        Arc::new(Lineage {
            parent: Some(Arc::clone(parent)),
            positions: positions.collect(),
            depth: parent.depth + 1,
        })
    }

    /// The positions `keep` keeps where lines `a` and `b` may hold different runs: those
    /// changed by the moves from their last common line to each (with repeats); `None` if
    /// they have none, or once more than `most` are kept (the caller then compares the
    /// runs one by one, or does without).
    pub(super) fn between(
        a: &Arc<Lineage>,
        b: &Arc<Lineage>,
        keep: impl Fn(usize) -> bool,
        most: usize,
    ) -> Option<Vec<usize>> {
        let (mut a, mut b) = (a, b);
        let mut out = Vec::new();
        while !Arc::ptr_eq(a, b) {
            let deeper_a = a.depth >= b.depth;
            let deeper_b = b.depth >= a.depth;
            if deeper_a {
                out.extend(a.positions.iter().copied().filter(|&p| keep(p)));
                a = a.parent.as_ref()?;
            }
            if deeper_b {
                out.extend(b.positions.iter().copied().filter(|&p| keep(p)));
                b = b.parent.as_ref()?;
            }
            if out.len() > most {
                return None;
            }
        }
        Some(out)
    }
}

impl Drop for Lineage {
    // A long lineage dropped at once would recurse once per move.
    fn drop(&mut self) {
        let mut next = self.parent.take();
        while let Some(p) = next {
            match Arc::try_unwrap(p) {
                Ok(mut l) => next = l.parent.take(),
                Err(_) => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_lines_differ_where_the_moves_between_them_changed() {
        let root = Lineage::root();
        let a1 = Lineage::child(&root, [3, 7].into_iter());
        let a2 = Lineage::child(&a1, [9].into_iter());
        let b1 = Lineage::child(&a1, [4].into_iter());
        let all = |_: usize| true;
        let mut d = Lineage::between(&a2, &b1, all, 100).unwrap();
        d.sort_unstable();
        assert_eq!(d, vec![4, 9], "siblings: each one's own move");
        let mut d = Lineage::between(&root, &a2, all, 100).unwrap();
        d.sort_unstable();
        assert_eq!(d, vec![3, 7, 9], "an ancestor: every move since");
        let d = Lineage::between(&root, &a2, |p| p < 8, 2).unwrap();
        assert_eq!(d.len(), 2, "only the kept count: {d:?}");
        assert_eq!(Lineage::between(&a2, &a2, all, 0), Some(vec![]));
        assert_eq!(
            Lineage::between(&root, &a2, all, 2),
            None,
            "past the most asked"
        );
        assert_eq!(
            Lineage::between(&a2, &Lineage::root(), all, 100),
            None,
            "no common line"
        );
    }

    #[test]
    fn a_long_lineage_restarts_and_drops_without_recursing() {
        let root = Lineage::root();
        let mut l = Arc::clone(&root);
        for i in 0..MAX_DEPTH + 10 {
            l = Lineage::child(&l, std::iter::once(i));
        }
        assert!(l.depth < MAX_DEPTH);
        assert_eq!(Lineage::between(&root, &l, |_| true, usize::MAX), None);
        drop(root);
        drop(l);
    }
}
