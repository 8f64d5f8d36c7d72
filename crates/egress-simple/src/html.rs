//! PEP 503 HTML pages (with PEP 592, 629, 658/714 attributes).
//!
//! The parser is a small hand-written scanner, not an HTML5 parser: it finds
//! start and end tags, skips comments, declarations and `<script>`/`<style>`
//! content, and decodes the handful of entities simple pages use. Every step
//! moves forward through the input, so it runs in linear time on any bytes.

use std::collections::BTreeMap;

use crate::{
    preferred_hash, FileEntry, IndexPage, ParseError, ProjectPage, API_VERSION, MAX_ANCHORS,
};

// ---------------------------------------------------------------- rendering

/// Escapes text for element content and double- or single-quoted attribute
/// values. Package text is data, never markup.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

fn page_head(out: &mut String, api_version: Option<&str>, title: &str) {
    out.push_str("<!DOCTYPE html>\n<html>\n  <head>\n");
    out.push_str("    <meta name=\"pypi:repository-version\" content=\"");
    out.push_str(&escape(api_version.unwrap_or(API_VERSION)));
    out.push_str("\">\n    <title>");
    out.push_str(title);
    out.push_str("</title>\n  </head>\n  <body>\n");
}

const PAGE_TAIL: &str = "  </body>\n</html>\n";

fn push_attr(out: &mut String, name: &str, value: &str) {
    out.push(' ');
    out.push_str(name);
    out.push_str("=\"");
    out.push_str(&escape(value));
    out.push('"');
}

/// The PEP 503 project page. HTML has room for one file hash and one metadata
/// hash (sha256 preferred); `versions`, `size` and `upload-time` are JSON only
/// (PEP 700) and not rendered.
pub fn render_project_html(page: &ProjectPage) -> String {
    let name = escape(&page.name);
    let mut out = String::new();
    page_head(
        &mut out,
        page.api_version.as_deref(),
        &format!("Links for {name}"),
    );
    out.push_str("    <h1>Links for ");
    out.push_str(&name);
    out.push_str("</h1>\n");
    for file in &page.files {
        let mut href = file.url.clone();
        if let Some((algo, hex)) = preferred_hash(&file.hashes) {
            href.push('#');
            href.push_str(algo);
            href.push('=');
            href.push_str(hex);
        }
        out.push_str("    <a");
        push_attr(&mut out, "href", &href);
        if let Some(requires_python) = &file.requires_python {
            push_attr(&mut out, "data-requires-python", requires_python);
        }
        if let Some(reason) = &file.yanked {
            push_attr(&mut out, "data-yanked", reason);
        }
        if let Some(hashes) = &file.core_metadata {
            let value = match preferred_hash(hashes) {
                Some((algo, hex)) => format!("{algo}={hex}"),
                None => "true".to_string(),
            };
            // PEP 714 requires the new name; the old one is allowed in HTML
            // (only the JSON key broke pip) and keeps older clients working.
            push_attr(&mut out, "data-core-metadata", &value);
            push_attr(&mut out, "data-dist-info-metadata", &value);
        }
        if let Some(gpg_sig) = file.gpg_sig {
            push_attr(
                &mut out,
                "data-gpg-sig",
                if gpg_sig { "true" } else { "false" },
            );
        }
        out.push('>');
        out.push_str(&escape(&file.filename));
        out.push_str("</a><br/>\n");
    }
    out.push_str(PAGE_TAIL);
    out
}

/// The PEP 503 project list; each project links to `{name}/`.
pub fn render_index_html(index: &IndexPage) -> String {
    let mut out = String::new();
    page_head(&mut out, index.api_version.as_deref(), "Simple index");
    for project in &index.projects {
        let name = escape(project);
        out.push_str("    <a href=\"");
        out.push_str(&name);
        out.push_str("/\">");
        out.push_str(&name);
        out.push_str("</a><br/>\n");
    }
    out.push_str(PAGE_TAIL);
    out
}

// ------------------------------------------------------------------ parsing

