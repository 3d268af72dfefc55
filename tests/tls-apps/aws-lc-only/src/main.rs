/// zklock is built without a provider feature: it takes the process's default.
const ZKLOCK_NAMES_ITS_PROVIDER: bool = false;

include!("../../app.rs");
