//! The proxy's template engine: the B3 injection class, kept to integer
//! arithmetic so that it shows package text is evaluated and nothing more.

/// The template engine of the description pages: `{{e}}`, `${e}`, `<%= e %>`
/// and `#{e}` are replaced by the value of `e`, integer `+ - * /` with
/// parentheses, and `{% if e %}body{% endif %}` by `body` when `e` is not
/// zero (by nothing when it is). Anything else is left as written. Pure
/// arithmetic: it can show that package text is evaluated, and nothing more.
pub fn render_template(text: &str) -> String {
    const DELIMITERS: [(&str, &str); 5] = [
        ("{{", "}}"),
        ("${", "}"),
        ("<%=", "%>"),
        ("#{", "}"),
        ("{%", "%}"),
    ];
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let next = DELIMITERS
            .iter()
            .filter_map(|&(open, close)| rest.find(open).map(|i| (i, open, close)))
            .min_by_key(|&(i, ..)| i);
        let Some((i, open, close)) = next else {
            break;
        };
        out.push_str(&rest[..i]);
        let after = &rest[i + open.len()..];
        if open == "{%" {
            match statement(after) {
                Some((text, consumed)) => {
                    out.push_str(text);
                    rest = &after[consumed..];
                }
                None => {
                    out.push_str(open);
                    rest = after;
                }
            }
            continue;
        }
        match after
            .find(close)
            .and_then(|j| Some((j, eval(&after[..j])?)))
        {
            Some((j, value)) => {
                out.push_str(&value.to_string());
                rest = &after[j + close.len()..];
            }
            None => {
                out.push_str(open);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// `{% if e %}body{% endif %}` after its `{%`: what it renders to and how
/// many bytes of `after` it takes; `None` when it is not that shape.
fn statement(after: &str) -> Option<(&str, usize)> {
    let close = after.find("%}")?;
    let cond = after.get(..close)?.trim().strip_prefix("if ")?;
    let value = eval(cond)?;
    let body_start = close + 2;
    let end = after.get(body_start..)?.find("{% endif %}")? + body_start;
    let body = after.get(body_start..end)?;
    Some((
        if value != 0 { body } else { "" },
        end + "{% endif %}".len(),
    ))
}

/// Integer arithmetic; `None` for anything else, overflow or division by zero.
fn eval(expr: &str) -> Option<i64> {
    let mut p = Arith {
        s: expr.as_bytes(),
        at: 0,
        depth: 0,
    };
    let v = p.sum()?;
    p.ws();
    (p.at == p.s.len()).then_some(v)
}

struct Arith<'a> {
    s: &'a [u8],
    at: usize,
    depth: u32,
}

impl Arith<'_> {
    fn ws(&mut self) {
        while self.s.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.at).copied()
    }

    fn sum(&mut self) -> Option<i64> {
        let mut v = self.product()?;
        while let Some(op @ (b'+' | b'-')) = self.peek() {
            self.at += 1;
            let r = self.product()?;
            v = if op == b'+' {
                v.checked_add(r)?
            } else {
                v.checked_sub(r)?
            };
        }
        Some(v)
    }

    fn product(&mut self) -> Option<i64> {
        let mut v = self.factor()?;
        while let Some(op @ (b'*' | b'/')) = self.peek() {
            self.at += 1;
            let r = self.factor()?;
            v = if op == b'*' {
                v.checked_mul(r)?
            } else {
                v.checked_div(r)?
            };
        }
        Some(v)
    }

    fn factor(&mut self) -> Option<i64> {
        self.depth += 1;
        if self.depth > 64 {
            return None;
        }
        let v = match self.peek()? {
            b'-' => {
                self.at += 1;
                self.factor()?.checked_neg()?
            }
            b'(' => {
                self.at += 1;
                let v = self.sum()?;
                (self.peek()? == b')').then_some(())?;
                self.at += 1;
                v
            }
            b'0'..=b'9' => {
                let start = self.at;
                while self.s.get(self.at).is_some_and(u8::is_ascii_digit) {
                    self.at += 1;
                }
                std::str::from_utf8(&self.s[start..self.at])
                    .ok()?
                    .parse()
                    .ok()?
            }
            _ => return None,
        };
        self.depth -= 1;
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_engine_is_arithmetic_only() {
        for (raw, evaluated) in egress_model::upstream::TEMPLATE_MARKERS {
            assert_eq!(render_template(raw), evaluated);
        }
        assert_eq!(render_template("a {{ (1+2)*-3 }} b"), "a -9 b");
        assert_eq!(
            render_template("{% if 0 %}x{% endif %}y{% if 2-1 %}z{% endif %}"),
            "yz"
        );
        assert_eq!(
            render_template("{% for x %}{% if 1 %}"),
            "{% for x %}{% if 1 %}"
        );
        assert_eq!(
            render_template("{{7/0}} {{x}} ${__import__('os')} {{"),
            "{{7/0}} {{x}} ${__import__('os')} {{"
        );
        assert_eq!(
            render_template("{{9223372036854775807+1}}"),
            "{{9223372036854775807+1}}"
        );
        assert_eq!(render_template(&"(".repeat(200)), "(".repeat(200));
        assert_eq!(
            eval(&format!("{}1{}", "(".repeat(100), ")".repeat(100))),
            None
        );
    }
}
