-- Walmart Q6 (paper appendix B): ASPJ, 1 join
select
    sum(item.total_scan_amount)
from
    item_scan item,
    store_information info
where
    item.store_nbr = info.store_nbr
group by
    info.city
