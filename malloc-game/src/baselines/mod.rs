//! Baseline solvers. (Helper B fills this in.)
