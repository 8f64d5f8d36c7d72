//! Semver ranges as node-semver's `Range` reads them (not loose), and
//! which versions they admit.
//!
//! node-semver rewrites a range as text, step by step (hyphen ranges,
//! operator spacing, carets, tildes, x-ranges, stars, `>=0.0.0`), into sets
//! of comparators; this module makes the same sets from the same rules, in
//! types. Where node-semver's rewriting has a quirk that changes an answer,
//! it is kept (each is named where it is made).

use super::semver::{quoted, Cursor, Identifier, Semver};
use std::fmt;

/// How a comparator compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// `=` (or no operator).
    Eq,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Eq => "",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        }
    }
}

/// One comparator of a range: `>=1.2.3`, `<2.0.0-0`, or any version.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Comparator {
    /// `*`, `x`, the empty range: every version (but see the pre-release
    /// rule in [`Range::satisfies`]).
    Any,
    Cmp(Op, Semver),
}

impl Comparator {
    /// Whether `v` passes this comparator alone.
    pub fn test(&self, v: &Semver) -> bool {
        match self {
            Comparator::Any => true,
            Comparator::Cmp(op, bound) => match op {
                Op::Eq => v == bound,
                Op::Lt => v < bound,
                Op::Le => v <= bound,
                Op::Gt => v > bound,
                Op::Ge => v >= bound,
            },
        }
    }

    /// node-semver's null set, `<0.0.0-0`: no version passes it.
    fn is_null_set(&self) -> bool {
        matches!(self, Comparator::Cmp(Op::Lt, b) if b.release() == [0, 0, 0] && b.prerelease() == [Identifier::zero()])
    }
}

impl fmt::Display for Comparator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Comparator::Any => f.write_str("*"),
            Comparator::Cmp(op, v) => write!(f, "{}{}", op.as_str(), v),
        }
    }
}

/// Why a text is not a range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeError {
    pub text: String,
    pub why: String,
}

impl fmt::Display for RangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} is not a semver range: {}",
            quoted(&self.text),
            self.why
        )
    }
}

impl std::error::Error for RangeError {}

/// The longest range text read. node-semver has no limit; ranges in real
/// packuments are a few dozen bytes.
const MAX_RANGE: usize = 4096;

/// A semver range: sets of comparators joined by `||`; a version is in the
/// range when it passes every comparator of some set.
///
/// [`Range::parse`] reads what node-semver's `new Range(text)` reads (not
/// loose): `||`; hyphen ranges (`1.2.3 - 2.3.4`, `1.2 - 2`); x-ranges
/// (`1.x`, `1.2.*`, `1`, `*`, the empty string); `~1.2.3` and `~>1.2`;
/// `^1.2.3` with its `0.x` rules (`^0.2.3` is `>=0.2.3 <0.3.0-0`, `^0.0.3`
/// is `>=0.0.3 <0.0.4-0`); comparators (`>=1.2.3 <2`, `> 1.2`); `v` and `=`
/// before a version (`=1.2.3`, `v1.2.3`, `^v1.2`).
///
/// node-semver builds a range differently when asked to include
/// pre-releases (lower bounds become `-0`); both forms are kept, and
/// [`Range::satisfies`] takes the flag.
#[derive(Debug, Clone)]
pub struct Range {
    raw: String,
    /// The sets as node-semver builds them without `includePrerelease`.
    sets: Vec<Vec<Comparator>>,
    /// ... and with it.
    sets_pre: Vec<Vec<Comparator>>,
}

impl PartialEq for Range {
    fn eq(&self, other: &Self) -> bool {
        self.sets == other.sets && self.sets_pre == other.sets_pre
    }
}

impl Eq for Range {}

impl Range {
    pub fn parse(text: &str) -> Result<Self, RangeError> {
        if text.len() > MAX_RANGE {
            return Err(RangeError {
                text: text.to_string(),
                why: format!("longer than {MAX_RANGE} bytes"),
            });
        }
        let err = |why: String| RangeError {
            text: text.to_string(),
            why,
        };
        let sets = build(text, false).map_err(err)?;
        let sets_pre = build(text, true).map_err(err)?;
        Ok(Self {
            raw: text.trim().to_string(),
            sets,
            sets_pre,
        })
    }

    /// The range as given, trimmed.
    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// The comparator sets (as built without `includePrerelease`).
    pub fn sets(&self) -> &[Vec<Comparator>] {
        &self.sets
    }

