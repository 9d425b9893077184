//! The hardware of a saved game in binary and JSON form (see `record.rs` for why).

use accel_sim::{ByteSize, DmaFile, HardwareFile, LevelFile};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Serialize, Deserialize)]
struct Hw {
    name: String,
    peak_tflops: f64,
    op_overhead_us: f64,
    dma_engines: u32,
    dma_setup_us: f64,
    levels: Vec<Level>,
}

#[derive(Serialize, Deserialize)]
struct Level {
    name: String,
    capacity: Option<Size>,
    read_gb_per_s: f64,
    write_gb_per_s: f64,
    alignment: u64,
}

#[derive(Serialize, Deserialize)]
enum Size {
    Bytes(u64),
    Text(String),
}

pub fn serialize<S: Serializer>(h: &HardwareFile, s: S) -> Result<S::Ok, S::Error> {
    if s.is_human_readable() {
        return h.serialize(s);
    }
    Hw {
        name: h.name.clone(),
        peak_tflops: h.peak_tflops,
        op_overhead_us: h.op_overhead_us,
        dma_engines: h.dma.engines,
        dma_setup_us: h.dma.setup_us,
        levels: h
            .levels
            .iter()
            .map(|l| Level {
                name: l.name.clone(),
                capacity: l.capacity.as_ref().map(|c| match c {
                    ByteSize::Bytes(b) => Size::Bytes(*b),
                    ByteSize::Text(t) => Size::Text(t.clone()),
                }),
                read_gb_per_s: l.read_gb_per_s,
                write_gb_per_s: l.write_gb_per_s,
                alignment: l.alignment,
            })
            .collect(),
    }
    .serialize(s)
}

pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<HardwareFile, D::Error> {
    if d.is_human_readable() {
        return HardwareFile::deserialize(d);
    }
    let h = Hw::deserialize(d)?;
    Ok(HardwareFile {
        name: h.name,
        peak_tflops: h.peak_tflops,
        op_overhead_us: h.op_overhead_us,
        dma: DmaFile {
            engines: h.dma_engines,
            setup_us: h.dma_setup_us,
        },
        levels: h
            .levels
            .into_iter()
            .map(|l| LevelFile {
                name: l.name,
                capacity: l.capacity.map(|c| match c {
                    Size::Bytes(b) => ByteSize::Bytes(b),
                    Size::Text(t) => ByteSize::Text(t),
                }),
                read_gb_per_s: l.read_gb_per_s,
                write_gb_per_s: l.write_gb_per_s,
                alignment: l.alignment,
            })
            .collect(),
    })
}
