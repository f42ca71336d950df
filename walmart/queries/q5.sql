-- Walmart Q5 (paper appendix B): ASPJ, no join
select
    sum(item_quantity)
from
    item_scan
group by
    store_nbr
