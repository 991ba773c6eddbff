#!/usr/bin/env python3
"""Fails when `pip install ./crates/nmt-py` would rebuild the dependency tree CI has built.

Cargo turns on, for each dependency, only the features that the packages it builds ask for.
CI builds the workspace's tests (`cargo test --release --workspace`), then the Python wheel,
which maturin builds as the package nmt-py alone: every shared dependency whose features
differ between the two builds is built again, with everything above it (candle, the gemm
crates, ...): the step took 533 s in a run of .ci/run on the 2-core build machine (other builds
beside it), and 150 s once crates/nmt-py/Cargo.toml pinned the
missing features ("Feature pins"); this script compares `cargo tree -e features` of the two
builds and names each dependency whose features differ, so that a dependency update that
changes them is caught here, by name, not by a slower CI. pyo3 itself is left out: maturin
switches on its `extension-module` feature, so it and nmt-py are always built again.

    python3 scripts/check-features.py
"""
import collections
import subprocess
import sys


def features(args):
    # "{p}|{f}": a package (name, version, and a path for workspace members) and its features;
    # `-e features` also prints `name feature "x"` edge lines, which have no "|".
    out = subprocess.run(["cargo", "tree", "--prefix", "none", "-e", "features", "-f", "{p}|{f}", *args],
                         check=True, capture_output=True, text=True).stdout
    found = collections.defaultdict(set)
    for line in out.splitlines():
        if "|" not in line:
            continue
        package, feats = line.split("|", 1)
        found[package.strip()] |= {f for f in feats.replace("(*)", "").strip().split(",") if f}
    return found


def main():
    workspace = features(["--workspace"])
    wheel = features(["-p", "nmt-py", "-e", "normal,build"])
    drift = [(name, sorted(workspace[name] - feats), sorted(feats - workspace[name]))
             for name, feats in sorted(wheel.items())
             if name in workspace and workspace[name] != feats and not name.startswith("pyo3")]
    if not drift:
        print("features ok: the Python wheel's dependencies have the workspace build's features")
        return 0
    print("FEATURE DRIFT: the Python wheel (nmt-py alone) would rebuild these dependencies, and all above them;"
          " pin the missing features in crates/nmt-py/Cargo.toml (\"Feature pins\"):", file=sys.stderr)
    for name, missing, extra in drift:
        print(f"  {name}: workspace-only {missing}, wheel-only {extra}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
