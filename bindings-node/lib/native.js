// The native addon: ./zklock.node when built from a source checkout, else the one of this
// platform's package `zklock-<key>` (an optional dependency of a packaged zklock: npm installs
// the one whose os, cpu and libc fit). The bottom of the package: every other file asks it.
'use strict'

const path = require('node:path')

/** @type {any} */
const native = loadNative()

/**
 * The addon: ./zklock.node when built from a source checkout (its npm install builds it), else
 * `zklock-<platform key>/zklock.node`, the platform package a packaged zklock (make dist) names
 * in its optionalDependencies.
 */
function loadNative() {
  const fs = require('node:fs')
  const built = path.join(__dirname, '..', 'zklock.node')
  const fromSource = 'build it from a zklock source checkout with Rust (https://rustup.rs) ' +
    'installed: `npm install <checkout>/bindings-node`'
  let file = built
  if (!fs.existsSync(built)) {
    const key = platformKey()
    const name = `zklock-${key}`
    try {
      file = require.resolve(`${name}/zklock.node`)
    } catch {
      /** @type {string[]} */
      let have = []
      try {
        const own = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8'))
        have = Object.keys(own.optionalDependencies ?? {})
      } catch {}
      const keys = have.map((n) => n.slice('zklock-'.length))
      const why = keys.includes(key)
        ? 'npm installs it with zklock unless told to omit optional dependencies (--omit=optional) ' +
          'or to install for another --os, --cpu or --libc: install zklock again without those'
        : keys.length
          ? `this zklock has native addons for ${keys.join(', ')} only`
          : 'this zklock names no native addon package (a source checkout not yet built)'
      const err = new Error(
        `zklock: no native addon for this platform (${key}): the package ${name} is not installed; ` +
          `${why}. To use zklock here, ${fromSource}`,
      )
      err.code = 'ZKLOCK_NATIVE_MISSING'
      throw err
    }
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

/** `linux-x64-gnu`, `linux-arm64-musl`, `darwin-arm64`...: the platform package's key for this process. */
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
