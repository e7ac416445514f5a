# Kept equal to `[workspace.package] version` in Cargo.toml (tests/test_locator.py checks it).
__version__ = "0.1.0"
