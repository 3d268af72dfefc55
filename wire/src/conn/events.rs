//! What a connection tells its owner besides replies: the events (watch notifications, tagged
//! answers, auth replies, the close) in stream order, and the link's statistics the lifeline
//! reads. Written by the task ([`super::driver`]), read by the session layer.

use super::queue;

use std::time::Instant;

use super::error::Error;
use crate::jute::*;

/// How many events may wait in [`Events`]: a server that sends them faster than the client
/// takes them (a flood of notifications, whatever their content) has the connection closed with
/// [`Error::EventFlood`], so the client's memory stays bounded whatever the server does. A real
/// server sends a notification once per watch set, so even a large burst is far below this.
pub const EVENT_QUEUE: usize = 4096;

/// A watch notification, or the end of the connection. The large payloads are boxed, so that
/// the slots the queue keeps stay small.
#[derive(Debug, Clone)]
pub enum Event {
    Watch {
        event: Box<WatcherEvent>,
        zxid: i64,
    },
    /// A request submitted with a tag (`Connection::submit_tagged`) was answered with this
    /// error code (0: success). Sent before the reply completes and after every event the
    /// server sent before the reply: the session layer arms a watch here, in stream order, so
    /// no event for it can be missed.
    Answered {
        tag: u64,
        err: i32,
    },
    /// The reply to an `AuthPacket` (xid -4): 0, or `AUTH_FAILED` (the server then closes the
    /// connection). The server answers auth at once, out of order with other requests
    /// (`ZooKeeperServer.processPacket`), so it is not matched against the outstanding queue.
    Auth {
        err: i32,
    },
    /// The connection closed; nothing follows.
    Closed(Box<Error>),
}

/// The connection's events, in the order they arrived relative to replies.
#[derive(Debug)]
pub struct Events(pub(super) queue::Receiver<Event>);

impl Events {
    /// The next event; `None` after [`Event::Closed`] was taken.
    pub async fn recv(&mut self) -> Option<Event> {
        self.0.recv().await
    }
    pub fn try_recv(&mut self) -> Option<Event> {
        self.0.try_recv()
    }
}

/// What the transport knows about its link, for the lifeline.
#[derive(Debug, Clone)]
pub struct Stats {
    /// When the last frame (reply, ping reply or event) was read.
    pub last_recv: Instant,
    /// When bytes were last handed to the kernel.
    pub last_send: Instant,
    /// When the last ping left, and when its reply came (if it has).
    pub last_ping_sent: Option<Instant>,
    pub last_ping_reply: Option<Instant>,
    /// The two latest answered pings as (sent, answered), newest first, each reply matched to
    /// the oldest ping in flight (the server answers in order).
    pub pings_answered: [Option<(Instant, Instant)>; 2],
    /// The largest zxid seen in a reply.
    pub last_zxid: i64,
    /// Write calls made and frames sent, pings included.
    pub writes: u64,
    pub frames_sent: u64,
    /// Requests sent and not yet answered.
    pub outstanding: usize,
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_event_and_a_command_take_small_slots_in_their_queues() {
        // A queue keeps its slots while the connection lives (tokio's mpsc kept 32 of them):
        // 64 bytes a slot before the large variants were boxed.
        assert!(std::mem::size_of::<super::Event>() <= 24);
        assert!(std::mem::size_of::<super::super::driver::Cmd>() <= 16);
    }
}
