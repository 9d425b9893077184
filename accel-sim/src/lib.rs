//! accel-sim: the hardware side of learned memory mapping.
//!
//! The modules are private; the API is what they re-export here:
//! - the program IR: [`Program`] (ops in schedule order, buffers, live ranges), [`Buffer`],
//!   [`Op`], [`BufferKind`], and [`MAX_BYTES`], the bound that keeps every size sum exact;
//! - the hardware: [`Hardware`] (memory levels, compute peak, DMA), its presets
//!   ([`PRESETS`]) and config files ([`HardwareFile`]), [`parse_size`] and [`format_size`];
//! - mappings: [`Mapping`] (where each buffer lives), its validator
//!   ([`Mapping::validate`]) and its file form ([`MappingFile`]);
//! - [`CostModel`]: the fast analytic cost model (XLA's cost analysis), with incremental
//!   deltas ([`CostTally`], [`CostState`]);
//! - [`Simulator`]: the event-driven simulator that gives the "true" latency;
//! - [`read_text`]: reading a user's text file with a size cap and a byte-order mark
//!   allowed;
//! - `fixtures` (feature `fixtures`): small programs shared by the workspace's tests.

mod cost;
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
mod hardware;
mod mapping;
mod program;
mod sim;
mod textfile;

pub use cost::{read_level, write_level, CostModel, CostState, CostTally, MemTimes};
pub use hardware::{
    format_size, parse_size, ByteSize, Dma, DmaFile, Hardware, HardwareError, HardwareFile,
    LevelFile, MemoryLevel, PRESETS,
};
pub use mapping::{
    Allocation, Arrival, BufferPlacement, Mapping, MappingError, MappingFile, MappingStats,
    NamedPlacement, MAPPING_FORMAT, MAPPING_VERSION,
};
pub use program::{
    Buffer, BufferId, BufferKind, Op, OpId, Program, ProgramError, MAX_BYTES, MAX_FLOPS_PER_OP,
};
pub use sim::{Bound, OpTiming, SimReport, Simulator};
pub use textfile::{
    objects_where_objects, read_text, read_text_capped, TextFileError, MAX_TEXT_BYTES,
};
