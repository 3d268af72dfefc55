//! Each test breaks the client on purpose and expects the checker to find two holders; it
//! prints the counterexample, step by step.

use std::time::Instant;

use stateright::{Checker, Model};
use zklock_model::{LeaseModel, Mutation, ONE_HOLDER};

fn counterexample(name: &str, model: LeaseModel) -> String {
    let started = Instant::now();
    let checker = model.clone().checker().spawn_bfs().join();
    let path = checker
        .discovery(ONE_HOLDER)
        .unwrap_or_else(|| panic!("mutation {name}: the checker found no second holder"));
    let trace = model.trace(&path);
    println!(
        "mutation {name}: counterexample at depth {} after {} states, {:.1} s:\n{trace}",
        path.clone().into_actions().len(),
        checker.unique_state_count(),
        started.elapsed().as_secs_f64()
    );
    trace
}

#[test]
fn taking_any_answered_request_as_proof_lets_two_clients_hold() {
    let mut model = LeaseModel::small();
    model.mutation = Mutation::AnyAnswerProves;
    // The holder's program reads twice: its member answers alone.
    model.max_reads = 2;
    counterexample("(a) any answer proves", model);
}

/// Mutation (b), the tick assumed shorter than the servers' (200 ms against 500 ms), with the
/// holder on a leader that may be deposed (the tick term of the deadline is for it): the model
/// finds no second holder within its bounds. The client's schedule keeps j two heartbeats behind
/// m, which covers the shortfall here; docs/safety.md ("Checked by a model") says why the
/// mutation is unsafe all the same (a proof made on the catch-up path, which these bounds do not
/// reach with a deposed leader). This test pins the finding: when the model reaches that path
/// it should fail, and become a test that expects the counterexample.
#[test]
fn a_shorter_assumed_tick_is_not_caught_within_the_models_bounds() {
    let mut model = LeaseModel::small();
    model.on_follower = false;
    model.depose = true;
    model.sync_limit = 2;
    model.mutation = Mutation::AssumedTick(200);
    let started = Instant::now();
    let checker = model.clone().checker().spawn_bfs().join();
    println!(
        "mutation (b) assumed tick 200 ms, servers' 500 ms: {} states, depth {}, {:.1} s, \
         no second holder",
        checker.unique_state_count(),
        checker.max_depth(),
        started.elapsed().as_secs_f64()
    );
    if let Some(path) = checker.discovery(ONE_HOLDER) {
        panic!(
            "mutation (b) is caught now; make this test expect it:\n{}",
            model.trace(&path)
        );
    }
}
