//! Built-in commands, one folder each: `mod.rs` holds the spec, the other files the work.

pub(crate) mod cal;
pub(crate) mod help;
pub(crate) mod irc;
pub(crate) mod rss;
pub(crate) mod tar;
pub(crate) mod zip;
