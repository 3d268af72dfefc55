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
