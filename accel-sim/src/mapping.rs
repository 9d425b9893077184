//! Mappings of buffers to memory levels, and their validator.
//!
//! A buffer lives in level 0 unless it has [`Allocation`]s: chunks `[offset, offset+size)`
//! of a faster level held over an inclusive op interval `[start, end]`.
//!
//! Timing conventions (shared by the cost model, the simulator and every solver):
//! - [`Arrival::Defined`]: op `start` is the buffer's defining op and writes it straight
//!   into the level.
//! - [`Arrival::Prefetch`]: an asynchronous copy from level 0 is issued when op `start`
//!   begins; a use at `t` in `[start, end]` reads the level once the copy is done (the
//!   simulator stalls op `t` until then). Level 0 must hold the data when op `start`
//!   begins, so for a defined buffer `start > def`.
//! - `eviction: Some(e)` (defined allocations only): a copy back to level 0 is issued when
//!   op `e` completes, `start <= e <= end`, and must be done before op `end + 1` begins
//!   (or before the program ends): the chunk is held until then. Uses after `end` read
//!   level 0.
//! - Any use not inside an allocation reads level 0.

use crate::hardware::Hardware;
use crate::program::{BufferId, OpId, Program};
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// How a buffer's data gets into an allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrival {
    /// Written there by its defining op.
    Defined,
    /// Copied in from level 0, starting when op `start` begins.
    Prefetch,
}

/// A chunk of a fast level held by one buffer over an op interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
// A misspelt field (`evction`) would otherwise leave its field at the default: the
// latency printed would be that of another mapping than the user's.
#[serde(deny_unknown_fields)]
pub struct Allocation {
    /// >= 1.
    pub level: usize,
    /// Byte offset in the level.
    pub offset: u64,
    /// First op of the hold (the defining op, or the op during which the prefetch starts).
    pub start: OpId,
    /// Last op of the hold, inclusive.
    pub end: OpId,
    /// How the data gets there: written by the defining op, or prefetched from level 0.
    pub arrival: Arrival,
    /// For a defined allocation: the op after which the copy back to level 0 is issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eviction: Option<OpId>,
}

/// Where one buffer lives: level 0 plus its fast allocations, sorted by `start`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct BufferPlacement {
    /// The buffer's fast allocations, sorted by `start`; empty: it lives in level 0
    /// throughout.
    pub allocations: Vec<Allocation>,
}

impl BufferPlacement {
    /// The level op `t` reads this buffer from (0 when no allocation holds it at `t`).
    pub fn read_level(&self, t: OpId) -> usize {
        crate::cost::read_level(&self.allocations, t)
    }
    /// The level the defining op writes to.
    pub fn write_level(&self) -> usize {
        crate::cost::write_level(&self.allocations)
    }
}

/// A placement for every buffer of a program (indexed by [`BufferId`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Mapping {
    /// One placement per buffer, indexed by [`BufferId`].
    pub buffers: Vec<BufferPlacement>,
}

/// A mapping that breaks a rule. Each names the buffers involved.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MappingError {
    /// The mapping does not have one placement per buffer of the program.
    #[error("mapping has {got} buffer placements, the program has {want} buffers")]
    WrongLength {
        /// Placements in the mapping.
        got: usize,
        /// Buffers in the program.
        want: usize,
    },
    /// One allocation breaks a rule on its own (a level the hardware lacks, an offset past
    /// the capacity, a hold outside the buffer's live range, ...).
    #[error("buffer `{buffer}`: allocation {index}: {msg}")]
    Bad {
        /// The buffer.
        buffer: String,
        /// The allocation's index in the buffer's placement.
        index: usize,
        /// The rule it breaks.
        msg: String,
    },
    /// Two buffers share bytes of one level at one time.
    #[error("buffers `{a}` and `{b}` overlap in level {level}: ops {t0}..={t1}, bytes {o0}..{o1}")]
    Overlap {
        /// One buffer.
        a: String,
        /// The other.
        b: String,
        /// The level.
        level: usize,
        /// The first op they are both held over.
        t0: OpId,
        /// The last.
        t1: OpId,
        /// The first byte they share.
        o0: u64,
        /// One past the last.
        o1: u64,
    },
}

