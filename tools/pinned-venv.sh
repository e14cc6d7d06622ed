# Sourced by tools/hf-venv.sh, tools/python-venv.sh and tools/intel-opencl.sh:
# what the three share in making a venv of pinned PyPI packages. A venv is
# current when its stamp (what was asked to be installed) matches and the
# files it must hold exist; the stamp is written last, so a run that stopped
# half-way is redone from scratch.

# pinned_venv_args NAME DIR ARGS...: handles --print-dir (prints DIR, exits 0);
# any other argument is an error (exit 2).
pinned_venv_args() {
    local name=$1 dir=$2
    shift 2
    if [[ "${1:-}" == "--print-dir" && $# -eq 1 ]]; then
        echo "$dir"
        exit 0
    elif [[ $# -gt 0 ]]; then
        echo "$name: unknown argument '$1' (usage: tools/$name.sh [--print-dir])" >&2
        exit 2
    fi
}

# pinned_venv_current DIR STAMP FILE...: true when DIR holds STAMP and every
# FILE (relative to DIR) exists.
pinned_venv_current() {
    local dir=$1 stamp=$2 f
    shift 2
    [[ -f "$dir/clformer-stamp" && "$(cat "$dir/clformer-stamp")" == "$stamp" ]] || return 1
    for f in "$@"; do [[ -e "$dir/$f" ]] || return 1; done
}

# pinned_venv_create DIR PYTHON [VENV-OPTION...]: a new, empty venv in DIR
# (whatever was there is removed) made by PYTHON.
pinned_venv_create() {
    local dir=$1 python=$2
    shift 2
    rm -rf "$dir"
    mkdir -p "$(dirname "$dir")"
    "$python" -m venv "$@" "$dir"
}

# pinned_venv_install DIR PIP-ARGUMENT...: pip install, quietly, into DIR.
pinned_venv_install() {
    local dir=$1
    shift
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
}

# pinned_venv_stamp DIR STAMP: marks DIR as holding STAMP (last step).
pinned_venv_stamp() {
    echo "$2" > "$1/clformer-stamp.tmp"
    mv "$1/clformer-stamp.tmp" "$1/clformer-stamp"
}
