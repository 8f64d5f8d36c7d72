//! PEP 508 dependency specifiers (`Requires-Dist` values, requirement
//! lines): `name[extras] (specifiers) ; marker` or `name[extras] @ url ;
//! marker`, parsed with `packaging`'s grammar.

use std::fmt;
use std::str::FromStr;

use super::lexer::{column, Fail, Lexer};
use super::marker::Marker;
use super::specifier::{SpecifierError, Specifiers};
use super::text::quoted;

/// A PEP 508 requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// The project name as written (not normalised: `egress_model::ProjectName`
    /// normalises and validates it).
    pub name: String,
    /// The extras as written, in order (`["socks"]` for `requests[socks]`).
    pub extras: Vec<String>,
    /// The version specifiers; empty when none (or when `url` is given).
    pub specifiers: Specifiers,
    /// The URL after `@`, if any.
    pub url: Option<String>,
    /// The marker after `;`, if any.
    pub marker: Option<Marker>,
}

/// Why a text is not a PEP 508 requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequirementError {
    /// The text does not follow the PEP 508 grammar (marker syntax
    /// included).
    Syntax {
        /// The requirement as given.
        text: String,
        /// Where (1-based, in characters).
        column: usize,
        /// What was expected there.
        problem: &'static str,
    },
    /// The version specifiers are not PEP 440.
    Specifier {
        /// The requirement as given.
        text: String,
        /// Why the specifiers were refused.
        error: SpecifierError,
    },
}

impl fmt::Display for RequirementError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequirementError::Syntax {
                text,
                column,
                problem,
            } => write!(
                f,
                "{} is not a PEP 508 requirement: {problem} at column {column} (e.g. requests[socks]>=2.0,<3 ; python_version >= \"3.8\")",
                quoted(text)
            ),
            RequirementError::Specifier { text, error } => {
                write!(f, "{} is not a PEP 508 requirement: {error}", quoted(text))
            }
        }
    }
}

impl std::error::Error for RequirementError {}

/// What the parser found before it is checked as a whole.
enum Failure {
    Syntax(Fail),
    Specifier(SpecifierError),
}

impl From<Fail> for Failure {
    fn from(f: Fail) -> Self {
        Failure::Syntax(f)
    }
}

impl Requirement {
    /// Parses a requirement as `packaging.requirements.Requirement` does:
    /// whitespace (spaces, tabs) between the parts, specifiers bare or in
    /// parentheses, a space required between a URL and its `;`.
    pub fn parse(text: &str) -> Result<Self, RequirementError> {
        parse(text).map_err(|f| match f {
            Failure::Syntax(fail) => RequirementError::Syntax {
                text: text.to_string(),
                column: column(text, fail.at),
                problem: fail.problem,
            },
            Failure::Specifier(error) => RequirementError::Specifier {
                text: text.to_string(),
                error,
            },
        })
    }

    /// Whether this requirement applies in `env` when its parent was asked
    /// for with `extras` (no marker: always).
    pub fn applies(&self, env: &super::Environment, extras: &[String]) -> bool {
        self.marker.as_ref().is_none_or(|m| m.evaluate(env, extras))
    }
}

fn parse(text: &str) -> Result<Requirement, Failure> {
    let mut l = Lexer::new(text);
    l.ws();
    let name = l
        .identifier()
        .ok_or_else(|| l.fail("expected a project name at the start"))?
        .to_string();
    l.ws();
    let extras = parse_extras(&mut l)?;
    l.ws();

    let mut url = None;
    let mut specifiers = Specifiers::default();
    let mut marker = None;
    if l.eat('@') {
        l.ws();
        let u = l.url().ok_or_else(|| l.fail("expected a URL after '@'"))?;
        url = Some(u.to_string());
        if !l.at_end() {
            if !l.ws() {
                return Err(l.fail("expected whitespace after the URL").into());
            }
            if !l.at_end() {
                marker = Some(parse_marker_part(
                    &mut l,
                    "expected ';' after the URL and whitespace",
                )?);
            }
        }
    } else {
        specifiers = parse_specifiers(&mut l)?;
        l.ws();
        if !l.at_end() {
            marker = Some(parse_marker_part(
                &mut l,
                "expected ',', ';' or the end after the version specifier",
            )?);
        }
    }
    if !l.at_end() {
        return Err(l.fail("expected the end of the requirement").into());
    }
    Ok(Requirement {
        name,
        extras,
        specifiers,
        url,
        marker,
    })
}

