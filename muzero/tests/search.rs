//! The batched search on toy games: with an exact model it plays optimally; on any model it
//! respects root legality, budgets and seeds, and calls the model in lockstep.

use std::sync::atomic::{AtomicUsize, Ordering};

use muzero::toy::{ChainGame, DelayedGame, EnvironmentModel, RandomModel};
use muzero::Environment;
use muzero::{search, GumbelConfig, SearchConfig, SearchOutput, Searcher};
use muzero::{Model, ModelError, ModelOutput};
use rand::rngs::StdRng;
use rand::SeedableRng;

fn puct(simulations: usize) -> SearchConfig {
    SearchConfig {
        simulations,
        ..Default::default()
    }
}

fn gumbel(simulations: usize) -> SearchConfig {
    SearchConfig {
        simulations,
        gumbel: Some(GumbelConfig::default()),
        ..Default::default()
    }
}

/// Plays one game, searching before every move with an exact model; returns the return.
fn play<E: Environment>(env: &E, config: &SearchConfig, seed: u64) -> f32 {
    let mut env = env.clone();
    let model = EnvironmentModel::new(&env);
    let mut rng = StdRng::seed_from_u64(seed);
    let (mut obs, mut legal) = (
        vec![0.0; env.observation_len()],
        vec![false; env.action_count()],
    );
    let mut total = 0.0;
    while !env.is_terminal() {
        model.register(&env);
        env.observe(&mut obs);
        env.legal_mask(&mut legal);
        let out = search(&model, &obs, &legal, 1, config, &mut rng).unwrap();
        assert!(
            legal[out[0].action],
            "played illegal action {}",
            out[0].action
        );
        total += env.apply(out[0].action).unwrap();
        model.clear();
    }
    total
}

#[test]
fn puct_with_an_exact_model_plays_the_chain_game_optimally() {
    for seed in 0..4 {
        let game = ChainGame::new(5, 4, seed).unwrap().with_wrong_reward(-0.1);
        assert_eq!(
            play(&game, &puct(64), seed),
            game.optimal_return(),
            "seed {seed}"
        );
    }
}

#[test]
fn gumbel_with_an_exact_model_plays_the_chain_game_optimally() {
    for seed in 0..4 {
        let game = ChainGame::new(5, 4, seed).unwrap();
        assert_eq!(
            play(&game, &gumbel(32), seed),
            game.optimal_return(),
            "seed {seed}"
        );
    }
}

#[test]
fn exact_search_finds_a_reward_paid_only_at_the_end() {
    // 3 steps x 3 actions: 27 outcomes, all rewards at the last step; the value is 0
    // everywhere, so only search down to the end can see which first move is best.
    // pUCT scores unvisited children 0 (the tree's minimum, as MuZero does), so it sticks
    // to the first branch that paid anything and needs a large budget to leave it (with
    // 64 simulations it plays this optimally for 3 seeds of 10); Gumbel's halving
    // compares every first move and needs few.
    for seed in 0..4 {
        let game = DelayedGame::new(3, 3, seed).unwrap();
        let best = game.optimal_return();
        let got = play(&game, &puct(1000).deterministic(), seed);
        assert!(
            (got - best).abs() < 1e-5,
            "pUCT seed {seed}: {got} vs {best}"
        );
        let got = play(&game, &gumbel(32), seed);
        assert!(
            (got - best).abs() < 1e-5,
            "Gumbel seed {seed}: {got} vs {best}"
        );
    }
}

/// Eight roots of 6 actions with different masks, one with a single legal action.
fn masks() -> Vec<bool> {
    let rows: [[u8; 6]; 8] = [
        [1, 1, 1, 1, 1, 1],
        [0, 1, 1, 1, 1, 1],
        [1, 0, 1, 0, 1, 0],
        [0, 0, 0, 0, 0, 1],
        [1, 1, 0, 0, 0, 0],
        [0, 0, 1, 0, 0, 0],
        [1, 1, 1, 1, 1, 0],
        [0, 1, 0, 1, 1, 1],
    ];
    rows.iter().flatten().map(|&x| x == 1).collect()
}

