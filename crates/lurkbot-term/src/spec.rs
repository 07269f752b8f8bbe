//! Static descriptions of commands: the only source for help, usage messages and flag parsing,
//! and (for each subcommand) the function that runs it.

use crate::{CommandCtx, CommandFuture, ParsedArgs};

/// One flag (`--in PATH`), switch (`--confirm`) or positional argument (`<command>`, a name not
/// starting with `-`).
#[derive(Debug, Clone, Copy)]
pub struct FlagSpec {
    /// `--in`, `--confirm`, or a positional name such as `<command>`.
    pub name: &'static str,
    /// Placeholder of the value (`PATH`); `None` for switches.
    pub value: Option<&'static str>,
    /// Whether it must be given.
    pub required: bool,
    /// One line for help.
    pub description: &'static str,
}

impl FlagSpec {
    /// A flag taking a value.
    pub const fn value(
        name: &'static str,
        value: &'static str,
        required: bool,
        description: &'static str,
    ) -> Self {
        Self {
            name,
            value: Some(value),
            required,
            description,
        }
    }

    /// A switch without value.
    pub const fn switch(name: &'static str, description: &'static str) -> Self {
        Self {
            name,
            value: None,
            required: false,
            description,
        }
    }

    /// A positional argument.
    pub const fn positional(name: &'static str, required: bool, description: &'static str) -> Self {
        Self {
            name,
            value: None,
            required,
            description,
        }
    }

    /// Whether this is a positional argument rather than a flag.
    pub fn is_positional(&self) -> bool {
        !self.name.starts_with('-')
    }
}

/// The work of one subcommand: gets the flags already parsed against its [`FlagSpec`]s.
pub(crate) type SubcommandRun = for<'a> fn(&'a CommandCtx<'a>, ParsedArgs) -> CommandFuture<'a>;

/// A subcommand such as `zip list`: its description and the function that runs it, together, so
/// a subcommand cannot be described without being runnable or run without being described.
#[derive(Debug, Clone, Copy)]
pub struct SubcommandSpec {
    /// `list`.
    pub name: &'static str,
    /// One line for help.
    pub summary: &'static str,
    /// Full usage line, e.g. `zip list --in <zip_path> [--max <n>] [--out <path>]`.
    pub usage: &'static str,
    /// Flags and positionals after the subcommand name.
    pub flags: &'static [FlagSpec],
    /// Complete example commands.
    pub examples: &'static [&'static str],
    /// Runs it.
    pub run: SubcommandRun,
}

/// A top-level command.
#[derive(Debug, Clone, Copy)]
pub struct CommandSpec {
    /// Name typed as the first token (lower case).
    pub name: &'static str,
    /// One line for `help`.
    pub summary: &'static str,
    /// Usage line of the command itself.
    pub usage: &'static str,
    /// Subcommands (empty for a command that takes flags directly).
    pub subcommands: &'static [SubcommandSpec],
    /// Flags of a command without subcommands.
    pub flags: &'static [FlagSpec],
    /// Complete example commands.
    pub examples: &'static [&'static str],
    /// The bundled skill documenting the command (its `secrets/.env` holds credentials).
    pub skill: &'static str,
    /// The variables the skill's `secrets/.env` may hold, each with what it is; `init` writes
    /// them to `secrets/.env.example`.
    pub credentials: &'static [(&'static str, &'static str)],
    /// The command keeps state between runs in the gateway's session host (`irc`): `lurkbot
    /// exec` sends it to this home's running gateway.
    pub needs_gateway: bool,
}

impl CommandSpec {
    /// The subcommand named `name`, if any.
    pub fn subcommand(&self, name: &str) -> Option<&'static SubcommandSpec> {
        self.subcommands.iter().find(|s| s.name == name)
    }
}
