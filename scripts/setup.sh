# Sourced by scripts/serve and scripts/test: what a fresh machine needs, installed once.

# ensure_venv REQUIREMENTS_FILE: make .venv and install the file into it, again only when a
# requirements file changed since the last install.
ensure_venv() {
    local requirements="$1" stamp
    if [ ! -x .venv/bin/python ]; then
        python3 -m venv .venv
    fi
    stamp=".venv/.installed-$(basename "$requirements")"
    if [ ! -f "$stamp" ] || [ -n "$(find requirements*.txt -newer "$stamp")" ]; then
        # Playwright uses the system's chromium (ensure_commands): no browser of its own is downloaded.
        PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 .venv/bin/python -m pip install --quiet --disable-pip-version-check \
            -r "$requirements"
        touch "$stamp"
    fi
}

# ensure_package: install this checkout into .venv, editable (the command runs the checkout's code as it
# is), so that .venv/bin/growth-gevent exists for docs/operations.md's commands; again only when
# pyproject.toml changed. Its dependencies are the requirements' pins, installed by ensure_venv.
ensure_package() {
    local stamp=".venv/.installed-package"
    if [ ! -x .venv/bin/growth-gevent ] || [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
        .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps --editable .
        touch "$stamp"
    fi
}

# ensure_commands COMMAND:DEBIAN_PACKAGE ...: apt-get install the packages of missing commands.
ensure_commands() {
    local missing=() pair
    for pair in "$@"; do
        command -v "${pair%%:*}" >/dev/null || missing+=("${pair#*:}")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        local sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo"
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
}
