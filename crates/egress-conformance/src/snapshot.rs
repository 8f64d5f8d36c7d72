//! `snapshot build` and `snapshot verify`: the flags, the build of
//! [`egress_build`] and the verdict of [`egress_snapshot::verify`] printed,
//! and their errors as exit codes.

use crate::{exit, Failure};
use egress_build::{BuildError, BuildOptions, Common, FlattenError, Kind};
use egress_signing::AllowedSigners;
use egress_snapshot::chain::ChainProblem;
use egress_snapshot::verify::{SnapshotDir, Verification, VerifyError};
use std::fs;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct VerifyArgs {
    /// The snapshot directory.
    pub dir: PathBuf,
    /// An OpenSSH allowed_signers file you trust; without it the signature is
    /// not checked (the snapshot's own allowed_signers proves nothing).
    #[arg(long, value_name = "FILE")]
    pub allowed_signers: Option<PathBuf>,
    /// Hashing threads; by default one per core.
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
}

#[derive(clap::Args)]
pub struct BuildArgs {
    /// A hashed requirements file (pip-compile / uv pip compile
    /// --generate-hashes); repeatable.
    #[arg(long = "requirements", value_name = "FILE")]
    pub requirements: Vec<PathBuf>,
    /// A uv.lock (version 1).
    #[arg(long, value_name = "FILE")]
    pub uv_lock: Option<PathBuf>,
    /// A directory of wheels and sdists to add as they are; repeatable.
    #[arg(long, value_name = "DIR")]
    pub dist: Vec<PathBuf>,
    /// The index to fetch from (PEP 691 JSON or PEP 503 HTML).
    #[arg(long, value_name = "URL", default_value = egress_build::pypi::DEFAULT_INDEX)]
    pub index_url: String,
    /// The OpenSSH ed25519 private key (unencrypted) that signs the MANIFEST.
    #[arg(long, value_name = "FILE")]
    pub sign_key: PathBuf,
    /// The principal in the shipped allowed_signers; by default the key's
    /// comment.
    #[arg(long, value_name = "NAME")]
    pub principal: Option<String>,
    /// Parallel downloads.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub jobs: usize,
    /// The snapshot directory to write (atomically; an existing snapshot there
    /// is replaced).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// The mirror's base URL, e.g. http://127.0.0.1:8080: also write
    /// DIR/rewritten/uv.lock, whose file URLs point at the mirror.
    #[arg(long, value_name = "URL", requires = "uv_lock")]
    pub mirror_url: Option<String>,
    /// An npm package-lock.json (lockfile version 2 or 3): every tarball it
    /// pins is fetched from its `resolved` URL (a package without one, as
    /// npm's omit-lockfile-registry-resolved writes it, from --npm-upstream),
    /// verified against its sha512 integrity, and served with pre-rendered
    /// packuments.
    #[arg(long, value_name = "FILE")]
    pub npm_lock: Option<PathBuf>,
    /// A directory of npm tarballs (.tgz) to add as they are, each named by
    /// its own package.json, e.g. the conformance kit; repeatable; needs
    /// --npm-registry-url.
    #[arg(long, value_name = "DIR")]
    pub npm_dist: Vec<PathBuf>,
    /// The mirror's absolute base URL as npm clients will reach it, e.g.
    /// http://127.0.0.1:8080/; required with --npm-lock and --npm-dist, because npm needs
    /// absolute tarball URLs in packuments.
    #[arg(long, value_name = "URL")]
    pub npm_registry_url: Option<String>,
    /// PEM file of CA certificates to trust for an https index, added to
    /// the system's store (which SSL_CERT_FILE and SSL_CERT_DIR replace).
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// The output of `apt-get install --print-uris -qq PKG...`: every .deb
    /// it lists is bound to the SHA256 of its archive's signed Packages,
    /// downloaded, verified, and served in a repository signed by the key
    /// of --sign-key (see docs/snapshot-format.md, "apt").
    #[arg(long, value_name = "FILE")]
    pub apt_uris: Option<PathBuf>,
    /// 'URL DIST [COMPONENT...]' (default component main), one per
    /// distribution the --apt-uris URLs come from, e.g.
    /// 'http://deb.debian.org/debian bookworm main'; repeatable.
    #[arg(long, value_name = "SOURCE")]
    pub apt_source: Vec<String>,
    /// apt's own source list as it stands, e.g.
    /// /etc/apt/sources.list.d/debian.sources: a deb822 .sources file or a
    /// one-line .list file; each enabled deb entry is a source, checked
    /// against its Signed-By (else --apt-keyring); repeatable.
    #[arg(long, value_name = "FILE")]
    pub apt_sources: Vec<PathBuf>,
    /// The OpenPGP keyring the archives sign their Release with, e.g.
    /// /usr/share/keyrings/debian-archive-keyring.gpg.
    #[arg(long, value_name = "FILE")]
    pub apt_keyring: Option<PathBuf>,
    /// A Debian architecture whose Packages are read [default: amd64];
    /// repeatable (--apt-arch amd64 --apt-arch arm64): a line binds
    /// through whichever architecture's signed index lists its file, and
    /// the snapshot serves an index per architecture.
    #[arg(long, value_name = "ARCH")]
    pub apt_arch: Vec<String>,
    /// A directory of .deb files to add as they are (e.g. the conformance
    /// kit of `kit --protocol apt`), listed in the first --apt-source's
    /// distribution and first component; repeatable.
    #[arg(long, value_name = "DIR")]
    pub apt_debs: Vec<PathBuf>,
    #[command(flatten)]
    pub cargo: egress_build::cargo::Inputs,
    #[command(flatten)]
    pub select: SelectArgs,
    #[command(flatten)]
    pub layer: LayerArgs,
}

