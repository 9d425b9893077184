//! Trains the learned start's predictor on a solution pool (built by
//! `cargo run --release -p harness --example solution_pool -- POOL`):
//!
//!     cargo run --release -p malloc-muzero --example train_start -- POOL OUT.safetensors \
//!         [--epochs 40] [--seed 0] [--json METRICS.json]
//!
//! Every fifth program of the pool is held back for validation (all its cases). Prints
//! each epoch's training loss and validation metrics, and the same metrics of two
//! baselines' guesses (xla's and greedy-size's fast uses); writes the predictor
//! atomically, and with `--json` the metrics.

use malloc_muzero::start::pool::Pool;
use malloc_muzero::start::train::{
    metrics, samples, train, validation_programs, Metrics, StartTraining,
};
use std::path::PathBuf;
use std::process::ExitCode;

fn run(args: Vec<String>) -> Result<(), String> {
    let mut it = args.into_iter();
    let dir = PathBuf::from(it.next().ok_or("POOL is required")?);
    let out = PathBuf::from(it.next().ok_or("OUT.safetensors is required")?);
    let mut config = StartTraining::default();
    let mut json = None;
    while let Some(flag) = it.next() {
        let v = it.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--epochs" => config.epochs = v.parse().map_err(|e| format!("--epochs {v}: {e}"))?,
            "--seed" => config.seed = v.parse().map_err(|e| format!("--seed {v}: {e}"))?,
            "--json" => json = Some(PathBuf::from(v)),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    let pool = Pool::read(&dir).map_err(|e| e.to_string())?;
    let held = validation_programs(&pool);
    let within = config.within;
    let train_rows = samples(&pool, &dir, within, |p| !held.iter().any(|h| h == p))
        .map_err(|e| e.to_string())?;
    let val_rows =
        samples(&pool, &dir, within, |p| held.iter().any(|h| h == p)).map_err(|e| e.to_string())?;
    eprintln!(
        "training: {} cases, {} rows; validation: {} cases, {} rows ({} programs: {})",
        train_rows.cases,
        train_rows.len(),
        val_rows.cases,
        val_rows.len(),
        held.len(),
        held.join(", ")
    );
    let xla = metrics(&val_rows.xla, &val_rows);
    let greedy = metrics(&val_rows.greedy_size, &val_rows);
    let show = |name: &str, m: &Metrics| {
        eprintln!(
            "{name}: bce {:.4}, accuracy {:.4}, auc {:.4}, predicted {} of {} rows ({} positive)",
            m.bce, m.accuracy, m.auc, m.predicted, m.rows, m.positives
        )
    };
    show("xla's guess", &xla);
    show("greedy-size's guess", &greedy);
    let mut epochs = Vec::new();
    let predictor = train(&config, &train_rows, &val_rows, &mut |e| {
        eprintln!(
            "epoch {:>3}: train loss {:.4}; validation bce {:.4}, accuracy {:.4}, auc {:.4}",
            e.epoch, e.train_loss, e.validation.bce, e.validation.accuracy, e.validation.auc
        );
        epochs.push(e.clone());
    })
    .map_err(|e| e.to_string())?;
    let bytes = predictor.to_bytes().map_err(|e| e.to_string())?;
    binio::write_bytes_atomic(&out, &bytes).map_err(|e| format!("{}: {e}", out.display()))?;
    if let Some(path) = json {
        let text = serde_json::to_string_pretty(&serde_json::json!({
            "config": config,
            "validation_programs": held,
            "train_rows": train_rows.len(),
            "validation_rows": val_rows.len(),
            "baselines": {"xla": xla, "greedy-size": greedy},
            "epochs": epochs,
        }))
        .map_err(|e| e.to_string())?;
        binio::write_bytes_atomic(&path, text.as_bytes())
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    eprintln!("wrote {}", out.display());
    Ok(())
}

fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("train_start: {e}");
            ExitCode::from(2)
        }
    }
}
