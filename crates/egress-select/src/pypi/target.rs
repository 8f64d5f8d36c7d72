//! A target: the Python, implementation, platforms and ABIs of the
//! machines a selection is for, and what pip computes from them (the
//! supported tags of `pip download --python-version --platform
//! --implementation --abi`, the marker environment).

use std::collections::{HashMap, HashSet};
use std::fmt;

use super::marker::Environment;
use super::platforms::{host_expand, pip_expand, split_apple};
use super::tags::{wheel_tags, Tag};
use super::text::quoted;

/// What a selection is for: a Python version, an implementation, platform
/// tags (none: any platform) and ABIs.
#[derive(Debug, Clone)]
pub struct Target {
    implementation: String,
    major: u32,
    minor: Option<u32>,
    micro: Option<u32>,
    /// As given (validated); empty for any platform.
    platforms: Vec<String>,
    abis: Vec<String>,
    /// Whether manylinux and musllinux platforms stand for their older
    /// versions too ([`Target::with_platform_expansion`]).
    expanded: bool,
    tags: Vec<Tag>,
    /// Each tag's first position in `tags`.
    ranks: HashMap<Tag, usize>,
}

/// Why a target cannot be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetError {
    /// Not a Python version as pip's `--python-version` takes it.
    PythonVersion {
        /// The value as given.
        given: String,
    },
    /// Not an interpreter short name.
    Implementation {
        /// The value as given.
        given: String,
    },
    /// Not a platform tag, or one pip cannot expand.
    Platform {
        /// The value as given.
        given: String,
        /// Why.
        why: &'static str,
    },
    /// Not an ABI tag.
    Abi {
        /// The value as given.
        given: String,
    },
    /// The platforms stand for no platform tag at all (e.g. only macOS
    /// versions before 10.0); pip would fall back to the machine it runs
    /// on.
    NoPlatformTags {
        /// The platforms as given.
        given: Vec<String>,
    },
}

impl fmt::Display for TargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetError::PythonVersion { given } => write!(
                f,
                "python version {}: expected major.minor such as 3.11 (also 3, 311 or 3.11.4, as pip's --python-version takes it)",
                quoted(given)
            ),
            TargetError::Implementation { given } => write!(
                f,
                "implementation {}: expected an interpreter short name such as cp, pp or py (lowercase letters and digits)",
                quoted(given)
            ),
            TargetError::Platform { given, why } => write!(
                f,
                "platform {}: {why}; expected a platform tag such as manylinux_2_17_x86_64, musllinux_1_2_aarch64, win_amd64 or macosx_11_0_arm64",
                quoted(given)
            ),
            TargetError::Abi { given } => write!(
                f,
                "abi {}: expected an ABI tag such as cp311, abi3 or none (lowercase letters, digits, '_')",
                quoted(given)
            ),
            TargetError::NoPlatformTags { given } => write!(
                f,
                "platforms {}: they stand for no platform tag (a macOS platform needs version 10.0 or later, an aarch64 manylinux one glibc 2.17 or later)",
                quoted(&given.join(","))
            ),
        }
    }
}

impl std::error::Error for TargetError {}

/// How many platform tags the given platforms may stand for together (a
/// bound on the work hostile input can ask for: an x86_64 macOS 26 alone
/// stands for about 100, a recent glibc for about 40).
const MAX_PLATFORMS: usize = 512;

