//! Tools of zklock's trust suites: the exclusion checker, a fenced register, launchers for the
//! real peers (Apache Curator, kazoo) and the other faces' workers, the partition-margin
//! scenario (`margin`), and the measuring parts of the 10,000-session soak (`sessions`).

pub mod checker;
pub mod fenced;
pub mod margin;
pub mod members;
pub mod nodes;
pub mod peers;
pub mod sessions;
pub mod timing;
