"""PySpark DataFrame programs with lineage: their Spark Connect plans translated to SQL for
the one rewriter (``plan``, ``expressions``), the session users build them in (``frames``),
and PySpark scripts run as pipelines (``jobs``)."""

from dltrace.dataframe.frames import DataFrameFront, is_connect_frame

__all__ = ["DataFrameFront", "is_connect_frame"]
