//! `egress-conformance`: a thin command line over the suite, the
//! references, the testbed and snapshot building. See `egress-conformance
//! --help`.

use clap::{Parser, Subcommand};
use egress_build::keygen;
use egress_conformance::{
    check, exit, instance, output, run_builtin, sandbox_scan, snapshot, verify, Failure, Format,
    TextArgs,
};
use egress_diff::cli as snapshot_diff;
use egress_mirror::misses::command as snapshot_misses;
use egress_oci::cli as snapshot_oci;
use egress_references::{canary_cli as canary, kit_cli as kit};
use egress_testbed::cli as run_testbed;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "egress-conformance",
    version,
    about = "Checks that a package mirror is a content-addressed, replay-only egress with no code-execution path.",
    long_about = "Checks that a package mirror is a content-addressed, replay-only egress with no code-execution path.\n\n\
With no command, starts on loopback a reference conformant mirror (A) and a conventional caching proxy (B) \
in front of a canary upstream, for PyPI and for npm, runs the suite against each, and prints the verdicts and \
one discrimination matrix per protocol.\n\n\
Exit codes: 0 pass, 1 fail, 2 usage error, 3 inconclusive, 4 bad input file, 5 could not run, \
6 snapshot build refused (the index does not serve what the lock pins), \
7 the canary's control API failed (check --canary)."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Output format for the built-in run.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    #[command(flatten)]
    text: TextArgs,
    /// Also write every report (text, JSON, JUnit, HTML, SARIF), the matrix
    /// and index.html (all reports in one page) into DIR.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the suite against a mirror that speaks the PyPI simple API, or the
    /// npm registry protocol with --protocol npm.
    Check(Box<check::CheckArgs>),
    /// Write the conformance kit: probe packages (egress-kit-*) to add to
    /// the snapshot under test, so that check can run every snapshot-side
    /// sub-probe on any mirror.
    Kit(kit::KitArgs),
    /// Work with saved reports.
    Report {
        #[command(subcommand)]
        command: ReportCommand,
    },
    /// Signing keys for snapshots.
    Key {
        #[command(subcommand)]
        command: KeyCommand,
    },
    /// Certify a running mirror's instance key with the lab's key, for
    /// the attestation `check` verifies (P5.instance-attestation).
    Instance {
        #[command(subcommand)]
        command: InstanceCommand,
    },
    /// Build signed snapshots from lockfiles, and verify them offline.
    Snapshot {
        #[command(subcommand)]
        command: SnapshotCommand,
    },
    /// Run the suite against the PyPI, npm and apt mirrors labs deploy
    /// (testbed/peers/, installed by scripts/setup-peers) and the reference
    /// mirror, each in front of its own canary upstream, and write one
    /// matrix per protocol.
    Testbed(run_testbed::TestbedArgs),
    /// Serve the canary upstream until SIGINT or SIGTERM, for a deployed
    /// mirror to use as its upstream during `check --canary`; its log and
    /// controls need the secret in --secret-file.
    Canary(canary::CanaryArgs),
    /// Run inside a sandbox: report every path out (routes, resolvers,
    /// proxies, client configs, lockfiles, reachable addresses, DNS, the
    /// mirror's CONNECT), each with its evidence; PASS only when the mirror
    /// is the one thing reachable.
    SandboxScan(sandbox_scan::SandboxScanArgs),
}

#[derive(Subcommand)]
enum KeyCommand {
    /// Create an ed25519 key (OpenSSH format) and its allowed_signers line.
    Generate(keygen::GenerateArgs),
}

#[derive(Subcommand)]
enum InstanceCommand {
    /// Write the lab's certificate of an instance key (the instance.pub an
    /// egress-mirror started with --instance-dir wrote) for the snapshot it
    /// serves; deploy it as instance.cert in that directory.
    Certify(instance::CertifyArgs),
}