/// What a valid mapping uses.
#[derive(Clone, Debug, PartialEq)]
pub struct MappingStats {
    /// Per level: the highest `offset + size` of any allocation.
    pub peak_address: Vec<u64>,
    /// Per level: the most bytes held at one time.
    pub peak_bytes: Vec<u64>,
    /// Prefetches: allocations copied in from level 0.
    pub prefetches: usize,
    /// Evictions: defined allocations copied back to level 0.
    pub evictions: usize,
}

impl Mapping {
    /// Everything in level 0.
    pub fn all_slow(program: &Program) -> Mapping {
        Mapping {
            buffers: vec![BufferPlacement::default(); program.buffers().len()],
        }
    }

    /// The uses it reads from a fast level, as `(buffer, op reading it, level)`, by buffer
    /// then op, each use once: the set a trust region or a learned start speaks of.
    pub fn fast_uses(&self, program: &Program) -> Vec<(BufferId, OpId, usize)> {
        let mut out = Vec::new();
        for (b, placement) in self.buffers.iter().enumerate() {
            let mut last = None;
            for &u in program.uses(b) {
                let level = placement.read_level(u);
                if level > 0 && last != Some(u) {
                    out.push((b, u, level));
                }
                last = Some(u);
            }
        }
        out
    }

    /// Checks every rule of the module docs, then the time x address overlaps per level.
    pub fn validate(&self, program: &Program, hw: &Hardware) -> Result<MappingStats, MappingError> {
        let n = program.buffers().len();
        if self.buffers.len() != n {
            return Err(MappingError::WrongLength {
                got: self.buffers.len(),
                want: n,
            });
        }
        let levels = hw.levels.len();
        let mut copies = (0, 0);
        let mut per_level: Vec<Vec<Rect>> = vec![Vec::new(); levels];
        for (b, placement) in self.buffers.iter().enumerate() {
            check_placement(program, hw, b, placement, &mut copies, &mut per_level)?;
        }
        let mut peak_address = vec![0u64; levels];
        let mut peak_bytes = vec![0u64; levels];
        for (level, rects) in per_level.iter_mut().enumerate() {
            (peak_address[level], peak_bytes[level]) = sweep_level(program, level, rects)?;
        }
        Ok(MappingStats {
            peak_address,
            peak_bytes,
            prefetches: copies.0,
            evictions: copies.1,
        })
    }
}

/// Checks buffer `b`'s placement on its own (everything but the overlaps with other
/// buffers), counting its prefetches and evictions into `copies` and adding its
/// allocations to `per_level`.
fn check_placement(
    program: &Program,
    hw: &Hardware,
    b: BufferId,
    placement: &BufferPlacement,
    copies: &mut (usize, usize),
    per_level: &mut [Vec<Rect>],
) -> Result<(), MappingError> {
    let buf = program.buffer(b);
    let bad = |index: usize, msg: String| MappingError::Bad {
        buffer: buf.name.clone(),
        index,
        msg,
    };
    let def = program.def(b);
    let uses = program.uses(b);
    let mut prev_end: Option<OpId> = None;
    // Op after which level 0 no longer has valid data (a defined-in-fast buffer with no
    // eviction) and the time from which it does again.
    let mut level0_valid_from: Option<OpId> = Some(def.map_or(0, |d| d + 1));
    for (i, a) in placement.allocations.iter().enumerate() {
        check_hold(program, hw, b, a).map_err(|msg| bad(i, msg))?;
        if let Some(pe) = prev_end {
            if a.start <= pe {
                return Err(bad(
                    i,
                    format!(
                        "starts at op {} before the previous allocation ends at op {pe}",
                        a.start
                    ),
                ));
            }
        }
        match a.arrival {
            Arrival::Defined => {
                level0_valid_from = check_defined(program, b, i, a).map_err(|msg| bad(i, msg))?;
                copies.1 += usize::from(a.eviction.is_some());
            }
            Arrival::Prefetch => {
                check_prefetch(a, level0_valid_from, uses).map_err(|msg| bad(i, msg))?;
                copies.0 += 1;
            }
        }
        prev_end = Some(a.end);
        per_level[a.level].push((a.start, a.end, a.offset, buf.size, b));
    }
    // Every use outside the allocations reads level 0, which must hold the data. The
    // allocations are sorted and disjoint by now: one cursor walks them.
    let mut levels = crate::cost::Levels::new(&placement.allocations);
    for &u in uses {
        if levels.at(u) == 0 && !level0_valid_at(placement, def, u) {
            return Err(bad(
                0,
                format!("op {u} reads it from level 0, but it was defined in a fast level and not evicted before"),
            ));
        }
    }
    if buf.kind == crate::program::BufferKind::Output {
        if let Some(a) = placement.allocations.first() {
            if a.arrival == Arrival::Defined && a.eviction.is_none() {
                return Err(bad(
                    0,
                    "is a program output defined in a fast level without an eviction: outputs must end in level 0".into(),
                ));
            }
        }
    }
    Ok(())
}

