"""The bottom layer: what every other layer may use and which imports nothing of the service.

:mod:`~monitor.core.errors` (the exception hierarchy), :mod:`~monitor.core.clock` (the service's
sense of time), :mod:`~monitor.core.secrets` (masking credentials on every surface),
:mod:`~monitor.core.suggest` (did-you-mean) and :mod:`~monitor.core.times` (instants and durations
as text).
"""
