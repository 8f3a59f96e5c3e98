"""The benchmarks and GPU-host runs behind docs/benchmarks.md, run from the repository root as
`python -m bench.NAME` (bench/README.md lists them)."""
