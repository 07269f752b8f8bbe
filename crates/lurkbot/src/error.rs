//! How a `lurkbot` invocation fails: one [`CliError`], printed in one place (`main`) with the
//! subcommand's name and the hint, and turned into the exit status by [`CliError::code`]:
//! 2 when the request itself is wrong, 1 when the work failed, 130 when interrupted, or the
//! status a subcommand already reported (an envelope's `exit_code`, doctor's failed checks).

use std::fmt;

/// A failed invocation.
#[derive(Debug)]
pub(crate) enum CliError {
    /// The request is wrong (a flag, a setting, a refused call): exit 2.
    Usage {
        /// The subcommand (`agent`, `gateway`, …); empty for `lurkbot` itself.
        command: &'static str,
        /// What is wrong and what to do.
        message: String,
    },
    /// The work failed (not found, unreachable, a model error): exit 1.
    Failed {
        /// The subcommand.
        command: &'static str,
        /// What went wrong and what to do.
        message: String,
    },
    /// The human interrupted the run (Ctrl-C): exit 130.
    Interrupted {
        /// The subcommand.
        command: &'static str,
        /// What was kept.
        message: String,
    },
    /// A status already reported to the user: exit with it, print nothing more.
    Status(u8),
    /// Anything else (I/O, a damaged file): exit 1 with the error chain.
    Other(anyhow::Error),
}

impl CliError {
    /// A wrong request.
    pub(crate) fn usage(command: &'static str, message: impl Into<String>) -> Self {
        Self::Usage {
            command,
            message: message.into(),
        }
    }

    /// A failure while working.
    pub(crate) fn failed(command: &'static str, message: impl Into<String>) -> Self {
        Self::Failed {
            command,
            message: message.into(),
        }
    }

    /// An interruption.
    pub(crate) fn interrupted(command: &'static str, message: impl Into<String>) -> Self {
        Self::Interrupted {
            command,
            message: message.into(),
        }
    }

    /// The exit status.
    pub(crate) fn code(&self) -> u8 {
        match self {
            Self::Usage { .. } => 2,
            Self::Failed { .. } | Self::Other(_) => 1,
            Self::Interrupted { .. } => 130,
            Self::Status(code) => *code,
        }
    }

    /// Prints the error on stderr (nothing for [`CliError::Status`]).
    pub(crate) fn report(&self) {
        match self {
            Self::Status(_) => {}
            // An interruption cuts a line short: start a fresh one.
            Self::Interrupted { .. } => eprintln!("\n{self}"),
            _ => eprintln!("{self}"),
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (command, message) = match self {
            Self::Usage { command, message }
            | Self::Failed { command, message }
            | Self::Interrupted { command, message } => (*command, message.as_str()),
            Self::Status(code) => return write!(f, "exit status {code}"),
            Self::Other(error) => return write!(f, "lurkbot: {error:#}"),
        };
        if command.is_empty() {
            write!(f, "lurkbot: {message}")
        } else {
            write!(f, "lurkbot {command}: {message}")
        }
    }
}

/// Any other error is unexpected: exit 1 with its chain.
impl<E: Into<anyhow::Error>> From<E> for CliError {
    fn from(error: E) -> Self {
        Self::Other(error.into())
    }
}

/// The result of a subcommand.
pub(crate) type CliResult = Result<(), CliError>;

/// `Ok` for status 0, else the status to exit with (already reported).
pub(crate) fn status(code: u8) -> CliResult {
    if code == 0 {
        Ok(())
    } else {
        Err(CliError::Status(code))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_messages() {
        let e = CliError::usage("gateway", "'x' is not an IP address to bind");
        assert_eq!(e.code(), 2);
        assert_eq!(
            e.to_string(),
            "lurkbot gateway: 'x' is not an IP address to bind"
        );
        assert_eq!(
            CliError::failed("", "not set").to_string(),
            "lurkbot: not set"
        );
        assert_eq!(CliError::interrupted("agent", "cancelled").code(), 130);
        assert_eq!(status(0).map_err(|e| e.code()), Ok(()));
        assert_eq!(status(124).map_err(|e| e.code()), Err(124));
        let io = CliError::from(std::io::Error::other("disk full"));
        assert_eq!(
            (io.code(), io.to_string()),
            (1, "lurkbot: disk full".to_string())
        );
    }
}
