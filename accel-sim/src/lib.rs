//! accel-sim: the hardware side of learned memory mapping.
//!
//! - [`program`]: the program IR (ops in schedule order, buffers, live ranges).
//! - [`hardware`]: memory levels, compute peak, DMA; presets and config files.
//! - [`mapping`]: where each buffer lives, and the validator.
//! - [`cost`]: the fast analytic cost model (XLA's cost analysis), with incremental deltas.
//! - [`sim`]: the event-driven simulator that gives the "true" latency.
//! - [`textfile`]: reading a user's text file with a size cap and a byte-order mark allowed.

pub mod cost;
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
pub mod hardware;
pub mod mapping;
pub mod program;
pub mod sim;
pub mod textfile;

pub use cost::{CostModel, CostState, CostTally};
pub use hardware::{parse_size, Hardware, HardwareError, MemoryLevel};
pub use mapping::{Allocation, Arrival, BufferPlacement, Mapping, MappingError, MappingStats};
pub use program::{Buffer, BufferId, BufferKind, Op, OpId, Program, ProgramError, MAX_BYTES};
pub use sim::{Bound, OpTiming, SimReport, Simulator};
pub use textfile::{read_text, TextFileError};
