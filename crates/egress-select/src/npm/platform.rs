//! Which packages a platform installs, as npm decides it
//! (`npm-install-checks`' `checkPlatform`): a package's `os`, `cpu` and
//! `libc` lists against the target's values.

/// Whether `value` passes a package's list, as `npm-install-checks`'
/// `checkList`: an empty list, or `["any"]`, passes everything; `!x`
/// excludes `x`; otherwise `value` must be listed. A list of only
/// negations passes every value not negated.
pub fn check_list<S: AsRef<str>>(value: &str, list: &[S]) -> bool {
    if let [only] = list {
        if only.as_ref() == "any" {
            return true;
        }
    }
    let mut negated = 0;
    let mut matched = false;
    for entry in list {
        let entry = entry.as_ref();
        match entry.strip_prefix('!') {
            Some(test) => {
                negated += 1;
                if value == test {
                    return false;
                }
            }
            None => matched = matched || value == entry,
        }
    }
    matched || negated == list.len()
}

/// A target platform: the `os` (`process.platform`: `linux`, `darwin`,
/// `win32`, ...), `cpu` (`process.arch`: `x64`, `arm64`, ...) and `libc`
/// (`glibc`, `musl`) a snapshot is built for. Each list holds the values
/// the target may have: a package passes a field when it accepts one of
/// them; an empty list does not filter that field.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Platform {
    pub os: Vec<String>,
    pub cpu: Vec<String>,
    pub libc: Vec<String>,
}

impl Platform {
    /// No field given: every package passes.
    pub fn is_any(&self) -> bool {
        self.os.is_empty() && self.cpu.is_empty() && self.libc.is_empty()
    }

    /// Whether a package with these fields installs on the target; `Err`
    /// names the first field that excludes it (`"os"`, `"cpu"`, `"libc"`).
    ///
    /// As npm: a package with a `libc` list installs only on Linux, so on
    /// a target whose `os` is given and is not `linux` it fails `libc`
    /// even when no libc is given; with neither given, it passes.
    pub fn accepts<S: AsRef<str>>(
        &self,
        pkg_os: &[S],
        pkg_cpu: &[S],
        pkg_libc: &[S],
    ) -> Result<(), &'static str> {
        let field = |target: &[String], list: &[S]| {
            target.is_empty() || target.iter().any(|v| check_list(v, list))
        };
        if !field(&self.os, pkg_os) {
            return Err("os");
        }
        if !field(&self.cpu, pkg_cpu) {
            return Err("cpu");
        }
        if !pkg_libc.is_empty() {
            let ok = if self.libc.is_empty() {
                self.os.is_empty() || self.os.iter().any(|o| o == "linux")
            } else {
                field(&self.libc, pkg_libc)
            };
            if !ok {
                return Err("libc");
            }
        }
        Ok(())
    }

    /// `os=linux cpu=x64 libc=glibc`, the fields given, for messages.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        for (name, values) in [("os", &self.os), ("cpu", &self.cpu), ("libc", &self.libc)] {
            if !values.is_empty() {
                parts.push(format!("{name}={}", values.join(",")));
            }
        }
        if parts.is_empty() {
            "any platform".into()
        } else {
            parts.join(" ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(os: &[&str], cpu: &[&str], libc: &[&str]) -> Platform {
        let own = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
        Platform {
            os: own(os),
            cpu: own(cpu),
            libc: own(libc),
        }
    }

    const NONE: &[&str] = &[];

    #[test]
    fn lists_as_npm_install_checks_reads_them() {
        assert!(check_list("linux", NONE));
        assert!(check_list("linux", &["any"]));
        assert!(check_list("linux", &["linux", "darwin"]));
        assert!(!check_list("win32", &["linux", "darwin"]));
        assert!(!check_list("win32", &["!win32"]));
        assert!(check_list("linux", &["!win32"]));
        assert!(check_list("linux", &["!win32", "!darwin"]));
        // A negation wins over a listing; a listing is needed when any is.
        assert!(!check_list("linux", &["linux", "!linux"]));
        assert!(!check_list("sunos", &["linux", "!win32"]));
        assert!(check_list("linux", &["linux", "!win32"]));
        // `any` only alone.
        assert!(!check_list("linux", &["any", "darwin"]));
    }

    #[test]
    fn a_target_accepts_its_platform_packages_only() {
        let target = p(&["linux"], &["x64"], &["glibc"]);
        assert_eq!(target.accepts(NONE, NONE, NONE), Ok(()));
        assert_eq!(target.accepts(&["linux"], &["x64"], &["glibc"]), Ok(()));
        assert_eq!(target.accepts(&["linux"], &["x64"], &["musl"]), Err("libc"));
        assert_eq!(target.accepts(&["darwin"], &["arm64"], NONE), Err("os"));
        assert_eq!(target.accepts(&["win32"], &["x64"], NONE), Err("os"));
        assert_eq!(target.accepts(&["linux"], &["arm64"], NONE), Err("cpu"));
        assert_eq!(target.accepts(&["!win32"], &["!arm"], NONE), Ok(()));
        // No target: everything passes.
        assert_eq!(
            Platform::default().accepts(&["aix"], &["s390x"], &["musl"]),
            Ok(())
        );
        assert!(Platform::default().is_any());
        // A libc list means Linux: not on a macOS target, whatever its libc.
        let mac = p(&["darwin"], &["arm64"], NONE);
        assert_eq!(mac.accepts(NONE, NONE, &["glibc"]), Err("libc"));
        assert_eq!(
            p(&["linux"], NONE, NONE).accepts(NONE, NONE, &["musl"]),
            Ok(())
        );
        // Several values: any of them.
        let two = p(&["linux", "darwin"], &["x64", "arm64"], &["glibc"]);
        assert_eq!(two.accepts(&["darwin"], &["arm64"], NONE), Ok(()));
        assert_eq!(two.accepts(&["win32"], &["arm64"], NONE), Err("os"));
        assert_eq!(target.describe(), "os=linux cpu=x64 libc=glibc");
    }
}
