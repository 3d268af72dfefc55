//! A cancellation handle for acquires that bindings start and stop from elsewhere (AbortSignal,
//! `zklock_op_cancel`, Ctrl-C). Unlike dropping the future, cancelling through the token lets
//! the acquire remove its node before it reports `Cancelled`.

use std::sync::Arc;

use crate::base::signal::Signal;

/// Clone it, hand one clone to `acquire_with`, call `cancel()` on another.
#[derive(Clone)]
pub struct CancelToken {
    state: Arc<Signal>,
}

impl Default for CancelToken {
    fn default() -> Self {
        CancelToken {
            state: Arc::new(Signal::new(0)),
        }
    }
}

impl std::fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelToken")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

impl CancelToken {
    /// A token not cancelled yet.
    pub fn new() -> CancelToken {
        CancelToken::default()
    }

    /// Cancels every acquire given this token (now or later).
    pub fn cancel(&self) {
        self.state.set(1);
    }

    /// Whether [`CancelToken::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.state.get() == 1
    }

    /// Resolves at the next change (see `Signal::changed`).
    pub(crate) fn changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.state.changed()
    }

    /// Resolves once `cancel()` was called.
    pub(crate) async fn cancelled(&self) {
        self.state.wait_until(|c| c == 1).await;
    }
}
