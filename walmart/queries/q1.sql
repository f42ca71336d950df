-- Walmart Q1 (paper appendix B): SPJ, no join
select
    item.store_nbr,
    item.item_nbr,
    item.total_scan_amount
from
    item_scan item
where
    item.store_nbr = 126
