//! Quick speed probe of random play (development aid; `mallocmuzero bench` reports the
//! official figures).
use malloc_game::{observation, GameOptions, GameSetup};
use std::sync::Arc;
use std::time::Instant;

fn main() {
    let p = Arc::new(bench_workloads::load("resnet50").unwrap());
    println!("resnet50: {} ops, {} buffers", p.len(), p.buffers().len());
    let hw = accel_sim::Hardware::tpu_v4i_like()
        .with_capacity(1, 16 << 20)
        .unwrap();
    let t0 = Instant::now();
    let setup = GameSetup::new(p, hw, GameOptions::default()).unwrap();
    println!("setup {:.1} ms", t0.elapsed().as_secs_f64() * 1e3);
    let mut x = 0x9E3779B97F4A7C15u64;
    for obs_on in [false, true] {
        let mut obs = vec![0f32; observation::observation_len(setup.options())];
        let t0 = Instant::now();
        let mut steps = 0;
        let mut eps = 0;
        let mut ret = 0.0;
        while t0.elapsed().as_secs_f64() < 2.0 {
            let mut g = setup.start();
            while !g.is_terminal() {
                if obs_on {
                    observation::encode(&g, &mut obs);
                }
                let legal = g.legal_actions();
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let a = legal[(x % legal.len() as u64) as usize];
                g.apply_action(a).unwrap();
                steps += 1;
            }
            ret += g.total_return();
            eps += 1;
        }
        let dt = t0.elapsed().as_secs_f64();
        println!(
            "obs={obs_on}: {:.0} steps/s, {:.1} episodes/s, mean return {:.4}",
            steps as f64 / dt,
            eps as f64 / dt,
            ret / eps as f64
        );
    }
}
