//! The scale tier: every program loads by name, is the size the tier promises (500 to
//! 20,000 ops, at least 3 over 1,500), carries its weights, and agrees with XLA's own
//! figures recorded when it was exported (FLOPs against `cost_analysis()`, peak live bytes
//! against `memory_analysis()`). `--nocapture` prints the table of docs/workloads.md.

use accel_sim::BufferKind;
use bench_workloads::scale;
use std::io::Write;
use std::time::Instant;

#[test]
fn every_scale_program_loads_at_its_size_and_agrees_with_xla() {
    let manifest = scale::manifest();
    let mut over_1500 = 0;
    for entry in &manifest.programs {
        let t = Instant::now();
        let p = bench_workloads::load(&entry.name).unwrap_or_else(|e| panic!("{e}"));
        let load_s = t.elapsed().as_secs_f64();
        let weights: Vec<_> = p
            .buffers()
            .iter()
            .filter(|b| b.kind == BufferKind::Weight)
            .collect();
        let xla = &entry.xla;
        let flops = p.total_flops() / (xla.flops + xla.transcendentals);
        let xla_peak = xla.argument_bytes + xla.output_bytes - xla.alias_bytes + xla.temp_bytes;
        let peak = p.peak_live_bytes() as f64 / xla_peak as f64;
        println!(
            "{}: {} ops, {} buffers, {:.1} GFLOPs ({flops:.4} of XLA's), peak {} B ({peak:.3} of XLA's), {} weights, loaded in {load_s:.2} s",
            entry.name,
            p.len(),
            p.buffers().len(),
            p.total_flops() / 1e9,
            p.peak_live_bytes(),
            weights.len()
        );
        assert_eq!(p.name(), entry.name);
        assert!(p.description().starts_with(&entry.description));
        assert!(
            (500..=20_000).contains(&p.len()),
            "{}: {} ops",
            entry.name,
            p.len()
        );
        over_1500 += usize::from(p.len() > 1500);
        assert!(weights.len() >= entry.weights, "{}", entry.name);
        assert!(p.buffers().iter().any(|b| b.kind == BufferKind::Output));
        // The scheduled module's FLOPs are XLA's; before optimization XLA counts the
        // program it rewrote (1-2% fewer here), as for the bundled programs.
        let tolerance = if entry.stage == "optimized" {
            1e-3
        } else {
            0.03
        };
        assert!(
            (flops - 1.0).abs() <= tolerance,
            "{}: FLOPs {flops}",
            entry.name
        );
        // XLA's peak is a packed heap that can write an elementwise op in place; the IR
        // frees an argument after its last read: the two stay close.
        assert!((0.8..=1.15).contains(&peak), "{}: peak {peak}", entry.name);
    }
    assert!(manifest.programs.len() >= 10);
    assert!(over_1500 >= 3, "{over_1500} programs over 1,500 ops");
}

#[test]
fn a_gzipped_hlo_file_loads_like_its_text() {
    let dir = std::env::temp_dir().join(format!("mmz-scale-tier-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = "HloModule m\n\nENTRY %main (x: f32[4,8]) -> f32[4,8] {\n  %x = f32[4,8]{1,0} parameter(0)\n  ROOT %y = f32[4,8]{1,0} exponential(f32[4,8]{1,0} %x)\n}\n";
    let plain = dir.join("tiny.hlo.txt");
    std::fs::write(&plain, text).unwrap();
    let packed = dir.join("tiny.hlo.txt.gz");
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(text.as_bytes()).unwrap();
    std::fs::write(&packed, e.finish().unwrap()).unwrap();
    let a = bench_workloads::load(plain.to_str().unwrap()).unwrap();
    let b = bench_workloads::load(packed.to_str().unwrap()).unwrap();
    assert_eq!(b.name(), "tiny");
    assert_eq!(a.content_hash(), b.content_hash());
    // Not gzip: one error naming the file.
    let bad = dir.join("bad.hlo.gz");
    std::fs::write(&bad, text).unwrap();
    let e = bench_workloads::load(bad.to_str().unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&format!("{}: not gzip-compressed text", bad.display())),
        "{e}"
    );
    let missing = dir.join("missing.hlo.txt.gz");
    let e = bench_workloads::load(missing.to_str().unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&format!("{}: cannot read", missing.display())),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn scale_workloads_are_built_in_but_not_in_the_standard_list() {
    for name in scale::names() {
        assert!(bench_workloads::is_builtin(name));
        assert!(!bench_workloads::names().contains(&name));
    }
    assert!(bench_workloads::is_builtin("resnet50"));
    assert!(!bench_workloads::is_builtin("nope"));
    let e = bench_workloads::load("nope").unwrap_err().to_string();
    assert!(e.contains("the scale tier: jax-gpt-12l-train"), "{e}");
}
