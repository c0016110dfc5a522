"""Target-aware selection: the pipeline's ``target:`` sample, its disjointness from the eval sets, and
the fitting of the scorers that select toward it (``dsir_v1``, ``target_classifier_v1``,
``perplexity_diff_v1``). See ``docs/goodput.md`` ("Selecting toward a target")."""
