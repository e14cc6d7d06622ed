#!/usr/bin/python3
"""Writes runtime/data/unicode_lower_table.c: Python's str.lower() as tables,
for sacreBLEU's lower-cased BLEU (`-lc`, runtime/data/unicode_lower.c), and
tests/data/unicode_lower.jsonl: {"in": text, "out": text.lower()} lines that
tests/host/test_unicode_lower.c checks the C code against.
Generated from the behaviour of str.lower() itself (Debian's /usr/bin/python3);
the C build does not need Python (the output is committed).

str.lower() maps each code point on its own (the full mapping: U+0130 becomes
two code points), except CAPITAL SIGMA, which becomes the final sigma U+03C2
after a cased letter that no cased letter follows, case-ignorable code points
skipped on both sides (Unicode's Final_Sigma). unicodedata exposes neither
property, so the script asks str.lower() what it does around a sigma: a code
point c is
- case-ignorable when "A" + c + "Σ" ends in a final sigma but " " + c + "Σ"
  does not (an ignorable c is skipped back to the cased "A" or the uncased " ");
- cased (and not ignorable) when " " + c + "Σ" ends in a final sigma.
Whether an ignorable code point is also cased never matters: the rule skips it.

Usage: /usr/bin/python3 tools/reference/make_unicode_lower.py [output.c [cases.jsonl]]
"""
import json
import os
import random
import sys
import unicodedata

FINAL_SIGMA = "\u03c2"


def code_points():
    """Every code point a valid UTF-8 string can hold (no surrogates)."""
    return (cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF)


def runs(pairs):
    """(first, last, stride, delta) runs of single-code-point mappings
    cp -> cp + delta, cp = first, first + stride, ..., last (stride 1 or 2)."""
    out = []
    for cp, to in pairs:
        delta = to - cp
        if out:
            first, last, stride, d = out[-1]
            if d == delta and (cp - last == stride or (first == last and cp - last in (1, 2))):
                out[-1] = (first, cp, cp - last, d)
                continue
        out.append((cp, cp, 1, delta))
    return out


def sigma_classes():
    """(first, last, cls) runs, cls 'CASED' or 'IGNORABLE' as the final-sigma
    rule sees them (see above)."""
    rows = []
    for cp in code_points():
        c = chr(cp)
        after_space = (" " + c + "\u03a3").lower()[-1] == FINAL_SIGMA
        after_cased = ("A" + c + "\u03a3").lower()[-1] == FINAL_SIGMA
        # the forward half of the rule must agree: a sigma stays final before c
        # unless c is cased and not ignorable
        before = ("A\u03a3" + c).lower()[1] == FINAL_SIGMA
        cls = "CASED" if after_space else "IGNORABLE" if after_cased else None
        assert before == (cls != "CASED"), hex(cp)
        if rows and rows[-1][2] == cls and rows[-1][1] == cp - 1:
            rows[-1][1] = cp
        else:
            rows.append([cp, cp, cls])
    return [tuple(r) for r in rows if r[2]]


