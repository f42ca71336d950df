"""``python -m tpch.memory_bench``: impact and explain over lineage of any size, cold, with
the peak memory of the whole process tree.

    python -m tpch.memory_bench [--rows 1000000] [--groups 10] [--repeat 1] [--out bench-results/memory]

Builds (cached in ``data/memory-ROWS-GROUPS``) a table of ``--rows`` events, registered in
place, and two saved results (control semantics):

* ``wide``: the events in ``--groups`` groups: each row's DL holds rows / groups ids
  (100,000 by default);
* ``narrow``: every event as it is: a million rows of one id each.

Each command then runs as a user runs it, ``python -m dltrace ...`` in a new process with
no server (``DLTRACE_SERVER=off``): impact across every saved result, impact on each, and
explain of a wide row.  Reported per command: wall time, the peak of the summed resident
memory of the process and all its descendants (``/proc``, sampled every 20 ms: a JVM it
starts is counted), whether a JVM started, and whether the answer is right: the affected
rows and their narrowed DLs, and the explained ids, against DuckDB over the same Parquet
files.  Then ``dltrace ui`` is started cold and asked as its page asks: a page of each
result, why of a wide row, impact on each result: each request's seconds, and the peak of
the server's process tree (its JVM included) over all of them.  Writes ``memory.md`` and
``memory.png`` under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import quote
from urllib.request import urlopen

from dltrace import LineageSession
from dltrace.table_data import duckdb_rows_sql
from tpch.duck import connect

BAD_KEY = 12_347  # the bad event: k = BAD_KEY (so --rows must be larger)
TARGETS = {"peak": 4 * 1024, "in place": 3.0}  # MiB of the process tree; seconds for impact and explain


def build(rows: int, groups: int, root: Path = Path("data")) -> Path:
    """The catalog (cached): events in place, ``wide`` and ``narrow`` saved."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    directory = root / f"memory-{rows}-{groups}"
    catalog = directory / "catalog"
    if (catalog / "results" / "narrow").exists():
        return catalog
    events = directory / "events"
    events.mkdir(parents=True, exist_ok=True)
    keys = np.arange(rows, dtype=np.int64)
    for part, chunk in enumerate(np.array_split(keys, 4)):
        pq.write_table(pa.table({"k": chunk, "g": chunk % groups, "v": (chunk * 7919) % 1000 / 10}),
                       events / f"part-{part}.parquet")
    session = LineageSession(catalog)
    session.register("events", events)
    session.save(session.sql("select g, count(*) as n, sum(v) as total from events group by g"), "wide")
    session.save(session.sql("select k, g, v from events"), "narrow")
    return catalog


def measured(args: list[str], catalog: Path) -> dict:
    """Run ``dltrace args`` cold; its seconds, peak tree memory (MiB), JVM started, stdout."""
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "SPARK_MASTER")}
    env["DLTRACE_SERVER"] = "off"
    started = time.perf_counter()
    errors = tempfile.TemporaryFile(mode="w+")  # not a pipe: a JVM's logging would fill it and block
    process = subprocess.Popen([sys.executable, "-m", "dltrace", *args, "--catalog", str(catalog)],
                               stdout=subprocess.PIPE, stderr=errors, text=True, env=env)
    sampler = TreeSampler(process.pid)
    stdout = process.communicate()[0]
    sampler.stop()
    seconds = time.perf_counter() - started
    errors.seek(0)
    if process.returncode != 0:
        raise SystemExit(f"memory_bench: `dltrace {' '.join(args)}` failed: {errors.read()[-500:]}")
    return {"seconds": seconds, "peak_mib": sampler.peak / 1024, "jvm": sampler.jvm, "stdout": stdout}