/// `[` name (`,` name)* `]`, or nothing.
fn parse_extras(l: &mut Lexer<'_>) -> Result<Vec<String>, Fail> {
    let mut extras = Vec::new();
    if !l.eat('[') {
        return Ok(extras);
    }
    l.ws();
    if let Some(first) = l.identifier() {
        extras.push(first.to_string());
        loop {
            l.ws();
            if l.identifier().is_some() {
                return Err(l.fail("expected a comma between extra names"));
            }
            if !l.eat(',') {
                break;
            }
            l.ws();
            let next = l
                .identifier()
                .ok_or_else(|| l.fail("expected an extra name after the comma"))?;
            extras.push(next.to_string());
        }
    }
    l.ws();
    if !l.eat(']') {
        return Err(l.fail("expected ']' closing the extras"));
    }
    Ok(extras)
}

/// Specifiers, bare or in parentheses; possibly none.
fn parse_specifiers(l: &mut Lexer<'_>) -> Result<Specifiers, Failure> {
    let parenthesised = l.eat('(');
    l.ws();
    let mut joined = String::new();
    while let Some(token) = l.specifier() {
        joined.push_str(token);
        l.ws();
        if !l.eat(',') {
            break;
        }
        joined.push(',');
        l.ws();
    }
    l.ws();
    if parenthesised && !l.eat(')') {
        return Err(l.fail("expected ')' closing the version specifier").into());
    }
    Specifiers::parse(&joined).map_err(Failure::Specifier)
}

/// `;` marker.
fn parse_marker_part(l: &mut Lexer<'_>, expected: &'static str) -> Result<Marker, Fail> {
    if !l.eat(';') {
        return Err(l.fail(expected));
    }
    let marker = Marker::from_lexer(l)?;
    l.ws();
    Ok(marker)
}

impl fmt::Display for Requirement {
    /// `packaging`'s form: `name[a,b]>=1,<2 ; marker` without spaces
    /// around the specifiers, extras sorted, `name[extra] @ url ; marker`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if !self.extras.is_empty() {
            let mut extras = self.extras.clone();
            extras.sort();
            write!(f, "[{}]", extras.join(","))?;
        }
        write!(f, "{}", self.specifiers)?;
        if let Some(url) = &self.url {
            write!(f, " @ {url}")?;
            if self.marker.is_some() {
                f.write_str(" ")?;
            }
        }
        if let Some(marker) = &self.marker {
            write!(f, "; {marker}")?;
        }
        Ok(())
    }
}

