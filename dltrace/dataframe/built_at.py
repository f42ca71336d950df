"""Where a job's script built each DataFrame, so that an analysis error is reported at the
line that built the bad DataFrame, as ``spark-submit`` (classic Spark, which analyses each
DataFrame as it is built) reports it, with Spark's own message and suggestion.

Under ``dltrace run`` the script runs on Spark Connect, which analyses a DataFrame only when
an action needs it: a misspelt column surfaces at the later write, in dltrace's translation.
Recording costs a walk up the call stack per DataFrame; the search runs only on a failure:
the DataFrames the script built, in the order it built them, are analysed by Spark until
one fails, and that one is where classic Spark would have failed first.
"""

from __future__ import annotations

import os
import sys
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyspark

KEPT = 5000  # the last DataFrames built are the ones searched (a loop may build millions)
PYSPARK = str(Path(pyspark.__file__).parent)
DLTRACE = str(Path(__file__).resolve().parents[1])


class BuiltAt:
    """The plans a script built (``recording``) and the script line of each."""

    def __init__(self, script: str) -> None:
        self.script = script
        self.built: deque = deque(maxlen=KEPT)  # (plan, session, line), in the order built

    @contextmanager
    def recording(self) -> Iterator[None]:
        from pyspark.sql.connect.dataframe import DataFrame

        earlier = DataFrame.__init__

        def init(frame, plan, session) -> None:
            earlier(frame, plan, session)
            if line := self.script_line():
                self.built.append((plan, session, line))

        DataFrame.__init__ = init
        try:
            yield
        finally:
            DataFrame.__init__ = earlier

    def script_line(self) -> int:
        """The script's line when the script (or a module of its own) built the DataFrame
        being made, not pyspark or dltrace for it; else 0."""
        frame = sys._getframe(2)
        while frame is not None and frame.f_code.co_filename.startswith(PYSPARK):
            frame = frame.f_back
        if frame is None or frame.f_code.co_filename.startswith(DLTRACE):
            return 0
        while frame is not None and os.path.abspath(frame.f_code.co_filename) != self.script:
            frame = frame.f_back
        return frame.f_lineno if frame is not None else 0

    def first_rejected(self) -> tuple[int, Exception] | None:
        """The line of the first DataFrame built that Spark's analysis rejects, and its error."""
        from pyspark.errors import AnalysisException

        for plan, session, line in self.built:
            try:
                session.client.schema(plan.to_proto(session.client))  # Spark's analysis of the plan
            except AnalysisException as error:
                return line, error
        return None
