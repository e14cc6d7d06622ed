#!/usr/bin/env bash
# Renders every Markdown file of the source tree with cmark (the CommonMark
# reference parser; Debian's `cmark`, from tools/install-deps.sh) and fails on
#   - a code fence that never closes (the rest of the file renders as code),
#   - a would-be closing fence with text after it (``` text), which CommonMark
#     takes as code, so the block runs on past where its author ended it,
#   - a relative link or image whose file does not exist, or whose #anchor
#     names no heading of its file (GitHub's anchors: lower case, punctuation
#     dropped, spaces as '-', repeats numbered -1, -2, ...).
# Usage: tests/check_markdown.sh SOURCE_DIR [CMARK]
set -euo pipefail
src=${1:?usage: check_markdown.sh SOURCE_DIR [CMARK]}
cmark=${2:-cmark}
command -v "$cmark" >/dev/null || {
    echo "FAIL: $cmark not found: install Debian's cmark (tools/install-deps.sh does)"
    exit 1
}
cd "$src"
# the tree's own files: git's list where there is one (build trees and
# ignored files left out), else every .md outside build directories
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    mapfile -t files < <(git ls-files -co --exclude-standard -- '*.md' | sort)
else
    mapfile -t files < <(find . -name '*.md' -not -path './build*' -not -path './.git/*' \
                         | sed 's|^\./||' | sort)
fi
((${#files[@]} > 0)) || { echo "FAIL: no Markdown files under $src"; exit 1; }

tmp=$(mktemp -d /tmp/clformer-markdown-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# One file's cmark XML -> lines "H<tab>slug", "L<tab>line<tab>destination",
# "F<tab>line<tab>problem".
scan() { # file
    local f=$1
    "$cmark" -t xml --sourcepos "$f" > "$tmp/xml"
    awk -v total="$(wc -l < "$f")" -v file="$f" '
    function unxml(s) {
        gsub(/&lt;/, "<", s); gsub(/&gt;/, ">", s); gsub(/&quot;/, "\"", s)
        gsub(/&#39;/, "\047", s); gsub(/&amp;/, "\\&", s)
        return s
    }
    function slug(s,    out, i, c) {
        s = tolower(s); out = ""
        for (i = 1; i <= length(s); i++) {
            c = substr(s, i, 1)
            if (c ~ /[a-z0-9_-]/ || c > "\177") out = out c
            else if (c == " ") out = out "-"
        }
        return out
    }
    function inner(line) { # the text between a node'"'"'s tags
        sub(/^[^>]*>/, "", line); sub(/<\/[a-z_]+>$/, "", line)
        return unxml(line)
    }
    function attr(line, name,    m) {
        if (!match(line, name "=\"[^\"]*\"")) return ""
        return unxml(substr(line, RSTART + length(name) + 2, RLENGTH - length(name) - 3))
    }
    function startline(line) {
        match(line, /sourcepos="[0-9]+/); return substr(line, RSTART + 11, RLENGTH - 11) + 0
    }
    function endline(line) {
        match(line, /sourcepos="[0-9]+:[0-9]+-[0-9]+/)
        s = substr(line, RSTART, RLENGTH); sub(/.*-/, "", s); return s + 0
    }
    /<heading / { inhead = 1; text = ""; next }
    inhead && /<\/heading>/ {
        s = slug(text); n = seen[s]++
        print "H\t" (n ? s "-" n : s)
        inhead = 0; next
    }
    inhead && /<(text|code) / { text = text inner($0) }
    inhead && /<softbreak|<linebreak/ { text = text " " }
    /<(link|image) / { print "L\t" startline($0) "\t" attr($0, "destination") }
    /<code_block / { print "C\t" startline($0) "\t" endline($0) }
    ' "$tmp/xml"
}

fail=0
for f in "${files[@]}"; do
    scan "$f" > "$tmp/$(echo "$f" | tr / _).scan"
done
slugs_of() { # file -> its scan's headings
    sed -n 's/^H\t//p' "$tmp/$(echo "$1" | tr / _).scan"
}
for f in "${files[@]}"; do
    scanfile="$tmp/$(echo "$f" | tr / _).scan"
    total=$(wc -l < "$f")
    # code fences: the opening line is a fence; a block that reaches the last
    # line without a closing fence there never closed; a line inside that
    # opens with the fence's characters and goes on with text was meant to
    # close it
    while IFS=$'\t' read -r _ start end; do
        open=$(sed -n "${start}p" "$f")
        fence=$(printf '%s\n' "$open" | sed -n 's/^ \{0,3\}\(```*\|~~~*\).*/\1/p')
        [[ -n "$fence" ]] || continue # an indented code block
        last=$(sed -n "${end}p" "$f")
        if ((end == start)) || ! printf '%s\n' "$last" | grep -q "^ \{0,3\}${fence}[${fence:0:1}]* *\$"; then
            echo "FAIL: $f:$start: code fence '$fence' never closes (the rest of the file renders as code)"
            fail=1
        fi
        while IFS= read -r bad; do
            echo "FAIL: $f:$((start + ${bad%%:*})): a fence with text after it does not close the block opened at line $start: ${bad#*:}"
            fail=1
        done < <(sed -n "$((start + 1)),$((end - 1))p" "$f" |
                 grep -n "^ \{0,3\}${fence}[${fence:0:1}]* *[^ ${fence:0:1}]" || true)
    done < <(grep '^C' "$scanfile")
    # links
    dir=$(dirname "$f")
    while IFS=$'\t' read -r _ line dest; do
        case "$dest" in
            '' | *://* | mailto:* | //*) continue ;;
        esac
        path=${dest%%#*}
        anchor=""
        [[ "$dest" == *'#'* ]] && anchor=${dest#*#}
        path=${path%%\?*}
        if [[ -z "$path" ]]; then
            target=$f
        else
            target=$(realpath -m --relative-to=. "$dir/$path")
            if [[ ! -e "$target" ]]; then
                echo "FAIL: $f:$line: link to '$dest': $target does not exist"
                fail=1
                continue
            fi
        fi
        if [[ -n "$anchor" && "$target" == *.md ]]; then
            if [[ ! -f "$tmp/$(echo "$target" | tr / _).scan" ]]; then
                scan "$target" > "$tmp/$(echo "$target" | tr / _).scan"
            fi
            if ! slugs_of "$target" | grep -qxF -- "$anchor"; then
                echo "FAIL: $f:$line: link to '$dest': $target has no heading with anchor #$anchor"
                fail=1
            fi
        fi
    done < <(grep '^L' "$scanfile")
done
((fail == 0)) || exit 1
echo "${#files[@]} Markdown files: every code fence closes, every relative link and anchor resolves"
