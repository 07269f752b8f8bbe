//! Release builds on Linux link with packed relative relocations (`-z pack-relative-relocs`,
//! DT_RELR; GNU ld 2.38+, glibc 2.36+ — Debian 12 has both): the table of relocations the
//! loader applies at start shrinks from 24 bytes per pointer to a bitmap, 0.76 MiB less binary
//! and about 0.5 MB less idle RSS. On x86_64, where rustc links with its own LLD, identical
//! functions are also folded into one (`--icf=all`; Rust gives no function two addresses it
//! relies on): 0.12 MiB less binary; and functions and read-only data are laid out in the
//! order of `hot-symbols.txt` — the functions the gateway runs from its start to idle, recorded
//! by `scripts/hot-symbols.sh`, then the constants they use (`scripts/hot-data.py`; their
//! `.Lanon.*` names are kept by `-save-temp-labels` in `.cargo/config.toml`) — so they share
//! pages: an idle gateway holds 3.1 MB of the binary's pages (7.4–7.6 MB RSS in all, 17.6 with
//! a stale list: ARCHITECTURE.md §9; `scripts/hot-symbols.sh --check` says whether it is). Only the final link of the binary changes, so no
//! dependency is rebuilt for any of them. `LURKBOT_NO_RELR`, `LURKBOT_NO_ICF` and
//! `LURKBOT_NO_ORDER` turn them off (an older linker).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=LURKBOT_NO_RELR");
    println!("cargo:rerun-if-env-changed=LURKBOT_NO_ICF");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    let x86_64 = std::env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|a| a == "x86_64");
    if release && linux && std::env::var_os("LURKBOT_NO_RELR").is_none() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    if release && linux && x86_64 && std::env::var_os("LURKBOT_NO_ICF").is_none() {
        println!("cargo:rustc-link-arg-bins=-Wl,--icf=all");
    }
    println!("cargo:rerun-if-changed=hot-symbols.txt");
    println!("cargo:rerun-if-env-changed=LURKBOT_NO_ORDER");
    if release && linux && x86_64 && std::env::var_os("LURKBOT_NO_ORDER").is_none() {
        let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
        let file = std::path::Path::new(&manifest).join("hot-symbols.txt");
        if file.is_file() {
            println!(
                "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
                file.display()
            );
            println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
        }
    }
}
