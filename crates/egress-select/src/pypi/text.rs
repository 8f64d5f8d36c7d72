//! Small text helpers shared by the parsers.

/// Whether `c` is whitespace as Python's `str.isspace` (and `re`'s `\s`)
/// sees it: Unicode White_Space plus the four ASCII separators
/// U+001C..U+001F.
pub(crate) fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `text` without leading and trailing Python whitespace.
pub(crate) fn trim_py(text: &str) -> &str {
    text.trim_matches(is_py_space)
}

/// `text` quoted and escaped for a one-line message, cut after 120
/// characters.
pub(crate) fn quoted(text: &str) -> String {
    const MAX: usize = 120;
    if text.chars().count() <= MAX {
        format!("{text:?}")
    } else {
        let head: String = text.chars().take(MAX).collect();
        format!("{head:?}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_python_whitespace() {
        assert_eq!(trim_py("\u{1c} 1.0\t\u{a0}\n"), "1.0");
        assert_eq!(trim_py(""), "");
    }

    #[test]
    fn quotes_on_one_line_and_cuts_long_text() {
        assert_eq!(quoted("a\nb"), "\"a\\nb\"");
        let long = "x".repeat(500);
        let q = quoted(&long);
        assert!(q.len() < 130 && q.ends_with('…'), "{q}");
    }
}
