//! A Stateright model of zklock's first promise (issue 52): a holder's lease reads `held` only
//! while ZooKeeper cannot have given its lock to anyone else. docs/safety.md ("When a lease turns
//! lost") has the argument this checks; model/README.md says what is modelled and from which
//! ZooKeeper source each behaviour comes.
//!
//! Holder A's lifeline is the client's own code: `core/src/sessions/lifeline_math.rs` is
//! compiled into this crate as it stands (the `#[path]` below), so the deadline, the margin, the
//! gap and the choice of j, k and m are the ones `lifeline.rs` runs. Everything else is
//! abstracted as far as the property allows; times are milliseconds on one clock, advanced in
//! steps of [`STEP_MS`].

use std::time::Duration;

use stateright::{Model, Property};

#[path = "../../core/src/sessions/lifeline_math.rs"]
#[allow(dead_code)] // the model uses the formulas, not every helper the client needs
mod lifeline_math;

use lifeline_math::Chain;

mod b;
mod carrier;
mod client;
mod crashes;
mod disturb;
mod moves;
mod servers;
mod trace;

use b::b_receives;
pub use carrier::Carrier;
pub use crashes::Member;
use disturb::DISTURBS;
pub use disturb::{
    Disturb, HOLD_C_TO_CLIENT, HOLD_C_TO_MEMBER, HOLD_DOWN, HOLD_TO_B, HOLD_TO_CLIENT,
    HOLD_TO_MEMBER, HOLD_UP,
};
use servers::leader_receives;
pub use servers::{Down, Up};

/// The property: whenever A's lease reads `held`, nobody else holds.
pub const ONE_HOLDER: &str = "one holder: A reads held only while B cannot hold";
/// The farewell's property: A's farewell closes its session, and so hands the lock to B, only
/// once A's holder let go of its lost lease.
pub const LET_GO_FIRST: &str = "the farewell hands the lock on only after A's holder let go";
/// The lock-delay's property (`LeaseModel::lock_delay_ms`): when A's node went without a clean
/// release, B holds only a lock-delay after A's lease turned `lost`, so A's holder, told `lost`,
/// has that long to stop what it does under the lock.
pub const DELAYED: &str =
    "after an unclean hand-over B holds only a lock-delay after A's lease turned lost";
/// The example that shows B's side is not vacuous: B holds after A's node went without a
/// clean release (after the lock-delay, when there is one).
pub const B_HELD: &str = "B holds after A's node went without a clean release";
/// The example that shows the model is not vacuous.
pub const KEPT: &str = "A's lease is kept past its session's first possible expiry";
/// The example that shows a reconnect is checked (`LeaseModel::reconnect`).
pub const MOVED: &str = "A's lease is kept past its first possible expiry after A moved";
/// The example that shows a restarted follower serves A again (`LeaseModel::restart`).
pub const BACK: &str =
    "A's lease is kept past its first possible expiry on the follower that restarted";
/// The example that shows the shared chain or the leader skip is checked (issue 54): A's lease
/// is kept by it past the session's first possible expiry.
pub const UNCHAINED: &str =
    "A's lease is kept past its first possible expiry on a carrier's chain or the leader skip";

/// The clock's step: every action happens at a step's moment, and time moves one step at once
/// (`LeaseModel::step_ms`, this unless a check says otherwise).
pub const STEP_MS: u32 = 100;

/// The tick the client assumed for a session timeout when the user named none, before it
/// learned the servers' tick at connect (issue 53): ZooKeeper's sample 2 s, or T/5 when that is
/// shorter. Mutation (b) puts that rule back.
pub fn default_tick_ms(timeout_ms: u32) -> u32 {
    const SAMPLE_TICK_MS: u32 = 2_000;
    SAMPLE_TICK_MS.min(timeout_ms / 5)
}

/// Whether the client accepts a session timeout for a tick (`lifeline_math::timing_fits`:
/// four ticks at least).
pub fn timing_fits(timeout_ms: u32, tick_ms: u32) -> bool {
    lifeline_math::timing_fits(ms_(timeout_ms), ms_(tick_ms))
}

