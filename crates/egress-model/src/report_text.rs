//! Helpers every report renderer shares (the suite's reports and the
//! sandbox scan's): one escaper for JUnit XML, one pretty JSON writer.

use serde::Serialize;

/// `s` made safe for XML text and attribute values. XML 1.0 cannot carry
/// most control characters, even escaped: they become U+FFFD.
pub fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r') => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// `value` as pretty JSON with a final newline; a value that cannot be
/// serialised gives a JSON object naming the error instead of a panic.
pub fn json_pretty<T: Serialize>(value: &T) -> String {
    let mut s = serde_json::to_string_pretty(value)
        .unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }).to_string());
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_replaces_controls() {
        assert_eq!(
            xml_escape("a<b>&\"c'\u{1}\n"),
            "a&lt;b&gt;&amp;&quot;c&apos;\u{fffd}\n"
        );
    }

    #[test]
    fn pretty_json_ends_with_a_newline() {
        assert_eq!(json_pretty(&[1]), "[\n  1\n]\n");
    }
}

/// The colours of a verdict word, on or off.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Paint {
    pub on: bool,
}

impl Paint {
    pub const OFF: Paint = Paint { on: false };

    /// `word` in the colour of the verdict it names (PASS green, FAIL red,
    /// INCONCLUSIVE yellow, SKIPPED and anything else dim), padded to
    /// `width` columns outside the colour codes so that columns line up.
    pub fn verdict(self, word: &str, width: usize) -> String {
        let pad = " ".repeat(width.saturating_sub(word.chars().count()));
        if !self.on {
            return format!("{word}{pad}");
        }
        let code = match word {
            "PASS" => "32",
            "FAIL" => "1;31",
            "INCONCLUSIVE" => "33",
            _ => "2",
        };
        format!("\x1b[{code}m{word}\x1b[0m{pad}")
    }

    /// `text` in bold.
    pub fn bold(self, text: &str) -> String {
        if self.on {
            format!("\x1b[1m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
}

#[cfg(test)]
mod paint_tests {
    use super::Paint;

    #[test]
    fn verdicts_pad_outside_the_colour_codes() {
        assert_eq!(Paint::OFF.verdict("PASS", 6), "PASS  ");
        let on = Paint { on: true }.verdict("FAIL", 6);
        assert_eq!(on, "\x1b[1;31mFAIL\x1b[0m  ");
        assert_eq!(Paint { on: true }.bold("x"), "\x1b[1mx\x1b[0m");
    }
}