/// Reads a PEP 503 project page. The project name comes from the title
/// ("Links for NAME", also devpi's "index: links for NAME"); empty if absent.
pub fn parse_project_html(body: &[u8]) -> Result<ProjectPage, ParseError> {
    let doc = Document::scan(body)?;
    let name = doc
        .title
        .as_deref()
        .and_then(|title| {
            let at = title.to_ascii_lowercase().find("links for ")?;
            title.get(at + "links for ".len()..)
        })
        .map(|name| name.trim().to_string())
        .unwrap_or_default();
    let files = doc
        .anchors
        .into_iter()
        .filter_map(|anchor| {
            let href = anchor.attr("href")?;
            let (url, fragment) = match href.split_once('#') {
                Some((url, fragment)) => (url, Some(fragment)),
                None => (href, None),
            };
            let mut hashes = BTreeMap::new();
            if let Some((algo, hex)) = fragment.and_then(split_hash) {
                hashes.insert(algo.to_string(), hex.to_string());
            }
            // PEP 714: the new attribute wins; the old one only in its absence.
            let core_metadata = anchor
                .attr("data-core-metadata")
                .or_else(|| anchor.attr("data-dist-info-metadata"))
                .and_then(parse_metadata_attr);
            Some(FileEntry {
                filename: text_or_last_segment(&anchor.text, url),
                url: url.to_string(),
                hashes,
                requires_python: anchor.attr("data-requires-python").map(str::to_string),
                yanked: anchor.attr("data-yanked").map(str::to_string),
                core_metadata,
                size: None,
                upload_time: None,
                gpg_sig: match anchor.attr("data-gpg-sig") {
                    Some("true") => Some(true),
                    Some("false") => Some(false),
                    _ => None,
                },
            })
        })
        .collect();
    Ok(ProjectPage {
        name,
        files,
        versions: Vec::new(),
        api_version: doc.api_version,
    })
}

/// Reads a PEP 503 project list: one project per anchor with an href.
pub fn parse_index_html(body: &[u8]) -> Result<IndexPage, ParseError> {
    let doc = Document::scan(body)?;
    let projects = doc
        .anchors
        .iter()
        .filter_map(|anchor| {
            let href = anchor.attr("href")?;
            let href = href.split('#').next().unwrap_or_default();
            Some(text_or_last_segment(
                &anchor.text,
                href.trim_end_matches('/'),
            ))
        })
        .collect();
    Ok(IndexPage {
        projects,
        api_version: doc.api_version,
    })
}

/// `<algo>=<hex>` with both sides non-empty.
fn split_hash(value: &str) -> Option<(&str, &str)> {
    value
        .split_once('=')
        .filter(|(algo, hex)| !algo.is_empty() && !hex.is_empty())
}

/// PEP 658 attribute value: `true`, or `<algo>=<hex>`. The attribute's
/// presence announces the metadata file, so an unreadable value still counts
/// as announced (without a hash); only an explicit `false` does not.
fn parse_metadata_attr(value: &str) -> Option<BTreeMap<String, String>> {
    let value = value.trim();
    if value.eq_ignore_ascii_case("false") {
        return None;
    }
    let mut hashes = BTreeMap::new();
    if let Some((algo, hex)) = split_hash(value) {
        hashes.insert(algo.to_string(), hex.to_string());
    }
    Some(hashes)
}

