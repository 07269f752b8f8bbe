//! `tar list|extract|create` (ARCHITECTURE.md §4.5): tar, tar.gz, tar.bz2 and tar.xz without an external
//! program, safe by default (no writes outside `--dest`, links never created, bomb limits,
//! staged all-or-nothing extraction).

mod args;
mod bz2_writer;
mod create;
mod extract;
mod format;
mod list;
mod xz_writer;

use crate::archive::flags::{CONFIRM, DEST, MAX_BYTES, MAX_FILES, OVERWRITE, SRC};
use crate::listing_flags::{LIST_CONFIRM, LIST_OUT, LIST_OVERWRITE, MAX};
use crate::{Command, CommandSpec, FlagSpec, SubcommandSpec};
use args::{TarCreateArgs, TarExtractArgs, TarListArgs};

const FORMAT_READ: FlagSpec = FlagSpec::value(
    "--format",
    "tar|tar.gz|tgz|tar.bz2|tbz2|tar.xz|txz",
    false,
    "expected format (default: detected from the content)",
);

/// The spec of `tar`.
pub(crate) static SPEC: CommandSpec = CommandSpec {
    name: "tar",
    summary: "list, extract and create tar archives (.tar .tar.gz .tar.bz2 .tar.xz)",
    usage: "tar <list|extract|create> [flags]",
    subcommands: &[
        SubcommandSpec {
            name: "list",
            summary: "list the entries of a tar archive",
            usage: "tar list --in <tar_path> [--format <fmt>] [--max <n>] [--out <path>]",
            flags: &[
                FlagSpec::value(
                    "--in",
                    "tar_path",
                    true,
                    "the archive, relative to the home",
                ),
                FORMAT_READ,
                MAX,
                LIST_OUT,
                LIST_CONFIRM,
                LIST_OVERWRITE,
            ],
            examples: &[
                "tar list --in workspace/backup.tar.gz",
                "tar list --in workspace/big.tar.xz --max 20 --out artifacts/tar/big.json",
            ],
            run: |ctx, parsed| {
                Box::pin(async move { list::run(ctx, TarListArgs::from_args(&parsed)?).await })
            },
        },
        SubcommandSpec {
            name: "extract",
            summary: "extract a tar archive into a folder (links are never created)",
            usage: "tar extract --in <tar_path> --dest <dir> --confirm [--format <fmt>] [--overwrite] [--max-files <n>] [--max-bytes <n>] [--no-symlinks]",
            flags: &[
                FlagSpec::value(
                    "--in",
                    "tar_path",
                    true,
                    "the archive, relative to the home",
                ),
                DEST,
                CONFIRM,
                FORMAT_READ,
                OVERWRITE,
                MAX_FILES,
                MAX_BYTES,
                FlagSpec::switch(
                    "--no-symlinks",
                    "accepted for compatibility with the original command specification: links are never created anyway",
                ),
            ],
            examples: &[
                "tar extract --in workspace/backup.tar.gz --dest workspace/restore --confirm",
                "tar extract --in workspace/src.tar.xz --dest workspace/src --confirm --max-bytes 2147483648",
            ],
            run: |ctx, parsed| {
                Box::pin(
                    async move { extract::run(ctx, TarExtractArgs::from_args(&parsed)?).await },
                )
            },
        },
        SubcommandSpec {
            name: "create",
            summary: "create a tar archive from a file or folder",
            usage: "tar create --src <path> --out <tar_path> --confirm [--format <fmt>] [--overwrite]",
            flags: &[
                SRC,
                FlagSpec::value("--out", "tar_path", true, "the archive to write"),
                CONFIRM,
                FlagSpec::value(
                    "--format",
                    "tar|tar.gz|tgz|tar.bz2|tbz2|tar.xz|txz",
                    false,
                    "format (default: from the --out name)",
                ),
                OVERWRITE,
            ],
            examples: &[
                "tar create --src workspace/project --out workspace/project.tar.gz --confirm",
                "tar create --src workspace/logs --out workspace/logs.bin --format tar.xz --confirm",
            ],
            run: |ctx, parsed| {
                Box::pin(async move { create::run(ctx, TarCreateArgs::from_args(&parsed)?).await })
            },
        },
    ],
    flags: &[],
    examples: &[
        "tar list --in workspace/backup.tar.gz",
        "tar extract --in workspace/backup.tar.gz --dest workspace/restore --confirm",
        "tar create --src workspace/project --out workspace/project.tar.gz --confirm",
    ],
    skill: "archive-tar",
    credentials: &[],
    needs_gateway: false,
};

/// The `tar` command.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TarCommand;

impl Command for TarCommand {
    fn spec(&self) -> &'static CommandSpec {
        &SPEC
    }
}

/// The optional `--format`.
fn requested_format(raw: Option<&str>) -> Result<Option<format::TarFormat>, crate::CommandError> {
    raw.map(format::TarFormat::parse).transpose()
}

/// A `TarError` for a failure while reading the stream.
fn tar_error(shown: &str, e: &std::io::Error) -> crate::CommandError {
    crate::CommandError::new(
        crate::ErrorCode::TarError,
        format!("cannot read '{shown}' as a tar archive: {e}"),
    )
    .with_hint("the archive is corrupt, truncated or not a tar file (see --format)")
}
