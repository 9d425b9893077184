//! (filled by issue 2)