/// A deliberate flaw in the client, which the checker must catch (each a test in
/// tests/mutations.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mutation {
    /// The client as it is.
    None,
    /// (a) Any answered request proves that the leader touched the session when it was sent,
    /// not only a chain j, k, m of heartbeats answered through the leader.
    AnyAnswerProves,
    /// (b) The client assumes this tick (ms) while the servers run `LeaseModel::server_tick_ms`.
    AssumedTick(u32),
    /// (c) The farewell goes out with the give-up, before `lost` reaches the holder (issue 33's
    /// order), instead of once its time has come and the holder let go.
    FarewellFirst,
    /// (d) Plain pings instead of `sync` heartbeats, and a proof from `syncLimit`: a request
    /// answered by a member that has not dropped its clients proves that the leader touched the
    /// session `syncLimit` ticks before it was sent (the member heard its leader that recently,
    /// and a leader drops a follower whose ping replies stop for `syncLimit` ticks).
    PingsAndSyncLimit,
    /// (e) The margin without its share for the clocks' rates (`lifeline_math::margin`: 200 ms
    /// plus 2% of T) and without the 200 ms for the lost signal, which the model does not
    /// spend: no margin, against a clock of A's that runs slow (`client_rate_permille`).
    NoClockRateShare,
    /// (f) The shared chain's carrier on the other member than A's (A on a follower, C on the
    /// leader): C's syncs never pass A's member's learner stream.
    CarrierElsewhere,
    /// (g) The leader skip (any answered request proves its send time) for a session that is
    /// on a follower.
    SkipOnFollower,
    /// (h) The carrier's answered syncs recorded as A's own heartbeats (`Chain::record`), so
    /// that one can be j as well as k or m, though it touched C's session, not A's.
    CarriedAsOwn,
    /// (i) The leader skip proving the answered request's send time itself, as issue 54 first
    /// had it, instead of a gap before it.
    SkipWithoutGap,
    /// (j) B takes any event of its watch for its turn, not only `NodeDeleted`: a connection's
    /// loss, which some clients hand to every registered watcher, becomes B's turn.
    BTurnOnAnyEvent,
    /// (k) B holds at once on the watch's event, without the lock-delay, even when A's node
    /// went without a clean release (no marker).
    SkipLockDelay,
}

/// Which of the client's links to its member, and of the member's to the leader, a fault cut.
/// A cut direction drops what it holds and everything sent on it later: a TCP stream loses no
/// message from its middle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Link {
    ClientToMember,
    MemberToClient,
    FollowerToLeader,
    LeaderToFollower,
    /// The carrier's connection (`LeaseModel::shared`), each way.
    CarrierToMember,
    MemberToCarrier,
    /// B's connection, from B's member to B (`LeaseModel::b_faults`): the watch's event.
    MemberToB,
}

const CARRIER_LINKS: [Link; 2] = [Link::CarrierToMember, Link::MemberToCarrier];

const LINKS: [Link; 4] = [
    Link::ClientToMember,
    Link::MemberToClient,
    Link::FollowerToLeader,
    Link::LeaderToFollower,
];

