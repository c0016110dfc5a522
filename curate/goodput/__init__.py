"""``goodput.json`` as one typed, versioned object (:mod:`curate.goodput.schema`: read, write, upgrade,
JSON Schema) and the one rule from an interval to a call (:mod:`curate.goodput.calls`). It sits between
the runtime and the phases: the proxy phase writes it, the report and the verbs read it."""
