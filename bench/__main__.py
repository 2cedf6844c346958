"""`python -m bench`: run every workload and write bench/RESULTS.md.

`--smoke` runs every workload at a tiny size (for the test that keeps the
suite from rotting); `--only a_loop,c_history` runs some workloads;
`--out PATH` writes elsewhere.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from pathlib import Path

from . import machine
from .report import Context, Section, summary
from .workloads import ALL, load

HERE = Path(__file__).resolve().parent


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def render(sections: list[Section], about: str, smoke: bool) -> str:
    parts = [
        "# turnkeeper benchmarks" + (" (smoke run: tiny sizes, not results)" if smoke else ""),
        "",
        "Written by `python -m bench` (see `bench/__init__.py` for the method). Every contender",
        "runs in its own worker process; the contenders take turns in short slices, the order",
        "rotating each round, and ratios are medians of per-round ratios against a baseline",
        "measured in the same rounds. Absolute times are shown next to them for scale only:",
        "the machine was shared with other work while this ran.",
        "",
        "## Machine",
        "",
        about,
        "",
        "## Summary",
        "",
        summary(sections),
        "",
    ]
    for s in sections:
        parts += [f"## {s.title}", "", s.body.strip(), ""]
    notes = HERE / "NOTES.md"
    if notes.exists():
        parts += [notes.read_text(encoding="utf-8").strip(), ""]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, to check the suite runs")
    parser.add_argument("--only", help="comma-separated workloads (default: all)")
    parser.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    args = parser.parse_args(argv)
    names = args.only.split(",") if args.only else ALL
    started, t0, before = datetime.datetime.now(datetime.UTC), time.monotonic(), machine.load()
    ctx = Context(smoke=args.smoke, log=log)
    sections = []
    try:
        for name in names:
            log(f"== {name}")
            sections.append(load(name).run(ctx))
    finally:
        ctx.pool.close()
    about = machine.describe(started, time.monotonic() - t0, before)
    args.out.write_text(render(sections, about, args.smoke), encoding="utf-8")
    log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
