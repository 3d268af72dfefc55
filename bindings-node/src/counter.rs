//! `NativeCounter`: the core's shared counter on Curator's layouts ([`zklock::Counter`]) for
//! `lib/counter.js`; its reads and compare-and-sets settle promises from the core's runtime.

use napi::bindgen_prelude::Object;
use napi::Env;
use napi_derive::napi;

use crate::queue::settle_from_core;

/// A count and the data version it was read at (-1: no node yet).
#[napi(object)]
pub struct NativeCount {
    pub value: i64,
    pub version: i32,
}

impl From<zklock::Count> for NativeCount {
    fn from(c: zklock::Count) -> Self {
        NativeCount {
            value: c.value,
            version: c.version,
        }
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
        seen_value: i64,
        seen_version: i32,
        value: i64,
    ) -> napi::Result<Object<'env>> {
        let c = self.counter.clone();
        let seen = zklock::Count {
            value: seen_value,
            version: seen_version,
        };
        settle_from_core(env, async move {
            Ok(c.compare_and_set(seen, value).await?.map(NativeCount::from))
        })
    }
}
