//! Which platform tags a given platform tag stands for: pip's expansion of
//! `--platform` values (macOS versions and binary formats; the legacy
//! manylinux aliases) and, on request, `packaging`'s expansion of the
//! running system's glibc or musl version.

/// The largest macOS, glibc or musl version number expanded (a bound on
/// the work hostile input can ask for; real ones are far below: macOS 26,
/// glibc 2.41, musl 1.2).
pub(crate) const MAX_EXPANDED_VERSION: u32 = 99;

/// Why a platform could not be expanded.
pub(crate) type ExpandError = &'static str;

/// pip's `_get_custom_platforms`: what `pip download --platform P` accepts
/// for `P` (pip 23.x and 24.0 to 24.2: macOS and the legacy manylinux
/// names; every other value stands for itself).
pub(crate) fn pip_expand(platform: &str) -> Result<Vec<String>, ExpandError> {
    let prefix = platform.split('_').next().unwrap_or(platform);
    if platform.starts_with("macosx") {
        let Some((name, major, minor, arch)) = split_apple(platform) else {
            return Ok(vec![platform.to_string()]);
        };
        let (major, minor) = (bounded(major)?, bounded(minor)?);
        Ok(mac_platforms(major, minor, arch)
            .into_iter()
            // pip keeps the prefix as written (`macosx` or a longer one).
            .map(|p| format!("{name}_{}", p.strip_prefix("macosx_").unwrap_or(&p)))
            .collect())
    } else if prefix == "manylinux2014" || prefix == "manylinux2010" {
        let arch = platform.split_once('_').map_or("", |(_, arch)| arch);
        let mut out = vec![platform.to_string()];
        if prefix == "manylinux2014" {
            if matches!(arch, "i686" | "x86_64") {
                out.push(format!("manylinux2010_{arch}"));
                out.push(format!("manylinux1_{arch}"));
            }
        } else {
            out.push(format!("manylinux1_{arch}"));
        }
        Ok(out)
    } else {
        Ok(vec![platform.to_string()])
    }
}

/// What `packaging` lists for a Linux machine whose newest tag is
/// `platform`: `manylinux_2_X_arch` (or `manylinux2014_arch` = 2.17,
/// `manylinux2010_arch` = 2.12, `manylinux1_arch` = 2.5) gives every glibc
/// from 2.X down to 2.5 (x86_64, i686) or 2.17 (other architectures), each
/// legacy alias right after its glibc; `musllinux_1_X_arch` gives 1.X down
/// to 1.0. Anything else is expanded as pip expands it.
pub(crate) fn host_expand(platform: &str) -> Result<Vec<String>, ExpandError> {
    if let Some((minor, arch)) = glibc_of(platform) {
        let minor = bounded(minor)?;
        let oldest = if matches!(arch, "x86_64" | "i686") {
            5
        } else {
            17
        };
        let mut out = Vec::new();
        for m in (oldest..=minor).rev() {
            out.push(format!("manylinux_2_{m}_{arch}"));
            if let Some(legacy) = legacy_alias(m) {
                out.push(format!("{legacy}_{arch}"));
            }
        }
        return Ok(out);
    }
    if let Some(rest) = platform.strip_prefix("musllinux_") {
        if let Some((major, minor, arch)) = numbers_then_arch(rest) {
            let minor = bounded(minor)?;
            return Ok((0..=minor)
                .rev()
                .map(|m| format!("musllinux_{major}_{m}_{arch}"))
                .collect());
        }
    }
    pip_expand(platform)
}

fn legacy_alias(glibc_minor: u32) -> Option<&'static str> {
    match glibc_minor {
        17 => Some("manylinux2014"),
        12 => Some("manylinux2010"),
        5 => Some("manylinux1"),
        _ => None,
    }
}

