#!/usr/bin/env python3
"""Compares CLFORMER_GEMM_TUNING settings with gemm_bench, interleaved.

    tools/tuning/gemm_compare.py [SETTING ...] [--bench build/gemm_bench] [--rounds 3]
                                 [--only TEXT] [--quick] [--min-time S]

SETTING is a CLFORMER_GEMM_TUNING value: off (CLBlast's own parameters),
table (clformer's table), search (the table and the per-shape search; its
times are read from the cache directory after the first process, so the
rounds compare the sets it chose), auto (the default: search on GPUs only)
or a parameter file such as the one tools/tuning/tune-clblast.sh writes;
default: off table. A SETTING of the form
VAR=VALUE sets that variable instead: CLFORMER_GEMM=clblast CLFORMER_GEMM=host
compares the two GEMM providers. The SETTING `direct` runs gemm_bench --direct:
cblas_sgemm called without OpenCL, the bar for the host provider
(`direct CLFORMER_GEMM=host`). For every shape, each round runs
one gemm_bench process per setting, in an order rotated every round, so load
that drifts on the machine hits every setting alike. A process reports its
fastest call; the table shows, per setting, the median over rounds of that
figure in GFLOP/s, and its ratio to the first setting.
"""
import argparse
import os
import statistics
import subprocess
import sys


def environment(setting):
    if setting == "direct":
        return "gemm_bench", "--direct"
    var, value = setting.split("=", 1) if "=" in setting else ("CLFORMER_GEMM_TUNING", setting)
    return var, value


def run(bench, setting, name, extra):
    env, flags = dict(os.environ), []
    if setting == "direct":
        flags = ["--direct"]
    else:
        var, value = environment(setting)
        env[var] = value
    out = subprocess.run([bench, "--only", name] + extra + flags, env=env, check=True,
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    raise RuntimeError("gemm_bench printed no line for %r:\n%s" % (name, out))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("settings", nargs="*", default=["off", "table"])
    p.add_argument("--bench", default="build/gemm_bench")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--only", default="", help="the shapes whose name contains this")
    p.add_argument("--quick", action="store_true", help="gemm_bench --quick")
    p.add_argument("--min-time", default="0.3", help="gemm_bench --min-time")
    args = p.parse_args()

    extra = ["--min-time", args.min_time] + (["--quick"] if args.quick else [])
    names = subprocess.run([args.bench, "--list"] + extra[2:], check=True, capture_output=True,
                           text=True).stdout.splitlines()
    names = [n for n in names if args.only in n]
    k = len(args.settings)
    for i, s in enumerate(args.settings):
        print("# [%d] %s=%s" % ((i,) + environment(s)))
    print("%-26s" % "shape (GFLOP/s)" + "".join("%8s" % ("[%d]" % i) for i in range(k)) +
          "".join("%7s" % ("%d/0" % i) for i in range(1, k)))
    ratios = [[] for _ in range(k)]
    for name in names:
        gflops = [[] for _ in range(k)]
        for r in range(args.rounds):
            for j in range(k):
                i = (j + r) % k
                gflops[i].append(run(args.bench, args.settings[i], name, extra))
        med = [statistics.median(g) for g in gflops]
        for i in range(1, k):
            ratios[i].append(med[i] / med[0])
        print("%-26s" % name + "".join("%8.1f" % m for m in med) +
              "".join("%7.2f" % (med[i] / med[0]) for i in range(1, k)))
        sys.stdout.flush()
    if names and k > 1:
        print("%-26s" % "geometric mean of ratios" + " " * 8 * k +
              "".join("%7.2f" % statistics.geometric_mean(ratios[i]) for i in range(1, k)))


if __name__ == "__main__":
    main()
