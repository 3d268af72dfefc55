//! What a session needs of a lease it carries, below both: the session module comes before the
//! lease module and does not know its type, and the farewell waits on the same view.

use crate::base::state::LeaseState;

/// What a session needs of a lease it carries; the lease implements it.
pub(crate) trait Member: Send + Sync {
    fn node(&self) -> &str;
    fn state(&self) -> LeaseState;
    fn set_state(&self, state: LeaseState);
    fn lose(&self, why: &str);
    /// Whether its holder let go of it (released it): the farewell waits for that.
    fn let_go(&self) -> bool;
}
