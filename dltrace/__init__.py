"""dltrace: forward data lineage for Spark SQL.

Every output row of a traced query carries ``DL``, the set of ids of the base rows it
derives from (Zhang, Zhang, Prabhakar: Cost Effective Forward Tracing Data Lineage, 2007).
"""

from dltrace.errors import BadInput, DltraceError, UnsupportedLineage
from dltrace.session import LineageSession

__all__ = ["LineageSession", "DltraceError", "BadInput", "UnsupportedLineage"]
__version__ = "0.1.0"
