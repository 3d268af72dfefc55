//! Counterexamples as lines a person can read.

use std::fmt::Write as _;

use crate::{Action, Disturb, LeaseModel, State};

impl LeaseModel {
    /// One line of a trace: the clock, A's proof and deadline, the leader's view of A's
    /// session, the streams.
    pub fn describe(&self, s: &State) -> String {
        if self.client_rate_permille == 1000 {
            format!("t={:>5} ms | {}", s.now, self.describe_rest(s))
        } else {
            let a = self.client_now(s);
            format!(
                "t={:>5} ms (A's clock {a:>5}) | {}",
                s.now,
                self.describe_rest(s)
            )
        }
    }

    /// The line without its clock (two states that differ only there make one quiet stretch).
    fn describe_rest(&self, s: &State) -> String {
        let mut out = format!(
            "A proven {:>5} deadline {:>5} {}",
            s.chain.proven.as_millis(),
            self.deadline_ms(s),
            if self.a_holds(s) {
                "HELD"
            } else if !s.armed {
                "wait"
            } else {
                "lost"
            },
        );
        match s.deposed {
            None => {
                let _ = write!(
                    out,
                    " | leader touch {:>5} expiry {:>5}",
                    s.leader_touch,
                    self.expiry_ms(s.leader_touch)
                );
            }
            Some(d) => {
                let started = self.new_leader_at(d);
                let _ = write!(
                    out,
                    " | old leader deposed at {d}, answers A until {}; new leader from {started}, \
                     expiry {}",
                    self.deposed_notices_at(d),
                    self.new_leader_expiry_ms(s, d)
                );
            }
        }
        if s.farewell_closed {
            out.push_str(" CLOSED by the farewell");
        } else if s.expired {
            out.push_str(" EXPIRED");
        }
        if s.released {
            out.push_str(" | A released cleanly");
        }
        match s.b_heard {
            _ if self.b_holds(s) => out.push_str(" | B HOLDS"),
            Some(at) => {
                let _ = write!(
                    out,
                    " | B heard A's node deleted at {at}, waits the lock-delay"
                );
            }
            None if s.to_b => out.push_str(" | B's watch event on its link"),
            None if s.fired => out.push_str(" | B's watch fired, its event lost"),
            None => {}
        }
        if s.b_on == crate::Member::Follower {
            out.push_str(" | B on the follower");
        }
        if s.b_closed {
            out.push_str(", B's connection closed");
        }
        if let Some(lost) = s.lost_at.filter(|_| self.lock_delay_ms > 0) {
            let _ = write!(out, " | A lost at {lost}");
        }
        if let Some((at, _)) = s.given_up_at {
            let _ = write!(
                out,
                " | given up at {at}, holder {}",
                if s.let_go { "let go" } else { "still at work" }
            );
        }
        for (name, len, text) in [
            ("to member", s.to_member.len(), format!("{:?}", s.to_member)),
            ("to A", s.to_client.len(), format!("{:?}", s.to_client)),
            ("up", s.up.len(), format!("{:?}", s.up)),
            ("down", s.down.len(), format!("{:?}", s.down)),
        ] {
            if len > 0 {
                let _ = write!(out, " | {name} {text}");
            }
        }
        if let Some(c) = &s.carrier {
            let _ = write!(out, " | C on the {}", member_name(c.on));
            if !c.to_member.is_empty() {
                let _ = write!(out, ", to C's member {:?}", c.to_member);
            }
            if !c.to_client.is_empty() {
                let _ = write!(out, ", to C {:?}", c.to_client);
            }
            if c.closed {
                out.push_str(", closed");
            }
        } else if self.shared {
            out.push_str(" | A runs its own chain");
        }
        match s.reconnecting {
            Some(latest) => {
                let to = member_name(s.a_on);
                let _ = write!(out, " | A reconnecting to the {to} (will prove {latest})");
            }
            None if s.moved => {
                let _ = write!(out, " | A moved to the {}", member_name(s.a_on));
            }
            None => {}
        }
        if s.closed_by_member {
            out.push_str(" | A's member closed A's connection");
        }
        match s.crashed {
            Some((crate::Member::Follower, at)) => {
                let _ = write!(out, " | the follower crashed at {at}");
                if s.restarted {
                    out.push_str(", restarted");
                }
                if s.back {
                    out.push_str(", A back on it");
                }
            }
            Some((crate::Member::Leader, at)) => {
                let _ = write!(out, " | the leader crashed at {at}, a new one started then");
            }
            None => {}
        }
        if !s.cut.is_empty() {
            let _ = write!(out, " | cut {:?}", s.cut);
        }
        if let Some(until) = s.paused_until.filter(|&u| s.now < u) {
            let _ = write!(out, " | follower's JVM paused until {until}");
        }
        if s.follower_dropped {
            out.push_str(" | leader dropped the follower");
        }
        if s.follower_closed {
            out.push_str(", which knows it");
        }
        out
    }

    /// Whether a state breaks one of the `always` properties.
    pub fn violates(&self, s: &State) -> bool {
        (self.a_holds(s) && self.b_holds(s)) || (s.farewell_closed && !s.let_go) || self.too_soon(s)
    }

    /// How many actions lead to the first state of `path` that breaks a property (the checker
    /// may hand over a path that goes on past it).
    pub fn depth(&self, path: &stateright::Path<State, Action>) -> usize {
        let states = path.clone().into_vec();
        states
            .iter()
            .position(|(s, _)| self.violates(s))
            .unwrap_or(states.len().saturating_sub(1))
    }

    /// A counterexample as lines a person can read: each step's action, then the state, up to
    /// the first state that breaks a property; undisturbed steps that change nothing but the
    /// clock are folded into one line.
    pub fn trace(&self, path: &stateright::Path<State, Action>) -> String {
        let mut out = String::new();
        let end = self.depth(path);
        let mut last: Option<String> = None;
        let mut quiet = 0;
        let mut action_in: Option<Action> = None;
        for (state, action) in path.clone().into_vec().into_iter().take(end + 1) {
            let action = if self.violates(&state) { None } else { action };
            let rest = self.describe_rest(&state);
            let same = action_in == Some(Action::Step(Disturb::None))
                && last.as_deref() == Some(rest.as_str())
                && action == Some(Action::Step(Disturb::None));
            if same {
                quiet += 1;
            } else {
                if quiet > 0 {
                    let _ = writeln!(out, "    ... {quiet} more quiet steps");
                    quiet = 0;
                }
                if let Some(a) = action_in {
                    let _ = writeln!(out, "    -> {a:?}");
                }
                let _ = writeln!(out, "  {}", self.describe(&state));
            }
            last = Some(rest);
            action_in = action;
        }
        out
    }
}

fn member_name(member: crate::Member) -> &'static str {
    match member {
        crate::Member::Leader => "leader",
        crate::Member::Follower => "follower",
    }
}
