#!/bin/sh
# Two of issue 31's architecture measures, counted the same way each time:
#  1. branches on the model family or the task: tests (if, while, switch,
#     case, ?:, && or ||) of a family or task predicate (a decoder-only test,
#     the encoder's layer count, cross-attention, a source vocabulary or
#     side, a language-model flag or text path, a family or task name, the
#     --text or --task option), per file of runtime/, tools/cli and include/,
#     in three groups: a family's or task's own files (runtime/model/family*,
#     families.c, runtime/train/task*: knowing which they are is their job),
#     the graph (runtime/model's passes over a block, which branch on what a
#     block has), and the rest: the trainer, session, CLI and API, where
#     issue 31 wants none.
#     What counts is what a line tests, not every name on it (the awk
#     program `branches` below): the condition of an if, while or switch
#     (its body too only where the body holds a ?:, && or ||), else a case
#     line or a line of ?:, && or ||; comments dropped. There a predicate name
#     counts where it is tested: negated, or followed by ")", "?", "&&", "||"
#     or a comparison; a decoder-only test, or whether a preset is a language
#     model's (cli_is_one_of(.., clformer_config_lm_presets())), counts
#     wherever it is called. Not branches, so not counted: a call through the
#     interface (b->task->before_decoding(m)), a name passed as an argument
#     or assigned (lines_read(text_path, ...), c->n_enc_layers = ...), the
#     same field of two things compared (a->n_enc_layers != b->n_enc_layers:
#     the same shape, whatever the family), a table looked up by its key
#     (readers[i].family == ...: the lookup issue 31 asks for).
#  2. files an op touches: per op of runtime/check/conf_<op>.c, its kernel
#     file, launcher, ops.h, descriptor, and any reference file, case struct
#     (conformance.h) or op test (tests/*/test_<op>.c, test_ref_<op>.c).
# Circles between files are test_file_cycles' (CTest).
# Usage: tools/architecture-metrics.sh [--detail]
set -eu
cd "$(dirname "$0")/.."
detail=${1:-}
# The branch lines of a file on family or task, as "line: text" (rules above).
branches='
function cond(line,   p, i, c, depth, rest) {
  p = match(line, /(^|[^A-Za-z0-9_])(if|while|switch) ?\(/)
  if (!p) return line
  depth = 0
  for (i = p + RLENGTH - 1; i <= length(line); i++) {
    c = substr(line, i, 1)
    if (c == "(") depth++
    else if (c == ")" && --depth == 0) break
  }
  rest = substr(line, i + 1)
  return substr(line, p, i - p + 1) (rest ~ /\?|&&|\|\|/ ? " " rest : "")
}
BEGIN {
  w = "[^A-Za-z0-9_]"
  is = " *(\\)|\\?|&&|\\|\\||[!=]=|[<>])"
  of = "([A-Za-z0-9_]+(->|\\.)|\\(\\*?[A-Za-z0-9_]+\\)(->|\\.))"
  tested = "(^|" w ")(cross|n_enc_layers|lm|text_path)" is "|(->|\\.)(task|source)" is \
           "|!" of "*(cross|n_enc_layers|lm|text_path)(" w "|$)|!" of "+(task|source)(" w "|$)" \
           "|(family|task) *[!=]=|[!=]= *(family|task)(" w "|$)|src_vocab *([!=]=|>) *0|blocks\\.encoder" \
           "|decoder_only\\(|is_one_of\\([^)]*lm_presets\\(|cf_lm_has|(^|" w ")is_lm(" w "|$)|is_family|\"--text\"|\"--task\""
  split("cross n_enc_layers lm text_path task source src_vocab family", each, " ")
}
/^[ \t]*(\/\*|\*)/ { next }
{
  line = $0
  gsub(/\/\*.*\*\/|\/\/.*/, "", line)
  if (line !~ /(if|while|switch) ?\(|\?|case |&&|\|\|/) next
  c = cond(line)
  gsub(/(task|family)->/, "interface->", c)
  for (k in each) {
    gsub("(->|\\.)" each[k] " *[!=]= *[A-Za-z0-9_]+(->|\\.)" each[k] "(" w "|$)", " ", c)
    gsub("\\]\\." each[k] " *[!=]=", "] key ==", c)
  }
  if (c ~ tested) print FNR ": " $0
}'
files=$(find runtime tools/cli include -name '*.c' -o -name '*.cc' -o -name '*.h' | sort)
echo "== branches on family or task (file: lines) =="
total=0; own=0; graph=0
for f in $files; do
  n=$(awk "$branches" "$f" | grep -c . || true)
  [ "$n" -gt 0 ] || continue
  case $f in
    runtime/model/famil*|runtime/train/task*) own=$((own + n)); tag=" (own)";;
    runtime/model/acts.c|runtime/model/backward.c|runtime/model/forward.c|\
    runtime/model/half_saved.c|runtime/model/graph.h|runtime/model/params.c|\
    runtime/model/arena.c) graph=$((graph + n)); tag=" (graph)";;
    *) total=$((total + n)); tag="";;
  esac
  echo "  $f: $n$tag"
  [ "$detail" = --detail ] && awk "$branches" "$f" | sed 's/^/      /'
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
