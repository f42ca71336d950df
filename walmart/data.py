"""A synthetic stand-in for the paper's Walmart data set (section 5.6, Figure 7).

The paper used one day of real point-of-sale data (300 MB) that is not public.
This generator writes the four tables its appendix B queries read, with the
columns they use plus realistic extras, shaped so that the queries' result
cardinalities at ``scale=1`` land near the paper's Table 9:

* ``store_information``: 320 stores of a chain (store_nbr between 1 and 400,
  126 always present) in about 270 cities of the 50 states; a few metro
  cities hold several stores (up to 5).
* ``store_visits``: one row per checkout on one business day at 130 of those
  stores (the paper's Q5 has 130 groups). Store sizes are Zipf-like (the
  largest has 3.3 % of the day, the smallest 0.45 %); store 126 carries 1 %
  (Q1: 14,871 rows, the paper 14,898). ``visit_nbr`` is issued in order of
  ``visit_time``, so it is chronological.
* ``item_scan``: one row per scanned line, 5 per visit on average (1.46 M at
  scale 1: the paper's Q5 averages 11,248 ids over 130 stores, ours 11,239),
  items drawn Zipf-like from the catalog (the top item is 1 % of the lines);
  1.5 % are returns with negative quantity and amount. A visit's
  ``total_visit_amount`` is the sum of its scans.
* ``item_description``: the catalog, 28 categories in 10 departments. 17 % of
  the scanned lines name items missing from it (local and discontinued items),
  as in the paper, where Q3 keeps 12,376 of Q2's 14,898 rows.

Result rows at ``scale=1`` (paper's Table 9 in brackets): Q1 14,871
(14,898), Q2 14,871 (14,898), Q3 12,374 (12,376), Q4 12,374 (12,376), Q5 130
(130), Q6 118 (121), Q7 3,199 (3,293), Q8 1,180 (7,608). Table 9 contradicts
itself on Q8: 7,608 rows of 946 ids on average would be 7.2 M ids, not the
1,343,557 it lists (1,343,557 / 946 = 1,420 rows). Q7's figures (3,293 groups
of 405 ids, 1.34 M ids in all, about every described scan) mean ~25 categories
per store, and with that few categories a (state, category) grouping has at
most states x categories ~ 1,300 groups, so the data follows Q8's total, not
its cardinality.

Sizes at ``scale=1``: item_scan 1,461,022 rows, store_visits 292,000,
item_description 60,000, store_information 320; 165 MB as CSV (the paper:
300 MB, likely wider real rows; the row counts follow Table 9 instead) and
32 MB as Parquet. ``scale`` multiplies the visits and scans; the catalog grows
with its square root (more shopping meets more of the catalog, but not
proportionally more) and the stores stay fixed, so at small scales the
``having sum(...) > 3000`` of Q7 and Q8 keeps few groups.

Types: money decimal(9,2) (unit prices, tax) or decimal(11,2) (line and visit
totals), counts and small numbers int32, ``visit_nbr`` and ``upc_nbr`` int64,
``visit_date`` and ``open_date`` date32, ``visit_time`` and ``scan_time``
timestamp without time zone (the store's wall clock, shown alike in every
session time zone; Spark reads it as ``timestamp_ntz``), text string.
Generation is deterministic (fixed seed) and vectorized: scale 1 takes about
3 seconds.
"""

from datetime import date, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from dltrace.datasets import Registration, cached_directory, parquet_readable
from dltrace.datasets import progress as _progress

TABLES = ("store_information", "item_description", "store_visits", "item_scan")

REGISTRATION: dict[str, Registration] = {
    "store_information": Registration(key=("store_nbr",), order_by=("store_nbr",)),
    "item_description": Registration(key=("item_nbr",), order_by=("item_nbr",)),
    "store_visits": Registration(key=("visit_nbr",), order_by=("visit_time", "visit_nbr")),
    "item_scan": Registration(
        key=("visit_nbr", "scan_seq"), order_by=("scan_time", "visit_nbr", "scan_seq")
    ),
}

