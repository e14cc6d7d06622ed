#!/usr/bin/python3
"""The README's speed section from one sitting: clformer against itself, PyTorch and tinygrad.

Runs, in this order and on an otherwise idle machine:
  1. build/fma_peak: this machine's fp32 peak (the 100% of "% of peak");
  2. per preset: `clformer bench --json` with a cold kernel cache (fresh CLFORMER_CACHE_DIR
     and POCL_CACHE_DIR: the first-step time a fresh machine sees), then warm; with
     --before OLD_BINARY the old build runs too, alternating with the new one so both
     see the same machine;
  3. per preset: tools/reference/bench_torch.py (PyTorch on the CPU; it reports the BLAS
     it loaded) and, with --tinygrad, tools/reference/bench_tinygrad.py on the same
     OpenCL device, for the presets --tinygrad names.
and prints Markdown tables (main figures, per-family roofline) plus every raw result as
JSON in --out DIR. It only reads what the tools print; nothing here is a clformer test.

  tools/reference/speed_table.py --clformer build/clformer --before /tmp/old/clformer \\
      --torch --tinygrad tiny --out /tmp/speed
"""

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPS = {"tiny": (10, 3), "small": (5, 2), "base": (3, 1)}  # timed steps, warm-up steps


def run(cmd, env=None, timeout=1800):
    full_env = dict(os.environ, **(env or {}))
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"{' '.join(cmd)}: {e}"
    if p.returncode != 0:
        tail = " | ".join((p.stderr or p.stdout).strip().splitlines()[-3:])
        return None, f"{' '.join(cmd)} exited {p.returncode}: {tail}"
    return p.stdout, None


def last_json(text):
    """The JSON object a tool printed last (pretty-printed or on one line)."""
    start = text.rfind("\n{")
    for cut in ([start + 1] if start >= 0 else []) + [text.find("{")]:
        if cut >= 0:
            try:
                return json.loads(text[cut:])
            except ValueError:
                pass
    return None


def bench(binary, config, cold, args):
    steps, warmup = REPS[config]
    cmd = [binary, "bench", "--config", config, "--batch", str(args.batch), "--len",
           str(args.len), "--steps", str(steps), "--warmup", str(warmup), "--json"]
    env = {"CLFORMER_DEVICE": args.device}
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as pocl:
        if cold:
            env.update(CLFORMER_CACHE_DIR=cache, POCL_CACHE_DIR=pocl)
        out, err = run(cmd, env)
    return {"error": err} if err else last_json(out) or {"error": "no JSON printed"}


def peer(script, config, args, env=None, timeout=3600, reps=None):
    steps, warmup = reps or REPS[config]
    cmd = ["/usr/bin/python3", os.path.join(HERE, script), "--config", config, "--batch",
           str(args.batch), "--len", str(args.len), "--steps", str(steps), "--warmup",
           str(max(warmup, 2))]
    out, err = run(cmd, env, timeout)
    return {"error": err} if err else last_json(out) or {"error": "no JSON printed"}


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        model = ""
    return f"{os.cpu_count()} cores of {model or platform.processor() or 'an unknown CPU'}"


def fmt(x, spec=",.0f"):
    return format(x, spec) if isinstance(x, (int, float)) else "n/a"


