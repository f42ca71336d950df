"""``python -m tpch.warm_cli_bench``: the command line cold (a JVM started per command) and
warm (``dltrace server``), side by side in one run, on a catalog with saved results (the
demo's: ``make demo`` leaves it in ./.dltrace).

    python -m tpch.warm_cli_bench [--catalog .dltrace] [--repeat 3] [--out bench-results/warm-cli]

Each command runs as a user runs it, ``python -m dltrace ...`` in a new process, ``--repeat``
times cold (``DLTRACE_SERVER=off``) and warm (a server of its own, started first, in a
private ``DLTRACE_SERVER_DIR``, stopped at the end); medians are reported with their ratio,
and the server's start and the first warm command apart.  Writes ``warm-cli.md`` and
``warm-cli.png`` under ``--out``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dltrace.demo import DEMO_BAD_ROW

COMMANDS = {
    "impact": ["impact", "--source", DEMO_BAD_ROW],
    "explain": ["explain", "--result", "custrev", "--row", "0"],
    "results": ["results"],
    # a predicate with a subquery: its bad ids found by Spark (dltrace/impact/files.py)
    "impact, by Spark": ["impact", "--source", "orders WHERE o_custkey IN (SELECT c_custkey FROM customer "
                                               "WHERE c_nationkey = 7)"],
}


def timed(args: list[str], env: dict[str, str]) -> float:
    """Seconds for one ``dltrace`` command in a new process; it must succeed."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "dltrace", *args], capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"warm_cli_bench: `dltrace {' '.join(args)}` failed: {done.stderr.strip()[-500:]}")
    return elapsed


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def medians(label: str, catalog: Path, repeat: int, commands: dict[str, list[str]], env: dict[str, str]) -> dict:
    """Each command's median time over ``repeat`` runs in ``env``."""
    found = {}
    for name, args in commands.items():
        times = []
        for run in range(repeat):
            times.append(timed([*args, "--catalog", str(catalog)], env))
            log(f"{label} {name} {run + 1}/{repeat}: {times[-1]:.1f} s")
        found[name] = statistics.median(times)
    return found


def measure(catalog: Path, repeat: int, commands: dict[str, list[str]]) -> tuple[dict, dict, float, float]:
    """(cold medians, warm medians, the server's start, the first warm command) in seconds."""
    base = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "SPARK_MASTER", "DLTRACE_SERVER")}
    with tempfile.TemporaryDirectory(prefix="dltrace-warm-") as directory:
        cold_env = {**base, "DLTRACE_SERVER": "off"}
        warm_env = {**base, "DLTRACE_SERVER_DIR": directory}
        cold = medians("cold", catalog, repeat, commands, cold_env)
        server = [sys.executable, "-m", "dltrace", "server"]
        started = time.perf_counter()
        subprocess.run([*server, "start"], env=warm_env, check=True, capture_output=True)
        start = time.perf_counter() - started
        log(f"server started in {start:.1f} s")
        try:
            first_args = next(iter(commands.values()))
            first = timed([*first_args, "--catalog", str(catalog)], warm_env)
            log(f"first warm command: {first:.1f} s")
            warm = medians("warm", catalog, repeat, commands, warm_env)
        finally:
            subprocess.run([*server, "stop"], env=warm_env, capture_output=True)
    return cold, warm, start, first


def report(cold: dict, warm: dict, start: float, first: float, repeat: int, out: Path) -> str:
    lines = ["| command | cold (s) | warm (s) | cold / warm |", "|---|---:|---:|---:|"]
    for name in cold:
        lines.append(f"| `dltrace {' '.join(COMMANDS.get(name, [name]))}` | {cold[name]:.2f} | {warm[name]:.2f} | "
                     f"{cold[name] / warm[name]:.1f}x |")
    text = "\n".join([
        f"# The command line cold and warm (medians of {repeat}, each command a new process)", "",
        *lines, "",
        f"`dltrace server start`: {start:.1f} s; the first command on it: {first:.1f} s.", ""])
    out.mkdir(parents=True, exist_ok=True)
    (out / "warm-cli.md").write_text(text)
    plot(cold, warm, out / "warm-cli.png")
    return text


def plot(cold: dict, warm: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(cold)
    figure, axes = plt.subplots(figsize=(6, 3))
    positions = range(len(names))
    axes.barh([p + 0.2 for p in positions], [cold[n] for n in names], height=0.4,
              label="cold (no server: a JVM for each command that needs Spark)")
    axes.barh([p - 0.2 for p in positions], [warm[n] for n in names], height=0.4, label="warm (dltrace server)")
    axes.set_yticks(list(positions), names)
    axes.set_xlabel("seconds per command")
    axes.legend(loc="lower right", fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tpch.warm_cli_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--catalog", type=Path, default=Path(".dltrace"), help="a catalog with the demo's results")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("bench-results/warm-cli"))
    args = parser.parse_args(argv)
    if not (args.catalog / "results" / "custrev").is_dir():
        print(f"warm_cli_bench: error: {args.catalog} has no saved result custrev: run `make demo` first "
              f"(or name the demo's catalog with --catalog)", file=sys.stderr)
        return 2
    cold, warm, start, first = measure(args.catalog.resolve(), args.repeat, COMMANDS)
    print(report(cold, warm, start, first, args.repeat, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