/// The glibc 2.x minor and architecture a manylinux tag stands for.
fn glibc_of(platform: &str) -> Option<(&str, &str)> {
    for (legacy, minor) in [
        ("manylinux2014_", "17"),
        ("manylinux2010_", "12"),
        ("manylinux1_", "5"),
    ] {
        if let Some(arch) = platform.strip_prefix(legacy) {
            return (!arch.is_empty()).then_some((minor, arch));
        }
    }
    let (major, minor, arch) = numbers_then_arch(platform.strip_prefix("manylinux_")?)?;
    (major == "2").then_some((minor, arch))
}

/// `12_34_rest` as `("12", "34", "rest")`.
fn numbers_then_arch(text: &str) -> Option<(&str, &str, &str)> {
    let (major, rest) = text.split_once('_')?;
    let (minor, arch) = rest.split_once('_')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(major) && digits(minor) && !arch.is_empty()).then_some((major, minor, arch))
}

fn bounded(digits: &str) -> Result<u32, ExpandError> {
    digits
        .parse::<u32>()
        .ok()
        .filter(|n| *n <= MAX_EXPANDED_VERSION)
        .ok_or("its version number is larger than 99")
}

/// pip's `(.+)_(\d+)_(\d+)_(.+)` on an Apple platform tag, the first group
/// as long as possible: `("macosx", "10", "9", "x86_64")`.
pub(crate) fn split_apple(platform: &str) -> Option<(&str, &str, &str, &str)> {
    let underscores: Vec<usize> = platform.match_indices('_').map(|(i, _)| i).collect();
    for &at in underscores.iter().rev() {
        let (Some(name), Some(rest)) = (platform.get(..at), platform.get(at + 1..)) else {
            continue;
        };
        if name.is_empty() {
            continue;
        }
        if let Some((major, minor, arch)) = numbers_then_arch(rest) {
            return Some((name, major, minor, arch));
        }
    }
    None
}

/// `packaging`'s `mac_platforms(version, arch)`.
fn mac_platforms(major: u32, minor: u32, arch: &str) -> Vec<String> {
    let mut out = Vec::new();
    if major == 10 {
        // Before macOS 11 each yearly release bumped the minor version.
        for m in (0..=minor).rev() {
            for format in binary_formats((10, m), arch) {
                out.push(format!("macosx_10_{m}_{format}"));
            }
        }
    }
    if major >= 11 {
        // From macOS 11 on, the major version; minor releases are
        // compatible with their .0.
        for maj in (11..=major).rev() {
            for format in binary_formats((maj, 0), arch) {
                out.push(format!("macosx_{maj}_0_{format}"));
            }
        }
        // x86_64 Macs on 11+ run 10.x binaries; arm64 ones only universal2
        // binaries whose x86_64 half targets 10.x.
        for m in (4..=16).rev() {
            if arch == "x86_64" {
                for format in binary_formats((10, m), arch) {
                    out.push(format!("macosx_10_{m}_{format}"));
                }
            } else {
                out.push(format!("macosx_10_{m}_universal2"));
            }
        }
    }
    out
}

