//! deb822 paragraphs (Debian Policy 5.1), the syntax of `Release`,
//! `Packages` and a `.deb`'s `control`.
//!
//! Paragraphs are separated by empty lines. A field is `Name: value`; a line
//! starting with a space or tab continues the field before it. Field names
//! are compared without regard to ASCII case. Each field is kept exactly as
//! written (its name, the spaces after the colon, every continuation line),
//! so [`Paragraph::render`] gives back the bytes it was parsed from.
//!
//! Refused, because Debian forbids them here or because two parsers would
//! read them two ways: comment lines (Policy allows them only in source
//! package control files), lines of only spaces or tabs (a separator to some
//! parsers, a continuation to others), carriage returns and other control
//! characters except tab, a field given twice in one paragraph, and a
//! continuation line with no field before it.

use crate::{quote, AptFormatError};
use std::collections::HashSet;

/// One field, exactly as written: `raw` holds its lines without the final
/// newline.
#[derive(Debug, Clone)]
struct Field {
    raw: String,
    name_len: usize,
    value_start: usize,
    line: usize,
}

/// Fields are equal when their text is: where they were read is not part of
/// what they say.
impl PartialEq for Field {
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw
    }
}

impl Eq for Field {}

impl Field {
    fn name(&self) -> &str {
        self.raw.get(..self.name_len).unwrap_or_default()
    }

    fn value(&self) -> &str {
        self.raw
            .get(self.value_start..)
            .unwrap_or_default()
            .trim_matches([' ', '\t', '\n'])
    }
}

/// A deb822 paragraph: its fields in order, each as written. Two paragraphs
/// are equal when their text is, wherever they were read from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Paragraph {
    fields: Vec<Field>,
}

impl Paragraph {
    /// An empty paragraph, to be filled with [`Paragraph::push`].
    pub fn new() -> Self {
        Self::default()
    }

    /// The value of field `name` (ASCII case ignored), without the spaces
    /// after the colon and without leading or trailing blank space. A
    /// multi-line value keeps its continuation lines, each still starting
    /// with its space or tab.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.field(name).map(Field::value)
    }

    /// The 1-based line where field `name` starts (ASCII case ignored).
    /// Its continuation lines follow it, one line each.
    pub fn field_line(&self, name: &str) -> Option<usize> {
        self.field(name).map(|f| f.line)
    }

    fn field(&self, name: &str) -> Option<&Field> {
        self.fields
            .iter()
            .find(|f| f.name().eq_ignore_ascii_case(name))
    }

    /// Each line of field `name`'s value with its 1-based line number: the
    /// text after the colon first (often empty), then every continuation
    /// line as written.
    pub fn value_lines(&self, name: &str) -> Option<Vec<(usize, &str)>> {
        let field = self.field(name)?;
        let value = field.raw.get(field.value_start..).unwrap_or_default();
        Some(
            value
                .split('\n')
                .enumerate()
                .map(|(i, line)| (field.line + i, line))
                .collect(),
        )
    }

    /// The 1-based line of the first field (0 for an empty paragraph).
    pub fn line(&self) -> usize {
        self.fields.first().map_or(0, |f| f.line)
    }

    /// Field names and values (as [`Paragraph::get`] gives them), in order.
    pub fn fields(&self) -> impl Iterator<Item = (&str, &str)> {
        self.fields.iter().map(|f| (f.name(), f.value()))
    }

    pub fn len(&self) -> usize {
        self.fields.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The paragraph's text: each field as written, each line ending in a
    /// newline, no separator after it.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for field in &self.fields {
            out.push_str(&field.raw);
            out.push('\n');
        }
        out
    }

    /// Appends `Name: value`. A multi-line value is written as given, so each
    /// line after the first must start with a space or tab and hold more
    /// than blank space (write an empty line of a description as ` .`).
    /// Errors name line 0: the paragraph was not read from a file.
    pub fn push(&mut self, name: &str, value: &str) -> Result<(), AptFormatError> {
        check_name(name, 0)?;
        if self.field(name).is_some() {
            return Err(AptFormatError::DuplicateField {
                line: 0,
                name: quote(name),
            });
        }
        let mut lines = value.split('\n');
        let first = lines.next().unwrap_or_default();
        let bad = |why: &str| AptFormatError::BadValue {
            line: 0,
            field: quote(name),
            why: why.to_string(),
        };
        if has_control(first) || first.starts_with([' ', '\t']) {
            return Err(bad(
                "the first line starts with blank space or holds a control character",
            ));
        }
        for line in lines {
            if !line.starts_with([' ', '\t']) || is_blank(line) || has_control(line) {
                return Err(bad(
                    "a continuation line must start with a space or tab and hold more than blank space",
                ));
            }
        }
        let raw = if value.is_empty() {
            format!("{name}:")
        } else {
            format!("{name}: {value}")
        };
        self.fields.push(Field {
            value_start: (name.len() + 2).min(raw.len()),
            name_len: name.len(),
            raw,
            line: 0,
        });
        Ok(())
    }
}

fn has_control(line: &str) -> bool {
    line.chars().any(|c| c.is_control() && c != '\t')
}

fn is_blank(line: &str) -> bool {
    line.chars().all(|c| c == ' ' || c == '\t')
}

fn check_name(name: &str, line: usize) -> Result<(), AptFormatError> {
    let ok = !name.is_empty()
        && !name.starts_with(['#', '-'])
        && name
            .bytes()
            .all(|b| (0x21..=0x7e).contains(&b) && b != b':');
    if ok {
        Ok(())
    } else {
        Err(AptFormatError::BadFieldName {
            line,
            name: quote(name),
        })
    }
}

