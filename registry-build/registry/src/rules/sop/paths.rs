//! The state graph: every target defined, every state reachable and able to reach a terminal
//! state, branch pointers that read a state run before the decision, no decision cycles.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::rule::Rule;
use crate::schema::subset::escape;
use crate::sop::model::State;

use super::{list, File};

impl<'a> File<'a, '_> {
    /// The graph rules, on a file whose states are all well-formed and whose transitions all
    /// name states.
    pub(super) fn graph(&mut self, start: &str, states: &BTreeMap<String, State>) {
        let succ: BTreeMap<&str, Vec<&str>> = states
            .iter()
            .map(|(n, s)| (n.as_str(), s.successors()))
            .collect();

        // Reachable from start.
        let mut reachable: BTreeSet<&str> = BTreeSet::new();
        let mut queue = VecDeque::from([start]);
        while let Some(n) = queue.pop_front() {
            if reachable.insert(n) {
                queue.extend(succ.get(n).into_iter().flatten().copied());
            }
        }
        for name in states.keys().filter(|n| !reachable.contains(n.as_str())) {
            self.push_help(
                Rule::SopUnreachableState,
                &format!("/states/{}", escape(name)),
                format!(
                    "state `{name}` is unreachable: no path from the start state `{start}` leads to it"
                ),
                "lead a `next`, a branch or an `otherwise` to it, or remove it",
            );
        }

        // Can reach a terminal.
        let terminals: Vec<&str> = states
            .iter()
            .filter(|(_, s)| matches!(s, State::Terminal))
            .map(|(n, _)| n.as_str())
            .collect();
        if terminals.is_empty() {
            self.push_help(
                Rule::SopNoTerminalPath,
                "/states",
                "the SOP has no terminal state: no run can end successfully",
                "add a state { \"kind\": \"terminal\" } and lead the last step to it",
            );
        } else {
            let mut finishes: BTreeSet<&str> = terminals.iter().copied().collect();
            loop {
                let more: Vec<&str> = succ
                    .iter()
                    .filter(|(n, s)| {
                        !finishes.contains(*n) && s.iter().any(|t| finishes.contains(t))
                    })
                    .map(|(n, _)| *n)
                    .collect();
                if more.is_empty() {
                    break;
                }
                finishes.extend(more);
            }
            for name in reachable.iter().filter(|n| !finishes.contains(*n)) {
                self.push_help(
                    Rule::SopNoTerminalPath,
                    &format!("/states/{}", escape(name)),
                    format!(
                        "state `{name}`: no path leads from it to a terminal state ({}); a run \
                         entering it can never finish",
                        list(&terminals)
                    ),
                    "lead one of its transitions (or a later state's) to a terminal state",
                );
            }
        }

        // Decisions that reach themselves through decisions only.
        let is_decision = |n: &str| matches!(states.get(n), Some(State::Decision(_)));
        for name in reachable.iter().copied().filter(|n| is_decision(n)) {
            let mut seen = BTreeSet::new();
            let mut stack: Vec<&str> = succ[name]
                .iter()
                .copied()
                .filter(|n| is_decision(n))
                .collect();
            let mut cycle = false;
            while let Some(n) = stack.pop() {
                if n == name {
                    cycle = true;
                    break;
                }
                if seen.insert(n) {
                    stack.extend(succ[n].iter().copied().filter(|n| is_decision(n)));
                }
            }
            if cycle {
                self.push_help(
                    Rule::SopDecisionCycle,
                    &format!("/states/{}", escape(name)),
                    format!(
                        "state `{name}`: decisions lead back to it without an execution step \
                         between, so a run would loop forever on unchanged outputs"
                    ),
                    "break the cycle with an execution step, or lead a branch elsewhere",
                );
            }
        }

        // Branch pointers read a step that ran before the decision on every path.
        let dominators = dominators(start, &reachable, &succ);
        for (name, state) in states {
            let State::Decision(d) = state else { continue };
            let Some(doms) = dominators.get(name.as_str()) else {
                continue;
            };
            for (i, b) in d.branches.iter().enumerate() {
                let Some((read, _, _)) = b.target() else {
                    continue;
                };
                let runs_before = matches!(states.get(&read), Some(State::Execution(_)))
                    && doms.contains(read.as_str());
                if matches!(states.get(&read), Some(State::Execution(_))) && !runs_before {
                    self.push_help(
                        Rule::SopBranchPointer,
                        &format!("/states/{}/branches/{i}/when/pointer", escape(name)),
                        format!(
                            "state `{name}`: the branch pointer `{}` reads the step `{read}`, which \
                             does not run before `{name}` on every path from `{start}`",
                            b.pointer
                        ),
                        "a decision may read only steps that every path to it runs first",
                    );
                }
            }
        }
    }
}

/// The dominators of every reachable state: the states every path from `start` to it passes.
pub(super) fn dominators<'n>(
    start: &'n str,
    reachable: &BTreeSet<&'n str>,
    succ: &BTreeMap<&'n str, Vec<&'n str>>,
) -> BTreeMap<&'n str, BTreeSet<&'n str>> {
    let mut preds: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (n, ss) in succ.iter().filter(|(n, _)| reachable.contains(*n)) {
        for s in ss {
            preds.entry(s).or_default().push(n);
        }
    }
    let mut dom: BTreeMap<&str, BTreeSet<&str>> = reachable
        .iter()
        .map(|n| {
            let set = if *n == start {
                BTreeSet::from([start])
            } else {
                reachable.clone()
            };
            (*n, set)
        })
        .collect();
    let mut changed = true;
    while changed {
        changed = false;
        for n in reachable.iter().filter(|n| **n != start) {
            let mut new: Option<BTreeSet<&str>> = None;
            for p in preds.get(n).into_iter().flatten() {
                let pd = &dom[p];
                new = Some(match new {
                    None => pd.clone(),
                    Some(acc) => acc.intersection(pd).copied().collect(),
                });
            }
            let mut new = new.unwrap_or_default();
            new.insert(n);
            if new != dom[n] {
                dom.insert(n, new);
                changed = true;
            }
        }
    }
    dom
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    pub(super) fn dominators_of_a_diamond() {
        let succ: BTreeMap<&str, Vec<&str>> = BTreeMap::from([
            ("a", vec!["b", "c"]),
            ("b", vec!["d"]),
            ("c", vec!["d"]),
            ("d", vec![]),
        ]);
        let reach: BTreeSet<&str> = ["a", "b", "c", "d"].into();
        let dom = dominators("a", &reach, &succ);
        assert_eq!(dom["d"], BTreeSet::from(["a", "d"]));
        assert_eq!(dom["b"], BTreeSet::from(["a", "b"]));
    }
}
