-- Walmart Q7 (paper appendix B): ASPJ, 1 join
select
    item.store_nbr,
    sum(item.total_scan_amount)
from
    item_scan item,
    item_description item_desc
where
    item.item_nbr = item_desc.item_nbr
group by
    item.store_nbr,
    item_desc.category_nbr
having
    sum(item.total_scan_amount) > 3000
