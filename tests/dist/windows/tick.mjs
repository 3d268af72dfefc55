// tick.mjs OUT: the command `zklock.exe exec` runs under Wine in tests/dist/test-dist-reach.sh.
// Writes `started` to the file OUT, then `tick` every 100 ms until something ends it: the test
// reads that the ticks stop once the lock is lost (zklock ends the command's job object).
// Lines go to a file, not stdout: under Wine, Node's stdout on a Unix pipe fails (EBADF).
import fs from 'node:fs'

const [out] = process.argv.slice(2)
fs.appendFileSync(out, `started ${process.pid}\n`)
setInterval(() => fs.appendFileSync(out, 'tick\n'), 100)
