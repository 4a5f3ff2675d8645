"""The check_matrix benchmark's baseline: the catalogue's gradients written as plain user code, no harness."""
