//! The default registry: only a list of the built-in commands.

use crate::Registry;
use crate::commands::cal::CalCommand;
use crate::commands::help::HelpCommand;
use crate::commands::irc::IrcCommand;
use crate::commands::rss::RssCommand;
use crate::commands::tar::TarCommand;
use crate::commands::zip::ZipCommand;

/// Every built-in command, in the order `help` lists them.
pub fn default_registry() -> Registry {
    Registry::new()
        .with(HelpCommand)
        .with(ZipCommand)
        .with(TarCommand)
        .with(RssCommand)
        .with(CalCommand)
        .with(IrcCommand)
}
