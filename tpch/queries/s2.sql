-- SPJ query S2: 3 tables, 2 joins.
-- Reconstructed: S2 is missing from the paper's extracted text. The SPJ queries
-- grow by one table each (S1: 2 ... S8: 9), so S2 adds customer to S1 with the
-- join and the 3-day o_orderdate window of S1/S5-S8.
select
    c_name,
    o_orderdate,
    o_totalprice,
    l_quantity,
    l_shipdate
from
    customer,
    lineitem,
    orders
where
    o_orderkey = l_orderkey
    and c_custkey = o_custkey
    and o_orderdate >= date '1994-01-01'
    and o_orderdate <= date '1994-01-01' + interval '3' day
