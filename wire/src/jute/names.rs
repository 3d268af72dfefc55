//! A children listing read where it lies in the reply: each name checked once, none copied.
//! Whoever reads a listing this way keeps what it needs of it and nothing else (a thousand
//! waiters each listing a thousand-deep queue would otherwise hold a million names).

use super::{JuteError, Reader, Record, Stat};

impl<'a> Reader<'a> {
    /// A vector of `ustring`s read in place: each checked (length, UTF-8) once here, none
    /// copied. A listing read this way costs no allocation per name.
    pub fn read_names(&mut self) -> Result<Names<'a>, JuteError> {
        let count = self.read_len()?;
        let start = self.pos;
        for _ in 0..count {
            let n = self.read_len()?;
            std::str::from_utf8(self.take(n)?).map_err(|_| JuteError::InvalidUtf8)?;
        }
        Ok(Names {
            bytes: &self.buf[start..self.pos],
            count,
        })
    }
}

/// The names of a children listing where they lie in the reply ([`Reader::read_names`]
/// checked them): whoever reads them keeps what it needs and nothing else.
#[derive(Debug, Clone, Copy)]
pub struct Names<'a> {
    bytes: &'a [u8],
    count: usize,
}

impl<'a> Names<'a> {
    /// No names (a listing of a node that does not exist).
    pub const EMPTY: Names<'static> = Names {
        bytes: &[],
        count: 0,
    };

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The names in the order the server sent them; may be walked any number of times.
    pub fn iter(&self) -> NamesIter<'a> {
        NamesIter {
            reader: Reader::new(self.bytes),
            left: self.count,
        }
    }

    /// Every name, copied.
    pub fn to_vec(&self) -> Vec<String> {
        self.iter().map(str::to_owned).collect()
    }
}

/// Walks [`Names`].
#[derive(Debug, Clone)]
pub struct NamesIter<'a> {
    reader: Reader<'a>,
    left: usize,
}

impl<'a> Iterator for NamesIter<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        self.left = self.left.checked_sub(1)?;
        // `read_names` checked every length and every string, so neither fails here.
        let n = self.reader.read_len().ok()?;
        std::str::from_utf8(self.reader.take(n).ok()?).ok()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

/// `GetChildren2Response` read in place: its names are not copied (see [`Names`]).
#[derive(Debug, Clone)]
pub struct ChildrenInPlace<'a> {
    pub children: Names<'a>,
    pub stat: Stat,
}

impl<'a> ChildrenInPlace<'a> {
    /// The whole body, nothing left over (as `Record::decode_all`).
    pub fn decode_all(body: &'a [u8]) -> Result<Self, JuteError> {
        let mut r = Reader::new(body);
        let children = r.read_names()?;
        let stat = Stat::decode(&mut r)?;
        r.finish()?;
        Ok(ChildrenInPlace { children, stat })
    }
}

/// A `GetChildren2Response` read as its bytes arrive, a name at a time: nothing of the listing
/// is kept here, and the caller need not hold the record whole (a 5,000-deep queue's listing is
/// about 250 KB; 5,000 waiters each holding one at once was 750 MB, issue 54, point 5).
///
/// It accepts and refuses exactly what [`ChildrenInPlace::decode_all`] does, with the same
/// error, wherever the bytes are cut: every check is against the bytes the record has left
/// (`body_len`), not against what has arrived, so a short record fails where it ends.
#[derive(Debug, Clone)]
pub struct ListingParser {
    /// Bytes of the record not yet read.
    left: usize,
    step: Step,
}

#[derive(Debug, Clone)]
enum Step {
    Count,
    Names(usize),
    Stat,
    Done(Stat),
}

/// `Stat`'s size on the wire.
const STAT_LEN: usize = 68;

impl ListingParser {
    /// For a record of `body_len` bytes (the frame's, less the reply header).
    pub fn new(body_len: usize) -> Self {
        ListingParser {
            left: body_len,
            step: Step::Count,
        }
    }

    /// Bytes of the record not yet read.
    pub fn left(&self) -> usize {
        self.left
    }

    /// The record's `Stat`, once it was read whole (nothing left over).
    pub fn stat(&self) -> Option<&Stat> {
        match &self.step {
            Step::Done(stat) => Some(stat),
            _ => None,
        }
    }

    /// Reads the whole fields at the start of `bytes` (the next bytes of the record, as far as
    /// they have arrived; any beyond the record are not looked at), handing each name to
    /// `name`. Returns how many bytes it read: a field cut by the end of `bytes` is left there
    /// for the next call, with the bytes that complete it.
    pub fn feed(&mut self, bytes: &[u8], name: &mut dyn FnMut(&str)) -> Result<usize, JuteError> {
        let bytes = &bytes[..bytes.len().min(self.left)];
        let mut at = 0;
        loop {
            let have = &bytes[at..];
            let used = match self.step {
                Step::Done(_) => return Ok(at),
                Step::Count => {
                    let Some(n) = self.length(have)? else {
                        return Ok(at);
                    };
                    self.step = if n == 0 { Step::Stat } else { Step::Names(n) };
                    4
                }
                Step::Names(k) => {
                    let Some(n) = self.length(have)? else {
                        return Ok(at);
                    };
                    if n > self.left - 4 {
                        return Err(JuteError::Truncated {
                            needed: n,
                            remaining: self.left - 4,
                        });
                    }
                    let Some(s) = have.get(4..4 + n) else {
                        return Ok(at);
                    };
                    name(std::str::from_utf8(s).map_err(|_| JuteError::InvalidUtf8)?);
                    self.step = if k == 1 {
                        Step::Stat
                    } else {
                        Step::Names(k - 1)
                    };
                    4 + n
                }
                Step::Stat => {
                    // A short Stat fails as `Stat::decode` fails on what the record has left.
                    let Some(whole) = have.get(..self.left.min(STAT_LEN)) else {
                        return Ok(at);
                    };
                    let stat = Stat::decode(&mut Reader::new(whole))?;
                    if self.left > STAT_LEN {
                        return Err(JuteError::TrailingBytes(self.left - STAT_LEN));
                    }
                    self.step = Step::Done(stat);
                    STAT_LEN
                }
            };
            self.left -= used;
            at += used;
        }
    }

    /// A length or count at the start of `have` (as `Reader::read_len`), `None` until its
    /// four bytes are there; an error when the record has fewer left.
    fn length(&self, have: &[u8]) -> Result<Option<usize>, JuteError> {
        if self.left < 4 {
            return Err(JuteError::Truncated {
                needed: 4,
                remaining: self.left,
            });
        }
        match have.get(..4) {
            Some(b) => Reader::new(b).read_len().map(Some),
            None => Ok(None),
        }
    }
}
