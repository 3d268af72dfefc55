//! The connection's task: owns the stream and polls it by hand (read, then the commands the
//! handles queued, then one write of all of them and a flush), numbers requests, matches replies
//! to them in order, sends pings and gives up on a silent link. Kept apart from the handle
//! ([`super::Connection`]) that feeds it commands: this file is the only one that touches the
//! stream after the handshake.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::oneshot;
use tokio::time::Sleep;

use super::error::{is_eof, Error};
use super::events::{Event, Events, Stats, EVENT_QUEUE};
use super::message::{
    decode_reply_body, read_children_reply, ChildrenSink, OnReply, Reply, Response,
};
use super::queue;
use crate::frame::{self, FrameDecoder};
use crate::jute::*;

/// A single read (see `Driver::read`), into the thread's scratch buffer.
const READ: usize = 64 * 1024;

/// What a listing read as it arrives may leave in its connection's buffer between reads (a
/// name cut by the read) without the buffer being cut down to it.
const KEEP_BETWEEN_READS: usize = 2 * 1024;

thread_local! {
    /// Where a connection's reads land on the thread that polls it (see `Driver::read`): at
    /// most `READ` bytes per thread.
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A reply header's size on the wire: xid, zxid, err.
const REPLY_HEADER_LEN: usize = 16;

/// What the task and the handles share: the link's statistics and, once closed, why.
pub(super) struct Shared {
    pub(super) stats: Stats,
    pub(super) closed: Option<Error>,
}

/// What a handle asks of the task. Each variant is one pointer, so that the slots the queue
/// keeps are small (issue 34, memory kept per idle session).
pub(super) enum Cmd {
    Request(Box<Submit>),
    /// A frame with a reserved xid (auth, SetWatches) whose reply is not queued. Boxed (a
    /// `Box<[u8]>` would be two words, the slot one more) for the slot's size.
    #[allow(clippy::box_collection)]
    Fixed(Box<Vec<u8>>),
    /// Close the connection now, with this reason (see [`Connection::abort`]).
    Abort(Box<Error>),
}

/// A request for the task to number, send and match with its reply.
pub(super) struct Submit {
    pub(super) op: i32,
    pub(super) frame: Vec<u8>,
    pub(super) tx: oneshot::Sender<Result<Reply, Error>>,
    pub(super) tag: u64,
    /// What reads the reply as it is decoded (`Connection::submit_reading`).
    pub(super) read: Option<OnReply>,
}

/// Starts the task for a connection whose handshake is done (`decoder` may already hold
/// frames that followed the handshake's reply): the handles' command queue, the state the
/// handles read, and the events. It pings after `ping_interval` without a send and gives the
/// link up after `read_timeout` without a frame read.
pub(super) fn start<S>(
    stream: S,
    decoder: FrameDecoder,
    read_timeout: Duration,
    ping_interval: Duration,
    last_zxid_seen: i64,
) -> (queue::Sender<Cmd>, Arc<Mutex<Shared>>, Events)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let now = Instant::now();
    let shared = Arc::new(Mutex::new(Shared {
        stats: Stats {
            last_recv: now,
            last_send: now,
            last_ping_sent: None,
            last_ping_reply: None,
            pings_answered: [None; 2],
            last_zxid: last_zxid_seen,
            writes: 0,
            frames_sent: 0,
            outstanding: 0,
        },
        closed: None,
    }));
    let (tx, rx) = queue::queue();
    let (etx, erx) = queue::queue();
    let driver = Driver {
        stream,
        rx,
        events: etx,
        shared: shared.clone(),
        decoder,
        pending: VecDeque::new(),
        wbuf: Vec::new(),
        wpos: 0,
        queued: 0,
        written: 0,
        next_xid: 1,
        ping_interval,
        pings_sent: VecDeque::new(),
        read_timeout,
        last_send: now,
        last_recv: now,
        closing: false,
        listing: None,
        unflushed: false,
    };
    tokio::spawn(driver.run());
    (tx, shared, Events(erx))
}

struct Pending {
    xid: i32,
    op: i32,
    /// Stream offset just past this request's frame.
    end: u64,
    sent_at: Option<Instant>,
    tx: oneshot::Sender<Result<Reply, Error>>,
    /// Non-zero: announce the answer on `Events` (see `Event::Answered`).
    tag: u64,
    read: Option<OnReply>,
}

