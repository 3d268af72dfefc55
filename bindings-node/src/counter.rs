//! `NativeCounter`: the core's shared counter on Curator's layouts ([`zklock::Counter`]) for
//! `lib/counter.js`; its reads and compare-and-sets settle promises from the core's runtime.

use napi::bindgen_prelude::{BigInt, Object};
use napi::Env;
use napi_derive::napi;

use crate::queue::settle_from_core;

/// A count and the data version it was read at (-1: no node yet). The value is a bigint: an
/// `i64` as a JS number loses every value past 2^53 (issue 51: 9007199254740993 read as
/// ...992); `lib/counter.js` gives an int32 counter's values as numbers, which always fit.
#[napi(object)]
pub struct NativeCount {
    pub value: BigInt,
    pub version: i32,
}

impl From<zklock::Count> for NativeCount {
    fn from(c: zklock::Count) -> Self {
        NativeCount {
            value: BigInt::from(c.value),
            version: c.version,
        }
    }
}

/// A count handed in as a bigint (`lib/counter.js` converts numbers): an `i64`, or
/// `InvalidArgument` naming `what` beyond it.
pub(crate) fn count_arg(value: &BigInt, what: &str) -> zklock::Result<i64> {
    let (n, lossless) = value.get_i64();
    if lossless {
        Ok(n)
    } else {
        Err(zklock::Error::new(
            zklock::ErrorKind::InvalidArgument,
            format!("{what} is beyond a 64-bit count"),
        ))
    }
}

/// A shared counter (`zklock::Counter`).
#[napi]
pub struct NativeCounter {
    pub(crate) counter: zklock::Counter,
}

#[napi]
impl NativeCounter {
    #[napi(getter)]
    pub fn path(&self) -> String {
        self.counter.path().to_owned()
    }

    /// `int32` (Curator's SharedCount) or `int64` (DistributedAtomicLong).
    #[napi(getter)]
    pub fn width(&self) -> String {
        self.counter.width().as_str().to_owned()
    }

    /// The count and its version ([`zklock::Counter::get`]).
    #[napi(ts_return_type = "Promise<NativeCount>")]
    pub fn get<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let c = self.counter.clone();
        settle_from_core(env, async move { c.get().await.map(NativeCount::from) })
    }

    /// [`zklock::Counter::compare_and_set`]: the new count, or null when it moved.
    #[napi(ts_return_type = "Promise<NativeCount | null>")]
    pub fn compare_and_set<'env>(
        &self,
        env: &'env Env,
        seen_value: BigInt,
        seen_version: i32,
        value: BigInt,
    ) -> napi::Result<Object<'env>> {
        let c = self.counter.clone();
        let value = count_arg(&value, "value");
        let seen = count_arg(&seen_value, "seen.value").map(|value| zklock::Count {
            value,
            version: seen_version,
        });
        settle_from_core(env, async move {
            let (seen, value) = (seen?, value?);
            Ok(c.compare_and_set(seen, value).await?.map(NativeCount::from))
        })
    }
}
