"""Generated files for the shop job (``shop_job.py``): what a team's daily job reads.

    python -m dltrace.examples.shop_data DIR [--orders N]

writes, seeded, ``DIR/orders/`` (Parquet, two part files, as Spark writes a directory),
``DIR/customers.csv`` (a header, types to infer) and ``DIR/products.json`` (JSON lines):
orders with cancelled ones and missing quantities, customers in a few countries, products
in a few categories, one product ordered that the catalog lacks (a LEFT join keeps it).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

COUNTRIES = ("DE", "FR", "NL", "PL", "SE")
CATEGORIES = ("books", "garden", "games", "kitchen", "tools")


def write(directory: str | Path, orders: int = 2000, seed: int = 53) -> Path:
    """The three sources under ``directory`` (created); returns it."""
    root = Path(directory)
    rng = np.random.default_rng(seed)
    customers, products = max(orders // 20, 10), 40
    (root / "orders").mkdir(parents=True, exist_ok=True)
    quantity = rng.integers(1, 6, orders).astype(object)
    quantity[rng.random(orders) < 0.05] = None
    seconds = np.sort(rng.integers(0, 28 * 86400, orders)) + 1_793_491_200  # from 2026-11-01
    table = pa.table({
        "order_id": pa.array(np.arange(1, orders + 1), pa.int64()),
        "customer_id": pa.array(rng.integers(1, customers + 1, orders), pa.int32()),
        "product_id": pa.array(rng.integers(1, products + 2, orders), pa.int32()),  # products + 1 is unknown
        "qty": pa.array(list(quantity), pa.int32()),
        "order_ts": pa.array(seconds * 1_000_000, pa.timestamp("us")),
        "status": pa.array(rng.choice(["shipped", "shipped", "shipped", "cancelled", "returned"], orders)),
    })
    half = orders // 2
    pq.write_table(table.slice(0, half), root / "orders" / "part-00000.parquet")
    pq.write_table(table.slice(half), root / "orders" / "part-00001.parquet")
    with open(root / "customers.csv", "w") as out:
        out.write("customer_id,name,country,signup_date\n")
        for customer in range(1, customers + 1):
            out.write(f"{customer},customer {customer},{rng.choice(COUNTRIES)},"
                      f"2025-{rng.integers(1, 13):02d}-{rng.integers(1, 29):02d}\n")
    with open(root / "products.json", "w") as out:
        for product in range(1, products + 1):
            price = round(float(rng.uniform(2, 80)), 2)
            out.write(json.dumps({"product_id": product, "category": str(rng.choice(CATEGORIES)),
                                  "price": price}) + "\n")
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory")
    parser.add_argument("--orders", type=int, default=2000)
    args = parser.parse_args()
    print(write(args.directory, args.orders))


if __name__ == "__main__":
    main()