fn random_batch() -> (RandomModel, Vec<f32>, Vec<bool>) {
    let model = RandomModel::new(5, 8, 6, 3).unwrap();
    let obs = (0..8 * 5).map(|i| (i as f32 * 0.37).sin()).collect();
    (model, obs, masks())
}

fn assert_well_formed(outs: &[SearchOutput], legal: &[bool], sims: u32) {
    for (b, o) in outs.iter().enumerate() {
        let mask = &legal[b * 6..(b + 1) * 6];
        assert!(mask[o.action], "root {b}: illegal action {}", o.action);
        assert_eq!(o.visit_counts.iter().sum::<u32>(), sims, "root {b}");
        let total: f32 = o.policy_target.iter().sum();
        assert!(
            (total - 1.0).abs() < 1e-5,
            "root {b}: policy sums to {total}"
        );
        for (a, &legal) in mask.iter().enumerate() {
            if !legal {
                assert_eq!(
                    (o.visit_counts[a], o.policy_target[a]),
                    (0, 0.0),
                    "root {b} action {a}"
                );
            }
        }
        assert!(o.max_depth >= 1 && o.mean_depth >= 1.0 && o.mean_depth <= o.max_depth as f32);
        assert!(o.root_value.is_finite());
    }
}

#[test]
fn roots_with_different_masks_search_legal_actions_only() {
    let (model, obs, legal) = random_batch();
    for config in [
        puct(24),
        gumbel(24),
        gumbel(5),
        SearchConfig {
            temperature: 1.0,
            ..puct(7)
        },
    ] {
        let mut rng = StdRng::seed_from_u64(11);
        for _ in 0..5 {
            let outs = search(&model, &obs, &legal, 8, &config, &mut rng).unwrap();
            assert_well_formed(&outs, &legal, config.simulations as u32);
            // A single legal action gets every visit and the whole policy.
            for b in [3, 5] {
                assert_eq!(outs[b].visit_counts.iter().filter(|&&n| n > 0).count(), 1);
                assert_eq!(outs[b].policy_target[outs[b].action], 1.0);
            }
        }
    }
}

#[test]
fn gumbel_considers_at_most_max_considered_actions() {
    let (model, obs, legal) = random_batch();
    let g = GumbelConfig {
        max_considered: 2,
        ..Default::default()
    };
    let config = SearchConfig {
        simulations: 16,
        gumbel: Some(g),
        ..Default::default()
    };
    let outs = search(
        &model,
        &obs,
        &legal,
        8,
        &config,
        &mut StdRng::seed_from_u64(5),
    )
    .unwrap();
    for o in &outs {
        assert!(
            o.visit_counts.iter().filter(|&&n| n > 0).count() <= 2,
            "{:?}",
            o.visit_counts
        );
    }
    // Root 0 has 6 legal actions: 2 considered, the budget split between them (m = 2,
    // 16 sims: each gets 8).
    assert_eq!(outs[0].visit_counts.iter().filter(|&&n| n == 8).count(), 2);
}

