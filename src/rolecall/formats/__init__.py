"""Outside dataset formats read into and written from rolecall records (losslessly).

``carecall``: the CareCall corpus JSON of the NAACL 2022 release (dialogues with
per-turn out-of-bounds flags).
"""
