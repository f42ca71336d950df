-- SPJ query S3: 4 tables, 3 joins.
-- Reconstructed: S3 is missing from the paper's extracted text. It adds part
-- (joined through l_partkey) to S2, on the way to S5's table list.
select
    c_name,
    o_orderdate,
    l_quantity,
    l_shipdate,
    p_name,
    p_brand,
    p_type
from
    customer,
    part,
    lineitem,
    orders
where
    p_partkey = l_partkey
    and o_orderkey = l_orderkey
    and c_custkey = o_custkey
    and o_orderdate >= date '1994-01-01'
    and o_orderdate <= date '1994-01-01' + interval '3' day