    /// Whether `v` is in the range, with node-semver's pre-release rule:
    /// unless `include_prerelease`, a pre-release satisfies a set only when
    /// some comparator of that set names a pre-release of the same
    /// `[major, minor, patch]` (`1.2.3-beta.2` satisfies `>=1.2.3-beta.1`,
    /// `1.2.4-beta` does not, nor does any pre-release satisfy `*`).
    pub fn satisfies(&self, v: &Semver, include_prerelease: bool) -> bool {
        let sets = if include_prerelease {
            &self.sets_pre
        } else {
            &self.sets
        };
        sets.iter().any(|set| test_set(set, v, include_prerelease))
    }
}

impl fmt::Display for Range {
    /// The desugared form node-semver calls `range.range`: comparators
    /// joined by spaces, sets by `||` (`>=1.2.3 <2.0.0-0||*`). It parses
    /// back to a range that admits the same versions.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text: Vec<String> = self
            .sets
            .iter()
            .map(|set| {
                set.iter()
                    .map(Comparator::to_string)
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        f.write_str(&text.join("||"))
    }
}

impl std::str::FromStr for Range {
    type Err = RangeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// node-semver's `testSet`.
fn test_set(set: &[Comparator], v: &Semver, include_prerelease: bool) -> bool {
    if !set.iter().all(|c| c.test(v)) {
        return false;
    }
    if v.is_prerelease() && !include_prerelease {
        // `^1.2.3-pr.1` is `>=1.2.3-pr.1 <2.0.0-0`: `1.2.3-pr.2` may pass,
        // `1.2.4-alpha` may not, though both lie between the bounds.
        return set.iter().any(|c| match c {
            Comparator::Any => false,
            Comparator::Cmp(_, b) => b.is_prerelease() && b.release() == v.release(),
        });
    }
    true
}

/// The versions of `versions` in `range`, the highest (the first of equal
/// ones): node-semver's `maxSatisfying`.
pub fn max_satisfying<'a>(
    versions: impl IntoIterator<Item = &'a Semver>,
    range: &Range,
    include_prerelease: bool,
) -> Option<&'a Semver> {
    let mut best: Option<&Semver> = None;
    for v in versions {
        if range.satisfies(v, include_prerelease) && best.is_none_or(|b| b < v) {
            best = Some(v);
        }
    }
    best
}

// ---------------------------------------------------------------- building

/// The sets of `text` (node-semver's `Range` constructor).
fn build(text: &str, inc_pr: bool) -> Result<Vec<Vec<Comparator>>, String> {
    let mut sets = Vec::new();
    for part in text.trim().split("||") {
        sets.push(parse_part(part.trim(), inc_pr)?);
    }
    if sets.len() > 1 {
        // Null sets go, unless all are; then one `*` set stands for all.
        // (A quirk kept: `* || 1.2.3-beta` is then just `*`, which admits
        // no pre-release.)
        let first = sets.first().cloned().unwrap_or_default();
        sets.retain(|s| !s.first().is_some_and(Comparator::is_null_set));
        if sets.is_empty() {
            sets.push(first);
        } else if sets.len() > 1 {
            if let Some(any) = sets
                .iter()
                .find(|s| matches!(s.as_slice(), [Comparator::Any]))
                .cloned()
            {
                sets = vec![any];
            }
        }
    }
    Ok(sets)
}

/// One `||`-separated part (node-semver's `parseRange`).
fn parse_part(part: &str, inc_pr: bool) -> Result<Vec<Comparator>, String> {
    // Build metadata goes first, wherever it stands (node-semver 7.8).
    let part = strip_builds(part);
    let tokens: Vec<&str> = part.split_whitespace().collect();
    let mut comps = match hyphen(&tokens, inc_pr)? {
        Some(c) => c,
        None => {
            let mut comps = Vec::new();
            for token in merge_operators(&tokens) {
                comps.extend(comparators(&token, inc_pr)?);
            }
            if comps.is_empty() {
                // The empty range.
                comps.push(Comparator::Any);
            }
            comps
        }
    };
    // `>=0.0.0` (with includePrerelease `>=0.0.0-0`) is `*`.
    for c in &mut comps {
        if let Comparator::Cmp(Op::Ge, b) = c {
            let zero = if inc_pr {
                vec![Identifier::zero()]
            } else {
                Vec::new()
            };
            if b.release() == [0, 0, 0] && b.prerelease() == zero.as_slice() {
                *c = Comparator::Any;
            }
        }
    }
    if let Some(null) = comps.iter().find(|c| c.is_null_set()) {
        return Ok(vec![null.clone()]);
    }
    let mut unique: Vec<Comparator> = Vec::new();
    for c in comps {
        if !unique.contains(&c) {
            unique.push(c);
        }
    }
    if unique.len() > 1 {
        unique.retain(|c| *c != Comparator::Any);
    }
    Ok(unique)
}

