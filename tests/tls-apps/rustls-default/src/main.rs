/// zklock is built with its `aws-lc-rs` feature: it names its provider itself.
const ZKLOCK_NAMES_ITS_PROVIDER: bool = true;

include!("../../app.rs");
