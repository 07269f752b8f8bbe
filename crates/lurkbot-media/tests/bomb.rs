//! A decompression bomb costs no memory: a 74 KiB PNG made by Pillow that declares 25,000 ×
//! 25,000 pixels (596 MiB as 8-bit grey) is refused from its header. The allocator of this test
//! binary counts every byte, so the test fails if anything decodes the pixels.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

#[global_allocator]
static ALLOCATOR: cap::Cap<std::alloc::System> = cap::Cap::new(std::alloc::System, usize::MAX);

#[test]
fn a_decompression_bomb_is_refused_without_the_memory_it_claims() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bomb.png");
    lurkbot_test_support::venv::run_python([
        "-c",
        "import sys; from PIL import Image; Image.new('1', (25000, 25000), 0).save(sys.argv[1])",
        path.to_str().unwrap(),
    ]);
    let bomb = std::fs::read(&path).unwrap();
    assert!(bomb.len() < 200_000, "a small file: {} bytes", bomb.len());
    let before = ALLOCATOR.allocated();
    // Anything that tried to hold the pixels would pass this limit and fail the allocation.
    ALLOCATOR.set_limit(before + 64 * 1024 * 1024).unwrap();
    let refused = lurkbot_media::prepare(&bomb);
    assert_eq!(
        refused,
        Err(lurkbot_media::MediaError::TooManyPixels {
            width: 25_000,
            height: 25_000
        })
    );
    let peak = ALLOCATOR.max_allocated();
    ALLOCATOR.set_limit(usize::MAX).unwrap();
    assert!(
        peak < before + 4 * 1024 * 1024,
        "refusing the bomb allocated {} KiB",
        (peak - before) / 1024
    );
}
