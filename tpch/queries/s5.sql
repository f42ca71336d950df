-- SPJ query S5: 6 tables, 5 joins.
-- Reconstructed: S5 is garbled in the paper's extracted text. Its legible parts
-- name exactly these six tables and this select list; the join predicates are
-- those of S6 without nation (the garbled copy shows the same predicates).
select
    c_name,
    o_orderdate,
    l_shipdate,
    p_name,
    p_brand,
    p_type,
    s_name,
    ps_supplycost
from
    customer,
    part,
    partsupp,
    supplier,
    lineitem,
    orders
where
    p_partkey = ps_partkey
    and ps_suppkey = s_suppkey
    and l_partkey = ps_partkey
    and l_suppkey = ps_suppkey
    and o_orderkey = l_orderkey
    and c_custkey = o_custkey
    and o_orderdate >= date '1994-01-01'
    and o_orderdate <= date '1994-01-01' + interval '3' day
