"""The running service's state, without HTTP or printing.

:mod:`~monitor.service.runner` evaluates a model on each scheduled tick and publishes an immutable
:class:`~monitor.service.snapshot.Snapshot`; :mod:`~monitor.service.alerting` turns evaluations into
alert state, :mod:`~monitor.service.delivery` sends it through :mod:`~monitor.service.notifiers`
without holding an evaluation up, and :mod:`~monitor.service.history` keeps each judged value's
recent past for the live view.
"""