/// The anchor text, trimmed; when empty, the last path segment of the URL
/// (query dropped), which PEP 503 says the text must equal anyway, trimmed the
/// same way (so a page rendered from the result reads back the same name).
fn text_or_last_segment(text: &str, url: &str) -> String {
    let text = text.trim();
    if !text.is_empty() {
        return text.to_string();
    }
    let path = url.split('?').next().unwrap_or_default();
    path.rsplit('/')
        .next()
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// An `<a>` element: decoded attributes and decoded text content.
struct Anchor {
    attrs: Vec<(String, String)>,
    text: String,
}

impl Anchor {
    /// First occurrence wins, as in HTML5.
    fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What the parsers need from a page.
struct Document {
    anchors: Vec<Anchor>,
    api_version: Option<String>,
    title: Option<String>,
}

impl Document {
    fn scan(body: &[u8]) -> Result<Self, ParseError> {
        let text = String::from_utf8_lossy(body);
        let mut doc = Document {
            anchors: Vec::new(),
            api_version: None,
            title: None,
        };
        // Raw (undecoded) text of the open anchor and of the open title.
        let mut anchor: Option<(Vec<(String, String)>, String)> = None;
        let mut title: Option<String> = None;
        for token in Tokens::new(&text) {
            match token {
                Token::Start { name, attrs } => match name.as_str() {
                    "a" => {
                        // An unclosed anchor ends where the next one starts.
                        if let Some((attrs, raw)) = anchor.take() {
                            doc.push_anchor(attrs, &raw)?;
                        }
                        anchor = Some((attrs, String::new()));
                    }
                    "meta" => {
                        let is_version = attrs.iter().any(|(n, v)| {
                            n == "name" && v.trim().eq_ignore_ascii_case("pypi:repository-version")
                        });
                        if is_version && doc.api_version.is_none() {
                            doc.api_version = attrs
                                .into_iter()
                                .find(|(n, _)| n == "content")
                                .map(|(_, v)| v.trim().to_string());
                        }
                    }
                    "title" if doc.title.is_none() => title = Some(String::new()),
                    _ => {}
                },
                Token::End { name } => match name.as_str() {
                    "a" => {
                        if let Some((attrs, raw)) = anchor.take() {
                            doc.push_anchor(attrs, &raw)?;
                        }
                    }
                    "title" => {
                        if let Some(raw) = title.take() {
                            doc.title = Some(decode_entities(&raw));
                        }
                    }
                    _ => {}
                },
                Token::Text(raw) => {
                    if let Some((_, text)) = &mut anchor {
                        text.push_str(raw);
                    }
                    if let Some(text) = &mut title {
                        text.push_str(raw);
                    }
                }
            }
        }
        if let Some((attrs, raw)) = anchor.take() {
            doc.push_anchor(attrs, &raw)?;
        }
        Ok(doc)
    }

    fn push_anchor(&mut self, attrs: Vec<(String, String)>, raw: &str) -> Result<(), ParseError> {
        if self.anchors.len() >= MAX_ANCHORS {
            return Err(ParseError::TooManyAnchors { limit: MAX_ANCHORS });
        }
        self.anchors.push(Anchor {
            attrs,
            text: decode_entities(raw),
        });
        Ok(())
    }
}

/// Attributes kept per tag; later ones are ignored.
const MAX_ATTRIBUTES: usize = 64;

enum Token<'a> {
    /// Tag name lowercased; attribute names lowercased, values decoded; a
    /// valueless attribute has the value "".
    Start {
        name: String,
        attrs: Vec<(String, String)>,
    },
    End {
        name: String,
    },
    /// Raw text between tags, entities not yet decoded.
    Text(&'a str),
}

/// Splits a document into tags and text. Positions only ever stop on ASCII
/// bytes or the end, so every slice falls on a UTF-8 boundary; `get` is used
/// anyway so a mistake would lose text rather than panic.
struct Tokens<'a> {
    text: &'a str,
    /// ASCII-lowercased copy for case-insensitive searches; same byte offsets.
    lower: String,
    pos: usize,
}

impl<'a> Tokens<'a> {
    fn new(text: &'a str) -> Self {
        Tokens {
            text,
            lower: text.to_ascii_lowercase(),
            pos: 0,
        }
    }

    fn bytes(&self) -> &[u8] {
        self.text.as_bytes()
    }

    fn slice(&self, from: usize, to: usize) -> &'a str {
        self.text.get(from..to).unwrap_or_default()
    }

    /// Offset of `needle` (lowercase) at or after `from`.
    fn find_from(&self, from: usize, needle: &str) -> Option<usize> {
        self.lower
            .get(from..)
            .and_then(|rest| rest.find(needle))
            .map(|at| from + at)
    }

    /// Moves past the next `>` (or to the end).
    fn skip_past_gt(&mut self) {
        self.pos = self
            .find_from(self.pos, ">")
            .map_or(self.text.len(), |at| at + 1);
    }

    fn skip_while(&mut self, pred: impl Fn(u8) -> bool) {
        while self.bytes().get(self.pos).is_some_and(|&b| pred(b)) {
            self.pos += 1;
        }
    }

    /// Reads a run of bytes that are not HTML whitespace, `/`, `>` (nor `=`
    /// when reading an attribute name).
    fn word(&mut self, stop_at_eq: bool) -> &'a str {
        let start = self.pos;
        self.skip_while(|b| {
            !(b.is_ascii_whitespace() || b == b'/' || b == b'>' || (stop_at_eq && b == b'='))
        });
        self.slice(start, self.pos)
    }

    /// Reads the attributes of a start tag up to and past its `>`. Returns
    /// `None` when the input ends inside the tag (HTML5 drops such a tag).
    fn attributes(&mut self) -> Option<Vec<(String, String)>> {
        let mut attrs = Vec::new();
        loop {
            self.skip_while(|b| b.is_ascii_whitespace() || b == b'/');
            match self.bytes().get(self.pos) {
                None => return None,
                Some(b'>') => {
                    self.pos += 1;
                    return Some(attrs);
                }
                _ => {}
            }
            // A leading `=` belongs to the name (HTML5); this also guarantees
            // progress on input like `<a ==>`.
            let start = self.pos;
            if self.bytes().get(self.pos) == Some(&b'=') {
                self.pos += 1;
            }
            self.word(true);
            let name = self.slice(start, self.pos).to_ascii_lowercase();
            self.skip_while(|b| b.is_ascii_whitespace());
            let mut value = "";
            if self.bytes().get(self.pos) == Some(&b'=') {
                self.pos += 1;
                self.skip_while(|b| b.is_ascii_whitespace());
                match self.bytes().get(self.pos) {
                    Some(&quote @ (b'"' | b'\'')) => {
                        let open = self.pos + 1;
                        let close = self
                            .bytes()
                            .get(open..)
                            .unwrap_or_default()
                            .iter()
                            .position(|&b| b == quote)
                            .map(|at| open + at)?;
                        value = self.slice(open, close);
                        self.pos = close + 1;
                    }
                    _ => {
                        let start = self.pos;
                        self.skip_while(|b| !(b.is_ascii_whitespace() || b == b'>'));
                        value = self.slice(start, self.pos);
                    }
                }
            }
            // Real pages use a handful of attributes; the cap keeps a tag of
            // millions of one-byte attributes from costing far more memory
            // than its bytes.
            if attrs.len() < MAX_ATTRIBUTES {
                attrs.push((name, decode_entities(value)));
            }
        }
    }
}

