// Acceptance 8: `tsc --noEmit --strict` accepts a TypeScript program that uses the types, and
// rejects one that misuses them (so the types are not just `any`).
'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const root = path.resolve(__dirname, '..')
const tsc = () => require.resolve('typescript/bin/tsc', { paths: [root] })

function runTsc(args) {
  return spawnSync(process.execPath, [tsc(), ...args], { cwd: root, encoding: 'utf8' })
}

test('tsc --noEmit --strict accepts the example', () => {
  const r = runTsc(['--noEmit', '--strict', '-p', path.join(__dirname, 'types')])
  assert.equal(r.status, 0, `tsc failed:\n${r.stdout}${r.stderr}`)
})

test('tsc rejects misuse of the types', () => {
  fs.mkdirSync(path.join(root, 'test', '.build'), { recursive: true })
  const dir = fs.mkdtempSync(path.join(root, 'test', '.build', 'misuse-'))
  try {
    fs.writeFileSync(
      path.join(dir, 'bad.ts'),
      [
        "import { Client } from 'zklock'",
        'export async function bad(c: Client) {',
        "  const n: number = (await c.mutex('/a').acquire()).token",
        "  await c.mutex('/a').acquire({ timeoutMs: '5' })",
        "  c.mutex('/a').acquire().then((l) => l.on('gone', () => {}))",
        '  return n',
        '}',
        '',
      ].join('\n'),
    )
    fs.writeFileSync(
      path.join(dir, 'tsconfig.json'),
      JSON.stringify({
        extends: '../../types/tsconfig.json',
        files: ['bad.ts'],
      }),
    )
    const r = runTsc(['--noEmit', '--strict', '-p', dir])
    assert.notEqual(r.status, 0, 'tsc accepted a misuse')
    assert.match(r.stdout, /bad\.ts\(3,/, r.stdout)
    assert.match(r.stdout, /bad\.ts\(4,/, r.stdout)
    assert.match(r.stdout, /bad\.ts\(5,/, r.stdout)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
