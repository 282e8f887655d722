"""Plug-in modules of the tests: methods, builders and benchmarks defined outside the package."""