/// `text` without any `+<identifier>(.<identifier>)*`.
fn strip_builds(text: &str) -> String {
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'-';
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'+' && bytes.get(i + 1).copied().is_some_and(ident) {
            i += 1;
            loop {
                while bytes.get(i).copied().is_some_and(ident) {
                    i += 1;
                }
                let more =
                    bytes.get(i) == Some(&b'.') && bytes.get(i + 1).copied().is_some_and(ident);
                if !more {
                    break;
                }
                i += 1;
            }
        } else {
            out.push(b);
            i += 1;
        }
    }
    // Only ASCII was taken out.
    String::from_utf8(out).unwrap_or_default()
}

/// node-semver's trimming: an operator followed by a space belongs to the
/// next word (`> 1.2` is `>1.2`, `~ 1.2` and `~> 1.2` are `~1.2`, `^ 1` is
/// `^1`).
fn merge_operators(tokens: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut pending: Option<&str> = None;
    for t in tokens {
        match pending.take() {
            Some(op) => out.push(format!("{}{t}", if op == "~>" { "~" } else { op })),
            None if ["<", ">", "<=", ">=", "=", "~", "~>", "^"].contains(t) => pending = Some(t),
            None => out.push((*t).to_string()),
        }
    }
    if let Some(op) = pending {
        out.push(op.to_string());
    }
    out
}

/// A part of an x-range: a number, or a wildcard (`x`, `X`, `*`, or absent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    N(u64),
    X,
}

impl Part {
    fn n(self) -> u64 {
        match self {
            Part::N(n) => n,
            Part::X => 0,
        }
    }
}

/// node-semver's `XRANGEPLAIN`: `[v=\s]*` then `M[.m[.p[-pre][+build]]]`,
/// each part a number or a wildcard.
#[derive(Debug, Clone)]
struct XPlain {
    /// What came before the first number (`v`, `=`, spaces).
    prefix: String,
    parts: [Part; 3],
    /// How many parts were written (the others are wildcards).
    given: usize,
    /// Only when all three parts are given.
    pre: Vec<Identifier>,
}

impl XPlain {
    fn read(text: &str) -> Option<Self> {
        let mut c = Cursor::new(text);
        while c
            .peek()
            .is_some_and(|b| b == b'v' || b == b'=' || b.is_ascii_whitespace())
        {
            c.at += 1;
        }
        let prefix = c.since(0).to_string();
        let mut parts = [Part::X; 3];
        let mut given = 0;
        for (i, slot) in parts.iter_mut().enumerate() {
            if i > 0 && !c.eat(b'.') {
                break;
            }
            *slot = match c.peek() {
                Some(b'x' | b'X' | b'*') => {
                    c.at += 1;
                    Part::X
                }
                _ => Part::N(c.number()?),
            };
            given += 1;
        }
        let mut pre = Vec::new();
        if given == 3 {
            pre = c.prerelease().ok()?;
            c.build().ok()?;
        }
        c.done().then_some(Self {
            prefix,
            parts,
            given,
            pre,
        })
    }

    fn any_x(&self) -> bool {
        self.parts.contains(&Part::X)
    }

    /// A number after a wildcard (`x.1`, `1.x.2`): node-semver's
    /// `invalidXRangeOrder`, which leaves such an x-range unreadable.
    fn out_of_order(&self) -> bool {
        let [m, n, p] = self.parts;
        let given = |i: usize, part: Part| self.given > i && part != Part::X;
        (m == Part::X && given(1, n)) || (n == Part::X && given(2, p))
    }

    /// The version it names when it has no wildcard; its prefix must be
    /// what a plain comparator allows (`v` or nothing), since node-semver
    /// leaves such a version as written.
    fn exact(&self) -> Result<Semver, String> {
        if !self.prefix.is_empty() && self.prefix != "v" {
            return Err(format!(
                "{:?} before a version (only `v` may stand there)",
                self.prefix
            ));
        }
        let [m, n, p] = self.parts.map(Part::n);
        ver(m, n, p, self.pre.clone())
    }
}

