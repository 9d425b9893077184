//! The noise draws: Gumbel noise for Gumbel MuZero's root, Gamma draws for pUCT's
//! Dirichlet noise; from the search's own rng, so a seed fixes a search.

use rand::Rng;

/// A uniform draw in the open interval (0, 1): 53 random bits, offset by half a step.
fn open_unit<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    ((rng.random::<u64>() >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
}

/// A standard Gumbel(0, 1) draw.
pub(super) fn sample_gumbel<R: Rng + ?Sized>(rng: &mut R) -> f32 {
    -(-open_unit(rng).ln()).ln() as f32
}

/// A standard normal draw (Box-Muller).
fn sample_normal<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    let (u1, u2) = (open_unit(rng), open_unit(rng));
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// A Gamma(alpha, 1) draw (Marsaglia and Tsang; alpha < 1 by the `U^(1/alpha)` boost).
pub(super) fn sample_gamma<R: Rng + ?Sized>(alpha: f64, rng: &mut R) -> f64 {
    if alpha < 1.0 {
        let u = open_unit(rng);
        return sample_gamma(alpha + 1.0, rng) * u.powf(1.0 / alpha);
    }
    let d = alpha - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = sample_normal(rng);
        let v = 1.0 + c * x;
        if v <= 0.0 {
            continue;
        }
        let v = v * v * v;
        let u = open_unit(rng);
        if u < 1.0 - 0.0331 * x.powi(4) || u.ln() < 0.5 * x * x + d * (1.0 - v + v.ln()) {
            return d * v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    #[test]
    fn noise_samplers_have_the_right_means() {
        let mut rng = StdRng::seed_from_u64(7);
        let n = 40_000;
        let gumbel: f64 = (0..n).map(|_| sample_gumbel(&mut rng) as f64).sum::<f64>() / n as f64;
        assert!((gumbel - 0.5772).abs() < 0.03, "Gumbel mean {gumbel}");
        for alpha in [0.3, 1.0, 2.5] {
            let mean: f64 = (0..n).map(|_| sample_gamma(alpha, &mut rng)).sum::<f64>() / n as f64;
            assert!(
                (mean - alpha).abs() < 0.04 * alpha.max(1.0),
                "Gamma({alpha}) mean {mean}"
            );
        }
    }
}