/// Reads every paragraph of `text`. An empty text, or one of only empty
/// lines, has none.
pub fn parse_paragraphs(text: &str) -> Result<Vec<Paragraph>, AptFormatError> {
    paragraphs(text, false)
}

/// [`parse_paragraphs`] for apt's own configuration files (a deb822
/// `.sources` file): a line starting with `#` is a comment, dropped
/// wherever it stands, as apt drops it; line numbers stay the file's.
pub fn parse_paragraphs_with_comments(text: &str) -> Result<Vec<Paragraph>, AptFormatError> {
    paragraphs(text, true)
}

fn paragraphs(text: &str, comments: bool) -> Result<Vec<Paragraph>, AptFormatError> {
    let mut out = Vec::new();
    let mut current = Paragraph::default();
    let mut names: HashSet<String> = HashSet::new();
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let number = index + 1;
        let line = line.strip_suffix('\n').unwrap_or(line);
        if has_control(line) {
            return Err(AptFormatError::ControlCharacter { line: number });
        }
        if comments && line.starts_with('#') {
            continue;
        }
        if line.is_empty() {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
                names.clear();
            }
            continue;
        }
        if is_blank(line) {
            return Err(AptFormatError::WhitespaceLine { line: number });
        }
        if line.starts_with([' ', '\t']) {
            let Some(field) = current.fields.last_mut() else {
                return Err(AptFormatError::OrphanContinuation { line: number });
            };
            field.raw.push('\n');
            field.raw.push_str(line);
            continue;
        }
        if line.starts_with('#') {
            return Err(AptFormatError::Comment { line: number });
        }
        let Some((name, rest)) = line.split_once(':') else {
            return Err(AptFormatError::NotAField { line: number });
        };
        check_name(name, number)?;
        if !names.insert(name.to_ascii_lowercase()) {
            return Err(AptFormatError::DuplicateField {
                line: number,
                name: quote(name),
            });
        }
        let blank = rest.len() - rest.trim_start_matches([' ', '\t']).len();
        current.fields.push(Field {
            raw: line.to_string(),
            name_len: name.len(),
            value_start: name.len() + 1 + blank,
            line: number,
        });
    }
    if !current.is_empty() {
        out.push(current);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_and_round_trip() {
        let text = "Package: hello\nTag: a,\n b,\n\tc\nEmpty:\nSHA256:\n ab 1 x\n  cd 2 y\n\nPackage:  two \n";
        let ps = parse_paragraphs(text).unwrap();
        assert_eq!(ps.len(), 2);
        assert_eq!(ps[0].get("package"), Some("hello"));
        assert_eq!(ps[0].get("TAG"), Some("a,\n b,\n\tc"));
        assert_eq!(ps[0].get("Empty"), Some(""));
        assert_eq!(ps[0].get("sha256"), Some("ab 1 x\n  cd 2 y"));
        assert_eq!(ps[0].field_line("sha256"), Some(6));
        assert_eq!(ps[1].get("Package"), Some("two"));
        assert_eq!(ps[1].line(), 10);
        let joined: Vec<String> = ps.iter().map(Paragraph::render).collect();
        assert_eq!(joined.join("\n"), text);
    }

    #[test]
    fn refusals() {
        use AptFormatError as E;
        let name = |n: &str| n.to_string();
        let cases = [
            ("A: 1\n#c\n", E::Comment { line: 2 }),
            (" x\n", E::OrphanContinuation { line: 1 }),
            ("A: 1\n\n x\n", E::OrphanContinuation { line: 3 }),
            ("A: 1\n \nB: 2\n", E::WhitespaceLine { line: 2 }),
            ("A: 1\r\n", E::ControlCharacter { line: 1 }),
            (
                "A: 1\na: 2\n",
                E::DuplicateField {
                    line: 2,
                    name: name("a"),
                },
            ),
            ("A 1\n", E::NotAField { line: 1 }),
            (
                ": 1\n",
                E::BadFieldName {
                    line: 1,
                    name: name(""),
                },
            ),
            (
                "-A: 1\n",
                E::BadFieldName {
                    line: 1,
                    name: name("-A"),
                },
            ),
        ];
        for (text, want) in cases {
            assert_eq!(parse_paragraphs(text).unwrap_err(), want, "{text:?}");
        }
        assert!(parse_paragraphs("Ä: 1\n").is_err());
        assert!(parse_paragraphs("A b: 1\n").is_err());
        assert!(parse_paragraphs("A: \0\n").is_err());
    }

    #[test]
    fn same_name_in_two_paragraphs_is_fine() {
        assert_eq!(parse_paragraphs("A: 1\n\n\n\nA: 2").unwrap().len(), 2);
        assert!(parse_paragraphs("").unwrap().is_empty());
        assert!(parse_paragraphs("\n\n").unwrap().is_empty());
    }

    #[test]
    fn push_builds_what_parse_reads() {
        let mut p = Paragraph::new();
        p.push("Package", "x").unwrap();
        p.push("Description", "short\n long\n .\n more").unwrap();
        p.push("Empty", "").unwrap();
        let text = p.render();
        assert_eq!(
            text,
            "Package: x\nDescription: short\n long\n .\n more\nEmpty:\n"
        );
        let back = &parse_paragraphs(&text).unwrap()[0];
        assert_eq!(back.get("description"), p.get("Description"));
        assert_eq!(back.render(), text);
        assert!(p.push("package", "again").is_err());
        assert!(p.push("A", "x\nB: injected").is_err());
        assert!(p.push("A", "x\n \n y").is_err());
        assert!(p.push("A", " leading").is_err());
        assert!(p.push("A:B", "x").is_err());
        assert!(p.push("A", "x\r").is_err());
    }
}
