# Sourced by the other scripts: make a virtual environment with openheim and its dev tools, once
# per change of pyproject.toml, and put it first on PATH. Needs only Python >= 3.11 and the package
# index. PYTHON picks the interpreter; each picked interpreter gets its own environment
# (.venv-3.13 for PYTHON=python3.13) unless .venv already holds that version.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
works() {
  # pyenv shims exist for every installed version but fail for inactive ones, so run it
  "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1
}
pick_python() {
  if [ -n "${PYTHON:-}" ]; then
    if works "$PYTHON"; then
      echo "$PYTHON"
      return 0
    fi
    echo "PYTHON=$PYTHON is not a working Python 3.11 or newer: point it at one" >&2
    return 1
  fi
  for candidate in python3.13 python3.12 python3.11 python3; do
    if works "$candidate"; then
      echo "$candidate"
      return 0
    fi
  done
  echo "openheim needs Python 3.11 or newer on PATH (or set PYTHON=/path/to/python3.11)" >&2
  return 1
}
minor_version() {
  "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])'
}
python="$(pick_python)"
venv=".venv"
if [ -n "${PYTHON:-}" ] && { [ ! -x .venv/bin/python ] ||
  [ "$(minor_version .venv/bin/python)" != "$(minor_version "$python")" ]; }; then
  venv=".venv-$(minor_version "$python")"
fi
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
stamp="$venv/.openheim-installed"
want="$(cksum < pyproject.toml)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip >&2
  echo "installing openheim and its tools into $venv (the first time for each Python version," \
    "llama.cpp compiles: 7-9 minutes on 2 cores; later installs reuse the built wheel)" >&2
  # GGML_NATIVE=OFF: a cached llama.cpp wheel must run on any x86-64 CPU, not just this one
  CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}" \
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e ".[dev,local,tui,server,postgres]" >&2
  echo "$want" > "$stamp"
fi
export PATH="$root/$venv/bin:$PATH"
