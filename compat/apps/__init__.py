"""absl apps: the console scripts `compat-check`, `compat-audit` and friends."""