/// The bounds of one check.
#[derive(Clone, Debug)]
pub struct LeaseModel {
    /// The session timeout T the server granted (ms).
    pub timeout_ms: u32,
    /// The servers' `tickTime` (ms).
    pub server_tick_ms: u32,
    /// `syncLimit`: a follower that heard nothing from its leader for this many ticks drops its
    /// clients (`Learner` sets it as its socket's read timeout).
    pub sync_limit: u32,
    /// Holder A is connected to a follower (else to the leader).
    pub on_follower: bool,
    /// Time stops here (ms).
    pub horizon_ms: u32,
    /// How many link directions may be cut.
    pub max_cuts: u8,
    /// How many messages a member-to-member stream may hold before time must wait for the
    /// receiver: the longest pause of a follower (or of the leader's reading), in leader pings.
    pub max_queue: usize,
    /// How many steps may be disturbed (a slow link, a paused process).
    pub max_disturbed: u8,
    /// How many reads A's program may make (each answered by its member alone, recorded by
    /// the lifeline only under mutation (a)).
    pub max_reads: u8,
    /// Whether A's leader may be deposed (A on the leader).
    pub depose: bool,
    /// The clock's step (ms).
    pub step_ms: u32,
    /// Whether a given-up session sends its farewell (`core/src/sessions/farewell.rs`), and
    /// A's holder may let go of its lost lease (at any moment after `lost`, or never).
    pub farewell: bool,
    /// The follower's JVM may pause once for this long (ms; 0: never), whatever the other
    /// faults: it reads nothing meanwhile, and on resuming serves the client requests that
    /// waited before its learner thread reads that its leader dropped it.
    pub follower_pause_ms: u32,
    /// A's session starts idle (no heartbeats, only the transport's pings) and its acquire
    /// comes at any moment: the lease is granted once the deadline is `floor` ahead (the
    /// session is armed), else A's node is first but A does not hold yet (`session/demand.rs`).
    pub from_idle: bool,
    /// How fast A's clock runs against the servers' (‰): below 1000 it runs slow, so its
    /// deadline comes late; the margin's 2% of T is for that.
    pub client_rate_permille: u32,
    /// A reconnects to the other member with the same session when its connection breaks: its
    /// member closed it (a follower that dropped its clients, a crashed member: every time), or
    /// A read nothing on it for the transport's read timeout (once; src/moves.rs).
    pub reconnect: bool,
    /// A starts on the leader, and there is a follower (`on_follower` false): with `reconnect`,
    /// A moves to it when its connection to the leader is silent for the read timeout.
    pub with_follower: bool,
    /// A member may crash once, at any moment: the follower (when there is one) or the leader
    /// (src/crashes.rs).
    pub crash: bool,
    /// The shared chain (src/carrier.rs): a carrier session of A's process on A's member sends
    /// the syncs every `carrier_interval`; A sends only the transport's pings, and what a
    /// catch-up needs, until its or C's connection breaks. Only where `sharing_fits` (at
    /// T = 2 s the client runs its own chain, and so does the model).
    pub shared: bool,
    /// The leader skip (src/carrier.rs): A, on the leader and never moved, takes any answered
    /// request as proof of its send time, and sends plain pings as heartbeats.
    pub leader_skip: bool,
    /// B's link may be slow (a disturbed step) or its member-to-B direction cut (one of
    /// `max_cuts`), after which B reconnects at any later moment (src/b.rs).
    pub b_faults: bool,
    /// Chubby's lock-delay (ms; 0: none): B, told A's node is gone, holds only this long after
    /// unless A released cleanly (its release marker; `core/src/recipes/mutex_queue.rs`).
    pub lock_delay_ms: u32,
    /// B's connection is to the follower (else to the member that deletes A's node first): the
    /// follower fires B's watch when it applies the commit it reads from its leader (src/b.rs).
    pub b_on_follower: bool,
    /// A crashed follower restarts once, at any moment after its crash (src/crashes.rs), and A
    /// may dial it again when its connection to the leader goes silent.
    pub restart: bool,
    /// A's holder may release its lease cleanly at any moment while it reads `held`: the
    /// delete and the marker in one multi (`Lease::release`).
    pub release: bool,
    pub mutation: Mutation,
}

impl LeaseModel {
    /// T = 2 s and a 500 ms tick (the shortest timing zklock accepts for that tick), syncLimit
    /// 5, one cut, two requests in flight, holder on a follower, no farewell.
    pub fn small() -> LeaseModel {
        LeaseModel {
            timeout_ms: 2000,
            server_tick_ms: 500,
            sync_limit: 5,
            on_follower: true,
            horizon_ms: 3000,
            max_cuts: 1,
            max_queue: 2,
            max_disturbed: 4,
            max_reads: 0,
            depose: false,
            step_ms: STEP_MS,
            farewell: false,
            follower_pause_ms: 0,
            from_idle: false,
            client_rate_permille: 1000,
            reconnect: false,
            with_follower: false,
            crash: false,
            shared: false,
            leader_skip: false,
            restart: false,
            b_on_follower: false,
            b_faults: false,
            lock_delay_ms: 0,
            release: false,
            mutation: Mutation::None,
        }
    }

