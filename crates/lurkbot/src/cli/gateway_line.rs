//! Parsing the command line, with a short way for `lurkbot gateway`.
//!
//! clap's derived parser builds every subcommand — thirty-odd, with their flags and help
//! texts — before it looks at the line. For the gateway, the one command that stays running,
//! that code and the pages of help text it copies stay resident for the process's life
//! (ARCHITECTURE.md §9, idle RSS). So a line that names `gateway` is first parsed against a
//! command holding only the global options and `gateway` (built from the same definitions);
//! anything that does not parse there — help, a version flag, a typo, another command that
//! happens to take the word `gateway` as a value — goes to the full parser, which answers it
//! exactly as before.

use std::ffi::OsString;

use clap::{Args, Command, FromArgMatches, Parser};

use super::gateway::GatewayArgs;
use super::{Cli, Globals, Sub};

/// Parses the process's command line (exits with clap's message and status on a bad one).
pub(crate) fn parse() -> Cli {
    let args: Vec<OsString> = std::env::args_os().collect();
    gateway_only(&args).unwrap_or_else(|| Cli::parse_from(args))
}

/// The line parsed as `lurkbot [--home DIR] gateway …` against a command that knows nothing
/// else; `None` when it is not such a line or does not parse as one.
fn gateway_only(args: &[OsString]) -> Option<Cli> {
    if !args.iter().skip(1).any(|a| a == "gateway") {
        return None;
    }
    let command = Globals::augment_args(Command::new("lurkbot"))
        .subcommand(GatewayArgs::augment_args(Command::new("gateway")));
    let mut matches = command.try_get_matches_from(args).ok()?;
    let globals = Globals::from_arg_matches_mut(&mut matches).ok()?;
    // `gateway` is the only subcommand there is; without one, the full parser answers.
    let (_, mut sub) = matches.remove_subcommand()?;
    let gateway = GatewayArgs::from_arg_matches_mut(&mut sub).ok()?;
    Some(Cli {
        globals,
        command: Sub::Gateway(gateway),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    /// What the short parse gives must be what the full parser gives, field for field.
    #[test]
    fn a_gateway_line_parses_as_the_full_parser_parses_it() {
        let lines: &[&[&str]] = &[
            &["lurkbot", "gateway"],
            &["lurkbot", "gateway", "--port", "0"],
            &[
                "lurkbot",
                "--home",
                "/h",
                "gateway",
                "--bind",
                "127.0.0.1",
                "--port",
                "8080",
            ],
            &["lurkbot", "gateway", "--home", "/h"],
            &["lurkbot", "--home=/h", "gateway", "--port=9"],
            &["lurkbot", "gateway", "status"],
            &["lurkbot", "gateway", "install"],
            &["lurkbot", "--home", "/h", "gateway", "uninstall"],
        ];
        for words in lines {
            let short = gateway_only(&line(words))
                .unwrap_or_else(|| panic!("{words:?} was not parsed the short way"));
            let full = Cli::try_parse_from(line(words)).expect("the full parser takes it");
            assert_eq!(format!("{short:?}"), format!("{full:?}"), "{words:?}");
        }
    }

    /// Help, versions, mistakes and other commands are the full parser's, with its messages.
    #[test]
    fn anything_else_is_left_to_the_full_parser() {
        let lines: &[&[&str]] = &[
            &["lurkbot", "gateway", "--help"],
            &["lurkbot", "gateway", "-h"],
            &["lurkbot", "help", "gateway"],
            &["lurkbot", "--version", "gateway"],
            &["lurkbot", "gateway", "--port", "not-a-port"],
            &["lurkbot", "gateway", "--bogus"],
            &["lurkbot", "gateway", "--port", "1", "install"],
            &["lurkbot", "status"],
            &["lurkbot", "agent", "-m", "gateway"],
            &["lurkbot"],
        ];
        for words in lines {
            assert!(gateway_only(&line(words)).is_none(), "{words:?}");
        }
    }
}
