//! Tools of zklock's trust suites: the exclusion checker, a fenced register, and launchers for
//! the real peers (Apache Curator, kazoo) and the other faces' workers, and the partition-margin
//! scenario (`margin`).

pub mod checker;
pub mod fenced;
pub mod margin;
pub mod nodes;
pub mod peers;
pub mod timing;
