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

/// Runs the venv's `python` with `args` and returns what it printed; fails with its stderr
/// when it does not exit 0.
pub fn run_python<I, S>(args: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let out = std::process::Command::new(test_python())
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