impl FromStr for Requirement {
    type Err = RequirementError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Environment, Pep440Version};
    use super::*;

    fn r(s: &str) -> Requirement {
        Requirement::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    fn linux(python: &str) -> Environment {
        Environment {
            implementation_name: "cpython".into(),
            implementation_version: format!("{python}.0"),
            os_name: "posix".into(),
            platform_machine: "x86_64".into(),
            platform_python_implementation: "CPython".into(),
            platform_system: "Linux".into(),
            python_full_version: format!("{python}.0"),
            python_version: python.into(),
            sys_platform: "linux".into(),
            ..Default::default()
        }
    }

    fn windows(python: &str) -> Environment {
        Environment {
            os_name: "nt".into(),
            platform_machine: "AMD64".into(),
            platform_system: "Windows".into(),
            sys_platform: "win32".into(),
            ..linux(python)
        }
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_briefs_example() {
        let req = r("requests[socks] (>=2.0,<3) ; python_version >= \"3.8\" and extra == \"test\"");
        assert_eq!(req.name, "requests");
        assert_eq!(req.extras, ["socks"]);
        assert_eq!(req.specifiers.to_string(), ">=2.0,<3");
        assert_eq!(req.url, None);
        let marker = req.marker.as_ref().unwrap();
        assert_eq!(
            marker.to_string(),
            "python_version >= \"3.8\" and extra == \"test\""
        );
        assert!(req.applies(&linux("3.11"), &strings(&["test"])));
        assert!(!req.applies(&linux("3.11"), &[]));
        assert!(!req.applies(&linux("3.7"), &strings(&["test"])));
    }

    /// Lines copied from real `Requires-Dist` headers (METADATA files of
    /// the wheels named), with what pip decides for a Linux CPython 3.11
    /// target without extras and with the extra named.
    #[test]
    fn real_requires_dist_lines() {
        let env = linux("3.11");
        let win = windows("3.11");
        // (line, name, specifiers, extras asked, applies with none, applies with those)
        type Case<'a> = (&'a str, &'a str, &'a str, &'a [&'a str], bool, bool);
        let cases: &[Case] = &[
            // requests 2.25.1
            ("chardet (<5,>=3.0.2)", "chardet", "<5,>=3.0.2", &[], true, true),
            ("urllib3 (<1.27,>=1.21.1)", "urllib3", "<1.27,>=1.21.1", &[], true, true),
            ("PySocks (!=1.5.7,>=1.5.6) ; extra == 'socks'", "PySocks", "!=1.5.7,>=1.5.6", &["socks"], false, true),
            (
                "win-inet-pton ; (sys_platform == \"win32\" and python_version == \"2.7\") and extra == 'socks'",
                "win-inet-pton",
                "",
                &["socks"],
                false,
                false,
            ),
            // requests 2.34.2
            ("charset_normalizer<4,>=2", "charset_normalizer", "<4,>=2", &[], true, true),
            ("PySocks!=1.5.7,>=1.5.6; extra == \"socks\"", "PySocks", "!=1.5.7,>=1.5.6", &["socks"], false, true),
            (
                "chardet<8,>=3.0.2; extra == \"use-chardet-on-py3\"",
                "chardet",
                "<8,>=3.0.2",
                &["use_chardet_on_py3"],
                false,
                true,
            ),
            // jinja2 3.1.6
            ("MarkupSafe>=2.0", "MarkupSafe", ">=2.0", &[], true, true),
            ("Babel>=2.7 ; extra == \"i18n\"", "Babel", ">=2.7", &["i18n"], false, true),
            // pydantic 2.13.4
            ("pydantic-core==2.46.4", "pydantic-core", "==2.46.4", &[], true, true),
            ("email-validator>=2.0.0; extra == 'email'", "email-validator", ">=2.0.0", &["email"], false, true),
            (
                "tzdata; (python_version >= '3.9' and platform_system == 'Windows') and extra == 'timezone'",
                "tzdata",
                "",
                &["timezone"],
                false,
                false,
            ),
            // httpx 0.29.0
            ("httpcore==1.*", "httpcore", "==1.*", &[], true, true),
            (
                "brotli; (platform_python_implementation == 'CPython') and extra == 'brotli'",
                "brotli",
                "",
                &["brotli"],
                false,
                true,
            ),
            (
                "brotlicffi; (platform_python_implementation != 'CPython') and extra == 'brotli'",
                "brotlicffi",
                "",
                &["brotli"],
                false,
                false,
            ),
            ("rich<15,>=10; extra == 'cli'", "rich", "<15,>=10", &["cli", "http2"], false, true),
            ("socksio==1.*; extra == 'socks'", "socksio", "==1.*", &["cli"], false, false),
            // rich 15.0.0
            ("ipywidgets (>=7.5.1,<9) ; extra == \"jupyter\"", "ipywidgets", ">=7.5.1,<9", &["jupyter"], false, true),
            ("pygments (>=2.13.0,<3.0.0)", "pygments", ">=2.13.0,<3.0.0", &[], true, true),
            // Others installed here (ipython, cffi users, exceptiongroup users).
            ("appnope ; sys_platform == \"darwin\"", "appnope", "", &[], false, false),
            ("exceptiongroup (>=1.0.0rc9) ; python_version < \"3.11\"", "exceptiongroup", ">=1.0.0rc9", &[], false, false),
            (
                "cffi (>=1.14) ; os_name == \"nt\" and implementation_name != \"pypy\"",
                "cffi",
                ">=1.14",
                &[],
                false,
                false,
            ),
            ("pexpect >4.3 ; sys_platform != \"win32\"", "pexpect", ">4.3", &[], true, true),
            (
                "backports-zstd>=1.0.0; (python_version < '3.14') and extra == 'zstd'",
                "backports-zstd",
                ">=1.0.0",
                &["zstd"],
                false,
                true,
            ),
            ("botocore[crt] (<2.0a.0,>=1.37.4) ; extra == 'crt'", "botocore", "<2.0a.0,>=1.37.4", &["crt"], false, true),
        ];
        for (line, name, specs, extras, bare, with) in cases {
            let req = r(line);
            assert_eq!(req.name, *name, "{line}");
            assert_eq!(req.specifiers.to_string(), *specs, "{line}");
            assert_eq!(req.applies(&env, &[]), *bare, "{line} without extras");
            assert_eq!(
                req.applies(&env, &strings(extras)),
                *with,
                "{line} with {extras:?}"
            );
            // Display gives a line that parses back to the same thing.
            assert_eq!(r(&req.to_string()), req, "{line} round trip");
        }
        // Windows changes the platform-conditional ones.
        assert!(r("tzdata; (python_version >= '3.9' and platform_system == 'Windows') and extra == 'timezone'")
            .applies(&win, &strings(&["timezone"])));
        assert!(!r("pexpect >4.3 ; sys_platform != \"win32\"").applies(&win, &[]));
        assert!(r("colorama; platform_system == 'Windows'").applies(&win, &[]));
        assert_eq!(
            r("botocore[crt] (<2.0a.0,>=1.37.4) ; extra == 'crt'").extras,
            ["crt"]
        );
    }

    #[test]
    fn whitespace_and_parenthesis_variants() {
        for line in [
            "requests>=2.0,<3",
            "requests >= 2.0 , < 3",
            "requests(>=2.0,<3)",
            "requests (>=2.0,<3)",
            "requests ( >=2.0 , <3 )",
            "  requests\t>=2.0,<3  ",
            "requests>=2.0,<3\n",
            "requests >=2.0,<3;",
        ] {
            let req = Requirement::parse(line);
            if line.ends_with(';') {
                assert!(req.is_err(), "{line:?}: ';' needs a marker");
                continue;
            }
            let req = req.unwrap_or_else(|e| panic!("{line:?}: {e}"));
            assert_eq!(req.name, "requests");
            assert_eq!(req.specifiers.to_string(), ">=2.0,<3", "{line:?}");
        }
        let req = r("name [ a , b ] ( == 1.0 ) ; os_name == 'nt'");
        assert_eq!(req.extras, ["a", "b"]);
        assert_eq!(req.to_string(), "name[a,b]==1.0; os_name == \"nt\"");
        assert_eq!(r("name[]").extras, Vec::<String>::new());
        assert!(r("name ; python_version>'3'").specifiers.is_empty());
        assert!(r("name;python_version>'3'").marker.is_some());
        // A trailing comma leaves an empty specifier, which is skipped.
        assert_eq!(r("name >=1.0,").specifiers.to_string(), ">=1.0");
        let contains = |line: &str, v: &str| {
            r(line)
                .specifiers
                .contains(&Pep440Version::parse(v).unwrap(), false)
        };
        assert!(contains("requests (>=2.0,<3)", "2.31.0"));
        assert!(!contains("requests (>=2.0,<3)", "3.0"));
    }

    #[test]
    fn urls() {
        let req = r("pip @ https://github.com/pypa/pip/archive/1.3.1.zip#sha1=da9234ee9982d4bbb3c72346a6de940a148ea686");
        assert_eq!(req.name, "pip");
        assert_eq!(
            req.url.as_deref(),
            Some("https://github.com/pypa/pip/archive/1.3.1.zip#sha1=da9234ee9982d4bbb3c72346a6de940a148ea686")
        );
        assert!(req.specifiers.is_empty());
        let req = r("name[quux] @ file:///tmp/x.whl ; python_version < '3'");
        assert_eq!(req.extras, ["quux"]);
        assert!(req.marker.is_some());
        assert_eq!(
            req.to_string(),
            "name[quux] @ file:///tmp/x.whl ; python_version < \"3\""
        );
        assert!(r("name @ http://x/y ").marker.is_none());
        // `;` right after the URL is part of the URL, so the marker is
        // missing its `;`.
        assert!(Requirement::parse("name @ http://x/y; python_version < '3'").is_err());
        assert!(Requirement::parse("name @").is_err());
    }

    #[test]
    fn refuses_what_pep_508_does_not_define() {
        for bad in [
            "",
            " ",
            "-name",
            "name-",
            "name[",
            "name[a",
            "name[a b]",
            "name[a,]",
            "name[,a]",
            "name (>=1.0",
            "name >=1.0)",
            "name >=1.0 <2",
            "name ==1.0.* .*",
            "name >=1.0.*",
            "name >=1.0+local",
            "name ~=1",
            "name >=junk",
            "name ; ",
            "name ; os_name",
            "name ; os_name == 'nt' junk",
            "name extra",
            "name==1.0\n\n",
            "name\r\n",
        ] {
            assert!(Requirement::parse(bad).is_err(), "{bad:?}");
        }
        let e = Requirement::parse("name[a b]").unwrap_err();
        assert_eq!(
            e,
            RequirementError::Syntax {
                text: "name[a b]".into(),
                column: 9,
                problem: "expected a comma between extra names",
            }
        );
        let e = Requirement::parse("name >=1.0.*").unwrap_err();
        assert!(matches!(e, RequirementError::Specifier { .. }), "{e}");
        assert!(!e.to_string().contains('\n'));
    }
}
