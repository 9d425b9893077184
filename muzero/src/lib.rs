//! mallocMuZero (issue 4): empty until the agent lands.
