//! Tools of zklock's trust suites: the exclusion checker, a fenced register, and launchers for
//! the real peers (Apache Curator, kazoo) and the other faces' workers.

pub mod checker;
pub mod fenced;
pub mod peers;
