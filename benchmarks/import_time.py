"""Time `import parsimony` in fresh interpreters and list heavy modules it pulls in.

Usage: python benchmarks/import_time.py [--repeat 20]
"""

import argparse
import statistics
import subprocess
import sys

CODE = (
    "import sys, time; t = time.perf_counter(); import parsimony; dt = time.perf_counter() - t; "
    "heavy = [m for m in ('numpy', 'numba', 'pandas', 'sklearn', 'scipy', 'matplotlib', 'juliacall', 'pysr') "
    "if m in sys.modules]; print(dt, ','.join(heavy) or '-')"
)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    times, heavy = [], set()
    for _ in range(args.repeat):
        out = subprocess.run([sys.executable, "-X", "importtime", "-c", CODE], capture_output=True, text=True, check=True)
        dt, mods = out.stdout.split()
        times.append(float(dt))
        heavy.update(m for m in mods.split(",") if m != "-")
    print(f"import parsimony: median {statistics.median(times) * 1e3:.2f} ms, max {max(times) * 1e3:.2f} ms "
          f"over {args.repeat} fresh interpreters")
    print(f"heavy modules loaded at import: {sorted(heavy) or 'none'}")
    full = subprocess.run([sys.executable, "-c", "import time; t=time.perf_counter(); import parsimony; "
                           "parsimony.pinball_loss; print(time.perf_counter()-t)"], capture_output=True, text=True, check=True)
    print(f"import parsimony + first metric access (loads numpy): {float(full.stdout) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
