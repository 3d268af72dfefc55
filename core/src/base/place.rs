//! Where one acquire attempt stands in a listing of its lock path, read in one walk over the
//! names while the reply is decoded (`Client::read_children`): the node that blocks it, how
//! many more would block it after that one, and a node of another election layout.
//!
//! Nothing else of the listing is kept. A thousand waiters that list a thousand-deep queue at
//! once keep a thousand answers, not a million decoded names (issue 34, bench scenario s5).
//! The answer is the one a sorted queue gives (`protocol::queue_of`, then the recipe's rule):
//! the test below checks both ways agree.

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

    #[test]
    fn one_walk_agrees_with_the_sorted_queue_for_every_attempt_of_many_queues() {
        // A small generator (no dependency): queues of mixed kinds and libraries, sequences
        // near the i32 wrap and far from it, in any order, with a name that is no lock node.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |below: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % below
        };
        for round in 0..300 {
            let start = if round % 2 == 0 { i32::MAX - 5 } else { 7 };
            let len = 1 + next(12) as usize;
            let mut names: Vec<String> = (0..len)
                .map(|i| {
                    let seq = start.wrapping_add((i as i32) * (1 + next(3) as i32));
                    let digits = if seq < 0 {
                        format!("-{:010}", seq.unsigned_abs())
                    } else {
                        format!("{seq:010}")
                    };
                    match next(4) {
                        0 => format!("n{i}__READ__{digits}"),
                        1 => format!("n{i}__WRIT__{digits}"),
                        2 => format!("_c_n{i}-lock-{digits}"),
                        _ => format!("{:032x}__rlock__{digits}", i),
                    }
                })
                .collect();
            names.push("leases".into());
            names.sort_by_key(|_| next(1000));
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
}