class TreeSampler:
    """The peak summed resident memory (KiB) of a process and its descendants, and whether a
    JVM ran among them: sampled every 20 ms in a thread of its own until ``stop``."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self.jvm = pid, 0, False
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._sample)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stopped.is_set():
            tree = descendants(self.pid)
            self.peak = max(self.peak, sum(resident_kib(pid) for pid in tree))
            self.jvm = self.jvm or any(command_name(pid) == "java" for pid in tree)
            time.sleep(0.02)

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join()


def descendants(pid: int) -> list[int]:
    """``pid`` and every process under it (``/proc/PID/task/*/children``)."""
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        found.append(current)
        tasks = Path(f"/proc/{current}/task")
        for task in tasks.iterdir() if tasks.exists() else []:
            try:
                pending.extend(int(child) for child in (task / "children").read_text().split())
            except OSError:
                continue
    return found


def resident_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def command_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def expected(catalog: Path, groups: int) -> dict:
    """DuckDB's answers over the same files: the bad event's id and each group's size."""
    from dltrace.catalog import Catalog

    db = connect()
    db.execute(f"CREATE VIEW events AS {duckdb_rows_sql(Catalog(catalog), 'events')}")
    (bad_id,) = db.execute(f"SELECT _dl_id FROM events WHERE k = {BAD_KEY}").fetchone()
    sizes = dict(db.execute("SELECT g, COUNT(*) FROM events GROUP BY g").fetchall())
    return {"bad_id": bad_id, "bad_group": BAD_KEY % groups, "sizes": sizes}


def json_rows(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def impact_right(rows: list[dict], truth: dict, results: tuple[str, ...]) -> bool:
    """The affected rows are the bad event's group in ``wide`` and the event in ``narrow``,
    each with DL narrowed to the bad event's id."""
    found = sorted((row.get("result", results[0]), row.get("k", row.get("g"))) for row in rows)
    wanted = sorted({"wide": ("wide", truth["bad_group"]), "narrow": ("narrow", BAD_KEY)}[r] for r in results)
    return found == wanted and all(row["DL"] == [truth["bad_id"]] for row in rows)


COMMANDS = {
    "impact, every result": (["impact", "--source", f"events WHERE k = {BAD_KEY}", "--format", "json"],
                             lambda rows, truth: impact_right(rows, truth, ("wide", "narrow"))),
    "impact --result wide": (["impact", "--source", f"events WHERE k = {BAD_KEY}", "--result", "wide",
                              "--format", "json"], lambda rows, truth: impact_right(rows, truth, ("wide",))),
    "impact --result narrow": (["impact", "--source", f"events WHERE k = {BAD_KEY}", "--result", "narrow",
                                "--format", "json"], lambda rows, truth: impact_right(rows, truth, ("narrow",))),
    "explain wide row 0": (["explain", "--result", "wide", "--row", "0", "--format", "json"],
                           lambda rows, truth: len({r["g"] for r in rows}) == 1
                           and len(rows) == truth["sizes"][rows[0]["g"]] == len({r["_dl_id"] for r in rows})),
}


EXPLORER = {  # the explorer's requests as the page makes them, in this order, on one server
    "explorer: page of wide": "/api/results/wide?offset=0&limit=100",
    "explorer: page of narrow": "/api/results/narrow?offset=0&limit=1000",
    "explorer: why of wide row 0": "/api/results/wide/0/why?limit=50",
    "explorer: impact on wide": f"/api/impact?source={quote(f'events WHERE k = {BAD_KEY}')}&result=wide",
    "explorer: impact on narrow": f"/api/impact?source={quote(f'events WHERE k = {BAD_KEY}')}&result=narrow",
}


def explorer(catalog: Path) -> dict[str, dict]:
    """``dltrace ui`` started cold, each request of ``EXPLORER`` timed; the peak memory of the
    server's process tree (its JVM included) from its start to the last answer."""
    env = {**{k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "SPARK_MASTER")},
           "DLTRACE_SERVER": "off"}
    server = subprocess.Popen([sys.executable, "-m", "dltrace", "ui", "--port", "0", "--catalog", str(catalog)],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    sampler = TreeSampler(server.pid)
    try:
        address = server.stdout.readline().split(" at ")[-1].strip()
        found = {}
        for name, path in EXPLORER.items():
            started = time.perf_counter()
            with urlopen(address.split("?")[0].rstrip("/") + path, timeout=600) as response:
                body = response.read()
            found[name] = {"seconds": time.perf_counter() - started, "body": json.loads(body)}
        return {name: {**r, "peak_mib": sampler.peak / 1024, "jvm": sampler.jvm} for name, r in found.items()}
    finally:
        sampler.stop()
        server.terminate()
        server.wait()


def explorer_right(name: str, body: dict, truth: dict, groups: int) -> bool:
    """Each explorer answer against DuckDB's: pages list every row's DL count, why gives
    the group's events, impact the bad event's row with DL narrowed to its id."""
    if name.startswith("explorer: page"):
        sizes = [row["dl"]["events"] for row in body["rows"]]
        wide = body["result"] == "wide"
        return body["total"] == (groups if wide else sum(truth["sizes"].values())) and all(
            size == (truth["sizes"][row["values"]["g"]] if wide else 1) for size, row in zip(sizes, body["rows"]))
    if name.startswith("explorer: why"):
        events = body["tables"]["events"]
        return events["total"] == truth["sizes"][events["rows"][0]["g"]] == body["ids"]["events"]
    (answer,) = body["results"].values()
    (row,) = answer["rows"]
    key = "g" if "wide" in name else "k"
    return row["DL"] == [truth["bad_id"]] and row["values"][key] == (truth["bad_group"] if key == "g" else BAD_KEY)


def report(rows: int, groups: int, results: dict[str, dict]) -> str:
    lines = [f"{rows:,} events registered in place; `wide`: {groups} rows of {rows // groups:,} ids each; "
             f"`narrow`: {rows:,} rows of one id; each command a new process, no server\n",
             "| command | seconds | peak MiB (process tree) | JVM started | answer right |", "|---|---:|---:|---|---|"]
    for name, r in results.items():
        lines.append(f"| `{name}` | {r['seconds']:.2f} | {r['peak_mib']:,.0f} | {'yes' if r['jvm'] else 'no'} | "
                     f"{'yes' if r['right'] else '**no**'} |")
    return "\n".join(lines) + "\n"


def plot(results: dict[str, dict], target: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [name.replace(", ", "\n").replace(" --", "\n--") for name in results]
    figure, axes = plt.subplots(1, 2, figsize=(11, 4))
    axes[0].bar(labels, [r["seconds"] for r in results.values()], color="#4878a8")
    axes[0].axhline(TARGETS["in place"], color="grey", linestyle="--", linewidth=1)
    axes[0].set_title("seconds, cold (target 3 s)")
    axes[1].bar(labels, [r["peak_mib"] for r in results.values()], color="#6a9a58")
    axes[1].axhline(TARGETS["peak"], color="grey", linestyle="--", linewidth=1)
    axes[1].set_title("peak MiB of the process tree (target 4 GiB)")
    for axis in axes:
        axis.tick_params(axis="x", labelsize=8)
    figure.tight_layout()
    figure.savefig(target, dpi=110)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tpch.memory_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--groups", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("bench-results/memory"))
    args = parser.parse_args(argv)
    print(f"building {args.rows:,} events and the saved results (cached in data/)", file=sys.stderr, flush=True)
    catalog = build(args.rows, args.groups)
    truth = expected(catalog, args.groups)
    results = {}
    for name, (command, right) in COMMANDS.items():
        runs = [measured(command, catalog) for _ in range(args.repeat)]
        results[name] = {"seconds": statistics.median(r["seconds"] for r in runs),
                         "peak_mib": max(r["peak_mib"] for r in runs), "jvm": any(r["jvm"] for r in runs),
                         "right": all(right(json_rows(r["stdout"]), truth) for r in runs)}
        print(f"{name}: {results[name]['seconds']:.2f} s, {results[name]['peak_mib']:,.0f} MiB, "
              f"JVM {'yes' if results[name]['jvm'] else 'no'}, right {results[name]['right']}",
              file=sys.stderr, flush=True)
    for name, found in explorer(catalog).items():
        results[name] = {**found, "right": explorer_right(name, found["body"], truth, args.groups)}
        print(f"{name}: {found['seconds']:.2f} s", file=sys.stderr, flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    text = report(args.rows, args.groups, results)
    (args.out / "memory.md").write_text(text + "\n![memory](memory.png)\n")
    plot(results, args.out / "memory.png")
    print(text)
    return 0 if all(r["right"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
