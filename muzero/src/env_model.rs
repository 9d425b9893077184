//! A perfect model of an [`Environment`] for the search: MuZero's search with the real
//! game as its dynamics, as AlphaZero searches. Its hidden state is an index into a table
//! of game states; rewards are the game's own. Without a prior it predicts uniform
//! policies (a test oracle for the search); [`EnvironmentModel::with_prior`] takes policy and
//! value from a network's `initial_inference` on each state's observation.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::env::Environment;
use crate::model::{Model, ModelError, ModelOutput};
use crate::search::LOW_LOGIT;

/// Largest state index a hidden `f32` holds exactly.
const EXACT_MAX_STATES: usize = 1 << 24;

/// A perfect model of an [`Environment`]: its hidden state (one float) is an index into a
/// table of real game states, and `recurrent_inference` plays the action on a clone.
/// Rewards are the true rewards; an illegal action, or any action after the end, leads to
/// an absorbing end state (reward `illegal_reward` for an illegal one, 0 after the end).
/// Policy: uniform logits, or the prior's with illegal actions masked out. Value: 0, or
/// `value_fn` of the state, or the prior's (0 at an end state).
///
/// The model sees observations, not states, so call [`EnvironmentModel::register`] with each
/// root's game before searching it (the observation must determine the game's future),
/// or give one call's roots row by row with [`EnvironmentModel::set_roots`].
/// The table only grows: [`EnvironmentModel::clear`] between games keeps it small.
pub struct EnvironmentModel<'p, E: Environment> {
    observation_len: usize,
    action_count: usize,
    illegal_reward: f32,
    value_fn: Option<ValueFn<E>>,
    /// Borrowed: a trainer's self-play searches with the learner's weights of the moment,
    /// which it does not own.
    prior: Option<&'p dyn Model>,
    table: Mutex<ExactTable<E>>,
}

type ValueFn<E> = Box<dyn Fn(&E) -> f32 + Send + Sync>;

struct ExactTable<E> {
    /// `None` is the absorbing end state.
    states: Vec<Option<E>>,
    roots: HashMap<Vec<u32>, E>,
    /// The next `initial_inference`'s roots, row by row ([`EnvironmentModel::set_roots`]).
    batch: Vec<E>,
}

impl<'p, E: Environment> EnvironmentModel<'p, E> {
    /// A model of games shaped like `env`.
    pub fn new(env: &E) -> Self {
        Self {
            observation_len: env.observation_len(),
            action_count: env.action_count(),
            illegal_reward: -1.0,
            value_fn: None,
            prior: None,
            table: Mutex::new(ExactTable {
                states: Vec::new(),
                roots: HashMap::new(),
                batch: Vec::new(),
            }),
        }
    }

    /// The reward of an illegal action inside the tree (-1 by default).
    pub fn with_illegal_reward(mut self, reward: f32) -> Self {
        self.illegal_reward = reward;
        self
    }

    /// Predicts `f(state)` as the value of non-end states instead of 0.
    pub fn with_value_fn(mut self, f: impl Fn(&E) -> f32 + Send + Sync + 'static) -> Self {
        self.value_fn = Some(Box::new(f));
        self
    }

    /// Predicts each state's policy and value with `prior` (a trained network's
    /// representation and prediction, on the state's real observation), so the search
    /// is guided by the network but its rewards and dynamics are exact. `prior` must
    /// take this environment's observations and actions.
    pub fn with_prior(mut self, prior: &'p dyn Model) -> Result<Self, ModelError> {
        if prior.observation_len() != self.observation_len
            || prior.action_count() != self.action_count
        {
            return Err(format!(
                "EnvironmentModel: the prior takes {} observation values and {} actions; the game has {} and {}",
                prior.observation_len(),
                prior.action_count(),
                self.observation_len,
                self.action_count
            )
            .into());
        }
        self.prior = Some(prior);
        Ok(self)
    }

    /// Makes `env`'s current observation known to `initial_inference`.
    pub fn register(&self, env: &E) {
        let mut obs = vec![0.0; self.observation_len];
        env.observe(&mut obs);
        self.lock().roots.insert(root_key(&obs), env.clone());
    }

    /// Makes `envs` the roots of the next `initial_inference`, row `i` being `envs[i]`
    /// (each must still show the observation it is given there). Unlike
    /// [`EnvironmentModel::register`], two roots with the same observation stay two games: a
    /// batch of games whose observations do not show everything (a mapping's offsets,
    /// say) may hold such a pair.
    pub fn set_roots(&self, envs: Vec<E>) {
        self.lock().batch = envs;
    }

    /// Forgets every state and registered root; earlier hidden states become invalid.
    pub fn clear(&self) {
        let mut t = self.lock();
        t.states.clear();
        t.roots.clear();
        t.batch.clear();
    }

    /// States in the table.
    pub fn state_count(&self) -> usize {
        self.lock().states.len()
    }

