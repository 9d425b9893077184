//! What a search does: [`SearchConfig`] (with Gumbel's [`GumbelConfig`]), checked before
//! use.

/// Node indices are `u32`; this keeps `simulations + 1` and the considered-visit table far
/// from overflow while allowing any budget anyone would run.
pub const MAX_SIMULATIONS: usize = 1 << 24;

/// Gumbel MuZero's root parameters (defaults from the paper).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GumbelConfig {
    /// Actions sampled without replacement at the root (Gumbel top-k), then halved.
    pub max_considered: usize,
    /// `c_visit` of `sigma(q) = (c_visit + max visits) * c_scale * q`.
    pub c_visit: f32,
    /// `c_scale` of `sigma`. The paper uses 1.0; mctx's default `value_scale` is 0.1.
    pub c_scale: f32,
    /// Scale of the root Gumbel noise; 0 makes the search deterministic (evaluation).
    pub gumbel_scale: f32,
    /// The least range the completed Q values are rescaled over. mctx's `1e-8` (the
    /// default) stretches any two distinct values to span `[0, 1]`, so where the values
    /// differ by their own noise (a game of thousands of turns, each moving the return by about 1e-4)
    /// that noise outweighs the policy; a floor keeps such differences as small as they
    /// are against it.
    pub min_q_range: f32,
}

impl Default for GumbelConfig {
    fn default() -> Self {
        Self {
            max_considered: 16,
            c_visit: 50.0,
            c_scale: 1.0,
            gumbel_scale: 1.0,
            min_q_range: 1e-8,
        }
    }
}

/// What a search does. `check` before use; [`search`](super::search) checks it too.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SearchConfig {
    /// Simulations per root (one model call each, over all roots): at least 1.
    pub simulations: usize,
    /// Discount of rewards and values inside the tree; 1.0 for the finite game.
    pub discount: f32,
    /// pUCT's `c1`.
    pub pb_c_init: f32,
    /// pUCT's `c2`.
    pub pb_c_base: f32,
    /// Concentration of the root Dirichlet noise (pUCT only).
    pub dirichlet_alpha: f32,
    /// Weight of the root Dirichlet noise in the priors (pUCT only); 0 turns it off.
    pub dirichlet_fraction: f32,
    /// pUCT action choice: 0 plays the most visited action, `T > 0` samples from
    /// `visits^(1/T)`. Gumbel ignores it (its root noise already explores).
    pub temperature: f32,
    /// `Some` runs Gumbel MuZero's root instead of pUCT's.
    pub gumbel: Option<GumbelConfig>,
}

impl Default for SearchConfig {
    fn default() -> Self {
        Self {
            simulations: 32,
            discount: 1.0,
            pb_c_init: 1.25,
            pb_c_base: 19652.0,
            dirichlet_alpha: 0.3,
            dirichlet_fraction: 0.25,
            temperature: 0.0,
            gumbel: None,
        }
    }
}

impl SearchConfig {
    /// This config with every source of randomness off, for evaluation games: no Dirichlet
    /// noise, greedy action choice, no Gumbel noise.
    pub fn deterministic(&self) -> Self {
        let mut c = self.clone();
        c.dirichlet_fraction = 0.0;
        c.temperature = 0.0;
        if let Some(g) = &mut c.gumbel {
            g.gumbel_scale = 0.0;
        }
        c
    }

