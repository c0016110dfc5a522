"""Short texts the semantic dedup tests share: one paragraph, its reordering and its synonym rewrite (near
duplicates), another on the same topic and an unrelated one (distinct)."""

BASE = (
    "The harbour town was rebuilt after the great fire of 1842. Merchants paid for new stone warehouses "
    "along the quay, and the council widened the streets so carts could pass. Within ten years the port "
    "handled twice the cargo it had before the disaster."
)
REORDERED = (
    "Within ten years the port handled twice the cargo it had before the disaster. The harbour town was "
    "rebuilt after the great fire of 1842. Merchants paid for new stone warehouses along the quay, and "
    "the council widened the streets so carts could pass."
)
SYNONYMS = (
    "The harbour city was rebuilt after the big fire of 1842. Traders paid for new stone warehouses "
    "along the quay, and the council widened the roads so carts could pass. Within ten years the port "
    "handled double the cargo it had before the disaster."
)
OTHER_SAME_TOPIC = (
    "Fires were common in nineteenth-century ports. Wooden warehouses burned quickly, and many harbour "
    "towns passed laws requiring brick or stone for any building near the docks."
)
UNRELATED = (
    "Photosynthesis turns light, water and carbon dioxide into sugar and oxygen in the leaves of plants."
)
