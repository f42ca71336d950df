-- SPJ query S6 of the paper's appendix A: 7 tables, 6 joins
select
    c_name,
    o_orderdate,
    l_shipdate,
    p_name,
    p_brand,
    p_type,
    s_name,
    n_name,
    ps_supplycost
from
    customer,
    part,
    partsupp,
    supplier,
    lineitem,
    orders,
    nation
where
    p_partkey = ps_partkey
    and ps_suppkey = s_suppkey
    and l_partkey = ps_partkey
    and l_suppkey = ps_suppkey
    and o_orderkey = l_orderkey
    and c_custkey = o_custkey
    and s_nationkey = n_nationkey
    and o_orderdate >= date '1994-01-01'
    and o_orderdate <= date '1994-01-01' + interval '3' day
