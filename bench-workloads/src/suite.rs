//! The benchmark suite. (Filled in later.)
