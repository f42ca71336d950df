-- SPJ query S7 of the paper's appendix A: 8 tables, 7 joins.
-- The paper selects n2.n_name and n1.n_name unaliased (two output columns named
-- n_name); they are aliased here as in S8 so that the result has unique names.
select
    c_name,
    n2.n_name as cust_nation,
    o_orderdate,
    l_shipdate,
    p_name,
    p_brand,
    p_type,
    s_name,
    n1.n_name as supp_nation,
    ps_supplycost
from
    customer,
    part,
    partsupp,
    supplier,
    lineitem,
    orders,
    nation n1,
    nation n2
where
    p_partkey = ps_partkey
    and ps_suppkey = s_suppkey
    and l_partkey = ps_partkey
    and l_suppkey = ps_suppkey
    and o_orderkey = l_orderkey
    and c_custkey = o_custkey
    and s_nationkey = n1.n_nationkey
    and c_nationkey = n2.n_nationkey
    and o_orderdate >= date '1994-01-01'
    and o_orderdate <= date '1994-01-01' + interval '3' day
