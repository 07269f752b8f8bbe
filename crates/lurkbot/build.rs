//! Release builds link with packed relative relocations (`-z pack-relative-relocs`, DT_RELR;
//! GNU ld 2.38+, glibc 2.36+ — Debian 12 has both): the table of relocations the loader applies
//! at start shrinks from 24 bytes per pointer to a bitmap, 0.76 MiB less binary and about
//! 0.5 MB less idle RSS (ARCHITECTURE.md §9). Only the final link of the binary changes, so no
//! dependency is rebuilt for it.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=LURKBOT_NO_RELR");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if release && linux && std::env::var_os("LURKBOT_NO_RELR").is_none() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
