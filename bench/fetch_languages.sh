#!/usr/bin/env bash
# The optional kernel languages for the GPU host (bench/README.md), beside .whl/:
# Helion (its 1.4.0 release, the one that imports on the host's torch 2.11) and filecheck
# as wheels in .whl/, and CuTe DSL's wheels (nvidia-cutlass-dsl[cu13]) as one .tar.xz of
# their files in .cute/, cut into two pieces: at 66 MB it exceeds what one device call
# carries beside the tree, so the first piece travels in a call of its own and waits on the
# host (bench/gpu.sh: CUTE_PARTS).
#   bash bench/fetch_languages.sh
set -euo pipefail
CUTE_VERSION=4.8.1
flags=(--no-deps --only-binary=:all: --python-version 3.12 --implementation cp
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
mkdir -p .whl .cute
python3 -m pip download -q "${flags[@]}" -d .whl helion==1.4.0 filecheck
if [ ! -f .cute/cute.tar.xz ]; then
  scratch=$(mktemp -d)
  for dist in nvidia-cutlass-dsl nvidia-cutlass-dsl-libs-base nvidia-cutlass-dsl-libs-core \
    nvidia-cutlass-dsl-libs-cu13; do
    python3 -m pip download -q "${flags[@]}" -d "$scratch/wheels" "$dist==$CUTE_VERSION"
  done
  mkdir "$scratch/tree"
  for wheel in "$scratch"/wheels/*.whl; do unzip -q -o "$wheel" -d "$scratch/tree"; done
  tar -C "$scratch/tree" -cf - . | xz -9 -T0 >.cute/cute.tar.xz
  rm -rf "$scratch"
fi
rm -f .cute/part.*
split -b 55M -a 1 .cute/cute.tar.xz .cute/part.
ls -l .whl/helion-* .whl/filecheck-* .cute/part.*