impl<'a> Iterator for Tokens<'a> {
    type Item = Token<'a>;

    fn next(&mut self) -> Option<Token<'a>> {
        loop {
            let start = self.pos;
            let bytes = self.bytes();
            let first = *bytes.get(start)?;
            if first != b'<' {
                let end = self.find_from(start, "<").unwrap_or(self.text.len());
                self.pos = end;
                return Some(Token::Text(self.slice(start, end)));
            }
            match bytes.get(start + 1) {
                Some(b'!')
                    if self
                        .lower
                        .get(start..)
                        .is_some_and(|r| r.starts_with("<!--")) =>
                {
                    self.pos = self
                        .find_from(start + 4, "-->")
                        .map_or(self.text.len(), |at| at + 3);
                }
                // Doctype, CDATA, processing instructions: skip.
                Some(b'!' | b'?') => self.skip_past_gt(),
                Some(b'/') => {
                    self.pos = start + 2;
                    let name = self.word(false).to_ascii_lowercase();
                    self.skip_past_gt();
                    if !name.is_empty() {
                        return Some(Token::End { name });
                    }
                }
                Some(b) if b.is_ascii_alphabetic() => {
                    self.pos = start + 1;
                    let name = self.word(false).to_ascii_lowercase();
                    let Some(attrs) = self.attributes() else {
                        // Input ended inside the tag; nothing follows.
                        self.pos = self.text.len();
                        return None;
                    };
                    if name == "script" || name == "style" {
                        // Raw text: nothing in it is markup, so jump to its
                        // end tag, which the next call reads as a tag.
                        let close = format!("</{name}");
                        self.pos = self.find_from(self.pos, &close).unwrap_or(self.text.len());
                    }
                    return Some(Token::Start { name, attrs });
                }
                // A `<` that starts no tag is text.
                _ => {
                    self.pos = start + 1;
                    return Some(Token::Text("<"));
                }
            }
        }
    }
}

/// Decodes the entities simple pages use: `&amp; &lt; &gt; &quot; &apos;
/// &nbsp;` and numeric `&#NN;` / `&#xHH;`. Anything else stays as written.
fn decode_entities(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some((before, after)) = rest.split_once('&') {
        out.push_str(before);
        rest = rest.get(before.len()..).unwrap_or(after);
        // Entity names are short; bound the search so `&&&&...` stays linear.
        let semicolon = rest.bytes().take(34).position(|b| b == b';');
        let decoded = semicolon.and_then(|end| Some((decode_entity(rest.get(1..end)?)?, end)));
        match decoded {
            Some((c, end)) => {
                out.push(c);
                rest = rest.get(end + 1..).unwrap_or_default();
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn decode_entity(name: &str) -> Option<char> {
    if let Some(number) = name.strip_prefix('#') {
        let (digits, radix) = match number.strip_prefix(['x', 'X']) {
            Some(hex) => (hex, 16),
            None => (number, 10),
        };
        // from_str_radix would accept a sign; entities do not.
        if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
            return None;
        }
        // Out-of-range, surrogate and NUL references become U+FFFD (HTML5).
        let code = u32::from_str_radix(digits, radix).unwrap_or(u32::MAX);
        return Some(
            char::from_u32(code)
                .filter(|&c| c != '\0')
                .unwrap_or('\u{FFFD}'),
        );
    }
    match name {
        "amp" | "AMP" => Some('&'),
        "lt" | "LT" => Some('<'),
        "gt" | "GT" => Some('>'),
        "quot" | "QUOT" => Some('"'),
        "apos" => Some('\''),
        "nbsp" => Some('\u{A0}'),
        _ => None,
    }
}
