// The native addon: ./zklock.node when built from a source checkout, else the prebuilt one
// for this platform under prebuilds/. The bottom of the package: every other file asks it.
'use strict'

const path = require('node:path')

/** @type {any} */
const native = loadNative()

/**
 * The addon: ./zklock.node when built from a source checkout (its npm install builds it), else
 * the prebuilt one a packaged zklock (make dist) carries in prebuilds/<platform key>/.
 */
function loadNative() {
  const fs = require('node:fs')
  const built = path.join(__dirname, '..', 'zklock.node')
  const key = fs.existsSync(built) ? null : platformKey()
  const file = key === null ? built : path.join(__dirname, '..', 'prebuilds', key, 'zklock.node')
  const fromSource = 'build it from a zklock source checkout with Rust (https://rustup.rs) ' +
    'installed: `npm install <checkout>/bindings-node`'
  if (key !== null && !fs.existsSync(file)) {
    let have = []
    try { have = fs.readdirSync(path.join(__dirname, '..', 'prebuilds')) } catch {}
    const carried = have.length ? `prebuilt addons for ${have.join(', ')} only` : 'no prebuilt addon'
    const err = new Error(
      `zklock: no native addon for this platform (${key}); this package carries ${carried}. ` +
        `To use zklock here, ${fromSource}`,
    )
    err.code = 'ZKLOCK_NATIVE_MISSING'
    throw err
  }
  try {
    return require(file)
  } catch (e) {
    const err = new Error(`zklock: cannot load the native addon ${file} (${e.message}); ${fromSource}`)
    err.code = 'ZKLOCK_NATIVE_MISSING'
    err.cause = e
    throw err
  }
}

/** `linux-x64-gnu`, `linux-arm64-musl`, `darwin-arm64`...: the prebuilds/ folder for this process. */
function platformKey() {
  let key = `${process.platform}-${process.arch}`
  if (process.platform === 'linux') {
    // glibc or musl: Node's report names the glibc it runs on, and nothing under musl.
    const header = /** @type {any} */ (process.report?.getReport())?.header
    key += header?.glibcVersionRuntime ? '-gnu' : '-musl'
  }
  return key
}

module.exports = { native }