SEED = 2007
BUSINESS_DAY = date(2006, 10, 14)
CHAIN_STORES = 320
ACTIVE_STORES = 130
FEATURED_STORE = 126  # the store the appendix B SPJ queries select
FEATURED_STORE_SHARE = 0.0102  # 14,898 of the paper's 1.46 M scans
SCANS_AT_SCALE_1 = 1_460_000
MEAN_ITEMS_PER_VISIT = 5.0
CATALOG_ITEMS_AT_SCALE_1 = 60_000
UNDESCRIBED_SCAN_SHARE = 0.17
RETURN_SHARE = 0.015
# Skews and price level, tuned so that Q6, Q7 and Q8 land near Table 9: a
# store's share of the day falls as 1/rank**0.4, an item's popularity as
# 1/rank**0.7, and the median item sells for about $10 (a line averages $18,
# a store about $200,000 on the day).
STORE_SIZE_ZIPF = 0.4
ITEM_POPULARITY_ZIPF = 0.7
CITY_POPULARITY_ZIPF = 0.5
MEDIAN_PRICE_DOLLARS = 10.0

# The chain's states, with a weight for their share of the stores (a few large
# states hold many) and their sales tax rate.
STATES = {
    "TX": (8, 0.0825), "FL": (8, 0.06), "CA": (8, 0.0725), "GA": (6, 0.07), "NC": (6, 0.0675),
    "OH": (6, 0.0575), "PA": (5, 0.06), "IL": (5, 0.0625), "MO": (5, 0.0423), "TN": (5, 0.07),
    "AL": (4, 0.04), "OK": (4, 0.045), "AR": (4, 0.06), "LA": (4, 0.04), "VA": (4, 0.05),
    "SC": (4, 0.06), "MS": (3, 0.07), "KY": (3, 0.06), "IN": (3, 0.06), "MI": (3, 0.06),
    "AZ": (3, 0.056), "KS": (2, 0.053), "CO": (2, 0.029), "NY": (3, 0.04), "WI": (2, 0.05),
    "IA": (2, 0.05), "MN": (2, 0.065), "NM": (2, 0.05), "NE": (2, 0.055), "WV": (2, 0.06),
    "WA": (2, 0.065), "OR": (2, 0.0), "NV": (2, 0.065), "UT": (2, 0.0475), "ID": (2, 0.06),
    "MT": (2, 0.0), "WY": (2, 0.04), "SD": (2, 0.04), "ND": (2, 0.05), "ME": (2, 0.05),
    "NH": (2, 0.0), "VT": (2, 0.06), "MA": (2, 0.05), "CT": (2, 0.06), "NJ": (2, 0.07),
    "DE": (2, 0.0), "MD": (2, 0.05), "RI": (2, 0.07), "HI": (2, 0.04), "AK": (2, 0.0),
}
CITY_PREFIXES = (
    "OAK", "CEDAR", "MAPLE", "PINE", "ELM", "RIVER", "LAKE", "SPRING", "FAIR", "GREEN",
    "CLEAR", "ROCK", "SUN", "WOOD", "BRIGHT", "GLEN", "ASH", "BROOK", "MILL", "STONE",
    "RED", "WHITE", "BLUE", "SILVER", "HIGH", "NEW", "EAST", "WEST", "NORTH", "SOUTH",
    "BIRCH", "WILLOW", "HAZEL", "IRON", "COPPER", "GOLD", "EAGLE", "HAWK", "FOX", "DEER",
    "BEAR", "WOLF", "PRAIRIE", "MEADOW", "HARBOR", "BAY", "MOUNT", "SHADY", "POND", "CROSS",
)
CITY_SUFFIXES = (
    "VILLE", "TON", "FIELD", "WOOD", "DALE", "PORT", "BURG", " FALLS", " SPRINGS", " CITY",
    " HILLS", " CREEK", "FORD", " GROVE", " HEIGHTS", " VALLEY", "MONT", " PARK", " RIDGE", " BLUFF",
    " JUNCTION", " CROSSING", "LAND", "HAVEN", " POINT", " LAKE", "VIEW", " CENTER", " BEND", " MILLS",
)
BRANDS = (
    "GREAT VALUE", "EQUATE", "MAINSTAYS", "PARENTS CHOICE", "SAMS CHOICE", "OL ROY",
    "SPECIAL KITTY", "HOME TRENDS", "OZARK TRAIL", "FADED GLORY", "GEORGE", "DURABRAND",
    "ACME", "NORTHWIND", "BLUE RIDGE", "SUNNY FARMS", "PRAIRIE GOLD", "HARBOR HOME",
    "TRUE NORTH", "KITCHEN KING", "FRESH CHOICE", "BRIGHT STAR", "EVERGREEN", "SUMMIT",
)
# The merchandise categories (category_nbr) and the products each one sells;
# three categories make a department (dept_nbr).
CATEGORY_PRODUCTS = (
    ("DAIRY", ("WHOLE MILK", "2% MILK", "CHEDDAR CHEESE", "YOGURT", "BUTTER")),
    ("BAKERY", ("WHITE BREAD", "WHEAT BREAD", "BAGELS", "MUFFINS")),
    ("PRODUCE", ("BANANAS", "APPLES", "LETTUCE", "TOMATOES", "POTATOES")),
    ("MEAT", ("GROUND BEEF", "CHICKEN BREAST", "PORK CHOPS", "BACON")),
    ("FROZEN FOODS", ("FROZEN PIZZA", "ICE CREAM", "FROZEN VEGETABLES", "FROZEN DINNER")),
    ("DRY GROCERY", ("PASTA", "RICE", "CEREAL", "CANNED SOUP", "PEANUT BUTTER")),
    ("BEVERAGES", ("COLA", "BOTTLED WATER", "ORANGE JUICE", "COFFEE", "TEA")),
    ("SNACKS", ("POTATO CHIPS", "COOKIES", "CRACKERS", "CANDY BAR")),
    ("HEALTH", ("PAIN RELIEVER", "VITAMINS", "BANDAGES", "COLD MEDICINE")),
    ("BEAUTY", ("SHAMPOO", "LOTION", "LIPSTICK", "DEODORANT")),
    ("PERSONAL CARE", ("TOOTHPASTE", "BAR SOAP", "RAZORS", "TOOTHBRUSH")),
    ("BABY", ("DIAPERS", "BABY WIPES", "BABY FORMULA", "BABY FOOD")),
    ("HOUSEHOLD CHEMICALS", ("LAUNDRY DETERGENT", "DISH SOAP", "BLEACH", "ALL PURPOSE CLEANER")),
    ("PAPER GOODS", ("PAPER TOWELS", "TOILET PAPER", "NAPKINS", "TRASH BAGS")),
    ("PETS", ("DOG FOOD", "CAT FOOD", "CAT LITTER", "DOG TREATS")),
    ("MENS APPAREL", ("MENS T-SHIRT", "MENS JEANS", "MENS SOCKS", "MENS POLO")),
    ("WOMENS APPAREL", ("WOMENS BLOUSE", "WOMENS JEANS", "WOMENS SWEATER", "WOMENS LEGGINGS")),
    ("KIDS APPAREL", ("KIDS T-SHIRT", "KIDS SNEAKERS", "KIDS PAJAMAS", "KIDS JACKET")),
    ("SHOES", ("SNEAKERS", "SANDALS", "WORK BOOTS", "SLIPPERS")),
    ("HOME DECOR", ("PICTURE FRAME", "CANDLE", "THROW PILLOW", "WALL CLOCK")),
    ("BED AND BATH", ("BATH TOWEL", "SHEET SET", "SHOWER CURTAIN", "BED PILLOW")),
    ("KITCHEN", ("FRYING PAN", "DINNER PLATES", "STORAGE CONTAINERS", "COFFEE MAKER")),
    ("ELECTRONICS", ("HEADPHONES", "DVD", "BATTERIES", "PHONE CHARGER")),
    ("TOYS", ("TOY CAR", "JIGSAW PUZZLE", "DOLL", "BUILDING BLOCKS")),
    ("SPORTING GOODS", ("FOOTBALL", "FISHING LINE", "CAMP CHAIR", "WATER BOTTLE")),
    ("AUTOMOTIVE", ("MOTOR OIL", "WIPER BLADES", "AIR FRESHENER", "ANTIFREEZE")),
    ("HARDWARE", ("LIGHT BULBS", "DUCT TAPE", "SCREWDRIVER SET", "EXTENSION CORD")),
    ("LAWN AND GARDEN", ("POTTING SOIL", "FERTILIZER", "GARDEN HOSE", "FLOWER SEEDS")),
)
PACK_SIZES = ("EACH", "2 PK", "3 PK", "6 PK", "12 PK", "24 CT", "FAMILY SIZE", "VALUE PACK")
TENDER_TYPES = ("CASH", "CREDIT", "DEBIT", "CHECK", "EBT", "GIFT CARD")
TENDER_SHARES = (0.30, 0.28, 0.30, 0.04, 0.05, 0.03)
ENTRY_METHODS = ("SCANNED", "KEYED", "WEIGHED")
ENTRY_SHARES = (0.94, 0.04, 0.02)
# Checkouts per opening hour, 6:00 to 23:00: a morning ramp and an evening peak.
HOURLY_TRAFFIC = (1, 2, 3, 4, 5, 6, 7, 7, 7, 7, 8, 9, 10, 10, 9, 7, 4, 2)
OPENING_HOUR = 6


