#!/usr/bin/env bash
# Runs `bazel test //...` offline with the active venv's Python; installs Bazel from apt if missing.
#
# usage: tools/bazel_test.sh [BAZEL_TEST_ARGS...]    e.g. tools/bazel_test.sh //:tests/test_spec
# The interpreter is $GRADCOMPAT_PYTHON, else $VIRTUAL_ENV/bin/python3, else `python3` on PATH; it must
# have the test dependencies installed (pip install -e '.[test]').
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Debian's Bazel 4.2.3 and the JDK it runs on. The repositories Bazel would download live in third_party/bazel.
if ! command -v bazel >/dev/null 2>&1; then
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then sudo=(sudo); fi
  echo "bazel_test.sh: installing bazel-bootstrap from apt" >&2
  apt_log=$(mktemp)
  if ! { "${sudo[@]}" apt-get update -qq &&
         "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
           apt-get install -y -qq --no-install-recommends bazel-bootstrap; } >"$apt_log" 2>&1; then
    cat "$apt_log" >&2
    echo "bazel_test.sh: could not install bazel-bootstrap (Debian's Bazel 4.2.3) with apt" >&2
    exit 2
  fi
  rm -f "$apt_log"
fi

if [[ -n ${GRADCOMPAT_PYTHON:-} ]]; then
  python=$GRADCOMPAT_PYTHON
elif [[ -n ${VIRTUAL_ENV:-} ]]; then
  python=$VIRTUAL_ENV/bin/python3
else
  python=$(command -v python3) || { echo "bazel_test.sh: no python3 on PATH; activate the venv" >&2; exit 2; }
fi

status=0
bazel test //... \
  --repo_env=GRADCOMPAT_PYTHON="$python" \
  --jobs=2 \
  --local_test_jobs=2 \
  --test_output=errors \
  "$@" || status=$?

# In CI nothing may outlive the run; a developer keeps the warm server (bazel shutdown stops it).
if [[ -n ${CI:-} ]]; then
  bazel shutdown >/dev/null 2>&1 || true
fi
exit "$status"