/// A listing being read as it arrives ([`OnReply::EachName`]): its frame's length prefix and
/// reply header are read; its request is still the oldest pending.
struct Streamed {
    parser: ListingParser,
    sink: Box<dyn ChildrenSink>,
    /// The whole frame's size, prefix included (for the error when the stream ends in it).
    frame_len: usize,
    xid: i32,
    zxid: i64,
}

/// The connection's task: owns the stream (plain TCP, TLS, or any other) and is polled by hand
/// so that a TLS stream, which has no readiness of its own, is driven like a socket.
struct Driver<S> {
    stream: S,
    rx: queue::Receiver<Cmd>,
    /// Bounded by `event`: at most [`EVENT_QUEUE`] wait, and the final [`Event::Closed`] is
    /// always queued.
    events: queue::Sender<Event>,
    shared: Arc<Mutex<Shared>>,
    decoder: FrameDecoder,
    pending: VecDeque<Pending>,
    wbuf: Vec<u8>,
    wpos: usize,
    /// Bytes queued / written since the handshake.
    queued: u64,
    written: u64,
    next_xid: i32,
    ping_interval: Duration,
    /// When each ping in flight was queued, oldest first.
    pings_sent: VecDeque<Instant>,
    read_timeout: Duration,
    last_send: Instant,
    last_recv: Instant,
    closing: bool,
    /// The listing being read as it arrives, if one is.
    listing: Option<Streamed>,
    /// Bytes were handed to the stream and it has not yet been flushed: a TLS stream holds
    /// records until flushed (a `TcpStream`'s flush does nothing).
    unflushed: bool,
}

