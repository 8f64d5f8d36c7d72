// Writes cases.tsv for tests/node_semver.rs: random ranges and versions
// (a fixed seed, so the same inputs every run), and what node-semver
// answers for each. Run by regenerate.sh.
//
//   R <range> <1 valid|0> <new Range(range).range>
//   V <version> <satisfies> <satisfies with includePrerelease>   (after its R)
//   S <text> <1 if new SemVer(text) parses|0>
//   C <a> <b> <semver.compare(a, b)>
'use strict'
const semver = require(process.argv[2])
let seed = 20260724
const rnd = n => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n }
const pick = a => a[rnd(a.length)]

const nums = ['0', '1', '2', '3', '10', '0', '1', '2', 'x', 'X', '*', '01', '9007199254740991', '9007199254740992', '', '1*', 'a']
const pres = ['', '', '-0', '-beta', '-beta.2', '-alpha.1', '-rc.1', '-0.3', '-01', '-a.b', '-', '+b', '-0+b.c']
const ops = ['', '', '', '', '=', '<', '>', '<=', '>=', '~', '~>', '^', '^', '~', 'v', '=v', '==', '> ', '^ ', '~ ', '~> ', '>=*', '*', 'v ', '= ', '<>', ' - ']
const part = () => {
  const k = 1 + rnd(3)
  let t = Array.from({ length: k }, () => pick(nums)).join('.')
  if (k === 3) t += pick(pres)
  if (rnd(10) === 0) t += '+b.1'
  return t
}
const set = () => {
  switch (rnd(10)) {
    case 0: return part() + ' - ' + part()
    case 1: return ''
    case 2: return '*'
    default: return Array.from({ length: 1 + rnd(3) }, () => pick(ops) + part()).join(rnd(3) ? ' ' : '  ')
  }
}
const range = () => Array.from({ length: 1 + rnd(3) }, set).join(rnd(2) ? ' || ' : '||')
const vpres = ['', '', '', '-0', '-beta', '-beta.2', '-beta.4', '-alpha.1', '-alpha.7', '-rc.1', '-0.3']
const version = () => [0, 1, 2].map(() => pick(['0', '1', '2', '3', '10'])).join('.') + pick(vpres)

const out = []
for (let i = 0; i < 3000; i++) {
  const r = range()
  let text = null
  try { text = new semver.Range(r).range } catch (e) {}
  out.push(['R', r, text === null ? '0' : '1', text || ''].join('\t'))
  if (text === null) continue
  for (let j = 0; j < 6; j++) {
    const v = version()
    const yes = o => semver.satisfies(v, r, o) ? '1' : '0'
    out.push(['V', v, yes({}), yes({ includePrerelease: true })].join('\t'))
  }
}
const frag = ['0', '1', '2', '10', '01', '9007199254740991', '9007199254740992', '.', '-', '+', 'v', '=', ' ', 'a', 'beta', 'x', '0a', '-0', '99999999999999999999', 'ä', '..']
for (let i = 0; i < 3000; i++) {
  const s = Array.from({ length: 1 + rnd(9) }, () => pick(frag)).join('')
  let ok = '1'
  try { new semver.SemVer(s) } catch (e) { ok = '0' }
  out.push(['S', s, ok].join('\t'))
}
const vs = Array.from({ length: 500 }, () => [rnd(3), rnd(3), rnd(3)].join('.') +
  pick(['', '-0', '-1', '-a', '-a.1', '-a.b', '-1.a', '-b', '-a.10', '-a.2', '-10', '-2', '-00a', '-a-b', '-A']))
for (let i = 0; i < 3000; i++) {
  const a = pick(vs)
  const b = pick(vs)
  out.push(['C', a, b, String(semver.compare(a, b))].join('\t'))
}
process.stdout.write(out.join('\n') + '\n')