#[test]
fn search_is_deterministic_given_the_seed_and_searcher_reuse_changes_nothing() {
    let (model, obs, legal) = random_batch();
    for config in [puct(16), gumbel(16)] {
        let a = search(
            &model,
            &obs,
            &legal,
            8,
            &config,
            &mut StdRng::seed_from_u64(9),
        )
        .unwrap();
        let b = search(
            &model,
            &obs,
            &legal,
            8,
            &config,
            &mut StdRng::seed_from_u64(9),
        )
        .unwrap();
        assert_eq!(a, b);
        // A searcher that ran a larger search first reuses its (dirty) buffers.
        let mut searcher = Searcher::new();
        let big = puct(40);
        searcher
            .search(&model, &obs, &legal, 8, &big, &mut StdRng::seed_from_u64(1))
            .unwrap();
        let c = searcher
            .search(
                &model,
                &obs,
                &legal,
                8,
                &config,
                &mut StdRng::seed_from_u64(9),
            )
            .unwrap();
        assert_eq!(a, c);
        // A batch of one root gives that root's own search (roots are independent; the
        // rng is consumed per root in order, so compare the first root).
        let d = search(
            &model,
            &obs[..5],
            &legal[..6],
            1,
            &config,
            &mut StdRng::seed_from_u64(9),
        )
        .unwrap();
        assert_eq!(a[0], d[0]);
    }
    // Noise matters: another seed changes some Gumbel root's statistics.
    let g = gumbel(16);
    let a = search(&model, &obs, &legal, 8, &g, &mut StdRng::seed_from_u64(9)).unwrap();
    let b = search(&model, &obs, &legal, 8, &g, &mut StdRng::seed_from_u64(10)).unwrap();
    assert_ne!(a, b);
}

/// Counts calls and checks every call covers the whole batch.
struct Counting {
    inner: RandomModel,
    initial: AtomicUsize,
    recurrent: AtomicUsize,
    batch: usize,
}

impl Model for Counting {
    fn observation_len(&self) -> usize {
        self.inner.observation_len()
    }
    fn hidden_len(&self) -> usize {
        self.inner.hidden_len()
    }
    fn action_count(&self) -> usize {
        self.inner.action_count()
    }
    fn initial_inference(&self, o: &[f32], batch: usize) -> Result<ModelOutput, ModelError> {
        assert_eq!(batch, self.batch);
        self.initial.fetch_add(1, Ordering::Relaxed);
        self.inner.initial_inference(o, batch)
    }
    fn recurrent_inference(
        &self,
        h: &[f32],
        a: &[usize],
        batch: usize,
    ) -> Result<ModelOutput, ModelError> {
        assert_eq!(batch, self.batch);
        self.recurrent.fetch_add(1, Ordering::Relaxed);
        self.inner.recurrent_inference(h, a, batch)
    }
}

#[test]
fn every_simulation_is_one_model_call_over_all_roots() {
    let (inner, obs, legal) = random_batch();
    let model = Counting {
        inner,
        initial: AtomicUsize::new(0),
        recurrent: AtomicUsize::new(0),
        batch: 8,
    };
    search(
        &model,
        &obs,
        &legal,
        8,
        &gumbel(13),
        &mut StdRng::seed_from_u64(0),
    )
    .unwrap();
    assert_eq!(model.initial.load(Ordering::Relaxed), 1);
    assert_eq!(model.recurrent.load(Ordering::Relaxed), 13);
}

/// Returns a NaN value from the recurrent function.
struct Broken(RandomModel);

impl Model for Broken {
    fn observation_len(&self) -> usize {
        self.0.observation_len()
    }
    fn hidden_len(&self) -> usize {
        self.0.hidden_len()
    }
    fn action_count(&self) -> usize {
        self.0.action_count()
    }
    fn initial_inference(&self, o: &[f32], batch: usize) -> Result<ModelOutput, ModelError> {
        self.0.initial_inference(o, batch)
    }
    fn recurrent_inference(
        &self,
        h: &[f32],
        a: &[usize],
        batch: usize,
    ) -> Result<ModelOutput, ModelError> {
        let mut out = self.0.recurrent_inference(h, a, batch)?;
        out.value[batch - 1] = f32::NAN;
        Ok(out)
    }
}