/// Layers (docs/snapshot-format.md, "Layers").
#[derive(clap::Args)]
pub struct LayerArgs {
    /// Build a layer on this snapshot: its whole view is served again, files
    /// already in it are hard-linked (not stored twice), and the new signed
    /// SNAPSHOT.json names it as the parent. It must verify first.
    #[arg(long, value_name = "DIR", help_heading = "Layers")]
    pub base: Option<PathBuf>,
    /// Take NAME==VERSION (PyPI) or NAME@VERSION (npm) out of the base's
    /// view, recorded as a signed tombstone; repeatable.
    #[arg(long, value_name = "SPEC", requires = "base", help_heading = "Layers")]
    pub remove: Vec<String>,
    /// Who the base and every layer below it must be signed by [default:
    /// the key of --sign-key].
    #[arg(long, value_name = "FILE", requires = "base", help_heading = "Layers")]
    pub base_allowed_signers: Option<PathBuf>,
}

/// A universe, its cutoff and the target filters (docs/snapshot-format.md,
/// "Universes and targets").
#[derive(clap::Args)]
pub struct SelectArgs {
    /// A PyPI universe: one project name per line, with an optional PEP 440
    /// specifier (`requests>=2.30`); `#` starts a comment.
    #[arg(long, value_name = "FILE", help_heading = "Universe")]
    pub pypi_universe: Option<PathBuf>,
    /// An npm universe: one package name per line, with an optional semver
    /// range (`react@^18` or `react ^18`); `#` starts a comment.
    #[arg(long, value_name = "FILE", help_heading = "Universe")]
    pub npm_universe: Option<PathBuf>,
    /// The npm registry an --npm-universe is read from, and the
    /// --npm-lock packages that have no `resolved` URL are resolved against
    /// (default https://registry.npmjs.org/); not the mirror's own address
    /// (--npm-registry-url).
    #[arg(long, value_name = "URL", help_heading = "Universe")]
    pub npm_upstream: Option<String>,
    /// The cutoff, RFC 3339 (e.g. 2025-06-01T00:00:00Z): nothing uploaded
    /// after it enters the snapshot, and the snapshot says so, signed.
    #[arg(long, value_name = "TIME", help_heading = "Universe")]
    pub exclude_newer: Option<String>,
    /// The newest N versions of each project at or before the cutoff.
    #[arg(long, value_name = "N", help_heading = "Universe")]
    pub versions_per_project: Option<u32>,
    /// Leave out any file larger than this many bytes.
    #[arg(long, value_name = "BYTES", help_heading = "Universe")]
    pub max_file_bytes: Option<u64>,
    /// Follow dependencies under the same cutoff and filters (PyPI:
    /// Requires-Dist from PEP 658 metadata, markers and extras evaluated for
    /// the targets; npm: dependencies, non-optional peerDependencies and
    /// the optional packages for the --os/--cpu/--libc platform).
    #[arg(long, help_heading = "Universe")]
    pub closure: bool,
    /// Stop at a project the registry lacks or a file whose bytes do not
    /// match the registry's hash, instead of reporting it and going on.
    #[arg(long, help_heading = "Universe")]
    pub strict: bool,
    /// Select and report what each rule keeps and drops, with the sizes
    /// the index lists; download nothing, write nothing.
    #[arg(long, help_heading = "Universe")]
    pub dry_run: bool,
    /// The target's Python version (e.g. 3.11); repeatable, one target each.
    #[arg(long, value_name = "X.Y", help_heading = "Targets")]
    pub python_version: Vec<String>,
    /// A PEP 425 platform tag (e.g. manylinux_2_17_x86_64); repeatable, as
    /// pip's --platform: wheels for any of them are kept.
    #[arg(long, value_name = "TAG", help_heading = "Targets")]
    pub platform: Vec<String>,
    /// The Python implementation tag: cp (default), pp, py.
    #[arg(long, value_name = "TAG", help_heading = "Targets")]
    pub implementation: Option<String>,
    /// An ABI tag (e.g. cp311, abi3, none); repeatable; by default derived
    /// from the version and implementation, as pip does.
    #[arg(long, value_name = "TAG", help_heading = "Targets")]
    pub abi: Vec<String>,
    /// Keep sdists too (with a target, only wheels are kept by default).
    #[arg(long, help_heading = "Targets")]
    pub include_sdists: bool,
    /// npm: the target's operating system (e.g. linux); optional platform
    /// packages for other systems are left out; repeatable.
    #[arg(long, value_name = "OS", help_heading = "Targets")]
    pub os: Vec<String>,
    /// npm: the target's CPU (e.g. x64, arm64); repeatable.
    #[arg(long, value_name = "CPU", help_heading = "Targets")]
    pub cpu: Vec<String>,
    /// npm: the target's C library (glibc or musl); repeatable.
    #[arg(long, value_name = "LIBC", help_heading = "Targets")]
    pub libc: Vec<String>,
}

