//! `zip list|extract|create` (ARCHITECTURE.md §4.5): zip archives without an external program, safe by
//! default (no writes outside `--dest`, no links, bomb limits, staged all-or-nothing extraction).

mod args;
mod create;
mod directory;
mod extract;
mod list;
mod names;
mod reader;

use crate::archive::flags::{CONFIRM, DEST, MAX_BYTES, MAX_FILES, OVERWRITE, SRC};
use crate::listing_flags::{LIST_CONFIRM, LIST_OUT, LIST_OVERWRITE, MAX};
use crate::{Command, CommandSpec, FlagSpec, SubcommandSpec};
use args::{ZipCreateArgs, ZipExtractArgs, ZipListArgs};

const ENCODING: FlagSpec = FlagSpec::value(
    "--encoding",
    "auto|utf-8|cp437|cp932|gbk",
    false,
    "how to decode names not flagged as UTF-8 (default auto: detected per archive)",
);

/// The spec of `zip`.
pub(crate) static SPEC: CommandSpec = CommandSpec {
    name: "zip",
    summary: "list, extract and create zip archives (safe by default)",
    usage: "zip <list|extract|create> [flags]",
    subcommands: &[
        SubcommandSpec {
            name: "list",
            summary: "list the entries of a zip archive",
            usage: "zip list --in <zip_path> [--max <n>] [--out <path>] [--encoding <enc>]",
            flags: &[
                FlagSpec::value(
                    "--in",
                    "zip_path",
                    true,
                    "the archive, relative to the home",
                ),
                MAX,
                LIST_OUT,
                ENCODING,
                LIST_CONFIRM,
                LIST_OVERWRITE,
            ],
            examples: &[
                "zip list --in workspace/docs.zip",
                "zip list --in workspace/big.zip --max 20 --out artifacts/zip/big.json",
            ],
            run: |ctx, parsed| {
                Box::pin(async move { list::run(ctx, ZipListArgs::from_args(&parsed)?).await })
            },
        },
        SubcommandSpec {
            name: "extract",
            summary: "extract a zip archive into a folder",
            usage: "zip extract --in <zip_path> --dest <dir> --confirm [--overwrite] [--max-files <n>] [--max-bytes <n>] [--encoding <enc>]",
            flags: &[
                FlagSpec::value(
                    "--in",
                    "zip_path",
                    true,
                    "the archive, relative to the home",
                ),
                DEST,
                CONFIRM,
                OVERWRITE,
                MAX_FILES,
                MAX_BYTES,
                ENCODING,
            ],
            examples: &[
                "zip extract --in workspace/docs.zip --dest workspace/docs --confirm",
                "zip extract --in workspace/sjis.zip --dest workspace/out --confirm --encoding cp932",
            ],
            run: |ctx, parsed| {
                Box::pin(
                    async move { extract::run(ctx, ZipExtractArgs::from_args(&parsed)?).await },
                )
            },
        },
        SubcommandSpec {
            name: "create",
            summary: "create a zip archive from a file or folder",
            usage: "zip create --src <path> --out <zip_path> --confirm [--overwrite] [--level 0-9]",
            flags: &[
                SRC,
                FlagSpec::value("--out", "zip_path", true, "the archive to write"),
                CONFIRM,
                OVERWRITE,
                FlagSpec::value(
                    "--level",
                    "0-9",
                    false,
                    "compression level: 0 stores, 9 compresses most (default 6)",
                ),
            ],
            examples: &[
                "zip create --src workspace/report --out workspace/report.zip --confirm",
                "zip create --src workspace/photos --out workspace/photos.zip --confirm --level 0",
            ],
            run: |ctx, parsed| {
                Box::pin(async move { create::run(ctx, ZipCreateArgs::from_args(&parsed)?).await })
            },
        },
    ],
    flags: &[],
    examples: &[
        "zip list --in workspace/docs.zip",
        "zip extract --in workspace/docs.zip --dest workspace/docs --confirm",
        "zip create --src workspace/report --out workspace/report.zip --confirm",
    ],
    skill: "archive-zip",
    credentials: &[],
    needs_gateway: false,
};

/// The `zip` command.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ZipCommand;

impl Command for ZipCommand {
    fn spec(&self) -> &'static CommandSpec {
        &SPEC
    }
}
