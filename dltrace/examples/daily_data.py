"""Generated files for the daily pipeline (``daily_job.py``, ``daily_report.py``): what grows
by a day per run.

    python -m dltrace.examples.daily_data DIR DAY      # DAY: 1, 2, ...

adds, seeded by the day, ``DIR/events/date=2026-11-DD/part-0.parquet`` (Hive-style: the
folder gains a partition a day), rewrites ``DIR/users.csv`` with one more version of a few
users (country changes; several versions per user, the latest by ``updated_at``), and writes
``DIR/products.parquet`` once.
"""

from __future__ import annotations

import argparse
import datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

COUNTRIES = ("DE", "FR", "JP", "CA", "NL")
CATEGORIES = ("books", "garden", "games", "kitchen")
USERS, PRODUCTS, EVENTS_PER_DAY = 40, 12, 60
FIRST_DAY = datetime.date(2026, 11, 1)


def day_of(number: int) -> datetime.date:
    return FIRST_DAY + datetime.timedelta(days=number - 1)


def write(directory: str | Path, day: int, events: int = EVENTS_PER_DAY) -> Path:
    """Day ``day``'s files (``events`` events) under ``directory`` (the earlier days' are left
    as they are)."""
    root = Path(directory)
    rng = np.random.default_rng(1000 + day)
    date = day_of(day)
    partition = root / "events" / f"date={date.isoformat()}"
    partition.mkdir(parents=True, exist_ok=True)
    seconds = np.sort(rng.integers(0, 86400, events))
    moments = [datetime.datetime.combine(date, datetime.time()) + datetime.timedelta(seconds=int(s)) for s in seconds]
    pq.write_table(pa.table({
        "event_id": pa.array(np.arange(events) + day * 10_000_000, pa.int64()),
        "user_id": pa.array(rng.integers(1, USERS + 1, events), pa.int32()),
        "product_id": pa.array(rng.integers(1, PRODUCTS + 1, events), pa.int32()),
        "qty": pa.array(rng.integers(1, 4, events), pa.int32()),
        "ts": pa.array(moments, pa.timestamp("us")),
    }), partition / "part-0.parquet")
    with open(root / "users.csv", "w") as out:
        out.write("user_id,country,updated_at\n")
        for number in range(1, day + 1):  # every day's versions so far: day 1 has every user
            versions = np.random.default_rng(2000 + number)
            users = range(1, USERS + 1) if number == 1 else versions.choice(np.arange(1, USERS + 1), 3, replace=False)
            for user in users:
                out.write(f"{user},{versions.choice(COUNTRIES)},{day_of(number).isoformat()} 0{number % 10}:00:00\n")
    if not (root / "products.parquet").exists():
        pq.write_table(pa.table({
            "product_id": pa.array(range(1, PRODUCTS + 1), pa.int32()),
            "category": [CATEGORIES[p % len(CATEGORIES)] for p in range(1, PRODUCTS + 1)],
            "price": [round(2.5 + 1.75 * p, 2) for p in range(1, PRODUCTS + 1)],
        }), root / "products.parquet")
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory")
    parser.add_argument("day", type=int)
    parser.add_argument("--events", type=int, default=EVENTS_PER_DAY, help="events a day")
    arguments = parser.parse_args()
    print(write(arguments.directory, arguments.day, arguments.events))


if __name__ == "__main__":
    main()
