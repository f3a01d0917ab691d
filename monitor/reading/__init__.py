"""A model's windows, read: from its sources into one canonical frame the evaluation computes on.

:mod:`~monitor.reading.plan` decides once per model how its windows are read - rows, counts, or
counts kept in sealed panes (:mod:`~monitor.reading.panes`, on disk through
:mod:`~monitor.reading.pane_store`) - and :mod:`~monitor.reading.frame` cleans what comes back
(rows or counted combinations alike) into the canonical frame; :mod:`~monitor.reading.label_join`
joins labels kept in their own table when the database cannot.
"""
