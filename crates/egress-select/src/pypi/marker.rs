//! PEP 508 environment markers (`python_version >= "3.8" and extra ==
//! "test"`): parsed as `packaging` parses them, evaluated as pip evaluates
//! them for a target.

use std::fmt;

use egress_model::ProjectName;

use super::lexer::{column, Fail, Lexer};
use super::specifier::Specifier;
use super::text::quoted;
use super::version::Pep440Version;

/// The values PEP 508's marker variables take for one target.
///
/// `Default` gives empty strings everywhere (and `any_platform` false):
/// fill in what matters, e.g.
/// `Environment { python_version: "3.11".into(), ..Default::default() }`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environment {
    /// `implementation_name`: `cpython`, `pypy`, ...
    pub implementation_name: String,
    /// `implementation_version`: the implementation's own version
    /// (CPython: the Python version, `3.11.0`).
    pub implementation_version: String,
    /// `os_name`: `posix`, `nt`.
    pub os_name: String,
    /// `platform_machine`: `x86_64`, `aarch64`, `AMD64`, `arm64`, ...
    pub platform_machine: String,
    /// `platform_python_implementation`: `CPython`, `PyPy`, ...
    pub platform_python_implementation: String,
    /// `platform_release`: the kernel or OS release (`platform.release()`).
    pub platform_release: String,
    /// `platform_system`: `Linux`, `Windows`, `Darwin`, ...
    pub platform_system: String,
    /// `platform_version`: the OS's version string (`platform.version()`).
    pub platform_version: String,
    /// `python_full_version`: `3.11.0`.
    pub python_full_version: String,
    /// `python_version`: major and minor, `3.11`.
    pub python_version: String,
    /// `sys_platform`: `linux`, `win32`, `darwin`, ...
    pub sys_platform: String,
    /// The platform is not known (a target for any platform, or a platform
    /// tag naming no system this crate knows): a comparison involving
    /// `os_name`, `sys_platform`, `platform_system`, `platform_machine`,
    /// `platform_release` or `platform_version` then counts as true, so a
    /// marker holds when it could hold on some platform.
    pub any_platform: bool,
}

/// A marker variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variable {
    ImplementationName,
    ImplementationVersion,
    OsName,
    PlatformMachine,
    PlatformPythonImplementation,
    PlatformRelease,
    PlatformSystem,
    PlatformVersion,
    PythonFullVersion,
    PythonVersion,
    SysPlatform,
    Extra,
}

/// Every spelling `packaging` accepts, with the variable it means. The
/// dotted and `python_implementation` spellings are PEP 345 leftovers.
const SPELLINGS: [(&str, Variable); 17] = [
    ("python_version", Variable::PythonVersion),
    ("python_full_version", Variable::PythonFullVersion),
    ("os_name", Variable::OsName),
    ("os.name", Variable::OsName),
    ("sys_platform", Variable::SysPlatform),
    ("sys.platform", Variable::SysPlatform),
    ("platform_release", Variable::PlatformRelease),
    ("platform_system", Variable::PlatformSystem),
    ("platform_version", Variable::PlatformVersion),
    ("platform.version", Variable::PlatformVersion),
    ("platform_machine", Variable::PlatformMachine),
    ("platform.machine", Variable::PlatformMachine),
    (
        "platform_python_implementation",
        Variable::PlatformPythonImplementation,
    ),
    (
        "platform.python_implementation",
        Variable::PlatformPythonImplementation,
    ),
    (
        "python_implementation",
        Variable::PlatformPythonImplementation,
    ),
    ("implementation_name", Variable::ImplementationName),
    ("implementation_version", Variable::ImplementationVersion),
];

