-- SPJ query S4: 5 tables, 4 joins.
-- Reconstructed: S4 is missing from the paper's extracted text. It adds supplier
-- (joined through l_suppkey) to S3; S5 then adds partsupp.
select
    c_name,
    o_orderdate,
    l_shipdate,
    p_name,
    p_brand,
    p_type,
    s_name
from
    customer,
    part,
    supplier,
    lineitem,
    orders
where
    p_partkey = l_partkey
    and s_suppkey = l_suppkey
    and o_orderkey = l_orderkey
    and c_custkey = o_custkey
    and o_orderdate >= date '1994-01-01'
    and o_orderdate <= date '1994-01-01' + interval '3' day