/// Where buffer `b`'s allocation `a` sits: a fast level, inside the program and the
/// buffer's live range, aligned, under the capacity.
fn check_hold(program: &Program, hw: &Hardware, b: BufferId, a: &Allocation) -> Result<(), String> {
    let levels = hw.levels.len();
    if a.level == 0 || a.level >= levels {
        return Err(format!(
            "level {} is not a fast level (1..{})",
            a.level,
            levels - 1
        ));
    }
    let lvl = &hw.levels[a.level];
    let t_count = program.len();
    if a.start > a.end || a.end >= t_count {
        return Err(format!(
            "interval {}..={} is not inside the program's ops 0..{}",
            a.start, a.end, t_count
        ));
    }
    let (_, live_end) = program.live_range(b);
    if a.end > live_end {
        return Err(format!(
            "held until op {} after its live range ends at {live_end}",
            a.end
        ));
    }
    if a.offset % lvl.alignment != 0 {
        return Err(format!(
            "offset {} is not a multiple of level {}'s alignment {}",
            a.offset, a.level, lvl.alignment
        ));
    }
    let size = program.buffer(b).size;
    if a.offset
        .checked_add(size)
        .is_none_or(|top| top > lvl.capacity)
    {
        return Err(format!(
            "offset {} + size {} exceeds level {} capacity {}",
            a.offset, size, a.level, lvl.capacity
        ));
    }
    Ok(())
}

/// A defined allocation `a` (index `i`) of buffer `b`: the first, at the defining op, its
/// eviction inside the hold. Returns the op from which level 0 holds the data again
/// (`None`: never, without an eviction).
fn check_defined(
    program: &Program,
    b: BufferId,
    i: usize,
    a: &Allocation,
) -> Result<Option<OpId>, String> {
    let def = program.def(b);
    if i != 0 || def != Some(a.start) {
        return Err(match def {
            None => format!(
                "is a {}: it has no defining op to write it into a fast level",
                program.buffer(b).kind
            ),
            Some(d) => format!(
                "defined allocation must be the first and start at the defining op {d}, got start {} (index {i})",
                a.start
            ),
        });
    }
    match a.eviction {
        Some(e) if e < a.start || e > a.end => Err(format!(
            "eviction after op {e} is outside the hold {}..={}",
            a.start, a.end
        )),
        Some(_) => Ok(Some(a.end + 1)),
        None => Ok(None),
    }
}

/// A prefetched allocation `a`: no eviction, level 0 holding the data when it starts
/// (from `level0_valid_from`), and a use inside it.
fn check_prefetch(
    a: &Allocation,
    level0_valid_from: Option<OpId>,
    uses: &[OpId],
) -> Result<(), String> {
    if a.eviction.is_some() {
        return Err("a prefetched copy needs no eviction: level 0 still holds the data".into());
    }
    match level0_valid_from {
        Some(v) if a.start >= v => {}
        Some(v) => {
            return Err(format!(
                "prefetch starts at op {} but level 0 holds the data only from op {v}",
                a.start
            ))
        }
        None => return Err(
            "prefetch from level 0, but the buffer was defined in a fast level and never evicted"
                .into(),
        ),
    }
    let first = uses.partition_point(|&u| u < a.start);
    if uses.get(first).is_none_or(|&u| u > a.end) {
        return Err(format!(
            "prefetch over ops {}..={} serves no use",
            a.start, a.end
        ));
    }
    Ok(())
}

