#!/usr/bin/env python3
"""The tables of tools/device-check.sh's report, read from its phase logs.

    device_check_report.py gemm LOGDIR    base's and gpt-char's products per shape
                                          (gemm_bench logs gemm-*.log)
    device_check_report.py goals LOGDIR   issue 28's goal table and the attention
                                          kernels per step (bench --json logs goal-*.log)

A missing log leaves its cells "-". tests/CMakeLists.txt runs both on
tests/data/device-check/.
"""
import json
import os
import re
import sys


def rows(d, name):
    """A gemm_bench log's rows by product name: ((m, n, k, batch), GFLOP/s,
    % of peak, the block of the tiled kernel the search sent it to or None),
    and the FMA peak it printed ("" when none)."""
    out = {}
    path = os.path.join(d, name + ".log")
    if not os.path.exists(path):
        return out, ""
    peak = ""
    for line in open(path):
        m = re.match(r"# FMA peak ([0-9.]+)", line)
        if m:
            peak = m.group(1)
        m = re.match(r"(.+?)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)%"
                     r"(?:\s+tiled (\d+)x\d+)?", line)
        if m:
            out[m.group(1)] = (m.group(2, 3, 4, 5), float(m.group(7)), float(m.group(8)),
                               m.group(9))
    return out, peak


def bench(d, name):
    # the log holds stderr too (the GEMM search's progress): the object is
    # the text from the line that opens it
    try:
        text = open(os.path.join(d, name + ".log")).read()
        start = 0 if text.startswith("{") else text.find("\n{") + 1
        return json.JSONDecoder().raw_decode(text[start:])[0]
    except (OSError, ValueError):
        return None


def share(j):
    if not j: return "-"
    a = j["kernel_ms"].get("attention", 0.0)
    return f"{100 * a / j['train_step_ms']:.1f}% ({a:,.0f} of {j['train_step_ms']:,.0f} ms)"


def other_path(j, path):
    """Where a run's training steps took another attention path than the
    row names (bench's attention_path; logs before it say nothing), what
    the row prints in place of its figure: a run must not stand for a path
    it did not take."""
    took = j.get("attention_path", path) if j else path
    return None if took == path else f"- (its steps took {took})"


def share_by_gemm(j, fused, path):
    """A step with the backward by GEMMs, or unfused, whose products count
    under gemm: its attention share taken as the step less the rest of the
    fused step (everything but attention, which the path does not change)."""
    took = other_path(j, path)
    if took: return took
    if not j or not fused: return "-"
    step = j["train_step_ms"]
    rest = fused["train_step_ms"] - fused["kernel_ms"].get("attention", 0.0)
    return (f"{100 * (step - rest) / step:.1f}% ({step - rest:,.0f} of {step:,.0f} ms; "
            f"fused {fused['train_step_ms']:,.0f} ms)")


def peak(j, family):
    g = j and j.get("roofline", {}).get("train", {}).get(family)
    return f"{100 * g['peak_fraction']:.1f}% ({g['gflops']:,.0f} GFLOP/s)" if g else "-"


def gemm_peak(j):
    return peak(j, "gemm")


def attention_vs_gemm(j):
    """The attention kernels' FLOP/s (the model's products) as a share of
    the GEMMs' in the same step: at 100% attention would take about 26% of
    base's long step, the nearest goal to issue 28's 15% that the FMA peak
    allows (docs/PERFORMANCE.md, "GPUs")."""
    r = j and j.get("roofline", {}).get("train", {})
    a, g = r and r.get("attention"), r and r.get("gemm")
    if not a or not g or not g["gflops"]: return "-"
    return (f"{100 * a['gflops'] / g['gflops']:.1f}% ({a['gflops']:,.0f} of "
            f"{g['gflops']:,.0f} GFLOP/s)")


def toks(j, path=None):
    took = path and other_path(j, path)
    if took: return took
    return (f"{j['train_tokens_per_s']:,.0f} ({j['launches_per_step']:.0f} launches a step)"
            if j else "-")


def generated(j):
    if not j or not j.get("generate_steps"): return "-"
    return (f"{j['generate_tokens_per_s']:,.0f} "
            f"({j['generate_launches_per_batch'] / j['generate_steps']:.0f} launches a token)")