    /// Whether A shares a carrier's chain from its start: `shared`, at a timing where the
    /// client would (`lifeline_math::sharing_fits`).
    fn sharing(&self) -> bool {
        self.shared && lifeline_math::sharing_fits(self.timeout(), self.client_tick())
    }

    /// The tick the client computes with.
    fn client_tick(&self) -> Duration {
        match self.mutation {
            Mutation::AssumedTick(ms) => ms_(ms),
            _ => ms_(self.server_tick_ms),
        }
    }

    fn timeout(&self) -> Duration {
        ms_(self.timeout_ms)
    }

    /// A's lease turns lost at this moment (ms), as `Lifeline::lost_at` computes it.
    pub fn deadline_ms(&self, state: &State) -> u32 {
        let (proven, timeout, tick) = (state.chain.proven, self.timeout(), self.client_tick());
        let at = match self.mutation {
            // The margin's other share, 200 ms, is for the lost signal to reach the holder,
            // which the model does not need (a lease reads `lost` at its deadline): without
            // the rate share nothing is left.
            Mutation::NoClockRateShare => (proven + timeout).saturating_sub(tick),
            _ => lifeline_math::deadline(proven, timeout, tick),
        };
        u32::try_from(at.as_millis()).unwrap_or(u32::MAX)
    }

    /// Whether A's lease reads `held`: its deadline is still ahead, and never passed before
    /// (`lost` is final: the lifeline gives the session up when its deadline passes).
    pub fn a_holds(&self, state: &State) -> bool {
        state.armed
            && !state.given_up
            && !state.released
            && self.client_now(state) < self.deadline_ms(state)
    }

    /// A's clock (ms), which runs at `client_rate_permille` of the servers' (one clock for the
    /// servers: only their expiry and A's deadline meet).
    pub fn client_now(&self, state: &State) -> u32 {
        u32::try_from(u64::from(state.now) * u64::from(self.client_rate_permille) / 1000)
            .unwrap_or(u32::MAX)
    }
}

fn ms_(ms: u32) -> Duration {
    Duration::from_millis(u64::from(ms))
}