def test_cases(changed, sigma):
    """Texts whose str.lower() the C code must reproduce: named cases, every
    code point that str.lower() changes (in groups of 40), and random strings
    around capital sigmas that put the final-sigma rule through its cases."""
    texts = [
        "", "Hello, World! 123 ABC xyz", "ÄÖÜ äöü ẞ ß Straße STRASSE",
        "ΟΔΟΣ", "Σ", "ΣΣ", "ΑΣ Β", "ΑΣΑ", "ΑΣ.", "Α.Σ", "ΑΣ'Α", "Α'Σ", "ΑΣ\u0301", "\u0301Σ",
        "ὈΔΥΣΣΕΎΣ", "ΜΆΣ ΣΑΣ Σ", "Σ1", "1Σ", "ΑΣ1Α", "ΑʰΣ", "ΑΣʰ", "ΑΣʰΒ",
        "ПРИВЕТ, МИР! Ёлка Ї", "\u0130stanbul İ İİ", "\u212a \u212b \u2126", "Ⱥ Ⱦ \u1e9e",
        "ǅ ǈ ǋ ǲ", "ＡＢＣ 𐐀 𞤀", "日本語 🙂 ١٢٣",
        "Ein Mann in einem BLAUEN Hemd.", "\u00a0 \u3000 \t\r",
    ]
    for k in range(0, len(changed), 40):
        texts.append("".join(chr(c) for c in changed[k:k + 40]))
    cased = [a for a, b, c in sigma if c == "CASED"]
    ignorable = [a for a, b, c in sigma if c == "IGNORABLE"] + [b for a, b, c in sigma if c == "IGNORABLE"]
    pool = ["\u03a3"] * 6 + ["A", "a", " ", "1", ".", "'", "-", "\u0301", "\u00ad", "\u02b0",
                              "\u0345", "\u0130", "\u03b1", "\u0391"]
    rng = random.Random(20261126)
    for _ in range(400):
        n = rng.randint(1, 8)
        text = "".join(rng.choice(pool) if rng.random() < 0.8 else
                       chr(rng.choice(cased if rng.random() < 0.5 else ignorable)) for _ in range(n))
        texts.append(text)
    return texts


def main():
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        here, "runtime", "data", "unicode_lower_table.c")
    cases_out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        here, "tests", "data", "unicode_lower.jsonl")
    single, multi = [], []
    for cp in code_points():
        low = chr(cp).lower()
        if low == chr(cp):
            continue
        if len(low) == 1:
            single.append((cp, ord(low)))
        else:
            assert len(low) <= 3, hex(cp)
            multi.append((cp, [ord(x) for x in low]))
    maps = runs(single)
    sigma = sigma_classes()
    with open(out, "w", encoding="ascii") as f:
        f.write("/*\n * Generated by tools/reference/make_unicode_lower.py from the str.lower() of\n"
                " * Python %s (Unicode %s); do not edit. Python's lower-case mapping\n"
                " * (sacreBLEU's -lc): %d code points that become one other code point, as\n"
                " * runs; %d that become several; and the classes the final-sigma rule reads.\n"
                " */\n" % (sys.version.split()[0], unicodedata.unidata_version, len(single), len(multi)))
        f.write('#include "unicode_lower.h"\n\n')
        f.write("const cf_lower_run cf_lower_runs[] = {\n")
        for a, b, s, d in maps:
            f.write("    {0x%05X, 0x%05X, %d, %d},\n" % (a, b, s, d))
        f.write("};\nconst size_t cf_lower_run_count = sizeof cf_lower_runs / sizeof cf_lower_runs[0];\n\n")
        f.write("const cf_lower_multi cf_lower_multis[] = {\n")
        for cp, to in multi:
            f.write("    {0x%05X, %d, {%s}},\n" % (cp, len(to), ", ".join("0x%05X" % t for t in to)))
        f.write("};\nconst size_t cf_lower_multi_count = sizeof cf_lower_multis / "
                "sizeof cf_lower_multis[0];\n\n")
        f.write("const cf_sigma_range cf_sigma_ranges[] = {\n")
        for a, b, c in sigma:
            f.write("    {0x%05X, 0x%05X, CF_SIGMA_%s},\n" % (a, b, c))
        f.write("};\nconst size_t cf_sigma_range_count = sizeof cf_sigma_ranges / "
                "sizeof cf_sigma_ranges[0];\n")
    texts = test_cases([cp for cp, _ in single] + [cp for cp, _ in multi], sigma)
    with open(cases_out, "w", encoding="utf-8") as f:
        for t in texts:
            f.write(json.dumps({"in": t, "out": t.lower()}, ensure_ascii=True) + "\n")
    print("%s: %d single mappings in %d runs, %d multi, %d sigma ranges; %s: %d cases"
          % (out, len(single), len(maps), len(multi), len(sigma), cases_out, len(texts)))


if __name__ == "__main__":
    main()
