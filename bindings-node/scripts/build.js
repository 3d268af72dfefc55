#!/usr/bin/env node
// Builds the native addon from source with the machine's cargo and copies it to ./zklock.node.
// Run by `npm install` (the package's install script). The default profile is `dist` (release
// code without debug info, as the prebuilt package ships it; it also shares make dist's build in
// target/); ZKLOCK_NODE_PROFILE=release keeps line tables (the bench), =debug builds unoptimised.
'use strict'
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')

const root = path.resolve(__dirname, '..')
const cargo = process.env.CARGO || 'cargo'
const profile = ['debug', 'release'].includes(process.env.ZKLOCK_NODE_PROFILE) ? process.env.ZKLOCK_NODE_PROFILE : 'dist'
const args = ['build', '-p', 'zklock-node', '--message-format=json-render-diagnostics']
if (profile !== 'debug') args.push('--profile', profile)

console.error(`zklock: building the native addon (${cargo} ${args.join(' ')})`)
const run = spawnSync(cargo, args, {
  cwd: root,
  stdio: ['ignore', 'pipe', 'inherit'],
  maxBuffer: 256 * 1024 * 1024,
  encoding: 'utf8',
})
if (run.error) {
  console.error(`zklock: cannot run ${cargo}: ${run.error.message}. Install Rust (https://rustup.rs) and retry.`)
  process.exit(1)
}
if (run.status !== 0) {
  console.error(`zklock: cargo failed with status ${run.status}`)
  process.exit(run.status || 1)
}

let artifact = null
for (const line of run.stdout.split('\n')) {
  if (!line.startsWith('{')) continue
  let msg
  try { msg = JSON.parse(line) } catch { continue }
  if (msg.reason === 'compiler-artifact' && msg.target && msg.target.name === 'zklock_node' &&
      msg.target.kind.includes('cdylib')) {
    artifact = msg.filenames.find((f) => /\.(so|dylib|dll)$/.test(f)) || artifact
  }
}
if (!artifact) {
  console.error('zklock: cargo finished but reported no zklock_node library')
  process.exit(1)
}
const dest = path.join(root, 'zklock.node')
// Copy to a temporary name and rename, so a running process never sees a half-written file.
const tmp = `${dest}.${process.pid}.tmp`
fs.copyFileSync(artifact, tmp)
fs.renameSync(tmp, dest)
console.error(`zklock: ${path.relative(process.cwd(), dest) || dest} <- ${artifact}`)