impl Variable {
    fn name(self) -> &'static str {
        match self {
            Variable::ImplementationName => "implementation_name",
            Variable::ImplementationVersion => "implementation_version",
            Variable::OsName => "os_name",
            Variable::PlatformMachine => "platform_machine",
            Variable::PlatformPythonImplementation => "platform_python_implementation",
            Variable::PlatformRelease => "platform_release",
            Variable::PlatformSystem => "platform_system",
            Variable::PlatformVersion => "platform_version",
            Variable::PythonFullVersion => "python_full_version",
            Variable::PythonVersion => "python_version",
            Variable::SysPlatform => "sys_platform",
            Variable::Extra => "extra",
        }
    }

    fn value<'e>(self, env: &'e Environment, extra: &'e str) -> &'e str {
        match self {
            Variable::ImplementationName => &env.implementation_name,
            Variable::ImplementationVersion => &env.implementation_version,
            Variable::OsName => &env.os_name,
            Variable::PlatformMachine => &env.platform_machine,
            Variable::PlatformPythonImplementation => &env.platform_python_implementation,
            Variable::PlatformRelease => &env.platform_release,
            Variable::PlatformSystem => &env.platform_system,
            Variable::PlatformVersion => &env.platform_version,
            Variable::PythonFullVersion => &env.python_full_version,
            Variable::PythonVersion => &env.python_version,
            Variable::SysPlatform => &env.sys_platform,
            Variable::Extra => extra,
        }
    }

    fn is_platform(self) -> bool {
        matches!(
            self,
            Variable::OsName
                | Variable::SysPlatform
                | Variable::PlatformSystem
                | Variable::PlatformMachine
                | Variable::PlatformRelease
                | Variable::PlatformVersion
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Operand {
    Var(Variable),
    Str(String),
}

impl Operand {
    fn variable(&self) -> Option<Variable> {
        match self {
            Operand::Var(v) => Some(*v),
            Operand::Str(_) => None,
        }
    }
}

impl fmt::Display for Operand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Operand::Var(v) => f.write_str(v.name()),
            // Python strings have no escapes here: pick the quote the text
            // does not contain.
            Operand::Str(s) if s.contains('"') => write!(f, "'{s}'"),
            Operand::Str(s) => write!(f, "\"{s}\""),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// One of the eight version comparison operators, as written.
    Compare(&'static str),
    In,
    NotIn,
}

impl Op {
    fn as_str(self) -> &'static str {
        match self {
            Op::Compare(s) => s,
            Op::In => "in",
            Op::NotIn => "not in",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Compare { lhs: Operand, op: Op, rhs: Operand },
    And(Vec<Node>),
    Or(Vec<Node>),
}

/// A parsed environment marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    root: Node,
}

/// How deep parentheses may nest in a marker (real ones nest two or three
/// deep; the limit keeps hostile input from exhausting the stack).
pub(crate) const MAX_DEPTH: usize = 64;

/// Why a text is not a PEP 508 marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MarkerError {
    /// The text does not follow the marker grammar.
    Syntax {
        /// The marker as given.
        text: String,
        /// Where (1-based, in characters).
        column: usize,
        /// What was expected there.
        problem: &'static str,
    },
}

impl fmt::Display for MarkerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MarkerError::Syntax {
                text,
                column,
                problem,
            } => write!(
                f,
                "{} is not a PEP 508 marker: {problem} at column {column} (e.g. python_version >= \"3.8\" and sys_platform == \"linux\")",
                quoted(text)
            ),
        }
    }
}

impl std::error::Error for MarkerError {}

impl Marker {
    /// Parses a marker (the text after `;` in a requirement).
    pub fn parse(text: &str) -> Result<Self, MarkerError> {
        let mut lexer = Lexer::new(text);
        let parsed = parse_marker(&mut lexer, 0).and_then(|m| {
            lexer.ws();
            if lexer.at_end() {
                Ok(m)
            } else {
                Err(lexer.fail("expected 'and', 'or' or the end of the marker"))
            }
        });
        parsed.map_err(|fail| MarkerError::Syntax {
            text: text.to_string(),
            column: column(text, fail.at),
            problem: fail.problem,
        })
    }

