//! Built-in commands, one folder each: `mod.rs` holds the spec, the other files the work.

pub mod cal;
pub mod help;
pub mod rss;
pub mod tar;
pub mod zip;
