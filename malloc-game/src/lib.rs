//! malloc-game: the mallocGame (issue 3) and the baseline players of the mapping problem.
//!
//! - [`baselines`]: `all-slow`, `xla` (XLA-style memory space assignment), `greedy-size`
//!   (TFLite-style), and the `bound` (the physical limit, not a mapping).

pub mod baselines;
