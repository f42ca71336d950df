"""Generated files for the flights ETL (``flights_job.py``), at nycflights13's shape and any scale.

    python -m dltrace.examples.flights_data DIR [--flights N]

writes, seeded, ``DIR/flights/`` (Parquet, two part files: a flight per row, 336,776 a year
as nycflights13 has, over as many years as ``N`` makes), ``DIR/airlines.csv`` (a header,
types to infer), ``DIR/airports.json`` (JSON lines) and ``DIR/planes.parquet``: 16 carriers of
uneven size (UA's 58,665 flights a year down to OO's 32), three origins and 40 destinations,
cancelled flights (NULL delays), tail numbers the planes file lacks (a LEFT join keeps them).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

FLIGHTS_PER_YEAR = 336_776
CARRIERS = {"UA": 58665, "B6": 54635, "EV": 54173, "DL": 48110, "AA": 32729, "MQ": 26397, "US": 20536,
            "9E": 18460, "WN": 12275, "VX": 5162, "FL": 3260, "AS": 714, "F9": 685, "YV": 601, "HA": 342, "OO": 32}
ORIGINS = ("EWR", "JFK", "LGA")
DESTINATIONS = 40
PLANES = 3_300


def write(directory: str | Path, flights: int = FLIGHTS_PER_YEAR, seed: int = 13) -> Path:
    """The four sources under ``directory`` (created); returns it."""
    root = Path(directory)
    rng = np.random.default_rng(seed)
    (root / "flights").mkdir(parents=True, exist_ok=True)
    days = 365 * max(1, round(flights / FLIGHTS_PER_YEAR))
    weights = np.array(list(CARRIERS.values()), dtype=float)
    carrier = rng.choice(len(CARRIERS), size=flights, p=weights / weights.sum())
    destination = rng.integers(0, DESTINATIONS, size=flights)
    cancelled = rng.random(flights) < 0.025
    day = np.sort(rng.integers(0, days, size=flights))
    first = dt.date(2013, 1, 1)
    table = pa.table({
        "flight_id": pa.array(np.arange(1, flights + 1), pa.int64()),
        "day": pa.array([first + dt.timedelta(days=int(d)) for d in day], pa.date32()),
        "carrier": pa.array(np.array(list(CARRIERS))[carrier]),
        "flight_no": pa.array(rng.integers(1, 2000, size=flights), pa.int32()),
        "tailnum": pa.array([f"N{n:04d}" for n in rng.integers(0, PLANES + 200, size=flights)]),
        "origin": pa.array(np.array(ORIGINS)[rng.integers(0, len(ORIGINS), size=flights)]),
        "dest": pa.array([f"D{d:02d}" for d in destination]),
        "dep_delay": pa.array(rng.normal(12, 40, size=flights).round().astype(np.int32), mask=cancelled),
        "arr_delay": pa.array(rng.normal(7, 44, size=flights).round().astype(np.int32), mask=cancelled),
        "distance": pa.array(200 + destination * 61, pa.int32()),
    })
    half = flights // 2
    pq.write_table(table.slice(0, half), root / "flights" / "part-00000.parquet")
    pq.write_table(table.slice(half), root / "flights" / "part-00001.parquet")
    lines = ["carrier,name"] + [f"{code},{code} Airlines Inc." for code in CARRIERS]
    (root / "airlines.csv").write_text("\n".join(lines) + "\n")
    with open(root / "airports.json", "w", encoding="utf-8") as out:
        for number, code in enumerate([*ORIGINS, *(f"D{d:02d}" for d in range(DESTINATIONS))]):
            out.write(json.dumps({"faa": code, "name": f"Airport {code}", "tz": -5 - number % 4,
                                  "alt": 10 + 37 * number}) + "\n")
    pq.write_table(pa.table({
        "tailnum": pa.array([f"N{n:04d}" for n in range(PLANES)]),
        "year_built": pa.array(rng.integers(1975, 2013, size=PLANES), pa.int32()),
        "seats": pa.array(rng.choice([50, 76, 149, 182, 200, 330], size=PLANES), pa.int32()),
    }), root / "planes.parquet")
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory")
    parser.add_argument("--flights", type=int, default=FLIGHTS_PER_YEAR)
    args = parser.parse_args()
    print(write(args.directory, args.flights))


if __name__ == "__main__":
    main()
