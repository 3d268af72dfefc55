//! Where one acquire attempt stands in a listing of its lock path, read in one walk over the
//! names while the reply is decoded (`Client::read_children`): the node that blocks it, how
//! many more would block it after that one, and a node of another election layout.
//!
//! Nothing else of the listing is kept. A thousand waiters that list a thousand-deep queue at
//! once keep a thousand answers, not a million decoded names (issue 34, bench scenario s5).
//! The answer is the one a sorted queue gives (`protocol::queue_of`, then the recipe's rule):
//! the test below checks both ways agree.

use std::sync::{Arc, OnceLock};

use zklock_wire::client::EachName;

use crate::base::protocol::{read_name, Contender, ElectionStyle, NodeKind};

/// What an attempt needs of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Place {
    /// Our node's name; `None` when no lock node carries our attempt's prefix.
    pub own: Option<Box<str>>,
    /// The node we must wait for (its name), and how many other nodes before us would still
    /// block us after it; `None` when the lock is ours. For an exclusive node, the node just
    /// before us; for a read node, the nearest write node before us (Curator's rule).
    pub blocker: Option<(Box<str>, usize)>,
    /// With an election's style: the first node, in queue order, of another layout
    /// (`ElectionStyle::is_foreign`).
    pub foreign: Option<Contender>,
}

/// Reads `names` for the attempt whose node's name starts with `own_prefix` (its protected
/// prefix, or the whole name once known: unique to the attempt either way) and that asks for a
/// node of `kind`. Queue order is by sequence relative to ours, with wrapping arithmetic, then
/// by name (`protocol::sort_queue`).
pub(crate) fn place_of<'a, I>(
    names: I,
    own_prefix: &str,
    kind: NodeKind,
    style: Option<ElectionStyle>,
) -> Place
where
    I: Iterator<Item = &'a str> + Clone,
{
    let own = names
        .clone()
        .filter(|n| n.starts_with(own_prefix))
        .find_map(|n| read_name(n).map(|parts| (n, parts)));
    // Without our node the order is the first lock node's (as `queue_of`), for the foreign node
    // the error names.
    let reference = match own {
        Some((_, parts)) => parts.sequence,
        None => names
            .clone()
            .find_map(read_name)
            .map_or(0, |parts| parts.sequence),
    };
    let own_key = own.map(|(name, _)| (0, name));
    let mut blocking = 0usize;
    let mut nearest: Option<(i32, &str)> = None;
    let mut foreign: Option<((i32, &str), Contender)> = None;
    for name in names {
        let Some(parts) = read_name(name) else {
            continue;
        };
        let key = (parts.sequence.wrapping_sub(reference), name);
        if let Some(style) = style {
            let other = ElectionStyle::of_parts(parts.kind, parts.library) != Some(style);
            if other && foreign.as_ref().is_none_or(|(k, _)| key < *k) {
                foreign = Some((key, parts.contender(name)));
            }
        }
        let before_us = own_key.is_some_and(|own| key < own);
        if before_us && (kind.is_exclusive() || parts.kind.is_exclusive()) {
            blocking += 1;
            if nearest.is_none_or(|k| key > k) {
                nearest = Some(key);
            }
        }
    }
    Place {
        own: own.map(|(name, _)| Box::from(name)),
        blocker: nearest.map(|(_, name)| (Box::from(name), blocking - 1)),
        foreign: foreign.map(|(_, contender)| contender),
    }
}

/// Our node, as the reader of a listing knows it before the listing's first name.
#[derive(Debug, Clone)]
pub(crate) enum Own {
    /// Its whole name: the node is known.
    Named(Box<str>),
    /// The name the create pipelined before the listing got, set where the create's reply is
    /// decoded (`Client::create_noting`), before the listing's first name is read (the server
    /// answers in order); unset when that create failed.
    Created(Arc<OnceLock<Box<str>>>),
}