    /// Whether the marker holds in `env` for a project asked for with
    /// `extras`, as pip decides whether to follow a dependency: with no
    /// extras, `extra` is the empty string (so `extra == "x"` is false);
    /// with extras, the marker must hold for at least one of them. Extra
    /// names are compared after PEP 685 normalisation (`Foo.Bar` equals
    /// `foo-bar`).
    ///
    /// Version operators compare as PEP 440 versions when the right side
    /// with the operator is a valid specifier and the left side a valid
    /// version (`python_version >= "3.8"`), else as strings (`in`, `not
    /// in`, `==`, `<`, ...: Python's string comparison); `~=` between
    /// non-versions is false, `===` compares the texts case-insensitively.
    pub fn evaluate(&self, env: &Environment, extras: &[String]) -> bool {
        if extras.is_empty() {
            eval(&self.root, env, "")
        } else {
            extras.iter().any(|extra| eval(&self.root, env, extra))
        }
    }

    pub(crate) fn from_lexer(lexer: &mut Lexer<'_>) -> Result<Self, Fail> {
        parse_marker(lexer, 0)
    }
}

impl fmt::Display for Marker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_node(f, &self.root)
    }
}

fn write_node(f: &mut fmt::Formatter<'_>, node: &Node) -> fmt::Result {
    match node {
        Node::Compare { lhs, op, rhs } => write!(f, "{lhs} {} {rhs}", op.as_str()),
        Node::And(items) => write_joined(f, items, " and ", |n| !matches!(n, Node::Compare { .. })),
        Node::Or(items) => write_joined(f, items, " or ", |n| matches!(n, Node::Or(_))),
    }
}

fn write_joined(
    f: &mut fmt::Formatter<'_>,
    items: &[Node],
    sep: &str,
    needs_parens: impl Fn(&Node) -> bool,
) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(sep)?;
        }
        if needs_parens(item) {
            f.write_str("(")?;
            write_node(f, item)?;
            f.write_str(")")?;
        } else {
            write_node(f, item)?;
        }
    }
    Ok(())
}

/// `marker_atom (BOOLOP marker_atom)*`, `and` binding tighter than `or`.
fn parse_marker(lexer: &mut Lexer<'_>, depth: usize) -> Result<Marker, Fail> {
    let mut groups: Vec<Vec<Node>> = vec![vec![parse_atom(lexer, depth)?]];
    loop {
        if lexer.keyword("and") {
            let atom = parse_atom(lexer, depth)?;
            if let Some(group) = groups.last_mut() {
                group.push(atom);
            }
        } else if lexer.keyword("or") {
            groups.push(vec![parse_atom(lexer, depth)?]);
        } else {
            break;
        }
    }
    let mut ors: Vec<Node> = groups
        .into_iter()
        .map(|mut g| {
            if g.len() == 1 {
                g.pop().unwrap_or(Node::And(Vec::new()))
            } else {
                Node::And(g)
            }
        })
        .collect();
    let root = if ors.len() == 1 {
        ors.pop().unwrap_or(Node::Or(Vec::new()))
    } else {
        Node::Or(ors)
    };
    Ok(Marker { root })
}

/// `( marker )` or `var op var`, with optional whitespace around.
fn parse_atom(lexer: &mut Lexer<'_>, depth: usize) -> Result<Node, Fail> {
    lexer.ws();
    let node = if lexer.eat('(') {
        if depth >= MAX_DEPTH {
            return Err(lexer.fail("parentheses nested more than 64 deep"));
        }
        lexer.ws();
        let inner = parse_marker(lexer, depth + 1)?;
        lexer.ws();
        if !lexer.eat(')') {
            return Err(lexer.fail("expected ')' closing the marker expression"));
        }
        inner.root
    } else {
        let lhs = parse_operand(lexer)?;
        lexer.ws();
        let op = parse_op(lexer)?;
        lexer.ws();
        let mut rhs = parse_operand(lexer)?;
        let mut lhs = lhs;
        // PEP 685: extra names are kept normalised.
        if lhs == Operand::Var(Variable::Extra) {
            if let Operand::Str(s) = &rhs {
                rhs = Operand::Str(normalize_extra(s));
            }
        } else if rhs == Operand::Var(Variable::Extra) {
            if let Operand::Str(s) = &lhs {
                lhs = Operand::Str(normalize_extra(s));
            }
        }
        Node::Compare { lhs, op, rhs }
    };
    lexer.ws();
    Ok(node)
}

