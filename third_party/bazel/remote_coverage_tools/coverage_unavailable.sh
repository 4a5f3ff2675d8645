#!/bin/sh
echo "bazel coverage is not set up for gradcompat's offline Bazel (tools/bazel_test.sh); measure coverage with pytest." >&2
exit 1
