//! The race's settings that only some solvers read. A setting given to a race where none
//! of its readers runs would be dropped without a word, so every front end asks
//! [`unread`] before any budget is spent, and phrases the answer with its own spelling of
//! the setting (`--config` on the command line, `config=` in Python).

use crate::race::MUZERO_TRAIN;
use crate::registry::run_of;

/// A race setting that only some solvers read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setting {
    /// A `train` run folder: its network guides `muzero`, and `muzero-train` continues it.
    Checkpoint,
    /// The agent's training config (`muzero-train`'s).
    TrainConfig,
    /// What `muzero-train`'s searches step through.
    SearchModel,
    /// EGRL's config (the EGRL solvers').
    EgrlConfig,
    /// The MIP's share of a guided search's budget (`muzero`'s and the `guided-*`
    /// solvers').
    MipShare,
}

/// The EGRL config's fields the race sets for every solver alike (from its seed, its
/// threads and the solver's name): a file's own would be replaced without a word.
pub const RACED_EGRL_FIELDS: [&str; 3] = ["seed", "threads", "variant"];

/// Why `setting` would be dropped by a race of `solvers` (none of them reads it), in words
/// that follow the caller's name for the setting; `None` when a solver reads it.
pub fn unread(solvers: &[String], setting: Setting) -> Option<String> {
    let named = |readers: &[&str]| solvers.iter().any(|s| readers.contains(&s.as_str()));
    let (read, readers) = match setting {
        Setting::Checkpoint => (
            named(&["muzero", MUZERO_TRAIN]),
            "the muzero or muzero-train solver reads it, and it is not",
        ),
        Setting::TrainConfig | Setting::SearchModel => (
            named(&[MUZERO_TRAIN]),
            "the muzero-train solver reads it, and it is not",
        ),
        Setting::EgrlConfig => (
            solvers
                .iter()
                .any(|s| run_of(s).is_some_and(|r| r.reads_egrl_config())),
            "the EGRL solvers read it, and none is",
        ),
        Setting::MipShare => (
            solvers.iter().any(|s| {
                matches!(
                    run_of(s),
                    Some(crate::registry::Run::Agent | crate::registry::Run::Guided)
                )
            }),
            "the muzero and guided-* solvers read it, and none is",
        ),
    };
    (!read).then(|| format!("only {readers} in this race"))
}

/// The first of `given` (each a setting as the caller spells it, whether it was given, and
/// which setting it is) that was given and that no solver of `solvers` reads, as
/// `"{name}: {why}"` ([`unread`]).
pub fn first_unread<'a>(
    solvers: &[String],
    given: impl IntoIterator<Item = (&'a str, bool, Setting)>,
) -> Option<String> {
    given
        .into_iter()
        .filter(|&(_, given, _)| given)
        .find_map(|(name, _, setting)| Some(format!("{name}: {}", unread(solvers, setting)?)))
}

/// The first field of [`RACED_EGRL_FIELDS`] among an EGRL config's `fields`.
pub fn raced_egrl_field<'a>(fields: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    fields.into_iter().find(|f| RACED_EGRL_FIELDS.contains(f))
}

/// `muzero-train` with a checkpoint continues that one run: a race of several cases would
/// continue it on each, from the same start, as if the cases were one.
pub fn continues_on_many_cases(solvers: &[String], checkpoint: bool, cases: usize) -> bool {
    checkpoint && cases > 1 && solvers.iter().any(|s| s == MUZERO_TRAIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn each_setting_is_read_only_by_its_solvers() {
        let plain = names(&["xla", "local-search"]);
        for s in [
            Setting::Checkpoint,
            Setting::TrainConfig,
            Setting::SearchModel,
            Setting::EgrlConfig,
        ] {
            let why = unread(&plain, s).expect("no reader in the race");
            assert!(why.starts_with("only the "), "{why}");
            assert!(
                why.ends_with("not in this race") || why.ends_with("none is in this race"),
                "{why}"
            );
        }
        assert_eq!(unread(&names(&["muzero"]), Setting::Checkpoint), None);
        assert!(unread(&names(&["muzero"]), Setting::TrainConfig).is_some());
        let train = names(&["xla", MUZERO_TRAIN]);
        for s in [
            Setting::Checkpoint,
            Setting::TrainConfig,
            Setting::SearchModel,
        ] {
            assert_eq!(unread(&train, s), None, "{s:?}");
        }
        let egrl: Vec<String> = crate::registry::race_names()
            .into_iter()
            .filter(|n| run_of(n).is_some_and(|r| r.reads_egrl_config()))
            .map(String::from)
            .collect();
        assert!(!egrl.is_empty());
        for e in egrl {
            assert_eq!(unread(&[e], Setting::EgrlConfig), None);
        }
    }

    #[test]
    fn the_first_unread_setting_given_is_named_as_the_caller_spells_it() {
        let race = names(&["xla", "muzero"]);
        let given = |config: bool| {
            [
                ("--checkpoint", true, Setting::Checkpoint),
                ("--config", config, Setting::TrainConfig),
                ("--egrl-config", true, Setting::EgrlConfig),
            ]
        };
        let why = first_unread(&race, given(true)).expect("--config is read by none");
        assert_eq!(
            why,
            "--config: only the muzero-train solver reads it, and it is not in this race"
        );
        let why = first_unread(&race, given(false)).expect("--egrl-config is read by none");
        assert!(
            why.starts_with("--egrl-config: only the EGRL solvers"),
            "{why}"
        );
        assert_eq!(
            first_unread(&race, [("--checkpoint", true, Setting::Checkpoint)]),
            None
        );
    }

    #[test]
    fn raced_fields_and_one_run_on_many_cases() {
        assert_eq!(raced_egrl_field(["hidden", "threads"]), Some("threads"));
        assert_eq!(raced_egrl_field(["hidden", "generations"]), None);
        let train = names(&[MUZERO_TRAIN]);
        assert!(continues_on_many_cases(&train, true, 2));
        assert!(!continues_on_many_cases(&train, true, 1));
        assert!(!continues_on_many_cases(&train, false, 2));
        assert!(!continues_on_many_cases(&names(&["muzero"]), true, 2));
    }
}