#[derive(Subcommand)]
enum SnapshotCommand {
    /// Fetch every file the lockfiles pin, verify each against its hash,
    /// and write a signed snapshot; any mismatch writes nothing (exit 6).
    Build(Box<snapshot::BuildArgs>),
    /// Check a snapshot directory: MANIFEST, SNAPSHOT.json, the signature
    /// and every blob, naming every problem (exit 1).
    Verify(snapshot::VerifyArgs),
    /// Write the public OpenPGP keyring of the key that signs a snapshot's
    /// apt indexes (made from the snapshot signing key), for a sandbox's
    /// apt `signed-by`.
    AptKeyring(snapshot::AptKeyringArgs),
    /// Write one snapshot with a layer's whole view and no chain, signed
    /// anew.
    Flatten(snapshot::FlattenArgs),
    /// List what NEW adds to and removes from OLD (projects, versions,
    /// files), each addition flagged for review (install scripts, .pth
    /// files, sdist-only, native code, recent uploads, similar names,
    /// maintainer changes, major jumps); deterministic Markdown or JSON.
    Diff(snapshot_diff::DiffArgs),
    /// Aggregate egress-mirror misses logs (what sandboxes asked for and
    /// the snapshot lacked) into a universe file for the next layer, or
    /// JSON: how many runs and clients asked for each name, and the
    /// coverage (names served / names asked for).
    Misses(snapshot_misses::MissesArgs),
    /// Push a signed snapshot to an OCI registry as an artifact, one layer
    /// per file; blobs the registry holds are skipped.
    Push(snapshot_oci::PushArgs),
    /// Pull a snapshot artifact into a new DIR: resumable, and DIR appears
    /// only once it verifies against --allowed-signers.
    Pull(snapshot_oci::PullArgs),
}

#[derive(Subcommand)]
enum ReportCommand {
    /// Re-derive every verdict from the recorded exchanges, offline, and say
    /// whether it agrees with the verdicts recorded in the report.
    Verify {
        /// A report JSON file, or a directory of them (as written by --out).
        path: PathBuf,
    },
    /// Re-verify a saved report (as `report verify`), then render it as
    /// HTML, SARIF or text; one that does not verify renders as a "does
    /// not verify" page naming what disagreed, and exits 1.
    Render(verify::RenderArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            if egress_cli::is_help(&e) {
                let _ = e.print();
                return ExitCode::from(exit::PASS);
            }
            egress_cli::say_lines(
                "egress-conformance",
                &[format!("{} (see --help)", egress_cli::usage_line(&e))],
            );
            return ExitCode::from(exit::USAGE);
        }
    };
    let result = match cli.command {
        None => run_builtin::main(cli.format, cli.text, cli.out.as_deref()),
        Some(Command::Check(args)) => check::main(*args),
        Some(Command::Kit(args)) => kit::main(args),
        Some(Command::Report {
            command: ReportCommand::Verify { path },
        }) => verify::main(&path),
        Some(Command::Report {
            command: ReportCommand::Render(args),
        }) => verify::render(args),
        Some(Command::Key {
            command: KeyCommand::Generate(args),
        }) => keygen::generate(args),
        Some(Command::Instance {
            command: InstanceCommand::Certify(args),
        }) => instance::certify(args),
        Some(Command::Snapshot {
            command: SnapshotCommand::Build(args),
        }) => snapshot::build(*args),
        Some(Command::Snapshot {
            command: SnapshotCommand::Verify(args),
        }) => snapshot::verify(args),
        Some(Command::Snapshot {
            command: SnapshotCommand::AptKeyring(args),
        }) => snapshot::apt_keyring(args),
        Some(Command::Snapshot {
            command: SnapshotCommand::Flatten(args),
        }) => snapshot::flatten(args),
        Some(Command::Snapshot {
            command: SnapshotCommand::Diff(args),
        }) => snapshot_diff::diff(args),
        Some(Command::Snapshot {
            command: SnapshotCommand::Misses(args),
        }) => snapshot_misses::misses(args),
        Some(Command::Snapshot {
            command: SnapshotCommand::Push(args),
        }) => snapshot_oci::push(args),
        Some(Command::Snapshot {
            command: SnapshotCommand::Pull(args),
        }) => snapshot_oci::pull(args),
        Some(Command::Testbed(args)) => run_testbed::main(args),
        Some(Command::Canary(args)) => canary::main(args),
        Some(Command::SandboxScan(args)) => sandbox_scan::main(args),
    };
    // A closed pipe on stdout is a normal end; any other failure to write
    // the results is one.
    let result = result.and_then(|code| match output::stdout_error() {
        Some(e) => {
            Err(Failure::internal(format!("cannot write to standard output: {e}")).because(e))
        }
        None => Ok(code),
    });
    match result {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            egress_cli::say_error("egress-conformance", &f);
            ExitCode::from(f.code)
        }
    }
}
