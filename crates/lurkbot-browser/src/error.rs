//! What can go wrong driving the browser, each with a stable code the tool shows the model.

/// A browser failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BrowserError {
    /// Chromium is not installed, or would not start.
    #[error("{0}")]
    Unavailable(String),
    /// The DevTools connection broke (Chromium exited or crashed).
    #[error("Chromium stopped answering: {0}")]
    Closed(String),
    /// Chromium answered a command with an error.
    #[error("{method}: {message}")]
    Protocol {
        /// The CDP method.
        method: String,
        /// Chromium's message.
        message: String,
    },
    /// Chromium did not answer in time.
    #[error("{0} did not finish in time")]
    Timeout(String),
    /// A ref that is not on the page any more.
    #[error(
        "{0} is not on the page any more (the page changed or navigated); take a new snapshot and use its refs"
    )]
    StaleRef(String),
    /// Arguments the action cannot use.
    #[error("{0}")]
    InvalidArgs(String),
    /// No such tab.
    #[error("no tab {0}; the 'tabs' action lists them")]
    NoTab(String),
    /// A download was larger than allowed.
    #[error("{0}")]
    TooLarge(String),
    /// Local I/O (the profile, a download).
    #[error("{0}")]
    Io(String),
    /// A URL the network policy refuses to the browser (its scheme: `file:`, `javascript:`…).
    #[error("{0}")]
    Refused(String),
}

impl BrowserError {
    /// The stable code shown before the message.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Unavailable(_) => "BrowserUnavailable",
            Self::Closed(_) => "BrowserClosed",
            Self::Protocol { .. } => "BrowserError",
            Self::Timeout(_) => "Timeout",
            Self::StaleRef(_) => "StaleRef",
            Self::InvalidArgs(_) => "InvalidArgs",
            Self::NoTab(_) => "NoSuchTab",
            Self::TooLarge(_) => "DownloadTooLarge",
            Self::Io(_) => "IoError",
            Self::Refused(_) => "PermissionDenied",
        }
    }
}

impl From<std::io::Error> for BrowserError {
    fn from(e: std::io::Error) -> Self {
        Self::Io(e.to_string())
    }
}
