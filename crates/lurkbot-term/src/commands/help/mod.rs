//! `help`: lists every registered command, or shows one command's help.

mod run;

use crate::{Command, CommandCtx, CommandFuture, CommandSpec, FlagSpec};

/// The spec of `help`.
pub(crate) static SPEC: CommandSpec = CommandSpec {
    name: "help",
    summary: "list the available commands, or show one command's usage",
    usage: "help [<command>] [--out <path>] [--confirm] [--overwrite]",
    subcommands: &[],
    flags: &[
        FlagSpec::positional(
            "<command>",
            false,
            "a command to show the usage of (same as '<command> --help')",
        ),
        FlagSpec::value(
            "--out",
            "path",
            false,
            "also write the full listing with every usage as JSON to this home-relative file",
        ),
        FlagSpec::switch(
            "--confirm",
            "with --overwrite: allow replacing an existing file outside artifacts/",
        ),
        FlagSpec::switch(
            "--overwrite",
            "replace an existing --out file outside artifacts/ (needs --confirm)",
        ),
    ],
    examples: &[
        "help",
        "help zip",
        "help --out artifacts/help/commands.json",
    ],
    skill: "terminal-exec",
    credentials: &[],
    needs_gateway: false,
};

/// The `help` command.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct HelpCommand;

impl Command for HelpCommand {
    fn spec(&self) -> &'static CommandSpec {
        &SPEC
    }

    fn run<'a>(&'a self, ctx: &'a CommandCtx<'a>, args: &'a [String]) -> CommandFuture<'a> {
        Box::pin(async move { run::run(ctx, args) })
    }
}
