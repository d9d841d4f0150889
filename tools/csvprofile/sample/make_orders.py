"""Regenerate orders.csv, the demo input of csvprofile (deterministic).

    python3 tools/csvprofile/sample/make_orders.py

200 data rows with problems planted on purpose, so a demo has something to
find: 3 order_id values entered twice, empty customer_id / unit_price /
coupon cells, and one quantity typed as a word.
"""

import csv
import os
import random

rng = random.Random(20240601)
rows = []
for n in range(197):
    quantity = rng.randint(1, 9)
    price = round(rng.uniform(2.5, 120.0), 2)
    rows.append({
        "order_id": f"ORD-{1001 + n}",
        "customer_id": f"C-{rng.randint(1, 60):03d}",
        "order_date": f"2024-{rng.randint(1, 6):02d}-{rng.randint(1, 28):02d}",
        "status": rng.choices(["shipped", "pending", "cancelled", "returned"],
                              weights=[70, 15, 10, 5])[0],
        "sku": f"SKU-{rng.choice('ABCDEFGH')}{rng.randint(10, 99)}",
        "quantity": str(quantity),
        "unit_price": f"{price:.2f}",
        "total": f"{quantity * price:.2f}",
        "paid": rng.choice(["true", "true", "true", "false"]),
        "coupon": rng.choice(["SPRING10", "WELCOME"]) if rng.random() < 0.15 else "",
        "note": rng.choice(["", "", "", "gift wrap", "Leave at door, please",
                            'Customer said "urgent"']),
    })
# Planted problems.
for i in (4, 60, 150):                 # re-entered orders: duplicate keys
    dup = dict(rows[i], note="re-entered")
    rows.insert(rng.randint(i + 5, len(rows)), dup)
for i in (17, 88):
    rows[i]["customer_id"] = ""
for i in (33, 101, 170):
    rows[i]["unit_price"] = ""
    rows[i]["total"] = ""
rows[120]["quantity"] = "two"          # one non-numeric value in a numeric column

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "orders.csv"),
          "w", newline="", encoding="utf-8") as f:
    writer = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
