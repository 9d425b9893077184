//! What a search steps through: the network's learned dynamics, or the game itself.

use crate::MallocEnv;
use malloc_game::Game;
use muzero::{EnvironmentModel, ModelError, MuZeroNet, SearchConfig, SearchOutput, Searcher};
use rand::rngs::StdRng;

/// What the agent's search steps through, in training (self-play, branch proposals,
/// evaluation games, reanalyse) and when a trained agent plays.
///
/// `Game` is the default: every multi-program checkpoint measured played its validation
/// cases faster searching the game than searching its learned model, and so did the
/// networks fine-tuned on held-out programs on those programs (malloc-muzero/generalist/
/// README.md and docs/results.md, the generalist section). With the game's rewards the
/// simulated latency itself (issue 26), a search of the game sees the objective exactly.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchModel {
    /// MuZero's own: the network's representation, dynamics and reward heads.
    Learned,
    /// The game itself, as AlphaZero searches: each simulation plays its moves on a clone
    /// of the game, so rewards and states are exact; the network gives each state's policy
    /// and value from its real observation.
    #[default]
    Game,
}

impl std::str::FromStr for SearchModel {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "learned" => Ok(SearchModel::Learned),
            "game" => Ok(SearchModel::Game),
            _ => Err(format!("`{s}`: expected `learned` or `game`")),
        }
    }
}

impl std::fmt::Display for SearchModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SearchModel::Learned => "learned",
            SearchModel::Game => "game",
        })
    }
}

/// One batched search of `games` (their observations in `obs` and legal masks in
/// `legal`, row by row) through `model`, with `net` the learned model or the game's prior.
pub(crate) struct BatchSearch<'a> {
    pub net: &'a MuZeroNet,
    pub model: SearchModel,
    pub search: &'a SearchConfig,
}

impl BatchSearch<'_> {
    pub fn run<'g>(
        &self,
        searcher: &mut Searcher,
        games: impl IntoIterator<Item = &'g Game>,
        obs: &[f32],
        legal: &[bool],
        rng: &mut StdRng,
    ) -> Result<Vec<SearchOutput>, ModelError> {
        let mut games = games.into_iter().peekable();
        let Some(first) = games.peek() else {
            return Ok(Vec::new());
        };
        let n = legal.len() / first.action_count().max(1);
        match self.model {
            SearchModel::Learned => searcher.search(self.net, obs, legal, n, self.search, rng),
            SearchModel::Game => {
                // A fresh table per call: it holds this turn's trees alone.
                let model = EnvironmentModel::new(&MallocEnv::new((*first).clone()))
                    .with_prior(self.net)?;
                // Row by row: two games of the batch may look the same (the observation
                // does not show every offset) and still differ.
                model.set_roots(games.map(|g| MallocEnv::new(g.clone())).collect());
                searcher.search(&model, obs, legal, n, self.search, rng)
            }
        }
    }
}
