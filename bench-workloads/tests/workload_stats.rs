//! Every embedded traced model parses, and the figures the Python exporter computed on its
//! side (`stats`) agree with what the Rust IR derives from the same ops and buffers: a
//! check that both sides use the same live-range definitions.

use accel_sim::BufferKind;
use bench_workloads::json::{parse_file, EMBEDDED};

#[test]
fn embedded_stats_match_the_rust_ir() {
    assert_eq!(EMBEDDED.len(), 15);
    stats_match(EMBEDDED.iter().map(|(n, t)| (n.to_string(), t.to_string())));
}

/// The held-out models (never embedded, never trained on: the generalist's evaluation)
/// are traced by the same exporter and must agree the same way.
#[test]
fn held_out_stats_match_the_rust_ir() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("heldout");
    let mut files: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    files.sort();
    assert_eq!(files.len(), 6);
    stats_match(files.into_iter());
}

fn stats_match(files: impl Iterator<Item = (String, String)>) {
    for (name, text) in files {
        let (name, text) = (&name, text.as_str());
        let file = parse_file(text, name).unwrap_or_else(|e| panic!("{e}"));
        let program = file.to_program(name).unwrap_or_else(|e| panic!("{e}"));
        let stats = file
            .stats
            .as_ref()
            .unwrap_or_else(|| panic!("{name}: no stats"));
        assert_eq!(program.name(), *name);
        assert_eq!(program.len(), stats.ops, "{name}: ops");
        assert_eq!(program.buffers().len(), stats.buffers, "{name}: buffers");
        let flops = program.total_flops();
        assert!(
            (flops - stats.total_flops).abs() <= 1e-9 * stats.total_flops,
            "{name}: total_flops {flops} vs file {}",
            stats.total_flops
        );
        assert_eq!(
            program.peak_live_bytes(),
            stats.peak_live_bytes,
            "{name}: peak_live_bytes"
        );
        let weights: u64 = program
            .buffers()
            .iter()
            .filter(|b| b.kind == BufferKind::Weight)
            .map(|b| b.size)
            .sum();
        assert_eq!(weights, stats.weight_bytes, "{name}: weight_bytes");
        // A traced model has real work and parameters, and ends in an output.
        assert!(
            stats.total_flops > 1e9,
            "{name}: {} FLOPs",
            stats.total_flops
        );
        assert!(program
            .buffers()
            .iter()
            .any(|b| b.kind == BufferKind::Output));
        assert!(program
            .buffers()
            .iter()
            .any(|b| b.kind == BufferKind::Input));
    }
}

#[test]
fn embedded_files_record_their_origin() {
    for (name, text) in EMBEDDED {
        let file = parse_file(text, name).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            file.description.len() > 40,
            "{name}: description too short: {:?}",
            file.description
        );
        assert!(
            file.description.contains("views aliased"),
            "{name}: description does not say which ops are aliased"
        );
        let source = file
            .source
            .as_ref()
            .unwrap_or_else(|| panic!("{name}: no source"));
        assert_eq!(
            source.generator.as_deref(),
            Some("scripts/export_workloads.py"),
            "{name}"
        );
        for (field, version) in [
            ("torch", &source.torch),
            ("torchvision", &source.torchvision),
            ("transformers", &source.transformers),
        ] {
            let v = version
                .as_deref()
                .unwrap_or_else(|| panic!("{name}: source.{field} missing"));
            assert!(
                v.split('.').count() == 3 && v.split('.').all(|p| p.parse::<u32>().is_ok()),
                "{name}: source.{field} = {v:?} is not a version"
            );
        }
        assert_eq!(source.dtype_bytes, Some(2), "{name}: dtype_bytes");
    }
}

#[test]
fn embedded_models_load_by_name() {
    let p = bench_workloads::load("resnet50").unwrap();
    // 53 convolutions, 53 batch norms, 49 relus, 16 residual adds, max pool, mean, fc.
    assert_eq!(p.len(), 174);
    assert_eq!(
        p.ops()
            .iter()
            .filter(|o| o.kind == "_native_batch_norm_legit_no_training")
            .count(),
        53
    );
    let bert = bench_workloads::load("bert-base-s128").unwrap();
    assert_eq!(
        bert.ops()
            .iter()
            .filter(|o| o.kind == "scaled_dot_product_attention")
            .count(),
        12
    );
}