/// A request of A's: a `sync` heartbeat (answered through the leader when A is on a follower)
/// or a request the member answers by itself (the transport's ping, a read).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Request {
    pub sync: bool,
    /// A heartbeat (else the transport's ping or a read).
    pub beat: bool,
    /// A ConnectRequest with A's session (a reconnect, src/moves.rs); answered `refused` when
    /// the member found the session expired.
    pub connect: bool,
    pub refused: bool,
    /// Sent by the carrier C on its own connection (`LeaseModel::shared`).
    pub carrier: bool,
    pub sent: u32,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.carrier {
            return write!(f, "C's sync of {}", self.sent);
        }
        let kind = match (self.connect, self.refused, self.sync, self.beat) {
            (true, true, _, _) => "connect refused",
            (true, false, _, _) => "connect",
            (_, _, true, _) => "sync",
            (_, _, false, true) => "ping beat",
            _ => "ping",
        };
        write!(f, "{kind} of {}", self.sent)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    /// The clock (ms).
    pub now: u32,
    /// A's lifeline (the client's own code), times as durations since 0.
    chain: Chain<Duration>,
    pub beats_in_flight: u8,
    pub pings_in_flight: u8,
    /// When the client last decided on a heartbeat (ms), and last sent anything.
    pub last_beat: Option<u32>,
    pub last_send: u32,
    pub to_member: Vec<Request>,
    pub to_client: Vec<Request>,
    pub up: Vec<Up>,
    pub down: Vec<Down>,
    pub follower_touched: bool,
    /// When the follower last heard from its leader (ms).
    pub follower_heard: u32,
    /// When the leader last touched A's session (ms).
    pub leader_touch: u32,
    pub expired: bool,
    pub next_ping: u32,
    pub cut: Vec<Link>,
    /// How many steps were disturbed so far.
    pub disturbed: u8,
    /// A's deadline passed: its lease is lost for good.
    pub given_up: bool,
    pub reads: u8,
    /// When A's leader lost its quorum (ms).
    pub deposed: Option<u32>,
    /// When A's session was given up (ms), and the touch its proof stood on then.
    pub given_up_at: Option<(u32, u32)>,
    /// A's holder let go of its lost lease (released it, or its command stopped).
    pub let_go: bool,
    /// The farewell was sent (and closed the session: B holds) or skipped.
    pub farewell_done: bool,
    /// The farewell closed A's session.
    pub farewell_closed: bool,
    /// When the leader last read from the follower (ms), and whether it dropped it.
    pub leader_heard: u32,
    pub follower_dropped: bool,
    /// The follower read that its leader dropped it, and dropped its clients.
    pub follower_closed: bool,
    /// The follower's JVM pause (ms): paused until then; `resumed` during the step it ends.
    pub paused_until: Option<u32>,
    pub resumed: bool,
    /// A's acquire began: its session proves (sends heartbeats).
    pub active: bool,
    /// A's deadline binds: its lease was granted on it (a fresh session is armed at once).
    pub armed: bool,
    /// How many link directions were cut (a cut of A's old connection stays counted after A
    /// reconnected; `cut` holds the directions cut now).
    pub cuts: u8,
    /// The member A's connection is to, and whether A reconnected (`LeaseModel::reconnect`).
    pub a_on: Member,
    pub moved: bool,
    /// The follower closed A's connection: A reads the close after what came before it.
    pub closed_by_member: bool,
    /// A saw its connection break and its ConnectRequest is out: the send time (A's clock)
    /// of the latest request answered before (`Lifeline::latest_answered`, read by the
    /// session's monitor), which the reconnect proves once answered.
    pub reconnecting: Option<u32>,
    /// When A last read anything on its connection (A's clock; kept only when A may reconnect).
    pub last_recv: u32,
    /// A's connection came back: its next heartbeat goes at once (`Session::relinked`).
    pub relinked: bool,
    /// Which member crashed, and when (ms).
    pub crashed: Option<(Member, u32)>,
    /// When the new leader last touched A's session, after A reconnected to it from a deposed
    /// leader (ms).
    pub new_leader_touch: Option<u32>,
    /// The carrier whose syncs A's chain records, while A shares it.
    pub carrier: Option<Carrier>,
    /// The crashed follower restarted (`LeaseModel::restart`), and A moved back to it.
    pub restarted: bool,
    pub back: bool,
    /// When A's lease turned `lost` (the servers' clock, ms): the lock-delay's measure.
    pub lost_at: Option<u32>,
    /// A's holder released its lease cleanly (its node deleted with the release marker).
    pub released: bool,
    /// B (src/b.rs): its watch on A's node fired (ZooKeeper deleted the node), the
    /// `NodeDeleted` event is on B's link, B heard it (when, ms). A cut of B's link is in `cut`.
    pub fired: bool,
    pub to_b: bool,
    pub b_heard: Option<u32>,
    /// The member B's connection is to, and whether that member closed it (B reads the close
    /// after the event, if one was sent before it).
    pub b_on: Member,
    pub b_closed: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// Time moves one step. The leader expires what is due and pings; A, unless `pause`d, sends
    /// what the client's schedule says is due; then every stream not in `hold` delivers all it
    /// holds, in order, until nothing moves. A held stream delivers nothing this step: a slow
    /// link or a paused reader (a follower paused is a hold of its two inbound streams; a paused
    /// A neither sends nor reads its answers).
    Step(Disturb),
    /// A fault cuts one direction for good.
    Cut(Link),
    /// A's program reads something (its lock's children, a node): its member answers alone.
    Read,
    /// The leader, A's member, loses its quorum: it answers and touches alone until it notices,
    /// and the others elect a new leader (A on the leader only; `LeaseModel::depose`).
    Depose,
    /// A's holder, told `lost`, lets go of its lease.
    LetGo,
    /// The follower's JVM stops for `LeaseModel::follower_pause_ms`.
    PauseFollower,
    /// A's program begins its acquire (`LeaseModel::from_idle`).
    Acquire,
    /// A member crashes (`LeaseModel::crash`).
    Crash(Member),
    /// The crashed follower restarts (`LeaseModel::restart`).
    Restart,
    /// A's holder releases its lease cleanly (`LeaseModel::release`).
    Release,
    /// B sees its cut connection break and reconnects (src/b.rs).
    BReconnects,
}

