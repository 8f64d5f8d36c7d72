//! The Hugging Face Hub's names: a repository's type and id, and a commit.
//!
//! Each is validated when it is made, so that it is safe in a URL path and
//! a file name as it stands and can never spell a traversal.

use std::fmt;

/// The three kinds of repository the Hub serves, as the API names them in
/// its paths (`/api/models/...`, `/api/datasets/...`, `/api/spaces/...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HfRepoType {
    Model,
    Dataset,
    Space,
}

impl HfRepoType {
    /// As a lock line names it: `model`, `dataset`, `space`.
    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "model" => Some(Self::Model),
            "dataset" => Some(Self::Dataset),
            "space" => Some(Self::Space),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Model => "model",
            Self::Dataset => "dataset",
            Self::Space => "space",
        }
    }

    /// The API path segment: `models`, `datasets`, `spaces`.
    pub fn api_segment(self) -> &'static str {
        match self {
            Self::Model => "models",
            Self::Dataset => "datasets",
            Self::Space => "spaces",
        }
    }

    /// The prefix of a `resolve` URL: none for a model, `datasets/` and
    /// `spaces/` for the others.
    pub fn url_prefix(self) -> &'static str {
        match self {
            Self::Model => "",
            Self::Dataset => "datasets/",
            Self::Space => "spaces/",
        }
    }
}

impl fmt::Display for HfRepoType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A repository id as `huggingface_hub` validates one: `name` or
/// `namespace/name`, each part 1 to 96 ASCII letters, digits, `-`, `_` and
/// `.`, neither starting nor ending with `-` or `.`, and no `--` or `..`
/// anywhere.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HfRepoId(String);

/// Why a repository id is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidHfRepoId(pub String);

impl fmt::Display for InvalidHfRepoId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is not a Hugging Face repo id (`name` or `namespace/name`, each 1 to 96 letters, digits, '-', '_' and '.', not starting or ending with '-' or '.', no '--' or '..')",
            self.0
        )
    }
}

impl std::error::Error for InvalidHfRepoId {}

fn part_ok(p: &str) -> bool {
    let edge = |c: Option<char>| c.is_some_and(|c| c != '-' && c != '.');
    (1..=96).contains(&p.len())
        && p.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && edge(p.chars().next())
        && edge(p.chars().last())
}

impl HfRepoId {
    pub fn new(raw: &str) -> Result<Self, InvalidHfRepoId> {
        let parts: Vec<&str> = raw.split('/').collect();
        let ok = parts.len() <= 2
            && parts.iter().all(|p| part_ok(p))
            && !raw.contains("--")
            && !raw.contains("..");
        if ok {
            Ok(Self(raw.to_string()))
        } else {
            Err(InvalidHfRepoId(raw.to_string()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A git commit id as the Hub gives one: 40 lowercase hex digits.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HfCommit(String);

/// Why a revision is not a commit id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotACommit(pub String);

impl fmt::Display for NotACommit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is not a commit id (40 lowercase hex digits); a branch or tag moves, so a lock names the commit it resolves to",
            self.0
        )
    }
}

impl std::error::Error for NotACommit {}

impl HfCommit {
    pub fn new(raw: &str) -> Result<Self, NotACommit> {
        let ok = raw.len() == 40 && raw.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if ok {
            Ok(Self(raw.to_string()))
        } else {
            Err(NotACommit(raw.to_string()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

crate::newtype::string_newtype!(HfRepoId, InvalidHfRepoId);
crate::newtype::string_newtype!(HfCommit, NotACommit);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repo_ids_as_huggingface_hub_validates_them() {
        for ok in [
            "gpt2",
            "openai-community/gpt2",
            "HuggingFaceH4/zephyr-7b-beta",
            "a/b",
            "bert-base-uncased",
            "org/model_v1.5",
        ] {
            assert!(HfRepoId::new(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "/x",
            "x/",
            "a/b/c",
            "../etc",
            "a/..",
            "a--b",
            "a..b",
            "-a",
            "a-",
            ".a/b",
            "a/b.",
            "a b",
            "a/b%2f",
            "a\\b",
            &"x".repeat(97),
        ] {
            assert!(HfRepoId::new(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn commits_are_forty_lowercase_hex() {
        let c = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(HfCommit::new(c).unwrap().as_str(), c);
        for bad in [
            "main",
            "v1.0",
            &c.to_ascii_uppercase(),
            &c[..39],
            "refs/pr/1",
        ] {
            let e = HfCommit::new(bad).unwrap_err();
            assert!(e.to_string().contains("not a commit id"), "{e}");
        }
        assert_eq!(HfRepoType::parse("dataset"), Some(HfRepoType::Dataset));
        assert_eq!(HfRepoType::Dataset.url_prefix(), "datasets/");
        assert_eq!(HfRepoType::parse("models"), None);
    }
}
