"""Measurements of datasets and models: each module computes one kind of number.

``stats``: dataset statistics (the NAACL 2022 paper's Table 2) with distinct-n, counted in
eojeol (whitespace words) or Kiwi morphemes. ``geval``: G-Eval scores. ``agreement``:
filter-human agreement. ``evaluator``: the evaluator protocol (primary metric, direction).
``retrieval``: Hits@k/K. ``classification``: accuracy, precision, recall, F1.
``thresholds``: ROC, AUC, the max-F1 threshold, ROC plots. ``validation_set``: the
unanswerable-context validation set of the NAACL paper's Appendix C.
"""
