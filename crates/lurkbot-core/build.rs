//! Packs `src/config_schema.json` with gzip into `OUT_DIR` for `config_schema.rs` to embed
//! (`src/packed.rs`: 37 KB of schema is 10 KB in the binary).

use std::io::Write;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/config_schema.json");
    let schema = std::fs::read("src/config_schema.json").expect("src/config_schema.json is read");
    let mut packer = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    packer.write_all(&schema).expect("gzip into memory");
    let packed = packer.finish().expect("gzip into memory");
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(
        std::path::Path::new(&out).join("config_schema.json.gz"),
        packed,
    )
    .expect("OUT_DIR is writable");
}
