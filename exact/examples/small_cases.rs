//! Proves the optimum of every small case (`bench_workloads::small`) again and prints the
//! time to prove it, the checked-in optimum's agreement, and the lines of the case table.
//!
//! `cargo run --release -p exact --example small_cases` (`-- list`: the cases alone, one
//! `workload hardware capacity` line each, for scripts).

fn main() {
    let list = std::env::args().nth(1).is_some_and(|a| a == "list");
    for c in bench_workloads::small::cases() {
        if list {
            println!("{} {} {}", c.workload, c.hardware, c.fast_capacity);
            continue;
        }
        let program = bench_workloads::load(c.workload).unwrap();
        let hw = c.hardware();
        let s = exact::Exact::default().solve_proven(&program, &hw).unwrap();
        let agrees = (s.latency_s - c.optimum_s).abs() <= 1e-9 * c.optimum_s;
        println!(
            "{:<24} {:<13} {:>3} buffers  optimum {:.3} us  {:?} in {:.3} s ({} candidates, {} models)  checked in: {}",
            c.workload,
            c.hardware,
            program.buffers().len(),
            s.latency_s * 1e6,
            s.status,
            s.solve_s,
            s.candidates,
            s.rounds,
            if agrees { "same" } else { "DIFFERENT" },
        );
        println!(
            "        c(\"{}\", \"{}\", {}, {:e}),",
            c.workload, c.hardware, c.fast_capacity, s.latency_s
        );
    }
}
