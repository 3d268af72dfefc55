//! Bounds that tests/check.rs checks the client as it is against and tests/mutations.rs breaks
//! it under: one builder a path, so that a check and the mutation it guards stay on the same
//! bounds. Each builds on `LeaseModel::small()` and leaves the faults (cuts, disturbed steps)
//! to its caller unless the path fixes them.

// Each test file is a crate of its own and uses only some of these.
#![allow(dead_code)]

use zklock_model::LeaseModel;

/// A's member is the leader, and it may lose its quorum at any moment: it answers A alone
/// until it notices (`syncLimit + 1` ticks). syncLimit 2 keeps the horizon small.
pub fn on_a_deposed_leader() -> LeaseModel {
    let mut model = LeaseModel::small();
    model.on_follower = false;
    model.depose = true;
    model.sync_limit = 2;
    model
}

/// The bounds of mutation (d): A's follower's JVM pauses 3 s once, past `syncLimit × tick`
/// (T = 4 s, syncLimit 2), with no cut and no disturbed step.
pub fn on_a_pausing_follower() -> LeaseModel {
    let mut model = LeaseModel::small();
    model.timeout_ms = 4000;
    model.sync_limit = 2;
    model.follower_pause_ms = 3000;
    model.max_cuts = 0;
    model.max_disturbed = 0;
    model.horizon_ms = 5000;
    model
}

/// The leader skip on a leader that may be deposed, at T = 4 s and a 1 s tick (a quarter of T,
/// the longest zklock accepts), where half a tick outgrows the margin (280 ms) by more than the
/// model's step: mutation (i) fails here. Up to 7 s.
pub fn skipping_on_a_deposed_leader_at_a_quarter_tick() -> LeaseModel {
    let mut model = on_a_deposed_leader();
    model.timeout_ms = 4000;
    model.server_tick_ms = 1000;
    model.leader_skip = true;
    model.horizon_ms = 7000;
    model
}

/// A's chain shared with a carrier C on A's member, on another path's bounds.
pub fn sharing(mut model: LeaseModel) -> LeaseModel {
    model.shared = true;
    model
}

/// T = 4 s (`make soak-10k`'s timing at the 500 ms tick), up to 5 s: at `small()`'s T = 2 s
/// a sharer's pings every T/3 cannot keep its proof `floor` ahead whatever the carrier does
/// (`lifeline_math::sharing_fits`), so the client, and the model, run A's own chain there.
/// The session could first expire unproven at 4.5 s.
pub fn on_t_4_s(mut model: LeaseModel) -> LeaseModel {
    model.timeout_ms = 4000;
    model.horizon_ms = 5000;
    model
}
