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
