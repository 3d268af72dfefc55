//! ZooKeeper's framing: every packet, both ways, is a 4-byte big-endian length and then that
//! many bytes.
//!
//! The limit is the server's: `NIOServerCnxn.readLength` (apache/zookeeper release-3.8.4,
//! `zookeeper-server/src/main/java/org/apache/zookeeper/server/NIOServerCnxn.java`) closes the
//! connection when `len < 0 || len > BinaryInputArchive.maxBuffer`, and `maxBuffer` is the
//! `jute.maxbuffer` property, default `0xfffff` (`zookeeper-jute/.../BinaryInputArchive.java`).
//! A request over it is refused here, before it is queued, and so never sent or resent. The
//! Java client applies the same check to what it reads (`ClientCnxnSocket.readLength`, the
//! client's `jute.maxbuffer`, default also `0xfffff`).

use thiserror::Error;

/// `jute.maxbuffer`'s default: the largest frame payload a default server accepts.
pub const DEFAULT_MAX: usize = 0xfffff;

/// What is wrong with a frame.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FrameError {
    /// A length prefix below zero.
    #[error("negative frame length {0}")]
    NegativeLength(i32),
    /// A frame longer than the limit: refused on the way out, a protocol error on the way in.
    #[error("frame of {len} bytes is over the limit of {limit}")]
    TooLarge { len: usize, limit: usize },
    /// The stream ended inside a frame.
    #[error("stream ended inside a frame ({have} of {want} bytes)")]
    Truncated { have: usize, want: usize },
    /// The first bytes read as a length spell `HTTP` (1213486160 bytes): the peer is a web
    /// server, not ZooKeeper (a wrong port, an HTTP proxy, the admin server's 8080).
    #[error("the server answered in HTTP, not ZooKeeper's protocol: is the port a ZooKeeper client port?")]
    Http,
}

/// A length prefix that is the start of an HTTP status line, `HTTP/1.1 400 ...`.
const HTTP: i32 = i32::from_be_bytes(*b"HTTP");

/// Appends one frame whose payload `f` writes, refusing (and leaving `out` as it was) a payload
/// over `limit`.
pub fn write_frame(
    out: &mut Vec<u8>,
    limit: usize,
    f: impl FnOnce(&mut Vec<u8>),
) -> Result<(), FrameError> {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    f(out);
    let len = out.len() - start - 4;
    if len > limit || len > i32::MAX as usize {
        out.truncate(start);
        return Err(FrameError::TooLarge { len, limit });
    }
    out[start..start + 4].copy_from_slice(&(len as i32).to_be_bytes());
    Ok(())
}

/// Splits a byte stream into frame payloads: feed it whatever a read returned, take out the
/// complete frames. A partial frame waits for more bytes; garbage after a valid frame is read as
/// the next length and so ends as [`FrameError::NegativeLength`], [`FrameError::TooLarge`], or —
/// when the stream ends — [`FrameError::Truncated`]. After an error the decoder stays failed.
#[derive(Debug)]
pub struct FrameDecoder {
    buf: Vec<u8>,
    start: usize,
    limit: usize,
    failed: Option<FrameError>,
}

impl FrameDecoder {
    pub fn new(limit: usize) -> Self {
        FrameDecoder {
            buf: Vec::new(),
            start: 0,
            limit,
            failed: None,
        }
    }

    /// Appends received bytes.
    pub fn extend(&mut self, bytes: &[u8]) {
        self.compact();
        self.buf.extend_from_slice(bytes);
    }

    /// Room for the next read, `want` zeroed bytes at the end of the buffer, so that a read
    /// lands where the frames are decoded (no copy). [`FrameDecoder::commit`] keeps what the
    /// read filled.
    pub fn read_space(&mut self, want: usize) -> &mut [u8] {
        self.compact();
        let old = self.buf.len();
        self.buf.resize(old + want, 0);
        &mut self.buf[old..]
    }

    /// Keeps the first `filled` bytes of the last [`FrameDecoder::read_space`] of `want`.
    pub fn commit(&mut self, want: usize, filled: usize) {
        let len = self.buf.len() - want + filled.min(want);
        self.buf.truncate(len);
    }

