//! Built-in commands, one folder each: `mod.rs` holds the spec, `run.rs` the work.

pub mod help;