fn ver(major: u64, minor: u64, patch: u64, pre: Vec<Identifier>) -> Result<Semver, String> {
    let v = Semver::new(major, minor, patch, pre, Vec::new()).map_err(String::from)?;
    // node-semver reads each comparator's version as text, at most 256 bytes.
    if v.to_string().len() > super::semver::MAX_LENGTH {
        return Err("a version longer than 256 bytes".into());
    }
    Ok(v)
}

/// `n + 1`, refused past the safe integers as node-semver refuses it.
fn inc(n: u64) -> Result<u64, String> {
    n.checked_add(1)
        .ok_or_else(|| "a number above 2^53 - 1".to_string())
}

/// `-0` when pre-releases are included, else nothing.
fn z(inc_pr: bool) -> Vec<Identifier> {
    if inc_pr {
        vec![Identifier::zero()]
    } else {
        Vec::new()
    }
}

fn zero_pre() -> Vec<Identifier> {
    vec![Identifier::zero()]
}

/// `A - B`, when that is the whole part (node-semver's `hyphenReplace`).
fn hyphen(tokens: &[&str], inc_pr: bool) -> Result<Option<Vec<Comparator>>, String> {
    let Some((from, to)) = tokens
        .iter()
        .enumerate()
        .filter(|(i, t)| **t == "-" && *i > 0)
        .find_map(|(i, _)| {
            let from = XPlain::read(&tokens.get(..i)?.join(" "))?;
            let to = XPlain::read(&tokens.get(i + 1..)?.join(" "))?;
            Some((from, to))
        })
    else {
        return Ok(None);
    };
    let mut out = Vec::new();
    let [fm, fn_, fp] = from.parts;
    match (fm, fn_, fp) {
        (Part::X, _, _) => {}
        (Part::N(m), Part::X, _) => out.push(Comparator::Cmp(Op::Ge, ver(m, 0, 0, z(inc_pr))?)),
        (Part::N(m), Part::N(n), Part::X) => {
            out.push(Comparator::Cmp(Op::Ge, ver(m, n, 0, z(inc_pr))?))
        }
        (Part::N(_), Part::N(_), Part::N(_)) if !from.pre.is_empty() => {
            out.push(Comparator::Cmp(Op::Ge, from.exact()?))
        }
        (Part::N(m), Part::N(n), Part::N(p)) => {
            // `>=` + the text as written (+ `-0`): the prefix rule holds.
            from.exact()?;
            out.push(Comparator::Cmp(Op::Ge, ver(m, n, p, z(inc_pr))?))
        }
    }
    let [tm, tn, tp] = to.parts;
    match (tm, tn, tp) {
        (Part::X, _, _) => {}
        (Part::N(m), Part::X, _) => {
            out.push(Comparator::Cmp(Op::Lt, ver(inc(m)?, 0, 0, zero_pre())?))
        }
        (Part::N(m), Part::N(n), Part::X) => {
            out.push(Comparator::Cmp(Op::Lt, ver(m, inc(n)?, 0, zero_pre())?))
        }
        (Part::N(m), Part::N(n), Part::N(p)) if !to.pre.is_empty() => {
            out.push(Comparator::Cmp(Op::Le, ver(m, n, p, to.pre.clone())?))
        }
        (Part::N(m), Part::N(n), Part::N(p)) if inc_pr => {
            to.exact()?;
            out.push(Comparator::Cmp(Op::Lt, ver(m, n, inc(p)?, zero_pre())?))
        }
        (Part::N(_), Part::N(_), Part::N(_)) => out.push(Comparator::Cmp(Op::Le, to.exact()?)),
    }
    if out.is_empty() {
        out.push(Comparator::Any);
    }
    Ok(Some(out))
}

