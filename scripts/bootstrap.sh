# Sourced by the other scripts: make .venv with openheim and its dev tools, once per change of
# pyproject.toml. Needs only Python >= 3.11 and the package index.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
pick_python() {
  for candidate in "${PYTHON:-}" python3.13 python3.12 python3.11 python3; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1 &&
      "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      echo "$candidate"
      return 0
    fi
  done
  echo "openheim needs Python 3.11 or newer on PATH (or set PYTHON=/path/to/python3.11)" >&2
  return 1
}
if [ ! -x .venv/bin/python ]; then
  "$(pick_python)" -m venv .venv
fi
stamp=".venv/.openheim-installed"
want="$(cat pyproject.toml | cksum)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip >&2
  echo "installing openheim and its tools into .venv (the first time, llama.cpp compiles:" \
    "7-9 minutes on 2 cores; later installs reuse the built wheel)" >&2
  # GGML_NATIVE=OFF: a cached llama.cpp wheel must run on any x86-64 CPU, not just this one
  CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}" \
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[dev,local]" >&2
  echo "$want" > "$stamp"
fi
export PATH="$root/.venv/bin:$PATH"