def tiles_taken(d):
    """Each goal step's attention tiles and how they were chosen (bench's
    attention_tiles, attention_tiles_chosen), "-" where no log says."""
    out = []
    for name in ("goal-base-1024", "goal-base-1024-profile-tiles", "goal-gpt2", "goal-gpt-char"):
        j = bench(d, name)
        if j and j.get("attention_tiles"):
            out.append(f"{name[5:]} `{j['attention_tiles']}` ({j.get('attention_tiles_chosen')})")
    return "; ".join(out) if out else "-"


def cell(r):
    """GFLOP/s and % of peak; "(tiled B)" where the search chose clformer's
    kernel with B x B blocks."""
    return ("%.0f%s | %.1f%%" % (r[1], " (tiled %s)" % r[3] if r[3] else "", r[2])) if r else "- | -"


def gemm_tables(d):
    """base's products at 64 x 64 and 16 x 1024 (CLBlast's own sets, the
    search's, the tiled kernel's) and gpt-char's (the search's, the tiled
    kernel's by shape and with each set forced)."""
    for size in ("64x64", "16x1024"):
        own, fma1 = rows(d, "gemm-%s-own" % size)
        tuned, fma2 = rows(d, "gemm-%s-search" % size)
        tiled, fma3 = rows(d, "gemm-%s-tiled" % size)
        print("batch x len %s, FMA peak %s GFLOP/s" % (size.replace("x", " x "),
                                                      fma1 or fma2 or fma3 or "?"))
        print()
        print("| product | m x n x k x batch | CLBlast's own GFLOP/s | % peak | searched GFLOP/s | % peak "
              "| tiled GFLOP/s | % peak |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for name in tuned or own or tiled:
            o, t, c = own.get(name), tuned.get(name), tiled.get(name)
            dims = " x ".join((t or o or c)[0])
            print("| %s | %s | %s | %s | %s |" % (name, dims, cell(o), cell(t), cell(c)))
        print()
    tuned, fma1 = rows(d, "gemm-gpt-char-search")
    tiled, fma2 = rows(d, "gemm-gpt-char-tiled")
    forced = [rows(d, "gemm-gpt-char-tiled%d" % b)[0] for b in (128, 64, 32)]
    if tuned or tiled:
        print("gpt-char, 64 x 256, FMA peak %s GFLOP/s; tiled: clformer's kernel with the set "
              "each shape gets, then with each set forced (`gemm_bench --tiles`)" % (fma1 or fma2 or "?"))
        print()
        print("| product | m x n x k x batch | searched GFLOP/s | % peak | tiled GFLOP/s | % peak "
              "| 128 | % | 64 | % | 32 | % |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for name in tuned or tiled:
            t, c = tuned.get(name), tiled.get(name)
            print("| %s | %s | %s | %s | %s |" % (name, " x ".join((t or c)[0]), cell(t), cell(c),
                                                " | ".join(cell(f.get(name)) for f in forced)))
        print()


def goals_table(d):
    """Issue 28's figures against its goals, and the attention and GEMM
    kernels of the base, GPT-2 and gpt-char steps one by one."""
    tiled, per_row = bench(d, "goal-base-1024"), bench(d, "goal-base-1024-rows")
    print("| figure | measured | goal |")
    print("| --- | ---: | ---: |")
    print("| attention share of `bench --config base --batch 16 --len 1024` step | %s | <= 15%% |" % share(tiled))
    print("| the same with the per-row kernels (`CLFORMER_PROFILE=row-attention`) | %s | (before: 95.8%%) |" % share(per_row))
    print("| the same with the backward by GEMMs (`CLFORMER_ATTENTION=gemm-backward`; the step "
          "less the fused step's other work) | %s | |"
          % share_by_gemm(bench(d, "goal-base-1024-gemm-backward"), tiled, "gemm-backward"))
    print("| the same unfused (`CLFORMER_ATTENTION=unfused`: every product a GEMM) | %s | |"
          % share_by_gemm(bench(d, "goal-base-1024-unfused"), tiled, "unfused"))
    print("| attention kernels' share of the FMA peak (the model's products, every score) | %s | |"
          % peak(tiled, "attention"))
    print("| the same with the profile's attention tiles (`CLFORMER_ATTENTION_TUNING=off`) | %s | |"
          % share(bench(d, "goal-base-1024-profile-tiles")))
    print("| GEMM share of the FMA peak in that step (fp32) | %s | >= 50%% |" % gemm_peak(tiled))
    print("| attention kernels' FLOP/s as a share of the GEMMs' in that step | %s | "
          "(100%%: about 26%% of the step) |" % attention_vs_gemm(tiled))
    print("| the same with CLBlast's own sets (`CLFORMER_GEMM_TUNING=off`) | %s | |"
          % gemm_peak(bench(d, "goal-base-1024-own-gemm")))
    print("| the same with the weight gradients unsplit (`CLFORMER_PROFILE=whole-gradients`) | %s | |"
          % gemm_peak(bench(d, "goal-base-1024-whole")))
    print("| the same with clformer's own kernel (`CLFORMER_GEMM=tiled`) | %s | |"
          % gemm_peak(bench(d, "goal-base-1024-tiled-gemm")))
    print("| GPT-2 124M layout, context 1024, batch 8, fp32 tok/s | %s | >= 20,000 |" % toks(bench(d, "goal-gpt2")))
    print("| the same with clformer's own GEMM kernel (`CLFORMER_GEMM=tiled`) | %s | |"
          % toks(bench(d, "goal-gpt2-tiled-gemm")))
    print("| the same with the backward by GEMMs (`CLFORMER_ATTENTION=gemm-backward`) | %s | |"
          % toks(bench(d, "goal-gpt2-gemm-backward"), "gemm-backward"))
    print("| gpt-char (nanoGPT shakespeare_char config) tok/s | %s | >= 250,000 |" % toks(bench(d, "goal-gpt-char")))
    print("| the same with the weight gradients unsplit | %s | |" % toks(bench(d, "goal-gpt-char-whole")))
    print("| the same with clformer's own GEMM kernel (`CLFORMER_GEMM=tiled`) | %s | |"
          % toks(bench(d, "goal-gpt-char-tiled-gemm")))
    print("| the same with the backward by GEMMs (`CLFORMER_ATTENTION=gemm-backward`) | %s | |"
          % toks(bench(d, "goal-gpt-char-gemm-backward"), "gemm-backward"))
    print("| gpt-char generating 64 sequences (the bench's batch), tok/s | %s | |"
          % generated(bench(d, "goal-gpt-char")))
    print("| gpt-char generating one sequence, tok/s | %s | |"
          % generated(bench(d, "goal-gpt-char-one-row")))
    print()
    print("Attention tiles the steps took (`fwd=`, `dq=`: rows a group owns x items a row x "
          "keys a tile x rows an item; `dkv=`: keys, items a key, queries a tile, keys an "
          "item): %s." % tiles_taken(d))
    print()
    print("GEMM per shape: the GEMM section above.")
    # where each step's attention and GEMM time goes, kernel by kernel
    # (bench's "kernels" list): which of the tiled attention kernels to work
    # on next, and how much of the GEMMs the search gave clformer's kernel
    print()
    print("Attention and GEMM kernels per step (ms, share of the step; attention: the model's "
          "products they stand in for; gemm: CLBlast's calls, gemm_tiled: clformer's kernel, "
          "on the shapes the GEMM search measured it faster):")
    print()
    print("| step | kernel | ms | share | GFLOP/s | % FMA peak |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for name in ("goal-base-1024", "goal-gpt2", "goal-gpt-char"):
        j = bench(d, name)
        if not j: continue
        fma = j.get("roofline", {}).get("fma_gflops", 0.0)
        for k in j.get("kernels", []):
            if k["family"] not in ("attention", "gemm"): continue
            pk = f"{100 * k['gflops'] / fma:.1f}%" if fma and k["gflops"] else "-"
            gf = f"{k['gflops']:,.0f}" if k["gflops"] else "-"
            print(f"| {name[5:]} | {k['kernel']} | {k['ms']:,.1f} | "
                  f"{100 * k['ms'] / j['train_step_ms']:.1f}% | {gf} | {pk} |")


def main(argv):
    tables = {"gemm": gemm_tables, "goals": goals_table}
    if len(argv) != 3 or argv[1] not in tables:
        print("usage: device_check_report.py gemm|goals LOGDIR", file=sys.stderr)
        return 2
    tables[argv[1]](argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