def scale_label(scale: float) -> str:
    """Spell a scale the way directory names take it (1, 0.01, 10)."""
    return f"{scale:g}"


def table_paths(directory: Path) -> dict[str, Path]:
    """The Parquet file of each table in a directory written by :func:`generate`."""
    return {table: directory / f"{table}.parquet" for table in TABLES}


def generate(scale: float, root: Path = Path("data")) -> Path:
    """Generate the retail data at ``scale`` under ``root`` and return its directory.

    Cached like :func:`dltrace.datasets.generate`: a complete directory is returned
    at once, and a new one is written to a temporary sibling that is renamed
    into place only when every table is written.
    """
    if scale <= 0:
        raise ValueError(f"scale must be positive, got {scale}")
    target = Path(root) / f"walmart-scale{scale_label(scale)}"

    def build(staging: Path) -> None:
        for table, rows in _build_tables(scale).items():
            pq.write_table(rows, staging / f"{table}.parquet", row_group_size=256 * 1024,
                           compression="snappy", store_decimal_as_integer=True)
            _progress(f"{table}: {rows.num_rows:,} rows")

    return cached_directory(target, build, _is_complete)


def _build_tables(scale: float) -> dict[str, pa.Table]:
    """All four tables, built from one seeded generator so every run is identical."""
    rng = np.random.default_rng(SEED)
    _progress(f"generating retail data at scale {scale_label(scale)} ...")
    stores = _store_information(rng)
    catalog = _catalog(rng, scale)
    visits, scans = _visits_and_scans(rng, scale, stores, catalog)
    return {
        "store_information": stores["table"],
        "item_description": catalog["table"],
        "store_visits": visits,
        "item_scan": scans,
    }


