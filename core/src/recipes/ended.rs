//! What a lease handle reads once it was released (issue 33): `lost` is final, so a lease lost
//! before its release keeps reading `lost`, with its reason, after the release; any other lease
//! reads `released`. And the rule for leaving a scoped hold (Python's `with`, Node's `using()`):
//! a lease lost inside the scope makes leaving it fail with `LockLost`, so that a body that
//! never looked still learns that it ran (partly) without the lock.
//!
//! The faces keep an [`Ended`] in the handle they release (they give the core's `Lease` away
//! to release it), so the rule is the core's once, not each face's.

use crate::base::error::{Error, ErrorKind};
use crate::base::protocol;
use crate::base::state::{LeaseState, Released};
use crate::leases::lease::Lease;

/// The state a released lease handle keeps: see [`Lease::ended`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ended {
    /// The lease's lost reason when it was lost before the release.
    lost_reason: Option<String>,
    path: String,
    /// What the holder held, as its messages name it: "lock", or "leadership" for an
    /// election's lease (issue 51: a leader told of "the lock on ..." looked for a lock).
    what: &'static str,
}

impl Ended {
    /// `Lost` when the lease was lost before its release (lost is final), else `Released`.
    pub fn state(&self) -> LeaseState {
        match self.lost_reason {
            Some(_) => LeaseState::Lost,
            None => LeaseState::Released,
        }
    }

    /// Why the lease was lost, when it was lost before its release.
    pub fn lost_reason(&self) -> Option<&str> {
        self.lost_reason.as_deref()
    }

    /// Takes the release's outcome in: a release that found the lease lost (`WasLost`: its
    /// session had ended unnoticed, the node was gone) ends it lost too, so that a loss the
    /// release itself discovered is not reported as a clean end.
    pub fn released(&mut self, outcome: Released) {
        if outcome == Released::WasLost && self.lost_reason.is_none() {
            self.lost_reason =
                Some("the release found the session ended and the node gone".to_owned());
        }
    }

    /// Leaving a scoped hold of this lease, named `scope` in the message (`"the with block"`):
    /// `LockLost` when the lease was lost before it was released, else fine. The message names
    /// what was held: "the lock on PATH", or "the leadership on PATH" for an election's lease.
    pub fn leave_scope(&self, scope: &str) -> crate::Result<()> {
        match &self.lost_reason {
            None => Ok(()),
            Some(reason) => {
                // The reason names the node ("lease on <node> lost: <why>"): the lock's path
                // is said instead, once, shortened as every message quotes an input.
                let why = reason
                    .split_once(" lost: ")
                    .map_or(reason.as_str(), |(_, w)| w);
                Err(Error::new(
                    ErrorKind::LockLost,
                    format!(
                        "the {} on {} was lost before {scope} ended: {why}",
                        self.what,
                        protocol::shown(lock_path(&self.path))
                    ),
                ))
            }
        }
    }
}

impl Lease {
    /// What this handle is to read once it is released, as of now: read it just before the
    /// release (which consumes the lease), and keep it. Lost stays lost: a lease lost by now
    /// keeps `Lost` and its reason; any other becomes `Released` (a loss that races the
    /// release itself comes after the release took the node, and does not count).
    pub fn ended(&self) -> Ended {
        let lost = self.state() == LeaseState::Lost;
        Ended {
            lost_reason: lost.then(|| {
                self.lost_reason()
                    .unwrap_or_else(|| format!("lease on {} lost", self.path()))
            }),
            path: self.path().to_owned(),
            what: if self.is_leadership() {
                "leadership"
            } else {
                "lock"
            },
        }
    }
}

/// The lock path a node is under, for a message a person reads (the node's name is noise):
/// its parent, and above a semaphore's `leases` (Curator's layout) the semaphore's path.
fn lock_path(node: &str) -> &str {
    let parent = node.rsplit_once('/').map_or(node, |(p, _)| p);
    let leases = format!("/{}", crate::recipes::semaphore::LEASES);
    parent.strip_suffix(leases.as_str()).unwrap_or(parent)
}