fn parse_operand(lexer: &mut Lexer<'_>) -> Result<Operand, Fail> {
    if let Some(s) = lexer.quoted_string() {
        return Ok(Operand::Str(s.to_string()));
    }
    if lexer.keyword("extra") {
        return Ok(Operand::Var(Variable::Extra));
    }
    for (spelling, var) in SPELLINGS {
        if lexer.keyword(spelling) {
            return Ok(Operand::Var(var));
        }
    }
    Err(lexer.fail(
        "expected a marker variable (e.g. python_version, sys_platform, extra) or a quoted string",
    ))
}

fn parse_op(lexer: &mut Lexer<'_>) -> Result<Op, Fail> {
    if lexer.keyword("in") {
        return Ok(Op::In);
    }
    if lexer.keyword("not") {
        if !lexer.ws() {
            return Err(lexer.fail("expected whitespace after 'not'"));
        }
        if !lexer.keyword("in") {
            return Err(lexer.fail("expected 'in' after 'not'"));
        }
        return Ok(Op::NotIn);
    }
    lexer.operator().map(Op::Compare).ok_or_else(|| {
        lexer.fail("expected a marker operator: <, <=, ==, !=, >=, >, ~=, ===, in, not in")
    })
}

/// PEP 685 (PEP 503's rule): `Foo.Bar_baz` becomes `foo-bar-baz`. A
/// valid name is normalised by `egress_model::ProjectName`; any other text
/// (an `extra` value can be anything) the way `packaging`'s
/// `canonicalize_name` does it: runs of `-`, `_`, `.` become one `-`, then
/// lowercase.
pub(crate) fn normalize_extra(extra: &str) -> String {
    if let Ok(name) = ProjectName::new(extra) {
        return name.as_str().to_string();
    }
    let mut folded = String::with_capacity(extra.len());
    let mut in_run = false;
    for c in extra.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !in_run {
                folded.push('-');
            }
            in_run = true;
        } else {
            folded.push(c);
            in_run = false;
        }
    }
    folded.to_lowercase()
}

fn eval(node: &Node, env: &Environment, extra: &str) -> bool {
    match node {
        Node::And(items) => items.iter().all(|n| eval(n, env, extra)),
        Node::Or(items) => items.iter().any(|n| eval(n, env, extra)),
        Node::Compare { lhs, op, rhs } => {
            let vars = [lhs.variable(), rhs.variable()];
            if env.any_platform && vars.iter().flatten().any(|v| v.is_platform()) {
                return true;
            }
            let resolve = |o: &Operand| -> String {
                match o {
                    Operand::Var(v) => v.value(env, extra).to_string(),
                    Operand::Str(s) => s.clone(),
                }
            };
            let (mut l, mut r) = (resolve(lhs), resolve(rhs));
            if vars.contains(&Some(Variable::Extra)) {
                l = normalize_extra(&l);
                r = normalize_extra(&r);
            }
            compare(&l, *op, &r)
        }
    }
}

