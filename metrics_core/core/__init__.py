"""The bottom layer: metric specs, result types, ``Undefined``, array aliases, argument checks.

Nothing here computes a metric; every other layer builds on these types.
"""