impl State {
    fn is_cut(&self, link: Link) -> bool {
        self.cut.contains(&link)
    }

    fn push_to_client(&mut self, r: Request) {
        if !self.is_cut(Link::MemberToClient) {
            self.to_client.push(r);
        }
    }
}

impl Model for LeaseModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        // A's session was opened at 0 (the leader touched it then), A's node is the lowest and
        // its lease is held; B's node comes next.
        let a_on = if self.on_follower {
            Member::Follower
        } else {
            Member::Leader
        };
        vec![State {
            now: 0,
            chain: Chain::new(Duration::ZERO),
            beats_in_flight: 0,
            pings_in_flight: 0,
            last_beat: None,
            last_send: 0,
            to_member: Vec::new(),
            to_client: Vec::new(),
            up: Vec::new(),
            down: Vec::new(),
            follower_touched: false,
            follower_heard: 0,
            leader_touch: 0,
            expired: false,
            next_ping: self.server_tick_ms / 2,
            cut: Vec::new(),
            disturbed: 0,
            given_up: false,
            reads: 0,
            deposed: None,
            given_up_at: None,
            let_go: false,
            farewell_done: false,
            farewell_closed: false,
            leader_heard: 0,
            follower_dropped: false,
            follower_closed: false,
            paused_until: None,
            resumed: false,
            active: !self.from_idle,
            armed: !self.from_idle,
            cuts: 0,
            a_on,
            moved: false,
            closed_by_member: false,
            reconnecting: None,
            last_recv: 0,
            relinked: false,
            crashed: None,
            new_leader_touch: None,
            carrier: self
                .sharing()
                .then(|| Carrier::new(self.carrier_member(a_on))),
            restarted: false,
            back: false,
            lost_at: None,
            released: false,
            fired: false,
            to_b: false,
            b_heard: None,
            b_on: if self.b_on_follower {
                Member::Follower
            } else {
                Member::Leader
            },
            b_closed: false,
        }]
    }

    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        // Once B holds and A's lease is over for good (given up or released), no property can
        // fail later: A never reads `held` again, the farewell has closed the session or never
        // will, and a hold too soon only gets later. The checks of B end the run there; the
        // older ones (B implicit: no B faults, no lock-delay) explore on, as their documented
        // state counts do.
        let b_checked = self.b_faults || self.lock_delay_ms > 0;
        if b_checked && self.b_holds(s) && (s.given_up || s.released) {
            return;
        }
        if s.now + self.step_ms <= self.horizon_ms {
            for disturb in DISTURBS {
                let hold = self.hold(s, disturb, false);
                let c = s.carrier.as_ref();
                let lens = [
                    s.to_member.len(),
                    s.to_client.len(),
                    s.up.len(),
                    s.down.len(),
                    c.map_or(0, |c| c.to_member.len()),
                    c.map_or(0, |c| c.to_client.len()),
                ];
                // A stream may lag at most `max_queue` messages: pauses are bounded.
                let too_long = (0..6).any(|i| hold & (1 << i) != 0 && lens[i] >= self.max_queue)
                    // B's link holds one event at most: slowing it with none is no new state.
                    || (hold & HOLD_TO_B != 0 && !s.to_b);
                let useless = (!self.has_follower()
                    && matches!(
                        disturb,
                        Disturb::FollowerPaused
                            | Disturb::LeaderSlow
                            | Disturb::FollowerReadsLeaderFirst
                    ))
                    || (s.carrier.is_none() && disturb == Disturb::CarrierLinkSlow)
                    || (!self.b_faults && disturb == Disturb::BLinkSlow);
                let allowed = disturb == Disturb::None || s.disturbed < self.max_disturbed;
                if allowed && !too_long && !useless {
                    actions.push(Action::Step(disturb));
                }
            }
        }
        if s.reads < self.max_reads
            && s.pings_in_flight == 0
            && s.last_send < self.client_now(s)
            && s.reconnecting.is_none()
        {
            actions.push(Action::Read);
        }
        if self.crash && s.crashed.is_none() && s.deposed.is_none() {
            actions.push(Action::Crash(Member::Leader));
            if self.has_follower() {
                actions.push(Action::Crash(Member::Follower));
            }
        }
        if self.restart && matches!(s.crashed, Some((Member::Follower, _))) && !s.restarted {
            actions.push(Action::Restart);
        }
        if self.depose && !self.has_follower() && s.deposed.is_none() && s.crashed.is_none() {
            actions.push(Action::Depose);
        }
        if self.from_idle && !s.active {
            actions.push(Action::Acquire);
        }
        if self.follower_pause_ms > 0 && self.has_follower() && s.paused_until.is_none() {
            actions.push(Action::PauseFollower);
        }
        if self.farewell && s.given_up && !s.let_go {
            actions.push(Action::LetGo);
        }
        if s.cuts < self.max_cuts {
            for link in LINKS {
                let member_link = matches!(link, Link::FollowerToLeader | Link::LeaderToFollower);
                if !s.is_cut(link) && (self.has_follower() || !member_link) {
                    actions.push(Action::Cut(link));
                }
            }
            if s.carrier.is_some() {
                for link in CARRIER_LINKS {
                    if !s.is_cut(link) {
                        actions.push(Action::Cut(link));
                    }
                }
            }
            // Only while B waits: once it heard the event, its link carries nothing we model.
            if self.b_faults && !s.is_cut(Link::MemberToB) && s.b_heard.is_none() {
                actions.push(Action::Cut(Link::MemberToB));
            }
        }
        if self.b_broken(s) {
            actions.push(Action::BReconnects);
        }
        if self.release && self.a_holds(s) {
            actions.push(Action::Release);
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut s = last.clone();
        match action {
            Action::Step(disturb) => {
                if disturb != Disturb::None {
                    s.disturbed += 1;
                }
                s.now += self.step_ms;
                s.resumed = false;
                let mut paused = false;
                if let Some(until) = s.paused_until {
                    if s.now < until {
                        paused = true;
                    } else if s.now < until + self.step_ms {
                        s.resumed = true;
                    }
                }
                self.servers_step(&mut s);
                // Read on every step whatever A does: a paused holder's lease is lost at its
                // deadline, and it reads so when it resumes.
                // An acquire is granted once the deadline is `floor` ahead (`Session::rearm`).
                let floor = lifeline_math::floor(self.timeout(), self.client_tick());
                let now = self.client_now(&s);
                if s.active && !s.armed && ms_(self.deadline_ms(&s)) >= ms_(now) + floor {
                    s.armed = true;
                }
                if s.armed && !s.given_up && now >= self.deadline_ms(&s) {
                    s.given_up = true;
                    let proven = u32::try_from(s.chain.proven.as_millis()).unwrap_or(u32::MAX);
                    s.given_up_at = Some((now, proven));
                    // Kept only for the lock-delay's property (else it splits states for naught).
                    s.lost_at = (self.lock_delay_ms > 0).then_some(s.now);
                }
                self.farewell_step(&mut s);
                self.node_deleted(&mut s);
                if disturb != Disturb::ClientPaused {
                    self.notice_disconnect(&mut s);
                    self.carrier_notices_break(&mut s);
                    self.client_sends(&mut s);
                }
                // What is held this step (A may have moved to the leader just now).
                let hold = self.hold(&s, disturb, paused);
                // (Not while the follower's JVM is paused: it reads nothing then.)
                if disturb == Disturb::FollowerReadsLeaderFirst && hold & HOLD_DOWN == 0 {
                    while !s.down.is_empty() {
                        self.follower_receives(&mut s);
                    }
                }
                loop {
                    let mut moved = false;
                    if hold & HOLD_TO_MEMBER == 0 && !s.to_member.is_empty() {
                        self.member_receives(&mut s);
                        moved = true;
                    }
                    if hold & HOLD_C_TO_MEMBER == 0
                        && s.carrier.as_ref().is_some_and(|c| !c.to_member.is_empty())
                    {
                        self.carrier_member_receives(&mut s);
                        moved = true;
                    }
                    if hold & HOLD_UP == 0 && !s.up.is_empty() {
                        leader_receives(&mut s);
                        moved = true;
                    }
                    if hold & HOLD_DOWN == 0 && !s.down.is_empty() {
                        self.follower_receives(&mut s);
                        moved = true;
                    }
                    if hold & HOLD_TO_CLIENT == 0 && !s.to_client.is_empty() {
                        self.client_receives(&mut s);
                        moved = true;
                    }
                    if hold & HOLD_C_TO_CLIENT == 0
                        && s.carrier.as_ref().is_some_and(|c| !c.to_client.is_empty())
                    {
                        self.carrier_receives(&mut s);
                        moved = true;
                    }
                    if hold & HOLD_TO_B == 0 && s.to_b {
                        b_receives(self, &mut s);
                        moved = true;
                    }
                    if !moved {
                        break;
                    }
                }
                self.follower_closes_clients(&mut s);
            }
            Action::Depose => s.deposed = Some(s.now),
            Action::Acquire => s.active = true,
            Action::Crash(member) => self.crash_member(&mut s, member),
            Action::Restart => self.restart_follower(&mut s),
            Action::PauseFollower => s.paused_until = Some(s.now + self.follower_pause_ms),
            Action::LetGo => {
                s.let_go = true;
                self.farewell_step(&mut s);
                self.node_deleted(&mut s);
                if s.to_b {
                    b_receives(self, &mut s);
                }
            }
            Action::Release => self.release_cleanly(&mut s),
            Action::BReconnects => self.b_reconnects(&mut s),
            Action::Read => {
                s.reads += 1;
                s.pings_in_flight += 1;
                self.send(&mut s, false, false);
            }
            Action::Cut(link) => {
                s.cuts += 1;
                s.cut.push(link);
                match link {
                    Link::ClientToMember => s.to_member.clear(),
                    Link::MemberToClient => {
                        s.to_client.clear();
                        s.closed_by_member = false;
                    }
                    Link::FollowerToLeader => s.up.clear(),
                    Link::LeaderToFollower => s.down.clear(),
                    Link::CarrierToMember => {
                        if let Some(c) = s.carrier.as_mut() {
                            c.to_member.clear();
                        }
                    }
                    Link::MemberToCarrier => {
                        if let Some(c) = s.carrier.as_mut() {
                            c.to_client.clear();
                            c.closed = false;
                        }
                    }
                    Link::MemberToB => s.to_b = false,
                }
            }
        }
        Some(s)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always(ONE_HOLDER, |model: &LeaseModel, s: &State| {
                !(model.a_holds(s) && model.b_holds(s))
            }),
            Property::always(LET_GO_FIRST, |_: &LeaseModel, s: &State| {
                !s.farewell_closed || s.let_go
            }),
            Property::always(DELAYED, |model: &LeaseModel, s: &State| !model.too_soon(s)),
            Property::sometimes(B_HELD, |model: &LeaseModel, s: &State| {
                model.b_holds(s) && !s.released
            }),
            // Not vacuous: the proof does keep a lease past the moment an unproven session
            // could first expire.
            Property::sometimes(KEPT, |model: &LeaseModel, s: &State| {
                model.a_holds(s) && s.now > model.expiry_ms(0)
            }),
            Property::sometimes(UNCHAINED, |model: &LeaseModel, s: &State| {
                (s.carrier.is_some() || model.skips_chain(s))
                    && model.a_holds(s)
                    && s.now > model.expiry_ms(0)
            }),
            Property::sometimes(BACK, |model: &LeaseModel, s: &State| {
                s.back && s.reconnecting.is_none() && model.a_holds(s) && s.now > model.expiry_ms(0)
            }),
            Property::sometimes(MOVED, |model: &LeaseModel, s: &State| {
                s.moved
                    && s.reconnecting.is_none()
                    && model.a_holds(s)
                    && s.now > model.expiry_ms(0)
            }),
        ]
    }
}
