//! Makes a guide's network from the local search's move outcomes (`malloc_muzero::
//! collect_outcomes`, `train_on_outcomes`), in two steps so that one collection serves
//! several trainings:
//!
//! - `guide_outcomes -- collect MOVES SEEDS OUT`: the local search, MOVES per chain on 2
//!   chains, seeds 0..SEEDS, on every training case of the bundled generalist
//!   (`generalist::training_cases`: no validation or held-out family), keeping the moves
//!   that made a line faster, into OUT; `collect MOVES SEEDS OUT HW`: each training
//!   workload on hardware HW instead, every fast level (read one pass at a time where the
//!   network learned one).
//! - `guide_outcomes -- train CONFIG OUT.safetensors DATA...`: the bundled generalist with
//!   its policy fitted to the outcomes of the DATA files, in order (CONFIG:
//!   `OutcomeTraining` as JSON, `{}` for the defaults).
//!
//! `guide_ablation` then measures a network so made (`weights=PATH`).

use accel_sim::Hardware;
use malloc_game::anytime::Incumbent;
use malloc_game::GameOptions;
use malloc_muzero::{
    collect_outcomes, generalist, train_on_outcomes, GuideKind, GuidedSearch, Outcome,
    OutcomeTraining,
};
use std::io::{BufReader, BufWriter, Read, Write};
use std::sync::Arc;
use std::time::Instant;

type Error = Box<dyn std::error::Error>;

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["collect", moves, seeds, out] => collect(moves.parse()?, seeds.parse()?, out, None),
        ["collect", moves, seeds, out, hw] => {
            collect(moves.parse()?, seeds.parse()?, out, Some(hw))
        }
        ["train", config, out, data @ ..] if !data.is_empty() => train(data, config, out),
        _ => Err(
            "usage: guide_outcomes collect MOVES SEEDS OUT [HW] | train CONFIG OUT DATA...".into(),
        ),
    }
}

fn collect(moves: usize, seeds: u64, out: &str, on: Option<&str>) -> Result<(), Error> {
    let search = GuidedSearch::new(GuideKind::Bundled, 0)?;
    let mut all: Vec<Outcome> = Vec::new();
    let mut cases = generalist::training_cases();
    if let Some(hw) = on {
        // Each training workload once, on `hw` as it comes (every fast level).
        cases.dedup_by(|a, b| a.workload == b.workload);
        for c in &mut cases {
            c.hw = Some(hw.to_string());
            c.fast_capacity = None;
        }
    }
    for case in cases {
        let program = Arc::new(bench_workloads::load(&case.workload)?);
        let mut hw = Hardware::by_name_or_file(case.hw.as_deref().unwrap_or("tpu-v4i-like"))?;
        if let Some(cap) = &case.fast_capacity {
            hw = hw.with_capacity_spec(cap)?;
        }
        let options = GameOptions {
            fast_levels: hw.levels.len() - 1,
            ..GameOptions::default()
        };
        let setup = search.setup(&program, &hw, &options)?;
        let (_, view) = search.rules_for(setup.options());
        let t0 = Instant::now();
        let before = all.len();
        for seed in 0..seeds {
            let incumbent = Incumbent::new(Instant::now());
            all.extend(collect_outcomes(&setup, view, seed, moves, 2, &incumbent));
        }
        eprintln!(
            "{} {}: {} outcomes in {:.1} s",
            case.workload,
            case.fast_capacity.as_deref().unwrap_or(""),
            all.len() - before,
            t0.elapsed().as_secs_f64()
        );
    }
    write_outcomes(out, &all)?;
    eprintln!("{} outcomes -> {out}", all.len());
    Ok(())
}

fn train(data: &[&str], config: &str, out: &str) -> Result<(), Error> {
    let mut outcomes = Vec::new();
    for d in data {
        outcomes.extend(read_outcomes(d)?);
    }
    let config: OutcomeTraining = serde_json::from_str(config)?;
    config.check()?;
    let net = generalist::network()?;
    let t0 = Instant::now();
    let losses = train_on_outcomes(&net, &outcomes, &config, 0)?;
    eprintln!(
        "{} outcomes, policy loss by epoch {losses:?}, {:.1} s",
        outcomes.len(),
        t0.elapsed().as_secs_f64()
    );
    net.save(std::path::Path::new(out))?;
    Ok(())
}

/// Outcomes as little-endian numbers: the count and observation length (u64 each), then
/// per outcome its action (u32), change (f32) and observation (f32s).
fn write_outcomes(path: &str, outcomes: &[Outcome]) -> Result<(), Error> {
    let tmp = format!("{path}.tmp");
    let mut w = BufWriter::new(std::fs::File::create(&tmp)?);
    let len = outcomes.first().map_or(0, |o| o.observation.len());
    w.write_all(&(outcomes.len() as u64).to_le_bytes())?;
    w.write_all(&(len as u64).to_le_bytes())?;
    for o in outcomes {
        w.write_all(&(o.action as u32).to_le_bytes())?;
        w.write_all(&o.change.to_le_bytes())?;
        for x in o.observation.iter() {
            w.write_all(&x.to_le_bytes())?;
        }
    }
    w.into_inner()?.sync_all()?;
    std::fs::rename(tmp, path)?;
    Ok(())
}

fn read_outcomes(path: &str) -> Result<Vec<Outcome>, Error> {
    let mut r = BufReader::new(std::fs::File::open(path)?);
    let mut word = [0u8; 8];
    let mut half = [0u8; 4];
    r.read_exact(&mut word)?;
    let n = u64::from_le_bytes(word) as usize;
    r.read_exact(&mut word)?;
    let len = u64::from_le_bytes(word) as usize;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        r.read_exact(&mut half)?;
        let action = u32::from_le_bytes(half) as usize;
        r.read_exact(&mut half)?;
        let change = f32::from_le_bytes(half);
        let mut observation = vec![0.0f32; len];
        for x in observation.iter_mut() {
            r.read_exact(&mut half)?;
            *x = f32::from_le_bytes(half);
        }
        out.push(Outcome {
            observation: observation.into_boxed_slice(),
            action,
            change,
        });
    }
    Ok(out)
}
