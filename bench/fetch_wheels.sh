#!/usr/bin/env bash
# Fill .whl/ with what the GPU host lacks to run the service and its tests (bench/README.md):
# the wheels of this machine's venv at the versions it pins, built for the host's Python
# (3.12, manylinux x86_64), and Debian 12's bubblewrap .deb. The host brings torch, triton,
# numpy, pyyaml and pyarrow itself.
#   bash bench/fetch_wheels.sh [VENV]   # default: .venv
set -euo pipefail
venv="${1:-.venv}"
# Tools of this machine only, and what the host has already.
skip='^(py-spy|torch|triton|numpy|pyyaml|pyarrow|mypy|mypy-extensions|ruff|playwright|sympy|mpmath|networkx|fsspec|filelock|librt|ast-serialize|pathspec|types-.*|kerneljudge)$'
mkdir -p .whl
"$venv/bin/pip" freeze --exclude-editable | grep '==' | while IFS='=' read -r name _ version; do
  normal=$(echo "$name" | tr '[:upper:]_' '[:lower:]-')
  [[ "$normal" =~ $skip ]] || echo "$name==$version"
done >.whl/requirements.txt
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d .whl -r .whl/requirements.txt
(cd .whl && rm -f bubblewrap_*.deb && apt-get download bubblewrap >/dev/null)
echo "$(ls .whl/*.whl | wc -l) wheels and $(ls .whl/*.deb) in .whl/"