#[derive(clap::Args)]
pub struct AptKeyringArgs {
    /// The snapshot signing key (the --sign-key of snapshot build).
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,
    /// Where to write the keyring; an existing file is replaced.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Write it ASCII-armoured (for a .asc file) instead of binary (.gpg).
    #[arg(long)]
    pub armor: bool,
}

pub fn build(args: BuildArgs) -> Result<u8, Failure> {
    let select = args.select;
    let exclude_newer = select
        .exclude_newer
        .as_deref()
        .map(|t| egress_build::Cutoff::parse(t, egress_model::Timestamp::now()))
        .transpose()
        .map_err(build_failure)?;
    let options = BuildOptions {
        common: Common {
            sign_key: args.sign_key,
            principal: args.principal,
            jobs: args.jobs,
            out: args.out,
            cacert: args.cacert,
            rules: egress_build::Rules {
                exclude_newer,
                versions_per_project: select.versions_per_project,
                max_file_bytes: select.max_file_bytes,
                closure: select.closure,
                strict: select.strict,
            },
            dry_run: select.dry_run,
            layer: egress_build::Layering {
                base: args.layer.base,
                remove: args.layer.remove,
                base_signers: args.layer.base_allowed_signers,
            },
        },
        pypi: egress_build::pypi::Inputs {
            requirements: args.requirements,
            uv_lock: args.uv_lock,
            dist: args.dist,
            index_url: args.index_url,
            mirror_url: args.mirror_url,
            universe: select.pypi_universe,
            targets: egress_build::pypi::TargetArgs {
                python_versions: select.python_version,
                platforms: select.platform,
                implementation: select.implementation,
                abis: select.abi,
                include_sdists: select.include_sdists,
            },
        },
        npm: egress_build::npm::Inputs {
            npm_lock: args.npm_lock,
            npm_dist: args.npm_dist,
            npm_registry_url: args.npm_registry_url,
            universe: select.npm_universe,
            registry: select.npm_upstream,
            platform: egress_build::npm::PlatformArgs {
                os: select.os,
                cpu: select.cpu,
                libc: select.libc,
            },
        },
        apt: egress_build::apt::Inputs {
            apt_uris: args.apt_uris,
            apt_sources: args.apt_source,
            apt_source_files: args.apt_sources,
            apt_keyring: args.apt_keyring,
            apt_arch: args.apt_arch,
            apt_debs: args.apt_debs,
        },
        cargo: args.cargo,
    };
    egress_build::build(options, |line| egress_cli::outln!("{line}")).map_err(build_failure)?;
    Ok(exit::PASS)
}