fn is_tag_word(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// pip's `--python-version`: `3`, `3.11`, `3.11.4`, or `311` (the first
/// digit is the major version); each number at most two digits.
fn parse_python_version(given: &str) -> Option<(u32, Option<u32>, Option<u32>)> {
    let number = |s: &str| -> Option<u32> {
        (!s.is_empty() && s.len() <= 2 && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    let parts: Vec<&str> = if given.contains('.') {
        given.split('.').collect()
    } else if given.len() > 1 {
        let (major, minor) = given.split_at_checked(1)?;
        vec![major, minor]
    } else {
        vec![given]
    };
    let (major, minor, micro) = match parts.as_slice() {
        [major] => (number(major)?, None, None),
        [major, minor] => (number(major)?, Some(number(minor)?), None),
        [major, minor, micro] => (number(major)?, Some(number(minor)?), Some(number(micro)?)),
        _ => return None,
    };
    // pip writes the version without its dot and reads the first digit
    // back as the major version: only one-digit majors survive that.
    (1..=9).contains(&major).then_some((major, minor, micro))
}

impl Target {
    /// A target as pip's `pip download --python-version <python_version>
    /// [--platform P]... [--implementation I] [--abi A]...` defines it.
    ///
    /// `platforms` empty means any platform: [`Target::supported_tags`]
    /// lists pip's tags for the platform `any`, and
    /// [`Target::wheel_priority`] ranks a wheel of any platform as if its
    /// platform were `any`. `implementation` defaults to `cp`. `abis`
    /// empty derives them as pip does on a standard CPython: `cp3X` (3.8
    /// and later), `cp3Xm` (3.3 to 3.7), `cpXYmu` (older); for other
    /// implementations only `none` (pip would add the ABI of the
    /// interpreter it runs on, which says nothing about the target).
    pub fn new(
        python_version: &str,
        platforms: &[String],
        implementation: Option<&str>,
        abis: &[String],
    ) -> Result<Target, TargetError> {
        let (major, minor, micro) =
            parse_python_version(python_version).ok_or_else(|| TargetError::PythonVersion {
                given: python_version.to_string(),
            })?;
        let implementation = implementation.unwrap_or("cp");
        if !(is_tag_word(implementation)
            && implementation.bytes().all(|b| b != b'_')
            && implementation.starts_with(|c: char| c.is_ascii_lowercase()))
        {
            return Err(TargetError::Implementation {
                given: implementation.to_string(),
            });
        }
        for p in platforms {
            if !is_tag_word(p) {
                return Err(TargetError::Platform {
                    given: p.clone(),
                    why: "a platform tag has only lowercase letters, digits and '_'",
                });
            }
        }
        if let Some(a) = abis.iter().find(|a| !is_tag_word(a)) {
            return Err(TargetError::Abi { given: a.clone() });
        }
        let mut target = Target {
            implementation: implementation.to_string(),
            major,
            minor,
            micro,
            platforms: platforms.to_vec(),
            abis: abis.to_vec(),
            expanded: false,
            tags: Vec::new(),
            ranks: HashMap::new(),
        };
        target.compute_tags()?;
        Ok(target)
    }

    /// The same target with its manylinux and musllinux platforms standing
    /// for every older version too, as pip computes the tags of the machine
    /// it runs on (`packaging`'s glibc and musl detection):
    /// `manylinux_2_17_x86_64` then also accepts `manylinux2014_x86_64`,
    /// `manylinux_2_16_x86_64` ... `manylinux_2_5_x86_64`, `manylinux2010`
    /// and `manylinux1`; `musllinux_1_2_aarch64` accepts `musllinux_1_1` and
    /// `_1_0`. `pip download --platform` does not do this (it expands only
    /// `manylinux2014`/`manylinux2010` and macOS), so a target built with
    /// [`Target::new`] alone does not either.
    pub fn with_platform_expansion(mut self) -> Result<Target, TargetError> {
        self.expanded = true;
        self.compute_tags()?;
        Ok(self)
    }

    fn nodot(&self) -> String {
        match self.minor {
            Some(minor) => format!("{}{minor}", self.major),
            None => self.major.to_string(),
        }
    }

    /// The platforms tags are computed for: pip's `_expand_allowed_platforms`
    /// (each given platform expanded, repeats dropped), or `any`.
    fn expanded_platforms(&self) -> Result<Vec<String>, TargetError> {
        if self.platforms.is_empty() {
            return Ok(vec!["any".to_string()]);
        }
        let mut out: Vec<String> = Vec::new();
        let mut seen: HashSet<String> = HashSet::new();
        for p in &self.platforms {
            if seen.contains(p) {
                continue;
            }
            let expansion = if self.expanded {
                host_expand(p)
            } else {
                pip_expand(p)
            };
            let expansion = expansion.map_err(|why| TargetError::Platform {
                given: p.clone(),
                why,
            })?;
            for e in expansion {
                if seen.insert(e.clone()) {
                    out.push(e);
                }
            }
            if out.len() > MAX_PLATFORMS {
                return Err(TargetError::Platform {
                    given: p.clone(),
                    why: "the platforms stand for more than 512 platform tags together",
                });
            }
        }
        if out.is_empty() {
            return Err(TargetError::NoPlatformTags {
                given: self.platforms.clone(),
            });
        }
        Ok(out)
    }

    /// The ABIs `cpython_tags` starts with when none are given.
    fn derived_cpython_abis(&self) -> Vec<String> {
        let Some(minor) = self.minor else {
            return Vec::new();
        };
        let flags = if (self.major, minor) >= (3, 8) {
            ""
        } else if (self.major, minor) >= (3, 3) {
            "m"
        } else {
            "mu"
        };
        vec![format!("cp{}{flags}", self.nodot())]
    }

    fn compute_tags(&mut self) -> Result<(), TargetError> {
        let platforms = self.expanded_platforms()?;
        let nodot = self.nodot();
        let interpreter = format!("{}{nodot}", self.implementation);
        let mut tags: Vec<Tag> = Vec::new();
        let each_platform = |tags: &mut Vec<Tag>, interpreter: &str, abi: &str| {
            for p in &platforms {
                tags.push(Tag::new(interpreter, abi, p));
            }
        };

        if self.implementation == "cp" {
            // packaging's `cpython_tags`.
            let mut abis = if self.abis.is_empty() {
                self.derived_cpython_abis()
            } else {
                self.abis.clone()
            };
            // `abi3` and `none` come at their usual places, not first.
            for explicit in ["abi3", "none"] {
                if let Some(i) = abis.iter().position(|a| a == explicit) {
                    abis.remove(i);
                }
            }
            // Free-threaded builds (`cp313t`) have no stable ABI (packaging
            // 24.1, pip 24.1 and later).
            let threaded = abis.first().is_some_and(|a| {
                a.strip_prefix("cp")
                    .map(|rest| rest.trim_start_matches(|c: char| c.is_ascii_digit()))
                    .is_some_and(|flags| flags.contains('t'))
            });
            let abi3 = self
                .minor
                .is_some_and(|minor| (self.major, minor) >= (3, 2))
                && !threaded;
            for abi in &abis {
                each_platform(&mut tags, &interpreter, abi);
            }
            if abi3 {
                each_platform(&mut tags, &interpreter, "abi3");
            }
            each_platform(&mut tags, &interpreter, "none");
            if let (true, Some(minor)) = (abi3, self.minor) {
                for older in (2..minor).rev() {
                    each_platform(&mut tags, &format!("cp{}{older}", self.major), "abi3");
                }
            }
        } else {
            // packaging's `generic_tags`.
            let mut abis = self.abis.clone();
            if !abis.iter().any(|a| a == "none") {
                abis.push("none".to_string());
            }
            for abi in &abis {
                each_platform(&mut tags, &interpreter, abi);
            }
        }

        // packaging's `compatible_tags`.
        let mut py_versions = Vec::new();
        if self.minor.is_some() {
            py_versions.push(format!("py{nodot}"));
        }
        py_versions.push(format!("py{}", self.major));
        if let Some(minor) = self.minor {
            for older in (0..minor).rev() {
                py_versions.push(format!("py{}{older}", self.major));
            }
        }
        for py in &py_versions {
            each_platform(&mut tags, py, "none");
        }
        tags.push(Tag::new(&interpreter, "none", "any"));
        for py in &py_versions {
            tags.push(Tag::new(py, "none", "any"));
        }

        let mut ranks = HashMap::new();
        for (i, tag) in tags.iter().enumerate() {
            ranks.entry(tag.clone()).or_insert(i);
        }
        self.tags = tags;
        self.ranks = ranks;
        Ok(())
    }

    /// The tags this target installs, best first, exactly as pip lists them
    /// for the same options (`pip debug --verbose --python-version ...
    /// --platform ... --implementation ... --abi ...`; pip 24.2, and pip
    /// 23.2 but for free-threaded ABIs such as `cp313t`, where it still
    /// lists `abi3`), repeats included (pip lists `py311-none-any` twice
    /// for `--implementation py`; the first place counts).
    pub fn supported_tags(&self) -> Vec<Tag> {
        self.tags.clone()
    }

    /// Whether the target stands for any platform (no platform given).
    pub fn any_platform(&self) -> bool {
        self.platforms.is_empty()
    }

    /// Where the best of the wheel's tags comes in
    /// [`Target::supported_tags`] (0 is best), or `None` when the target
    /// cannot install the wheel (none of its tags is supported, or the name
    /// is not a wheel filename). For a target of any platform, each of the
    /// wheel's tags is looked up with the platform `any`.
    pub fn wheel_priority(&self, filename: &str) -> Option<usize> {
        let tags = wheel_tags(filename).ok()?;
        tags.iter()
            .filter_map(|t| {
                if self.platforms.is_empty() {
                    self.ranks.get(&Tag::new(t.interpreter(), t.abi(), "any"))
                } else {
                    self.ranks.get(t)
                }
            })
            .min()
            .copied()
    }

    /// A short text for reports: `cp311/manylinux_2_17_x86_64` (platforms
    /// joined by `,`; `any` when none), then `/abi=...` when ABIs were
    /// given, and `+older` when [`Target::with_platform_expansion`] applies.
    pub fn describe(&self) -> String {
        let mut text = format!("{}{}/", self.implementation, self.nodot());
        if self.platforms.is_empty() {
            text.push_str("any");
        } else {
            text.push_str(&self.platforms.join(","));
        }
        if !self.abis.is_empty() {
            text.push_str("/abi=");
            text.push_str(&self.abis.join(","));
        }
        if self.expanded {
            text.push_str("+older");
        }
        text
    }

    /// The marker environment of this target: what `packaging`'s
    /// `default_environment()` gives on a machine of the target's kind.
    ///
    /// - `python_version` is `X.Y` and `python_full_version` `X.Y.Z`, `Z`
    ///   as given or 0 (pip's own `--python-version 3.11` check of
    ///   `Requires-Python` uses `3.11.0` too); a major-only version gives
    ///   `X.0` and `X.0.0`, as pip pads it.
    /// - `implementation_name` / `platform_python_implementation`:
    ///   `cpython`/`CPython` for `cp` and for the generic `py`, `pypy`/`PyPy`
    ///   for `pp`, `ironpython`, `jython`, `graalpy` for `ip`, `jy`, `gp`;
    ///   `implementation_version` is the Python version (the PyPy release
    ///   itself is not known from a target).
    /// - `os_name`, `sys_platform`, `platform_system`, `platform_machine`
    ///   come from the first platform: `manylinux*`/`musllinux*`/`linux_*`
    ///   give `posix`/`linux`/`Linux` and the architecture (`x86_64`,
    ///   `aarch64`, ...); `win32`, `win_amd64`, `win_arm64` give
    ///   `nt`/`win32`/`Windows` and `x86`, `AMD64`, `ARM64`; `macosx_*`
    ///   gives `posix`/`darwin`/`Darwin` and `arm64` (also for
    ///   `universal2`), `x86_64` (also `intel`, `fat64`, `universal`) or
    ///   `i386`; `ios_*` and `android_*` their systems. `platform_release`
    ///   and `platform_version` are empty (no tag says them).
    /// - With no platform, or a first platform naming no system known here
    ///   (`any`, `freebsd_...`), the platform fields are empty and
    ///   `any_platform` is set: a marker comparing one counts as true.
    ///
    /// pip itself evaluates markers with the environment of the
    /// interpreter it runs on, whatever `--platform` says (pypa/pip#11664);
    /// this is what a pip running on the target would use.
    pub fn environment(&self) -> Environment {
        let minor = self.minor.unwrap_or(0);
        let python_version = format!("{}.{minor}", self.major);
        let python_full_version = format!("{python_version}.{}", self.micro.unwrap_or(0));
        let (implementation_name, platform_python_implementation) =
            match self.implementation.as_str() {
                "cp" | "py" => ("cpython".to_string(), "CPython".to_string()),
                "pp" => ("pypy".to_string(), "PyPy".to_string()),
                "ip" => ("ironpython".to_string(), "IronPython".to_string()),
                "jy" => ("jython".to_string(), "Jython".to_string()),
                "gp" | "graalpy" => ("graalpy".to_string(), "GraalVM".to_string()),
                other => (other.to_string(), other.to_string()),
            };
        let platform = self.platforms.first().and_then(|p| platform_environment(p));
        let any_platform = platform.is_none();
        let (os_name, sys_platform, platform_system, platform_machine) =
            platform.unwrap_or_default();
        Environment {
            implementation_name,
            implementation_version: python_full_version.clone(),
            os_name: os_name.to_string(),
            platform_machine,
            platform_python_implementation,
            platform_release: String::new(),
            platform_system: platform_system.to_string(),
            platform_version: String::new(),
            python_full_version,
            python_version,
            sys_platform: sys_platform.to_string(),
            any_platform,
        }
    }
}

/// `(os_name, sys_platform, platform_system, platform_machine)` for a
/// platform tag, when it names a known system.
fn platform_environment(
    platform: &str,
) -> Option<(&'static str, &'static str, &'static str, String)> {
    let linux = |arch: &str| Some(("posix", "linux", "Linux", arch.to_string()));
    if let Some(rest) = platform
        .strip_prefix("manylinux_")
        .or_else(|| platform.strip_prefix("musllinux_"))
    {
        // `2_17_x86_64`: skip the two version numbers.
        let arch = rest.splitn(3, '_').nth(2).filter(|a| !a.is_empty())?;
        return linux(arch);
    }
    for prefix in ["manylinux2014_", "manylinux2010_", "manylinux1_", "linux_"] {
        if let Some(arch) = platform.strip_prefix(prefix).filter(|a| !a.is_empty()) {
            return linux(arch);
        }
    }
    let windows = |machine: &str| Some(("nt", "win32", "Windows", machine.to_string()));
    match platform {
        "win32" => return windows("x86"),
        "win_amd64" => return windows("AMD64"),
        "win_arm64" => return windows("ARM64"),
        "win_ia64" => return windows("IA64"),
        _ => {}
    }
    if platform.starts_with("macosx") {
        let (_, _, _, arch) = split_apple(platform)?;
        let machine = match arch {
            "arm64" | "universal2" => "arm64",
            "x86_64" | "intel" | "fat64" | "universal" => "x86_64",
            "i386" | "fat32" | "fat" => "i386",
            "ppc" | "ppc64" => "Power Macintosh",
            _ => return None,
        };
        return Some(("posix", "darwin", "Darwin", machine.to_string()));
    }
    if platform.starts_with("ios_") {
        // `ios_13_0_arm64_iphoneos`: the architecture before the SDK.
        let (_, _, _, multiarch) = split_apple(platform)?;
        let arch = multiarch.split('_').next().filter(|a| !a.is_empty())?;
        return Some(("posix", "ios", "iOS", arch.to_string()));
    }
    if let Some(rest) = platform.strip_prefix("android_") {
        // `android_21_arm64_v8a`: the API level, then the Android ABI.
        let (_, abi) = rest.split_once('_')?;
        let machine = match abi {
            "arm64_v8a" => "aarch64",
            "armeabi_v7a" => "armv7l",
            "x86_64" => "x86_64",
            "x86" => "i686",
            _ => return None,
        };
        return Some(("posix", "android", "Android", machine.to_string()));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn target(py: &str, platforms: &[&str], implementation: Option<&str>, abis: &[&str]) -> Target {
        Target::new(py, &strings(platforms), implementation, &strings(abis))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn shown(t: &Target) -> Vec<String> {
        t.supported_tags().iter().map(ToString::to_string).collect()
    }

    #[test]
    fn python_versions_as_pip_reads_them() {
        assert_eq!(parse_python_version("3.11"), Some((3, Some(11), None)));
        assert_eq!(parse_python_version("311"), Some((3, Some(11), None)));
        assert_eq!(parse_python_version("3"), Some((3, None, None)));
        assert_eq!(parse_python_version("3.11.4"), Some((3, Some(11), Some(4))));
        assert_eq!(parse_python_version("27"), Some((2, Some(7), None)));
        for bad in [
            "", "3.", ".3", "3.11.4.1", "x", "3.x", "10.1", "0.1", "3.1000", " 3.11", "3,11", "٣",
        ] {
            assert_eq!(parse_python_version(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn errors_name_the_value_and_the_form() {
        let e = Target::new("3.x", &[], None, &[]).unwrap_err();
        assert_eq!(e.to_string().lines().count(), 1);
        assert!(e
            .to_string()
            .starts_with("python version \"3.x\": expected major.minor such as 3.11"));
        let e = Target::new("3.11", &strings(&["manylinux 2014"]), None, &[]).unwrap_err();
        assert!(matches!(e, TargetError::Platform { .. }), "{e}");
        assert!(e.to_string().contains("\"manylinux 2014\""), "{e}");
        assert!(matches!(
            Target::new("3.11", &[], Some("CP"), &[]).unwrap_err(),
            TargetError::Implementation { .. }
        ));
        assert!(matches!(
            Target::new("3.11", &[], None, &strings(&["cp311-x"])).unwrap_err(),
            TargetError::Abi { .. }
        ));
        assert!(matches!(
            Target::new("3.11", &strings(&["macosx_9_0_x86_64"]), None, &[]).unwrap_err(),
            TargetError::NoPlatformTags { .. }
        ));
        assert!(matches!(
            Target::new("3.11", &strings(&["macosx_99999_0_arm64"]), None, &[]).unwrap_err(),
            TargetError::Platform { .. }
        ));
        let many: Vec<String> = (0..20).map(|i| format!("macosx_99_0_arch{i}")).collect();
        let e = Target::new("3.11", &many, None, &[]).unwrap_err();
        assert!(e.to_string().contains("more than 512"), "{e}");
    }

    #[test]
    fn cpython_tag_order() {
        let t = target("3.11", &["manylinux_2_17_x86_64"], Some("cp"), &[]);
        let tags = shown(&t);
        assert_eq!(tags.len(), 39);
        assert_eq!(
            tags.get(..4).unwrap(),
            [
                "cp311-cp311-manylinux_2_17_x86_64",
                "cp311-abi3-manylinux_2_17_x86_64",
                "cp311-none-manylinux_2_17_x86_64",
                "cp310-abi3-manylinux_2_17_x86_64"
            ]
        );
        assert_eq!(tags.get(11).unwrap(), "cp32-abi3-manylinux_2_17_x86_64");
        assert_eq!(tags.get(12).unwrap(), "py311-none-manylinux_2_17_x86_64");
        assert_eq!(tags.get(25).unwrap(), "cp311-none-any");
        assert_eq!(tags.last().unwrap(), "py30-none-any");
        // Derived ABIs by version.
        assert_eq!(
            shown(&target("3.7", &["linux_x86_64"], None, &[]))
                .first()
                .unwrap(),
            "cp37-cp37m-linux_x86_64"
        );
        assert_eq!(
            shown(&target("2.7", &["linux_x86_64"], None, &[]))
                .first()
                .unwrap(),
            "cp27-cp27mu-linux_x86_64"
        );
        // A free-threaded ABI has no abi3.
        assert!(
            !shown(&target("3.13", &["linux_x86_64"], None, &["cp313t"]))
                .iter()
                .any(|t| t.contains("abi3"))
        );
    }

    #[test]
    fn wheel_priority_ranks_and_refuses() {
        let t = target("3.11", &["manylinux_2_17_x86_64"], None, &[]);
        assert_eq!(
            t.wheel_priority("x-1.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"),
            Some(0)
        );
        assert_eq!(
            t.wheel_priority("x-1.0-cp38-abi3-manylinux_2_17_x86_64.whl"),
            Some(5)
        );
        assert_eq!(t.wheel_priority("x-1.0-py2.py3-none-any.whl"), Some(27));
        assert_eq!(
            t.wheel_priority("x-1.0-cp311-cp311-manylinux2014_x86_64.whl"),
            None
        );
        assert_eq!(t.wheel_priority("x-1.0-cp311-cp311-win_amd64.whl"), None);
        assert_eq!(
            t.wheel_priority("x-1.0-cp312-cp312-manylinux_2_17_x86_64.whl"),
            None
        );
        assert_eq!(
            t.wheel_priority(
                "numpy-2.4.6-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl"
            ),
            None
        );
        assert_eq!(t.wheel_priority("x-1.0.tar.gz"), None);
        // With expansion, older glibc and the legacy aliases are accepted.
        let e = t.clone().with_platform_expansion().unwrap();
        assert_eq!(
            e.wheel_priority("x-1.0-cp311-cp311-manylinux2014_x86_64.whl"),
            Some(1)
        );
        assert_eq!(
            e.wheel_priority("x-1.0-cp311-cp311-manylinux1_x86_64.whl"),
            Some(15)
        );
        assert_eq!(
            e.wheel_priority("x-1.0-cp311-cp311-manylinux_2_28_x86_64.whl"),
            None
        );
        assert_eq!(e.describe(), "cp311/manylinux_2_17_x86_64+older");
        // Any platform: every platform's wheels, ranked by interpreter and ABI.
        let any = target("3.11", &[], None, &[]);
        assert!(any.any_platform());
        assert_eq!(
            any.wheel_priority("x-1.0-cp311-cp311-win_amd64.whl"),
            Some(0)
        );
        assert_eq!(
            any.wheel_priority("x-1.0-cp311-cp311-macosx_11_0_arm64.whl"),
            Some(0)
        );
        assert_eq!(any.wheel_priority("x-1.0-cp310-cp310-win_amd64.whl"), None);
        assert_eq!(
            any.wheel_priority("x-1.0-py3-none-any.whl"),
            any.wheel_priority("x-1.0-py3-none-win32.whl")
        );
        assert_eq!(any.describe(), "cp311/any");
    }

    #[test]
    fn describe_is_short() {
        assert_eq!(
            target("3.11", &["manylinux_2_17_x86_64"], None, &[]).describe(),
            "cp311/manylinux_2_17_x86_64"
        );
        assert_eq!(
            target(
                "3.12",
                &["win_amd64", "win32"],
                Some("pp"),
                &["pypy312_pp73"]
            )
            .describe(),
            "pp312/win_amd64,win32/abi=pypy312_pp73"
        );
    }

    #[test]
    fn environments_by_platform() {
        let env = target("3.11", &["manylinux_2_17_x86_64"], None, &[]).environment();
        assert_eq!(
            env,
            Environment {
                implementation_name: "cpython".into(),
                implementation_version: "3.11.0".into(),
                os_name: "posix".into(),
                platform_machine: "x86_64".into(),
                platform_python_implementation: "CPython".into(),
                platform_release: String::new(),
                platform_system: "Linux".into(),
                platform_version: String::new(),
                python_full_version: "3.11.0".into(),
                python_version: "3.11".into(),
                sys_platform: "linux".into(),
                any_platform: false,
            }
        );
        let cases = [
            (
                "musllinux_1_2_aarch64",
                ("posix", "linux", "Linux", "aarch64"),
            ),
            (
                "manylinux2014_ppc64le",
                ("posix", "linux", "Linux", "ppc64le"),
            ),
            ("manylinux1_i686", ("posix", "linux", "Linux", "i686")),
            ("linux_armv7l", ("posix", "linux", "Linux", "armv7l")),
            ("win_amd64", ("nt", "win32", "Windows", "AMD64")),
            ("win32", ("nt", "win32", "Windows", "x86")),
            ("win_arm64", ("nt", "win32", "Windows", "ARM64")),
            ("macosx_11_0_arm64", ("posix", "darwin", "Darwin", "arm64")),
            (
                "macosx_10_9_x86_64",
                ("posix", "darwin", "Darwin", "x86_64"),
            ),
            (
                "macosx_10_9_universal2",
                ("posix", "darwin", "Darwin", "arm64"),
            ),
            ("ios_13_0_arm64_iphoneos", ("posix", "ios", "iOS", "arm64")),
            (
                "android_21_arm64_v8a",
                ("posix", "android", "Android", "aarch64"),
            ),
        ];
        for (platform, (os, sys, system, machine)) in cases {
            let env = target("3.12", &[platform, "any"], None, &[]).environment();
            assert_eq!(
                (
                    env.os_name.as_str(),
                    env.sys_platform.as_str(),
                    env.platform_system.as_str(),
                    env.platform_machine.as_str()
                ),
                (os, sys, system, machine),
                "{platform}"
            );
            assert!(!env.any_platform, "{platform}");
        }
        for platform in ["any", "freebsd_13_x86_64"] {
            let env = target("3.12", &[platform], None, &[]).environment();
            assert!(
                env.any_platform && env.sys_platform.is_empty(),
                "{platform}"
            );
        }
        assert!(target("3.12", &[], None, &[]).environment().any_platform);
        let pypy = target("3.10.14", &["manylinux_2_17_x86_64"], Some("pp"), &[]).environment();
        assert_eq!(
            (
                pypy.implementation_name.as_str(),
                pypy.platform_python_implementation.as_str()
            ),
            ("pypy", "PyPy")
        );
        assert_eq!(
            (
                pypy.python_version.as_str(),
                pypy.python_full_version.as_str()
            ),
            ("3.10", "3.10.14")
        );
        let major_only = target("3", &["win_amd64"], None, &[]).environment();
        assert_eq!(
            (
                major_only.python_version.as_str(),
                major_only.python_full_version.as_str()
            ),
            ("3.0", "3.0.0")
        );
    }
}
