"""The migration guide's facts, tables and example outputs, each computed from running TensorFlow."""
