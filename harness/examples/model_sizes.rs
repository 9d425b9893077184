//! The size of each program's whole exact model, and whether the pipeline builds it with
//! this build's backend at a budget (its MIP share, a quarter of the budget where windows
//! may follow): docs/exact.md, "Scale".
//!
//! `cargo run --release -p harness --example model_sizes -- HW CAPACITY BUDGET WORKLOAD...`
//! (CAPACITY `-`: the case's own)
use harness::exact_run::WINDOWED_MIP_SHARE;
use harness::Case;

fn main() -> anyhow::Result<()> {
    let a: Vec<String> = std::env::args().collect();
    anyhow::ensure!(
        a.len() >= 5,
        "usage: model_sizes HW CAPACITY BUDGET WORKLOAD..."
    );
    let budget: f64 = a[3].parse()?;
    let share = budget * WINDOWED_MIP_SHARE;
    println!(
        "backend {}; the whole model is built within {share} s of a {budget} s budget when:",
        exact::BACKEND
    );
    println!("| workload | holds | nonzeros | chained groups | built |");
    println!("|---|---:|---:|---:|---|");
    for w in &a[4..] {
        let capacity = (a[2] != "-").then_some(a[2].as_str());
        let case = Case::named(Some(w), Some(&a[1]), capacity)?;
        let size = exact::model_size(&case.program, &case.hw, exact::Objective::Simulated);
        println!(
            "| {w} | {} | {} | {} | {} |",
            size.holds,
            size.nonzeros,
            size.chained,
            if size.built_within(share) {
                "yes"
            } else {
                "no"
            }
        );
    }
    Ok(())
}