def _store_information(rng: np.random.Generator) -> dict:
    """The chain's stores, the 130 active on the day, and their share of the day's visits."""
    codes = np.array(list(STATES))
    state_weights = np.array([weight for weight, _ in STATES.values()], dtype=float)
    tax_rates = np.array([rate for _, rate in STATES.values()])

    city_count = len(CITY_PREFIXES) * len(CITY_SUFFIXES)
    city_names = np.char.add(*np.meshgrid(CITY_PREFIXES, CITY_SUFFIXES, indexing="ij")).ravel()
    city_names = city_names[rng.permutation(city_count)]
    city_states = rng.choice(len(codes), city_count, p=state_weights / state_weights.sum())
    # Stores pick cities Zipf-like: metro cities get several stores, most get one.
    city_pick = _zipf_weights(city_count, CITY_POPULARITY_ZIPF)
    store_cities = rng.choice(city_count, CHAIN_STORES, p=city_pick)

    store_numbers = rng.choice(np.setdiff1d(np.arange(1, 401), [FEATURED_STORE]),
                               CHAIN_STORES - 1, replace=False)
    store_numbers = np.sort(np.append(store_numbers, FEATURED_STORE))
    square_feet = np.round(rng.lognormal(np.log(120_000), 0.45, CHAIN_STORES), -3).astype(np.int32)
    store_type = np.where(square_feet >= 150_000, "SUPERCENTER",
                          np.where(square_feet >= 70_000, "DISCOUNT STORE", "NEIGHBORHOOD MARKET"))
    state_index = city_states[store_cities]
    open_days = rng.integers(0, 40 * 365, CHAIN_STORES)
    table = pa.table({
        "store_nbr": pa.array(store_numbers, pa.int32()),
        "store_name": pa.array(np.char.add(np.char.add(city_names[store_cities], " "), store_type)),
        "store_type": pa.array(store_type),
        "address": pa.array([f"{number} {street} RD" for number, street in zip(
            rng.integers(100, 9999, CHAIN_STORES), rng.choice(CITY_PREFIXES, CHAIN_STORES))]),
        "city": pa.array(city_names[store_cities]),
        "state": pa.array(codes[state_index]),
        "zip_code": pa.array([f"{zip_code:05d}" for zip_code in rng.integers(10_000, 99_999, CHAIN_STORES)]),
        "region_nbr": pa.array(state_index // 5 + 1, pa.int32()),
        "square_feet": pa.array(square_feet),
        "open_date": pa.array([BUSINESS_DAY - timedelta(days=int(days)) for days in open_days], pa.date32()),
    })

    # The day's extract covers 130 stores; larger stores see more visits.
    active = np.append(rng.choice(np.flatnonzero(store_numbers != FEATURED_STORE),
                                  ACTIVE_STORES - 1, replace=False),
                       np.flatnonzero(store_numbers == FEATURED_STORE))
    by_size = active[np.argsort(-square_feet[active], kind="stable")]
    share = _zipf_weights(ACTIVE_STORES, STORE_SIZE_ZIPF)
    # Move store 126 to the rank whose share is closest to the paper's 1 %.
    featured = active[-1]
    featured_rank = int(np.argmin(np.abs(share - FEATURED_STORE_SHARE)))
    by_size = np.insert(by_size[by_size != featured], featured_rank, featured)
    return {
        "table": table,
        "active": by_size,  # row positions in the table, largest share first
        "share": share,
        "numbers": store_numbers,
        "tax_rate": tax_rates[state_index],
        "registers": np.clip(square_feet // 8_000, 4, 30),
    }


def _catalog(rng: np.random.Generator, scale: float) -> dict:
    """Item descriptions, plus the undescribed items that scans may also name.

    Items ``0 .. described-1`` are in ``item_description``; the rest are not.
    """
    described = max(1_000, round(CATALOG_ITEMS_AT_SCALE_1 * np.sqrt(scale)))
    total = described + described // 5
    item_numbers = (100_000 + rng.choice(900_000, total, replace=False)).astype(np.int32)
    upc_numbers = (10**10 + rng.choice(9 * 10**10, total, replace=False)) * 10 + rng.integers(0, 10, total)

    # Categories are numbered within their department (dept 4 -> 401, 402, 403).
    category_count = len(CATEGORY_PRODUCTS)
    departments = np.arange(category_count) // 3 + 1
    category_numbers = departments * 100 + np.arange(category_count) % 3 + 1
    # Each item is one of its category's products under some brand.
    product_count = np.array([len(products) for _, products in CATEGORY_PRODUCTS])
    product_offset = np.cumsum(product_count) - product_count
    product_names = np.array([name for _, products in CATEGORY_PRODUCTS for name in products])
    # Categories differ in size (item count) and price level.
    category = rng.choice(category_count, total, p=_normalized(rng.lognormal(0, 0.15, category_count)))
    category_price = rng.lognormal(np.log(MEDIAN_PRICE_DOLLARS), 0.2, category_count)
    dollars = category_price[category] * rng.lognormal(0, 0.7, total)
    endings = rng.choice(np.array([97, 88, 47, 98, 24, 0, 50, 76]), total)
    retail_cents = np.maximum(np.floor(dollars).astype(np.int64) * 100 + endings, 24)
    cost_cents = np.round(retail_cents * rng.uniform(0.55, 0.85, total)).astype(np.int64)

    listed = np.argsort(item_numbers[:described])  # the table is stored by item_nbr
    brands = rng.choice(BRANDS, described)[listed]
    sizes = rng.choice(PACK_SIZES, described)[listed]
    listed_category = category[listed]
    product_pick = (rng.random(described) * product_count[listed_category]).astype(int)
    product = product_offset[listed_category] + product_pick
    description = np.char.add(np.char.add(brands, " "), product_names[product])
    table = pa.table({
        "item_nbr": pa.array(item_numbers[listed]),
        "upc_nbr": pa.array(upc_numbers[listed]),
        "primary_desc": pa.array(description),
        "brand": pa.array(brands),
        "pack_size": pa.array(sizes),
        "dept_nbr": pa.array(departments[listed_category], pa.int32()),
        "category_nbr": pa.array(category_numbers[listed_category], pa.int32()),
        "subcategory_nbr": pa.array(category_numbers[listed_category] * 100
                                    + rng.integers(1, 21, described), pa.int32()),
        "vendor_nbr": pa.array(rng.integers(10_000, 99_999, described), pa.int32()),
        "base_unit_retail": _decimal(retail_cents[listed], 9),
        "base_unit_cost": _decimal(cost_cents[listed], 9),
    })
    return {
        "table": table,
        "described": described,
        "item_numbers": item_numbers,
        "upc": upc_numbers,
        "retail_cents": retail_cents,
        "cost_cents": cost_cents,
    }


def _visits_and_scans(rng: np.random.Generator, scale: float, stores: dict,
                      catalog: dict) -> tuple[pa.Table, pa.Table]:
    """One business day of checkouts and their scanned lines, with consistent totals."""
    visit_count = max(1, round(SCANS_AT_SCALE_1 * scale / MEAN_ITEMS_PER_VISIT))
    store_row = stores["active"][rng.choice(ACTIVE_STORES, visit_count, p=stores["share"])]
    hour = rng.choice(len(HOURLY_TRAFFIC), visit_count, p=_normalized(np.array(HOURLY_TRAFFIC, float)))
    seconds = (OPENING_HOUR + hour) * 3600 + rng.integers(0, 3600, visit_count)
    chronological = np.argsort(seconds, kind="stable")
    store_row, seconds = store_row[chronological], seconds[chronological]
    visit_nbr = np.arange(1, visit_count + 1, dtype=np.int64)
    register = 1 + (rng.random(visit_count) * stores["registers"][store_row]).astype(np.int32)
    # 1 + negative binomial: most baskets are small, a few carts are full.
    items_per_visit = 1 + rng.negative_binomial(1.5, 1.5 / (1.5 + MEAN_ITEMS_PER_VISIT - 1), visit_count)

    scan_count = int(items_per_visit.sum())
    scan_visit = np.repeat(np.arange(visit_count), items_per_visit)
    first_scan = np.cumsum(items_per_visit) - items_per_visit
    scan_seq = (np.arange(scan_count) - first_scan[scan_visit] + 1).astype(np.int32)
    gaps = rng.integers(3, 25, scan_count)
    elapsed = np.cumsum(gaps)
    elapsed -= (elapsed - gaps)[first_scan][scan_visit]
    scan_seconds = seconds[scan_visit] + 60 + elapsed  # a minute in line before the first scan

    described = catalog["described"]
    undescribed = len(catalog["item_numbers"]) - described
    from_catalog = rng.random(scan_count) >= UNDESCRIBED_SCAN_SHARE
    item = np.empty(scan_count, dtype=np.int64)
    item[from_catalog] = rng.choice(described, int(from_catalog.sum()),
                                    p=_zipf_weights(described, ITEM_POPULARITY_ZIPF))
    item[~from_catalog] = described + rng.choice(undescribed, int((~from_catalog).sum()),
                                                 p=_zipf_weights(undescribed, ITEM_POPULARITY_ZIPF))
    quantity = np.where(rng.random(scan_count) < 0.15, 1 + rng.geometric(0.45, scan_count), 1)
    is_return = rng.random(scan_count) < RETURN_SHARE
    quantity = np.where(is_return, -quantity, quantity).astype(np.int32)
    unit_retail = catalog["retail_cents"][item]
    gross = quantity * unit_retail
    markdown = np.where(rng.random(scan_count) < 0.05,
                        np.round(gross * rng.uniform(0.1, 0.5, scan_count)), 0).astype(np.int64)
    amount = gross - markdown
    tax = np.round(amount * stores["tax_rate"][store_row][scan_visit]).astype(np.int64)
    entry = rng.choice(len(ENTRY_METHODS), scan_count, p=ENTRY_SHARES)

    day_start = np.datetime64(datetime.combine(BUSINESS_DAY, datetime.min.time()), "s")
    scans = pa.table({
        "visit_nbr": pa.array(visit_nbr[scan_visit]),
        "scan_seq": pa.array(scan_seq),
        "store_nbr": pa.array(stores["numbers"][store_row][scan_visit], pa.int32()),
        "register_nbr": pa.array(register[scan_visit]),
        "scan_time": pa.array(day_start + scan_seconds.astype("timedelta64[s]"), pa.timestamp("us")),
        "item_nbr": pa.array(catalog["item_numbers"][item]),
        "upc_nbr": pa.array(catalog["upc"][item]),
        "scan_type": _labels(("SALE", "RETURN"), is_return.astype(np.int8)),
        "entry_method": _labels(ENTRY_METHODS, entry),
        "item_quantity": pa.array(quantity),
        "unit_retail": _decimal(unit_retail, 9),
        "unit_cost": _decimal(catalog["cost_cents"][item], 9),
        "markdown_amount": _decimal(markdown, 9),
        "total_scan_amount": _decimal(amount, 11),
        "tax_amount": _decimal(tax, 9),
    })
    visit_total = np.bincount(scan_visit, weights=amount, minlength=visit_count).astype(np.int64)
    visit_tax = np.bincount(scan_visit, weights=tax, minlength=visit_count).astype(np.int64)
    visits = pa.table({
        "visit_nbr": pa.array(visit_nbr),
        "store_nbr": pa.array(stores["numbers"][store_row], pa.int32()),
        "visit_date": pa.array(np.full(visit_count, np.datetime64(BUSINESS_DAY, "D")), pa.date32()),
        "visit_time": pa.array(day_start + seconds.astype("timedelta64[s]"), pa.timestamp("us")),
        "register_nbr": pa.array(register),
        "tender_type": _labels(TENDER_TYPES, rng.choice(len(TENDER_TYPES), visit_count, p=TENDER_SHARES)),
        "item_count": pa.array(items_per_visit.astype(np.int32)),
        "total_visit_amount": _decimal(visit_total, 11),
        "tax_amount": _decimal(visit_tax, 9),
    })
    return visits, scans


def _zipf_weights(count: int, exponent: float) -> np.ndarray:
    """Probabilities proportional to 1/rank**exponent, largest first."""
    return _normalized(1.0 / np.arange(1, count + 1) ** exponent)


def _normalized(weights: np.ndarray) -> np.ndarray:
    return weights / weights.sum()


def _labels(choices: tuple[str, ...], index: np.ndarray) -> pa.Array:
    """Strings picked by index; much faster than converting a numpy string array."""
    return pa.array(choices).take(pa.array(index))


def _decimal(cents: np.ndarray, precision: int) -> pa.Array:
    """Exact decimal(precision, 2) from integer cents (no float rounding on the way)."""
    words = np.empty((len(cents), 2), dtype=np.int64)
    words[:, 0] = cents
    words[:, 1] = np.where(cents < 0, -1, 0)  # two's complement high word of the int128
    return pa.Array.from_buffers(pa.decimal128(precision, 2), len(cents),
                                 [None, pa.py_buffer(words.tobytes())])


def _is_complete(directory: Path) -> bool:
    return parquet_readable(table_paths(directory).values())