/// [`place_of`] read a name at a time as the listing arrives (`Client::read_children_each`),
/// keeping only the answer's parts: the nearest blocker's name, a count, the first foreign
/// node. One walk needs our sequence before the first name, so our node's name comes from
/// [`Own`]; `place_of`'s order by sequence relative to ours is then kept in one pass.
///
/// `place_of` takes as ours the first name with our prefix that is a lock node. The prefix is
/// the attempt's own (a fresh UUID, or the whole name), so that is the node [`Own`] names; if
/// another node with our prefix came first, the answer is `None` and the caller reads the
/// listing again with [`Placer::keeping`] (the names kept, `place_of` itself). Without a name
/// from [`Own`] (or one that is no lock node) the names are kept the same way.
#[derive(Debug, Clone)]
pub(crate) struct Placer {
    own_prefix: Arc<str>,
    own: Own,
    kind: NodeKind,
    style: Option<ElectionStyle>,
    keep: bool,
    walk: Option<Walk>,
}

#[derive(Debug, Clone)]
enum Walk {
    OnePass(Box<OnePass>),
    Kept(Vec<Box<str>>),
}

#[derive(Debug, Clone)]
struct OnePass {
    own: Box<str>,
    /// Our sequence: the order's reference.
    reference: i32,
    /// Whether the first name with our prefix that is a lock node was ours (`None`: none yet).
    first_own: Option<bool>,
    /// The first lock node's sequence: the reference when our node is not listed.
    first_sequence: Option<i32>,
    blocking: usize,
    /// The nearest blocker so far: its key's sequence and its name.
    nearest: Option<(i32, String)>,
    /// The first foreign node in our order, and in the order without our node.
    foreign: Option<(i32, Contender)>,
    foreign_unlisted: Option<(i32, Contender)>,
}

impl Placer {
    pub(crate) fn new(
        own_prefix: &str,
        own: Own,
        kind: NodeKind,
        style: Option<ElectionStyle>,
    ) -> Placer {
        Placer {
            own_prefix: Arc::from(own_prefix),
            own,
            kind,
            style,
            keep: false,
            walk: None,
        }
    }

    /// The same reader, keeping the names (for a listing one walk could not place).
    pub(crate) fn keeping(&self) -> Placer {
        Placer {
            keep: true,
            walk: None,
            ..self.clone()
        }
    }

    fn start(&self) -> Walk {
        let own = match &self.own {
            Own::Named(name) => Some(name.clone()),
            Own::Created(cell) => cell.get().cloned(),
        };
        let parsed = own.and_then(|own| read_name(&own).map(|parts| (own, parts.sequence)));
        match parsed {
            Some((own, reference)) if !self.keep => Walk::OnePass(Box::new(OnePass {
                own,
                reference,
                first_own: None,
                first_sequence: None,
                blocking: 0,
                nearest: None,
                foreign: None,
                foreign_unlisted: None,
            })),
            _ => Walk::Kept(Vec::new()),
        }
    }
}

/// Keeps `candidate` when it comes before `kept` in the order (`(sequence, name)`).
fn keep_first(
    kept: &mut Option<(i32, Contender)>,
    key: i32,
    name: &str,
    candidate: impl Fn() -> Contender,
) {
    if kept
        .as_ref()
        .is_none_or(|(k, c)| (key, name) < (*k, c.name.as_str()))
    {
        *kept = Some((key, candidate()));
    }
}

impl EachName for Placer {
    /// `None`: another node with our prefix came first; read again with [`Placer::keeping`].
    type Output = Option<Place>;

