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
//! - [`Simulator`]: the event-driven simulator that gives the "true" latency, and
//!   [`LiveSim`], the same simulation kept up to date as a mapping changes;
//! - [`read_text`]: reading a user's text file with a size cap and a byte-order mark
//!   allowed;
//! - [`terminal_text`]: a name from a user's file as a terminal may print it (its control
//!   characters escaped);
//! - `fixtures` (feature `fixtures`): small programs shared by the workspace's tests.

#![warn(missing_docs)]

mod cost;
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
mod hardware;
mod mapping;
mod program;
mod sim;
mod terminal;
mod textfile;

pub use cost::{read_level, write_level, CostModel, CostState, CostTally, MemTimes, Tightenings};
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
pub use sim::{Bound, ExactSim, LiveSim, OpState, OpTiming, SimReport, Simulator};
pub use terminal::terminal_text;
pub use textfile::{
    json_differences, objects_where_objects, parse_json, read_text, read_text_capped,
    TextFileError, MAX_TEXT_BYTES,
};

/// A seed for one role in one step of a seeded run (an iteration, a generation), apart from
/// every other: so every random draw of a run is reproducible, resumable, and the same for
/// any thread count. Shared by the trainer and EGRL.
pub fn seed_for(seed: u64, step: u64, role: u64) -> u64 {
    let mut x =
        seed ^ step.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ role.wrapping_mul(0xD1B5_4A32_D192_ED03);
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^ (x >> 29)
}
