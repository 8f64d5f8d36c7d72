//! Just enough XML-RPC for a mirroring client (bandersnatch): parse a
//! `methodCall` whose parameters are scalars, render a `methodResponse`.
//!
//! The parser is deliberately not an XML parser. It takes a bounded UTF-8
//! body, refuses anything with markup declarations (`<!DOCTYPE`, `<!ENTITY`,
//! CDATA, comments), so nothing can expand or include anything, and reads the
//! fixed shape `<methodCall><methodName>..</methodName><params><param>
//! <value>..</value></param>..</params></methodCall>` with string and integer
//! values only. Anything else is an error, which the canary answers with an
//! XML-RPC fault.

/// Larger calls are refused; a real call from a mirror is a few hundred bytes.
pub(super) const MAX_CALL_BYTES: usize = 64 * 1024;

/// A parameter of a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Param {
    Int(i64),
    Str(String),
}

/// A value in a response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Value {
    Int(i64),
    Str(String),
    Array(Vec<Value>),
    Struct(Vec<(String, Value)>),
}

/// A parsed `methodCall`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Call {
    pub method: String,
    pub params: Vec<Param>,
}

/// Why a body is not a call this parser accepts (the canary answers it with
/// a fault saying so).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum CallError {
    #[error("call larger than {MAX_CALL_BYTES} bytes")]
    TooLarge,
    #[error("call is not UTF-8")]
    NotUtf8,
    #[error("markup declarations, CDATA and comments are not accepted")]
    Declarations,
    #[error("unterminated XML declaration")]
    UnterminatedDeclaration,
    #[error("processing instructions are not accepted")]
    ProcessingInstruction,
    #[error("not a methodCall")]
    NotMethodCall,
    #[error("no methodName")]
    NoMethodName,
    #[error("invalid methodName")]
    InvalidMethodName,
    #[error("expected params after methodName")]
    ExpectedParams,
    /// A `param`, or the `value` inside one, is missing.
    #[error("expected {0}")]
    Expected(&'static str),
    #[error("unexpected content in param")]
    UnexpectedInParam,
    #[error("unterminated {0}")]
    Unterminated(&'static str),
    /// An `int`, `i4` or `i8` that is not a 64-bit integer.
    #[error("invalid {0}")]
    InvalidInt(&'static str),
    #[error("only string and integer parameters are accepted")]
    NotScalar,
    #[error("markup inside a string")]
    MarkupInString,
    #[error("unterminated character reference")]
    UnterminatedReference,
    #[error("unsupported character reference {0}")]
    UnsupportedReference(String),
}

/// Parses a `methodCall`; `Err` says why it is not one this parser accepts.
pub(super) fn parse_call(body: &[u8]) -> Result<Call, CallError> {
    if body.len() > MAX_CALL_BYTES {
        return Err(CallError::TooLarge);
    }
    let text = std::str::from_utf8(body).map_err(|_| CallError::NotUtf8)?;
    let mut rest = text.trim_start_matches('\u{feff}').trim();
    if rest.contains("<!") {
        return Err(CallError::Declarations);
    }
    if rest.starts_with("<?xml") {
        let end = rest.find("?>").ok_or(CallError::UnterminatedDeclaration)?;
        rest = rest[end + 2..].trim_start();
    }
    if rest.contains("<?") {
        return Err(CallError::ProcessingInstruction);
    }
    let inner = rest
        .strip_prefix("<methodCall>")
        .and_then(|r| r.strip_suffix("</methodCall>"))
        .ok_or(CallError::NotMethodCall)?
        .trim();
    let (name, after) = element(inner, "methodName")?.ok_or(CallError::NoMethodName)?;
    let method = name.trim();
    if method.is_empty()
        || !method
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'/'))
    {
        return Err(CallError::InvalidMethodName);
    }
    let after = after.trim();
    let mut params = Vec::new();
    if !(after.is_empty() || after == "<params/>") {
        let list = after
            .strip_prefix("<params>")
            .and_then(|r| r.strip_suffix("</params>"))
            .ok_or(CallError::ExpectedParams)?;
        let mut list = list.trim();
        while !list.is_empty() {
            let (param, after) = element(list, "param")?.ok_or(CallError::Expected("param"))?;
            let (value, tail) =
                element(param.trim(), "value")?.ok_or(CallError::Expected("value"))?;
            if !tail.trim().is_empty() {
                return Err(CallError::UnexpectedInParam);
            }
            params.push(scalar(value)?);
            list = after.trim();
        }
    }
    Ok(Call {
        method: method.to_string(),
        params,
    })
}

/// `<tag>inner</tag>rest` at the start of `s` (no nesting of `tag`):
/// `Ok(Some((inner, rest)))`; `Ok(None)` when `s` does not start with `<tag>`.
fn element<'a>(s: &'a str, tag: &'static str) -> Result<Option<(&'a str, &'a str)>, CallError> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let Some(body) = s.strip_prefix(open.as_str()) else {
        return Ok(None);
    };
    let end = body
        .find(close.as_str())
        .ok_or(CallError::Unterminated(tag))?;
    Ok(Some((&body[..end], &body[end + close.len()..])))
}

fn scalar(value: &str) -> Result<Param, CallError> {
    let v = value.trim();
    if !v.starts_with('<') {
        // A bare value is a string (untrimmed, as the spec says).
        return unescape(value).map(Param::Str);
    }
    if v == "<string/>" {
        return Ok(Param::Str(String::new()));
    }
    for tag in ["int", "i4", "i8"] {
        if let Some((n, tail)) = element(v, tag)? {
            if !tail.is_empty() {
                break;
            }
            return n
                .trim()
                .parse::<i64>()
                .map(Param::Int)
                .map_err(|_| CallError::InvalidInt(tag));
        }
    }
    if let Some((s, "")) = element(v, "string")? {
        return unescape(s).map(Param::Str);
    }
    Err(CallError::NotScalar)
}

