//! The tokens of PEP 508 dependency specifiers, matched the way
//! `packaging`'s tokenizer matches them (its rules, reimplemented: `\b`
//! word boundaries around keywords, `[ \t]+` as whitespace, `$` also before
//! one final newline).

use super::text::is_py_space;

/// A parse failure: where (a byte offset into the source) and what was
/// expected there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fail {
    pub(crate) at: usize,
    pub(crate) problem: &'static str,
}

/// A position in a source text, moved forward token by token.
pub(crate) struct Lexer<'a> {
    src: &'a str,
    pos: usize,
}

/// Whether `c` is a word character for a regular expression's `\b`.
fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The comparison operators of markers and specifiers, longest first.
pub(crate) const OPERATORS: [&str; 8] = ["===", "==", "~=", "!=", "<=", ">=", "<", ">"];

impl<'a> Lexer<'a> {
    pub(crate) fn new(src: &'a str) -> Self {
        Self { src, pos: 0 }
    }

    pub(crate) fn rest(&self) -> &'a str {
        self.src.get(self.pos..).unwrap_or_default()
    }

    pub(crate) fn fail(&self, problem: &'static str) -> Fail {
        Fail {
            at: self.pos,
            problem,
        }
    }

    fn prev_char(&self) -> Option<char> {
        self.src.get(..self.pos).and_then(|s| s.chars().next_back())
    }

    /// Skips `[ \t]*`; true when something was skipped.
    pub(crate) fn ws(&mut self) -> bool {
        let rest = self.rest();
        let skipped = rest.len() - rest.trim_start_matches([' ', '\t']).len();
        self.pos += skipped;
        skipped > 0
    }

    /// At the end: nothing left, or only one newline (`$` in Python).
    pub(crate) fn at_end(&self) -> bool {
        matches!(self.rest(), "" | "\n")
    }

    /// Consumes `c` if it is next.
    pub(crate) fn eat(&mut self, c: char) -> bool {
        if self.rest().starts_with(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    /// A word-bounded keyword (`and`, `or`, `in`, `not`, a variable name):
    /// consumed when it is next and not part of a longer word.
    pub(crate) fn keyword(&mut self, word: &str) -> bool {
        let rest = self.rest();
        let Some(after) = rest.strip_prefix(word) else {
            return false;
        };
        let starts_word = word.chars().next().is_some_and(is_word);
        let ends_word = word.chars().next_back().is_some_and(is_word);
        let before_ok = !starts_word || !self.prev_char().is_some_and(is_word);
        let after_ok = !ends_word || !after.chars().next().is_some_and(is_word);
        if before_ok && after_ok {
            self.pos += word.len();
            true
        } else {
            false
        }
    }

    /// `\b[a-zA-Z0-9][a-zA-Z0-9._-]*\b`: a project or extra name.
    pub(crate) fn identifier(&mut self) -> Option<&'a str> {
        let rest = self.rest();
        let first = rest.chars().next()?;
        if !first.is_ascii_alphanumeric() || self.prev_char().is_some_and(is_word) {
            return None;
        }
        let run = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
            .unwrap_or(rest.len());
        // Back off until the match ends on a word boundary.
        let mut end = run;
        while end > 0 {
            let last_is_word = rest
                .get(..end)
                .and_then(|s| s.chars().next_back())
                .is_some_and(is_word);
            let next_is_word = rest
                .get(end..)
                .and_then(|s| s.chars().next())
                .is_some_and(is_word);
            if last_is_word && !next_is_word {
                let name = rest.get(..end)?;
                self.pos += end;
                return Some(name);
            }
            end -= 1;
        }
        None
    }

    /// `'...'` or `"..."` (no escapes): the text between the quotes.
    pub(crate) fn quoted_string(&mut self) -> Option<&'a str> {
        let rest = self.rest();
        let quote = rest.chars().next().filter(|c| matches!(c, '\'' | '"'))?;
        let body = rest.get(1..)?;
        let close = body.find(quote)?;
        let text = body.get(..close)?;
        self.pos += close + 2;
        Some(text)
    }

    /// A comparison operator, longest first.
    pub(crate) fn operator(&mut self) -> Option<&'static str> {
        let rest = self.rest();
        let op = OPERATORS.iter().find(|op| rest.starts_with(**op))?;
        self.pos += op.len();
        Some(op)
    }

    /// A version specifier token: an operator, optional whitespace, then
    /// the version's characters (for `===`, anything up to whitespace, `;`
    /// or `)`). Validated later, as a whole, by the specifier parser.
    pub(crate) fn specifier(&mut self) -> Option<&'a str> {
        let rest = self.rest();
        let op = OPERATORS.iter().find(|op| rest.starts_with(**op))?;
        let after_op = rest.get(op.len()..)?;
        let version = after_op.trim_start_matches(is_py_space);
        let len = if *op == "===" {
            version
                .find(|c: char| is_py_space(c) || c == ';' || c == ')')
                .unwrap_or(version.len())
        } else {
            version
                .find(|c: char| {
                    !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+' | '!' | '*'))
                })
                .unwrap_or(version.len())
        };
        let total = rest.len() - version.len() + len;
        let token = rest.get(..total)?;
        self.pos += total;
        Some(token)
    }

    /// `[^ \t]+`: a URL after `@`.
    pub(crate) fn url(&mut self) -> Option<&'a str> {
        let rest = self.rest();
        let len = rest.find([' ', '\t']).unwrap_or(rest.len());
        if len == 0 {
            return None;
        }
        let url = rest.get(..len)?;
        self.pos += len;
        Some(url)
    }
}

/// The 1-based column (in characters) of byte offset `at` in `src`.
pub(crate) fn column(src: &str, at: usize) -> usize {
    src.get(..at).map_or(0, |s| s.chars().count()) + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_end_on_a_word_boundary() {
        let mut l = Lexer::new("foo-bar.-[x]");
        assert_eq!(l.identifier(), Some("foo-bar"));
        assert_eq!(l.rest(), ".-[x]");
        let mut l = Lexer::new("foo_");
        assert_eq!(l.identifier(), Some("foo_"));
        let mut l = Lexer::new("-foo");
        assert_eq!(l.identifier(), None);
        let mut l = Lexer::new("fooé");
        assert_eq!(l.identifier(), None);
    }

    #[test]
    fn keywords_need_word_boundaries() {
        let mut l = Lexer::new("android");
        assert!(!l.keyword("and"));
        let mut l = Lexer::new("and(");
        assert!(l.keyword("and"));
        let mut l = Lexer::new("\"3\"and x");
        assert!(l.quoted_string().is_some());
        assert!(l.keyword("and"));
    }

    #[test]
    fn specifier_tokens() {
        let mut l = Lexer::new(">= 1.0,<2");
        assert_eq!(l.specifier(), Some(">= 1.0"));
        assert!(l.eat(','));
        assert_eq!(l.specifier(), Some("<2"));
        assert!(l.at_end());
        let mut l = Lexer::new("===a,b c");
        assert_eq!(l.specifier(), Some("===a,b"));
        let mut l = Lexer::new("==1.0.*;");
        assert_eq!(l.specifier(), Some("==1.0.*"));
    }

    #[test]
    fn end_allows_one_final_newline() {
        assert!(Lexer::new("\n").at_end());
        assert!(!Lexer::new("\n\n").at_end());
        assert_eq!(column("aé b", 4), 4);
    }
}