fn build_failure(e: BuildError) -> Failure {
    let code = match e.kind() {
        Kind::Usage => exit::USAGE,
        Kind::Input => exit::INPUT,
        Kind::Internal => exit::INTERNAL,
        Kind::Refused => exit::REFUSED,
        Kind::Unverified => exit::UNVERIFIED,
        Kind::NoUploadTimes => exit::NO_UPLOAD_TIMES,
        Kind::BaseUnverified => exit::BASE_UNVERIFIED,
        Kind::ChainBroken => exit::CHAIN_BROKEN,
        Kind::LayerChangesBytes => exit::LAYER_CHANGES_BYTES,
        Kind::TombstoneAbsent => exit::TOMBSTONE_ABSENT,
    };
    Failure::new(code, e.to_string()).because(e)
}

/// `snapshot apt-keyring`: the public OpenPGP keyring of the key that signs
/// a snapshot's apt indexes, for a sandbox's apt (`signed-by`). The same
/// bytes are served at `/apt/keyring.gpg`, but a sandbox must get them
/// out-of-band, as a verifier gets allowed_signers.
pub fn apt_keyring(args: AptKeyringArgs) -> Result<u8, Failure> {
    let fail =
        |e: &dyn std::fmt::Display| Failure::input(format!("--key {}: {e}", args.key.display()));
    let text = fs::read_to_string(&args.key).map_err(|e| fail(&e))?;
    let key = egress_signing::SigningKey::from_openssh(&text).map_err(|e| fail(&e))?;
    let lab = egress_build::apt::lab_openpgp_key(&key);
    let bytes = if args.armor {
        lab.public_keyring_armored().into_bytes()
    } else {
        lab.public_keyring()
    };
    egress_build::write_atomic(&args.out, &bytes).map_err(|e| {
        Failure::new(
            exit::INTERNAL,
            format!("cannot write {}: {e}", args.out.display()),
        )
    })?;
    egress_cli::outln!(
        "{}: OpenPGP key {} ({}); point apt at it with [signed-by={}]",
        args.out.display(),
        lab.fingerprint(),
        egress_build::apt::LAB_KEY_USER_ID,
        args.out.display()
    );
    Ok(exit::PASS)
}

