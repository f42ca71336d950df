-- SPJ query S1 of the paper's appendix A: 2 tables, 1 join
select
    o_orderdate,
    o_totalprice,
    l_quantity,
    l_shipdate
from
    lineitem,
    orders
where
    o_orderkey = l_orderkey
    and o_orderdate >= date '1994-01-01'
    and o_orderdate <= date '1994-01-01' + interval '3' day
