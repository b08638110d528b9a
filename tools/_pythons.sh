# Sourced by tools/test-pythons, build-wheel and check-release: the CPythons >= 3.10 to use.
#
# dgauss_pythons fills the array PYTHONS with interpreters: those named by DGAUSS_PYTHONS
# (space-separated paths or commands), else every pyenv version 3.10 and up, else
# python3.10 .. python3.19 on PATH, else python3 itself.
dgauss_pythons() {
    PYTHONS=()
    if [ -n "${DGAUSS_PYTHONS:-}" ]; then
        read -r -a PYTHONS <<<"$DGAUSS_PYTHONS"
    elif command -v pyenv >/dev/null 2>&1; then
        local root dir minor
        root=$(pyenv root)
        for dir in "$root"/versions/3.*; do
            [ -x "$dir/bin/python3" ] || continue
            minor=$(basename "$dir" | cut -d. -f2)
            [[ $minor =~ ^[0-9]+$ ]] && [ "$minor" -ge 10 ] && PYTHONS+=("$dir/bin/python3")
        done
    else
        local minor
        for minor in $(seq 10 19); do
            command -v "python3.$minor" >/dev/null 2>&1 && PYTHONS+=("python3.$minor")
        done
    fi
    [ ${#PYTHONS[@]} -gt 0 ] || PYTHONS=(python3)
}

# python_tag PYTHON: its wheel tag, e.g. cp312
python_tag() {
    "$1" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")'
}
