//! A cancellation handle for acquires that bindings start and stop from elsewhere (AbortSignal,
//! `zklock_op_cancel`, Ctrl-C). Unlike dropping the future, cancelling through the token lets
//! the acquire remove its node before it reports `Cancelled`.

use std::sync::Arc;

use tokio::sync::watch;

/// Clone it, hand one clone to `acquire_with`, call `cancel()` on another.
#[derive(Clone, Debug)]
pub struct CancelToken {
    state: Arc<watch::Sender<bool>>,
}

impl Default for CancelToken {
    fn default() -> Self {
        CancelToken {
            state: Arc::new(watch::channel(false).0),
        }
    }
}

impl CancelToken {
    pub fn new() -> CancelToken {
        CancelToken::default()
    }

    /// Cancels every acquire given this token (now or later).
    pub fn cancel(&self) {
        self.state.send_replace(true);
    }

    pub fn is_cancelled(&self) -> bool {
        *self.state.borrow()
    }

    /// Resolves once `cancel()` was called.
    pub(crate) async fn cancelled(&self) {
        let mut rx = self.state.subscribe();
        let _ = rx.wait_for(|c| *c).await;
    }
}
