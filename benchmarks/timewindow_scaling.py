"""Wall time of time-phrase parsing on long messages: linear in the message's length.

    python -m benchmarks.timewindow_scaling [--sizes 10000,100000] [--repeat 3] [--out r.json]

Each message repeats one unit (a time expression, a number, plain words) up to the size; the
figure is the best of ``--repeat`` runs of :func:`ltm.domain.timewindow.parse_time_window`, in
milliseconds, and microseconds per character. The work itself is bounded by
``tests/unit/test_timewindow_work.py`` (counted, not timed); this is the wall clock it costs.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from ltm.domain.timewindow import parse_time_window

from . import git_commit

NOW = datetime(2024, 5, 10, 12, tzinfo=UTC)
UNITS = {
    "last week": "last week ",
    "holiday": "over the christmas ",
    "month": "in May ",
    "digits": "1",
    "zh digits": "一",
    "zh": "12月 3天前 过国庆节 ",
    "anchors": "the week before 3 May and ",
    "words": "hello there ",
}


def measure(sizes: list[int], repeat: int) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for kind, unit in UNITS.items():
        for n in sizes:
            text = (unit * (n // len(unit) + 1))[:n]
            best = min(_once(text) for _ in range(repeat))
            per_char = round(best * 1e6 / n, 3)
            rows.append({"kind": kind, "chars": n, "ms": round(best * 1000, 2), "us_per_char": per_char})
    return rows


def _once(text: str) -> float:
    started = time.perf_counter()
    parse_time_window(text, NOW)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000", help="message lengths, comma-separated")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    rows = measure(sizes, max(1, args.repeat))
    print(f"{'kind':<12} {'chars':>8} {'ms':>9} {'us/char':>8}")
    for r in rows:
        print(f"{r['kind']:<12} {r['chars']:>8} {r['ms']:>9.1f} {r['us_per_char']:>8.2f}")
    if args.out:
        doc = {
            "benchmark": "timewindow_scaling",
            **git_commit(),
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "rows": rows,
        }
        args.out.write_text(json.dumps(doc, ensure_ascii=False, indent=1), encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