    /// A panic elsewhere cannot leave the table half-written (every write is one push or
    /// insert), so a poisoned lock is safe to reuse.
    fn lock(&self) -> std::sync::MutexGuard<'_, ExactTable<E>> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends `states` to the table and their hidden states, policies and values to
    /// `out` (rewards are the caller's).
    fn push(
        &self,
        table: &mut ExactTable<E>,
        states: Vec<Option<E>>,
        out: &mut ModelOutput,
    ) -> Result<(), ModelError> {
        if table.states.len() + states.len() > EXACT_MAX_STATES {
            return Err(format!(
                "EnvironmentModel: table full ({EXACT_MAX_STATES} states); call clear() between games"
            )
            .into());
        }
        let live = |s: &Option<E>| s.as_ref().is_some_and(|e| !e.is_terminal());
        let first = out.value.len();
        out.value.resize(first + states.len(), 0.0);
        out.policy_logits
            .resize((first + states.len()) * self.action_count, 0.0);
        match (&self.prior, &self.value_fn) {
            (Some(prior), _) => self.predict(*prior, &states, first, out)?,
            (None, Some(f)) => {
                for (k, s) in states.iter().enumerate() {
                    if let Some(env) = s.as_ref().filter(|_| live(s)) {
                        out.value[first + k] = f(env);
                    }
                }
            }
            (None, None) => {}
        }
        for s in states {
            out.hidden.push(table.states.len() as f32);
            table.states.push(s);
        }
        Ok(())
    }

    /// Fills the policies and values of the states still in play from one batched call
    /// of `prior`; illegal actions get the search's lowest logit so that no simulation
    /// walks into them (an end state keeps value 0).
    fn predict(
        &self,
        prior: &dyn Model,
        states: &[Option<E>],
        first: usize,
        out: &mut ModelOutput,
    ) -> Result<(), ModelError> {
        let (n_obs, n_act) = (self.observation_len, self.action_count);
        let live: Vec<(usize, &E)> = states
            .iter()
            .enumerate()
            .filter_map(|(k, s)| s.as_ref().filter(|e| !e.is_terminal()).map(|e| (k, e)))
            .collect();
        if live.is_empty() {
            return Ok(());
        }
        let mut obs = vec![0.0; live.len() * n_obs];
        for (j, (_, env)) in live.iter().enumerate() {
            env.observe(&mut obs[j * n_obs..(j + 1) * n_obs]);
        }
        let predicted = prior.initial_inference(&obs, live.len())?;
        if predicted.value.len() != live.len()
            || predicted.policy_logits.len() != live.len() * n_act
        {
            return Err("EnvironmentModel: the prior returned a batch of the wrong size".into());
        }
        let mut mask = vec![false; n_act];
        for (j, (k, env)) in live.iter().enumerate() {
            env.legal_mask(&mut mask);
            let row = &mut out.policy_logits[(first + k) * n_act..(first + k + 1) * n_act];
            for (a, logit) in row.iter_mut().enumerate() {
                *logit = if mask[a] {
                    predicted.policy_logits[j * n_act + a]
                } else {
                    LOW_LOGIT
                };
            }
            out.value[first + k] = predicted.value[j];
        }
        Ok(())
    }
}

/// How a registered root is found again from its observation: bit for bit.
fn root_key(observation: &[f32]) -> Vec<u32> {
    observation.iter().map(|x| x.to_bits()).collect()
}