/// One word of a part: a caret, a tilde, an x-range, a comparator
/// (node-semver's `parseComparator` and `new Comparator`).
fn comparators(token: &str, inc_pr: bool) -> Result<Vec<Comparator>, String> {
    let bad = || format!("{} is not a comparator", quoted(token));
    if let Some(rest) = token.strip_prefix('^') {
        let x = XPlain::read(rest).ok_or_else(bad)?;
        return caret(&x, inc_pr);
    }
    if let Some(rest) = token.strip_prefix('~') {
        let rest = rest.strip_prefix('>').unwrap_or(rest);
        let x = XPlain::read(rest).ok_or_else(bad)?;
        return tilde(&x, inc_pr);
    }
    let (op, rest) = split_operator(token);
    if let Some(x) = XPlain::read(rest) {
        if x.out_of_order() {
            return Err(format!("{}: a number after a wildcard", quoted(token)));
        }
        if x.any_x() {
            return x_range(op, &x, inc_pr);
        }
        let op = op.unwrap_or(Op::Eq);
        return Ok(vec![Comparator::Cmp(op, x.exact()?)]);
    }
    // node-semver then drops the first `*` (with an operator before it)
    // wherever it stands, and reads what is left as a plain comparator:
    // `1.2.3*` is `1.2.3`, `>=*1.2.3` is `1.2.3`.
    if let Some(star) = token.find('*') {
        let head = token.get(..star).unwrap_or("");
        let mut start = star;
        if head.ends_with('=') {
            start -= 1;
        }
        if token.get(..start).is_some_and(|h| h.ends_with(['<', '>'])) {
            start -= 1;
        }
        let left = format!(
            "{}{}",
            token.get(..start).unwrap_or(""),
            token.get(star + 1..).unwrap_or("")
        );
        if left.is_empty() {
            return Ok(vec![Comparator::Any]);
        }
        let (op, rest) = split_operator(&left);
        if rest.len() > super::semver::MAX_LENGTH {
            return Err("a version longer than 256 bytes".into());
        }
        let mut c = Cursor::new(rest);
        c.eat(b'v');
        let v = Semver::read(&mut c).map_err(|_| bad())?;
        if !c.done() {
            return Err(bad());
        }
        return Ok(vec![Comparator::Cmp(op.unwrap_or(Op::Eq), v)]);
    }
    Err(bad())
}

/// node-semver's `GTLT`, `((?:<|>)?=?)`, at the start of `token`.
fn split_operator(token: &str) -> (Option<Op>, &str) {
    for (text, op) in [
        ("<=", Op::Le),
        (">=", Op::Ge),
        ("<", Op::Lt),
        (">", Op::Gt),
        ("=", Op::Eq),
    ] {
        if let Some(rest) = token.strip_prefix(text) {
            return (Some(op), rest);
        }
    }
    (None, token)
}

/// `^M.m.p`: changes that do not modify the left-most non-zero part.
fn caret(x: &XPlain, inc_pr: bool) -> Result<Vec<Comparator>, String> {
    use Comparator::Cmp;
    let lt = |m, n, p| -> Result<Comparator, String> { Ok(Cmp(Op::Lt, ver(m, n, p, zero_pre())?)) };
    Ok(match x.parts {
        [Part::X, _, _] => vec![Comparator::Any],
        [Part::N(m), Part::X, _] => vec![Cmp(Op::Ge, ver(m, 0, 0, z(inc_pr))?), lt(inc(m)?, 0, 0)?],
        [Part::N(0), Part::N(n), Part::X] => {
            vec![Cmp(Op::Ge, ver(0, n, 0, z(inc_pr))?), lt(0, inc(n)?, 0)?]
        }
        [Part::N(m), Part::N(n), Part::X] => {
            vec![Cmp(Op::Ge, ver(m, n, 0, z(inc_pr))?), lt(inc(m)?, 0, 0)?]
        }
        [Part::N(m), Part::N(n), Part::N(p)] => {
            // A pre-release bound stays; a release bound gets `-0` with
            // includePrerelease, except when the major is not 0 (as
            // node-semver writes it).
            let low = if !x.pre.is_empty() {
                x.pre.clone()
            } else if m == 0 {
                z(inc_pr)
            } else {
                Vec::new()
            };
            let high = match (m, n) {
                (0, 0) => lt(0, 0, inc(p)?)?,
                (0, _) => lt(0, inc(n)?, 0)?,
                _ => lt(inc(m)?, 0, 0)?,
            };
            vec![Cmp(Op::Ge, ver(m, n, p, low)?), high]
        }
    })
}

