-- Walmart Q8 (paper appendix B): ASPJ, 2 joins
select
    info.state,
    sum(item.total_scan_amount)
from
    item_scan item,
    item_description item_desc,
    store_information info
where
    item.item_nbr = item_desc.item_nbr
    and item.store_nbr = info.store_nbr
group by
    info.state,
    item_desc.category_nbr
having
    sum(item.total_scan_amount) > 3000
