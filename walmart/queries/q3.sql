-- Walmart Q3 (paper appendix B): SPJ, 2 joins.
-- The paper's FROM clause lacks the alias item_desc that its select list and
-- join use; it is added here.
select
    visit.visit_nbr,
    item_desc.primary_desc,
    item.total_scan_amount
from
    item_scan item,
    store_visits visit,
    item_description item_desc
where
    visit.visit_nbr = item.visit_nbr
    and item.item_nbr = item_desc.item_nbr
    and visit.store_nbr = 126