impl<E: Environment> Model for EnvironmentModel<'_, E> {
    fn observation_len(&self) -> usize {
        self.observation_len
    }

    fn hidden_len(&self) -> usize {
        1
    }

    fn action_count(&self) -> usize {
        self.action_count
    }

    fn initial_inference(
        &self,
        observations: &[f32],
        batch: usize,
    ) -> Result<ModelOutput, ModelError> {
        if observations.len() != batch * self.observation_len {
            return Err(format!(
                "EnvironmentModel: {} observation values for batch {batch} x {}",
                observations.len(),
                self.observation_len
            )
            .into());
        }
        let mut t = self.lock();
        let mut out = ModelOutput {
            reward: vec![0.0; batch],
            ..Default::default()
        };
        let given = std::mem::take(&mut t.batch);
        let mut roots = Vec::with_capacity(batch);
        let mut seen = vec![0.0; self.observation_len];
        for i in 0..batch {
            let obs = &observations[i * self.observation_len..(i + 1) * self.observation_len];
            let set = given.get(i).filter(|env| {
                env.observe(&mut seen);
                seen.iter()
                    .zip(obs)
                    .all(|(a, b)| a.to_bits() == b.to_bits())
            });
            let env = match set {
                Some(env) => env.clone(),
                None => t.roots.get(&root_key(obs)).cloned().ok_or_else(|| {
                    format!("EnvironmentModel: observation {i} of the batch was never registered")
                })?,
            };
            roots.push(Some(env));
        }
        self.push(&mut t, roots, &mut out)?;
        Ok(out)
    }

    fn recurrent_inference(
        &self,
        hidden: &[f32],
        actions: &[usize],
        batch: usize,
    ) -> Result<ModelOutput, ModelError> {
        if hidden.len() != batch || actions.len() != batch {
            return Err(format!(
                "EnvironmentModel: {} hidden values and {} actions for batch {batch}",
                hidden.len(),
                actions.len()
            )
            .into());
        }
        let mut t = self.lock();
        let mut out = ModelOutput::default();
        let mut mask = vec![false; self.action_count];
        let mut children = Vec::with_capacity(batch);
        for (i, (&h, &action)) in hidden.iter().zip(actions).enumerate() {
            let index = h as usize;
            if h < 0.0 || h != index as f32 || index >= t.states.len() {
                return Err(format!(
                    "EnvironmentModel: hidden[{i}] = {h} is no state of the table"
                )
                .into());
            }
            let (next, reward) = match &t.states[index] {
                None => (None, 0.0),
                Some(env) if env.is_terminal() => (None, 0.0),
                Some(env) => {
                    env.legal_mask(&mut mask);
                    let mut next = env.clone();
                    match mask.get(action) {
                        Some(true) => match next.apply(action) {
                            Ok(r) => (Some(next), r),
                            Err(_) => (None, self.illegal_reward),
                        },
                        _ => (None, self.illegal_reward),
                    }
                }
            };
            out.reward.push(reward);
            children.push(next);
        }
        self.push(&mut t, children, &mut out)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toy::{ChainGame, RandomModel};

    /// A two-step chain game with an illegal action at each step, and a seeded prior.
    fn game_and_prior() -> (ChainGame, RandomModel) {
        let game = ChainGame::new(2, 3, 1).unwrap();
        let prior = RandomModel::new(game.observation_len(), 4, game.action_count(), 7).unwrap();
        (game, prior)
    }

    fn observed(env: &ChainGame) -> Vec<f32> {
        let mut obs = vec![0.0; env.observation_len()];
        env.observe(&mut obs);
        obs
    }

    #[test]
    fn the_prior_predicts_on_real_states_with_illegal_actions_masked() {
        let (game, prior) = game_and_prior();
        let model = EnvironmentModel::new(&game).with_prior(&prior).unwrap();
        model.register(&game);
        let obs = observed(&game);
        let root = model.initial_inference(&obs, 1).unwrap();
        let expected = prior.initial_inference(&obs, 1).unwrap();
        let bad = game.illegal_action(0).unwrap();
        for a in 0..game.action_count() {
            let want = if a == bad {
                LOW_LOGIT
            } else {
                expected.policy_logits[a]
            };
            assert_eq!(root.policy_logits[a], want, "action {a}");
        }
        assert_eq!(root.value, expected.value);

        // One step on the real game: the child's prediction is the prior's on the child's
        // own observation, and the reward is the game's.
        let good = game.correct_action(0).unwrap();
        let child = model.recurrent_inference(&root.hidden, &[good], 1).unwrap();
        let mut next = game.clone();
        let reward = next.apply(good).unwrap();
        let expected = prior.initial_inference(&observed(&next), 1).unwrap();
        assert_eq!(child.reward, vec![reward]);
        assert_eq!(child.value, expected.value);

        // The end of the game is worth nothing, whatever the prior says.
        let last = model
            .recurrent_inference(&child.hidden, &[next.correct_action(1).unwrap()], 1)
            .unwrap();
        assert_eq!(last.value, vec![0.0]);
        assert_eq!(model.state_count(), 3);
    }

    #[test]
    fn a_prior_of_another_shape_is_refused() {
        let (game, _) = game_and_prior();
        let wrong = RandomModel::new(game.observation_len() + 1, 4, game.action_count(), 7);
        let err = EnvironmentModel::new(&game)
            .with_prior(&wrong.unwrap())
            .err()
            .unwrap();
        assert!(err.to_string().contains("observation values"), "{err}");
    }

    /// A one-move game whose observation hides the reward it will pay.
    #[derive(Clone)]
    struct Masked {
        pays: f32,
        done: bool,
    }

    impl Environment for Masked {
        fn observation_len(&self) -> usize {
            1
        }
        fn action_count(&self) -> usize {
            1
        }
        fn observe(&self, out: &mut [f32]) {
            out[0] = f32::from(u8::from(self.done));
        }
        fn legal_mask(&self, mask: &mut [bool]) {
            mask[0] = !self.done;
        }
        fn apply(&mut self, _action: usize) -> Result<f32, crate::EnvError> {
            self.done = true;
            Ok(self.pays)
        }
        fn is_terminal(&self) -> bool {
            self.done
        }
    }

    #[test]
    fn roots_set_row_by_row_stay_apart_where_their_observations_agree() {
        let (a, b) = (
            Masked {
                pays: 1.0,
                done: false,
            },
            Masked {
                pays: 2.0,
                done: false,
            },
        );
        let model = EnvironmentModel::new(&a);
        model.set_roots(vec![a, b]);
        let root = model.initial_inference(&[0.0, 0.0], 2).unwrap();
        let child = model.recurrent_inference(&root.hidden, &[0, 0], 2).unwrap();
        assert_eq!(child.reward, vec![1.0, 2.0]);
        // The roots are for one call: the next one finds none.
        assert!(model.initial_inference(&[0.0], 1).is_err());
    }
}
