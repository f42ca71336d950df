-- Walmart Q2 (paper appendix B): SPJ, 1 join
select
    visit.visit_nbr,
    item.item_nbr,
    item.total_scan_amount
from
    item_scan item,
    store_visits visit
where
    visit.visit_nbr = item.visit_nbr
    and visit.store_nbr = 126
