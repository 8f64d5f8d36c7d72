//! `--hf-lock`: the Hugging Face repositories a snapshot holds, one per
//! line, each at a commit:
//!
//! ```text
//! # TYPE REPO COMMIT [GLOB...]
//! model openai-community/gpt2 607a30d783dfa663caf39e06633721c8d4cfcd7e *.json *.safetensors
//! dataset org/name 0123456789abcdef0123456789abcdef01234567
//! ```
//!
//! The type is `model`, `dataset` or `space`; the repo id is validated as
//! `huggingface_hub` validates one ([`HfRepoId`]); the revision must be a
//! 40-hex commit ([`HfCommit`]): a branch or a tag moves, and a lock names
//! what it resolved to. The globs select files as `huggingface_hub`'s
//! `allow_patterns` do ([`glob_matches`], fnmatch: `*` also matches `/`);
//! without one, every file of the commit is held. `#` starts a comment.

use crate::LockError;
use egress_model::{HfCommit, HfRepoId, HfRepoType};

/// One repository at one commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HfPin {
    pub repo_type: HfRepoType,
    pub repo: HfRepoId,
    pub commit: HfCommit,
    /// The files held; empty: all of them.
    pub globs: Vec<String>,
    /// 1-based line of the lock.
    pub line: usize,
}

/// A parsed `--hf-lock`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HfLock {
    pub file: String,
    pub pins: Vec<HfPin>,
}

/// The longest glob a lock line may give.
const MAX_GLOB: usize = 256;

fn check_glob(g: &str) -> Result<(), String> {
    if g.len() > MAX_GLOB {
        return Err(format!("the glob is longer than {MAX_GLOB} bytes"));
    }
    if g.starts_with('/') || g.split('/').any(|c| c == "..") {
        return Err(format!(
            "{g:?}: a glob names files inside the repository (no leading /, no ..)"
        ));
    }
    if g.bytes().any(|b| b.is_ascii_control()) {
        return Err(format!("{g:?}: a glob holds no control characters"));
    }
    Ok(())
}

pub fn parse_hf_lock(text: &str, file: &str) -> Result<HfLock, LockError> {
    let mut pins: Vec<HfPin> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let at = |m: String| LockError::new(file, line, m);
        let content = raw.split('#').next().unwrap_or_default().trim();
        if content.is_empty() {
            continue;
        }
        let mut words = content.split_whitespace();
        let (Some(kind), Some(repo), Some(rev)) = (words.next(), words.next(), words.next()) else {
            return Err(at(format!(
                "{content:?}: expected `TYPE REPO COMMIT [GLOB...]`, e.g. `model org/name <40-hex commit> *.json`"
            )));
        };
        let repo_type = HfRepoType::parse(kind).ok_or_else(|| {
            at(format!(
                "{kind:?} is not a repo type: give model, dataset or space"
            ))
        })?;
        let repo = HfRepoId::new(repo).map_err(|e| at(e.to_string()))?;
        let commit = HfCommit::new(rev).map_err(|e| at(e.to_string()))?;
        let globs: Vec<String> = words.map(str::to_string).collect();
        for g in &globs {
            check_glob(g).map_err(at)?;
        }
        if let Some(p) = pins
            .iter()
            .find(|p| p.repo_type == repo_type && p.repo == repo)
        {
            return Err(at(format!(
                "{repo_type} {repo} is locked twice (line {} too): give each repository one commit",
                p.line
            )));
        }
        pins.push(HfPin {
            repo_type,
            repo,
            commit,
            globs,
            line,
        });
    }
    if pins.is_empty() {
        return Err(LockError::new(
            file,
            0,
            "no repository: give one line `TYPE REPO COMMIT [GLOB...]`".to_string(),
        ));
    }
    Ok(HfLock {
        file: file.to_string(),
        pins,
    })
}

