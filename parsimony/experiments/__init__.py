"""SRBench-style experiments: runner, baselines, results store and report."""
