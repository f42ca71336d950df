-- SPJ query S8 of the paper's appendix A: 9 tables, 8 joins
select
    c_name,
    n2.n_name as cust_nation,
    r_name,
    o_orderdate,
    l_shipdate,
    p_name,
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
    nation n2,
    region
where
    p_partkey = ps_partkey
    and ps_suppkey = s_suppkey
    and l_partkey = ps_partkey
    and l_suppkey = ps_suppkey
    and o_orderkey = l_orderkey
    and c_custkey = o_custkey
    and s_nationkey = n1.n_nationkey
    and c_nationkey = n2.n_nationkey
    and n1.n_regionkey = r_regionkey
    and o_orderdate >= date '1994-01-01'
    and o_orderdate <= date '1994-01-01' + interval '3' day