    /// Checks every field; the error names the first bad one and its value.
    pub fn check(&self) -> Result<(), String> {
        if self.simulations == 0 || self.simulations > MAX_SIMULATIONS {
            return Err(format!(
                "search.simulations = {}: must be in 1..={MAX_SIMULATIONS}",
                self.simulations
            ));
        }
        // Written as negated ranges so NaN fails every check.
        if !(self.discount > 0.0 && self.discount <= 1.0) {
            return Err(format!(
                "search.discount = {}: must be in (0, 1]",
                self.discount
            ));
        }
        if !(self.pb_c_init >= 0.0 && self.pb_c_init.is_finite()) {
            return Err(format!(
                "search.pb_c_init = {}: must be finite and >= 0",
                self.pb_c_init
            ));
        }
        if !(self.pb_c_base > 0.0 && self.pb_c_base.is_finite()) {
            return Err(format!(
                "search.pb_c_base = {}: must be finite and > 0",
                self.pb_c_base
            ));
        }
        if !(self.dirichlet_fraction >= 0.0 && self.dirichlet_fraction <= 1.0) {
            return Err(format!(
                "search.dirichlet_fraction = {}: must be in [0, 1]",
                self.dirichlet_fraction
            ));
        }
        let alpha_ok = self.dirichlet_alpha > 0.0 && self.dirichlet_alpha.is_finite();
        if self.dirichlet_fraction > 0.0 && !alpha_ok {
            return Err(format!(
                "search.dirichlet_alpha = {}: must be finite and > 0 when dirichlet_fraction > 0",
                self.dirichlet_alpha
            ));
        }
        if !(self.temperature >= 0.0 && self.temperature.is_finite()) {
            return Err(format!(
                "search.temperature = {}: must be finite and >= 0",
                self.temperature
            ));
        }
        if let Some(g) = &self.gumbel {
            if g.max_considered == 0 {
                return Err("search.gumbel.max_considered = 0: must be at least 1".into());
            }
            for (name, v) in [
                ("c_visit", g.c_visit),
                ("c_scale", g.c_scale),
                ("gumbel_scale", g.gumbel_scale),
            ] {
                if !(v >= 0.0 && v.is_finite()) {
                    return Err(format!(
                        "search.gumbel.{name} = {v}: must be finite and >= 0"
                    ));
                }
            }
            if !(g.min_q_range > 0.0 && g.min_q_range.is_finite()) {
                return Err(format!(
                    "search.gumbel.min_q_range = {}: must be finite and > 0",
                    g.min_q_range
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_names_the_bad_field() {
        let ok = SearchConfig::default();
        assert_eq!(ok.check(), Ok(()));
        let cases: Vec<(SearchConfig, &str)> = vec![
            (
                SearchConfig {
                    simulations: 0,
                    ..ok.clone()
                },
                "search.simulations = 0",
            ),
            (
                SearchConfig {
                    discount: 0.0,
                    ..ok.clone()
                },
                "search.discount = 0",
            ),
            (
                SearchConfig {
                    discount: f32::NAN,
                    ..ok.clone()
                },
                "search.discount = NaN",
            ),
            (
                SearchConfig {
                    pb_c_base: -1.0,
                    ..ok.clone()
                },
                "search.pb_c_base = -1",
            ),
            (
                SearchConfig {
                    dirichlet_fraction: 1.5,
                    ..ok.clone()
                },
                "search.dirichlet_fraction = 1.5",
            ),
            (
                SearchConfig {
                    dirichlet_alpha: 0.0,
                    ..ok.clone()
                },
                "search.dirichlet_alpha = 0",
            ),
            (
                SearchConfig {
                    temperature: -1.0,
                    ..ok.clone()
                },
                "search.temperature = -1",
            ),
            (
                SearchConfig {
                    gumbel: Some(GumbelConfig {
                        max_considered: 0,
                        ..Default::default()
                    }),
                    ..ok.clone()
                },
                "search.gumbel.max_considered = 0",
            ),
            (
                SearchConfig {
                    gumbel: Some(GumbelConfig {
                        c_visit: f32::INFINITY,
                        ..Default::default()
                    }),
                    ..ok.clone()
                },
                "search.gumbel.c_visit = inf",
            ),
            (
                SearchConfig {
                    gumbel: Some(GumbelConfig {
                        min_q_range: 0.0,
                        ..Default::default()
                    }),
                    ..ok.clone()
                },
                "search.gumbel.min_q_range = 0",
            ),
        ];
        for (c, want) in cases {
            let e = c.check().unwrap_err();
            assert!(e.starts_with(want), "{e:?} should start with {want:?}");
        }
        // Alpha does not matter with the noise off.
        assert_eq!(
            SearchConfig {
                dirichlet_alpha: 0.0,
                dirichlet_fraction: 0.0,
                ..ok.clone()
            }
            .check(),
            Ok(())
        );
        let d = SearchConfig {
            gumbel: Some(GumbelConfig::default()),
            temperature: 1.0,
            ..ok
        }
        .deterministic();
        assert_eq!(
            (
                d.dirichlet_fraction,
                d.temperature,
                d.gumbel.unwrap().gumbel_scale
            ),
            (0.0, 0.0, 0.0)
        );
    }

    #[test]
    fn config_json_fills_defaults_and_rejects_unknown_fields() {
        let c: SearchConfig =
            serde_json::from_str(r#"{"simulations": 8, "gumbel": {"c_scale": 0.1}}"#).unwrap();
        assert_eq!(c.simulations, 8);
        assert_eq!(
            c.gumbel,
            Some(GumbelConfig {
                c_scale: 0.1,
                ..Default::default()
            })
        );
        assert_eq!(c.pb_c_base, 19652.0);
        assert!(serde_json::from_str::<SearchConfig>(r#"{"simulation": 8}"#).is_err());
    }
}