pub fn verify(args: VerifyArgs) -> Result<u8, Failure> {
    let jobs = match args.jobs {
        Some(0) => return Err(Failure::usage("--jobs: give at least 1")),
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let input = |e: VerifyError| Failure::input(e.to_string());
    let dir = SnapshotDir::open(&args.dir).map_err(input)?;
    let signers = match &args.allowed_signers {
        None => None,
        Some(p) => Some(read_signers(p)?),
    };
    let found = dir.verify(signers.as_ref(), jobs).map_err(input)?;
    Ok(report(&args.dir, &found))
}

#[derive(clap::Args)]
pub struct FlattenArgs {
    /// The snapshot (a layer) to flatten.
    pub dir: PathBuf,
    /// Where to write the flattened snapshot (atomically).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// The OpenSSH ed25519 private key that signs the new MANIFEST.
    #[arg(long, value_name = "FILE")]
    pub sign_key: PathBuf,
    /// Who DIR and its chain must be signed by [default: the key of
    /// --sign-key].
    #[arg(long, value_name = "FILE")]
    pub allowed_signers: Option<PathBuf>,
}

/// `snapshot flatten`: verify the chain, then write its view as one
/// snapshot without a parent ([`egress_build::flatten`]).
pub fn flatten(args: FlattenArgs) -> Result<u8, Failure> {
    let key = read_key(&args.sign_key)?;
    let signers = match &args.allowed_signers {
        Some(p) => Some(read_signers(p)?),
        None => None,
    };
    let done = egress_build::flatten(&args.dir, &args.out, &key, signers).map_err(|e| match e {
        FlattenError::SignKey(_) | FlattenError::Verify(_) => Failure::input(e.to_string()),
        FlattenError::ChainBroken { .. } => Failure::new(exit::CHAIN_BROKEN, e.to_string()),
        FlattenError::Unverified { .. } | FlattenError::Open { .. } => {
            Failure::new(exit::BASE_UNVERIFIED, e.to_string())
        }
        FlattenError::OutName => Failure::usage(e.to_string()),
        FlattenError::Write(e) => Failure::internal(e.to_string()).because(e),
    })?;
    egress_cli::outln!(
        "{}: snapshot {} with the view of {} ({} served paths), no chain",
        args.out.display(),
        done.snapshot.id(),
        done.from,
        done.snapshot.doc.served.len()
    );
    Ok(exit::PASS)
}

fn read_key(path: &Path) -> Result<egress_signing::SigningKey, Failure> {
    let fail =
        |e: &dyn std::fmt::Display| Failure::input(format!("--sign-key {}: {e}", path.display()));
    let text = fs::read_to_string(path).map_err(|e| fail(&e))?;
    egress_signing::SigningKey::from_openssh(&text).map_err(|e| fail(&e))
}

pub(crate) fn read_signers(p: &Path) -> Result<AllowedSigners, Failure> {
    let fail = |e: &dyn std::fmt::Display| {
        Failure::input(format!("--allowed-signers {}: {e}", p.display()))
    };
    let text = fs::read_to_string(p).map_err(|e| fail(&e))?;
    AllowedSigners::parse(&text).map_err(|e| fail(&e))
}

/// Prints the notes, every problem, and the verdict; returns the exit code.
fn report(dir: &Path, v: &Verification) -> u8 {
    for n in &v.notes {
        egress_cli::outln!("{n}");
    }
    for p in &v.problems {
        egress_cli::outln!("  BAD {p}");
    }
    let id = v.id.map_or_else(|| "?".to_string(), |d| d.to_hex());
    if v.ok() {
        egress_cli::outln!("{}: snapshot {id} verified", dir.display());
        exit::PASS
    } else {
        egress_cli::outln!(
            "{}: snapshot {id} FAILED verification: {} problem(s)",
            dir.display(),
            v.problems.len()
        );
        match v.chain {
            Some(ChainProblem::Gap { .. } | ChainProblem::Forked { .. }) => exit::CHAIN_BROKEN,
            _ => exit::FAIL,
        }
    }
}