impl<S> Driver<S>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    async fn run(mut self) {
        let err = self.drive().await;
        {
            let mut s = self.shared.lock().unwrap();
            s.closed = Some(err.clone());
            s.stats.outstanding = 0;
        }
        self.rx.close();
        for p in self.pending.drain(..) {
            let _ = p.tx.send(Err(err.clone()));
        }
        while let Some(cmd) = self.rx.try_recv() {
            if let Cmd::Request(submit) = cmd {
                let _ = submit.tx.send(Err(err.clone()));
            }
        }
        // Always queued: the bound is `event`'s, and the end goes past it.
        let _ = self.events.send(Event::Closed(Box::new(err)));
    }

    /// Queues an event for the session layer, or fails the connection when the queue is full:
    /// the server outran the client, and reading on would only pile events up (or stall the
    /// replies behind them). One place is always left for the final `Event::Closed`.
    fn event(&mut self, event: Event) -> Result<(), Error> {
        if self.events.is_closed() {
            return Ok(());
        }
        if self.events.len() >= EVENT_QUEUE {
            return Err(Error::EventFlood(EVENT_QUEUE));
        }
        let _ = self.events.send(event);
        Ok(())
    }

    async fn drive(&mut self) -> Error {
        // Frames that arrived with the handshake's reply.
        if let Err(e) = self.on_frames() {
            return e;
        }
        let ping = tokio::time::sleep_until((self.last_send + self.ping_interval).into());
        let dead = tokio::time::sleep_until((self.last_recv + self.read_timeout).into());
        tokio::pin!(ping, dead);
        std::future::poll_fn(|cx| self.poll_drive(cx, ping.as_mut(), dead.as_mut())).await
    }

    /// Runs the connection until it ends, with the reason. Each turn reads what arrived, takes
    /// every request submitted since the last turn, adds a ping if one is due, and hands all
    /// of it to the stream in one write; it returns `Pending` only when nothing could progress
    /// (every source polled has registered the task's waker).
    fn poll_drive(
        &mut self,
        cx: &mut Context<'_>,
        mut ping: Pin<&mut Sleep>,
        mut dead: Pin<&mut Sleep>,
    ) -> Poll<Error> {
        loop {
            let mut progress = false;
            match self.read(cx) {
                Poll::Ready(Ok(())) => progress = true,
                Poll::Ready(Err(e)) => return Poll::Ready(e),
                Poll::Pending => {}
            }
            // Nothing after CloseSession: what is submitted later is failed when the task ends.
            while !self.closing {
                match self.rx.poll_recv(cx) {
                    Poll::Ready(Some(Cmd::Abort(e))) => return Poll::Ready(*e),
                    Poll::Ready(Some(cmd)) => self.enqueue(cmd),
                    Poll::Ready(None) => return Poll::Ready(Error::Closed),
                    Poll::Pending => break,
                }
            }
            // Not while a write is stuck: the ping would only pile up behind it.
            let want_write = self.wpos < self.wbuf.len() || self.unflushed;
            if !self.closing && !want_write {
                let at = tokio::time::Instant::from_std(self.last_send + self.ping_interval);
                if ping.deadline() != at {
                    ping.as_mut().reset(at);
                }
                if ping.as_mut().poll(cx).is_ready() {
                    self.ping();
                }
            }
            match self.flush(cx) {
                Ok(wrote) => progress |= wrote,
                Err(e) => return Poll::Ready(e),
            }
            let at = tokio::time::Instant::from_std(self.last_recv + self.read_timeout);
            if dead.deadline() != at {
                dead.as_mut().reset(at);
            }
            if dead.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Error::ReadTimeout(self.read_timeout));
            }
            if !progress {
                return Poll::Pending;
            }
        }
    }

    /// One read, and the frames it completed. The read lands in the thread's scratch buffer
    /// and only what it brought is copied to the connection's: a read that finds nothing
    /// (every poll ends with one) holds no buffer of the connection's, and the decoder's
    /// buffer is given back when idle, so an idle session holds none. Reading into the
    /// decoder's own buffer, sized by the traffic (2 to 64 KiB), kept that chunk while the
    /// connection waited for bytes: 34 MB for 3,000 waiters each waiting for the rest of its
    /// listing (heaptrack, issue 54, point 5). The scratch costs one copy of what was read
    /// and lets every read be a large one.
    fn read(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        let want = READ;
        let (polled, filled) = SCRATCH.with_borrow_mut(|scratch| {
            if scratch.len() < want {
                scratch.resize(want, 0);
            }
            let mut rb = ReadBuf::new(&mut scratch[..want]);
            let polled = Pin::new(&mut self.stream).poll_read(cx, &mut rb);
            let filled = rb.filled().len();
            self.decoder.extend(&scratch[..filled]);
            (polled, filled)
        });
        let n = match ready!(polled) {
            Ok(()) => filled,
            Err(e) if is_eof(&e) => 0,
            Err(e) => return Poll::Ready(Err(e.into())),
        };
        if n == 0 {
            if let Some(l) = &self.listing {
                let have = l.frame_len - l.parser.left() + self.decoder.buffered();
                let want = l.frame_len;
                return Poll::Ready(Err(frame::FrameError::Truncated { have, want }.into()));
            }
            if let Err(e) = self.decoder.finish() {
                return Poll::Ready(Err(e.into()));
            }
            return Poll::Ready(Err(if self.closing {
                Error::Closed
            } else {
                Error::ServerClosed
            }));
        }
        let decoded = self.on_frames();
        // An idle connection keeps no read buffer at all (issue 34, point 3), and a buffer
        // grown for a large reply is freed (a thousand sessions that each read a long listing
        // once must not keep it).
        self.decoder.shrink_when_idle(0);
        // Inside a listing read as it arrives, what is left is at most a name cut by the read:
        // it moves to a buffer of its own size, and the chunk grown for the listing is freed
        // (5,000 connections each reading a long listing at once keep no 64 KB chunk each).
        if self.listing.is_some() {
            self.decoder.shrink_to_unread(KEEP_BETWEEN_READS);
        }
        // Nor queue buffers grown by a burst, once no request is outstanding (a ping's reply
        // comes here too, so an idle connection gets to it every third of its timeout).
        if self.pending.is_empty() {
            self.rx.release_idle();
            self.events.release_idle();
        }
        Poll::Ready(decoded)
    }

    fn enqueue(&mut self, cmd: Cmd) {
        let Submit {
            op,
            mut frame,
            tx,
            tag,
            read,
        } = match cmd {
            Cmd::Request(submit) => *submit,
            Cmd::Fixed(frame) => {
                self.queued += frame.len() as u64;
                self.wbuf.extend_from_slice(&frame);
                return;
            }
            // Taken by `poll_drive` before it gets here.
            Cmd::Abort(_) => return,
        };
        let xid = self.next_xid;
        self.next_xid = if xid == i32::MAX { 1 } else { xid + 1 };
        frame[4..8].copy_from_slice(&xid.to_be_bytes());
        self.queued += frame.len() as u64;
        self.wbuf.extend_from_slice(&frame);
        self.pending.push_back(Pending {
            xid,
            op,
            end: self.queued,
            sent_at: None,
            tx,
            tag,
            read,
        });
        if op == op::CLOSE_SESSION {
            // Nothing after CloseSession: the server closes the connection.
            self.closing = true;
        }
    }

    fn ping(&mut self) {
        let mut frame = Vec::with_capacity(12);
        // Cannot fail: 8 bytes.
        let _ = frame::write_frame(&mut frame, usize::MAX, |o| {
            RequestHeader {
                xid: xid::PING,
                op: op::PING,
            }
            .encode(o)
        });
        self.queued += frame.len() as u64;
        self.wbuf.extend_from_slice(&frame);
        let now = Instant::now();
        self.pings_sent.push_back(now);
        self.shared.lock().unwrap().stats.last_ping_sent = Some(now);
    }

    /// Hands the queued bytes to the stream (one `poll_write` for all of them when it takes
    /// them, as a socket with room does) and flushes it; a request's `sent_at` is when the
    /// flush that carried its last byte completed. Returns whether anything moved.
    fn flush(&mut self, cx: &mut Context<'_>) -> Result<bool, Error> {
        let mut writes = 0;
        while self.wpos < self.wbuf.len() {
            match Pin::new(&mut self.stream).poll_write(cx, &self.wbuf[self.wpos..]) {
                Poll::Ready(Ok(0)) => {
                    return Err(std::io::Error::from(std::io::ErrorKind::WriteZero).into())
                }
                Poll::Ready(Ok(n)) => {
                    writes += 1;
                    self.wpos += n;
                    self.written += n as u64;
                    self.unflushed = true;
                }
                Poll::Ready(Err(e)) => return Err(e.into()),
                Poll::Pending => break,
            }
        }
        if self.wpos == self.wbuf.len() {
            self.wbuf.clear();
            self.wpos = 0;
        }
        let mut flushed = false;
        if self.unflushed {
            match Pin::new(&mut self.stream).poll_flush(cx) {
                Poll::Ready(Ok(())) => {
                    self.unflushed = false;
                    flushed = true;
                }
                Poll::Ready(Err(e)) => return Err(e.into()),
                Poll::Pending => {}
            }
        }
        if writes == 0 && !flushed {
            return Ok(false);
        }
        let now = Instant::now();
        self.last_send = now;
        let mut sent_frames = 0;
        if !self.unflushed {
            for p in self.pending.iter_mut().rev() {
                if p.sent_at.is_some() {
                    break;
                }
                if p.end <= self.written {
                    p.sent_at = Some(now);
                    sent_frames += 1;
                }
            }
        }
        let mut s = self.shared.lock().unwrap();
        s.stats.last_send = now;
        s.stats.writes += writes;
        s.stats.frames_sent += sent_frames;
        s.stats.outstanding = self.pending.len();
        Ok(true)
    }

    fn on_frames(&mut self) -> Result<(), Error> {
        let now = Instant::now();
        let mut any = false;
        loop {
            if self.listing.is_some() {
                if !self.read_listing(now)? {
                    break;
                }
                any = true;
                continue;
            }
            if self.start_listing()? {
                any = true;
                continue;
            }
            let Some(payload) = self.decoder.next_frame()? else {
                break;
            };
            any = true;
            let mut r = Reader::new(payload);
            let h = ReplyHeader::decode(&mut r)?;
            let body = &payload[payload.len() - r.remaining()..];
            match h.xid {
                xid::NOTIFICATION => {
                    let event = WatcherEvent::decode_all(body)?;
                    self.event(Event::Watch {
                        event: Box::new(event),
                        zxid: h.zxid,
                    })?;
                }
                xid::PING => {
                    Reader::new(body).finish()?;
                    let sent = self.pings_sent.pop_front();
                    let mut shared = self.shared.lock().unwrap();
                    shared.stats.last_ping_reply = Some(now);
                    if let Some(sent) = sent {
                        let answered = &mut shared.stats.pings_answered;
                        *answered = [Some((sent, now)), answered[0]];
                    }
                }
                xid::AUTH => {
                    self.event(Event::Auth { err: h.err })?;
                }
                // Nothing to do with the answer: the server re-armed what it could.
                xid::SET_WATCHES => {}
                got => {
                    let p = Self::expect(&mut self.pending, got)?;
                    let result = match p.read.take() {
                        Some(OnReply::Names(read)) if p.op == op::GET_CHILDREN2 => {
                            read_children_reply(h.err, body, read)?
                        }
                        read => {
                            let result = decode_reply_body(p.op, h.err, body)?;
                            if let (Some(OnReply::Decoded(note)), Ok(r)) = (read, &result) {
                                note(r);
                            }
                            result
                        }
                    };
                    self.answer(got, h.zxid, result, now)?;
                }
            }
        }
        if any {
            self.last_recv = now;
            let mut s = self.shared.lock().unwrap();
            s.stats.last_recv = now;
            s.stats.outstanding = self.pending.len();
        }
        Ok(())
    }

    /// The oldest pending request, which a reply with xid `got` must answer.
    fn expect(pending: &mut VecDeque<Pending>, got: i32) -> Result<&mut Pending, Error> {
        let Some(p) = pending.front_mut() else {
            return Err(Error::UnexpectedXid {
                got,
                expected: None,
            });
        };
        if p.xid != got {
            return Err(Error::UnexpectedXid {
                got,
                expected: Some(p.xid),
            });
        }
        Ok(p)
    }

    /// Starts reading the next frame as it arrives when it is the listing the oldest request
    /// reads a name at a time ([`OnReply::EachName`]) and not an error: its reply header is
    /// read and skipped. Any other frame, and a listing whose header has not all arrived, is
    /// left to the whole-frame path (which also refuses a wrong xid or a short header).
    fn start_listing(&mut self) -> Result<bool, Error> {
        let Some(p) = self.pending.front() else {
            return Ok(false);
        };
        if p.op != op::GET_CHILDREN2 || !matches!(p.read, Some(OnReply::EachName(_))) {
            return Ok(false);
        }
        let Some((len, head)) = self.decoder.peek_frame()? else {
            return Ok(false);
        };
        let Some(head) = head.get(..REPLY_HEADER_LEN) else {
            return Ok(false);
        };
        let h = ReplyHeader::decode_all(head)?;
        if h.xid != p.xid || h.err != 0 {
            return Ok(false);
        }
        let Some(OnReply::EachName(sink)) = self.pending.front_mut().and_then(|p| p.read.take())
        else {
            return Ok(false);
        };
        self.decoder.skip(4 + REPLY_HEADER_LEN);
        self.listing = Some(Streamed {
            parser: ListingParser::new(len - REPLY_HEADER_LEN),
            sink,
            frame_len: 4 + len,
            xid: h.xid,
            zxid: h.zxid,
        });
        Ok(true)
    }

    /// Reads what has arrived of the listing being read; once it is whole, answers its
    /// request. Returns whether it progressed.
    fn read_listing(&mut self, now: Instant) -> Result<bool, Error> {
        let Some(l) = self.listing.as_mut() else {
            return Ok(false);
        };
        let Streamed { parser, sink, .. } = l;
        let read = parser.feed(self.decoder.unread(), &mut |name| sink.name(name))?;
        self.decoder.skip(read);
        let Some(stat) = parser.stat().cloned() else {
            return Ok(read > 0);
        };
        let Some(l) = self.listing.take() else {
            return Ok(false);
        };
        l.sink.end();
        self.answer(l.xid, l.zxid, Ok(Response::ChildrenRead(stat)), now)?;
        Ok(true)
    }

    /// Completes the oldest pending request (whose xid `got` the reply carried) with `result`.
    fn answer(
        &mut self,
        got: i32,
        zxid: i64,
        result: Result<Response, i32>,
        now: Instant,
    ) -> Result<(), Error> {
        let tag = Self::expect(&mut self.pending, got)?.tag;
        if tag != 0 {
            let err = match &result {
                Ok(_) => 0,
                Err(e) => *e,
            };
            // Before the request leaves `pending`, so a flood fails it too.
            self.event(Event::Answered { tag, err })?;
        }
        let p = self.pending.pop_front().expect("checked by expect");
        if zxid > 0 {
            let mut s = self.shared.lock().unwrap();
            s.stats.last_zxid = s.stats.last_zxid.max(zxid);
        }
        let _ = p.tx.send(Ok(Reply {
            xid: got,
            zxid,
            result,
            sent_at: p.sent_at.unwrap_or(now),
            received_at: now,
        }));
        Ok(())
    }
}