/// `packaging`'s `_mac_binary_formats`: the binary formats a CPU
/// architecture runs on a macOS version.
fn binary_formats(version: (u32, u32), arch: &str) -> Vec<&str> {
    let mut formats = vec![arch];
    match arch {
        "x86_64" => {
            if version < (10, 4) {
                return Vec::new();
            }
            formats.extend(["intel", "fat64", "fat32"]);
        }
        "i386" => {
            if version < (10, 4) {
                return Vec::new();
            }
            formats.extend(["intel", "fat32", "fat"]);
        }
        "ppc64" => {
            if !((10, 4)..=(10, 5)).contains(&version) {
                return Vec::new();
            }
            formats.push("fat64");
        }
        "ppc" => {
            if version > (10, 6) {
                return Vec::new();
            }
            formats.extend(["fat32", "fat"]);
        }
        _ => {}
    }
    if matches!(arch, "arm64" | "x86_64") {
        formats.push("universal2");
    }
    if matches!(arch, "x86_64" | "i386" | "ppc64" | "ppc" | "intel") {
        formats.push("universal");
    }
    formats
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_manylinux_as_pip_expands_it() {
        assert_eq!(
            pip_expand("manylinux2014_x86_64").unwrap(),
            [
                "manylinux2014_x86_64",
                "manylinux2010_x86_64",
                "manylinux1_x86_64"
            ]
        );
        assert_eq!(
            pip_expand("manylinux2014_aarch64").unwrap(),
            ["manylinux2014_aarch64"]
        );
        assert_eq!(
            pip_expand("manylinux2010_i686").unwrap(),
            ["manylinux2010_i686", "manylinux1_i686"]
        );
        // pip leaves PEP 600 tags, musllinux and the rest alone.
        for p in [
            "manylinux_2_17_x86_64",
            "musllinux_1_2_x86_64",
            "linux_x86_64",
            "win_amd64",
            "any",
        ] {
            assert_eq!(pip_expand(p).unwrap(), [p]);
        }
    }

    #[test]
    fn macos_as_packaging_lists_it() {
        assert_eq!(
            pip_expand("macosx_11_0_arm64").unwrap().get(..4).unwrap(),
            [
                "macosx_11_0_arm64",
                "macosx_11_0_universal2",
                "macosx_10_16_universal2",
                "macosx_10_15_universal2"
            ]
        );
        let x = pip_expand("macosx_10_9_x86_64").unwrap();
        assert_eq!(
            x.get(..6).unwrap(),
            [
                "macosx_10_9_x86_64",
                "macosx_10_9_intel",
                "macosx_10_9_fat64",
                "macosx_10_9_fat32",
                "macosx_10_9_universal2",
                "macosx_10_9_universal"
            ]
        );
        assert_eq!(x.last().map(String::as_str), Some("macosx_10_4_universal"));
        // 11.3 stands for 11.0: the minor is not listed.
        assert!(!pip_expand("macosx_11_3_arm64")
            .unwrap()
            .iter()
            .any(|p| p.contains("11_3")));
        // Before 10.0 nothing; an unmatched name stands for itself.
        assert!(pip_expand("macosx_9_0_x86_64").unwrap().is_empty());
        assert_eq!(pip_expand("macosx_x86_64").unwrap(), ["macosx_x86_64"]);
        assert_eq!(
            split_apple("macosxcustom_10_9_x86_64"),
            Some(("macosxcustom", "10", "9", "x86_64"))
        );
        assert!(pip_expand("macosx_100000000000_0_arm64").is_err());
    }

    #[test]
    fn host_expansion_of_glibc_and_musl() {
        let x = host_expand("manylinux_2_17_x86_64").unwrap();
        assert_eq!(
            x.get(..3).unwrap(),
            [
                "manylinux_2_17_x86_64",
                "manylinux2014_x86_64",
                "manylinux_2_16_x86_64"
            ]
        );
        assert_eq!(x.len(), 13 + 3);
        assert_eq!(x.last().map(String::as_str), Some("manylinux1_x86_64"));
        assert!(x.contains(&"manylinux2010_x86_64".to_string()));
        assert_eq!(
            host_expand("manylinux_2_18_aarch64").unwrap(),
            [
                "manylinux_2_18_aarch64",
                "manylinux_2_17_aarch64",
                "manylinux2014_aarch64"
            ]
        );
        assert_eq!(
            host_expand("manylinux2014_aarch64").unwrap(),
            ["manylinux_2_17_aarch64", "manylinux2014_aarch64"]
        );
        assert!(host_expand("manylinux_2_12_aarch64").unwrap().is_empty());
        assert_eq!(
            host_expand("musllinux_1_2_x86_64").unwrap(),
            [
                "musllinux_1_2_x86_64",
                "musllinux_1_1_x86_64",
                "musllinux_1_0_x86_64"
            ]
        );
        assert_eq!(host_expand("win_amd64").unwrap(), ["win_amd64"]);
        assert!(host_expand("manylinux_2_4294967296_x86_64").is_err());
        assert!(host_expand("manylinux_2_100_x86_64").is_err());
        assert_eq!(host_expand("manylinux_2_99_x86_64").unwrap().len(), 95 + 3);
    }
}
