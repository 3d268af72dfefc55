// Issue 12, part 8 (Node): the READMEs' examples run as written. A JavaScript example is saved
// as the .mjs file it names and run by this Node (the engine the package declares is Node 20);
// the `await using` example is compiled by tsc for Node 20 and run. The root README's Node
// snippet is docs/tour/tour.mjs (scripts/check-readme.sh checks that too).
'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { execFileSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { startZooKeeper } = require('./harness.js')

const root = path.resolve(__dirname, '..')
const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8')
const rootReadme = fs.readFileSync(path.join(root, '..', 'README.md'), 'utf8')

/** The fenced blocks of `lang` in `text` (this package's README), in order. */
function blocks(lang, text = readme) {
  const re = new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g')
  return [...text.matchAll(re)].map((m) => m[1])
}

let zk
let dir
test.before(async () => {
  zk = await startZooKeeper()
  // A project that installed the package: node_modules/zklock is this package.
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'zklock-node-readme-'))
  fs.mkdirSync(path.join(dir, 'node_modules', '@types'), { recursive: true })
  fs.symlinkSync(root, path.join(dir, 'node_modules', 'zklock'), 'dir')
  fs.symlinkSync(
    path.join(root, 'node_modules', '@types', 'node'),
    path.join(dir, 'node_modules', '@types', 'node'),
    'dir',
  )
})
test.after(async () => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true })
  if (zk) await zk.stop()
})

/** Saves `example` under the .mjs name its first line gives and runs it; returns stdout. */
function runExample(example) {
  const name = /^\/\/ (\S+\.mjs)\b/.exec(example)
  assert.ok(name, `the example names the .mjs file it is saved as: ${example.split('\n')[0]}`)
  const file = path.join(dir, name[1])
  fs.writeFileSync(file, example)
  return execFileSync(process.execPath, [file], {
    cwd: dir,
    env: { ...process.env, ZKLOCK_SERVERS: zk.servers },
    encoding: 'utf8',
    timeout: 60_000,
  })
}

test("the README's JavaScript example runs as written on this Node", () => {
  const [example] = blocks('js')
  assert.ok(example, 'the README has a ```js example')
  const out = runExample(example)
  assert.match(out, /order written under fencing token \d+/)
  assert.match(out, /busy: timed out waiting for the lock \/locks\/orders/)
  assert.match(out, /^released$/m)
  assert.match(out, /\[ \d+n, \d+n \]/)
})

test("the README's semaphore example runs as written on this Node", () => {
  const example = blocks('js').find((b) => b.startsWith('// semaphores.mjs'))
  assert.ok(example, 'the README has the ```js semaphore example (semaphores.mjs)')
  const out = runExample(example)
  assert.match(out, /^third: null$/m)
  assert.match(out, /^asked to let go\nstill held$/m)
})

test("the README's election example runs as written on this Node", () => {
  const example = blocks('js').find((b) => b.startsWith('// election.mjs'))
  assert.ok(example, 'the README has the ```js election example (election.mjs)')
  const out = runExample(example)
  assert.match(out, /^leading as worker-1 with token \d+n?$/m)
  assert.match(out, /^check: true$/m)
  assert.match(out, /^time left: true$/m)
  assert.match(out, /^ran$/m)
  assert.match(out, /^leader: none$/m)
})

test("the README's await using example compiles with tsc for Node 20 and runs", () => {
  const [example] = blocks('ts')
  assert.ok(example, 'the README has a ```ts example')
  fs.writeFileSync(path.join(dir, 'order.ts'), example)
  fs.writeFileSync(
    path.join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'nodenext',
        moduleResolution: 'nodenext',
        lib: ['ES2022', 'ESNext.Disposable'],
        types: ['node'],
        strict: true,
        outDir: 'out',
      },
      files: ['order.ts'],
    }),
  )
  const tsc = require.resolve('typescript/bin/tsc', { paths: [root] })
  execFileSync(process.execPath, [tsc, '-p', dir], { cwd: dir, stdio: 'inherit' })
  const script = `require('./out/order.js').placeOrder(process.argv[1]).then(() => console.log('ok'))`
  const out = execFileSync(process.execPath, ['-e', script, zk.servers], {
    cwd: dir,
    encoding: 'utf8',
    timeout: 60_000,
  })
  assert.match(out, /fencing token \d+n?\nok\n$/)
})

test("the root README's Node snippet runs as written on this Node", () => {
  const tour = fs.readFileSync(path.join(root, '..', 'docs', 'tour', 'tour.mjs'), 'utf8')
  assert.ok(blocks('js', rootReadme).includes(tour), 'the root README shows docs/tour/tour.mjs')
  const out = runExample(tour)
  assert.match(out, /node holds the lock, fencing token \d+n held/)
})

// Issue 27, item 14: the faces named a contract `API.md` that never existed. Every `.md` file
// the face READMEs, index.js and the C headers name (a link or a backticked path) exists,
// resolved from the naming file's folder or from the repository's root.
test('the docs the faces name exist (the contract is docs/contract.md)', () => {
  const repo = path.join(root, '..')
  const namers = [
    'README.md',
    'bindings-node/README.md',
    'bindings-node/index.js',
    'bindings-node/index.d.ts',
    'bindings-python/README.md',
    'bindings-c/README.md',
    'cli/README.md',
    'include/zklock.h',
    'include/zklock.hpp',
  ].filter((f) => fs.existsSync(path.join(repo, f)))
  const missing = []
  for (const f of namers) {
    const text = fs.readFileSync(path.join(repo, f), 'utf8')
    for (const m of text.matchAll(/(?:\]\(|`|\bsee |\()((?:\.\.\/|[\w.-]+\/)*[\w.-]+\.md)(?:#[\w-]*)?(?=[)`'s\s])/g)) {
      const name = m[1]
      const here = path.join(repo, path.dirname(f), name)
      if (!fs.existsSync(here) && !fs.existsSync(path.join(repo, name))) missing.push(`${f}: ${name}`)
    }
  }
  assert.deepEqual(missing, [])
})