#[test]
fn bad_input_is_an_error_naming_what_is_wrong() {
    let (model, obs, legal) = random_batch();
    let mut rng = StdRng::seed_from_u64(0);
    let err = |r: Result<Vec<SearchOutput>, ModelError>| r.unwrap_err().to_string();
    let e = err(search(&model, &obs, &legal, 8, &puct(0), &mut rng));
    assert!(e.contains("search.simulations = 0"), "{e}");
    let e = err(search(&model, &obs, &legal[..47], 8, &puct(4), &mut rng));
    assert!(
        e.contains("legal mask has 47 entries") && e.contains("48"),
        "{e}"
    );
    let e = err(search(&model, &obs[..39], &legal, 8, &puct(4), &mut rng));
    assert!(e.contains("observations has 39 values"), "{e}");
    let e = err(search(&model, &obs, &legal, 0, &puct(4), &mut rng));
    assert!(e.contains("batch = 0"), "{e}");
    let mut none = legal.clone();
    none[12..18].fill(false);
    let e = err(search(&model, &obs, &none, 8, &puct(4), &mut rng));
    assert!(e.contains("root 2 has no legal action"), "{e}");
    let e = err(search(
        &Broken(model),
        &obs,
        &legal,
        8,
        &gumbel(4),
        &mut rng,
    ));
    assert!(
        e.contains("recurrent_inference") && e.contains("value[7] = NaN"),
        "{e}"
    );
}

#[test]
fn toy_games_follow_their_rules() {
    let mut game = ChainGame::new(5, 4, 2).unwrap();
    let mut mask = [false; 4];
    let mut obs = vec![0.0; game.observation_len()];
    assert_eq!(obs.len(), 6 + 5);
    for step in 0..5 {
        game.legal_mask(&mut mask);
        let illegal = game.illegal_action(step).unwrap();
        let correct = game.correct_action(step).unwrap();
        assert!(!mask[illegal] && mask[correct] && illegal != correct);
        assert_eq!(mask.iter().filter(|&&m| m).count(), 3);
        assert!(game.clone().apply(illegal).is_err());
        assert_eq!(game.apply(correct).unwrap(), 1.0);
        game.observe(&mut obs);
        assert_eq!((obs[step + 1], obs[6 + correct]), (1.0, 1.0));
        assert_eq!(obs.iter().sum::<f32>(), 2.0);
    }
    assert!(game.is_terminal() && game.apply(0).is_err());
    assert!(ChainGame::new(0, 4, 0).unwrap_err().0.contains("steps = 0"));

    let mut game = DelayedGame::new(3, 2, 4).unwrap();
    let best: Vec<usize> = (0..3)
        .map(|t| {
            if game.payoff(t, 0) >= game.payoff(t, 1) {
                0
            } else {
                1
            }
        })
        .collect();
    assert_eq!(game.apply(best[0]).unwrap(), 0.0);
    assert_eq!(game.apply(best[1]).unwrap(), 0.0);
    let last = game.apply(best[2]).unwrap();
    assert!((last - game.optimal_return()).abs() < 1e-6 && game.is_terminal());
}

#[test]
fn the_exact_model_replays_the_game_and_absorbs_illegal_moves() {
    let game = ChainGame::new(2, 3, 1).unwrap();
    let model = EnvironmentModel::new(&game);
    let mut obs = vec![0.0; game.observation_len()];
    game.observe(&mut obs);
    assert!(model
        .initial_inference(&obs, 1)
        .unwrap_err()
        .to_string()
        .contains("never registered"));
    model.register(&game);
    let root = model.initial_inference(&obs, 1).unwrap();
    let (c, bad) = (
        game.correct_action(0).unwrap(),
        game.illegal_action(0).unwrap(),
    );
    let out = model
        .recurrent_inference(&[root.hidden[0]; 2], &[c, bad], 2)
        .unwrap();
    assert_eq!(out.reward, vec![1.0, -1.0]);
    // After an illegal move (or the end) everything is worth 0.
    let after = model
        .recurrent_inference(&[out.hidden[1]], &[c], 1)
        .unwrap();
    assert_eq!(after.reward, vec![0.0]);
    assert_eq!(model.state_count(), 4);
    assert!(model
        .recurrent_inference(&[99.0], &[0], 1)
        .unwrap_err()
        .to_string()
        .contains("hidden[0] = 99"));
}