    /// Gives back a large buffer once everything in it was decoded: an idle connection keeps
    /// little memory (a thousand sessions are a thousand of these).
    pub fn shrink_when_idle(&mut self, keep: usize) {
        if self.start == self.buf.len() && self.buf.capacity() > keep {
            self.buf = Vec::new();
            self.start = 0;
        }
    }

    fn compact(&mut self) {
        if self.start > 0 && self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        } else if self.start > 64 * 1024 && self.start * 2 > self.buf.len() {
            self.buf.drain(..self.start);
            self.start = 0;
        }
    }

    /// Bytes received and not yet returned in a frame.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }

    /// The next complete frame's payload, `None` until one is complete.
    pub fn next_frame(&mut self) -> Result<Option<&[u8]>, FrameError> {
        let Some(len) = self.next_len()? else {
            return Ok(None);
        };
        if self.buffered() < 4 + len {
            return Ok(None);
        }
        let from = self.start + 4;
        self.start = from + len;
        Ok(Some(&self.buf[from..from + len]))
    }

    /// The next frame's payload length and what has arrived of its payload, before the frame
    /// is complete (`None` until its length has arrived): a frame may be read as it arrives
    /// ([`FrameDecoder::skip`] past its length prefix and then past what was read of it).
    pub fn peek_frame(&mut self) -> Result<Option<(usize, &[u8])>, FrameError> {
        let Some(len) = self.next_len()? else {
            return Ok(None);
        };
        let from = self.start + 4;
        let to = self.buf.len().min(from + len);
        Ok(Some((len, &self.buf[from..to])))
    }

    /// The bytes received and not yet returned in a frame or skipped.
    pub fn unread(&self) -> &[u8] {
        &self.buf[self.start..]
    }

    /// Marks the first `n` unread bytes read (at most all of them).
    pub fn skip(&mut self, n: usize) {
        self.start = (self.start + n).min(self.buf.len());
    }

    /// Moves what is left unread into a buffer of its own size when it is at most `keep` bytes
    /// and the buffer holds more than twice that: a frame read as it arrives leaves only the
    /// part of a field cut by a read, and that must not pin a buffer grown for large reads.
    pub fn shrink_to_unread(&mut self, keep: usize) {
        if self.buffered() <= keep && self.buf.capacity() > 2 * keep {
            self.buf = self.buf[self.start..].to_vec();
            self.start = 0;
        }
    }

    /// The next frame's length once its prefix has arrived, checked against the limit.
    fn next_len(&mut self) -> Result<Option<usize>, FrameError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let avail = &self.buf[self.start..];
        if avail.len() < 4 {
            return Ok(None);
        }
        let len = i32::from_be_bytes([avail[0], avail[1], avail[2], avail[3]]);
        if len < 0 {
            return Err(self.fail(FrameError::NegativeLength(len)));
        }
        let len_prefix = len;
        let len = len as usize;
        if len > self.limit {
            if len_prefix == HTTP {
                return Err(self.fail(FrameError::Http));
            }
            return Err(self.fail(FrameError::TooLarge {
                len,
                limit: self.limit,
            }));
        }
        Ok(Some(len))
    }

    /// The stream ended: an error if it ended inside a frame.
    pub fn finish(&self) -> Result<(), FrameError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let avail = &self.buf[self.start..];
        if avail.is_empty() {
            return Ok(());
        }
        let want = if avail.len() >= 4 {
            4 + i32::from_be_bytes([avail[0], avail[1], avail[2], avail[3]]).max(0) as usize
        } else {
            4
        };
        Err(FrameError::Truncated {
            have: avail.len(),
            want,
        })
    }

    fn fail(&mut self, e: FrameError) -> FrameError {
        self.failed = Some(e.clone());
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_split_anywhere() {
        let mut stream = Vec::new();
        write_frame(&mut stream, DEFAULT_MAX, |o| o.extend_from_slice(b"hello")).unwrap();
        write_frame(&mut stream, DEFAULT_MAX, |_| {}).unwrap();
        write_frame(&mut stream, DEFAULT_MAX, |o| o.extend_from_slice(b"xyz")).unwrap();
        assert_eq!(&stream[..9], &[0, 0, 0, 5, b'h', b'e', b'l', b'l', b'o']);
        for cut in 0..=stream.len() {
            let mut d = FrameDecoder::new(DEFAULT_MAX);
            let mut got: Vec<Vec<u8>> = Vec::new();
            for part in [&stream[..cut], &stream[cut..]] {
                d.extend(part);
                while let Some(f) = d.next_frame().unwrap() {
                    got.push(f.to_vec());
                }
            }
            assert_eq!(got, vec![b"hello".to_vec(), vec![], b"xyz".to_vec()]);
            d.finish().unwrap();
        }
    }

    #[test]
    fn limit_refuses_and_leaves_buffer_alone() {
        let mut out = vec![1, 2, 3];
        let e = write_frame(&mut out, 4, |o| o.extend_from_slice(&[0; 5])).unwrap_err();
        assert_eq!(e, FrameError::TooLarge { len: 5, limit: 4 });
        assert_eq!(out, vec![1, 2, 3]);
        write_frame(&mut out, 4, |o| o.extend_from_slice(&[9; 4])).unwrap();
        assert_eq!(out, vec![1, 2, 3, 0, 0, 0, 4, 9, 9, 9, 9]);
    }

    #[test]
    fn garbage_after_a_frame() {
        let mut d = FrameDecoder::new(DEFAULT_MAX);
        d.extend(&[0, 0, 0, 1, 7, 0xff, 0xff, 0xff, 0xfe]);
        assert_eq!(d.next_frame().unwrap(), Some(&[7u8][..]));
        assert_eq!(d.next_frame(), Err(FrameError::NegativeLength(-2)));
        // It stays failed.
        d.extend(&[0, 0, 0, 0]);
        assert_eq!(d.next_frame(), Err(FrameError::NegativeLength(-2)));

        let mut d = FrameDecoder::new(DEFAULT_MAX);
        d.extend(&[0, 0, 0, 1, 7, 0x10, 0, 0, 0]);
        assert!(d.next_frame().unwrap().is_some());
        assert_eq!(
            d.next_frame(),
            Err(FrameError::TooLarge {
                len: 0x1000_0000,
                limit: DEFAULT_MAX
            })
        );

        let mut d = FrameDecoder::new(DEFAULT_MAX);
        d.extend(&[0, 0, 0, 1, 7, 0, 0, 0, 9, 1, 2]);
        assert!(d.next_frame().unwrap().is_some());
        assert_eq!(d.next_frame(), Ok(None));
        assert_eq!(d.finish(), Err(FrameError::Truncated { have: 6, want: 13 }));
        let mut d = FrameDecoder::new(DEFAULT_MAX);
        d.extend(&[0, 0]);
        assert_eq!(d.finish(), Err(FrameError::Truncated { have: 2, want: 4 }));
    }

    #[test]
    fn a_length_that_spells_http_says_the_peer_speaks_http() {
        let mut d = FrameDecoder::new(DEFAULT_MAX);
        d.extend(b"HTTP/1.1 400 Bad Request\r\n");
        assert_eq!(d.next_frame(), Err(FrameError::Http));
        assert!(FrameError::Http.to_string().contains("not ZooKeeper"));
    }

    #[test]
    fn a_frame_can_be_read_as_it_arrives_and_leaves_no_large_buffer_behind() {
        let mut d = FrameDecoder::new(DEFAULT_MAX);
        assert_eq!(d.peek_frame(), Ok(None));
        d.extend(&[0, 0, 0, 5, b'a', b'b']);
        assert_eq!(d.peek_frame(), Ok(Some((5, &b"ab"[..]))));
        d.skip(4 + 2);
        assert_eq!(d.unread(), b"");
        d.extend(&[0; 100_000]);
        d.skip(100_000 - 3);
        d.shrink_to_unread(16);
        assert_eq!(d.unread(), [0; 3]);
        assert!(d.buf.capacity() < 100, "{}", d.buf.capacity());
        // Skipping past the end reads what there is.
        d.skip(9);
        assert_eq!(d.buffered(), 0);
        // A bad length is refused by a peek as by `next_frame`.
        d.extend(&[0xff, 0xff, 0xff, 0xfe]);
        assert_eq!(d.peek_frame(), Err(FrameError::NegativeLength(-2)));
    }

    #[test]
    fn limit_is_inclusive() {
        let mut d = FrameDecoder::new(3);
        d.extend(&[0, 0, 0, 3, 1, 2, 3]);
        assert_eq!(d.next_frame().unwrap(), Some(&[1u8, 2, 3][..]));
    }
}
