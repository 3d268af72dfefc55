//! A tiny fenced register, the resource a fencing token protects: it accepts a write only with a
//! token at least as large as the largest it has seen (Chubby's sequencer check).

use std::sync::Mutex;

#[derive(Debug, Default)]
pub struct FencedRegister {
    state: Mutex<(i64, Vec<(i64, String)>)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    pub token: i64,
    pub largest_seen: i64,
}

impl FencedRegister {
    pub fn write(&self, token: i64, value: impl Into<String>) -> Result<(), Rejected> {
        let mut state = self.state.lock().unwrap();
        if token < state.0 {
            return Err(Rejected {
                token,
                largest_seen: state.0,
            });
        }
        state.0 = token;
        state.1.push((token, value.into()));
        Ok(())
    }

    pub fn writes(&self) -> Vec<(i64, String)> {
        self.state.lock().unwrap().1.clone()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn rejects_older_tokens() {
        let r = super::FencedRegister::default();
        r.write(5, "a").unwrap();
        r.write(5, "b").unwrap();
        assert_eq!(r.write(4, "c").unwrap_err().largest_seen, 5);
        assert_eq!(r.writes().len(), 2);
    }
}
