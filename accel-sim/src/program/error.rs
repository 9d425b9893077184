//! Why a program is refused: each error names the buffer or op at fault.

use super::{BufferId, BufferKind, OpId};

/// A problem found while building a [`Program`](super::Program). Each names the buffer or op involved.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProgramError {
    /// A program needs at least one op.
    #[error("program has no ops")]
    NoOps,
    /// A buffer of no bytes.
    #[error("buffer {index} (`{name}`): size must be > 0, got {size}")]
    ZeroSize {
        /// The buffer's index.
        index: BufferId,
        /// Its name.
        name: String,
        /// The size given.
        size: u64,
    },
    /// Two buffers share a name, so a mapping file could not tell them apart.
    #[error("buffers {first} and {second} are both named `{name}` (names identify buffers in mapping files)")]
    DuplicateName {
        /// The name.
        name: String,
        /// The first buffer with it.
        first: BufferId,
        /// The second.
        second: BufferId,
    },
    /// The buffers' sizes add up past [`MAX_BYTES`](super::MAX_BYTES).
    #[error("buffer {index} (`{name}`): the sizes of the buffers up to this one add up to more than {limit} bytes (2^53), the most a program may hold")]
    TooLarge {
        /// The buffer whose size passes the limit.
        index: BufferId,
        /// Its name.
        name: String,
        /// The limit, [`MAX_BYTES`](super::MAX_BYTES).
        limit: u64,
    },
    /// An op names a buffer index the program does not have.
    #[error("op {op} (`{op_name}`): {field} refers to buffer {buffer}, but the program has only {count} buffers")]
    UnknownBuffer {
        /// The op.
        op: OpId,
        /// Its name.
        op_name: String,
        /// `reads` or `writes`.
        field: &'static str,
        /// The index named.
        buffer: BufferId,
        /// The program's number of buffers.
        count: usize,
    },
    /// An op's FLOPs are negative, not finite, or past [`MAX_FLOPS_PER_OP`](super::MAX_FLOPS_PER_OP).
    #[error("op {op} (`{op_name}`): flops must be in [0, 1e24], got {flops}")]
    BadFlops {
        /// The op.
        op: OpId,
        /// Its name.
        op_name: String,
        /// The value given.
        flops: f64,
    },
    /// An op reads an activation or output before the op that defines it.
    #[error("op {op} (`{op_name}`) reads buffer `{buffer}` before any op writes it")]
    ReadBeforeWrite {
        /// The op.
        op: OpId,
        /// Its name.
        op_name: String,
        /// The buffer.
        buffer: String,
    },
    /// An op writes a weight or an input, which are in memory before the program starts.
    #[error("op {op} (`{op_name}`) writes buffer `{buffer}`, which is a {kind} (weights and inputs have no defining op)")]
    EntryWritten {
        /// The op.
        op: OpId,
        /// Its name.
        op_name: String,
        /// The buffer.
        buffer: String,
        /// Its kind.
        kind: BufferKind,
    },
    /// Two ops write one buffer; a buffer has one definition.
    #[error("buffer `{buffer}` is written twice: by op {first} and by op {second} (a buffer has one definition)")]
    WrittenTwice {
        /// The buffer.
        buffer: String,
        /// The first op that writes it.
        first: OpId,
        /// The second.
        second: OpId,
    },
    /// An op reads and writes one buffer (an in-place update; not modelled).
    #[error("op {op} (`{op_name}`) both reads and writes buffer `{buffer}` (in-place updates are not modelled)")]
    ReadAndWrite {
        /// The op.
        op: OpId,
        /// Its name.
        op_name: String,
        /// The buffer.
        buffer: String,
    },
    /// An op lists a buffer twice in its reads or its writes.
    #[error("op {op} (`{op_name}`) lists buffer `{buffer}` twice in {field}")]
    Duplicate {
        /// The op.
        op: OpId,
        /// Its name.
        op_name: String,
        /// `reads` or `writes`.
        field: &'static str,
        /// The buffer.
        buffer: String,
    },
    /// An activation or output no op writes.
    #[error("buffer `{buffer}` ({kind}) is never written by any op")]
    NeverDefined {
        /// The buffer.
        buffer: String,
        /// Its kind.
        kind: BufferKind,
    },
    /// A weight or input no op reads: an entry buffer must have a use.
    #[error("buffer `{buffer}` ({kind}) is never read by any op")]
    NeverUsed {
        /// The buffer.
        buffer: String,
        /// Its kind.
        kind: BufferKind,
    },
}
