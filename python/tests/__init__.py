"""Unit tests of the rankwire package (ctest python.unit)."""
