//! The Python of the test venv (made by scripts/test.sh, which exports LURKBOT_TEST_VENV):
//! Radicale, vobject and the openai package.

/// The venv's `python`; fails with what to run when it is missing.
pub fn test_python() -> std::path::PathBuf {
    let venv = std::env::var_os("LURKBOT_TEST_VENV")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::home_dir().map(|h| h.join(".cache/lurkbot-test/venv")))
        .unwrap();
    let python = venv.join("bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/test.sh, which creates the test venv (Radicale, vobject, openai)",
        python.display()
    );
    python
}
