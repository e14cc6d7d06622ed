#!/bin/sh
# Two of issue 31's architecture measures, counted the same way each time:
#  1. branches on the model family or the task: lines that branch (if, ?:,
#     while, switch/case, && or ||) on a family or task predicate (a
#     decoder-only test, the encoder's layer count, cross-attention, a
#     language-model flag or text path, a family or task name), per file of
#     runtime/, tools/cli and include/, in three groups: a family's or task's
#     own files (runtime/model/family*, runtime/train/task*: knowing which they
#     are is their job), the graph (runtime/model's passes over a block, which
#     branch on what a block has), and the rest: the trainer, session, CLI and
#     API, where issue 31 wants none.
#  2. files an op touches: per op of runtime/check/conf_<op>.c, its kernel
#     file, launcher, ops.h, descriptor, and any reference file, case struct
#     (conformance.h) or op test (tests/*/test_<op>.c, test_ref_<op>.c).
# Circles between files are test_file_cycles' (CTest).
# Usage: tools/architecture-metrics.sh [--detail]
set -eu
cd "$(dirname "$0")/.."
detail=${1:-}
pred='decoder_only|n_enc_layers|(->|\.)cross\b|\bcross\)|(->|\.)lm\b|[(!]lm\b|\blm (\?|&&|\|\|)|text_path|cf_lm_has|\bis_lm\b|(->|\.)task\b|family [!=]=|task [!=]=|"--text"|"--task"|\bis_family\b|(->|\.)source\b|blocks\.encoder|src_vocab (>|==) 0'
branch='if ?\(|\?|while ?\(|switch ?\(|case |&&|\|\|'
files=$(find runtime tools/cli include -name '*.c' -o -name '*.cc' -o -name '*.h' | sort)
echo "== branches on family or task (file: lines) =="
total=0; own=0; graph=0
for f in $files; do
  n=$(grep -E "$pred" "$f" | grep -E "$branch" | grep -cvE '^\s*(/\*|\*)' || true)
  [ "$n" -gt 0 ] || continue
  case $f in
    runtime/model/family*|runtime/train/task*) own=$((own + n)); tag=" (own)";;
    runtime/model/acts.c|runtime/model/backward.c|runtime/model/forward.c|\
    runtime/model/half_saved.c|runtime/model/graph.h|runtime/model/params.c|\
    runtime/model/arena.c) graph=$((graph + n)); tag=" (graph)";;
    *) total=$((total + n)); tag="";;
  esac
  echo "  $f: $n$tag"
  [ "$detail" = --detail ] && grep -nE "$pred" "$f" | grep -E "$branch" | grep -vE '^[0-9]+:\s*(/\*|\*)' | sed 's/^/      /'
done
echo "  trainer, session, CLI and API: $total; graph: $graph; a family's or task's own: $own"
echo "== files an op touches =="
for c in runtime/check/conf_*.c; do
  op=$(basename "$c" .c); op=${op#conf_}
  [ "$op" = block ] && continue
  set -- "$c"
  [ -f "cl/$op.cl" ] && set -- "$@" "cl/$op.cl"
  [ -f "runtime/ops/ops_$op.c" ] && set -- "$@" "runtime/ops/ops_$op.c" runtime/ops/ops.h
  for r in runtime/check/reference/ref_$op.c runtime/check/reference/ref_$op.h \
           tests/device/test_$op.c tests/host/test_ref_$op.c; do
    [ -f "$r" ] && set -- "$@" "$r"
  done
  grep -q "conf_${op}_case" runtime/check/conformance.h && set -- "$@" runtime/check/conformance.h
  echo "  $op: $#$( [ "$detail" = --detail ] && echo " ($*)")"
done
