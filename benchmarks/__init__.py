"""Benchmark commands (not tests): python -m benchmarks.bench_<name>."""
