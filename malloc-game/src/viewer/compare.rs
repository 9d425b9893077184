//! Two games of one program on one hardware, decision by decision.
//!
//! A turn decides one use of one buffer in one pass, so the two games' turns are matched
//! by that decision (pass, buffer, use), whatever their order. A turn's reward is what its
//! move saved, as a fraction of `S0`; so the latency A's decision adds against B's at the
//! same decision is `(r_B - r_A) S0`, and these add up, over every decision, to
//! `S_A - S_B` exactly: the differences are an accounting of the whole gap.

use super::GameView;
use serde::Serialize;
use std::collections::HashMap;

/// Why two games cannot be compared.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// The games are of differently named programs.
    #[error("the games are of different programs: `{a}` and `{b}`")]
    Program {
        /// The first game's program.
        a: String,
        /// The second's.
        b: String,
    },
    /// The games are of two versions of one program.
    #[error("the games are of different versions of program `{workload}` (content hashes {a:#018x} and {b:#018x})")]
    ProgramVersion {
        /// The program's name.
        workload: String,
        /// The first game's content hash.
        a: u64,
        /// The second's.
        b: u64,
    },
    /// Settings that differ, each as its field's path and both values (A's, then B's).
    #[error("the games were played under different settings: {}", said(.differences))]
    Rules {
        /// Each differing setting.
        differences: Vec<(String, String, String)>,
    },
}

/// One decision the games made differently, or that only one of them made.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Difference {
    /// The turn of A (of B) that made the decision; `None` if that game did not.
    pub a_turn: Option<usize>,
    /// The turn of B that made the decision; `None` if it did not.
    pub b_turn: Option<usize>,
    /// The latency A's decision adds against B's, seconds (negative: A's saves).
    pub cost_s: f64,
}

/// Where and by how much two games differ.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// The first turn at which the games' actions differ (`None`: the same game).
    pub first_difference: Option<usize>,
    /// Every decision made differently, in A's turn order (then B's for B's alone).
    pub differences: Vec<Difference>,
    /// The latency added by decisions both games made alike, whose effect differs by
    /// what came before them, seconds.
    pub same_decisions_s: f64,
    /// `S_A - S_B`, seconds.
    pub gap_s: f64,
}

/// [`accel_sim::json_differences`], with lists of one length (a hardware's levels) walked
/// item by item too: `hardware.levels[1].capacity`, not the whole list twice.
fn leaf_differences(
    a: &serde_json::Value,
    b: &serde_json::Value,
    prefix: &str,
) -> Vec<(String, serde_json::Value, serde_json::Value)> {
    let mut out = Vec::new();
    for (path, x, y) in accel_sim::json_differences(a, b, prefix) {
        match (x.as_array(), y.as_array()) {
            (Some(xs), Some(ys)) if xs.len() == ys.len() => {
                for (i, (xi, yi)) in xs.iter().zip(ys).enumerate() {
                    out.extend(leaf_differences(xi, yi, &format!("{path}[{i}]")));
                }
            }
            _ => out.push((path, x, y)),
        }
    }
    out
}

/// The first few settings that differ, in words.
fn said(differences: &[(String, String, String)]) -> String {
    const SHOWN: usize = 3;
    let mut parts: Vec<String> = differences
        .iter()
        .take(SHOWN)
        .map(|(path, a, b)| format!("{path} is {a} in A and {b} in B"))
        .collect();
    if differences.len() > SHOWN {
        parts.push(format!("{} more", differences.len() - SHOWN));
    }
    parts.join("; ")
}

/// At most `max` characters of `s`, an ellipsis marking a cut.
fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

/// Compares game `a` against game `b`.
pub fn compare(a: &GameView, b: &GameView) -> Result<Comparison, CompareError> {
    if a.workload != b.workload {
        return Err(CompareError::Program {
            a: a.workload.clone(),
            b: b.workload.clone(),
        });
    }
    if a.program_hash != b.program_hash {
        return Err(CompareError::ProgramVersion {
            workload: a.workload.clone(),
            a: a.program_hash,
            b: b.program_hash,
        });
    }
    if a.settings != b.settings {
        let shown = |v: &serde_json::Value| clip(&v.to_string(), 60);
        let differences = leaf_differences(&a.settings, &b.settings, "")
            .iter()
            .map(|(path, x, y)| (path.clone(), shown(x), shown(y)))
            .collect();
        return Err(CompareError::Rules { differences });
    }
    let s0 = a.s0;
    let first_difference = (0..a.turns().max(b.turns())).find(|&t| {
        a.turns.action.get(t) != b.turns.action.get(t) || a.keys.get(t) != b.keys.get(t)
    });
    let b_turn: HashMap<_, usize> = b.keys.iter().enumerate().map(|(t, k)| (*k, t)).collect();
    let mut matched_b = vec![false; b.turns()];
    let mut differences = Vec::new();
    let mut same_decisions_s = 0.0;
    for (ta, key) in a.keys.iter().enumerate() {
        let ra = a.turns.reward[ta];
        match b_turn.get(key) {
            Some(&tb) => {
                matched_b[tb] = true;
                let cost_s = (b.turns.reward[tb] - ra) * s0;
                if a.turns.action[ta] == b.turns.action[tb] {
                    same_decisions_s += cost_s;
                } else {
                    differences.push(Difference {
                        a_turn: Some(ta),
                        b_turn: Some(tb),
                        cost_s,
                    });
                }
            }
            None => differences.push(Difference {
                a_turn: Some(ta),
                b_turn: None,
                cost_s: -ra * s0,
            }),
        }
    }
    for (tb, _) in matched_b.iter().enumerate().filter(|(_, m)| !**m) {
        differences.push(Difference {
            a_turn: None,
            b_turn: Some(tb),
            cost_s: b.turns.reward[tb] * s0,
        });
    }
    Ok(Comparison {
        first_difference,
        differences,
        same_decisions_s,
        gap_s: a.final_latency_s - b.final_latency_s,
    })
}