/// `~M.m.p`: patch-level changes (minor-level when only `~M` is given).
fn tilde(x: &XPlain, inc_pr: bool) -> Result<Vec<Comparator>, String> {
    use Comparator::Cmp;
    let lt = |m, n, p| -> Result<Comparator, String> { Ok(Cmp(Op::Lt, ver(m, n, p, zero_pre())?)) };
    Ok(match x.parts {
        [Part::X, _, _] => vec![Comparator::Any],
        [Part::N(m), Part::X, _] => {
            vec![Cmp(Op::Ge, ver(m, 0, 0, z(inc_pr))?), lt(inc(m)?, 0, 0)?]
        }
        [Part::N(m), Part::N(n), Part::X] => {
            vec![Cmp(Op::Ge, ver(m, n, 0, z(inc_pr))?), lt(m, inc(n)?, 0)?]
        }
        [Part::N(m), Part::N(n), Part::N(p)] => {
            vec![
                Cmp(Op::Ge, ver(m, n, p, x.pre.clone())?),
                lt(m, inc(n)?, 0)?,
            ]
        }
    })
}

/// An x-range with an optional operator (node-semver's `replaceXRange`);
/// at least one part is a wildcard.
fn x_range(op: Option<Op>, x: &XPlain, inc_pr: bool) -> Result<Vec<Comparator>, String> {
    use Comparator::Cmp;
    // `=1.x` is `1.x`.
    let op = op.filter(|o| *o != Op::Eq);
    let [pm, pn, _] = x.parts;
    let xm = pn == Part::X || pm == Part::X;
    let Part::N(m) = pm else {
        // `>*` and `<*` admit nothing; every other `*` everything.
        return Ok(match op {
            Some(Op::Gt | Op::Lt) => vec![Cmp(Op::Lt, ver(0, 0, 0, zero_pre())?)],
            _ => vec![Comparator::Any],
        });
    };
    let n = pn.n();
    match op {
        Some(op) => {
            // The wildcards become 0 (`>=1.2` is `>=1.2.0`); `>1.2` is
            // `>=1.3.0`, `<=1.2` is `<1.3.0-0`.
            let (op, m, n) = match op {
                Op::Gt if xm => (Op::Ge, inc(m)?, 0),
                Op::Gt => (Op::Ge, m, inc(n)?),
                Op::Le if xm => (Op::Lt, inc(m)?, 0),
                Op::Le => (Op::Lt, m, inc(n)?),
                other => (other, m, if xm { 0 } else { n }),
            };
            let pre = if op == Op::Lt { zero_pre() } else { z(inc_pr) };
            Ok(vec![Cmp(op, ver(m, n, 0, pre)?)])
        }
        None if xm => Ok(vec![
            Cmp(Op::Ge, ver(m, 0, 0, z(inc_pr))?),
            Cmp(Op::Lt, ver(inc(m)?, 0, 0, zero_pre())?),
        ]),
        None => Ok(vec![
            Cmp(Op::Ge, ver(m, n, 0, z(inc_pr))?),
            Cmp(Op::Lt, ver(m, inc(n)?, 0, zero_pre())?),
        ]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> Semver {
        Semver::parse(text).unwrap_or_else(|e| panic!("{e}"))
    }

    fn r(text: &str) -> Range {
        Range::parse(text).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The desugared form, as node-semver's `new Range(text).range`.
    fn desugared(text: &str) -> String {
        r(text).to_string()
    }

    #[test]
    fn desugars_as_node_semver_documents() {
        for (range, want) in [
            // Hyphen ranges: inclusive, partial versions filled.
            ("1.2.3 - 2.3.4", ">=1.2.3 <=2.3.4"),
            ("1.2 - 2.3.4", ">=1.2.0 <=2.3.4"),
            ("1.2.3 - 2.3", ">=1.2.3 <2.4.0-0"),
            ("1.2.3 - 2", ">=1.2.3 <3.0.0-0"),
            ("* - 2", "<3.0.0-0"),
            // X-ranges.
            ("*", "*"),
            ("", "*"),
            ("x", "*"),
            ("1.x", ">=1.0.0 <2.0.0-0"),
            ("1", ">=1.0.0 <2.0.0-0"),
            ("1.2.x", ">=1.2.0 <1.3.0-0"),
            ("1.2", ">=1.2.0 <1.3.0-0"),
            ("=1.x", ">=1.0.0 <2.0.0-0"),
            (">1", ">=2.0.0"),
            (">1.2", ">=1.3.0"),
            ("<=1.2", "<1.3.0-0"),
            ("<=1", "<2.0.0-0"),
            ("<1.2", "<1.2.0-0"),
            (">=1.2", ">=1.2.0"),
            (">*", "<0.0.0-0"),
            ("<x", "<0.0.0-0"),
            // Tildes: patch-level changes.
            ("~1.2.3", ">=1.2.3 <1.3.0-0"),
            ("~1.2", ">=1.2.0 <1.3.0-0"),
            ("~1", ">=1.0.0 <2.0.0-0"),
            ("~0.2.3", ">=0.2.3 <0.3.0-0"),
            ("~0.2", ">=0.2.0 <0.3.0-0"),
            ("~0", "<1.0.0-0"),
            ("~1.2.3-beta.2", ">=1.2.3-beta.2 <1.3.0-0"),
            ("~>1.2", ">=1.2.0 <1.3.0-0"),
            ("~> 1.2", ">=1.2.0 <1.3.0-0"),
            ("~ 1.2", ">=1.2.0 <1.3.0-0"),
            // Carets: the left-most non-zero part stays.
            ("^1.2.3", ">=1.2.3 <2.0.0-0"),
            ("^0.2.3", ">=0.2.3 <0.3.0-0"),
            ("^0.0.3", ">=0.0.3 <0.0.4-0"),
            ("^1.2.3-beta.2", ">=1.2.3-beta.2 <2.0.0-0"),
            ("^0.0.3-beta", ">=0.0.3-beta <0.0.4-0"),
            ("^1.2.x", ">=1.2.0 <2.0.0-0"),
            ("^0.0.x", "<0.1.0-0"),
            ("^0.0", "<0.1.0-0"),
            ("^1.x", ">=1.0.0 <2.0.0-0"),
            ("^0.x", "<1.0.0-0"),
            ("^*", "*"),
            ("^ 1.2", ">=1.2.0 <2.0.0-0"),
            ("^v1.2.3", ">=1.2.3 <2.0.0-0"),
            // Comparators, spacing, prefixes.
            (">= 1.2.3 < 2", ">=1.2.3 <2.0.0-0"),
            ("=1.2.3", "1.2.3"),
            ("v1.2.3", "1.2.3"),
            ("=v1.2.3", "1.2.3"),
            (">=0.0.0", "*"),
            ("1.2.3 1.2.3", "1.2.3"),
            // Sets.
            ("1.2.7 || >=1.2.9 <2.0.0", "1.2.7||>=1.2.9 <2.0.0"),
            ("<0.0.0-0 || 1.x", ">=1.0.0 <2.0.0-0"),
            ("1.x || *", "*"),
            ("1.2.3*", "1.2.3"),
            // Build metadata is dropped wherever it stands.
            ("2+b.1", ">=2.0.0 <3.0.0-0"),
            ("X - 3.1+b.1", "<3.2.0-0"),
            ("^1.2.3+build.5", ">=1.2.3 <2.0.0-0"),
        ] {
            assert_eq!(desugared(range), want, "{range:?}");
        }
    }

    #[test]
    fn refuses_what_node_semver_refuses() {
        for bad in [
            "1.2.3 -",
            "- 1.2.3",
            "1.2.3 - 2.3.4 - 5",
            ">=",
            "~",
            "^",
            "latest",
            "not a range",
            "1.2-beta",
            "01.2.3",
            "==1.2.3",
            "v=1.2.3",
            "=1.2.3 - 2",
            "^1.2.3.4",
            "1 ||| 2",
            ">=1.2.3-01",
            "9007199254740992.0.0",
            "^9007199254740991.0.0",
            "1.*.3",
            "x.1",
            ">=x.0",
            "1.x.2-beta",
            "**",
            "git+https://github.com/npm/cli.git",
            "npm:other@^1",
        ] {
            assert!(Range::parse(bad).is_err(), "{bad:?}");
        }
        // A version is at most 256 bytes, however the comparator was spelt.
        let long = format!("1.2.3-{}", "a".repeat(251));
        for bad in [long.clone(), format!("{long}*"), format!("^{long}")] {
            assert!(Range::parse(&bad).is_err(), "{bad:?}");
        }
        let e = Range::parse("latest").unwrap_err().to_string();
        assert!(e.starts_with("\"latest\" is not a semver range: "), "{e}");
    }

    #[test]
    fn satisfies_as_node_semver_documents() {
        for (range, version, yes) in [
            ("1.2.7 || >=1.2.9 <2.0.0", "1.2.7", true),
            ("1.2.7 || >=1.2.9 <2.0.0", "1.2.9", true),
            ("1.2.7 || >=1.2.9 <2.0.0", "1.4.6", true),
            ("1.2.7 || >=1.2.9 <2.0.0", "1.2.8", false),
            ("1.2.7 || >=1.2.9 <2.0.0", "2.0.0", false),
            // The pre-release rule: only the same [major, minor, patch].
            (">1.2.3-alpha.3", "1.2.3-alpha.7", true),
            (">1.2.3-alpha.3", "3.4.5-alpha.9", false),
            (">1.2.3-alpha.3", "3.4.5", true),
            ("^1.2.3-beta.2", "1.2.3-beta.4", true),
            ("^1.2.3-beta.2", "1.2.4-beta.2", false),
            ("~1.2.3-beta.2", "1.2.3-beta.4", true),
            ("~1.2.3-beta.2", "1.2.4-beta.2", false),
            ("*", "1.2.3-beta", false),
            ("1.x", "1.2.0-beta", false),
            ("^1.0.0", "2.0.0-0", false),
            ("^1.0.0", "1.99.99", true),
            ("^0.2.3", "0.3.0", false),
            ("^0.0.3", "0.0.4", false),
            ("^0.0.3", "0.0.3", true),
            ("~1.2", "1.2.99", true),
            ("~1.2", "1.3.0", false),
            ("1.2.3 - 2.3.4", "2.3.4", true),
            ("1.2.3 - 2.3.4", "2.3.5", false),
            ("1.2.3 - 2.3", "2.3.99", true),
            ("1.2.3 - 2.3", "2.4.0-0", false),
            ("", "0.0.0", true),
            ("=1.2.3", "1.2.3+build", true),
            ("1.2.3+build", "1.2.3", true),
            ("<0.0.0-0", "0.0.0-0", false),
            // The quirk: the `*` set stands for the whole range.
            ("* || 1.2.3-beta", "1.2.3-beta", false),
            ("1.2.3-beta || 2", "1.2.3-beta", true),
        ] {
            assert_eq!(
                r(range).satisfies(&v(version), false),
                yes,
                "{version} in {range:?}"
            );
        }
    }

    #[test]
    fn include_prerelease_lowers_the_bounds_as_node_semver_does() {
        for (range, version, without, with) in [
            ("*", "1.2.3-beta", false, true),
            ("1.x", "1.0.0-beta", false, true),
            ("1.x", "2.0.0-beta", false, false),
            ("^1.2.3", "1.3.0-beta", false, true),
            // `^1.2.3` keeps its lower bound without `-0` (node-semver).
            ("^1.2.3", "1.2.3-beta", false, false),
            ("^0.2.3", "0.2.3-beta", false, true),
            ("~1.2", "1.2.0-beta", false, true),
            ("~1.2.3", "1.2.3-beta", false, false),
            ("1.2.3 - 2.3.4", "2.3.4-beta", false, true),
            ("1.2.3 - 2.3.4", "2.3.5-0", false, false),
            ("1.2.3 - 2.3.4", "1.2.3-0", false, true),
            (">=1.0.0", "1.0.0-rc.1", false, false),
        ] {
            let got = r(range);
            assert_eq!(
                got.satisfies(&v(version), false),
                without,
                "{version} in {range:?}"
            );
            assert_eq!(
                got.satisfies(&v(version), true),
                with,
                "{version} in {range:?} (pre)"
            );
        }
    }

    #[test]
    fn the_highest_satisfying_version() {
        let vs: Vec<Semver> = ["1.2.3", "1.2.4", "1.3.0-beta", "2.0.0", "1.2.4+b"]
            .iter()
            .map(|s| v(s))
            .collect();
        let got = max_satisfying(&vs, &r("~1.2.0"), false).unwrap();
        assert_eq!(got.to_string(), "1.2.4");
        assert_eq!(
            max_satisfying(&vs, &r("^1"), true).unwrap().to_string(),
            "1.3.0-beta"
        );
        assert_eq!(max_satisfying(&vs, &r("^3"), false), None);
    }

    #[test]
    fn the_display_parses_back_to_the_same_range() {
        for text in [
            "1.2.7 || >=1.2.9 <2.0.0",
            "^0.0.3-beta",
            "~1.2 || *",
            "1.2.3 - 2.3",
            ">* || <=1.x",
            "",
        ] {
            let once = r(text);
            let twice = r(&once.to_string());
            assert_eq!(once.sets(), twice.sets(), "{text:?}");
        }
    }
}
