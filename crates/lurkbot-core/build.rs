//! Packs `src/config_schema.json` with gzip into `OUT_DIR` for `config_schema.rs` to embed
//! (`src/packed.rs`: 37 KB of schema is 10 KB in the binary).

use std::io::Write;

fn main() -> std::io::Result<()> {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/config_schema.json");
    let text = std::fs::read("src/config_schema.json")?;
    let mut packer = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    packer.write_all(&text)?;
    let out = std::env::var_os("OUT_DIR").ok_or_else(|| std::io::Error::other("no OUT_DIR"))?;
    std::fs::write(
        std::path::Path::new(&out).join("config_schema.json.gz"),
        packer.finish()?,
    )
}
