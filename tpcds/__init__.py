"""TPC-DS experiments: queries whose rows share large lineage (``python -m tpcds``)."""
