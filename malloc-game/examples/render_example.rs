//! Plays the mallocGame greedily on a workload and draws the memory map and the latency
//! timeline of the result.
//!
//! Usage: `render_example [WORKLOAD] [FAST_MIB] [OUT_DIR]`
//! (defaults: `resnet50`, `16`, `docs/img` at the repository root). Writes
//! `OUT_DIR/WORKLOAD-map.svg` and `OUT_DIR/WORKLOAD-timeline.svg`.
//!
//! The greedy player takes, at each turn, the legal action with the smallest cost-model
//! delta (action 0 counts as 0.0, so a placement must promise a gain to be taken).

use accel_sim::{Hardware, Simulator};
use malloc_game::render::{memory_map_svg, timeline_svg, MapLegend};
use malloc_game::{Game, GameOptions, GameSetup};
use std::error::Error;
use std::path::PathBuf;
use std::sync::Arc;

fn greedy_action(game: &Game) -> usize {
    let mut best = (0usize, 0.0f64);
    game.for_each_legal(|action, _alloc, _gap| {
        let delta = game.cost_delta(action);
        if delta < best.1 {
            best = (action, delta);
        }
    });
    best.0
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let workload = args.first().map_or("resnet50", String::as_str);
    let fast_mib: u64 = match args.get(1) {
        Some(s) => s
            .parse()
            .map_err(|e| format!("argument FAST_MIB: `{s}` is not a whole number: {e}"))?,
        None => 16,
    };
    let out_dir = args.get(2).map_or_else(
        || PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/img")),
        PathBuf::from,
    );

    let program = Arc::new(bench_workloads::load(workload)?);
    let hw = Hardware::tpu_v4i_like().with_capacity(1, fast_mib << 20)?;
    let setup = GameSetup::new(Arc::clone(&program), hw.clone(), GameOptions::default())?;
    let mut game = setup.start();
    while !game.is_terminal() {
        let action = greedy_action(&game);
        game.apply_action(action)?;
    }
    let mapping = game.mapping();
    mapping
        .validate(&program, &hw)
        .map_err(|e| format!("the greedy mapping is invalid: {e}"))?;
    let report = Simulator::new(&program, &hw).run(&mapping, true);
    let legend = MapLegend {
        workload: program.name().to_string(),
        hardware: format!("{} ({fast_mib} MiB {})", hw.name, hw.levels[1].name),
        solver: "game, greedy on the cost-model delta".into(),
        latency_s: Some(report.latency_s),
    };

    std::fs::create_dir_all(&out_dir)
        .map_err(|e| format!("{}: cannot create: {e}", out_dir.display()))?;
    let map_path = out_dir.join(format!("{workload}-map.svg"));
    let timeline_path = out_dir.join(format!("{workload}-timeline.svg"));
    let map = memory_map_svg(&program, &hw, &mapping, &legend);
    let timeline = timeline_svg(&program, &report, &legend);
    for (path, text) in [(&map_path, &map), (&timeline_path, &timeline)] {
        std::fs::write(path, text).map_err(|e| format!("{}: cannot write: {e}", path.display()))?;
        println!("wrote {} ({} bytes)", path.display(), text.len());
    }
    println!(
        "{workload}: all-slow {:.1} us, greedy {:.1} us (return {:.4}), stall {:.1} us",
        setup.all_slow_latency() * 1e6,
        report.latency_s * 1e6,
        game.total_return(),
        report.stall_s * 1e6
    );
    Ok(())
}
