"""The data files the bench posts, made by scripts/generate_data.py when missing."""

import pathlib
import subprocess
import sys

from growth_gevent.config import DEFAULT_MAX_BODY_BYTES

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "data"
DATA_3MB = DATA / "growth-3mb.json"
DATA_500KB = DATA / "growth-500kb.json"
DATA_LARGE = DATA / "growth-8mib.json"
# (file, generate_data.py arguments): the 500 kB-class file as the k6 scripts use it, and the most records
# of the same indented layout that fit under the default body limit (71,000 records, 8.37 MB).
DATA_FILES = {
    DATA_3MB: [],
    DATA_500KB: ["--records", "4537", "--indent", "4"],
    DATA_LARGE: ["--records", "71000", "--indent", "4"],
}


def make_data_files():
    for path, arguments in DATA_FILES.items():
        if not path.exists():
            subprocess.run([sys.executable, "scripts/generate_data.py", *arguments, str(path)], cwd=ROOT, check=True)
    if DATA_LARGE.stat().st_size > DEFAULT_MAX_BODY_BYTES:
        raise SystemExit(f"{DATA_LARGE} is larger than the default body limit; generate it with fewer records")