    fn name(&mut self, name: &str) {
        let walk = match self.walk.take() {
            Some(walk) => walk,
            None => self.start(),
        };
        let w = match self.walk.insert(walk) {
            Walk::Kept(names) => {
                names.push(Box::from(name));
                return;
            }
            Walk::OnePass(w) => w,
        };
        let Some(parts) = read_name(name) else {
            return;
        };
        if w.first_own.is_none() && name.starts_with(&*self.own_prefix) {
            w.first_own = Some(name == &*w.own);
        }
        let first = *w.first_sequence.get_or_insert(parts.sequence);
        let key = parts.sequence.wrapping_sub(w.reference);
        if let Some(style) = self.style {
            if ElectionStyle::of_parts(parts.kind, parts.library) != Some(style) {
                let unlisted = parts.sequence.wrapping_sub(first);
                keep_first(&mut w.foreign, key, name, || parts.contender(name));
                keep_first(&mut w.foreign_unlisted, unlisted, name, || {
                    parts.contender(name)
                });
            }
        }
        let before_us = (key, name) < (0, &*w.own);
        if before_us && (self.kind.is_exclusive() || parts.kind.is_exclusive()) {
            w.blocking += 1;
            if w.nearest
                .as_ref()
                .is_none_or(|(k, n)| (key, name) > (*k, n.as_str()))
            {
                let n = w.nearest.get_or_insert_with(|| (key, String::new()));
                n.0 = key;
                n.1.clear();
                n.1.push_str(name);
            }
        }
    }