/// An allocation as (start, end, offset, size, buffer), for the overlap sweep.
type Rect = (OpId, OpId, u64, u64, BufferId);

/// The time x address overlap check of one level's allocations; returns the level's
/// peak address and peak bytes held. Sweeps by start time; the allocations held at the
/// current start are disjoint in address (else the sweep has stopped), so a map keyed by
/// offset finds the ones a new allocation meets in `O(log n)`, and a heap of end times
/// retires them: `O(n log n)` where comparing against every held allocation was
/// quadratic. On an overlap it names the pair a scan in arrival order would name.
fn sweep_level(
    program: &Program,
    level: usize,
    rects: &mut [Rect],
) -> Result<(u64, u64), MappingError> {
    rects.sort_unstable_by_key(|r| (r.0, r.2));
    // offset -> (arrival, allocation) for the allocations held now.
    let mut held: BTreeMap<u64, (usize, Rect)> = BTreeMap::new();
    let mut ends: BinaryHeap<Reverse<(OpId, u64)>> = BinaryHeap::new();
    // Every `offset + size` was checked against the capacity and the bytes held at once
    // are disjoint within it: the saturating sums below never saturate.
    let (mut bytes, mut peak_bytes, mut peak_address) = (0u64, 0u64, 0u64);
    for (arrival, &r) in rects.iter().enumerate() {
        let (s, e, o, size, b) = r;
        while let Some(&Reverse((end, off))) = ends.peek() {
            if end >= s {
                break;
            }
            ends.pop();
            if let Some((_, x)) = held.remove(&off) {
                bytes = bytes.saturating_sub(x.3);
            }
        }
        let top = o.saturating_add(size);
        let clash = held
            .range(..top)
            .rev()
            .take_while(|(_, (_, x))| x.2.saturating_add(x.3) > o)
            .min_by_key(|(_, (seen, _))| *seen);
        if let Some((_, &(_, x))) = clash {
            return Err(MappingError::Overlap {
                a: program.buffer(x.4).name.clone(),
                b: program.buffer(b).name.clone(),
                level,
                t0: s,
                t1: e.min(x.1),
                o0: o.max(x.2),
                o1: top.min(x.2.saturating_add(x.3)),
            });
        }
        held.insert(o, (arrival, r));
        ends.push(Reverse((e, o)));
        bytes = bytes.saturating_add(size);
        peak_bytes = peak_bytes.max(bytes);
        peak_address = peak_address.max(top);
    }
    Ok((peak_address, peak_bytes))
}

/// Whether level 0 holds valid data of the buffer when op `t` begins.
fn level0_valid_at(placement: &BufferPlacement, def: Option<OpId>, t: OpId) -> bool {
    match placement.allocations.first() {
        Some(a) if a.arrival == Arrival::Defined => a.eviction.is_some() && t > a.end,
        _ => def.is_none_or(|d| t > d),
    }
}

/// The JSON file form of a mapping: buffers by name, only those with allocations.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MappingFile {
    /// Always `mallocmuzero-mapping` ([`MAPPING_FORMAT`]): a file of another kind is
    /// refused.
    pub format: String,
    /// The file's version ([`MAPPING_VERSION`]).
    pub version: u32,
    /// The program's name: a mapping applies to one program.
    pub workload: String,
    /// The buffers with fast allocations, by name; the others live in level 0.
    pub buffers: Vec<NamedPlacement>,
}

/// One buffer's fast allocations in a mapping file.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamedPlacement {
    /// The buffer's name in the program.
    pub buffer: String,
    /// Its allocations, as in [`BufferPlacement`].
    pub allocations: Vec<Allocation>,
}

/// The `format` field of a mapping file.
pub const MAPPING_FORMAT: &str = "mallocmuzero-mapping";
/// The current mapping file version.
pub const MAPPING_VERSION: u32 = 1;