fn unescape(s: &str) -> Result<String, CallError> {
    if s.contains('<') {
        return Err(CallError::MarkupInString);
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let end = tail.find(';').ok_or(CallError::UnterminatedReference)?;
        out.push(match &tail[..=end] {
            "&amp;" => '&',
            "&lt;" => '<',
            "&gt;" => '>',
            "&quot;" => '"',
            "&apos;" => '\'',
            other => return Err(CallError::UnsupportedReference(other.to_string())),
        });
        rest = &tail[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn escape(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
}

fn render_value(v: &Value, out: &mut String) {
    out.push_str("<value>");
    match v {
        Value::Int(n) => out.push_str(&format!("<int>{n}</int>")),
        Value::Str(s) => {
            out.push_str("<string>");
            escape(s, out);
            out.push_str("</string>");
        }
        Value::Array(items) => {
            out.push_str("<array><data>");
            for item in items {
                render_value(item, out);
            }
            out.push_str("</data></array>");
        }
        Value::Struct(members) => {
            out.push_str("<struct>");
            for (name, value) in members {
                out.push_str("<member><name>");
                escape(name, out);
                out.push_str("</name>");
                render_value(value, out);
                out.push_str("</member>");
            }
            out.push_str("</struct>");
        }
    }
    out.push_str("</value>");
}

const PROLOG: &str = "<?xml version='1.0'?>\n";

/// A `methodResponse` carrying `value`. No whitespace between elements:
/// strict clients validate against the XML-RPC schema.
pub(super) fn render_response(value: &Value) -> String {
    let mut out = format!("{PROLOG}<methodResponse><params><param>");
    render_value(value, &mut out);
    out.push_str("</param></params></methodResponse>\n");
    out
}

/// A `methodResponse` carrying a fault.
pub(super) fn render_fault(code: i64, message: &str) -> String {
    let mut out = format!("{PROLOG}<methodResponse><fault>");
    render_value(
        &Value::Struct(vec![
            ("faultCode".into(), Value::Int(code)),
            ("faultString".into(), Value::Str(message.into())),
        ]),
        &mut out,
    );
    out.push_str("</fault></methodResponse>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_python_clients_send() {
        // aiohttp-xmlrpc (bandersnatch), no arguments and one integer.
        let call = parse_call(b"<?xml version='1.0' encoding='ASCII'?>\n<methodCall><methodName>list_packages_with_serial</methodName><params/></methodCall>").unwrap();
        assert_eq!(call.method, "list_packages_with_serial");
        assert!(call.params.is_empty());
        let call = parse_call(b"<?xml version='1.0' encoding='ASCII'?>\n<methodCall><methodName>changelog_since_serial</methodName><params><param><value><i4>42</i4></value></param></params></methodCall>").unwrap();
        assert_eq!(call.params, [Param::Int(42)]);
        // xmlrpc.client, pretty-printed, with a string.
        let call = parse_call(b"<?xml version='1.0'?>\n<methodCall>\n<methodName>package_releases</methodName>\n<params>\n<param>\n<value><string>a&amp;b</string></value>\n</param>\n<param>\n<value><int>-1</int></value>\n</param>\n</params>\n</methodCall>\n").unwrap();
        assert_eq!(call.params, [Param::Str("a&b".into()), Param::Int(-1)]);
        let call =
            parse_call(b"<methodCall><methodName>x</methodName><params><param><value>bare</value></param></params></methodCall>").unwrap();
        assert_eq!(call.params, [Param::Str("bare".into())]);
    }

    #[test]
    fn refuses_anything_else() {
        for bad in [
            &b"<?xml version='1.0'?><!DOCTYPE x [<!ENTITY a 'b'>]><methodCall><methodName>x</methodName></methodCall>"[..],
            b"<methodCall><methodName>x</methodName><params><param><value><string><![CDATA[x]]></string></value></param></params></methodCall>",
            b"<methodCall><methodName>x y</methodName></methodCall>",
            b"<methodCall><methodName>x</methodName><params><param><value><struct></struct></value></param></params></methodCall>",
            b"<methodCall><methodName>x</methodName><params><param><value><int>1e9</int></value></param></params></methodCall>",
            b"<methodCall><methodName>x</methodName><params><param><value><string>&xxe;</string></value></param></params></methodCall>",
            b"<methodCall><methodName>x</methodName>",
            b"<methodResponse/>",
            b"\xff\xfe",
            b"",
        ] {
            assert!(parse_call(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
        let big = vec![b' '; MAX_CALL_BYTES + 1];
        assert!(parse_call(&big).is_err());
    }

    #[test]
    fn renders_compact_responses() {
        let v = Value::Struct(vec![(
            "a<b".into(),
            Value::Array(vec![Value::Int(1), Value::Str("x&y".into())]),
        )]);
        assert_eq!(
            render_response(&v),
            "<?xml version='1.0'?>\n<methodResponse><params><param><value><struct><member><name>a&lt;b</name><value><array><data><value><int>1</int></value><value><string>x&amp;y</string></value></data></array></value></member></struct></value></param></params></methodResponse>\n"
        );
        assert!(render_fault(-32601, "no").contains(
            "<fault><value><struct><member><name>faultCode</name><value><int>-32601</int></value></member><member><name>faultString</name><value><string>no</string></value></member></struct></value></fault>"
        ));
    }
}