    fn finish(self) -> Option<Place> {
        let walk = match self.walk {
            Some(walk) => walk,
            None => self.start(),
        };
        let w = match walk {
            Walk::Kept(names) => {
                let names = names.iter().map(|n| &**n);
                return Some(place_of(names, &self.own_prefix, self.kind, self.style));
            }
            Walk::OnePass(w) => w,
        };
        match w.first_own {
            Some(false) => None,
            None => Some(Place {
                own: None,
                blocker: None,
                foreign: w.foreign_unlisted.map(|(_, c)| c),
            }),
            Some(true) => Some(Place {
                blocker: w
                    .nearest
                    .map(|(_, name)| (name.into_boxed_str(), w.blocking - 1)),
                own: Some(w.own),
                foreign: w.foreign.map(|(_, c)| c),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::protocol::queue_of;

    /// The answer the sorted queue gives: what `place_of` must agree with.
    fn by_sorting(names: &[String], own_prefix: &str, kind: NodeKind) -> Option<(String, usize)> {
        let me = names.iter().find(|n| n.starts_with(own_prefix))?;
        let reference = read_name(me)?.sequence;
        let queue = queue_of(names, Some(reference));
        let mine = queue.iter().position(|c| &c.name == me)?;
        let blocking: Vec<&Contender> = queue[..mine]
            .iter()
            .filter(|c| kind.is_exclusive() || c.kind.is_exclusive())
            .collect();
        blocking
            .last()
            .map(|c| (c.name.clone(), blocking.len() - 1))
    }

    fn place(names: &[&str], own: &str, kind: NodeKind) -> Place {
        place_of(names.iter().copied(), own, kind, None)
    }

    #[test]
    fn a_writer_waits_for_the_node_just_before_it_and_a_reader_for_the_nearest_writer() {
        let names = [
            "d__WRIT__0000000004",
            "a__WRIT__0000000001",
            "config",
            "c__READ__0000000003",
            "e__READ__0000000005",
            "b__READ__0000000002",
        ];
        let blocker = |own, kind| place(&names, own, kind).blocker;
        assert_eq!(blocker("a__", NodeKind::Write), None);
        assert_eq!(
            blocker("c__", NodeKind::Read),
            Some(("a__WRIT__0000000001".into(), 0))
        );
        assert_eq!(
            blocker("d__", NodeKind::Write),
            Some(("c__READ__0000000003".into(), 2))
        );
        assert_eq!(
            blocker("e__", NodeKind::Read),
            Some(("d__WRIT__0000000004".into(), 1))
        );
        assert_eq!(
            place(&names, "e__", NodeKind::Read).own.as_deref(),
            Some("e__READ__0000000005")
        );
    }

    #[test]
    fn an_attempt_whose_node_is_not_listed_has_no_place() {
        let gone = place(&["a-lock-0000000001", "zz"], "zz", NodeKind::Mutex);
        assert_eq!((gone.own, gone.blocker), (None, None));
        assert_eq!(place(&[], "zz", NodeKind::Mutex).own, None);
    }

    #[test]
    fn a_node_of_another_election_layout_is_found_first_in_queue_order() {
        let names = [
            "_c_0f8fad5b-d9cb-469f-a165-70867728950e-latch-0000000003",
            "9a8b7c6d5e4f30211203948576abcdef__lock__0000000009",
            "_c_1f8fad5b-d9cb-469f-a165-70867728950e-lock-0000000005",
            "_c_2f8fad5b-d9cb-469f-a165-70867728950e-latch-0000000004",
        ];
        let latch = place_of(
            names.iter().copied(),
            "_c_2f8fad5b",
            NodeKind::Latch,
            Some(ElectionStyle::Latch),
        );
        let foreign = latch.foreign.expect("a foreign node");
        assert_eq!(foreign.sequence, 5, "the earliest of the two foreign nodes");
        assert_eq!(
            latch.blocker.map(|(_, n)| n),
            Some(0),
            "only the latch before it"
        );
        let selector = place_of(
            names.iter().copied(),
            "_c_1f8fad5b",
            NodeKind::Mutex,
            Some(ElectionStyle::Selector),
        );
        assert_eq!(selector.foreign.map(|c| c.sequence), Some(3));
        assert_eq!(place(&names, "_c_1f8fad5b", NodeKind::Mutex).foreign, None);
    }

    /// A small generator (no dependency) for the queue tests: xorshift.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// The shapes of the random queues' nodes: zklock's and Curator's read and write locks,
    /// Curator's protected mutex and latch nodes, kazoo's lock and read lock nodes.
    #[derive(Clone, Copy)]
    enum Form {
        Read,
        Write,
        CuratorLock,
        CuratorLatch,
        KazooLock,
        KazooRlock,
    }

    /// A queue of mixed kinds and libraries: sequences near the i32 wrap (even rounds) and far
    /// from it, in any order, with a name that is no lock node.
    fn random_queue(rng: &mut Rng, round: usize, forms: &[Form]) -> Vec<String> {
        let start = if round.is_multiple_of(2) {
            i32::MAX - 5
        } else {
            7
        };
        let len = 1 + rng.below(12) as usize;
        let mut names: Vec<String> = (0..len)
            .map(|i| {
                let seq = start.wrapping_add((i as i32) * (1 + rng.below(3) as i32));
                let digits = if seq < 0 {
                    format!("-{:010}", seq.unsigned_abs())
                } else {
                    format!("{seq:010}")
                };
                match forms[rng.below(forms.len() as u64) as usize] {
                    Form::Read => format!("n{i}__READ__{digits}"),
                    Form::Write => format!("n{i}__WRIT__{digits}"),
                    Form::CuratorLock => format!("_c_n{i}-lock-{digits}"),
                    Form::CuratorLatch => format!("_c_n{i}-latch-{digits}"),
                    Form::KazooLock => format!("{:032x}__lock__{digits}", i),
                    Form::KazooRlock => format!("{:032x}__rlock__{digits}", i),
                }
            })
            .collect();
        names.push("leases".into());
        names.sort_by_key(|_| rng.below(1000));
        names
    }

    #[test]
    fn one_walk_agrees_with_the_sorted_queue_for_every_attempt_of_many_queues() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let forms = [Form::Read, Form::Write, Form::CuratorLock, Form::KazooRlock];
        for round in 0..300 {
            let names = random_queue(&mut rng, round, &forms);
            for name in names.iter().filter(|n| read_name(n).is_some()) {
                let own = &name[..name.len() - 10];
                for kind in [NodeKind::Read, NodeKind::Write] {
                    let walked = place_of(names.iter().map(String::as_str), own, kind, None);
                    let sorted = by_sorting(&names, own, kind);
                    assert_eq!(
                        walked.blocker.map(|(n, c)| (n.to_string(), c)),
                        sorted,
                        "{names:?}, {own}"
                    );
                }
            }
        }
    }

    /// `names` read by a [`Placer`] one name at a time, knowing our node as `own`.
    fn placed_one_by_one(
        names: &[String],
        prefix: &str,
        own: Own,
        kind: NodeKind,
        style: Option<ElectionStyle>,
    ) -> Option<Place> {
        let mut placer = Placer::new(prefix, own, kind, style);
        for name in names {
            placer.name(name);
        }
        placer.finish()
    }

    #[test]
    fn one_walk_as_the_names_arrive_agrees_with_the_kept_listing_for_every_attempt() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let forms = [
            Form::Read,
            Form::Write,
            Form::CuratorLock,
            Form::CuratorLatch,
            Form::KazooLock,
            Form::KazooRlock,
        ];
        for round in 0..300 {
            let names = random_queue(&mut rng, round, &forms);
            let mut next = |below| rng.below(below);
            let styles = [
                None,
                Some(ElectionStyle::Latch),
                Some(ElectionStyle::Selector),
                Some(ElectionStyle::Kazoo),
            ];
            for name in names.iter().filter(|n| read_name(n).is_some()) {
                let own = &name[..name.len() - 10];
                for kind in [NodeKind::Read, NodeKind::Write, NodeKind::Mutex] {
                    let style = styles[next(4) as usize];
                    let kept = place_of(names.iter().map(String::as_str), own, kind, style);
                    // Our node named by the create before the listing, and known by name.
                    let cell = Arc::new(OnceLock::new());
                    cell.set(Box::from(name.as_str())).unwrap();
                    let created = placed_one_by_one(&names, own, Own::Created(cell), kind, style);
                    assert_eq!(created.as_ref(), Some(&kept), "{names:?}, {own}");
                    let named = placed_one_by_one(
                        &names,
                        name,
                        Own::Named(name.as_str().into()),
                        kind,
                        style,
                    );
                    assert_eq!(named.as_ref(), Some(&kept), "{names:?}, {name}");
                    // Our node gone from the listing: no place, and the foreign node as
                    // `place_of` finds it without ours.
                    let without: Vec<String> =
                        names.iter().filter(|n| *n != name).cloned().collect();
                    let kept = place_of(without.iter().map(String::as_str), own, kind, style);
                    let gone = placed_one_by_one(
                        &without,
                        own,
                        Own::Named(name.as_str().into()),
                        kind,
                        style,
                    );
                    assert_eq!(gone.as_ref(), Some(&kept), "{without:?}, {own}");
                }
            }
        }
    }

    #[test]
    fn a_listing_one_walk_cannot_place_is_placed_from_its_kept_names() {
        let names: Vec<String> = [
            "b-lock-0000000002",
            "a-lock-0000000001",
            "b-lock-0000000009",
        ]
        .map(String::from)
        .into();
        // Another node with our prefix comes before ours: one walk cannot tell.
        let own = Own::Named("b-lock-0000000009".into());
        let placer = Placer::new("b-", own, NodeKind::Mutex, None);
        let mut walked = placer.clone();
        names.iter().for_each(|n| walked.name(n));
        assert_eq!(walked.finish(), None);
        let mut kept = placer.keeping();
        names.iter().for_each(|n| kept.name(n));
        let expected = place_of(
            names.iter().map(String::as_str),
            "b-",
            NodeKind::Mutex,
            None,
        );
        assert_eq!(kept.finish(), Some(expected));
        // Without the create's name (its reply did not come first), the names are kept too.
        let unset = Own::Created(Arc::new(OnceLock::new()));
        let mut unknown = Placer::new("a-", unset, NodeKind::Mutex, None);
        names.iter().for_each(|n| unknown.name(n));
        let expected = place_of(
            names.iter().map(String::as_str),
            "a-",
            NodeKind::Mutex,
            None,
        );
        assert_eq!(unknown.finish(), Some(expected));
        // An empty listing (a lock path that does not exist): no place.
        let none = Placer::new(
            "a-",
            Own::Named("a-lock-0000000001".into()),
            NodeKind::Mutex,
            None,
        );
        assert_eq!(none.finish().map(|p| p.own), Some(None));
    }
}