fn compare(l: &str, op: Op, r: &str) -> bool {
    let Op::Compare(sym) = op else {
        return match op {
            Op::In => r.contains(l),
            _ => !r.contains(l),
        };
    };
    // `packaging` first tries `Specifier(op + rhs).contains(lhs)`.
    if let (Ok(spec), Ok(v)) = (
        Specifier::parse(&format!("{sym}{r}")),
        Pep440Version::parse(l),
    ) {
        return spec.contains(&v, true);
    }
    match sym {
        "==" => l == r,
        "!=" => l != r,
        "<" => l < r,
        "<=" => l <= r,
        ">" => l > r,
        ">=" => l >= r,
        "===" => l.to_lowercase() == r.to_lowercase(),
        // `~=` is only defined between versions.
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn linux_311() -> Environment {
        Environment {
            implementation_name: "cpython".into(),
            implementation_version: "3.11.0".into(),
            os_name: "posix".into(),
            platform_machine: "x86_64".into(),
            platform_python_implementation: "CPython".into(),
            platform_release: "6.1.0".into(),
            platform_system: "Linux".into(),
            platform_version: "#1 SMP".into(),
            python_full_version: "3.11.0".into(),
            python_version: "3.11".into(),
            sys_platform: "linux".into(),
            any_platform: false,
        }
    }

    fn m(s: &str) -> Marker {
        Marker::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    fn holds(s: &str, env: &Environment, extras: &[&str]) -> bool {
        let extras: Vec<String> = extras.iter().map(|e| e.to_string()).collect();
        m(s).evaluate(env, &extras)
    }

    #[test]
    fn version_comparisons_are_pep_440() {
        let env = linux_311();
        for (marker, want) in [
            ("python_version >= \"3.8\"", true),
            ("python_version > \"3.9\"", true),
            // As strings "3.11" < "3.9"; as versions it is not.
            ("python_version < \"3.9\"", false),
            ("python_version == \"3.11\"", true),
            ("python_version == \"3.11.0\"", true),
            ("python_version == \"3.*\"", true),
            ("python_version != \"3.11.*\"", false),
            ("python_version ~= \"3.8\"", true),
            ("python_version ~= \"3.12\"", false),
            ("python_full_version >= \"3.11.0\"", true),
            ("python_full_version < \"3.11.2\"", true),
            ("\"3.8\" <= python_version", true),
            ("\"3.12\" <= python_version", false),
            ("python_version === \"3.11\"", true),
            ("python_version in \"3.10 3.11 3.12\"", true),
            ("python_version not in \"3.10 3.12\"", true),
            // 3.1 is a substring of 3.11: `in` is Python's substring test.
            ("\"3.1\" in python_version", true),
        ] {
            assert_eq!(holds(marker, &env, &[]), want, "{marker}");
        }
    }

    #[test]
    fn string_comparisons_when_not_versions() {
        let env = linux_311();
        for (marker, want) in [
            ("sys_platform == \"linux\"", true),
            ("sys_platform == 'win32'", false),
            ("sys_platform != \"win32\"", true),
            ("os_name == \"nt\"", false),
            ("platform_system == \"Linux\"", true),
            ("platform_machine in \"x86_64 AMD64\"", true),
            ("platform_machine not in \"arm64 aarch64\"", true),
            ("'linux' in sys_platform", true),
            ("platform_python_implementation == 'CPython'", true),
            ("implementation_name == \"pypy\"", false),
            // Python's string order.
            ("sys_platform < \"win32\"", true),
            ("sys_platform > \"darwin\"", true),
            // `~=` is undefined on strings: false.
            ("sys_platform ~= \"linux\"", false),
            ("platform_release >= \"5.0\"", true),
            // Legacy spellings.
            ("os.name == \"posix\"", true),
            ("sys.platform == \"linux\"", true),
            ("platform.machine == \"x86_64\"", true),
            ("python_implementation == \"CPython\"", true),
            ("platform.python_implementation == \"CPython\"", true),
        ] {
            assert_eq!(holds(marker, &env, &[]), want, "{marker}");
        }
    }

    #[test]
    fn and_binds_tighter_than_or_and_parentheses_group() {
        let env = linux_311();
        assert!(holds(
            "os_name == 'nt' and python_version < '3' or sys_platform == 'linux'",
            &env,
            &[]
        ));
        assert!(!holds(
            "os_name == 'nt' and (python_version < '3' or sys_platform == 'linux')",
            &env,
            &[]
        ));
        assert!(holds("((sys_platform == 'linux'))", &env, &[]));
        assert!(holds(
            "python_version>='3.8'and(sys_platform=='linux'or sys_platform=='darwin')",
            &env,
            &[]
        ));
    }

    #[test]
    fn extras_as_pip_evaluates_them() {
        let env = linux_311();
        // No extras: `extra` is "".
        assert!(!holds("extra == \"test\"", &env, &[]));
        assert!(holds("extra != \"test\"", &env, &[]));
        // Any of the requested extras.
        assert!(holds("extra == \"test\"", &env, &["docs", "test"]));
        assert!(!holds("extra == \"test\"", &env, &["docs"]));
        // PEP 685: compared normalised, on both sides.
        assert!(holds(
            "extra == \"Use_Chardet.On-Py3\"",
            &env,
            &["use-chardet-on-py3"]
        ));
        assert!(holds("extra == 'socks'", &env, &["SOCKS"]));
        assert!(holds("'test' == extra", &env, &["Test"]));
        // Combined with the environment.
        let pydantic =
            "(python_version >= '3.9' and platform_system == 'Windows') and extra == 'timezone'";
        assert!(!holds(pydantic, &env, &["timezone"]));
        let windows = Environment {
            platform_system: "Windows".into(),
            ..linux_311()
        };
        assert!(holds(pydantic, &windows, &["timezone"]));
        assert!(!holds(pydantic, &windows, &[]));
        // Values that are not names are folded as packaging folds them.
        assert_eq!(normalize_extra("-Weird__Extra-"), "-weird-extra-");
        assert_eq!(normalize_extra("\u{212A}_x"), "k-x");
        assert_eq!(normalize_extra(&normalize_extra("\u{212A}_x")), "k-x");
        // The extra value is normalised in the parsed marker too.
        assert_eq!(m("extra == 'Foo.Bar'").to_string(), "extra == \"foo-bar\"");
    }

    #[test]
    fn unknown_platform_counts_as_possible() {
        let env = Environment {
            any_platform: true,
            ..linux_311()
        };
        assert!(holds("sys_platform == 'win32'", &env, &[]));
        assert!(holds(
            "sys_platform == 'win32' and python_version >= '3.8'",
            &env,
            &[]
        ));
        assert!(!holds(
            "sys_platform == 'win32' and python_version < '3.8'",
            &env,
            &[]
        ));
        assert!(!holds(
            "platform_machine == 'arm64' and extra == 'x'",
            &env,
            &[]
        ));
    }

    #[test]
    fn displays_normalised() {
        for (given, shown) in [
            ("python_version>='3.8'", "python_version >= \"3.8\""),
            ("os.name=='nt'", "os_name == \"nt\""),
            (
                "(python_version >= '3.9' and platform_system == 'Windows') and extra == 'timezone'",
                "(python_version >= \"3.9\" and platform_system == \"Windows\") and extra == \"timezone\"",
            ),
            (
                "python_version < '3' or sys_platform == 'win32' and os_name == 'nt'",
                "python_version < \"3\" or sys_platform == \"win32\" and os_name == \"nt\"",
            ),
            ("'a\"b' in sys_platform", "'a\"b' in sys_platform"),
            ("python_version not   in '3.8'", "python_version not in \"3.8\""),
        ] {
            let parsed = m(given);
            assert_eq!(parsed.to_string(), shown, "{given}");
            assert_eq!(m(&parsed.to_string()), parsed, "{given} round trip");
        }
    }

    #[test]
    fn refuses_malformed_markers() {
        for bad in [
            "",
            "python_version",
            "python_version >=",
            "python_version >= 3.8",
            "python_version >= '3.8",
            "python_version => '3.8'",
            "python_version >= '3.8' and",
            "python_version >= '3.8' xor os_name == 'nt'",
            "(python_version >= '3.8'",
            "python_version >= '3.8')",
            "python_versions >= '3.8'",
            "platform.release == '5'",
            "python_version notin '3.8'",
            "python_version not'3.8'",
            "python_version >= '3.8' andos_name == 'nt'",
            "os_name == 'nt'\n\n",
            "a_b == 'x'",
            "'a' == 'b' == 'c'",
        ] {
            assert!(Marker::parse(bad).is_err(), "{bad:?}");
        }
        let e = Marker::parse("python_version >= 3.8").unwrap_err();
        assert_eq!(
            e,
            MarkerError::Syntax {
                text: "python_version >= 3.8".into(),
                column: 19,
                problem: "expected a marker variable (e.g. python_version, sys_platform, extra) or a quoted string",
            }
        );
        assert!(!e.to_string().contains('\n'));
        // A final newline is allowed, as Python's `$` allows it.
        assert!(Marker::parse("os_name == 'nt'\n").is_ok());
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let deep = format!(
            "{}os_name == 'nt'{}",
            "(".repeat(100_000),
            ")".repeat(100_000)
        );
        assert!(Marker::parse(&deep).is_err());
        let ok = format!("{}os_name == 'nt'{}", "(".repeat(60), ")".repeat(60));
        assert!(Marker::parse(&ok).is_ok());
    }
}
