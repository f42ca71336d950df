-- Walmart Q4 (paper appendix B): SPJ, 3 joins
select
    visit.visit_nbr,
    info.store_name,
    item_desc.primary_desc,
    item.total_scan_amount
from
    item_scan item,
    store_visits visit,
    item_description item_desc,
    store_information info
where
    visit.visit_nbr = item.visit_nbr
    and item.item_nbr = item_desc.item_nbr
    and info.store_nbr = visit.store_nbr
    and visit.store_nbr = 126