def ratio(a, b):
    return f"{a / b:.2f}x" if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b else "n/a"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clformer", default="build/clformer")
    p.add_argument("--before", metavar="BINARY", help="an older clformer to compare with")
    p.add_argument("--fma-peak", default="build/fma_peak")
    p.add_argument("--configs", default="tiny,small,base")
    p.add_argument("--device", default=os.environ.get("CLFORMER_DEVICE", "pocl:pthread"))
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--len", type=int, default=32)
    p.add_argument("--torch", action="store_true", help="run bench_torch.py too")
    p.add_argument("--tinygrad", metavar="CONFIGS", default="",
                   help="run bench_tinygrad.py (DEV=CL) for these presets too, e.g. tiny: its "
                        "kernels run at a few GFLOP/s on PoCL, so small and base take hours")
    p.add_argument("--out", default="speed-results")
    args = p.parse_args()
    configs = args.configs.split(",")
    if any(c not in REPS for c in configs):
        p.error(f"--configs takes {','.join(REPS)}")
    os.makedirs(args.out, exist_ok=True)

    results = {"date": datetime.date.today().isoformat(), "cpu": cpu_name(),
               "device": args.device, "batch": args.batch, "len": args.len}
    out, err = run([args.fma_peak, "--seconds", "2"])
    m = re.search(r"([\d.]+) GFLOP/s", out or "")
    results["peak_gflops"] = float(m.group(1)) if m else None
    print(f"fp32 peak: {fmt(results['peak_gflops'], '.1f')} GFLOP/s", file=sys.stderr)

    for c in configs:
        r = results[c] = {}
        for name, binary in (("before", args.before), ("after", args.clformer)):
            if binary:
                print(f"{c}: clformer {name}, cold then warm", file=sys.stderr)
                r[name + "_cold"] = bench(binary, c, True, args)
                r[name] = bench(binary, c, False, args)
        if args.torch:
            print(f"{c}: PyTorch", file=sys.stderr)
            r["torch"] = peer("bench_torch.py", c, args)
        if c in args.tinygrad.split(","):
            print(f"{c}: tinygrad", file=sys.stderr)
            r["tinygrad"] = peer("bench_tinygrad.py", c, args, {"DEV": "CL"}, reps=(3, 2))
        with open(os.path.join(args.out, "results.json"), "w") as f:
            json.dump(results, f, indent=1)

    peak = results["peak_gflops"]
    print(f"\n{results['date']}, {results['cpu'] or 'CPU'}, {args.device}, "
          f"--batch {args.batch} --len {args.len}, fp32 peak {fmt(peak, '.0f')} GFLOP/s\n")
    print("| config | train tok/s | translate tok/s | GEMM GFLOP/s (% of peak) | non-GEMM share "
          "| cold first step | PyTorch train / translate | ratio | tinygrad train | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for c in configs:
        r, a = results[c], results[c].get("after", {})
        b, t, g = r.get("before", {}), r.get("torch", {}), r.get("tinygrad", {})
        gemm = a.get("gemm_kernel_gflops")
        pct = f" ({100 * gemm / peak:.0f}%)" if isinstance(gemm, float) and peak else ""
        before = lambda key: f" (was {fmt(b.get(key))})" if b.get(key) else ""  # noqa: E731
        print(f"| {c} | {fmt(a.get('train_tokens_per_s'))}{before('train_tokens_per_s')} "
              f"| {fmt(a.get('translate_tokens_per_s'))}{before('translate_tokens_per_s')} "
              f"| {fmt(gemm)}{pct} | {fmt(a.get('non_gemm_step_fraction'), '.0%')} "
              f"| {fmt(r.get('after_cold', {}).get('first_step_s'), '.1f')} s"
              f"{' (was ' + fmt(r['before_cold'].get('first_step_s'), '.1f') + ' s)' if 'before_cold' in r else ''} "
              f"| {fmt(t.get('train_tokens_per_s'))} / {fmt(t.get('translate_tokens_per_s'))} "
              f"| {ratio(a.get('train_tokens_per_s'), t.get('train_tokens_per_s'))} / "
              f"{ratio(a.get('translate_tokens_per_s'), t.get('translate_tokens_per_s'))} "
              f"| {fmt(g.get('train_tokens_per_s'))} "
              f"| {ratio(a.get('train_tokens_per_s'), g.get('train_tokens_per_s'))} |")
    for c in configs:
        a = results[c].get("after", {})
        ms, gbps, frac = (a.get(k, {}) for k in ("kernel_ms", "kernel_gbps", "kernel_copy_fraction"))
        print(f"\n{c}: copy bandwidth {fmt(a.get('copy_bandwidth_gbps'), '.1f')} GB/s; "
              f"profiled step {fmt(a.get('profiled_step_ms'), '.1f')} ms\n")
        print("| family | ms/step | GB/s | % of copy bandwidth |")
        print("|---|---:|---:|---:|")
        for fam, v in sorted(ms.items(), key=lambda kv: -kv[1]):
            print(f"| {fam} | {v:.2f} | {fmt(gbps.get(fam), '.1f')} | {fmt(frac.get(fam), '.0%')} |")
    for c in configs:
        for k, v in results[c].items():
            if isinstance(v, dict) and "error" in v:
                print(f"\n{c} {k}: {v['error']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