impl MappingFile {
    /// The file form of `mapping` of `program`: buffers by name, only those with
    /// allocations.
    pub fn from_mapping(program: &Program, mapping: &Mapping) -> MappingFile {
        MappingFile {
            format: MAPPING_FORMAT.into(),
            version: MAPPING_VERSION,
            workload: program.name().into(),
            buffers: mapping
                .buffers
                .iter()
                .enumerate()
                .filter(|(_, p)| !p.allocations.is_empty())
                .map(|(b, p)| NamedPlacement {
                    buffer: program.buffer(b).name.clone(),
                    allocations: p.allocations.clone(),
                })
                .collect(),
        }
    }

    /// Reads a mapping file (JSON); the error names the file and what is wrong with it.
    pub fn read(path: &std::path::Path) -> Result<MappingFile, String> {
        let text = crate::read_text(path).map_err(|e| e.to_string())?;
        crate::parse_json(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Resolves buffer names against `program`; the error names the field and value.
    pub fn to_mapping(&self, program: &Program) -> Result<Mapping, String> {
        if self.format != MAPPING_FORMAT {
            return Err(format!(
                "field `format`: expected \"{MAPPING_FORMAT}\", got \"{}\"",
                self.format
            ));
        }
        if self.version != MAPPING_VERSION {
            return Err(format!(
                "field `version`: this build reads version {MAPPING_VERSION}, got {}",
                self.version
            ));
        }
        let index: std::collections::HashMap<&str, BufferId> = program
            .buffers()
            .iter()
            .enumerate()
            .map(|(i, b)| (b.name.as_str(), i))
            .collect();
        if self.workload != program.name() {
            return Err(format!(
                "field `workload`: the mapping is for `{}`, but the program is `{}`",
                self.workload,
                program.name()
            ));
        }
        let mut mapping = Mapping::all_slow(program);
        let mut listed_at: Vec<Option<usize>> = vec![None; program.buffers().len()];
        for (i, p) in self.buffers.iter().enumerate() {
            let b = *index.get(p.buffer.as_str()).ok_or_else(|| {
                format!(
                    "field `buffers[{i}].buffer`: workload `{}` has no buffer `{}`",
                    program.name(),
                    p.buffer
                )
            })?;
            // A second entry would silently replace the first: refuse it.
            if let Some(first) = listed_at[b].replace(i) {
                return Err(format!(
                    "field `buffers[{i}].buffer`: buffer `{}` is already listed at buffers[{first}]",
                    p.buffer
                ));
            }
            mapping.buffers[b].allocations = p.allocations.clone();
        }
        Ok(mapping)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hardware::Hardware;

    fn prog() -> Program {
        crate::fixtures::three_ops("p", 1024, 1e6)
    }

    fn hw() -> Hardware {
        Hardware::tpu_v4i_like().with_capacity(1, 4096).unwrap()
    }

    fn alloc(level: usize, offset: u64, start: usize, end: usize, arrival: Arrival) -> Allocation {
        Allocation {
            level,
            offset,
            start,
            end,
            arrival,
            eviction: None,
        }
    }

    #[test]
    fn all_slow_is_valid() {
        let p = prog();
        let s = Mapping::all_slow(&p).validate(&p, &hw()).unwrap();
        assert_eq!(s.peak_bytes, vec![0, 0]);
    }

    #[test]
    fn valid_mapping_with_prefetch_and_defined() {
        let p = prog();
        let mut m = Mapping::all_slow(&p);
        m.buffers[2].allocations = vec![alloc(1, 0, 0, 1, Arrival::Defined)];
        m.buffers[3].allocations = vec![alloc(1, 1024, 1, 2, Arrival::Defined)];
        m.buffers[1].allocations = vec![alloc(1, 2048, 1, 2, Arrival::Prefetch)];
        let s = m.validate(&p, &hw()).unwrap();
        assert_eq!(s.peak_bytes[1], 4096);
        assert_eq!(s.prefetches, 1);
    }

    #[test]
    fn overlap_names_both_buffers() {
        let p = prog();
        let mut m = Mapping::all_slow(&p);
        m.buffers[2].allocations = vec![alloc(1, 0, 0, 1, Arrival::Defined)];
        m.buffers[3].allocations = vec![alloc(1, 512, 1, 2, Arrival::Defined)];
        let e = m.validate(&p, &hw()).unwrap_err().to_string();
        assert!(
            e.contains("`a`") && e.contains("`b`") && e.contains("overlap"),
            "{e}"
        );
    }

    #[test]
    fn rule_breaks_are_rejected() {
        let p = prog();
        let h = hw();
        let check = |b: usize, a: Allocation, want: &str| {
            let mut m = Mapping::all_slow(&p);
            m.buffers[b].allocations = vec![a];
            let e = m.validate(&p, &h).unwrap_err().to_string();
            assert!(e.contains(want), "{e} should contain {want}");
        };
        check(
            2,
            alloc(1, 3584, 0, 1, Arrival::Defined),
            "exceeds level 1 capacity",
        );
        check(2, alloc(1, 3, 0, 1, Arrival::Defined), "alignment");
        check(2, alloc(2, 0, 0, 1, Arrival::Defined), "not a fast level");
        check(1, alloc(1, 0, 0, 2, Arrival::Defined), "no defining op");
        check(
            2,
            alloc(1, 0, 0, 2, Arrival::Defined),
            "after its live range",
        );
        check(
            2,
            alloc(1, 0, 0, 1, Arrival::Prefetch),
            "level 0 holds the data only from op 1",
        );
        check(1, alloc(1, 0, 1, 1, Arrival::Prefetch), "serves no use");
        check(
            4,
            alloc(1, 0, 2, 2, Arrival::Defined),
            "outputs must end in level 0",
        );
        let mut a = alloc(1, 0, 1, 1, Arrival::Prefetch);
        a.eviction = Some(1);
        check(1, a, "needs no eviction");
        // a defined in fast but only held at op 0: op1 reads level 0, never written there.
        check(2, alloc(1, 0, 0, 0, Arrival::Defined), "not evicted");
        let mut ok = alloc(1, 0, 0, 0, Arrival::Defined);
        ok.eviction = Some(0);
        let mut m = Mapping::all_slow(&p);
        m.buffers[2].allocations = vec![ok];
        m.validate(&p, &h).unwrap();
    }

    #[test]
    fn mapping_file_round_trip_and_bad_name() {
        let p = prog();
        let mut m = Mapping::all_slow(&p);
        m.buffers[1].allocations = vec![alloc(1, 0, 1, 2, Arrival::Prefetch)];
        let f = MappingFile::from_mapping(&p, &m);
        let json = serde_json::to_string(&f).unwrap();
        let back: MappingFile = serde_json::from_str(&json).unwrap();
        assert_eq!(back.to_mapping(&p).unwrap(), m);
        let mut bad = back.clone();
        bad.buffers[0].buffer = "nope".into();
        assert!(bad
            .to_mapping(&p)
            .unwrap_err()
            .contains("buffers[0].buffer"));
    }

    #[test]
    fn a_misspelt_or_non_finite_allocation_field_is_named() {
        let p = prog();
        let mut m = Mapping::all_slow(&p);
        m.buffers[1].allocations = vec![alloc(1, 0, 1, 2, Arrival::Prefetch)];
        let json = serde_json::to_string(&MappingFile::from_mapping(&p, &m)).unwrap();
        let dir = std::env::temp_dir().join(format!("mapping-typo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cases = [
            (
                r#""arrival":"prefetch""#,
                r#""arrival":"prefetch","evction":1"#,
                "`evction`",
            ),
            (
                r#""arrival":"prefetch""#,
                r#""arival":"prefetch""#,
                "`arival`",
            ),
            (r#""offset":0"#, r#""offset":NaN"#, "`NaN`"),
        ];
        for (from, to, named) in cases {
            assert!(json.contains(from), "{json}");
            let path = dir.join("m.json");
            std::fs::write(&path, json.replace(from, to)).unwrap();
            let e = MappingFile::read(&path).unwrap_err();
            assert!(e.contains("m.json") && e.contains(named), "{e}");
            assert!(e.contains("buffers[0].allocations[0]"), "{e}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