/// Whether `path` matches `pattern` as Python's `fnmatch` (which
/// `huggingface_hub`'s `allow_patterns` use) matches it: `*` any run of
/// characters, `/` included; `?` one character; `[seq]` and `[!seq]` one
/// character in or out of the set (ranges `a-z` too). Case-sensitive.
pub fn glob_matches(pattern: &str, path: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let s: Vec<char> = path.chars().collect();
    // Iterative matching with one backtrack point for the last `*`.
    let (mut pi, mut si) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        let here = s.get(si).copied();
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, si));
                pi += 1;
                continue;
            }
            Some('?') => {
                pi += 1;
                si += 1;
                continue;
            }
            Some('[') => {
                if let (Some(c), Some((ok, next))) = (here, class(&p, pi)) {
                    if ok(c) {
                        pi = next;
                        si += 1;
                        continue;
                    }
                } else if here == Some('[') {
                    // An unclosed `[` is a literal, as fnmatch reads it.
                    pi += 1;
                    si += 1;
                    continue;
                }
            }
            Some(&c) if Some(c) == here => {
                pi += 1;
                si += 1;
                continue;
            }
            _ => {}
        }
        match star {
            Some((sp, ss)) => {
                pi = sp + 1;
                si = ss + 1;
                star = Some((sp, ss + 1));
            }
            None => return false,
        }
    }
    p.get(pi..)
        .is_some_and(|rest| rest.iter().all(|&c| c == '*'))
}

/// The set at `p[at] == '['`: a test for one character, and where the
/// pattern goes on; `None` if the bracket is not closed.
#[allow(clippy::type_complexity)]
fn class(p: &[char], at: usize) -> Option<(Box<dyn Fn(char) -> bool + '_>, usize)> {
    let mut i = at + 1;
    let negate = matches!(p.get(i), Some('!'));
    if negate {
        i += 1;
    }
    let start = i;
    // A `]` first in the set is a member.
    if p.get(i) == Some(&']') {
        i += 1;
    }
    while p.get(i).is_some_and(|&c| c != ']') {
        i += 1;
    }
    p.get(i)?;
    let set = p.get(start..i)?;
    let test = move |c: char| {
        let mut j = 0;
        let mut hit = false;
        while let Some(&a) = set.get(j) {
            if let (Some('-'), Some(&b)) = (set.get(j + 1), set.get(j + 2)) {
                hit |= a <= c && c <= b;
                j += 3;
            } else {
                hit |= a == c;
                j += 1;
            }
        }
        hit != negate
    };
    Some((Box::new(test), i + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: &str = "607a30d783dfa663caf39e06633721c8d4cfcd7e";

    #[test]
    fn reads_lines_and_refuses_what_a_lock_cannot_mean() {
        let text = format!(
            "# the lab's models\nmodel openai-community/gpt2 {C} *.json *.safetensors\n\ndataset org/data {C}  # all files\n"
        );
        let lock = parse_hf_lock(&text, "hf.lock").unwrap();
        assert_eq!(lock.pins.len(), 2);
        assert_eq!(lock.pins[0].globs, ["*.json", "*.safetensors"]);
        assert_eq!(lock.pins[1].repo_type, HfRepoType::Dataset);
        assert!(lock.pins[1].globs.is_empty());
        for (bad, want) in [
            (
                "model gpt2 main\n",
                "hf.lock:1: \"main\" is not a commit id",
            ),
            ("model a--b {C}\n", "is not a Hugging Face repo id"),
            ("model ../x {C}\n", "is not a Hugging Face repo id"),
            ("models gpt2 {C}\n", "is not a repo type"),
            ("model gpt2\n", "expected `TYPE REPO COMMIT"),
            ("model gpt2 {C} ../secret\n", "a glob names files inside"),
            ("model gpt2 {C} /etc/*\n", "a glob names files inside"),
            (
                "model gpt2 {C}\nmodel gpt2 {C}\n",
                "locked twice (line 1 too)",
            ),
            ("# nothing\n", "no repository"),
        ] {
            let e = parse_hf_lock(&bad.replace("{C}", C), "hf.lock").unwrap_err();
            assert!(e.to_string().contains(want), "{bad:?}: {e}");
        }
    }

    #[test]
    fn globs_match_as_fnmatch() {
        for (p, s, want) in [
            ("*.json", "config.json", true),
            ("*.json", "sub/config.json", true),
            ("*.json", "config.jsonl", false),
            ("tokenizer*", "tokenizer.json", true),
            (
                "model-0000?-of-00002.safetensors",
                "model-00001-of-00002.safetensors",
                true,
            ),
            ("[ab]*.bin", "a.bin", true),
            ("[!ab]*.bin", "a.bin", false),
            ("[a-c].txt", "b.txt", true),
            ("onnx/*", "onnx/model.onnx", true),
            ("onnx/*", "model.onnx", false),
            ("*", "", true),
            ("", "x", false),
            ("[", "[", true),
            ("a*b*c", "aXXbYYc", true),
            ("a*b*c", "aXXbYY", false),
        ] {
            assert_eq!(glob_matches(p, s), want, "{p:?} {s:?}");
        }
    }
}
