//! The stable error codes of `terminal_exec` and the exit status each maps to (ARCHITECTURE.md §4.3).

use serde::Serialize;

/// One stable error code. Add variants, never rename them: agents and scripts match on the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[non_exhaustive]
pub enum ErrorCode {
    /// The command string breaks a parsing rule (§4.2).
    InvalidCommand,
    /// The first token names no registered command.
    UnknownCommand,
    /// Flags or values are missing, unknown or malformed.
    InvalidArgs,
    /// A write needs `--confirm`.
    ConfirmRequired,
    /// A flag that would carry a secret was given on the command line.
    SensitiveArgv,
    /// A path is absolute, has `..` or a drive letter, or resolves outside the home.
    PathEscapesAgentsRoot,
    /// The target exists and `--overwrite --confirm` was not given.
    RefuseOverwrite,
    /// The command needs `--out`.
    OutRequired,
    /// A grant in `config.toml` is missing, or the path is protected.
    PermissionDenied,
    /// `config.toml` is malformed.
    ConfigInvalid,
    /// The thing asked for does not exist.
    NotFound,
    /// DNS, connection or transport failure.
    NetworkError,
    /// The server answered with an error status.
    HttpError,
    /// The server asked us to slow down.
    RateLimited,
    /// Input data could not be parsed.
    ParseError,
    /// Reading or writing a file failed.
    IoError,
    /// The command did not finish within `timeout_ms`.
    Timeout,
    /// A bug: the command failed in a way it does not describe.
    Internal,
    /// An archive would extract more files or bytes than `--max-files` / `--max-bytes` allow.
    ArchiveTooLarge,
    /// A zip archive is corrupt, truncated, encrypted or uses an unsupported feature.
    ZipError,
    /// A tar archive (or its gz/bz2/xz compression) is corrupt, truncated or unsupported.
    TarError,
    /// A download is larger than the command's `--max-bytes` (nothing was stored).
    ResponseTooLarge,
    /// The thing changed on the server since it was last read (an ETag precondition failed);
    /// nothing was overwritten.
    Conflict,
    /// The server refused the credentials (HTTP 401).
    AuthFailed,
    /// A skill's `secrets/.env` lacks values the command needs (the keys are named, never the
    /// values).
    MissingCredentials,
    /// `IRC_NICK` is longer than 9 characters.
    NickTooLong,
    /// The command needs the gateway's session host (a long-lived connection) and no gateway
    /// runs for this home.
    GatewayRequired,
}

impl ErrorCode {
    /// Every code, in declaration order.
    pub const ALL: &'static [ErrorCode] = &[
        Self::InvalidCommand,
        Self::UnknownCommand,
        Self::InvalidArgs,
        Self::ConfirmRequired,
        Self::SensitiveArgv,
        Self::PathEscapesAgentsRoot,
        Self::RefuseOverwrite,
        Self::OutRequired,
        Self::PermissionDenied,
        Self::ConfigInvalid,
        Self::NotFound,
        Self::NetworkError,
        Self::HttpError,
        Self::RateLimited,
        Self::ParseError,
        Self::IoError,
        Self::Timeout,
        Self::Internal,
        Self::ArchiveTooLarge,
        Self::ZipError,
        Self::TarError,
        Self::ResponseTooLarge,
        Self::Conflict,
        Self::AuthFailed,
        Self::MissingCredentials,
        Self::NickTooLong,
        Self::GatewayRequired,
    ];

    /// The code's text, e.g. `"InvalidArgs"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidCommand => "InvalidCommand",
            Self::UnknownCommand => "UnknownCommand",
            Self::InvalidArgs => "InvalidArgs",
            Self::ConfirmRequired => "ConfirmRequired",
            Self::SensitiveArgv => "SensitiveArgv",
            Self::PathEscapesAgentsRoot => "PathEscapesAgentsRoot",
            Self::RefuseOverwrite => "RefuseOverwrite",
            Self::OutRequired => "OutRequired",
            Self::PermissionDenied => "PermissionDenied",
            Self::ConfigInvalid => "ConfigInvalid",
            Self::NotFound => "NotFound",
            Self::NetworkError => "NetworkError",
            Self::HttpError => "HttpError",
            Self::RateLimited => "RateLimited",
            Self::ParseError => "ParseError",
            Self::IoError => "IoError",
            Self::Timeout => "Timeout",
            Self::Internal => "Internal",
            Self::ArchiveTooLarge => "ArchiveTooLarge",
            Self::ZipError => "ZipError",
            Self::TarError => "TarError",
            Self::ResponseTooLarge => "ResponseTooLarge",
            Self::Conflict => "Conflict",
            Self::AuthFailed => "AuthFailed",
            Self::MissingCredentials => "MissingCredentials",
            Self::NickTooLong => "NickTooLong",
            Self::GatewayRequired => "GatewayRequired",
        }
    }

    /// The process exit status: 2 for refusals of the request itself, 127 for an unknown
    /// command, 124 for a timeout, 1 for failures while doing the work.
    pub fn exit_code(self) -> i32 {
        match self {
            Self::InvalidCommand
            | Self::InvalidArgs
            | Self::ConfirmRequired
            | Self::SensitiveArgv
            | Self::PathEscapesAgentsRoot
            | Self::RefuseOverwrite
            | Self::OutRequired
            | Self::PermissionDenied
            | Self::ConfigInvalid
            | Self::MissingCredentials
            | Self::NickTooLong
            | Self::GatewayRequired => 2,
            Self::UnknownCommand => 127,
            Self::Timeout => 124,
            Self::NotFound
            | Self::NetworkError
            | Self::HttpError
            | Self::RateLimited
            | Self::ParseError
            | Self::IoError
            | Self::Internal
            | Self::ArchiveTooLarge
            | Self::ZipError
            | Self::TarError
            | Self::ResponseTooLarge
            | Self::Conflict
            | Self::AuthFailed => 1,
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_full_list_is_pinned() {
        let pinned: Vec<(&str, i32)> = ErrorCode::ALL
            .iter()
            .map(|c| (c.as_str(), c.exit_code()))
            .collect();
        assert_eq!(
            pinned,
            vec![
                ("InvalidCommand", 2),
                ("UnknownCommand", 127),
                ("InvalidArgs", 2),
                ("ConfirmRequired", 2),
                ("SensitiveArgv", 2),
                ("PathEscapesAgentsRoot", 2),
                ("RefuseOverwrite", 2),
                ("OutRequired", 2),
                ("PermissionDenied", 2),
                ("ConfigInvalid", 2),
                ("NotFound", 1),
                ("NetworkError", 1),
                ("HttpError", 1),
                ("RateLimited", 1),
                ("ParseError", 1),
                ("IoError", 1),
                ("Timeout", 124),
                ("Internal", 1),
                ("ArchiveTooLarge", 1),
                ("ZipError", 1),
                ("TarError", 1),
                ("ResponseTooLarge", 1),
                ("Conflict", 1),
                ("AuthFailed", 1),
                ("MissingCredentials", 2),
                ("NickTooLong", 2),
                ("GatewayRequired", 2),
            ]
        );
        for c in ErrorCode::ALL {
            assert_eq!(
                serde_json::to_value(c).unwrap(),
                serde_json::json!(c.as_str())
            );
        }
    }
}
