# Sourced by scripts/serve and scripts/test: make .venv and install a requirements file into it,
# again only when that file changed since the last install.
requirements="$1"
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
stamp=".venv/.installed-$(basename "$requirements")"
if [ ! -f "$stamp" ] || [ -n "$(find requirements*.txt -newer "$stamp")" ]; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -r "$requirements"
    touch "$stamp"
fi
